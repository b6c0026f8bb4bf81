/* Tests of the simulated MNIST run (workloads/mnist/mnet.h) against the reference trainer
 * (workloads/mnist/mref.h) on the real mnist-digits data: both see the same micro-batches,
 * initial weights and hyper-parameters, so their numbers must agree up to fp32 summation
 * order (docs/mnist.md, "The simulated run": the convolutions, pooling, loss and AdamW are
 * bit-exact; the linear layers' forward sums in another order, and the weight gradients
 * accumulate over the G micro-batches per sample slot before the slots are added).
 *
 * - the first host call's loss within 1e-4 relative, its accuracy within 0.1 points, and the
 *   weights after its updates within 1e-5 of the reference's (each AdamW step moves a weight
 *   by about lr = 1e-3; rounding differences of the gradients change that by far less);
 * - the test pass on the simulated IPU gives the reference's accuracy on the same weights;
 * - bit-identical weights and cycles for 1 and 2 host threads;
 * - sharded over 4 and over 2 IPUs (the blocks on IPUs, activations and gradients crossing
 *   over the IPU-Links): the same losses and weights as on one IPU, bit for bit (the same
 *   codelets in the same order; copies move values unchanged), every IPU sending and
 *   receiving, and one IPU computing at a time (their OnTileExecute cycles add up to no more
 *   than the run's);
 * - the outfeed modes all, final, sum, every:N: each call's loss from the micro-batches the
 *   mode returns (test_output_modes);
 * - the infeed as bytes normalised on the device (--dtype u8): the same weights bit for bit,
 *   a quarter of the image bytes;
 * - the infeed as fp16 widened on the device (--dtype fp16): the host's halves the nearest
 *   even of its floats, half the image bytes, and the reference trainer's loss and weights on
 *   the rounded images (not on truncated ones);
 * - a micro-batch too large for the tiles stops with the graph's one-line message;
 * - after 3 epochs with the tutorial's defaults, test accuracy within 0.5 points of the
 *   reference's (skipped when IPUSIM_SLOW_TESTS=0, as the sanitizer passes of .ci/run set). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/testutil.h"

#include "workloads/mnist/adamw.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/feed.h"
#include "workloads/mnist/layers.h"
#include "workloads/mnist/mnet.h"
#include "workloads/mnist/mref.h"

static mdata digits;

static int setup(void **state)
{
    (void)state;
    return tu_load_digits(&digits, "test_mnist_sim");
}

static int teardown(void **state)
{
    (void)state;
    mdata_free(&digits);
    return 0;
}

/* The host calls' results, and the last call's end cycle. */
typedef struct rec {
    double loss[64], acc[64];
    int n;
    uint64_t end;
} rec;

static void sim_call(void *ctx, const mnet_call *c)
{
    rec *r = ctx;
    if (r->n < 64) {
        r->loss[r->n] = c->p.loss;
        r->acc[r->n] = c->p.accuracy;
    }
    r->n++;
    r->end = c->end_cycle;
}

static void ref_call(void *ctx, const mref_progress *p)
{
    rec *r = ctx;
    if (r->n < 64) {
        r->loss[r->n] = p->loss;
        r->acc[r->n] = p->accuracy;
    }
    r->n++;
}

/* The reference's initial weights for seed (malloc'd). */
static float *seeded(uint64_t seed)
{
    err e;
    err_clear(&e);
    mref_net *n = mref_create(1, &e);
    assert_non_null(n);
    mref_init(n, seed);
    float *w = malloc(sizeof(float) * MREF_NPARAMS);
    memcpy(w, mref_params(n), sizeof(float) * MREF_NPARAMS);
    mref_destroy(n);
    return w;
}

static mnet_cfg cfg_of(int epochs, int di, unsigned threads)
{
    mnet_cfg c;
    err e;
    err_clear(&e);
    assert_int_equal(mnet_defaults(&c, &e), ERR_OK);
    c.run.epochs = epochs;
    c.run.device_iters = di;
    c.threads = threads;
    return c;
}

/* Both trainers from the seeded initialisation on `set`; weights out. */
static void train_both(const mnet_cfg *c, const mdata_split *set, rec *sim, rec *ref, float *sim_w,
                       float *ref_w)
{
    err e;
    err_clear(&e);
    mref_net *n = mref_create(c->run.batch, &e);
    assert_non_null(n);
    mref_init(n, c->run.seed);
    memcpy(sim_w, mref_params(n), sizeof(float) * MREF_NPARAMS);
    memset(sim, 0, sizeof *sim);
    memset(ref, 0, sizeof *ref);
    mnet_hooks h = {.call_done = sim_call, .ctx = sim};
    if (mnet_train(c, set, sim_w, &h, &e) != ERR_OK)
        fail_msg("mnet_train: %s", e.msg);
    mref_hooks rh = {.call_done = ref_call, .ctx = ref};
    assert_int_equal(mref_train(n, &c->run, set, &rh, &e), 0);
    memcpy(ref_w, mref_params(n), sizeof(float) * MREF_NPARAMS);
    mref_destroy(n);
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* One host call of 10 micro-batches of 40 (one weight update). */
static void test_first_call(void **state)
{
    (void)state;
    mnet_cfg c = cfg_of(1, 1, 2);
    mdata_split set = digits.train;
    set.n = 400;
    rec sim, ref;
    float *sw = malloc(sizeof(float) * MREF_NPARAMS), *rw = malloc(sizeof(float) * MREF_NPARAMS);
    train_both(&c, &set, &sim, &ref, sw, rw);
    assert_int_equal(sim.n, 1);
    assert_int_equal(ref.n, 1);
    if (fabs(sim.loss[0] - ref.loss[0]) > 1e-4 * ref.loss[0])
        fail_msg("first call's loss %.7f, reference %.7f", sim.loss[0], ref.loss[0]);
    assert_true(fabs(sim.acc[0] - ref.acc[0]) <= 0.1);
    double d = max_diff(sw, rw, MREF_NPARAMS);
    if (d > 1e-5)
        fail_msg("weights after the update differ by %g", d);
    assert_true(sim.end > 0);
    free(sw);
    free(rw);
}

/* The same short run with 1 and 2 host threads: the same weights, bit for bit, and the same
 * cycles. */
static void test_threads(void **state)
{
    (void)state;
    mdata_split set = digits.train;
    set.n = 400;
    float *w[2];
    uint64_t end[2];
    for (int t = 0; t < 2; t++) {
        mnet_cfg c = cfg_of(1, 1, (unsigned)t + 1);
        err e;
        err_clear(&e);
        w[t] = seeded(0);
        rec r = {.n = 0};
        mnet_hooks h = {.call_done = sim_call, .ctx = &r};
        if (mnet_train(&c, &set, w[t], &h, &e) != ERR_OK)
            fail_msg("%s", e.msg);
        end[t] = r.end;
    }
    assert_memory_equal(w[0], w[1], sizeof(float) * MREF_NPARAMS);
    assert_int_equal(end[0], end[1]);
    free(w[0]);
    free(w[1]);
}

/* The test pass on the simulated IPU against mref_test on the seeded initial weights, over
 * 404 images (the last batch of 8 padded: 404 = 50 x 8 + 4). */
static void test_test_pass(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mnet_cfg c = cfg_of(1, 1, 2);
    mref_net *n = mref_create(8, &e);
    mref_init(n, 3);
    mdata_split set = digits.test;
    set.n = 404;
    double sim = -1.0, ref = -2.0;
    if (mnet_test(&c, &set, mref_params(n), &sim, NULL, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(mref_test(n, 8, &set, &ref, &e), 0);
    if (fabs(sim - ref) > 100.0 / 404 + 1e-9)
        fail_msg("test accuracy %.4f%%, reference %.4f%%", sim, ref);
    mref_destroy(n);
}

/* A run's host calls (first, so that sim_call takes it) and its IPUs' statistics at the end. */
typedef struct ipus {
    rec r;
    uint32_t n;
    eng_ipu_stats st[4];
    uint64_t cycles;
} ipus;

static void ipu_stats(void *ctx, int test, eng *g, const gr_exe *x, const mnet_pipe_info *p)
{
    (void)x;
    (void)p;
    ipus *r = ctx;
    if (test)
        return;
    r->n = eng_nipus(g);
    for (uint32_t i = 0; i < r->n && i < 4; i++)
        eng_get_ipu_stats(g, i, &r->st[i]);
    eng_stats st;
    eng_get_stats(g, &st);
    r->cycles = st.cycles;
}

static void test_sharded(void **state)
{
    (void)state;
    mdata_split set = digits.train;
    set.n = 400;
    static const uint32_t maps[3][4] = {{0, 0, 0, 0}, {0, 1, 2, 3}, {0, 0, 1, 1}};
    float *w[3];
    double loss[3];
    for (int m = 0; m < 3; m++) {
        mnet_cfg c = cfg_of(1, 1, 2);
        memcpy(c.stage_ipu, maps[m], 4 * sizeof maps[m][0]);
        err e;
        err_clear(&e);
        w[m] = seeded(0);
        ipus st;
        memset(&st, 0, sizeof st);
        mnet_hooks h = {.call_done = sim_call, .finished = ipu_stats, .ctx = &st};
        if (mnet_train(&c, &set, w[m], &h, &e) != ERR_OK)
            fail_msg("%s", e.msg);
        loss[m] = st.r.loss[0];
        uint32_t want = maps[m][3] + 1;
        assert_int_equal(st.n, want);
        uint64_t compute = 0;
        for (uint32_t i = 0; i < want; i++) {
            compute += st.st[i].cat[ENG_CAT_COMPUTE];
            if (want > 1)
                assert_true(st.st[i].global_tx_bytes > 0 && st.st[i].global_rx_bytes > 0);
        }
        if (want == 4)
            assert_true(compute <= st.cycles);
    }
    for (int m = 1; m < 3; m++) {
        assert_memory_equal(w[m], w[0], sizeof(float) * MREF_NPARAMS);
        assert_true(loss[m] == loss[0]);
        free(w[m]);
    }
    free(w[0]);
}

/* The infeed as the images' bytes (--dtype u8), normalised on the device by norm_u8 with the
 * host's fp32 operations: the same weights bit for bit as the fp32 infeed, and a quarter of
 * the image bytes: 10 micro-batches of 40 x (784 + 4) bytes against 40 x (3,136 + 4). */
static void test_u8_infeed(void **state)
{
    (void)state;
    mdata_split set = digits.train;
    set.n = 400;
    float *w[2];
    for (int u8 = 0; u8 < 2; u8++) {
        mnet_cfg c = cfg_of(1, 1, 2);
        c.dtype = u8 ? MNET_U8 : MNET_FP32;
        err e;
        err_clear(&e);
        w[u8] = seeded(0);
        ipus st;
        memset(&st, 0, sizeof st);
        mnet_hooks h = {.call_done = sim_call, .finished = ipu_stats, .ctx = &st};
        if (mnet_train(&c, &set, w[u8], &h, &e) != ERR_OK)
            fail_msg("%s", e.msg);
        assert_int_equal(st.st[0].host_in_bytes, 10 * 40 * (u8 ? 784 + 4 : 3136 + 4));
    }
    assert_memory_equal(w[0], w[1], sizeof(float) * MREF_NPARAMS);
    free(w[0]);
    free(w[1]);
}

/* fp32 bits through binary16 and back: nearest even (tests/testutil.h's models), or cut to
 * the half's 10 fraction bits toward zero (for |x| in the half's normal range, as every
 * normalised pixel is: the smallest, (33 / 255 - 0.1307) / 0.3081 = -0.0042, is above 2^-14). */
static uint32_t via_half_rne(uint32_t b)
{
    return tu_f16_to_f32(tu_f32_to_f16(b));
}

static uint32_t via_half_cut(uint32_t b)
{
    return b & 0xffffe000u;
}

/* The reference trainer's one update (mref_train's loop: 10 micro-batches of 40 accumulated,
 * the gradients scaled by 1/10, one AdamW step) from the seeded weights on the fp32 feed's
 * images passed through via(), into w; the call's mean loss. */
static double ref_update(const mdata_split *set, uint32_t (*via)(uint32_t), float *w)
{
    err e;
    err_clear(&e);
    mref_net *n = mref_create(40, &e);
    mref_init(n, 0);
    adamw_cfg oc = adamw_defaults();
    adamw opt;
    assert_int_equal(adamw_init(&opt, MREF_NPARAMS, &oc, &e), 0);
    mfeed *f = mfeed_new(set, 0, 1, 40, 10);
    uint8_t *buf = malloc(mfeed_bytes(f));
    double loss = 0.0;
    mref_zero_grads(n);
    for (int k = 0; k < 10; k++) {
        int lab[40];
        mfeed_fill(f, (uint64_t)k, 0, buf, mfeed_bytes(f));
        float *x = mref_input(n);
        for (size_t i = 0; i < 40 * 784; i++) {
            uint32_t b;
            memcpy(&b, buf + 4 * i, 4);
            x[i] = tu_bf(via(b));
        }
        for (int i = 0; i < 40; i++)
            memcpy(&lab[i], buf + 4 * 40 * 784 + 4 * i, 4);
        loss += mref_forward_backward(n, 40, x, lab, NULL);
    }
    float *g = mref_grads(n);
    for (size_t i = 0; i < MREF_NPARAMS; i++)
        g[i] *= 1.0f / 10.0f;
    adamw_step(&opt, mref_params(n), g);
    memcpy(w, mref_params(n), sizeof(float) * MREF_NPARAMS);
    adamw_free(&opt);
    free(buf);
    mfeed_free(f);
    mref_destroy(n);
    return loss / 10.0;
}

/* The fp16 feed of set's first 10 micro-batches: each pixel the fp32 feed's, rounded to the
 * nearest half (some round up), and the labels as they are. */
static void check_f16_feed(const mdata_split *set)
{
    mfeed *f = mfeed_new(set, 0, 1, 40, 10), *h = mfeed_new(set, 0, 1, 40, 10);
    mfeed_format(h, MFEED_F16);
    assert_int_equal(mfeed_bytes(h), 40 * (784 * 2 + 4));
    uint8_t *bf = malloc(mfeed_bytes(f)), *bh = malloc(mfeed_bytes(h));
    long up = 0;
    for (int k = 0; k < 10; k++) {
        mfeed_fill(f, (uint64_t)k, 0, bf, mfeed_bytes(f));
        mfeed_fill(h, (uint64_t)k, 0, bh, mfeed_bytes(h));
        for (size_t i = 0; i < 40 * 784; i++) {
            uint32_t b, w;
            memcpy(&b, bf + 4 * i, 4);
            memcpy(&w, bh + 4 * (i / 2), 4);
            uint32_t half = i % 2 ? w >> 16 : w & 0xffffu;
            if (half != tu_f32_to_f16(b))
                fail_msg("micro-batch %d pixel %zu: half %04x, want %04x (of %08x)", k, i, half,
                         tu_f32_to_f16(b), b);
            up += via_half_rne(b) != via_half_cut(b);
        }
        assert_memory_equal(bh + 2 * 40 * 784, bf + 4 * 40 * 784, 4 * 40);
    }
    assert_true(up > 0);
    free(bf);
    free(bh);
    mfeed_free(f);
    mfeed_free(h);
}

/* The test pass with fp16 images and weights w: the reference's forward on the rounded images,
 * to one image of 404. */
static void check_f16_test(const float *w)
{
    err e;
    err_clear(&e);
    mnet_cfg c = cfg_of(1, 1, 2);
    c.dtype = MNET_FP16;
    mdata_split ts = digits.test;
    ts.n = 404;
    double sim = -1.0;
    if (mnet_test(&c, &ts, w, &sim, NULL, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    mref_net *n = mref_create(4, &e);
    memcpy(mref_params(n), w, sizeof(float) * MREF_NPARAMS);
    float lut[256];
    mdata_norm_table(lut);
    long right = 0;
    for (size_t i = 0; i < ts.n; i++) {
        float *x = mref_input(n);
        for (int p = 0; p < 784; p++)
            x[p] = tu_bf(via_half_rne(tu_fb(lut[ts.images[784 * i + (size_t)p]])));
        right += mlayer_argmax(mref_forward(n, 1, x), 10) == ts.labels[i];
    }
    double ref = 100.0 * (double)right / 404.0;
    printf("test accuracy with fp16 images %.4f%%, reference %.4f%%\n", sim, ref);
    if (fabs(sim - ref) > 100.0 / 404 + 1e-9)
        fail_msg("test accuracy %.4f%%, reference %.4f%%", sim, ref);
    mref_destroy(n);
}

/* The infeed as the normalised images rounded to fp16 (--dtype fp16), widened on the device by
 * f16_to_f32:
 * - the feed's halves are the nearest-even binary16 of the fp32 feed's floats (tu_f32_to_f16),
 *   two to a word, the labels after them unchanged; among these 400 images some pixels round
 *   up (nearest even differs from cutting the fraction), so a truncating host fails here;
 * - half the image bytes: 10 micro-batches of 40 x (392 x 4 + 4) bytes;
 * - the call's loss and the weights after its update are the reference trainer's on the
 *   rounded images (to summation order: loss 1e-6 relative, weights 1e-5 as test_first_call),
 *   and the loss is nearer that than by a quarter of the distance to the reference's on the
 *   cut images (rounding that truncated, on the host or the device, would land there); the
 *   weights differ from the fp32 run's; pipelined over four IPUs (grouped, recompute) the
 *   same loss and weights bit for bit as on one;
 * - the test pass with fp16 images gives the reference's forward on the rounded images, to
 *   one image of 404. */
static void test_fp16_infeed(void **state)
{
    (void)state;
    mdata_split set = digits.train;
    set.n = 400;
    check_f16_feed(&set);

    float *rw = malloc(sizeof(float) * MREF_NPARAMS), *cw = malloc(sizeof(float) * MREF_NPARAMS);
    double rl = ref_update(&set, via_half_rne, rw), cl = ref_update(&set, via_half_cut, cw);
    float *w[3];
    double loss[3];
    for (int half = 0; half < 3; half++) {
        mnet_cfg c = cfg_of(1, 1, 2);
        c.dtype = half ? MNET_FP16 : MNET_FP32;
        if (half == 2) { /* pipelined over four IPUs: the input on stage 0 */
            static const uint32_t four[4] = {0, 1, 2, 3};
            memcpy(c.stage_ipu, four, sizeof four);
            c.pipelined = 1;
            c.recompute = 1;
        }
        err e;
        err_clear(&e);
        w[half] = seeded(0);
        ipus st;
        memset(&st, 0, sizeof st);
        mnet_hooks hk = {.call_done = sim_call, .finished = ipu_stats, .ctx = &st};
        if (mnet_train(&c, &set, w[half], &hk, &e) != ERR_OK)
            fail_msg("%s", e.msg);
        assert_int_equal(st.r.n, 1);
        loss[half] = st.r.loss[0];
        assert_int_equal(st.st[0].host_in_bytes, 10 * 40 * (half ? 392 * 4 + 4 : 3136 + 4));
        assert_int_equal(st.n, half == 2 ? 4 : 1);
    }
    printf("loss: fp16 %.9f, reference rounded %.9f, cut %.9f; fp32 %.9f\n", loss[1], rl, cl,
           loss[0]);
    if (fabs(loss[1] - rl) > 1e-6 * rl)
        fail_msg("fp16 loss %.9f, reference on the rounded images %.9f", loss[1], rl);
    if (!(fabs(loss[1] - rl) < fabs(cl - rl) / 4))
        fail_msg("fp16 loss %.9f: rounded %.9f, cut %.9f", loss[1], rl, cl);
    double d = max_diff(w[1], rw, MREF_NPARAMS);
    if (d > 1e-5)
        fail_msg("weights after the update differ by %g", d);
    assert_true(memcmp(w[0], w[1], sizeof(float) * MREF_NPARAMS) != 0);
    assert_true(loss[2] == loss[1]);
    assert_memory_equal(w[2], w[1], sizeof(float) * MREF_NPARAMS);

    check_f16_test(w[1]);
    free(w[0]);
    free(w[1]);
    free(w[2]);
    free(rw);
    free(cw);
}

/* The outfeed modes on one host call of 10 micro-batches (one update, after the last): every
 * micro-batch's loss comes from the initial weights, so it is the reference's to fp32
 * rounding (mref_forward_backward on the feed's micro-batches gives r[0..9]): all and sum
 * report mean(r), final r[9] (and the accuracy of micro-batch 9 alone, as the reference
 * counts it), every:5 (r[4] + r[9]) / 2, every:2 the mean of r[1], r[3], ..., r[9]; every:3
 * is refused. */
static void test_output_modes(void **state)
{
    (void)state;
    mdata_split set = digits.train;
    set.n = 400;
    err e;
    err_clear(&e);
    mref_net *n = mref_create(40, &e);
    mref_init(n, 0);
    mfeed *f = mfeed_new(&set, 0, 1, 40, 10);
    uint8_t *buf = malloc(mfeed_bytes(f));
    double r[10];
    int right9 = 0;
    for (int k = 0; k < 10; k++) {
        int lab[40], c = 0;
        mfeed_fill(f, (uint64_t)k, 0, buf, mfeed_bytes(f));
        memcpy(mref_input(n), buf, 4 * 40 * 784);
        for (int i = 0; i < 40; i++)
            memcpy(&lab[i], buf + 4 * 40 * 784 + 4 * i, 4);
        r[k] = mref_forward_backward(n, 40, mref_input(n), lab, &c);
        right9 = c;
    }
    free(buf);
    mfeed_free(f);
    mref_destroy(n);
    static const struct {
        strm_mode mode;
        uint32_t n;
        int first, step; /* the micro-batches the call's loss averages */
    } cases[] = {{STRM_ALL, 1, 0, 1},
                 {STRM_SUM, 1, 0, 1},
                 {STRM_FINAL, 1, 9, 1},
                 {STRM_EVERYN, 5, 4, 5},
                 {STRM_EVERYN, 2, 1, 2}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mnet_cfg c = cfg_of(1, 1, 2);
        c.out_mode = cases[k].mode;
        c.out_n = cases[k].n;
        float *w = seeded(0);
        rec got = {.n = 0};
        mnet_hooks h = {.call_done = sim_call, .ctx = &got};
        if (mnet_train(&c, &set, w, &h, &e) != ERR_OK)
            fail_msg("%s", e.msg);
        double want = 0.0;
        int cnt = 0;
        for (int m = cases[k].first; m < 10; m += cases[k].step, cnt++)
            want += r[m];
        want /= cnt;
        assert_int_equal(got.n, 1);
        if (fabs(got.loss[0] - want) > 1e-5 * want)
            fail_msg("mode %zu: loss %.7f, want %.7f", k, got.loss[0], want);
        if (cases[k].mode == STRM_FINAL)
            assert_true(fabs(got.acc[0] - 100.0 * right9 / 40) < 1e-9);
        free(w);
    }
    mnet_cfg c = cfg_of(1, 1, 2);
    c.out_mode = STRM_EVERYN;
    c.out_n = 3;
    assert_int_equal(mnet_check_output(&c, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "every:3: N must divide the gradient accumulation (10)"));
}

/* What a training run's end showed: the release of the AdamW step's sync (IPU 0's last step
 * named "adamw" in the sync log) and the training program's cycles. */
typedef struct upd_end {
    rec r;
    uint64_t adamw, cycles;
} upd_end;

static void adamw_end(void *ctx, int test, eng *g, const gr_exe *x, const mnet_pipe_info *p)
{
    (void)p;
    upd_end *u = ctx;
    if (test)
        return;
    size_t n;
    const uint64_t *rel = eng_sync_log(g, 0, &n);
    gr_step *st = malloc((n ? n : 1) * sizeof *st);
    n = gr_exe_steps(x, 0, st, n);
    for (size_t k = 0; k < n; k++)
        if (strcmp(st[k].what, "execute") == 0 && strcmp(st[k].name, "adamw") == 0)
            u->adamw = rel[k];
    free(st);
    eng_stats es;
    eng_get_stats(g, &es);
    u->cycles = es.cycles;
}

/* A host call's cycles include its weight update, whatever the outfeed mode: one IPU, one
 * call of one update (10 micro-batches of 40). The call returns when its program has ended
 * on every IPU (PopTorch's run), so its end is at or after the release of the AdamW step,
 * which follows the last micro-batch's outfeed (the old accounting ended the call at that
 * outfeed, before the update); only the loop's branch and the halt follow it. `all` and
 * `sum` train the same weights bit for bit, and `sum` (one outfeed copy a call, not ten, and
 * an add a micro-batch on one tile) ends no later than `all`. */
static void test_call_includes_update(void **state)
{
    (void)state;
    mdata_split set = digits.train;
    set.n = 400;
    err e;
    err_clear(&e);
    static const strm_mode mode[2] = {STRM_ALL, STRM_SUM};
    upd_end u[2];
    float *w[2];
    for (int k = 0; k < 2; k++) {
        mnet_cfg c = cfg_of(1, 1, 2);
        c.out_mode = mode[k];
        c.log_steps = 4096; /* every step of the run (about 600) */
        w[k] = seeded(0);
        memset(&u[k], 0, sizeof u[k]);
        mnet_hooks h = {.call_done = sim_call, .finished = adamw_end, .ctx = &u[k]};
        if (mnet_train(&c, &set, w[k], &h, &e) != ERR_OK)
            fail_msg("%s", e.msg);
        assert_int_equal(u[k].r.n, 1);
        assert_true(u[k].adamw > 0);
        if (u[k].r.end < u[k].adamw)
            fail_msg("mode %d: the call ends at %llu, before the update at %llu", k,
                     (unsigned long long)u[k].r.end, (unsigned long long)u[k].adamw);
        assert_true(u[k].r.end <= u[k].cycles && u[k].cycles - u[k].r.end < 16);
    }
    assert_memory_equal(w[0], w[1], sizeof(float) * MREF_NPARAMS);
    assert_true(u[1].r.end <= u[0].r.end);
    free(w[0]);
    free(w[1]);
}

/* A tile's SRAM cut to 400 KiB: a sample tile (383,396 B) fits, the first layer3 tile (its
 * group's 40 samples' inputs in three layouts, with the partials: 439,032 B) does not; one
 * line names it. */
static void test_too_big(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mnet_cfg c = cfg_of(1, 1, 1);
    c.m.sram_bytes = 400 * 1024;
    mdata_split set = digits.train;
    set.n = 400;
    float *w = calloc(MREF_NPARAMS, sizeof(float));
    assert_int_equal(mnet_train(&c, &set, w, NULL, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "graph does not fit: ipu 0 tile 40 needs"));
    assert_non_null(strstr(e.msg, "of its 409600"));
    assert_null(strchr(e.msg, '\n'));
    c.m.sram_bytes = 624 * 1024;
    c.run.epochs = 0;
    assert_int_equal(mnet_train(&c, &set, w, NULL, &e), ERR_INPUT);
    free(w);
}

/* The gate: the tutorial's defaults, 3 epochs of mnist-digits on both. */
static void test_three_epochs(void **state)
{
    (void)state;
    if (!tu_slow_tests())
        skip();
    mnet_cfg c = cfg_of(3, 10, 0);
    rec sim, ref;
    float *sw = malloc(sizeof(float) * MREF_NPARAMS), *rw = malloc(sizeof(float) * MREF_NPARAMS);
    train_both(&c, &digits.train, &sim, &ref, sw, rw);
    assert_int_equal(sim.n, 6);
    for (int k = 0; k < 6; k++)
        printf("call %d: loss %.6f / %.6f, accuracy %.2f / %.2f (simulated / reference)\n", k + 1,
               sim.loss[k], ref.loss[k], sim.acc[k], ref.acc[k]);
    err e;
    err_clear(&e);
    double sa = -1.0, ra = -2.0;
    if (mnet_test(&c, &digits.test, sw, &sa, NULL, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    mref_net *n = mref_create(8, &e);
    memcpy(mref_params(n), rw, sizeof(float) * MREF_NPARAMS);
    assert_int_equal(mref_test(n, 8, &digits.test, &ra, &e), 0);
    printf("test accuracy %.2f%% simulated, %.2f%% reference\n", sa, ra);
    assert_true(fabs(sa - ra) <= 0.5);
    assert_true(fabs(sim.loss[0] - ref.loss[0]) <= 1e-4 * ref.loss[0]);
    mref_destroy(n);
    free(sw);
    free(rw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_call),   cmocka_unit_test(test_threads),
        cmocka_unit_test(test_test_pass),    cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_u8_infeed),    cmocka_unit_test(test_fp16_infeed),
        cmocka_unit_test(test_output_modes), cmocka_unit_test(test_call_includes_update),
        cmocka_unit_test(test_too_big),      cmocka_unit_test(test_three_epochs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
