/* mref: the tutorial network's forward and backward passes on the host, in fp32, over one
 * micro-batch at a time, with PyTorch's default initialisation. It models the mathematics the
 * simulated IPUs must reproduce, not their timing; it leaves out everything PopTorch adds
 * (pipelining, stashing, recomputation), which changes no numbers in fp32 training. */
#include "workloads/mnist/mref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/mnist/layers.h"
#include "workloads/mnist/rng.h"

static const mref_tensor_info tensors[MREF_NTENSORS] = {
    {"layer1.conv.weight", 4, {10, 1, 5, 5}, 0, 250, 25},
    {"layer1.conv.bias", 1, {10}, 250, 10, 25},
    {"layer2.conv.weight", 4, {20, 10, 5, 5}, 260, 5000, 250},
    {"layer2.conv.bias", 1, {20}, 5260, 20, 250},
    {"layer3.weight", 2, {256, 320}, 5280, 81920, 320},
    {"layer3.bias", 1, {256}, 87200, 256, 320},
    {"layer4.weight", 2, {10, 256}, 87456, 2560, 256},
    {"layer4.bias", 1, {10}, 90016, 10, 256},
};

static const mlayer_conv conv1 = {1, 28, 28, 10, 5};  /* -> 10 x 24 x 24 */
static const mlayer_conv conv2 = {10, 12, 12, 20, 5}; /* -> 20 x 8 x 8 */

enum {
    IN = 784,
    Y1 = 10 * 24 * 24,
    A1 = 10 * 12 * 12,
    Y2 = 20 * 8 * 8,
    A2 = 320,
    H3 = 256,
    Z = 10,
};

struct mref_net {
    int max_batch;
    float *params, *grads;
    /* forward activations, per micro-batch; dy1/dy2 reuse y1/y2 in the backward pass */
    float *x, *y1, *a1, *y2, *a2, *h3, *z;
    unsigned char *arg1, *arg2;
    /* backward */
    float *dz, *dh3, *da2, *da1;
    float *col, *dcol;
    void *block; /* one allocation for all of the above */
};

const mref_tensor_info *mref_tensor(int i)
{
    return i >= 0 && i < MREF_NTENSORS ? &tensors[i] : NULL;
}

mref_net *mref_create(int max_batch, err *e)
{
    if (max_batch < 1 || max_batch > (1 << 20)) {
        err_set(e, ERR_INPUT, "mref: micro-batch size %d is not in 1..%d", max_batch, 1 << 20);
        return NULL;
    }
    mref_net *n = xcalloc(1, sizeof *n);
    const size_t b = (size_t)max_batch;
    const size_t colf = mlayer_conv_col_floats(&conv1) > mlayer_conv_col_floats(&conv2)
                            ? mlayer_conv_col_floats(&conv1)
                            : mlayer_conv_col_floats(&conv2);
    /* float buffers, each rounded up to 16 floats so every one starts 64-byte aligned */
    const size_t sizes[] = {MREF_NPARAMS, MREF_NPARAMS, b * IN, b * Y1, b * A1,
                            b * Y2,       b * A2,       b * H3, b * Z,  b * Z,
                            b * H3,       b * A2,       b * A1, colf,   colf};
    float **slots[] = {&n->params, &n->grads, &n->x,   &n->y1,  &n->a1,  &n->y2,  &n->a2,  &n->h3,
                       &n->z,      &n->dz,    &n->dh3, &n->da2, &n->da1, &n->col, &n->dcol};
    const size_t nslots = sizeof sizes / sizeof sizes[0];
    size_t total = 0;
    for (size_t i = 0; i < nslots; i++)
        total += (sizes[i] + 15) & ~(size_t)15;
    size_t bytes = total * sizeof(float) + b * (A1 + A2);
    n->block = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!n->block)
        xoom(bytes);
    memset(n->block, 0, bytes);
    float *p = n->block;
    for (size_t i = 0; i < nslots; i++) {
        *slots[i] = p;
        p += (sizes[i] + 15) & ~(size_t)15;
    }
    n->arg1 = (unsigned char *)p;
    n->arg2 = n->arg1 + b * A1;
    n->max_batch = max_batch;
    return n;
}

void mref_destroy(mref_net *n)
{
    if (n) {
        free(n->block);
        free(n);
    }
}

float *mref_params(mref_net *n)
{
    return n->params;
}
float *mref_grads(mref_net *n)
{
    return n->grads;
}
int mref_max_batch(const mref_net *n)
{
    return n->max_batch;
}
float *mref_input(mref_net *n)
{
    return n->x;
}

void mref_init(mref_net *n, uint64_t seed)
{
    mrng r;
    mrng_seed(&r, seed, MRNG_STREAM_INIT);
    for (int t = 0; t < MREF_NTENSORS; t++) {
        /* kaiming_uniform_(a=sqrt(5)): gain sqrt(2/(1+5)), bound gain*sqrt(3/fan_in) =
         * 1/sqrt(fan_in); the bias bound is 1/sqrt(fan_in) too. */
        const float bound = (float)(1.0 / sqrt((double)tensors[t].fan_in));
        float *p = n->params + tensors[t].offset;
        for (size_t i = 0; i < tensors[t].count; i++)
            p[i] = mrng_uniform(&r, -bound, bound);
    }
}

void mref_zero_grads(mref_net *n)
{
    memset(n->grads, 0, sizeof(float) * MREF_NPARAMS);
}

#define P(t) (n->params + tensors[t].offset)
#define G(t) (n->grads + tensors[t].offset)

static void forward(mref_net *n, int batch)
{
    mlayer_conv_fwd(&conv1, batch, n->x, P(MREF_W1), P(MREF_B1), n->y1, n->col);
    mlayer_pool_relu_fwd(batch * 10, 24, 24, n->y1, n->a1, n->arg1);
    mlayer_conv_fwd(&conv2, batch, n->a1, P(MREF_W2), P(MREF_B2), n->y2, n->col);
    mlayer_pool_relu_fwd(batch * 20, 8, 8, n->y2, n->a2, n->arg2);
    mlayer_linear_fwd(batch, A2, H3, n->a2, P(MREF_W3), P(MREF_B3), n->h3);
    mlayer_relu_fwd((size_t)batch * H3, n->h3);
    mlayer_linear_fwd(batch, H3, Z, n->h3, P(MREF_W4), P(MREF_B4), n->z);
}

const float *mref_forward(mref_net *n, int batch, const float *x)
{
    if (x != n->x)
        memcpy(n->x, x, sizeof(float) * (size_t)batch * IN);
    forward(n, batch);
    return n->z;
}

float mref_forward_backward(mref_net *n, int batch, const float *x, const int *labels, int *correct)
{
    if (x != n->x)
        memcpy(n->x, x, sizeof(float) * (size_t)batch * IN);
    forward(n, batch);
    const float loss = mlayer_xent(batch, Z, n->z, labels, n->dz, correct);
    mlayer_linear_bwd(batch, H3, Z, n->h3, P(MREF_W4), n->dz, G(MREF_W4), G(MREF_B4), n->dh3);
    mlayer_relu_bwd((size_t)batch * H3, n->h3, n->dh3);
    mlayer_linear_bwd(batch, A2, H3, n->a2, P(MREF_W3), n->dh3, G(MREF_W3), G(MREF_B3), n->da2);
    float *dy2 = n->y2; /* y2 is dead once pooled */
    mlayer_pool_relu_bwd(batch * 20, 8, 8, n->da2, n->a2, n->arg2, dy2);
    mlayer_conv_bwd(&conv2, batch, n->a1, P(MREF_W2), dy2, G(MREF_W2), G(MREF_B2), n->da1, n->col,
                    n->dcol);
    float *dy1 = n->y1;
    mlayer_pool_relu_bwd(batch * 10, 24, 24, n->da1, n->a1, n->arg1, dy1);
    mlayer_conv_bwd(&conv1, batch, n->x, P(MREF_W1), dy1, G(MREF_W1), G(MREF_B1), NULL, n->col,
                    NULL);
    return loss;
}
