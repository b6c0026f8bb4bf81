/* ops: the operation library, in the spirit of PopLibs: operations built on the graph layer
 * (workloads/graph/graph.h), each planned over a set of tiles by a cost model, as poplin's
 * convolution planner does (docs/planning.md).
 *
 * Activations are 4-D tensors [B][C][H][W] held in a *blocked layout* (op_act): each
 * dimension is cut into parts, the blocks are stored one after another in block order and
 * each block in row-major order, so a block is one contiguous stretch of the tensor and can
 * live on one tile. A layout with parts only in B (one part a sample, say) is plain
 * row-major. Operations read any blocked layout (the graph's Copy moves what each tile needs)
 * and write their output in the blocked layout of their plan.
 *
 * The convolution (op_conv_*) is planned over (batch, output rows, output columns, input
 * channels, output channels, kernel rows): a candidate partition gives each tile a block of the output
 * and a range of input channels; its cost is the sum of the estimated cycles of the steps it
 * compiles to (each from the codelets' closed-form cycles, or from the exchange's bytes), and
 * the planner takes the cheapest candidate whose tiles fit their SRAM. */
#ifndef IPUSIM_OPS_OPS_H
#define IPUSIM_OPS_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "hw/machine.h"
#include "workloads/graph/conv_plan.h"
#include "workloads/graph/graph.h"

/* ---- blocked activations ---- */

enum { OP_B, OP_C, OP_H, OP_W, OP_DIMS };

/* dim[d] cut into part[d] parts of whole grains of grain[d] (the last may be shorter): part i
 * of dimension d covers [op_lo(d, i), op_lo(d, i + 1)). Block k (in block order) starts
 * k x pad elements later than the blocks before it make it: a producer's buffers with
 * padding after each block (a sample's image and the 8 floats conv_amp reads past it). */
typedef struct op_act {
    gr_tensor t;
    uint32_t dim[OP_DIMS], part[OP_DIMS], grain[OP_DIMS];
    uint32_t pad;
    /* A view: index d of the activation (b, c, y, x) is index map[d] of the stored layout
     * above (dim, part, grain are the stored ones). The identity for a layout; op_act_view
     * makes others: a transpose ([F][B] read as [B][F]) or a reshape through dimensions of
     * one (a matrix [M][K] stored as [M][K][1][1], read as [1][M][1][K]). */
    uint8_t map[OP_DIMS];
    size_t at; /* where the layout starts in t (a part of a larger tensor; 0 for most) */
} op_act;

/* A layout of dims cut into parts (grains 1, no padding). */
op_act op_act_make(gr_tensor t, const uint32_t dim[OP_DIMS], const uint32_t part[OP_DIMS]);
/* a read through map: index d of the view is index map[d] of a (a view of a view composes).
 * map must be a permutation of 0..3. */
op_act op_act_view(const op_act *a, const uint8_t map[OP_DIMS]);
/* The view's size in dimension d (a->dim[a->map[d]]). */
uint32_t op_act_dim(const op_act *a, int d);
/* How many elements from (b, c, y, x) on, stepping x, lie one after another in the tensor
 * (within one block; 1 where x is not the stored layout's innermost dimension). */
uint32_t op_act_run(const op_act *a, uint32_t b, uint32_t c, uint32_t y, uint32_t x);
/* First index of part i of n cut into `parts` parts of whole grains of `grain` (i = parts:
 * n): min(n, grain floor(ceil(n / grain) i / parts)), the layouts' cut (the last part may be
 * shorter, none longer than another by more than a grain). */
uint32_t op_cut(uint32_t n, uint32_t parts, uint32_t grain, uint32_t i);
/* First index of part v of n cut into nv parts of whole grains, the last taking what is left
 * (v = nv: n): how work is shared among a tile's workers, or a block among the tiles that
 * reduce it. */
size_t op_split(size_t n, unsigned v, unsigned nv, size_t grain);
/* First index of part i of stored dimension d (i = part[d]: dim[d]): op_cut of the
 * dimension. op_part_of, op_block_at and op_block_elems too speak of the stored layout. */
uint32_t op_lo(const op_act *a, int d, uint32_t i);
/* The part of dimension d holding index v. */
uint32_t op_part_of(const op_act *a, int d, uint32_t v);
size_t op_act_elems(const op_act *a);
/* Where block idx starts in the tensor, and its size. */
size_t op_block_at(const op_act *a, const uint32_t idx[OP_DIMS]);
size_t op_block_elems(const op_act *a, const uint32_t idx[OP_DIMS]);
/* The element (b, c, y, x) of the view in the tensor. */
size_t op_act_at(const op_act *a, uint32_t b, uint32_t c, uint32_t y, uint32_t x);
/* A new fp32 tensor in layout (dim, part), each block on tile first + its block number of
 * IPU ipu: the layout a producer without a plan gives (the infeed's samples, say). */
op_act op_act_new(graph *g, const char *name, uint32_t ipu, uint32_t first,
                  const uint32_t dim[OP_DIMS], const uint32_t part[OP_DIMS]);
/* A new fp32 tensor in like's stored layout (its dims, parts, grains, padding and view), each
 * block on tile first + its block number of IPU ipu: where a layout crosses to another IPU
 * (a stage's input landing as its producer left it, so the Copy moves whole blocks). */
op_act op_act_like(graph *g, const char *name, uint32_t ipu, uint32_t first, const op_act *like);
/* One Copy moving every element of src to the same element of dst (the same view dims, any
 * two layouts or views): a piece per stretch contiguous in both, so that one operation's
 * output mapping feeds the next one's input (a transpose moves element by element); GR_NONE
 * when there is nothing to move. */
gr_prog op_act_copy(graph *g, const op_act *src, const op_act *dst);
/* Its pieces (*out: malloc'ed, the caller frees it): how many; for a Copy made with others. */
size_t op_act_xfers(const op_act *src, const op_act *dst, gr_xfer **out);
/* Host data in a row-major [B][C][H][W] array (the view's dims) to the layout's order (dst:
 * op_act_elems from the layout's start), or back (op_act_unblock). */
void op_act_block(const op_act *a, const float *rowmajor, float *dst);
void op_act_unblock(const op_act *a, const float *blocked, float *rowmajor);

/* ---- convolution: y = conv(x, w) + bias, with stride and zero padding ---- */

/* Elements of a tensor from `at` on: an operand inside a larger tensor (a layer's weights
 * in the network's flat parameter vector); with copies > 1, copy j of it lies at at + j x
 * stride (weights broadcast to several tiles) and readers spread over the copies. */
typedef struct op_ref {
    gr_tensor t;
    size_t at;
    uint32_t copies;
    size_t stride;
} op_ref;

/* y[b][co][oy][ox] = bias[co] + sum over ci, ky, kx of w[co][ci][ky][kx] x[b][ci][oy stride +
 * ky - pad][ox stride + kx - pad], x zero outside [0, h) x [0, w): nn.Conv2d's semantics. */
typedef struct op_conv_shape {
    uint32_t B, cin, h, w, cout, k; /* x [B][cin][h][w], w [cout][cin][k][k] */
    uint32_t stride, pad;           /* 0: stride 1; zero rows and columns on every side */
    uint32_t form;                  /* op_wform: how the weights tensor holds w */
    uint32_t nobias;                /* 1: no bias (its tensor is not read, its step not made) */
    uint32_t acc;                   /* 1: y += the convolution, y kept between calls (its user
                                     * zeroes it): a weight gradient accumulated over
                                     * micro-batches; needs nobias, and the input channels are
                                     * not split (the sum stays on the tile that holds y) */
} op_conv_shape;

/* How the weights tensor holds w. OP_W_FWD: w[cout][cin][k][k] itself (nn.Conv2d's weight).
 * OP_W_DX: the weight v[cin][cout][k][k] of a layer from cout to cin channels, w read as v
 * transposed and flipped, w[co][ci][ky][kx] = v[ci][co][k-1-ky][k-1-kx]: with padding k - 1,
 * the convolution of that layer's output gradient is its input gradient, as PopLibs computes
 * it (a convolution with the kernel flipped and its channels swapped). */
/* OP_W_T: w[co][ci][ky][kx] = v[ci][co][ky][kx], transposed only: a weight gradient as a
 * convolution with the roles swapped, as PopLibs makes it (the input the activations with
 * their batch and channel dimensions swapped, the weights the output gradient dy[b][co][y][x]
 * read as [cout = co][cin = b][ky = y][kx = x], the output dW^T [ci][co][ky][kx]). */
typedef enum op_wform { OP_W_FWD, OP_W_DX, OP_W_T } op_wform;
/* The output's rows and columns: (h + 2 pad - k) / stride + 1 (0 when the kernel does not
 * fit). */
uint32_t op_conv_ho(const op_conv_shape *s);
uint32_t op_conv_wo(const op_conv_shape *s);

/* A partition: the output's batch, rows, columns split in b, y, x parts, the input channels
 * in ci parts and the kernel's rows in ky parts (each tile a partial sum of its channels and
 * kernel rows, the ci x ky partial sums of a block reduced across tiles), the output channels
 * in co parts of whole groups of 16 (the AMP's width). */
enum { OP_PB, OP_PY, OP_PX, OP_PCI, OP_PCO, OP_PK, OP_NPART };
typedef struct op_conv_part {
    uint32_t p[OP_NPART];
} op_conv_part;

/* The steps a planned convolution compiles to, in run order; prep steps run once per weight
 * change (op_conv.prep), the others every call (op_conv.run). */
enum {
    OP_S_WX,      /* exchange: each tile's slice of w (and of the bias) to it (prep) */
    OP_S_PACK,    /* compute: conv_pack, the slice into the AMP's weight blocks (prep) */
    OP_S_IN,      /* exchange: each tile's input patch (its rows and columns with the halo) */
    OP_S_AMP,     /* compute: conv_amp, the partial sums */
    OP_S_UNGROUP, /* compute: conv_ungroup, partials to [b][c][y][x] */
    OP_S_BIAS,    /* compute: bias_add (on the first input-channel part) */
    OP_S_RX,      /* exchange: the ci parts' partial outputs to the tiles that reduce them */
    OP_S_REDUCE,  /* compute: reduce_add, ci parts summed in order */
    OP_S_N
};
/* Name of a step ("amp", ...). */
const char *op_conv_step_name(int s);
/* 1 for compute-set steps, 0 for exchanges. */
int op_conv_step_compute(int s);
/* Which step of the convolution named op a program step of a compiled graph is (gr_exe_steps),
 * or -1. */
int op_conv_step_of(const char *op, const gr_step *st);

typedef struct op_conv_est {
    uint32_t tiles;               /* tiles used: the product of the parts */
    uint64_t step[OP_S_N];        /* estimated cycles of each step, 0: not in the plan */
    uint64_t run, prep;           /* their sums */
    uint64_t cost;                /* what the planner minimises: run + prep / reuse */
    uint32_t bytes;               /* the largest tile's estimated memory */
    uint32_t temp;                /* the largest tile's working memory: its memory less its
                                   * block of the output (what op_conv_ctx.avail bounds) */
    uint64_t in_bytes, red_bytes; /* bytes exchanged a call: input patches, partial sums */
    uint64_t w_bytes;             /* bytes exchanged a prep: weight slices */
    uint64_t in_sends, w_sends;   /* transfers of the input exchange and of the weights' (their
                                   * senders share them) */
} op_conv_est;

/* What the planner is told besides the shape. */
typedef struct op_conv_ctx {
    uint32_t tiles;   /* tiles it may use */
    uint32_t x_tiles; /* tiles holding the input, row-major blocks (the input's senders) */
    uint32_t w_tiles; /* tiles holding the weights and bias, spread evenly (their senders) */
    uint32_t reuse;   /* calls per prep: the planner minimises run + prep / reuse */
    uint32_t reserve; /* bytes a tile kept for what the estimate does not count (code,
                       * vertex states, other operations' tensors) */
    uint32_t x_run;   /* the input read through a view: the longest stretch of a patch row
                       * one transfer moves (1: a transposed matrix, element by element);
                       * 0: a layout, a transfer a row */
    uint32_t x_sends; /* the most transfers of the input exchange one of its x_tiles may send
                       * (each is code on that tile: docs/planning.md); 0: no limit */
    uint32_t avail;   /* the most working memory (op_conv_est.temp) a tile may give the plan:
                       * PopLibs' availableMemoryProportion of its SRAM; 0: no bound but the
                       * SRAM less reserve */
    uint32_t pool;    /* 1: op_pool_fwd pools the output where its blocks lie, so each block
                       * is on the one tile that makes it (no split of input channels or
                       * kernel rows, whose reduction leaves chunks) and op_pool_layout admits
                       * the output's layout; 0: no such consumer */
} op_conv_ctx;

/* ERR_OK if p is a partition op_conv_build can make of s: every part count from 1 to its
 * dimension, a kernel of 1 to 8 and padding less than it, and every output block whole
 * 16-byte rows of each channel (bias_add's rows) unless it is one row. */
int op_conv_check(const op_conv_shape *s, const op_conv_part *p, err *e);
/* The model's cost of partition p on machine m (docs/planning.md). ERR_INPUT when p is not
 * a valid partition of s (a part empty or larger than its dimension, a block whose rows are
 * not whole 16-byte rows). */
int op_conv_estimate(const mach *m, const op_conv_shape *s, const op_conv_part *p,
                     const op_conv_ctx *c, op_conv_est *est, err *e);
/* The cheapest valid partition over at most c->tiles tiles whose estimated tile memory fits
 * the SRAM less c->reserve, whose working memory fits c->avail (and whose input senders make
 * at most c->x_sends transfers each; with c->pool, whose output blocks it can pool); ties go
 * to fewer tiles. ERR_INPUT when none fits. */
int op_conv_plan(const mach *m, const op_conv_shape *s, const op_conv_ctx *c, op_conv_part *best,
                 op_conv_est *est, err *e);
/* PopLibs' default availableMemoryProportion: the share of a tile's SRAM a convolution or
 * matrix product may take as working memory (docs/planning.md, "Memory"). */
#define OP_AVAIL_DEFAULT 0.6
/* op_conv_ctx.avail for the proportion `prop` (0 < prop <= 1) of a tile's SRAM on m: at
 * least 1 byte, so that a tiny proportion bounds the plan rather than lifting the bound. */
uint32_t op_avail_bytes(const mach *m, double prop);
/* "b 40 y 2 x 3 ci 1 co 1" */
void op_conv_part_text(const op_conv_part *p, char *buf, size_t n);

/* A planned convolution in a graph. */
typedef struct op_conv {
    gr_prog prep;     /* weights to the tiles and into the AMP's blocks: after every change of w */
    gr_prog run;      /* y = conv(x) + bias */
    op_act y;         /* [B][cout][ho][wo] in blocks (b, co, y, x) */
    gr_cs cs[OP_S_N]; /* the compute sets of the compute steps (GR_NONE where absent) */
} op_conv;

/* Build the convolution of x (any blocked layout of [B][cin][h][w], fp32) with w (fp32
 * [cout][cin][k][k] from w.at, any mapping) and bias (fp32 [cout] from bias.at) on tiles
 * first .. of IPU ipu, partitioned by p: tile first + (((ib py + iy) px + ix) pco + ico) pci
 * + ici takes output block (ib, ico, iy, ix) and input channels part ici. Errors go to the
 * graph (gr_status). */
/* The layout of a convolution's output y under partition p (no tensor yet): op_conv_build's,
 * for what a consumer needs of it before the build (op_pool_layout). */
op_act op_conv_out_layout(const op_conv_shape *s, const op_conv_part *p);
void op_conv_build(graph *g, const char *name, uint32_t ipu, uint32_t first, const op_conv_shape *s,
                   const op_conv_part *p, const op_act *x, op_ref w, op_ref bias, op_conv *out);

/* ---- element-wise operations: each follows its tensor's mapping (no exchange) ---- */

/* A new fp32 tensor of t's elements, mapped region for region as t is. */
gr_tensor op_like(graph *g, const char *name, gr_tensor t);
/* A new fp32 tensor of t's n elements from at, mapped region for region as t is (a region cut
 * where the range cuts it) on the same tiles of IPU ipu: poputil's cloneToIpu, what a Copy
 * between IPUs lands in under PopART (one transfer a region, each tile to its namesake). */
gr_tensor op_clone(graph *g, const char *name, gr_tensor t, size_t at, size_t n, uint32_t ipu);
/* dy == GR_NONE: y = max(y, +0) in place (relu_fwd); else dy = y > 0 ? dy : +0 in place
 * (relu_bwd), dy mapped as y. Vertices into cs. */
void op_relu(graph *g, gr_cs cs, gr_tensor y, gr_tensor dy);
/* dst += src (acc_add), src mapped as dst. */
void op_acc(graph *g, gr_cs cs, gr_tensor dst, gr_tensor src);
/* t = 0 (conv_pack of empty blocks; a 3-word constant descriptor on each of t's tiles,
 * named after name). */
void op_zero(graph *g, gr_cs cs, gr_tensor t, const char *name);

/* ---- pooling: follows its input's mapping ---- */

/* y = a blocked activation [B][C][H][W] (no view) whose every block lies on one tile and has
 * even rows and columns (the output of a convolution planned without splitting its input
 * channels or kernel rows, whose field parts are even): 2 x 2 max-pool then ReLU of each
 * block on its tile (maxpool_relu_fwd, vertices in a new compute set *cs named name), into
 * *out (fp32) and *arg (int32: each maximum's index in its window, as maxpool_relu_bwd reads
 * it), new [B][C][H/2][W/2] layouts blocked as y, each block on its y block's tile, named
 * name.y and name.arg. ERR_INPUT, nothing made, when y's layout does not allow it (the
 * caller pools elsewhere). */
int op_pool_fwd(graph *g, const char *name, const op_act *y, gr_cs *cs, op_act *out, op_act *arg);
/* Whether y's layout admits op_pool_fwd and op_pool_bwd: a plain layout (no view, no padding)
 * whose every part boundary of rows and columns is even (where the blocks lie is theirs to
 * check). */
int op_pool_layout(const op_act *y);
/* The gradient of op_pool_fwd's pooling of y (out, arg: its results): dout, the gradient at
 * the pool's output (a tensor mapped as out->t, element for element: op_like), routed to each
 * window's maximum where the output is > 0 (maxpool_relu_bwd, vertices in a new compute set
 * *cs named name) into *din, a new [B][C][H][W] layout blocked as y (from its start), each
 * block on its y block's tile, named name.din. ERR_INPUT, nothing made, where op_pool_fwd
 * would refuse y. */
int op_pool_bwd(graph *g, const char *name, const op_act *y, const op_act *out, const op_act *arg,
                gr_tensor dout, gr_cs *cs, op_act *din);

/* ---- matrix products: a linear layer as a convolution ----
 *
 * nn.Linear's y[M][N] = x[M][K] W^T + b (W [N][K]) over a batch of M rows is planned and
 * built as a 1 x 1 convolution whose field is the batch, as poplin's matMul is a convolution
 * over the rows of its left operand: one image of one row of M positions, K input channels,
 * N output channels. Its gradients are two more:
 *   OP_MM_FWD  y^T [N][M] = W x^T + b:    input x viewed [1][K][1][M], weights W as they are;
 *   OP_MM_DX   dx^T [K][M] = W^T dy^T:    input dy viewed [1][N][1][M], W read transposed
 *                                          (OP_W_DX), no bias;
 *   OP_MM_DW   dW [N][K] = dy^T x:        the batch the input channels: input x viewed
 *                                          [1][M][1][K], weights dy [M][N] read transposed
 *                                          (OP_W_DX), no bias, accumulating when acc.
 * The inputs are views of the matrices' layouts (op_mm_in), so no transpose is copied: the
 * input Copy gathers each tile's patch through the view. The outputs are [1][rows][1][cols]
 * activations; op_mm_out reads one as the matrix [cols][rows] (y and dx) or [rows][cols]
 * (dW). */
typedef enum op_mm_pass { OP_MM_FWD, OP_MM_DX, OP_MM_DW } op_mm_pass;

/* The convolution of pass over a batch of M rows of a layer from K to N features. */
op_conv_shape op_mm_shape(op_mm_pass pass, uint32_t M, uint32_t K, uint32_t N, uint32_t acc);
/* The convolution's input view of a matrix held as [rows][cols][1][1] (x [M][K] for
 * OP_MM_FWD and OP_MM_DW, dy [M][N] for OP_MM_DX). */
op_act op_mm_in(const op_act *matrix, op_mm_pass pass);
/* The same of a matrix held transposed as [1][cols][1][rows]: what OP_MM_FWD and OP_MM_DX
 * output (a layer's y^T is the next layer's x^T, and the input of its weight gradient). */
op_act op_mm_in_t(const op_act *t, op_mm_pass pass);
/* The matrix a pass's output is: y [M][N] or dx [M][K] (the output transposed back), or dW
 * [N][K] (as it is), each as a [rows][cols][1][1] view. */
op_act op_mm_out(const op_act *y, op_mm_pass pass);

/* ---- one tile's vertices, each codelet's work cut over the tile's six workers ----
 *
 * The builders the operations above and a network's own steps share (ops/vtx.c): each makes
 * the vertices of one codelet on (ipu, tile) in cs, a worker's share as its header lays out. */

typedef struct op_sl { /* elements [at, at + n) of a tensor */
    gr_tensor t;
    size_t at, n;
} op_sl;

/* An element-wise codelet over the n elements of slice a, with b (the same elements of a
 * second operand; for OP_E_ZERO a zero descriptor, 3 words), a worker's share in runs of
 * whole `grain`s: relu_fwd (a = max(a, 0)), relu_bwd (b = a > 0 ? b : 0), acc_add (a += b),
 * or a = 0 (conv_pack of no valid rows). */
typedef enum op_elem { OP_E_RELU, OP_E_RELU_GRAD, OP_E_ACC, OP_E_ZERO, OP_E_N } op_elem;
void op_v_elem(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_elem op, op_sl a, op_sl b,
               size_t grain);
/* out = k x the sum of P parts (stride elements apart, in part order), n elements
 * (reduce_add; a worker's share whole pairs). */
void op_v_reduce(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl out, op_sl parts,
                 uint32_t n, uint32_t P, uint32_t stride, float k);
/* conv_pack of p's blocks (list: their 3-word descriptors) from src into dst (a sixth of the
 * blocks a worker). */
void op_v_pack(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, const cplan_pack *p, op_sl list,
               op_sl dst, op_sl src);
/* out[c][p] (+= with acc) in[c / 16][p][c % 16], C channels of P positions (conv_ungroup; a
 * sixth of the channels a worker). */
void op_v_ungroup(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl out, op_sl in, uint32_t C,
                  uint32_t P, int acc);
/* bias_add (grad 0: y[i][c][p] += bias[c]) or bias_grad (grad 1: bias[c] += the sum over i, p
 * of y[i][c][p]) over B images of C channels of P positions, a channel's row P after the
 * previous, an image istride after the previous (a sixth of the channels a worker). */
void op_v_bias(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl y, op_sl bias, uint32_t C,
               uint32_t P, uint32_t B, uint32_t istride, int grad);
/* 2 x 2 max-pool then ReLU (maxpool_relu_fwd): R output rows of w / 2 from R pairs of rows of
 * w, arg the index of each maximum (a sixth of the rows a worker); and its gradient
 * (maxpool_relu_bwd): din from dout, out and arg. */
void op_v_pool_fwd(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl in, op_sl out, op_sl arg,
                   uint32_t R, uint32_t w);
void op_v_pool_bwd(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl dout, op_sl out,
                   op_sl arg, op_sl din, uint32_t R, uint32_t w);

#endif
