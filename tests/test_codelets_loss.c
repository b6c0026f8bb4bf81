/* test_codelets_loss: the codelets at the end of the tutorial network's training step
 * (workloads/codelets/xent_fwd_bwd.s, reduce_add.s, adamw_step.s, adamw_hyper.s) run through
 * the engine on one Mk2 tile, against the C code they stand for, on seeded random data.
 *
 * Harness: a supervisor `main` that starts the codelet on one worker per state (`li r1,
 * STATE; run NAME, r1`), joins and halts, assembled with the codelet's source; the test
 * writes the states and the data into tile memory before the run and reads the results back.
 * One worker: li at 0, run at 1, the worker's first issue at 7 (docs/timing.md), its exit at
 * 7 + 6 (S - 1) for a codelet of S worker slots; join goes on at the exit + 1 and halt
 * finishes one cycle later: the tile halts at 6 S + 3. The S asserted below are written out
 * here from each codelet's instruction sequence and docs/isa.md's slots, not taken from the
 * codelet files.
 *
 * Results:
 * - xent_fwd_bwd against two references: mlayer_xent itself (workloads/mnist/layers.c, which
 *   uses expf and logf) and xent_ref below, mlayer_xent's loop written out with exp and log
 *   in double rounded once (the ISA's fexp and flog, docs/isa.md). The codelet must equal
 *   xent_ref bit for bit (dz, the loss sum, the count), and mlayer_xent within what glibc's
 *   expf and logf (1 ulp from the double-based results on some inputs, never more: checked
 *   exhaustively, see the codelet's header) can change: each e[j] and log(s) by 1 ulp, s by
 *   at most ~10 ulp of its value through its 9 sums, so each dz element by less than 2^-19 x
 *   (|dz| + scale) and the mean loss by less than 2^-18 x (1 + mean). The count of correct
 *   rows must equal mlayer_xent's exactly. The batch has ties (the first largest wins), a
 *   label at the max, -0 against +0, and extreme logits (+-1e30, +-3e38: finite results
 *   only because the max is subtracted).
 * - reduce_add against the C loop in its header (bit for bit) over sizes that reach every
 *   remainder, 1 to 5 parts, k = 1 and 1/40, in place and not, with guard words around out.
 * - adamw_step against adamw_step (workloads/mnist/adamw.c) over 5 steps of 3001 parameters
 *   (and 0 to 3), defaults lr 0.001, betas (0.9, 0.999), eps 1e-8, weight decay 0.01, bit for
 *   bit on param, m and v after every step; the state's scalars and each step's record
 *   {bc2_sqrt, 0, neg_step, neg_step} computed here from the formulas in adamw_step.s's header.
 * - adamw_hyper: the record and the cursor after 1, 2 and 3 runs over a table of random bits;
 *   and the device loop it is for, adamw_hyper then adamw_step for 1 to 3 steps in one
 *   program, against as many steps of adamw.c bit for bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/system.h"
#include "hw/engine.h"
#include "hw/tile.h"
#include "isa/asm.h"
#include "tests/testutil.h"
#include "workloads/codelets.h"
#include "workloads/mnist/adamw.h"
#include "workloads/mnist/layers.h"

enum { STATE = 0x1000, DATA = 0x1400, MAXW = 6 };

/* xorshift64*, fixed seeds */
static uint64_t rng_s;
static uint32_t rnd(void)
{
    rng_s ^= rng_s >> 12;
    rng_s ^= rng_s << 25;
    rng_s ^= rng_s >> 27;
    return (uint32_t)((rng_s * 0x2545f4914f6cdd1dull) >> 32);
}
/* uniform in [lo, hi) */
static float urand(float lo, float hi)
{
    return lo + (hi - lo) * (float)(rnd() >> 8) * (1.0f / 16777216.0f);
}

/* ---- the harness ---- */

typedef tu_harness harness;

/* Codelet `name` started once per state address. */
static void h_new(harness *h, const char *name, const uint32_t *states, int n)
{
    char main_text[64 * MAXW + 64];
    size_t k = 0;
    assert_true(n <= MAXW);
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(main_text + k, sizeof main_text - k,
                              "        li      r1, %u\n        run     %s, r1\n", states[i], name);
    snprintf(main_text + k, sizeof main_text - k, "        join\n        halt\n");
    const char *names[1] = {name};
    tu_h_prog(h, main_text, names, 1);
}

/* ---- xent_fwd_bwd ---- */

enum { BATCH = 40, CLASSES = 10 };

/* Worker slots of xent_fwd_bwd for `rows` rows, from its instruction sequence and docs/isa.md
 * (fexp, fdiv 3 slots, flog 6, the rest 1):
 *   prologue: 5 ld32, itof, li, fdiv (3), mov, rpt                          = 12
 *   per row:  pass 1: li, st32, 5 ld64, 9 fmax, 10 st32, mov                = 26
 *             label: ld32pi, shli, add, ld32, add, ld32, fcmple, fcmpeq, cmplt, add,
 *                    fsub                                                    = 11
 *             pass 2: 5 ld64pi, 5 v2sub, 10 fexp (30), 5 st64, 9 fadd       = 54
 *             loss: flog (6), fsub, fadd                                     =  8
 *             label's gradient: ld32, fdiv (3), li, fsub, fmul, st32        =  8
 *             pass 3: 5 x (ld64, 2 fdiv (6), v2mul, st64pi)                 = 45
 *                                                                            = 152
 *   epilogue: 2 ld32, 2 st32, exit                                           =  5 */
static uint64_t xent_slots(uint64_t rows)
{
    return 12 + rows * (26 + 11 + 54 + 8 + 8 + 45) + 5;
}

static float x_exp(float x)
{
    return (float)exp((double)x);
}

static float x_log(float x)
{
    return (float)log((double)x);
}

/* mlayer_xent's loop over rows [r0, r1) with the ISA's exp and log; the sum of the rows'
 * losses (total before mlayer_xent's division), dz of those rows, *correct += their count. */
static float xent_ref(int batch, const float *z, const int *labels, float *dz, int r0, int r1,
                      int *correct)
{
    float total = 0.0f;
    const float scale = 1.0f / (float)batch;
    for (int n = r0; n < r1; n++) {
        const float *zn = z + (size_t)n * CLASSES;
        int best = 0;
        for (int j = 1; j < CLASSES; j++)
            if (zn[j] > zn[best])
                best = j;
        const float m = zn[best];
        float s = 0.0f;
        for (int j = 0; j < CLASSES; j++)
            s += x_exp(zn[j] - m);
        const float lse = x_log(s);
        total += lse - (zn[labels[n]] - m);
        if (best == labels[n])
            (*correct)++;
        float *d = dz + (size_t)n * CLASSES;
        for (int j = 0; j < CLASSES; j++) {
            const float p = x_exp(zn[j] - m) / s;
            d[j] = (p - (j == labels[n] ? 1.0f : 0.0f)) * scale;
        }
    }
    return total;
}

/* The tutorial's batch: random logits in [-6, 6), random labels, and special rows. */
static void xent_batch(float *z, int *labels)
{
    rng_s = 0x5eed0001;
    for (int i = 0; i < BATCH * CLASSES; i++)
        z[i] = urand(-6.0f, 6.0f);
    for (int n = 0; n < BATCH; n++)
        labels[n] = (int)(rnd() % CLASSES);
    float *r;
    /* 0: a tie for the max at 2 and 7, label the second: not correct */
    r = z + 0 * CLASSES;
    r[2] = r[7] = 9.5f;
    labels[0] = 7;
    /* 1: the same tie, label the first: correct */
    r = z + 1 * CLASSES;
    r[2] = r[7] = 9.5f;
    labels[1] = 2;
    /* 2: label at a unique max */
    r = z + 2 * CLASSES;
    r[4] = 8.0f;
    labels[2] = 4;
    /* 3: extreme positive logits, label at the max: exp would overflow without the max
       subtraction; z - m reaches -inf (3e38 - -3e38), whose exp is 0 */
    r = z + 3 * CLASSES;
    for (int j = 0; j < CLASSES; j++)
        r[j] = (j & 1) ? 1e30f : -3e38f;
    r[5] = 3e38f;
    labels[3] = 5;
    /* 4: extreme negative logits, label one below the max */
    r = z + 4 * CLASSES;
    for (int j = 0; j < CLASSES; j++)
        r[j] = -1e30f - (float)j * 1e23f;
    labels[4] = 1;
    /* 5, 6: all equal: label 0 is correct, label 9 not */
    for (int j = 0; j < CLASSES; j++)
        z[5 * CLASSES + j] = z[6 * CLASSES + j] = 0.25f;
    labels[5] = 0;
    labels[6] = 9;
    /* 7: -0 and +0 tie for the max, label the second: not correct */
    r = z + 7 * CLASSES;
    for (int j = 0; j < CLASSES; j++)
        r[j] = -1.0f - (float)j;
    r[3] = -0.0f;
    r[8] = 0.0f;
    labels[7] = 8;
    /* 8: the max last, label there */
    r = z + 8 * CLASSES;
    r[9] = 7.0f;
    labels[8] = 9;
    /* 9: a large finite gap below the max at the label: loss about 1e4 */
    r = z + 9 * CLASSES;
    r[0] = 5000.0f;
    r[6] = -5000.0f;
    labels[9] = 6;
    /* 10: z - m = -0.500475883 (0xbf001f30), where glibc 2.36's expf is an ulp off the
       double-based exp: mlayer_xent's dz differs from the codelet's here (within the bound) */
    r = z + 10 * CLASSES;
    for (int j = 0; j < CLASSES; j++)
        r[j] = -200.0f;
    r[0] = 0.0f;
    r[1] = tu_bf(0xbf001f30);
    labels[10] = 1;
}

/* Memory of the xent runs: z, labels, dz (with 4 guard words after), sums, counts. */
enum {
    XZ = DATA,
    XL = XZ + BATCH * CLASSES * 4,
    XD = XL + BATCH * 4,
    XSUM = XD + BATCH * CLASSES * 4 + 16,
    XCNT = XSUM + 4 * MAXW + 8,
};
#define GUARD 0xa5a5a5a5u

static void xent_state(uint8_t *mem, uint32_t at, int r0, int rows, int w)
{
    tu_put32(mem, at + 0, XZ + (uint32_t)r0 * CLASSES * 4);
    tu_put32(mem, at + 4, XL + (uint32_t)r0 * 4);
    tu_put32(mem, at + 8, XD + (uint32_t)r0 * CLASSES * 4);
    tu_put32(mem, at + 12, (uint32_t)rows);
    tu_put32(mem, at + 16, BATCH);
    tu_put32(mem, at + 20, XSUM + 4 * (uint32_t)w);
    tu_put32(mem, at + 24, XCNT + 4 * (uint32_t)w);
}

static void xent_load(uint8_t *mem, const float *z, const int *labels)
{
    memcpy(mem + XZ, z, sizeof(float) * BATCH * CLASSES);
    memcpy(mem + XL, labels, sizeof(int) * BATCH);
    for (uint32_t a = XD; a < XCNT + 4 * MAXW + 8; a += 4)
        tu_put32(mem, a, GUARD);
}

/* The whole batch on one worker: bit for bit against xent_ref, within the bound against
 * mlayer_xent, the count exactly, the cycles exactly; and rows 0, 1, 7 for the cycles. */
static void test_xent_batch(void **state)
{
    (void)state;
    float z[BATCH * CLASSES], dz_ref[BATCH * CLASSES], dz_c[BATCH * CLASSES];
    int labels[BATCH];
    xent_batch(z, labels);

    int cnt_ref = 0, cnt_c = 0;
    const float sum_ref = xent_ref(BATCH, z, labels, dz_ref, 0, BATCH, &cnt_ref);
    const float mean_c = mlayer_xent(BATCH, CLASSES, z, labels, dz_c, &cnt_c);
    assert_int_equal(cnt_ref, cnt_c);
    assert_true(isfinite(sum_ref));

    harness h;
    const uint32_t st[1] = {STATE};
    h_new(&h, "xent_fwd_bwd", st, 1);
    xent_load(h.mem, z, labels);
    xent_state(h.mem, STATE, 0, BATCH, 0);
    const uint64_t cycles = tu_h_run(&h);
    assert_int_equal(cycles, 6 * xent_slots(BATCH) + 3); /* 36,585 */
    assert_int_equal(cycles, 36585);

    const float scale = 1.0f / BATCH;
    int ndiff = 0;
    for (int i = 0; i < BATCH * CLASSES; i++) {
        const uint32_t got = tu_get32(h.mem, XD + 4 * (uint32_t)i);
        if (got != tu_fb(dz_ref[i]))
            fail_msg("dz[%d][%d]: 0x%08x, want 0x%08x (%g)", i / CLASSES, i % CLASSES, got,
                     tu_fb(dz_ref[i]), (double)dz_ref[i]);
        const double tol = ldexp(fabs((double)dz_c[i]) + scale, -19);
        if (fabs((double)dz_ref[i] - (double)dz_c[i]) > tol)
            fail_msg("dz[%d][%d]: %a, mlayer_xent %a", i / CLASSES, i % CLASSES, (double)dz_ref[i],
                     (double)dz_c[i]);
        ndiff += tu_fb(dz_ref[i]) != tu_fb(dz_c[i]);
    }
    const uint32_t sum = tu_get32(h.mem, XSUM);
    assert_int_equal(sum, tu_fb(sum_ref));
    const float mean = sum_ref / (float)BATCH;
    if (fabs((double)mean - (double)mean_c) > ldexp(1.0 + mean_c, -18))
        fail_msg("mean loss %a, mlayer_xent %a", (double)mean, (double)mean_c);
    assert_int_equal(tu_get32(h.mem, XCNT), (uint32_t)cnt_ref);
    /* the special rows: 1, 2, 3, 5, 8 correct; 0, 4, 6, 7, 9 not */
    int special = 0;
    xent_ref(BATCH, z, labels, dz_ref, 0, 10, &special);
    assert_int_equal(special, 5);
    /* nothing written past dz, sum or count; inputs untouched */
    for (uint32_t a = XD + BATCH * CLASSES * 4; a < XSUM; a += 4)
        assert_int_equal(tu_get32(h.mem, a), GUARD);
    assert_int_equal(tu_get32(h.mem, XSUM + 4), GUARD);
    assert_int_equal(tu_get32(h.mem, XCNT + 4), GUARD);
    assert_memory_equal(h.mem + XZ, z, sizeof z);
    assert_memory_equal(h.mem + XL, labels, sizeof labels);
    tu_h_free(&h);
    print_message("xent_fwd_bwd: %d of %d dz elements differ from mlayer_xent's (expf, logf), "
                  "within 2^-19 (|dz| + 1/40)\n",
                  ndiff, BATCH * CLASSES);

    /* cycles for 0, 1 and 7 rows */
    const int rows[] = {0, 1, 7};
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        h_new(&h, "xent_fwd_bwd", st, 1);
        xent_load(h.mem, z, labels);
        xent_state(h.mem, STATE, 3, rows[k], 0);
        assert_int_equal(tu_h_run(&h), 6 * xent_slots((uint64_t)rows[k]) + 3);
        int c = 0;
        const float s = xent_ref(BATCH, z, labels, dz_ref, 3, 3 + rows[k], &c);
        assert_int_equal(tu_get32(h.mem, XSUM), tu_fb(s));
        assert_int_equal(tu_get32(h.mem, XCNT), (uint32_t)c);
        assert_memory_equal(h.mem + XD + 3 * CLASSES * 4, dz_ref + 3 * CLASSES,
                            sizeof(float) * CLASSES * (size_t)rows[k]);
        tu_h_free(&h);
    }
}

/* The batch split over six workers (7, 7, 7, 7, 6, 6 rows), as six vertices of a compute set
 * would be: each range's dz, sum and count are xent_ref's for those rows; the counts add up
 * to mlayer_xent's. */
static void test_xent_workers(void **state)
{
    (void)state;
    float z[BATCH * CLASSES], dz_ref[BATCH * CLASSES];
    int labels[BATCH];
    xent_batch(z, labels);
    const int first[MAXW + 1] = {0, 7, 14, 21, 28, 34, 40};
    uint32_t st[MAXW];
    for (int w = 0; w < MAXW; w++)
        st[w] = STATE + 32 * (uint32_t)w;
    harness h;
    h_new(&h, "xent_fwd_bwd", st, MAXW);
    xent_load(h.mem, z, labels);
    for (int w = 0; w < MAXW; w++)
        xent_state(h.mem, st[w], first[w], first[w + 1] - first[w], w);
    tu_h_run(&h);
    int total = 0, cnt_c = 0;
    mlayer_xent(BATCH, CLASSES, z, labels, NULL, &cnt_c);
    for (int w = 0; w < MAXW; w++) {
        int c = 0;
        const float s = xent_ref(BATCH, z, labels, dz_ref, first[w], first[w + 1], &c);
        assert_int_equal(tu_get32(h.mem, XSUM + 4 * (uint32_t)w), tu_fb(s));
        assert_int_equal(tu_get32(h.mem, XCNT + 4 * (uint32_t)w), (uint32_t)c);
        total += (int)tu_get32(h.mem, XCNT + 4 * (uint32_t)w);
    }
    assert_int_equal(total, cnt_c);
    assert_memory_equal(h.mem + XD, dz_ref, sizeof dz_ref);
    tu_h_free(&h);
}

/* ---- reduce_add ---- */

/* Worker slots of reduce_add for n outputs of P parts, from its instruction sequence (every
 * instruction 1 slot), with B = n / 4 blocks of 4, h = 1 when n mod 4 >= 2, o = n mod 2:
 *   prologue: 6 ld32, mov, addi, shri, brz                        = 10, + 1 (addi) if B > 0
 *   a block:  mov, 2 ld64, rpt, (P - 1) x (add, 2 ld64, 2 v2add), 2 v2mul, 2 st64pi, addi,
 *             brnzdec                                             = 10 + 5 (P - 1)
 *   pair test: andi, brz = 2; the pair: mov, ld64, rpt, (P - 1) x (add, ld64, v2add), v2mul,
 *             st64pi, addi                                        = 6 + 3 (P - 1)
 *   odd test: andi, brz = 2; the float: mov, ld32, rpt, (P - 1) x (add, ld32, fadd), fmul,
 *             st32                                                = 5 + 3 (P - 1)
 *   exit                                                          = 1 */
static uint64_t reduce_slots(uint64_t n, uint64_t P)
{
    const uint64_t B = n / 4, h = (n % 4) / 2, o = n % 2;
    return 10 + (B > 0) + B * (10 + 5 * (P - 1)) + 2 + h * (6 + 3 * (P - 1)) + 2 +
           o * (5 + 3 * (P - 1)) + 1;
}

/* One case: n outputs, P parts at `stride` bytes, scale k; in place (out = parts[0]) or not. */
static void reduce_case(uint32_t n, uint32_t P, float k, int inplace)
{
    const uint32_t stride = ((4 * n + 7) & ~7u) + 8; /* padded to 8 and one pair more */
    const uint32_t parts = DATA, out = inplace ? parts : parts + P * stride + 8;
    float *pv = malloc(sizeof(float) * (P * (size_t)n + 1));
    float *want = malloc(sizeof(float) * (n + 1));
    assert_true(pv && want);
    /* magnitudes from 2^-10 to 2^14, both signs, some -0: the order of the sums shows */
    for (uint32_t i = 0; i < P * n; i++) {
        const uint32_t r = rnd();
        pv[i] = (r & 63) == 0 ? -0.0f : ldexpf(urand(-1.0f, 1.0f), (int)(r % 25) - 10);
    }
    for (uint32_t i = 0; i < n; i++) {
        float s = pv[i];
        for (uint32_t p = 1; p < P; p++)
            s += pv[(size_t)p * n + i];
        want[i] = k * s;
    }
    harness h;
    const uint32_t st[1] = {STATE};
    h_new(&h, "reduce_add", st, 1);
    for (uint32_t a = parts - 8; a < out + 4 * n + 16; a += 4)
        tu_put32(h.mem, a, GUARD);
    for (uint32_t p = 0; p < P; p++)
        memcpy(h.mem + parts + p * stride, pv + (size_t)p * n, 4 * (size_t)n);
    tu_put32(h.mem, STATE + 0, out);
    tu_put32(h.mem, STATE + 4, parts);
    tu_put32(h.mem, STATE + 8, n);
    tu_put32(h.mem, STATE + 12, P);
    tu_put32(h.mem, STATE + 16, stride);
    tu_put32(h.mem, STATE + 20, tu_fb(k));
    const uint64_t cycles = tu_h_run(&h);
    if (cycles != 6 * reduce_slots(n, P) + 3)
        fail_msg("reduce_add n %u P %u: %llu cycles, want %llu", n, P, (unsigned long long)cycles,
                 (unsigned long long)(6 * reduce_slots(n, P) + 3));
    for (uint32_t i = 0; i < n; i++)
        if (tu_get32(h.mem, out + 4 * i) != tu_fb(want[i]))
            fail_msg("reduce_add n %u P %u k %g%s: out[%u] 0x%08x, want 0x%08x", n, P, (double)k,
                     inplace ? " in place" : "", i, tu_get32(h.mem, out + 4 * i), tu_fb(want[i]));
    /* nothing written around out (in place, the words after it are part 0's padding) */
    assert_int_equal(tu_get32(h.mem, out - 4), GUARD);
    assert_int_equal(tu_get32(h.mem, out + 4 * n), GUARD);
    assert_int_equal(tu_get32(h.mem, out + 4 * n + 4), GUARD);
    /* the parts are not written (but part 0 when it is out) */
    for (uint32_t p = inplace ? 1 : 0; p < P; p++)
        assert_memory_equal(h.mem + parts + p * stride, pv + (size_t)p * n, 4 * (size_t)n);
    tu_h_free(&h);
    free(pv);
    free(want);
}

static void test_reduce_add(void **state)
{
    (void)state;
    rng_s = 0x5eed0002;
    const uint32_t ns[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 101};
    const uint32_t Ps[] = {1, 2, 3, 5};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof Ps / sizeof Ps[0]; b++) {
            reduce_case(ns[a], Ps[b], 1.0f, 0);
            reduce_case(ns[a], Ps[b], 1.0f / BATCH, 0);
        }
    reduce_case(101, 4, 0.5f, 1);
    reduce_case(7, 3, 1.0f / BATCH, 1);
    /* the worked example of the codelet's header */
    assert_int_equal(6 * reduce_slots(10, 4), 486);
}

/* ---- adamw_step and adamw_hyper ---- */

/* Worker slots of adamw_step for n parameters, from its instruction sequence (fsqrt 5 slots,
 * fdiv 3, the rest 1):
 *   prologue: 5 ld32 (param, grad, m, v, n), ld64 eps, 2 ld32 (hyper, then bc2_sqrt through
 *             it), shri, rpt                                                       = 10
 *   a pair: 4 ld64 (g, m, v, param), 5 ld64 (w1, b2, w2, neg_step, decay), ld32 hyper (before
 *           neg_step), 11 f32v2 (v2sub, v2mul, v2add; v2mul, 2 v2mul, v2add; v2add eps;
 *           v2mul; v2mul, v2add), 2 fsqrt (10), 4 fdiv (12), 3 st64pi              = 46
 *   odd test: ld32, andi, brz                                                      = 3
 *   the last element: 10 ld32 (g, m, w1, v, b2, w2, hyper, neg_step, param, decay), 11 fp32
 *           ops, fsqrt (5), 2 fdiv (6), 3 st32                                     = 35
 *   exit                                                                           = 1 */
static uint64_t adamw_slots(uint64_t n)
{
    return 10 + 46 * (n / 2) + 3 + 35 * (n % 2) + 1;
}

/* Worker slots of adamw_hyper: 3 ld32 (cursor, the index, table), shli, add, ld32 rec, 2
 * ld64, 2 st64, addi, st32, exit. */
enum { HYPER_SLOTS = 13, REC_BYTES = 16, ASTATE_BYTES = 64 };

/* A supervisor block `li r1, STATE; run NAME, r1; join` of a codelet of S slots, started at
 * cycle c (docs/timing.md): li at c, run at c + 1, the worker's first issue at c + 7 and its
 * exit at c + 1 + 6 S; the supervisor's next free slot is c + 8, where join issues and goes
 * on at max(c + 14, the exit + 1) = c + 2 + 6 S (S >= 2). halt then takes 1 cycle. */
static uint64_t block_cycles(uint64_t slots)
{
    return 6 * slots + 2;
}

/* Step t's record as adamw_step.s's header gives its scalars (PyTorch's Python-float terms,
 * in double, rounded once): {bc2_sqrt, 0, neg_step, neg_step}, at `at`. */
static void adamw_record(uint8_t *mem, uint32_t at, const adamw_cfg *c, long t)
{
    const double bc1 = 1.0 - pow(c->beta1, (double)t), bc2 = 1.0 - pow(c->beta2, (double)t);
    const uint32_t neg_step = tu_fb((float)(-(c->lr / bc1)));
    tu_put32(mem, at + 0, tu_fb((float)sqrt(bc2)));
    tu_put32(mem, at + 4, 0);
    tu_put32(mem, at + 8, neg_step);
    tu_put32(mem, at + 12, neg_step);
}

/* The state at `at`: the tensors, n, the record's address and the constant scalars (the
 * header's formulas) stored twice. */
static void adamw_state(uint8_t *mem, uint32_t at, const adamw_cfg *c, const uint32_t ptr[4],
                        uint32_t n, uint32_t hyper)
{
    const float pairs[5] = {
        (float)c->eps,                          /* eps */
        (float)(1.0 - c->lr * c->weight_decay), /* decay */
        (float)(1.0 - c->beta1),                /* w1 */
        (float)c->beta2,                        /* b2 */
        (float)(1.0 - c->beta2),                /* w2 */
    };
    for (int k = 0; k < 4; k++)
        tu_put32(mem, at + 4 * (uint32_t)k, ptr[k]);
    tu_put32(mem, at + 16, n);
    tu_put32(mem, at + 20, hyper);
    for (int k = 0; k < 5; k++) {
        tu_put32(mem, at + 24 + 8 * (uint32_t)k, tu_fb(pairs[k]));
        tu_put32(mem, at + 28 + 8 * (uint32_t)k, tu_fb(pairs[k]));
    }
}

/* Where one AdamW case lives in tile memory: param, grads (one per step), m, v, each padded
 * to `al` bytes with guard words; the table of records; the cursor. */
typedef struct alayout {
    uint32_t n, al, P, G, M, V, TAB, CUR, END;
} alayout;

static alayout alayout_of(uint32_t n, int steps)
{
    alayout L = {.n = n, .al = ((4 * n + 7) & ~7u) + 8};
    L.P = DATA;
    L.G = L.P + L.al;
    L.M = L.G + (uint32_t)steps * L.al;
    L.V = L.M + L.al;
    L.TAB = L.V + L.al;
    L.CUR = L.TAB + REC_BYTES * (uint32_t)steps + 8;
    L.END = L.CUR + 16;
    return L;
}

/* Random parameters; gradients random each step (some zero, magnitudes 2^-12 to 2^3). */
static void adamw_data(float *param, float *grad, uint32_t n, int steps)
{
    for (uint32_t i = 0; i < n; i++)
        param[i] = urand(-0.5f, 0.5f);
    for (uint32_t i = 0; i < n * (uint32_t)steps; i++) {
        const uint32_t r = rnd();
        grad[i] = (r & 31) == 0 ? 0.0f : ldexpf(urand(-1.0f, 1.0f), (int)(r % 16) - 12);
    }
}

/* Tile memory for a case: guards, param, m and v from `keep` (al bytes each), every step's
 * gradient, the table of records for steps 1..steps, the cursor 0. */
static void adamw_load(uint8_t *mem, const alayout *L, const adamw_cfg *c, const uint8_t *keep,
                       const float *grad, int steps)
{
    for (uint32_t a = L->P; a < L->END; a += 4)
        tu_put32(mem, a, GUARD);
    memcpy(mem + L->P, keep, 4 * (size_t)L->n);
    memcpy(mem + L->M, keep + L->al, 4 * (size_t)L->n);
    memcpy(mem + L->V, keep + 2 * L->al, 4 * (size_t)L->n);
    for (int t = 1; t <= steps; t++) {
        memcpy(mem + L->G + (uint32_t)(t - 1) * L->al, grad + (size_t)(t - 1) * L->n,
               4 * (size_t)L->n);
        adamw_record(mem, L->TAB + REC_BYTES * (uint32_t)(t - 1), c, t);
    }
    tu_put32(mem, L->CUR, 0);
}

/* param, m and v in tile memory equal adamw.c's, bit for bit; the guards after them intact. */
static void adamw_check(const uint8_t *mem, const alayout *L, const adamw *o, const float *param,
                        const char *what, int t)
{
    const struct {
        const char *name;
        uint32_t at;
        const float *want;
    } cmp[3] = {{"param", L->P, param}, {"m", L->M, o->m}, {"v", L->V, o->v}};
    for (int c = 0; c < 3; c++) {
        for (uint32_t i = 0; i < L->n; i++)
            if (tu_get32(mem, cmp[c].at + 4 * i) != tu_fb(cmp[c].want[i]))
                fail_msg("%s n %u step %d: %s[%u] 0x%08x, want 0x%08x (%a)", what, L->n, t,
                         cmp[c].name, i, tu_get32(mem, cmp[c].at + 4 * i), tu_fb(cmp[c].want[i]),
                         (double)cmp[c].want[i]);
        for (uint32_t a = cmp[c].at + 4 * L->n; a < cmp[c].at + L->al; a += 4)
            assert_int_equal(tu_get32(mem, a), GUARD);
    }
}

/* The records and the gradients are read only. */
static void adamw_check_inputs(const uint8_t *mem, const alayout *L, const adamw_cfg *c,
                               const float *grad, int steps)
{
    uint8_t rec[REC_BYTES];
    for (int t = 1; t <= steps; t++) {
        adamw_record(rec, 0, c, t);
        assert_memory_equal(mem + L->TAB + REC_BYTES * (uint32_t)(t - 1), rec, REC_BYTES);
        assert_memory_equal(mem + L->G + (uint32_t)(t - 1) * L->al, grad + (size_t)(t - 1) * L->n,
                            4 * (size_t)L->n);
    }
}

/* n parameters over `steps` steps, one run of adamw_step per step, its `hyper` pointing at
 * that step's record in a table of all the steps' records (so a codelet that read another
 * step's record, or a fixed place, would differ). */
static void adamw_case(uint32_t n, int steps)
{
    const adamw_cfg cfg = adamw_defaults();
    assert_true(cfg.lr == 1e-3 && cfg.weight_decay == 1e-2);
    adamw o;
    err e;
    err_clear(&e);
    assert_int_equal(adamw_init(&o, n, &cfg, &e), 0);
    const alayout L = alayout_of(n, steps);
    float *param = malloc(sizeof(float) * (n + 1));
    float *grad = malloc(sizeof(float) * (n * (size_t)steps + 1));
    uint8_t *keep = calloc(3, L.al); /* param, m, v between the steps' runs */
    assert_true(param && grad && keep);
    adamw_data(param, grad, n, steps);
    memcpy(keep, param, 4 * (size_t)n);
    for (int t = 1; t <= steps; t++) {
        harness h;
        const uint32_t st[1] = {STATE};
        h_new(&h, "adamw_step", st, 1);
        adamw_load(h.mem, &L, &cfg, keep, grad, steps);
        const uint32_t ptr[4] = {L.P, L.G + (uint32_t)(t - 1) * L.al, L.M, L.V};
        adamw_state(h.mem, STATE, &cfg, ptr, n, L.TAB + REC_BYTES * (uint32_t)(t - 1));
        const uint64_t cycles = tu_h_run(&h);
        if (cycles != 6 * adamw_slots(n) + 3)
            fail_msg("adamw_step n %u: %llu cycles, want %llu", n, (unsigned long long)cycles,
                     (unsigned long long)(6 * adamw_slots(n) + 3));
        adamw_step(&o, param, grad + (size_t)(t - 1) * n);
        assert_int_equal(o.step, t);
        adamw_check(h.mem, &L, &o, param, "adamw_step", t);
        adamw_check_inputs(h.mem, &L, &cfg, grad, steps);
        memcpy(keep, h.mem + L.P, 4 * (size_t)n);
        memcpy(keep + L.al, h.mem + L.M, 4 * (size_t)n);
        memcpy(keep + 2 * L.al, h.mem + L.V, 4 * (size_t)n);
        tu_h_free(&h);
    }
    adamw_free(&o);
    free(keep);
    free(param);
    free(grad);
}

static void test_adamw(void **state)
{
    (void)state;
    rng_s = 0x5eed0003;
    adamw_case(3001, 5);
    for (uint32_t n = 0; n <= 3; n++)
        adamw_case(n, 2);
    assert_int_equal(6 * adamw_slots(3001), 6 * (14 + 46 * 1500 + 35)); /* 414,294 */
    assert_int_equal(6 * adamw_slots(1000), 138084);                    /* the header's */
}

/* adamw_hyper run k = 1, 2, 3 times in one program (`li; run; join` each) from cursor 2
 * over a table of 6 records of random bits: after k runs rec is table[2 + k - 1], the cursor
 * 2 + k, the table and the words around rec and the cursor untouched, and the tile halts at
 * k x (6 x 13 + 2) + 1. */
static void test_adamw_hyper(void **state)
{
    (void)state;
    rng_s = 0x5eed0004;
    enum { NREC = 6, START = 2, REC = DATA + 8, TAB = DATA + 0x40, CUR = DATA + 0x100 };
    uint8_t table[NREC * REC_BYTES];
    for (size_t i = 0; i < sizeof table; i += 4)
        tu_put32(table, (uint32_t)i, rnd());
    const char *names[1] = {"adamw_hyper"};
    for (int k = 1; k <= 3; k++) {
        char main_text[512];
        size_t c = 0;
        for (int i = 0; i < k; i++)
            c += (size_t)snprintf(main_text + c, sizeof main_text - c,
                                  "        li      r1, %u\n        run     adamw_hyper, r1\n"
                                  "        join\n",
                                  STATE);
        snprintf(main_text + c, sizeof main_text - c, "        halt\n");
        harness h;
        tu_h_prog(&h, main_text, names, 1);
        for (uint32_t a = DATA; a < CUR + 8; a += 4)
            tu_put32(h.mem, a, GUARD);
        memcpy(h.mem + TAB, table, sizeof table);
        tu_put32(h.mem, CUR, START);
        tu_put32(h.mem, STATE + 0, REC);
        tu_put32(h.mem, STATE + 4, TAB);
        tu_put32(h.mem, STATE + 8, CUR);
        const uint64_t cycles = tu_h_run(&h);
        assert_int_equal(cycles, (uint64_t)k * block_cycles(HYPER_SLOTS) + 1);
        assert_memory_equal(h.mem + REC, table + (START + k - 1) * REC_BYTES, REC_BYTES);
        assert_int_equal(tu_get32(h.mem, CUR), START + k);
        assert_memory_equal(h.mem + TAB, table, sizeof table);
        assert_int_equal(tu_get32(h.mem, REC - 4), GUARD);
        assert_int_equal(tu_get32(h.mem, REC + REC_BYTES), GUARD);
        assert_int_equal(tu_get32(h.mem, CUR - 4), GUARD);
        assert_int_equal(tu_get32(h.mem, CUR + 4), GUARD);
        tu_h_free(&h);
    }
    assert_int_equal(6 * HYPER_SLOTS, 78); /* the header's */
}

/* The device loop: K steps of adamw_hyper (its own compute set) then adamw_step in one
 * program, adamw_step's state k pointing at step k's gradient and every state's hyper at the
 * one record adamw_hyper writes; the cursor starts at 0 in front of the table of records for
 * steps 1..K. For K = 1, 2, 3 from the same start: param, m and v equal K steps of adamw.c
 * bit for bit, the cursor is K, and the tile halts at
 * K x (6 x 13 + 2 + 6 x adamw_slots(n) + 2) + 1. */
static void adamw_flow(uint32_t n, int K, const float *param0, const float *grad)
{
    const adamw_cfg cfg = adamw_defaults();
    const alayout L = alayout_of(n, K);
    const uint32_t HST = STATE, REC = L.END, ST0 = STATE + 0x40;
    char main_text[1024];
    size_t c = 0;
    for (int k = 0; k < K; k++)
        c += (size_t)snprintf(main_text + c, sizeof main_text - c,
                              "        li      r1, %u\n        run     adamw_hyper, r1\n"
                              "        join\n        li      r1, %u\n"
                              "        run     adamw_step, r1\n        join\n",
                              HST, ST0 + ASTATE_BYTES * (uint32_t)k);
    snprintf(main_text + c, sizeof main_text - c, "        halt\n");
    const char *names[2] = {"adamw_hyper", "adamw_step"};
    harness h;
    tu_h_prog(&h, main_text, names, 2);
    uint8_t *keep = calloc(3, L.al);
    float *param = malloc(sizeof(float) * (n + 1));
    assert_true(keep && param);
    memcpy(keep, param0, 4 * (size_t)n);
    memcpy(param, param0, 4 * (size_t)n);
    adamw_load(h.mem, &L, &cfg, keep, grad, K);
    tu_put32(h.mem, HST + 0, REC);
    tu_put32(h.mem, HST + 4, L.TAB);
    tu_put32(h.mem, HST + 8, L.CUR);
    for (int k = 0; k < K; k++) {
        const uint32_t ptr[4] = {L.P, L.G + (uint32_t)k * L.al, L.M, L.V};
        adamw_state(h.mem, ST0 + ASTATE_BYTES * (uint32_t)k, &cfg, ptr, n, REC);
    }
    const uint64_t cycles = tu_h_run(&h);
    assert_int_equal(cycles,
                     (uint64_t)K * (block_cycles(HYPER_SLOTS) + block_cycles(adamw_slots(n))) + 1);
    adamw o;
    err e;
    err_clear(&e);
    assert_int_equal(adamw_init(&o, n, &cfg, &e), 0);
    for (int t = 1; t <= K; t++)
        adamw_step(&o, param, grad + (size_t)(t - 1) * n);
    adamw_check(h.mem, &L, &o, param, "adamw_hyper + adamw_step", K);
    adamw_check_inputs(h.mem, &L, &cfg, grad, K);
    assert_int_equal(tu_get32(h.mem, L.CUR), (uint32_t)K);
    assert_memory_equal(h.mem + REC, h.mem + L.TAB + REC_BYTES * (uint32_t)(K - 1), REC_BYTES);
    adamw_free(&o);
    tu_h_free(&h);
    free(keep);
    free(param);
}

static void test_adamw_flow(void **state)
{
    (void)state;
    rng_s = 0x5eed0005;
    enum { N = 37, STEPS = 3 };
    float param0[N], grad[N * STEPS];
    adamw_data(param0, grad, N, STEPS);
    for (int K = 1; K <= STEPS; K++)
        adamw_flow(N, K, param0, grad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xent_batch),  cmocka_unit_test(test_xent_workers),
        cmocka_unit_test(test_reduce_add),  cmocka_unit_test(test_adamw),
        cmocka_unit_test(test_adamw_hyper), cmocka_unit_test(test_adamw_flow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
