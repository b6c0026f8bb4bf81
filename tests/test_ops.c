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
    /* a view [7][5][20][3] (x, y, c, b) of it: element (x, y, c, b) is the layout's (b, c, y,
     * x); along the view's last dimension (b) the layout's elements are never adjacent */
    static const uint8_t rev[OP_DIMS] = {3, 2, 1, 0};
    op_act v = op_act_view(&a, rev);
    assert_int_equal(op_act_dim(&v, 0), 7);
    assert_int_equal(op_act_dim(&v, 3), 3);
    assert_int_equal(op_act_at(&v, 4, 0, 0, 0), 49);
    assert_int_equal(op_act_at(&v, 6, 4, 19, 2), op_act_at(&a, 2, 19, 4, 6));
    assert_int_equal(op_act_run(&v, 4, 0, 0, 0), 1);
    assert_int_equal(op_act_run(&a, 0, 0, 0, 4), 3); /* x 3..6 in its block: 4, 5, 6 */
    /* a matrix [6][4] in 2 blocks of rows, read as [1][6][1][4]: rows run whole in a block */
    op_act mx = op_act_make(0, (uint32_t[]){6, 4, 1, 1}, (uint32_t[]){2, 1, 1, 1});
    op_act mn = op_act_view(&mx, (uint8_t[]){2, 0, 3, 1});
    assert_int_equal(op_act_run(&mn, 0, 4, 0, 1), 3);
    assert_int_equal(op_act_at(&mn, 0, 4, 0, 1), 17);
    /* transposed, [1][4][1][6]: a column, element by element */
    op_act mt = op_act_view(&mx, (uint8_t[]){2, 1, 3, 0});
    assert_int_equal(op_act_run(&mt, 0, 1, 0, 4), 1);
    assert_int_equal(op_act_at(&mt, 0, 1, 0, 4), 17);
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
    op_conv_shape s = {4, 3, 10, 10, 20, 3, 1, 0, OP_W_FWD, 0, 0};
    op_conv_ctx ctx = {1472, 4, 4, 1, 0, 0, 0, 0, 0};
    op_conv_est est;
    op_conv_part p = {{5, 1, 1, 1, 1, 1}}; /* 5 parts of 4 samples */
    assert_int_equal(op_conv_estimate(&m, &s, &p, &ctx, &est, &e), ERR_INPUT);
    p = (op_conv_part){{1, 1, 1, 1, 3, 1}}; /* 20 channels are 2 groups of 16 */
    assert_int_equal(op_conv_estimate(&m, &s, &p, &ctx, &est, &e), ERR_INPUT);
    p = (op_conv_part){{1, 3, 1, 1, 1, 1}}; /* rows of 3 x 8: 24 floats, whole 16-byte rows */
    assert_int_equal(op_conv_estimate(&m, &s, &p, &ctx, &est, &e), ERR_OK);
    p = (op_conv_part){{1, 3, 3, 1, 1, 1}}; /* blocks of 2 x 3 outputs: not */
    assert_int_equal(op_conv_estimate(&m, &s, &p, &ctx, &est, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "16-byte"));
    /* a layer no partition of 4 tiles fits in 64 KiB: the message says how much is needed */
    mach small = mk2(4);
    small.sram_bytes = 65536;
    op_conv_shape big = {8, 10, 28, 28, 20, 5, 1, 0, OP_W_FWD, 0, 0};
    op_conv_part best;
    ctx.tiles = 4;
    assert_int_equal(op_conv_plan(&small, &big, &ctx, &best, &est, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "no partition over 4 tiles fits 65536 bytes"));
    /* a matrix product over a batch of 6: every block's rows of outputs would start off a
     * 16-byte boundary (bias_add); the message says why */
    op_conv_shape mm6 = op_mm_shape(OP_MM_FWD, 6, 32, 16, 0);
    ctx.tiles = 1472;
    assert_int_equal(op_conv_plan(&m, &mm6, &ctx, &best, &est, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "no valid partition over 1472 tiles (the bias is added to whole "
                                  "16-byte rows"));
    op_conv_shape mm8 = op_mm_shape(OP_MM_FWD, 8, 32, 16, 0); /* a batch of 8 plans */
    assert_int_equal(op_conv_plan(&m, &mm8, &ctx, &best, &est, &e), ERR_OK);
}

/* Whether p's output blocks can be pooled 2 x 2 where they lie: no reduction, and the
 * output's row and column cuts (the layouts' floor(n i / parts)) all even. */
static int pool_in_place(const op_conv_shape *s, const op_conv_part *p)
{
    uint32_t dim[2] = {op_conv_ho(s), op_conv_wo(s)}, parts[2] = {p->p[OP_PY], p->p[OP_PX]};
    for (int d = 0; d < 2; d++)
        for (uint32_t i = 0; i <= parts[d]; i++)
            if ((size_t)dim[d] * i / parts[d] % 2)
                return 0;
    return p->p[OP_PCI] * p->p[OP_PK] == 1;
}

/* op_conv_ctx.pool: conv1 of the tutorial for a micro-batch of 8, its input in row blocks on
 * 224 tiles. Left free, the cheapest plan splits the kernel rows (a reduction leaves chunks
 * of the output blocks); with pool = 1 the plan is one whose blocks pool in place, and it
 * costs no less than the free one. */
static void test_plan_pool(void **state)
{
    (void)state;
    mach m = mk2(1472);
    op_conv_shape s = {8, 1, 28, 28, 10, 5, 1, 0, OP_W_FWD, 0, 0};
    op_conv_ctx ctx = {1472, 224, 8, 10, 131072, 0, 0, op_avail_bytes(&m, 0.6), 0};
    op_conv_part free_p, pooled;
    op_conv_est free_e, pooled_e;
    err e;
    err_clear(&e);
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &free_p, &free_e, &e), ERR_OK);
    assert_false(pool_in_place(&s, &free_p));
    ctx.pool = 1;
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &pooled, &pooled_e, &e), ERR_OK);
    char a[64], b[64];
    op_conv_part_text(&free_p, a, sizeof a);
    op_conv_part_text(&pooled, b, sizeof b);
    printf("  free: %s; pooled: %s\n", a, b);
    assert_true(pool_in_place(&s, &pooled));
    assert_true(pooled_e.cost >= free_e.cost);
}

/* The layer the bounds below are tried on, over 64 tiles, its input and weights on 8. */
static const op_conv_shape bound_s = {8, 10, 28, 28, 20, 5, 1, 0, OP_W_FWD, 0, 0};
static const op_conv_ctx bound_ctx = {64, 8, 8, 10, 0, 0, 0, 0, 0};

/* The layer's fastest plan with no bound, on a Mk2 of 64 tiles: what each test then bounds. */
typedef struct bound_case {
    mach m;
    op_conv_ctx ctx;
    op_conv_part fast;
    op_conv_est ef;
} bound_case;

static bound_case bound_start(void)
{
    bound_case b = {mk2(64), bound_ctx, {{0}}, {0}};
    assert_int_equal(op_conv_plan(&b.m, &bound_s, &b.ctx, &b.fast, &b.ef, NULL), ERR_OK);
    return b;
}

/* A bound that the fastest plan (fast, ef) is over: the planner takes another plan, which
 * costs at least as much (its estimate in *es). */
static void plan_within(const mach *m, const op_conv_ctx *ctx, const op_conv_part *fast,
                        const op_conv_est *ef, op_conv_est *es)
{
    op_conv_part fit;
    err e;
    err_clear(&e);
    assert_int_equal(op_conv_plan(m, &bound_s, ctx, &fit, es, &e), ERR_OK);
    assert_true(memcmp(&fit, fast, sizeof fit) != 0);
    assert_true(es->cost >= ef->cost);
}

/* A bound that every plan is over: refused in one line that contains want. */
static void plan_refused(const mach *m, const op_conv_ctx *ctx, const char *want)
{
    op_conv_part p;
    op_conv_est est;
    err e;
    err_clear(&e);
    assert_int_equal(op_conv_plan(m, &bound_s, ctx, &p, &est, &e), ERR_INPUT);
    if (!strstr(e.msg, want))
        fail_msg("message '%s' lacks '%s'", e.msg, want);
}

/* Tile memory shapes the plan: with a tile's memory less than the fastest plan needs, the
 * planner takes the cheapest plan that fits, which costs more cycles and needs less memory;
 * with too little for any, one line says how much the smallest needs. */
static void test_plan_memory(void **state)
{
    (void)state;
    bound_case b = bound_start();
    op_conv_est es;
    b.m.sram_bytes = b.ef.bytes - 1; /* the fastest plan no longer fits */
    plan_within(&b.m, &b.ctx, &b.fast, &b.ef, &es);
    assert_true(es.bytes <= b.m.sram_bytes);
    b.m.sram_bytes = 1024;
    plan_refused(&b.m, &b.ctx, "fits 1024 bytes a tile (the smallest needs ");
}

/* The available memory proportion (op_conv_ctx.avail) bounds a plan's working memory, its
 * memory less its block of the output, as PopLibs bounds a plan's temporary memory: below the
 * fastest plan's, the planner takes the cheapest plan within it; below every plan's, one line
 * says the proportion is what refuses. */
static void test_plan_avail(void **state)
{
    (void)state;
    bound_case b = bound_start();
    op_conv_est es;
    b.ctx.avail = b.ef.temp - 1; /* the fastest plan's working memory no longer fits */
    plan_within(&b.m, &b.ctx, &b.fast, &b.ef, &es);
    assert_true(es.temp <= b.ctx.avail);
    b.ctx.avail = 1024;
    plan_refused(&b.m, &b.ctx,
                 "with at most 1024 of working memory (the available memory proportion; the "
                 "smallest needs ");
    /* 0.6 of 638,976 bytes is 383,385.6: rounded down; a proportion too small for one byte
     * still bounds (1 byte), and 1 is the whole SRAM */
    b.m.sram_bytes = 638976;
    assert_int_equal(op_avail_bytes(&b.m, OP_AVAIL_DEFAULT), 383385);
    assert_int_equal(op_avail_bytes(&b.m, 1e-9), 1);
    assert_int_equal(op_avail_bytes(&b.m, 1.0), 638976);
}

/* What the working memory leaves out is the tile's block of the output. Layer bound_s (8 samples,
 * 20 channels of 24 x 24 out): b 8 y 2 x 2 gives every tile one sample's 20 channels of
 * 12 x 12, 2,880 floats, 11,520 bytes; with the input channels in 2 parts (R = 2) a tile's
 * output is its chunk of the block, 2,880 / 2 = 1,440 floats (whole pairs), 5,760 bytes, and
 * the partial block it computes is working memory. */
static void test_plan_working_memory(void **state)
{
    (void)state;
    mach m = mk2(64);
    op_conv_part p = {{8, 2, 2, 1, 1, 1}}, q = {{8, 2, 2, 2, 1, 1}};
    op_conv_est ep, eq;
    assert_int_equal(op_conv_estimate(&m, &bound_s, &p, &bound_ctx, &ep, NULL), ERR_OK);
    assert_int_equal(op_conv_estimate(&m, &bound_s, &q, &bound_ctx, &eq, NULL), ERR_OK);
    assert_int_equal(ep.bytes - ep.temp, 11520);
    assert_int_equal(eq.bytes - eq.temp, 5760);
}

/* A cap on the input senders' transfers (op_conv_ctx.x_sends: their exchange code) shapes
 * the plan as memory does: below the fastest plan's, the planner takes the cheapest plan
 * within the cap; below every plan's, one line says the senders' cap is what refuses. */
static void test_plan_send_cap(void **state)
{
    (void)state;
    bound_case b = bound_start();
    op_conv_est ec;
    assert_true(b.ef.in_sends > b.ctx.x_tiles); /* more than a transfer a sender */
    b.ctx.x_sends = (uint32_t)((b.ef.in_sends - 1) / b.ctx.x_tiles); /* the fastest is over */
    plan_within(&b.m, &b.ctx, &b.fast, &b.ef, &ec);
    assert_true(ec.in_sends <= (uint64_t)b.ctx.x_sends * b.ctx.x_tiles);
    b.ctx.x_sends = 1; /* every plan sends each sender's rows one by one: more than one */
    plan_refused(&b.m, &b.ctx, "has its input's 8 senders make at most 1 transfer each");
}

/* The plan is the cheapest valid partition within the tiles: every partition of at most 16
 * tiles of a small layer (its 3 kernel rows split too) estimated and compared. */
static void test_plan_is_cheapest(void **state)
{
    (void)state;
    mach m = mk2(16);
    op_conv_shape s = {4, 3, 10, 10, 20, 3, 1, 0, OP_W_FWD, 0, 0};
    op_conv_part best;
    op_conv_est be, est;
    err e;
    err_clear(&e);
    op_conv_ctx ctx = {16, 4, 4, 10, 0, 0, 0, 0, 0};
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &best, &be, &e), ERR_OK);
    assert_true(be.tiles <= 16);
    uint32_t n = 0;
    op_conv_part p;
    for (p.p[0] = 1; p.p[0] <= 4; p.p[0]++)
        for (p.p[1] = 1; p.p[1] <= 8; p.p[1]++)
            for (p.p[2] = 1; p.p[2] <= 8; p.p[2]++)
                for (p.p[3] = 1; p.p[3] <= 3; p.p[3]++)
                    for (p.p[4] = 1; p.p[4] <= 2; p.p[4]++)
                        for (p.p[5] = 1; p.p[5] <= 3; p.p[5]++) {
                            if (p.p[0] * p.p[1] * p.p[2] * p.p[3] * p.p[4] * p.p[5] > 16 ||
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

/* What run_io feeds a convolution: its input stored as xdim in parts xpart (row-major data
 * in that stored order), read through the view xmap (NULL: as stored); the weights and bias;
 * y0: y's value before the first run (an accumulating convolution), or NULL; runs: calls of
 * the run program after the prep. */
typedef struct conv_io {
    uint32_t xdim[OP_DIMS], xpart[OP_DIMS];
    const uint8_t *xmap;
    const float *x, *w, *bias, *y0;
    uint32_t runs;
} conv_io;

/* Build, compile and run prep then run (io->runs times) of the convolution (s, p) on one IPU
 * of m, the input on tiles from 0, w and bias spread over the first tiles; the output read
 * back row-major, and each step's simulated cycles in the first run (from one sync release
 * to the next). */
static void run_io(const mach *m, const op_conv_shape *s, const op_conv_part *p, const conv_io *io,
                   run_out *r)
{
    err e;
    err_clear(&e);
    sys_cfg cfg = {.m = *m, .threads = 2};
    sys *sy = sys_new(&cfg, &e);
    if (!sy)
        fail_msg("%s", e.msg);
    eng *g = sys_engine(sy);
    graph *gr = gr_new(m, 1);
    op_act xs = op_act_new(gr, "x", 0, 0, io->xdim, io->xpart);
    op_act xa = io->xmap ? op_act_view(&xs, io->xmap) : xs;
    size_t nw = (size_t)s->cout * s->cin * s->k * s->k;
    uint32_t wshape[1] = {(uint32_t)nw}, bshape[1] = {s->cout};
    gr_tensor wt = gr_tensor_new(gr, "w", GR_F32, 1, wshape);
    gr_tensor bt = gr_tensor_new(gr, "b", GR_F32, 1, bshape);
    gr_map_linear(gr, wt, 0, 0, 64, 2);
    gr_map_linear(gr, bt, 0, 0, 4, 2);
    gr_keep(gr, xs.t); /* written by the host before the run: shares with nothing */
    gr_keep(gr, wt);
    gr_keep(gr, bt);
    op_conv c;
    op_conv_build(gr, "conv", 0, 0, s, p, &xa, (op_ref){wt, 0, 1, 0}, (op_ref){bt, 0, 1, 0}, &c);
    uint32_t runs = io->runs ? io->runs : 1;
    gr_prog both[2] = {c.prep, gr_repeat(gr, runs, c.run)};
    pool *threads = pool_new(2);
    gr_exe *ex = gr_compile(gr, gr_seq(gr, both, 2), threads, &e);
    pool_free(threads);
    if (!ex)
        fail_msg("%s", e.msg);
    if (gr_load(ex, g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    size_t nx = op_act_elems(&xs), ny = op_act_elems(&c.y);
    float *xb = malloc(nx * 4), *yb = malloc(ny * 4);
    op_act_block(&xs, io->x, xb);
    gr_write(ex, g, xs.t, 0, xb, nx);
    gr_write(ex, g, wt, 0, io->w, nw);
    if (!s->nobias) /* io->bias may be shorter otherwise (a matrix product's gradients) */
        gr_write(ex, g, bt, 0, io->bias, s->cout);
    if (io->y0) {
        op_act_block(&c.y, io->y0, yb);
        gr_write(ex, g, c.y.t, 0, yb, ny);
    }
    eng_log_syncs(g, 0, 64);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    r->y = malloc(ny * 4);
    gr_read(ex, g, c.y.t, 0, yb, ny);
    op_act_unblock(&c.y, yb, r->y);
    /* the steps in run order: prep (weights.x, pack), then run (in.x, amp, ungroup, bias,
     * reduce.x, reduce) */
    int order[OP_S_N];
    size_t nrel, nsteps = 0, nprep = 2;
    for (int k = 0; k < OP_S_N; k++) /* the steps the plan makes, in run order */
        if (!((k == OP_S_RX || k == OP_S_REDUCE) && p->p[OP_PCI] * p->p[OP_PK] == 1) &&
            !(k == OP_S_BIAS && s->nobias))
            order[nsteps++] = k;
    const uint64_t *rel = eng_sync_log(g, 0, &nrel);
    assert_int_equal(nrel, nprep + (nsteps - nprep) * runs);
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

/* run_io with the input stored as the convolution reads it, and one run. */
static void run_conv(const mach *m, const op_conv_shape *s, const op_conv_part *p,
                     const uint32_t xpart[OP_DIMS], const float *x, const float *w,
                     const float *bias, run_out *r)
{
    conv_io io = {{s->B, s->cin, s->h, s->w}, {0}, NULL, x, w, bias, NULL, 1};
    memcpy(io.xpart, xpart, sizeof io.xpart);
    run_io(m, s, p, &io, r);
}

/* y by the C layers' loop. */
static float *ref_conv(const op_conv_shape *s, const float *x, const float *w, const float *b)
{
    mlayer_conv c = {(int)s->cin, (int)s->h, (int)s->w, (int)s->cout, (int)s->k, 1, 0};
    size_t ny = (size_t)s->B * s->cout * mlayer_conv_ho(&c) * mlayer_conv_wo(&c);
    float *y = malloc(ny * 4), *col = malloc(mlayer_conv_col_floats(&c) * 4);
    mlayer_conv_fwd(&c, (int)s->B, x, w, b, y, col);
    free(col);
    return y;
}

/* y in the order a partition with the input channels in pci parts and the kernel's rows in
 * pk parts sums it (ops/conv.c): each part's sum (part j = ci part x pk + ky part) over its
 * channels and kernel rows in (ci, ky, kx) order from 0, one rounding a product and a sum;
 * the bias (unless b is NULL) added to part 0; then the parts added in order. With pci = pk
 * = 1 it is the C layers' order. An independent model of what the simulation must give bit
 * for bit. */
static float *ref_split_k(const op_conv_shape *s, const float *x, const float *w, const float *b,
                          uint32_t pci, uint32_t pk)
{
    uint32_t K = s->k, st = s->stride ? s->stride : 1;
    uint32_t ho = (s->h + 2 * s->pad - K) / st + 1, wo = (s->w + 2 * s->pad - K) / st + 1;
    float *y = malloc((size_t)s->B * s->cout * ho * wo * 4);
    for (uint32_t n = 0; n < s->B; n++)
        for (uint32_t co = 0; co < s->cout; co++)
            for (uint32_t oy = 0; oy < ho; oy++)
                for (uint32_t ox = 0; ox < wo; ox++) {
                    float sum = 0.0f;
                    for (uint32_t j = 0; j < pci * pk; j++) {
                        uint32_t jc = j / pk, jk = j % pk;
                        float part = 0.0f;
                        for (uint32_t ci = s->cin * jc / pci; ci < s->cin * (jc + 1) / pci; ci++)
                            for (uint32_t ky = K * jk / pk; ky < K * (jk + 1) / pk; ky++)
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

static float *ref_split(const op_conv_shape *s, const float *x, const float *w, const float *b,
                        uint32_t pci)
{
    return ref_split_k(s, x, w, b, pci, 1);
}

/* The order model of partition p. */
static float *ref_part(const op_conv_shape *s, const float *x, const float *w, const float *b,
                       const op_conv_part *p)
{
    return ref_split_k(s, x, w, b, p->p[OP_PCI], p->p[OP_PK]);
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
    layer_new(&l, (op_conv_shape){2, 3, 10, 10, 20, 3, 1, 0, OP_W_FWD, 0, 0}, 7);
    uint32_t xpart[OP_DIMS] = {2, 1, 1, 1};
    run_out r;
    op_conv_part p = {{2, 2, 1, 1, 2, 1}};
    run_conv(&m, &l.s, &p, xpart, l.x, l.w, l.b, &r);
    assert_memory_equal(r.y, l.ref, l.ny * 4);
    free(r.y);
    float *mine = ref_split(&l.s, l.x, l.w, l.b, 1);
    assert_memory_equal(mine, l.ref, l.ny * 4); /* the model's order is the C loop's */
    free(mine);
    p = (op_conv_part){{1, 2, 2, 3, 1, 1}}; /* ci split: 12 tiles */
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
    p = (op_conv_part){{2, 2, 2, 1, 1, 1}};
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
    static const op_conv_shape shapes[2] = {{2, 3, 10, 10, 20, 3, 1, 1, OP_W_FWD, 0, 0},
                                            {2, 4, 12, 12, 16, 5, 2, 2, OP_W_FWD, 0, 0}};
    static const op_conv_part parts[2][2] = {{{{1, 5, 1, 1, 2, 1}}, {{2, 5, 1, 3, 1, 1}}},
                                             {{{2, 3, 3, 1, 1, 1}}, {{1, 3, 1, 4, 1, 1}}}};
    uint32_t xblk[OP_DIMS] = {2, 1, 2, 2};
    for (int k = 0; k < 2; k++) {
        layer l;
        layer_new(&l, shapes[k], 21 + (uint32_t)k);
        assert_int_equal(op_conv_ho(&l.s), k ? 6 : 10);
        for (int q = 0; q < 2; q++) {
            run_out r;
            const op_conv_part *p = &parts[k][q];
            run_conv(&m, &l.s, p, xblk, l.x, l.w, l.b, &r);
            float *want = ref_part(&l.s, l.x, l.w, l.b, p);
            assert_memory_equal(r.y, want, l.ny * 4);
            free(want);
            free(r.y);
        }
        op_conv_ctx ctx = {64, 8, 4, 1, 0, 0, 0, 0, 0};
        op_conv_part best;
        op_conv_est est;
        err e;
        err_clear(&e);
        assert_int_equal(op_conv_plan(&m, &l.s, &ctx, &best, &est, &e), ERR_OK);
        run_out r;
        run_conv(&m, &l.s, &best, xblk, l.x, l.w, l.b, &r);
        float *want = ref_part(&l.s, l.x, l.w, l.b, &best);
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
    op_conv_shape bad = {1, 1, 8, 8, 16, 3, 1, 3, OP_W_FWD, 0, 0};
    op_conv_part one = {{1, 1, 1, 1, 1, 1}};
    op_conv_ctx ctx = {64, 1, 1, 1, 0, 0, 0, 0, 0};
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
    mlayer_conv c = {CI, H, H, CO, K, 1, 0};
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
    op_conv_shape s = {NB, CO, ho, ho, CI, K, 1, K - 1, OP_W_DX, 1, 0};
    assert_int_equal(op_conv_ho(&s), H);
    static const op_conv_part parts[2] = {{{2, 2, 2, 4, 1, 1}}, {{1, 5, 5, 1, 1, 1}}};
    uint32_t xpart[OP_DIMS] = {NB, 1, 1, 1};
    op_conv_ctx ctx = {64, NB, 4, 1, 0, 0, 0, 0, 0};
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
        float *want = ref_part(&fw, dy, wt, NULL, p);
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
        /* within 10% (the bound); exact but for conv_pack's, whose estimate takes
         * every block as wide as the widest (ops/conv_cost.c) */
        if (ratio < 0.9 || ratio > 1.1 || (k != OP_S_PACK && est->step[k] != r->step[k]))
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

/* The weight gradient as a convolution with the roles swapped (OP_W_T) of a layer from CI to
 * CO channels (kernel K on H x H, NB samples): x read through a view with its batch and
 * channels swapped ([CI][NB][H][H]), dy [NB][CO][HO][HO] read as the weights [CO][NB][HO][HO],
 * the output dW^T [CI][CO][K][K]; over two partitions and the planner's choice: bit for bit
 * against the order model on the swapped operands written out by hand, and within the fp32
 * bound of mlayer_conv_bwd's dw. */
static void dw_case(uint32_t NB, uint32_t CI, uint32_t CO, uint32_t K, uint32_t H,
                    const op_conv_part parts[2], uint32_t seed)
{
    mach m = mk2(64);
    const uint32_t HO = H - K + 1;
    size_t nx = (size_t)NB * CI * H * H, nv = (size_t)CO * CI * K * K,
           ndy = (size_t)NB * CO * HO * HO;
    float *x = malloc(nx * 4), *v = malloc(nv * 4), *dy = malloc(ndy * 4);
    float *dx = malloc(nx * 4), *dw = calloc(nv, 4), *db = calloc(CO, 4), *zero = calloc(CO, 4);
    float *xt = malloc(nx * 4), *dyt = malloc(ndy * 4), *dwt = malloc(nv * 4);
    fill(x, nx, seed);
    fill(v, nv, seed + 1);
    fill(dy, ndy, seed + 2);
    mlayer_conv c = {CI, H, H, CO, K, 1, 0};
    float *col = malloc(mlayer_conv_col_floats(&c) * 4),
          *dcol = malloc(mlayer_conv_col_floats(&c) * 4);
    mlayer_conv_bwd(&c, NB, x, v, dy, dw, db, dx, col, dcol);
    /* the swapped operands by hand: xt [CI][NB][H][H], dyt [CO][NB][HO][HO]; dW^T [CI][CO] */
    for (uint32_t b = 0; b < NB; b++) {
        for (uint32_t a = 0; a < CI; a++)
            memcpy(xt + ((size_t)a * NB + b) * H * H, x + ((size_t)b * CI + a) * H * H,
                   (size_t)H * H * 4);
        for (uint32_t o = 0; o < CO; o++)
            memcpy(dyt + ((size_t)o * NB + b) * HO * HO, dy + ((size_t)b * CO + o) * HO * HO,
                   (size_t)HO * HO * 4);
    }
    for (uint32_t o = 0; o < CO; o++)
        for (uint32_t a = 0; a < CI; a++)
            memcpy(dwt + ((size_t)a * CO + o) * K * K, dw + ((size_t)o * CI + a) * K * K,
                   (size_t)K * K * 4);
    op_conv_shape s = {CI, NB, H, H, CO, HO, 1, 0, OP_W_T, 1, 0};
    assert_int_equal(op_conv_ho(&s), K);
    op_conv_ctx ctx = {64, NB, NB, 1, 0, 0, 0, 0, 0};
    op_conv_part best;
    op_conv_est est;
    err e;
    err_clear(&e);
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &best, &est, &e), ERR_OK);
    static const uint8_t swap[OP_DIMS] = {1, 0, 2, 3};
    for (int q = 0; q < 3; q++) {
        const op_conv_part *p = q < 2 ? &parts[q] : &best;
        conv_io io = {{NB, CI, H, H}, {NB, 1, 1, 1}, swap, x, dy, zero, NULL, 1};
        run_out r;
        run_io(&m, &s, p, &io, &r);
        op_conv_shape fw = s;
        fw.form = OP_W_FWD;
        float *want = ref_part(&fw, xt, dyt, NULL, p);
        assert_memory_equal(r.y, want, nv * 4);
        assert_close(r.y, dwt, nv, NB * HO * HO);
        if (q == 2)
            assert_estimate(&est, &r, "  ");
        free(want);
        free(r.y);
    }
    free(x);
    free(v);
    free(dy);
    free(dx);
    free(dw);
    free(db);
    free(zero);
    free(xt);
    free(dyt);
    free(dwt);
    free(col);
    free(dcol);
}

/* A layer from 3 to 20 channels, kernel 3 on 10 x 10, 2 samples: the summed samples split
 * over 2 tiles and reduced, and not. */
static void test_conv_dw(void **state)
{
    (void)state;
    static const op_conv_part parts[2] = {{{3, 1, 1, 2, 2, 1}}, {{1, 3, 1, 1, 1, 1}}};
    dw_case(2, 3, 20, 3, 10, parts, 71);
}

/* Kernels wider than the AMP's 8 inputs: a pass per 8 columns of each kernel row (the last
 * narrower where the width is not a multiple of 8), the sums still in (ci, ky, kx) order; and
 * kernels whose rows are split over tiles, each tile a partial sum of its rows (the parts
 * uneven: 12 rows in 5, 10 in 4). The forward of a 12 x 12 kernel (two passes a row, the
 * second 4 wide) over partitions that split rows, columns and input channels, or the kernel's
 * rows, and the planner's; and a weight gradient whose kernel is a 10 x 10 output gradient
 * (conv1's is 24 x 24): 3 to 10 channels, kernel 3 on 12 x 12, its samples or its kernel rows
 * split. Bit for bit against the order model, the estimates within 10%. */
static void test_conv_wide(void **state)
{
    (void)state;
    mach m = mk2(64);
    layer l;
    layer_new(&l, (op_conv_shape){2, 3, 14, 17, 20, 12, 1, 1, OP_W_FWD, 0, 0}, 31);
    assert_int_equal(op_conv_ho(&l.s), 5);
    uint32_t xblk[OP_DIMS] = {2, 1, 2, 2};
    op_conv_ctx ctx = {64, 8, 4, 1, 0, 0, 0, 0, 0};
    op_conv_part best, split[2] = {{{2, 5, 1, 3, 1, 1}}, {{1, 5, 1, 1, 1, 5}}};
    op_conv_est est;
    err e;
    err_clear(&e);
    if (op_conv_plan(&m, &l.s, &ctx, &best, &est, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    for (int q = 0; q < 3; q++) {
        const op_conv_part *p = q == 2 ? &best : &split[q];
        run_out r;
        run_conv(&m, &l.s, p, xblk, l.x, l.w, l.b, &r);
        float *want = ref_part(&l.s, l.x, l.w, l.b, p);
        assert_memory_equal(r.y, want, l.ny * 4);
        assert_close(r.y, l.ref, l.ny, l.s.cin * 12 * 12);
        if (q == 2)
            assert_estimate(&est, &r, "  ");
        free(want);
        free(r.y);
    }
    layer_free(&l);
    static const op_conv_part parts[2] = {{{3, 1, 1, 2, 1, 1}}, {{1, 3, 1, 2, 1, 4}}};
    dw_case(2, 3, 10, 3, 12, parts, 81);
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
    op_conv_ctx ctx = {m.tiles_per_ipu, src_tiles, 64, 10, 16384, 0, 0, 0, 0};
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &p, &est, &e), ERR_OK);
    char txt[96];
    op_conv_part_text(&p, txt, sizeof txt);
    printf("conv %ux%ux%ux%u -> %u (k %u): %s, %u tiles, run %llu prep %llu cycles\n", s.B, s.cin,
           s.h, s.w, s.cout, s.k, txt, est.tiles, (unsigned long long)est.run,
           (unsigned long long)est.prep);
    uint32_t xpart[OP_DIMS] = {src_tiles, 1, 1, 1};
    run_out r;
    run_conv(&m, &s, &p, xpart, l.x, l.w, l.b, &r);
    float *mine = ref_part(&s, l.x, l.w, l.b, &p);
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
    tutorial_layer((op_conv_shape){40, 1, 28, 28, 10, 5, 1, 0, OP_W_FWD, 0, 0}, 40, 11);
}

static void test_tutorial_conv2(void **state)
{
    (void)state;
    tutorial_layer((op_conv_shape){40, 10, 12, 12, 20, 5, 1, 0, OP_W_FWD, 0, 0}, 40, 13);
}

/* A system of machine m on two host threads and a graph of one IPU for it. */
static graph *rig_new(const mach *m, sys **sy)
{
    err e;
    err_clear(&e);
    sys_cfg cfg = {.m = *m, .threads = 2};
    *sy = sys_new(&cfg, &e);
    if (!*sy)
        fail_msg("%s", e.msg);
    return gr_new(m, 1);
}

/* op_act_copy through a view: a [6][40] matrix in 3 blocks of rows copied into [40][6] in 4
 * blocks of rows (held as [1][1][40][6]), read as its transpose: the destination's rows are
 * stretches, the source's columns are not; every element where the transpose puts it. */
static void test_copy_view(void **state)
{
    (void)state;
    enum { R = 6, C = 40 };
    mach m = mk2(64);
    err e;
    err_clear(&e);
    sys *sy;
    graph *gr = rig_new(&m, &sy);
    op_act a = op_act_new(gr, "a", 0, 0, (uint32_t[]){R, C, 1, 1}, (uint32_t[]){3, 1, 1, 1});
    op_act t = op_act_new(gr, "t", 0, 8, (uint32_t[]){1, 1, C, R}, (uint32_t[]){1, 1, 4, 1});
    op_act at = op_act_view(&a, (uint8_t[]){2, 3, 1, 0}); /* [1][1][C][R] */
    gr_keep(gr, a.t);
    gr_keep(gr, t.t);
    gr_exe *ex = gr_compile(gr, op_act_copy(gr, &at, &t), NULL, &e);
    if (!ex)
        fail_msg("%s", e.msg);
    eng *g = sys_engine(sy);
    if (gr_load(ex, g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    float x[R * C], y[R * C];
    fill(x, R * C, 51);
    gr_write(ex, g, a.t, 0, x, R * C);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    gr_read(ex, g, t.t, 0, y, R * C);
    for (uint32_t i = 0; i < R; i++)
        for (uint32_t j = 0; j < C; j++)
            assert_true(y[j * R + i] == x[i * C + j]);
    gr_exe_free(ex);
    gr_free(gr);
    sys_free(sy);
}

/* op_clone, what a Copy between IPUs lands in: a tensor of 51 floats on IPU 0 in regions
 * [0, 13) on tile 5, [13, 21) on tile 2 and [21, 51) on tile 9, cloned from element 10 for 30
 * onto IPU 1: [0, 3) on tile 5, [3, 11) on tile 2, [11, 30) on tile 9 (each region cut where
 * the range cuts it, on the tile of the same index); op_like keeps each region's own IPU. */
static void test_clone(void **state)
{
    (void)state;
    mach m = mk2(16);
    m.nipus = 2;
    graph *gr = gr_new(&m, 2);
    gr_tensor t = gr_tensor_new(gr, "t", GR_F32, 1, (uint32_t[]){51});
    gr_map_region(gr, t, 0, 5, 0, 13);
    gr_map_region(gr, t, 0, 2, 13, 21);
    gr_map_region(gr, t, 0, 9, 21, 51);
    gr_tensor c = op_clone(gr, "c", t, 10, 30, 1), l = op_like(gr, "l", t);
    err e;
    err_clear(&e);
    assert_int_equal(gr_status(gr, &e), ERR_OK);
    assert_int_equal(gr_tensor_elems(gr, c), 30);
    const gr_where want[3] = {{1, 5, 0, 3}, {1, 2, 3, 11}, {1, 9, 11, 30}};
    gr_where got[4];
    assert_int_equal(gr_regions(gr, c, got, 4), 3);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(got[k].ipu, want[k].ipu);
        assert_int_equal(got[k].tile, want[k].tile);
        assert_int_equal(got[k].begin, want[k].begin);
        assert_int_equal(got[k].end, want[k].end);
    }
    assert_int_equal(gr_regions(gr, l, got, 4), 3);
    assert_int_equal(got[2].ipu, 0);
    assert_int_equal(got[2].tile, 9);
    assert_int_equal(got[2].end, 51);
    gr_free(gr);
}

/* The element-wise operations over a tensor mapped in three uneven regions (13, 8 and 30
 * elements: groups of four and tails) on three tiles: y = relu(y); dy = y > 0 ? dy : 0; acc +=
 * dy, twice; z = 0. Against the plain loops. */
static void test_elementwise(void **state)
{
    (void)state;
    enum { N = 51 };
    mach m = mk2(64);
    err e;
    err_clear(&e);
    sys *sy;
    graph *gr = rig_new(&m, &sy);
    gr_tensor y = gr_tensor_new(gr, "y", GR_F32, 1, (uint32_t[]){N});
    gr_map_region(gr, y, 0, 3, 0, 13);
    gr_map_region(gr, y, 0, 9, 13, 21);
    gr_map_region(gr, y, 0, 4, 21, N);
    gr_tensor dy = op_like(gr, "dy", y), acc = op_like(gr, "acc", y), z = op_like(gr, "z", y);
    gr_tensor all[4] = {y, dy, acc, z};
    for (int k = 0; k < 4; k++)
        gr_keep(gr, all[k]);
    gr_cs c[4] = {gr_cs_new(gr, "relu"), gr_cs_new(gr, "relu.grad"), gr_cs_new(gr, "acc"),
                  gr_cs_new(gr, "zero")};
    op_relu(gr, c[0], y, GR_NONE);
    op_relu(gr, c[1], y, dy);
    op_acc(gr, c[2], acc, dy);
    op_zero(gr, c[3], z, "z");
    gr_prog p[5] = {gr_execute(gr, c[0]), gr_execute(gr, c[1]), gr_execute(gr, c[2]),
                    gr_execute(gr, c[2]), gr_execute(gr, c[3])};
    gr_exe *ex = gr_compile(gr, gr_seq(gr, p, 5), NULL, &e);
    if (!ex)
        fail_msg("%s", e.msg);
    eng *g = sys_engine(sy);
    if (gr_load(ex, g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    float v[4][N], out[4][N];
    for (int k = 0; k < 4; k++) {
        fill(v[k], N, 61 + (uint32_t)k);
        gr_write(ex, g, all[k], 0, v[k], N);
    }
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    for (int k = 0; k < 4; k++)
        gr_read(ex, g, all[k], 0, out[k], N);
    for (size_t i = 0; i < N; i++) {
        float r = v[0][i] > 0 ? v[0][i] : 0.0f, d = r > 0 ? v[1][i] : 0.0f;
        float a = v[2][i] + d;
        a = a + d;
        assert_true(out[0][i] == r);
        assert_true(out[1][i] == d);
        assert_true(out[2][i] == a);
        assert_true(out[3][i] == 0.0f);
    }
    gr_exe_free(ex);
    gr_free(gr);
    sys_free(sy);
}

/* Pooling where the blocks lie (op_pool_fwd): an activation [2][3][8][12] in blocks of 4 x 4
 * (parts 2, 1, 2, 3) on 12 tiles, max-pooled then ReLU'd on each block's tile; the output
 * and argmax read back through their blocked layouts against the C layers'
 * mlayer_pool_relu_fwd on the row-major data, bit for bit (maxima and indices); then its
 * gradient on the same blocks (op_pool_bwd) from an output gradient laid out as the output,
 * against mlayer_pool_relu_bwd, bit for bit. A layout with a block of odd rows (parts 3 in 8
 * rows: 2, 3, 3) or through a view is refused with nothing made, forward and backward. */
static void test_pool_in_place(void **state)
{
    (void)state;
    enum { B = 2, C = 3, H = 8, W = 12, N = B * C * H * W, NO = N / 4 };
    mach m = mk2(64);
    err e;
    err_clear(&e);
    sys *sy;
    graph *gr = rig_new(&m, &sy);
    uint32_t dim[OP_DIMS] = {B, C, H, W}, odd[OP_DIMS] = {2, 1, 3, 1};
    op_act bad = op_act_new(gr, "bad", 0, 20, dim, odd), out, arg;
    static const uint8_t swap[OP_DIMS] = {1, 0, 2, 3};
    op_act view = op_act_view(&bad, swap);
    gr_cs cs = GR_NONE;
    assert_int_equal(op_pool_fwd(gr, "p", &bad, &cs, &out, &arg), ERR_INPUT);
    assert_int_equal(op_pool_fwd(gr, "p", &view, &cs, &out, &arg), ERR_INPUT);
    assert_int_equal(cs, GR_NONE);
    op_act y = op_act_new(gr, "y", 0, 0, dim, (uint32_t[]){2, 1, 2, 3});
    gr_keep(gr, y.t);
    assert_int_equal(op_pool_fwd(gr, "pool", &y, &cs, &out, &arg), ERR_OK);
    gr_keep(gr, out.t);
    gr_keep(gr, arg.t);
    /* the gradient on the same blocks: from dout, mapped as out */
    gr_tensor dout = op_like(gr, "dout", out.t);
    gr_keep(gr, dout);
    gr_cs bcs = GR_NONE;
    op_act din;
    assert_int_equal(op_pool_bwd(gr, "pool.grad", &bad, &out, &arg, dout, &bcs, &din), ERR_INPUT);
    assert_int_equal(bcs, GR_NONE);
    assert_int_equal(op_pool_bwd(gr, "pool.grad", &y, &out, &arg, dout, &bcs, &din), ERR_OK);
    gr_keep(gr, din.t);
    gr_prog both[2] = {gr_execute(gr, cs), gr_execute(gr, bcs)};
    gr_exe *ex = gr_compile(gr, gr_seq(gr, both, 2), NULL, &e);
    if (!ex)
        fail_msg("%s", e.msg);
    eng *g = sys_engine(sy);
    if (gr_load(ex, g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    float x[N], xb[N], ob[NO], o[NO], want[NO], d[NO], db[NO], gb[N], gx[N], wantg[N];
    uint32_t ab[NO], a[NO];
    unsigned char wa[NO];
    fill(x, N, 91);
    fill(d, NO, 92);
    op_act_block(&y, x, xb);
    op_act_block(&out, d, db);
    gr_write(ex, g, y.t, 0, xb, N);
    gr_write(ex, g, dout, 0, db, NO);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    gr_read(ex, g, out.t, 0, ob, NO);
    gr_read(ex, g, arg.t, 0, ab, NO);
    op_act_unblock(&out, ob, o);
    op_act_unblock(&arg, (const float *)ab, (float *)a); /* 32-bit words moved as they are */
    mlayer_pool_relu_fwd(B * C, H, W, x, want, wa);
    assert_memory_equal(o, want, sizeof o);
    for (size_t i = 0; i < NO; i++)
        assert_int_equal(a[i], wa[i]);
    gr_read(ex, g, din.t, 0, gb, N); /* the gradient: routed as mlayer's, bit for bit */
    op_act_unblock(&din, gb, gx);
    mlayer_pool_relu_bwd(B * C, H, W, d, want, wa, wantg);
    assert_memory_equal(gx, wantg, sizeof gx);
    gr_exe_free(ex);
    gr_free(gr);
    sys_free(sy);
}

/* [r][c] -> [c][r]. */
static float *transpose(const float *a, uint32_t r, uint32_t c)
{
    float *t = malloc((size_t)r * c * 4);
    for (uint32_t i = 0; i < r; i++)
        for (uint32_t j = 0; j < c; j++)
            t[(size_t)j * r + i] = a[(size_t)i * c + j];
    return t;
}

/* One pass of a linear layer from K to N features over M rows (the tutorial's layer3),
 * planned over a whole Mk2 IPU: its input a matrix held in 8 blocks of rows on 8 tiles
 * ([rows][cols][1][1], read through op_mm_in's view: a block's rows are not one stretch), its weights w as the pass reads them, its output against
 * ref_split of the same convolution (bit for bit: xin is the view's data, wf the forward
 * weights), and its estimate against the simulation. y0: the accumulator before (DW), runs
 * of it. */
static void mm_pass(op_mm_pass pass, uint32_t M, uint32_t K, uint32_t N, const float *mat,
                    uint32_t cols, const float *w, const float *bias, const float *xin,
                    const float *wf, const float *y0, uint32_t runs)
{
    mach m = mk2(1472);
    op_conv_shape s = op_mm_shape(pass, M, K, N, y0 != NULL);
    op_conv_ctx ctx = {m.tiles_per_ipu,
                       8,
                       64,
                       pass == OP_MM_DW ? 1 : 10,
                       16384,
                       pass == OP_MM_DW ? 0 : 1,
                       0,
                       0,
                       0};
    op_conv_part p;
    op_conv_est est;
    err e;
    err_clear(&e);
    assert_int_equal(op_conv_plan(&m, &s, &ctx, &p, &est, &e), ERR_OK);
    char txt[96];
    op_conv_part_text(&p, txt, sizeof txt);
    printf("matmul pass %d, %u x %u -> %u: %s, %u tiles, run %llu prep %llu cycles\n", (int)pass, M,
           K, N, txt, est.tiles, (unsigned long long)est.run, (unsigned long long)est.prep);
    if (y0)
        assert_int_equal(p.p[OP_PCI], 1); /* an accumulator is not split */
    static const uint8_t map_t[OP_DIMS] = {2, 1, 3, 0}, map_n[OP_DIMS] = {2, 0, 3, 1};
    conv_io io = {
        {M, cols, 1, 1}, {8, 1, 1, 1}, pass == OP_MM_DW ? map_n : map_t, mat, w, bias, y0, runs};
    run_out r;
    run_io(&m, &s, &p, &io, &r);
    op_conv_shape fw = s;
    fw.form = OP_W_FWD;
    float *want = ref_part(&fw, xin, wf, s.nobias ? NULL : bias, &p);
    size_t ny = (size_t)s.cout * s.w;
    for (size_t i = 0; y0 && i < ny; i++) { /* y0 + d + d ...: one rounding each */
        float acc = y0[i];
        for (uint32_t k = 0; k < runs; k++)
            acc = acc + want[i];
        want[i] = acc;
    }
    assert_memory_equal(r.y, want, ny * 4);
    assert_estimate(&est, &r, "  ");
    free(want);
    free(r.y);
}

/* The tutorial's layer3 (320 -> 256 over a micro-batch of 40) as matrix products: the
 * forward with its bias, the input gradient and the weight gradient accumulated over two
 * calls onto an accumulator that is not zero; each against the C model of its order, and
 * within the fp32 bound of a plain loop. */
static void test_linear(void **state)
{
    (void)state;
    enum { M = 40, K = 320, N = 256 };
    float *x = malloc(M * K * 4), *w = malloc(N * K * 4), *b = malloc(N * 4);
    float *dy = malloc(M * N * 4), *acc = malloc(N * K * 4);
    fill(x, M * K, 41);
    fill(w, N * K, 42);
    fill(b, N, 43);
    fill(dy, M * N, 44);
    fill(acc, N * K, 45);
    float *xt = transpose(x, M, K), *dyt = transpose(dy, M, N), *wt = transpose(w, N, K);
    /* y^T = W x^T + b; dx^T = W^T dy^T; dW = dy^T x */
    mm_pass(OP_MM_FWD, M, K, N, x, K, w, b, xt, w, NULL, 1);
    mm_pass(OP_MM_DX, M, K, N, dy, N, w, b, dyt, wt, NULL, 1);
    mm_pass(OP_MM_DW, M, K, N, x, K, dy, b, x, dyt, acc, 2);
    /* the plain loops in double: y within the bound of K terms */
    float *ref = malloc(M * N * 4), *got = malloc(M * N * 4);
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t n = 0; n < N; n++) {
            double sum = b[n];
            for (uint32_t k = 0; k < K; k++)
                sum += (double)x[i * K + k] * w[n * K + k];
            ref[n * M + i] = (float)sum;
        }
    op_conv_shape s = op_mm_shape(OP_MM_FWD, M, K, N, 0);
    float *y = ref_split(&s, xt, w, b, 1);
    memcpy(got, y, M * N * 4);
    assert_close(got, ref, M * N, K);
    free(y);
    free(ref);
    free(got);
    free(x);
    free(w);
    free(b);
    free(dy);
    free(acc);
    free(xt);
    free(dyt);
    free(wt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),           cmocka_unit_test(test_plan_refusals),
        cmocka_unit_test(test_plan_is_cheapest), cmocka_unit_test(test_conv_small),
        cmocka_unit_test(test_conv_pad_stride),  cmocka_unit_test(test_conv_dx),
        cmocka_unit_test(test_plan_memory),      cmocka_unit_test(test_plan_avail),
        cmocka_unit_test(test_plan_pool),        cmocka_unit_test(test_plan_working_memory),
        cmocka_unit_test(test_plan_send_cap),    cmocka_unit_test(test_tutorial_conv1),
        cmocka_unit_test(test_tutorial_conv2),   cmocka_unit_test(test_linear),
        cmocka_unit_test(test_copy_view),        cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_conv_dw),          cmocka_unit_test(test_conv_wide),
        cmocka_unit_test(test_pool_in_place),    cmocka_unit_test(test_clone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
