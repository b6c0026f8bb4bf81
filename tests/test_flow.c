/* Tests of the max-min fluid solver (fabric/flow): exact end times in ps against hand
 * arithmetic for a flow alone (and its rounding up to a whole ps), two flows sharing a
 * resource then one finishing, a capped flow leaving capacity to the other, three resources
 * with a bottleneck, the rate unit (a three-way split exact, a 17-way split rounded, equal),
 * a time-varying resource and the book hook, and zero-byte flows. 1 GB/s = 10^9 B/s,
 * 1 us = 10^6 ps. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fabric/flow.h"

#define GBPS 1000000000ull

static flow_res res_of(uint64_t cap)
{
    return (flow_res){.cap = cap};
}

/* Alone: B bytes at C B/s take B x 10^12 / C ps, the last ps rounded up. */
static void test_alone(void **state)
{
    (void)state;
    const uint32_t r0[] = {0};
    flow_res r[1] = {res_of(10 * GBPS)};
    /* 1000 B at 10 GB/s: 10^15 / 10^10 = 100000 ps, from 5 */
    flow_xfer f = {.start = 5, .bytes = 1000, .res = r0, .nres = 1};
    flow_solve(&f, 1, r, 1);
    assert_int_equal(f.end, 5 + 100000);
    /* 1 B at 3 GB/s: 10^12 / (3 x 10^9) = 333.3 ps, so the first whole ps after is 334 */
    r[0] = res_of(3 * GBPS);
    f = (flow_xfer){.start = 0, .bytes = 1, .res = r0, .nres = 1};
    flow_solve(&f, 1, r, 1);
    assert_int_equal(f.end, 334);
    /* no resource, only a cap: 2000 B at 1 GB/s = 2 us */
    f = (flow_xfer){.start = 7, .bytes = 2000, .cap = GBPS};
    flow_solve(&f, 1, r, 1);
    assert_int_equal(f.end, 7 + 2000000);
}

/* Two flows on one 10 GB/s resource from 0: 1 MB and 3 MB. Both at 5 GB/s until the small one
 * has drained: 10^6 B / (5 x 10^9 B/s) = 200 us. The big one has 2 MB left, alone at 10 GB/s:
 * 200 us more, so it ends at 400 us (= 4 MB / 10 GB/s: the resource never idles). */
static void test_share_then_alone(void **state)
{
    (void)state;
    const uint32_t r0[] = {0};
    flow_res r[1] = {res_of(10 * GBPS)};
    flow_xfer f[2] = {{.bytes = 1000000, .res = r0, .nres = 1},
                      {.bytes = 3000000, .res = r0, .nres = 1}};
    flow_solve(f, 2, r, 1);
    assert_int_equal(f[0].end, 200 * 1000000ull);
    assert_int_equal(f[1].end, 400 * 1000000ull);
    /* the big one first joins at 100 us: the small one has 1 MB - 100 us x 10 GB/s = 0 left,
     * it ends right then; the big one runs alone: 100 + 300 = 400 us */
    f[0] = (flow_xfer){.bytes = 1000000, .res = r0, .nres = 1};
    f[1] = (flow_xfer){.start = 100 * 1000000ull, .bytes = 3000000, .res = r0, .nres = 1};
    flow_solve(f, 2, r, 1);
    assert_int_equal(f[0].end, 100 * 1000000ull);
    assert_int_equal(f[1].end, 400 * 1000000ull);
}

/* A capped flow takes its cap and leaves the rest: on 10 GB/s, A capped at 2 GB/s with 2 MB,
 * B uncapped with 4 MB. Max-min: A = 2, B = 8 GB/s. B ends at 4 MB / 8 GB/s = 500 us; A keeps
 * its cap alone and ends at 2 MB / 2 GB/s = 1000 us. */
static void test_cap(void **state)
{
    (void)state;
    const uint32_t r0[] = {0};
    flow_res r[1] = {res_of(10 * GBPS)};
    flow_xfer f[2] = {{.bytes = 2000000, .cap = 2 * GBPS, .res = r0, .nres = 1},
                      {.bytes = 4000000, .res = r0, .nres = 1}};
    flow_solve(f, 2, r, 1);
    assert_int_equal(f[1].end, 500 * 1000000ull);
    assert_int_equal(f[0].end, 1000 * 1000000ull);
}

/* Three resources: R0 1 GB/s, R1 and R2 10 GB/s. A crosses R0 and R1, B crosses R1 and R2, C
 * crosses R2. Filling: the first step is 1 GB/s (R0's share; R1 and R2 offer 5): R0 saturates,
 * A = 1. R1 has 9 left for B alone, R2 has 8 for B and C: the next step is 4, so B = C = 5.
 * A (1 MB at 1 GB/s) and B (5 MB at 5 GB/s) end at 1000 us; C has drained 5 of its 10 MB by
 * then, then has R2 alone: 5 MB / 10 GB/s = 500 us more, 1500 us. */
static void test_bottleneck(void **state)
{
    (void)state;
    const uint32_t ra[] = {0, 1}, rb[] = {1, 2}, rc[] = {2};
    flow_res r[3] = {res_of(GBPS), res_of(10 * GBPS), res_of(10 * GBPS)};
    flow_xfer f[3] = {{.bytes = 1000000, .res = ra, .nres = 2},
                      {.bytes = 5000000, .res = rb, .nres = 2},
                      {.bytes = 10000000, .res = rc, .nres = 1}};
    flow_solve(f, 3, r, 3);
    assert_int_equal(f[0].end, 1000 * 1000000ull);
    assert_int_equal(f[1].end, 1000 * 1000000ull);
    assert_int_equal(f[2].end, 1500 * 1000000ull);
    /* the order of the flows does not matter: C, A, B */
    flow_xfer g[3] = {f[2], f[0], f[1]};
    flow_solve(g, 3, r, 3);
    assert_int_equal(g[1].end, 1000 * 1000000ull);
    assert_int_equal(g[2].end, 1000 * 1000000ull);
    assert_int_equal(g[0].end, 1500 * 1000000ull);
}

/* Rate units of 1/720720 B/s: 10^10 B/s three ways is exact (720720 = 3 x 240240), so three
 * flows of 1 MB each end at 3 MB / 10 GB/s = 300 us = 300000000 ps, together. 17 ways is not:
 * 10^10 x 720720 / 17 = 423952941176470 + 10/17 units; each flow gets the floor (10/17 of a
 * unit each stays unused). 17 flows of 1 MB then take 10^18 x 720720 / 423952941176470 =
 * 1700000000.0000024 ps, so they end together at 1700000001 (the exact share would give
 * 1700000000: the rate rounding, stated in flow.h, costs that ps). */
static void test_whole_rates(void **state)
{
    (void)state;
    const uint32_t r0[] = {0};
    flow_res r[1] = {res_of(10 * GBPS)};
    flow_xfer f[17];
    for (int i = 0; i < 17; i++)
        f[i] = (flow_xfer){.bytes = 1000000, .res = r0, .nres = 1};
    flow_solve(f, 3, r, 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(f[i].end, 300000000);
    flow_solve(f, 17, r, 1);
    for (int i = 0; i < 17; i++)
        assert_int_equal(f[i].end, 1700000001);
}

/* A time-varying resource: nothing left before 1000 ps, then 10 GB/s. */
typedef struct stub {
    sim_time a[4], b[4];
    uint64_t rate[4];
    int nbook;
} stub;

static uint64_t stub_left(void *ctx, sim_time t, sim_time *next)
{
    (void)ctx;
    *next = t < 1000 ? 1000 : SIM_FOREVER;
    return t < 1000 ? 0 : 10 * GBPS;
}

static void stub_book(void *ctx, sim_time a, sim_time b, uint64_t rate)
{
    stub *s = ctx;
    assert_true(s->nbook < 4);
    s->a[s->nbook] = a;
    s->b[s->nbook] = b;
    s->rate[s->nbook++] = rate;
}

/* 1000 B from 0 waits until 1000 ps, then drains in 10^15 / 10^10 = 100000 ps: 101000. Two
 * such flows share the 10 GB/s: 200000 ps after 1000. The book hook sees one interval with the
 * total rate, and nothing for the wait. */
static void test_varying(void **state)
{
    (void)state;
    const uint32_t r0[] = {0};
    stub s = {0};
    flow_res r[1] = {{.left = stub_left, .book = stub_book, .ctx = &s}};
    flow_xfer f[2] = {{.bytes = 1000, .res = r0, .nres = 1}};
    flow_solve(f, 1, r, 1);
    assert_int_equal(f[0].end, 101000);
    assert_int_equal(s.nbook, 1);
    assert_int_equal(s.a[0], 1000);
    assert_int_equal(s.b[0], 101000);
    assert_int_equal(s.rate[0], 10 * GBPS);
    s = (stub){0};
    f[0] = f[1] = (flow_xfer){.bytes = 1000, .res = r0, .nres = 1};
    flow_solve(f, 2, r, 1);
    assert_int_equal(f[0].end, 201000);
    assert_int_equal(f[1].end, 201000);
    assert_int_equal(s.nbook, 1);
    assert_int_equal(s.rate[0], 10 * GBPS);
}

/* Zero bytes end at their start and book nothing; an empty solve is fine. */
static void test_zero(void **state)
{
    (void)state;
    const uint32_t r0[] = {0};
    stub s = {0};
    flow_res r[1] = {{.cap = GBPS, .book = stub_book, .ctx = &s}};
    flow_xfer f = {.start = 42, .bytes = 0, .res = r0, .nres = 1};
    flow_solve(&f, 1, r, 1);
    assert_int_equal(f.end, 42);
    assert_int_equal(s.nbook, 0);
    flow_solve(NULL, 0, r, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alone),       cmocka_unit_test(test_share_then_alone),
        cmocka_unit_test(test_cap),         cmocka_unit_test(test_bottleneck),
        cmocka_unit_test(test_whole_rates), cmocka_unit_test(test_varying),
        cmocka_unit_test(test_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
