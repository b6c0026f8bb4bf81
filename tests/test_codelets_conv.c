/* test_codelets_conv: the convolution codelets (workloads/codelets/conv_*.s) run through the
 * engine on one Mk2 tile, against workloads/mnist/layers.c, with exact cycle counts.
 *
 * Codelets: conv_amp (supervisor: passes of AMP weight blocks, workers streaming runs of rows),
 * conv_pack (strided gather into blocks: AMP weights, channel grouping, weight pairs),
 * conv_ungroup ([G][P][16] partials to [C][P], or added into it) and conv_mac1 (conv1's
 * forward on the workers' f32v2 MACs). The plans (pass table, worklists, pack block lists and
 * the state words: what a graph builder places as I32 tensors and vertex fields) come from
 * workloads/graph/conv_plan.h, which the harnesses below place in a tile image; the cycle
 * models and the references stay here, derived independently of it. Each flow runs B samples
 * on one tile:
 *   forward (AMP)   pack w -> blocks (ob, ci, ky); conv_amp; ungroup        bit-exact
 *   forward (MAC)   pack w -> pairs; conv_mac1 per (channel, rows)          bit-exact
 *   input grad      pack dy -> [B][Cg][P][16]; pack w -> blocks (ky, kx, chunk);
 *                   conv_amp (zeroing phase, then K K x 3 passes); ungroup  within a bound
 *   weight grad     pack dy -> [Cg][P][16] (= the weights, no further pack); conv_amp into
 *                   dw^T [Cg][Cin K K][16], zeroed on the sample's first pass; ungroup adds
 *                   it into dw (one sample a call: C adds each sample's sum)  bit-exact (conv2)
 * Bit-exact means: the same float as the C layer, or both zero (a zero bias adds 0 in C).
 * The bounds: the input gradient sums, for each dx element, all its Cout x K x K terms in one
 * sequential chain (kernel position, then output channel), where mlayer_conv_bwd sums over the
 * output channels first and then adds the K x K partial sums; conv1's weight gradient sums the
 * 576 pixels of a sample in order where mlayer_conv_bwd uses eight interleaved lanes. Both are
 * recursive fp32 sums of n terms, so each differs from the exact (double) sum by at most
 * n u sum |t| (u = 2^-24, to first order); the test checks the codelets' results (and the C
 * layer's) against the double-precision sums with that bound.
 *
 * Cycle models (docs/timing.md: a worker's slot costs 6 tile cycles; supervisor costs and
 * barrel rules as tabulated there), written here from the instruction counts of each codelet
 * as its header states them:
 *   conv_pack     S = 11 + sum over blocks (11 + rv (5 + 3 cv + C - cv) + (R - rv) C)
 *   conv_ungroup  S = 10 + nc (10 + 2P), or 10 + nc (10 + 4P) when adding
 *   conv_mac1     S = 9 + rows (5 + 59 Wo)
 *   conv_amp      per pass and worker S = 27 + sum over its runs (10 + (9 + z) rows), 26 with
 *                 no runs; zeroing worker 8 + zall; the supervisor timeline in amp_model.
 * A worker harness runs vertices one at a time (li, run, join: each costs 6 S + 2 cycles, see
 * worker_model), the AMP harness calls conv_amp once (amp_model). test_graph_fwd runs the
 * conv2 forward as a one-tile graph (values only). test_tutorial_figures pins the per-sample
 * figures of the tutorial's layers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "workloads/codelets.h"
#include "workloads/graph/conv_plan.h"
#include "workloads/graph/graph.h"
#include "workloads/mnist/layers.h"

#define MEMSZ 638976u /* Mk2 tile SRAM */
#define BASE 0x4000u  /* data from here; the harness text stays below */
#define MAXV 64       /* vertices per worker harness */

/* ---- a host image of the tile's data, and the harnesses ---- */

typedef struct img {
    uint8_t *m;
    uint32_t top;
} img;

static void img_init(img *im)
{
    im->m = calloc(1, MEMSZ);
    assert_non_null(im->m);
    im->top = BASE;
}

static uint32_t img_alloc(img *im, uint32_t bytes, uint32_t align)
{
    uint32_t a = (im->top + align - 1) & ~(align - 1);
    if (a + bytes > MEMSZ)
        fail_msg("tile memory: %u bytes at 0x%x do not fit", bytes, a);
    memset(im->m + a, 0, bytes);
    im->top = a + bytes;
    return a;
}

static uint32_t img_floats(img *im, const float *v, size_t n, size_t pad)
{
    uint32_t a = img_alloc(im, (uint32_t)(4 * (n + pad)), 16);
    if (n)
        memcpy(im->m + a, v, 4 * n);
    return a;
}

static uint32_t img_words(img *im, const uint32_t *v, size_t n)
{
    uint32_t a = img_alloc(im, (uint32_t)(4 * (n ? n : 1)), 16);
    if (n)
        memcpy(im->m + a, v, 4 * n);
    return a;
}

static void img_get(const img *im, uint32_t a, float *v, size_t n)
{
    memcpy(v, im->m + a, 4 * n);
}

/* Assemble main + the codelet, run it on one Mk2 tile with the image, copy the data back;
 * returns the cycles. */
static uint64_t run_prog(img *im, const char *main_src, const char *codelet)
{
    const char *src = wl_codelet(codelet);
    assert_non_null(src);
    size_t n = strlen(main_src) + strlen(src) + 64;
    char *text = malloc(n);
    assert_non_null(text);
    snprintf(text, n, "%s\n%s", main_src, src);
    isa_prog prog;
    tu_assemble(codelet, text, &prog);
    free(text);
    assert_true(prog.size <= BASE);
    sys *s = tu_system(1, 1, 1, 2000000000ull, &prog);
    eng *g = sys_engine(s);
    memcpy(eng_tile_mem(g, 0, 0) + BASE, im->m + BASE, MEMSZ - BASE);
    err e;
    err_clear(&e);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s: %s", codelet, e.msg);
    memcpy(im->m + BASE, eng_tile_mem(g, 0, 0) + BASE, MEMSZ - BASE);
    eng_stats st;
    eng_get_stats(g, &st);
    sys_free(s);
    isa_prog_free(&prog);
    return st.cycles;
}

/* Worker vertices one after another: li r1, state; run; join (per vertex), halt. */
static uint64_t run_workers(img *im, const char *codelet, const uint32_t *states, unsigned n)
{
    char src[MAXV * 96 + 64];
    size_t at = (size_t)snprintf(src, sizeof src, "        .text\nmain:\n");
    assert_true(n <= MAXV);
    for (unsigned k = 0; k < n; k++)
        at += (size_t)snprintf(src + at, sizeof src - at,
                               "        li r1, %u\n        run %s, r1\n        join\n", states[k],
                               codelet);
    snprintf(src + at, sizeof src - at, "        halt\n");
    return run_prog(im, src, codelet);
}

static uint64_t run_super(img *im, const char *codelet, uint32_t state)
{
    char src[160];
    snprintf(src, sizeof src,
             "        .text\nmain:\n        li r1, %u\n        call %s\n"
             "        halt\n",
             state, codelet);
    return run_prog(im, src, codelet);
}

/* Vertices run one at a time: li at t, run at t + 1 (the worker's first issue at t + 7, its
 * slot t + 1 mod 6), join at t + 8 (the next slot the worker does not own), which completes
 * at its exit + 1 = t + 7 + 6 (S - 1) + 1: the next li at t + 6 S + 2. halt adds 1. */
static uint64_t worker_model(const uint64_t *S, unsigned n)
{
    uint64_t c = 0;
    for (unsigned k = 0; k < n; k++)
        c += 6 * S[k] + 2;
    return c + 1;
}

/* runall NAME.all over six states laid end to end at `states`: li at 0, runall at 1 (worker
 * w first issues at 7 + w and takes S_w + 3 slots: the .all entry's get, muli, add), join at
 * the first slot a worker frees (its exit + 6), done at max(join + 6, last exit + 1); halt. */
static uint64_t all_model(const uint64_t *S)
{
    uint64_t join = UINT64_MAX, last = 0;
    for (unsigned w = 0; w < 6; w++) {
        uint64_t exit = 1 + w + 6 * (S[w] + 3);
        join = exit + 6 < join ? exit + 6 : join;
        last = exit > last ? exit : last;
    }
    return (join + 6 > last + 1 ? join + 6 : last + 1) + 1;
}

static uint64_t run_all(img *im, const char *codelet, uint32_t states)
{
    char src[200];
    snprintf(src, sizeof src,
             "        .text\nmain:\n        li r1, %u\n        runall %s.all, r1\n        join\n"
             "        halt\n",
             states, codelet);
    return run_prog(im, src, codelet);
}

/* ---- random data ---- */

static uint64_t rng_s = 0x1234567;

static float frand(void)
{
    uint64_t z = (rng_s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) * 0x1p-23 - 1.0); /* [-1, 1) */
}

static float *rand_floats(size_t n)
{
    float *v = malloc(4 * (n ? n : 1));
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = frand();
    return v;
}

/* Same float, or both zero (0 + -0 is +0 in C: a zero bias adds no term but the sign). */
static void assert_same(const float *a, const float *b, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4) != 0 && !(a[i] == 0.0f && b[i] == 0.0f))
            fail_msg("%s[%zu]: %.9g, want %.9g", what, i, (double)a[i], (double)b[i]);
}

/* |got - exact| <= n u sum|t| for every element (see the file comment). */
static double assert_bound(const float *got, const double *exact, const double *abs_sum, size_t n,
                           double terms, const char *what)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double bound = terms * 0x1p-24 * abs_sum[i];
        double err = fabs((double)got[i] - exact[i]);
        if (err > bound)
            fail_msg("%s[%zu]: %.9g, exact %.9g, error %.3g > bound %.3g", what, i, (double)got[i],
                     exact[i], err, bound);
        if (bound > 0 && err / bound > worst)
            worst = err / bound;
    }
    return worst;
}

/* ---- the plans (workloads/graph/conv_plan.h) ---- */

static cplan_shape shape_of(const mlayer_conv *c)
{
    cplan_shape s = {(uint32_t)c->cin,  (uint32_t)c->h, (uint32_t)c->w,
                     (uint32_t)c->cout, (uint32_t)c->k, 0};
    return s;
}

static void plan_conv(cplan_conv *pl, cplan_kind kind, const mlayer_conv *c, uint32_t B)
{
    cplan_shape s = shape_of(c);
    err e;
    err_clear(&e);
    int rc = kind == CPLAN_FWD  ? cplan_fwd(pl, &s, B, &e)
             : kind == CPLAN_DX ? cplan_dx(pl, &s, B, &e)
                                : cplan_wgrad(pl, &s, &e);
    if (rc != ERR_OK)
        fail_msg("%s", e.msg);
}

/* ---- conv_pack ---- */

/* The model: header 10 + exit 1; per block 11 + rows (5 + 3 cv + pad) + zero rows (10 + R C
 * when rv = 0: no addi). */
static uint64_t pack_S(const cplan_pack *p, uint32_t first, uint32_t n)
{
    if (n == 0)
        return 10;
    uint64_t S = 11;
    for (uint32_t k = first; k < first + n; k++) {
        uint64_t rv = p->list[3 * k + 1], cv = p->list[3 * k + 2];
        if (rv == 0)
            S += 10 + (uint64_t)p->R * p->C;
        else
            S += 11 + rv * (5 + 3 * cv + p->C - cv) + (p->R - rv) * p->C;
    }
    return S;
}

/* The C meaning of a pack, for checking it. */
static void pack_ref(const cplan_pack *p, const uint8_t *src, float *dst)
{
    for (uint32_t b = 0; b < p->nblocks; b++)
        for (uint32_t r = 0; r < p->R; r++)
            for (uint32_t c = 0; c < p->C; c++) {
                float v = 0;
                if (r < p->list[3 * b + 1] && c < p->list[3 * b + 2])
                    memcpy(&v, src + p->list[3 * b] + r * p->sr + c * p->sc, 4);
                *dst++ = v;
            }
}

/* Run a pack as `nv` vertices (blocks split evenly, in order) writing dst; asserts the
 * cycles. Returns the sum of the vertices' S (the tile's cycles with six workers busy). */
static uint64_t run_pack(img *im, const cplan_pack *p, uint32_t src, uint32_t dst, unsigned nv)
{
    uint32_t st[MAXV];
    uint64_t S[MAXV], sum = 0;
    assert_true(nv <= MAXV);
    uint32_t a = img_alloc(im, cplan_pack_bytes(p, nv), 16);
    cplan_pack_at at;
    err e;
    err_clear(&e);
    if (cplan_pack_write(p, nv, dst, src, a, im->m + a, &at, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    for (unsigned v = 0; v < nv; v++) {
        uint32_t b0 = p->nblocks * v / nv, b1 = p->nblocks * (v + 1) / nv;
        st[v] = at.states + 4 * CPLAN_PACK_WORDS * v;
        S[v] = pack_S(p, b0, b1 - b0);
        sum += S[v];
    }
    assert_int_equal(run_workers(im, "conv_pack", st, nv), worker_model(S, nv));
    return sum;
}

/* ---- conv_ungroup ---- */

static uint64_t ungroup_S(uint32_t nc, uint32_t P, int acc)
{
    return nc ? 10 + (uint64_t)nc * (10 + (acc ? 4 : 2) * (uint64_t)P) : 9;
}

/* out[c][p] (+)= in[c/16][p][c%16] for c < C, as nv vertices over channel ranges. */
static uint64_t run_ungroup(img *im, uint32_t out, uint32_t in, uint32_t C, uint32_t P, int acc,
                            unsigned nv)
{
    uint32_t st[MAXV];
    uint64_t S[MAXV], sum = 0;
    for (unsigned v = 0; v < nv; v++) {
        uint32_t c0 = C * v / nv, c1 = C * (v + 1) / nv;
        uint32_t w[CPLAN_UNG_WORDS];
        cplan_ungroup_state(out, in, C, P, acc, v, nv, w);
        st[v] = img_words(im, w, CPLAN_UNG_WORDS);
        S[v] = ungroup_S(c1 - c0, P, acc);
        sum += S[v];
    }
    assert_int_equal(run_workers(im, "conv_ungroup", st, nv), worker_model(S, nv));
    return sum;
}

/* ---- conv_amp: the model ---- */

/* A worker's slots in a pass with z zero stores per row (see the file comment). */
static uint64_t amp_S(const cplan_amp *p, unsigned w, uint32_t z)
{
    if (p->wn[w] == 0)
        return 26;
    uint64_t S = 27;
    for (uint32_t i = 0; i < p->wn[w]; i++)
        S += 10 + (9 + z) * (uint64_t)p->wr[w][i].rows;
    return S;
}

/* The harness's cycles: li at 0, call at 1 (6): conv_amp's four ld32 at 7..10; brz waits for
 * the last load (usable 7 cycles after it) and issues at 17 (6). Zeroing phase: runall at c,
 * every worker S_z slots: worker w exits at c + w + 6 S_z; the supervisor's next slot comes
 * at c + 6 S_z + 6 (worker 0's), join there completes 6 later (after every exit + 1). Then
 * addi (1) and per pass st32 and 32 ldcw (33), runall at c, join at the earliest slot a
 * worker frees (c + w + 6 S_w + 6), done at max(join + 6, last exit + 1); addi (1) and
 * brnzdec (6) lead to the next pass 7 cycles on; after the last, ret (6) and halt (1). */
static uint64_t amp_model(const cplan_amp *p, uint64_t *amp_steps)
{
    uint64_t t = 23, steps = 0;
    if (p->zall) {
        uint64_t Sz = 8 + p->zall;
        t = t + 6 * Sz + 12;
    }
    t += 1; /* addi */
    uint64_t J = 0;
    for (uint32_t k = 0; k < p->npasses; k++) {
        uint64_t c = t + 33, join = UINT64_MAX, last = 0;
        for (unsigned w = 0; w < 6; w++) {
            uint64_t S = amp_S(p, w, p->ptab[3 * k + 2]);
            uint64_t sees = c + w + 6 * S + 6, exit = c + w + 6 * S;
            join = sees < join ? sees : join;
            last = exit > last ? exit : last;
            for (uint32_t i = 0; i < p->wn[w]; i++)
                steps += 8 * (uint64_t)p->wr[w][i].rows;
        }
        J = join + 6 > last + 1 ? join + 6 : last + 1;
        t = J + 7;
    }
    if (amp_steps)
        *amp_steps = steps;
    return J + 14;
}

/* Write the plan's tables and state; run conv_amp; assert the cycles. */
static uint64_t run_amp(img *im, const cplan_amp *p, uint32_t in, uint32_t out, uint32_t wts)
{
    uint32_t a = img_alloc(im, cplan_amp_bytes(p), 16);
    cplan_amp_at at;
    err e;
    err_clear(&e);
    if (cplan_amp_write(p, in, out, wts, a, im->m + a, &at, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    uint64_t cycles = run_super(im, "conv_amp", at.state);
    assert_int_equal(cycles, amp_model(p, NULL));
    return cycles;
}

/* ---- the flows ---- */

typedef struct cyc {
    uint64_t wpack;   /* per weight update: weight blocks or pairs (sum of S) */
    uint64_t pack;    /* per call: dy grouped (sum of S) */
    uint64_t amp;     /* the conv_amp harness's cycles */
    uint64_t ungroup; /* sum of S */
    uint64_t mac;     /* sum of S */
} cyc;

/* The ungroup of each of the plan's B samples (nv vertices each). */
static uint64_t run_ungroups(img *im, const cplan_conv *pl, uint32_t out, uint32_t in, unsigned nv)
{
    uint64_t sum = 0;
    for (uint32_t b = 0; b < pl->B; b++)
        sum += run_ungroup(im, out + b * pl->ung_out_stride, in + b * pl->ung_in_stride, pl->ung_c,
                           pl->ung_p, (int)pl->ung_acc, nv);
    return sum;
}

/* y[B][Cout][P] by the AMP, the B samples in one conv_amp call. */
static cyc flow_fwd_amp(const mlayer_conv *c, uint32_t B, const float *x, const float *w, float *y)
{
    img im;
    img_init(&im);
    uint32_t P = (uint32_t)(mlayer_conv_ho(c) * mlayer_conv_wo(c));
    size_t nx = (size_t)c->cin * c->h * c->w, nw = (size_t)c->cout * c->cin * c->k * c->k;
    uint32_t xa = img_floats(&im, x, B * nx, 8); /* a row's last inputs run up to 8 - K past */
    uint32_t wa = img_floats(&im, w, nw, 0);
    cplan_conv pl;
    plan_conv(&pl, CPLAN_FWD, c, B);
    const cplan_pack *wp = &pl.wpack;
    uint32_t blocks = img_alloc(&im, pl.wts_bytes, 16);
    uint32_t yg = img_alloc(&im, pl.out_bytes, 16);
    uint32_t ya = img_alloc(&im, B * (uint32_t)c->cout * P * 4, 16);
    cyc r = {0, 0, 0, 0, 0};
    r.wpack = run_pack(&im, wp, wa, blocks, 6);
    float *want = malloc(512 * wp->nblocks), *got = malloc(512 * wp->nblocks);
    pack_ref(wp, im.m + wa, want);
    img_get(&im, blocks, got, 128 * wp->nblocks);
    assert_memory_equal(got, want, 512 * wp->nblocks);
    free(want);
    free(got);
    r.amp = run_amp(&im, &pl.amp, xa, yg, blocks);
    r.ungroup = run_ungroups(&im, &pl, ya, yg, 6);
    img_get(&im, ya, y, B * (size_t)c->cout * P);
    cplan_free(&pl);
    free(im.m);
    return r;
}

/* y[Cout][P] of one sample (cin = 1, K = 5) by conv_mac1: one vertex per (channel, half of
 * the rows). */
static cyc flow_fwd_mac(const mlayer_conv *c, const float *x, const float *w, float *y)
{
    assert_int_equal(c->cin, 1);
    assert_int_equal(c->k, 5);
    img im;
    img_init(&im);
    cplan_shape sh = shape_of(c);
    uint32_t W = (uint32_t)c->w, Co = (uint32_t)c->cout, ho = (uint32_t)mlayer_conv_ho(c);
    uint32_t wo = (uint32_t)mlayer_conv_wo(c), P = ho * wo;
    uint32_t xa = img_floats(&im, x, (size_t)c->h * W, 0);
    uint32_t wa = img_floats(&im, w, (size_t)Co * 25, 0);
    cplan_pack wp;
    cplan_pack_pairs(&wp, Co, 25);
    uint32_t pairs = img_alloc(&im, Co * 25 * 8, 16);
    cyc r = {0, 0, 0, 0, 0};
    r.wpack = run_pack(&im, &wp, wa, pairs, 1);
    uint32_t ya = img_alloc(&im, Co * P * 4, 16);
    uint32_t st[MAXV];
    uint64_t S[MAXV];
    unsigned nv = 0;
    for (uint32_t co = 0; co < Co; co++)
        for (uint32_t h = 0; h < 2; h++) {
            uint32_t r0 = ho * h / 2, r1 = ho * (h + 1) / 2;
            uint32_t s[CPLAN_MAC1_WORDS];
            cplan_mac1_state(&sh, xa, pairs, ya, co, r0, r1, s);
            st[nv] = img_words(&im, s, CPLAN_MAC1_WORDS);
            S[nv] = r1 > r0 ? 9 + (uint64_t)(r1 - r0) * (5 + 59 * wo) : 8;
            r.mac += S[nv++];
        }
    assert_int_equal(run_workers(&im, "conv_mac1", st, nv), worker_model(S, nv));
    img_get(&im, ya, y, (size_t)Co * P);
    cplan_pack_free(&wp);
    free(im.m);
    return r;
}

/* dx[B][Cin][H][W], the B samples in one conv_amp call. */
static cyc flow_dx(const mlayer_conv *c, uint32_t B, const float *w, const float *dy, float *dx)
{
    img im;
    img_init(&im);
    uint32_t Ci = (uint32_t)c->cin, Co = (uint32_t)c->cout, HW = (uint32_t)(c->h * c->w);
    uint32_t P = (uint32_t)(mlayer_conv_ho(c) * mlayer_conv_wo(c));
    uint32_t dya = img_floats(&im, dy, B * (size_t)Co * P, 0);
    uint32_t wa = img_floats(&im, w, (size_t)Co * Ci * c->k * c->k, 0);
    cplan_conv pl;
    plan_conv(&pl, CPLAN_DX, c, B);
    uint32_t dyg = img_alloc(&im, pl.in_bytes, 16);
    uint32_t blocks = img_alloc(&im, pl.wts_bytes, 16);
    uint32_t dxg = img_alloc(&im, pl.out_bytes, 16);
    memset(im.m + dxg, 0xff, pl.out_bytes); /* NaN: the zeroing phase must clear it */
    uint32_t dxa = img_alloc(&im, B * Ci * HW * 4, 16);
    cyc r = {0, 0, 0, 0, 0};
    r.pack = run_pack(&im, &pl.dypack, dya, dyg, 2);
    r.wpack = run_pack(&im, &pl.wpack, wa, blocks, 6);
    r.amp = run_amp(&im, &pl.amp, dyg, dxg, blocks);
    r.ungroup = run_ungroups(&im, &pl, dxa, dxg, 5);
    img_get(&im, dxa, dx, B * (size_t)Ci * HW);
    cplan_free(&pl);
    free(im.m);
    return r;
}

/* dw[Cout][Cin K K] += the sample's gradient. */
static cyc flow_wgrad(const mlayer_conv *c, const float *x, const float *dy, float *dw)
{
    img im;
    img_init(&im);
    uint32_t Ci = (uint32_t)c->cin, Co = (uint32_t)c->cout, KK = Ci * (uint32_t)(c->k * c->k);
    uint32_t P = (uint32_t)(mlayer_conv_ho(c) * mlayer_conv_wo(c)), G = (Co + 15) / 16;
    uint32_t xa = img_floats(&im, x, (size_t)Ci * c->h * c->w, 0);
    uint32_t dya = img_floats(&im, dy, (size_t)Co * P, 0);
    uint32_t dwa = img_floats(&im, dw, (size_t)Co * KK, 0);
    cplan_conv pl;
    plan_conv(&pl, CPLAN_WGRAD, c, 1);
    uint32_t dyg = img_alloc(&im, pl.wts_bytes, 16);
    uint32_t dwt = img_alloc(&im, pl.out_bytes, 16);
    memset(im.m + dwt, 0xff, pl.out_bytes); /* NaN: each sample's first pass must zero it */
    cyc r = {0, 0, 0, 0, 0};
    r.pack = run_pack(&im, &pl.dypack, dya, dyg, G);
    r.amp = run_amp(&im, &pl.amp, xa, dwt, dyg);
    r.ungroup = run_ungroups(&im, &pl, dwa, dwt, 6);
    img_get(&im, dwa, dw, (size_t)Co * KK);
    cplan_free(&pl);
    free(im.m);
    return r;
}

/* ---- references in double: dx and dw with the sums of |terms| ---- */

static void dx_exact(const mlayer_conv *c, const float *w, const float *dy, double *dx,
                     double *abs_sum)
{
    int K = c->k, ho = mlayer_conv_ho(c), wo = mlayer_conv_wo(c);
    size_t n = (size_t)c->cin * c->h * c->w;
    memset(dx, 0, n * sizeof *dx);
    memset(abs_sum, 0, n * sizeof *abs_sum);
    for (int co = 0; co < c->cout; co++)
        for (int ci = 0; ci < c->cin; ci++)
            for (int ky = 0; ky < K; ky++)
                for (int kx = 0; kx < K; kx++)
                    for (int oy = 0; oy < ho; oy++)
                        for (int ox = 0; ox < wo; ox++) {
                            double t = (double)dy[(co * ho + oy) * wo + ox] *
                                       w[((co * c->cin + ci) * K + ky) * K + kx];
                            size_t i = ((size_t)ci * c->h + oy + ky) * c->w + ox + kx;
                            dx[i] += t;
                            abs_sum[i] += fabs(t);
                        }
}

/* dw (starting from dw0) += sum over the batch; abs_sum includes |dw0|. */
static void dw_exact(const mlayer_conv *c, int batch, const float *x, const float *dy,
                     const float *dw0, double *dw, double *abs_sum)
{
    int K = c->k, ho = mlayer_conv_ho(c), wo = mlayer_conv_wo(c);
    size_t n = (size_t)c->cout * c->cin * K * K;
    for (size_t i = 0; i < n; i++) {
        dw[i] = dw0[i];
        abs_sum[i] = fabs((double)dw0[i]);
    }
    for (int b = 0; b < batch; b++) {
        const float *xb = x + (size_t)b * c->cin * c->h * c->w;
        const float *db = dy + (size_t)b * c->cout * ho * wo;
        for (int co = 0; co < c->cout; co++)
            for (int ci = 0; ci < c->cin; ci++)
                for (int ky = 0; ky < K; ky++)
                    for (int kx = 0; kx < K; kx++) {
                        size_t i = (((size_t)co * c->cin + ci) * K + ky) * K + kx;
                        for (int oy = 0; oy < ho; oy++)
                            for (int ox = 0; ox < wo; ox++) {
                                double t = (double)db[(co * ho + oy) * wo + ox] *
                                           xb[((size_t)ci * c->h + oy + ky) * c->w + ox + kx];
                                dw[i] += t;
                                abs_sum[i] += fabs(t);
                            }
                    }
    }
}

/* ---- tests ---- */

static const mlayer_conv conv1 = {1, 28, 28, 10, 5, 1, 0};  /* Conv2d(1, 10, 5) on 28 x 28 */
static const mlayer_conv conv2 = {10, 12, 12, 20, 5, 1, 0}; /* Conv2d(10, 20, 5) on 12 x 12 */

/* conv_pack on ragged blocks (rv = 0, rv < R, cv < C, full) in 1 and 3 vertices, and
 * conv_ungroup copying and adding, against their C meaning and cycle models. */
static void test_pack_ungroup(void **state)
{
    (void)state;
    img im;
    img_init(&im);
    float *src = rand_floats(600);
    uint32_t sa = img_floats(&im, src, 600, 0);
    cplan_pack p;
    cplan_pack_init(&p, 6, 7, 4 * 13, 4 * 2);
    cplan_pack_block(&p, 0, 6, 7);
    cplan_pack_block(&p, 40, 3, 5);
    cplan_pack_block(&p, 400, 0, 7);
    cplan_pack_block(&p, 8, 6, 1);
    cplan_pack_block(&p, 1000, 1, 7);
    float want[5 * 42], got[5 * 42];
    pack_ref(&p, im.m + sa, want);
    for (unsigned nv = 1; nv <= 3; nv += 2) {
        uint32_t d = img_alloc(&im, sizeof got, 16);
        memset(im.m + d, 0xff, sizeof got);
        run_pack(&im, &p, sa, d, nv);
        img_get(&im, d, got, 5 * 42);
        assert_memory_equal(got, want, sizeof got);
    }
    cplan_pack_free(&p);

    /* 35 channels in 3 groups of 16 over 7 positions */
    float *g = rand_floats(3 * 7 * 16), *o0 = rand_floats(35 * 7);
    uint32_t ga = img_floats(&im, g, 3 * 7 * 16, 0), oa = img_floats(&im, o0, 35 * 7, 0);
    run_ungroup(&im, oa, ga, 35, 7, 1, 4);
    float o[35 * 7], wantu[35 * 7];
    for (int c = 0; c < 35; c++)
        for (int q = 0; q < 7; q++)
            wantu[c * 7 + q] = o0[c * 7 + q] + g[(c / 16 * 7 + q) * 16 + c % 16];
    img_get(&im, oa, o, 35 * 7);
    assert_memory_equal(o, wantu, sizeof o);
    run_ungroup(&im, oa, ga, 35, 7, 0, 6);
    for (int c = 0; c < 35; c++)
        for (int q = 0; q < 7; q++)
            wantu[c * 7 + q] = g[(c / 16 * 7 + q) * 16 + c % 16];
    img_get(&im, oa, o, 35 * 7);
    assert_memory_equal(o, wantu, sizeof o);
    free(src);
    free(g);
    free(o0);
    free(im.m);
}

static void print_cyc(const char *name, uint32_t B, const cyc *r, double q)
{
    printf("  %-18s B=%u: weights %6llu | per call: pack %6llu, %s %7llu, ungroup %6llu", name, B,
           (unsigned long long)r->wpack, (unsigned long long)r->pack, r->mac ? "mac" : "amp",
           (unsigned long long)(r->mac ? r->mac : r->amp), (unsigned long long)r->ungroup);
    if (q >= 0)
        printf(" (worst error %.3f of the bound)", q);
    printf("\n");
}

/* The .all entries (runall, six states end to end): conv_pack of conv2's forward weight
 * blocks, conv_ungroup of 35 channels, conv_mac1 on a small shape (two channels, three row
 * ranges each); values against the C meaning, cycles against all_model. */
static void test_all_entries(void **state)
{
    (void)state;
    img im;
    img_init(&im);
    /* conv_pack */
    float *w = rand_floats(5000);
    uint32_t wa = img_floats(&im, w, 5000, 0);
    cplan_conv pl;
    plan_conv(&pl, CPLAN_FWD, &conv2, 1);
    const cplan_pack *wp = &pl.wpack;
    uint32_t list = img_words(&im, wp->list, 3 * (size_t)wp->nblocks);
    uint32_t blocks = img_alloc(&im, 512 * wp->nblocks, 16);
    uint32_t st[6 * 8];
    uint64_t S[6];
    for (unsigned v = 0; v < 6; v++) {
        uint32_t b0 = wp->nblocks * v / 6, b1 = wp->nblocks * (v + 1) / 6;
        cplan_pack_state(wp, v, 6, blocks, wa, list, st + 8 * v);
        S[v] = pack_S(wp, b0, b1 - b0);
    }
    assert_int_equal(run_all(&im, "conv_pack", img_words(&im, st, 48)), all_model(S));
    float *want = malloc(512 * wp->nblocks), *got = malloc(512 * wp->nblocks);
    pack_ref(wp, im.m + wa, want);
    img_get(&im, blocks, got, 128 * wp->nblocks);
    assert_memory_equal(got, want, 512 * wp->nblocks);
    cplan_free(&pl);
    free(want);
    free(got);
    free(w);

    /* conv_ungroup */
    float *g = rand_floats(3 * 7 * 16), o[35 * 7], wantu[35 * 7];
    uint32_t ga = img_floats(&im, g, 3 * 7 * 16, 0), oa = img_alloc(&im, sizeof o, 16);
    for (unsigned v = 0; v < 6; v++) {
        uint32_t c0 = 35 * v / 6, c1 = 35 * (v + 1) / 6;
        cplan_ungroup_state(oa, ga, 35, 7, 0, v, 6, st + 6 * v);
        S[v] = ungroup_S(c1 - c0, 7, 0);
    }
    assert_int_equal(run_all(&im, "conv_ungroup", img_words(&im, st, 36)), all_model(S));
    for (int c = 0; c < 35; c++)
        for (int q = 0; q < 7; q++)
            wantu[c * 7 + q] = g[(c / 16 * 7 + q) * 16 + c % 16];
    img_get(&im, oa, o, 35 * 7);
    assert_memory_equal(o, wantu, sizeof o);
    free(g);

    /* conv_mac1: Conv2d(1, 2, 5) on 11 x 12 (7 x 8 outputs), rows split 2, 2, 3 */
    static const mlayer_conv c = {1, 11, 12, 2, 5, 1, 0};
    cplan_shape sh = shape_of(&c);
    float *x = rand_floats(132), *wk = rand_floats(50), b[2] = {0, 0}, y[112], ym[112];
    float *col = malloc(4 * mlayer_conv_col_floats(&c));
    mlayer_conv_fwd(&c, 1, x, wk, b, y, col);
    float pairs[100];
    for (int i = 0; i < 50; i++)
        pairs[2 * i] = pairs[2 * i + 1] = wk[i];
    uint32_t xa = img_floats(&im, x, 132, 0), pa = img_floats(&im, pairs, 100, 0);
    uint32_t ya = img_alloc(&im, sizeof ym, 16);
    static const uint32_t r0s[4] = {0, 2, 4, 7};
    for (unsigned v = 0; v < 6; v++) {
        uint32_t co = v / 3, r0 = r0s[v % 3], r1 = r0s[v % 3 + 1];
        cplan_mac1_state(&sh, xa, pa, ya, co, r0, r1, st + 5 * v);
        S[v] = 9 + (uint64_t)(r1 - r0) * (5 + 59 * 8);
    }
    assert_int_equal(run_all(&im, "conv_mac1", img_words(&im, st, 30)), all_model(S));
    img_get(&im, ya, ym, 112);
    assert_same(ym, y, 112, "conv_mac1.all");
    free(x);
    free(wk);
    free(col);
    free(im.m);
}

static void check_fwd(const mlayer_conv *c, uint32_t B, int mac, const char *name)
{
    size_t nx = (size_t)c->cin * c->h * c->w, nw = (size_t)c->cout * c->cin * c->k * c->k;
    size_t ny = B * (size_t)c->cout * mlayer_conv_ho(c) * mlayer_conv_wo(c);
    float *x = rand_floats(B * nx), *w = rand_floats(nw), *b = calloc(c->cout, 4);
    float *want = malloc(4 * ny), *got = malloc(4 * ny);
    float *col = malloc(4 * mlayer_conv_col_floats(c));
    mlayer_conv_fwd(c, (int)B, x, w, b, want, col);
    cyc r = mac ? flow_fwd_mac(c, x, w, got) : flow_fwd_amp(c, B, x, w, got);
    assert_same(got, want, ny, name);
    print_cyc(name, B, &r, -1);
    free(x);
    free(w);
    free(b);
    free(want);
    free(got);
    free(col);
}

/* Forward on the AMP, bit-exact: conv2 (1 and 3 samples a call), two small shapes (K = 3,
 * Cout = 18: a second block with 2 channels; K = 8: all 8 inputs of a row used, no padding
 * read past x), and conv1 (the alternative to conv_mac1). */
static void test_fwd_amp(void **state)
{
    (void)state;
    check_fwd(&conv2, 1, 0, "conv2 fwd");
    check_fwd(&conv2, 3, 0, "conv2 fwd");
    static const mlayer_conv s1 = {3, 7, 10, 18, 3, 1, 0}, s2 = {2, 9, 11, 5, 8, 1, 0};
    check_fwd(&s1, 2, 0, "small fwd K3");
    check_fwd(&s2, 1, 0, "small fwd K8");
    check_fwd(&conv1, 1, 0, "conv1 fwd (AMP)");
}

/* conv1 forward on the workers: bit-exact, on the tutorial's shape and a small one. */
static void test_fwd_mac(void **state)
{
    (void)state;
    check_fwd(&conv1, 1, 1, "conv1 fwd");
    static const mlayer_conv s = {1, 9, 10, 3, 5, 1, 0};
    check_fwd(&s, 1, 1, "small fwd mac");
}

static void check_dx(const mlayer_conv *c, uint32_t B, const char *name)
{
    size_t nx = (size_t)c->cin * c->h * c->w, nw = (size_t)c->cout * c->cin * c->k * c->k;
    size_t ny = (size_t)c->cout * mlayer_conv_ho(c) * mlayer_conv_wo(c);
    float *x = rand_floats(B * nx), *w = rand_floats(nw), *dy = rand_floats(B * ny);
    float *dw = calloc(nw, 4), *db = calloc(c->cout, 4), *dxc = malloc(4 * B * nx);
    float *got = malloc(4 * B * nx);
    float *col = malloc(4 * mlayer_conv_col_floats(c)),
          *dcol = malloc(4 * mlayer_conv_col_floats(c));
    double *ex = malloc(8 * B * nx), *as = malloc(8 * B * nx);
    mlayer_conv_bwd(c, (int)B, x, w, dy, dw, db, dxc, col, dcol);
    for (uint32_t b = 0; b < B; b++)
        dx_exact(c, w, dy + b * ny, ex + b * nx, as + b * nx);
    cyc r = flow_dx(c, B, w, dy, got);
    double terms = c->cout * c->k * c->k + 1.0;
    double q = assert_bound(got, ex, as, B * nx, terms, name);
    assert_bound(dxc, ex, as, B * nx, terms, "C dx");
    print_cyc(name, B, &r, q);
    free(x);
    free(w);
    free(dy);
    free(dw);
    free(db);
    free(dxc);
    free(got);
    free(col);
    free(dcol);
    free(ex);
    free(as);
}

/* Input gradients within n u sum|t| of the exact sums (as the C layer's): conv2 with 1 and 2
 * samples a call, a small K = 3 shape with 18 output channels (3 chunks of 8, the last with
 * 2). */
static void test_dx(void **state)
{
    (void)state;
    check_dx(&conv2, 1, "conv2 dx");
    check_dx(&conv2, 2, "conv2 dx");
    static const mlayer_conv s = {3, 7, 10, 18, 3, 1, 0};
    check_dx(&s, 1, "small dx");
}

static void check_wgrad(const mlayer_conv *c, int batch, int exact, const char *name)
{
    size_t nx = (size_t)c->cin * c->h * c->w, nw = (size_t)c->cout * c->cin * c->k * c->k;
    size_t ny = (size_t)c->cout * mlayer_conv_ho(c) * mlayer_conv_wo(c);
    float *x = rand_floats(nx * batch), *w = rand_floats(nw), *dy = rand_floats(ny * batch);
    float *dw0 = rand_floats(nw), *dwc = malloc(4 * nw), *got = malloc(4 * nw);
    float *db = calloc(c->cout, 4);
    float *col = malloc(4 * mlayer_conv_col_floats(c));
    memcpy(dwc, dw0, 4 * nw);
    memcpy(got, dw0, 4 * nw);
    mlayer_conv_bwd(c, batch, x, w, dy, dwc, db, NULL, col, NULL);
    cyc r = {0, 0, 0, 0, 0};
    for (int b = 0; b < batch; b++)
        r = flow_wgrad(c, x + nx * b, dy + ny * b, got);
    double q = 0;
    if (exact) {
        assert_same(got, dwc, nw, name);
    } else {
        double *ex = malloc(8 * nw), *as = malloc(8 * nw);
        dw_exact(c, batch, x, dy, dw0, ex, as);
        double terms = (double)ny / c->cout + batch + 1;
        q = assert_bound(got, ex, as, nw, terms, name);
        assert_bound(dwc, ex, as, nw, terms, "C dw");
        free(ex);
        free(as);
    }
    print_cyc(name, 1, &r, exact ? -1 : q);
    free(x);
    free(w);
    free(dy);
    free(dw0);
    free(dwc);
    free(got);
    free(db);
    free(col);
}

/* Weight gradients: bit-exact where mlayer_conv_bwd sums each sample's pixels in order
 * (mm_acc, taken when P <= Cin K K: conv2, and a small K = 3 shape with 18 output channels,
 * P = 32 <= 36), else within the bound (mm_nt's eight lanes: conv1, P = 576 > 25, and a small
 * shape with P = 40 > 27). */
static void test_wgrad(void **state)
{
    (void)state;
    check_wgrad(&conv2, 2, 1, "conv2 dw");
    static const mlayer_conv s = {4, 6, 10, 18, 3, 1, 0}, s8 = {3, 7, 10, 18, 3, 1, 0};
    check_wgrad(&s, 2, 1, "small dw");
    check_wgrad(&s8, 2, 0, "small dw (lanes)");
    check_wgrad(&conv1, 2, 0, "conv1 dw");
}

/* Worker v of 6 of conv_pack: its share of wp's blocks from w (nw floats) into blocks. */
static void pack_vertex(graph *gr, gr_cs cs, const cplan_pack *wp, uint32_t v, gr_tensor blocks,
                        gr_tensor w, uint32_t nw, gr_tensor plist)
{
    uint32_t b0 = wp->nblocks * v / 6, b1 = wp->nblocks * (v + 1) / 6;
    gr_field f[8] = {gr_region(blocks, 128 * b0, 128 * b1),
                     gr_region(w, 0, nw),
                     gr_u32(b1 - b0),
                     gr_region(plist, 3 * b0, 3 * b1),
                     gr_u32(wp->R),
                     gr_u32(wp->C),
                     gr_u32(wp->sr),
                     gr_u32(wp->sc)};
    gr_vertex(gr, cs, "conv_pack", 0, 0, 0, f, 8);
}

/* Worker v of 6 of conv_ungroup: its share of Co channels of P positions from yg (G groups)
 * into y. */
static void ungroup_vertex(graph *gr, gr_cs cs, uint32_t v, gr_tensor y, gr_tensor yg, uint32_t Co,
                           uint32_t P, uint32_t G)
{
    uint32_t c0 = Co * v / 6, c1 = Co * (v + 1) / 6;
    gr_field u[6] = {gr_region(y, c0 * P, c1 * P),
                     gr_region(yg, 0, G * P * 16),
                     gr_u32(c0),
                     gr_u32(c1 - c0),
                     gr_u32(P),
                     gr_u32(0)};
    gr_vertex(gr, cs, "conv_ungroup", 0, 0, 0, u, 6);
}

/* conv2's forward as a one-tile graph: the state layouts as vertex fields (tensor regions
 * and scalars), conv_amp as a supervisor vertex (called by the lowered control program, which
 * keeps its loop counter in r12 across it: Repeat(2, ...)), the tables as I32 tensors written
 * by the host. Bit-exact as the harness flow. */
static void test_graph_fwd(void **state)
{
    (void)state;
    const mlayer_conv *c = &conv2;
    uint32_t Co = 20, P = 64, G = 2, nx = 10 * 144, nw = 20 * 250;
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 1};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.tiles_per_ipu = 1;
    sys *s = sys_new(&cfg, &e);
    assert_non_null(s);
    graph *gr = gr_new(&cfg.m, 1);
    cplan_conv pl;
    plan_conv(&pl, CPLAN_FWD, c, 1);
    const cplan_amp *p = &pl.amp;
    const cplan_pack *wp = &pl.wpack;
    uint32_t nwl = cplan_amp_wl_words(p);
    uint32_t *wl = malloc(4 * nwl);
    cplan_amp_worklists(p, wl);
    uint32_t sh;
#define TENSOR(name, type, n) (sh = (n), gr_tensor_new(gr, name, type, 1, &sh))
    gr_tensor x = TENSOR("x", GR_F32, nx + 8), w = TENSOR("w", GR_F32, nw);
    gr_tensor blocks = TENSOR("blocks", GR_F32, 128 * wp->nblocks);
    gr_tensor yg = TENSOR("yg", GR_F32, G * P * 16), y = TENSOR("y", GR_F32, Co * P);
    gr_tensor plist = TENSOR("plist", GR_I32, 3 * wp->nblocks), wlt = TENSOR("wl", GR_I32, nwl);
    gr_tensor ptab = TENSOR("ptab", GR_I32, 3 * p->npasses);
#undef TENSOR
    gr_tensor all[] = {x, w, blocks, yg, y, plist, wlt, ptab};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        gr_map_region(gr, all[k], 0, 0, 0, gr_tensor_elems(gr, all[k]));
    gr_cs cs_pack = gr_cs_new(gr, "pack"), cs_amp = gr_cs_new(gr, "amp");
    gr_cs cs_ung = gr_cs_new(gr, "ungroup");
    for (uint32_t v = 0; v < 6; v++) {
        pack_vertex(gr, cs_pack, wp, v, blocks, w, nw, plist);
        ungroup_vertex(gr, cs_ung, v, y, yg, Co, P, G);
    }
    gr_field a[9] = {gr_region(x, 0, nx + 8),
                     gr_region(yg, 0, G * P * 16),
                     gr_region(blocks, 0, 128 * wp->nblocks),
                     gr_region(wlt, 0, nwl),
                     gr_u32((uint32_t)p->radj),
                     gr_u32(p->npasses),
                     gr_region(ptab, 0, 3 * p->npasses),
                     gr_u32(p->zall),
                     gr_u32(0)};
    gr_vertex(gr, cs_amp, "conv_amp", 1, 0, 0, a, 9);
    gr_prog body[3] = {gr_execute(gr, cs_pack), gr_execute(gr, cs_amp), gr_execute(gr, cs_ung)};
    gr_prog main = gr_repeat(gr, 2, gr_seq(gr, body, 3));
    gr_exe *xe = gr_compile(gr, main, NULL, &e);
    if (!xe)
        fail_msg("%s", e.msg);
    eng *g = sys_engine(s);
    assert_int_equal(gr_load(xe, g, &e), ERR_OK);
    float *xv = rand_floats(nx + 8), *wv = rand_floats(nw), *b = calloc(Co, 4);
    memset(xv + nx, 0, 32);
    gr_write(xe, g, x, 0, xv, nx + 8);
    gr_write(xe, g, w, 0, wv, nw);
    gr_write(xe, g, plist, 0, wp->list, 3 * wp->nblocks);
    gr_write(xe, g, wlt, 0, wl, nwl);
    gr_write(xe, g, ptab, 0, p->ptab, 3 * p->npasses);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    float *got = malloc(4 * Co * P), *want = malloc(4 * Co * P);
    float *col = malloc(4 * mlayer_conv_col_floats(c));
    gr_read(xe, g, y, 0, got, Co * P);
    mlayer_conv_fwd(c, 1, xv, wv, b, want, col);
    assert_same(got, want, Co * P, "graph conv2 fwd");
    free(xv);
    free(wv);
    free(b);
    free(got);
    free(want);
    free(col);
    free(wl);
    cplan_free(&pl);
    gr_exe_free(xe);
    gr_free(gr);
    sys_free(s);
}

/* The planners refuse what the codelets cannot do (K > 8 but in the forward, which takes a
 * pass per 8 columns of a kernel row; a kernel larger than the input,
 * zero sizes, the weight gradient with Wo % 8 != 0) and a base that is not 4-aligned. */
static void test_plan_errors(void **state)
{
    (void)state;
    err e;
    cplan_conv pl;
    static const cplan_shape k9 = {1, 12, 12, 4, 9, 0}, big = {1, 4, 4, 4, 5, 0},
                             zero = {0, 8, 8, 4, 3, 0};
    static const cplan_shape odd = {3, 7, 10, 4, 3, 0}; /* Wo = 8 */
    static const cplan_shape wo6 = {3, 8, 8, 4, 3, 0};  /* Wo = 6 */
    err_clear(&e);
    assert_int_equal(cplan_dx(&pl, &k9, 1, &e), ERR_INPUT);
    cplan_free(&pl);
    assert_int_equal(cplan_fwd(&pl, &k9, 1, &e), ERR_OK);
    assert_int_equal(pl.amp.npasses, 9 * 2); /* (ky, 8 columns) */
    cplan_free(&pl);
    assert_int_equal(cplan_dx(&pl, &big, 1, &e), ERR_INPUT);
    cplan_free(&pl);
    assert_int_equal(cplan_fwd(&pl, &zero, 1, &e), ERR_INPUT);
    cplan_free(&pl);
    assert_int_equal(cplan_fwd(&pl, &odd, 0, &e), ERR_INPUT);
    cplan_free(&pl);
    assert_int_equal(cplan_wgrad(&pl, &wo6, &e), ERR_INPUT);
    cplan_free(&pl);
    assert_int_equal(cplan_wgrad(&pl, &odd, &e), ERR_OK);
    uint32_t n = cplan_amp_bytes(&pl.amp);
    uint8_t *buf = malloc(n);
    cplan_amp_at at;
    assert_int_equal(cplan_amp_write(&pl.amp, 0, 0, 0, 0x4002, buf, &at, &e), ERR_INPUT);
    assert_int_equal(cplan_amp_write(&pl.amp, 0, 0, 0, 0x4000, buf, &at, &e), ERR_OK);
    assert_int_equal(at.wl, 0x4000);
    assert_true(at.ptab % 16 == 0 && at.state % 16 == 0 && at.state + 36 == 0x4000 + n);
    free(buf);
    cplan_free(&pl);
}

/* One AMP plan's figures from the model: passes, AMP steps (one per tile cycle at best),
 * cycles of the call; pinned to the numbers the report quotes. */
static void fig_amp(const char *name, cplan_conv *pl, uint32_t B, uint32_t passes, uint64_t steps,
                    uint64_t cycles)
{
    uint64_t st;
    const cplan_amp *p = &pl->amp;
    uint64_t c = amp_model(p, &st);
    printf("  %-16s B=%u: %3u passes, %6llu AMP steps, %7llu cycles, %6llu a sample, AMP busy "
           "%.0f%%\n",
           name, B, p->npasses, (unsigned long long)st, (unsigned long long)c,
           (unsigned long long)(c / B), 100.0 * (double)st / (double)c);
    if (cycles) {
        assert_int_equal(p->npasses, passes);
        assert_int_equal(st, steps);
        assert_int_equal(c, cycles);
    }
    cplan_free(pl);
}

/* The tutorial's figures from the models alone (the flows above assert the same models
 * against the engine): conv_amp per call with 1 and 6 samples, and the worker codelets' S
 * (tile cycles with six workers busy: the sum of S over the vertices, ignoring run/join). */
static void test_tutorial_figures(void **state)
{
    (void)state;
    cplan_conv p;
    static const uint32_t Bs[2] = {1, 6};
    static const uint64_t fwd2[2] = {93287, 421175}, dx2[2] = {70393, 318253};
    static const uint64_t fwd1[2] = {32829, 191469};
    for (unsigned i = 0; i < 2; i++) {
        plan_conv(&p, CPLAN_FWD, &conv2, Bs[i]);
        fig_amp("conv2 fwd", &p, Bs[i], 100, 51200 * Bs[i], fwd2[i]);
        plan_conv(&p, CPLAN_DX, &conv2, Bs[i]);
        fig_amp("conv2 dx", &p, Bs[i], 75, 38400 * Bs[i], dx2[i]);
        plan_conv(&p, CPLAN_FWD, &conv1, Bs[i]);
        fig_amp("conv1 fwd (AMP)", &p, Bs[i], 5, 23040 * Bs[i], fwd1[i]);
    }
    plan_conv(&p, CPLAN_WGRAD, &conv2, 1);
    fig_amp("conv2 dw", &p, 1, 16, 32000, 52319);
    plan_conv(&p, CPLAN_WGRAD, &conv1, 1);
    fig_amp("conv1 dw", &p, 1, 72, 14400, 39291);
    /* workers, per sample: conv_mac1 one vertex per channel (24 rows of Wo = 24); conv_pack
     * of conv1's dy into [576][16] (cv = 10); conv_ungroup adding conv2's dw^T (20 channels
     * of 250 in 6 vertices) */
    assert_int_equal(10 * (9 + 24 * (5 + 59 * 24)), 341130);
    cplan_pack gp;
    cplan_pack_group(&gp, 10, 576, 1);
    assert_int_equal(pack_S(&gp, 0, 1), 23638);
    cplan_pack_free(&gp);
    assert_int_equal(4 * ungroup_S(3, 250, 1) + 2 * ungroup_S(4, 250, 1), 20260);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_ungroup), cmocka_unit_test(test_all_entries),
        cmocka_unit_test(test_fwd_amp),      cmocka_unit_test(test_fwd_mac),
        cmocka_unit_test(test_dx),           cmocka_unit_test(test_wgrad),
        cmocka_unit_test(test_graph_fwd),    cmocka_unit_test(test_tutorial_figures),
        cmocka_unit_test(test_plan_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
