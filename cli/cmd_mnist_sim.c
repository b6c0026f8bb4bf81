/* cmd_mnist_sim: `ipusim mnist` on simulated IPUs (workloads/mnist/mnet.h): one, or several
 * pipelined, sharded or replicated. The initial weights are the reference run's (the seeded
 * initialisation, or --load-weights) and --save-weights writes the same files, so weights move
 * between the two runs as they are. It prints the tutorial's lines as the reference run does
 * (cli/cmd_mnist.c), then a report of what the simulated IPUs did: cycles per host call and in
 * all, images per simulated second, each IPU's time split and tile balance, tile memory, the
 * compile summary, host time and
 * simulation speed (docs/mnist.md, Report); --json writes all of it. The figures that need the
 * engine or the compiled graph are taken in mnet's `finished` hook, before they are freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/rank.h"
#include "base/text.h"
#include "bench/profile/csets.h"
#include "cli/cli.h"
#include "cli/cmd_mnist.h"
#include "hw/engine.h"
#include "hw/tile.h"
#include "workloads/graph/graph.h"
#include "workloads/mnist/mnet.h"

#define CMD MNIST_CMD
#define MNIST_PLAN_STEPS                                                                           \
    65536 /* program steps logged a run: the first pipeline run (of up to
                                * eight stages), --plan's planned steps */

/* One simulated run, the training or the test pass, as its `finished` hook saw it. */
typedef struct phase {
    int seen;
    mach m;
    unsigned threads;
    eng_stats st;
    char *split;      /* cli_report_split's line */
    json *split_json; /* cli_json_split's object */
    json *csets;      /* the compute sets' table (cset_json), NULL without one */
    txt csets_text;   /* its top 5 per IPU, a line each (cset_text_engine) */
    gr_summary sum;   /* the compile */
    gr_tile_mem top;  /* the tile with the largest image */
    uint32_t top_tile;
    eng_balance balance; /* of every IPU's compute tiles (the I/O tiles apart) */
    txt steps;           /* --steps: the first program steps, a line each */
    uint64_t plan_sim[MNET_MAX_PLANS]
                     [OP_S_N]; /* the planned operations' steps, simulated (pipe.plan) */
    mnet_pipe_info pipe;
    mnet_pipe_steps pst;    /* a pipelined run's steps as simulated (pst.N 0: none) */
    eng_ipu_stats ipu[64];  /* per IPU */
    uint32_t ipu_peak[64];  /* per IPU: its largest tile image */
    double ipu_balance[64]; /* per IPU: its tiles' balance, % */
    double host_s;          /* wall time of mnet_train or mnet_test */
    long images;
} phase;

enum { PH_TRAIN, PH_TEST, PH_N };
static const char *const phase_key[PH_N] = {"train", "test"};

typedef struct sim {
    mnist_run r;
    phase ph[PH_N];
    uint64_t *ends; /* each host call's end cycle */
    size_t ncalls, cap;
    uint64_t epoch_end; /* the end cycle of the previous epoch's last call */
    uint32_t iters;     /* device iterations per host call */
    cli_watch *w;       /* Ctrl-C, SIGTERM, the heartbeat: the run context's */
    profile *pf;        /* --profile: the training run's (the run context's) */
    size_t list_steps;  /* --steps: the steps to list */
    int plan_report;    /* --plan: report the plans */
    char sets[512];     /* the --set overrides, as the headers name them (cli_machine_sets) */
    uint32_t io_tiles;  /* I/O tiles per IPU (mnet_cfg.io_tiles) */
    mnist_bal *bal;     /* --stages auto: the search, else NULL */
} sim;

/* ---- the hooks ---- */

static void on_epoch(void *ctx, int epoch, int epochs)
{
    cli_watch_clear(((sim *)ctx)->w);
    mnist_epoch(&((sim *)ctx)->r, epoch, epochs);
}

static void on_call(void *ctx, const mnet_call *c)
{
    sim *s = ctx;
    uint64_t prev = s->ncalls ? s->ends[s->ncalls - 1] : 0;
    s->ends = xgrow(s->ends, &s->cap, s->ncalls + 1, sizeof *s->ends);
    s->ends[s->ncalls++] = c->end_cycle;
    cli_watch_clear(s->w);
    mnist_call(&s->r, &c->p);
    json *call = json_object_array_get_idx(s->r.calls, json_object_array_length(s->r.calls) - 1);
    json_put_u64(call, "end_cycle", c->end_cycle);
    json_put_u64(call, "cycles", c->end_cycle - prev);
    if (c->p.call == c->p.calls)
        json_put_u64(
            json_object_array_get_idx(s->r.epochs, json_object_array_length(s->r.epochs) - 1),
            "cycles", c->end_cycle - s->epoch_end);
    /* the heartbeat's expectation: the calls so far at their mean pace (the test pass aside) */
    uint64_t done = (uint64_t)(c->p.epoch - 1) * (uint64_t)c->p.calls + (uint64_t)c->p.call;
    s->w->expect = c->end_cycle / done * (uint64_t)c->p.calls * (uint64_t)c->p.epochs;
    if (s->pf && !(c->p.call == c->p.calls && c->p.epoch == c->p.epochs))
        profile_mark(s->pf, PROFILE_CALL, c->end_cycle); /* the last call ends the run */
    if (c->p.call == c->p.calls)
        s->epoch_end = c->end_cycle;
}

/* The tile with the largest image, over every IPU (ipu x tiles per IPU + tile). */
static void tile_memory(phase *p, const gr_exe *x, uint32_t nipus, uint32_t ntiles)
{
    for (uint32_t i = 0; i < nipus; i++)
        for (uint32_t t = 0; t < ntiles; t++) {
            const gr_tile_mem *tm = gr_exe_tile(x, i, t);
            if (tm->total > p->top.total) {
                p->top = *tm;
                p->top_tile = i * ntiles + t;
            }
        }
}

/* "tile T" on one IPU, "ipu I tile T" on several, for a tile numbered as tile_memory's. */
static const char *tile_name(const phase *p, uint32_t gt, char *buf, size_t len)
{
    uint32_t n = p->m.tiles_per_ipu;
    if (p->m.nipus > 1)
        snprintf(buf, len, "ipu %u tile %u", gt / n, gt % n);
    else
        snprintf(buf, len, "tile %u", gt);
    return buf;
}

/* Mean over max of the issue cycles of the compute tiles that hold a program: of all of them,
 * and of each IPU's; the I/O tiles (the last io_tiles of each IPU) apart. */
static void tile_balance(phase *p, const eng *g, uint32_t io_tiles)
{
    for (uint32_t i = 0; i < eng_nipus(g) && i < 64; i++)
        p->ipu_balance[i] = eng_tile_balance(g, i, io_tiles).percent;
    p->balance = eng_tile_balance(g, UINT32_MAX, io_tiles);
}

/* The program steps the engine logged (mnet_cfg.log_steps), each with the cycles from the
 * previous step's sync release to its own. */
static void step_lines(phase *p, const eng *g, const gr_exe *x, size_t want)
{
    size_t n;
    const uint64_t *rel = eng_sync_log(g, 0, &n);
    n = n < want ? n : want;
    gr_step *st = xmalloc((n ? n : 1) * sizeof *st);
    n = gr_exe_steps(x, 0, st, n); /* the log is IPU 0's (mnet.c) */
    txt_free(&p->steps);
    for (size_t k = 0; k < n; k++)
        txt_printf(&p->steps, "    %5zu  %-10s %-26s %10llu\n", k, st[k].what, st[k].name,
                   (unsigned long long)(rel[k] - (k ? rel[k - 1] : 0)));
    free(st);
}

/* Each planned operation's steps as the run took them: the cycles of each step's first run
 * on the operation's IPU (0 where the sync log did not reach it). */
static void plan_sims(phase *p, const eng *g, const gr_exe *x, const mnet_pipe_info *pi)
{
    memset(p->plan_sim, 0, sizeof p->plan_sim);
    for (uint32_t k = 0; k < pi->nplans && k < MNET_MAX_PLANS; k++) {
        const mnet_plan *pl = &pi->plan[k];
        size_t n;
        const uint64_t *rel = eng_sync_log(g, pl->ipu, &n);
        gr_step *st = xmalloc((n ? n : 1) * sizeof *st);
        n = gr_exe_steps(x, pl->ipu, st, n);
        for (size_t i = 0; i < n; i++) {
            int j = op_conv_step_of(pl->name, &st[i]);
            if (j >= 0 && !p->plan_sim[k][j])
                p->plan_sim[k][j] = rel[i] - (i ? rel[i - 1] : 0);
        }
        free(st);
    }
}

/* --plan: each planned operation's shape, partition and tiles, and each of its steps'
 * estimated cycles against the simulated ones. */
static void report_plans(const phase *p)
{
    if (!p->pipe.nplans)
        return;
    printf("  %-22s step       kind       estimated  simulated  estimate\n", "plans");
    for (uint32_t k = 0; k < p->pipe.nplans && k < MNET_MAX_PLANS; k++) {
        const mnet_plan *pl = &p->pipe.plan[k];
        const op_conv_shape *s = &pl->shape;
        char part[96];
        op_conv_part_text(&pl->part, part, sizeof part);
        char more[64] = "";
        if (s->pad)
            snprintf(more, sizeof more, ", padding %u", s->pad);
        printf("    %s (%s), ipu %u: x [%u][%u][%u][%u], w [%u][%u][%u][%u]%s%s: %s, %u tiles, "
               "%u B a tile (%u working)\n",
               pl->name, pl->pass, pl->ipu, s->B, s->cin, s->h, s->w, s->cout, s->cin, s->k, s->k,
               s->form == OP_W_DX  ? " read transposed and flipped"
               : s->form == OP_W_T ? " read transposed"
                                   : "",
               more, part, pl->est.tiles, pl->est.bytes, pl->est.temp);
        for (int j = 0; j < OP_S_N; j++) {
            uint64_t sim = p->plan_sim[k][j], est = pl->est.step[j];
            if (est || sim)
                printf("      %-10s %-9s %10llu %10llu  %+6.1f%%\n", op_conv_step_name(j),
                       op_conv_step_compute(j) ? "compute" : "exchange", (unsigned long long)est,
                       (unsigned long long)sim,
                       sim ? 100.0 * ((double)est / (double)sim - 1.0) : 0.0);
        }
    }
}

/* The device iterations' boundaries for the profile: an iteration begins at IPU 0's first
 * infeed step after its weight update (the compute set "adamw"), the first at cycle 0: the
 * stream copy "infeed", or with I/O tiles the hand-over Copy of that name. */
static void mark_iterations(profile *pf, const eng *g, const gr_exe *x)
{
    size_t n = profile_steps(pf, g, 0);
    gr_step *st = xmalloc((n ? n : 1) * sizeof *st);
    n = gr_exe_steps(x, 0, st, n);
    int updated = 0;
    for (size_t k = 0; k < n; k++) {
        if (strcmp(st[k].what, "execute") == 0 && strcmp(st[k].name, "adamw") == 0) {
            updated = 1;
        } else if (updated && strcmp(st[k].name, "infeed") == 0) {
            profile_mark(pf, PROFILE_ITER, profile_step_start(pf, g, 0, k));
            updated = 0;
        }
    }
    free(st);
}

static void on_finished(void *ctx, int test, eng *g, const gr_exe *x, const mnet_pipe_info *pi)
{
    sim *s = ctx;
    if (s->pf && !test) {
        mark_iterations(s->pf, g, x);
        profile_finish(s->pf, g, x, "mnist training");
    }
    phase *p = &s->ph[test ? PH_TEST : PH_TRAIN];
    p->pipe = *pi;
    for (uint32_t i = 0; i < eng_nipus(g) && i < 64; i++) {
        eng_get_ipu_stats(g, i, &p->ipu[i]);
        p->ipu_peak[i] = 0;
        for (uint32_t t = 0; t < eng_ntiles(g); t++)
            if (gr_exe_tile(x, i, t)->total > p->ipu_peak[i])
                p->ipu_peak[i] = gr_exe_tile(x, i, t)->total;
    }
    free(p->split);
    json_object_put(p->split_json);
    p->seen = 1;
    p->m = *eng_machine(g);
    p->threads = eng_threads(g);
    eng_get_stats(g, &p->st);
    size_t len = 0;
    FILE *f = open_memstream(&p->split, &len);
    if (!f)
        xoom(BUFSIZ); /* open_memstream fails only for memory */
    for (uint32_t i = 0; i < eng_nipus(g); i++)
        cli_report_split(f, g, i);
    fclose(f);
    p->split_json = cli_json_split(g, 0);
    json_object_put(p->csets);
    p->csets = cset_json(g);
    txt_free(&p->csets_text);
    cset_text_engine(g, 5, &p->csets_text);
    p->sum = *gr_exe_summary(x);
    p->top = (gr_tile_mem){0};
    tile_memory(p, x, eng_nipus(g), eng_ntiles(g));
    tile_balance(p, g, s->io_tiles);
    step_lines(p, g, x, s->list_steps);
    plan_sims(p, g, x, pi);
    if (pi->stages < 2 || mnet_pipe_measure(g, x, pi, !test, &p->pst) != ERR_OK)
        p->pst.N = 0; /* not pipelined, or its first run outgrew the step log */
}

/* The pipeline's steps: a main step's cycles, each IPU's passes in it and the Copy; each
 * stage's passes alone. */
static void report_pipe_steps(const phase *p)
{
    const mnet_pipe_steps *m = &p->pst;
    if (!m->N)
        return;
    if (m->main_step) {
        printf("  %-22s step %u of %u: %llu cycles: the passes", "main pipeline step", m->main_step,
               m->steps, (unsigned long long)m->main);
        for (uint32_t i = 0; i < m->N; i++)
            printf("%s %llu", i ? "," : "", (unsigned long long)m->work[i]);
        printf(" (IPU 0, 1, ...), then the Copy %llu\n", (unsigned long long)m->copy);
    }
    printf("  %-22s", "passes alone");
    for (uint32_t i = 0; i < m->N; i++)
        if (i + 1 < m->N)
            printf(" ipu %u forward %llu backward %llu;", i, (unsigned long long)m->fwd[i],
                   (unsigned long long)m->bwd[i]);
        else
            printf(" ipu %u fused %llu\n", i, (unsigned long long)m->fused);
}

/* ---- the report ---- */

static double sim_seconds(const phase *p, uint64_t cycles)
{
    return (double)mach_cycles_to_ps(&p->m, cycles) * 1e-12;
}

static double instructions(const phase *p)
{
    const eng_stat *row = eng_stat_find(eng_stat_table(), ENG_NSTAT, "instructions");
    return p->seen ? eng_stat_value(row, &p->st, &p->m) : 0.0;
}

/* The cycles of each host call: the differences of their end cycles, the first from 0. */
static void call_cycles(const sim *s, double *mean, uint64_t *min, uint64_t *max)
{
    *min = UINT64_MAX;
    *max = 0;
    for (size_t k = 0; k < s->ncalls; k++) {
        uint64_t c = s->ends[k] - (k ? s->ends[k - 1] : 0);
        *min = c < *min ? c : *min;
        *max = c > *max ? c : *max;
    }
    *mean = s->ncalls ? (double)s->ends[s->ncalls - 1] / (double)s->ncalls : 0.0;
}

/* An IPU's share of its cycles spent computing or exchanging on-chip (not waiting at a sync,
 * for the host or for other IPUs), %. */
static double busy_pct(const phase *p, uint32_t i)
{
    const eng_ipu_stats *q = &p->ipu[i];
    uint64_t busy = q->cat[ENG_CAT_COMPUTE] + q->cat[ENG_CAT_EXCHANGE];
    return p->st.cycles ? 100.0 * (double)busy / (double)p->st.cycles : 0.0;
}

/* The utilisation of a pipeline whose passes all take the same time (docs/pipelining.md):
 * grouped and interleaved keep every IPU busy in G of G + N - 1 steps' worth, G/(G+N-1);
 * sequential runs one IPU at a time, 1/N. Its formula into *formula. */
static double ideal_pct(const phase *p, const char **formula)
{
    double G = p->pipe.micro, N = p->pipe.stages;
    int seq = p->pipe.schedule == PIPE_SEQUENTIAL;
    *formula = seq ? "1/N" : "G/(G+N-1)";
    return seq ? 100.0 / N : 100.0 * G / (G + N - 1.0);
}

/* Several IPUs: a line per IPU (its stash, host and IPU-Link bytes, largest tile, busy share),
 * then the utilisation (the mean busy share) and a device iteration's cycles (0: not known). */
/* iters: the device iterations the run made (0: none counted, as the test pass). */
static void report_ipus(const phase *p, double iter_cycles, uint64_t iters)
{
    if (p->m.nipus < 2)
        return;
    double sum = 0.0;
    for (uint32_t i = 0; i < p->m.nipus && i < 64; i++) {
        const eng_ipu_stats *q = &p->ipu[i];
        char name[16], stash[96] = "";
        snprintf(name, sizeof name, "ipu %u", i);
        uint32_t st = p->pipe.stages ? i % p->pipe.stages : 0; /* its stage in its replica */
        if (p->pipe.stages)
            snprintf(stash, sizeof stash, "%u micro-batch%s in flight, stash %u slot%s %llu B; ",
                     p->pipe.in_flight[st], p->pipe.in_flight[st] == 1 ? "" : "es",
                     p->pipe.slots[st], p->pipe.slots[st] == 1 ? "" : "s",
                     (unsigned long long)p->pipe.stash_bytes[st]);
        char per[96] = "";
        if (iters)
            snprintf(per, sizeof per, " (%.0f and %.0f B per device iteration)",
                     (double)q->global_tx_bytes / (double)iters,
                     (double)q->global_rx_bytes / (double)iters);
        printf("  %-22s %sStreamCopy in %llu B out %llu B; GlobalExchange tx %llu B rx %llu B%s; "
               "peak tile %u B; tile balance %.1f%%; busy %.1f%%\n",
               name, stash, (unsigned long long)q->host_in_bytes,
               (unsigned long long)q->host_out_bytes, (unsigned long long)q->global_tx_bytes,
               (unsigned long long)q->global_rx_bytes, per, p->ipu_peak[i], p->ipu_balance[i],
               busy_pct(p, i));
        sum += busy_pct(p, i);
    }
    printf("  %-22s %.1f%% (the IPUs' mean busy share)",
           p->pipe.stages ? "pipeline utilisation" : "utilisation", sum / p->m.nipus);
    const char *formula;
    if (p->pipe.stages > 1) {
        double ideal = ideal_pct(p, &formula);
        printf(", ideal %s = %.1f%%", formula, ideal);
    }
    if (iter_cycles > 0)
        printf("; %.0f cycles per device iteration", iter_cycles);
    printf("\n");
}

/* The compiled graph: its largest tile image and its summary; with planned operations, the
 * tiles each uses. */
static void report_graph(const phase *p)
{
    printf("  %-22s", "tiles per layer");
    for (int k = 0; k < MNET_NLAYERS; k++) {
        printf("%s %s", k ? ";" : "", mnet_layer_name(k));
        for (uint32_t i = 0; i < p->m.nipus && i < MSPEC_MAX_BLOCKS; i++)
            if (p->pipe.layer_tiles[k][i])
                printf(" %u on ipu %u", p->pipe.layer_tiles[k][i], i);
    }
    printf("\n");
    printf("  %-22s", "conv and linear tiles");
    for (uint32_t i = 0; i < p->m.nipus && i < MSPEC_MAX_BLOCKS; i++)
        printf("%s %u of %u on ipu %u (%.1f%%)", i ? ";" : "", p->pipe.mm_tiles[i],
               p->m.tiles_per_ipu, i, 100.0 * p->pipe.mm_tiles[i] / p->m.tiles_per_ipu);
    printf("\n");
    if (p->pipe.nplans) {
        printf("  %-22s", "planned");
        for (uint32_t k = 0; k < p->pipe.nplans && k < MNET_MAX_PLANS; k++)
            printf("%s %s (%s) on %u tiles of ipu %u", k ? "," : "", p->pipe.plan[k].name,
                   p->pipe.plan[k].pass, p->pipe.plan[k].est.tiles, p->pipe.plan[k].ipu);
        printf("\n");
    }
    char w[48];
    printf("  %-22s peak %u B on %s (code %u, vertex state %u, data %u) of %u B SRAM; mean "
           "%.0f B over %u tiles\n",
           "tile memory", p->top.total, tile_name(p, p->top_tile, w, sizeof w), p->top.code,
           p->top.state, p->top.data, p->m.sram_bytes, p->sum.mean_bytes, p->sum.tiles_used);
    printf("  %-22s %u compute sets, %u vertices, %u exchanges (%llu B), %u programs, %.2f s\n",
           "compile", p->sum.compute_sets, p->sum.vertices, p->sum.exchanges,
           (unsigned long long)p->sum.exchange_bytes, p->sum.programs, p->sum.compile_seconds);
}

static void report_train(const sim *s)
{
    const phase *p = &s->ph[PH_TRAIN];
    double sec = sim_seconds(p, p->st.cycles), mean;
    uint64_t min, max;
    printf("  %-22s %zu host call%s, %ld images: %llu cycles, %.3f ms simulated\n", "training",
           s->ncalls, s->ncalls == 1 ? "" : "s", p->images, (unsigned long long)p->st.cycles,
           sec * 1e3);
    if (s->ncalls) {
        call_cycles(s, &mean, &min, &max);
        printf("  %-22s %.0f cycles, %.3f ms (min %llu, max %llu cycles)\n", "per host call", mean,
               mean / (double)p->m.clock_hz * 1e3, (unsigned long long)min,
               (unsigned long long)max);
    }
    printf("  %-22s %.0f images per simulated second\n", "throughput",
           sec > 0 ? (double)p->images / sec : 0.0);
    fputs(p->split, stdout);
    fputs(txt_str(&p->csets_text), stdout);
    report_ipus(p, s->ncalls ? mean / (double)s->iters : 0.0, (uint64_t)s->ncalls * s->iters);
    report_pipe_steps(p);
    if (s->bal)
        mnist_balance_report(s->bal, &p->pst);
    char w[48];
    printf("  %-22s %.1f%% (mean / max issue cycles of the %u compute tiles with a program; "
           "busiest: %s)",
           "tile balance", p->balance.percent, p->balance.tiles,
           tile_name(p, p->balance.busiest, w, sizeof w));
    if (p->balance.io_tiles)
        printf("; %u I/O tiles: their mean %.1f%% of the busiest's", p->balance.io_tiles,
               p->balance.io_percent);
    printf("\n");
    report_graph(p);
    if (p->steps.len)
        printf("  %-22s step  what       name                           cycles\n%s",
               "program steps", txt_str(&p->steps));
    if (s->plan_report)
        report_plans(p);
}

static void report_test(const phase *p)
{
    char w[48];
    printf("  %-22s %ld images: %llu cycles, %.3f ms simulated; peak tile memory %u B (%s); "
           "compile %.2f s\n",
           "test pass", p->images, (unsigned long long)p->st.cycles,
           sim_seconds(p, p->st.cycles) * 1e3, p->top.total, tile_name(p, p->top_tile, w, sizeof w),
           p->sum.compile_seconds);
}

static void report(const sim *s)
{
    const phase *tr = &s->ph[PH_TRAIN], *te = &s->ph[PH_TEST];
    const phase *any = tr->seen ? tr : te;
    if (!any->seen)
        return;
    printf("Simulated run on %u x %s IPU (%u tiles, %.3f GHz%s), %u host thread%s\n", any->m.nipus,
           any->m.name, any->m.tiles_per_ipu, (double)any->m.clock_hz / 1e9, s->sets, any->threads,
           any->threads == 1 ? "" : "s");
    if (tr->seen)
        report_train(s);
    if (te->seen)
        report_test(te);
    double host = tr->host_s + te->host_s;
    printf("  %-22s ", "host time");
    if (tr->seen)
        printf("training %.2f s (%.1f images/s), ", tr->host_s,
               tr->host_s > 0 ? (double)tr->images / tr->host_s : 0.0);
    printf("test %.2f s; %.2f M simulated instructions/s\n", te->host_s,
           host > 0 ? (instructions(tr) + instructions(te)) / host / 1e6 : 0.0);
    fflush(stdout);
}

/* ---- the JSON document's "simulated" object ---- */

/* "ipus": [...]: the report's line per IPU (several IPUs), then the utilisation, into o. */
static void json_ipus(json *o, const phase *p)
{
    if (p->m.nipus < 2)
        return;
    double sum = 0.0;
    json *a = json_put(o, "ipus", json_arr());
    for (uint32_t i = 0; i < p->m.nipus && i < 64; i++) {
        const eng_ipu_stats *q = &p->ipu[i];
        uint32_t st = p->pipe.stages ? i % p->pipe.stages : 0;
        json *x = json_put(a, NULL, json_obj());
        json_put_u64(x, "ipu", i);
        json_put_u64(x, "in_flight", p->pipe.stages ? p->pipe.in_flight[st] : 1);
        json_put_u64(x, "stash_slots", p->pipe.slots[st]);
        json_put_u64(x, "stash_bytes", p->pipe.stash_bytes[st]);
        json_put_u64(x, "stream_in_bytes", q->host_in_bytes);
        json_put_u64(x, "stream_out_bytes", q->host_out_bytes);
        json_put_u64(x, "global_tx_bytes", q->global_tx_bytes);
        json_put_u64(x, "global_rx_bytes", q->global_rx_bytes);
        json_put_u64(x, "peak_tile_bytes", p->ipu_peak[i]);
        json_put_num(x, "tile_balance", p->ipu_balance[i]);
        json_put_num(x, "busy_percent", busy_pct(p, i));
        json_put(x, "split", cli_json_cats(q, &p->m));
        sum += busy_pct(p, i);
    }
    json_put_num(o, "utilisation_percent", sum / p->m.nipus);
    const char *formula;
    if (p->pipe.stages > 1)
        json_put_num(o, "ideal_utilisation_percent", ideal_pct(p, &formula));
}

/* "layer_tiles": {"conv1": [tiles on IPU 0, 1, ...], ...}: the tiles each layer's compute
 * sets use on each IPU; "mm_tiles": [...], into o. */
static void json_layer_tiles(json *o, const phase *p)
{
    json *lt = json_put(o, "layer_tiles", json_obj());
    for (int k = 0; k < MNET_NLAYERS; k++) {
        json *a = json_put(lt, mnet_layer_name(k), json_arr());
        for (uint32_t i = 0; i < p->m.nipus && i < MSPEC_MAX_BLOCKS; i++)
            json_put_u64(a, NULL, p->pipe.layer_tiles[k][i]);
    }
    json *mm = json_put(o, "mm_tiles", json_arr());
    for (uint32_t i = 0; i < p->m.nipus && i < MSPEC_MAX_BLOCKS; i++)
        json_put_u64(mm, NULL, p->pipe.mm_tiles[i]);
}

/* One planned operation: its partition, tiles, and each step's estimated and simulated
 * cycles. */
static json *json_plan(const phase *p, uint32_t k)
{
    const mnet_plan *pl = &p->pipe.plan[k];
    static const struct {
        const char *key;
        int at;
    } parts[] = {{"b", OP_PB},   {"y", OP_PY},   {"x", OP_PX},
                 {"ci", OP_PCI}, {"co", OP_PCO}, {"ky", OP_PK}};
    json *x = json_obj();
    json_put_str(x, "name", pl->name);
    json_put_u64(x, "ipu", pl->ipu);
    json_put_u64(x, "tiles", pl->est.tiles);
    json_put_u64(x, "bytes", pl->est.bytes);
    json_put_u64(x, "working_bytes", pl->est.temp);
    json *part = json_put(x, "partition", json_obj());
    for (size_t j = 0; j < sizeof parts / sizeof parts[0]; j++)
        json_put_u64(part, parts[j].key, pl->part.p[parts[j].at]);
    json_put_u64(x, "estimated_run", pl->est.run);
    json_put_u64(x, "estimated_prep", pl->est.prep);
    json *steps = json_put(x, "steps", json_obj());
    for (int j = 0; j < OP_S_N; j++) {
        if (!pl->est.step[j] && !p->plan_sim[k][j])
            continue;
        json *st = json_put(steps, op_conv_step_name(j), json_obj());
        json_put_u64(st, "estimated", pl->est.step[j]);
        json_put_u64(st, "simulated", p->plan_sim[k][j]);
    }
    return x;
}

/* "plans": [...]: each planned operation (mapping planned), into o. */
static void json_plans(json *o, const phase *p)
{
    if (!p->pipe.nplans)
        return;
    json *a = json_put(o, "plans", json_arr());
    for (uint32_t k = 0; k < p->pipe.nplans && k < MNET_MAX_PLANS; k++)
        json_put(a, NULL, json_plan(p, k));
}

/* "tile_balance" and "tile_memory", into o. */
static void json_tiles(json *o, const phase *p)
{
    json *b = json_put(o, "tile_balance", json_obj());
    json_put_num(b, "percent", p->balance.percent);
    json_put_u64(b, "tiles", p->balance.tiles);
    json_put_u64(b, "busiest_tile", p->balance.busiest);
    json_put_u64(b, "io_tiles", p->balance.io_tiles);
    json_put_num(b, "io_percent", p->balance.io_percent);
    json *m = json_put(o, "tile_memory", json_obj());
    json_put_u64(m, "peak_bytes", p->top.total);
    json_put_u64(m, "peak_tile", p->top_tile);
    json_put_u64(m, "code", p->top.code);
    json_put_u64(m, "vertex_state", p->top.state);
    json_put_u64(m, "always_live", p->top.always);
    json_put_u64(m, "not_always_live", p->top.other);
    json_put_u64(m, "data", p->top.data);
    json_put_num(m, "mean_bytes", p->sum.mean_bytes);
    json_put_u64(m, "tiles_used", p->sum.tiles_used);
    json_put_u64(m, "sram_bytes", p->m.sram_bytes);
}

/* "compile": the graph's compile summary. */
static json *json_compile(const gr_summary *c)
{
    json *x = json_obj();
    json_put_u64(x, "compute_sets", c->compute_sets);
    json_put_u64(x, "vertices", c->vertices);
    json_put_u64(x, "exchanges", c->exchanges);
    json_put_u64(x, "exchange_bytes", c->exchange_bytes);
    json_put_u64(x, "tiles_used", c->tiles_used);
    json_put_u64(x, "max_tile", c->max_tile);
    json_put_u64(x, "max_bytes", c->max_bytes);
    json_put_num(x, "mean_bytes", c->mean_bytes);
    json_put_u64(x, "programs", c->programs);
    json_put_num(x, "seconds", c->compile_seconds);
    return x;
}

/* "pipeline": the report's main pipeline step (its number, cycles, each IPU's passes and the
 * Copy), pipelined runs only. */
static void json_pipe_steps(json *o, const phase *p)
{
    const mnet_pipe_steps *m = &p->pst;
    if (!m->N || !m->main_step)
        return;
    json *x = json_put(o, "pipeline", json_obj());
    json_put_u64(x, "steps", m->steps);
    json_put_u64(x, "main_step", m->main_step);
    json_put_u64(x, "main_step_cycles", m->main);
    json_put_u64(x, "copy_cycles", m->copy);
    json *w = json_put(x, "work_cycles", json_arr());
    for (uint32_t i = 0; i < m->N; i++)
        json_put(w, NULL, json_u64(m->work[i]));
}

static json *json_phase(const phase *p)
{
    double sec = sim_seconds(p, p->st.cycles);
    json *x = json_obj();
    json_put_u64(x, "images", (uint64_t)p->images);
    json_put_u64(x, "cycles", p->st.cycles);
    json_put_num(x, "seconds", sec);
    json_put_num(x, "images_per_simulated_second", sec > 0 ? (double)p->images / sec : 0.0);
    json_put_num(x, "host_seconds", p->host_s);
    json_put_num(x, "instructions", instructions(p));
    json_put_num(x, "instructions_per_host_second",
                 p->host_s > 0 ? instructions(p) / p->host_s : 0.0);
    json *st = json_put(x, "stats", json_obj());
    const eng_stat *tab = eng_stat_table();
    for (unsigned i = 0; i < ENG_NSTAT; i++)
        json_put_num(st, tab[i].key, eng_stat_value(&tab[i], &p->st, &p->m));
    json_put(x, "split", json_object_get(p->split_json));
    json_tiles(x, p);
    json_ipus(x, p);
    if (p->csets)
        json_put(x, "compute_sets", json_object_get(p->csets));
    json_layer_tiles(x, p);
    json_plans(x, p);
    json_pipe_steps(x, p);
    json_put(x, "compile", json_compile(&p->sum));
    return x;
}

/* {"simulated": {...}}: the member the simulated run adds to the JSON document. */
static json *json_simulated(const sim *s, const mnet_cfg *c)
{
    char mode[32];
    double mean = 0.0;
    uint64_t min = 0, max = 0;
    if (s->ncalls)
        call_cycles(s, &mean, &min, &max);
    json *doc = json_obj(), *x = json_put(doc, "simulated", json_obj());
    json_put_str(x, "machine", c->m.name);
    json_put_u64(x, "ipus", c->m.nipus);
    json_put_u64(x, "tiles_per_ipu", c->m.tiles_per_ipu);
    json_put_u64(x, "clock_hz", c->m.clock_hz);
    json_put_u64(x, "host_threads", s->ph[s->ph[PH_TRAIN].seen ? PH_TRAIN : PH_TEST].threads);
    json_put_u64(x, "depth", c->depth);
    json_put_str(x, "output_mode", mnist_mode_name(c, mode, sizeof mode));
    json_put_u64(x, "host_calls", s->ncalls);
    json *cc = json_put(x, "call_cycles", json_obj());
    json_put_num(cc, "mean", mean);
    json_put_u64(cc, "min", min);
    json_put_u64(cc, "max", max);
    for (int k = 0; k < PH_N; k++)
        if (s->ph[k].seen)
            json_put(x, phase_key[k], json_phase(&s->ph[k]));
    if (s->bal)
        json_put(x, "balance", mnist_balance_json(s->bal, &s->ph[PH_TRAIN].pst));
    return doc;
}

/* ---- the run ---- */

/* The initial weights in a reference network: the seeded initialisation or --load-weights;
 * and the --save-weights directory checked before the long run. */
static int initial_weights(const mnist_opts *o, mref_net **net, err *e)
{
    if (!(*net = mref_create_net(o->c.net, 1, e)))
        return e->status;
    if (o->load) {
        if (mref_load(*net, o->load, e))
            return e->status;
    } else {
        mref_init(*net, o->c.run.seed);
    }
    return o->save ? mref_prepare_save(*net, o->save, e) : 0;
}

static void print_head(const mnist_opts *o, const mnet_cfg *c, const char *sets, const char *dir,
                       const mdata *d)
{
    char more[512];
    printf("Simulated training on %u x %s IPU (%u tiles, %.3f GHz%s): %s (%s): %zu training, %zu "
           "test images\n",
           c->m.nipus, c->m.name, c->m.tiles_per_ipu, (double)c->m.clock_hz / 1e9, sets, o->dataset,
           dir, d->train.n, d->test.n);
    char mode[32];
    char dist[64];
    int n =
        snprintf(more, sizeof more,
                 "; depth %u, output mode %s, images as %s; host: %u loader%s, %.3g us an "
                 "image (%s), callback %.3g us%s",
                 c->depth, mnist_mode_name(c, mode, sizeof mode), mnet_dtype_name(c->dtype),
                 c->host.loaders, c->host.loaders == 1 ? "" : "s", (double)c->host.prep_ps / 1e6,
                 host_dist_format(&c->host.dist, dist, sizeof dist),
                 (double)c->host.callback_ps / 1e6, c->drain_ps ? ", drain " : "");
    if (c->drain_ps)
        n += snprintf(more + n, sizeof more - (size_t)n, "%.3g us a buffer",
                      (double)c->drain_ps / 1e6);
    char on[128] = "";
    for (int k = 0, at = 0; k < mspec_blocks(c->net ? c->net : mspec_tutorial()); k++)
        at += snprintf(on + at, sizeof on - (size_t)at, "%sB%d on %s%u", k ? ", " : "", k + 1,
                       k ? "" : "IPU ", c->stage_ipu[k]);
    if (o->ipus > 1 && c->pipelined)
        snprintf(more + n, sizeof more - (size_t)n, "; pipelined (%s%s): %s",
                 pipe_kind_name(c->schedule), c->recompute ? ", recompute" : "", on);
    else if (o->ipus > 1)
        snprintf(more + n, sizeof more - (size_t)n,
                 "; sharded (micro-batch %d, gradient accumulation 1): %s", c->run.batch, on);
    size_t k = strlen(more);
    if (c->io_tiles)
        k += (size_t)snprintf(more + k, sizeof more - k, "; %u I/O tiles", c->io_tiles);
    if (c->offload && k < sizeof more)
        k += (size_t)snprintf(more + k, sizeof more - k, "; optimiser state in remote buffers");
    if (c->mapping == MNET_MAP_PLANNED && k < sizeof more)
        snprintf(more + k, sizeof more - k,
                 "; convolutions and linear layers planned over the IPU");
    mnist_print_plan(o, &d->train, more);
    fflush(stdout);
}

/* Train (if there are epochs), test, save the weights, report, as the reference run does.
 * The weights are saved once the whole run is over, so that a stop anywhere in it (training
 * or the test pass: ERR_STOPPED) writes none. 0 or the err's status. */
static int train_and_test(const mnet_cfg *c, const mnist_opts *o, const mdata *d, sim *s,
                          mref_net *net, double *acc, err *e)
{
    mnet_hooks h = {on_epoch, on_call, on_finished, s, NULL};
    s->iters = (uint32_t)c->run.device_iters;
    float *params = mref_params(net);
    double t0 = cli_now();
    int rc = c->run.epochs > 0 ? mnet_train(c, &d->train, params, &h, e) : 0;
    s->ph[PH_TRAIN].host_s = cli_now() - t0;
    s->ph[PH_TRAIN].images = mnist_trained(o, &d->train);
    if (rc) {
        cli_watch_clear(s->w);
        return rc;
    }
    t0 = cli_now();
    mnet_cfg tc = *c; /* the profile is the training run's */
    tc.ctl.watch.settled = NULL;
    s->w->phase = "test pass"; /* its heartbeat says so, without the training's expectation */
    s->w->expect = 0;
    rc = mnet_test(&tc, &d->test, params, acc, &h, e);
    cli_watch_clear(s->w);
    if (rc == ERR_STOPPED && strncmp(e->msg, "stopped at ", 11) == 0) { /* say which run */
        char *at = xstrdup(e->msg + 11);
        err_set(e, rc, "stopped in the test pass at %s", at);
        free(at);
    }
    if (rc == 0 && cli_stopped()) /* asked for after the engine's last look */
        rc = err_set(e, ERR_STOPPED, "stopped after the test pass");
    if (rc == 0 && o->save && rank_id(o->x.ranks) == 0)
        rc = mref_save(net, o->save, e);
    if (rank_size(o->x.ranks) > 1 && (rc = cli_ranks_agree(o->x.ranks, CMD, rc)) && !e->status)
        err_set(e, rc, "rank 0 could not save the weights"); /* rank 0 says why */
    if (rc)
        return rc;
    s->ph[PH_TEST].host_s = cli_now() - t0;
    s->ph[PH_TEST].images = (long)d->test.n;
    printf("Accuracy on test set: %0.2f%%\n", *acc);
    report(s);
    return cli_profile_done(s->pf, CMD, stdout) ? ERR_INPUT : 0;
}

int mnist_sim_cfg(const mnist_opts *o, mnet_cfg *c, err *e)
{
    *c = o->c;
    c->m = o->x.m;
    c->m.nipus = (uint32_t)o->ipus * c->replicas;
    c->pipelined = o->ipus > 1 && !o->sharded;
    if ((c->mapping == MNET_MAP_PLANNED || c->pipelined) && c->log_steps < MNIST_PLAN_STEPS)
        c->log_steps = MNIST_PLAN_STEPS; /* every planned step's first run, the first
                                            pipeline run's steps */
    if (o->ipus > 1 && o->sharded)
        mnet_as_sharded(c);
    if (c->m.nipus > 64)
        return err_set(e, ERR_INPUT, "--ipus %d x --replicas %u = %u IPUs: at most 64 (a POD64)",
                       o->ipus, c->replicas, c->m.nipus);
    c->ranks = o->x.ranks;
    int train = c->run.epochs > 0;
    if (sys_io_tiles_check("--io-tiles", c->io_tiles, c->m.tiles_per_ipu, e) ||
        mnet_check_network(c, train, e) || mnet_check_output(c, e) ||
        (train && mnet_check_pipeline(c, 1, e)) || mnet_check_pipeline(c, 0, e))
        return e->status;
    return 0;
}

/* The simulated run's JSON document (rank 0). */
static int sim_json(const mnist_opts *o, const char *dir, const mdata *d, const sim *s,
                    const mnet_cfg *c, double acc)
{
    mnist_result res = {.mode = "simulated",
                        .m = &c->m,
                        .test_acc = acc,
                        .train_s = s->ph[PH_TRAIN].host_s,
                        .test_s = s->ph[PH_TEST].host_s,
                        .trained = s->ph[PH_TRAIN].images,
                        .extra = json_simulated(s, c)};
    return mnist_json(o, dir, d, &s->r, &res);
}

static void free_sim(sim *s)
{
    for (int k = 0; k < PH_N; k++) {
        free(s->ph[k].split);
        json_object_put(s->ph[k].split_json);
        txt_free(&s->ph[k].steps);
        json_object_put(s->ph[k].csets);
        txt_free(&s->ph[k].csets_text);
    }
    mnist_run_free(&s->r);
    free(s->ends);
    free(s->bal);
    free(s);
}

int cli_mnist_sim(mnist_opts *o, const char *dir, const mdata *d)
{
    cli_ctx *x = &o->x;
    err *e = xcalloc(1, sizeof *e);
    sim *s = xcalloc(1, sizeof *s);
    s->list_steps = o->c.log_steps;
    s->plan_report = o->plan;
    mnet_cfg c;
    mref_net *net = NULL;
    double acc = 0.0;
    int rc = mnist_sim_cfg(o, &c, e) || initial_weights(o, &net, e);
    if (rc == 0 && o->auto_stages) {
        s->bal = xcalloc(1, sizeof *s->bal);
        rc = mnist_balance(o, &c, &d->train, mref_params(net), s->bal, e);
        if (rc == 0 && o->balance) { /* the search alone */
            free_sim(s);
            mref_destroy(net);
            free(e);
            return 0;
        }
    }
    x->m = c.m; /* the profile's machine: every replica's IPUs */
    if (rc == 0 && cli_ctx_begin(x) != 0) {
        mref_destroy(net);
        free_sim(s);
        free(e);
        return 2;
    }
    if (rc == 0) {
        c.ctl = x->ctl;
        s->w = &x->w;
        s->pf = x->pf;
        cli_machine_sets(&x->mo, &c.m, s->sets, sizeof s->sets);
        s->io_tiles = c.io_tiles;
        print_head(o, &c, s->sets, dir, d);
        cli_ctx_start(x);
        rc = train_and_test(&c, o, d, s, net, &acc, e);
        cli_ctx_stop(x, NULL);
        x->host = s->ph[PH_TRAIN].host_s + s->ph[PH_TEST].host_s;
        if (x->rank_stats)
            cli_rank_stats(x->ranks, x->host, x->wait, x->calls);
    }
    if (rc)
        rc = cli_report_err(CMD, e);
    else if (x->json && rank_id(x->ranks) == 0)
        rc = sim_json(o, dir, d, s, &c, acc);
    free_sim(s);
    profile_free(x->pf);
    mref_destroy(net);
    free(e);
    return rc;
}
