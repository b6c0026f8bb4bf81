/* cmd_iobench: `ipusim io-bench` — the host I/O trade-offs workload, with its report. Under
 * `mpirun -np R` the IPUs are shared out among the ranks in whole host-link groups
 * (docs/scale-out.md); rank 0 alone prints the report and writes the JSON. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rank.h"
#include "cli/cli.h"
#include "bench/profile/profile.h"
#include "workloads/iobench/iobench.h"

/* The JSON report's "iobench": the run's figures and its time split. */
static json *iobench_figures(const eng *g, const wl_iobench_cfg *c, const wl_iobench_result *r)
{
    json *x = json_obj();
    json_put_u64(x, "batch", c->batch);
    json_put_u64(x, "sample_px", c->sample_px);
    json_put_str(x, "dtype", wl_iobench_dtype_name(c->dtype));
    json_put_u64(x, "work_macs", c->work_macs);
    json_put_u64(x, "steps", c->steps);
    json_put_u64(x, "io_tiles", c->io_tiles);
    json_put_u64(x, "depth", c->host.depth);
    json_put_u64(x, "loaders", c->host.loaders);
    json_put_num(x, "prep_us", (double)c->host.prep_ps / 1e6);
    json_put_u64(x, "batch_bytes", r->batch_bytes);
    json_put_u64(x, "rule_of_thumb", r->rule_of_thumb);
    json_put_num(x, "steps_per_s", r->steps_per_s);
    json_put_num(x, "samples_per_s", r->samples_per_s);
    json_put_num(x, "step_us", r->steps_per_s > 0 ? 1e6 / r->steps_per_s : 0);
    json_put_u64(x, "handover_cycles", r->handover_cycles);
    json_put(x, "split", cli_json_split(g, 0));
    json *io = json_put(x, "io_overlapped", json_arr());
    for (int k = 0; k < 3; k++)
        json_put_u64(io, NULL, r->io[k]);
    return x;
}

/* --dtype: the error line of its own. */
static int take_dtype(const char *cmd, const char *opt, const char *v, void *dst)
{
    (void)opt;
    if ((*(int *)dst = wl_iobench_dtype(v)) >= 0)
        return 0;
    fprintf(stderr, "ipusim %s: --dtype: unknown dtype '%s' (fp32, fp16, int8)\n", cmd, v);
    return 2;
}

/* --outfeed MODE into the configuration's out_mode and out_n. */
static int take_outfeed(const char *cmd, const char *opt, const char *v, void *dst)
{
    wl_iobench_cfg *c = dst;
    err e;
    err_clear(&e);
    (void)opt;
    return strm_mode_parse(v, &c->out_mode, &c->out_n, &e) != ERR_OK ? cli_report_err(cmd, &e) : 0;
}

static json *echo_outfeed(const cli_ctx *x, const void *dst)
{
    const wl_iobench_cfg *c = dst;
    char mode[32];
    (void)x;
    return json_str(strm_mode_format(c->out_mode, c->out_n, mode, sizeof mode));
}

/* --host-dist D into the host's distribution. */
static int take_dist(const char *cmd, const char *opt, const char *v, void *dst)
{
    err e;
    err_clear(&e);
    (void)opt;
    return host_dist_parse(dst, v, &e) != ERR_OK ? cli_report_err(cmd, &e) : 0;
}

static json *echo_dist(const cli_ctx *x, const void *dst)
{
    char dist[64];
    (void)x;
    return json_str(host_dist_format(dst, dist, sizeof dist));
}

static const char *const dtypes[] = {"fp32", "fp16", "int8", NULL};
static const int dtype_vals[] = {IOB_FP32, IOB_FP16, IOB_INT8};

#define U32(NAME, FIELD, MIN, MAX, ARG, KEY, UNIT, MEANS, HELP)                                    \
    {                                                                                              \
        .name = NAME, .kind = CLI_U32, .off = offsetof(wl_iobench_cfg, FIELD), .min = MIN,         \
        .max = MAX, .arg = ARG, .key = KEY, .unit = UNIT, .means = MEANS, .help = HELP             \
    }
#define US(NAME, FIELD, KEY, MEANS, HELP)                                                          \
    {                                                                                              \
        .name = NAME, .kind = CLI_US, .off = offsetof(wl_iobench_cfg, FIELD), .arg = "X",          \
        .key = KEY, .unit = "us", .means = MEANS, .help = HELP                                     \
    }
/* clang-format off */
static const cli_opt rows[] = {
    U32("--batch", batch, 1, 1u << 20, "N", "batch", "", "samples a step (--batch)",
        "samples per micro-batch, per IPU (default {})"),
    U32("--sample-px", sample_px, 1, 1u << 24, "N", "sample_px", "",
        "pixels a sample (--sample-px)", "pixels per sample (default {})"),
    {.name = "--dtype", .kind = CLI_VAL, .off = offsetof(wl_iobench_cfg, dtype), .val = take_dtype,
     .names = dtypes, .vals = dtype_vals, .head = "--dtype fp32|fp16|int8 ", .key = "dtype",
     .unit = "text", .means = "the infeed's element type (--dtype)",
     .help = "bytes on the link per pixel: 4, 2, 1 (default {})"},
    {.name = "--work", .kind = CLI_U64, .off = offsetof(wl_iobench_cfg, work_macs),
     .max = (uint64_t)1 << 40, .arg = "N", .key = "work", .unit = "MAC",
     .means = "compute a sample (--work)",
     .help = "fp32 MACs per sample on the device (default {})"},
    U32("--steps", steps, 1, 1u << 20, "N", "steps", "", "steps run (--steps)",
        "micro-batches per IPU (default {})"),
    U32("--io-tiles", io_tiles, 0, 1u << 16, "N", "io_tiles", "", "I/O tiles (--io-tiles)",
        "I/O tiles per IPU, even, fewer than its tiles (default {}: stream\ncopies are a phase)"),
    {.name = "--outfeed", .kind = CLI_VAL, .val = take_outfeed, .arg = "MODE", .key = "outfeed",
     .unit = "text", .means = "the outfeed's mode (--outfeed)",
     .echo = echo_outfeed, .help = "all | final | sum | every:N (default {})"},
    U32("--out-bytes", out_bytes, 0, 1u << 20, "N", "out_bytes", "B",
        "outfeed bytes a step (--out-bytes)",
        "result bytes per sample (default {})"),
    U32("--depth", host.depth, 1, HOST_MAX_DEPTH, "D", "depth", "",
        "infeed and outfeed buffering depth (--depth)",
        "buffering (prefetch) depth, 1..255 (default {})"),
    U32("--loaders", host.loaders, 1, 4096, "N", "loaders", "",
        "host data-loader workers (--loaders)", "host data-loader workers (default {})"),
    US("--prep-us", host.prep_ps, "prep_us", "their mean time to prepare a sample (--prep-us)",
       "mean host preparation time per sample, us (default {})"),
    {.name = "--host-dist", .kind = CLI_VAL, .off = offsetof(wl_iobench_cfg, host.dist),
     .val = take_dist, .arg = "D", .key = "host_dist", .unit = "text",
     .means = "the distribution of that time (--host-dist)", .echo = echo_dist,
     .help = "fixed | uniform:S | exp | bursty:P:K[:LEN] (default {})"},
    US("--callback-us", host.callback_ps, "callback_us",
       "the IPU asks for a buffer -> the host fills it (--callback-us)",
       "request -> host starts filling, us (default {})"),
    US("--drain-us", drain_ps, "drain_us", "host time to consume an outfeed buffer (--drain-us)",
       "host time to consume an outfeed buffer, us (default {})"),
    {.name = "--seed", .kind = CLI_U64, .off = offsetof(wl_iobench_cfg, host.seed),
     .max = UINT64_MAX, .arg = "N", .key = "seed", .unit = "",
     .means = "the seed of the host's random draws (--seed)", .help = "host randomness (default {})"},
    {.name = "--ipus", .kind = CLI_U64, .ctx = 1, .off = offsetof(cli_ctx, ipus), .min = 1,
     .max = 1024, .head = "--ipus N --threads N",
     .help = "IPUs (default: the machine's nipus, 1; the same as --set\n"
             "nipus=N), host threads (default: online CPUs)"},
    CLI_ROW_THREADS(wl_iobench_cfg, threads, NULL),
    {.name = "--tiles", .kind = CLI_U64, .ctx = 1, .off = offsetof(cli_ctx, tiles), .min = 2,
     .max = 1u << 16, .arg = "N",
     .help = "tiles per IPU, at most the machine's (default: all of them; a\n"
             "larger IPU: --set tiles_per_ipu=N)"},
    CLI_ROW_MACHINE,
    CLI_ROW_MAX_CYCLES(wl_iobench_cfg, max_cycles, ""),
    CLI_ROW_MAX_STEP(),
    CLI_ROW_PROGRESS(),
    CLI_ROW_JSON_REPORT,
    CLI_ROW_OUT(""),
    CLI_ROW_PROFILE,
};
/* clang-format on */
#undef U32
#undef US

static void iobench_init(cli_ctx *x, void *cfg)
{
    (void)x;
    *(wl_iobench_cfg *)cfg = wl_iobench_defaults();
}

/* clang-format off */
const cli_table cli_iobench_opts = {
    .cmd = "io-bench", CLI_ROWS(rows), .file = __FILE__, .col = 20, .profile = 1,
    .cfg_size = sizeof(wl_iobench_cfg), .init = iobench_init,
    .head =
     "usage: ipusim io-bench [options]\n"
     "\n"
     "Per step each IPU streams in a micro-batch of images, converts and normalises them on the\n"
     "tiles, does --work fp32 MACs per sample on the AMP units and streams results out. Reports\n"
     "steps/s, samples/s and the time split by category (docs/host.md).\n"
     "\n",
    .tail =
     "\n"
     "Under 'mpirun -np R ipusim io-bench ...' the IPUs are shared out among the R processes\n"
     "in whole host-link groups, so each host link's bookings stay in one process; the report,\n"
     "JSON and profile are one process's, written by rank 0 (docs/scale-out.md).\n"
     "\n"
     "Exit status: 0 ok, 2 bad options or files, 3 simulated fault or stopped by Ctrl-C or\n"
     "SIGTERM (no report, no JSON).\n",
};
/* clang-format on */

/* The JSON report: the figures, and the options as resolved in its config. 0 or 2. */
static int iobench_json(const cli_ctx *x, const eng *g, const char *what, const wl_iobench_cfg *c,
                        const wl_iobench_result *r)
{
    json *extra = json_obj(), *o = json_obj();
    json_put(extra, "iobench", iobench_figures(g, c, r));
    cli_echo(&cli_iobench_opts, x, c, o, 0);
    return cli_report_json(&x->inv, x->json, g, what, x->host, extra, o);
}

/* The report's lines: the run's statistics, then the workload's. */
static void iobench_report(const cli_ctx *x, const eng *g, const char *what,
                           const wl_iobench_cfg *c, const wl_iobench_result *r)
{
    char dist[64];
    cli_report_text(stdout, &x->inv, g, what, x->host);
    printf("  %-22s %llu bytes per micro-batch; %u compute tiles; rule of thumb %u I/O tiles\n",
           "data", (unsigned long long)r->batch_bytes, r->compute_tiles, r->rule_of_thumb);
    printf("  %-22s %.1f steps/s, %.1f samples/s (host: %u loader%s, %s, %.2f us/sample)\n",
           "throughput", r->steps_per_s, r->samples_per_s, c->host.loaders,
           c->host.loaders == 1 ? "" : "s", host_dist_format(&c->host.dist, dist, sizeof dist),
           (double)c->host.prep_ps / 1e6);
    cli_report_split(stdout, g, 0);
    if (c->io_tiles)
        printf("  %-22s Begin %llu, Mid %llu, End %llu cycles; hand-over %llu cycles per step\n",
               "I/O tiles (overlapped)", (unsigned long long)r->io[0], (unsigned long long)r->io[1],
               (unsigned long long)r->io[2], (unsigned long long)r->handover_cycles);
}

static int iobench_cmd(int argc, char **argv, rank_comm *ranks)
{
    cli_ctx x;
    wl_iobench_cfg c;
    int rc = cli_ctx_parse(&x, &cli_iobench_opts, &c, argc, argv, ranks);
    if (rc || (rc = cli_ctx_machine(&x, NULL)) != 0)
        return rc;
    err e;
    err_clear(&e);
    if (host_cfg_check(&c.host, &e) != ERR_OK)
        return cli_report_err(x.inv.cmd, &e);
    if ((rc = cli_ctx_begin(&x)) != 0)
        return rc;
    c.ctl = x.ctl;
    c.ranks = ranks;
    wl_iobench_result r;
    sys *s = NULL;
    cli_ctx_start(&x);
    rc = wl_iobench_run(&x.m, &c, &r, &s, &e);
    cli_ctx_stop(&x, s ? sys_engine(s) : NULL);
    if (rc != ERR_OK) {
        cli_ctx_close(&x);
        return cli_report_err(x.inv.cmd, &e);
    }
    eng *g = sys_engine(s);
    char what[160];
    snprintf(what, sizeof what,
             "io-bench batch %u x %u px %s, work %llu MAC/sample, %u steps, "
             "%u I/O tiles, depth %u",
             c.batch, c.sample_px, wl_iobench_dtype_name(c.dtype), (unsigned long long)c.work_macs,
             c.steps, c.io_tiles, c.host.depth);
    iobench_report(&x, g, what, &c, &r);
    if (x.json && rank_id(ranks) == 0)
        rc = iobench_json(&x, g, what, &c, &r);
    if (cli_ctx_profile(&x, g, what) != 0)
        rc = 2;
    cli_ctx_close(&x);
    sys_free(s);
    return rc;
}

int cli_cmd_iobench(int argc, char **argv)
{
    return cli_spread("io-bench", argc, argv, iobench_cmd);
}
