/* cmd_gemm: `ipusim gemm` — the GEMM workload with its report and reference check. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "bench/profile/profile.h"
#include "hw/engine.h"
#include "workloads/gemm/gemm.h"

/* clang-format off */
static const cli_opt rows[] = {
    {.name = "--m", .kind = CLI_U32, .off = offsetof(wl_gemm_cfg, m), .min = 1, .max = 1u << 20,
     .head = "--m M --n N --k K", .help = "sizes (default {} {--n} {--k})", .key = "m", .unit = "", .means = "rows of A and C (--m)",
     .pos = -1},
    {.name = "--n", .kind = CLI_U32, .off = offsetof(wl_gemm_cfg, n), .min = 1, .max = 1u << 20,
     .key = "n", .unit = "", .means = "columns of B and C (--n)", .pos = -1},
    {.name = "--k", .kind = CLI_U32, .off = offsetof(wl_gemm_cfg, k), .min = 1, .max = 1u << 20,
     .key = "k", .unit = "", .means = "columns of A, rows of B (--k)", .pos = -1},
    CLI_ROW_MACHINE,
    CLI_ROW_TILES(1),
    CLI_ROW_THREADS(wl_gemm_cfg, threads, "host threads (default: online CPUs)"),
    {.name = "--seed", .kind = CLI_U64, .off = offsetof(wl_gemm_cfg, seed), .max = UINT64_MAX,
     .arg = "N", .help = "seed of the random inputs (default {})", .key = "seed", .unit = "",
     .means = "the seed of the random inputs (--seed)", .pos = -1},
    CLI_ROW_MAX_CYCLES(wl_gemm_cfg, max_cycles, ""),
    CLI_ROW_MAX_STEP(),
    CLI_ROW_PROGRESS(),
    {.name = "--no-check", .kind = CLI_CLEAR, .off = offsetof(wl_gemm_cfg, check),
     .help = "skip the reference comparison", .key = "check", .unit = "bool",
     .means = "1: C was checked against the reference (0: --no-check)", .pos = -1},
    CLI_ROW_JSON_REPORT,
    CLI_ROW_OUT(""),
    CLI_ROW_PROFILE,
};
/* clang-format on */

static void gemm_init(cli_ctx *x, void *cfg)
{
    (void)x;
    *(wl_gemm_cfg *)cfg = (wl_gemm_cfg){
        .m = 1536, .n = 1472, .k = 512, .seed = 1, .check = 1, .max_cycles = 10000000000ull};
}

/* clang-format off */
const cli_table cli_gemm_opts = {
    .cmd = "gemm", CLI_ROWS(rows), .file = __FILE__, .col = 24, .profile = 1, .cfg_size = sizeof(wl_gemm_cfg),
    .init = gemm_init,
    .head =
     "usage: ipusim gemm [--m M] [--n N] [--k K] [options]\n"
     "\n"
     "Places random A (MxK) and B (KxN) in tile memory, runs the AMP codelet on all tiles\n"
     "and their six workers, checks C against a plain C reference, and prints simulated\n"
     "cycles and TFLOPS against the machine's fp32 peak.\n"
     "\n",
    .tail =
     "\n"
     "Ctrl-C or SIGTERM stops the run, or the reference check after it (which takes longer),\n"
     "with one line saying where; no report, no JSON.\n"
     "\n"
     "Exit status: 0 ok, 2 bad options or files, 3 a simulated fault (or C failed the\n"
     "reference check), or stopped by Ctrl-C or SIGTERM (no report, no JSON).\n",
};
/* clang-format on */

/* The JSON report: the run's figures as "gemm", the options as resolved. 0 or 2. */
static int gemm_json(const cli_ctx *x, const eng *g, const char *what, const wl_gemm_cfg *c,
                     const wl_gemm_result *r)
{
    json *extra = json_obj(), *o = json_put(extra, "gemm", json_obj()), *opts = json_obj();
    json_put_u64(o, "m", c->m);
    json_put_u64(o, "n", c->n);
    json_put_u64(o, "k", c->k);
    json_put_u64(o, "grid_m", r->grid_m);
    json_put_u64(o, "grid_n", r->grid_n);
    json_put_num(o, "tflops", r->tflops);
    json_put_num(o, "peak_tflops", r->peak_tflops);
    json_put_num(o, "pct_peak", r->pct_peak);
    json_put(o, "checked", json_boolean(r->checked));
    json_put_u64(o, "mismatches", r->mismatches);
    json_put_u64(o, "inexact", r->inexact);
    json_put_num(o, "max_abs_err", r->max_abs_err);
    cli_echo(&cli_gemm_opts, x, c, opts, 0);
    return cli_report_json(&x->inv, x->json, g, what, x->host, extra, opts);
}

/* The report's lines after the run's statistics. */
static void gemm_lines(const mach *m, const wl_gemm_result *r)
{
    printf("  %-22s %u x %u tiles used of %u, %u bytes on the busiest tile\n", "mapping", r->grid_m,
           r->grid_n, m->tiles_per_ipu, r->tile_bytes);
    printf("  %-22s %.2f TFLOPS fp32 = %.1f%% of the %.2f TFLOPS peak\n", "throughput", r->tflops,
           r->pct_peak, r->peak_tflops);
    if (!r->checked)
        return;
    printf("  %-22s %s: max |C - ref| = %.3g, worst error / bound = %.3g, %llu outside\n",
           "reference check", r->mismatches ? "FAILED" : "passed", r->max_abs_err, r->worst_ratio,
           (unsigned long long)r->mismatches);
    printf("  %-22s %s: %llu elements differ from the fp32 loop c = c + a*b in k order\n",
           "bit-exact check", r->inexact ? "FAILED" : "passed", (unsigned long long)r->inexact);
}

int cli_cmd_gemm(int argc, char **argv)
{
    cli_ctx x;
    wl_gemm_cfg c;
    int rc = cli_ctx_parse(&x, &cli_gemm_opts, &c, argc, argv, NULL);
    if (rc || (rc = cli_ctx_machine(&x, "gemm runs on one IPU")) != 0 ||
        (rc = cli_ctx_begin(&x)) != 0)
        return rc;
    err e;
    err_clear(&e);
    wl_gemm_result r;
    sys *s = NULL;
    rc = wl_gemm_run_ctl(&x.m, &c, &x.ctl, &r, &s, &e);
    cli_ctx_stop(&x, s ? sys_engine(s) : NULL);
    x.host = r.host_seconds;
    if (rc == ERR_OK && cli_stopped()) { /* asked for after the check's last look */
        rc = err_set(&e, ERR_STOPPED, "stopped after the reference check; no report written");
        sys_free(s);
    }
    if (rc != ERR_OK) {
        cli_ctx_close(&x);
        return cli_report_err(x.inv.cmd, &e);
    }
    eng *g = sys_engine(s);
    char what[96];
    snprintf(what, sizeof what, "gemm %ux%ux%u", c.m, c.n, c.k);
    cli_report_text(stdout, &x.inv, g, what, x.host);
    gemm_lines(&x.m, &r);
    if (x.json && gemm_json(&x, g, what, &c, &r) != 0)
        rc = 2;
    if (cli_ctx_profile(&x, g, what) != 0)
        rc = 2;
    cli_ctx_close(&x);
    sys_free(s);
    if (r.checked && (r.mismatches || r.inexact))
        return 3;
    return rc;
}
