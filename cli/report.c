/* report: the end-of-run report in text and JSON, from the engine's statistics table, and
 * loading a program from assembly or from a binary image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "cli/cli.h"
#include "hw/engine.h"
#include "isa/asm.h"
#include "isa/isa.h"

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cli_load_prog(const char *cmd, const char *path, isa_prog *prog)
{
    err e;
    err_clear(&e);
    char magic[8] = {0};
    int fd = file_open(path, &e);
    if (fd < 0)
        return cli_report_err(cmd, &e);
    ssize_t n = read(fd, magic, sizeof magic);
    close(fd);
    int rc = (n == 8 && memcmp(magic, "IPUSIMX1", 8) == 0) ? isa_prog_load(prog, path, &e)
                                                          : asm_assemble_file(path, prog, &e);
    if (rc != ERR_OK)
        return cli_report_err(cmd, &e);
    return 0;
}

void cli_report_text(FILE *f, const eng *g, const char *what, double host_seconds)
{
    const mach *m = eng_machine(g);
    eng_stats st;
    eng_get_stats(g, &st);
    double v[ENG_NSTAT];
    eng_stat_values(&st, m, v);
    const eng_stat *tab = eng_stat_table();
    fprintf(f, "%s on %u x %s IPU (%u tiles each, %.3f GHz), %u host thread%s\n", what,
            eng_nipus(g), m->name, eng_ntiles(g), (double)m->clock_hz / 1e9, eng_threads(g),
            eng_threads(g) == 1 ? "" : "s");
    for (unsigned i = 0; i < 7; i++) {
        if (i == 1)
            fprintf(f, "  %-22s %.3f %s\n", tab[i].label, v[i], tab[i].unit);
        else
            fprintf(f, "  %-22s %.0f\n", tab[i].label, v[i]);
    }
    fprintf(f, "  %-22s", "context utilisation");
    for (unsigned c = 0; c < TILE_NCTX; c++)
        fprintf(f, " %s %.1f%%", c == 0 ? "sup" : (const char *[]){"w0", "w1", "w2", "w3", "w4", "w5"}[c - 1],
                v[7 + c]);
    fprintf(f, "\n");
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        if (!is.xchg_streams && !is.global_tx_bytes && !is.global_rx_bytes && eng_nipus(g) == 1)
            continue;
        fprintf(f, "  ipu %-3u finish %llu, supersteps %llu, DoExchange %llu B in %llu cycles, "
                   "GlobalExchange tx %llu B rx %llu B in %llu cycles\n",
                i, (unsigned long long)is.finish, (unsigned long long)is.supersteps,
                (unsigned long long)is.xchg_bytes, (unsigned long long)is.xchg_cycles,
                (unsigned long long)is.global_tx_bytes, (unsigned long long)is.global_rx_bytes,
                (unsigned long long)is.global_cycles);
    }
    if (host_seconds > 0)
        fprintf(f, "  %-22s %.3f s (%.1f M simulated instructions/s)\n", "host time", host_seconds,
                v[2] / host_seconds / 1e6);
}

int cli_report_json(const char *cmd, const char *path, const eng *g, const char *what,
                    double host_seconds, const char *extra)
{
    const mach *m = eng_machine(g);
    eng_stats st;
    eng_get_stats(g, &st);
    double v[ENG_NSTAT];
    eng_stat_values(&st, m, v);
    const eng_stat *tab = eng_stat_table();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        xoom(BUFSIZ); /* open_memstream fails only for memory */
    fprintf(f, "{\n  \"what\": \"");
    for (const char *p = what; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', f);
        fputc((unsigned char)*p >= 0x20 ? *p : '?', f);
    }
    fprintf(f, "\",\n  \"machine\": \"%s\",\n  \"ipus\": %u,\n  \"tiles_per_ipu\": %u,\n"
               "  \"clock_hz\": %llu,\n",
            m->name, eng_nipus(g), eng_ntiles(g), (unsigned long long)m->clock_hz);
    fprintf(f, "  \"stats\": {\n");
    for (unsigned i = 0; i < ENG_NSTAT; i++)
        fprintf(f, "    \"%s\": %.17g%s\n", tab[i].name, v[i], i + 1 < ENG_NSTAT ? "," : "");
    fprintf(f, "  },\n  \"instructions_per_context\": [");
    for (unsigned c = 0; c < TILE_NCTX; c++)
        fprintf(f, "%s%llu", c ? ", " : "", (unsigned long long)st.ninsn[c]);
    fprintf(f, "],\n  \"units\": {");
    for (unsigned i = 0; i < ENG_NSTAT; i++)
        fprintf(f, "%s\"%s\": \"%s\"", i ? ", " : "", tab[i].name, tab[i].unit);
    fprintf(f, "},\n");
    fprintf(f, "  \"per_ipu\": [");
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        fprintf(f, "%s\n    {\"ipu\": %u, \"finish\": %llu, \"supersteps\": %llu, "
                   "\"do_exchange_bytes\": %llu, \"do_exchange_cycles\": %llu, "
                   "\"global_exchange_tx_bytes\": %llu, \"global_exchange_rx_bytes\": %llu, "
                   "\"global_exchange_cycles\": %llu}",
                i ? "," : "", i, (unsigned long long)is.finish, (unsigned long long)is.supersteps,
                (unsigned long long)is.xchg_bytes, (unsigned long long)is.xchg_cycles,
                (unsigned long long)is.global_tx_bytes, (unsigned long long)is.global_rx_bytes,
                (unsigned long long)is.global_cycles);
    }
    fprintf(f, "\n  ],\n");
    if (extra && *extra)
        fprintf(f, "  %s,\n", extra);
    fprintf(f, "  \"host\": {\"threads\": %u, \"numa_nodes\": %d, \"seconds\": %.6f}\n}\n",
            eng_threads(g), eng_numa_nodes(g), host_seconds);
    fclose(f);
    int rc = cli_write_file(cmd, path, buf, len);
    free(buf);
    return rc;
}
