/* gnet_int: what gnet.c (the forward pass from a layer table) shares with gnet_train.c (the
 * loss, the backward, the update and the simulated run's graph). */
#ifndef IPUSIM_MNIST_GNET_INT_H
#define IPUSIM_MNIST_GNET_INT_H

#include "workloads/mnist/gnet.h"

/* Bytes of each tile kept for what a plan's estimate does not count (code, vertex states,
 * the input, the parameters and the Copies' buffers); the plans before a layer's on the same
 * tiles add theirs (their blocks and patches stay). */
enum { GNET_RESERVE = 96 * 1024 };

/* The IPUs a network may take: one a block at most (mnet_cfg.stage_ipu). */
enum { GNET_IPUS = MSPEC_MAX_BLOCKS };

/* Programs in run order (GR_NONE ones left out). */
typedef struct gnet_progs {
    gr_prog *p;
    size_t n, cap;
} gnet_progs;

void gnet_add(gnet_progs *q, gr_prog p);
/* The programs in one sequence (GR_NONE for none); q is emptied. */
gr_prog gnet_seq(graph *g, gnet_progs *q);

/* A crossing a pipeline makes between IPUs (gnet_cross with a gnet_xing): its transfers. */
typedef struct gnet_xing {
    gr_xfer *x;
    size_t n;
    op_act to; /* where it lands */
} gnet_xing;

typedef struct gnet_bld {
    graph *g;
    gnet *net;
    const mach *m;
    gnet_progs prep, run; /* the plans' preps (weights to their tiles), the forward's steps */
    op_act cur;           /* the activation the next layer reads */
    int mm;               /* cur is a linear layer's output, y^T [1][N][1][B] */
    uint32_t held;        /* tiles holding cur (the next plan's input senders) */
    uint32_t ipu;         /* the IPU of the layer being built */
    /* the flat vector's stretches, one an IPU in layer order: [lo, hi) on its first w_held
     * tiles */
    uint32_t nseg;
    struct {
        uint32_t ipu, w_held;
        size_t lo, hi;
    } seg[GNET_IPUS];
    uint32_t kept[GNET_IPUS]; /* per IPU: bytes the plans so far keep on their tiles */
    /* layer l's programs in run: [run_at[l], run_end[l]) (a crossing's Copy before them,
     * a pipeline's send copy after them); pipelined: the crossing into l, if any (up[l].n) */
    size_t run_at[MSPEC_MAX_LAYERS], run_end[MSPEC_MAX_LAYERS];
    int pipelined;
    gnet_xing up[MSPEC_MAX_LAYERS];
    uint32_t reuse;   /* calls of the forward per change of the weights */
    uint32_t avail;   /* the plans' working memory a tile (op_conv_ctx.avail) */
    uint32_t holder;  /* the tile given the last piece of a weights' copy */
    uint32_t holders; /* pieces given so far */
    err *e;
} gnet_bld;

/* What a plan reads as its weights: layer `layer`'s parameters from the flat vector (as they
 * are, or flip: as its input gradient reads them), copied over the IPU as the plan needs
 * (gnet_weights); or, layer -1, ref as it is, held by `senders` tiles (an output gradient). */
typedef struct gnet_w {
    int layer, flip;
    op_ref ref;
    uint32_t senders;
} gnet_w;

/* Plan s over the IPU for an operation named name (pass: "forward", ...) reading x (held by
 * x_tiles tiles; x_run: ops.h's op_conv_ctx) and the weights w (with a bias: the layer's,
 * bias set; reuse: calls per prep), record it in b->net->plan and build it into *c. ERR_INPUT
 * naming the operation when no plan fits. */
int gnet_plan(gnet_bld *b, const char *name, const char *pass, const op_conv_shape *s,
              const op_act *x, uint32_t x_tiles, uint32_t x_run, const gnet_w *w, int bias,
              uint32_t reuse, op_conv *c);
/* A new fp32 layout of dims [B][C][H][W] in blocks of a sample and a range of whole channels,
 * block k on tile k: as many channel parts as B x parts fits the IPU's tiles (C at most), so
 * that the tensor is row-major (a plain [B][C][H][W]) yet spread over the IPU. */
op_act gnet_spread(gnet_bld *b, const char *name, const uint32_t dim[OP_DIMS]);
/* The flat parameter vector (b->net->params): each IPU's layers' stretch (b->seg) in runs of
 * about 1,024 floats over that IPU's first tiles. */
gr_tensor gnet_params(gnet_bld *b);
/* A flat [nparams] fp32 tensor mapped as the parameters (b->seg: each stretch over its IPU's
 * first tiles, runs of whole 16-byte groups): params, and in training its gradient and
 * AdamW's m and v. */
gr_tensor gnet_flat(gnet_bld *b, const char *name);
/* The layers of the table from b->cur (the input, a sample a tile) on, each on its IPU
 * (b->net->ipu; cur crossing to it by a Copy where the IPU changes): their runs into b->run,
 * their plans' preps into b->prep; b->net->layer and ->logits filled. */
int gnet_forward(gnet_bld *b);
/* Where tile i of stretch s's w_held tiles starts in the flat vector (i = w_held: the
 * stretch's end): whole 16-byte groups. */
size_t gnet_seg_at(const gnet_bld *b, uint32_t s, uint32_t i);
/* a crossed to IPU ipu (from: its IPU; a as it is when they are the same): a new tensor there,
 * a's layout on the same tiles (op_clone: PopART's IpuCopy, one transfer a region), and the
 * Copy into it appended to q; or, with x (a pipeline's crossing, gnet_pipe.c), its transfers
 * into x instead, from a copy of a on its own tiles (name.sent, the Copy into it appended to
 * q) when q is not NULL: the step's Copy then sends what the forward left even after a
 * recompute has overwritten a. */
op_act gnet_cross(gnet_bld *b, gnet_progs *q, gnet_xing *x, const op_act *a, uint32_t from,
                  uint32_t ipu, const char *name);

/* What the pipelined run's program is made of (gnet_train.c builds the parts, gnet_pipe.c
 * cuts them into stages): the forward's programs and crossings (b), the loss's programs
 * (with the logits into the outfeed buffer), the backward's programs, where each layer's
 * start (bwd_at) and the gradients' crossings (down[l]: into layer l's backward), the
 * labels as the loss reads them (lin, on the last stage's loss tile), and the update. */
typedef struct gnet_pipe_in {
    gnet_bld *b;
    struct mnet_b *mb;
    const mnet_cfg *c;
    gr_prog loss;
    gnet_progs *bwd;
    const size_t *bwd_at;
    const gnet_xing *down;
    gr_tensor lin;
    uint32_t lt; /* the loss's tile: each stage's labels on its tile lt */
    gr_prog upd;
    uint32_t updates, per_call;
} gnet_pipe_in;

/* The stages (each IPU's layers: their forward, the stash of their input and its restore
 * and recompute before their backward; the last one's fused pass with the loss and the
 * outfeed) and their crossings, scheduled by mnet_pipe_run: training, a call's updates of
 * one pipeline run and the update each (the outfeed all or final); the test pass, runs of
 * test_iters micro-batches. Into mb->main after what is there; mb->pipe filled. */
void gnet_pipe_main(const gnet_pipe_in *in, gnet_progs *top);

#endif
