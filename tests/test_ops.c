/* test_ops: the operation library (workloads/ops/ops.h): blocked layouts, the convolution's
 * planner, and planned convolutions run on the simulator.
 *
 * Checked: a layout's offsets against a brute-force numbering of its blocks; the planner's
 * refusals (a bad partition, nothing fitting the SRAM) and that its choice is the cheapest of
 * every valid partition it could take; convolutions built from a partition (with and without
 * a split of the input channels, from inputs in row-major and in blocked layouts) against the
 * C layers' loop (workloads/mnist/layers.c) and, bit for bit, against a model of the order
 * the partition sums in (the C loop's when the input channels are not split); and, for the tutorial's two
 * convolutions planned over a whole Mk2 IPU, the simulated cycles of every compute step
 * within 10% of the planner's estimate (the bound: a model, not a copy of the
 * simulator), the output against the C loop, and the tiles each plan uses. */
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
#include "hw/pool.h"
#include "workloads/mnist/layers.h"
#include "workloads/ops/ops.h"

/* ---- layouts ---- */

/* Every element's offset by walking the blocks in order and each block row-major: an
 * independent numbering of the layout ops.h describes. */
static void brute_offsets(const op_act *a, size_t *off)
{
    size_t next = 0;
    uint32_t i[OP_DIMS];
    for (i[0] = 0; i[0] < a->part[0]; i[0]++)
        for (i[1] = 0; i[1] < a->part[1]; i[1]++)
            for (i[2] = 0; i[2] < a->part[2]; i[2]++)
                for (i[3] = 0; i[3] < a->part[3]; i[3]++) {
                    uint32_t lo[OP_DIMS], hi[OP_DIMS];
                    for (int d = 0; d < OP_DIMS; d++) {
                        lo[d] = op_lo(a, d, i[d]);
                        hi[d] = op_lo(a, d, i[d] + 1);
                    }
                    for (uint32_t b = lo[0]; b < hi[0]; b++)
                        for (uint32_t c = lo[1]; c < hi[1]; c++)
                            for (uint32_t y = lo[2]; y < hi[2]; y++)
                                for (uint32_t x = lo[3]; x < hi[3]; x++)
                                    off[((b * a->dim[1] + c) * a->dim[2] + y) * a->dim[3] + x] =
                                        next++;
                }
}

static void test_layout(void **state)
{
    (void)state;
    uint32_t dim[OP_DIMS] = {3, 20, 5, 7}, part[OP_DIMS] = {2, 2, 3, 2};
    op_act a = op_act_make(0, dim, part);
    a.grain[OP_C] = 16; /* channels 0..15 and 16..19 */
    assert_int_equal(op_lo(&a, OP_C, 1), 16);
    assert_int_equal(op_lo(&a, OP_B, 1), 1); /* 3 in 2: [0, 1), [1, 3) */
    assert_int_equal(op_lo(&a, OP_H, 1), 1); /* 5 in 3: [0, 1), [1, 3), [3, 5) */
    assert_int_equal(op_lo(&a, OP_H, 2), 3);
    assert_int_equal(op_lo(&a, OP_W, 2), 7);
    size_t n = op_act_elems(&a), *off = malloc(n * sizeof *off);
    brute_offsets(&a, off);
    float *rm = malloc(n * 4), *bl = malloc(n * 4), *back = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        rm[i] = (float)i;
    op_act_block(&a, rm, bl);
    op_act_unblock(&a, bl, back);
    size_t i = 0;
    for (uint32_t b = 0; b < dim[0]; b++)
        for (uint32_t c = 0; c < dim[1]; c++)
            for (uint32_t y = 0; y < dim[2]; y++)
                for (uint32_t x = 0; x < dim[3]; x++, i++) {
                    assert_int_equal(op_act_at(&a, b, c, y, x), off[i]);
                    assert_true(bl[off[i]] == rm[i]);
                    assert_true(back[i] == rm[i]);
                }
    /* by hand: block (0, 0, 0, 0) is 1 x 16 x 1 x 3 = 48 elements, so (0, 0, 0, 1) is next;
     * element (0, 0, 0, 4) is the second of it */
    assert_int_equal(op_act_at(&a, 0, 0, 0, 4), 49);
    free(off);
    free(rm);
    free(bl);
    free(back);
}

/* ---- the planner ---- */

static mach mk2(uint32_t tiles)
{
    mach m;
    err e;
    err_clear(&e);
    assert_int_equal(mach_builtin(&m, "mk2", &e), ERR_OK);
    m.tiles_per_ipu = tiles;
    m.nipus = 1;
    return m;
}

static void test_plan_refusals(void **state)
{
    (void)state;
    mach m = mk2(1472);
    err e;
    err_clear(&e);
    op_conv_shape s = {4, 3, 10, 10, 20, 3, 1, 0, OP_W_FWD, 0};
    op_conv_ctx ctx = {1472, 4, 4, 1, 0};
    op_conv_est est;
    op_conv_part p = {{5, 1, 1, 1, 1}}; /* 5 parts of 4 samples */
    assert_int_equal(op_conv_estimate(&m, &s, &p, &ctx, &est, &e), ERR_INPUT);
    p = (op_conv_part){{1, 1, 1, 1, 3}}; /* 20 channels are 2 groups of 16 */
    assert_int_equal(op_conv_estimate(&m, &s, &p, &ctx, &est, &e), ERR_INPUT);
    p = (op_conv_part){{1, 3, 1, 1, 1}}; /* rows of 3 x 8: 24 floats, whole 16-byte rows */
    assert_int_equal(op_conv_estimate(&m, &s, &p, &ctx, &est, &e), ERR_OK);
    p = (op_conv_part){{1, 3, 3, 1, 1}}; /* blocks of 2 x 3 outputs: not */
    assert_int_equal(op_conv_estimate(&m, &s, &p, &ctx, &est, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "16-byte"));
    /* a layer no partition of 4 tiles fits in 64 KiB: the message says how much is needed */
    mach small = mk2(4);
    small.sram_bytes = 65536;
    op_conv_shape big = {8, 10, 28, 28, 20, 5, 1, 0, OP_W_FWD, 0};
    op_conv_part best;
    ctx.tiles = 4;
    assert_int_equal(op_conv_plan(&small, &big, &ctx, &best, &est, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "no partition over 4 tiles fits 65536 bytes"));
}

/* Tile memory shapes the plan: with a tile's memory less than the fastest plan needs, the
 * planner takes the cheapest plan that fits, which costs more cycles and needs less memory;
 * with too little for any, one line says how much the smallest needs. */
static void test_plan_memory(void **state)
{
    (void)state;
    mach m = mk2(64);
    op_conv_shape s = {8, 10, 28, 28, 20, 5, 1, 0, OP_W_FWD, 0};
    op_conv_ctx ctx = {64, 8, 8, 10, 0};
    op_conv_part fast, fit;
    op_conv_est ef, es;
    err e;
    err_clear(&e);
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &fast, &ef, &e), ERR_OK);
    m.sram_bytes = ef.bytes - 1; /* the fastest plan no longer fits */
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &fit, &es, &e), ERR_OK);
    assert_true(memcmp(&fit, &fast, sizeof fit) != 0);
    assert_true(es.bytes <= m.sram_bytes);
    assert_true(es.cost >= ef.cost);
    m.sram_bytes = 1024;
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &fit, &es, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "fits 1024 bytes a tile (the smallest needs "));
}

/* The plan is the cheapest valid partition within the tiles: every partition of at most 16
 * tiles of a small layer estimated and compared. */
static void test_plan_is_cheapest(void **state)
{
    (void)state;
    mach m = mk2(16);
    op_conv_shape s = {4, 3, 10, 10, 20, 3, 1, 0, OP_W_FWD, 0};
    op_conv_part best;
    op_conv_est be, est;
    err e;
    err_clear(&e);
    op_conv_ctx ctx = {16, 4, 4, 10, 0};
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &best, &be, &e), ERR_OK);
    assert_true(be.tiles <= 16);
    uint32_t n = 0;
    op_conv_part p;
    for (p.p[0] = 1; p.p[0] <= 4; p.p[0]++)
        for (p.p[1] = 1; p.p[1] <= 8; p.p[1]++)
            for (p.p[2] = 1; p.p[2] <= 8; p.p[2]++)
                for (p.p[3] = 1; p.p[3] <= 3; p.p[3]++)
                    for (p.p[4] = 1; p.p[4] <= 2; p.p[4]++) {
                        if (p.p[0] * p.p[1] * p.p[2] * p.p[3] * p.p[4] > 16 ||
                            op_conv_estimate(&m, &s, &p, &ctx, &est, NULL) != ERR_OK)
                            continue;
                        n++;
                        assert_true(est.cost >= be.cost);
                    }
    assert_true(n > 20);
}

/* ---- planned convolutions on the simulator ---- */

typedef struct run_out {
    float *y;              /* row-major [B][cout][ho][wo] */
    uint64_t step[OP_S_N]; /* simulated cycles of each step (0: absent) */
    uint32_t tiles_used;
} run_out;

/* Random values in [-1, 1) that are not exact in few bits (a sum's order shows). */
static void fill(float *v, size_t n, uint32_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 2.0 - 1.0) * 0.999f;
    }
}

/* Build, compile and run prep then run of the convolution (s, p) on one IPU of m, the input
 * in layout xpart on tiles from 0, w and bias spread over the first tiles; the output read
 * back row-major, and each step's simulated cycles (from one sync release to the next). */
static void run_conv(const mach *m, const op_conv_shape *s, const op_conv_part *p,
                     const uint32_t xpart[OP_DIMS], const float *x, const float *w,
                     const float *bias, run_out *r)
{
    err e;
    err_clear(&e);
    sys_cfg cfg = {.m = *m, .threads = 2};
    sys *sy = sys_new(&cfg, &e);
    if (!sy)
        fail_msg("%s", e.msg);
    eng *g = sys_engine(sy);
    graph *gr = gr_new(m, 1);
    uint32_t xdim[OP_DIMS] = {s->B, s->cin, s->h, s->w};
    op_act xa = op_act_new(gr, "x", 0, 0, xdim, xpart);
    uint32_t wshape[4] = {s->cout, s->cin, s->k, s->k}, bshape[1] = {s->cout};
    gr_tensor wt = gr_tensor_new(gr, "w", GR_F32, 4, wshape);
    gr_tensor bt = gr_tensor_new(gr, "b", GR_F32, 1, bshape);
    gr_map_linear(gr, wt, 0, 0, 64, 2);
    gr_map_linear(gr, bt, 0, 0, 4, 2);
    gr_keep(gr, xa.t); /* written by the host before the run: shares with nothing */
    gr_keep(gr, wt);
    gr_keep(gr, bt);
    op_conv c;
    op_conv_build(gr, "conv", 0, 0, s, p, &xa, (op_ref){wt, 0, 1, 0}, (op_ref){bt, 0, 1, 0}, &c);
    gr_prog both[2] = {c.prep, c.run};
    pool *threads = pool_new(2);
    gr_exe *ex = gr_compile(gr, gr_seq(gr, both, 2), threads, &e);
    pool_free(threads);
    if (!ex)
        fail_msg("%s", e.msg);
    if (gr_load(ex, g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    size_t nx = (size_t)s->B * s->cin * s->h * s->w;
    float *xb = malloc(nx * 4);
    op_act_block(&xa, x, xb);
    gr_write(ex, g, xa.t, 0, xb, nx);
    gr_write(ex, g, wt, 0, w, (size_t)s->cout * s->cin * s->k * s->k);
    gr_write(ex, g, bt, 0, bias, s->cout);
    eng_log_syncs(g, 0, 64);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    size_t ny = op_act_elems(&c.y);
    float *yb = malloc(ny * 4);
    r->y = malloc(ny * 4);
    gr_read(ex, g, c.y.t, 0, yb, ny);
    op_act_unblock(&c.y, yb, r->y);
    /* the steps in run order: prep (weights.x, pack), then run (in.x, amp, ungroup, bias,
     * reduce.x, reduce) */
    int order[OP_S_N];
    size_t nrel, nsteps = 0;
    for (int k = 0; k < OP_S_N; k++) /* the steps the plan makes, in run order */
        if (!((k == OP_S_RX || k == OP_S_REDUCE) && p->p[OP_PCI] == 1) &&
            !(k == OP_S_BIAS && s->nobias))
            order[nsteps++] = k;
    const uint64_t *rel = eng_sync_log(g, 0, &nrel);
    assert_int_equal(nrel, nsteps);
    memset(r->step, 0, sizeof r->step);
    for (size_t k = 0; k < nsteps; k++)
        r->step[order[k]] = rel[k] - (k ? rel[k - 1] : 0);
    r->tiles_used = gr_exe_summary(ex)->tiles_used;
    free(xb);
    free(yb);
    gr_exe_free(ex);
    gr_free(gr);
    sys_free(sy);
}

/* y by the C layers' loop. */
static float *ref_conv(const op_conv_shape *s, const float *x, const float *w, const float *b)
{
    mlayer_conv c = {(int)s->cin, (int)s->h, (int)s->w, (int)s->cout, (int)s->k};
    size_t ny = (size_t)s->B * s->cout * mlayer_conv_ho(&c) * mlayer_conv_wo(&c);
    float *y = malloc(ny * 4), *col = malloc(mlayer_conv_col_floats(&c) * 4);
    mlayer_conv_fwd(&c, (int)s->B, x, w, b, y, col);
    free(col);
    return y;
}

/* y in the order a partition with the input channels in pci parts sums it (ops/conv.c):
 * each part's sum over its channels in (ci, ky, kx) order from 0, one rounding a product and
 * a sum; the bias (unless b is NULL) added to part 0; then the parts added in order. With pci = 1 it is the C
 * layers' order. An independent model of what the simulation must give bit for bit. */
static float *ref_split(const op_conv_shape *s, const float *x, const float *w, const float *b,
                        uint32_t pci)
{
    uint32_t K = s->k, st = s->stride ? s->stride : 1;
    uint32_t ho = (s->h + 2 * s->pad - K) / st + 1, wo = (s->w + 2 * s->pad - K) / st + 1;
    float *y = malloc((size_t)s->B * s->cout * ho * wo * 4);
    for (uint32_t n = 0; n < s->B; n++)
        for (uint32_t co = 0; co < s->cout; co++)
            for (uint32_t oy = 0; oy < ho; oy++)
                for (uint32_t ox = 0; ox < wo; ox++) {
                    float sum = 0.0f;
                    for (uint32_t j = 0; j < pci; j++) {
                        float part = 0.0f;
                        for (uint32_t ci = s->cin * j / pci; ci < s->cin * (j + 1) / pci; ci++)
                            for (uint32_t ky = 0; ky < K; ky++)
                                for (uint32_t kx = 0; kx < K; kx++) {
                                    /* the padding: zeros, multiplied like any input */
                                    long iy = (long)(oy * st + ky) - (long)s->pad;
                                    long ix = (long)(ox * st + kx) - (long)s->pad;
                                    float xv =
                                        iy < 0 || ix < 0 || iy >= (long)s->h || ix >= (long)s->w
                                            ? 0.0f
                                            : x[((n * s->cin + ci) * s->h + (uint32_t)iy) * s->w +
                                                (uint32_t)ix];
                                    float p = xv * w[((co * s->cin + ci) * K + ky) * K + kx];
                                    part = part + p;
                                }
                        sum = j ? sum + part : b ? part + b[co] : part;
                    }
                    y[((n * s->cout + co) * ho + oy) * wo + ox] = sum;
                }
    return y;
}

typedef struct layer {
    op_conv_shape s;
    float *x, *w, *b, *ref;
    size_t ny;
} layer;

static void layer_new(layer *l, op_conv_shape s, uint32_t seed)
{
    l->s = s;
    size_t nx = (size_t)s.B * s.cin * s.h * s.w, nw = (size_t)s.cout * s.cin * s.k * s.k;
    l->x = malloc(nx * 4);
    l->w = malloc(nw * 4);
    l->b = malloc(s.cout * 4);
    fill(l->x, nx, seed);
    fill(l->w, nw, seed + 1);
    fill(l->b, s.cout, seed + 2);
    l->ref =
        s.pad || s.stride > 1 ? ref_split(&s, l->x, l->w, l->b, 1) : ref_conv(&s, l->x, l->w, l->b);
    l->ny = (size_t)s.B * s.cout * op_conv_ho(&s) * op_conv_wo(&s);
}

static void layer_free(layer *l)
{
    free(l->x);
    free(l->w);
    free(l->b);
    free(l->ref);
}

/* |y - ref| within the bound of summing n products of magnitude <= 1 in another order:
 * n^2 eps (a generous form of the classic n eps sum of |terms|). */
static void assert_close(const float *y, const float *ref, size_t n, uint32_t terms)
{
    double bound = (double)terms * terms * 1.2e-7 + 1e-6;
    for (size_t i = 0; i < n; i++)
        if (fabs((double)y[i] - (double)ref[i]) > bound)
            fail_msg("element %zu: %.9g against %.9g (bound %.3g)", i, y[i], ref[i], bound);
}

/* A small layer on 16 tiles, every dimension split, from a row-major input (a part a sample):
 * bit-exact with the C loop; then with the input channels split over 3 tiles (the partial
 * sums reduced): within the bound, and not bit-exact (the other order shows). */
static void test_conv_small(void **state)
{
    (void)state;
    mach m = mk2(64);
    layer l;
    layer_new(&l, (op_conv_shape){2, 3, 10, 10, 20, 3, 1, 0, OP_W_FWD, 0}, 7);
    uint32_t xpart[OP_DIMS] = {2, 1, 1, 1};
    run_out r;
    op_conv_part p = {{2, 2, 1, 1, 2}};
    run_conv(&m, &l.s, &p, xpart, l.x, l.w, l.b, &r);
    assert_memory_equal(r.y, l.ref, l.ny * 4);
    free(r.y);
    float *mine = ref_split(&l.s, l.x, l.w, l.b, 1);
    assert_memory_equal(mine, l.ref, l.ny * 4); /* the model's order is the C loop's */
    free(mine);
    p = (op_conv_part){{1, 2, 2, 3, 1}}; /* ci split: 12 tiles */
    run_conv(&m, &l.s, &p, xpart, l.x, l.w, l.b, &r);
    mine = ref_split(&l.s, l.x, l.w, l.b, 3);
    assert_memory_equal(r.y, mine, l.ny * 4);
    assert_true(memcmp(r.y, l.ref, l.ny * 4) != 0); /* the order shows */
    assert_close(r.y, l.ref, l.ny, 3 * 9);
    free(mine);
    assert_true(r.step[OP_S_REDUCE] > 0 && r.step[OP_S_RX] > 0);
    free(r.y);
    /* from a blocked input (split in rows and columns, as another convolution leaves it) */
    uint32_t xblk[OP_DIMS] = {2, 1, 3, 2};
    p = (op_conv_part){{2, 2, 2, 1, 1}};
    run_conv(&m, &l.s, &p, xblk, l.x, l.w, l.b, &r);
    assert_memory_equal(r.y, l.ref, l.ny * 4);
    free(r.y);
    layer_free(&l);
}

/* Zero padding and strides, as nn.Conv2d(padding, stride) gives them: a layer padded by 1
 * (output 10 x 10 from 10 x 10), and one of stride 2 padded by 2 with a 5 x 5 kernel (12 x 12
 * -> 6 x 6), each over tiles that split rows, columns and input channels, so that patches
 * meet the padding on every side and halos cross the blocks of a blocked input: bit for bit
 * against the order model, the padding multiplied as zeros. And the planner's choice for
 * each. */
static void test_conv_pad_stride(void **state)
{
    (void)state;
    mach m = mk2(64);
    static const op_conv_shape shapes[2] = {{2, 3, 10, 10, 20, 3, 1, 1, OP_W_FWD, 0},
                                            {2, 4, 12, 12, 16, 5, 2, 2, OP_W_FWD, 0}};
    static const op_conv_part parts[2][2] = {{{{1, 5, 1, 1, 2}}, {{2, 5, 1, 3, 1}}},
                                             {{{2, 3, 3, 1, 1}}, {{1, 3, 1, 4, 1}}}};
    uint32_t xblk[OP_DIMS] = {2, 1, 2, 2};
    for (int k = 0; k < 2; k++) {
        layer l;
        layer_new(&l, shapes[k], 21 + (uint32_t)k);
        assert_int_equal(op_conv_ho(&l.s), k ? 6 : 10);
        for (int q = 0; q < 2; q++) {
            run_out r;
            const op_conv_part *p = &parts[k][q];
            run_conv(&m, &l.s, p, xblk, l.x, l.w, l.b, &r);
            float *want = ref_split(&l.s, l.x, l.w, l.b, p->p[OP_PCI]);
            assert_memory_equal(r.y, want, l.ny * 4);
            free(want);
            free(r.y);
        }
        op_conv_ctx ctx = {64, 8, 4, 1, 0};
        op_conv_part best;
        op_conv_est est;
        err e;
        err_clear(&e);
        assert_int_equal(op_conv_plan(&m, &l.s, &ctx, &best, &est, &e), ERR_OK);
        run_out r;
        run_conv(&m, &l.s, &best, xblk, l.x, l.w, l.b, &r);
        float *want = ref_split(&l.s, l.x, l.w, l.b, best.p[OP_PCI]);
        assert_memory_equal(r.y, want, l.ny * 4);
        for (int st = 0; st < OP_S_N; st++)
            if (op_conv_step_compute(st) && est.step[st]) {
                double ratio = (double)est.step[st] / (double)r.step[st];
                assert_true(ratio >= 0.9 && ratio <= 1.1);
            }
        free(want);
        free(r.y);
        layer_free(&l);
    }
    /* a padding as wide as the kernel reads nothing but zeros: refused */
    op_conv_shape bad = {1, 1, 8, 8, 16, 3, 1, 3, OP_W_FWD, 0};
    op_conv_part one = {{1, 1, 1, 1, 1}};
    op_conv_ctx ctx = {64, 1, 1, 1, 0};
    op_conv_est est;
    assert_int_equal(op_conv_estimate(&m, &bad, &one, &ctx, &est, NULL), ERR_INPUT);
}

/* The input gradient as a convolution (OP_W_DX): a layer from 3 to 20 channels (kernel 3 on
 * 10 x 10), its output gradient dy [2][20][8][8] convolved, padded by 2, with the layer's own
 * weight tensor v [20][3][3][3] read transposed and flipped, no bias: dx [2][3][10][10].
 * Against the C layers' backward (mlayer_conv_bwd) within the bound of another order, and bit
 * for bit against the order model run on the transposed and flipped weights written out
 * here; over partitions that split the 20 channels (a reduction), the rows and the columns,
 * and the planner's. */
static void test_conv_dx(void **state)
{
    (void)state;
    mach m = mk2(64);
    enum { NB = 2, CI = 3, CO = 20, K = 3, H = 10 };
    uint32_t ho = H - K + 1;
    size_t nx = (size_t)NB * CI * H * H, nv = (size_t)CO * CI * K * K,
           ndy = (size_t)NB * CO * ho * ho;
    float *x = malloc(nx * 4), *v = malloc(nv * 4), *dy = malloc(ndy * 4), *wt = malloc(nv * 4);
    float *dx = malloc(nx * 4), *dw = calloc(nv, 4), *db = calloc(CO, 4), *zero = calloc(CO, 4);
    fill(x, nx, 31);
    fill(v, nv, 32);
    fill(dy, ndy, 33);
    mlayer_conv c = {CI, H, H, CO, K};
    float *col = malloc(mlayer_conv_col_floats(&c) * 4),
          *dcol = malloc(mlayer_conv_col_floats(&c) * 4);
    mlayer_conv_bwd(&c, NB, x, v, dy, dw, db, dx, col, dcol);
    /* w[ci][co][ky][kx] = v[co][ci][K-1-ky][K-1-kx]: the forward weights of the dx convolution */
    for (uint32_t a = 0; a < CI; a++)
        for (uint32_t o = 0; o < CO; o++)
            for (uint32_t ky = 0; ky < K; ky++)
                for (uint32_t kx = 0; kx < K; kx++)
                    wt[((a * CO + o) * K + ky) * K + kx] =
                        v[((o * CI + a) * K + (K - 1 - ky)) * K + (K - 1 - kx)];
    op_conv_shape s = {NB, CO, ho, ho, CI, K, 1, K - 1, OP_W_DX, 1};
    assert_int_equal(op_conv_ho(&s), H);
    static const op_conv_part parts[2] = {{{2, 2, 2, 4, 1}}, {{1, 5, 5, 1, 1}}};
    uint32_t xpart[OP_DIMS] = {NB, 1, 1, 1};
    op_conv_ctx ctx = {64, NB, 4, 1, 0};
    op_conv_part best;
    op_conv_est est;
    err e;
    err_clear(&e);
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &best, &est, &e), ERR_OK);
    assert_int_equal(est.step[OP_S_BIAS], 0);
    for (int q = 0; q < 3; q++) {
        const op_conv_part *p = q < 2 ? &parts[q] : &best;
        run_out r;
        run_conv(&m, &s, p, xpart, dy, v, zero, &r);
        op_conv_shape fw = s;
        fw.form = OP_W_FWD;
        float *want = ref_split(&fw, dy, wt, NULL, p->p[OP_PCI]);
        assert_memory_equal(r.y, want, nx * 4);
        assert_close(r.y, dx, nx, CO * K * K);
        assert_int_equal(r.step[OP_S_BIAS], 0);
        free(want);
        free(r.y);
    }
    free(x);
    free(v);
    free(dy);
    free(wt);
    free(dx);
    free(dw);
    free(db);
    free(zero);
    free(col);
    free(dcol);
}

/* The estimate of every compute step within 10% of the simulation. */
static void assert_estimate(const op_conv_est *est, const run_out *r, const char *what)
{
    for (int k = 0; k < OP_S_N; k++) {
        if (!op_conv_step_compute(k) || (!est->step[k] && !r->step[k]))
            continue;
        double ratio = (double)est->step[k] / (double)r->step[k];
        printf("  %s %-8s estimated %7llu simulated %7llu (%.3f)\n", what, op_conv_step_name(k),
               (unsigned long long)est->step[k], (unsigned long long)r->step[k], ratio);
        if (ratio < 0.9 || ratio > 1.1)
            fail_msg("%s: step %s estimated %llu cycles, simulated %llu", what,
                     op_conv_step_name(k), (unsigned long long)est->step[k],
                     (unsigned long long)r->step[k]);
    }
    for (int k = 0; k < OP_S_N; k++)
        if (!op_conv_step_compute(k) && r->step[k])
            printf("  %s %-8s estimated %7llu simulated %7llu (exchange)\n", what,
                   op_conv_step_name(k), (unsigned long long)est->step[k],
                   (unsigned long long)r->step[k]);
}

/* The tutorial's convolutions (micro-batch 40) planned over a whole Mk2 IPU, with the weights
 * prepared once per 10 calls (a weight update per gradient accumulation of 10): the plan,
 * its tiles, its output and its estimate against the simulation. */
static void tutorial_layer(op_conv_shape s, uint32_t src_tiles, uint32_t seed)
{
    mach m = mk2(1472);
    layer l;
    layer_new(&l, s, seed);
    op_conv_part p;
    op_conv_est est;
    err e;
    err_clear(&e);
    op_conv_ctx ctx = {m.tiles_per_ipu, src_tiles, 64, 10, 16384};
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &p, &est, &e), ERR_OK);
    char txt[96];
    op_conv_part_text(&p, txt, sizeof txt);
    printf("conv %ux%ux%ux%u -> %u (k %u): %s, %u tiles, run %llu prep %llu cycles\n", s.B, s.cin,
           s.h, s.w, s.cout, s.k, txt, est.tiles, (unsigned long long)est.run,
           (unsigned long long)est.prep);
    uint32_t xpart[OP_DIMS] = {src_tiles, 1, 1, 1};
    run_out r;
    run_conv(&m, &s, &p, xpart, l.x, l.w, l.b, &r);
    float *mine = ref_split(&s, l.x, l.w, l.b, p.p[OP_PCI]);
    assert_memory_equal(r.y, mine, l.ny * 4);
    assert_close(r.y, l.ref, l.ny, s.cin * s.k * s.k);
    free(mine);
    assert_true(r.tiles_used >= est.tiles);
    assert_estimate(&est, &r, "  ");
    free(r.y);
    layer_free(&l);
}

static void test_tutorial_conv1(void **state)
{
    (void)state;
    tutorial_layer((op_conv_shape){40, 1, 28, 28, 10, 5, 1, 0, OP_W_FWD, 0}, 40, 11);
}

static void test_tutorial_conv2(void **state)
{
    (void)state;
    tutorial_layer((op_conv_shape){40, 10, 12, 12, 20, 5, 1, 0, OP_W_FWD, 0}, 40, 13);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),           cmocka_unit_test(test_plan_refusals),
        cmocka_unit_test(test_plan_is_cheapest), cmocka_unit_test(test_conv_small),
        cmocka_unit_test(test_conv_pad_stride),  cmocka_unit_test(test_conv_dx),
        cmocka_unit_test(test_plan_memory),      cmocka_unit_test(test_tutorial_conv1),
        cmocka_unit_test(test_tutorial_conv2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
