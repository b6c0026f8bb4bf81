/* report: the end-of-run report in text and JSON (a json-c tree, base/json.h), from the
 * engine's statistics tables (hw/stats.h: run statistics, per-IPU statistics, time
 * categories; every line and key comes from a row) and loading a program from assembly or
 * from a binary image. (The MPI ranks a command spreads over: cli/ctx.c.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/json.h"
#include "base/rank.h"
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

/* A value as the text report shows it: its decimals, then its unit if the row says so ('%'
 * sticks to the number). */
static void text_value(FILE *f, const eng_stat *s, double v)
{
    fprintf(f, "%.*f", (int)(s->text & ENG_TEXT_DEC), v);
    if (s->text & ENG_TEXT_UNIT)
        fprintf(f, "%s%s", strcmp(s->unit, "%") == 0 ? "" : " ", s->unit);
}

static int same_line(const eng_stat *a, const eng_stat *b)
{
    return a->line && b->line && strcmp(a->line, b->line) == 0;
}

/* The run statistics, one line per row, or one line for the rows that share a title. */
static void text_stats(FILE *f, const eng_stats *st, const mach *m)
{
    const eng_stat *tab = eng_stat_table();
    for (unsigned i = 0; i < ENG_NSTAT; i++) {
        const eng_stat *s = &tab[i];
        if (!s->line) {
            fprintf(f, "  %-22s ", s->label);
        } else {
            if (i == 0 || !same_line(&tab[i - 1], s))
                fprintf(f, "  %-22s", s->line);
            fprintf(f, " %s ", s->label);
        }
        text_value(f, s, eng_stat_value(s, st, m));
        if (!s->line || i + 1 == ENG_NSTAT || !same_line(s, &tab[i + 1]))
            fputc('\n', f);
    }
}

void cli_report_ipus(FILE *f, const eng *g)
{
    const eng_stat *tab = eng_ipu_stat_table();
    const mach *m = eng_machine(g);
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        if (!is.xchg_streams && !is.global_tx_bytes && !is.global_rx_bytes && eng_nipus(g) == 1)
            continue;
        fprintf(f, "  ipu %-3u", i);
        for (unsigned k = 0; k < ENG_NIPU_STAT; k++) {
            fprintf(f, "%s%s ",
                    k == 0                        ? " "
                    : tab[k].text & ENG_TEXT_JOIN ? " "
                                                  : ", ",
                    tab[k].label);
            text_value(f, &tab[k], eng_stat_value(&tab[k], &is, m));
        }
        fputc('\n', f);
    }
}

void cli_report_split(FILE *f, const eng *g, uint32_t ipu)
{
    const eng_stat *tab = eng_cat_table();
    const mach *m = eng_machine(g);
    eng_stats st;
    eng_ipu_stats is;
    eng_get_stats(g, &st);
    eng_get_ipu_stats(g, ipu, &is);
    char title[32];
    snprintf(title, sizeof title, "time split (ipu %u)", ipu);
    fprintf(f, "  %-22s", title);
    for (unsigned k = 0; k < ENG_NCAT; k++) {
        double v = eng_stat_value(&tab[k], &is, m);
        if (v > 0)
            fprintf(f, " %s %.1f%%", tab[k].label, 100.0 * v / (double)st.cycles);
    }
    fputc('\n', f);
}

json *cli_json_cats(const eng_ipu_stats *is, const mach *m)
{
    json *o = json_obj();
    const eng_stat *tab = eng_cat_table();
    for (unsigned k = 0; k < ENG_NCAT; k++)
        json_put_num(o, tab[k].key, eng_stat_value(&tab[k], is, m));
    return o;
}

json *cli_json_split(const eng *g, uint32_t ipu)
{
    eng_ipu_stats is;
    eng_get_ipu_stats(g, ipu, &is);
    return cli_json_cats(&is, eng_machine(g));
}

int cli_write_json(const char *cmd, const char *path, json *o)
{
    char *s = json_text(o);
    int rc = cli_write_file(cmd, path, s, strlen(s));
    free(s);
    json_object_put(o);
    return rc;
}

/* The parameter that --set number i names, unless a later --set names it again (the last one
 * holds); NULL for those. */
static const mach_param *set_param(const cli_machine *mo, unsigned i)
{
    const char *a = mo->sets[i], *eq = strchr(a, '=');
    size_t n = eq ? (size_t)(eq - a) : strlen(a);
    for (unsigned j = i + 1; j < mo->nsets; j++)
        if (strncmp(mo->sets[j], a, n) == 0 && mo->sets[j][n] == '=')
            return NULL;
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)n, a);
    return mach_param_find(key);
}

void cli_machine_sets(const cli_machine *mo, const mach *m, char *buf, size_t len)
{
    size_t at = 0;
    const char *sep = "; --set ";
    buf[0] = '\0';
    for (unsigned i = 0; mo && i < mo->nsets && at < len; i++) {
        const mach_param *p = set_param(mo, i);
        char v[64];
        if (!p)
            continue;
        at += (size_t)snprintf(buf + at, len - at, "%s%s=%s", sep, p->key,
                               mach_param_format(m, p, v, sizeof v));
        sep = " ";
    }
}

/* One machine parameter's value: a word as a string, a whole number as a count. */
static json *json_param(const mach *m, const mach_param *p)
{
    char v[64];
    mach_param_format(m, p, v, sizeof v);
    return p->type == MACH_ENUM ? json_str(v) : json_u64(strtoull(v, NULL, 10));
}

/* The config's "machine": {"preset", "overrides", "params"}. */
static json *json_machine(const cli_inv *inv, const mach *m)
{
    json *o = json_obj();
    json_put_str(o, "preset", inv->mo && inv->mo->machine ? inv->mo->machine : "mk2");
    json *over = json_put(o, "overrides", json_obj());
    for (unsigned i = 0; inv->mo && i < inv->mo->nsets; i++) {
        const mach_param *p = set_param(inv->mo, i);
        if (p)
            json_put(over, p->key, json_param(m, p));
    }
    json *params = json_put(o, "params", json_obj());
    for (size_t i = 0; i < MACH_NPARAMS; i++)
        json_put(params, mach_params()[i].key, json_param(m, &mach_params()[i]));
    return o;
}

json *cli_json_argv(int argc, char **argv)
{
    json *a = json_arr();
    for (int i = 0; i < argc; i++)
        json_put_str(a, NULL, argv[i]);
    return a;
}

json *cli_json_config(const cli_inv *inv, const mach *m, json *options)
{
    json *o = json_obj();
    json_put_str(o, "program", "ipusim");
    json_put_str(o, "version", cli_version());
    json_put_str(o, "command", inv->cmd);
    json_put(o, "argv", cli_json_argv(inv->argc, inv->argv));
    json_put(o, "machine", m ? json_machine(inv, m) : NULL); /* null: not simulated */
    if (options)
        json_put(o, "options", options);
    return o;
}

void cli_report_text(FILE *f, const cli_inv *inv, const eng *g, const char *what,
                     double host_seconds)
{
    const mach *m = eng_machine(g);
    eng_stats st;
    eng_get_stats(g, &st);
    char sets[512];
    cli_machine_sets(inv->mo, m, sets, sizeof sets);
    fprintf(f, "%s on %u x %s IPU (%u tiles each, %.3f GHz%s), %u host thread%s\n", what,
            eng_nipus(g), m->name, eng_ntiles(g), (double)m->clock_hz / 1e9, sets, eng_threads(g),
            eng_threads(g) == 1 ? "" : "s");
    text_stats(f, &st, m);
    cli_report_ipus(f, g);
    const eng_stat *insn = eng_stat_find(eng_stat_table(), ENG_NSTAT, "instructions");
    if (host_seconds > 0)
        fprintf(f, "  %-22s %.3f s (%.1f M simulated instructions/s)\n", "host time", host_seconds,
                eng_stat_value(insn, &st, m) / host_seconds / 1e6);
}

/* "KEY": VALUE for every row of tab, from stats, into the object o. */
static void json_rows(json *o, const eng_stat *tab, unsigned n, const void *stats, const mach *m)
{
    for (unsigned i = 0; i < n; i++)
        json_put_num(o, tab[i].key, eng_stat_value(&tab[i], stats, m));
}

/* "per_ipu": [{"ipu": I, the per-IPU rows, "split": {...}}, ...]. */
static json *json_per_ipu(const eng *g)
{
    json *a = json_arr();
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        json *o = json_put(a, NULL, json_obj());
        json_put_u64(o, "ipu", i);
        json_rows(o, eng_ipu_stat_table(), ENG_NIPU_STAT, &is, eng_machine(g));
        json_put(o, "split", cli_json_cats(&is, eng_machine(g)));
    }
    return a;
}

int cli_report_json(const cli_inv *inv, const char *path, const eng *g, const char *what,
                    double host_seconds, json *extra, json *options)
{
    const mach *m = eng_machine(g);
    eng_stats st;
    eng_get_stats(g, &st);
    const eng_stat *tab = eng_stat_table();
    json *r = json_obj();
    json_put_str(r, "what", what);
    json_put_str(r, "machine", m->name);
    json_put_u64(r, "ipus", eng_nipus(g));
    json_put_u64(r, "tiles_per_ipu", eng_ntiles(g));
    json_put_u64(r, "clock_hz", m->clock_hz);
    json_rows(json_put(r, "stats", json_obj()), tab, ENG_NSTAT, &st, m);
    json *ninsn = json_put(r, "instructions_per_context", json_arr());
    for (unsigned c = 0; c < TILE_NCTX; c++)
        json_put_u64(ninsn, NULL, st.ninsn[c]);
    json *units = json_put(r, "units", json_obj());
    for (unsigned i = 0; i < ENG_NSTAT; i++)
        json_put_str(units, tab[i].key, tab[i].unit);
    json_put(r, "per_ipu", json_per_ipu(g));
    json_append(r, extra);
    json *host = json_put(r, "host", json_obj());
    json_put_u64(host, "threads", eng_threads(g));
    json_put_num(host, "numa_nodes", eng_numa_nodes(g));
    json_put_num(host, "seconds", host_seconds);
    json_put(r, "config", cli_json_config(inv, m, options));
    return cli_write_json(inv->cmd, path, r);
}
