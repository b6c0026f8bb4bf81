/* cmd_micro: `ipusim micro [NAME|all]` — run the microbenchmarks and print their table
 * (measured, implied by the preset, published, differences), optionally as CSV. */
#include <math.h>
#include <stddef.h>
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

/* The command's configuration: the workload's, the benchmark named and the CSV's path. */
typedef struct micro_opts {
    wl_micro_cfg cfg;
    const char *name, *csv;
} micro_opts;

/* NAME: one benchmark. */
static int take_name(cli_ctx *x, void *cfg, const char *a)
{
    micro_opts *o = cfg;
    if (a[0] == '-')
        return -1;
    if (o->name) {
        fprintf(stderr, "ipusim %s: one benchmark name at a time ('%s', then '%s')\n", x->inv.cmd,
                o->name, a);
        return 2;
    }
    o->name = a;
    return 0;
}

static json *echo_name(const cli_ctx *x, const void *dst)
{
    const char *name = *(const char *const *)dst;
    (void)x;
    return json_str(name ? name : "all");
}

static void micro_init(cli_ctx *x, void *cfg)
{
    (void)x;
    *(micro_opts *)cfg = (micro_opts){.cfg = {.max_cycles = WL_MICRO_MAX_CYCLES}};
}

/* clang-format off */
static const cli_opt rows[] = {
    CLI_ROW_MACHINE,
    {.off = offsetof(micro_opts, name), .key = "bench", .unit = "text",
     .means = "the benchmark run, or all", .pos = -1, .echo = echo_name},
    {.name = "--threads", .kind = CLI_U32, .off = offsetof(micro_opts, cfg.threads), .min = 1,
     .max = 1024, .arg = "N", .help = "host threads (default: online CPUs)", .key = "threads",
     .unit = "", .means = "host threads (--threads; 0: the online CPUs)"},
    CLI_ROW_MAX_CYCLES(micro_opts, cfg.max_cycles, ", a program"),
    {.name = "--csv", .kind = CLI_STR, .off = offsetof(micro_opts, csv), .arg = "FILE",
     .help = "also write the table as CSV (whole or not at all)"},
    CLI_ROW_JSON("also write it as JSON, with the config (how it was run)"),
    {.kind = CLI_TEXT, .head = "--out DIR",
     .help = "the run as a directory: config.json, stats.json, report.txt,\n"
             "written whole when the run succeeds"},
    CLI_ROW_PROGRESS(),
};

const cli_table cli_micro_opts = {
    .cmd = "micro", CLI_ROWS(rows), .file = __FILE__, .col = 24, .cfg_size = sizeof(micro_opts),
    .init = micro_init, .pos = take_name,
    .head =
     "usage: ipusim micro [NAME|all] [options]\n"
     "\n"
     "Runs real tile programs on the simulated machine and prints what they measure next to\n"
     "the figure the preset's parameters imply and the published figure (docs/sources.md,\n"
     "Chip), with the differences in %. NAME is one of: xchg-latency, xchg-bandwidth, sync,\n"
     "link, memory, amp, allreduce (default: all). Latencies (a ping-pong, less the fixed costs\n"
     "of its instructions and syncs), syncs, memory, AMP and all-reduce come from the program's\n"
     "own cycle counter ($ccount); the exchange and link bandwidths from the run's exchange\n"
     "record.\n"
     "docs/fabric.md, \"Microbenchmarks\", says what each row measures and how.\n"
     "\n",
    .tail =
     "\n"
     "Under 'mpirun -np R ipusim micro ...' each program's IPUs are shared out among the R\n"
     "processes, which give the same table and CSV as one process; rank 0 writes them\n"
     "(docs/scale-out.md).\n"
     "\n"
     "Exit status: 0 ok, 2 bad options or preset, 3 simulated fault or stopped by Ctrl-C or\n"
     "SIGTERM (no table, no CSV).\n",
};
/* clang-format on */

/* The JSON report: "micro": [{"bench", "what", "unit", "simulated", "implied", "published"},
 * ...] (null where a figure is missing), "host_seconds", then the config. 0 or 2. */
static int write_json(const cli_ctx *x, const micro_opts *mo, const wl_micro_table *t)
{
    json *doc = json_obj(), *rows = json_put(doc, "micro", json_arr()), *o = json_obj();
    for (size_t i = 0; i < t->n; i++) {
        const wl_micro_row *r = &t->rows[i];
        json *j = json_put(rows, NULL, json_obj());
        json_put_str(j, "bench", r->bench);
        json_put_str(j, "what", r->what);
        json_put_str(j, "unit", r->unit);
        json_put_num(j, "simulated", r->sim);
        json_put_num(j, "implied", r->implied);
        json_put_num(j, "published", r->published);
    }
    json_put_num(doc, "host_seconds", x->host);
    cli_echo(&cli_micro_opts, x, mo, o, 0);
    json_put(doc, "config", cli_json_config(&x->inv, &x->m, o));
    return cli_write_json(x->inv.cmd, x->json, doc);
}

/* The table, the CSV and the JSON of a run that finished. */
static int micro_out(const cli_ctx *x, const micro_opts *o, const wl_micro_table *t)
{
    int rc = 0;
    print_table(stdout, &x->m, t, x->host);
    if (o->csv && rank_id(x->ranks) == 0) {
        char *text = wl_micro_csv(t);
        rc = cli_write_file(x->inv.cmd, o->csv, text, strlen(text));
        free(text);
    }
    if (x->json && rank_id(x->ranks) == 0 && rc == 0)
        rc = write_json(x, o, t);
    return rc;
}

static int micro_cmd(int argc, char **argv, struct rank_comm *ranks)
{
    cli_ctx x;
    micro_opts o;
    int rc = cli_ctx_parse(&x, &cli_micro_opts, &o, argc, argv, ranks);
    if (rc || (rc = cli_ctx_machine(&x, "each benchmark takes the IPUs it needs")) != 0 ||
        (rc = cli_ctx_begin(&x)) != 0)
        return rc;
    err *e = xmalloc(sizeof *e);
    err_clear(e);
    o.cfg.ranks = ranks;
    wl_micro_table t = {0};
    cli_ctx_start(&x);
    rc = wl_micro_run_ctl(&x.m, o.name, &o.cfg, &x.ctl, &t, e);
    cli_ctx_stop(&x, NULL);
    rc = rc != ERR_OK ? cli_report_err(x.inv.cmd, e) : micro_out(&x, &o, &t);
    cli_ctx_close(&x);
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
