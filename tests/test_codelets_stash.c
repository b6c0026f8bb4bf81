/* test_codelets_stash: the stash and restore codelet of pipelined training
 * (workloads/codelets/stash_ring.s) run through the engine on one Mk2 tile, against the C
 * equivalent in its header (ring_model below), on seeded random data.
 *
 * Harness (as tests/test_codelets_loss.c's): a supervisor `main` that starts the codelet on one
 * worker per state (`li r1, STATE; run stash_ring, r1`), joins and halts, assembled with the
 * codelet's source; the test writes the states and a region of tile memory before the run and
 * reads the region back after it. The region holds the cursors, the working buffer and the
 * ring, with guard words everywhere else (between the cursors, around the working buffer,
 * before, between and after the slots). Each run is a fresh system loaded with the region as
 * the previous run left it (in the C model's copy), so the host can write new activations
 * between runs as it would between micro-batches.
 *
 * Cycles of one run, written out here from the codelet's instruction sequence and docs/isa.md's
 * worker slots (every instruction 1 slot), not taken from the codelet's header: S = 15 + 2n
 * worker slots for n = bytes / 8:
 *   ld64 (depth, cursor), ld32 (s), ld64 (bytes, stride), mul, ld64 (work, ring), add,
 *   ld32 (dir), shri                                                      = 8
 *   addi, cmpne, mul, st32 (the cursor)                                   = 4
 *   brnz (dir), rpt                                                       = 2
 *   n x (ld64pi, st64pi)                                                  = 2n
 *   exit                                                                  = 1
 * One worker (docs/timing.md): li at 0, run at 1, the worker's first issue at 7, its exit at
 * 7 + 6 (S - 1) = 6 S + 1; join goes on at the exit + 1, halt finishes one cycle later: the
 * tile halts at 6 S + 3 = 6 (15 + 2n) + 3 = 93 + 12n.
 * Six workers (six `li; run` pairs, then join and halt): the supervisor issues only in slots
 * no worker holds, li costs 1 cycle and run 6, and run at c starts a worker in slot c mod 6 at
 * c + 6. li 0, run 1 (slot 1, first issue 7); li 8 (slot 2), run 9 (slot 3, 15); li 16, run 17
 * (slot 5, 23); li 24 (slot 0), run 26 (25 is slot 1's; slot 2, 32); li 34 (32, 33 held), run 36
 * (35 held; slot 0, 42); li 46 (42 to 45 held), run 52 (47 to 51 held; slot 4, 58). So worker k
 * first issues at F = {7, 15, 23, 32, 42, 58}[k] and exits at F + 6 (S_k - 1); join (once a
 * slot frees, long before the last exit) goes on at the last exit + 1 and halt finishes one
 * cycle later: the tile halts at max over k of (F_k + 6 S_k) - 4 (S_k >= 15, so every worker
 * is still running when the last one starts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/system.h"
#include "hw/engine.h"
#include "hw/tile.h"
#include "isa/asm.h"
#include "tests/testutil.h"
#include "workloads/codelets.h"

enum { STATE = 0x1000, STATE_BYTES = 32, DATA = 0x1400, MAXW = 6 };

#define GUARD 0xa5a5a5a5u

/* xorshift64*, fixed seeds */
static uint64_t rng_s;
static uint32_t rnd(void)
{
    rng_s ^= rng_s >> 12;
    rng_s ^= rng_s << 25;
    rng_s ^= rng_s >> 27;
    return (uint32_t)((rng_s * 0x2545f4914f6cdd1dull) >> 32);
}

/* Worker slots of one run of n 8-byte pairs (the derivation above). */
static uint64_t ring_slots(uint64_t n)
{
    return 15 + 2 * n;
}

/* ---- the harness ---- */

typedef tu_harness harness;

/* stash_ring started once per state address, then join and halt. */
static void h_new(harness *h, const uint32_t *states, int n)
{
    assert_true(n <= MAXW);
    char main_text[64 * MAXW + 64];
    size_t k = 0;
    for (int i = 0; i < n; i++)
        k +=
            (size_t)snprintf(main_text + k, sizeof main_text - k,
                             "        li      r1, %u\n        run     stash_ring, r1\n", states[i]);
    snprintf(main_text + k, sizeof main_text - k, "        join\n        halt\n");
    const char *names[1] = {"stash_ring"};
    tu_h_prog(h, main_text, names, 1);
}

/* ---- the state, the C model, the layout ---- */

typedef struct vstate {
    uint32_t work, ring, bytes, stride, depth, cursor, dir;
} vstate;

static void put_state(uint8_t *mem, uint32_t at, const vstate *v)
{
    const uint32_t w[7] = {v->work, v->ring, v->bytes, v->stride, v->depth, v->cursor, v->dir};
    for (uint32_t i = 0; i < 7; i++)
        tu_put32(mem, at + 4 * i, w[i]);
}

/* The header's C equivalent, on img: the tile's memory from DATA on. */
static void ring_model(uint8_t *img, const vstate *v)
{
    const uint32_t s = tu_get32(img, v->cursor - DATA);
    uint8_t *slot = img + (v->ring - DATA) + s * v->stride;
    uint8_t *work = img + (v->work - DATA);
    if (v->dir)
        memcpy(work, slot, v->bytes);
    else
        memcpy(slot, work, v->bytes);
    tu_put32(img, v->cursor - DATA, s + 1 == v->depth ? 0 : s + 1);
}

/* The region [DATA, end): cursors (one word each), the working buffer [work, work + bytes),
 * D slots of `bytes` at ring + s x stride; every other word is a guard. */
typedef struct layout {
    uint32_t depth, bytes, stride;
    uint32_t ncur, cur[2 * MAXW];
    uint32_t work, ring, end;
} layout;

static int is_live(const layout *L, uint32_t a)
{
    for (uint32_t c = 0; c < L->ncur; c++)
        if (a == L->cur[c])
            return 1;
    if (a >= L->work && a < L->work + L->bytes)
        return 1;
    if (a >= L->ring && a < L->ring + L->depth * L->stride)
        return (a - L->ring) % L->stride < L->bytes;
    return 0;
}

/* The region's image before the first run: guards, cursors 0, random slots and work. */
static uint8_t *layout_image(const layout *L)
{
    uint8_t *img = malloc(L->end - DATA);
    assert_non_null(img);
    for (uint32_t a = DATA; a < L->end; a += 4)
        tu_put32(img, a - DATA, is_live(L, a) ? rnd() : GUARD);
    for (uint32_t c = 0; c < L->ncur; c++)
        tu_put32(img, L->cur[c] - DATA, 0);
    return img;
}

/* Every guard word of the tile's region is intact. */
static void check_guards(const uint8_t *mem, const layout *L, const char *what, int run)
{
    for (uint32_t a = DATA; a < L->end; a += 4)
        if (!is_live(L, a) && tu_get32(mem, a) != GUARD)
            fail_msg("%s run %d: guard at 0x%x is 0x%08x", what, run, a, tu_get32(mem, a));
}

/* One run of the codelet on n states: a fresh system loaded with img, run, the model applied
 * to img for each state, then the whole region compared with it, the guards and the states
 * checked. Returns the cycle the tile halted at. */
static uint64_t run_states(uint8_t *img, const layout *L, const vstate *v, int n, const char *what,
                           int run)
{
    uint32_t st[MAXW];
    for (int k = 0; k < n; k++)
        st[k] = STATE + STATE_BYTES * (uint32_t)k;
    harness h;
    h_new(&h, st, n);
    for (int k = 0; k < n; k++)
        put_state(h.mem, st[k], &v[k]);
    memcpy(h.mem + DATA, img, L->end - DATA);
    const uint64_t cycles = tu_h_run(&h);
    for (int k = 0; k < n; k++)
        ring_model(img, &v[k]);
    for (uint32_t a = DATA; a < L->end; a += 4)
        if (tu_get32(h.mem, a) != tu_get32(img, a - DATA))
            fail_msg("%s run %d: word at 0x%x is 0x%08x, the model's 0x%08x", what, run, a,
                     tu_get32(h.mem, a), tu_get32(img, a - DATA));
    check_guards(h.mem, L, what, run);
    for (int k = 0; k < n; k++) { /* read only */
        uint8_t want[STATE_BYTES];
        put_state(want, 0, &v[k]);
        assert_memory_equal(h.mem + st[k], want, 28);
    }
    tu_h_free(&h);
    return cycles;
}

/* ---- stash then restore, one worker ---- */

/* A pipeline's use of one ring of D slots over P = 2D + 3 micro-batches: micro-batch m's
 * activations (fresh random words written into the working buffer) are stashed at step m;
 * from step D - 1 on, each step then scrambles the working buffer and restores the oldest
 * micro-batch in flight (m - D + 1), and D - 1 more steps restore the rest: P stashes and P
 * restores, D in flight at most, the ring wrapping (P > D). After every run: the region
 * equals the C model's, the guards are intact, the run's cursor is (runs so far) mod D and the
 * other cursor unchanged, a restore gives back that micro-batch's words, and the tile halts
 * at 6 (15 + 2n) + 3 whatever the direction, slot or data. */
static void ring_case(uint32_t D, uint32_t bytes, uint32_t stride)
{
    layout L = {.depth = D, .bytes = bytes, .stride = stride, .ncur = 2};
    L.cur[0] = DATA + 8;  /* the stash's cursor */
    L.cur[1] = DATA + 16; /* the restore's: separate */
    L.work = DATA + 32;
    L.ring = L.work + bytes + 16;
    L.end = L.ring + D * stride + 16;
    assert_true(bytes % 8 == 0 && stride % 8 == 0 && stride >= bytes && D >= 1);
    uint8_t *img = layout_image(&L);
    const vstate stash = {L.work, L.ring, bytes, stride, D, L.cur[0], 0};
    const vstate restore = {L.work, L.ring, bytes, stride, D, L.cur[1], 1};
    const int P = 2 * (int)D + 3;
    uint8_t *acts = malloc((size_t)P * bytes + 1);
    assert_non_null(acts);
    const uint64_t want = 6 * ring_slots(bytes / 8) + 3;
    char what[96];
    snprintf(what, sizeof what, "D %u bytes %u stride %u", D, bytes, stride);
    int runs = 0, restored = 0;
    for (int m = 0; m < P + (int)D - 1; m++) {
        if (m < P) {
            for (uint32_t i = 0; i < bytes; i += 4)
                tu_put32(img, L.work - DATA + i, rnd());
            memcpy(acts + (size_t)m * bytes, img + (L.work - DATA), bytes);
            const uint32_t other = tu_get32(img, L.cur[1] - DATA);
            const uint64_t c = run_states(img, &L, &stash, 1, what, runs++);
            if (c != want)
                fail_msg("%s stash %d: %llu cycles, want %llu", what, m, (unsigned long long)c,
                         (unsigned long long)want);
            assert_int_equal(tu_get32(img, L.cur[0] - DATA), (uint32_t)(m + 1) % D);
            assert_int_equal(tu_get32(img, L.cur[1] - DATA), other);
        }
        if (m >= (int)D - 1) {
            for (uint32_t i = 0; i < bytes; i += 4)
                tu_put32(img, L.work - DATA + i, rnd());
            const uint32_t other = tu_get32(img, L.cur[0] - DATA);
            const uint64_t c = run_states(img, &L, &restore, 1, what, runs++);
            if (c != want)
                fail_msg("%s restore %d: %llu cycles, want %llu", what, restored,
                         (unsigned long long)c, (unsigned long long)want);
            if (bytes && memcmp(img + (L.work - DATA), acts + (size_t)restored * bytes, bytes))
                fail_msg("%s: restore %d did not give back micro-batch %d", what, restored,
                         restored);
            restored++;
            assert_int_equal(tu_get32(img, L.cur[1] - DATA), (uint32_t)restored % D);
            assert_int_equal(tu_get32(img, L.cur[0] - DATA), other);
        }
    }
    assert_int_equal(restored, P);
    free(acts);
    free(img);
}

static void test_stash_restore(void **state)
{
    (void)state;
    rng_s = 0x5eed0101;
    const uint32_t depth[] = {1, 2, 3, 7};
    /* 0 (only the cursors move), 1, 2 and 3 pairs, 1448 floats (724 pairs) and 723 pairs */
    const uint32_t bytes[] = {0, 8, 16, 24, 1448 * 4, 1446 * 4};
    for (size_t d = 0; d < sizeof depth / sizeof depth[0]; d++)
        for (size_t b = 0; b < sizeof bytes / sizeof bytes[0]; b++)
            ring_case(depth[d], bytes[b], bytes[b] + ((d + b) % 2 ? 8 : 24));
    /* slots end to end (stride = bytes): no guard between them, the model still checks them */
    ring_case(3, 16, 16);
    ring_case(2, 1448 * 4, 1448 * 4);
}

/* The header's cycle examples, from the slots written out at the top of this file. */
static void test_cycles_formula(void **state)
{
    (void)state;
    assert_int_equal(6 * ring_slots(1448 * 4 / 8), 8778);
    assert_int_equal(6 * ring_slots(0), 90);
}

/* ---- six workers ---- */

/* As the graph runs it: a tensor of 1448 floats (724 pairs) split over the six workers of a
 * tile in parts of 121, 121, 121, 121, 120 and 120 pairs, one ring of D = 3 whole-tensor
 * slots (stride 5800: a guard pair between slots), each worker's state pointing at its part of
 * the working buffer and of slot 0, with its own stash cursor and its own restore cursor
 * (twelve words, guards between them). The schedule of ring_case over P = 7 micro-batches, each
 * run six vertices of one direction: after every run the region equals the model's, the
 * guards are intact, each worker's cursor is (runs so far) mod 3, a restore gives back the
 * whole tensor, and the tile halts at max over k of (F_k + 6 S_k) - 4 (the top of this file)
 * = F_5 + 6 (15 + 240) - 4 = 58 + 1530 - 4 = 1584: the last started worker, with 120 pairs,
 * ends last (F_3 + 6 S_3 = 32 + 6 x 257 = 1574, F_4 + 6 S_4 = 42 + 1530 = 1572). */
static void test_six_workers(void **state)
{
    (void)state;
    rng_s = 0x5eed0102;
    enum { D = 3, P = 2 * D + 1, PAIRS = 724, BYTES = 8 * PAIRS, STRIDE = BYTES + 8 };
    const uint32_t part[MAXW] = {121, 121, 121, 121, 120, 120};
    layout L = {.depth = D, .bytes = BYTES, .stride = STRIDE, .ncur = 2 * MAXW};
    for (uint32_t k = 0; k < 2 * MAXW; k++)
        L.cur[k] = DATA + 8 + 8 * k; /* stash cursors 0..5, restore cursors 6..11 */
    L.work = DATA + 8 + 16 * MAXW + 8;
    L.ring = L.work + BYTES + 16;
    L.end = L.ring + D * STRIDE + 16;
    uint8_t *img = layout_image(&L);
    vstate stash[MAXW], restore[MAXW];
    uint32_t off = 0, total = 0;
    for (int k = 0; k < MAXW; k++) {
        stash[k] = (vstate){L.work + off, L.ring + off, 8 * part[k], STRIDE, D, L.cur[k], 0};
        restore[k] = stash[k];
        restore[k].cursor = L.cur[MAXW + k];
        restore[k].dir = 1;
        off += 8 * part[k];
        total += part[k];
    }
    assert_int_equal(total, PAIRS);
    static const uint64_t first[MAXW] = {7, 15, 23, 32, 42, 58};
    uint64_t want = 0;
    for (int k = 0; k < MAXW; k++) {
        const uint64_t end = first[k] + 6 * ring_slots(part[k]);
        want = end > want ? end : want;
    }
    want -= 4;
    assert_int_equal(want, 1584);
    uint8_t *acts = malloc((size_t)P * BYTES);
    assert_non_null(acts);
    int runs = 0, restored = 0;
    for (int m = 0; m < P + D - 1; m++) {
        if (m < P) {
            for (uint32_t i = 0; i < BYTES; i += 4)
                tu_put32(img, L.work - DATA + i, rnd());
            memcpy(acts + (size_t)m * BYTES, img + (L.work - DATA), BYTES);
            assert_int_equal(run_states(img, &L, stash, MAXW, "six stash", runs++), want);
            for (int k = 0; k < MAXW; k++) {
                assert_int_equal(tu_get32(img, L.cur[k] - DATA), (uint32_t)(m + 1) % D);
                assert_int_equal(tu_get32(img, L.cur[MAXW + k] - DATA), (uint32_t)restored % D);
            }
        }
        if (m >= D - 1) {
            for (uint32_t i = 0; i < BYTES; i += 4)
                tu_put32(img, L.work - DATA + i, rnd());
            assert_int_equal(run_states(img, &L, restore, MAXW, "six restore", runs++), want);
            assert_memory_equal(img + (L.work - DATA), acts + (size_t)restored * BYTES, BYTES);
            restored++;
            for (int k = 0; k < MAXW; k++)
                assert_int_equal(tu_get32(img, L.cur[MAXW + k] - DATA), (uint32_t)restored % D);
        }
    }
    assert_int_equal(restored, P);
    free(acts);
    free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stash_restore),
        cmocka_unit_test(test_cycles_formula),
        cmocka_unit_test(test_six_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
