/* gnet: a network's forward pass built from its layer table (spec.h) with the operation
 * library (workloads/ops/ops.h), every layer over the tiles of one IPU: each convolution and
 * linear layer planned by op_conv_plan, each pool where its input lies (op_pool_fwd; where
 * the planned layout's blocks do not allow it, after a Copy into a sample a tile), each ReLU
 * on its input's mapping, a linear layer's input flattened by a Copy into a sample's row
 * (or read straight through a view after another linear layer). The first step of building
 * the simulated network from the table: inference, checked against the reference trainer's
 * forward (tests/test_mnist_gnet.c). Training (the gradients, the loss, the optimiser) and
 * pipelining are still the tutorial's own graph (mnet_graph.c). */
#ifndef IPUSIM_MNIST_GNET_H
#define IPUSIM_MNIST_GNET_H

#include <stdint.h>

#include "base/err.h"
#include "workloads/graph/graph.h"
#include "workloads/mnist/spec.h"
#include "workloads/ops/ops.h"

typedef struct gnet_layer {
    op_act out;        /* the layer's output as the next reads it */
    int planned;       /* a convolution or linear layer: its plan below */
    op_conv_part part; /* the plan's partition and estimate */
    op_conv_est est;
} gnet_layer;

typedef struct gnet {
    const mspec_net *n;
    uint32_t batch, ipu;
    gr_tensor params; /* the flat parameter vector (state_dict order), mapped linearly */
    op_act x;         /* the input [B][c][h][w], a sample a tile */
    op_act logits;    /* [B][classes][1][1] (a view of the last layer's output) */
    gr_prog prog;     /* the weights to their tiles, then the forward pass */
    gnet_layer layer[MSPEC_MAX_LAYERS];
} gnet;

/* Build the forward pass of n over a batch on IPU ipu of g (machine m, the graph's); ERR_OK, or
 * ERR_INPUT with one line (a plan that fits no tile's SRAM, a batch larger than the IPU's
 * tiles). */
int gnet_build(graph *g, const mach *m, const mspec_net *n, uint32_t batch, uint32_t ipu, gnet *out,
               err *e);

#endif
