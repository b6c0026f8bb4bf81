/* test_mnist_gnet: the forward pass built from a layer table with the operation library
 * (workloads/mnist/gnet.h) on a simulated IPU, against the reference trainer's forward of the
 * same table (mref_forward) on the same seeded weights and inputs: the tutorial's network and
 * the wide one (convolutions with padding, pools on a planned convolution's blocks or, where
 * the blocks do not allow it, after a Copy; a linear layer after a linear layer), each over an
 * IPU of 368 tiles. The plans split input channels and
 * rows over tiles and add their partial sums in another order than the reference's loops, so
 * the logits agree within 1e-5 (relative and absolute), not bit for bit; every layer with
 * parameters is planned, and each of their compute steps takes within 10% of its plan's
 * estimate. */
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

#include "host/system.h"
#include "workloads/mnist/gnet.h"
#include "workloads/mnist/mref.h"
#include "workloads/mnist/rng.h"

enum { BATCH = 8, TILES = 368, CAP = 512 };

static void check_net(const char *name)
{
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 2};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.tiles_per_ipu = TILES;
    cfg.m.nipus = 1;
    sys *sy = sys_new(&cfg, &e);
    if (!sy)
        fail_msg("%s", e.msg);
    graph *gr = gr_new(&cfg.m, 1);
    mref_net *ref = mref_create_net(mspec_find(name), BATCH, &e);
    assert_non_null(ref);
    const mspec_net *n = mref_spec(ref);
    gnet net;
    if (gnet_build(gr, &cfg.m, n, BATCH, 0, &net, &e) != ERR_OK || gr_status(gr, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    for (int l = 0; l < n->s->nlayers; l++)
        assert_int_equal(net.layer[l].planned, n->param[l] >= 0);
    eng *g = sys_engine(sy);
    gr_exe *x = gr_compile(gr, net.prog, eng_pool(g), &e);
    if (!x || gr_load(x, g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    eng_log_syncs(g, ENG_LOG_ALL, CAP);
    mref_init(ref, 7);
    gr_write(x, g, net.params, 0, mref_params(ref), n->nparams);
    size_t in = (size_t)BATCH * n->s->c * n->s->h * n->s->w;
    float *img = malloc(sizeof(float) * in), *blk = malloc(sizeof(float) * in);
    mrng r;
    mrng_seed(&r, 11, 2);
    for (size_t i = 0; i < in; i++)
        img[i] = mrng_uniform(&r, -1.0f, 1.0f);
    op_act_block(&net.x, img, blk);
    gr_write(x, g, net.x.t, net.x.at, blk, op_act_elems(&net.x));
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    size_t nl = op_act_elems(&net.logits), nz = (size_t)BATCH * n->classes;
    float *got = malloc(sizeof(float) * nl), *z = malloc(sizeof(float) * nz);
    gr_read(x, g, net.logits.t, net.logits.at, got, nl);
    op_act_unblock(&net.logits, got, z);
    /* every compute step of every planned layer (pack, amp, ungroup, bias or reduce of four
     * layers at least) within 10% of its estimate */
    assert_true(tu_check_plans(x, g, net.plan, net.nplans, NULL) >= 3 * 4);
    const float *want = mref_forward(ref, BATCH, img);
    for (size_t i = 0; i < nz; i++)
        if (!(fabs((double)z[i] - want[i]) <= 1e-5 * (1.0 + fabs((double)want[i]))))
            fail_msg("%s: logit %zu: simulated %.9g, reference %.9g", name, i, z[i], want[i]);
    free(img), free(blk), free(got), free(z);
    mref_destroy(ref);
    gr_exe_free(x);
    gr_free(gr);
    sys_free(sy);
}

static void test_tutorial(void **state)
{
    (void)state;
    check_net("tutorial");
}

static void test_wide(void **state)
{
    (void)state;
    check_net("wide");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tutorial),
        cmocka_unit_test(test_wide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
