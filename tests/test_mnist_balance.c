/* test_mnist_balance: pipeline placements from measured stage cycles (workloads/mnist/balance.h).
 *
 * - a placement's keys and IPUs, derived by hand;
 * - the calibration's runs (mbal_next, driven by a recorder that marks what a run would
 *   measure): every cut alone first, then runs until every candidate can be estimated, never
 *   a placement found not to fit, whose keys then come from others;
 * - an estimate from made-up measurements against its hand sum, and a cut's Copy derived from
 *   a run holding it when its run alone did not fit;
 * - the tutorial's calibration on simulated IPUs (the real mnist-digits, 400 images a run):
 *   on each calibration run the estimate's stages are the IPUs' work in its main step as
 *   measured (the steps are attributed whole), the step within 1% (the Copy is the only
 *   part summed), and the search chooses the four-stage placement, the fastest simulated;
 * - the deep table's eight blocks over at most four IPUs (IPUSIM_SLOW_TESTS=0 leaves it out):
 *   two placements no calibration run measured simulated, each within 5% of its estimate,
 *   and the same weights bit for bit from both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/testutil.h"

#include "workloads/mnist/balance.h"
#include "workloads/mnist/mref.h"
#include "workloads/mnist/spec.h"

/* 0,1,1,2 of four blocks: cuts after B1 and B3. B1 sends; B2 takes (its input crossed, its
 * output stays); B3 sends; B4 is the last stage's first block. 0,0,1,1: B1 alone, B2 sends,
 * B3 takes into the last stage, B4 in it. */
static void test_keys(void **state)
{
    (void)state;
    uint32_t ipu[4] = {0, 1, 1, 2}, back[4];
    mbal_cuts p = mbal_from_ipus(ipu, 4);
    assert_int_equal(p, 0x5);
    assert_int_equal(mbal_stages(p), 3);
    assert_int_equal(mbal_key_of(p, 4, 1), MBAL_SENDS);
    assert_int_equal(mbal_key_of(p, 4, 2), MBAL_TAKES);
    assert_int_equal(mbal_key_of(p, 4, 3), MBAL_SENDS);
    assert_int_equal(mbal_key_of(p, 4, 4), MBAL_LAST_TAKE);
    mbal_to_ipus(p, 4, back);
    assert_memory_equal(back, ipu, sizeof ipu);
    p = 0x2; /* 0,0,1,1 */
    assert_int_equal(mbal_key_of(p, 4, 1), MBAL_ALONE);
    assert_int_equal(mbal_key_of(p, 4, 2), MBAL_SENDS);
    assert_int_equal(mbal_key_of(p, 4, 3), MBAL_LAST_TAKE);
    assert_int_equal(mbal_key_of(p, 4, 4), MBAL_LAST);
    p = 0x3; /* 0,1,2,2: B2 takes and sends */
    assert_int_equal(mbal_key_of(p, 4, 2), MBAL_BOTH);
    char buf[32];
    assert_string_equal(mbal_text(0x5, 4, buf, sizeof buf), "0,1,1,2");
}

/* What a run of p would measure, as mbal_record marks it. */
static void fake_record(mbal_cal *c, mbal_cuts p)
{
    for (int b = 1; b <= c->B; b++)
        c->seen[b - 1][mbal_key_of(p, c->B, b)] = 1;
    if (mbal_stages(p) == 2) {
        c->copy_seen[__builtin_ctz(p)] = 1;
        c->copy[__builtin_ctz(p)] = 100u * (1u + (uint32_t)__builtin_ctz(p));
    }
    c->run[c->nruns++].p = p;
}

/* Drive mbal_next to the end; placements in `bad` do not fit. Returns the runs. */
static size_t calibrate(mbal_cal *c, int B, const mbal_counts *n, const mbal_cuts *bad, size_t nb)
{
    memset(c, 0, sizeof *c);
    c->B = B;
    mbal_cuts p;
    size_t k = 0;
    while (mbal_next(c, n, &p)) {
        assert_true(k++ < MBAL_MAX_RUNS);
        int unfit = 0;
        for (size_t i = 0; i < nb; i++)
            unfit |= bad[i] == p;
        if (unfit)
            mbal_unfit(c, p, "graph does not fit: made up");
        else
            fake_record(c, p);
    }
    return k;
}

/* Every candidate (an allowed stage count, not found unfit) is estimable. */
static void all_estimable(const mbal_cal *c, const mbal_counts *n, const mbal_cuts *bad, size_t nb)
{
    for (mbal_cuts p = 1; p < 1u << (c->B - 1); p++) {
        int unfit = 0;
        for (size_t i = 0; i < nb; i++)
            unfit |= bad[i] == p;
        if (!n->ok[mbal_stages(p)] || unfit)
            continue;
        mbal_est x;
        err e;
        err_clear(&e);
        if (mbal_estimate(c, p, &x, &e) != ERR_OK)
            fail_msg("placement %#x: %s", p, e.msg);
    }
}

static void test_calibration_runs(void **state)
{
    (void)state;
    mbal_counts n = {{0}};
    n.ok[2] = n.ok[4] = 1; /* an m2000's box: two or four stages */
    mbal_cal *c = xcalloc(1, sizeof *c);
    /* four blocks: the three cuts alone, then 0,1,2,3 for B2 and B3 taking and sending */
    assert_int_equal(calibrate(c, 4, &n, NULL, 0), 4);
    for (int k = 0; k < 3; k++)
        assert_int_equal(c->run[k].p, 1u << k);
    assert_int_equal(c->run[3].p, 0x7);
    all_estimable(c, &n, NULL, 0);
    /* eight blocks over two or four IPUs: 7 + 35 candidates from fewer runs */
    size_t runs = calibrate(c, 8, &n, NULL, 0);
    assert_true(runs < 7 + 35);
    all_estimable(c, &n, NULL, 0);
    /* the same where two of those runs do not fit: never tried twice, the others cover */
    mbal_cuts bad[2] = {c->run[7].p, c->run[8].p};
    size_t again = calibrate(c, 8, &n, bad, 2);
    assert_int_equal(c->nunfit, 2);
    assert_true(again >= runs);
    for (size_t k = 0; k < c->nruns; k++)
        assert_true(c->run[k].p != bad[0] && c->run[k].p != bad[1]);
    all_estimable(c, &n, bad, 2);
    /* over two, four or eight IPUs where the first and last cuts alone do not fit (as the
     * deep table's on IPUs of 184 tiles): their Copies come from runs holding one of them
     * and otherwise known cuts, so that every candidate, eight stages too, is estimable */
    mbal_cuts ends[2] = {0x1, 0x40};
    n.ok[8] = 1;
    calibrate(c, 8, &n, ends, 2);
    all_estimable(c, &n, ends, 2);
    n.ok[8] = 0;
    /* no two-stage system: nothing to measure the Copies with */
    n.ok[2] = 0;
    mbal_cuts p;
    c->nruns = 0;
    assert_int_equal(mbal_next(c, &n, &p), 0);
    free(c);
}

/* Made-up measurements of four blocks; 0,1,1,2's estimate by hand:
 * stage 1 = B1 sends 10; stage 2 = B2 takes 200 + B3 sends 300 = 500; stage 3 = B4 last-take
 * 40; the Copy = cut 1's 7 + cut 3's 9 = 16; the step 500 + 16 = 516, stage 2 the slowest. */
static void test_estimate(void **state)
{
    (void)state;
    mbal_cal *c = xcalloc(1, sizeof *c);
    c->B = 4;
    uint64_t v[4][MBAL_KEYS] = {{1, 10}, {2, 20, 200, 2000}, {3, 300, 3000, 30000, 4, 5}, {0}};
    v[3][MBAL_LAST] = 4;
    v[3][MBAL_LAST_TAKE] = 40;
    for (int b = 0; b < 4; b++)
        for (int k = 0; k < MBAL_KEYS; k++) {
            c->work[b][k] = v[b][k];
            c->seen[b][k] = 1;
        }
    c->copy[0] = 7;
    c->copy[2] = 9;
    c->copy_seen[0] = c->copy_seen[2] = 1;
    mbal_est x;
    err e;
    err_clear(&e);
    assert_int_equal(mbal_estimate(c, 0x5, &x, &e), ERR_OK);
    assert_int_equal(x.stages, 3);
    assert_int_equal(x.work[0], 10);
    assert_int_equal(x.work[1], 500);
    assert_int_equal(x.work[2], 40);
    assert_int_equal(x.copy, 16);
    assert_int_equal(x.step, 516);
    assert_int_equal(x.slowest, 1);
    assert_null(x.run);
    /* cut 2's Copy was not measured alone: 0,0,1,1 cannot be estimated ... */
    assert_int_equal(mbal_estimate(c, 0x2, &x, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "after B2"));
    /* ... until a run of 0,1,2,3 (Copy 50) gives it: 50 - 7 - 9 = 34; stage 2 of 0,0,1,1 is
     * B3 last-take 5 + B4 last 4 = 9, stage 1 B1 alone 1 + B2 sends 20 = 21: 21 + 34 = 55 */
    c->run[0].p = 0x7;
    c->run[0].m.copy = 50;
    c->run[0].m.main = 5; /* made up: faster than any estimate (0,1,1,1: 17) */
    c->nruns = 1;
    assert_int_equal(mbal_estimate(c, 0x2, &x, &e), ERR_OK);
    assert_int_equal(x.copy, 34);
    assert_int_equal(x.step, 55);
    /* the search: every two- and four-stage placement, fastest first; the run by what it
     * simulated (5), not by its estimate (B3 takes, sends 30000 + the Copy 7 + 34 + 9) */
    mbal_counts n = {{0}};
    n.ok[2] = n.ok[4] = 1;
    mbal_est all[MBAL_MAX_RUNS];
    size_t k = mbal_search(c, &n, all);
    assert_int_equal(k, 4); /* 0,1,1,1; 0,0,1,1; 0,0,0,1; 0,1,2,3 */
    assert_int_equal(all[0].p, 0x7);
    assert_int_equal(all[0].step, 30050);
    assert_int_equal(mbal_expected(&all[0]), 5);
    for (size_t i = 1; i < k; i++)
        assert_true(mbal_expected(&all[i - 1]) <= mbal_expected(&all[i]));
    free(c);
}

/* ---- the tutorial on simulated IPUs ---- */

static mdata digits;

static int setup(void **state)
{
    (void)state;
    return tu_load_digits(&digits, "test_mnist_balance");
}

static int teardown(void **state)
{
    (void)state;
    mdata_free(&digits);
    return 0;
}

static void test_tutorial(void **state)
{
    (void)state;
    err *e = xcalloc(1, sizeof *e);
    mnet_cfg c;
    assert_int_equal(mnet_defaults(&c, e), ERR_OK);
    c.threads = 2;
    mref_net *net = mref_create_net(mspec_tutorial(), 1, e);
    assert_non_null(net);
    mref_init(net, 0);
    mbal_counts n = mbal_counts_of(&c.m, 4, 4);
    assert_true(n.ok[2] && !n.ok[3] && n.ok[4]); /* an M2000 box: 1, 2 or 4 IPUs */
    mbal_cal *cal = xcalloc(1, sizeof *cal);
    if (mbal_calibrate(&c, &n, &digits.train, mref_params(net), cal, NULL, NULL, e))
        fail_msg("%s", e->msg);
    assert_int_equal(cal->nruns, 4);
    for (size_t k = 0; k < cal->nruns; k++) {
        const mbal_run *r = &cal->run[k];
        mbal_est x;
        assert_int_equal(mbal_estimate(cal, r->p, &x, e), ERR_OK);
        assert_ptr_equal(x.run, r);
        for (uint32_t s = 0; s < x.stages; s++)
            assert_int_equal(x.work[s], r->m.work[s]);
        double rel = ((double)x.step - (double)r->m.main) / (double)r->m.main;
        assert_true(rel > -0.01 && rel < 0.01);
    }
    mbal_est all[MBAL_MAX_RUNS];
    assert_int_equal(mbal_search(cal, &n, all), 4);
    assert_int_equal(all[0].p, 0x7);
    uint64_t fastest = cal->run[0].m.main;
    for (size_t k = 1; k < cal->nruns; k++)
        fastest = cal->run[k].m.main < fastest ? cal->run[k].m.main : fastest;
    assert_non_null(all[0].run);
    assert_int_equal(all[0].run->m.main, fastest);
    free(cal);
    mref_destroy(net);
    free(e);
}

/* ---- the deep table: eight blocks, placements no calibration run measured ---- */

typedef struct place_run {
    mnet_pipe_steps m;
    int rc;
} place_run;

static void measured(void *ctx, int test, eng *g, const gr_exe *x, const mnet_pipe_info *p)
{
    place_run *r = ctx;
    if (!test)
        r->rc = mnet_pipe_measure(g, x, p, 1, &r->m);
}

/* Train placement p of c's network one update from params; its main step into *m, the weights
 * out (malloc'd). */
static float *run_placement(const mnet_cfg *c0, mbal_cuts p, const float *params, size_t np,
                            mnet_pipe_steps *m)
{
    err e;
    err_clear(&e);
    mnet_cfg c = mbal_run_cfg(c0, p); /* as a calibration run */
    mdata_split set = digits.train;
    set.n = (size_t)c.run.batch * (size_t)c.run.grad_accum;
    float *w = xmalloc(np * sizeof *w);
    memcpy(w, params, np * sizeof *w);
    place_run r = {.rc = ERR_INPUT};
    mnet_hooks h = {.finished = measured, .ctx = &r};
    if (mnet_train(&c, &set, w, &h, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(r.rc, ERR_OK);
    assert_true(r.m.main_step > 0);
    *m = r.m;
    return w;
}

/* The deep table (eight blocks) on IPUs of 184 tiles, micro-batches of 8, G = 7, over at
 * most four IPUs (two or four stages: 7 + 35 candidates; 13 calibration runs, one of which
 * does not fit, and the fastest estimate's). After the calibration every candidate that may
 * fit has an estimate; three placements no calibration run measured are simulated: the
 * search's fastest such, the hand placement (two blocks a stage) and the fastest that cuts
 * between conv1 and conv2. Each one's main step is within 5% of its estimate (the model's
 * test: the keys capture what a block's steps depend on; +5.6% for the hand placement when a
 * stage's unnamed steps go to its last block instead of its first, whose input they depend
 * on), and all three train to the same weights bit for bit (issue's item: the placement does
 * not change the training; conv2's input, landed a sample a tile, is copied into pool1's
 * layout before conv2, so conv2's plans and the order of their sums are those of the
 * placements that keep conv1 and conv2 together: docs/pipelining.md, "Balancing"). */
static void test_deep(void **state)
{
    (void)state;
    if (!tu_slow_tests())
        skip(); /* minutes under the sanitizers */
    err *e = xcalloc(1, sizeof *e);
    mnet_cfg c;
    assert_int_equal(mnet_defaults(&c, e), ERR_OK);
    c.net = mspec_find("deep");
    c.mapping = MNET_MAP_PLANNED;
    c.m.tiles_per_ipu = 184;
    c.run.batch = 8;
    c.run.grad_accum = 7;
    c.run.epochs = 1;
    c.run.device_iters = 1;
    c.threads = 2;
    c.recompute = 1;
    mref_net *net = mref_create_net(c.net, 8, e);
    assert_non_null(net);
    mref_init(net, 0);
    size_t np = mref_nparams(net);
    mbal_counts n = mbal_counts_of(&c.m, 8, 4);
    mbal_cal *cal = xcalloc(1, sizeof *cal);
    if (mbal_calibrate(&c, &n, &digits.train, mref_params(net), cal, NULL, NULL, e))
        fail_msg("%s", e->msg);
    mbal_est *all = xcalloc(MBAL_MAX_RUNS, sizeof *all);
    size_t k = mbal_search(cal, &n, all);
    assert_int_equal(k + cal->nunfit, 7 + 35);
    assert_true(cal->nruns < k);
    printf("  deep: %zu calibration runs (%zu did not fit), %zu placements estimated\n",
           cal->nruns + cal->nunfit, cal->nunfit, k);
    const mbal_est *pick[3] = {NULL, NULL, NULL};
    mbal_cuts hand = 0x2 | 0x8 | 0x20; /* 0,0,1,1,2,2,3,3 */
    for (size_t i = 0; i < k; i++) {
        if (all[i].run) /* measured */
            continue;
        if (!pick[0])
            pick[0] = &all[i];
        else if (all[i].p == hand)
            pick[1] = &all[i];
        else if (!pick[2] && (all[i].p & 1u)) /* conv1 | conv2 */
            pick[2] = &all[i];
    }
    assert_true(!(pick[0]->p & 1u) && pick[2] != pick[0]); /* so three distinct runs */
    float *w[3];
    for (int q = 0; q < 3; q++) {
        assert_non_null(pick[q]);
        mnet_pipe_steps m;
        char on[64];
        w[q] = run_placement(&c, pick[q]->p, mref_params(net), np, &m);
        double rel = ((double)pick[q]->step - (double)m.main) / (double)m.main;
        printf("  deep %s: main step estimated %llu, simulated %llu (%+.1f%%)\n",
               mbal_text(pick[q]->p, 8, on, sizeof on), (unsigned long long)pick[q]->step,
               (unsigned long long)m.main, 100.0 * rel);
        assert_true(rel > -0.05 && rel < 0.05); /* the issue asks 10%; the model does better */
    }
    assert_memory_equal(w[0], w[1], np * sizeof *w[0]);
    assert_memory_equal(w[0], w[2], np * sizeof *w[0]);
    for (int q = 0; q < 3; q++)
        free(w[q]);
    free(all);
    free(cal);
    mref_destroy(net);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),     cmocka_unit_test(test_calibration_runs),
        cmocka_unit_test(test_estimate), cmocka_unit_test(test_tutorial),
        cmocka_unit_test(test_deep),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
