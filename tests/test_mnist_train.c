/* Tests of the reference trainer (workloads/mnist/mref.h) on the real mnist-digits data
 * (`make data`, which `make test` runs first): PyTorch's default initialisation bounds, a
 * short run whose loss falls, bit-identical reruns from one seed, the host-call arithmetic of
 * the progress callback, configuration errors, and the gate: 3 epochs with the
 * tutorial's defaults reach >= 90% test accuracy.
 *
 * IPUSIM_SLOW_TESTS=0 (set by .ci/run for the sanitizer builds) skips the 3-epoch run and
 * shrinks the short one. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/mnist/data.h"
#include "workloads/mnist/mref.h"

static mdata digits;

static int setup(void **state)
{
    (void)state;
    return tu_load_digits(&digits, "mnist_train");
}

static int teardown(void **state)
{
    (void)state;
    mdata_free(&digits);
    return 0;
}

typedef struct calllog {
    int n, epochs_seen;
    mref_progress p[64];
} calllog;

static void on_epoch(void *ctx, int epoch, int epochs)
{
    calllog *l = ctx;
    (void)epochs;
    l->epochs_seen = epoch;
}

static void on_call(void *ctx, const mref_progress *p)
{
    calllog *l = ctx;
    if (l->n < 64)
        l->p[l->n++] = *p;
}

static void test_init_bounds(void **state)
{
    (void)state;
    err e;
    mref_net *a = mref_create(1, &e), *b = mref_create(1, &e);
    mref_init(a, 0);
    mref_init(b, 1);
    for (int t = 0; t < MREF_NTENSORS; t++) {
        const mref_tensor_info *ti = mref_tensor(a, t);
        const float *p = mref_params(a) + ti->offset;
        const double bound = 1.0 / sqrt((double)ti->fan_in);
        double lo = 1, hi = -1, sum = 0;
        for (size_t i = 0; i < ti->count; i++) {
            lo = fmin(lo, p[i]);
            hi = fmax(hi, p[i]);
            sum += p[i];
        }
        assert_true(lo >= -bound && hi < bound);
        /* spread over the interval (only 10 biases: loose), centred */
        double cover = ti->count >= 100 ? 0.9 : 0.3;
        assert_true(hi > cover * bound && lo < -cover * bound);
        assert_true(fabs(sum / ti->count) < bound * (ti->count >= 1000 ? 0.05 : 0.6));
    }
    assert_memory_not_equal(mref_params(a), mref_params(b), sizeof(float) * MREF_NPARAMS);
    mref_destroy(a);
    mref_destroy(b);
}

/* A subset of the training set: the first n images. */
static mdata_split first(size_t n)
{
    mdata_split s = digits.train;
    s.n = n < s.n ? n : s.n;
    return s;
}

static void test_loss_falls(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mref_cfg cfg = mref_defaults();
    cfg.epochs = 1;
    cfg.batch = 10;
    cfg.grad_accum = 2;
    cfg.device_iters = 5; /* 100 images per call */
    mdata_split s = first(tu_slow_tests() ? 2000 : 800);
    mref_net *n = mref_create(cfg.batch, &e);
    mref_init(n, cfg.seed);
    calllog l = {0};
    mref_hooks h = {on_epoch, on_call, &l};
    assert_int_equal(mref_train(n, &cfg, &s, &h, &e), 0);
    assert_int_equal(l.n, (int)(s.n / 100));
    double first_loss = l.p[0].loss, last = 0;
    for (int i = l.n - 3; i < l.n; i++)
        last += l.p[i].loss / 3;
    assert_true(first_loss > 1.8); /* about ln 10 at the start */
    assert_true(last < 0.6 * first_loss);
    assert_true(l.p[l.n - 1].accuracy > 50.0);
    mref_destroy(n);
}

/* A stop flag set after host call 3 (of 5 per epoch, 10 images each): training ends before
 * call 4 with ERR_STOPPED, having made 3 calls. */
typedef struct stop_log {
    calllog l;
    volatile sig_atomic_t stop;
} stop_log;

static void stop_after_3(void *ctx, const mref_progress *p)
{
    stop_log *s = ctx;
    on_call(&s->l, p);
    if (p->call == 3)
        s->stop = 1;
}

static void test_stop_flag(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mref_cfg cfg = mref_defaults();
    cfg.epochs = 2;
    cfg.batch = 10;
    cfg.grad_accum = 1;
    cfg.device_iters = 1;
    stop_log s = {0};
    cfg.stop = &s.stop;
    mdata_split set = first(50);
    mref_net *n = mref_create(cfg.batch, &e);
    mref_init(n, cfg.seed);
    mref_hooks h = {.call_done = stop_after_3, .ctx = &s};
    assert_int_equal(mref_train(n, &cfg, &set, &h, &e), ERR_STOPPED);
    assert_string_equal(e.msg, "stopped at epoch 1 before host call 4 of 5");
    assert_int_equal(s.l.n, 3);
    mref_destroy(n);
}

static void test_deterministic(void **state)
{
    (void)state;
    err e;
    mref_cfg cfg = mref_defaults();
    cfg.epochs = 2;
    cfg.batch = 4;
    cfg.grad_accum = 3;
    cfg.device_iters = 2; /* 24 per call, 8 calls per epoch, 8 images dropped */
    cfg.seed = 77;
    mdata_split s = first(200);
    float *after[2];
    calllog l[2] = {{0}, {0}};
    for (int run = 0; run < 2; run++) {
        mref_net *n = mref_create(cfg.batch, &e);
        mref_init(n, cfg.seed);
        mref_hooks h = {on_epoch, on_call, &l[run]};
        assert_int_equal(mref_train(n, &cfg, &s, &h, &e), 0);
        after[run] = malloc(sizeof(float) * MREF_NPARAMS);
        memcpy(after[run], mref_params(n), sizeof(float) * MREF_NPARAMS);
        mref_destroy(n);
    }
    assert_memory_equal(after[0], after[1], sizeof(float) * MREF_NPARAMS);
    assert_int_equal(l[0].n, 16);
    assert_int_equal(l[0].epochs_seen, 2);
    for (int i = 0; i < 16; i++) {
        assert_true(l[0].p[i].loss == l[1].p[i].loss);
        assert_int_equal(l[0].p[i].images, 24);
        assert_int_equal(l[0].p[i].epoch, 1 + i / 8);
        assert_int_equal(l[0].p[i].call, 1 + i % 8);
        assert_int_equal(l[0].p[i].calls, 8);
    }
    free(after[0]);
    free(after[1]);
}

/* G micro-batches of B average to the gradient of one batch of G x B. */
static void test_accumulation_is_mean(void **state)
{
    (void)state;
    err e;
    mref_net *a = mref_create(8, &e);
    mref_init(a, 3);
    float lut[256];
    mdata_norm_table(lut);
    float *x = malloc(sizeof(float) * 8 * MDATA_PIXELS);
    int labels[8];
    uint32_t idx[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    mdata_gather(&digits.train, idx, 8, lut, x, labels);
    mref_zero_grads(a);
    mref_forward_backward(a, 8, x, labels, NULL);
    float *g8 = malloc(sizeof(float) * MREF_NPARAMS);
    memcpy(g8, mref_grads(a), sizeof(float) * MREF_NPARAMS);
    mref_zero_grads(a);
    mref_forward_backward(a, 4, x, labels, NULL);
    mref_forward_backward(a, 4, x + 4 * MDATA_PIXELS, labels + 4, NULL);
    const float *g = mref_grads(a);
    for (int i = 0; i < MREF_NPARAMS; i++)
        assert_float_equal(g[i] / 2, g8[i], 1e-6 + 1e-4 * fabsf(g8[i]));
    free(x);
    free(g8);
    mref_destroy(a);
}

static void test_bad_configs(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mref_net *n = mref_create(40, &e);
    mref_init(n, 0);
    mref_cfg cfg = mref_defaults();
    mdata_split s = first(3999); /* less than one host call of 4,000 */
    assert_int_equal(mref_train(n, &cfg, &s, NULL, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "fewer than one host call"));
    cfg.batch = 41;
    s = first(8000);
    assert_int_equal(mref_train(n, &cfg, &s, NULL, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "exceeds"));
    cfg = mref_defaults();
    cfg.opt.beta1 = 1.5;
    assert_int_equal(mref_train(n, &cfg, &s, NULL, &e), ERR_INPUT);
    double acc;
    assert_int_equal(mref_test(n, 41, &digits.test, &acc, &e), ERR_INPUT);
    assert_null(mref_create(0, &e));
    mref_destroy(n);
}

/* The gate: tutorial defaults, 3 epochs, mnist-digits, test accuracy >= 90%. */
static void test_tutorial_three_epochs(void **state)
{
    (void)state;
    if (!tu_slow_tests())
        skip();
    err e;
    err_clear(&e);
    mref_cfg cfg = mref_defaults();
    mref_net *n = mref_create(cfg.batch, &e);
    mref_init(n, cfg.seed);
    calllog l = {0};
    mref_hooks h = {on_epoch, on_call, &l};
    assert_int_equal(mref_train(n, &cfg, &digits.train, &h, &e), 0);
    assert_int_equal(l.n, 6); /* 8,000 / 4,000 = 2 calls per epoch */
    double acc = 0;
    assert_int_equal(mref_test(n, cfg.test_batch, &digits.test, &acc, &e), 0);
    for (int i = 0; i < l.n; i++)
        print_message("epoch %d call %d: Loss:%.4f | Accuracy:%.2f%%\n", l.p[i].epoch, l.p[i].call,
                      l.p[i].loss, l.p[i].accuracy);
    print_message("Accuracy on test set: %.2f%%\n", acc);
    assert_true(l.p[l.n - 1].loss < l.p[0].loss);
    assert_true(acc >= 90.0);
    /* the test batch size does not change the answer */
    double acc1;
    assert_int_equal(mref_test(n, 1, &digits.test, &acc1, &e), 0);
    assert_true(acc1 == acc);
    mref_destroy(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_bounds),   cmocka_unit_test(test_loss_falls),
        cmocka_unit_test(test_deterministic), cmocka_unit_test(test_accumulation_is_mean),
        cmocka_unit_test(test_bad_configs),   cmocka_unit_test(test_tutorial_three_epochs),
        cmocka_unit_test(test_stop_flag),
    };
    return cmocka_run_group_tests_name("mnist_train", tests, setup, teardown);
}
