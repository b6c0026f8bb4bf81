/* Tests of AdamW (workloads/mnist/adamw.h) against values computed by hand from PyTorch's
 * update rule: two steps on known gradients, pure weight decay, bias correction at step 1,
 * fifty steps against a double-precision reference (tight enough that decaying after the
 * update instead of before fails), the tutorial's defaults, and rejection of bad
 * hyper-parameters. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "workloads/mnist/adamw.h"

static void test_defaults(void **state)
{
    (void)state;
    adamw_cfg c = adamw_defaults();
    assert_true(c.lr == 1e-3 && c.beta1 == 0.9 && c.beta2 == 0.999 && c.eps == 1e-8 &&
                c.weight_decay == 1e-2);
}

/* p = 1, g = 0.5 then -0.25, defaults. By hand:
 * step 1: p = 1 * (1 - 1e-5) = 0.99999; m = 0.05; v = 0.00025; m_hat = 0.5, v_hat = 0.25;
 *         p = 0.99999 - 1e-3 * 0.5 / (0.5 + 1e-8) = 0.99899000002
 * step 2: p = 0.99899000002 * (1 - 1e-5); m = 0.045 - 0.025 = 0.02;
 *         v = 0.999 * 0.00025 + 0.001 * 0.0625 = 0.00031225;
 *         p -= (1e-3 / 0.19) * 0.02 / (sqrt(0.00031225) / sqrt(0.001999) + 1e-8)
 *           = 0.99871367308707... */
static void test_two_steps_by_hand(void **state)
{
    (void)state;
    adamw o;
    err e;
    adamw_cfg c = adamw_defaults();
    assert_int_equal(adamw_init(&o, 3, &c, &e), 0);
    float p[3] = {1.0f, -2.0f, 0.0f};
    float g1[3] = {0.5f, 0.5f, 0.0f};
    adamw_step(&o, p, g1);
    assert_float_equal(p[0], 0.99899000002, 1e-7);
    assert_float_equal(o.m[0], 0.05, 1e-9);
    assert_float_equal(o.v[0], 0.00025, 1e-11);
    /* decay pulls toward zero; the Adam step moves against the gradient by about lr */
    assert_float_equal(p[1], -2.0 * (1 - 1e-5) - 1e-3 * 0.5 / (0.5 + 1e-8), 2e-7);
    /* zero gradient and zero parameter stay zero */
    assert_true(p[2] == 0.0f);
    float g2[3] = {-0.25f, -0.25f, 0.0f};
    adamw_step(&o, p, g2);
    assert_int_equal(o.step, 2);
    assert_float_equal(o.m[0], 0.02, 1e-9);
    assert_float_equal(o.v[0], 0.00031225, 1e-11);
    double want = 0.99899000002 * (1 - 1e-5) -
                  (1e-3 / 0.19) * 0.02 / (sqrt(0.00031225) / sqrt(1 - 0.999 * 0.999) + 1e-8);
    assert_float_equal(want, 0.9987136730870784, 1e-12);
    assert_float_equal(p[0], want, 1e-7);
    adamw_free(&o);
}

/* With no gradient, only the decoupled decay acts: p *= 1 - lr * wd each step. */
static void test_weight_decay_only(void **state)
{
    (void)state;
    adamw o;
    err e;
    adamw_cfg c = adamw_defaults();
    c.lr = 0.1;
    c.weight_decay = 0.5;
    assert_int_equal(adamw_init(&o, 1, &c, &e), 0);
    float p = 2.0f, g = 0.0f;
    for (int i = 0; i < 3; i++)
        adamw_step(&o, &p, &g);
    assert_float_equal(p, 2.0 * pow(0.95, 3), 1e-6);
    adamw_free(&o);
}

/* At step 1 the update is lr * g / (|g| + eps) whatever the betas: bias correction. */
static void test_bias_correction(void **state)
{
    (void)state;
    adamw o;
    err e;
    adamw_cfg c = {.lr = 0.01, .beta1 = 0.5, .beta2 = 0.75, .eps = 0, .weight_decay = 0};
    assert_int_equal(adamw_init(&o, 2, &c, &e), 0);
    float p[2] = {0.0f, 1.0f}, g[2] = {3.0f, -1e-3f};
    adamw_step(&o, p, g);
    assert_float_equal(p[0], -0.01, 1e-8);
    assert_float_equal(p[1], 1.01, 1e-7);
    adamw_free(&o);
}

/* 50 steps against PyTorch's documented AdamW (torch.optim.AdamW, decoupled weight decay):
 *   theta = theta - lr * wd * theta                 (decay first, on the old parameter)
 *   m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2
 *   theta = theta - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 * computed here in double. lr 0.02 and wd 0.2 make the decay matter: applying it after the
 * Adam step instead changes each step by lr * wd * (the step) ~ 8e-5, and the parameters below
 * end at least 9e-5 (relative) away from this reference. The fp32 code differs from it only by
 * rounding: per step the decay factor, the product, the sum (3 roundings of p) and the step's
 * own few roundings (of a step of about lr), so at most 4 x 2^-24 x max(|p|, 1) a step, or
 * 50 x 4 x 2^-24 = 1.2e-5 relative over the run (seen: under 1e-6). A 1e-8 relative change of
 * one step alone is under half an fp32 ulp, hence the magnified hyper-parameters. */
static float grad_at(int t, int i)
{
    /* a steady sign for most parameters (so the steps add up), an oscillating one for some */
    double g = i % 3 == 2 ? sin(0.9 * t + i) : (i % 2 ? -1 : 1) * (0.3 + 0.2 * sin(0.7 * t + i));
    return (float)g;
}

static void test_fifty_steps_against_double(void **state)
{
    (void)state;
    enum { N = 8, T = 50 };
    const double lr = 0.02, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.2;
    adamw o;
    err e;
    adamw_cfg c = {.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd};
    assert_int_equal(adamw_init(&o, N, &c, &e), 0);
    float p[N] = {3.0f, -2.5f, 0.75f, 10.0f, -0.125f, 1.5f, -6.0f, 0.0f};
    double rp[N], rm[N] = {0}, rv[N] = {0}, top[N];
    for (int i = 0; i < N; i++)
        top[i] = fmax(fabs(rp[i] = p[i]), 1.0);
    for (int t = 1; t <= T; t++) {
        float g[N];
        for (int i = 0; i < N; i++)
            g[i] = grad_at(t, i);
        adamw_step(&o, p, g);
        const double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
        for (int i = 0; i < N; i++) {
            rp[i] -= lr * wd * rp[i];
            rm[i] = b1 * rm[i] + (1 - b1) * g[i];
            rv[i] = b2 * rv[i] + (1 - b2) * (double)g[i] * g[i];
            rp[i] -= lr * (rm[i] / bc1) / (sqrt(rv[i] / bc2) + eps);
            top[i] = fmax(top[i], fabs(rp[i]));
        }
    }
    const double u = 0x1p-24;
    for (int i = 0; i < N; i++) {
        assert_float_equal(p[i], rp[i], T * 4 * u * top[i]);
        /* the moments: a few roundings a step, relative to their size (m: at least 0.1 of
           |g| <= 1, as an oscillating gradient's m may pass near zero) */
        assert_float_equal(o.m[i], rm[i], T * 4 * u * fmax(fabs(rm[i]), 0.1));
        assert_float_equal(o.v[i], rv[i], T * 4 * u * fabs(rv[i]));
    }
    adamw_free(&o);
}

static void test_bad_config(void **state)
{
    (void)state;
    adamw o;
    err e;
    err_clear(&e);
    adamw_cfg c = adamw_defaults();
    c.beta2 = 1.0;
    assert_int_equal(adamw_init(&o, 4, &c, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "hyper-parameters"));
    c = adamw_defaults();
    c.lr = NAN;
    assert_int_equal(adamw_init(&o, 4, &c, &e), ERR_INPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_two_steps_by_hand),
        cmocka_unit_test(test_weight_decay_only),
        cmocka_unit_test(test_bias_correction),
        cmocka_unit_test(test_fifty_steps_against_double),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests_name("mnist_adamw", tests, NULL, NULL);
}
