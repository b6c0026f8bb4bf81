/* Tests of AdamW (workloads/mnist/adamw.h) against values computed by hand from PyTorch's
 * update rule: two steps on known gradients, pure weight decay, bias correction at step 1,
 * the tutorial's defaults, and rejection of bad hyper-parameters. */
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
        cmocka_unit_test(test_defaults),          cmocka_unit_test(test_two_steps_by_hand),
        cmocka_unit_test(test_weight_decay_only), cmocka_unit_test(test_bias_correction),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests_name("mnist_adamw", tests, NULL, NULL);
}
