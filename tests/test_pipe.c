/* test_pipe: the pipeline schedules (workloads/graph/pipe.h) against their definitions,
 * written out here independently of pipe.c:
 * - every pass of every micro-batch runs exactly once, in the step the schedule's closed form
 *   gives (grouped: forward(m) on IPU i at m + i, backward at m + 2N-2-i, the last IPU fused
 *   at m + N-1; interleaved: 2m + i and 2m + 2N-1-i; sequential: (2N-1) m + i and
 *   (2N-1) m + 2N-2-i), and nothing else runs;
 * - data can flow: IPU i's forward of m comes in a later step than IPU i-1's, its backward
 *   in a later step than IPU i+1's backward (or fused pass), and after its own forward;
 * - the step counts: G + 2N - 2, 2G + 2N - 2, (2N-1) G; inference K + N - 1 and N K;
 * - fill and flush (grouped): in the main phase every IPU runs both passes; the first step
 *   with every IPU busy is 2N-2 (PopART's fill of P - 1 = 2N-2 steps);
 * - micro-batches in flight: grouped 2N-1-2i, interleaved N-i, sequential 1, last IPU 1;
 *   the tutorial's four IPUs: 7, 5, 3, 1;
 * - the rules' messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "workloads/graph/pipe.h"

/* The closed forms of the header comment: the step of pass p of m on IPU i. */
static uint32_t want_step(pipe_kind k, int train, uint32_t N, pipe_pass p, uint32_t m, uint32_t i)
{
    if (!train)
        return k == PIPE_SEQUENTIAL ? N * m + i : m + i;
    int b = p == PIPE_BWD;
    if (k == PIPE_GROUPED)
        return b ? m + 2 * N - 2 - i : m + i;
    if (k == PIPE_INTERLEAVED)
        return b ? 2 * m + 2 * N - 1 - i : 2 * m + i;
    return (2 * N - 1) * m + (b ? 2 * N - 2 - i : i);
}

/* Which passes IPU i must run in training: fused on the last (grouped, sequential), else a
 * forward and a backward. */
static int fused_last(pipe_kind k)
{
    return k != PIPE_INTERLEAVED;
}

static void check(pipe_kind k, int train, uint32_t N, uint32_t G)
{
    pipe_cfg c = {k, N, G, train};
    uint32_t steps = pipe_steps(&c);
    uint32_t want = !train                  ? (k == PIPE_SEQUENTIAL ? N * G : G + N - 1)
                    : k == PIPE_GROUPED     ? G + 2 * N - 2
                    : k == PIPE_INTERLEAVED ? 2 * G + 2 * N - 2
                                            : (2 * N - 1) * G;
    assert_int_equal(steps, want);
    /* seen[pass][m][i]: the step it ran in, or -1 */
    int64_t seen[3][64][8];
    memset(seen, 0xff, sizeof seen);
    for (uint32_t t = 0; t < steps + 3; t++)
        for (uint32_t i = 0; i < N; i++) {
            pipe_run r[2];
            unsigned n = pipe_at(&c, t, i, r);
            assert_true(n <= (k == PIPE_GROUPED && train ? 2u : 1u));
            if (n == 2) /* grouped: the forward, then the backward */
                assert_true(r[0].pass == PIPE_FWD && r[1].pass == PIPE_BWD);
            for (unsigned q = 0; q < n; q++) {
                assert_true(t < steps);
                assert_true(r[q].mb < G);
                assert_int_equal(seen[r[q].pass][r[q].mb][i], -1); /* once */
                seen[r[q].pass][r[q].mb][i] = t;
            }
        }
    for (uint32_t m = 0; m < G; m++)
        for (uint32_t i = 0; i < N; i++) {
            int last = i == N - 1;
            if (!train) {
                assert_int_equal(seen[PIPE_FWD][m][i], want_step(k, 0, N, PIPE_FWD, m, i));
                assert_int_equal(seen[PIPE_BWD][m][i], -1);
                if (i)
                    assert_true(seen[PIPE_FWD][m][i] > seen[PIPE_FWD][m][i - 1]);
                continue;
            }
            pipe_pass f = last && fused_last(k) ? PIPE_FUSED : PIPE_FWD;
            assert_int_equal(seen[f][m][i], want_step(k, 1, N, PIPE_FWD, m, i));
            assert_int_equal(pipe_step_of(&c, f, m, i), seen[f][m][i]);
            if (i) {
                int64_t prev = seen[PIPE_FWD][m][i - 1];
                assert_true(seen[f][m][i] > prev);
            }
            if (f == PIPE_FUSED) {
                assert_int_equal(seen[PIPE_BWD][m][i], -1);
                continue;
            }
            assert_int_equal(seen[PIPE_BWD][m][i], want_step(k, 1, N, PIPE_BWD, m, i));
            assert_int_equal(pipe_step_of(&c, PIPE_BWD, m, i), seen[PIPE_BWD][m][i]);
            assert_true(seen[PIPE_BWD][m][i] > seen[PIPE_FWD][m][i]);
            if (!last) {
                int64_t up = i + 1 == N - 1 && fused_last(k) ? seen[PIPE_FUSED][m][i + 1]
                                                             : seen[PIPE_BWD][m][i + 1];
                assert_true(seen[PIPE_BWD][m][i] > up);
            }
        }
}

static void test_every_pass_once(void **state)
{
    (void)state;
    static const uint32_t NG[][2] = {{2, 3}, {2, 8},  {3, 5},  {3, 9},
                                     {4, 7}, {4, 10}, {4, 40}, {8, 17}};
    for (int k = 0; k <= PIPE_SEQUENTIAL; k++)
        for (size_t j = 0; j < sizeof NG / sizeof NG[0]; j++) {
            check((pipe_kind)k, 1, NG[j][0], NG[j][1]);
            check((pipe_kind)k, 0, NG[j][0], NG[j][1]);
        }
}

/* Grouped, N = 4, G = 10 (the tutorial): 16 steps; steps 6..9 (the main phase, G - 2N + 2 = 4
 * steps) have every IPU running both its passes; in the fill (0..5) and the flush (10..15)
 * some IPU is short of one. */
static void test_fill_main_flush(void **state)
{
    (void)state;
    pipe_cfg c = {PIPE_GROUPED, 4, 10, 1};
    assert_int_equal(pipe_steps(&c), 16);
    for (uint32_t t = 0; t < 16; t++) {
        int full = 1;
        for (uint32_t i = 0; i < 4; i++) {
            pipe_run r[2];
            unsigned n = pipe_at(&c, t, i, r);
            full &= n == (i == 3 ? 1u : 2u);
        }
        assert_int_equal(full, t >= 6 && t <= 9);
    }
}

static void test_in_flight(void **state)
{
    (void)state;
    for (uint32_t N = 2; N <= 8; N++)
        for (uint32_t G = 2 * N - 1; G <= 2 * N + 5; G++)
            for (uint32_t i = 0; i < N; i++) {
                pipe_cfg g = {PIPE_GROUPED, N, G, 1}, v = {PIPE_INTERLEAVED, N, G, 1},
                         s = {PIPE_SEQUENTIAL, N, G, 1}, inf = {PIPE_GROUPED, N, G, 0};
                assert_int_equal(pipe_in_flight(&g, i), i == N - 1 ? 1 : 2 * N - 1 - 2 * i);
                assert_int_equal(pipe_in_flight(&v, i), N - i);
                assert_int_equal(pipe_in_flight(&s, i), 1);
                assert_int_equal(pipe_in_flight(&inf, i), 1);
            }
    pipe_cfg t = {PIPE_GROUPED, 4, 10, 1};
    uint32_t tut[4] = {7, 5, 3, 1};
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(pipe_in_flight(&t, i), tut[i]);
}

static void rule(pipe_kind k, uint32_t N, uint32_t G, int train, uint32_t io, const char *want)
{
    pipe_cfg c = {k, N, G, train};
    err e;
    err_clear(&e);
    int rc = pipe_check(&c, io, &e);
    if (!want) {
        assert_int_equal(rc, ERR_OK);
        return;
    }
    assert_int_equal(rc, ERR_INPUT);
    if (!strstr(e.msg, want))
        fail_msg("'%s' lacks '%s'", e.msg, want);
    assert_null(strchr(e.msg, '\n'));
}

static void test_rules(void **state)
{
    (void)state;
    rule(PIPE_GROUPED, 4, 7, 1, 0, NULL);
    rule(PIPE_GROUPED, 4, 6, 1, 0, "gradient accumulation >= 2N-1 = 7");
    rule(PIPE_INTERLEAVED, 3, 4, 1, 0, "gradient accumulation >= 2N-1 = 5");
    rule(PIPE_SEQUENTIAL, 2, 3, 1, 0, NULL);
    rule(PIPE_GROUPED, 4, 9, 1, 32,
         "with I/O tiles over 4 IPUs needs gradient accumulation >= 2N+2 = 10");
    rule(PIPE_GROUPED, 4, 10, 1, 32, NULL);
    rule(PIPE_INTERLEAVED, 4, 9, 1, 32, NULL);
    rule(PIPE_GROUPED, 1, 10, 1, 0, "at least 2 IPUs");
    rule(PIPE_GROUPED, 4, 3, 0, 0, "device iterations >= N = 4");
    rule(PIPE_GROUPED, 4, 4, 0, 0, NULL);
    pipe_kind k;
    err e;
    err_clear(&e);
    assert_int_equal(pipe_kind_parse("interleaved", &k, &e), ERR_OK);
    assert_int_equal(k, PIPE_INTERLEAVED);
    assert_int_equal(pipe_kind_parse("grouped ", &k, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "grouped, interleaved, sequential"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_pass_once),
        cmocka_unit_test(test_fill_main_flush),
        cmocka_unit_test(test_in_flight),
        cmocka_unit_test(test_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
