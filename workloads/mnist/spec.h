/* mspec: a network as data. A network is a table of layers (convolution, 2 x 2 max-pool with
 * ReLU, ReLU, linear), each with its shape parameters, its name and the block it belongs to
 * (the unit the tutorial places on an IPU), ending in a cross-entropy loss over the last
 * layer's outputs. mspec_resolve derives from the table what every consumer needs: each
 * layer's input and output sizes, and the parameters in PyTorch's state_dict order (a
 * convolution's or linear layer's weight then bias, named after the layer's key, in one flat
 * vector). The tutorial's network is one table (mspec_tutorial, docs/mnist.md); a second,
 * wider one with a stride and padding the tutorial's lacks is another (mspec_find). */
#ifndef IPUSIM_MNIST_SPEC_H
#define IPUSIM_MNIST_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef enum mspec_kind {
    MSPEC_CONV,      /* nn.Conv2d(in, out, k, stride, padding) */
    MSPEC_POOL_RELU, /* nn.MaxPool2d(2) then nn.ReLU */
    MSPEC_RELU,      /* nn.ReLU, in place */
    MSPEC_LINEAR,    /* nn.Linear(in, out) over the flattened input */
} mspec_kind;

typedef struct mspec_layer {
    mspec_kind kind;
    const char *name; /* in reports and compute sets: "conv1", "pool1", "layer3" */
    const char *key;  /* a convolution's or linear layer's state_dict prefix: "layer1.conv" */
    int block;        /* the block it belongs to, from 1 */
    int out;          /* convolution: output channels; linear: output features */
    int k, stride, pad;
} mspec_layer;

enum {
    MSPEC_MAX_LAYERS = 16,
    MSPEC_MAX_TENSORS = 2 * MSPEC_MAX_LAYERS,
    MSPEC_NAME = 64,
    MSPEC_MAX_BLOCKS = 8 /* blocks 1, 2, ... in layer order: a pipeline's stages at most */
};

typedef struct mspec {
    const char *name;  /* as --network names it */
    const char *about; /* one line */
    int c, h, w;       /* the input image */
    int nlayers;
    mspec_layer layer[MSPEC_MAX_LAYERS];
} mspec;

/* A layer's input or output: c planes of h x w (a linear layer's: c features, h = w = 1). */
typedef struct mspec_dims {
    int c, h, w;
} mspec_dims;

static inline size_t mspec_size(mspec_dims d)
{
    return (size_t)d.c * (size_t)d.h * (size_t)d.w;
}

/* A parameter tensor: its state_dict key, shape, place in the flat vector, the fan-in of
 * PyTorch's default initialisation, and the layer it belongs to. */
typedef struct mspec_tensor {
    char name[MSPEC_NAME];
    int ndim;
    int64_t shape[4];
    size_t offset, count;
    int fan_in;
    int layer;
} mspec_tensor;

typedef struct mspec_net {
    const mspec *s;
    mspec_dims in[MSPEC_MAX_LAYERS], out[MSPEC_MAX_LAYERS];
    int ntensors;
    mspec_tensor t[MSPEC_MAX_TENSORS];
    int param[MSPEC_MAX_LAYERS]; /* a layer's weight tensor (its bias the next), or -1 */
    size_t nparams;
    int classes; /* the last layer's outputs */
} mspec_net;

/* The tutorial's network (docs/sources.md, Tutorial). */
const mspec *mspec_tutorial(void);
/* The blocks of a table (its last layer's). */
int mspec_blocks(const mspec *s);
/* A network by name ("tutorial", "wide", "deep"), or NULL. */
const mspec *mspec_find(const char *name);
/* The i-th of the networks there are (NULL past the last): for listing them. */
const mspec *mspec_at(int i);

/* Resolve s into n: ERR_OK, or ERR_INPUT with one line naming the layer whose shape does not
 * follow (a kernel larger than its padded input, a pool over odd planes, a network not
 * ending in a linear layer, more than MSPEC_MAX_LAYERS layers). */
int mspec_resolve(const mspec *s, mspec_net *n, err *e);

#endif
