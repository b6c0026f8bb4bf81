/* test_amp: the stationary-weight AMP (isa/opcodes.def, "AMP"; docs/isa.md) and the memory
 * bandwidth rule for instruction costs, against references written here.
 *
 * The model under test: a tile's 512-byte weight store cw is written by the supervisor
 * (ldcw slot, ra: 16 bytes, ra += 16; FAULT_AMP while a worker runs). f32amp rd, ra takes one
 * fp32 input from [ra] (ra += 4) against cw as f32[8][16] and two fp32 partials from [rd]
 * (rd += 8): a row is 8 steps, 16 outputs. f16amp takes four fp16 inputs (ra += 8) against cw
 * as f16[16][8], two fp32 partials: 4 steps, 8 outputs. A finished row, lane n: s = p[n];
 * for k in input order: s = s + (float)(x[k] * w[k][n]). It is stored during the next row's
 * steps (lanes 2j, 2j+1 at step j, where its partials came from; loads before the store), or
 * whole by ampst; ampz drops everything. Costs: max(slots, ceil(loads / load B per cycle),
 * ceil(stores / store B per cycle), ceil(units / AMP units)).
 *
 * Expected values come from plain C float arithmetic (-std=c11: no contraction; products
 * rounded through a volatile), fp16 from a value-based converter written here (ldexp/rint,
 * not the simulator's bit shuffling), costs from the docs/isa.md columns copied into a table
 * here. The inputs are checked to tell the right order of rounding from the wrong ones
 * (fused, reverse k order, partial added last, summed in double) before they are used.
 * Every run compares the whole data area of tile memory (0x8000..0xc000), not only the
 * outputs, so a stray or missing store shows; each single-tile run is also made with no fused
 * operation (isa/fused.def: the base instructions one dispatch at a time), and the two must
 * agree on the outcome, its message, the cycles and the data area. */
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

/* Tile memory: every run uses MEMSZ bytes of SRAM; the data area [LO, HI) is prepared by the
 * test and compared whole afterwards. */
enum {
    MEMSZ = 0x10000,
    LO = 0x8000,
    HI = 0xc000,
    WTS = 0x8000,  /* weights, loaded into cw by the supervisor (512 B) */
    WTS2 = 0x8400, /* a second set */
    XIN = 0x9000,  /* inputs */
    PART = 0xa000, /* partials, and the outputs stored over them */
    PART2 = 0xb000,
    REGS = 0xb800, /* registers a worker stores */
};

#define THIRD (1.0f / 3.0f)
#define P12 0x3f800800u /* 1 + 2^-12: P12 x P12 - (1 + 2^-11) is 2^-24 fused, 0 rounded first */
#define M11 0xbf801000u /* -(1 + 2^-11) */
#define BACKGROUND 0xa5u

/* ---- fp16 by value (tests/testutil.h) ---- */

static float h2f(uint16_t a)
{
    return tu_bf(tu_f16_to_f32(a));
}

static uint16_t f2h(float f)
{
    return (uint16_t)tu_f32_to_f16(tu_fb(f));
}

/* ---- references ---- */

/* How a lane is summed: the model, and the wrong ways the inputs must tell from it. */
enum { M_REF, M_FUSED, M_REVERSED, M_PARTIAL_LAST, M_DOUBLE, M_COUNT };
static const char *const mode_name[M_COUNT] = {"input order", "fused", "reverse k order",
                                               "partial added last", "summed in double"};

/* One output lane: partial p, nin inputs x, weights w[k * stride]. */
static float lane(const float *x, const float *w, unsigned stride, unsigned nin, float p, int mode)
{
    float s = p;
    double d = p;
    switch (mode) {
    case M_REF:
        for (unsigned k = 0; k < nin; k++)
            s = s + tu_rmul(x[k], w[k * stride]);
        return s;
    case M_FUSED:
        for (unsigned k = 0; k < nin; k++)
            s = fmaf(x[k], w[k * stride], s);
        return s;
    case M_REVERSED:
        for (unsigned k = nin; k-- > 0;)
            s = s + tu_rmul(x[k], w[k * stride]);
        return s;
    case M_PARTIAL_LAST:
        s = 0.0f;
        for (unsigned k = 0; k < nin; k++)
            s = s + tu_rmul(x[k], w[k * stride]);
        return s + p;
    default:
        for (unsigned k = 0; k < nin; k++)
            d += (double)x[k] * w[k * stride];
        return (float)d;
    }
}

/* Lanes of a and b whose bits differ. */
static unsigned ndiff(const float *a, const float *b, unsigned n)
{
    unsigned c = 0;
    for (unsigned i = 0; i < n; i++)
        c += tu_fb(a[i]) != tu_fb(b[i]);
    return c;
}

/* ---- data ---- */

static uint64_t rng_s;
static uint32_t rnd(void)
{
    rng_s = rng_s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_s >> 33);
}

/* An inexact fp32 value of varied magnitude: m / 3 x scale, m a nonzero integer. */
static float rval(void)
{
    static const float scale[] = {1e-3f, 0.1f, 1.0f, 7.0f, 1e3f};
    int m = (int)(rnd() % 2001) - 1000;
    return (float)(m ? m : 1) / 3.0f * scale[rnd() % 5];
}

/* An fp16 value of varied magnitude (below 3334, so sums stay finite). */
static uint16_t rhalf(void)
{
    static const float scale[] = {1.0f / 256, 0.1f, 1.0f, 3.0f, 100.0f};
    int m = (int)(rnd() % 201) - 100;
    return f2h((float)(m ? m : 1) / 3.0f * scale[rnd() % 5]);
}

enum { NR = 3 }; /* rows of a data set */

/* f32amp data: weights w[k][n], rows of inputs and partials. */
typedef struct f32set {
    float w[8][16];
    float x[NR][8];
    float p[NR][16];
} f32set;

/* f16amp data: fp16 weights w[k][n] (and junk for the unused upper half of cw), inputs. */
typedef struct f16set {
    uint16_t w[16][8], junk[128];
    uint16_t x[NR][16];
    float p[NR][8];
} f16set;

static void f32_gen(f32set *d, uint64_t seed)
{
    rng_s = seed;
    for (unsigned k = 0; k < 8; k++)
        for (unsigned n = 0; n < 16; n++)
            d->w[k][n] = rval();
    for (unsigned r = 0; r < NR; r++) {
        for (unsigned k = 0; k < 8; k++)
            d->x[r][k] = rval();
        for (unsigned n = 0; n < 16; n++)
            d->p[r][n] = rval();
    }
    /* 0.1f and 1/3 as inputs, weights and partials */
    d->x[0][1] = 0.1f;
    d->x[0][2] = THIRD;
    d->w[1][0] = 0.1f;
    d->w[2][1] = THIRD;
    d->p[0][0] = THIRD;
    d->p[1][3] = 0.1f;
    /* lane 15: P12 x P12 + M11 alone (fused 2^-24, rounded first 0) */
    d->x[0][0] = tu_bf(P12);
    d->w[0][15] = tu_bf(P12);
    for (unsigned k = 1; k < 8; k++)
        d->w[k][15] = 0.0f;
    d->p[0][15] = tu_bf(M11);
}

static void f32_ref(const f32set *d, unsigned r, const float *p, int mode, float out[16])
{
    for (unsigned n = 0; n < 16; n++)
        out[n] = lane(d->x[r], &d->w[0][n], 16, 8, p[n], mode);
}

static void f16_gen(f16set *d, uint64_t seed)
{
    rng_s = seed;
    for (unsigned k = 0; k < 16; k++)
        for (unsigned n = 0; n < 8; n++)
            d->w[k][n] = rhalf();
    for (unsigned i = 0; i < 128; i++)
        d->junk[i] = rhalf();
    for (unsigned r = 0; r < NR; r++) {
        for (unsigned k = 0; k < 16; k++)
            d->x[r][k] = rhalf();
        for (unsigned n = 0; n < 8; n++)
            d->p[r][n] = rval();
    }
    d->x[0][0] = f2h(0.1f);
    d->x[0][1] = f2h(THIRD);
    d->w[0][0] = f2h(THIRD);
    d->p[0][1] = 0.1f;
    /* subnormal fp16: the smallest weight, the largest input */
    d->w[3][2] = 0x0001;
    d->x[1][5] = 0x03ff;
}

static void f16_ref(const f16set *d, unsigned r, const float *p, int mode, float out[8])
{
    float x[16], w[16][8];
    for (unsigned k = 0; k < 16; k++) {
        x[k] = h2f(d->x[r][k]);
        for (unsigned n = 0; n < 8; n++)
            w[k][n] = h2f(d->w[k][n]);
    }
    for (unsigned n = 0; n < 8; n++)
        out[n] = lane(x, &w[0][n], 8, 16, p[n], mode);
}

/* Every row must tell the model from each wrong order (f16: except fused, which is the same
 * there: an fp16 x fp16 product is exact in fp32, and that is asserted too). */
static void f32_distinct(const f32set *d)
{
    for (unsigned r = 0; r < NR; r++) {
        float ref[16], alt[16];
        f32_ref(d, r, d->p[r], M_REF, ref);
        for (int m = M_FUSED; m < M_COUNT; m++) {
            f32_ref(d, r, d->p[r], m, alt);
            if (ndiff(ref, alt, 16) == 0)
                fail_msg("f32 row %u does not tell %s from %s", r, mode_name[m], mode_name[M_REF]);
        }
    }
    float ref[16], alt[16]; /* and lane 15 of row 0 is the P12 case */
    f32_ref(d, 0, d->p[0], M_REF, ref);
    f32_ref(d, 0, d->p[0], M_FUSED, alt);
    assert_int_equal(tu_fb(ref[15]), 0);
    assert_int_equal(tu_fb(alt[15]), tu_fb(0x1p-24f));
}

static void f16_distinct(const f16set *d)
{
    for (unsigned r = 0; r < NR; r++) {
        float ref[8], alt[8];
        f16_ref(d, r, d->p[r], M_REF, ref);
        f16_ref(d, r, d->p[r], M_FUSED, alt);
        assert_int_equal(ndiff(ref, alt, 8), 0);
        for (int m = M_REVERSED; m < M_COUNT; m++) {
            f16_ref(d, r, d->p[r], m, alt);
            if (ndiff(ref, alt, 8) == 0)
                fail_msg("f16 row %u does not tell %s from %s", r, mode_name[m], mode_name[M_REF]);
        }
    }
}

/* ---- tile memory images ---- */

static void putf(uint8_t *m, uint32_t a, float f)
{
    tu_put32(m, a, tu_fb(f));
}
static void put16(uint8_t *m, uint32_t a, uint16_t h)
{
    memcpy(m + a, &h, 2);
}

/* A fresh image: the data area filled with a background pattern. */
static uint8_t *img_new(void)
{
    uint8_t *m = calloc(MEMSZ, 1);
    assert_non_null(m);
    memset(m + LO, BACKGROUND, HI - LO);
    return m;
}

static uint8_t *img_copy(const uint8_t *m)
{
    uint8_t *c = malloc(MEMSZ);
    assert_non_null(c);
    memcpy(c, m, MEMSZ);
    return c;
}

/* f32 weights at wts (cw bytes (k * 16 + n) * 4), row r's inputs at xin + 32 r, its partials
 * at part + 64 r. */
static void f32_place(uint8_t *m, const f32set *d, uint32_t wts, uint32_t xin, uint32_t part)
{
    for (unsigned k = 0; k < 8; k++)
        for (unsigned n = 0; n < 16; n++)
            putf(m, wts + (k * 16 + n) * 4, d->w[k][n]);
    for (unsigned r = 0; r < NR; r++) {
        for (unsigned k = 0; k < 8; k++)
            putf(m, xin + 32 * r + 4 * k, d->x[r][k]);
        for (unsigned n = 0; n < 16; n++)
            putf(m, part + 64 * r + 4 * n, d->p[r][n]);
    }
}

/* f16 weights at wts (cw bytes (k * 8 + n) * 2), junk in the 256 bytes after; row r's 16
 * inputs at xin + 32 r, its 8 partials at part + 32 r. */
static void f16_place(uint8_t *m, const f16set *d, uint32_t wts, uint32_t xin, uint32_t part)
{
    for (unsigned k = 0; k < 16; k++)
        for (unsigned n = 0; n < 8; n++)
            put16(m, wts + (k * 8 + n) * 2, d->w[k][n]);
    for (unsigned i = 0; i < 128; i++)
        put16(m, wts + 256 + 2 * i, d->junk[i]);
    for (unsigned r = 0; r < NR; r++) {
        for (unsigned k = 0; k < 16; k++)
            put16(m, xin + 32 * r + 2 * k, d->x[r][k]);
        for (unsigned n = 0; n < 8; n++)
            putf(m, part + 32 * r + 4 * n, d->p[r][n]);
    }
}

static void put_row(uint8_t *m, uint32_t at, const float *v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        putf(m, at + 4 * i, v[i]);
}

/* The data area of got against want, word by word. */
static void check_img(const char *what, const uint8_t *got, const uint8_t *want)
{
    for (uint32_t a = LO; a < HI; a += 4) {
        uint32_t g = tu_get32(got, a), w = tu_get32(want, a);
        if (g != w)
            fail_msg("%s: mem32[0x%x] = 0x%08x (%a), want 0x%08x (%a)", what, a, g,
                     (double)tu_bf(g), w, (double)tu_bf(w));
    }
}

/* ---- programs ---- */

typedef struct sbuf {
    char s[32768];
    size_t n;
} sbuf;

static void sb(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
    va_end(ap);
    assert_true(k >= 0 && (size_t)k < sizeof b->s - b->n);
    b->n += (size_t)k;
}

/* `count` copies of one instruction */
static void sb_rep(sbuf *b, unsigned count, const char *insn)
{
    for (unsigned i = 0; i < count; i++)
        sb(b, "        %s\n", insn);
}

/* the supervisor loads all of cw from `from` */
static void sb_ldcw(sbuf *b, uint32_t from)
{
    sb(b, "        li      r1, 0x%x\n", from);
    for (unsigned s = 0; s < 32; s++)
        sb(b, "        ldcw    %u, r1\n", s);
}

/* the usual supervisor: cw from WTS, one worker at `w`, join, halt; the worker follows */
static void sb_main(sbuf *b)
{
    sb(b, "main:\n");
    sb_ldcw(b, WTS);
    sb(b, "        run     w, r0\n        join\n        halt\nw:\n");
}

/* the worker stores r1 and r2 at REGS, REGS + 4 */
static void sb_regs(sbuf *b)
{
    sb(b, "        li      r3, 0x%x\n        st32    r1, [r3+0]\n        st32    r2, [r3+4]\n",
       REGS);
}

/* ---- running ---- */

/* A machine: a preset and, where not 0, the rates that replace its own. */
typedef struct amp_mach {
    const char *name, *preset;
    uint32_t lbpc, sbpc, units;
} amp_mach;

static const amp_mach mk2 = {"mk2", "mk2", 0, 0, 0};

typedef struct run_ctx {
    isa_prog prog;
    sys *sy;
    eng *g;
    err e;
    int rc;
} run_ctx;

/* Assemble src and load it on nipus x ntiles tiles of MEMSZ bytes, with the fused operations
 * `fused` (isa/fused.def). */
static void rc_open_fused(run_ctx *r, const char *src, const amp_mach *am, uint32_t nipus,
                          uint32_t ntiles, unsigned threads, uint32_t fused)
{
    memset(r, 0, sizeof *r);
    err_clear(&r->e);
    tu_assemble("amp.s", src, &r->prog);
    sys_cfg cfg = {.threads = threads, .max_cycles = 100000000};
    if (mach_builtin(&cfg.m, am->preset, &r->e) != ERR_OK)
        fail_msg("%s", r->e.msg);
    cfg.m.nipus = nipus;
    cfg.m.tiles_per_ipu = ntiles;
    cfg.m.sram_bytes = MEMSZ;
    if (am->lbpc)
        cfg.m.load_bytes_per_cycle = am->lbpc;
    if (am->sbpc)
        cfg.m.store_bytes_per_cycle = am->sbpc;
    if (am->units)
        cfg.m.amp_macs_per_issue = am->units;
    r->sy = sys_new(&cfg, &r->e);
    if (!r->sy)
        fail_msg("%s", r->e.msg);
    r->g = sys_engine(r->sy);
    eng_set_fused(r->g, fused);
    if (eng_load(r->g, &r->prog, &r->e) != ERR_OK)
        fail_msg("%s", r->e.msg);
}

static void rc_open(run_ctx *r, const char *src, const amp_mach *am, uint32_t nipus,
                    uint32_t ntiles, unsigned threads)
{
    rc_open_fused(r, src, am, nipus, ntiles, threads, ISA_FUSED_ALL);
}

static void rc_close(run_ctx *r)
{
    sys_free(r->sy);
    isa_prog_free(&r->prog);
}

static uint32_t rc_sym(const run_ctx *r, const char *name)
{
    int64_t a = isa_prog_sym(&r->prog, name);
    if (a < 0)
        fail_msg("no symbol %s", name);
    return (uint32_t)a;
}

/* Run src on one Mk2 tile from the data area of m with no fused operation (the base
 * instructions one dispatch at a time): the outcome, the message into msg, the cycles, and
 * the data area into m0. What every run below must agree with. */
static int run_unfused(const char *src, const uint8_t *m, uint8_t *m0, char *msg, size_t len,
                       uint64_t *cycles)
{
    run_ctx r;
    rc_open_fused(&r, src, &mk2, 1, 1, 1, 0);
    memcpy(eng_tile_mem(r.g, 0, 0) + LO, m + LO, HI - LO);
    int rc = eng_run(r.g, &r.e);
    snprintf(msg, len, "%s", r.e.msg);
    eng_stats st;
    eng_get_stats(r.g, &st);
    *cycles = st.cycles;
    memcpy(m0 + LO, eng_tile_mem(r.g, 0, 0) + LO, HI - LO);
    rc_close(&r);
    return rc;
}

/* The run r (its data area now in m) against the same program with no fused operation. */
static void same_unfused(run_ctx *r, int rc, const char *src, const uint8_t *m, const uint8_t *m0,
                         int rc0, const char *msg0, uint64_t cycles0)
{
    eng_stats st;
    eng_get_stats(r->g, &st);
    if (rc != rc0 || strcmp(r->e.msg, msg0) != 0 || st.cycles != cycles0 ||
        memcmp(m + LO, m0 + LO, HI - LO) != 0)
        fail_msg("with and without fused operations: %d \"%s\" %llu cycles, %d \"%s\" %llu "
                 "cycles, data %s\n%s",
                 rc, r->e.msg, (unsigned long long)st.cycles, rc0, msg0,
                 (unsigned long long)cycles0,
                 memcmp(m + LO, m0 + LO, HI - LO) ? "differs" : "the same", src);
}

/* Run src on one Mk2 tile with its data area from m; m gets the data area back. */
static void run_ok(const char *src, uint8_t *m)
{
    static uint8_t m0[MEMSZ];
    char msg0[ERR_MSG_MAX];
    uint64_t cycles0;
    int rc0 = run_unfused(src, m, m0, msg0, sizeof msg0, &cycles0);
    run_ctx r;
    rc_open(&r, src, &mk2, 1, 1, 1);
    memcpy(eng_tile_mem(r.g, 0, 0) + LO, m + LO, HI - LO);
    int rc = eng_run(r.g, &r.e);
    if (rc != ERR_OK)
        fail_msg("%s\n%s", r.e.msg, src);
    memcpy(m + LO, eng_tile_mem(r.g, 0, 0) + LO, HI - LO);
    same_unfused(&r, rc, src, m, m0, rc0, msg0, cycles0);
    rc_close(&r);
}

/* Run src expecting a fault of `kind` in context ctx (0 the supervisor, 1 + k worker k) at
 * the instruction labelled `bad`, with `text` in the report (and, when addr is not ~0, the
 * fault address addr). m gets the data area back. Returns nothing; fails the test. */
static void run_fault(const char *what, const char *src, uint8_t *m, isa_fault kind, int ctx,
                      const char *text, uint32_t addr)
{
    static uint8_t m0[MEMSZ];
    char msg0[ERR_MSG_MAX];
    uint64_t cycles0;
    int rc0 = run_unfused(src, m, m0, msg0, sizeof msg0, &cycles0);
    run_ctx r;
    rc_open(&r, src, &mk2, 1, 1, 1);
    memcpy(eng_tile_mem(r.g, 0, 0) + LO, m + LO, HI - LO);
    uint32_t pc = rc_sym(&r, "bad");
    int rc = eng_run(r.g, &r.e);
    if (rc == ERR_OK)
        fail_msg("%s: ran without a fault", what);
    char pcs[32], ctxs[32];
    snprintf(pcs, sizeof pcs, "pc 0x%x ", pc);
    snprintf(ctxs, sizeof ctxs, "ctx %d ", ctx);
    if (!strstr(r.e.msg, pcs) || !strstr(r.e.msg, ctxs) || !strstr(r.e.msg, text))
        fail_msg("%s: \"%s\" lacks \"%s\", \"%s\" or \"%s\"", what, r.e.msg, ctxs, pcs, text);
    const tile *t = eng_tile(r.g, 0, 0);
    assert_int_equal(t->state, TILE_FAULTED);
    assert_int_equal(t->fault_ctx, ctx);
    const isa_cpu *c = ctx ? &t->wk[ctx - 1] : &t->sup;
    if (c->fault != kind)
        fail_msg("%s: fault %d, want %d (%s)", what, (int)c->fault, (int)kind, r.e.msg);
    assert_int_equal(c->pc, pc);
    if (addr != ~0u)
        assert_int_equal(c->fault_addr, addr);
    memcpy(m + LO, eng_tile_mem(r.g, 0, 0) + LO, HI - LO);
    same_unfused(&r, rc, src, m, m0, rc0, msg0, cycles0);
    rc_close(&r);
}

/* ---- tests ---- */

/* The converters on values known by hand. */
static void test_fp16_reference(void **state)
{
    (void)state;
    assert_int_equal(f2h(1.0f), 0x3c00);
    assert_int_equal(f2h(0.1f), 0x2e66);
    assert_int_equal(f2h(THIRD), 0x3555);
    assert_int_equal(f2h(-2.0f), 0xc000);
    assert_int_equal(f2h(65504.0f), 0x7bff);
    assert_int_equal(f2h(tu_bf(0x3f801000)), 0x3c00); /* 1 + 2^-11: tie to even */
    assert_int_equal(f2h(tu_bf(0x3f803000)), 0x3c02);
    assert_int_equal(f2h(0x1p-24f), 0x0001);
    assert_int_equal(tu_fb(h2f(0x3c00)), tu_fb(1.0f));
    assert_int_equal(tu_fb(h2f(0x0001)), tu_fb(0x1p-24f));
    assert_int_equal(tu_fb(h2f(0xc000)), tu_fb(-2.0f));
    assert_int_equal(tu_fb(h2f(0x3555)), tu_fb(0x1.554p-2f));
}

/* Three f32amp rows back to back, then ampst: every lane of every row, where its partials
 * were; the rows' stores happen during the next row's steps and ampst's. */
static void test_f32_rows(void **state)
{
    (void)state;
    static f32set d;
    f32_gen(&d, 1);
    f32_distinct(&d);
    uint8_t *m = img_new();
    f32_place(m, &d, WTS, XIN, PART);
    uint8_t *want = img_copy(m);
    for (unsigned r = 0; r < NR; r++) {
        float out[16];
        f32_ref(&d, r, d.p[r], M_REF, out);
        put_row(want, PART + 64 * r, out, 16);
    }
    tu_put32(want, REGS, XIN + 4 * 8 * NR);
    tu_put32(want, REGS + 4, PART + 64 * NR);

    sbuf b = {.n = 0};
    sb_main(&b);
    sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
    sb_rep(&b, 8 * NR, "f32amp  r2, r1");
    sb(&b, "        ampst\n");
    sb_regs(&b);
    sb(&b, "        exit\n");
    run_ok(b.s, m);
    check_img("f32 rows", m, want);
    free(m);
    free(want);
}

/* The same with f16amp: fp16 inputs and weights, fp32 partials, 8 lanes a row. */
static void test_f16_rows(void **state)
{
    (void)state;
    static f16set d;
    f16_gen(&d, 2);
    f16_distinct(&d);
    uint8_t *m = img_new();
    f16_place(m, &d, WTS, XIN, PART);
    uint8_t *want = img_copy(m);
    for (unsigned r = 0; r < NR; r++) {
        float out[8];
        f16_ref(&d, r, d.p[r], M_REF, out);
        put_row(want, PART + 32 * r, out, 8);
    }
    tu_put32(want, REGS, XIN + 32 * NR);
    tu_put32(want, REGS + 4, PART + 32 * NR);

    sbuf b = {.n = 0};
    sb_main(&b);
    sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
    sb_rep(&b, 4 * NR, "f16amp  r2, r1");
    sb(&b, "        ampst\n");
    sb_regs(&b);
    sb(&b, "        exit\n");
    run_ok(b.s, m);
    check_img("f16 rows", m, want);
    free(m);
    free(want);
}

/* f32 data placed as in test_f32_rows, and a worker body run on it; the caller fills want. */
static f32set pd;

static uint8_t *pipe_img(void)
{
    uint8_t *m = img_new();
    f32_place(m, &pd, WTS, XIN, PART);
    return m;
}

static void pipe_run(const char *what, const char *body, uint8_t *m, const uint8_t *want)
{
    sbuf b = {.n = 0};
    sb_main(&b);
    sb(&b, "%s", body);
    sb_regs(&b);
    sb(&b, "        exit\n");
    run_ok(b.s, m);
    check_img(what, m, want);
}

/* The pipeline: a finished row waits for the next row's steps or ampst. pd's data (seed 3,
 * distinct), and rows 0 and 1 of the reference into row0 and row1. */
static void pipe_data(float row0[16], float row1[16])
{
    f32_gen(&pd, 3);
    f32_distinct(&pd);
    f32_ref(&pd, 0, pd.p[0], M_REF, row0);
    f32_ref(&pd, 1, pd.p[1], M_REF, row1);
}

/* A row waits for the next row's steps or ampst: nothing is stored without them. */
static void test_pipeline_stops(void **state)
{
    (void)state;
    float row0[16], row1[16];
    pipe_data(row0, row1);
    char body[4096];
    sbuf b;
    /* one row, no ampst: nothing stored */
    {
        uint8_t *m = pipe_img(), *want = img_copy(m);
        tu_put32(want, REGS, XIN + 32);
        tu_put32(want, REGS + 4, PART + 64);
        b.n = 0;
        sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
        sb_rep(&b, 8, "f32amp  r2, r1");
        pipe_run("one row, no ampst", b.s, m, want);
        free(m);
        free(want);
    }
    /* a second row stopped after s steps (exit, no ampst) has stored lanes 0 .. 2s - 1 of the
       first, and nothing of its own */
    for (unsigned s = 0; s <= 8; s++) {
        uint8_t *m = pipe_img(), *want = img_copy(m);
        put_row(want, PART, row0, 2 * s);
        tu_put32(want, REGS, XIN + 32 + 4 * s);
        tu_put32(want, REGS + 4, PART + 64 + 8 * s);
        b.n = 0;
        sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
        sb_rep(&b, 8 + s, "f32amp  r2, r1");
        snprintf(body, sizeof body, "second row stopped after %u steps", s);
        pipe_run(body, b.s, m, want);
        free(m);
        free(want);
    }
}

/* ampz drops the waiting row, or the row in progress. */
static void test_pipeline_ampz(void **state)
{
    (void)state;
    float row0[16], row1[16];
    pipe_data(row0, row1);
    sbuf b;
    /* ampz drops a waiting row: ampst after it stores nothing; a row after it stores only
       itself */
    {
        uint8_t *m = pipe_img(), *want = img_copy(m);
        tu_put32(want, REGS, XIN + 32);
        tu_put32(want, REGS + 4, PART + 64);
        b.n = 0;
        sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        ampz\n        ampst\n");
        pipe_run("ampz, ampst", b.s, m, want);
        free(m);
        free(want);

        m = pipe_img();
        want = img_copy(m);
        put_row(want, PART + 64, row1, 16);
        tu_put32(want, REGS, XIN + 64);
        tu_put32(want, REGS + 4, PART + 128);
        b.n = 0;
        sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        ampz\n");
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        ampst\n");
        pipe_run("row, ampz, row, ampst", b.s, m, want);
        free(m);
        free(want);
    }
    /* ampz drops a row in progress: the next row starts at its own first step */
    {
        uint8_t *m = pipe_img(), *want = img_copy(m);
        put_row(want, PART + 64, row1, 16);
        tu_put32(want, REGS, XIN + 64);
        tu_put32(want, REGS + 4, PART + 128);
        b.n = 0;
        sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
        sb_rep(&b, 3, "f32amp  r2, r1");
        sb(&b, "        ampz\n        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN + 32,
           PART + 64);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        ampst\n");
        pipe_run("3 steps, ampz, row, ampst", b.s, m, want);
        free(m);
        free(want);
    }
}

/* Rows whose partials overlap the row being stored. */
static void test_pipeline_overlap(void **state)
{
    (void)state;
    float row0[16], row1[16];
    pipe_data(row0, row1);
    sbuf b;
    /* in place: the second row reads its partials where the first row is being stored; a step
       loads before it stores, so row 1 = the original partials + x1 W */
    {
        float in_place[16], store_first[16];
        f32_ref(&pd, 1, pd.p[0], M_REF, in_place);
        f32_ref(&pd, 1, row0, M_REF, store_first);
        assert_int_not_equal(ndiff(in_place, store_first, 16), 0);
        uint8_t *m = pipe_img(), *want = img_copy(m);
        put_row(want, PART, in_place, 16);
        tu_put32(want, REGS, XIN + 64);
        tu_put32(want, REGS + 4, PART + 64);
        b.n = 0;
        sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        li      r2, 0x%x\n", PART);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        ampst\n");
        pipe_run("two rows in place", b.s, m, want);
        free(m);
        free(want);
    }
    /* overlapping rows: the next row's partials start one pair below the waiting row, so its
       step j (j > 0) reads the pair the step before stored: lanes 2j - 2, 2j - 1 of row 0 */
    {
        float p1[16], out[16];
        p1[0] = pd.p[1][0];
        p1[1] = pd.p[1][1];
        for (unsigned n = 2; n < 16; n++)
            p1[n] = row0[n - 2];
        f32_ref(&pd, 1, p1, M_REF, out);
        uint8_t *m = pipe_img();
        put_row(m, PART - 8, pd.p[1], 2);
        uint8_t *want = img_copy(m);
        put_row(want, PART - 8, out, 16);
        put_row(want, PART + 56, row0 + 14, 2);
        tu_put32(want, REGS, XIN + 64);
        tu_put32(want, REGS + 4, PART + 56);
        b.n = 0;
        sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        li      r2, 0x%x\n", PART - 8);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        ampst\n");
        pipe_run("overlapping rows", b.s, m, want);
        free(m);
        free(want);
    }
}

/* Where a row reads its inputs and where it is stored. */
static void test_pipeline_places(void **state)
{
    (void)state;
    float row0[16], row1[16];
    pipe_data(row0, row1);
    sbuf b;
    /* a row's inputs read where the row before is being stored: row 1 reads its input j at
       PART + 8 + 4 j in step j, after steps 0 .. j - 1 stored lanes 0 .. 2 j - 1 of row 0 at
       PART .. PART + 8 j: inputs 0-2 are row 0's original partials 2-4, inputs 3-7 are row 0's
       finished lanes 5-9 */
    {
        float x1[8], out[16];
        for (unsigned k = 0; k < 8; k++)
            x1[k] = k < 3 ? pd.p[0][2 + k] : row0[2 + k];
        for (unsigned n = 0; n < 16; n++)
            out[n] = lane(x1, &pd.w[0][n], 16, 8, pd.p[1][n], M_REF);
        uint8_t *m = pipe_img(), *want = img_copy(m);
        put_row(want, PART, row0, 16);
        put_row(want, PART + 64, out, 16);
        tu_put32(want, REGS, PART + 40);
        tu_put32(want, REGS + 4, PART + 128);
        b.n = 0;
        sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        li      r1, 0x%x\n", PART + 8);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        ampst\n");
        pipe_run("inputs where the row before is stored", b.s, m, want);
        free(m);
        free(want);
    }
    /* a row is stored where its partials came from, not where the next row's are */
    {
        uint8_t *m = pipe_img();
        put_row(m, PART2, pd.p[0], 16); /* row 0's partials at PART2 this time */
        uint8_t *want = img_copy(m);
        put_row(want, PART2, row0, 16);
        put_row(want, PART + 64, row1, 16);
        tu_put32(want, REGS, XIN + 64);
        tu_put32(want, REGS + 4, PART + 128);
        b.n = 0;
        sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART2);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        li      r2, 0x%x\n", PART + 64);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        ampst\n");
        pipe_run("rows apart", b.s, m, want);
        free(m);
        free(want);
    }
}

/* A worker starts with an empty pipeline. */
static void test_pipeline_fresh_worker(void **state)
{
    (void)state;
    float row0[16], row1[16];
    pipe_data(row0, row1);
    sbuf b;
    /* a worker starts with an empty pipeline: the first leaves a row waiting and exits; the
       second (same context) stores nothing with ampst and may start an f16 row at once */
    {
        uint8_t *m = pipe_img(), *want = img_copy(m);
        b.n = 0;
        sb(&b, "main:\n");
        sb_ldcw(&b, WTS);
        sb(&b,
           "        run     w1, r0\n        join\n        run     w2, r0\n        join\n"
           "        halt\n"
           "w1:     li      r1, 0x%x\n        li      r2, 0x%x\n",
           XIN, PART);
        sb_rep(&b, 8, "f32amp  r2, r1");
        sb(&b, "        exit\nw2:     ampst\n        li      r1, 0x%x\n        li      r2, 0x%x\n",
           XIN, PART2);
        sb_rep(&b, 4, "f16amp  r2, r1");
        sb(&b, "        ampz\n        ampst\n        exit\n");
        run_ok(b.s, m);
        check_img("fresh worker", m, want);
        free(m);
        free(want);
    }
}

/* The usual program whose worker points r1 at `in` and r2 at `part`, runs `n` copies of
 * `steps`, then `last` (labelled `bad`), then exits. */
static void wprog(sbuf *b, uint32_t in, uint32_t part, unsigned n, const char *steps,
                  const char *last)
{
    b->n = 0;
    sb_main(b);
    sb(b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", in, part);
    sb_rep(b, n, steps);
    sb(b, "bad:    %s\n        exit\n", last);
}

/* Faults: the run stops with the fault's kind, context and pc; memory is as it was. The
 * image they run on: d (seed 4) placed as in test_f32_rows. */
static uint8_t *faults_img(f32set *d)
{
    f32_gen(d, 4);
    uint8_t *m = img_new();
    f32_place(m, d, WTS, XIN, PART);
    return m;
}

/* The AMP's faults: a row's kind or ampst out of turn. */
static void test_faults_amp(void **state)
{
    (void)state;
    static f32set d;
    sbuf b;
    const char *f32 = "f32amp  r2, r1", *f16 = "f16amp  r2, r1";
    uint8_t *m = faults_img(&d), *want = img_copy(m);
    /* ampst with a row in progress; a kind changed mid-row; a new row of the other kind while
       a finished row waits */
    wprog(&b, XIN, PART, 3, f32, "ampst");
    run_fault("ampst mid-row", b.s, m, FAULT_AMP, 1, "AMP", ~0u);
    wprog(&b, XIN, PART, 3, f32, f16);
    run_fault("f16amp mid f32 row", b.s, m, FAULT_AMP, 1, "AMP", ~0u);
    wprog(&b, XIN, PART, 2, f16, f32);
    run_fault("f32amp mid f16 row", b.s, m, FAULT_AMP, 1, "AMP", ~0u);
    wprog(&b, XIN, PART, 8, f32, f16);
    run_fault("f16 row while an f32 row waits", b.s, m, FAULT_AMP, 1, "AMP", ~0u);
    wprog(&b, XIN, PART, 4, f16, f32);
    run_fault("f32 row while an f16 row waits", b.s, m, FAULT_AMP, 1, "AMP", ~0u);
    check_img("after the AMP faults", m, want);
    /* (after ampst or ampz the other kind is fine) */
    b.n = 0;
    sb_main(&b);
    sb(&b, "        li      r1, 0x%x\n        li      r2, 0x%x\n", XIN, PART2);
    sb_rep(&b, 8, f32);
    sb(&b, "        ampst\n");
    sb_rep(&b, 4, f16);
    sb(&b, "        ampz\n");
    sb_rep(&b, 8, f32);
    sb(&b, "        ampz\n        exit\n");
    uint8_t *ok = img_copy(m);
    run_ok(b.s, ok);
    free(ok);
    free(m);
    free(want);
}

/* ldcw while a worker runs is a fault; between workers it is not. */
static void test_faults_ldcw(void **state)
{
    (void)state;
    static f32set d;
    sbuf b;
    const char *f32 = "f32amp  r2, r1";
    uint8_t *m = faults_img(&d), *want = img_copy(m);
    /* ldcw while a worker runs (the worker spins 40 slots) */
    b.n = 0;
    sb(&b,
       "main:   li      r1, 0x%x\n        run     w, r0\nbad:    ldcw    0, r1\n"
       "        join\n        halt\n"
       "w:      li      r4, 40\n        rpt     r4, e\n        nop\ne:      exit\n",
       WTS);
    run_fault("ldcw while a worker runs", b.s, m, FAULT_AMP, 0, "AMP", ~0u);

    /* ldcw after join, and after the worker has exited but before join, is fine; the next
       workers see the new weights */
    {
        static f32set d2;
        f32_gen(&d2, 5);
        uint8_t *m2 = img_new();
        f32_place(m2, &d, WTS, XIN, PART);
        for (unsigned k = 0; k < 8; k++)
            for (unsigned n = 0; n < 16; n++)
                putf(m2, WTS2 + (k * 16 + n) * 4, d2.w[k][n]);
        uint8_t *w2 = img_copy(m2);
        float out[16];
        f32_ref(&d, 0, d.p[0], M_REF, out);
        put_row(w2, PART, out, 16);
        memcpy(d2.x, d.x, sizeof d.x); /* the same inputs, the second weights */
        f32_ref(&d2, 0, d.p[1], M_REF, out);
        put_row(w2, PART + 64, out, 16);
        b.n = 0;
        sb(&b, "main:\n");
        sb_ldcw(&b, WTS);
        sb(&b, "        li      r5, 0x%x\n        run     w, r5\n        join\n", PART);
        sb_ldcw(&b, WTS2);
        sb(&b, "        li      r5, 0x%x\n        run     w, r5\n        join\n", PART + 64);
        sb(&b, "        run     short, r0\n");
        sb_rep(&b, 12, "nop");
        sb_ldcw(&b, WTS2);
        sb(&b, "        join\n        halt\nshort:  exit\n");
        sb(&b, "w:      li      r1, 0x%x\n        mov     r2, r0\n", XIN);
        sb_rep(&b, 8, f32);
        sb(&b, "        ampst\n        exit\n");
        run_ok(b.s, m2);
        check_img("ldcw between workers", m2, w2);
        free(m2);
        free(w2);
    }

    /* ldcw of an unaligned address */
    b.n = 0;
    sb(&b, "main:   li      r1, 0x%x\nbad:    ldcw    3, r1\n        halt\n", WTS + 8);
    run_fault("ldcw unaligned", b.s, m, FAULT_MISALIGNED, 0, "misaligned", WTS + 8);

    check_img("after all the faults", m, want);
    free(m);
    free(want);
}

/* Misaligned and out-of-range accesses. */
static void test_faults_range(void **state)
{
    (void)state;
    static f32set d;
    sbuf b;
    const char *f32 = "f32amp  r2, r1", *f16 = "f16amp  r2, r1";
    uint8_t *m = faults_img(&d), *want = img_copy(m);
    /* misaligned partials: nothing changes, the pointer registers included */
    wprog(&b, XIN, PART + 4, 0, f32, f32);
    run_fault("f32amp misaligned partials", b.s, m, FAULT_MISALIGNED, 1, "misaligned", PART + 4);
    {
        run_ctx r;
        rc_open(&r, b.s, &mk2, 1, 1, 1);
        assert_int_not_equal(eng_run(r.g, &r.e), ERR_OK);
        assert_int_equal(eng_tile(r.g, 0, 0)->wk[0].r[1], XIN);
        assert_int_equal(eng_tile(r.g, 0, 0)->wk[0].r[2], PART + 4);
        rc_close(&r);
    }
    wprog(&b, XIN, PART + 12, 0, f16, f16);
    run_fault("f16amp misaligned partials", b.s, m, FAULT_MISALIGNED, 1, "misaligned", PART + 12);

    /* inputs or partials out of range; the last in-range ones are fine */
    wprog(&b, MEMSZ, PART, 0, f32, f32);
    run_fault("f32amp inputs out of range", b.s, m, FAULT_OUT_OF_RANGE, 1, "out of range", MEMSZ);
    wprog(&b, MEMSZ - 4, PART, 0, f16, f16);
    run_fault("f16amp inputs out of range", b.s, m, FAULT_OUT_OF_RANGE, 1, "out of range",
              MEMSZ - 4);
    wprog(&b, XIN, MEMSZ, 0, f32, f32);
    run_fault("f32amp partials out of range", b.s, m, FAULT_OUT_OF_RANGE, 1, "out of range", MEMSZ);
    check_img("after all the faults", m, want);
    b.n = 0;
    sb_main(&b);
    sb(&b,
       "        li      r1, 0x%x\n        li      r2, 0x%x\n        f32amp  r2, r1\n"
       "        ampz\n        li      r1, 0x%x\n        f16amp  r2, r1\n        exit\n",
       MEMSZ - 4, MEMSZ - 16, MEMSZ - 8);
    uint8_t *ok = img_copy(m);
    run_ok(b.s, ok);
    free(ok);
    free(m);
    free(want);
}

/* ---- costs ---- */

/* The documented columns (docs/isa.md, "Instructions"): loads B, stores B, AMP units, worker
 * slots, supervisor cycles. */
typedef struct doc_row {
    const char *mnemonic;
    unsigned lbytes, sbytes, units, wslots, scycles;
} doc_row;

static const doc_row doc[] = {
    {"f32amp", 12, 8, 16, 1, 1}, {"f16amp", 16, 8, 8, 1, 1}, {"ampst", 0, 64, 0, 1, 1},
    {"ampz", 0, 0, 0, 1, 1},     {"ldcw", 16, 0, 0, 1, 1},   {"ld128pi", 16, 0, 0, 1, 1},
    {"ld64", 8, 0, 0, 1, 1},     {"st64", 0, 8, 0, 1, 1},    {"ld32", 4, 0, 0, 1, 1},
    {"st32", 0, 4, 0, 1, 1},
};

static unsigned cdiv(unsigned a, unsigned b)
{
    return (a + b - 1) / b;
}

/* The documented rule: max(slots, ceil(loads / l), ceil(stores / s), ceil(units / a)). */
static unsigned want_cost(const char *mnemonic, unsigned l, unsigned s, unsigned a, int super)
{
    for (size_t i = 0; i < sizeof doc / sizeof doc[0]; i++) {
        const doc_row *d = &doc[i];
        if (strcmp(d->mnemonic, mnemonic) != 0)
            continue;
        unsigned c = super ? d->scycles : d->wslots;
        unsigned need[3] = {cdiv(d->lbytes, l), cdiv(d->sbytes, s), cdiv(d->units, a)};
        for (unsigned k = 0; k < 3; k++)
            c = need[k] > c ? need[k] : c;
        return c;
    }
    fail_msg("%s is not in the table", mnemonic);
    return 0;
}

/* The machines: the presets with the documented rates, and Mk2 with one or all of the rates
 * lowered (and with rates that do not divide the byte counts, where ceil shows). */
typedef struct cost_mach {
    amp_mach m;
    unsigned l, s, a; /* its rates */
} cost_mach;

static const cost_mach cost_machs[] = {
    {{"mk2", "mk2", 0, 0, 0}, 16, 8, 16},
    {{"mk1", "mk1", 0, 0, 0}, 16, 8, 8},
    {{"mk2 load 4", "mk2", 4, 0, 0}, 4, 8, 16},
    {{"mk2 store 2", "mk2", 0, 2, 0}, 16, 2, 16},
    {{"mk2 units 4", "mk2", 0, 0, 4}, 16, 8, 4},
    {{"mk2 load 4 store 2 units 4", "mk2", 4, 2, 4}, 4, 2, 4},
    {{"mk2 load 5 store 3", "mk2", 5, 3, 0}, 5, 3, 16}, /* rates that divide nothing: ceil */
};

/* The instructions timed, as written: r2 a 16-aligned data pointer (partials), r4 another
 * (inputs), r1 = WTS for ldcw. */
typedef struct cost_insn {
    const char *mnemonic, *insn;
    int super; /* 0: in a worker, 1: in the supervisor */
} cost_insn;

static const cost_insn cost_insns[] = {
    {"f32amp", "f32amp  r2, r4", 0},
    {"f16amp", "f16amp  r2, r4", 0},
    {"ampst", "ampst", 0},
    {"ampz", "ampz", 0},
    {"ld128pi", "ld128pi r12, [r2]+=16", 0},
    {"st64", "st64    r8, [r2+8]", 0},
    {"ld64", "ld64    r8, [r2+8]", 0},
    {"ld32", "ld32    r8, [r2+4]", 0},
    {"st32", "st32    r8, [r2+4]", 0},
    {"ldcw", "ldcw    5, r1", 1},
    {"ld64", "ld64    r8, [r2+8]", 1},
    {"st64", "st64    r8, [r2+8]", 1},
    {"ld128pi", "ld128pi r12, [r2]+=16", 1},
    {"ld32", "ld32    r8, [r2+4]", 1},
};

/* $ccount before and after K copies of insn: a worker's difference is 6 x (1 + K x slots)
 * (the first get's slot and K instructions; docs/isa.md, "Timing"), the supervisor's with no
 * worker running 1 + K x cycles. */
static uint32_t measure(const amp_mach *am, const cost_insn *ci, unsigned K)
{
    sbuf b = {.n = 0};
    const char *setup = "        li      r1, 0x8000\n        li      r2, 0xa000\n"
                        "        li      r4, 0x9000\n";
    if (ci->super)
        sb(&b, "main:\n%s", setup);
    else
        sb(&b, "main:   run     w, r0\n        join\n        halt\nw:\n%s", setup);
    sb(&b, "        get     r10, $ccount\n");
    sb_rep(&b, K, ci->insn);
    sb(&b,
       "        get     r11, $ccount\n        sub     r8, r11, r10\n"
       "        li      r3, 0x%x\n        st32    r8, [r3+0]\n        %s\n",
       REGS, ci->super ? "halt" : "exit");
    run_ctx r;
    rc_open(&r, b.s, am, 1, 1, 1);
    if (eng_run(r.g, &r.e) != ERR_OK)
        fail_msg("%s on %s: %s", ci->insn, am->name, r.e.msg);
    uint32_t got = tu_get32(eng_tile_mem(r.g, 0, 0), REGS);
    rc_close(&r);
    return got;
}

static void test_costs(void **state)
{
    (void)state;
    enum { K = 4 };
    /* the presets' rates are the ones the table assumes */
    for (size_t i = 0; i < 2; i++) {
        err e;
        err_clear(&e);
        mach m;
        assert_int_equal(mach_builtin(&m, cost_machs[i].m.preset, &e), ERR_OK);
        assert_int_equal(m.load_bytes_per_cycle, cost_machs[i].l);
        assert_int_equal(m.store_bytes_per_cycle, cost_machs[i].s);
        assert_int_equal(m.amp_macs_per_issue, cost_machs[i].a);
    }
    /* the documented special cases, so a slip in the rule above cannot hide one below */
    assert_int_equal(want_cost("ampst", 16, 8, 16, 0), 8);
    assert_int_equal(want_cost("f32amp", 16, 8, 16, 0), 1);
    assert_int_equal(want_cost("f32amp", 16, 8, 8, 0), 2);
    assert_int_equal(want_cost("f16amp", 4, 8, 16, 0), 4);
    for (size_t mi = 0; mi < sizeof cost_machs / sizeof cost_machs[0]; mi++) {
        const cost_mach *cm = &cost_machs[mi];
        for (size_t c = 0; c < sizeof cost_insns / sizeof cost_insns[0]; c++) {
            const cost_insn *ci = &cost_insns[c];
            unsigned s = want_cost(ci->mnemonic, cm->l, cm->s, cm->a, ci->super);
            uint32_t want = ci->super ? 1 + K * s : 6 * (1 + K * s);
            uint32_t got = measure(&cm->m, ci, K);
            if (got != want)
                fail_msg("%s (%s) on %s: %u cycles for the first get and %d issues, want %u "
                         "(%u %s each)",
                         ci->insn, ci->super ? "supervisor" : "worker", cm->m.name, got, K, want, s,
                         ci->super ? "cycles" : "slots");
        }
    }
}

/* ---- determinism ---- */

enum {
    DR = 8,            /* rows per worker and kind */
    D_XIN16 = 0x9800,  /* f16 inputs (f32 at XIN) */
    D_PART16 = 0xb000, /* f16 partials (f32 at PART) */
};

/* Tile g's data: f32 weights at WTS, f16 weights at WTS2; worker k's DR f32 rows from
 * XIN + 32 DR k (partials PART + 64 DR k) and DR f16 rows from D_XIN16 + 32 DR k (partials
 * D_PART16 + 32 DR k). want gets the outputs. */
static void det_tile(uint32_t g, uint8_t *m, uint8_t *want)
{
    memset(m + LO, BACKGROUND, HI - LO);
    rng_s = 1000 + g;
    for (unsigned i = 0; i < 128; i++)
        putf(m, WTS + 4 * i, rval());
    for (unsigned i = 0; i < 256; i++)
        put16(m, WTS2 + 2 * i, rhalf());
    for (unsigned k = 0; k < 6; k++)
        for (unsigned r = 0; r < DR; r++) {
            uint32_t row = k * DR + r;
            for (unsigned i = 0; i < 8; i++)
                putf(m, XIN + 32 * row + 4 * i, rval());
            for (unsigned i = 0; i < 16; i++)
                putf(m, PART + 64 * row + 4 * i, rval());
            for (unsigned i = 0; i < 16; i++)
                put16(m, D_XIN16 + 32 * row + 2 * i, rhalf());
            for (unsigned i = 0; i < 8; i++)
                putf(m, D_PART16 + 32 * row + 4 * i, rval());
        }
    memcpy(want + LO, m + LO, HI - LO);
    float w32[8][16], w16[16][8];
    memcpy(w32, m + WTS, sizeof w32);
    for (unsigned k = 0; k < 16; k++)
        for (unsigned n = 0; n < 8; n++) {
            uint16_t h;
            memcpy(&h, m + WTS2 + (k * 8 + n) * 2, 2);
            w16[k][n] = h2f(h);
        }
    for (uint32_t row = 0; row < 6 * DR; row++) {
        float x[16], p[16];
        memcpy(x, m + XIN + 32 * row, 32);
        memcpy(p, m + PART + 64 * row, 64);
        for (unsigned n = 0; n < 16; n++)
            putf(want, PART + 64 * row + 4 * n, lane(x, &w32[0][n], 16, 8, p[n], M_REF));
        for (unsigned k = 0; k < 16; k++) {
            uint16_t h;
            memcpy(&h, m + D_XIN16 + 32 * row + 2 * k, 2);
            x[k] = h2f(h);
        }
        memcpy(p, m + D_PART16 + 32 * row, 32);
        for (unsigned n = 0; n < 8; n++)
            putf(want, D_PART16 + 32 * row + 4 * n, lane(x, &w16[0][n], 8, 16, p[n], M_REF));
    }
}

static void test_determinism(void **state)
{
    (void)state;
    enum { NIPUS = 2, NTILES = 96 };
    static const unsigned threads[] = {1, 2, 4};
    sbuf b = {.n = 0};
    sb(&b, "main:\n");
    sb_ldcw(&b, WTS);
    sb(&b, "        runall  wa, r0\n        join\n");
    sb_ldcw(&b, WTS2);
    sb(&b, "        runall  wb, r0\n        join\n        halt\n");
    sb(&b,
       "wa:     get     r5, $wid\n        muli    r6, r5, %u\n        addi    r2, r6, 0x%x\n"
       "        muli    r7, r5, %u\n        addi    r1, r7, 0x%x\n        li      r4, %u\n"
       "        rpt     r4, ea\n        f32amp  r2, r1\nea:     ampst\n        exit\n",
       64 * DR, PART, 32 * DR, XIN, 8 * DR);
    sb(&b,
       "wb:     get     r5, $wid\n        muli    r6, r5, %u\n        addi    r2, r6, 0x%x\n"
       "        muli    r7, r5, %u\n        addi    r1, r7, 0x%x\n        li      r4, %u\n"
       "        rpt     r4, eb\n        f16amp  r2, r1\neb:     ampst\n        exit\n",
       32 * DR, D_PART16, 32 * DR, D_XIN16, 4 * DR);
    uint8_t *m = img_new(), *want = img_new();
    uint64_t hash[3], at[3];
    for (size_t ti = 0; ti < 3; ti++) {
        run_ctx r;
        rc_open(&r, b.s, &mk2, NIPUS, NTILES, threads[ti]);
        for (uint32_t i = 0; i < NIPUS; i++)
            for (uint32_t t = 0; t < NTILES; t++) {
                det_tile(i * NTILES + t, m, want);
                memcpy(eng_tile_mem(r.g, i, t) + LO, m + LO, HI - LO);
            }
        if (eng_run(r.g, &r.e) != ERR_OK)
            fail_msg("%u threads: %s", threads[ti], r.e.msg);
        hash[ti] = 0xcbf29ce484222325ull;
        at[ti] = 0;
        for (uint32_t i = 0; i < NIPUS; i++)
            for (uint32_t t = 0; t < NTILES; t++) {
                const uint8_t *tm = eng_tile_mem(r.g, i, t);
                hash[ti] = tu_fnv(hash[ti], tm, MEMSZ);
                const tile *tt = eng_tile(r.g, i, t);
                assert_int_equal(tt->state, TILE_HALTED);
                at[ti] = tu_fnv(at[ti], &tt->at, sizeof tt->at);
                det_tile(i * NTILES + t, m, want);
                memcpy(m + LO, tm + LO, HI - LO);
                char what[64];
                snprintf(what, sizeof what, "%u threads, ipu %u tile %u", threads[ti], i, t);
                check_img(what, m, want);
            }
        rc_close(&r);
        if (ti) {
            assert_int_equal(hash[ti], hash[0]);
            assert_int_equal(at[ti], at[0]);
        }
    }
    free(m);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_reference),  cmocka_unit_test(test_f32_rows),
        cmocka_unit_test(test_f16_rows),        cmocka_unit_test(test_pipeline_stops),
        cmocka_unit_test(test_pipeline_ampz),   cmocka_unit_test(test_pipeline_overlap),
        cmocka_unit_test(test_pipeline_places), cmocka_unit_test(test_pipeline_fresh_worker),
        cmocka_unit_test(test_faults_amp),      cmocka_unit_test(test_faults_ldcw),
        cmocka_unit_test(test_faults_range),    cmocka_unit_test(test_costs),
        cmocka_unit_test(test_determinism),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
