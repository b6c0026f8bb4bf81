/* mref: the native reference of a network (a layer table, spec.h: by default the PopTorch
 * tutorial's MNIST network) and its training.
 *
 * The tutorial's network (docs/sources.md, Tutorial), input [B][1][28][28]:
 *   layer1: Conv2d(1, 10, 5)  -> MaxPool2d(2) -> ReLU    [B][10][12][12]
 *   layer2: Conv2d(10, 20, 5) -> MaxPool2d(2) -> ReLU    [B][20][4][4] = [B][320]
 *   layer3: Linear(320, 256)  -> ReLU
 *   layer4: Linear(256, 10)   -> logits; CrossEntropyLoss
 * Parameters live in one flat fp32 vector (the tutorial's: MREF_NPARAMS = 90,026) in
 * state_dict order, each tensor in PyTorch's layout, so saving is a copy and AdamW is one loop.
 *
 * Training (mref_train) follows the tutorial's host loop: each epoch shuffles the training set
 * with the seeded generator, then makes floor(N / (B x G x DI)) host calls (the rest of the
 * images are dropped, as DataLoader(drop_last=True)); a call runs DI weight updates, each the
 * mean of the gradients of G micro-batches of B images. Progress goes to a callback. */
#ifndef IPUSIM_MNIST_MREF_H
#define IPUSIM_MNIST_MREF_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "workloads/mnist/adamw.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/spec.h"

/* The tutorial network's parameter tensors and their count (the simulated graph's layout,
 * workloads/mnist/mnet.h); another network's come from its table (mref_tensor, mref_nparams). */
enum { MREF_W1, MREF_B1, MREF_W2, MREF_B2, MREF_W3, MREF_B3, MREF_W4, MREF_B4, MREF_NTENSORS };

#define MREF_NPARAMS 90026

/* A parameter tensor: its state_dict key, shape, offset into the flat vector, count, and
 * fan-in (for PyTorch's default initialisation). */
typedef mspec_tensor mref_tensor_info;

typedef struct mref_net mref_net;

/* Tensor i of n's parameters in state_dict order (NULL past the last); their number and the
 * floats of all; the resolved table. */
const mref_tensor_info *mref_tensor(const mref_net *n, int i);
int mref_ntensors(const mref_net *n);
size_t mref_nparams(const mref_net *n);
const mspec_net *mref_spec(const mref_net *n);

/* Network s whose work buffers hold micro-batches of up to max_batch images. Parameters are
 * zero until mref_init or mref_load. NULL (with e set) when max_batch < 1 or s does not
 * resolve (mspec_resolve's message). mref_create: the tutorial's network. */
mref_net *mref_create_net(const mspec *s, int max_batch, err *e);
mref_net *mref_create(int max_batch, err *e);
void mref_destroy(mref_net *n);

float *mref_params(mref_net *n); /* mref_nparams floats */
float *mref_grads(mref_net *n);  /* mref_nparams floats */
int mref_max_batch(const mref_net *n);
/* The network's input buffer (max_batch images of c x h x w floats): fill it and pass it as x
 * to skip a copy. */
float *mref_input(mref_net *n);

/* PyTorch's defaults: Conv2d and Linear weights kaiming_uniform_(a = sqrt(5)), biases
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)); both bounds are 1/sqrt(fan_in). Drawn in state_dict
 * order from stream MRNG_STREAM_INIT of seed. */
void mref_init(mref_net *n, uint64_t seed);

void mref_zero_grads(mref_net *n);
/* Forward only: x[B][c x h x w] normalised -> logits (B x classes, valid until the next
 * call). */
const float *mref_forward(mref_net *n, int batch, const float *x);
/* Forward and backward of one micro-batch: grads += d(mean loss)/d(params). Returns the mean
 * cross-entropy; adds the number of correct predictions to *correct (if not NULL). */
float mref_forward_backward(mref_net *n, int batch, const float *x, const int *labels,
                            int *correct);

/* One .npy per tensor, named after its state_dict key (DIR/layer1.conv.weight.npy ...).
 * Save creates dir if needed; load rejects a missing or extra tensor, a wrong shape or a
 * dtype other than float32 without touching the network. 0 or ERR_INPUT. */
int mref_save(mref_net *n, const char *dir, err *e);
/* Create dir if needed and check it is writable (before a long run that will save there). */
int mref_prepare_save(const mref_net *n, const char *dir, err *e);
int mref_load(mref_net *n, const char *dir, err *e);

/* ---- training (mref_train.c) ---- */

typedef struct mref_cfg {
    int epochs;       /* 3 */
    int batch;        /* 40: micro-batch */
    int grad_accum;   /* 10: micro-batches per weight update */
    int device_iters; /* 10: weight updates per host call */
    int test_batch;   /* 8 */
    adamw_cfg opt;    /* PyTorch AdamW defaults */
    uint64_t seed;    /* 0 */
    /* NULL (default), or read before each host call: once non-zero, training stops there
     * with ERR_STOPPED ("stopped at epoch E before host call C of N"). A signal handler may
     * set it. */
    const volatile sig_atomic_t *stop;
} mref_cfg;

mref_cfg mref_defaults(void);

/* What one host call did (the tutorial's progress line). */
typedef struct mref_progress {
    int epoch, epochs; /* from 1 */
    int call, calls;   /* from 1, per epoch */
    long images;       /* images in this call */
    double loss;       /* mean of the call's micro-batch losses */
    double accuracy;   /* percent of the call's images predicted right (before their update) */
} mref_progress;

typedef struct mref_hooks {
    void (*epoch_begin)(void *ctx, int epoch, int epochs);
    void (*call_done)(void *ctx, const mref_progress *p);
    void *ctx;
} mref_hooks;

/* Train n (already initialised or loaded) on train with cfg; hooks may be NULL. 0, or an
 * error (ERR_INPUT; ERR_STOPPED when cfg->stop was set). */
int mref_train(mref_net *n, const mref_cfg *cfg, const mdata_split *train, const mref_hooks *h,
               err *e);
/* Accuracy (percent) over every image of set, in batches of cfg-style batch size. */
int mref_test(mref_net *n, int batch, const mdata_split *set, double *accuracy, err *e);

#endif
