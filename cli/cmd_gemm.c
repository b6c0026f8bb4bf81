/* cmd_gemm: `ipusim gemm` — the GEMM workload with its report and reference check. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "bench/profile/profile.h"
#include "hw/engine.h"
#include "workloads/gemm/gemm.h"

/* The JSON report: the run's figures as "gemm", the options as resolved. 0 or 2. */
static int gemm_json(const cli_inv *inv, const char *path, const eng *g, const char *what,
                     double host, const wl_gemm_cfg *c, const wl_gemm_result *r, uint64_t max_step,
                     int progress, const cli_profile *po)
{
    json *extra = json_obj(), *x = json_put(extra, "gemm", json_obj()), *opts = json_obj();
    const struct {
        const char *key;
        uint32_t v;
    } dims[] = {{"m", c->m}, {"n", c->n}, {"k", c->k}};
    for (int d = 0; d < 3; d++) {
        json_put_u64(x, dims[d].key, dims[d].v);
        json_put_u64(opts, dims[d].key, dims[d].v);
    }
    json_put_u64(x, "grid_m", r->grid_m);
    json_put_u64(x, "grid_n", r->grid_n);
    json_put_num(x, "tflops", r->tflops);
    json_put_num(x, "peak_tflops", r->peak_tflops);
    json_put_num(x, "pct_peak", r->pct_peak);
    json_put(x, "checked", json_boolean(r->checked));
    json_put_u64(x, "mismatches", r->mismatches);
    json_put_u64(x, "inexact", r->inexact);
    json_put_num(x, "max_abs_err", r->max_abs_err);
    json_put_u64(opts, "seed", c->seed);
    json_put_u64(opts, "check", (uint64_t)c->check);
    json_put_u64(opts, "threads", eng_threads(g));
    json_put_u64(opts, "max_cycles", c->max_cycles);
    json_put_u64(opts, "max_superstep_cycles", max_step);
    cli_json_common(opts, progress, po);
    return cli_report_json(inv, path, g, what, host, extra, opts);
}

int cli_cmd_gemm(int argc, char **argv)
{
    const char *cmd = "gemm", *json_path = NULL;
    cli_machine mo = {0};
    const cli_inv inv = {cmd, argc, argv, &mo};
    uint64_t M = 1536, N = 1472, K = 512, tiles = 0, threads = 0, seed = 1;
    uint64_t max_cycles = 10000000000ull, max_step = CLI_MAX_SUPERSTEP_CYCLES;
    int check = 1, rc = 0, mr, progress = 0;
    cli_profile po;
    cli_profile_init(&po);
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if ((mr = cli_machine_opt(cmd, argc, argv, &i, &mo)) >= 0)
            rc = mr;
        else if ((mr = cli_profile_opt(cmd, argc, argv, &i, &po)) >= 0)
            rc = mr;
        else if (strcmp(a, "--m") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1u << 20, &M);
        else if (strcmp(a, "--n") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1u << 20, &N);
        else if (strcmp(a, "--k") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1u << 20, &K);
        else if (strcmp(a, "--tiles") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1u << 16, &tiles);
        else if (strcmp(a, "--threads") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1024, &threads);
        else if (strcmp(a, "--seed") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 0, UINT64_MAX, &seed);
        else if (strcmp(a, "--max-cycles") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, UINT64_MAX / 2, &max_cycles);
        else if (strcmp(a, "--max-superstep-cycles") == 0)
            rc = cli_opt_u64(cmd, argc, argv, &i, 0, UINT64_MAX / 2, &max_step);
        else if (strcmp(a, "--progress") == 0)
            progress = 1;
        else if (strcmp(a, "--json") == 0)
            rc = cli_value(cmd, argc, argv, &i, &json_path);
        else if (strcmp(a, "--no-check") == 0)
            check = 0;
        else
            return cli_unknown(cmd, a);
    }
    if (rc)
        return rc;
    err e;
    err_clear(&e);
    mach m;
    rc = cli_machine_resolve(cmd, &mo, &m);
    if (rc || (rc = cli_ipus(cmd, 0, &mo, "gemm runs on one IPU", &m)) != 0)
        return rc;
    if ((rc = cli_tiles(cmd, tiles, &m)) != 0)
        return rc;
    profile *pf;
    if ((rc = cli_profile_new(cmd, &po, &m, &pf)) != 0)
        return rc;
    cli_watch w;
    cli_watch_begin(&w, cmd, progress);
    wl_gemm_cfg cfg = {.m = (uint32_t)M,
                       .n = (uint32_t)N,
                       .k = (uint32_t)K,
                       .seed = seed,
                       .check = check,
                       .threads = (unsigned)threads,
                       .max_cycles = max_cycles};
    sys_ctl ctl = {max_step, cli_watch_eng(&w)};
    profile_attach(pf, &ctl.watch);
    wl_gemm_result r;
    sys *s = NULL;
    rc = wl_gemm_run_ctl(&m, &cfg, &ctl, &r, &s, &e);
    cli_watch_clear(&w);
    double host = r.host_seconds;
    if (rc == ERR_OK && cli_stopped()) { /* asked for after the check's last look */
        rc = err_set(&e, ERR_STOPPED, "stopped after the reference check; no report written");
        sys_free(s);
    }
    if (rc != ERR_OK) {
        profile_free(pf);
        return cli_report_err(cmd, &e);
    }
    eng *g = sys_engine(s);

    char what[96];
    snprintf(what, sizeof what, "gemm %llux%llux%llu", (unsigned long long)M, (unsigned long long)N,
             (unsigned long long)K);
    cli_report_text(stdout, &inv, g, what, host);
    printf("  %-22s %u x %u tiles used of %u, %u bytes on the busiest tile\n", "mapping", r.grid_m,
           r.grid_n, m.tiles_per_ipu, r.tile_bytes);
    printf("  %-22s %.2f TFLOPS fp32 = %.1f%% of the %.2f TFLOPS peak\n", "throughput", r.tflops,
           r.pct_peak, r.peak_tflops);
    if (r.checked) {
        printf("  %-22s %s: max |C - ref| = %.3g, worst error / bound = %.3g, %llu outside\n",
               "reference check", r.mismatches ? "FAILED" : "passed", r.max_abs_err, r.worst_ratio,
               (unsigned long long)r.mismatches);
        printf("  %-22s %s: %llu elements differ from the fp32 loop c = c + a*b in k order\n",
               "bit-exact check", r.inexact ? "FAILED" : "passed", (unsigned long long)r.inexact);
    }
    if (json_path &&
        gemm_json(&inv, json_path, g, what, host, &cfg, &r, max_step, progress, &po) != 0)
        rc = 2;
    if (pf) {
        profile_finish(pf, g, NULL, what);
        if (cli_profile_done(pf, cmd, stdout) != 0)
            rc = 2;
        profile_free(pf);
    }
    sys_free(s);
    if (r.checked && (r.mismatches || r.inexact))
        return 3;
    return rc;
}
