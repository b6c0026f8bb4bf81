/* test_mnist_pipe: the pipelined MNIST run (mnet_cfg.pipelined, docs/pipelining.md) against
 * the pipeline's model, not against the code's own output.
 *
 * - The same math: one weight update of 8 micro-batches of 8 images on one IPU, sharded over
 *   4 and 2 IPUs, and pipelined over 4 (grouped, interleaved, sequential; recompute on and
 *   off) and over 2 IPUs, with and without I/O tiles: the same call loss and weights, bit for bit (pipelining changes when
 *   a micro-batch's passes run, not what they compute or the order in which each weight's
 *   gradient accumulates: every stage runs its micro-batches' backward passes in order).
 * - The timeline (grouped, N = 4, G = 8: steps t = 0..15): each IPU's sync log, cut at the
 *   ends of the steps' copies between IPUs, gives what each IPU did in each step. The test
 *   asserts, from pipe.h's closed forms written out here:
 *     an IPU works in step t exactly when the schedule gives it a pass (fill and flush);
 *     a step where an IPU runs its forward and its backward costs it what the step with its
 *     forward alone plus the step with its backward alone cost it (the passes' durations do
 *     not depend on the step or the micro-batch: the codelets' cycles do not depend on data);
 *     a step lasts the longest IPU's passes plus the copy between IPUs, whose cost is the same
 *     for every step that moves the same crossings: so the device iteration's cycles follow
 *     from the fill steps' and flush steps' measured passes, predicted for the main phase.
 * - Sharded as PopTorch runs it (one micro-batch of B x G, gradient accumulation 1): one IPU
 *   works at a time; the same update as one IPU's within rounding (test_sharded says why).
 * - Sequential (sharding's schedule) keeps one IPU busy per step; pipelined inference (the
 *   test pass) runs IPU i's forward passes exactly in steps i .. i + K - 1.
 * - Stash depths and bytes: micro-batches in flight 7, 5, 3, 1 (grouped, 2N-1-2i) and
 *   4, 3, 2, 1 (interleaved, N-i); the stash's bytes per IPU from the tensors each stage keeps
 *   (written out below from the network's shapes).
 * - Replication: R = 2 replicas with gradient accumulation G / 2 each make the same update as
 *   one with G, on one IPU and pipelined over 4 (8 IPUs): the same micro-batches, the mean of
 *   the same gradients, summed in another order (each replica its G / 2, then the all-reduce:
 *   own + received), so the weights agree to within what rounding moves an AdamW step (the
 *   first step moves each weight by lr = 1e-3 times about the sign of its gradient; 1e-5
 *   bounds the difference, as test_mnist_sim's bound against the reference trainer), and the
 *   call loss to 1e-6 relative; the replicated run is the same for 1 and 2 host threads, bit
 *   for bit.
 * - I/O tiles (the images land on them, then are handed over): the same math again, on one
 *   IPU and pipelined.
 * - The outfeed every:N inside the pipeline: the call's loss is the mean of micro-batches
 *   N - 1, 2N - 1, ... as the reference trainer computes them from the same weights.
 * - The rules: too small a gradient accumulation, a bad stage map, grouped pipelining with
 *   I/O tiles and G < 2N + 2, each a one-line error naming the rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/testutil.h"

#include "workloads/graph/pipe.h"
#include "workloads/mnist/feed.h"
#include "workloads/mnist/mnet.h"
#include "workloads/mnist/mref.h"

enum { B = 8, GA = 8, N = 4, CAP = 4096 };

static mdata digits;

static int setup(void **state)
{
    (void)state;
    return tu_load_digits(&digits, "test_mnist_pipe");
}

static int teardown(void **state)
{
    (void)state;
    mdata_free(&digits);
    return 0;
}

/* What a run leaves: its call loss, its per-IPU step logs, its pipeline. */
typedef struct run {
    int test; /* record the test pass (mnet_test), not training */
    double loss;
    int calls;
    uint32_t nipus;
    uint64_t cycles;
    size_t n[N];
    uint64_t rel[N][CAP];
    uint32_t round[N][CAP], rounds[N][CAP];
    mnet_pipe_info pi;
    mnet_pipe_steps ps; /* mnet_pipe_measure of the training run (ps.N 0: not measured) */
} run;

static void on_call(void *ctx, const mnet_call *c)
{
    run *r = ctx;
    r->loss = c->p.loss;
    r->calls++;
}

static void on_done(void *ctx, int test, eng *g, const gr_exe *x, const mnet_pipe_info *p)
{
    run *r = ctx;
    if (test != r->test)
        return;
    r->pi = *p;
    r->nipus = eng_nipus(g);
    if (p->stages < 2 || mnet_pipe_measure(g, x, p, !test, &r->ps) != ERR_OK)
        r->ps.N = 0;
    eng_stats st;
    eng_get_stats(g, &st);
    r->cycles = st.cycles;
    gr_step *steps = malloc(CAP * sizeof *steps);
    for (uint32_t i = 0; i < r->nipus && i < N; i++) {
        size_t n;
        const uint64_t *rel = eng_sync_log(g, i, &n);
        if (!n) /* not logged (log_steps 0) */
            break;
        size_t ns = gr_exe_steps(x, i, steps, CAP);
        assert_true(n < CAP && n == ns); /* every step logged */
        r->n[i] = n;
        for (size_t k = 0; k < n; k++) {
            r->rel[i][k] = rel[k];
            r->round[i][k] = steps[k].round;
            r->rounds[i][k] = steps[k].rounds;
        }
    }
    free(steps);
}

static mnet_cfg cfg(const uint32_t map[4], int pipelined, pipe_kind k, int recompute)
{
    mnet_cfg c;
    err e;
    err_clear(&e);
    assert_int_equal(mnet_defaults(&c, &e), ERR_OK);
    c.run.epochs = 1;
    c.run.batch = B;
    c.run.grad_accum = GA;
    c.run.device_iters = 1;
    c.threads = 2;
    memcpy(c.stage_ipu, map, 4 * sizeof *map);
    c.pipelined = pipelined;
    c.schedule = k;
    c.recompute = recompute;
    c.log_steps = CAP;
    return c;
}

/* One update from the seeded weights; the weights into w (MREF_NPARAMS). */
static void train(const mnet_cfg *c, run *r, float *w)
{
    err e;
    err_clear(&e);
    mref_net *n = mref_create(1, &e);
    assert_non_null(n);
    mref_init(n, 0);
    memcpy(w, mref_params(n), sizeof(float) * MREF_NPARAMS);
    mref_destroy(n);
    mdata_split set = digits.train;
    set.n = (size_t)c->run.batch * (size_t)c->run.grad_accum * (c->replicas ? c->replicas : 1);
    memset(r, 0, sizeof *r);
    mnet_hooks h = {.call_done = on_call, .finished = on_done, .ctx = r};
    if (mnet_train(c, &set, w, &h, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(r->calls, 1);
}

static const uint32_t one[4] = {0, 0, 0, 0}, four[4] = {0, 1, 2, 3}, two[4] = {0, 0, 1, 1};

static void test_same_math(void **state)
{
    (void)state;
    static run r;
    float *w0 = malloc(sizeof(float) * MREF_NPARAMS), *w = malloc(sizeof(float) * MREF_NPARAMS);
    train((mnet_cfg[]){cfg(one, 0, PIPE_GROUPED, 0)}, &r, w0);
    double loss0 = r.loss;
    struct {
        const uint32_t *map;
        int pipelined;
        pipe_kind k;
        int recompute;
        uint32_t io; /* I/O tiles */
    } runs[] = {{four, 0, PIPE_GROUPED, 0, 0},     {two, 0, PIPE_GROUPED, 0, 0},
                {four, 1, PIPE_GROUPED, 0, 0},     {four, 1, PIPE_GROUPED, 1, 0},
                {four, 1, PIPE_INTERLEAVED, 0, 0}, {four, 1, PIPE_INTERLEAVED, 1, 0},
                {four, 1, PIPE_SEQUENTIAL, 1, 0},  {two, 1, PIPE_GROUPED, 0, 0},
                {two, 1, PIPE_INTERLEAVED, 1, 0},  {one, 0, PIPE_GROUPED, 0, 32},
                {four, 1, PIPE_INTERLEAVED, 1, 8}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        mnet_cfg c = cfg(runs[k].map, runs[k].pipelined, runs[k].k, runs[k].recompute);
        c.io_tiles = runs[k].io;
        train(&c, &r, w);
        if (r.loss != loss0 || memcmp(w, w0, sizeof(float) * MREF_NPARAMS) != 0)
            fail_msg("run %zu: loss %.9g (one IPU %.9g), weights %s", k, r.loss, loss0,
                     memcmp(w, w0, sizeof(float) * MREF_NPARAMS) ? "differ" : "equal");
    }
    free(w0);
    free(w);
}

/* IPU i's work in each step: L[t] the cycles of its own syncs' steps between the end of the
 * copy that ends step t - 1 and its arrival at the copy that ends step t; E[t] the release
 * that ends step t (the last round of its copy). Steps are counted by the copies: t runs to
 * the number of copies between IPUs; returns it. */
static uint32_t segments(const run *r, uint32_t i, uint64_t *L, uint64_t *E)
{
    uint32_t t = 0;
    uint64_t prev = 0;
    L[0] = 0;
    for (size_t k = 0; k < r->n[i]; k++) {
        if (!r->round[i][k]) {
            L[t] += r->rel[i][k] - prev;
        } else if (r->round[i][k] == r->rounds[i][k]) {
            E[t++] = r->rel[i][k];
            L[t] = 0;
        }
        prev = r->rel[i][k];
    }
    return t;
}

/* What the schedule gives IPU i in step t: bit p for pass p. */
static unsigned passes(pipe_kind k, uint32_t t, uint32_t i)
{
    pipe_cfg c = {k, N, GA, 1};
    pipe_run pr[2];
    unsigned n = pipe_at(&c, t, i, pr), m = 0;
    for (unsigned q = 0; q < n; q++)
        m |= 1u << pr[q].pass;
    return m;
}

static void test_grouped_timeline(void **state)
{
    (void)state;
    static run r;
    float *w = malloc(sizeof(float) * MREF_NPARAMS);
    mnet_cfg c = cfg(four, 1, PIPE_GROUPED, 0);
    train(&c, &r, w);
    free(w);
    /* 14 steps (G + 2N - 2), every one ending with a copy between IPUs: PopART copies every
     * crossing in every pipeline cycle, the last (IPU 0's backward alone) included */
    uint32_t S = GA + 2 * N - 2;
    static uint64_t L[N][64], E[N][64];
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(segments(&r, i, L[i], E[i]), S);
    for (uint32_t t = 0; t < S; t++)
        for (uint32_t i = 1; i < N; i++)
            assert_int_equal(E[i][t], E[0][t]); /* one copy ends each step on every IPU */
    /* step 0 also holds the program's start (zeroing, weight layouts), the last the update:
     * the steps in between are the pipeline's alone */
    for (uint32_t t = 1; t + 1 < S; t++)
        for (uint32_t i = 0; i < N; i++)
            if ((L[i][t] > 0) != (passes(PIPE_GROUPED, t, i) != 0))
                fail_msg("step %u ipu %u: %llu cycles of work, schedule passes %#x", t, i,
                         (unsigned long long)L[i][t], passes(PIPE_GROUPED, t, i));
    /* forward alone: steps 1..2N-3-i (IPU i from step i, step 0 excluded); backward alone:
     * G+i..S-2; the fused pass on IPU N-1: steps N-1..G+N-2. A pass's cycles depend on where
     * in the barrel's 6-cycle round it starts (docs/timing.md: a tile issues for one of its
     * contexts each cycle, in turn), by at most a round: DEV bounds each comparison. */
    enum { DEV = 6 };
    uint64_t F[N], Bk[N], pred[64];
    for (uint32_t i = 0; i < N; i++) {
        uint32_t f0 = i ? i : 1;
        F[i] = L[i][f0];
        Bk[i] = i + 1 < N ? L[i][GA + i] : 0; /* its first step after its last forward */
        for (uint32_t t = 1; t + 1 < S; t++) {
            unsigned p = passes(PIPE_GROUPED, t, i);
            uint64_t want = (p & 1u << PIPE_FWD ? F[i] : 0) + (p & 1u << PIPE_BWD ? Bk[i] : 0) +
                            (p & 1u << PIPE_FUSED ? F[i] : 0);
            if (L[i][t] + DEV < want || L[i][t] > want + DEV)
                fail_msg("step %u ipu %u: %llu cycles, the passes alone %llu", t, i,
                         (unsigned long long)L[i][t], (unsigned long long)want);
            pred[t] = i ? (want > pred[t] ? want : pred[t]) : want;
        }
    }
    /* each step: the longest IPU's passes, then the copy between IPUs, which moves the same
     * crossings in every step and so costs the same in every step (exactly: the copy starts
     * when the last IPU arrives, whatever the others did) */
    uint64_t X[64] = {0}, sig[64], total = 0;
    for (uint32_t t = 1; t + 1 < S; t++) {
        uint64_t most = 0;
        sig[t] = 0;
        for (uint32_t i = 0; i < N; i++) {
            most = L[i][t] > most ? L[i][t] : most;
            sig[t] = sig[t] << 4 | passes(PIPE_GROUPED, t, i);
        }
        X[t] = E[0][t] - E[0][t - 1] - most;
        assert_int_equal(X[t], X[1]);
        total += pred[t] + X[t];
    }
    /* mnet_pipe_measure (the report's "main pipeline step" and "passes alone") finds the same
     * passes, Copy and main step as the derivation above from the same logs */
    assert_int_equal(r.ps.N, N);
    assert_int_equal(r.ps.main_step, 2 * N - 2);
    assert_int_equal(r.ps.main, E[0][2 * N - 2] - E[0][2 * N - 3]);
    assert_int_equal(r.ps.copy, X[1]);
    for (uint32_t i = 0; i < N; i++) {
        assert_int_equal(r.ps.work[i], L[i][2 * N - 2]);
        if (i + 1 < N) {
            assert_int_equal(r.ps.fwd[i], F[i]);
            assert_int_equal(r.ps.bwd[i], Bk[i]);
        }
    }
    assert_int_equal(r.ps.fused, F[N - 1]);
    /* the device iteration's pipeline from its passes alone: within DEV a step */
    uint64_t got = E[0][S - 2] - E[0][0];
    if (got + DEV * (S - 2) < total || got > total + DEV * (S - 2))
        fail_msg("steps 1..%u took %llu cycles, the model says %llu", S - 2,
                 (unsigned long long)got, (unsigned long long)total);
    /* micro-batches in flight 2N-1-2i, and the stash's bytes: D slots of what each stage
     * keeps of a micro-batch. IPU 0 (B1) on each of its 8 sample tiles: x1 792, pool1.y 1448,
     * pool1.arg 1440 words; IPU 1 (B2): conv2.x 1448, pool2.y 320, pool2.arg 320; IPU 2
     * (B3): the landed pool2 output, 8 x 320 words, and layer3's output 16 x 16 x 8 */
    uint32_t want_f[N] = {7, 5, 3, 1}, want_s[N] = {7, 5, 3, 0};
    uint64_t per[N] = {8 * 4 * (792 + 1448 + 1440), 8 * 4 * (1448 + 320 + 320),
                       4 * (8 * 320 + 16 * 16 * 8), 0};
    assert_int_equal(r.pi.stages, N);
    for (uint32_t i = 0; i < N; i++) {
        assert_int_equal(r.pi.in_flight[i], want_f[i]);
        assert_int_equal(r.pi.slots[i], want_s[i]);
        assert_int_equal(r.pi.stash_bytes[i], per[i] * want_s[i]);
    }
}

/* Pipelined inference (the test pass, forward passes only): 8 micro-batches of 8 images in
 * one run of K = 8 over 4 IPUs, K + N - 1 = 11 steps, every one ending with the copy of
 * every crossing up (PopART's copies of each pipeline cycle). Each IPU works exactly in steps
 * i .. i + K - 1 (the schedule's m + i), its forward costs the same in each (within a barrel
 * round), and the copy costs the same in every step whose IPUs work alike (which IPU
 * arrives last decides how much of the copy's on-chip phase the others have done). */
static void test_inference_timeline(void **state)
{
    (void)state;
    static run r;
    memset(&r, 0, sizeof r);
    r.test = 1;
    mnet_cfg c = cfg(four, 1, PIPE_GROUPED, 1);
    c.run.test_batch = 8;
    c.test_iters = 8;
    mdata_split set = digits.test;
    set.n = 64;
    float *w = calloc(MREF_NPARAMS, sizeof(float));
    err e;
    err_clear(&e);
    mref_net *n = mref_create(1, &e);
    mref_init(n, 0);
    memcpy(w, mref_params(n), sizeof(float) * MREF_NPARAMS);
    mref_destroy(n);
    double acc = -1;
    mnet_hooks h = {.finished = on_done, .ctx = &r};
    if (mnet_test(&c, &set, w, &acc, &h, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    free(w);
    enum { K = 8, S = K + N - 1, DEV = 6 };
    static uint64_t L[N][64], E[N][64];
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(segments(&r, i, L[i], E[i]), S);
    pipe_cfg pc = {PIPE_GROUPED, N, K, 0};
    uint64_t X[64] = {0}, sig[64];
    for (uint32_t t = 1; t + 1 < S; t++) { /* step 0 holds the program's start too */
        uint64_t most = 0;
        sig[t] = 0;
        for (uint32_t i = 0; i < N; i++) {
            pipe_run pr[2];
            unsigned np = pipe_at(&pc, t, i, pr);
            assert_int_equal(np, t >= i && t < i + K ? 1u : 0u);
            if ((L[i][t] > 0) != (np > 0))
                fail_msg("step %u ipu %u: %llu cycles of work, %u passes", t, i,
                         (unsigned long long)L[i][t], np);
            uint64_t f = L[i][i ? i : 1]; /* its first forward after step 0 */
            if (np && (L[i][t] + DEV < f || L[i][t] > f + DEV))
                fail_msg("step %u ipu %u: %llu cycles, its forward %llu", t, i,
                         (unsigned long long)L[i][t], (unsigned long long)f);
            most = L[i][t] > most ? L[i][t] : most;
            sig[t] = sig[t] << 1 | (np > 0);
        }
        X[t] = E[0][t] - E[0][t - 1] - most;
        for (uint32_t u = 1; u < t; u++)
            if (sig[u] == sig[t])
                assert_int_equal(X[t], X[u]);
    }
}

/* From each IPU's log cut at the Copies between IPUs (segments): the most and the fewest
 * IPUs that work in one step between the first Copy and the last; returns the Copies. */
static uint32_t busy_per_step(const run *r, int *most, int *least)
{
    static uint64_t L[N][128], E[N][128];
    uint32_t n = segments(r, 0, L[0], E[0]);
    for (uint32_t i = 1; i < N; i++)
        assert_int_equal(segments(r, i, L[i], E[i]), n);
    *most = 0;
    *least = N;
    for (uint32_t t = 1; t < n; t++) {
        int busy = 0;
        for (uint32_t i = 0; i < N; i++)
            busy += L[i][t] > 0;
        *most = busy > *most ? busy : *most;
        *least = busy < *least ? busy : *least;
    }
    return n;
}

/* Sequential: one IPU works per step, and interleaved keeps N - i in flight. */
static void test_sequential_and_interleaved(void **state)
{
    (void)state;
    static run r;
    float *w = malloc(sizeof(float) * MREF_NPARAMS);
    mnet_cfg c = cfg(four, 1, PIPE_SEQUENTIAL, 0);
    train(&c, &r, w);
    int most, least;
    busy_per_step(&r, &most, &least);
    assert_true(most <= 1);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(r.pi.in_flight[i], 1);
    c = cfg(four, 1, PIPE_INTERLEAVED, 0);
    train(&c, &r, w);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(r.pi.in_flight[i], N - i);
    free(w);
}

static double max_diff(const float *a, const float *b)
{
    double m = 0.0;
    for (size_t i = 0; i < MREF_NPARAMS; i++) {
        double d = (double)a[i] - (double)b[i];
        m = d < 0 ? (-d > m ? -d : m) : (d > m ? d : m);
    }
    return m;
}

/* Sharded as PopTorch runs it (mnet_as_sharded): one micro-batch of B x G = 64 over the four
 * IPUs, gradient accumulation 1. Between the copies between IPUs at most one IPU works; the
 * update (after the last copy) runs on all. The linear layers take the 64 samples in two
 * groups of 32 (MNET_FC_BATCH 40): the same graph on one IPU gives the same loss and weights
 * bit for bit. Against one update of G = 8 micro-batches of 8 on one IPU: the same images
 * and the same mean, summed in another order (each gradient over 64 samples at once, scaled
 * by 1/64, rather than over 8 then 8 micro-batches, scaled by 1/8 and 1/8), so the weights
 * agree to the bound test_replicas uses (1e-5) and the loss to 1e-6 relative. */
static void test_sharded(void **state)
{
    (void)state;
    static run r;
    float *w0 = malloc(sizeof(float) * MREF_NPARAMS), *w1 = malloc(sizeof(float) * MREF_NPARAMS),
          *w = malloc(sizeof(float) * MREF_NPARAMS);
    mnet_cfg c = cfg(one, 0, PIPE_GROUPED, 0);
    train(&c, &r, w0);
    double loss0 = r.loss;
    c = cfg(four, 0, PIPE_GROUPED, 0);
    mnet_as_sharded(&c);
    assert_int_equal(c.run.batch, B * GA);
    assert_int_equal(c.run.grad_accum, 1);
    train(&c, &r, w);
    double loss = r.loss;
    int most, least;
    /* three crossings forward, three back (and the labels') */
    assert_true(busy_per_step(&r, &most, &least) >= 6);
    assert_int_equal(most, 1);
    assert_int_equal(least, 1);
    c = cfg(one, 0, PIPE_GROUPED, 0);
    mnet_as_sharded(&c);
    train(&c, &r, w1);
    if (r.loss != loss || memcmp(w1, w, sizeof(float) * MREF_NPARAMS) != 0)
        fail_msg("one IPU, micro-batch 64: loss %.9g (sharded %.9g), weights %s", r.loss, loss,
                 memcmp(w1, w, sizeof(float) * MREF_NPARAMS) ? "differ" : "equal");
    double d = max_diff(w, w0);
    if (d > 1e-5 || fabs(loss - loss0) > 1e-6 * loss0)
        fail_msg("sharded: loss %.9g against %.9g, weights differ by up to %g", loss, loss0, d);
    free(w0);
    free(w1);
    free(w);
}

static void test_replicas(void **state)
{
    (void)state;
    static run r1, r2;
    float *w1 = malloc(sizeof(float) * MREF_NPARAMS), *w2 = malloc(sizeof(float) * MREF_NPARAMS);
    for (int piped = 0; piped < 2; piped++) {
        mnet_cfg a = cfg(piped ? four : one, piped, PIPE_GROUPED, 1);
        a.run.grad_accum = 16;
        a.log_steps = 0;
        train(&a, &r1, w1);
        mnet_cfg b = a;
        b.run.grad_accum = 8;
        b.replicas = 2;
        train(&b, &r2, w2);
        assert_int_equal(r2.nipus, piped ? 8 : 2);
        double d = max_diff(w1, w2);
        if (d > 1e-5 || fabs(r1.loss - r2.loss) > 1e-6 * r1.loss)
            fail_msg("%s: weights differ by %g, loss %.9g against %.9g",
                     piped ? "pipelined" : "one IPU", d, r2.loss, r1.loss);
        if (piped) { /* 1 and 2 host threads: bit for bit */
            b.threads = 1;
            static run r3;
            float *w3 = malloc(sizeof(float) * MREF_NPARAMS);
            train(&b, &r3, w3);
            assert_memory_equal(w3, w2, sizeof(float) * MREF_NPARAMS);
            assert_int_equal(r3.cycles, r2.cycles);
            free(w3);
        }
    }
    free(w1);
    free(w2);
}

/* The outfeed every:N inside a pipelined run (grouped over 4 IPUs, G = 8, N dividing G):
 * the last stage sends the passes over micro-batches N - 1, 2N - 1, ... (the N-th, the 2N-th,
 * ...), so the call's loss is the mean of theirs. Every micro-batch's loss comes from the
 * initial weights (the one update follows the run), so it is the reference's to fp32 rounding
 * (mref_forward_backward on the feed's micro-batches gives r[0..7]; test_mnist_sim's bound,
 * 1e-5 relative); the micro-batches 0, N, ... give another mean, far outside it. */
static void test_every_n(void **state)
{
    (void)state;
    static run r;
    err e;
    err_clear(&e);
    mnet_cfg c = cfg(four, 1, PIPE_GROUPED, 0);
    c.log_steps = 0;
    mdata_split set = digits.train;
    set.n = (size_t)B * GA;
    mref_net *n = mref_create(B, &e);
    assert_non_null(n);
    mref_init(n, 0);
    mfeed *f = mfeed_new(&set, c.run.seed, 1, B, GA);
    uint8_t *buf = malloc(mfeed_bytes(f));
    double ref[GA];
    for (int k = 0; k < GA; k++) {
        int lab[B], right = 0;
        mfeed_fill(f, (uint64_t)k, 0, buf, mfeed_bytes(f));
        memcpy(mref_input(n), buf, 4 * B * 784);
        for (int i = 0; i < B; i++)
            memcpy(&lab[i], buf + 4 * B * 784 + 4 * i, 4);
        ref[k] = mref_forward_backward(n, B, mref_input(n), lab, &right);
    }
    free(buf);
    mfeed_free(f);
    mref_destroy(n);
    float *w = malloc(sizeof(float) * MREF_NPARAMS);
    static const uint32_t every[2] = {4, 2};
    for (int k = 0; k < 2; k++) {
        uint32_t N_ = every[k];
        double want = 0.0, early = 0.0;
        for (uint32_t m = 0; m < GA; m += N_) {
            want += ref[m + N_ - 1] / (GA / N_);
            early += ref[m] / (GA / N_);
        }
        assert_true(fabs(early - want) > 1e-4 * want); /* the test tells them apart */
        c.out_mode = STRM_EVERYN;
        c.out_n = N_;
        train(&c, &r, w);
        if (fabs(r.loss - want) > 1e-5 * want)
            fail_msg("every:%u: loss %.7f, want %.7f (micro-batches 0, N, ...: %.7f)", N_, r.loss,
                     want, early);
    }
    free(w);
}

static void refused(mnet_cfg c, const char *want)
{
    err e;
    err_clear(&e);
    float *w = calloc(MREF_NPARAMS, sizeof(float));
    mdata_split set = digits.train;
    set.n = (size_t)c.run.batch * c.run.grad_accum;
    assert_int_equal(mnet_train(&c, &set, w, NULL, &e), ERR_INPUT);
    if (!strstr(e.msg, want))
        fail_msg("'%s' lacks '%s'", e.msg, want);
    assert_null(strchr(e.msg, '\n'));
    free(w);
}

static void test_rules(void **state)
{
    (void)state;
    mnet_cfg c = cfg(four, 1, PIPE_GROUPED, 1);
    c.run.grad_accum = 6;
    refused(c, "gradient accumulation >= 2N-1 = 7");
    static const uint32_t bad[4] = {0, 2, 2, 3};
    refused(cfg(bad, 1, PIPE_GROUPED, 1), "each IPU is one stage");
    c = cfg(four, 1, PIPE_GROUPED, 1);
    c.run.grad_accum = 9;
    c.io_tiles = 8;
    refused(c, "with I/O tiles over 4 IPUs needs gradient accumulation >= 2N+2 = 10; got 9");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_math),
        cmocka_unit_test(test_grouped_timeline),
        cmocka_unit_test(test_sequential_and_interleaved),
        cmocka_unit_test(test_inference_timeline),
        cmocka_unit_test(test_replicas),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_every_n),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
