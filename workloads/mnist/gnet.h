/* gnet: a network built from its layer table (spec.h) with the operation library
 * (workloads/ops/ops.h), every layer over the tiles of its IPU: each convolution and linear
 * layer planned by op_conv_plan, each pool where its input lies (op_pool_fwd; where the
 * planned layout's blocks do not allow it, after a Copy into a sample a tile), each ReLU on
 * its input's mapping, a linear layer's input flattened by a Copy into a sample's row (or
 * read straight through a view after another linear layer).
 *
 * gnet_build makes the forward pass alone (tests/test_mnist_gnet.c checks it against the
 * reference's forward). gnet_mnet makes the simulated MNIST run's graph of a table other than
 * the tutorial's: on one IPU, or sharded or pipelined over several (each layer on its block's
 * IPU, an activation and its gradient crossing by Copies where the IPU changes; pipelined,
 * each IPU a stage, gnet_pipe.c), the infeed, the forward, the loss and the backward of each
 * micro-batch, the gradients accumulated over G micro-batches and the AdamW step, or the test
 * pass's forward (docs/mnist.md, "Networks as tables"). */
#ifndef IPUSIM_MNIST_GNET_H
#define IPUSIM_MNIST_GNET_H

#include <stdint.h>

#include "base/err.h"
#include "workloads/graph/graph.h"
#include "workloads/mnist/mnet.h"
#include "workloads/mnist/spec.h"
#include "workloads/ops/ops.h"

typedef struct gnet_layer {
    op_act out; /* the layer's output as the next reads it */
    /* what the backward reads: a convolution's input; the activation a pool pooled (its
     * input, or the copy of it a sample a tile); a linear layer's input flattened into rows
     * [B][K][1][1] (in.t GR_NONE after a linear layer: it reads that layer's y^T, yt) */
    op_act in;
    op_act yt;         /* a linear layer after a linear layer: the y^T it read (where it lies
                        * on the layer's IPU: the previous layer's output, or the on-chip copy of its crossing) */
    op_act arg;        /* a pool's maxima (op_pool_fwd) */
    uint32_t held;     /* a planned layer: the tiles holding its input (the plans' senders) */
    int planned;       /* a convolution or linear layer: its forward's plan below */
    op_conv_part part; /* the plan's partition and estimate */
    op_conv_est est;
} gnet_layer;

typedef struct gnet {
    const mspec_net *n;
    uint32_t batch;
    uint32_t ipu[MSPEC_MAX_LAYERS]; /* each layer's IPU: its block's (mnet_cfg.stage_ipu) */
    gr_tensor params; /* the flat parameter vector (state_dict order), each IPU's layers'
                       * stretch mapped linearly over its first tiles */
    op_act x;         /* the input [B][c][h][w], a sample a tile */
    op_act logits;    /* [B][classes][1][1] (a view of the last layer's output) */
    gr_prog prog;     /* gnet_build: the weights to their tiles, then the forward pass */
    gnet_layer layer[MSPEC_MAX_LAYERS];
    /* every planned operation: the forward's, then (training) the backward's, each its name
     * ("conv2", "conv2.dx", "conv2.dw"), pass, shape, partition and estimate */
    uint32_t nplans;
    mnet_plan plan[MNET_MAX_PLANS];
} gnet;

/* Build the forward pass of n over a batch on IPU ipu of g (machine m, the graph's); ERR_OK, or
 * ERR_INPUT with one line (a plan that fits no tile's SRAM, a batch larger than the IPU's
 * tiles). */
int gnet_build(graph *g, const mach *m, const mspec_net *n, uint32_t batch, uint32_t ipu, gnet *out,
               err *e);

/* ERR_OK, or ERR_INPUT with one line for a run of n that gnet_mnet does not build (below). */
int gnet_check(const mnet_cfg *c, const mspec_net *n, int train, err *e);

struct mnet_b;
/* The simulated run's graph (mnet_int.h's mnet_b, as mnet_build makes the tutorial's) of
 * network n with c's run: train = 1, `updates` weight updates in host calls of `per_call`;
 * train = 0, the test pass over `updates` micro-batches. One IPU, sharded or pipelined (block
 * k on IPU c->stage_ipu[k], B1 on IPU 0 and each next block on the same IPU or the next;
 * pipelined: recompute, the outfeed all or final), fp32 images, no replicas, I/O tiles or
 * offloaded optimiser: ERR_INPUT (one line) for a configuration asking for them, for a stride
 * in training (its input gradient needs a dilated convolution) or a plan that fits no tile. */
int gnet_mnet(struct mnet_b *b, const mnet_cfg *c, const mspec_net *n, int train, uint32_t updates,
              uint32_t per_call, err *e);

#endif
