/* mref: a network's forward and backward passes on the host, in fp32, over one micro-batch at
 * a time, with PyTorch's default initialisation; the network is a layer table (spec.h), the
 * tutorial's by default, walked forward then back. It models the mathematics the
 * simulated IPUs must reproduce, not their timing; it leaves out everything PopTorch adds
 * (pipelining, stashing, recomputation), which changes no numbers in fp32 training. */
#include "workloads/mnist/mref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/mnist/layers.h"
#include "workloads/mnist/rng.h"
#include "workloads/mnist/spec.h"

/* A layer's buffers: its output (a ReLU's is its input's, in place), the gradient at its
 * output (a ReLU's is its input's too), a pool's argmax. */
typedef struct lbuf {
    float *act, *grad;
    unsigned char *arg;
} lbuf;

struct mref_net {
    mspec_net spec;
    mlayer_conv conv[MSPEC_MAX_LAYERS]; /* each convolution's shape */
    int max_batch;
    float *params, *grads;
    float *x; /* the input, max_batch images */
    lbuf l[MSPEC_MAX_LAYERS];
    float *col, *dcol; /* the convolutions' unfolding scratch */
    void *block;       /* one allocation for all of the above */
};

const mref_tensor_info *mref_tensor(const mref_net *n, int i)
{
    return i >= 0 && i < n->spec.ntensors ? &n->spec.t[i] : NULL;
}

int mref_ntensors(const mref_net *n)
{
    return n->spec.ntensors;
}

size_t mref_nparams(const mref_net *n)
{
    return n->spec.nparams;
}

const mspec_net *mref_spec(const mref_net *n)
{
    return &n->spec;
}

/* Floats of layer l's buffers for b images: its output and its output's gradient (none for
 * a ReLU, in place), and the bytes of a pool's argmax. */
static void layer_sizes(const mref_net *n, int l, size_t b, size_t *act, size_t *arg)
{
    mspec_kind k = n->spec.s->layer[l].kind;
    *act = k == MSPEC_RELU ? 0 : b * mspec_size(n->spec.out[l]);
    *arg = k == MSPEC_POOL_RELU ? b * mspec_size(n->spec.out[l]) : 0;
}

/* Lay out the one allocation: params, grads, x, each layer's output and gradient, col, dcol,
 * then the argmax bytes; each float buffer rounded up to 16 floats (64-byte aligned). With
 * base NULL only sizes it. */
static size_t carve(mref_net *n, size_t b, size_t colf, void *base)
{
    size_t at = 0; /* in floats */
#define TAKE(dst, nf)                                                                              \
    do {                                                                                           \
        if (base)                                                                                  \
            (dst) = (float *)base + at;                                                            \
        at += ((nf) + 15) & ~(size_t)15;                                                           \
    } while (0)
    TAKE(n->params, n->spec.nparams);
    TAKE(n->grads, n->spec.nparams);
    TAKE(n->x, b * mspec_size((mspec_dims){n->spec.s->c, n->spec.s->h, n->spec.s->w}));
    for (int l = 0; l < n->spec.s->nlayers; l++) {
        size_t act, arg;
        layer_sizes(n, l, b, &act, &arg);
        if (act) {
            TAKE(n->l[l].act, act);
            TAKE(n->l[l].grad, act);
        } else if (base) { /* in place: the input's buffers */
            n->l[l].act = l ? n->l[l - 1].act : n->x;
            n->l[l].grad = l ? n->l[l - 1].grad : NULL;
        }
    }
    TAKE(n->col, colf);
    TAKE(n->dcol, colf);
#undef TAKE
    size_t bytes = at * sizeof(float);
    for (int l = 0; l < n->spec.s->nlayers; l++) {
        size_t act, arg;
        layer_sizes(n, l, b, &act, &arg);
        if (base && arg)
            n->l[l].arg = (unsigned char *)base + bytes;
        bytes += arg;
    }
    return bytes;
}

mref_net *mref_create_net(const mspec *s, int max_batch, err *e)
{
    if (max_batch < 1 || max_batch > (1 << 20)) {
        err_set(e, ERR_INPUT, "mref: micro-batch size %d is not in 1..%d", max_batch, 1 << 20);
        return NULL;
    }
    mref_net *n = xcalloc(1, sizeof *n);
    if (mspec_resolve(s, &n->spec, e) != ERR_OK) {
        free(n);
        return NULL;
    }
    size_t colf = 0;
    for (int l = 0; l < s->nlayers; l++) {
        const mspec_layer *L = &s->layer[l];
        if (L->kind != MSPEC_CONV)
            continue;
        mspec_dims in = n->spec.in[l];
        n->conv[l] = (mlayer_conv){in.c, in.h, in.w, L->out, L->k, L->stride, L->pad};
        size_t c = mlayer_conv_col_floats(&n->conv[l]);
        colf = c > colf ? c : colf;
    }
    size_t bytes = carve(n, (size_t)max_batch, colf, NULL);
    n->block = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!n->block)
        xoom(bytes);
    memset(n->block, 0, bytes);
    carve(n, (size_t)max_batch, colf, n->block);
    n->max_batch = max_batch;
    return n;
}

mref_net *mref_create(int max_batch, err *e)
{
    return mref_create_net(mspec_tutorial(), max_batch, e);
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
    for (int t = 0; t < n->spec.ntensors; t++) {
        /* kaiming_uniform_(a=sqrt(5)): gain sqrt(2/(1+5)), bound gain*sqrt(3/fan_in) =
         * 1/sqrt(fan_in); the bias bound is 1/sqrt(fan_in) too. */
        const mspec_tensor *ti = &n->spec.t[t];
        const float bound = (float)(1.0 / sqrt((double)ti->fan_in));
        float *p = n->params + ti->offset;
        for (size_t i = 0; i < ti->count; i++)
            p[i] = mrng_uniform(&r, -bound, bound);
    }
}

void mref_zero_grads(mref_net *n)
{
    memset(n->grads, 0, sizeof(float) * n->spec.nparams);
}

/* Layer l's weights and biases (W) or their gradients (G). */
#define W(l) (n->params + n->spec.t[n->spec.param[l]].offset)
#define B(l) (n->params + n->spec.t[n->spec.param[l] + 1].offset)
#define GW(l) (n->grads + n->spec.t[n->spec.param[l]].offset)
#define GB(l) (n->grads + n->spec.t[n->spec.param[l] + 1].offset)

static const float *input_of(const mref_net *n, int l)
{
    return l ? n->l[l - 1].act : n->x;
}

static void forward(mref_net *n, int batch)
{
    for (int l = 0; l < n->spec.s->nlayers; l++) {
        const float *in = input_of(n, l);
        lbuf *o = &n->l[l];
        mspec_dims di = n->spec.in[l], dout = n->spec.out[l];
        switch (n->spec.s->layer[l].kind) {
        case MSPEC_CONV: mlayer_conv_fwd(&n->conv[l], batch, in, W(l), B(l), o->act, n->col); break;
        case MSPEC_POOL_RELU:
            mlayer_pool_relu_fwd(batch * di.c, di.h, di.w, in, o->act, o->arg);
            break;
        case MSPEC_RELU: mlayer_relu_fwd((size_t)batch * mspec_size(di), o->act); break;
        case MSPEC_LINEAR:
            mlayer_linear_fwd(batch, (int)mspec_size(di), dout.c, in, W(l), B(l), o->act);
            break;
        }
    }
}

/* Layer l's backward from the gradient at its output to its input's (none for the first:
 * nothing reads the input's gradient), its parameters' gradients added. */
static void backward(mref_net *n, int batch, int l)
{
    const float *in = input_of(n, l);
    lbuf *o = &n->l[l];
    float *din = l ? n->l[l - 1].grad : NULL;
    mspec_dims di = n->spec.in[l], dout = n->spec.out[l];
    switch (n->spec.s->layer[l].kind) {
    case MSPEC_CONV:
        mlayer_conv_bwd(&n->conv[l], batch, in, W(l), o->grad, GW(l), GB(l), din, n->col,
                        din ? n->dcol : NULL);
        break;
    case MSPEC_POOL_RELU:
        if (din)
            mlayer_pool_relu_bwd(batch * di.c, di.h, di.w, o->grad, o->act, o->arg, din);
        break;
    case MSPEC_RELU: mlayer_relu_bwd((size_t)batch * mspec_size(di), o->act, o->grad); break;
    case MSPEC_LINEAR:
        mlayer_linear_bwd(batch, (int)mspec_size(di), dout.c, in, W(l), o->grad, GW(l), GB(l), din);
        break;
    }
}

static size_t input_floats(const mref_net *n, int batch)
{
    return (size_t)batch * (size_t)n->spec.s->c * (size_t)n->spec.s->h * (size_t)n->spec.s->w;
}

const float *mref_forward(mref_net *n, int batch, const float *x)
{
    if (x != n->x)
        memcpy(n->x, x, sizeof(float) * input_floats(n, batch));
    forward(n, batch);
    return n->l[n->spec.s->nlayers - 1].act;
}

float mref_forward_backward(mref_net *n, int batch, const float *x, const int *labels, int *correct)
{
    const int last = n->spec.s->nlayers - 1;
    if (x != n->x)
        memcpy(n->x, x, sizeof(float) * input_floats(n, batch));
    forward(n, batch);
    const float loss =
        mlayer_xent(batch, n->spec.classes, n->l[last].act, labels, n->l[last].grad, correct);
    for (int l = last; l >= 0; l--)
        backward(n, batch, l);
    return loss;
}
