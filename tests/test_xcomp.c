/* test_xcomp: the exchange compiler — small plans derived by hand from the fabric's timing
 * and the emitted code's costs, the emitted code keeping its plan to the cycle on the
 * simulator, larger patterns against the lower bound, random exchanges scheduled exactly as a
 * plain reference of the list-scheduling rule does, and the inputs it refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/system.h"
#include "isa/asm.h"
#include "workloads/xcomp.h"

enum { MAX_STREAMS = 16 };

typedef struct run_out {
    int rc;
    char msg[ERR_MSG_MAX];
    size_t n;                  /* streams delivered */
    eng_stream s[MAX_STREAMS]; /* the first MAX_STREAMS of them */
    uint64_t max_end;          /* when the last word of any stream landed */
} run_out;

static void on_trace(void *ctx, const eng_stream *s, int global)
{
    (void)global;
    run_out *o = ctx;
    if (o->n < MAX_STREAMS)
        o->s[o->n] = *s;
    o->n++;
    if (s->end > o->max_end)
        o->max_end = s->end;
}

/* Run `code` (from xcomp_emit, label xc) on ntiles tiles of one mk2 IPU with the fabric
 * attached: every tile calls xc at cycle 0, so xc's entry is cycle 6 (`call`), then syncs. */
static void run_exchange(const char *code, uint32_t ntiles, run_out *out)
{
    const char *head = "main:   call    xc\n"
                       "        sync    internal\n"
                       "        halt\n";
    size_t len = strlen(head) + strlen(code) + 1;
    char *src = malloc(len);
    assert_non_null(src);
    snprintf(src, len, "%s%s", head, code);
    err e;
    err_clear(&e);
    isa_prog prog;
    tu_assemble("xc.s", src, &prog);
    sys *sy = tu_system(1, ntiles, 2, 100000000, &prog);
    memset(out, 0, sizeof *out);
    xchg_set_trace(sys_fabric(sy), on_trace, out);
    out->rc = eng_run(sys_engine(sy), &e);
    snprintf(out->msg, sizeof out->msg, "%s", e.msg);
    sys_free(sy);
    isa_prog_free(&prog);
    free(src);
}

static const uint64_t ENTRY = 6; /* the cycle xc's first instruction issues */

/* The delivered stream from tile src to tile dst (there must be one). */
static const eng_stream *stream(const run_out *o, uint32_t src, uint32_t dst)
{
    for (size_t k = 0; k < o->n && k < MAX_STREAMS; k++)
        if (o->s[k].src_tile == src && o->s[k].dst_tile == dst)
            return &o->s[k];
    fail_msg("no stream from tile %u to tile %u", src, dst);
    return NULL;
}

/* Plan, emit and run: the plan is returned; the run must land its last word at exactly
 * ENTRY + plan.cycles, without a conflict. */
static xcomp_plan compile_and_run(uint32_t ntiles, xcomp_xfer *x, size_t n, run_out *o)
{
    err e;
    err_clear(&e);
    mach m;
    mach_builtin(&m, "mk2", &e);
    xcomp_plan plan;
    assert_int_equal(xcomp_schedule(&m, ntiles, x, n, &plan, &e), ERR_OK);
    char *code = xcomp_emit(ntiles, x, n, "xc", &e);
    if (!code)
        fail_msg("%s", e.msg);
    run_exchange(code, ntiles, o);
    free(code);
    if (o->rc != ERR_OK)
        fail_msg("%s", o->msg);
    size_t streams = 0;
    for (size_t k = 0; k < n; k++)
        streams += x[k].dst_count;
    assert_int_equal(o->n, streams);
    assert_int_equal(o->max_end, n ? ENTRY + plan.cycles : 0);
    return plan;
}

/* mk2 timing used below (docs/fabric.md): latency 8 within a supertile, 9 to the next one;
 * 4 bytes per cycle; a tile's first set-up at 17 (dispatch), its send 4 cycles later. */

/* Tiles 1 and 0 (listed in that order) each send 64 B to tile 2. Both could start at
 * 17 + 4 = 21; the tie goes to the lower tile: tile 0 at 21 lands [29, 45); tile 1 must
 * land from 45, so it starts at 45 - 8 = 37 and lands [45, 61). Tile 2 receives 32 cycles. */
static void test_two_senders_one_receiver(void **state)
{
    (void)state;
    xcomp_xfer x[2] = {{1, 2, 1, 64, 0x1000, 0x2000, 0}, {0, 2, 1, 64, 0x1000, 0x3000, 0}};
    run_out o;
    xcomp_plan p = compile_and_run(4, x, 2, &o);
    assert_int_equal(x[1].start, 21);
    assert_int_equal(x[0].start, 37);
    assert_int_equal(p.cycles, 61);
    assert_int_equal(p.lower_bound, 32);
    assert_int_equal(stream(&o, 0, 2)->send, ENTRY + 21);
    assert_int_equal(stream(&o, 1, 2)->send, ENTRY + 37);
}

/* One sender, two transfers that can both start at 21: the caller's order decides. 16 B to
 * tile 2 at 21 (port busy until 25), then the next set-up can issue at 22, its send at 26:
 * 16 B to tile 1 at 26, landing [34, 38). Tile 0 sends 8 cycles. */
static void test_one_sender_keeps_caller_order(void **state)
{
    (void)state;
    xcomp_xfer x[2] = {{0, 2, 1, 16, 0x1000, 0x2000, 0}, {0, 1, 1, 16, 0x1000, 0x2000, 0}};
    run_out o;
    xcomp_plan p = compile_and_run(4, x, 2, &o);
    assert_int_equal(x[0].start, 21);
    assert_int_equal(x[1].start, 26);
    assert_int_equal(p.cycles, 38);
    assert_int_equal(p.lower_bound, 8);
}

/* The same tie, later than the sender could start: tile 0 multicasts 64 B to tiles 1 and 2
 * at 21, landing [29, 45) on both. Tile 3's 16 B to tile 2 and to tile 1 can each start at
 * 45 - 8 = 37 at the earliest; the caller's order gives tile 2 the slot, landing [45, 49),
 * then tile 1 at max(38 + 4, port free at 41) = 42, landing [50, 54). */
static void test_delayed_tie_keeps_caller_order(void **state)
{
    (void)state;
    xcomp_xfer x[3] = {{0, 1, 2, 64, 0x1000, 0x2000, 0},
                       {3, 2, 1, 16, 0x1000, 0x3000, 0},
                       {3, 1, 1, 16, 0x1000, 0x3000, 0}};
    run_out o;
    xcomp_plan p = compile_and_run(4, x, 3, &o);
    assert_int_equal(x[0].start, 21);
    assert_int_equal(x[1].start, 37);
    assert_int_equal(x[2].start, 42);
    assert_int_equal(p.cycles, 54);
    assert_int_equal(p.lower_bound, 20);
}

/* A multicast of 64 B from tile 0 to tiles 4..7 (next supertile: latency 9) at 21 lands
 * [30, 46) on all four; tile 5's 32 B to tile 6 (same supertile, latency 8) can start at 21
 * but must land from 46: it starts at 38 and lands [46, 54). Tile 6 receives 24 cycles. */
static void test_multicast_then_unicast(void **state)
{
    (void)state;
    xcomp_xfer x[2] = {{0, 4, 4, 64, 0x1000, 0x2000, 0}, {5, 6, 1, 32, 0x1000, 0x3000, 0}};
    run_out o;
    xcomp_plan p = compile_and_run(8, x, 2, &o);
    assert_int_equal(x[0].start, 21);
    assert_int_equal(x[1].start, 38);
    assert_int_equal(p.cycles, 54);
    assert_int_equal(p.lower_bound, 24);
    assert_int_equal(stream(&o, 0, 7)->end, ENTRY + 46);
    assert_int_equal(stream(&o, 5, 6)->send, ENTRY + 38);
}

/* Code for hand-set starts keeps every one of them: tile 0 sends 4 B to tile 1 at 21 and
 * 4 B to tile 2 at 26..56, i.e. 0..30 cycles of padding after the first send (nops, and
 * brnzdec delay loops of 1 + 6 (n + 1) cycles from 7 on). */
static void test_emit_keeps_every_delay(void **state)
{
    (void)state;
    for (uint64_t at = 26; at <= 56; at++) {
        xcomp_xfer x[2] = {{0, 1, 1, 4, 0x1000, 0x2000, 21}, {0, 2, 1, 4, 0x1000, 0x2000, at}};
        err e;
        err_clear(&e);
        char *code = xcomp_emit(4, x, 2, "xc", &e);
        if (!code)
            fail_msg("%s", e.msg);
        run_out o;
        run_exchange(code, 4, &o);
        free(code);
        if (o.rc != ERR_OK)
            fail_msg("%s", o.msg);
        assert_int_equal(o.n, 2);
        assert_int_equal(stream(&o, 0, 1)->send, ENTRY + 21);
        uint64_t sent = stream(&o, 0, 2)->send;
        if (sent != ENTRY + at)
            fail_msg("second send planned at %llu, issued at %llu", (unsigned long long)at,
                     (unsigned long long)(sent - ENTRY));
    }
}

/* No transfers: an empty plan, and code in which every tile returns at once. */
static void test_empty_exchange(void **state)
{
    (void)state;
    run_out o;
    xcomp_plan p = compile_and_run(4, NULL, 0, &o);
    assert_int_equal(p.cycles, 0);
    assert_int_equal(p.lower_bound, 0);
}

/* All-to-all over n tiles in round-robin order, and random transfers: the plan stays within
 * 1.3x of its lower bound, and the emitted code lands its last word exactly when planned. */
static void check_pattern(xcomp_xfer *x, size_t n, uint32_t ntiles, double max_ratio)
{
    run_out o;
    xcomp_plan plan = compile_and_run(ntiles, x, n, &o);
    double ratio = (double)plan.cycles / (double)plan.lower_bound;
    if (ratio > max_ratio)
        fail_msg("schedule %llu cycles, lower bound %llu: ratio %.3f > %.2f",
                 (unsigned long long)plan.cycles, (unsigned long long)plan.lower_bound, ratio,
                 max_ratio);
    print_message("schedule %llu cycles, lower bound %llu, ratio %.3f\n",
                  (unsigned long long)plan.cycles, (unsigned long long)plan.lower_bound, ratio);
}

static void test_schedule_all_to_all(void **state)
{
    (void)state;
    const uint32_t nt = 64;
    size_t n = 0;
    xcomp_xfer *x = calloc((size_t)nt * nt, sizeof *x);
    for (uint32_t r = 1; r < nt; r++)
        for (uint32_t s = 0; s < nt; s++)
            x[n++] = (xcomp_xfer){s, (s + r) % nt, 1, 256, 0x1000, 0x8000 + 256 * s, 0};
    check_pattern(x, n, nt, 1.3);
    free(x);
}

static void test_schedule_random(void **state)
{
    (void)state;
    const uint32_t nt = 256;
    uint64_t seed = 99;
    for (int trial = 0; trial < 3; trial++) {
        size_t n = 2000;
        xcomp_xfer *x = calloc(n, sizeof *x);
        for (size_t k = 0; k < n; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t s = (uint32_t)(seed >> 33) % nt, d = (uint32_t)(seed >> 45) % nt;
            uint32_t bytes = 4 * (1 + (uint32_t)((seed >> 20) % 128));
            x[k] = (xcomp_xfer){s, d, 1, bytes, 0x1000, 0x8000, 0};
        }
        check_pattern(x, n, nt, 1.3);
        free(x);
    }
}

/* ---- the list-scheduling rule against a reference written from it ---- */

enum { REF_TILES = 24, REF_XFERS = 90, REF_BUSY = 4 * REF_XFERS };

/* The reference's receivers: busy cycles [a, b) in no order. */
typedef struct ref_rx {
    uint64_t a[REF_BUSY], b[REF_BUSY];
    size_t n;
} ref_rx;

static int ref_busy(const ref_rx *r, uint64_t from, uint64_t to)
{
    for (size_t k = 0; k < r->n; k++)
        if (r->a[k] < to && from < r->b[k])
            return 1;
    return 0;
}

/* The first cycle t >= from at which every receiver of f is free for its words, one cycle
 * at a time (slow and plain: the rule's own words). */
static uint64_t ref_earliest(const mach *m, const ref_rx *rx, const xcomp_xfer *f, uint64_t from)
{
    uint64_t w = xchg_words(m, f->bytes);
    for (uint64_t t = from;; t++) {
        int ok = 1;
        for (uint32_t d = f->dst_first; ok && d < f->dst_first + f->dst_count; d++) {
            uint64_t lat = xchg_latency(m, f->src, d);
            ok = !ref_busy(&rx[d], t + lat, t + lat + (w ? w : 1));
        }
        if (ok)
            return t;
    }
}

/* The rule of xcomp.h: the sender that can start soonest (ties: lower tile) starts its
 * pending transfer that can start soonest (ties: the caller's order); a sender's next set-up
 * goes one cycle after its send's issue, XCOMP_SETUP cycles long, and its port carries one
 * stream at a time. */
static void ref_schedule(const mach *m, const xcomp_xfer *x, size_t n, uint64_t *start)
{
    static ref_rx rx[REF_TILES];
    memset(rx, 0, sizeof rx);
    uint64_t cursor[REF_TILES], port[REF_TILES] = {0};
    int done[REF_XFERS] = {0};
    for (uint32_t t = 0; t < REF_TILES; t++)
        cursor[t] = XCOMP_PROLOGUE;
    for (size_t placed = 0; placed < n; placed++) {
        size_t best = n;
        uint64_t bt = UINT64_MAX;
        for (uint32_t s = 0; s < REF_TILES; s++) { /* tile order, then the caller's order */
            uint64_t from = cursor[s] + XCOMP_SETUP > port[s] ? cursor[s] + XCOMP_SETUP : port[s];
            for (size_t k = 0; k < n; k++) {
                if (done[k] || x[k].src != s)
                    continue;
                uint64_t t = ref_earliest(m, rx, &x[k], from);
                if (t < bt) {
                    bt = t;
                    best = k;
                }
            }
        }
        const xcomp_xfer *f = &x[best];
        uint64_t w = xchg_words(m, f->bytes);
        start[best] = bt;
        done[best] = 1;
        cursor[f->src] = bt + 1;
        port[f->src] = bt + w;
        for (uint32_t d = f->dst_first; w && d < f->dst_first + f->dst_count; d++) {
            uint64_t lat = xchg_latency(m, f->src, d);
            ref_rx *r = &rx[d];
            r->a[r->n] = bt + lat;
            r->b[r->n++] = bt + lat + w;
        }
    }
}

/* Random exchanges on 24 tiles (two supertiles and more: latencies 8 and 9), senders with up
 * to a dozen transfers each of 0 to 60 bytes, some multicast: every start is the reference's. */
static void test_schedule_is_the_rule(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mach m;
    mach_builtin(&m, "mk2", &e);
    uint64_t seed = 7;
    for (int trial = 0; trial < 20; trial++) {
        xcomp_xfer x[REF_XFERS];
        uint64_t want[REF_XFERS];
        size_t n = 30 + (size_t)trial * 3;
        for (size_t k = 0; k < n; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t src = (uint32_t)(seed >> 33) % (trial % 2 ? 8 : REF_TILES);
            uint32_t d = (uint32_t)(seed >> 45) % REF_TILES;
            uint32_t count = (seed >> 60) == 0 ? 3 : 1;
            if (d + count > REF_TILES)
                d = REF_TILES - count;
            x[k] =
                (xcomp_xfer){src, d, count, 4 * (uint32_t)((seed >> 20) % 16), 0x1000, 0x8000, 0};
        }
        ref_schedule(&m, x, n, want);
        xcomp_plan plan;
        assert_int_equal(xcomp_schedule(&m, REF_TILES, x, n, &plan, &e), ERR_OK);
        for (size_t k = 0; k < n; k++)
            if (x[k].start != want[k])
                fail_msg("trial %d transfer %zu (tile %u -> %u, %u B): start %llu, the rule's %llu",
                         trial, k, x[k].src, x[k].dst_first, x[k].bytes,
                         (unsigned long long)x[k].start, (unsigned long long)want[k]);
    }
}

/* Bad transfers are refused with their index; so is a start its tile's code cannot keep. */
static void test_refuses(void **state)
{
    (void)state;
    err e;
    mach m;
    mach_builtin(&m, "mk2", &e);
    xcomp_plan p;
    const xcomp_xfer bad[] = {
        {4, 0, 1, 16, 0x1000, 0x2000, 0},           /* source outside the tiles */
        {0, 3, 2, 16, 0x1000, 0x2000, 0},           /* destinations run past the last tile */
        {0, 1, 0, 16, 0x1000, 0x2000, 0},           /* no destination */
        {0, 0xffffffffu, 2, 16, 0x1000, 0x2000, 0}, /* first + count wraps around */
        {0, 1, 1, 6, 0x1000, 0x2000, 0},            /* bytes not a multiple of 4 */
        {0, 1, 1, 16, 0x1002, 0x2000, 0},           /* source address unaligned */
        {0, 1, 1, 16, 0x1000, 0x2001, 0},           /* destination address unaligned */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        xcomp_xfer x[2] = {{1, 2, 1, 16, 0x1000, 0x2000, 30}, bad[k]};
        err_clear(&e);
        assert_int_equal(xcomp_schedule(&m, 4, x, 2, &p, &e), ERR_INPUT);
        assert_non_null(strstr(e.msg, "exchange transfer 1:"));
        err_clear(&e);
        assert_null(xcomp_emit(4, x, 2, "xc", &e));
        assert_int_equal(e.status, ERR_INPUT);
        assert_non_null(strstr(e.msg, "exchange transfer 1:"));
    }
    /* unplanned (start 0), and a second send before its set-up can follow the first */
    xcomp_xfer early[2] = {{0, 1, 1, 4, 0x1000, 0x2000, 21}, {0, 2, 1, 4, 0x1000, 0x2000, 0}};
    for (int k = 0; k < 2; k++) {
        early[1].start = k ? 25 : 0;
        err_clear(&e);
        assert_null(xcomp_emit(4, early, 2, "xc", &e));
        assert_int_equal(e.status, ERR_INPUT);
        assert_non_null(strstr(e.msg, "exchange transfer 1: tile 0 cannot send it"));
        assert_non_null(strstr(e.msg, k ? "at 26 at the earliest" : "at 21 at the earliest"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_senders_one_receiver),
        cmocka_unit_test(test_one_sender_keeps_caller_order),
        cmocka_unit_test(test_delayed_tie_keeps_caller_order),
        cmocka_unit_test(test_multicast_then_unicast),
        cmocka_unit_test(test_emit_keeps_every_delay),
        cmocka_unit_test(test_empty_exchange),
        cmocka_unit_test(test_schedule_all_to_all),
        cmocka_unit_test(test_schedule_random),
        cmocka_unit_test(test_schedule_is_the_rule),
        cmocka_unit_test(test_refuses),
    };
    return cmocka_run_group_tests_name("xcomp", tests, NULL, NULL);
}
