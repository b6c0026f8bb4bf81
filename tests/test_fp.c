/* test_fp: every fp opcode (isa/opcodes.def, "fp32", "fp32 division, square root, exp and log"
 * and "f32v2"; the AMP in test_amp.c), its result bits and its worker cost, against references
 * written here.
 *
 * Results: each case runs one instruction in a worker (inputs in r2..r7 by li, so r2/r3, r4/r5
 * and r6/r7 are the pairs), stores r8 and r9 to tile memory and reads them back. The expected
 * bits come from plain C float arithmetic (the build is -std=c11, so no contraction: a * b + c
 * rounds twice; a product meant to round on its own goes through a volatile), fmaf for the
 * fused ones, and for fp16 a value-based converter written here (ldexp/rint in double, not the
 * simulator's bit shuffling). The inputs make every rounding show: 0.1f, 1/3, products whose
 * fused and unfused results differ (checked here before use), ties, -0, NaN, both operand
 * orders. fdiv, fsqrt, fexp and flog: C's / and sqrtf, and exp and log in double rounded
 * once, as their semantics say, on volatile operands (so the compiler cannot fold a NaN's sign
 * differently); the inputs add the specials (0, -0, inf, NaN, negatives, overflow, subnormal
 * results), quotients that a multiply by the reciprocal gets wrong (checked here), and exp and
 * log arguments where glibc's single-precision expf and logf miss the double-based result
 * (glibc 2.36), so a handler that used those would fail. Costs: a worker reads $ccount, issues
 * the instruction K times, reads $ccount again; docs/isa.md ("Timing") gives the difference;
 * the worker's instruction count must still be one per instruction. What it leaves out: fp
 * exceptions and flags, which the ISA does not model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "host/system.h"
#include "tests/testutil.h"
#include "isa/asm.h"

enum { OUT = 0x4000 }; /* where a case stores its results: far above its text */

/* Assemble and run src on one tile; n words from OUT into out; the workers' instruction count
 * into *winsn when it is not NULL. */
static void run_src(const char *src, uint32_t *out, unsigned n, uint64_t *winsn)
{
    err e;
    err_clear(&e);
    isa_prog prog;
    tu_assemble("fp.s", src, &prog);
    sys *sy = tu_system(1, 1, 1, 1000000, &prog);
    if (eng_run(sys_engine(sy), &e) != ERR_OK)
        fail_msg("%s\n%s", e.msg, src);
    memcpy(out, eng_tile_mem(sys_engine(sy), 0, 0) + OUT, 4 * n);
    if (winsn) {
        eng_stats st;
        eng_get_stats(sys_engine(sy), &st);
        *winsn = 0;
        for (unsigned c = 1; c < TILE_NCTX; c++)
            *winsn += st.ninsn[c];
    }
    sys_free(sy);
    isa_prog_free(&prog);
}

/* A worker with r2..r7 = in[], then `body`, then r8, r9 stored at OUT (12 instructions and
 * the body's). */
static void run_worker_n(const char *body, const uint32_t in[6], uint32_t out[2], uint64_t *winsn)
{
    char src[4096];
    snprintf(src, sizeof src,
             "main:   run     w, r0\n"
             "        join\n"
             "        halt\n"
             "w:      li      r2, 0x%x\n        li      r3, 0x%x\n"
             "        li      r4, 0x%x\n        li      r5, 0x%x\n"
             "        li      r6, 0x%x\n        li      r7, 0x%x\n"
             "        li      r8, 0xdeadbeef\n        li      r9, 0xdeadbeef\n"
             "%s"
             "        li      r1, %d\n"
             "        st32    r8, [r1+0]\n"
             "        st32    r9, [r1+4]\n"
             "        exit\n",
             in[0], in[1], in[2], in[3], in[4], in[5], body, OUT);
    run_src(src, out, 2, winsn);
}

static void run_worker(const char *body, const uint32_t in[6], uint32_t out[2])
{
    run_worker_n(body, in, out, NULL);
}

/* Got bits against expected ones: a NaN only needs to be a NaN of the same sign (the ISA's
 * semantics say nothing about payloads); anything else must match exactly. */
static void check_f(const char *what, uint32_t got, uint32_t want)
{
    if (isnan(tu_bf(want)) && isnan(tu_bf(got)) && (got >> 31) == (want >> 31))
        return;
    if (got != want)
        fail_msg("%s: got 0x%08x (%a), want 0x%08x (%a)", what, got, (double)tu_bf(got), want,
                 (double)tu_bf(want));
}

/* ---- references ---- */

static uint32_t r_fadd(float a, float b)
{
    return tu_fb(a + b);
}
static uint32_t r_fsub(float a, float b)
{
    return tu_fb(a - b);
}
static uint32_t r_fmul(float a, float b)
{
    return tu_fb(a * b);
}
static uint32_t r_fmin(float a, float b)
{
    return tu_fb(fminf(a, b));
}
static uint32_t r_fmax(float a, float b)
{
    return tu_fb(fmaxf(a, b));
}
/* volatile: computed at run time, as the simulator does (a folded 0 / 0 may differ in sign) */
static uint32_t r_fdiv(float a, float b)
{
    volatile float x = a, y = b;
    return tu_fb(x / y);
}
static uint32_t r_fcmplt(float a, float b)
{
    return a < b;
}
static uint32_t r_fcmple(float a, float b)
{
    return a <= b;
}
static uint32_t r_fcmpeq(float a, float b)
{
    return a == b;
}

static uint32_t r_fneg(uint32_t a)
{
    return tu_fb(-tu_bf(a));
}
static uint32_t r_fabs(uint32_t a)
{
    return tu_fb(fabsf(tu_bf(a)));
}
static uint32_t r_itof(uint32_t a)
{
    return tu_fb((float)(int32_t)a);
}
static uint32_t r_i8tof(uint32_t a)
{
    return tu_fb((float)(int8_t)(uint8_t)(a & 0xff));
}

static uint32_t r_fsqrt(uint32_t a)
{
    volatile float x = tu_bf(a);
    return tu_fb(sqrtf(x));
}
/* "(float)exp((double)ra)", "(float)log((double)ra)": one rounding of the double result */
static uint32_t r_fexp(uint32_t a)
{
    volatile double x = tu_bf(a);
    return tu_fb((float)exp(x));
}
static uint32_t r_flog(uint32_t a)
{
    volatile double x = tu_bf(a);
    return tu_fb((float)log(x));
}

/* "(int32)ra, toward zero, saturating, NaN -> 0" */
static uint32_t r_ftoi(uint32_t a)
{
    float f = tu_bf(a);
    if (isnan(f))
        return 0;
    if (f >= 2147483648.0f)
        return (uint32_t)INT32_MAX;
    if (f < -2147483648.0f)
        return (uint32_t)INT32_MIN;
    return (uint32_t)(int32_t)truncf(f);
}

/* ---- inputs ---- */

#define THIRD (1.0f / 3.0f)
#define P12 0x3f800800u /* 1 + 2^-12: squared, 1 + 2^-11 + 2^-24 is a tie (rounds to 1 + 2^-11) */
#define M11 0xbf801000u /* -(1 + 2^-11) */

static const float bin_in[][2] = {
    {0.1f, THIRD}, {THIRD, 0.1f},       {0.1f, 0.1f},   {-0.0f, 0.0f},
    {0.0f, -0.0f}, {NAN, 1.0f},         {1.0f, NAN},    {-2.5f, 0.7f},
    {0.7f, -2.5f}, {16777216.0f, 1.0f}, {3e38f, 3e38f}, {1e-30f, 1e-20f},
};

/* zsign: the sign of a zero result from two zero inputs is free (C leaves fminf(-0, +0) and
 * fmaxf's to the implementation, and the ISA's semantics say "fminf"). */
typedef struct bin_op {
    const char *name;
    uint32_t (*ref)(float, float);
    int zsign;
} bin_op;

static const bin_op bin_ops[] = {
    {"fadd", r_fadd, 0},     {"fsub", r_fsub, 0},     {"fmul", r_fmul, 0},
    {"fmin", r_fmin, 1},     {"fmax", r_fmax, 1},     {"fcmplt", r_fcmplt, 0},
    {"fcmple", r_fcmple, 0}, {"fcmpeq", r_fcmpeq, 0}, {"fdiv", r_fdiv, 0},
};

static void check_bin(const char *what, const bin_op *op, float a, float b, uint32_t got)
{
    uint32_t want = op->ref(a, b);
    if (op->zsign && a == 0 && b == 0 && (got & 0x7fffffffu) == 0)
        return;
    check_f(what, got, want);
}

static void test_binary(void **state)
{
    (void)state;
    for (size_t o = 0; o < sizeof bin_ops / sizeof bin_ops[0]; o++)
        for (size_t k = 0; k < sizeof bin_in / sizeof bin_in[0]; k++) {
            char body[128], what[160];
            uint32_t in[6] = {tu_fb(bin_in[k][0]), 0, tu_fb(bin_in[k][1]), 0, 0, 0}, out[2];
            snprintf(body, sizeof body, "        %s r8, r2, r4\n", bin_ops[o].name);
            run_worker(body, in, out);
            snprintf(what, sizeof what, "%s %a, %a", bin_ops[o].name, (double)bin_in[k][0],
                     (double)bin_in[k][1]);
            check_bin(what, &bin_ops[o], bin_in[k][0], bin_in[k][1], out[0]);
            assert_int_equal(out[1], 0xdeadbeef); /* r9 untouched */
        }
}

/* How a unary result is compared: as fp32 (any NaN of the sign passes), as bits (integers and
 * the sign-bit operations), as fp16 (any fp16 NaN of the sign passes, high half 0). */
enum { CMP_F32, CMP_BITS, CMP_F16 };

typedef struct un_op {
    const char *name;
    uint32_t (*ref)(uint32_t);
    int cmp;
    uint32_t in[16];
    unsigned n;
} un_op;

static const un_op un_ops[] = {
    {"fneg", r_fneg, CMP_BITS, {0x3dcccccd, 0x00000000, 0x80000000, 0xff800000, 0x7fc00000}, 5},
    {"fabs", r_fabs, CMP_BITS, {0xbdcccccd, 0x80000000, 0x3eaaaaab, 0xff800000, 0xffc00000}, 5},
    /* 2^24 + 1 and -(2^24 + 3) need rounding (to even); INT32_MAX rounds up to 2^31 */
    {"itof",
     r_itof,
     CMP_F32,
     {7, 0xffffffff, 16777217, (uint32_t)-16777219, 0x7fffffff, 0x80000000},
     6},
    /* 2.7, -2.7, 1e10, -1e10, NaN, inf, -inf, -0.999, 2^31 - 128 (largest fp32 < 2^31) */
    {"ftoi",
     r_ftoi,
     CMP_BITS,
     {0x402ccccd, 0xc02ccccd, 0x501502f9, 0xd01502f9, 0x7fc00000, 0x7f800000, 0xff800000,
      0xbf7fbe77, 0x4effffff},
     9},
    /* high half ignored; 1/3, largest normal, smallest subnormal, largest subnormal,
       smallest normal, -0, -inf, NaN */
    {"f16tof",
     tu_f16_to_f32,
     CMP_F32,
     {0xabcd3c00, 0x3555, 0x7bff, 0x0001, 0x03ff, 0x0400, 0x8000, 0xfc00, 0x7e00},
     9},
    /* 0.1, -1/3, 1 + 2^-11 (tie, to even: 1), 1 + 3 x 2^-11 (tie, up), 65519 (to 65504),
       65520 (to inf), 2^-25 (tie, to 0), 3 x 2^-25 (tie, to even 2 x 2^-24), 2^-14 x (1 - 2^-11) (rounds
       up out of the subnormals), -0, NaN, 1e-10 (to 0) */
    {"ftof16",
     tu_f32_to_f16,
     CMP_F16,
     {0x3dcccccd, 0xbeaaaaab, 0x3f801000, 0x3f803000, 0x477fef00, 0x477ff000, 0x33000000,
      0x33c00000, 0x387ff800, 0x80000000, 0x7fc00000, 0x2edbe6ff},
     12},
    {"i8tof", r_i8tof, CMP_F32, {0x80, 0x17f, 0xff, 0x12345600, 0x01}, 5},
    /* 2, 0.1, 3, 1 + 2^-23 (sqrt 1 + 2^-24 - ..., rounds down to 1), smallest and largest
       subnormal, largest normal, 0, -0 (stays -0), -1 (NaN), inf, -inf (NaN), NaN */
    {"fsqrt",
     r_fsqrt,
     CMP_F32,
     {0x40000000, 0x3dcccccd, 0x40400000, 0x3f800001, 0x00000001, 0x007fffff, 0x7f7fffff,
      0x00000000, 0x80000000, 0xbf800000, 0x7f800000, 0xff800000, 0x7fc00000},
     13},
    /* 0, -0 (both 1), 1 (e), 0.1, -0.500475883 and 0x1.fefe02p-16 (glibc's expf is an ulp off
       on both), 88.72283 (largest finite result), 88.72284 (overflows to inf), -87.33654
       (near the smallest normal), -100 (a subnormal result), -104 (underflows to 0), inf,
       -inf (0), NaN */
    {"fexp",
     r_fexp,
     CMP_F32,
     {0x00000000, 0x80000000, 0x3f800000, 0x3dcccccd, 0xbf001f30, 0x37ff7f01, 0x42b17217,
      0x42b17218, 0xc2aeac50, 0xc2c80000, 0xc2d00000, 0x7f800000, 0xff800000, 0x7fc00000},
     14},
    /* 1 (0), 0.1, 2, 10, 1.50017655 (glibc's logf is an ulp off), 9.4726362 (0x41178feb: its
       ln's correctly rounded double is exactly halfway between two floats and the tie goes to
       even, away from the exact value: one of the 5 positive fp32 inputs where flog is not
       correctly rounded with glibc 2.36, the semantics' "rare double-rounding cases"),
       smallest subnormal, largest normal, 0 and -0 (-inf), -1 (NaN), inf, -inf (NaN), NaN */
    {"flog",
     r_flog,
     CMP_F32,
     {0x3f800000, 0x3dcccccd, 0x40000000, 0x41200000, 0x3fc005c9, 0x41178feb, 0x00000001,
      0x7f7fffff, 0x00000000, 0x80000000, 0xbf800000, 0x7f800000, 0xff800000, 0x7fc00000},
     14},
};

static void check_un(const char *what, int cmp, uint32_t got, uint32_t want)
{
    int h_nan = (want & 0x7c00u) == 0x7c00u && (want & 0x3ffu);
    if (cmp == CMP_F32)
        check_f(what, got, want);
    else if (cmp == CMP_F16 && h_nan && (got & 0xffff7c00u) == (want & 0xfc00u) && (got & 0x3ffu))
        return;
    else if (got != want)
        fail_msg("%s: got 0x%08x, want 0x%08x", what, got, want);
}

static void test_unary(void **state)
{
    (void)state;
    for (size_t o = 0; o < sizeof un_ops / sizeof un_ops[0]; o++)
        for (unsigned k = 0; k < un_ops[o].n; k++) {
            char body[128], what[160];
            uint32_t in[6] = {un_ops[o].in[k], 0, 0, 0, 0, 0}, out[2];
            snprintf(body, sizeof body, "        %s r8, r2\n", un_ops[o].name);
            run_worker(body, in, out);
            snprintf(what, sizeof what, "%s 0x%08x", un_ops[o].name, un_ops[o].in[k]);
            check_un(what, un_ops[o].cmp, out[0], un_ops[o].ref(un_ops[o].in[k]));
        }
}

/* The reference converters themselves, on values known by hand (so a slip in them cannot
 * hide a slip in the simulator). */
static void test_fp16_reference(void **state)
{
    (void)state;
    assert_int_equal(tu_f32_to_f16(tu_fb(1.0f)), 0x3c00);
    assert_int_equal(tu_f32_to_f16(tu_fb(0.1f)), 0x2e66);
    assert_int_equal(tu_f32_to_f16(tu_fb(-2.0f)), 0xc000);
    assert_int_equal(tu_f32_to_f16(tu_fb(65504.0f)), 0x7bff);
    assert_int_equal(tu_f32_to_f16(0x3f801000), 0x3c00);
    assert_int_equal(tu_f32_to_f16(0x3f803000), 0x3c02);
    assert_int_equal(tu_f32_to_f16(0x33800000), 0x0001); /* 2^-24 */
    assert_int_equal(tu_f32_to_f16(0x387ff800), 0x0400);
    assert_int_equal(tu_f16_to_f32(0x3c00), tu_fb(1.0f));
    assert_int_equal(tu_f16_to_f32(0x0001), 0x33800000);
    assert_int_equal(tu_f16_to_f32(0xc000), tu_fb(-2.0f));
    assert_int_equal(tu_f16_to_f32(0x7bff), tu_fb(65504.0f));
    assert_int_equal(r_fsqrt(tu_fb(4.0f)), tu_fb(2.0f));
    assert_int_equal(r_fsqrt(0x80000000), 0x80000000);
    assert_int_equal(r_fexp(0), tu_fb(1.0f));
    assert_int_equal(r_fexp(tu_fb(1.0f)), 0x402df854); /* e */
    assert_int_equal(r_fexp(0xff800000), 0);
    assert_int_equal(r_flog(tu_fb(1.0f)), 0);
    assert_int_equal(r_flog(0x80000000), 0xff800000);
    assert_int_equal(r_fdiv(1.0f, 3.0f), 0x3eaaaaab);
}

/* fdiv beyond test_binary's inputs: the first four quotients differ from a x (1 / b) rounded
 * twice (asserted), so a reciprocal-multiply divide fails; then division by +0 and -0, 0 / 0,
 * inf / inf, inf and 0 in either place, overflow, and subnormal quotients. Each pair runs in
 * both operand orders. */
static const float div_in[][2] = {
    {5.0f, 3.0f},           {0.1f, 0.3f},      {3.0f, 7.0f},    {-2.5f, 0.7f},
    {1.0f, 0.0f},           {-1.0f, 0.0f},     {1.0f, -0.0f},   {0.0f, 0.0f},
    {INFINITY, INFINITY},   {INFINITY, -2.0f}, {3e38f, 1e-10f}, {1e-30f, 1e10f},
    {1.1754944e-38f, 3.0f},
};

static void test_fdiv(void **state)
{
    (void)state;
    for (size_t k = 0; k < 4; k++) {
        volatile float a = div_in[k][0], b = div_in[k][1], r = 1.0f / b;
        assert_int_not_equal(r_fdiv(a, b), tu_fb(tu_rmul(a, r)));
    }
    for (size_t k = 0; k < sizeof div_in / sizeof div_in[0]; k++)
        for (int sw = 0; sw <= 1; sw++) {
            float a = div_in[k][sw], b = div_in[k][!sw];
            uint32_t in[6] = {tu_fb(a), 0, tu_fb(b), 0, 0, 0}, out[2];
            char what[96];
            run_worker("        fdiv r8, r2, r4\n", in, out);
            snprintf(what, sizeof what, "fdiv %a, %a", (double)a, (double)b);
            check_f(what, out[0], r_fdiv(a, b));
        }
}

/* fma triples: each one's fused result differs from the twice-rounded one (asserted). */
static const float fma_in[][3] = {
    {0, 0, 0},            /* P12 x P12 - (1 + 2^-11): fused 2^-24, unfused 0 (filled in below) */
    {0.1f, 10.0f, -1.0f}, /* 0.1f x 10 = 1 + 2^-26 + ...: fused 1.49e-8, unfused 0 */
    {THIRD, 3.0f, -1.0f}, /* 1/3f x 3 = 1 + 2^-25: fused 2^-25, unfused 0 */
    {0.1f, THIRD, 0.2f},
};

static void fma_inputs(float out[][3], size_t n)
{
    memcpy(out, fma_in, n * sizeof out[0]);
    out[0][0] = out[0][1] = tu_bf(P12);
    out[0][2] = tu_bf(M11);
    for (size_t k = 0; k < 3; k++) /* the first three must tell fused from unfused */
        assert_int_not_equal(tu_fb(fmaf(out[k][0], out[k][1], out[k][2])),
                             tu_fb(tu_rmul(out[k][0], out[k][1]) + out[k][2]));
}

static void test_fma(void **state)
{
    (void)state;
    enum { N = sizeof fma_in / sizeof fma_in[0] };
    float in3[N][3];
    fma_inputs(in3, N);
    for (size_t k = 0; k < N; k++) {
        uint32_t in[6] = {tu_fb(in3[k][0]), 0, tu_fb(in3[k][1]), 0, tu_fb(in3[k][2]), 0}, out[2];
        run_worker("        fma r8, r2, r4, r6\n", in, out);
        check_f("fma", out[0], tu_fb(fmaf(in3[k][0], in3[k][1], in3[k][2])));
        /* operand order: ra * rb + rc, not rb + ... (swap rb and rc) */
        uint32_t sw[6] = {in[0], 0, in[4], 0, in[2], 0};
        run_worker("        fma r8, r2, r4, r6\n", sw, out);
        check_f("fma swapped", out[0], tu_fb(fmaf(in3[k][0], in3[k][2], in3[k][1])));
    }
}

/* f32v2: lane 0 and lane 1 get different inputs, so a lane mix-up shows. */
static const bin_op v2_ops[] = {
    {"v2add", r_fadd, 0}, {"v2sub", r_fsub, 0}, {"v2mul", r_fmul, 0},
    {"v2max", r_fmax, 1}, {"v2min", r_fmin, 1},
};

static void test_v2(void **state)
{
    (void)state;
    for (size_t o = 0; o < sizeof v2_ops / sizeof v2_ops[0]; o++)
        for (size_t k = 0; k + 1 < sizeof bin_in / sizeof bin_in[0]; k++) {
            const float *l0 = bin_in[k], *l1 = bin_in[k + 1];
            uint32_t in[6] = {tu_fb(l0[0]), tu_fb(l1[0]), tu_fb(l0[1]), tu_fb(l1[1]), 0, 0}, out[2];
            char body[128], what[160];
            snprintf(body, sizeof body, "        %s r8, r2, r4\n", v2_ops[o].name);
            run_worker(body, in, out);
            snprintf(what, sizeof what, "%s lane 0 of case %zu", v2_ops[o].name, k);
            check_bin(what, &v2_ops[o], l0[0], l0[1], out[0]);
            snprintf(what, sizeof what, "%s lane 1 of case %zu", v2_ops[o].name, k);
            check_bin(what, &v2_ops[o], l1[0], l1[1], out[1]);
        }
    enum { N = sizeof fma_in / sizeof fma_in[0] };
    float t[N][3];
    fma_inputs(t, N);
    for (size_t k = 0; k + 1 < N; k++) {
        uint32_t in[6] = {tu_fb(t[k][0]),     tu_fb(t[k + 1][0]), tu_fb(t[k][1]),
                          tu_fb(t[k + 1][1]), tu_fb(t[k][2]),     tu_fb(t[k + 1][2])},
                 out[2];
        run_worker("        v2fma r8, r2, r4, r6\n", in, out);
        check_f("v2fma lane 0", out[0], tu_fb(fmaf(t[k][0], t[k][1], t[k][2])));
        check_f("v2fma lane 1", out[1], tu_fb(fmaf(t[k + 1][0], t[k + 1][1], t[k + 1][2])));
    }
}

/* Worker costs. A worker issues once per 6 tile cycles and an instruction of s slots takes
 * 6 s (docs/isa.md, Timing). $ccount reads the cycle of the `get`'s own issue, so between
 * the two gets lie the first get (1 slot) and K instructions: 6 x (1 + K x s) cycles. With
 * K = 4: 30 for a 1-slot instruction, 198 for ampst's 8. The slots column of docs/isa.md
 * on Mk2: 1 for every other fp32, f32v2, ampz, f32amp and f16amp; fdiv 3, fsqrt 5, fexp 3,
 * flog 6 (poplibs' per-instruction cycles, isa/opcodes.def); 8 for ampst (64 bytes at 8 B per
 * cycle). Each instruction counts once in the worker's instruction count, whatever its slots:
 * 12 + 3 + K (run_worker's; the gets and the sub; the K). tests/test_amp.c has the
 * AMP's costs on other rates. */
typedef struct cost_case {
    const char *insn;
    unsigned slots;
} cost_case;

static const cost_case costs[] = {
    {"fadd r8, r2, r4", 1},    {"fsub r8, r2, r4", 1},      {"fmul r8, r2, r4", 1},
    {"fma r8, r2, r4, r6", 1}, {"fmin r8, r2, r4", 1},      {"fmax r8, r2, r4", 1},
    {"fcmplt r8, r2, r4", 1},  {"fcmple r8, r2, r4", 1},    {"fcmpeq r8, r2, r4", 1},
    {"fneg r8, r2", 1},        {"fabs r8, r2", 1},          {"itof r8, r2", 1},
    {"ftoi r8, r2", 1},        {"f16tof r8, r2", 1},        {"ftof16 r8, r2", 1},
    {"i8tof r8, r2", 1},       {"fdiv r8, r2, r4", 3},      {"fsqrt r8, r2", 5},
    {"fexp r8, r2", 3},        {"flog r8, r2", 6},          {"v2add r8, r2, r4", 1},
    {"v2sub r8, r2, r4", 1},   {"v2mul r8, r2, r4", 1},     {"v2max r8, r2, r4", 1},
    {"v2min r8, r2, r4", 1},   {"v2fma r8, r2, r4, r6", 1}, {"ampz", 1},
    {"f32amp r2, r4", 1},      {"f16amp r2, r4", 1},        {"ampst", 8},
};

static void test_cost(void **state)
{
    (void)state;
    enum { K = 4 };
    for (size_t c = 0; c < sizeof costs / sizeof costs[0]; c++) {
        char body[512] = "        get     r10, $ccount\n", line[64];
        for (int k = 0; k < K; k++) {
            snprintf(line, sizeof line, "        %s\n", costs[c].insn);
            strcat(body, line);
        }
        strcat(body, "        get     r11, $ccount\n"
                     "        sub     r8, r11, r10\n");
        /* r2, r4: 16-aligned partials and inputs for the AMP; fp values 1.0 elsewhere */
        uint32_t in[6] = {0x5000, 0x3f800000, 0x6000, 0x3f800000, 0x3f800000, 0x3f800000};
        uint32_t out[2];
        uint64_t n;
        run_worker_n(body, in, out, &n);
        uint32_t want = 6 * (1 + K * costs[c].slots);
        if (out[0] != want)
            fail_msg("%s: %u cycles for 1 + %d issues, want %u (%u slots each)", costs[c].insn,
                     out[0], K, want, costs[c].slots);
        if (n != 12 + 3 + K)
            fail_msg("%s: the worker counted %llu instructions, want %d", costs[c].insn,
                     (unsigned long long)n, 12 + 3 + K);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_reference),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_fdiv),
        cmocka_unit_test(test_fma),
        cmocka_unit_test(test_v2),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
