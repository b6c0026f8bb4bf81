/* test_mnist_spec: networks as layer tables (workloads/mnist/spec.h) and the reference trainer
 * walking them (mref).
 *
 * - the "wide" table resolves to the sizes and parameters derived by hand below (PyTorch's
 *   output size floor((h + 2 pad - k) / stride) + 1, state_dict order and counts);
 * - tables whose shapes do not follow are refused with one line naming the layer;
 * - the wide network's gradients (mref_forward_backward over its table: padded convolutions,
 *   pools over planes whose halves are odd) agree with central differences of its own
 *   forward pass: along the gradient, dL/ds = |g|;
 * - its weights save and load under their table's names, and a set of the tutorial's is
 *   refused with the names it expects. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/testutil.h"

#include "workloads/mnist/layers.h"
#include "workloads/mnist/mref.h"
#include "workloads/mnist/rng.h"
#include "workloads/mnist/spec.h"

/* wide: 28 x 28 -> conv1 k5 pad 2: (28 + 4 - 5) / 1 + 1 = 28 -> pool: 14 -> conv2 k3 pad 1:
 * (14 + 2 - 3) / 1 + 1 = 14 -> pool: 7 -> 32 x 7 x 7 = 1568 -> 128 -> 10 */
static void test_wide_resolves(void **state)
{
    (void)state;
    static const mspec_dims out[7] = {{16, 28, 28}, {16, 14, 14}, {32, 14, 14}, {32, 7, 7},
                                      {128, 1, 1},  {128, 1, 1},  {10, 1, 1}};
    static const struct {
        const char *name;
        size_t offset, count;
        int fan_in;
    } t[8] = {
        {"layer1.conv.weight", 0, 400, 25},     {"layer1.conv.bias", 400, 16, 25},
        {"layer2.conv.weight", 416, 4608, 144}, {"layer2.conv.bias", 5024, 32, 144},
        {"layer3.weight", 5056, 200704, 1568},  {"layer3.bias", 205760, 128, 1568},
        {"layer4.weight", 205888, 1280, 128},   {"layer4.bias", 207168, 10, 128},
    };
    mspec_net n;
    err e;
    err_clear(&e);
    const mspec *s = mspec_find("wide");
    assert_non_null(s);
    assert_int_equal(mspec_resolve(s, &n, &e), ERR_OK);
    for (int l = 0; l < 7; l++) {
        assert_int_equal(n.out[l].c, out[l].c);
        assert_int_equal(n.out[l].h, out[l].h);
        assert_int_equal(n.out[l].w, out[l].w);
    }
    assert_int_equal(n.ntensors, 8);
    for (int k = 0; k < 8; k++) {
        assert_string_equal(n.t[k].name, t[k].name);
        assert_int_equal(n.t[k].offset, t[k].offset);
        assert_int_equal(n.t[k].count, t[k].count);
        assert_int_equal(n.t[k].fan_in, t[k].fan_in);
    }
    assert_int_equal(n.nparams, 207178);
    assert_int_equal(n.classes, 10);
    assert_int_equal(n.param[2], 2); /* conv2's weight is tensor 2 */
    assert_int_equal(n.param[3], -1);
    assert_ptr_equal(mspec_find("tutorial"), mspec_tutorial());
    assert_null(mspec_find("none"));
}

/* deep: 28 x 28 -> conv1 k3 pad 1: (28 + 2 - 3) / 1 + 1 = 28 -> pool: 14 -> conv2 k3 pad 1:
 * 14 -> pool: 7 -> 16 x 7 x 7 = 784 -> 256 -> 256 -> 256 -> 128 -> 128 -> 10, in eight
 * blocks. Parameters: 8 x 9 + 8 = 80; 16 x 8 x 9 + 16 = 1,168; 784 x 256 + 256 = 200,960;
 * 256 x 256 + 256 = 65,792 twice; 256 x 128 + 128 = 32,896; 128 x 128 + 128 = 16,512;
 * 128 x 10 + 10 = 1,290: 384,490 in all; layer8's weight starts after the others (the
 * sum of those before it: 80 + 1,168 + 200,960 + 2 x 65,792 + 32,896 + 16,512 = 383,200). */
static void test_deep_resolves(void **state)
{
    (void)state;
    mspec_net n;
    err e;
    err_clear(&e);
    const mspec *s = mspec_find("deep");
    assert_non_null(s);
    assert_int_equal(mspec_resolve(s, &n, &e), ERR_OK);
    assert_int_equal(mspec_blocks(s), 8);
    assert_int_equal(mspec_blocks(mspec_tutorial()), 4);
    assert_int_equal(n.out[3].c * n.out[3].h * n.out[3].w, 784);
    assert_int_equal(n.ntensors, 16);
    assert_int_equal(n.nparams, 384490);
    assert_string_equal(n.t[14].name, "layer8.weight");
    assert_int_equal(n.t[14].offset, 383200);
    assert_int_equal(n.t[14].fan_in, 128);
    assert_int_equal(n.classes, 10);
}

static void test_bad_tables(void **state)
{
    (void)state;
    static const struct {
        mspec s;
        const char *msg;
    } bad[] = {
        {{"odd",
          "",
          1,
          7,
          7,
          2,
          {{MSPEC_CONV, "c", "c", 1, 2, 3, 1, 0}, {MSPEC_POOL_RELU, "p", NULL, 1, 0, 0, 0, 0}}},
         "network odd: layer p: a 2 x 2 pool over 5 x 5 planes"},
        {{"big",
          "",
          1,
          4,
          4,
          2,
          {{MSPEC_CONV, "c", "c", 1, 2, 7, 1, 1}, {MSPEC_LINEAR, "l", "l", 1, 2, 0, 0, 0}}},
         "network big: layer c: a 7 x 7 kernel over 4 x 4 padded by 1"},
        {{"end", "", 1, 4, 4, 1, {{MSPEC_CONV, "c", "c", 1, 2, 3, 1, 0}}},
         "network end: ends in c, not a linear layer (the loss's logits)"},
        {{"relu",
          "",
          1,
          4,
          4,
          2,
          {{MSPEC_RELU, "r", NULL, 1, 0, 0, 0, 0}, {MSPEC_LINEAR, "l", "l", 1, 2, 0, 0, 0}}},
         "network relu: layer r: a ReLU first (it works in place on the input)"},
        {{"none", "", 1, 4, 4, 0, {{0}}}, "network none: 0 layers (1 to 16)"},
        {{"skip",
          "",
          1,
          4,
          4,
          2,
          {{MSPEC_LINEAR, "a", "a", 1, 2, 0, 0, 0}, {MSPEC_LINEAR, "b", "b", 3, 2, 0, 0, 0}}},
         "network skip: layer b: block 3: the blocks go 1, 2, ... in layer order, 8 at most"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        mspec_net n;
        err e;
        err_clear(&e);
        assert_int_equal(mspec_resolve(&bad[k].s, &n, &e), ERR_INPUT);
        assert_string_equal(e.msg, bad[k].msg);
    }
}

/* The mean cross-entropy of the batch under the network's current parameters (its forward). */
static double loss_of(mref_net *n, int batch, const float *x, const int *labels)
{
    const float *z = mref_forward(n, batch, x);
    return mlayer_xent(batch, mref_spec(n)->classes, z, labels, NULL, NULL);
}

static void test_wide_gradients(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    const int batch = 3;
    mref_net *n = mref_create_net(mspec_find("wide"), batch, &e);
    assert_non_null(n);
    mref_init(n, 5);
    mrng r;
    mrng_seed(&r, 17, 3);
    float *x = malloc(sizeof(float) * batch * 784);
    for (int i = 0; i < batch * 784; i++)
        x[i] = mrng_uniform(&r, -1.0f, 1.0f);
    int labels[3] = {3, 7, 0};
    mref_zero_grads(n);
    mref_forward_backward(n, batch, x, labels, NULL);
    size_t np = mref_nparams(n);
    float *g = malloc(sizeof(float) * np), *p0 = malloc(sizeof(float) * np);
    memcpy(g, mref_grads(n), sizeof(float) * np);
    memcpy(p0, mref_params(n), sizeof(float) * np);
    float *p = mref_params(n);
    for (int t = 0; t < mref_ntensors(n); t++) {
        const mref_tensor_info *ti = mref_tensor(n, t);
        double norm = tu_norm(g + ti->offset, ti->count);
        assert_true(norm > 0);
        /* a step of 1e-3 along the unit gradient: float's rounding of the loss (about 1.4e-7
         * of 2.3) is 7e-5 of the difference quotient, and the ReLUs' and pools' kinks stay
         * out of reach (at 1e-2 conv2's weights already cross some: 4.6% off) */
        const double h = 1e-3;
        for (size_t i = 0; i < ti->count; i++)
            p[ti->offset + i] = (float)(p0[ti->offset + i] + h * g[ti->offset + i] / norm);
        double lp = loss_of(n, batch, x, labels);
        for (size_t i = 0; i < ti->count; i++)
            p[ti->offset + i] = (float)(p0[ti->offset + i] - h * g[ti->offset + i] / norm);
        double lm = loss_of(n, batch, x, labels);
        memcpy(p, p0, sizeof(float) * np);
        double fd = (lp - lm) / (2 * h);
        if (fabs(fd - norm) > 0.02 * norm + 1e-4)
            fail_msg("%s: |g| %.6g, central difference %.6g", ti->name, norm, fd);
    }
    free(x), free(g), free(p0);
    mref_destroy(n);
}

static void test_wide_weights(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    char tmpl[] = "/tmp/ipusim-spec-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char wdir[128], tdir[128];
    snprintf(wdir, sizeof wdir, "%s/wide", tmpl);
    snprintf(tdir, sizeof tdir, "%s/tut", tmpl);
    mref_net *a = mref_create_net(mspec_find("wide"), 1, &e),
             *b = mref_create_net(mspec_find("wide"), 1, &e);
    mref_net *t = mref_create(1, &e);
    mref_init(a, 3);
    mref_init(t, 3);
    assert_int_equal(mref_save(a, wdir, &e), 0);
    assert_int_equal(mref_load(b, wdir, &e), 0);
    assert_memory_equal(mref_params(a), mref_params(b), sizeof(float) * mref_nparams(a));
    assert_int_equal(mref_save(t, tdir, &e), 0);
    err_clear(&e);
    assert_int_equal(mref_load(b, tdir, &e), ERR_INPUT); /* the tutorial's shapes */
    if (!strstr(e.msg, "shape (10, 1, 5, 5), but layer1.conv.weight has shape (16, 1, 5, 5)"))
        fail_msg("%s", e.msg);
    mref_destroy(a), mref_destroy(b), mref_destroy(t);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide_resolves), cmocka_unit_test(test_deep_resolves),
        cmocka_unit_test(test_bad_tables),    cmocka_unit_test(test_wide_gradients),
        cmocka_unit_test(test_wide_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
