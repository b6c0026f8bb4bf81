/* cmd_micro: `ipusim micro [NAME|all]` — run the microbenchmarks and print their table
 * (measured, implied by the preset, published, differences), optionally as CSV. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/rank.h"
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

/* The JSON report: "micro": [{"bench", "what", "unit", "simulated", "implied", "published"},
 * ...] (null where a figure is missing), "host_seconds", then the config. 0 or 2. */
static int write_json(const cli_inv *inv, const char *path, const mach *m, const wl_micro_table *t,
                      double host, const char *name, unsigned threads, uint64_t max_cycles,
                      int progress)
{
    json *doc = json_obj(), *rows = json_put(doc, "micro", json_arr()), *o = json_obj();
    for (size_t i = 0; i < t->n; i++) {
        const wl_micro_row *r = &t->rows[i];
        json *x = json_put(rows, NULL, json_obj());
        json_put_str(x, "bench", r->bench);
        json_put_str(x, "what", r->what);
        json_put_str(x, "unit", r->unit);
        json_put_num(x, "simulated", r->sim);
        json_put_num(x, "implied", r->implied);
        json_put_num(x, "published", r->published);
    }
    json_put_num(doc, "host_seconds", host);
    json_put_str(o, "bench", name ? name : "all");
    json_put_u64(o, "threads", threads);
    json_put_u64(o, "max_cycles", max_cycles);
    json_put_u64(o, "progress", (uint64_t)progress);
    json_put(doc, "config", cli_json_config(inv, m, o));
    return cli_write_json(inv->cmd, path, doc);
}

static int micro_cmd(int argc, char **argv, struct rank_comm *ranks)
{
    const char *cmd = "micro", *name = NULL, *csv = NULL, *json_path = NULL;
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
            rc = cli_value(cmd, argc, argv, &i, &json_path);
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
        if (json_path && rank_id(ranks) == 0 && rc == 0)
            rc = write_json(&inv, json_path, &m, &t, host, name, (unsigned)threads, max_cycles,
                            progress);
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
