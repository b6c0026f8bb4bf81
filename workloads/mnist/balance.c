/* mbal: pipeline placements estimated from measured stage cycles and searched (balance.h;
 * docs/pipelining.md, "Balancing from measurements"). The calibration runs chosen here are
 * simulated by mnet_train as any run is; each run's main pipeline step is read from every
 * IPU's sync log (mnet_pipe_measure for the step, mnet_pipe_walk for its program steps) and
 * its program steps added up per block and key. The search estimates every placement of the
 * allowed stage counts (up to 2^(B - 1) - 1 of them, 127 for eight blocks) from those sums.
 * Left out: anything but the main step (fill and flush take G + 2N - 2 steps of the same
 * Copy, so a faster main step is a faster run as long as N stays; the search prefers fewer
 * stages on a tie) and the memory a placement needs (its compile checks that). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fabric/link.h"
#include "workloads/mnist/balance.h"

static const char *const KEY_NAME[MBAL_KEYS] = {
    [MBAL_ALONE] = "alone",       [MBAL_SENDS] = "sends",     [MBAL_TAKES] = "takes",
    [MBAL_BOTH] = "takes, sends", [MBAL_LAST] = "last stage", [MBAL_LAST_TAKE] = "takes, last",
};

const char *mbal_key_name(mbal_key k)
{
    return k < MBAL_KEYS ? KEY_NAME[k] : "?";
}

static int cut_after(mbal_cuts p, int c)
{
    return c >= 1 && (p >> (c - 1) & 1u);
}

/* The last stage starts after p's highest cut. */
static int last_first(mbal_cuts p)
{
    int f = 1;
    for (int c = 1; c < 32; c++)
        if (cut_after(p, c))
            f = c + 1;
    return f;
}

mbal_key mbal_key_of(mbal_cuts p, int B, int b)
{
    int in = cut_after(p, b - 1), out = b < B && cut_after(p, b);
    if (b >= last_first(p))
        return in ? MBAL_LAST_TAKE : MBAL_LAST;
    return (mbal_key)(in ? (out ? MBAL_BOTH : MBAL_TAKES) : (out ? MBAL_SENDS : MBAL_ALONE));
}

uint32_t mbal_stages(mbal_cuts p)
{
    return 1u + (uint32_t)__builtin_popcount(p);
}

void mbal_to_ipus(mbal_cuts p, int B, uint32_t *stage_ipu)
{
    uint32_t s = 0;
    for (int b = 1; b <= B; b++) {
        stage_ipu[b - 1] = s;
        s += (uint32_t)cut_after(p, b);
    }
}

mbal_cuts mbal_from_ipus(const uint32_t *stage_ipu, int B)
{
    mbal_cuts p = 0;
    for (int b = 1; b < B; b++)
        if (stage_ipu[b] != stage_ipu[b - 1])
            p |= 1u << (b - 1);
    return p;
}

const char *mbal_text(mbal_cuts p, int B, char *buf, size_t len)
{
    uint32_t ipu[MSPEC_MAX_BLOCKS];
    mbal_to_ipus(p, B, ipu);
    return mnet_stages_text(ipu, B, buf, len);
}

mbal_counts mbal_counts_of(const mach *m, int B, uint32_t most)
{
    mbal_counts n;
    memset(&n, 0, sizeof n);
    for (uint32_t s = 2; s <= most && s <= (uint32_t)B; s++) {
        mach t = *m;
        t.nipus = s;
        link_net *net = link_net_new(&t, NULL);
        n.ok[s] = net != NULL;
        link_net_free(net);
    }
    return n;
}

/* ---- the calibration's runs ---- */

/* The keys placement p gives that `seen` lacks (marking them when mark). */
static int unseen(mbal_cuts p, int B, uint8_t (*seen)[MBAL_KEYS], int mark)
{
    int n = 0;
    for (int b = 1; b <= B; b++) {
        mbal_key k = mbal_key_of(p, B, b);
        n += !seen[b - 1][k];
        if (mark)
            seen[b - 1][k] = 1;
    }
    return n;
}

static int allowed(const mbal_counts *c, mbal_cuts p)
{
    uint32_t s = mbal_stages(p);
    return s <= MSPEC_MAX_BLOCKS && c->ok[s];
}

/* Whether p was run, or found not to fit. */
static int tried(const mbal_cal *c, mbal_cuts p)
{
    for (size_t k = 0; k < c->nruns; k++)
        if (c->run[k].p == p)
            return 1;
    for (size_t k = 0; k < c->nunfit; k++)
        if (c->unfit[k] == p)
            return 1;
    return 0;
}

static int candidate(const mbal_cal *c, const mbal_counts *n, mbal_cuts p)
{
    if (!allowed(n, p))
        return 0;
    for (size_t k = 0; k < c->nunfit; k++)
        if (c->unfit[k] == p)
            return 0;
    return 1;
}

/* 1 when a run of p would give the Copy of one more cut: exactly one of its cuts' Copies is
 * not known (mbal_cut_copy), so the run's Copy less the others' gives it. */
static int copy_gain(const mbal_cal *c, mbal_cuts p)
{
    int unknown = 0;
    for (int cut = 1; cut < c->B; cut++) {
        uint64_t v;
        size_t r;
        unknown += cut_after(p, cut) && !mbal_cut_copy(c, cut, &v, &r);
    }
    return unknown == 1;
}

int mbal_next(const mbal_cal *c, const mbal_counts *n, mbal_cuts *p)
{
    int B = c->B;
    if (B < 2 || B > MSPEC_MAX_BLOCKS || !n->ok[2])
        return 0;
    for (int cut = 1; cut < B; cut++)
        if (!tried(c, *p = 1u << (cut - 1)))
            return 1;
    uint8_t seen[MSPEC_MAX_BLOCKS][MBAL_KEYS];
    memcpy(seen, c->seen, sizeof seen);
    mbal_cuts best = 0;
    int most = 0;
    for (mbal_cuts q = 1; q < 1u << (B - 1); q++) {
        int u = candidate(c, n, q) && !tried(c, q) ? unseen(q, B, seen, 0) + copy_gain(c, q) : 0;
        if (u > most || (u == most && u && mbal_stages(q) < mbal_stages(best)))
            best = q, most = u;
    }
    *p = best;
    return most > 0;
}

void mbal_unfit(mbal_cal *c, mbal_cuts p, const char *why)
{
    if (c->nunfit >= MBAL_MAX_RUNS)
        return;
    size_t len = strnlen(why, sizeof c->why[0] - 1); /* the message's first bytes */
    c->unfit[c->nunfit] = p;
    memcpy(c->why[c->nunfit], why, len);
    c->why[c->nunfit++][len] = '\0';
}

/* ---- a run's measurement ---- */

typedef struct attrib {
    const mspec *net;
    mbal_cuts p;
    int first, last; /* the IPU's blocks */
    uint32_t t;      /* the main step */
    uint64_t work[MSPEC_MAX_BLOCKS + 1];
} attrib;

/* The block of the layer a step's name starts with ("conv2" of "conv2.dx.amp"), or 0. */
static int block_of_name(const mspec *net, const char *name)
{
    size_t len = strcspn(name, ".");
    for (int l = 0; l < net->nlayers; l++)
        if (strlen(net->layer[l].name) == len && strncmp(net->layer[l].name, name, len) == 0)
            return net->layer[l].block;
    return 0;
}

static void attribute(void *ctx, uint32_t t, const gr_step *s, uint64_t cycles)
{
    attrib *a = ctx;
    if (t != a->t)
        return;
    int b = block_of_name(a->net, s->name);
    b = b == 0 || b < a->first ? a->first : b > a->last ? a->last : b;
    a->work[b] += cycles;
}

int mbal_record(mbal_cal *c, const mspec *net, mbal_cuts p, const eng *g, const gr_exe *x,
                const mnet_pipe_info *pi, err *e)
{
    char on[64];
    mbal_run *r = &c->run[c->nruns];
    if (c->nruns >= MBAL_MAX_RUNS)
        return err_set(e, ERR_INPUT, "balance: more than %d calibration runs", MBAL_MAX_RUNS);
    c->B = mspec_blocks(net);
    r->p = p;
    if (mnet_pipe_measure(g, x, pi, 1, &r->m) || !r->m.main_step)
        return err_set(e, ERR_INPUT,
                       "balance: placement %s: the sync logs hold no main pipeline step (%s)",
                       mbal_text(p, c->B, on, sizeof on),
                       r->m.main_step ? "they end before it" : "no step runs every pass");
    attrib a = {.net = net, .p = p, .first = 1, .t = r->m.main_step};
    for (uint32_t i = 0; i < mbal_stages(p); i++) {
        a.last = a.first;
        while (a.last < c->B && !cut_after(p, a.last))
            a.last++;
        mnet_pipe_walk(g, x, i, r->m.steps, attribute, &a);
        a.first = a.last + 1;
    }
    for (int b = 1; b <= c->B; b++) { /* a key's first measurement stays */
        mbal_key k = mbal_key_of(p, c->B, b);
        if (!c->seen[b - 1][k])
            c->work[b - 1][k] = a.work[b];
        c->seen[b - 1][k] = 1;
    }
    if (mbal_stages(p) == 2) {
        int cut = __builtin_ctz(p);
        c->copy[cut] = r->m.copy;
        c->copy_seen[cut] = 1;
    }
    c->nruns++;
    return ERR_OK;
}

/* ---- estimates and the search ---- */

int mbal_cut_copy(const mbal_cal *c, int cut, uint64_t *v, size_t *run)
{
    *run = SIZE_MAX;
    if (c->copy_seen[cut - 1]) {
        *v = c->copy[cut - 1];
        return 1;
    }
    for (size_t k = 0; k < c->nruns; k++) {
        const mbal_run *r = &c->run[k];
        uint64_t others = 0;
        int known = cut_after(r->p, cut);
        for (int d = 1; d < c->B && known; d++)
            if (d != cut && cut_after(r->p, d)) {
                known = c->copy_seen[d - 1];
                others += c->copy[d - 1];
            }
        if (known) {
            *v = r->m.copy > others ? r->m.copy - others : 0;
            *run = k;
            return 1;
        }
    }
    return 0;
}

int mbal_estimate(const mbal_cal *c, mbal_cuts p, mbal_est *out, err *e)
{
    char on[64];
    memset(out, 0, sizeof *out);
    out->p = p;
    out->stages = mbal_stages(p);
    for (int b = 1, s = 0; b <= c->B; b++) {
        mbal_key k = mbal_key_of(p, c->B, b);
        if (!c->seen[b - 1][k])
            return err_set(e, ERR_INPUT, "balance: placement %s: block B%d %s was not measured",
                           mbal_text(p, c->B, on, sizeof on), b, KEY_NAME[k]);
        out->work[s] += c->work[b - 1][k];
        s += cut_after(p, b);
    }
    for (int cut = 1; cut < c->B; cut++) {
        uint64_t v;
        if (!cut_after(p, cut))
            continue;
        size_t run;
        if (!mbal_cut_copy(c, cut, &v, &run))
            return err_set(e, ERR_INPUT, "balance: the Copy of the cut after B%d was not measured",
                           cut);
        out->copy += v;
    }
    for (uint32_t s = 1; s < out->stages; s++)
        if (out->work[s] > out->work[out->slowest])
            out->slowest = (int)s;
    out->step = out->work[out->slowest] + out->copy;
    for (size_t k = 0; k < c->nruns; k++)
        if (c->run[k].p == p)
            out->run = &c->run[k];
    return ERR_OK;
}

uint64_t mbal_expected(const mbal_est *x)
{
    return x->run ? x->run->m.main : x->step;
}

static int faster(const void *a, const void *b)
{
    const mbal_est *x = a, *y = b;
    uint64_t sx = mbal_expected(x), sy = mbal_expected(y);
    if (sx != sy)
        return sx < sy ? -1 : 1;
    if (x->stages != y->stages)
        return x->stages < y->stages ? -1 : 1;
    return x->p < y->p ? -1 : x->p > y->p;
}

size_t mbal_search(const mbal_cal *c, const mbal_counts *n, mbal_est *out)
{
    size_t k = 0;
    for (mbal_cuts p = 1; c->B >= 2 && p < 1u << (c->B - 1); p++)
        if (candidate(c, n, p) && mbal_estimate(c, p, &out[k], NULL) == ERR_OK)
            k++;
    qsort(out, k, sizeof *out, faster);
    return k;
}

/* ---- the calibration ---- */

/* Program steps logged a calibration run: the first pipeline run's, of up to eight stages of
 * a few hundred steps each. */
#define MBAL_LOG_STEPS 65536

typedef struct cal_ctx {
    mbal_cal *cal;
    const mspec *net;
    mbal_cuts p;
    err *e;
    int rc;
} cal_ctx;

static void on_finished(void *ctx, int test, eng *g, const gr_exe *x, const mnet_pipe_info *pi)
{
    cal_ctx *k = ctx;
    if (!test)
        k->rc = mbal_record(k->cal, k->net, k->p, g, x, pi, k->e);
}

/* Whether run e failed because its graph does not fit (graph.h's one message). */
static int does_not_fit(const err *e)
{
    return e->status == ERR_INPUT && strstr(e->msg, "graph does not fit") != NULL;
}

/* What every calibration run shares: the configuration (one device iteration of batch x G
 * images, pipelined, one replica), the images, a buffer for the weights, the caller's hook. */
typedef struct cal_runs {
    mnet_cfg c;
    const mspec *net;
    mdata_split part;
    const float *params;
    float *w;
    size_t np;
    void (*done)(void *ctx, const mbal_cal *cal, const mbal_run *r, mbal_cuts p);
    void *ctx;
} cal_runs;

mnet_cfg mbal_run_cfg(const mnet_cfg *c, mbal_cuts p)
{
    mnet_cfg r = *c;
    r.run.epochs = 1;
    r.run.device_iters = 1;
    r.pipelined = 1;
    r.replicas = 1;
    if (r.log_steps < MBAL_LOG_STEPS)
        r.log_steps = MBAL_LOG_STEPS;
    r.m.nipus = mbal_stages(p);
    mbal_to_ipus(p, mspec_blocks(c->net ? c->net : mspec_tutorial()), r.stage_ipu);
    return r;
}

static int runs_begin(cal_runs *k, const mnet_cfg *c, const mdata_split *train, const float *params,
                      mbal_cal *cal, err *e)
{
    mspec_net rn;
    memset(k, 0, sizeof *k);
    k->net = c->net ? c->net : mspec_tutorial();
    if (mspec_resolve(k->net, &rn, e))
        return e->status;
    cal->B = mspec_blocks(k->net);
    k->part = *train;
    size_t images = (size_t)c->run.batch * (size_t)c->run.grad_accum;
    if (k->part.n < images)
        return err_set(e, ERR_INPUT, "balance: %zu training images, fewer than batch x G = %zu",
                       k->part.n, images);
    k->part.n = images;
    k->c = *c;
    k->params = params;
    k->np = rn.nparams;
    k->w = xmalloc(k->np * sizeof *k->w);
    return ERR_OK;
}

/* Simulate placement p into cal: a run, or a placement that does not fit. */
static int run_one(cal_runs *k, mbal_cal *cal, mbal_cuts p, err *e)
{
    mnet_cfg rcfg = mbal_run_cfg(&k->c, p);
    cal_ctx cx = {cal, k->net, p, e, ERR_OK};
    mnet_hooks h = {.finished = on_finished, .ctx = &cx};
    memcpy(k->w, k->params, k->np * sizeof *k->w);
    size_t had = cal->nruns;
    int rc = mnet_train(&rcfg, &k->part, k->w, &h, e);
    if (rc == ERR_OK && (rc = cx.rc) == ERR_OK && cal->nruns == had)
        rc = err_set(e, ERR_INPUT, "balance: a calibration run ended without its report");
    if (rc != ERR_OK && does_not_fit(e)) {
        mbal_unfit(cal, p, e->msg);
        err_clear(e);
        rc = ERR_OK;
    }
    if (rc == ERR_OK && k->done)
        k->done(k->ctx, cal, cal->nruns > had ? &cal->run[had] : NULL, p);
    return rc;
}

int mbal_calibrate(const mnet_cfg *c, const mbal_counts *n, const mdata_split *train,
                   const float *params, mbal_cal *cal,
                   void (*done)(void *ctx, const mbal_cal *cal, const mbal_run *r, mbal_cuts p),
                   void *ctx, err *e)
{
    cal_runs k;
    memset(cal, 0, sizeof *cal);
    int rc = runs_begin(&k, c, train, params, cal, e);
    k.done = done;
    k.ctx = ctx;
    mbal_cuts p;
    while (rc == ERR_OK && mbal_next(cal, n, &p))
        rc = run_one(&k, cal, p, e);
    /* the placement ranked first simulated too: until it is a run (or none is left) */
    mbal_est *x = xmalloc(MBAL_MAX_RUNS * sizeof *x);
    while (rc == ERR_OK && mbal_search(cal, n, x) && !x[0].run)
        rc = run_one(&k, cal, x[0].p, e);
    free(x);
    free(k.w);
    return rc;
}
