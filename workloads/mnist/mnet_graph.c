/* mnet_graph: the tutorial's network as a graph, each layer planned over tiles, its four
 * blocks on one IPU, or sharded or pipelined (mnet_pipe.c schedules the stages) over several
 * (docs/mnist.md, "The simulated run", gives the plan with its figures).
 *
 * Tiles: one per sample of the micro-batch runs that sample's convolutions, pooling and their
 * gradients (tiles 0..B-1: the batch split over tiles, rows split over the six workers);
 * layer3 runs on 16 tiles of 16 outputs each, layer4 and the loss on one, for each group of
 * at most 40 samples (a larger micro-batch runs in K groups side by side, each on tiles of its
 * own, their weight gradients summed at the update); about 11 K tiles update the convolutions'
 * parameters (conv1's on K, conv2's on 10 K of whole pairs). Each block's tiles are on its IPU
 * (mnet_cfg.stage_ipu); tensors between blocks on different IPUs cross by global exchange.
 * The linear layers run transposed (activations as [features][batch]), so that a bias is per
 * row as bias_add and bias_grad take it. Weight gradients
 * accumulate over the G micro-batches where they are made (each sample tile its own, the
 * linear layers' in the AMP's partials); at the update the sample tiles' parts are gathered by
 * exchange onto the update tiles and reduced (reduce_add, scaled by 1/G), and the AdamW step
 * runs where each parameter lives. After it the convolutions' weights are broadcast back to
 * the sample tiles and every tile re-packs its weights into the layouts its codelets stream.
 * With the mapping planned (mnet_cfg.mapping), the operation library (workloads/ops/) plans
 * the convolutions' forward, conv2's input and weight gradients and the linear layers
 * (forward and both gradients, as matrix products, the "pfc" section) over the whole IPU of
 * their block; the rest stays as above. Left out: conv1's weight gradient, pooling and the
 * loss planned; the loss on more than one tile. */
#include "workloads/mnist/mnet_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"

#define NW 6 /* workers a tile */

/* A slice of a tensor: elements [at, at + n). */
typedef op_sl sl;

static sl S(gr_tensor t, size_t at, size_t n)
{
    return (sl){t, at, n};
}

/* The field for elements [off, off + len) of s. */
static gr_field R(sl s, size_t off, size_t len)
{
    return gr_region(s.t, s.at + off, s.at + off + len);
}

static uint32_t ceil8(uint32_t n)
{
    return ceil_div_u32(n, 8);
}

static uint32_t ceil16(uint32_t n)
{
    return ceil_div_u32(n, 16);
}

static gr_field U(uint32_t u)
{
    return gr_u32(u);
}

/* Offsets of the parameters in the flat vector (mref.h's state_dict order). */
enum {
    P_W1 = 0,
    P_B1 = 250,
    P_W2 = 260,
    P_B2 = 5260,
    P_W3 = 5280,
    P_B3 = 87200,
    P_W4 = 87456,
    P_B4 = 90016,
    P_END = MREF_NPARAMS
};

/* ---- tensors ---- */

/* Tile t of block k's IPU, as a global tile (ipu x tiles per IPU + tile): what vertices and
 * regions are placed by here. */
static uint32_t G(const mnet_b *b, int k, uint32_t t)
{
    return b->ipu[k] * b->T + t;
}

/* The first tile of the linear layers' plans: after the tiles of the per-sample layers, the
 * parameters' homes and the update, whose memory they would otherwise add to. */
static uint32_t lin_first(const mnet_b *b)
{
    return b->ntiles;
}

/* [count][per] with row i on global tile first + i. */
static gr_tensor rows(mnet_b *b, const char *name, gr_type ty, uint32_t first, uint32_t count,
                      size_t per)
{
    uint32_t shape[2] = {count, (uint32_t)per};
    gr_tensor t = gr_tensor_new(b->g, name, ty, 2, shape);
    for (uint32_t i = 0; i < count; i++)
        gr_map_region(b->g, t, (first + i) / b->T, (first + i) % b->T, i * per, (i + 1) * per);
    return t;
}

static gr_tensor on(mnet_b *b, const char *name, gr_type ty, uint32_t tile, size_t n)
{
    return rows(b, name, ty, tile, 1, n);
}

/* Host data for t from element at, reps copies (tables every sample tile holds alike). */
void mnet_init_words(mnet_b *b, gr_tensor t, size_t at, const uint32_t *w, size_t n, uint32_t reps)
{
    b->init = xgrow(b->init, &b->cinit, b->ninit + 1, sizeof *b->init);
    uint32_t *copy = xmalloc((n ? n : 1) * sizeof *copy);
    memcpy(copy, w, n * sizeof *copy);
    b->init[b->ninit++] = (mnet_init){t, at, copy, n, reps};
}

static void vtx(mnet_b *b, gr_cs cs, const char *codelet, int super, uint32_t gt, const gr_field *f,
                size_t nf)
{
    gr_vertex(b->g, cs, codelet, super, gt / b->T, gt % b->T, f, nf);
}

/* ---- vertices, each split over the workers ---- */

/* The op library's one-tile builders (ops/vtx.c) on global tile gt. */
static void v_reduce(mnet_b *b, gr_cs cs, uint32_t gt, sl out, sl parts, uint32_t n, uint32_t P,
                     uint32_t stride, float k)
{
    op_v_reduce(b->g, cs, gt / b->T, gt % b->T, out, parts, n, P, stride, k);
}

static void v_pack(mnet_b *b, gr_cs cs, uint32_t gt, const cplan_pack *p, sl list, sl dst, sl src)
{
    op_v_pack(b->g, cs, gt / b->T, gt % b->T, p, list, dst, src);
}

/* dst = 0 (conv_pack with empty blocks: one row of zeros a worker; zl: 3 zero words, the
 * block's descriptor and the source no valid row reads). */
static void v_zero(mnet_b *b, gr_cs cs, uint32_t tile, sl dst, sl zl)
{
    op_v_elem(b->g, cs, tile / b->T, tile % b->T, OP_E_ZERO, dst, zl, 1);
}

static void v_ungroup(mnet_b *b, gr_cs cs, uint32_t gt, sl out, sl in, uint32_t C, uint32_t P,
                      int acc)
{
    op_v_ungroup(b->g, cs, gt / b->T, gt % b->T, out, in, C, P, acc);
}

/* One image of C channels of P (op_v_bias). */
static void v_bias(mnet_b *b, gr_cs cs, uint32_t gt, sl y, sl bias, uint32_t C, uint32_t P,
                   int grad)
{
    op_v_bias(b->g, cs, gt / b->T, gt % b->T, y, bias, C, P, 1, C * P, grad);
}

static void v_pool_fwd(mnet_b *b, gr_cs cs, uint32_t gt, sl in, sl out, sl arg, uint32_t Rr,
                       uint32_t w)
{
    op_v_pool_fwd(b->g, cs, gt / b->T, gt % b->T, in, out, arg, Rr, w);
}

static void v_pool_bwd(mnet_b *b, gr_cs cs, uint32_t gt, sl dout, sl out, sl arg, sl din,
                       uint32_t Rr, uint32_t w)
{
    op_v_pool_bwd(b->g, cs, gt / b->T, gt % b->T, dout, out, arg, din, Rr, w);
}

/* ReLU in place (bwd = 0), or its gradient dy = out > 0 ? dy : 0 in place (bwd = 1). */
static void v_relu(mnet_b *b, gr_cs cs, uint32_t tile, sl out, sl dy, int bwd)
{
    op_v_elem(b->g, cs, tile / b->T, tile % b->T, bwd ? OP_E_RELU_GRAD : OP_E_RELU, out, dy, 4);
}

/* out[nq][M][16] (+)= in[kc][M][8] x W blocks (mm_amp, a supervisor vertex). */
static void v_mm(mnet_b *b, gr_cs cs, uint32_t tile, sl in, sl w, sl out, uint32_t M, uint32_t kc,
                 uint32_t nq, int zero)
{
    gr_field f[7] = {R(in, 0, in.n), R(w, 0, w.n), R(out, 0, out.n), U(M),
                     U(kc),          U(nq),        U((uint32_t)zero)};
    vtx(b, cs, "mm_amp", 1, tile, f, 7);
}

/* A[rows][K] -> chunks [kc][M][8] (mm_rows_to_chunks). */
static void v_rows_chunks(mnet_b *b, gr_cs cs, uint32_t tile, sl src, sl dst, uint32_t nrows,
                          uint32_t K, uint32_t M)
{
    for (unsigned v = 0; v < NW; v++) {
        size_t m0 = op_split(nrows, v, NW, 1), m1 = op_split(nrows, v + 1, NW, 1);
        if (m1 == m0)
            continue;
        gr_field f[5] = {R(src, m0 * K, (m1 - m0) * K), R(dst, m0 * 8, dst.n - m0 * 8),
                         U((uint32_t)(m1 - m0)), U(K), U(M)};
        vtx(b, cs, "mm_rows_to_chunks", 0, tile, f, 5);
    }
}

/* Columns of A[K][L] -> chunks [kc][M][8] (mm_cols_to_chunks), the first ncols columns. */
static void v_cols_chunks(mnet_b *b, gr_cs cs, uint32_t tile, sl src, sl dst, uint32_t ncols,
                          uint32_t K, uint32_t L, uint32_t M)
{
    for (unsigned v = 0; v < NW; v++) {
        size_t m0 = op_split(ncols, v, NW, 1), m1 = op_split(ncols, v + 1, NW, 1);
        if (m1 == m0)
            continue;
        gr_field f[6] = {R(src, m0, src.n - m0),
                         R(dst, m0 * 8, dst.n - m0 * 8),
                         U((uint32_t)(m1 - m0)),
                         U(K),
                         U(L),
                         U(M)};
        vtx(b, cs, "mm_cols_to_chunks", 0, tile, f, 6);
    }
}

/* Rows of Bm[K][N] -> weight blocks, zero rows up to 8 kc (mm_rows_to_blocks). */
static void v_rows_blocks(mnet_b *b, gr_cs cs, uint32_t tile, sl src, sl dst, uint32_t K,
                          uint32_t N, uint32_t kc)
{
    for (unsigned v = 0; v < NW; v++) {
        size_t k0 = op_split(K, v, NW, 1), k1 = op_split(K, v + 1, NW, 1);
        uint32_t zrows = v == NW - 1 ? 8 * kc - K : 0;
        if (k1 == k0 && !zrows)
            continue;
        gr_field f[6] = {R(src, k0 * N, k1 > k0 ? (k1 - k0) * N : 1),
                         R(dst, k0 * 16, dst.n - k0 * 16),
                         U((uint32_t)(k1 - k0)),
                         U(zrows),
                         U(N),
                         U(kc)};
        vtx(b, cs, "mm_rows_to_blocks", 0, tile, f, 6);
    }
}

/* Rows of A[N][K] -> the columns of weight blocks, zero columns up to 16 nq
 * (mm_cols_to_blocks). */
static void v_cols_blocks(mnet_b *b, gr_cs cs, uint32_t tile, sl src, sl dst, uint32_t N,
                          uint32_t K, uint32_t nq)
{
    for (unsigned v = 0; v < NW; v++) {
        size_t n0 = op_split(N, v, NW, 1), n1 = op_split(N, v + 1, NW, 1);
        uint32_t zcols = v == NW - 1 ? 16 * nq - N : 0;
        if (n1 == n0 && !zcols)
            continue;
        gr_field f[6] = {R(src, n0 * K, n1 > n0 ? (n1 - n0) * K : 1),
                         R(dst, 0, dst.n),
                         U((uint32_t)n0),
                         U((uint32_t)(n1 - n0)),
                         U(zcols),
                         U(K)};
        vtx(b, cs, "mm_cols_to_blocks", 0, tile, f, 6);
    }
}

/* Partials [nq][M][16] -> rows [nrows][N] (mm_partials_to_rows). */
static void v_part_rows(mnet_b *b, gr_cs cs, uint32_t tile, sl src, sl dst, uint32_t nrows,
                        uint32_t N, uint32_t M)
{
    for (unsigned v = 0; v < NW; v++) {
        size_t m0 = op_split(nrows, v, NW, 1), m1 = op_split(nrows, v + 1, NW, 1);
        if (m1 == m0)
            continue;
        gr_field f[5] = {R(src, m0 * 16, src.n - m0 * 16), R(dst, m0 * N, (m1 - m0) * N),
                         U((uint32_t)(m1 - m0)), U(N), U(M)};
        vtx(b, cs, "mm_partials_to_rows", 0, tile, f, 5);
    }
}

/* ---- convolutions on the sample tiles ---- */

/* A tensor with one row per sample tile, and its row length. */
typedef struct rt {
    gr_tensor t;
    size_t per;
} rt;

/* [B][per] on block k's sample tiles. */
static rt srow(mnet_b *b, int k, const char *name, gr_type ty, size_t per)
{
    return (rt){rows(b, name, ty, G(b, k, 0), b->B, per), per};
}

static sl at(rt r, uint32_t s)
{
    return S(r.t, (size_t)s * r.per, r.per);
}

/* Host tables of one plan (the same on every sample tile). */
typedef struct amp_tabs {
    const cplan_amp *p;
    rt wl, ptab;
} amp_tabs;

static amp_tabs amp_tables(mnet_b *b, int k, const char *name, const cplan_amp *p)
{
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "%s.wl", name);
    snprintf(n2, sizeof n2, "%s.ptab", name);
    uint32_t nwl = cplan_amp_wl_words(p);
    amp_tabs a = {p, srow(b, k, n1, GR_I32, nwl), srow(b, k, n2, GR_I32, 3 * (size_t)p->npasses)};
    uint32_t *wl = xmalloc(4 * (size_t)nwl);
    cplan_amp_worklists(p, wl);
    mnet_init_words(b, a.wl.t, 0, wl, nwl, b->B);
    mnet_init_words(b, a.ptab.t, 0, p->ptab, 3 * (size_t)p->npasses, b->B);
    free(wl);
    return a;
}

static rt pack_list(mnet_b *b, int k, const char *name, const cplan_pack *p)
{
    rt r = srow(b, k, name, GR_I32, 3 * (size_t)p->nblocks);
    mnet_init_words(b, r.t, 0, p->list, 3 * (size_t)p->nblocks, b->B);
    return r;
}

/* conv_amp on sample s's tile gt. */
static void v_amp(mnet_b *b, gr_cs cs, uint32_t gt, uint32_t s, const amp_tabs *a, sl in, sl out,
                  sl wts)
{
    const cplan_amp *p = a->p;
    gr_field f[9] = {R(in, 0, in.n),
                     R(out, 0, out.n),
                     R(wts, 0, wts.n),
                     R(at(a->wl, s), 0, a->wl.per),
                     U((uint32_t)p->radj),
                     U(p->npasses),
                     R(at(a->ptab, s), 0, a->ptab.per),
                     U(p->zall),
                     U(0)};
    vtx(b, cs, "conv_amp", 1, gt, f, 9);
}

/* dy [C][P] -> the AMP's grouped [ceil(C / 16)][P][16], in blocks of P / parts rows so
 * that the workers share it (cplan_pack_group's layout). */
static void group_pack(cplan_pack *p, uint32_t C, uint32_t P, uint32_t parts)
{
    uint32_t Rr = P / parts;
    cplan_pack_init(p, Rr, 16, 4, P * 4);
    for (uint32_t g = 0; g < ceil16(C); g++)
        for (uint32_t i = 0; i < parts; i++)
            cplan_pack_block(p, (16 * g * P + i * Rr) * 4, Rr, (uint32_t)min_u64(16, C - 16 * g));
}

/* The sample tiles' tensors: block B1's (conv1, pool1) and B2's (conv2, pool2) on their
 * IPUs' tiles 0..B-1. When the two blocks are on different IPUs, pool1's output crosses to
 * B2 (a1b) and its gradient back (da1a); else a1b is a1 and da1a is da1. */
typedef struct conv_t {
    rt x1, y1, a1, a1b, arg1, y2, x3, arg2, cw, w2db;
    rt dx3g, da2, dy2, dyg2, dw2t, dx2g, da1, da1a, dy1, dyg1, dw1t, cg;
    rt l_w2d, l_dy2, l_dy1;
    amp_tabs a2d, a2w, a1w;
    /* mapping per sample: each sample tile's forward (partials, weight blocks and tables) */
    rt c1g, c2g, w1b, w2b, l_w1, l_w2;
    amp_tabs a1f, a2f;
    /* mapping planned: */
    op_act x1s;       /* conv1's input [B][1][28][28], b->xrows row parts a sample (setup) */
    op_conv op[2];    /* conv1's and conv2's forward, planned over their IPU */
    op_act y[2];      /* y1 and y2 (a sample's output on its tile) as layouts */
    gr_prog ycopy[2]; /* the planned output to y1, y2 (conv1's: when pool1 is not in place) */
    /* pool1, planned: on conv1's output blocks where they lie when they allow it (op_pool_fwd;
     * pooled = 1: its compute set, output and argmax), each call's then copied to the sample
     * tiles' a1, arg1 (pool1_copy); else on the sample tiles from y1 */
    int pooled;
    gr_cs pool1cs;
    op_act p1y, p1arg;
    op_conv dx2;     /* training: conv2's input gradient, planned over B2's IPU */
    gr_prog dx2copy; /* its output to pool1's gradient da1 on the sample tiles */
    /* training: conv1's and conv2's weight gradients dW^T [cin][cout][5][5], planned; their
     * sums over a weight update's micro-batches (dwacc, mapped as their outputs, dwcs adding
     * each call's); dwout at the update: dwacc, transposed, into sample 0's part of cg */
    op_conv dw[2];
    gr_tensor dwacc[2];
    gr_cs dwcs[2];
    gr_prog dwout[2];
    cplan_pack p_dy2, p_dy1;
    int split; /* B1 and B2 on different IPUs */
} conv_t;

/* [B][MNET_CONVP], sample s's conv1 part on B1's tile s, its conv2 part on B2's. */
static rt conv_split(mnet_b *b, const char *name)
{
    uint32_t shape[2] = {b->B, MNET_CONVP};
    gr_tensor t = gr_tensor_new(b->g, name, GR_F32, 2, shape);
    for (uint32_t s = 0; s < b->B; s++) {
        size_t r = (size_t)s * MNET_CONVP;
        gr_map_region(b->g, t, b->ipu[MNET_B1], s, r, r + MNET_CONV1P);
        gr_map_region(b->g, t, b->ipu[MNET_B2], s, r + MNET_CONV1P, r + MNET_CONVP);
    }
    return (rt){t, MNET_CONVP};
}

/* The Copy of pool1's output and argmax, pooled in place (c->pooled), to the sample tiles'
 * a1 and arg1 (the current ones: a recomputing stage's a1 is a copy of its own), as pool1 on
 * the sample tiles leaves them. */
static gr_prog pool1_copy(mnet_b *b, const conv_t *c)
{
    uint32_t d[OP_DIMS] = {b->B, 10, 12, 12}, parts[OP_DIMS] = {b->B, 1, 1, 1};
    op_act a1 = op_act_make(c->a1.t, d, parts), arg1 = op_act_make(c->arg1.t, d, parts);
    a1.pad = 8; /* the 8 floats after each sample (conv2's planned input reads past it) */
    gr_xfer *xa, *xg;
    size_t na = op_act_xfers(&c->p1y, &a1, &xa), ng = op_act_xfers(&c->p1arg, &arg1, &xg);
    xa = xrealloc(xa, (na + ng) * sizeof *xa);
    memcpy(xa + na, xg, ng * sizeof *xg);
    gr_prog p = gr_copy_many(b->g, xa, na + ng);
    free(xa);
    free(xg);
    return p;
}

/* Convolution k's forward (conv1: k = 0, from x1; conv2: 1, from a1b) as a planned operation
 * over its block's IPU, its output copied to y1 or y2 on the sample tiles (where pooling and
 * the backward take it); the weights and bias read from the sample tiles' copies. */
static void conv_op(mnet_b *b, conv_t *c, int k)
{
    static const size_t pw[2] = {P_W1, P_W2}, pb[2] = {P_B1, P_B2};
    const mnet_plan *pl = &b->pipe.plan[k]; /* plan_convs' shape and partition */
    const op_conv_shape *s = &pl->shape;
    uint32_t xd[OP_DIMS] = {s->B, s->cin, s->h, s->w}, parts[OP_DIMS] = {s->B, 1, 1, 1};
    op_act x = k ? op_act_make(c->a1b.t, xd, parts) : c->x1s;
    x.pad = k ? 8 : 0; /* a1b: the 8 floats after each sample (the backward's AMP reads them) */
    op_ref w = {c->cw.t, pw[k], b->B, MNET_CONVP}, bias = {c->cw.t, pb[k], b->B, MNET_CONVP};
    op_conv_build(b->g, pl->name, pl->ipu, 0, s, &pl->part, &x, w, bias, &c->op[k]);
    if (k == 0) {
        c->pooled =
            op_pool_fwd(b->g, "pool1", &c->op[0].y, &c->pool1cs, &c->p1y, &c->p1arg) == ERR_OK;
        c->ycopy[0] = GR_NONE;
        if (c->pooled)
            return; /* conv1's output stays where it is made: no y1 on the sample tiles */
        c->y1 = srow(b, MNET_B1, "conv1.y", GR_F32, 5760);
    }
    uint32_t yd[OP_DIMS] = {s->B, s->cout, op_conv_ho(s), op_conv_wo(s)};
    c->y[k] = op_act_make(k ? c->y2.t : c->y1.t, yd, parts);
    c->ycopy[k] = op_act_copy(b->g, &c->op[k].y, &c->y[k]);
}

/* conv2's input gradient (mapping planned, training): the convolution of conv2's output
 * gradient dy2 (a sample a tile) with conv2's weights transposed and flipped (OP_W_DX), its
 * output copied to pool1's gradient da1 on the sample tiles. */
static void dx_op(mnet_b *b, conv_t *c)
{
    const mnet_plan *pl = &b->pipe.plan[MNET_PL_C2DX];
    const op_conv_shape *s = &pl->shape;
    uint32_t xd[OP_DIMS] = {s->B, s->cin, s->h, s->w}, parts[OP_DIMS] = {s->B, 1, 1, 1};
    op_act x = op_act_make(c->dy2.t, xd, parts);
    uint32_t yd[OP_DIMS] = {s->B, s->cout, op_conv_ho(s), op_conv_wo(s)};
    op_act y = op_act_make(c->da1.t, yd, parts);
    op_ref w = {c->cw.t, P_W2, b->B, MNET_CONVP}, none = {GR_NONE, 0, 0, 0};
    op_conv_build(b->g, pl->name, pl->ipu, 0, s, &pl->part, &x, w, none, &c->dx2);
    c->dx2copy = op_act_copy(b->g, &c->dx2.y, &y);
}

/* conv1's (i = 0) or conv2's (i = 1) weight gradient (mapping planned, training): the
 * convolution with the roles swapped (OP_W_T), its input the layer's input with the batch and
 * channels swapped ([cin][B][h][w]), its weights the output gradient dy [B][cout][ho][wo] read
 * as [cout][B][ho][wo] (conv1's a 24 x 24 kernel: three passes of 8 columns a row), its
 * output dW^T [cin][cout][5][5], each call's added into dwacc; at the update dwacc goes,
 * transposed, where sample 0's per-sample part of the weight gradient would be (cg), the
 * others' left zero, so the update's gather and reduction sum it as before. */
static void dw_op(mnet_b *b, conv_t *c, int i)
{
    static const struct {
        int plan;
        uint32_t cin, cout, hw, at;
        const char *acc;
    } L[2] = {{MNET_PL_C1DW, 1, 10, 28, P_W1, "conv1.dw.acc"},
              {MNET_PL_C2DW, 10, 20, 12, P_W2, "conv2.dw.acc"}};
    const mnet_plan *pl = &b->pipe.plan[L[i].plan];
    uint32_t xd[OP_DIMS] = {b->B, L[i].cin, L[i].hw, L[i].hw}, parts[OP_DIMS] = {b->B, 1, 1, 1};
    op_act x = i ? op_act_make(c->a1b.t, xd, parts) : c->x1s;
    x.pad = i ? 8 : 0;
    static const uint8_t swap[OP_DIMS] = {1, 0, 2, 3};
    op_act xv = op_act_view(&x, swap);
    op_ref none = {GR_NONE, 0, 0, 0};
    op_conv_build(b->g, pl->name, pl->ipu, 0, &pl->shape, &pl->part, &xv,
                  (op_ref){i ? c->dy2.t : c->dy1.t, 0, 1, 0}, none, &c->dw[i]);
    c->dwacc[i] = op_like(b->g, L[i].acc, c->dw[i].y.t);
    c->dwcs[i] = gr_cs_new(b->g, L[i].acc);
    op_acc(b->g, c->dwcs[i], c->dwacc[i], c->dw[i].y.t);
    op_act acc = c->dw[i].y;
    acc.t = c->dwacc[i];
    op_act accv = op_act_view(&acc, swap);
    op_act cg0 =
        op_act_make(c->cg.t, (uint32_t[]){L[i].cout, L[i].cin, 5, 5}, (uint32_t[]){1, 1, 1, 1});
    cg0.at = L[i].at;
    c->dwout[i] = op_act_copy(b->g, &accv, &cg0);
}

static void conv_fwd_tensors(mnet_b *b, conv_t *c)
{
    const int k1 = MNET_B1, k2 = MNET_B2;
    c->split = b->ipu[k1] != b->ipu[k2];
    if (!b->planned) /* planned, x1s (setup) */
        c->x1 = srow(b, k1, "x1", GR_F32, 784 + 8);
    if (!b->planned)
        c->c1g = srow(b, k1, "conv1.partials", GR_F32, b->c1f.out_bytes / 4);
    if (!b->planned) /* planned, made with conv1's plan where pool1 needs it (conv_op) */
        c->y1 = srow(b, k1, "conv1.y", GR_F32, 5760);
    c->a1 = srow(b, k1, "pool1.y", GR_F32, 1440 + 8);
    c->a1b = c->split ? srow(b, k2, "conv2.x", GR_F32, 1440 + 8) : c->a1;
    c->arg1 = srow(b, k1, "pool1.arg", GR_I32, 1440);
    if (!b->planned)
        c->c2g = srow(b, k2, "conv2.partials", GR_F32, b->c2f.out_bytes / 4);
    c->y2 = srow(b, k2, "conv2.y", GR_F32, 1280);
    c->x3 = srow(b, k2, "pool2.y", GR_F32, MNET_X3);
    c->arg2 = srow(b, k2, "pool2.arg", GR_I32, MNET_X3);
    c->cw = conv_split(b, "conv.params");
    if (b->planned) {
        conv_op(b, c, 0);
        conv_op(b, c, 1);
        return;
    }
    c->w1b = srow(b, k1, "conv1.w.blocks", GR_F32, b->c1f.wts_bytes / 4);
    c->w2b = srow(b, k2, "conv2.w.blocks", GR_F32, b->c2f.wts_bytes / 4);
    c->l_w1 = pack_list(b, k1, "conv1.w.list", &b->c1f.wpack);
    c->l_w2 = pack_list(b, k2, "conv2.w.list", &b->c2f.wpack);
    c->a1f = amp_tables(b, k1, "conv1.fwd", &b->c1f.amp);
    c->a2f = amp_tables(b, k2, "conv2.fwd", &b->c2f.amp);
}

static void conv_tensors(mnet_b *b, conv_t *c)
{
    const int k1 = MNET_B1, k2 = MNET_B2;
    conv_fwd_tensors(b, c);
    if (!b->train)
        return;
    if (!b->planned) {
        c->w2db = srow(b, k2, "conv2.w.dxblocks", GR_F32, b->c2d.wts_bytes / 4);
        c->l_w2d = pack_list(b, k2, "conv2.w.dxlist", &b->c2d.wpack);
        c->a2d = amp_tables(b, k2, "conv2.dx", &b->c2d.amp);
    }
    if (!b->planned) { /* planned, the weight gradients are dw_op's */
        c->a2w = amp_tables(b, k2, "conv2.dw", &b->c2w.amp);
        c->a1w = amp_tables(b, k1, "conv1.dw", &b->c1w.amp);
        group_pack(&c->p_dy2, 20, 64, 4);
        group_pack(&c->p_dy1, 10, 576, 6);
        c->l_dy2 = pack_list(b, k2, "conv2.dy.list", &c->p_dy2);
        c->l_dy1 = pack_list(b, k1, "conv1.dy.list", &c->p_dy1);
    }
    if (b->ipu[k2] == b->ipu[MNET_B3] && !b->planned) /* else summed on B3's IPU (fc_t.land) */
        c->dx3g = srow(b, k2, "layer3.dx.parts", GR_F32, MNET_FC * MNET_X3);
    c->da2 = srow(b, k2, "pool2.dy", GR_F32, MNET_X3);
    c->dy2 = srow(b, k2, "conv2.dy", GR_F32, 1280);
    if (!b->planned) {
        c->dyg2 = srow(b, k2, "conv2.dy.grouped", GR_F32, b->c2w.wts_bytes / 4);
        c->dw2t = srow(b, k2, "conv2.dw.partials", GR_F32, b->c2w.out_bytes / 4);
    }
    if (!b->planned)
        c->dx2g = srow(b, k2, "conv2.dx.partials", GR_F32, b->c2d.out_bytes / 4);
    c->da1 = srow(b, k2, "pool1.dy", GR_F32, 1440);
    c->da1a = c->split ? srow(b, k1, "pool1.dy.in", GR_F32, 1440) : c->da1;
    c->dy1 = srow(b, k1, "conv1.dy", GR_F32, 5760);
    if (!b->planned) {
        c->dyg1 = srow(b, k1, "conv1.dy.grouped", GR_F32, b->c1w.wts_bytes / 4);
        c->dw1t = srow(b, k1, "conv1.dw.partials", GR_F32, b->c1w.out_bytes / 4);
    }
    c->cg = conv_split(b, "conv.grads");
    if (b->planned) {
        dx_op(b, c);
        dw_op(b, c, 0);
        dw_op(b, c, 1);
    }
}

/* ---- the linear layers, the loss, the update tiles ---- */

typedef struct fc_t {
    /* layer3, one row of each per fc tile (row 16 c + j: group c, outputs 16 j..) */
    rt x3j, xb3, w3in, p3, y3T, da3Td, d3in, xb3w, g3p, dx3in, w3db, pdx, dx3p, db3;
    /* layer4 and the loss, one row of each per group on its t4 tile */
    rt a3, a3b, w4in, p4, y4T, dz, dy4T, sums, d4in, a3w, g4p, db4, w4Tin, dy4b, pda, da3T;
    rt l_logits, l_dy4;
    sl res, labels;
    /* K > 1: groups 1.. hold copies of the linear layers' parameters (w3c: a row per fc tile
     * of groups 1.., layer3's 16 rows of weights then their 16 biases; w4c: layer4's weights
     * then biases on their t4 tiles); at the update the groups' weight gradients are summed
     * in group order (gsum: layer3's, layer4's), the biases' on group 0 (b3all, b4all: the
     * K groups' gathered) */
    rt w3c, w4c, b3all, b4all;
    sl sall; /* K > 1: the groups' loss sums gathered on the last group's t4 tile */
    uint32_t nqB, nqBp, kcB, nxent;
    /* B2 and B3 on different IPUs (land = 1): pool2's output lands once on B3's IPU (x3in,
     * the samples spread over the fc tiles) and is copied on-chip to every fc tile; each
     * sample's dx of layer3 is summed there (dx3parts gathered, reduced into dx3red) and
     * crosses once, as the tutorial's 51,200 bytes each way */
    int land;
    gr_tensor x3in, dx3parts, dx3red;
} fc_t;

/* The fc tiles of all groups: [K x MNET_FC][per]. */
static rt frow(mnet_b *b, const char *name, gr_type ty, size_t per)
{
    return (rt){rows(b, name, ty, G(b, MNET_B3, b->fc0), b->K * MNET_FC, per), per};
}

/* Fc tile j of group c, as a global tile. */
static uint32_t fct(const mnet_b *b, uint32_t c, uint32_t j)
{
    return G(b, MNET_B3, b->fc0 + c * MNET_FC + j);
}

/* Group c's layer4 and loss tile. */
static uint32_t t4t(const mnet_b *b, uint32_t c)
{
    return G(b, MNET_B4, b->t4 + c);
}

/* [K][per], group c's row on its t4 tile. */
static rt t4(mnet_b *b, const char *name, gr_type ty, size_t per)
{
    return (rt){rows(b, name, ty, t4t(b, 0), b->K, per), per};
}

/* The per-group tensors of groups 1.. (K > 1): [K - 1][MNET_FC][per] on their fc tiles, or
 * [K - 1][per] on their t4 tiles. */
static rt frow_more(mnet_b *b, const char *name, size_t per)
{
    return (rt){rows(b, name, GR_F32, fct(b, 1, 0), (b->K - 1) * MNET_FC, per), per};
}

static rt t4_more(mnet_b *b, const char *name, size_t per)
{
    return (rt){rows(b, name, GR_F32, t4t(b, 1), b->K - 1, per), per};
}

/* Group c's elements of a per-sample tensor of `per` elements a sample (labels: 1; the
 * outfeed buffer: 10, its last two words, the loss, with the last group). */
static size_t grp_at(const mnet_b *b, uint32_t c, size_t per)
{
    return (size_t)c * b->Bc * per;
}

static size_t grp_end(const mnet_b *b, uint32_t c, size_t per, size_t total)
{
    return c + 1 == b->K ? total : grp_at(b, c + 1, per);
}

/* Elements [base, base + total) of t, `per` a sample, each group's on its t4 tile of `ipu`. */
static void map_by_group(mnet_b *b, gr_tensor t, uint32_t ipu, size_t base, size_t per,
                         size_t total)
{
    for (uint32_t c = 0; c < b->K; c++)
        gr_map_region(b->g, t, ipu, b->t4 + c, base + grp_at(b, c, per),
                      base + grp_end(b, c, per, total));
}

/* A tensor of `total` elements so mapped. */
static gr_tensor by_group(mnet_b *b, const char *name, uint32_t ipu, size_t per, size_t total)
{
    gr_tensor t = gr_tensor_new(b->g, name, GR_F32, 1, (uint32_t[]){(uint32_t)total});
    map_by_group(b, t, ipu, 0, per, total);
    return t;
}

/* [B][k][MNET_X3] with each sample's rows on one fc tile of its group (contiguous runs). */
static gr_tensor spread(mnet_b *b, const char *name, uint32_t k)
{
    uint32_t shape[3] = {b->B, k, MNET_X3};
    gr_tensor t = gr_tensor_new(b->g, name, GR_F32, 3, shape);
    size_t per = (size_t)k * MNET_X3;
    for (uint32_t j = 0; j < b->K * MNET_FC; j++) {
        size_t s0 = op_split(b->B, j, b->K * MNET_FC, 1),
               s1 = op_split(b->B, j + 1, b->K * MNET_FC, 1);
        if (s1 > s0)
            gr_map_region(b->g, t, b->ipu[MNET_B3], b->fc0 + j, s0 * per, s1 * per);
    }
    return t;
}

/* The fc tile of sample s in spread tensors. */
static uint32_t spread_tile(const mnet_b *b, uint32_t s)
{
    uint32_t j = 0;
    while (op_split(b->B, j + 1, b->K * MNET_FC, 1) <= s)
        j++;
    return G(b, MNET_B3, b->fc0 + j);
}

/* Transposes as conv_pack blocks of one row: logits z[Bc][10] from y4T[10][Bcp], and dy4T
 * [10][Bcp] (zero past Bc) from dz[Bc][10]; the same tables on every group's tile. */
static void fc_lists(mnet_b *b, fc_t *f)
{
    cplan_pack p;
    cplan_pack_init(&p, 1, 10, 4, b->Bcp * 4);
    for (uint32_t s = 0; s < b->Bc; s++)
        cplan_pack_block(&p, s * 4, 1, 10);
    f->l_logits = t4(b, "logits.list", GR_I32, 3 * (size_t)b->Bc);
    mnet_init_words(b, f->l_logits.t, 0, p.list, 3 * (size_t)b->Bc, b->K);
    cplan_pack_free(&p);
    if (!b->train)
        return;
    cplan_pack_init(&p, 1, b->Bcp, 4, 40);
    for (uint32_t c = 0; c < 10; c++)
        cplan_pack_block(&p, c * 4, 1, b->Bc);
    f->l_dy4 = t4(b, "layer4.dy.list", GR_I32, 30);
    mnet_init_words(b, f->l_dy4.t, 0, p.list, 30, b->K);
    cplan_pack_free(&p);
}

/* Mapping planned: the loss's tensors on t4 (one group), the biases' gradients (layer3's
 * 16 a fc tile, layer4's on t4), pool2's output landed a sample a tile on B3's IPU. */
static void fc_planned(mnet_b *b, fc_t *f)
{
    if (f->land) /* a sample a tile, as on B2's IPU: the matrix products' senders */
        f->x3in = rows(b, "layer3.x.in", GR_F32, G(b, MNET_B3, 0), b->B, MNET_X3);
    f->res = S(b->res, 0, mnet_res_words(b));
    if (!b->train)
        return;
    cplan_pack p;
    cplan_pack_init(&p, 1, b->Bcp, 4, 40);
    for (uint32_t c = 0; c < 10; c++)
        cplan_pack_block(&p, c * 4, 1, b->Bc);
    f->l_dy4 = t4(b, "layer4.dy.list", GR_I32, 30);
    mnet_init_words(b, f->l_dy4.t, 0, p.list, 30, 1);
    cplan_pack_free(&p);
    f->dz = t4(b, "loss.dz", GR_F32, 10 * (size_t)b->B);
    f->dy4T = t4(b, "layer4.dyT", GR_F32, 10 * (size_t)b->Bcp);
    f->sums = t4(b, "loss.sums", GR_F32, 2 * NW);
    f->db3 = frow(b, "layer3.db.acc", GR_F32, 16);
    f->db4 = t4(b, "layer4.db.acc", GR_F32, 10);
}

static void fc_tensors(mnet_b *b, fc_t *f)
{
    uint32_t B = b->Bc, Bp = b->Bcp;
    f->nqB = ceil16(B);
    f->nqBp = ceil16(Bp);
    f->kcB = ceil8(Bp);
    f->nxent = B < NW ? B : NW;
    f->land = b->ipu[MNET_B2] != b->ipu[MNET_B3];
    if (b->planned) { /* the rest is the matrix products' own (pfc_build) */
        fc_planned(b, f);
        return;
    }
    f->x3j = frow(b, "layer3.x", GR_F32, (size_t)B * MNET_X3);
    if (f->land) {
        f->x3in = spread(b, "layer3.x.in", 1);
        if (b->train) {
            f->dx3parts = spread(b, "layer3.dx.gathered", MNET_FC);
            f->dx3red = spread(b, "layer3.dx.sum", 1);
        }
    }
    f->xb3 = frow(b, "layer3.x.blocks", GR_F32, (size_t)f->nqB * 40 * 128);
    f->w3in = frow(b, "layer3.w.chunks", GR_F32, 40 * 16 * 8);
    f->p3 = frow(b, "layer3.partials", GR_F32, (size_t)f->nqB * 16 * 16);
    f->y3T = frow(b, "layer3.yT", GR_F32, 16 * (size_t)Bp);
    f->a3 = t4(b, "layer4.x", GR_F32, (size_t)MNET_H3 * Bp);
    f->a3b = t4(b, "layer4.x.blocks", GR_F32, (size_t)f->nqBp * 32 * 128);
    f->w4in = t4(b, "layer4.w.chunks", GR_F32, 32 * 10 * 8);
    f->p4 = t4(b, "layer4.partials", GR_F32, (size_t)f->nqBp * 10 * 16);
    f->y4T = t4(b, "layer4.yT", GR_F32, 10 * (size_t)Bp);
    f->res = S(b->res, 0, mnet_res_words(b));
    fc_lists(b, f);
    if (b->K > 1) {
        f->w3c = frow_more(b, "layer3.params.copy", 16 * MNET_X3 + 16);
        f->w4c = t4_more(b, "layer4.params.copy", 10 * MNET_H3 + 10);
    }
    if (!b->train)
        return;
    if (b->K > 1) {
        f->b3all =
            (rt){rows(b, "layer3.db.groups", GR_F32, fct(b, 0, 0), MNET_FC, 16 * b->K), 16 * b->K};
        f->b4all = (rt){rows(b, "layer4.db.groups", GR_F32, t4t(b, 0), 1, 10 * b->K), 10 * b->K};
        f->sall = S(on(b, "loss.sums.groups", GR_F32, t4t(b, b->K - 1), 2 * NW * b->K), 0,
                    2 * (size_t)f->nxent * b->K);
    }
    f->da3Td = frow(b, "layer3.dyT", GR_F32, 16 * (size_t)Bp);
    f->d3in = frow(b, "layer3.dy.chunks", GR_F32, (size_t)f->kcB * 16 * 8);
    f->xb3w = frow(b, "layer3.x.wblocks", GR_F32, 20 * (size_t)f->kcB * 128);
    f->g3p = frow(b, "layer3.dw.partials", GR_F32, 20 * 16 * 16);
    f->dx3in = frow(b, "layer3.dyT.chunks", GR_F32, 2 * (size_t)Bp * 8);
    f->w3db = frow(b, "layer3.w.blocks", GR_F32, 20 * 2 * 128);
    f->pdx = frow(b, "layer3.dx.partials", GR_F32, 20 * (size_t)Bp * 16);
    f->dx3p = frow(b, "layer3.dx", GR_F32, (size_t)B * MNET_X3);
    f->db3 = frow(b, "layer3.db.acc", GR_F32, 16);
    f->dz = t4(b, "loss.dz", GR_F32, 10 * (size_t)B);
    f->dy4T = t4(b, "layer4.dyT", GR_F32, 10 * (size_t)Bp);
    f->sums = t4(b, "loss.sums", GR_F32, 2 * NW);
    f->d4in = t4(b, "layer4.dy.chunks", GR_F32, (size_t)f->kcB * 10 * 8);
    f->a3w = t4(b, "layer4.x.wblocks", GR_F32, 16 * (size_t)f->kcB * 128);
    f->g4p = t4(b, "layer4.dw.partials", GR_F32, 16 * 10 * 16);
    f->db4 = t4(b, "layer4.db.acc", GR_F32, 10);
    f->w4Tin = t4(b, "layer4.wT.chunks", GR_F32, 2 * MNET_H3 * 8);
    f->dy4b = t4(b, "layer4.dy.blocks", GR_F32, (size_t)f->nqBp * 2 * 128);
    f->pda = t4(b, "layer4.dx.partials", GR_F32, (size_t)f->nqBp * MNET_H3 * 16);
    f->da3T = t4(b, "layer4.dxT", GR_F32, (size_t)MNET_H3 * Bp);
}

/* The weights spread over their block's IPU when planned (mnet_b.wper): layer3's, layer4's. */
static const struct {
    int blk;
    size_t at, n;
} SPREAD[2] = {{MNET_B3, P_W3, MNET_X3 *(size_t)MNET_H3}, {MNET_B4, P_W4, 10 * (size_t)MNET_H3}};

/* Whether parameter p is one of SPREAD's (planned). */
static int spread_param(const mnet_b *b, size_t p)
{
    for (int i = 0; i < 2 && b->planned; i++)
        if (p >= SPREAD[i].at && p < SPREAD[i].at + SPREAD[i].n)
            return 1;
    return 0;
}

/* The parameters' home ranges: the convolutions' on the update tiles, layer3's rows and bias
 * on the fc tiles, layer4's on t4; planned, the two weights spread (SPREAD, b->wper a tile). */
static void add_upd(mnet_b *b, uint32_t gt, size_t begin, size_t end)
{
    b->upd = xgrow(b->upd, &b->cupd, b->nupd + 1, sizeof *b->upd);
    b->upd[b->nupd++] = (mnet_upd){gt, begin, end};
}

/* The convolutions' update tiles. */
static uint32_t cu_count(const mnet_b *b)
{
    return b->ncu[0] + b->ncu[1];
}

/* Update tile u of the convolutions: conv1's on B1's IPU, conv2's on B2's. */
static uint32_t cu_tile(const mnet_b *b, uint32_t u)
{
    return G(b, u >= b->ncu[0] ? MNET_B2 : MNET_B1, b->cu0 + u);
}

/* Its range of the flat vector from here to cu_begin(u + 1). */
static size_t cu_begin(const mnet_b *b, uint32_t u)
{
    if (u < b->ncu[0])
        return (size_t)u * b->cuper[0];
    size_t at = MNET_CONV1P + (size_t)(u - b->ncu[0]) * b->cuper[1];
    return at < MNET_CONVP ? at : MNET_CONVP;
}

/* The groups of the linear layers: the fewest that divide the micro-batch into groups of at
 * most MNET_FC_BATCH samples. */
static uint32_t fc_groups(uint32_t B)
{
    uint32_t k = ceil_div_u32(B, MNET_FC_BATCH);
    while (B % k)
        k++;
    return k;
}

/* As many update tiles as make each take the sample tiles' parts of at most
 * MNET_FC_BATCH x (its share with one group of the linear layers (fc_groups): conv1's 260 on one tile, conv2's 5,020 on
 * MNET_CU2 tiles of 502) floats, in whole pairs (the reduction and AdamW read pairs). */
static void cu_plan(mnet_b *b)
{
    static const uint32_t nparams[2] = {MNET_CONV1P, MNET_CONVP - MNET_CONV1P},
                          tiles[2] = {1, MNET_CU2};
    uint32_t groups = fc_groups(b->B); /* planned too, where the linear layers have one */
    for (int i = 0; i < 2; i++) {
        b->cuper[i] = 2 * ceil_div_u32(nparams[i], 2 * tiles[i] * groups); /* whole pairs */
        b->ncu[i] = ceil_div_u32(nparams[i], b->cuper[i]);
    }
}

static void param_homes(mnet_b *b)
{
    for (uint32_t u = 0; u < cu_count(b); u++)
        add_upd(b, cu_tile(b, u), cu_begin(b, u), cu_begin(b, u + 1));
    for (uint32_t j = 0; j < MNET_FC; j++) {
        uint32_t t = fct(b, 0, j);
        if (!b->planned)
            add_upd(b, t, P_W3 + (size_t)j * 16 * MNET_X3, P_W3 + (size_t)(j + 1) * 16 * MNET_X3);
        add_upd(b, t, P_B3 + 16 * (size_t)j, P_B3 + 16 * (size_t)(j + 1));
    }
    if (!b->planned)
        add_upd(b, t4t(b, 0), P_W4, P_B4);
    add_upd(b, t4t(b, 0), P_B4, P_END);
    for (int k = 0; k < 2 && b->planned; k++)
        for (uint32_t i = 0; i < b->wtiles[k]; i++)
            add_upd(b, G(b, SPREAD[k].blk, i), SPREAD[k].at + (size_t)i * b->wper[k],
                    SPREAD[k].at + min_u64((size_t)(i + 1) * b->wper[k], SPREAD[k].n));
}

/* A flat [MREF_NPARAMS] tensor mapped on the homes; keep: always live. */
static gr_tensor flat(mnet_b *b, const char *name, int keep)
{
    uint32_t shape[1] = {MREF_NPARAMS};
    gr_tensor t = gr_tensor_new(b->g, name, GR_F32, 1, shape);
    for (size_t k = 0; k < b->nupd; k++)
        gr_map_region(b->g, t, b->upd[k].gt / b->T, b->upd[k].gt % b->T, b->upd[k].begin,
                      b->upd[k].end);
    if (keep)
        gr_keep(b->g, t);
    return t;
}

/* ---- programs ---- */

typedef struct seq {
    gr_prog *p;
    size_t n, cap;
} seq;

static void add(mnet_b *b, seq *q, gr_prog p)
{
    (void)b;
    q->p = xgrow(q->p, &q->cap, q->n + 1, sizeof *q->p);
    q->p[q->n++] = p;
}

static void exec(mnet_b *b, seq *q, gr_cs cs)
{
    add(b, q, gr_execute(b->g, cs));
}

/* The sequence as one program (the graph copies it); q is emptied. */
static gr_prog seq_of(mnet_b *b, seq *q)
{
    gr_prog p = gr_seq(b->g, q->p, q->n);
    free(q->p);
    *q = (seq){NULL, 0, 0};
    return p;
}

/* The transfers of one crossing between blocks. */
typedef struct xing {
    gr_xfer *x;
    size_t n, cap;
} xing;

/* Mapping planned: the linear layers as matrix products planned over the IPU of their block
 * (ops.h), in the order of the plans (MNET_PL_L3 ..). Their activations are held transposed,
 * [features][batch], as the matrix products give them. */
typedef struct pfc_t {
    op_conv op[MNET_PL_N]; /* the built plans (only the linear layers' slots are used) */
    op_act x3;             /* layer3's input [B][320][1][1]: pool2's output, or x3in landed */
    op_act x3t;            /* it transposed, [1][320][1][B] in 16 blocks of 20 features on the
                            * fc tiles: layer3's forward input */
    gr_prog x3cols;        /* each fc tile's 20 features of every sample into x3c */
    gr_cs x3tr;            /* x3c [B][20] -> x3t's block [20][B] on each fc tile (conv_pack) */
    op_act a3m;            /* layer4's input rows [256][B] on 16 tiles: layer4.dw's weights */
    op_act dzr;            /* dz [B][10] spread over 16 tiles: layer4.dw's input */
    gr_prog dwin;          /* layer4's input into a3m and dz into dzr, one Copy */
    op_act a3;             /* layer4's input y3^T: layer3's output, or its landing on B4's IPU */
    op_act y3s;            /* layer3's output as sent to B4's IPU (B3 and B4 on two IPUs) */
    gr_prog send;          /* layer3's output into y3s, or GR_NONE */
    op_act dxs, dyl;       /* two IPUs: layer4's dx as sent, and as landed on B3's IPU */
    gr_prog dxsend;        /* layer4's dx into dxs, or GR_NONE */
    gr_tensor dx3s;        /* B2 and B3 on two IPUs: layer3's dx as sent, a sample a tile */
    gr_prog logits;        /* layer4's output into the outfeed buffer's logits */
    gr_tensor dy3;         /* layer3's output gradient, mapped as its output */
    op_act dy3m;           /* it row-major [256][B] on the fc tiles: layer3.dw's weights */
    gr_tensor db3mb;       /* layer3's bias gradient of one micro-batch, mapped as db3 */
    gr_prog dy3in, dy3rows, dx3out; /* one IPU: da3 into dy3; dy3 into dy3m; dx3 into da2 */
    gr_cs relu, relu_grad, db3, db3acc, db4;
} pfc_t;

typedef struct net {
    mnet_b *b;
    conv_t c;
    fc_t f;
    pfc_t p;
    sl *zl; /* per global tile: 3 zero words (a conv_pack list of empty blocks), or none yet */
    gr_prog labels; /* the copy of the labels to the loss's IPU, or GR_NONE */
    xing fx[MNET_BLOCKS - 1], bx[MNET_BLOCKS - 1]; /* block k to k + 1, and back */
    gr_prog in1;                  /* block B1's input (the infeed's images into x1) */
    gr_prog bc3;                  /* pool2's output to every fc tile (bcast3) */
    gr_prog fxp[MNET_BLOCKS - 1]; /* the forward crossings as Copies (or GR_NONE) */
    gr_tensor lab;                /* the labels on the loss's tile when not in the infeed's */
    sl acc;                       /* sum: the outfeed's sum over a call (sum_acc) */
    gr_cs acc_zero, acc_add;      /* its zeroing; acc += res */
} net;

static void xadd(xing *x, gr_xfer t)
{
    x->x = xgrow(x->x, &x->cap, x->n + 1, sizeof *x->x);
    x->x[x->n++] = t;
}

/* Every element of src to dst's (op_act_xfers), into a crossing. */
static void xadd_act(xing *x, const op_act *src, const op_act *dst)
{
    gr_xfer *t;
    size_t m = op_act_xfers(src, dst, &t);
    for (size_t i = 0; i < m; i++)
        xadd(x, t[i]);
    free(t);
}

/* A crossing as one Copy, or GR_NONE when it has nothing to move. */
static gr_prog xprog(mnet_b *b, const xing *x)
{
    return x->n ? gr_copy_many(b->g, x->x, x->n) : GR_NONE;
}

/* Tile gt's zero list, made the first time it is asked for. */
static sl zl_of(net *n, uint32_t gt)
{
    if (!n->zl[gt].n) {
        gr_tensor t = on(n->b, "zero.list", GR_I32, gt, 4);
        gr_keep(n->b->g, t);
        n->zl[gt] = S(t, 0, 4);
    }
    return n->zl[gt];
}

static gr_cs cs(net *n, const char *name)
{
    return gr_cs_new(n->b->g, name);
}

/* A micro-batch into xin (and into x1, the input compute set), then with I/O tiles the next
 * one onto them: without I/O tiles, its stream copy; with them, the hand-over of the one that
 * landed (a copy over the whole IPU), then after the input the stream copy of the next, which
 * overlaps the next superstep, conv1, the longest of the first block (gr_io_tiles). */
static void infeed(net *n, seq *q)
{
    mnet_b *b = n->b;
    add(b, q, b->xio == GR_NONE ? gr_stream_in(b->g, b->xin) : gr_copy(b->g, b->xio, b->xin));
    add(b, q, n->in1);
    if (b->xio != GR_NONE)
        add(b, q, gr_stream_in(b->g, b->xio));
}

/* The infeed's image (784 fp32, 196 words of bytes or 392 of halves) into x (784 fp32 and 8
 * zero floats after them for the AMP's reads): a copy (reduce_add x 1), norm_u8 or
 * f16_to_f32, in 6 ranges of whole words (4 pixels: the halves' ranges start 8-byte aligned,
 * as f16_to_f32's ld64pi needs). */
static void v_input(mnet_b *b, gr_cs cs, uint32_t gt, sl x, sl in, uint32_t pixels)
{
    if (b->dtype == MNET_FP32) {
        v_reduce(b, cs, gt, x, in, pixels, 1, pixels, 1.0f);
        return;
    }
    for (unsigned v = 0; v < NW; v++) {
        size_t a = op_split(pixels, v, NW, 4), z = op_split(pixels, v + 1, NW, 4);
        if (z == a)
            continue;
        if (b->dtype == MNET_FP16) {
            gr_field f[3] = {R(in, a / 2, (z - a) / 2), R(x, a, z - a), U((uint32_t)(z - a))};
            vtx(b, cs, "f16_to_f32", 0, gt, f, 3);
            continue;
        }
        gr_field f[6] = {R(in, a / 4, (z - a) / 4), R(x, a, z - a),
                         U((uint32_t)(z - a)),      gr_f32(255.0f),
                         gr_f32(MDATA_MEAN),        gr_f32(MDATA_STD)};
        vtx(b, cs, "norm_u8", 0, gt, f, 6);
    }
}

/* Infeed words [*a, *z) of row part p of sample s, the rows x1s's block (s, 0, p, 0) holds
 * (mapping planned: each on that block's tile). */
static void xin_rows(const mnet_b *b, const op_act *x1s, uint32_t s, uint32_t p, size_t *a,
                     size_t *z)
{
    size_t row = b->px / 28; /* the infeed's words a row of 28 pixels */
    *a = (size_t)s * b->px + op_lo(x1s, OP_H, p) * row;
    *z = (size_t)s * b->px + op_lo(x1s, OP_H, p + 1) * row;
}

/* Block B1's input: the infeed's images into conv1's input where they landed: x1 on each
 * sample tile, or (planned) x1s's row blocks. */
static gr_prog fwd_input(net *n)
{
    mnet_b *b = n->b;
    gr_cs k = cs(n, "input");
    for (uint32_t s = 0; s < b->B && !b->planned; s++)
        v_input(b, k, G(b, MNET_B1, s), at(n->c.x1, s), S(b->xin, (size_t)s * b->px, b->px),
                MDATA_PIXELS);
    for (uint32_t s = 0; s < b->B && b->planned; s++)
        for (uint32_t p = 0; p < b->xrows; p++) {
            const op_act *x = &n->c.x1s;
            uint32_t idx[OP_DIMS] = {s, 0, p, 0};
            size_t a, z, at = op_block_at(x, idx), px = op_block_elems(x, idx);
            xin_rows(b, x, s, p, &a, &z);
            v_input(b, k, G(b, MNET_B1, s * b->xrows + p), S(x->t, at, px), S(b->xin, a, z - a),
                    (uint32_t)px);
        }
    return gr_execute(b->g, k);
}

/* Convolution blk's forward on the sample tiles, each its sample's (mapping per sample). */
static void conv_per_sample(net *n, int blk, seq *q)
{
    mnet_b *b = n->b;
    conv_t *c = &n->c;
    static const char *const nm[2][3] = {{"conv1", "conv1.ungroup", "conv1.bias"},
                                         {"conv2", "conv2.ungroup", "conv2.bias"}};
    gr_cs k[3];
    for (int i = 0; i < 3; i++)
        k[i] = cs(n, nm[blk][i]);
    for (uint32_t s = 0; s < b->B; s++) {
        uint32_t gt = G(b, blk, s);
        size_t bias = (size_t)s * MNET_CONVP + (blk ? P_B2 : P_B1);
        if (blk == MNET_B1) {
            v_amp(b, k[0], gt, s, &c->a1f, at(c->x1, s), at(c->c1g, s), at(c->w1b, s));
            v_ungroup(b, k[1], gt, at(c->y1, s), at(c->c1g, s), 10, 576, 0);
            v_bias(b, k[2], gt, at(c->y1, s), S(c->cw.t, bias, 10), 10, 576, 0);
        } else {
            v_amp(b, k[0], gt, s, &c->a2f, at(c->a1b, s), at(c->c2g, s), at(c->w2b, s));
            v_ungroup(b, k[1], gt, at(c->y2, s), at(c->c2g, s), 20, 64, 0);
            v_bias(b, k[2], gt, at(c->y2, s), S(c->cw.t, bias, 20), 20, 64, 0);
        }
    }
    for (int i = 0; i < 3; i++)
        exec(b, q, k[i]);
}

/* Block B1 (conv1, pool1) or B2 (conv2, pool2) forward: the convolution (per sample, or
 * planned over the block's IPU with its output copied to the sample tiles), then pooling on
 * the sample tiles. */
static gr_prog fwd_conv(net *n, int blk)
{
    mnet_b *b = n->b;
    conv_t *c = &n->c;
    seq q = {0};
    if (b->planned && blk == MNET_B1 && c->pooled) { /* pool1 in place, made with conv1's plan */
        add(b, &q, c->op[blk].run);
        exec(b, &q, c->pool1cs);
        add(b, &q, pool1_copy(b, c));
        return seq_of(b, &q);
    }
    if (b->planned) {
        add(b, &q, c->op[blk].run);
        add(b, &q, c->ycopy[blk]);
    } else {
        conv_per_sample(n, blk, &q);
    }
    gr_cs pool = cs(n, blk == MNET_B1 ? "pool1" : "pool2");
    for (uint32_t s = 0; s < b->B; s++) {
        uint32_t gt = G(b, blk, s);
        if (blk == MNET_B1)
            v_pool_fwd(b, pool, gt, at(c->y1, s), at(c->a1, s), at(c->arg1, s), 120, 24);
        else
            v_pool_fwd(b, pool, gt, at(c->y2, s), at(c->x3, s), at(c->arg2, s), 80, 8);
    }
    exec(b, &q, pool);
    return seq_of(b, &q);
}

/* Group c's layer3 parameters on its fc tile j (bias = 0: the 16 rows of weights; 1: their
 * biases), or layer4's on its t4 tile: group 0 reads the parameters, the others their copy. */
static sl w3_of(net *n, uint32_t c, uint32_t j, int bias)
{
    size_t w = 16 * MNET_X3;
    if (!c)
        return bias ? S(n->b->params, P_B3 + 16 * (size_t)j, 16)
                    : S(n->b->params, P_W3 + (size_t)j * w, w);
    sl r = at(n->f.w3c, (c - 1) * MNET_FC + j);
    return bias ? S(r.t, r.at + w, 16) : S(r.t, r.at, w);
}

static sl w4_of(net *n, uint32_t c, int bias)
{
    size_t w = 10 * MNET_H3;
    if (!c)
        return bias ? S(n->b->params, P_B4, 10) : S(n->b->params, P_W4, w);
    sl r = at(n->f.w4c, c - 1);
    return bias ? S(r.t, r.at + w, 10) : S(r.t, r.at, w);
}

/* ---- the linear layers planned (mapping planned) ---- */

/* Plan k of the linear layers built from tile lin_first of its block's IPU. */
static void pfc_op(net *n, int k, const op_act *x, op_ref w, op_ref bias)
{
    mnet_b *b = n->b;
    const mnet_plan *pl = &b->pipe.plan[k];
    op_conv_build(b->g, pl->name, pl->ipu, lin_first(b), &pl->shape, &pl->part, x, w, bias,
                  &n->p.op[k]);
}

/* A matrix [rows][cols] held row-major in t from element at (its blocks the whole). */
static op_act matrix(gr_tensor t, size_t at, uint32_t rows, uint32_t cols)
{
    op_act a = op_act_make(t, (uint32_t[]){rows, cols, 1, 1}, (uint32_t[]){1, 1, 1, 1});
    a.at = at;
    return a;
}

/* layer3's input transposed without a word-by-word gather: a Copy brings fc tile j the
 * features 20 j.. of every sample ([B][20], a stretch of 20 a sample), and conv_pack
 * transposes that on the tile into x3t's block j ([20][B]; blocks of 4 rows over the
 * workers), as Poplar regroups an operand on its tiles before a matrix product. */
static void x3_transpose(net *n)
{
    mnet_b *b = n->b;
    pfc_t *p = &n->p;
    enum { F = MNET_X3 / MNET_FC, R4 = 4 };
    uint32_t i3 = b->ipu[MNET_B3];
    uint32_t cd[OP_DIMS] = {MNET_FC, b->B, F, 1}, one[OP_DIMS] = {MNET_FC, 1, 1, 1};
    op_act cols = op_act_new(b->g, "layer3.x.cols", i3, b->fc0, cd, one);
    /* [B][320] seen as [16][B][20]: feature f of sample m is (f / 20, m, f % 20) */
    op_act src = op_act_make(p->x3.t, (uint32_t[]){b->B, MNET_FC, F, 1}, one);
    src.part[OP_B] = 1;
    op_act srcv = op_act_view(&src, (uint8_t[]){1, 0, 2, 3});
    p->x3cols = op_act_copy(b->g, &srcv, &cols);
    uint32_t td[OP_DIMS] = {1, MNET_X3, 1, b->B}, tp[OP_DIMS] = {1, MNET_FC, 1, 1};
    p->x3t = op_act_new(b->g, "layer3.xT", i3, b->fc0, td, tp);
    cplan_pack pk;
    cplan_pack_init(&pk, R4, b->B, 4, 4 * F);
    for (uint32_t r = 0; r < F; r += R4)
        cplan_pack_block(&pk, 4 * r, R4, b->B);
    gr_tensor list =
        rows(b, "layer3.xT.list", GR_I32, G(b, MNET_B3, b->fc0), MNET_FC, 3 * (size_t)pk.nblocks);
    mnet_init_words(b, list, 0, pk.list, 3 * (size_t)pk.nblocks, MNET_FC);
    p->x3tr = cs(n, "layer3.x.transpose");
    size_t per = (size_t)F * b->B;
    for (uint32_t j = 0; j < MNET_FC; j++)
        v_pack(b, p->x3tr, G(b, MNET_B3, b->fc0 + j), &pk,
               S(list, 3 * (size_t)pk.nblocks * j, 3 * (size_t)pk.nblocks),
               S(p->x3t.t, j * per, per), S(cols.t, j * per, per));
    cplan_pack_free(&pk);
}

/* [1][256][1][B] in 16 blocks of 16 features on the fc tiles of block blk's IPU: how the
 * linear layers' activations cross between IPUs, 16 stretches each way (a plan's output is
 * cut in many small chunks, each a transfer, and a global Copy of many transfers takes many
 * rounds). */
static op_act compact(net *n, const char *name, int blk)
{
    mnet_b *b = n->b;
    uint32_t d[OP_DIMS] = {1, MNET_H3, 1, b->B}, part[OP_DIMS] = {1, MNET_FC, 1, 1};
    return op_act_new(b->g, name, b->ipu[blk], b->fc0, d, part);
}

/* The forward's operations: layer3 (ReLU in place), its output sent on (B3 and B4 on two
 * IPUs: copied on the chip into y3s, which the crossing reads, so that a recomputed forward
 * does not overwrite what is sent), layer4 and its logits into the outfeed buffer ([B][10]
 * of res). */
static void pfc_fwd_build(net *n)
{
    mnet_b *b = n->b;
    pfc_t *p = &n->p;
    graph *g = b->g;
    p->x3 = matrix(n->f.land ? n->f.x3in : n->c.x3.t, 0, b->B, MNET_X3);
    x3_transpose(n);
    pfc_op(n, MNET_PL_L3, &p->x3t, (op_ref){b->params, P_W3, 1, 0},
           (op_ref){b->params, P_B3, 1, 0});
    const op_conv *l3 = &p->op[MNET_PL_L3];
    p->relu = cs(n, "layer3.relu");
    op_relu(g, p->relu, l3->y.t, GR_NONE);
    p->send = GR_NONE;
    p->a3 = l3->y;
    if (b->ipu[MNET_B3] != b->ipu[MNET_B4]) {
        p->y3s = compact(n, "layer3.y.sent", MNET_B3);
        p->send = op_act_copy(g, &l3->y, &p->y3s);
        p->a3 = compact(n, "layer4.x", MNET_B4);
    }
    pfc_op(n, MNET_PL_L4, &p->a3, (op_ref){b->params, P_W4, 1, 0}, (op_ref){b->params, P_B4, 1, 0});
    op_act z = op_mm_out(&p->op[MNET_PL_L4].y, OP_MM_FWD), res = matrix(b->res, 0, b->B, 10);
    p->logits = op_act_copy(g, &z, &res);
}

/* The backward's: layer4's input and weight gradients (dz from the loss, [B][10] on t4),
 * layer4's bias gradient (bias_grad on the loss's dz^T), layer3's output gradient (layer4's
 * dx, landed or copied into dy3, mapped as layer3's output, then ReLU's gradient), its
 * rows [256][B] on the fc tiles (dy3m: layer3.dw reads it as its weights, and its bias
 * gradient sums its rows), layer3's input gradient into pool2's gradient da2 and its weight
 * gradient. */
static void pfc_bwd_build(net *n)
{
    mnet_b *b = n->b;
    pfc_t *p = &n->p;
    fc_t *f = &n->f;
    graph *g = b->g;
    op_ref none = {GR_NONE, 0, 0, 0};
    /* dz^T [10][B]: the loss's dy4T, rows Bcp apart */
    op_act dzt = op_act_make(f->dy4T.t, (uint32_t[]){1, 10, 1, b->B}, (uint32_t[]){1, 10, 1, 1});
    dzt.pad = b->Bcp - b->B;
    pfc_op(n, MNET_PL_L4DX, &dzt, (op_ref){b->params, P_W4, 1, 0}, none);
    /* dW4^T = a3 dz: the input dz [B][10] by rows, the weights layer4's input as rows */
    uint32_t i4 = b->ipu[MNET_B4], ad[OP_DIMS] = {1, MNET_H3, 1, b->B},
             ap[OP_DIMS] = {1, MNET_FC, 1, 1}, zd[OP_DIMS] = {b->B, 10, 1, 1},
             zp[OP_DIMS] = {MNET_FC, 1, 1, 1};
    p->a3m = op_act_new(g, "layer4.x.rows", i4, b->fc0, ad, ap); /* the fc tiles of B4's IPU */
    p->dzr = op_act_new(g, "loss.dz.rows", i4, b->fc0, zd, zp);
    op_act dz = matrix(f->dz.t, 0, b->B, 10);
    xing in = {0};
    xadd_act(&in, &p->a3, &p->a3m);
    xadd_act(&in, &dz, &p->dzr);
    p->dwin = xprog(b, &in);
    free(in.x);
    op_act x = op_mm_in(&p->dzr, OP_MM_DW);
    pfc_op(n, MNET_PL_L4DW, &x, (op_ref){p->a3m.t, 0, 1, 0}, none);
    p->db4 = cs(n, "layer4.bias.grad");
    v_bias(b, p->db4, t4t(b, 0), at(f->dy4T, 0), at(f->db4, 0), 10, b->Bcp, 1);
    const op_conv *l3 = &p->op[MNET_PL_L3];
    p->dy3 = op_like(g, "layer3.dy", l3->y.t);
    op_act dy3 = l3->y;
    dy3.t = p->dy3;
    p->dxsend = GR_NONE;
    if (b->ipu[MNET_B3] == b->ipu[MNET_B4]) {
        p->dy3in = op_act_copy(g, &p->op[MNET_PL_L4DX].y, &dy3);
    } else { /* compact on B4's IPU, across, and into dy3 on B3's */
        p->dxs = compact(n, "layer4.dx.sent", MNET_B4);
        p->dyl = compact(n, "layer3.dy.in", MNET_B3);
        p->dxsend = op_act_copy(g, &p->op[MNET_PL_L4DX].y, &p->dxs);
        p->dy3in = op_act_copy(g, &p->dyl, &dy3);
    }
    p->relu_grad = cs(n, "layer3.relu.grad");
    op_relu(g, p->relu_grad, l3->y.t, p->dy3);
    uint32_t d[OP_DIMS] = {1, MNET_H3, 1, b->B}, part[OP_DIMS] = {1, MNET_FC, 1, 1};
    p->dy3m = op_act_new(g, "layer3.dyT.rows", b->ipu[MNET_B3], b->fc0, d, part);
    p->dy3rows = op_act_copy(g, &dy3, &p->dy3m);
    p->db3mb = op_like(g, "layer3.db.call", f->db3.t);
    p->db3 = cs(n, "layer3.bias.grad");
    p->db3acc = cs(n, "layer3.bias.acc");
    for (uint32_t j = 0; j < MNET_FC; j++) {
        uint32_t t = fct(b, 0, j);
        for (uint32_t ch = 0; ch < 16; ch++) /* the sum of row 16 j + ch, in sample order */
            v_reduce(b, p->db3, t, S(p->db3mb, 16 * (size_t)j + ch, 1),
                     S(p->dy3m.t, (16 * (size_t)j + ch) * b->B, b->B), 1, b->B, 1, 1.0f);
    }
    op_acc(g, p->db3acc, f->db3.t, p->db3mb);
    pfc_op(n, MNET_PL_L3DX, &dy3, (op_ref){b->params, P_W3, 1, 0}, none);
    op_act dx3 = op_mm_out(&p->op[MNET_PL_L3DX].y, OP_MM_DX),
           da2 = matrix(n->c.da2.t, 0, b->B, MNET_X3);
    if (f->land) { /* by rows on B3's IPU, then across a row a sample */
        p->dx3s = rows(b, "layer3.dx.sent", GR_F32, G(b, MNET_B3, 0), b->B, MNET_X3);
        da2 = matrix(p->dx3s, 0, b->B, MNET_X3);
    }
    p->dx3out = op_act_copy(g, &dx3, &da2);
    x = op_mm_in(&p->x3, OP_MM_DW);
    pfc_op(n, MNET_PL_L3DW, &x, (op_ref){p->dy3m.t, 0, 1, 0}, none);
}

static void pfc_build(net *n)
{
    pfc_fwd_build(n);
    if (n->b->train)
        pfc_bwd_build(n);
}

static void add_some(mnet_b *b, seq *q, gr_prog p);

/* Block B3 forward, planned: layer3, its ReLU, its output into y3s (two IPUs). */
static gr_prog pfc_fwd3(net *n)
{
    mnet_b *b = n->b;
    seq q = {0};
    add(b, &q, n->p.x3cols);
    exec(b, &q, n->p.x3tr);
    add(b, &q, n->p.op[MNET_PL_L3].run);
    exec(b, &q, n->p.relu);
    add_some(b, &q, n->p.send);
    return seq_of(b, &q);
}

/* Block B4 forward, planned: layer4, its logits into the outfeed buffer. */
static gr_prog pfc_fwd4(net *n)
{
    mnet_b *b = n->b;
    seq q = {0};
    add(b, &q, n->p.op[MNET_PL_L4].run);
    add(b, &q, n->p.logits);
    return seq_of(b, &q);
}

/* Block B4 backward, planned: the bias gradient, the input gradient, the weight gradient
 * (its weights, dz, laid out first: the prep of a plan whose weights change every call). */
static gr_prog pfc_bwd4(net *n)
{
    mnet_b *b = n->b;
    pfc_t *p = &n->p;
    seq q = {0};
    exec(b, &q, p->db4);
    add(b, &q, p->op[MNET_PL_L4DX].run);
    add_some(b, &q, p->dxsend);
    add(b, &q, p->dwin);
    add(b, &q, p->op[MNET_PL_L4DW].prep);
    add(b, &q, p->op[MNET_PL_L4DW].run);
    return seq_of(b, &q);
}

/* Block B3 backward, planned. */
static gr_prog pfc_bwd3(net *n)
{
    mnet_b *b = n->b;
    pfc_t *p = &n->p;
    seq q = {0};
    add_some(b, &q, p->dy3in);
    exec(b, &q, p->relu_grad);
    add(b, &q, p->dy3rows);
    exec(b, &q, p->db3);
    exec(b, &q, p->db3acc);
    add(b, &q, p->op[MNET_PL_L3DX].run);
    add_some(b, &q, p->dx3out);
    add(b, &q, p->op[MNET_PL_L3DW].prep);
    add(b, &q, p->op[MNET_PL_L3DW].run);
    return seq_of(b, &q);
}

/* Block B3 forward: layer3 on the fc tiles, from x3j to y3T. */
static gr_prog fwd_b3(net *n)
{
    if (n->b->planned)
        return pfc_fwd3(n);
    mnet_b *b = n->b;
    fc_t *f = &n->f;
    seq q = {0};
    gr_cs l3[5] = {cs(n, "layer3.x"), cs(n, "layer3"), cs(n, "layer3.rows"), cs(n, "layer3.bias"),
                   cs(n, "layer3.relu")};
    for (uint32_t r = 0; r < b->K * MNET_FC; r++) {
        uint32_t t = G(b, MNET_B3, b->fc0 + r);
        sl y = at(f->y3T, r);
        v_cols_blocks(b, l3[0], t, at(f->x3j, r), at(f->xb3, r), b->Bc, MNET_X3, f->nqB);
        v_mm(b, l3[1], t, at(f->w3in, r), at(f->xb3, r), at(f->p3, r), 16, 40, f->nqB, 1);
        v_part_rows(b, l3[2], t, at(f->p3, r), y, 16, b->Bcp, 16);
        v_bias(b, l3[3], t, y, w3_of(n, r / MNET_FC, r % MNET_FC, 1), 16, b->Bcp, 0);
        v_relu(b, l3[4], t, y, y, 0);
    }
    for (int i = 0; i < 5; i++)
        exec(b, &q, l3[i]);
    return seq_of(b, &q);
}

/* pool2's output, landed on B3's IPU, to every fc tile (fc_t.land), or GR_NONE. */
static gr_prog bcast3(net *n)
{
    mnet_b *b = n->b;
    fc_t *f = &n->f;
    if (!f->land || b->planned)
        return GR_NONE;
    xing x = {0};
    for (uint32_t j = 0; j < MNET_FC; j++)
        for (uint32_t c = 0; c < b->K; c++)
            xadd(&x, (gr_xfer){f->x3in, grp_at(b, c, MNET_X3), f->x3j.t,
                               (size_t)(c * MNET_FC + j) * f->x3j.per, f->x3j.per});
    gr_prog p = xprog(b, &x);
    free(x.x);
    return p;
}

/* Block B4 forward: layer4 on t4, from a3 to the logits in the outfeed buffer. */
static gr_prog fwd_b4(net *n)
{
    if (n->b->planned)
        return pfc_fwd4(n);
    mnet_b *b = n->b;
    fc_t *f = &n->f;
    seq q = {0};
    gr_cs l4[5] = {cs(n, "layer4.x"), cs(n, "layer4"), cs(n, "layer4.rows"), cs(n, "layer4.bias"),
                   cs(n, "layer4.logits")};
    for (uint32_t c = 0; c < b->K; c++) {
        uint32_t t = t4t(b, c);
        sl y = at(f->y4T, c);
        v_rows_blocks(b, l4[0], t, at(f->a3, c), at(f->a3b, c), MNET_H3, b->Bcp, 32);
        v_mm(b, l4[1], t, at(f->w4in, c), at(f->a3b, c), at(f->p4, c), 10, 32, f->nqBp, 1);
        v_part_rows(b, l4[2], t, at(f->p4, c), y, 10, b->Bcp, 10);
        v_bias(b, l4[3], t, y, w4_of(n, c, 1), 10, b->Bcp, 0);
        cplan_pack tp = {.nblocks = b->Bc, .R = 1, .C = 10, .sr = 4, .sc = b->Bcp * 4};
        v_pack(b, l4[4], t, &tp, at(f->l_logits, c),
               S(f->res.t, grp_at(b, c, 10), 10 * (size_t)b->Bc), y);
    }
    for (int i = 0; i < 5; i++)
        exec(b, &q, l4[i]);
    return seq_of(b, &q);
}

/* The forward crossings between blocks: pool1's output to conv2's input (when B1 and B2 are
 * on different IPUs), pool2's output to every fc tile, layer3's output to layer4's input. */
static void fwd_crossings(net *n)
{
    mnet_b *b = n->b;
    conv_t *c = &n->c;
    fc_t *f = &n->f;
    for (uint32_t s = 0; c->split && s < b->B; s++)
        xadd(&n->fx[0],
             (gr_xfer){c->a1.t, (size_t)s * c->a1.per, c->a1b.t, (size_t)s * c->a1b.per, 1440});
    for (uint32_t s = 0; f->land && s < b->B; s++)
        xadd(&n->fx[1],
             (gr_xfer){c->x3.t, (size_t)s * MNET_X3, f->x3in, (size_t)s * MNET_X3, MNET_X3});
    if (b->planned) { /* layer3's output, as sent, to layer4's input (two IPUs) */
        if (n->p.send != GR_NONE)
            xadd_act(&n->fx[2], &n->p.y3s, &n->p.a3);
        return;
    }
    for (uint32_t j = 0; !f->land && j < MNET_FC; j++)
        for (uint32_t g = 0; g < b->K; g++)
            xadd(&n->fx[1], (gr_xfer){c->x3.t, grp_at(b, g, MNET_X3), f->x3j.t,
                                      (size_t)(g * MNET_FC + j) * f->x3j.per, f->x3j.per});
    for (uint32_t g = 0; g < b->K; g++) /* a group's 16 rows of y3T are its a3, [256][Bcp] */
        xadd(&n->fx[2], (gr_xfer){f->y3T.t, g * f->a3.per, f->a3.t, g * f->a3.per, f->a3.per});
}

/* The loss and its gradient, the micro-batch's mean loss into the outfeed buffer. */
static void loss(net *n, seq *q)
{
    mnet_b *b = n->b;
    fc_t *f = &n->f;
    gr_cs k[2] = {cs(n, "loss"), cs(n, "loss.mean")};
    xing x = {0};
    for (uint32_t c = 0; c < b->K; c++) {
        sl res = S(f->res.t, grp_at(b, c, 10), 10 * (size_t)b->Bc), dz = at(f->dz, c);
        sl lab = S(f->labels.t, f->labels.at + grp_at(b, c, 1), b->Bc), sums = at(f->sums, c);
        for (unsigned v = 0; v < f->nxent; v++) {
            uint32_t r0 = b->Bc * v / f->nxent, r1 = b->Bc * (v + 1) / f->nxent;
            gr_field e[7] = {R(res, 10 * (size_t)r0, 10 * (size_t)(r1 - r0)),
                             R(lab, r0, r1 - r0),
                             R(dz, 10 * (size_t)r0, 10 * (size_t)(r1 - r0)),
                             U(r1 - r0),
                             U(b->B),
                             R(sums, 2 * (size_t)v, 1),
                             R(sums, 2 * (size_t)v + 1, 1)};
            vtx(b, k[0], "xent_fwd_bwd", 0, t4t(b, c), e, 7);
        }
        if (b->K > 1) /* the group's sums to the last group's tile */
            xadd(&x, (gr_xfer){f->sums.t, sums.at, f->sall.t, 2 * (size_t)c * f->nxent,
                               2 * (size_t)f->nxent});
    }
    sl parts = b->K > 1 ? f->sall : at(f->sums, 0);
    gr_field r[6] = {R(f->res, 10 * (size_t)b->B, 1),
                     R(parts, 0, 2 * (size_t)f->nxent * b->K),
                     U(1),
                     U(f->nxent * b->K),
                     U(8),
                     gr_f32(1.0f / (float)b->B)};
    vtx(b, k[1], "reduce_add", 0, t4t(b, b->K - 1), r, 6);
    cplan_pack tp = {.nblocks = 10, .R = 1, .C = b->Bcp, .sr = 4, .sc = 40};
    for (uint32_t c = 0; c < b->K; c++)
        v_pack(b, k[1], t4t(b, c), &tp, at(f->l_dy4, c), at(f->dy4T, c), at(f->dz, c));
    exec(b, q, k[0]);
    if (x.n)
        add(b, q, xprog(b, &x));
    free(x.x);
    exec(b, q, k[1]);
}

/* Block B4 backward: layer4's gradients (accumulated) and its dx, transposed, on t4. */
static gr_prog bwd_b4(net *n)
{
    if (n->b->planned)
        return pfc_bwd4(n);
    mnet_b *b = n->b;
    fc_t *f = &n->f;
    seq q = {0};
    uint32_t Bp = b->Bcp;
    gr_cs k[3] = {cs(n, "layer4.grad.layouts"), cs(n, "layer4.grad"), cs(n, "layer4.dx.rows")};
    for (uint32_t c = 0; c < b->K; c++) {
        uint32_t t = t4t(b, c);
        sl dy = at(f->dy4T, c);
        v_rows_chunks(b, k[0], t, dy, at(f->d4in, c), 10, Bp, 10);
        v_cols_blocks(b, k[0], t, at(f->a3, c), at(f->a3w, c), MNET_H3, Bp, 16);
        v_rows_blocks(b, k[0], t, dy, at(f->dy4b, c), 10, Bp, 2);
        v_bias(b, k[0], t, dy, at(f->db4, c), 10, Bp, 1);
        v_mm(b, k[1], t, at(f->d4in, c), at(f->a3w, c), at(f->g4p, c), 10, f->kcB, 16, 0);
        v_mm(b, k[1], t, at(f->w4Tin, c), at(f->dy4b, c), at(f->pda, c), MNET_H3, 2, f->nqBp, 1);
        v_part_rows(b, k[2], t, at(f->pda, c), at(f->da3T, c), MNET_H3, Bp, MNET_H3);
    }
    for (int i = 0; i < 3; i++)
        exec(b, &q, k[i]);
    return seq_of(b, &q);
}

/* Where layer3's dx (dx3p) holds sample s's part from fc tile j of the sample's group. */
static size_t dx3_part(const mnet_b *b, uint32_t j, uint32_t s)
{
    return (((size_t)(s / b->Bc) * MNET_FC + j) * b->Bc + s % b->Bc) * MNET_X3;
}

/* Each sample's 16 parts of layer3's dx gathered on its fc tile and summed in order (the
 * sum pool2.grad.in makes on the sample tile when B2 and B3 share an IPU). */
static void dx3_sum(net *n, seq *q)
{
    mnet_b *b = n->b;
    fc_t *f = &n->f;
    xing x = {0};
    for (uint32_t j = 0; j < MNET_FC; j++)
        for (uint32_t s = 0; s < b->B; s++)
            xadd(&x, (gr_xfer){f->dx3p.t, dx3_part(b, j, s), f->dx3parts,
                               ((size_t)s * MNET_FC + j) * MNET_X3, MNET_X3});
    add(b, q, xprog(b, &x));
    free(x.x);
    gr_cs k = cs(n, "layer3.dx.sum");
    for (uint32_t s = 0; s < b->B; s++)
        v_reduce(b, k, spread_tile(b, s), S(f->dx3red, (size_t)s * MNET_X3, MNET_X3),
                 S(f->dx3parts, (size_t)s * MNET_FC * MNET_X3, MNET_FC * MNET_X3), MNET_X3, MNET_FC,
                 MNET_X3, 1.0f);
    exec(b, q, k);
}

/* Block B3 backward: layer3's gradients and each fc tile's part of each sample's dx. */
static gr_prog bwd_b3(net *n)
{
    if (n->b->planned)
        return pfc_bwd3(n);
    mnet_b *b = n->b;
    fc_t *f = &n->f;
    seq q = {0};
    uint32_t Bp = b->Bcp;
    gr_cs l[4] = {cs(n, "layer3.relu.grad"), cs(n, "layer3.grad.layouts"), cs(n, "layer3.grad"),
                  cs(n, "layer3.dx.rows")};
    for (uint32_t j = 0; j < b->K * MNET_FC; j++) {
        uint32_t tj = G(b, MNET_B3, b->fc0 + j);
        sl dy = at(f->da3Td, j);
        v_relu(b, l[0], tj, at(f->y3T, j), dy, 1);
        v_rows_chunks(b, l[1], tj, dy, at(f->d3in, j), 16, Bp, 16);
        v_rows_blocks(b, l[1], tj, at(f->x3j, j), at(f->xb3w, j), b->Bc, MNET_X3, f->kcB);
        v_cols_chunks(b, l[1], tj, dy, at(f->dx3in, j), b->Bc, 16, Bp, Bp);
        v_bias(b, l[1], tj, dy, at(f->db3, j), 16, Bp, 1);
        v_mm(b, l[2], tj, at(f->d3in, j), at(f->xb3w, j), at(f->g3p, j), 16, f->kcB, 20, 0);
        v_mm(b, l[2], tj, at(f->dx3in, j), at(f->w3db, j), at(f->pdx, j), Bp, 2, 20, 1);
        v_part_rows(b, l[3], tj, at(f->pdx, j), at(f->dx3p, j), b->Bc, MNET_X3, Bp);
    }
    for (int i = 0; i < 4; i++)
        exec(b, &q, l[i]);
    if (f->land)
        dx3_sum(n, &q);
    return seq_of(b, &q);
}

/* Block B2 backward on the sample tiles: pool2 (from the fc tiles' dx parts), conv2's weight
 * gradient (accumulated) and its dx. */
static gr_prog bwd_b2(net *n)
{
    mnet_b *b = n->b;
    conv_t *c = &n->c;
    seq q = {0};
    gr_cs k[5] = {cs(n, "pool2.grad.in"), cs(n, "pool2.grad"), cs(n, "conv2.grad.layouts"),
                  cs(n, "conv2.grad"), cs(n, "conv2.grad.ungroup")};
    for (uint32_t s = 0; s < b->B; s++) {
        size_t g0 = (size_t)s * MNET_CONVP;
        uint32_t g2 = G(b, MNET_B2, s);
        if (!n->f.land && !b->planned)
            v_reduce(b, k[0], g2, at(c->da2, s), at(c->dx3g, s), MNET_X3, MNET_FC, MNET_X3, 1.0f);
        v_pool_bwd(b, k[1], g2, at(c->da2, s), at(c->x3, s), at(c->arg2, s), at(c->dy2, s), 80, 8);
        v_bias(b, k[2], g2, at(c->dy2, s), S(c->cg.t, g0 + P_B2, 20), 20, 64, 1);
        if (b->planned)
            continue; /* the weight and input gradients are the planned dw2, dx2, after these */
        v_pack(b, k[2], g2, &c->p_dy2, at(c->l_dy2, s), at(c->dyg2, s), at(c->dy2, s));
        v_amp(b, k[3], g2, s, &c->a2w, at(c->a1b, s), at(c->dw2t, s), at(c->dyg2, s));
        v_ungroup(b, k[4], g2, S(c->cg.t, g0 + P_W2, 5000), at(c->dw2t, s), 20, 250, 1);
        v_amp(b, k[3], g2, s, &c->a2d, at(c->dyg2, s), at(c->dx2g, s), at(c->w2db, s));
        v_ungroup(b, k[4], g2, at(c->da1, s), at(c->dx2g, s), 10, 144, 0);
    }
    /* pool2.grad.in: the fc tiles' parts; planned, conv2.grad.layouts holds the bias's alone */
    for (int i = n->f.land || b->planned; i < (b->planned ? 3 : 5); i++)
        exec(b, &q, k[i]);
    if (b->planned) {
        add(b, &q, c->dx2.run);
        add(b, &q, c->dx2copy);
        add(b, &q, c->dw[1].prep);
        add(b, &q, c->dw[1].run);
        exec(b, &q, c->dwcs[1]);
    }
    return seq_of(b, &q);
}

/* Block B1 backward on the sample tiles: pool1 and conv1's weight gradient (accumulated). */
static gr_prog bwd_b1(net *n)
{
    mnet_b *b = n->b;
    conv_t *c = &n->c;
    seq q = {0};
    gr_cs k[4] = {cs(n, "pool1.grad"), cs(n, "conv1.grad.layouts"), cs(n, "conv1.grad"),
                  cs(n, "conv1.grad.ungroup")};
    for (uint32_t s = 0; s < b->B; s++) {
        size_t g0 = (size_t)s * MNET_CONVP;
        uint32_t g1 = G(b, MNET_B1, s);
        v_pool_bwd(b, k[0], g1, at(c->da1a, s), S(c->a1.t, (size_t)s * c->a1.per, 1440),
                   at(c->arg1, s), at(c->dy1, s), 120, 24);
        v_bias(b, k[1], g1, at(c->dy1, s), S(c->cg.t, g0 + P_B1, 10), 10, 576, 1);
        if (b->planned)
            continue; /* the weight gradient is the planned dw1, after these */
        v_pack(b, k[1], g1, &c->p_dy1, at(c->l_dy1, s), at(c->dyg1, s), at(c->dy1, s));
        v_amp(b, k[2], g1, s, &c->a1w, at(c->x1, s), at(c->dw1t, s), at(c->dyg1, s));
        v_ungroup(b, k[3], g1, S(c->cg.t, g0 + P_W1, 250), at(c->dw1t, s), 10, 25, 1);
    }
    for (int i = 0; i < (b->planned ? 2 : 4); i++)
        exec(b, &q, k[i]);
    if (b->planned) {
        add(b, &q, c->dw[0].prep);
        add(b, &q, c->dw[0].run);
        exec(b, &q, c->dwcs[0]);
    }
    return seq_of(b, &q);
}

/* Planned, the linear layers' backward crossings: layer4's dx, compact, to its landing on
 * B3's IPU (B3 and B4 on two IPUs); layer3's dx, a row a sample, into pool2's gradient da2
 * (B2 and B3 on two). */
static void pfc_bwd_crossings(net *n)
{
    mnet_b *b = n->b;
    pfc_t *p = &n->p;
    if (p->dxsend != GR_NONE)
        xadd_act(&n->bx[2], &p->dxs, &p->dyl);
    for (uint32_t s = 0; n->f.land && s < b->B; s++)
        xadd(&n->bx[1],
             (gr_xfer){p->dx3s, (size_t)s * MNET_X3, n->c.da2.t, (size_t)s * MNET_X3, MNET_X3});
}

/* The backward crossings: layer4's dx to the fc tiles, each fc tile's dx parts to the sample
 * tiles, conv2's dx back to B1's tiles (when B1 and B2 are on different IPUs). */
static void bwd_crossings(net *n)
{
    mnet_b *b = n->b;
    conv_t *c = &n->c;
    fc_t *f = &n->f;
    if (b->planned) {
        pfc_bwd_crossings(n);
        for (uint32_t s = 0; c->split && s < b->B; s++)
            xadd(&n->bx[0], (gr_xfer){c->da1.t, (size_t)s * c->da1.per, c->da1a.t,
                                      (size_t)s * c->da1a.per, 1440});
        return;
    }
    for (uint32_t g = 0; g < b->K; g++) /* a group's dx of layer4 is its 16 rows of da3Td */
        xadd(&n->bx[2],
             (gr_xfer){f->da3T.t, g * f->da3T.per, f->da3Td.t, g * f->da3T.per, f->da3T.per});
    for (uint32_t s = 0; f->land && s < b->B; s++)
        xadd(&n->bx[1],
             (gr_xfer){f->dx3red, (size_t)s * MNET_X3, c->da2.t, (size_t)s * MNET_X3, MNET_X3});
    for (uint32_t j = 0; !f->land && j < MNET_FC; j++)
        for (uint32_t s = 0; s < b->B; s++)
            xadd(&n->bx[1], (gr_xfer){f->dx3p.t, dx3_part(b, j, s), c->dx3g.t,
                                      ((size_t)s * MNET_FC + j) * MNET_X3, MNET_X3});
    for (uint32_t s = 0; c->split && s < b->B; s++)
        xadd(&n->bx[0],
             (gr_xfer){c->da1.t, (size_t)s * c->da1.per, c->da1a.t, (size_t)s * c->da1a.per, 1440});
}

/* The accumulators to zero (at the start and after each update). */
static void zero_acc(net *n, seq *q)
{
    mnet_b *b = n->b;
    gr_cs k = cs(n, "grads.zero");
    for (uint32_t s = 0; s < b->B; s++) {
        uint32_t g1 = G(b, MNET_B1, s), g2 = G(b, MNET_B2, s);
        size_t r = (size_t)s * MNET_CONVP;
        v_zero(b, k, g1, S(n->c.cg.t, r, MNET_CONV1P), zl_of(n, g1));
        v_zero(b, k, g2, S(n->c.cg.t, r + MNET_CONV1P, MNET_CONVP - MNET_CONV1P), zl_of(n, g2));
    }
    for (uint32_t j = 0; j < b->K * MNET_FC; j++) {
        uint32_t t = G(b, MNET_B3, b->fc0 + j);
        if (!b->planned)
            v_zero(b, k, t, at(n->f.g3p, j), zl_of(n, t));
        v_zero(b, k, t, at(n->f.db3, j), zl_of(n, t));
    }
    for (uint32_t c = 0; c < b->K; c++) {
        uint32_t t4 = t4t(b, c);
        if (!b->planned)
            v_zero(b, k, t4, at(n->f.g4p, c), zl_of(n, t4));
        v_zero(b, k, t4, at(n->f.db4, c), zl_of(n, t4));
    }
    if (b->planned && b->train) { /* the planned weight gradients, summed where made */
        op_zero(b->g, k, n->p.op[MNET_PL_L3DW].y.t, "layer3.dw");
        op_zero(b->g, k, n->p.op[MNET_PL_L4DW].y.t, "layer4.dw");
        op_zero(b->g, k, n->c.dwacc[0], "conv1.dw");
        op_zero(b->g, k, n->c.dwacc[1], "conv2.dw");
    }
    exec(b, q, k);
}

/* The convolutions' parameters to every sample tile, and every tile's weights into the
 * layouts its codelets stream. */
static void weights(net *n, seq *q)
{
    mnet_b *b = n->b;
    conv_t *c = &n->c;
    fc_t *f = &n->f;
    xing x = {0};
    for (uint32_t s = 0; s < b->B; s++)
        xadd(&x, (gr_xfer){b->params, 0, c->cw.t, (size_t)s * MNET_CONVP, MNET_CONVP});
    for (uint32_t g = 1; g < b->K; g++) { /* the linear layers' to groups 1.. */
        for (uint32_t j = 0; j < MNET_FC; j++) {
            sl w = w3_of(n, g, j, 0), bias = w3_of(n, g, j, 1);
            xadd(&x, (gr_xfer){b->params, P_W3 + (size_t)j * w.n, w.t, w.at, w.n});
            xadd(&x, (gr_xfer){b->params, P_B3 + (size_t)j * bias.n, bias.t, bias.at, bias.n});
        }
        sl w4 = w4_of(n, g, 0);
        xadd(&x, (gr_xfer){b->params, P_W4, w4.t, w4.at, P_END - P_W4});
    }
    add(b, q, xprog(b, &x));
    free(x.x);
    if (b->planned) {
        add(b, q, c->op[0].prep);
        add(b, q, c->op[1].prep);
        add(b, q, n->p.op[MNET_PL_L3].prep);
        add(b, q, n->p.op[MNET_PL_L4].prep);
        if (b->train) {
            add(b, q, c->dx2.prep);
            add(b, q, n->p.op[MNET_PL_L4DX].prep);
            add(b, q, n->p.op[MNET_PL_L3DX].prep);
        }
    }
    gr_cs k = cs(n, "weights.layouts");
    for (uint32_t s = 0; s < b->B; s++) {
        size_t g0 = (size_t)s * MNET_CONVP;
        uint32_t g1 = G(b, MNET_B1, s), g2 = G(b, MNET_B2, s);
        if (!b->planned) {
            v_pack(b, k, g1, &b->c1f.wpack, at(c->l_w1, s), at(c->w1b, s),
                   S(c->cw.t, g0 + P_W1, 250));
            v_pack(b, k, g2, &b->c2f.wpack, at(c->l_w2, s), at(c->w2b, s),
                   S(c->cw.t, g0 + P_W2, 5000));
        }
        if (b->train && !b->planned)
            v_pack(b, k, g2, &b->c2d.wpack, at(c->l_w2d, s), at(c->w2db, s),
                   S(c->cw.t, g0 + P_W2, 5000));
    }
    for (uint32_t r = 0; r < b->K * MNET_FC && !b->planned; r++) {
        sl w = w3_of(n, r / MNET_FC, r % MNET_FC, 0);
        uint32_t t = G(b, MNET_B3, b->fc0 + r);
        v_rows_chunks(b, k, t, w, at(f->w3in, r), 16, MNET_X3, 16);
        if (b->train)
            v_rows_blocks(b, k, t, w, at(f->w3db, r), 16, MNET_X3, 2);
    }
    for (uint32_t g = 0; g < b->K && !b->planned; g++) {
        sl w4 = w4_of(n, g, 0);
        uint32_t t4 = t4t(b, g);
        v_rows_chunks(b, k, t4, w4, at(f->w4in, g), 10, MNET_H3, 10);
        if (b->train)
            v_cols_chunks(b, k, t4, w4, at(f->w4Tin, g), MNET_H3, 10, MNET_H3, MNET_H3);
    }
    exec(b, q, k);
}

/* The sum over the K groups of a linear layer's weight gradients (K > 1), `len` elements on
 * each of its `per` tiles a group (layer3: MNET_FC, layer4: 1), in group order, spread over
 * the groups' tiles: tile j of group q sums slice q of what tile j of every group holds (the
 * slices: op_split(len, q, K, 2)), then sends it to tile j of group 0, into grads at dst + j len.
 * The tensors, one row per tile: `own` a group's gradients in the parameters' order, `gath`
 * the K groups' slice q, `sum` its sum. */
typedef struct gsum {
    int blk;
    uint32_t per;
    size_t len, dst;
    rt own, gath, sum;
} gsum;

static uint32_t gsum_tile(const mnet_b *b, const gsum *g, uint32_t c, uint32_t j)
{
    return g->blk == MNET_B3 ? fct(b, c, j) : t4t(b, c);
}

static gsum gsum_new(mnet_b *b, int blk, const char *name, size_t len, size_t dst)
{
    gsum g = {blk, blk == MNET_B3 ? MNET_FC : 1, len, dst, {0}, {0}, {0}};
    size_t slice = 0;
    for (uint32_t q = 0; q < b->K; q++) {
        size_t n = op_split(len, q + 1, b->K, 2) - op_split(len, q, b->K, 2);
        slice = n > slice ? n : slice;
    }
    size_t per[3] = {len, b->K * slice, slice};
    rt *r[3] = {&g.own, &g.gath, &g.sum};
    static const char *const what[3] = {"group", "slices", "sum"};
    for (int i = 0; i < 3; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s.%s", name, what[i]);
        *r[i] = (rt){rows(b, nm, GR_F32, gsum_tile(b, &g, 0, 0), b->K * g.per, per[i]), per[i]};
    }
    return g;
}

/* The slices to their tiles (x1), their sums (into cs, scaled by k), the sums to grads (x2). */
static void gsum_build(mnet_b *b, const gsum *g, xing *x1, gr_cs cs, xing *x2, float k)
{
    for (uint32_t j = 0; j < g->per; j++)
        for (uint32_t q = 0; q < b->K; q++) {
            size_t a = op_split(g->len, q, b->K, 2), n = op_split(g->len, q + 1, b->K, 2) - a;
            sl gath = at(g->gath, q * g->per + j), sum = at(g->sum, q * g->per + j);
            for (uint32_t c = 0; c < b->K; c++)
                xadd(x1, (gr_xfer){g->own.t, (c * g->per + j) * g->len + a, gath.t, gath.at + c * n,
                                   n});
            v_reduce(b, cs, gsum_tile(b, g, q, j), S(sum.t, sum.at, n), gath, (uint32_t)n, b->K,
                     (uint32_t)n, k);
            xadd(x2, (gr_xfer){sum.t, sum.at, b->grads, g->dst + j * g->len + a, n});
        }
}

/* The linear layers' weight gradients out of the AMP's partials in the parameters' order:
 * with one group straight into grads, else into each group's own (g3, g4), and the biases'
 * gathered (b3all, b4all), by x. */
static void fc_grad_rows(net *n, gr_cs cs, xing *x, const gsum *g3, const gsum *g4)
{
    mnet_b *b = n->b;
    fc_t *f = &n->f;
    size_t w3 = 16 * MNET_X3, w4 = 10 * MNET_H3;
    for (uint32_t r = 0; r < b->K * MNET_FC; r++) {
        uint32_t c = r / MNET_FC, j = r % MNET_FC;
        sl out = b->K == 1 ? S(b->grads, P_W3 + j * w3, w3) : at(g3->own, r);
        v_part_rows(b, cs, G(b, MNET_B3, b->fc0 + r), at(f->g3p, r), out, 16, MNET_X3, 16);
        if (b->K > 1)
            xadd(x, (gr_xfer){f->db3.t, r * 16, f->b3all.t, j * f->b3all.per + c * 16, 16});
    }
    for (uint32_t c = 0; c < b->K; c++) {
        sl out = b->K == 1 ? S(b->grads, P_W4, w4) : at(g4->own, c);
        v_part_rows(b, cs, t4t(b, c), at(f->g4p, c), out, 10, MNET_H3, 10);
        if (b->K > 1)
            xadd(x, (gr_xfer){f->db4.t, c * 10, f->b4all.t, c * 10, 10});
    }
}

/* The sample tiles' parts of each update tile's range into `parts` ([u][sample][range], u's
 * at u x per), by x. */
static gr_tensor conv_grad_parts(net *n, xing *x, size_t per)
{
    mnet_b *b = n->b;
    uint32_t nu = cu_count(b);
    gr_tensor parts =
        gr_tensor_new(b->g, "conv.grads.parts", GR_F32, 1, (uint32_t[]){(uint32_t)(nu * per)});
    for (uint32_t u = 0; u < nu; u++)
        gr_map_region(b->g, parts, cu_tile(b, u) / b->T, cu_tile(b, u) % b->T, u * per,
                      u * per + b->B * (cu_begin(b, u + 1) - cu_begin(b, u)));
    for (uint32_t s = 0; s < b->B; s++)
        for (uint32_t u = 0; u < nu; u++) {
            size_t len = cu_begin(b, u + 1) - cu_begin(b, u);
            xadd(x, (gr_xfer){n->c.cg.t, (size_t)s * MNET_CONVP + cu_begin(b, u), parts,
                              u * per + s * len, len});
        }
    return parts;
}

/* The weight update: gradients to their homes (gathered and reduced for the convolutions and
 * over the linear layers' groups), scaled by 1/G, the step's scalars, AdamW. */
static void update(net *n, seq *q)
{
    mnet_b *b = n->b;
    fc_t *f = &n->f;
    float k = 1.0f / (float)(b->G * b->R); /* the mean over every replica's micro-batches */
    gr_cs c0 = cs(n, "grads.rows"), c1 = cs(n, "grads.reduce"), c2 = cs(n, "adamw");
    xing x = {0}, x2 = {0};
    size_t per = (size_t)b->B * (b->cuper[0] > b->cuper[1] ? b->cuper[0] : b->cuper[1]);
    gsum g3 = {0}, g4 = {0};
    if (b->planned) { /* the convolutions' weight gradients into sample 0's part, before the
                       * gather */
        add(b, q, n->c.dwout[0]);
        add(b, q, n->c.dwout[1]);
    }
    if (b->K > 1) {
        g3 = gsum_new(b, MNET_B3, "layer3.dw", 16 * MNET_X3, P_W3);
        g4 = gsum_new(b, MNET_B4, "layer4.dw", 10 * MNET_H3, P_W4);
    }
    if (b->planned) { /* the linear layers' accumulated weight gradients to their homes */
        op_act h3 = matrix(b->grads, P_W3, MNET_H3, MNET_X3),
               h4 = matrix(b->grads, P_W4, 10, MNET_H3);
        op_act d3 = op_mm_out(&n->p.op[MNET_PL_L3DW].y, OP_MM_DW),
               d4 = op_mm_out(&n->p.op[MNET_PL_L4DW].y, OP_MM_DW); /* dW4^T [256][10] */
        op_act h4t = op_act_view(&h4, (uint8_t[]){1, 0, 2, 3});
        xadd_act(&x, &d3, &h3);
        xadd_act(&x, &d4, &h4t);
    } else {
        fc_grad_rows(n, c0, &x, &g3, &g4);
    }
    gr_tensor parts = conv_grad_parts(n, &x, per);
    if (b->K > 1) {
        gsum_build(b, &g3, &x, c1, &x2, k);
        gsum_build(b, &g4, &x, c1, &x2, k);
    }
    exec(b, q, c0);
    add(b, q, xprog(b, &x));
    free(x.x);
    for (uint32_t u = 0; u < cu_count(b); u++) {
        uint32_t len = (uint32_t)(cu_begin(b, u + 1) - cu_begin(b, u));
        v_reduce(b, c1, cu_tile(b, u), S(b->grads, cu_begin(b, u), len),
                 S(parts, u * per, (size_t)b->B * len), len, b->B, len, k);
    }
    uint32_t K = b->K, w3 = 16 * MNET_X3, w4 = 10 * MNET_H3;
    for (size_t u = 0; u < b->nupd; u++) /* the spread weights' homes, in place */
        if (spread_param(b, b->upd[u].begin)) {
            uint32_t len = (uint32_t)(b->upd[u].end - b->upd[u].begin);
            sl g = S(b->grads, b->upd[u].begin, len);
            v_reduce(b, c1, b->upd[u].gt, g, g, len, 1, len, k);
        }
    for (uint32_t j = 0; j < MNET_FC; j++) {
        uint32_t t = fct(b, 0, j);
        sl g = S(b->grads, P_W3 + (size_t)j * w3, w3);
        if (K == 1 && !b->planned) /* in place; else gsum_build's (planned: above) */
            v_reduce(b, c1, t, g, g, w3, 1, w3, k);
        v_reduce(b, c1, t, S(b->grads, P_B3 + 16 * (size_t)j, 16),
                 K > 1 ? at(f->b3all, j) : at(f->db3, j), 16, K, 16, k);
    }
    sl gw4 = S(b->grads, P_W4, w4);
    if (K == 1 && !b->planned)
        v_reduce(b, c1, t4t(b, 0), gw4, gw4, w4, 1, w4, k);
    v_reduce(b, c1, t4t(b, 0), S(b->grads, P_B4, 10), K > 1 ? at(f->b4all, 0) : at(f->db4, 0), 10,
             K, 10, k);
    mnet_adamw(b, c1, c2);
    exec(b, q, c1);
    if (x2.n) /* the groups' sums of the linear layers' gradients to their homes */
        add(b, q, xprog(b, &x2));
    free(x2.x);
    if (b->R > 1) /* each replica's share of the mean, summed over the replicas */
        add(b, q, gr_all_reduce(b->g, b->grads));
    if (b->offload) { /* m and v in from their remote buffers, the step, and back out */
        add(b, q, gr_remote_read(b->g, b->opt_m, MNET_RB_M, 0));
        add(b, q, gr_remote_read(b->g, b->opt_v, MNET_RB_V, 0));
    }
    exec(b, q, c2);
    if (b->offload) {
        add(b, q, gr_remote_write(b->g, b->opt_m, MNET_RB_M, 0));
        add(b, q, gr_remote_write(b->g, b->opt_v, MNET_RB_V, 0));
    }
}

/* The tiles holding parameters, each once, in order. */
static uint32_t upd_tiles(const mnet_b *b, uint32_t *tiles)
{
    uint32_t n = 0;
    for (size_t k = 0; k < b->nupd; k++)
        if (!n || tiles[n - 1] != b->upd[k].gt)
            tiles[n++] = b->upd[k].gt;
    return n;
}

/* Per parameter tile: the step table (host-written), its cursor, and the current record
 * (adamw_hyper copies record t into it); adamw_step over each home range. */
void mnet_adamw(mnet_b *b, gr_cs hyper, gr_cs step)
{
    const adamw_cfg *o = &b->opt;
    uint32_t *tiles = xmalloc(b->nupd * sizeof *tiles), nt = upd_tiles(b, tiles);
    uint32_t shape[2] = {nt, 4 * b->updates};
    b->hyper_tab = gr_tensor_new(b->g, "adamw.steps", GR_F32, 2, shape);
    shape[1] = 2;
    b->cursor = gr_tensor_new(b->g, "adamw.cursor", GR_I32, 2, shape);
    shape[1] = 4;
    gr_tensor rec = gr_tensor_new(b->g, "adamw.step", GR_F32, 2, shape);
    gr_tensor all[3] = {b->hyper_tab, b->cursor, rec};
    for (int a = 0; a < 3; a++) {
        size_t per = gr_tensor_elems(b->g, all[a]) / nt;
        for (uint32_t i = 0; i < nt; i++)
            gr_map_region(b->g, all[a], tiles[i] / b->T, tiles[i] % b->T, i * per, (i + 1) * per);
        gr_keep(b->g, all[a]);
    }
    b->nhyper = nt;
    float c[5] = {(float)o->eps, (float)(1.0 - o->lr * o->weight_decay), (float)(1.0 - o->beta1),
                  (float)o->beta2, (float)(1.0 - o->beta2)};
    for (uint32_t i = 0, k = 0; i < nt; i++) {
        size_t tb = (size_t)i * 4 * b->updates;
        gr_field h[3] = {gr_region(rec, 4 * (size_t)i, 4 * (size_t)i + 4),
                         gr_region(b->hyper_tab, tb, tb + 4 * (size_t)b->updates),
                         gr_region(b->cursor, 2 * (size_t)i, 2 * (size_t)i + 1)};
        vtx(b, hyper, "adamw_hyper", 0, tiles[i], h, 3);
        for (; k < b->nupd && b->upd[k].gt == tiles[i]; k++) {
            size_t len = b->upd[k].end - b->upd[k].begin;
            for (unsigned v = 0; v < NW; v++) {
                size_t a = op_split(len, v, NW, 2), z = op_split(len, v + 1, NW, 2);
                if (z == a)
                    continue;
                size_t p0 = b->upd[k].begin + a;
                gr_field f[16] = {gr_region(b->params, p0, p0 + z - a),
                                  gr_region(b->grads, p0, p0 + z - a),
                                  gr_region(b->opt_m, p0, p0 + z - a),
                                  gr_region(b->opt_v, p0, p0 + z - a),
                                  U((uint32_t)(z - a)),
                                  gr_region(rec, 4 * (size_t)i, 4 * (size_t)i + 4),
                                  gr_f32(c[0]),
                                  gr_f32(c[0]),
                                  gr_f32(c[1]),
                                  gr_f32(c[1]),
                                  gr_f32(c[2]),
                                  gr_f32(c[2]),
                                  gr_f32(c[3]),
                                  gr_f32(c[3]),
                                  gr_f32(c[4]),
                                  gr_f32(c[4])};
                vtx(b, step, "adamw_step", 0, tiles[i], f, 16);
            }
        }
    }
    free(tiles);
}

uint32_t mnet_res_words(const mnet_b *b)
{
    return 10 * b->B + 2;
}

/* Plans, tiles and the tensors every run has. */

/* Where a plan's input and weights are held, for its exchanges' estimate: a sample a tile
 * (B; pool2's output landed on B3's IPU too), the fc tiles (16), one tile (t4), the tiles
 * of layer3's plan (its output), conv1's input's row blocks (B xrows), or the homes of
 * layer3's and layer4's spread weights (wtiles). */
enum { ON_B, ON_FC, ON_ONE, ON_L3, ON_X1, ON_W3, ON_W4 };
/* A plan's flags: PL_LIN, one of the linear layers' (from lin_first); PL_EVERY, its weights
 * change every call (a weight gradient's: the output gradient); PL_POOL, its output pooled
 * (2 x 2) where its blocks lie (op_conv_ctx.pool: conv1's, by pool1). No plan reads its input
 * through a transposing view (op_conv_ctx.x_run): layer3's is regrouped first. */
enum { PL_LIN = 1, PL_EVERY = 2, PL_POOL = 4 };

/* conv2's input gradient: dy2 [B][20][8][8] padded by 4, with conv2's weights transposed
 * and flipped, no bias, into [B][10][12][12]. layer3's weight gradient reads its output
 * gradient as dy^T [256][B] (OP_W_FWD); layer4's is made transposed, dW^T = x^T dz (the
 * input dz [B][10] by rows, the weights layer4's input as rows [256][B]), so that no
 * operand is read word by word. x_run: the input read through a transposing view. */
typedef struct plan_row {
    const char *name, *pass;
    int blk, mm, x, w, flags;
    op_conv_shape s; /* conv: B, cin 0 for the batch; mm: K, N in cin, cout */
} plan_row;

/* clang-format off */
static const plan_row plan_tab[MNET_PL_N] = {
    /* name, pass, block, matrix product's pass (-1: a convolution), where the input and
     * the weights are held; flags, the shape */
    [MNET_PL_C1] = {"conv1", "forward", MNET_B1, -1, ON_X1, ON_B,
                    PL_POOL, {0, 1, 28, 28, 10, 5, 1, 0, OP_W_FWD, 0, 0}},
    [MNET_PL_C2] = {"conv2", "forward", MNET_B2, -1, ON_B, ON_B,
                    0, {0, 10, 12, 12, 20, 5, 1, 0, OP_W_FWD, 0, 0}},
    [MNET_PL_L3] = {"layer3", "forward", MNET_B3, OP_MM_FWD, ON_FC, ON_W3,
                    PL_LIN, {0, MNET_X3, 0, 0, MNET_H3, 0, 0, 0, OP_W_FWD, 0, 0}},
    [MNET_PL_L4] = {"layer4", "forward", MNET_B4, OP_MM_FWD, ON_L3, ON_W4,
                    PL_LIN, {0, MNET_H3, 0, 0, 10, 0, 0, 0, OP_W_FWD, 0, 0}},
    [MNET_PL_C2DX] = {"conv2.dx", "input gradient", MNET_B2, -1, ON_B, ON_B,
                      0, {0, 20, 8, 8, 10, 5, 1, 4, OP_W_DX, 1, 0}},
    [MNET_PL_L4DX] = {"layer4.dx", "input gradient", MNET_B4, OP_MM_DX, ON_ONE, ON_W4,
                      PL_LIN, {0, MNET_H3, 0, 0, 10, 0, 0, 0, OP_W_DX, 1, 0}},
    [MNET_PL_L4DW] = {"layer4.dw", "weight gradient", MNET_B4, OP_MM_DW, ON_FC, ON_FC,
                      PL_LIN | PL_EVERY, {0, 10, 0, 0, MNET_H3, 0, 0, 0, OP_W_FWD, 1, 1}},
    [MNET_PL_L3DX] = {"layer3.dx", "input gradient", MNET_B3, OP_MM_DX, ON_L3, ON_W3,
                      PL_LIN, {0, MNET_X3, 0, 0, MNET_H3, 0, 0, 0, OP_W_DX, 1, 0}},
    [MNET_PL_L3DW] = {"layer3.dw", "weight gradient", MNET_B3, OP_MM_DW, ON_B, ON_FC,
                      PL_LIN | PL_EVERY, {0, MNET_X3, 0, 0, MNET_H3, 0, 0, 0, OP_W_FWD, 1, 1}},
    [MNET_PL_C2DW] = {"conv2.dw", "weight gradient", MNET_B2, -1, ON_B, ON_B,
                      PL_EVERY, {10, 0, 12, 12, 20, 8, 1, 0, OP_W_T, 1, 0}},
    [MNET_PL_C1DW] = {"conv1.dw", "weight gradient", MNET_B1, -1, ON_X1, ON_B,
                      PL_EVERY, {1, 0, 28, 28, 10, 24, 1, 0, OP_W_T, 1, 0}},
};
/* clang-format on */

/* The planned operations over the tiles their block's IPU gives (the I/O tiles left out):
 * the convolutions from tile 0, the linear layers from lin_first; the weights change once a
 * weight update (G calls) in training, once in a test pass; a weight gradient's "weights"
 * (the output gradient) every call; each tile keeps MNET_PLAN_RESERVE bytes for the rest of
 * the network's tensors. */
/* Row r's shape for b's micro-batch: a matrix product's from its K and N, a convolution's
 * with the batch where the table has 0. */
static op_conv_shape plan_shape(const mnet_b *b, const plan_row *r)
{
    op_conv_shape sk = r->s;
    if (r->mm >= 0) {
        sk = op_mm_shape((op_mm_pass)r->mm, b->B, r->s.cin, r->s.cout, r->s.acc);
        sk.form = r->s.form;
    } else { /* 0: the batch */
        sk.B = sk.B ? sk.B : b->B;
        sk.cin = sk.cin ? sk.cin : b->B;
    }
    return sk;
}

/* Plan k's context: the tiles from its first, where its input and weights are held, how
 * often its weights change, the memory it leaves (reserve: the earlier linear plans' on its
 * IPU). */
static op_conv_ctx plan_ctx(const mnet_b *b, const mnet_cfg *c, uint32_t k, uint32_t tiles,
                            uint32_t reserve)
{
    const plan_row *r = &plan_tab[k];
    uint32_t held[7] = {b->B,
                        MNET_FC,
                        1,
                        k > MNET_PL_L3 ? b->pipe.plan[MNET_PL_L3].est.tiles : 1,
                        b->B * b->xrows,
                        b->wtiles[0],
                        b->wtiles[1]};
    uint32_t first = r->flags & PL_LIN ? lin_first(b) : 0;
    op_conv_ctx ctx = {tiles > first ? tiles - first : 0,
                       held[r->x],
                       held[r->w],
                       r->flags & PL_EVERY ? 1
                       : b->train          ? b->G
                                           : b->updates,
                       MNET_PLAN_RESERVE,
                       0,
                       0,
                       op_avail_bytes(&c->m, c->mem_prop),
                       (r->flags & PL_POOL) != 0};
    /* the linear layers' plans share their tiles: each leaves room for the ones before it
     * on its IPU (their blocks and patches stay) */
    if (r->flags & PL_LIN)
        ctx.reserve += reserve;
    return ctx;
}

static int plan_ops(mnet_b *b, const mnet_cfg *c, uint32_t tiles, err *e)
{
    uint32_t n = b->train ? MNET_PL_N : MNET_PL_FWD, kept[64] = {0}; /* setup: at most 64 IPUs */
    for (uint32_t k = 0; k < n; k++) {
        const plan_row *r = &plan_tab[k];
        op_conv_shape sk = plan_shape(b, r);
        uint32_t ipu = b->ipu[r->blk];
        op_conv_ctx ctx = plan_ctx(b, c, k, tiles, kept[ipu]);
        mnet_plan *p = &b->pipe.plan[k];
        *p = (mnet_plan){"", r->pass, ipu, sk, {{0}}, {0}};
        snprintf(p->name, sizeof p->name, "%s", r->name);
        err pe;
        err_clear(&pe);
        if (op_conv_plan(&c->m, &sk, &ctx, &p->part, &p->est, &pe) != ERR_OK)
            return err_set(e, ERR_INPUT, "%s (%s): %s", p->name, p->pass, pe.msg);
        if (r->flags & PL_LIN)
            kept[ipu] += p->est.bytes;
    }
    b->pipe.nplans = n;
    return ERR_OK;
}

/* Mapping planned: conv1's input x1s in b->xrows row parts a sample, block (s, p) on tile
 * s xrows + p of B1's IPU, and the infeed's images landed the same (xin_rows). */
static void land_rows(mnet_b *b, conv_t *c)
{
    uint32_t dim[OP_DIMS] = {b->B, 1, 28, 28}, part[OP_DIMS] = {b->B, 1, b->xrows, 1};
    uint32_t i1 = b->ipu[MNET_B1];
    c->x1s = op_act_new(b->g, "x1", i1, 0, dim, part);
    for (uint32_t s = 0; s < b->B; s++)
        for (uint32_t p = 0; p < b->xrows; p++) {
            size_t a, z;
            xin_rows(b, &c->x1s, s, p, &a, &z);
            gr_map_region(b->g, b->xin, i1, s * b->xrows + p, a, z);
        }
}

static int setup(mnet_b *b, net *n, const mnet_cfg *c, err *e)
{
    static const cplan_shape s1 = {1, 28, 28, 10, 5, 0}, s2 = {10, 12, 12, 20, 5, 0};
    b->K = b->planned ? 1 : fc_groups(b->B); /* planned, the matrix products split the batch */
    b->Bc = b->B / b->K;
    b->Bcp = (b->Bc + 3) & ~3u;
    cu_plan(b);
    b->fc0 = b->B;
    b->t4 = b->fc0 + MNET_FC * b->K;
    b->cu0 = b->t4 + b->K;
    b->ntiles = b->cu0 + cu_count(b);
    b->T = c->m.tiles_per_ipu;
    for (int k = 0; k < MNET_BLOCKS; k++) {
        if (c->stage_ipu[k] >= 64)
            return err_set(e, ERR_INPUT, "mnet: block B%d on IPU %u: at most 64 IPUs", k + 1,
                           c->stage_ipu[k]);
        b->ipu[k] = c->stage_ipu[k];
        b->nipus = b->ipu[k] + 1 > b->nipus ? b->ipu[k] + 1 : b->nipus;
    }
    if (sys_io_tiles_check("--io-tiles", c->io_tiles, c->max_tiles ? c->max_tiles : b->T, e))
        return ERR_INPUT;
    uint32_t avail = (c->max_tiles ? c->max_tiles : b->T) - c->io_tiles;
    b->xrows = (uint32_t)min_u64(28, max_u64(1, avail / b->B));
    for (int i = 0; i < 2; i++) {
        b->wper[i] = 2 * ceil_div_u32((uint32_t)SPREAD[i].n, 2 * avail); /* AdamW's pairs */
        b->wtiles[i] = ceil_div_u32((uint32_t)SPREAD[i].n, b->wper[i]);
    }
    if (b->ntiles > avail)
        return err_set(e, ERR_INPUT,
                       "mnet: a micro-batch of %u needs %u tiles (one a sample, %u for the linear "
                       "layers and the loss in %u groups, %u for the update); the IPU has %u",
                       b->B, b->ntiles, (MNET_FC + 1) * b->K, b->K, cu_count(b), avail);
    if (b->planned ? plan_ops(b, c, avail, e) != ERR_OK
                   : cplan_fwd(&b->c1f, &s1, 1, e) || cplan_fwd(&b->c2f, &s2, 1, e))
        return ERR_INPUT;
    if (b->train && (cplan_dx(&b->c2d, &s2, 1, e) || cplan_wgrad(&b->c2w, &s2, e) ||
                     cplan_wgrad(&b->c1w, &s1, e)))
        return ERR_INPUT;
    b->g = gr_new(&c->m, b->nipus);
    gr_replicate(b->g, b->R);
    n->zl = xcalloc((size_t)b->nipus * b->T, sizeof *n->zl);
    param_homes(b);
    b->params = flat(b, "params", 1);
    if (b->train) {
        b->grads = flat(b, "grads", 1);
        /* offloaded, m and v live on the tiles only from their remote read to their write
         * back (graph_mem.c: a remote read defines the whole tensor) */
        b->opt_m = flat(b, "adamw.m", !b->offload);
        b->opt_v = flat(b, "adamw.v", !b->offload);
    }
    uint32_t shape[1] = {b->px * b->B + b->B};
    b->xin = gr_tensor_new(b->g, "infeed", GR_F32, 1, shape);
    uint32_t i1 = b->ipu[MNET_B1];
    if (b->planned)
        land_rows(b, &n->c);
    for (uint32_t s = 0; s < b->B && !b->planned; s++)
        gr_map_region(b->g, b->xin, i1, s, (size_t)b->px * s, (size_t)b->px * (s + 1));
    if (b->planned) /* after the rows, in the stream's tile order (gr_stream_in) */
        gr_map_region(b->g, b->xin, i1, b->B * b->xrows - 1, (size_t)b->px * b->B,
                      (size_t)b->px * b->B + b->B);
    else
        map_by_group(b, b->xin, i1, (size_t)b->px * b->B, 1, b->B);
    if (c->io_tiles) { /* the infeed lands on the I/O tiles, spread evenly, in element order */
        uint32_t io = c->io_tiles, first = b->T - io;
        gr_io_tiles(b->g, i1, first, io);
        b->xio = gr_tensor_new(b->g, "infeed.io", GR_F32, 1, shape);
        for (uint32_t j = 0; j < io; j++)
            if (op_split(shape[0], j + 1, io, 1) > op_split(shape[0], j, io, 1))
                gr_map_region(b->g, b->xio, i1, first + j, op_split(shape[0], j, io, 1),
                              op_split(shape[0], j + 1, io, 1));
    }
    b->res = by_group(b, "outfeed", b->ipu[MNET_B4], 10, mnet_res_words(b));
    conv_tensors(b, &n->c);
    fc_tensors(b, &n->f);
    if (b->planned)
        pfc_build(n);
    n->f.labels = S(b->xin, (size_t)b->px * b->B, b->B);
    n->labels = GR_NONE;
    n->lab = GR_NONE;
    if (b->train && (i1 != b->ipu[MNET_B4] || b->planned)) { /* the labels to the loss */
        gr_tensor lt = by_group(b, "labels", b->ipu[MNET_B4], 1, b->B);
        gr_xfer x = {b->xin, (size_t)b->px * b->B, lt, 0, b->B};
        /* pipelined over IPUs, they travel with the activations (pipelined()) */
        if (!c->pipelined || i1 == b->ipu[MNET_B4])
            n->labels = gr_copy_many(b->g, &x, 1);
        n->f.labels = S(lt, 0, b->B);
        n->lab = lt;
    }
    return ERR_OK;
}

/* The outfeed's sum over a call (out_mode sum) into n: acc laid out as the outfeed buffer
 * (each group's part on its tile), the compute sets zeroing it and adding res to it. */
static void sum_acc(net *n)
{
    mnet_b *b = n->b;
    size_t words = mnet_res_words(b);
    n->acc = S(by_group(b, "outfeed.sum", b->ipu[MNET_B4], 10, words), 0, words);
    n->acc_zero = cs(n, "outfeed.sum.zero");
    n->acc_add = cs(n, "outfeed.sum.add");
    for (uint32_t c = 0; c < b->K; c++) {
        uint32_t t = t4t(b, c);
        size_t a = grp_at(b, c, 10), len = grp_end(b, c, 10, words) - a;
        v_zero(b, n->acc_zero, t, S(n->acc.t, a, len), zl_of(n, t));
        gr_field f[3] = {R(n->acc, a, len), R(n->f.res, a, len), U((uint32_t)len)};
        vtx(b, n->acc_add, "acc_add", 0, t, f, 3);
    }
}

/* mnet_int.h (mnet_check_output has refused other N). */
gr_prog mnet_loop(graph *g, const mnet_cfg *c, uint32_t G, const mnet_mb *mb, gr_tensor res,
                  const mnet_sum *sum, uint32_t updates, uint32_t per_call)
{
    uint32_t every = c->out_mode == STRM_FINAL ? G * per_call : c->out_n;
    gr_prog one = gr_seq(g, (gr_prog[]){mb->pre, mb->post}, 2);
    if (c->out_mode == STRM_SUM) {
        gr_prog mbs = gr_seq(g, (gr_prog[]){mb->pre, gr_execute(g, sum->add), mb->post}, 3);
        gr_prog step = gr_seq(g, (gr_prog[]){gr_repeat(g, G, mbs), mb->upd}, 2);
        gr_prog call = gr_seq(g,
                              (gr_prog[]){gr_execute(g, sum->zero), gr_repeat(g, per_call, step),
                                          gr_stream_out(g, sum->acc)},
                              3);
        return mnet_host_calls(g, updates / per_call, 1, call);
    }
    gr_prog out = gr_stream_out(g, res);
    if (c->out_mode != STRM_FINAL && G % every == 0) {
        gr_prog mbo = gr_seq(g, (gr_prog[]){mb->pre, out, mb->post}, 3);
        gr_prog grp =
            every == 1 ? mbo : gr_seq(g, (gr_prog[]){gr_repeat(g, every - 1, one), mbo}, 2);
        gr_prog step = gr_seq(g, (gr_prog[]){gr_repeat(g, G / every, grp), mb->upd}, 2);
        return mnet_host_calls(g, updates / per_call, per_call, step);
    }
    uint32_t k = every / G;
    gr_prog step = gr_seq(g, (gr_prog[]){gr_repeat(g, G, one), mb->upd}, 2);
    gr_prog grp = gr_seq(g, (gr_prog[]){gr_repeat(g, k, step), out}, 2);
    return mnet_host_calls(g, updates / per_call, per_call / k, grp);
}

/* The training loop for the outfeed mode (mnet_loop), its sum accumulator made here. */
static gr_prog train_loop(net *n, const mnet_cfg *c, gr_prog pre, gr_prog post, gr_prog upd,
                          uint32_t updates, uint32_t per_call)
{
    mnet_sum sum = {GR_NONE, GR_NONE, GR_NONE};
    if (c->out_mode == STRM_SUM) {
        sum_acc(n);
        sum = (mnet_sum){n->acc.t, n->acc_zero, n->acc_add};
    }
    mnet_mb mb = {pre, post, upd};
    return mnet_loop(n->b->g, c, n->b->G, &mb, n->b->res, &sum, updates, per_call);
}

int mnet_stages_in_order(const uint32_t *m, int K)
{
    for (int k = 0; k < K; k++)
        if (m[k] != (k ? m[k - 1] : 0) && (!k || m[k] != m[k - 1] + 1))
            return 0;
    return 1;
}

const char *mnet_stages_text(const uint32_t *m, int K, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int k = 0, at = 0; k < K && (size_t)at < len; k++)
        at += snprintf(buf + at, len - (size_t)at, "%s%u", k ? "," : "", m[k]);
    return buf;
}

int mnet_check_pipeline(const mnet_cfg *c, int train, err *e)
{
    if (!c->pipelined)
        return ERR_OK;
    const uint32_t *m = c->stage_ipu;
    int K = mspec_blocks(c->net ? c->net : mspec_tutorial());
    char on[96];
    if (!mnet_stages_in_order(m, K))
        return err_set(e, ERR_INPUT,
                       "pipelined: blocks B1..B%d on IPUs %s: each IPU is one stage, so B1 goes "
                       "on IPU 0 and each next block on the same IPU or the next",
                       K, mnet_stages_text(m, K, on, sizeof on));
    pipe_cfg pc = {c->schedule, m[K - 1] + 1, train ? (uint32_t)c->run.grad_accum : c->test_iters,
                   train};
    return pipe_check(&pc, c->io_tiles, e);
}

int mnet_check_output(const mnet_cfg *c, err *e)
{
    uint32_t G = (uint32_t)c->run.grad_accum, per = G * (uint32_t)c->run.device_iters;
    uint32_t N = c->out_n;
    if (c->out_mode != STRM_EVERYN || (N && G % N == 0) ||
        (N && N % G == 0 && (uint32_t)c->run.device_iters % (N / G) == 0))
        return ERR_OK;
    return err_set(e, ERR_INPUT,
                   "outfeed mode every:%u: N must divide the gradient accumulation (%u) or be a "
                   "multiple of it that divides the %u micro-batches of a host call",
                   N, G, per);
}

/* Adds p to q unless it is GR_NONE. */
static void add_some(mnet_b *b, seq *q, gr_prog p)
{
    if (p != GR_NONE)
        add(b, q, p);
}

/* ---- pipelined: each IPU a stage (docs/pipelining.md) ---- */

/* A tensor a stage stashes, as its parts on tiles, and where its restore writes (the tensor
 * itself, or a copy of it when the tensor is also what the stage sends on: that must stay
 * as the step's forward left it until the step's copy). */
typedef struct stv {
    gr_tensor t, to;
    gr_type ty;
    const char *name;
    mnet_piece *p;
    size_t np;
} stv;

/* The stashes of one stage being built. */
typedef struct stash {
    stv v[8];
    size_t n;
} stash;

static void stv_rows(stash *st, const char *name, gr_tensor t, gr_type ty, uint32_t first,
                     uint32_t count, size_t per)
{
    stv *v = &st->v[st->n++];
    *v = (stv){t, t, ty, name, xmalloc(count * sizeof *v->p), count};
    for (uint32_t i = 0; i < count; i++)
        v->p[i] = (mnet_piece){first + i, i * per, per};
}

/* The first global tile and the number of the tiles block blk keeps rows on (B1, B2: the
 * sample tiles; B3: the fc tiles). */
static uint32_t block_first(const mnet_b *b, int blk)
{
    return blk == MNET_B3 ? G(b, MNET_B3, b->fc0) : G(b, blk, 0);
}

static uint32_t block_count(const mnet_b *b, int blk)
{
    return blk == MNET_B3 ? MNET_FC * b->K : b->B;
}

static void stv_rt(stash *st, mnet_b *b, const char *name, rt r, gr_type ty, int blk)
{
    stv_rows(st, name, r.t, ty, block_first(b, blk), block_count(b, blk), r.per);
}

/* x3in: each sample's row on its fc tile (planned: on tile s of B3's IPU). */
static void stv_spread(stash *st, mnet_b *b, gr_tensor t)
{
    if (b->planned) {
        stv_rows(st, "layer3.x.in", t, GR_F32, G(b, MNET_B3, 0), b->B, MNET_X3);
        return;
    }
    stv *v = &st->v[st->n++];
    *v = (stv){t, t, GR_F32, "layer3.x.in", xmalloc(b->B * sizeof *v->p), b->B};
    for (uint32_t s = 0; s < b->B; s++)
        v->p[s] = (mnet_piece){spread_tile(b, s), (size_t)s * MNET_X3, MNET_X3};
}

/* A tensor as its mapped regions (a planned operation's output). */
static void stv_regions(stash *st, mnet_b *b, const char *name, gr_tensor t)
{
    stv *v = &st->v[st->n++];
    *v = (stv){t, t, GR_F32, name, NULL, 0};
    v->np = mnet_pieces(b, t, &v->p);
}

/* conv1's input: x1 a sample a tile, or (planned) x1s where its blocks lie. */
static void stv_x1(stash *st, mnet_b *b, const conv_t *c)
{
    if (b->planned)
        stv_regions(st, b, "x1", c->x1s.t);
    else
        stv_rt(st, b, "x1", c->x1, GR_F32, MNET_B1);
}

/* The tensor block k sends to the next block. */
static const char *const stage_out_name[] = {"pool1.y", "pool2.y", "layer3.yT"};
static rt *out_of(net *n, int k)
{
    return k == MNET_B1 ? &n->c.a1 : k == MNET_B2 ? &n->c.x3 : &n->f.y3T;
}

/* What stage [k0, k1] keeps of a micro-batch for its backward: every activation its blocks'
 * backward reads (recompute = 0), or only the stage's input (recompute = 1). */
static void stash_list(net *n, int k0, int k1, int recompute, stash *st)
{
    mnet_b *b = n->b;
    conv_t *c = &n->c;
    fc_t *f = &n->f;
    if (recompute) {
        if (k0 == MNET_B1)
            stv_x1(st, b, c);
        else if (k0 == MNET_B2)
            stv_rt(st, b, "conv2.x", c->a1b, GR_F32, MNET_B2);
        else
            stv_spread(st, b, f->x3in);
        return;
    }
    for (int k = k0; k <= k1; k++) {
        if (k == MNET_B1) {
            stv_x1(st, b, c);
            stv_rt(st, b, "pool1.y", c->a1, GR_F32, k);
            stv_rt(st, b, "pool1.arg", c->arg1, GR_I32, k);
        } else if (k == MNET_B2) {
            if (c->split)
                stv_rt(st, b, "conv2.x", c->a1b, GR_F32, k);
            stv_rt(st, b, "pool2.y", c->x3, GR_F32, k);
            stv_rt(st, b, "pool2.arg", c->arg2, GR_I32, k);
        } else if (k == MNET_B3) {
            if (f->land)
                stv_spread(st, b, f->x3in);
            if (b->planned)
                stv_regions(st, b, "layer3.y", n->p.op[MNET_PL_L3].y.t);
            else
                stv_rt(st, b, "layer3.yT", f->y3T, GR_F32, k);
        }
    }
}

typedef struct stage_b {
    int k0, k1;
    uint32_t ipu, slots;
    int recompute;
} stage_b;

/* The stage's forward blocks in order, with the crossings between them (restored = 1: the
 * recompute, from the restored input, the last block writing to nr's tensors). */
static void stage_fwd(net *n, net *nr, const stage_b *sb, seq *q, int recompute)
{
    mnet_b *b = n->b;
    for (int k = sb->k0; k <= sb->k1; k++) {
        net *w = k == sb->k1 && recompute ? nr : n;
        if (k > sb->k0)
            add_some(b, q, n->fxp[k - 1]);
        if (k == MNET_B3)
            add_some(b, q, n->bc3);
        add(b, q,
            k == MNET_B1   ? fwd_conv(w, MNET_B1)
            : k == MNET_B2 ? fwd_conv(w, MNET_B2)
            : k == MNET_B3 ? fwd_b3(w)
                           : fwd_b4(w));
    }
}

/* Stage s's stash (sb->slots > 0): what it keeps of a micro-batch (stash_list) in rings
 * stashed by cs_s and restored by cs_r, the stage's output restored into nr's own copy (so
 * that the backward reads it there). */
static void stage_stash(net *n, net *nr, const stage_b *sb, uint32_t s, stash *sl, gr_cs cs_s,
                        gr_cs cs_r)
{
    mnet_b *b = n->b;
    stash_list(n, sb->k0, sb->k1, sb->recompute, sl);
    gr_tensor sent = GR_NONE;
    if (!(b->planned && sb->k1 == MNET_B3)) { /* planned, it sends y3s, read by no one */
        rt *o = out_of(nr, sb->k1);
        sent = o->t;
        char nm[64];
        snprintf(nm, sizeof nm, "%s.restored", stage_out_name[sb->k1]);
        *o = (rt){rows(b, nm, GR_F32, block_first(b, sb->k1), block_count(b, sb->k1), o->per),
                  o->per};
    }
    for (size_t i = 0; i < sl->n; i++) {
        if (sent != GR_NONE && sl->v[i].t == sent)
            sl->v[i].to = out_of(nr, sb->k1)->t;
        b->pipe.stash_bytes[s] += mnet_ring(b, sl->v[i].name, sl->v[i].t, sl->v[i].to, sl->v[i].ty,
                                            sl->v[i].p, sl->v[i].np, sb->slots, cs_s, cs_r);
    }
}

/* The crossings from stage s (not the last) to the next: its forward ones up, with the labels
 * in training, and its backward ones down. */
static void stage_crossings(net *n, const stage_b *sb, const gr_tensor *labs, const gr_tensor *lin,
                            mnet_stage *st, uint32_t s)
{
    mnet_b *b = n->b;
    const xing *u = &n->fx[sb->k1], *d = &n->bx[sb->k1];
    st->nup = u->n + (b->train ? 1 : 0);
    st->up = xmalloc((st->nup ? st->nup : 1) * sizeof *st->up);
    if (u->n)
        memcpy(st->up, u->x, u->n * sizeof *st->up);
    if (b->train)
        st->up[u->n] = (gr_xfer){labs[s], s ? 0 : (size_t)b->px * b->B, lin[s + 1], 0, b->B};
    st->ndown = b->train ? d->n : 0;
    st->down = xmalloc((st->ndown ? st->ndown : 1) * sizeof *st->down);
    if (st->ndown) /* the test pass has no backward crossings */
        memcpy(st->down, d->x, st->ndown * sizeof *st->down);
}

/* Stage sb's passes and crossings into st. */
static void stage_build(net *n, const mnet_cfg *c, const stage_b *sb, const gr_tensor *labs,
                        const gr_tensor *lin, mnet_stage *st, uint32_t s, uint32_t N)
{
    mnet_b *b = n->b;
    int last = s == N - 1;
    seq f = {0}, r = {0};
    net nr = *n;         /* the backward's view: the stage's output restored into a copy */
    nr.p.send = GR_NONE; /* planned: a recomputed layer3 sends nothing */
    stash sl = {0};
    gr_cs cs_s = 0, cs_r = 0;
    if (sb->slots) {
        cs_s = cs(n, "stash");
        cs_r = cs(n, "restore");
        stage_stash(n, &nr, sb, s, &sl, cs_s, cs_r);
    }
    if (s == 0)
        infeed(n, &f);
    if (s == 0 && last) /* one IPU: the labels from the infeed to the loss */
        add_some(b, &f, n->labels);
    if (b->train && s && !last)
        add(b, &f, gr_copy(b->g, lin[s], labs[s]));
    stage_fwd(n, &nr, sb, &f, 0);
    if (last && b->train) {
        loss(n, &f);
        if (c->out_mode == STRM_SUM) /* the call's sum, sent once a call (pipelined()) */
            exec(b, &f, n->acc_add);
    } else if (last) {
        add(b, &f, gr_stream_out(b->g, b->res));
    }
    if (sb->slots) {
        exec(b, &f, cs_s);
        exec(b, &r, cs_r);
        if (sb->recompute)
            stage_fwd(n, &nr, sb, &r, 1);
        else if (sb->k0 <= MNET_B3 && MNET_B3 <= sb->k1) /* x3j again, from what was restored */
            add_some(b, &r, sb->k0 == MNET_B3 ? n->bc3 : n->fxp[MNET_B2]);
    }
    if (b->train)
        for (int k = sb->k1; k >= sb->k0; k--) {
            add(b, &r,
                k == MNET_B1   ? bwd_b1(&nr)
                : k == MNET_B2 ? bwd_b2(&nr)
                : k == MNET_B3 ? bwd_b3(&nr)
                               : bwd_b4(&nr));
            if (k > sb->k0)
                add_some(b, &r, xprog(b, &n->bx[k - 1]));
        }
    st->fwd = seq_of(b, &f);
    st->bwd = b->train ? seq_of(b, &r) : GR_NONE;
    free(r.p);
    if (last && b->train) { /* with and without the outfeed copy; all: always with */
        st->fwd_out = gr_seq(b->g, (gr_prog[]){st->fwd, gr_stream_out(b->g, b->res)}, 2);
        if (c->out_mode == STRM_ALL)
            st->fwd = st->fwd_out;
        st->fused = gr_seq(b->g, (gr_prog[]){st->fwd, st->bwd}, 2);
        st->fused_out = gr_seq(b->g, (gr_prog[]){st->fwd_out, st->bwd}, 2);
    }
    if (!last)
        stage_crossings(n, sb, labs, lin, st, s);
    for (size_t i = 0; i < sl.n; i++)
        free(sl.v[i].p);
}

/* One micro-batch through the blocks in order, as one IPU or sharded IPUs run it: pre (the
 * infeed to the loss) and post (the backward), each crossing a Copy in its place. */
static void one_at_a_time(net *n, seq *pre, seq *post)
{
    mnet_b *b = n->b;
    gr_prog f[MNET_BLOCKS] = {fwd_conv(n, MNET_B1), fwd_conv(n, MNET_B2), fwd_b3(n), fwd_b4(n)};
    infeed(n, pre);
    add_some(b, pre, n->labels);
    for (int k = 0; k < MNET_BLOCKS; k++) {
        if (k == MNET_B3)
            add_some(b, pre, n->bc3);
        add(b, pre, f[k]);
        if (k < MNET_BLOCKS - 1)
            add_some(b, pre, n->fxp[k]);
    }
    if (!b->train)
        return;
    loss(n, pre);
    gr_prog r[MNET_BLOCKS] = {GR_NONE, GR_NONE, GR_NONE, bwd_b4(n)};
    r[MNET_B3] = bwd_b3(n);
    r[MNET_B2] = bwd_b2(n);
    r[MNET_B1] = bwd_b1(n);
    for (int k = MNET_BLOCKS - 1; k >= 0; k--) {
        add(b, post, r[k]);
        if (k)
            add_some(b, post, xprog(b, &n->bx[k - 1]));
    }
}

/* The pipelined training loop for the outfeed mode: one = a pipeline run of G micro-batches
 * and the update; the outfeed inside the run (all: every micro-batch's pass; every:N with N
 * dividing G: the passes over micro-batches N - 1, 2N - 1, ...), or after k runs (final: k a
 * call's updates; every:N: k = N / G), or the call's sum (sum: added after each loss, sent
 * and zeroed once a call); each host call ended by the host's sync (host_calls). */
static gr_prog pipe_train_loop(net *n, const mnet_cfg *c, const pipe_cfg *pc, const mnet_stage *st,
                               gr_prog upd, uint32_t updates, uint32_t per_call)
{
    mnet_b *b = n->b;
    graph *g = b->g;
    uint8_t *out = NULL;
    uint32_t k = 0; /* runs between outfeed copies after the run; 0: none */
    if (c->out_mode == STRM_EVERYN && b->G % c->out_n == 0) {
        out = xcalloc(b->G, 1);
        for (uint32_t m = c->out_n - 1; m < b->G; m += c->out_n)
            out[m] = 1;
    } else if (c->out_mode == STRM_EVERYN) {
        k = c->out_n / b->G;
    } else if (c->out_mode == STRM_FINAL || c->out_mode == STRM_SUM) {
        k = per_call;
    }
    gr_prog one = gr_seq(g, (gr_prog[]){mnet_pipe_run(g, pc, st, out), upd}, 2);
    free(out);
    if (!k)
        return mnet_host_calls(g, updates / per_call, per_call, one);
    gr_tensor sent = c->out_mode == STRM_SUM ? n->acc.t : b->res;
    gr_prog call[3] = {gr_repeat(g, k, one), gr_stream_out(g, sent),
                       c->out_mode == STRM_SUM ? gr_execute(g, n->acc_zero) : GR_NONE};
    gr_prog grp = gr_seq(g, c->out_mode == STRM_SUM ? (gr_prog[]){call[2], call[0], call[1]} : call,
                         c->out_mode == STRM_SUM ? 3 : 2);
    return mnet_host_calls(g, updates / per_call, per_call / k, grp);
}

/* The pipelined program (after init): training, updates x { one pipeline run of G
 * micro-batches, the update } (the outfeed inside the run's last stage, or once a call for
 * final); the test pass, runs of c->test_iters micro-batches (the last one shorter, at
 * least N). */
static int pipelined(net *n, const mnet_cfg *c, uint32_t updates, uint32_t per_call, seq *top,
                     err *e)
{
    mnet_b *b = n->b;
    if (mnet_check_pipeline(c, b->train, e))
        return ERR_INPUT;
    uint32_t N = b->pipe.stages = b->ipu[MNET_B4] + 1;
    pipe_cfg pc = {c->schedule, N, b->train ? b->G : c->test_iters, b->train};
    b->pipe.micro = pc.G;
    b->pipe.schedule = c->schedule;
    if (b->train && c->out_mode == STRM_SUM) /* the outfeed's sum over a call */
        sum_acc(n);
    gr_tensor labs[MNET_BLOCKS];
    mnet_stage st[MNET_BLOCKS];
    memset(st, 0, sizeof st);
    /* each stage's labels, received (lin) and sent on with its activations (labs): a stage
     * between the first and the last copies one to the other in its forward, as the copy
     * that sends them on may not read what the same copy delivers */
    gr_tensor lin[MNET_BLOCKS];
    for (uint32_t s = 0; s < N; s++) {
        lin[s] = s == N - 1 ? n->lab : s ? by_group(b, "labels.in", s, 1, b->B) : GR_NONE;
        labs[s] = s == 0 ? b->xin : s < N - 1 ? by_group(b, "labels", s, 1, b->B) : GR_NONE;
    }
    for (uint32_t s = 0; s < N; s++) {
        stage_b sb = {MNET_BLOCKS, -1, s, 0, 0};
        for (int k = 0; k < MNET_BLOCKS; k++)
            if (b->ipu[k] == s) {
                sb.k0 = k < sb.k0 ? k : sb.k0;
                sb.k1 = k;
            }
        b->pipe.in_flight[s] = pipe_in_flight(&pc, s);
        sb.slots = b->train && b->pipe.in_flight[s] > 1 ? b->pipe.in_flight[s] : 0;
        sb.recompute = c->recompute && sb.slots;
        b->pipe.slots[s] = sb.slots;
        stage_build(n, c, &sb, labs, lin, &st[s], s, N);
    }
    if (b->train) {
        seq u = {0};
        update(n, &u);
        zero_acc(n, &u);
        weights(n, &u);
        add(b, top, pipe_train_loop(n, c, &pc, st, seq_of(b, &u), updates, per_call));
    } else {
        uint32_t K = c->test_iters, full = updates / K, rem = updates % K;
        add(b, top, gr_repeat(b->g, full, mnet_pipe_run(b->g, &pc, st, NULL)));
        if (rem) {
            pc.G = rem < N ? N : rem;
            add(b, top, mnet_pipe_run(b->g, &pc, st, NULL));
        }
    }
    for (uint32_t s = 0; s < N; s++) {
        free(st[s].up);
        free(st[s].down);
    }
    return ERR_OK;
}

/* The one-at-a-time program after init: training by the outfeed mode's loop, the test
 * pass one micro-batch after another. */
static void sequential(net *n, const mnet_cfg *c, seq *pre, seq *post, seq *top, int train,
                       uint32_t updates, uint32_t per_call)
{
    mnet_b *b = n->b;
    if (train) {
        seq upd = {0};
        update(n, &upd);
        zero_acc(n, &upd);
        weights(n, &upd);
        gr_prog pp = seq_of(b, pre), po = seq_of(b, post), pu = seq_of(b, &upd);
        add(b, top, train_loop(n, c, pp, po, pu, updates, per_call));
    } else {
        add(b, pre, gr_stream_out(b->g, b->res));
        add(b, top, gr_repeat(b->g, updates, seq_of(b, pre)));
    }
}

int mnet_build(mnet_b *b, const mnet_cfg *c, int train, uint32_t updates, uint32_t per_call, err *e)
{
    memset(b, 0, sizeof *b);
    b->nparams = MREF_NPARAMS;
    b->train = train;
    b->B = (uint32_t)(train ? c->run.batch : c->run.test_batch);
    b->G = (uint32_t)c->run.grad_accum;
    b->updates = updates;
    b->opt = c->run.opt;
    b->dtype = c->dtype;
    b->px = c->dtype == MNET_U8     ? MDATA_PIXELS / 4
            : c->dtype == MNET_FP16 ? MDATA_PIXELS / 2
                                    : MDATA_PIXELS;
    b->R = c->replicas ? c->replicas : 1;
    b->xio = GR_NONE;
    b->offload = train && c->offload;
    b->planned = c->mapping == MNET_MAP_PLANNED;
    if (train && mnet_check_output(c, e))
        return ERR_INPUT;
    net *n = xcalloc(1, sizeof *n);
    n->b = b;
    int rc = setup(b, n, c, e);
    if (rc == ERR_OK) {
        seq init = {0}, pre = {0}, post = {0}, top = {0};
        if (train)
            zero_acc(n, &init);
        weights(n, &init);
        n->in1 = fwd_input(n);
        fwd_crossings(n);
        for (int k = 0; k < MNET_BLOCKS - 1; k++)
            n->fxp[k] = xprog(b, &n->fx[k]);
        n->bc3 = bcast3(n);
        if (train)
            bwd_crossings(n);
        if (b->xio != GR_NONE) /* the first micro-batch onto the I/O tiles */
            add(b, &init, gr_stream_in(b->g, b->xio));
        add(b, &top, seq_of(b, &init));
        if (c->pipelined) {
            rc = pipelined(n, c, updates, per_call, &top, e);
        } else {
            one_at_a_time(n, &pre, &post);
            sequential(n, c, &pre, &post, &top, train, updates, per_call);
        }
        b->main = seq_of(b, &top);
    }
    for (int k = 0; k < MNET_BLOCKS - 1; k++) {
        free(n->fx[k].x);
        free(n->bx[k].x);
    }
    cplan_pack_free(&n->c.p_dy2);
    cplan_pack_free(&n->c.p_dy1);
    free(n->zl);
    free(n);
    return rc;
}

void mnet_b_free(mnet_b *b)
{
    cplan_conv *p[5] = {&b->c1f, &b->c2f, &b->c2d, &b->c2w, &b->c1w};
    for (int i = 0; i < 5; i++)
        cplan_free(p[i]);
    for (size_t k = 0; k < b->ninit; k++)
        free(b->init[k].w);
    free(b->init);
    free(b->upd);
    gr_free(b->g);
    memset(b, 0, sizeof *b);
}
