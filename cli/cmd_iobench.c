/* cmd_iobench: `ipusim io-bench` — the host I/O trade-offs workload, with its report. Under
 * `mpirun -np R` the IPUs are shared out among the ranks in whole host-link groups
 * (docs/scale-out.md); rank 0 alone prints the report and writes the JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rank.h"
#include "cli/cli.h"
#include "bench/profile/profile.h"
#include "workloads/iobench/iobench.h"

static int us_opt(const char *cmd, int argc, char **argv, int *i, sim_time *out)
{
    const char *opt = argv[*i], *v = NULL;
    int rc = cli_value(cmd, argc, argv, i, &v);
    return rc ? rc : cli_us(cmd, opt, v, out);
}

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

/* The JSON report: the figures, and the options as resolved in its config. 0 or 2. */
static int iobench_json(const cli_inv *inv, const char *path, const eng *g, const char *what,
                        double host_s, const wl_iobench_cfg *c, const wl_iobench_result *r,
                        int progress, const cli_profile *po)
{
    json *extra = json_obj(), *o = json_obj();
    json_put(extra, "iobench", iobench_figures(g, c, r));
    char dist[64], mode[32];
    json_put_u64(o, "batch", c->batch);
    json_put_u64(o, "sample_px", c->sample_px);
    json_put_str(o, "dtype", wl_iobench_dtype_name(c->dtype));
    json_put_u64(o, "work", c->work_macs);
    json_put_u64(o, "steps", c->steps);
    json_put_u64(o, "io_tiles", c->io_tiles);
    json_put_str(o, "outfeed", strm_mode_format(c->out_mode, c->out_n, mode, sizeof mode));
    json_put_u64(o, "out_bytes", c->out_bytes);
    json_put_u64(o, "depth", c->host.depth);
    json_put_u64(o, "loaders", c->host.loaders);
    json_put_num(o, "prep_us", (double)c->host.prep_ps / 1e6);
    json_put_str(o, "host_dist", host_dist_format(&c->host.dist, dist, sizeof dist));
    json_put_num(o, "callback_us", (double)c->host.callback_ps / 1e6);
    json_put_num(o, "drain_us", (double)c->drain_ps / 1e6);
    json_put_u64(o, "seed", c->host.seed);
    json_put_u64(o, "threads", eng_threads(g));
    json_put_u64(o, "max_cycles", c->max_cycles);
    json_put_u64(o, "max_superstep_cycles", c->ctl.max_superstep_cycles);
    cli_json_common(o, progress, po);
    return cli_report_json(inv, path, g, what, host_s, extra, o);
}

static int iobench_cmd(int argc, char **argv, rank_comm *ranks)
{
    const char *cmd = "io-bench", *json_path = NULL, *v = NULL;
    cli_machine mo = {0};
    const cli_inv inv = {cmd, argc, argv, &mo};
    wl_iobench_cfg c = wl_iobench_defaults();
    c.ctl.max_superstep_cycles = CLI_MAX_SUPERSTEP_CYCLES;
    uint64_t u, ipus = 0, tiles = 0;
    int rc = 0, mr, progress = 0;
    cli_profile po;
    cli_profile_init(&po);
    struct {
        const char *name;
        uint64_t min, max;
        uint32_t *dst;
    } u32[] = {
        {"--batch", 1, 1u << 20, &c.batch},
        {"--sample-px", 1, 1u << 24, &c.sample_px},
        {"--steps", 1, 1u << 20, &c.steps},
        {"--io-tiles", 0, 1u << 16, &c.io_tiles},
        {"--out-bytes", 0, 1u << 20, &c.out_bytes},
        {"--loaders", 1, 4096, &c.host.loaders},
        {"--depth", 1, HOST_MAX_DEPTH, &c.host.depth},
    };
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        size_t k = 0;
        while (k < sizeof u32 / sizeof u32[0] && strcmp(a, u32[k].name))
            k++;
        if (k < sizeof u32 / sizeof u32[0]) {
            if (!(rc = cli_opt_u64(cmd, argc, argv, &i, u32[k].min, u32[k].max, &u)))
                *u32[k].dst = (uint32_t)u;
        } else if ((mr = cli_machine_opt(cmd, argc, argv, &i, &mo)) >= 0) {
            rc = mr;
        } else if ((mr = cli_profile_opt(cmd, argc, argv, &i, &po)) >= 0) {
            rc = mr;
        } else if (!strcmp(a, "--ipus")) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1024, &ipus);
        } else if (!strcmp(a, "--tiles")) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 2, 1u << 16, &tiles);
        } else if (!strcmp(a, "--threads")) {
            if (!(rc = cli_opt_u64(cmd, argc, argv, &i, 1, 1024, &u)))
                c.threads = (unsigned)u;
        } else if (!strcmp(a, "--work")) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 0, (uint64_t)1 << 40, &c.work_macs);
        } else if (!strcmp(a, "--seed")) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 0, UINT64_MAX, &c.host.seed);
        } else if (!strcmp(a, "--prep-us")) {
            rc = us_opt(cmd, argc, argv, &i, &c.host.prep_ps);
        } else if (!strcmp(a, "--callback-us")) {
            rc = us_opt(cmd, argc, argv, &i, &c.host.callback_ps);
        } else if (!strcmp(a, "--drain-us")) {
            rc = us_opt(cmd, argc, argv, &i, &c.drain_ps);
        } else if (!strcmp(a, "--max-cycles")) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, UINT64_MAX / 2, &c.max_cycles);
        } else if (!strcmp(a, "--max-superstep-cycles")) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 0, UINT64_MAX / 2, &c.ctl.max_superstep_cycles);
        } else if (!strcmp(a, "--progress")) {
            progress = 1;
        } else if (!strcmp(a, "--json")) {
            rc = cli_value(cmd, argc, argv, &i, &json_path);
        } else if (!strcmp(a, "--dtype") || !strcmp(a, "--outfeed") || !strcmp(a, "--host-dist")) {
            if ((rc = cli_value(cmd, argc, argv, &i, &v)))
                break;
            err e;
            err_clear(&e);
            if (!strcmp(a, "--dtype")) {
                if ((c.dtype = wl_iobench_dtype(v)) < 0) {
                    fprintf(stderr,
                            "ipusim io-bench: --dtype: unknown dtype '%s' (fp32, fp16, "
                            "int8)\n",
                            v);
                    rc = 2;
                }
            } else if (!strcmp(a, "--outfeed")) {
                if (strm_mode_parse(v, &c.out_mode, &c.out_n, &e) != ERR_OK)
                    rc = cli_report_err(cmd, &e);
            } else if (host_dist_parse(&c.host.dist, v, &e) != ERR_OK) {
                rc = cli_report_err(cmd, &e);
            }
        } else {
            return cli_unknown(cmd, a);
        }
    }
    if (rc)
        return rc;
    mach m;
    if ((rc = cli_machine_resolve(cmd, &mo, &m)) != 0)
        return rc;
    if ((rc = cli_ipus(cmd, ipus, &mo, NULL, &m)) != 0 || (rc = cli_tiles(cmd, tiles, &m)) != 0)
        return rc;
    err e;
    err_clear(&e);
    if (host_cfg_check(&c.host, &e) != ERR_OK)
        return cli_report_err(cmd, &e);
    profile *pf;
    if ((rc = cli_profile_new(cmd, &po, &m, &pf)) != 0)
        return rc;
    wl_iobench_result r;
    sys *s = NULL;
    cli_watch w;
    cli_watch_begin(&w, cmd, progress);
    c.ctl.watch = cli_watch_eng(&w);
    c.ranks = ranks;
    profile_attach(pf, &c.ctl.watch);
    double t0 = cli_now();
    rc = wl_iobench_run(&m, &c, &r, &s, &e);
    double host_s = cli_now() - t0;
    cli_watch_clear(&w);
    if (rc != ERR_OK) {
        profile_free(pf);
        return cli_report_err(cmd, &e);
    }
    eng *g = sys_engine(s);

    char what[160], dist[64];
    snprintf(what, sizeof what,
             "io-bench batch %u x %u px %s, work %llu MAC/sample, %u steps, "
             "%u I/O tiles, depth %u",
             c.batch, c.sample_px, wl_iobench_dtype_name(c.dtype), (unsigned long long)c.work_macs,
             c.steps, c.io_tiles, c.host.depth);
    cli_report_text(stdout, &inv, g, what, host_s);
    printf("  %-22s %llu bytes per micro-batch; %u compute tiles; rule of thumb %u I/O tiles\n",
           "data", (unsigned long long)r.batch_bytes, r.compute_tiles, r.rule_of_thumb);
    printf("  %-22s %.1f steps/s, %.1f samples/s (host: %u loader%s, %s, %.2f us/sample)\n",
           "throughput", r.steps_per_s, r.samples_per_s, c.host.loaders,
           c.host.loaders == 1 ? "" : "s", host_dist_format(&c.host.dist, dist, sizeof dist),
           (double)c.host.prep_ps / 1e6);
    cli_report_split(stdout, g, 0);
    if (c.io_tiles)
        printf("  %-22s Begin %llu, Mid %llu, End %llu cycles; hand-over %llu cycles per step\n",
               "I/O tiles (overlapped)", (unsigned long long)r.io[0], (unsigned long long)r.io[1],
               (unsigned long long)r.io[2], (unsigned long long)r.handover_cycles);
    if (json_path && rank_id(ranks) == 0)
        rc = iobench_json(&inv, json_path, g, what, host_s, &c, &r, progress, &po);
    if (pf) {
        profile_finish(pf, g, NULL, what);
        if (cli_profile_done(pf, cmd, stdout) != 0)
            rc = 2;
        profile_free(pf);
    }
    sys_free(s);
    return rc;
}

int cli_cmd_iobench(int argc, char **argv)
{
    return cli_spread("io-bench", argc, argv, iobench_cmd);
}
