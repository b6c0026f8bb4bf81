/* cmd_micro: `ipusim micro [NAME|all]` — run the microbenchmarks and print their table
 * (measured, implied by the preset, published, differences), optionally as CSV. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/rank.h"
#include "base/text.h"
#include "cli/cli.h"
#include "workloads/micro/micro.h"

/* A figure in 10 characters: more decimals for small numbers; "-" for NaN. */
static const char *num(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else if (fabs(v) >= 100)
        snprintf(buf, len, "%.1f", v);
    else if (fabs(v) >= 1)
        snprintf(buf, len, "%.3f", v);
    else
        snprintf(buf, len, "%.4f", v);
    return buf;
}

static const char *pct(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%+.1f%%", fabs(v) < 0.05 ? 0.0 : v); /* no "-0.0%" */
    return buf;
}

static void print_table(FILE *f, const mach *m, const wl_micro_table *t, double host)
{
    fprintf(f, "ipusim micro: machine %s (%u tiles per IPU, %.4g GHz), %zu figures in %.1f s\n\n",
            m->name, m->tiles_per_ipu, (double)m->clock_hz / 1e9, t->n, host);
    fprintf(f, "%-58s %-7s %10s %10s %8s %10s %8s\n", "benchmark", "unit", "simulated", "implied",
            "vs impl", "published", "vs publ");
    const char *last = NULL;
    for (size_t i = 0; i < t->n; i++) {
        const wl_micro_row *r = &t->rows[i];
        char a[32], b[32], c[32], d[32], g[32];
        if (last && strcmp(last, r->bench) != 0)
            fputc('\n', f);
        last = r->bench;
        fprintf(f, "%-58s %-7s %10s %10s %8s %10s %8s\n", r->what, r->unit,
                num(a, sizeof a, r->sim), num(b, sizeof b, r->implied),
                pct(c, sizeof c, wl_micro_diff_pct(r->sim, r->implied)),
                num(d, sizeof d, r->published),
                pct(g, sizeof g, wl_micro_diff_pct(r->sim, r->published)));
    }
    fprintf(f, "\nimplied: the preset's parameters through the formulas in workloads/micro/micro.c;"
               "\npublished: docs/sources.md, Chip (docs/fabric.md, \"Microbenchmarks\", explains "
               "gaps over 10%%).\n");
}

/* The table as JSON members: "micro": [{"bench", "what", "unit", "simulated", "implied",
 * "published"}, ...] (null where a figure is missing), "host_seconds". */
static char *json_table(const wl_micro_table *t, double host)
{
    txt b = {0};
    char n1[TEXT_NUM], n2[TEXT_NUM], n3[TEXT_NUM];
    txt_printf(&b, "\"micro\": [");
    for (size_t i = 0; i < t->n; i++) {
        const wl_micro_row *r = &t->rows[i];
        txt_printf(&b, "%s\n    {\"bench\": ", i ? "," : "");
        cli_jstr(&b, r->bench);
        txt_printf(&b, ", \"what\": ");
        cli_jstr(&b, r->what);
        txt_printf(&b, ", \"unit\": ");
        cli_jstr(&b, r->unit);
        txt_printf(&b, ", \"simulated\": %s, \"implied\": %s, \"published\": %s}",
                   text_num(r->sim, n1), text_num(r->implied, n2), text_num(r->published, n3));
    }
    txt_printf(&b, "\n  ],\n  \"host_seconds\": %.3f", host);
    return txt_take(&b);
}

/* The JSON report: the table, then the config. 0 or 2. */
static int write_json(const cli_inv *inv, const char *path, const mach *m, const wl_micro_table *t,
                      double host, const char *name, unsigned threads, uint64_t max_cycles)
{
    char *table = json_table(t, host);
    txt b = {0}, o = {0};
    txt_printf(&o, "\"bench\": ");
    cli_jstr(&o, name ? name : "all");
    txt_printf(&o, ", \"threads\": %u, \"max_cycles\": %llu", threads,
               (unsigned long long)max_cycles);
    txt_printf(&b, "{\n  %s,\n  ", table);
    cli_json_config(&b, inv, m, o.p);
    txt_free(&o);
    txt_printf(&b, "\n}\n");
    int rc = cli_write_file(inv->cmd, path, b.p, b.len);
    txt_free(&b);
    free(table);
    return rc;
}

static int micro_cmd(int argc, char **argv, struct rank_comm *ranks)
{
    const char *cmd = "micro", *name = NULL, *csv = NULL, *json = NULL;
    cli_machine mo = {0};
    const cli_inv inv = {cmd, argc, argv, &mo};
    uint64_t threads = 0, max_cycles = WL_MICRO_MAX_CYCLES;
    int rc = 0, mr, progress = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if ((mr = cli_machine_opt(cmd, argc, argv, &i, &mo)) >= 0)
            rc = mr;
        else if (strcmp(a, "--threads") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1024, &threads);
        else if (strcmp(a, "--max-cycles") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, UINT64_MAX / 2, &max_cycles);
        else if (strcmp(a, "--csv") == 0)
            rc = cli_value(cmd, argc, argv, &i, &csv);
        else if (strcmp(a, "--json") == 0)
            rc = cli_value(cmd, argc, argv, &i, &json);
        else if (strcmp(a, "--progress") == 0)
            progress = 1;
        else if (a[0] == '-')
            return cli_unknown(cmd, a);
        else if (name) {
            fprintf(stderr, "ipusim %s: one benchmark name at a time ('%s', then '%s')\n", cmd,
                    name, a);
            return 2;
        } else
            name = a;
    }
    if (rc)
        return rc;
    mach m;
    rc = cli_machine_resolve(cmd, &mo, &m);
    if (rc || (rc = cli_ipus(cmd, 0, &mo, "each benchmark takes the IPUs it needs", &m)) != 0)
        return rc;
    err *e = xmalloc(sizeof *e);
    err_clear(e);
    cli_watch w;
    cli_watch_begin(&w, cmd, progress);
    wl_micro_cfg cfg = {.threads = (unsigned)threads, .max_cycles = max_cycles, .ranks = ranks};
    sys_ctl ctl = {CLI_MAX_SUPERSTEP_CYCLES, cli_watch_eng(&w)};
    wl_micro_table t = {0};
    double t0 = cli_now();
    rc = wl_micro_run_ctl(&m, name, &cfg, &ctl, &t, e);
    double host = cli_now() - t0;
    cli_watch_clear(&w);
    if (rc != ERR_OK) {
        rc = cli_report_err(cmd, e);
    } else {
        print_table(stdout, &m, &t, host);
        if (csv && rank_id(ranks) == 0) {
            char *text = wl_micro_csv(&t);
            rc = cli_write_file(cmd, csv, text, strlen(text));
            free(text);
        }
        if (json && rank_id(ranks) == 0 && rc == 0)
            rc = write_json(&inv, json, &m, &t, host, name, (unsigned)threads, max_cycles);
    }
    wl_micro_table_free(&t);
    free(e);
    return rc;
}

/* Under mpirun each program's IPUs are shared out among the ranks (docs/scale-out.md); every
 * rank computes the same table, rank 0 prints it and writes the CSV. */
int cli_cmd_micro(int argc, char **argv)
{
    return cli_spread("micro", argc, argv, micro_cmd);
}
