/* test_mnist_gtrain: training a network built from its layer table (workloads/mnist/gnet.h,
 * gnet_mnet: mnet_cfg.net other than the tutorial's) on a simulated IPU of 368 tiles, on the
 * real mnist-digits data, against the reference trainer (mref_train) of the same table from
 * the same seeded weights:
 *
 * - the wide network (padded convolutions, a linear layer after a linear layer) and the
 *   tutorial's table (built the same way, not by the tutorial's own graph): one weight update
 *   of 2 micro-batches of 16; every weight within 1e-5 of the reference's (where AdamW's eps
 *   dominates the step, within its learning rate: see against_reference), the call's loss
 *   within 1e-4 relative and its accuracy equal (the plans split input channels, features
 *   and samples over tiles and add their partial sums in another order than the C loops, so
 *   not bit for bit);
 * - two updates in one call: the second's gradient within 1e-4 (the first's small weight
 *   differences move it), the call's loss and accuracy;
 * - every compute step of every plan (forward, input and weight gradients) within 10% of the
 *   planner's estimate, as the training program first runs it;
 * - the same weights and cycles with 1 and 2 host threads;
 * (IPUSIM_SLOW_TESTS=0, the sanitizer builds of .ci/run, leave out the wide network on one
 * IPU with its test pass, the tutorial's table, the sharded run and the threads: the
 * pipelined run over two IPUs and the refusals are left; test_mnist_gnet runs the forward
 * pass there);
 * - the test pass's accuracy equal to the reference's on the trained weights;
 * - what the graph does not build refused in one line (pipelining, replicas, a u8 infeed, a
 *   stride in training). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/testplan.h"
#include "tests/testutil.h"

#include "workloads/mnist/mnet.h"
#include "workloads/mnist/mref.h"

static mdata digits;

static int setup(void **state)
{
    (void)state;
    return tu_load_digits(&digits, "test_mnist_gtrain");
}

static int teardown(void **state)
{
    (void)state;
    mdata_free(&digits);
    return 0;
}

enum { BATCH = 16, G = 2, TILES = 368 };

typedef struct run {
    float *grads; /* the update's gradient */
    double loss, acc;
    int calls;
    uint64_t end;
    mnet_pipe_info info;
    int checked;
    double worst; /* the largest |simulated / estimated - 1| */
} run;

static void on_call(void *ctx, const mnet_call *c)
{
    run *r = ctx;
    r->loss = c->p.loss;
    r->acc = c->p.accuracy;
    r->calls++;
    r->end = c->end_cycle;
}

/* Each plan's compute steps against the plan's estimate (tu_check_plans). */
static void on_done(void *ctx, int test, eng *g, const gr_exe *x, const mnet_pipe_info *p)
{
    run *r = ctx;
    if (test)
        return;
    r->info = *p;
    r->checked = tu_check_plans(x, g, p->plan, p->nplans, &r->worst);
}

static const uint32_t one_ipu[4] = {0, 0, 0, 0};

static mnet_cfg cfg_of(const mspec *net, unsigned threads, int updates)
{
    mnet_cfg c;
    err e;
    err_clear(&e);
    assert_int_equal(mnet_defaults(&c, &e), ERR_OK);
    c.net = net;
    c.m.tiles_per_ipu = TILES;
    c.run.epochs = 1;
    c.run.batch = BATCH;
    c.run.grad_accum = G;
    c.run.device_iters = updates; /* one host call of them */
    c.run.test_batch = 8;
    c.threads = threads;
    c.log_steps = 1024;
    return c;
}

static mdata_split train_set(const mnet_cfg *c)
{
    mdata_split set = digits.train;
    set.n = (size_t)c->run.batch * (size_t)c->run.grad_accum * (size_t)c->run.device_iters;
    return set;
}

/* One host call from the seeded weights of net; the weights out. */
static float *train(const mnet_cfg *c, mref_net *ref, run *r)
{
    err e;
    err_clear(&e);
    mref_init(ref, 0);
    float *w = malloc(sizeof(float) * mref_nparams(ref));
    memcpy(w, mref_params(ref), sizeof(float) * mref_nparams(ref));
    mdata_split set = train_set(c);
    memset(r, 0, sizeof *r);
    r->grads = calloc(mref_nparams(ref), sizeof *r->grads);
    mnet_hooks h = {.call_done = on_call, .finished = on_done, .ctx = r, .grads = r->grads};
    if (mnet_train(c, &set, w, &h, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(r->calls, 1);
    return w;
}

static void ref_call(void *ctx, const mref_progress *p)
{
    *(mref_progress *)ctx = *p;
}

/* The reference trainer's run of c from the same seeded weights, into n: its call's loss
 * within 1e-4 relative of the simulated run's r, its accuracy equal. */
static void ref_train(mref_net *n, const mnet_cfg *c, const run *r)
{
    err e;
    err_clear(&e);
    mref_init(n, 0);
    mref_progress rc = {0};
    mref_hooks h = {.call_done = ref_call, .ctx = &rc};
    mdata_split set = train_set(c);
    assert_int_equal(mref_train(n, &c->run, &set, &h, &e), 0);
    if (fabs(r->loss - rc.loss) > 1e-4 * rc.loss)
        fail_msg("loss %.7f, the reference's %.7f", r->loss, rc.loss);
    assert_true(r->acc == rc.accuracy);
}

/* The last update's gradient g against the reference's (mref_grads: the mean over G
 * micro-batches; AdamW's step hides its scale): each element within tol of the reference's
 * largest. */
static void check_grads(const char *name, const float *g, mref_net *n, double tol)
{
    double gmax = 0.0, gd = 0.0;
    for (size_t i = 0; i < mref_nparams(n); i++)
        gmax = fmax(gmax, fabs(mref_grads(n)[i]));
    for (size_t i = 0; i < mref_nparams(n); i++)
        gd = fmax(gd, fabs((double)g[i] - mref_grads(n)[i]) / gmax);
    printf("  %s: gradient within %.3g of the reference's (relative to its largest, %.3g)\n", name,
           gd, gmax);
    if (gd > tol)
        fail_msg("%s: the gradient differs from the reference's by %g of its largest", name, gd);
}

/* net (a copy of a table, so that the tutorial's is built from its table too) trained on the
 * simulated IPUs (block k on IPU map[k], sharded) and by the reference, compared. */
static void against_reference(const mspec *net, const uint32_t map[4])
{
    err e;
    err_clear(&e);
    mnet_cfg c = cfg_of(net, 2, 1);
    memcpy(c.stage_ipu, map, 4 * sizeof *map);
    c.m.nipus = map[3] + 1;
    mref_net *n = mref_create_net(net, BATCH, &e);
    assert_non_null(n);
    run r;
    float *w = train(&c, n, &r);
    for (uint32_t i = 0; i < c.m.nipus; i++) {
        printf("  %s, blocks on IPUs %u,%u,%u,%u: IPU %u: %u plans, the steps within %.1f%% of "
               "their estimates; %llu cycles; %u of %u tiles in the convolutions' and linear "
               "layers' compute sets\n",
               net->name, map[0], map[1], map[2], map[3], i, r.info.nplans, 100.0 * r.worst,
               (unsigned long long)r.end, r.info.mm_tiles[i], TILES);
        assert_true(r.info.mm_tiles[i] >= 0.9 * TILES); /* the whole IPU works on them */
    }
    assert_true(r.checked >= 3 * (int)r.info.nplans);
    ref_train(n, &c, &r);
    /* The gradient, the mean of G micro-batches' (AdamW's step hides its scale): each within
     * 1e-5 of the largest, relative, and the largest gradient's own within 1e-5 relative. */
    check_grads(net->name, r.grads, n, 1e-5);
    /* AdamW's first step is lr g / (|g| + eps) (a weight decay aside): where the reference's
     * gradient is within a few eps = 1e-8 of zero, the step's slope up to lr / eps = 1e5 turns
     * a gradient rounded 1e-10 otherwise (another summation order) into 1e-5 of weight. Where
     * it is under 1e-7 the step is held to within lr of the reference's, elsewhere within
     * 1e-5. */
    double d = 0.0, near = 0.0;
    size_t eps_dominated = 0;
    for (size_t i = 0; i < mref_nparams(n); i++) {
        double x = fabs((double)w[i] - mref_params(n)[i]);
        if (fabs(mref_grads(n)[i]) < 1e-7) {
            near = fmax(near, x);
            eps_dominated++;
        } else {
            d = fmax(d, x);
        }
    }
    printf("  %s: weights within %.3g of the reference's after one update (%zu with a gradient "
           "under 1e-7: within %.3g)\n",
           net->name, d, eps_dominated, near);
    if (d > 1e-5 || near > c.run.opt.lr)
        fail_msg("%s: weights differ from the reference's by %g (%g)", net->name, d, near);
    /* the test pass on the trained weights against the reference's forward */
    mdata_split test = digits.test;
    test.n = 100;
    double acc = 0.0, racc = 0.0;
    if (mnet_test(&c, &test, w, &acc, NULL, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(mref_test(n, c.run.test_batch, &test, &racc, &e), 0);
    assert_true(acc == racc);
    free(w);
    free(r.grads);
    mref_destroy(n);
}

/* Two updates in one call: the second update's gradient against the reference's (each
 * accumulator zeroed between the updates, the new weights laid out for the plans), within
 * 1e-4 of its largest: the first update leaves the weights whose gradient was near zero up to
 * 2e-5 apart (above), which moves the second gradient by about 1e-5. */
static void second_update(const mspec *net)
{
    err e;
    err_clear(&e);
    mnet_cfg c = cfg_of(net, 2, 2);
    mref_net *n = mref_create_net(net, BATCH, &e);
    run r;
    float *w = train(&c, n, &r);
    ref_train(n, &c, &r);
    check_grads(net->name, r.grads, n, 1e-4);
    free(w);
    free(r.grads);
    mref_destroy(n);
}

static void test_wide(void **state)
{
    (void)state;
    if (!tu_slow_tests()) /* the sanitizer builds: test_wide_pipelined builds and runs the same
                           * layers (over two IPUs) and checks its gradient against the
                           * reference's */
        skip();
    against_reference(mspec_find("wide"), one_ipu);
    second_update(mspec_find("wide"));
}

static void test_tutorial_table(void **state)
{
    (void)state;
    if (!tu_slow_tests()) /* the sanitizer builds: the wide network covers the same code */
        skip();
    mspec copy = *mspec_tutorial();
    against_reference(&copy, one_ipu);
    second_update(&copy);
}

/* Sharded over two IPUs (conv1 and conv2 on IPU 0, the linear layers and the loss on IPU 1):
 * each block planned over its IPU's tiles, the activation and its gradient crossing between
 * them by Copies over the IPU-Links, the labels copied to the loss's IPU, each IPU's
 * parameters updated where they live. */
static void test_wide_sharded(void **state)
{
    (void)state;
    if (!tu_slow_tests())
        skip(); /* its crossings are gnet_cross's, which test_wide_pipelined runs there too */
    against_reference(mspec_find("wide"), (const uint32_t[]){0, 0, 1, 1});
}

/* Pipelined over the blocks' IPUs (each IPU a stage: the stash of its input, its restore and
 * the recompute before the backward, the crossings in every step's Copy): the same weights
 * and loss bit for bit as the same IPUs running the micro-batches one at a time (the plans,
 * the partial sums' order and the gradient's accumulation order are the same), for each
 * schedule; the gradient against the reference's. G = 7 micro-batches: the most that four
 * IPUs need (2N - 1). */
static void pipelined_as_sharded(const mspec *net, const uint32_t *map, const pipe_kind *kinds,
                                 size_t nk)
{
    err e;
    err_clear(&e);
    int K = mspec_blocks(net);
    mnet_cfg c = cfg_of(net, 2, 1);
    memcpy(c.stage_ipu, map, (size_t)K * sizeof *map);
    c.m.nipus = map[K - 1] + 1;
    c.run.grad_accum = 7;
    c.recompute = 1; /* as PopTorch (and the CLI) by default */
    mref_net *n = mref_create_net(net, BATCH, &e);
    run r0, r;
    float *w0 = train(&c, n, &r0);
    ref_train(n, &c, &r0);
    check_grads(net->name, r0.grads, n, 1e-5);
    for (size_t k = 0; k < nk; k++) {
        c.pipelined = 1;
        c.schedule = kinds[k];
        float *w = train(&c, n, &r);
        printf("  %s pipelined (%s) over %u IPUs: %llu cycles (one at a time %llu); stash "
               "slots of the first two %u, %u\n",
               net->name, pipe_kind_name(kinds[k]), c.m.nipus, (unsigned long long)r.end,
               (unsigned long long)r0.end, r.info.slots[0], r.info.slots[1]);
        if (r.loss != r0.loss || memcmp(w, w0, sizeof(float) * mref_nparams(n)) != 0)
            fail_msg("%s: loss %.9g (one at a time %.9g), weights %s", pipe_kind_name(kinds[k]),
                     r.loss, r0.loss,
                     memcmp(w, w0, sizeof(float) * mref_nparams(n)) ? "differ" : "equal");
        assert_int_equal(r.info.stages, c.m.nipus);
        free(w);
        free(r.grads);
    }
    free(w0);
    free(r0.grads);
    mref_destroy(n);
}

static void test_wide_pipelined(void **state)
{
    (void)state;
    static const pipe_kind all[] = {PIPE_GROUPED, PIPE_INTERLEAVED, PIPE_SEQUENTIAL};
    const mspec *wide = mspec_find("wide");
    pipelined_as_sharded(wide, (const uint32_t[]){0, 0, 1, 1}, all, tu_slow_tests() ? 3 : 1);
    if (!tu_slow_tests())
        return;
    pipelined_as_sharded(wide, (const uint32_t[]){0, 1, 2, 3}, all, 1);
    /* a table of eight blocks, two a stage over four IPUs */
    pipelined_as_sharded(mspec_find("deep"), (const uint32_t[]){0, 0, 1, 1, 2, 2, 3, 3}, all, 1);
}

static void test_threads(void **state)
{
    (void)state;
    if (!tu_slow_tests())
        skip();
    err e;
    err_clear(&e);
    const mspec *net = mspec_find("wide");
    mref_net *n = mref_create_net(net, BATCH, &e);
    run r1, r2;
    mnet_cfg c1 = cfg_of(net, 1, 1), c2 = cfg_of(net, 2, 1);
    float *w1 = train(&c1, n, &r1), *w2 = train(&c2, n, &r2);
    assert_memory_equal(w1, w2, sizeof(float) * mref_nparams(n));
    assert_true(r1.end == r2.end);
    free(r1.grads);
    free(r2.grads);
    free(w1);
    free(w2);
    mref_destroy(n);
}

static void test_refused(void **state)
{
    (void)state;
    static const mspec strided = {"strided",
                                  "a stride in training",
                                  1,
                                  28,
                                  28,
                                  3,
                                  {
                                      {MSPEC_CONV, "conv1", "layer1.conv", 1, 8, 4, 2, 1},
                                      {MSPEC_POOL_RELU, "pool1", NULL, 1, 0, 0, 0, 0},
                                      {MSPEC_LINEAR, "layer2", "layer2", 2, 10, 0, 0, 0},
                                  }};
    static const char *const want[] = {"--recompute off", "replicas", "an infeed other than fp32",
                                       "stride 2"};
    for (size_t k = 0; k < 4; k++) {
        mnet_cfg c = cfg_of(mspec_find("wide"), 1, 1);
        if (k == 0) { /* pipelined, stashing every activation */
            c.pipelined = 1;
            c.recompute = 0;
            c.stage_ipu[1] = c.stage_ipu[2] = c.stage_ipu[3] = 1;
            c.m.nipus = 2;
        } else if (k == 1) {
            c.replicas = 2;
            c.m.nipus = 2;
        } else if (k == 2) {
            c.dtype = MNET_U8;
        } else {
            c.net = &strided;
        }
        err e;
        err_clear(&e);
        float *w = calloc(300000, sizeof *w);
        mdata_split set = train_set(&c);
        assert_int_equal(mnet_train(&c, &set, w, NULL, &e), ERR_INPUT);
        if (!strstr(e.msg, want[k]))
            fail_msg("case %zu: \"%s\" does not say %s", k, e.msg, want[k]);
        free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide),         cmocka_unit_test(test_tutorial_table),
        cmocka_unit_test(test_wide_sharded), cmocka_unit_test(test_wide_pipelined),
        cmocka_unit_test(test_threads),      cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
