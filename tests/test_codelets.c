/* test_codelets: the elementwise and pooling worker codelets of workloads/codelets/ (relu_fwd,
 * relu_bwd, bias_add, bias_grad, maxpool_relu_fwd, maxpool_relu_bwd, acc_add, scale_add, norm_u8,
 * f16_to_f32) run through the real engine on one Mk2 tile, against the C layers of
 * workloads/mnist/layers.c (f16_to_f32: against tests/testutil.h's tu_f16_to_f32).
 *
 * Each case assembles a small harness with the codelet (wl_codelet), writes the inputs and the
 * vertex state(s) into tile memory, runs, and reads the outputs back. Results are compared bit
 * for bit: with mlayer_relu_fwd/bwd, mlayer_pool_relu_fwd/bwd and mlayer_conv_bwd's bias
 * gradient (bias_grad sums in its order), and with plain C loops where the C layers have no
 * kernel of their own (bias_add: y + b; acc_add: d + s; scale_add: fmaf(k, s, d)). Inputs come
 * from a fixed seed and include -0, +0, ties, subnormals, infinities and (where the codelet is
 * exact for them) NaN.
 *
 * Cycles are asserted exactly against the closed forms of the codelets' headers. The harness:
 *
 *     get  r2, $ccount      # cycle c - 1
 *     run  NAME, r1         # cycle c: the worker's first issue at c + 6 (docs/timing.md)
 *     join
 *     get  r3, $ccount      # measured = r3 - r2
 *
 * A worker of S slots exits at e = c + 6 + 6 (S - 1) = c + 6S. After `run` (6 cycles) the
 * supervisor is at c + 6, whose slot the worker owns, so `join` issues at c + 7 in the next
 * slot and completes at max(c + 13, e + 1) = c + 6S + 1 (S >= 2); the second get issues there.
 * So measured = 6S + 2.
 *
 * Six workers: `runall NAME.all, r1` at c starts worker k at c + 6 + k with r0 = the array of
 * six states; NAME.all picks state k and adds 3 slots, so worker k has S'k = Sk + 3 and exits
 * at ek = c + 6 + k + 6 (S'k - 1) = c + k + 6 S'k. Its slot is free from ek + 1 and the
 * supervisor next sees it at ek + 6, so `join` issues at J = c + min_k (k + 6 S'k + 6) and
 * completes at max(J + 6, max_k ek + 1), where the second get issues: measured = that - c + 1. */
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
#include "tests/testutil.h"
#include "isa/asm.h"
#include "workloads/codelets.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/layers.h"

enum {
    RES = 0x6000,    /* the harness stores the measured cycles here */
    STATES = 0x6100, /* the vertex state(s) */
    DATA = 0x8000,   /* tensors from here (the programs end far below) */
};

/* ---- random inputs from a fixed seed ---- */

static uint64_t seed = 0x5eed0c0de1e7ull;

static uint32_t rnd(void)
{
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* A float: mostly uniform in (-4, 4) with full mantissas; some small integers (ties), +0, -0,
 * subnormals, +-inf and (nan != 0) NaN. */
static float rnd_float(int nan)
{
    uint32_t k = rnd() % 40;
    switch (k) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return tu_bf(rnd() & 0x807fffffu); /* subnormal, either sign */
    case 3: return (rnd() & 1) ? INFINITY : -INFINITY;
    case 4: return nan ? tu_bf(0x7fc00000u | (rnd() & 0x803fffffu)) : 1.0f;
    case 5:
    case 6:
    case 7:
    case 8: return (float)((int)(rnd() % 5) - 2); /* -2..2: ties */
    default: return ((float)rnd() / 4294967296.0f - 0.5f) * 8.0f;
    }
}

static void fill(float *a, size_t n, int nan)
{
    for (size_t i = 0; i < n; i++)
        a[i] = rnd_float(nan);
}

/* ---- the rig: harness + codelet on one tile ---- */

typedef struct rig {
    isa_prog prog;
    sys *sy;
    uint8_t *mem;
    uint32_t next; /* bump allocator for tile addresses */
} rig;

/* Assemble the harness with codelet `name`, started by run (six = 0) or runall NAME.all. */
static void rig_open(rig *r, const char *name, int six)
{
    const char *cl = wl_codelet(name);
    assert_non_null(cl);
    char start[128];
    snprintf(start, sizeof start, six ? "runall  %s.all, r1" : "run     %s, r1", name);
    size_t len = strlen(cl) + 1024;
    char *full = malloc(len);
    assert_non_null(full);
    snprintf(full, len,
             "        .text\n"
             "        .global main\n"
             "main:   li      r1, %d\n"
             "        get     r2, $ccount\n"
             "        %s\n"
             "        join\n"
             "        get     r3, $ccount\n"
             "        sub     r3, r3, r2\n"
             "        li      r4, %d\n"
             "        st32    r3, [r4+0]\n"
             "        halt\n"
             "%s",
             STATES, start, RES, cl);
    tu_assemble(name, full, &r->prog);
    assert_true(r->prog.size <= RES);
    r->sy = tu_system(1, 1, 1, 100000000, &r->prog);
    r->mem = eng_tile_mem(sys_engine(r->sy), 0, 0);
    assert_non_null(r->mem);
    r->next = DATA;
    free(full);
}

/* A tile address for `bytes`, aligned to `align`, then moved on by `skew` bytes (to show a
 * codelet needs no more alignment than its header says). */
static uint32_t rig_alloc(rig *r, size_t bytes, uint32_t align, uint32_t skew)
{
    uint32_t a = ((r->next + 63u) & ~63u) + skew;
    assert_true(a % align == 0);
    r->next = a + (uint32_t)bytes + 64u;
    assert_true(r->next < 600000u);
    return a;
}

static void put(rig *r, uint32_t addr, const void *p, size_t n)
{
    memcpy(r->mem + addr, p, n);
}

static void get(rig *r, uint32_t addr, void *p, size_t n)
{
    memcpy(p, r->mem + addr, n);
}

/* Vertex state k (words w[0..nw-1]) in the array at STATES. */
static void put_state(rig *r, unsigned k, const uint32_t *w, unsigned nw)
{
    put(r, STATES + 4u * nw * k, w, 4u * nw);
}

/* Run to the end; the measured cycles. */
static uint32_t rig_run(rig *r)
{
    err e;
    err_clear(&e);
    if (eng_run(sys_engine(r->sy), &e) != ERR_OK)
        fail_msg("%s", e.msg);
    uint32_t c;
    get(r, RES, &c, 4);
    return c;
}

static void rig_close(rig *r)
{
    sys_free(r->sy);
    isa_prog_free(&r->prog);
}

/* measured cycles for one worker of S slots, and for six (the derivations at the top) */
static uint32_t cyc1(uint32_t S)
{
    return 6 * S + 2;
}

static uint32_t cyc6(const uint32_t S[6])
{
    uint32_t jmin = UINT32_MAX, emax = 0;
    for (uint32_t k = 0; k < 6; k++) {
        uint32_t s = S[k] + 3; /* NAME.all: get, muli, add */
        uint32_t j = k + 6 * s + 6, e = k + 6 * s;
        jmin = j < jmin ? j : jmin;
        emax = e > emax ? e : emax;
    }
    uint32_t done = jmin + 6 > emax + 1 ? jmin + 6 : emax + 1;
    return done + 1;
}

/* Bit for bit; with nan_any, a NaN matches any NaN (the arithmetic codelets: IEEE 754 leaves
 * open which payload an operation on two NaNs returns, and the compiler of this test or of the
 * simulator may swap a commutative operation's operands). */
static void assert_bits_nan(const float *got, const float *want, size_t n, const char *what,
                            size_t size, int nan_any)
{
    for (size_t i = 0; i < n; i++)
        if (tu_fb(got[i]) != tu_fb(want[i]) && !(nan_any && isnan(got[i]) && isnan(want[i])))
            fail_msg("%s (size %zu): element %zu is %08x (%g), want %08x (%g)", what, size, i,
                     tu_fb(got[i]), (double)got[i], tu_fb(want[i]), (double)want[i]);
}

static void assert_bits(const float *got, const float *want, size_t n, const char *what,
                        size_t size)
{
    assert_bits_nan(got, want, n, what, size, 0);
}

/* ---- closed forms: worker slots S, from docs/timing.md and docs/isa.md ----
 * Every opcode these codelets use costs one worker slot, and none exceeds the Mk2 ports in a
 * slot (ld128pi loads 16 bytes = load_bytes_per_cycle, st64pi stores 8 = store_bytes_per_cycle),
 * so the bandwidth rule adds nothing; a worker's branch, taken or not, is one slot; rpt is one
 * slot and runs its body `count` times with no overhead (count 0: skipped). So S = the
 * instructions the worker issues, counted from the code (the headers list them). */

/* relu_fwd: 6 set-up, 7 per group of 4, rpt, 4 per tail float, exit. */
static uint32_t s_relu_fwd(uint32_t n)
{
    return 8 + 7 * (n / 4) + 4 * (n % 4);
}
/* relu_bwd: 7 set-up, 12 per group of 4, rpt, 5 per tail float, exit. */
static uint32_t s_relu_bwd(uint32_t n)
{
    return 9 + 12 * (n / 4) + 5 * (n % 4);
}
/* acc_add: 6 set-up, 6 per group of 4, rpt, 4 per tail float, exit. */
static uint32_t s_acc_add(uint32_t n)
{
    return 8 + 6 * (n / 4) + 4 * (n % 4);
}
/* scale_add: 8 set-up, 6 per group of 4, rpt, 4 per tail float, exit. */
static uint32_t s_scale_add(uint32_t n)
{
    return 10 + 6 * (n / 4) + 4 * (n % 4);
}
/* bias_add: 15 set-up + exit; per image 4; per row 6 + 5 per group of 4 + 3 per tail float. */
static uint32_t s_bias_add(uint32_t C, uint32_t P, uint32_t B)
{
    return 16 + B * (4 + C * (6 + 5 * (P / 4) + 3 * (P % 4)));
}
/* bias_grad: 2 set-up + exit; per channel 16; per row 26 + 6 per step of 8 + 2 per tail. */
static uint32_t s_bias_grad(uint32_t C, uint32_t P, uint32_t B)
{
    return 3 + C * (16 + B * (26 + 6 * (P / 8) + 2 * (P % 8)));
}
/* maxpool_relu_fwd: 10 set-up + exit; per row 8 + 28 per two windows (w % 4 == 0) or 16 per
 * window (w % 4 == 2). */
static uint32_t s_pool_fwd(uint32_t R, uint32_t w)
{
    return 11 + R * (8 + (w % 4 == 0 ? 28 * (w / 4) : 16 * (w / 2)));
}
/* maxpool_relu_bwd: 11 set-up + exit; per row 8 + 27 per two windows or 15 per window. */
static uint32_t s_pool_bwd(uint32_t R, uint32_t w)
{
    return 12 + R * (8 + (w % 4 == 0 ? 27 * (w / 4) : 15 * (w / 2)));
}

/* ---- relu_fwd ---- */

static const uint32_t sizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 64, 101, 1027};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void relu_fwd_case(uint32_t n, int inplace)
{
    float *x = malloc(4 * (n + 1)), *want = malloc(4 * (n + 1)), *got = malloc(4 * (n + 1));
    fill(x, n, 1);
    memcpy(want, x, 4 * n);
    mlayer_relu_fwd(n, want);
    rig r;
    rig_open(&r, "relu_fwd", 0);
    uint32_t ax = rig_alloc(&r, 4 * n, 16, 0);
    uint32_t ay = inplace ? ax : rig_alloc(&r, 4 * n + 4, 8, 8); /* y 8 mod 16 */
    put(&r, ax, x, 4 * n);
    if (!inplace) { /* a guard word after y must survive */
        uint32_t guard = 0xdeadbeef;
        put(&r, ay + 4 * n, &guard, 4);
    }
    uint32_t st[3] = {ax, ay, n};
    put_state(&r, 0, st, 3);
    assert_int_equal(rig_run(&r), cyc1(s_relu_fwd(n)));
    get(&r, ay, got, 4 * n);
    assert_bits(got, want, n, inplace ? "relu_fwd in place" : "relu_fwd", n);
    if (!inplace) {
        uint32_t guard;
        get(&r, ay + 4 * n, &guard, 4);
        assert_int_equal(guard, 0xdeadbeef);
        get(&r, ax, got, 4 * n); /* x untouched */
        assert_bits(got, x, n, "relu_fwd input", n);
    }
    rig_close(&r);
    free(x);
    free(want);
    free(got);
}

/* ---- f16_to_f32 ---- */

/* f16_to_f32: 5 before the rpt body (3 ld32, shri, rpt), 9 per step of 4 halves (ld64pi; per
 * word f16tof, shri, f16tof, st64pi), exit (its header): S = 6 + 9 n/4. By hand for n = 784
 * (the MNIST image): 6 + 9 x 196 = 1770 slots, measured 6 x 1770 + 2 = 10,622 cycles. */
static uint32_t s_f16_to_f32(uint32_t n)
{
    return 6 + 9 * (n / 4);
}

/* Every binary16 (n = 65536: zeros, subnormals, normals, infinities, NaNs of both signs) and
 * short and image-sized runs of random halves, against tu_f16_to_f32 (tests/testutil.h: the
 * value by ldexp, independent of the interpreter's bit shuffling), bit for bit but for NaN,
 * which must stay a NaN of either payload; the input 8-byte but not 16-byte aligned; a guard
 * word after the output; the cycles. */
static void test_f16_to_f32(void **state)
{
    (void)state;
    assert_int_equal(cyc1(s_f16_to_f32(784)), 10622);
    static const uint32_t ns[] = {0, 4, 784, 1000, 65536};
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        uint32_t n = ns[c];
        uint16_t *in = malloc(2 * (size_t)n + 8);
        float *want = malloc(4 * ((size_t)n + 1)), *got = malloc(4 * ((size_t)n + 1));
        for (uint32_t i = 0; i < n; i++) {
            in[i] = (uint16_t)(n == 65536 ? i : rnd() >> 16);
            want[i] = tu_bf(tu_f16_to_f32(in[i]));
        }
        rig r;
        rig_open(&r, "f16_to_f32", 0);
        uint32_t ai = rig_alloc(&r, 2 * (size_t)n, 8, 8),
                 ao = rig_alloc(&r, 4 * (size_t)n + 4, 8, 8);
        put(&r, ai, in, 2 * (size_t)n); /* little-endian: half 2k in the low half of word k */
        uint32_t guard = 0xdeadbeef;
        put(&r, ao + 4 * n, &guard, 4);
        uint32_t st[3] = {ai, ao, n};
        put_state(&r, 0, st, 3);
        assert_int_equal(rig_run(&r), cyc1(s_f16_to_f32(n)));
        get(&r, ao, got, 4 * (size_t)n);
        assert_bits_nan(got, want, n, "f16_to_f32", n, 1);
        for (uint32_t i = 0; i < n; i++) /* a NaN keeps its sign */
            assert_int_equal(tu_fb(got[i]) >> 31, in[i] >> 15);
        get(&r, ao + 4 * n, &guard, 4);
        assert_int_equal(guard, 0xdeadbeef);
        rig_close(&r);
        free(in);
        free(want);
        free(got);
    }
}

/* ---- norm_u8 ---- */

/* norm_u8: 8 set-up (6 ld32, shri, rpt), 43 per step of 4 pixels, exit (its header). */
static uint32_t s_norm_u8(uint32_t n)
{
    return 9 + 43 * (n / 4);
}

/* Every byte value and then random ones, against the host's table (mdata_norm_table: the
 * same fp32 operations), bit for bit; a guard word after the output; the cycles. */
static void test_norm_u8(void **state)
{
    (void)state;
    float lut[256];
    mdata_norm_table(lut);
    static const uint32_t ns[] = {0, 4, 256, 784, 1000};
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        uint32_t n = ns[c];
        uint8_t *in = malloc(n + 4);
        float *want = malloc(4 * (n + 1)), *got = malloc(4 * (n + 1));
        for (uint32_t i = 0; i < n; i++) {
            in[i] = (uint8_t)(i < 256 ? i : (i * 2654435761u) >> 24);
            want[i] = lut[in[i]];
        }
        rig r;
        rig_open(&r, "norm_u8", 0);
        uint32_t ai = rig_alloc(&r, n + 4, 4, 0), ao = rig_alloc(&r, 4 * n + 4, 4, 4);
        put(&r, ai, in, n);
        uint32_t guard = 0xdeadbeef;
        put(&r, ao + 4 * n, &guard, 4);
        uint32_t st[6] = {ai, ao, n, tu_fb(255.0f), tu_fb(MDATA_MEAN), tu_fb(MDATA_STD)};
        put_state(&r, 0, st, 6);
        assert_int_equal(rig_run(&r), cyc1(s_norm_u8(n)));
        get(&r, ao, got, 4 * n);
        assert_bits(got, want, n, "norm_u8", n);
        get(&r, ao + 4 * n, &guard, 4);
        assert_int_equal(guard, 0xdeadbeef);
        rig_close(&r);
        free(in);
        free(want);
        free(got);
    }
}

static void test_relu_fwd(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSIZES; i++) {
        relu_fwd_case(sizes[i], 0);
        relu_fwd_case(sizes[i], 1);
    }
}

/* ---- relu_bwd ---- */

static void relu_bwd_case(uint32_t n, int inplace)
{
    size_t b = 4 * (n + 1);
    float *out = malloc(b), *dy = malloc(b), *want = malloc(b), *got = malloc(b);
    fill(out, n, 1);
    fill(dy, n, 1);
    memcpy(want, dy, 4 * n);
    mlayer_relu_bwd(n, out, want);
    rig r;
    rig_open(&r, "relu_bwd", 0);
    uint32_t ao = rig_alloc(&r, 4 * n, 16, 0), ad = rig_alloc(&r, 4 * n, 16, 0);
    uint32_t ax = inplace ? ad : rig_alloc(&r, 4 * n, 8, 8);
    put(&r, ao, out, 4 * n);
    put(&r, ad, dy, 4 * n);
    uint32_t st[4] = {ao, ad, ax, n};
    put_state(&r, 0, st, 4);
    assert_int_equal(rig_run(&r), cyc1(s_relu_bwd(n)));
    get(&r, ax, got, 4 * n);
    assert_bits(got, want, n, inplace ? "relu_bwd in place" : "relu_bwd", n);
    rig_close(&r);
    free(out);
    free(dy);
    free(want);
    free(got);
}

static void test_relu_bwd(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSIZES; i++) {
        relu_bwd_case(sizes[i], 0);
        relu_bwd_case(sizes[i], 1);
    }
}

/* ---- acc_add and scale_add ---- */

static void axpy_case(const char *name, uint32_t n, float k)
{
    int scaled = strcmp(name, "scale_add") == 0;
    size_t b = 4 * (n + 1);
    float *d = malloc(b), *s = malloc(b), *want = malloc(b), *got = malloc(b);
    fill(d, n, 1);
    fill(s, n, 1);
    for (uint32_t i = 0; i < n; i++)
        want[i] = scaled ? fmaf(k, s[i], d[i]) : d[i] + s[i];
    rig r;
    rig_open(&r, name, 0);
    uint32_t ad = rig_alloc(&r, 4 * n, 16, 0), as = rig_alloc(&r, 4 * n, 16, 0);
    put(&r, ad, d, 4 * n);
    put(&r, as, s, 4 * n);
    uint32_t st[4] = {ad, as, n, tu_fb(k)};
    put_state(&r, 0, st, scaled ? 4 : 3);
    assert_int_equal(rig_run(&r), cyc1(scaled ? s_scale_add(n) : s_acc_add(n)));
    get(&r, ad, got, 4 * n);
    assert_bits_nan(got, want, n, name, n, 1);
    get(&r, as, got, 4 * n);
    assert_bits(got, s, n, "src untouched", n);
    rig_close(&r);
    free(d);
    free(s);
    free(want);
    free(got);
}

static void test_acc_add(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSIZES; i++)
        axpy_case("acc_add", sizes[i], 0);
}

static void test_scale_add(void **state)
{
    (void)state;
    /* k = 1/3: products whose fused and two-rounding sums differ; the test would see it */
    const float k = 1.0f / 3.0f;
    int differ = 0;
    for (int i = 0; i < 1000 && !differ; i++) {
        float d = rnd_float(0), s = rnd_float(0);
        volatile float p = k * s;
        differ = tu_fb(fmaf(k, s, d)) != tu_fb(p + d);
    }
    assert_true(differ);
    for (size_t i = 0; i < NSIZES; i++)
        axpy_case("scale_add", sizes[i], i % 2 ? k : -2.5f);
}

/* ---- bias_add and bias_grad ---- */

typedef struct bias_shape {
    uint32_t C, P, B; /* the worker's channels, positions, images */
    uint32_t ctot;    /* channels of the whole tensor; the worker's are c0.. */
    uint32_t c0;
    uint32_t pad; /* cstride = P rounded up to 4, + pad x 4 */
} bias_shape;

static const bias_shape bias_shapes[] = {
    {1, 1, 1, 1, 0, 0},  {1, 0, 1, 1, 0, 0},  {1, 2, 1, 1, 0, 0},   {1, 3, 1, 1, 0, 0},
    {1, 4, 1, 1, 0, 0},  {1, 5, 1, 1, 0, 0},  {1, 7, 1, 1, 0, 0},   {1, 8, 1, 1, 0, 0},
    {1, 9, 1, 1, 0, 0},  {2, 15, 1, 2, 0, 1}, {3, 17, 2, 5, 1, 0},  {2, 23, 3, 4, 2, 0},
    {4, 64, 2, 6, 1, 0}, {6, 25, 2, 6, 0, 1}, {1, 576, 3, 6, 5, 0}, {3, 30, 1, 3, 0, 0},
    {2, 14, 4, 3, 1, 0},
};
#define NBIAS (sizeof bias_shapes / sizeof bias_shapes[0])

static uint32_t cstride_of(const bias_shape *s)
{
    return ((s->P + 3) & ~3u) + 4 * s->pad;
}

/* The tile layout of a [B][ctot][P] tensor t: rows cstride apart. Returns the address of
 * row (0, 0) and writes the worker's first row into *first. */
static uint32_t put_rows(rig *r, const bias_shape *s, const float *t, uint32_t *first)
{
    uint32_t cs = cstride_of(s), is = s->ctot * cs;
    uint32_t base = rig_alloc(r, 4u * s->B * is, 16, 0);
    for (uint32_t n = 0; n < s->B; n++)
        for (uint32_t c = 0; c < s->ctot; c++) {
            float junk[4] = {NAN, -1e30f, 7.0f, -0.0f}; /* padding must stay */
            put(r, base + 4 * (n * is + c * cs), t + ((size_t)n * s->ctot + c) * s->P, 4 * s->P);
            for (uint32_t i = s->P; i < cs; i++)
                put(r, base + 4 * (n * is + c * cs + i), &junk[i % 4], 4);
        }
    *first = base + 4 * s->c0 * cs;
    return base;
}

static void bias_add_case(const bias_shape *s)
{
    size_t nt = (size_t)s->B * s->ctot * s->P;
    float *y = malloc(4 * nt + 4), *b = malloc(4 * s->ctot), *want = malloc(4 * nt + 4);
    fill(y, nt, 1);
    fill(b, s->ctot, 1);
    memcpy(want, y, 4 * nt);
    for (uint32_t n = 0; n < s->B; n++)
        for (uint32_t c = s->c0; c < s->c0 + s->C; c++)
            for (uint32_t i = 0; i < s->P; i++) {
                float *v = &want[((size_t)n * s->ctot + c) * s->P + i];
                *v = *v + b[c];
            }
    rig r;
    rig_open(&r, "bias_add", 0);
    uint32_t first, base = put_rows(&r, s, y, &first);
    uint32_t ab = rig_alloc(&r, 4 * s->ctot, 4, 4);
    put(&r, ab, b, 4 * s->ctot);
    uint32_t cs = cstride_of(s),
             st[7] = {first, ab + 4 * s->c0, s->C, s->P, s->B, cs, s->ctot * cs};
    put_state(&r, 0, st, 7);
    uint32_t cy = rig_run(&r);
    if (cy != cyc1(s_bias_add(s->C, s->P, s->B)))
        fail_msg("bias_add C %u P %u B %u: %u cycles, want %u", s->C, s->P, s->B, cy,
                 cyc1(s_bias_add(s->C, s->P, s->B)));
    for (uint32_t n = 0; n < s->B; n++)
        for (uint32_t c = 0; c < s->ctot; c++) {
            float got[600];
            const uint32_t row = base + 4 * (n * s->ctot * cs + c * cs);
            get(&r, row, got, 4 * s->P);
            assert_bits_nan(got, want + ((size_t)n * s->ctot + c) * s->P, s->P, "bias_add", s->P,
                            1);
            for (uint32_t i = s->P; i < cs; i++) { /* padding untouched */
                uint32_t v;
                get(&r, row + 4 * i, &v, 4);
                float junk[4] = {NAN, -1e30f, 7.0f, -0.0f};
                assert_int_equal(v, tu_fb(junk[i % 4]));
            }
        }
    rig_close(&r);
    free(y);
    free(b);
    free(want);
}

static void test_bias_add(void **state)
{
    (void)state;
    for (size_t i = 0; i < NBIAS; i++)
        bias_add_case(&bias_shapes[i]);
}

/* db the C layer's way: mlayer_conv_bwd with cin = 1, k = 1, h = 1, w = P is a convolution
 * whose output rows are the P positions, so it adds sum8 of each [n][c] row to db[c], image
 * by image. */
static void conv_db(const bias_shape *s, const float *dy, float *db)
{
    if (s->P == 0) { /* no such convolution: sum8 of nothing is +0, added image by image */
        for (uint32_t n = 0; n < s->B; n++)
            for (uint32_t c = 0; c < s->ctot; c++)
                db[c] += 0.0f;
        return;
    }
    mlayer_conv cv = {.cin = 1, .h = 1, .w = (int)s->P, .cout = (int)s->ctot, .k = 1};
    float *x = calloc((size_t)s->B * s->P, 4), *w = calloc(s->ctot, 4), *dw = calloc(s->ctot, 4);
    float *col = calloc(s->P, 4);
    mlayer_conv_bwd(&cv, (int)s->B, x, w, dy, dw, db, NULL, col, NULL);
    free(x);
    free(w);
    free(dw);
    free(col);
}

/* A float whose exponent spans 2^-12..2^12, so that sums in another order round otherwise. */
static float rnd_wide(void)
{
    float m = (float)(rnd() | 1u) / 4294967296.0f;
    return ldexpf((rnd() & 1) ? m : -m, (int)(rnd() % 25) - 12);
}

static int order_shows; /* wide runs whose plain left-to-right sum differs from sum8's */

/* mode 0: rnd_float without NaN; 1: with NaN; 2: rnd_wide, db from 0. */
static void bias_grad_run(const bias_shape *s, int mode)
{
    size_t nt = (size_t)s->B * s->ctot * s->P;
    float *dy = malloc(4 * nt + 4), *db = malloc(4 * s->ctot), *want = malloc(4 * s->ctot);
    fill(dy, nt, mode == 1);
    fill(db, s->ctot, mode == 1);
    if (mode == 2) {
        for (size_t i = 0; i < nt; i++)
            dy[i] = rnd_wide();
        memset(db, 0, 4 * s->ctot);
    }
    memcpy(want, db, 4 * s->ctot);
    conv_db(s, dy, want);
    if (mode == 2)
        for (uint32_t c = 0; c < s->ctot; c++) {
            float plain = 0.0f;
            for (uint32_t n = 0; n < s->B; n++) {
                float t = 0.0f;
                for (uint32_t i = 0; i < s->P; i++)
                    t += dy[((size_t)n * s->ctot + c) * s->P + i];
                plain += t;
            }
            order_shows += tu_fb(plain) != tu_fb(want[c]);
        }
    for (uint32_t c = 0; c < s->ctot; c++) /* only the worker's channels change */
        if (c < s->c0 || c >= s->c0 + s->C)
            want[c] = db[c];
    rig r;
    rig_open(&r, "bias_grad", 0);
    uint32_t first;
    put_rows(&r, s, dy, &first);
    uint32_t adb = rig_alloc(&r, 4 * s->ctot, 4, 4);
    put(&r, adb, db, 4 * s->ctot);
    uint32_t cs = cstride_of(s),
             st[7] = {first, adb + 4 * s->c0, s->C, s->P, s->B, cs, s->ctot * cs};
    put_state(&r, 0, st, 7);
    assert_int_equal(rig_run(&r), cyc1(s_bias_grad(s->C, s->P, s->B)));
    float got[8];
    get(&r, adb, got, 4 * s->ctot);
    assert_bits_nan(got, want, s->ctot, "bias_grad", s->P, 1);
    rig_close(&r);
    free(dy);
    free(db);
    free(want);
}

static void test_bias_grad(void **state)
{
    (void)state;
    order_shows = 0;
    for (size_t i = 0; i < NBIAS; i++)
        for (int mode = 0; mode < 3; mode++)
            bias_grad_run(&bias_shapes[i], mode);
    assert_true(order_shows > 10); /* so the bit-for-bit check does see the order */
}

/* ---- maxpool_relu_fwd and maxpool_relu_bwd ---- */

typedef struct pool_shape {
    uint32_t planes, h, w;
} pool_shape;

static const pool_shape pool_shapes[] = {
    {1, 2, 2}, {1, 2, 4},  {1, 2, 6},   {2, 4, 4},  {3, 2, 10},
    {2, 6, 8}, {1, 4, 14}, {6, 24, 24}, {16, 8, 8},
};
#define NPOOL (sizeof pool_shapes / sizeof pool_shapes[0])

/* Pool inputs: half of them from a few values, so windows often tie (also +0 against -0). */
static void fill_pool(float *a, size_t n)
{
    static const float few[] = {-1.0f, -0.0f, 0.0f, 0.5f, 2.0f};
    for (size_t i = 0; i < n; i++)
        a[i] = (rnd() & 1) ? few[rnd() % 5] : rnd_float(0);
}

static void pool_fwd_case(const pool_shape *p)
{
    uint32_t R = p->planes * p->h / 2, wo = p->w / 2;
    size_t nin = (size_t)p->planes * p->h * p->w, nout = (size_t)R * wo;
    float *y = malloc(4 * nin), *want = malloc(4 * nout), *got = malloc(4 * nout);
    unsigned char *arg = malloc(nout);
    uint32_t *garg = malloc(4 * nout);
    fill_pool(y, nin);
    mlayer_pool_relu_fwd((int)p->planes, (int)p->h, (int)p->w, y, want, arg);
    rig r;
    rig_open(&r, "maxpool_relu_fwd", 0);
    int pairs = p->w % 4 == 0;
    uint32_t ay = rig_alloc(&r, 4 * nin, pairs ? 16 : 8, pairs ? 0 : 8);
    uint32_t ao = rig_alloc(&r, 4 * nout, pairs ? 8 : 4, pairs ? 8 : 4);
    uint32_t aa = rig_alloc(&r, 4 * nout, pairs ? 8 : 4, pairs ? 8 : 4);
    put(&r, ay, y, 4 * nin);
    uint32_t st[5] = {ay, ao, aa, R, p->w};
    put_state(&r, 0, st, 5);
    assert_int_equal(rig_run(&r), cyc1(s_pool_fwd(R, p->w)));
    get(&r, ao, got, 4 * nout);
    assert_bits(got, want, nout, "maxpool_relu_fwd out", p->w);
    get(&r, aa, garg, 4 * nout);
    for (size_t i = 0; i < nout; i++)
        if (garg[i] != arg[i])
            fail_msg("maxpool_relu_fwd w %u: arg %zu is %u, want %u", p->w, i, garg[i], arg[i]);
    rig_close(&r);
    free(y);
    free(want);
    free(got);
    free(arg);
    free(garg);
}

static void test_pool_fwd(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPOOL; i++)
        pool_fwd_case(&pool_shapes[i]);
}

static void pool_bwd_case(const pool_shape *p)
{
    uint32_t R = p->planes * p->h / 2, wo = p->w / 2;
    size_t nin = (size_t)p->planes * p->h * p->w, nout = (size_t)R * wo;
    float *y = malloc(4 * nin), *out = malloc(4 * nout), *dout = malloc(4 * nout);
    float *want = malloc(4 * nin), *got = malloc(4 * nin);
    unsigned char *arg = malloc(nout);
    uint32_t *warg = malloc(4 * nout);
    fill_pool(y, nin);
    mlayer_pool_relu_fwd((int)p->planes, (int)p->h, (int)p->w, y, out, arg);
    for (size_t i = 0; i < nout; i++) {
        warg[i] = arg[i];
        if (rnd() % 8 == 0) /* out as the layer may see it: NaN, -0 and negatives too */
            out[i] = rnd_float(1);
    }
    fill(dout, nout, 1);
    mlayer_pool_relu_bwd((int)p->planes, (int)p->h, (int)p->w, dout, out, arg, want);
    rig r;
    rig_open(&r, "maxpool_relu_bwd", 0);
    int pairs = p->w % 4 == 0;
    uint32_t al = pairs ? 8 : 4;
    uint32_t ad = rig_alloc(&r, 4 * nout, al, al), ao = rig_alloc(&r, 4 * nout, al, al);
    uint32_t aa = rig_alloc(&r, 4 * nout, al, al), ay = rig_alloc(&r, 4 * nin, 8, 8);
    put(&r, ad, dout, 4 * nout);
    put(&r, ao, out, 4 * nout);
    put(&r, aa, warg, 4 * nout);
    for (size_t i = 0; i < nin; i++) { /* stale values where the codelet must write +0 */
        float junk = 99.0f;
        put(&r, ay + 4 * (uint32_t)i, &junk, 4);
    }
    uint32_t st[6] = {ad, ao, aa, ay, R, p->w};
    put_state(&r, 0, st, 6);
    assert_int_equal(rig_run(&r), cyc1(s_pool_bwd(R, p->w)));
    get(&r, ay, got, 4 * nin);
    assert_bits(got, want, nin, "maxpool_relu_bwd", p->w);
    rig_close(&r);
    free(y);
    free(out);
    free(dout);
    free(want);
    free(got);
    free(arg);
    free(warg);
}

static void test_pool_bwd(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPOOL; i++)
        pool_bwd_case(&pool_shapes[i]);
}

/* ---- six workers at once: runall NAME.all with six vertex states ---- */

/* relu_fwd: six workers, six sizes (tails 0..3), six separate regions. */
static void test_six_relu_fwd(void **state)
{
    (void)state;
    static const uint32_t n[6] = {13, 0, 1, 64, 7, 30};
    float *x[6], *want[6];
    rig r;
    rig_open(&r, "relu_fwd", 1);
    uint32_t ax[6], S[6];
    for (int k = 0; k < 6; k++) {
        x[k] = malloc(4 * n[k] + 4);
        want[k] = malloc(4 * n[k] + 4);
        fill(x[k], n[k], 1);
        memcpy(want[k], x[k], 4 * n[k]);
        mlayer_relu_fwd(n[k], want[k]);
        ax[k] = rig_alloc(&r, 4 * n[k], 16, 0);
        put(&r, ax[k], x[k], 4 * n[k]);
        uint32_t st[3] = {ax[k], ax[k], n[k]};
        put_state(&r, (unsigned)k, st, 3);
        S[k] = s_relu_fwd(n[k]);
    }
    assert_int_equal(rig_run(&r), cyc6(S));
    for (int k = 0; k < 6; k++) {
        float got[64];
        get(&r, ax[k], got, 4 * n[k]);
        assert_bits(got, want[k], n[k], "six relu_fwd", n[k]);
        free(x[k]);
        free(want[k]);
    }
    rig_close(&r);
}

/* bias_grad: the 6 channels of a [3][6][25] gradient, one per worker; db as the C layer's. */
static void test_six_bias_grad(void **state)
{
    (void)state;
    const bias_shape all = {6, 25, 3, 6, 0, 0};
    size_t nt = (size_t)all.B * all.ctot * all.P;
    float *dy = malloc(4 * nt), db[6], want[6], got[6];
    fill(dy, nt, 0);
    fill(db, 6, 0);
    memcpy(want, db, sizeof db);
    conv_db(&all, dy, want);
    rig r;
    rig_open(&r, "bias_grad", 1);
    uint32_t first;
    put_rows(&r, &all, dy, &first);
    uint32_t adb = rig_alloc(&r, sizeof db, 4, 0), cs = cstride_of(&all), S[6];
    put(&r, adb, db, sizeof db);
    for (uint32_t k = 0; k < 6; k++) {
        uint32_t st[7] = {first + 4 * k * cs, adb + 4 * k, 1, all.P, all.B, cs, all.ctot * cs};
        put_state(&r, k, st, 7);
        S[k] = s_bias_grad(1, all.P, all.B);
    }
    assert_int_equal(rig_run(&r), cyc6(S));
    get(&r, adb, got, sizeof got);
    assert_bits(got, want, 6, "six bias_grad", all.P);
    rig_close(&r);
    free(dy);
}

/* maxpool_relu_fwd: 12 output rows of 6 planes of 4 x 8 split unevenly over six workers. */
static void test_six_pool_fwd(void **state)
{
    (void)state;
    const pool_shape p = {6, 4, 8};
    static const uint32_t rows[6] = {1, 3, 2, 1, 4, 1}; /* 12 in all */
    uint32_t R = p.planes * p.h / 2, wo = p.w / 2;
    size_t nin = (size_t)p.planes * p.h * p.w, nout = (size_t)R * wo;
    float *y = malloc(4 * nin), *want = malloc(4 * nout), *got = malloc(4 * nout);
    unsigned char *arg = malloc(nout);
    uint32_t *garg = malloc(4 * nout);
    fill_pool(y, nin);
    mlayer_pool_relu_fwd((int)p.planes, (int)p.h, (int)p.w, y, want, arg);
    rig r;
    rig_open(&r, "maxpool_relu_fwd", 1);
    uint32_t ay = rig_alloc(&r, 4 * nin, 16, 0), ao = rig_alloc(&r, 4 * nout, 8, 0);
    uint32_t aa = rig_alloc(&r, 4 * nout, 8, 0), S[6], r0 = 0;
    put(&r, ay, y, 4 * nin);
    for (uint32_t k = 0; k < 6; k++) {
        uint32_t st[5] = {ay + 4 * r0 * 2 * p.w, ao + 4 * r0 * wo, aa + 4 * r0 * wo, rows[k], p.w};
        put_state(&r, k, st, 5);
        S[k] = s_pool_fwd(rows[k], p.w);
        r0 += rows[k];
    }
    assert_int_equal(r0, R);
    assert_int_equal(rig_run(&r), cyc6(S));
    get(&r, ao, got, 4 * nout);
    assert_bits(got, want, nout, "six maxpool_relu_fwd", p.w);
    get(&r, aa, garg, 4 * nout);
    for (size_t i = 0; i < nout; i++)
        assert_int_equal(garg[i], arg[i]);
    rig_close(&r);
    free(y);
    free(want);
    free(got);
    free(arg);
    free(garg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_to_f32),   cmocka_unit_test(test_norm_u8),
        cmocka_unit_test(test_relu_fwd),     cmocka_unit_test(test_relu_bwd),
        cmocka_unit_test(test_acc_add),      cmocka_unit_test(test_scale_add),
        cmocka_unit_test(test_bias_add),     cmocka_unit_test(test_bias_grad),
        cmocka_unit_test(test_pool_fwd),     cmocka_unit_test(test_pool_bwd),
        cmocka_unit_test(test_six_relu_fwd), cmocka_unit_test(test_six_bias_grad),
        cmocka_unit_test(test_six_pool_fwd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
