/* mnet_int: the MNIST graph's builder, shared by mnet_graph.c (the layers as tensors, vertices
 * and programs) and mnet.c (the run: system, host feed and drain, parameters in and out). */
#ifndef IPUSIM_MNIST_MNET_INT_H
#define IPUSIM_MNIST_MNET_INT_H

#include <stddef.h>
#include <stdint.h>

#include "workloads/graph/conv_plan.h"
#include "workloads/graph/graph.h"
#include "workloads/graph/pipe.h"
#include "workloads/mnist/adamw.h"
#include "workloads/mnist/mnet.h"
#include "workloads/ops/ops.h"

#define MNET_FC 16       /* tiles of layer3 a group, 16 of its 256 outputs each */
#define MNET_FC_BATCH 40 /* the most samples one group of the linear layers' tiles takes */
#define MNET_CONVP 5280  /* the convolutions' parameters: conv1's 260, then conv2's 5,020 */
#define MNET_CONV1P 260
#define MNET_PLAN_RESERVE 131072 /* bytes a tile the convolutions' plans leave to the rest */
/* The planned operations (mnet_pipe_info.plan), the forward ones first (a test pass plans
 * only those): the linear layers as matrix products (ops.h: OP_MM_*) */
enum {
    MNET_PL_C1,                 /* conv1 forward */
    MNET_PL_C2,                 /* conv2 forward */
    MNET_PL_L3,                 /* layer3 forward */
    MNET_PL_L4,                 /* layer4 forward */
    MNET_PL_FWD,                /* how many a test pass plans */
    MNET_PL_C2DX = MNET_PL_FWD, /* conv2's input gradient */
    MNET_PL_L4DX,               /* layer4's input gradient */
    MNET_PL_L4DW,               /* layer4's weight gradient (accumulated) */
    MNET_PL_L3DX,               /* layer3's input gradient */
    MNET_PL_L3DW,               /* layer3's weight gradient (accumulated) */
    MNET_PL_C2DW,               /* conv2's weight gradient (its roles swapped) */
    MNET_PL_C1DW,               /* conv1's weight gradient (its roles swapped) */
    MNET_PL_N
};
#define MNET_CU2 10 /* tiles updating conv2's parameters, per group of the linear layers */
#define MNET_X3 320 /* layer3's inputs */
#define MNET_H3 256 /* layer3's outputs */
/* mnet_cfg.offload: the remote buffers of AdamW's m and v, one each, the flat vector's
 * element i at byte 4 i (each IPU reads and writes only its parameters' bytes). */
#define MNET_RB_M 0
#define MNET_RB_V 1

/* Host data written into a tensor once the graph is loaded (tables, constants): `reps`
 * copies of `n` elements from element `at`, one after another. */
typedef struct mnet_init {
    gr_tensor t;
    size_t at;
    uint32_t *w;
    size_t n;
    uint32_t reps;
} mnet_init;

/* The network's four blocks (the tutorial's poptorch.Block scopes), each on an IPU. */
enum { MNET_B1, MNET_B2, MNET_B3, MNET_B4, MNET_BLOCKS };

/* Where the parameters' optimiser lives: a range of the flat vector on a tile (ipu x tiles
 * per IPU + tile). */
typedef struct mnet_upd {
    uint32_t gt;
    size_t begin, end;
} mnet_upd;

typedef struct mnet_b {
    graph *g;
    int train;
    uint32_t B; /* micro-batch */
    /* the linear layers and the loss run the micro-batch in K groups of Bc samples side by
     * side, each group on tiles of its own (a group holds all of its samples' activations);
     * Bcp: Bc padded to 4 for the transposed layers */
    uint32_t K, Bc, Bcp;
    uint32_t G;       /* gradient accumulation */
    uint32_t updates; /* weight updates in the run (the optimiser's step table) */
    adamw_cfg opt;
    uint32_t nhyper; /* tiles with a step table */
    /* tiles, on each IPU: samples 0..B-1 (B1, B2), layer3 fc0 + 16 c + j (B3: group c, outputs
     * 16 j..), layer4 and the loss t4 + c (B4), updates cu0.. (B1, B2): ncu[0] for conv1's
     * parameters, then ncu[1] for conv2's, cuper[] of them on each (the last fewer) */
    uint32_t fc0, t4, cu0, ntiles;
    uint32_t ncu[2], cuper[2];
    uint32_t T;                /* tiles per IPU */
    uint32_t ipu[MNET_BLOCKS]; /* each block's IPU */
    uint32_t nipus;            /* IPUs used by one replica */
    uint32_t R;                /* replicas */
    int offload;               /* m and v in remote buffers (mnet_cfg.offload) */
    mnet_dtype dtype;          /* the images in the infeed */
    uint32_t px;               /* infeed words an image: 784 fp32, 196 of bytes, 392 of fp16 */
    /* mapping planned (mnet_cfg.mapping): the convolutions' forward, conv2's input gradient
     * and the linear layers planned over their IPU's tiles (ops.h; the plans in pipe.plan;
     * K is then 1: the matrix products split the batch themselves) */
    int planned;
    /* planned: conv1's input (the infeed's images, then x1) in row parts a sample, a block a
     * tile from tile 0 of B1's IPU (Poplar lays a convolution's input out for it: each tile
     * holds rows, so that no 40 tiles send every patch) */
    uint32_t xrows;
    /* planned: layer3's (0) and layer4's (1) weights' homes (params, gradients, AdamW's m and
     * v) in stretches of wper floats on wtiles tiles from tile 0 of their block's IPU, as
     * Poplar spreads a variable over the tiles (mapTensorLinearly), not 16 fc tiles of 5,120
     * each and one of 2,560: their update and the plans' weight exchanges spread with them */
    uint32_t wper[2], wtiles[2];
    /* plans of one sample's convolutions (the forward's only per sample) */
    cplan_conv c1f, c2f, c2d, c2w, c1w;
    /* tensors the run touches from the host */
    gr_tensor xio; /* the infeed's landing on the I/O tiles, or GR_NONE */
    gr_tensor xin, res, params, grads, opt_m, opt_v, hyper_tab, cursor;
    size_t nparams; /* the flat parameter vector's floats (the network's, mref_nparams) */
    mnet_init *init;
    size_t ninit, cinit;
    mnet_upd *upd;
    size_t nupd, cupd;
    gr_prog main;
    mnet_pipe_info pipe; /* pipelined: the stages */
} mnet_b;

/* One pipeline stage (the blocks on one IPU) as mnet_pipe.c schedules it. */
typedef struct mnet_stage {
    gr_prog fwd;   /* (stage 0: the infeed) its blocks' forward (last stage in training: and the
                    * loss and the outfeed), then the stash */
    gr_prog bwd;   /* the restore (and the recomputed forward), its blocks' backward */
    gr_prog fused; /* last stage in training: forward, loss, outfeed and backward in one pass */
    gr_prog fwd_out, fused_out; /* last stage: the same passes with the outfeed copy (fwd and
                                 * fused have none when only some micro-batches send) */
    gr_xfer *up;                /* the crossing to the next stage after this stage's forward */
    size_t nup;
    gr_xfer *down; /* the crossing from the next stage to this one after its backward */
    size_t ndown;
} mnet_stage;

/* Host data written into t from element `at` once the graph is loaded: `reps` copies of the
 * n words w (copied). */
void mnet_init_words(mnet_b *b, gr_tensor t, size_t at, const uint32_t *w, size_t n, uint32_t reps);

/* A part of a tensor on one tile: elements [at, at + n) on global tile gt (ipu x T + tile). */
typedef struct mnet_piece {
    uint32_t gt;
    size_t at, n;
} mnet_piece;

/* Tensor t's mapped regions as pieces, in mapping order, into *p (malloc'ed); returns how
 * many. */
size_t mnet_pieces(const mnet_b *b, gr_tensor t, mnet_piece **p);

/* A stash of D slots for tensor t's parts p[0..np) (named name.stash, with its cursors
 * name.stash.cursors), each part's slots and cursors on its own tile, and the stash_ring
 * vertices that move a micro-batch's parts in (from t, into cs_s) and back out (into `to`,
 * into cs_r), each part split over the six workers (a part of an odd number of words moved
 * whole with its partner word: t and `to` then get whole pairs, gr_pairs). The stashes and
 * the restores each step
 * their own cursor round the ring, so the k-th restore gives back the k-th stash while at
 * most D stashes wait. Returns the stash's bytes. */
uint64_t mnet_ring(mnet_b *b, const char *name, gr_tensor t, gr_tensor to, gr_type ty,
                   const mnet_piece *p, size_t np, uint32_t D, gr_cs cs_s, gr_cs cs_r);

/* `calls` host calls, each `n` passes of `unit` then a sync of every tile of every IPU with
 * the host: PopTorch's run returns when the call's program has ended on every IPU (its
 * pipeline's flush, its last weight update and outfeed copy included, whatever the output
 * mode), and the host makes the next call only then; mnet.c takes each call's end from that
 * sync's release. */
gr_prog mnet_host_calls(graph *g, uint32_t calls, uint32_t n, gr_prog unit);

/* One run of the pipeline (c's G micro-batches) as a program: its steps, repeated ones as
 * loops (mnet_pipe.c). out: per micro-batch, whether the last stage's pass over it streams
 * out (fwd_out, fused_out), or NULL: none does beyond what fwd and fused do. */
gr_prog mnet_pipe_run(graph *g, const pipe_cfg *c, const mnet_stage *st, const uint8_t *out);

/* A micro-batch's programs in training: pre (the infeed to the loss and its outfeed buffer),
 * post (the backward), and upd, the weight update after G of them. */
typedef struct mnet_mb {
    gr_prog pre, post, upd;
} mnet_mb;

/* Outfeed mode sum: the accumulator streamed out once a call (laid out as the outfeed buffer),
 * the compute sets zeroing it and adding the outfeed buffer to it. */
typedef struct mnet_sum {
    gr_tensor acc;
    gr_cs zero, add;
} mnet_sum;

/* The training loop of `updates` weight updates, `per_call` a host call, for c's outfeed
 * mode (res: the outfeed buffer; sum: used in mode sum only), as calls x { call, host }:
 *   all:  call = per_call x { G x mb with out, upd }
 *   every:N (N divides G):  call = per_call x { G / N x { N - 1 x mb, mb with out }, upd }
 *   final, every:N (N = k G, k divides per_call): call = per_call / k x { k x step, out }
 *   sum:  call = acc = 0, per_call x { G x { pre, acc += res, post }, upd }, out(acc)
 * where mb is pre then post, "with out" the outfeed between them, step G x mb then upd, and
 * host a sync of every IPU with the host (external_host): the call's end, its program ended
 * on every IPU whatever the outfeed mode (mnet.c reports the call from its release). */
gr_prog mnet_loop(graph *g, const mnet_cfg *c, uint32_t G, const mnet_mb *mb, gr_tensor res,
                  const mnet_sum *sum, uint32_t updates, uint32_t per_call);

/* The AdamW step over b's parameter ranges (b->upd, ordered by tile): per tile holding some,
 * the step table b->hyper_tab (host-written: b->updates records), its cursor b->cursor and
 * the current record (adamw_hyper, into `hyper`), and adamw_step over each range of params,
 * grads, opt_m and opt_v (into `step`); sets b->nhyper. */
void mnet_adamw(mnet_b *b, gr_cs hyper, gr_cs step);

/* Build the graph of a run: train = 1: the training program of `updates` weight updates in
 * host calls of `per_call` updates, the outfeed as c->out_mode says; train = 0: the forward
 * pass over `updates` micro-batches of c->run.test_batch, the logits streamed out after each.
 * ERR_OK or ERR_INPUT with e set. */
int mnet_build(mnet_b *b, const mnet_cfg *c, int train, uint32_t updates, uint32_t per_call,
               err *e);
void mnet_b_free(mnet_b *b);
/* The outfeed buffer: logits [batch][10], then the micro-batch's mean loss and a pad word. */
uint32_t mnet_res_words(const mnet_b *b);

#endif
