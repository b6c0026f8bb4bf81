/* mref train: the tutorial's training and test loops on the native reference network. One
 * host call = batch x gradient accumulation x device iterations images, as PopTorch's
 * DataLoader hands them to a training model; each weight update averages the gradients of G
 * micro-batches (PopTorch's Mean reduction: sum, then divide by G) and applies AdamW. The loss
 * and accuracy of a call are those of the forward passes that produced its gradients, as the
 * tutorial reports with OutputMode.All. Leaves out the host/device timing: that is the
 * simulator's job. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/mnist/layers.h"
#include "workloads/mnist/mref.h"
#include "workloads/mnist/rng.h"

mref_cfg mref_defaults(void)
{
    return (mref_cfg){.epochs = 3,
                      .batch = 40,
                      .grad_accum = 10,
                      .device_iters = 10,
                      .test_batch = 8,
                      .opt = adamw_defaults(),
                      .seed = 0};
}

/* A stop was asked for before host call `call` of epoch ep: ERR_STOPPED, else 0. */
static int stop_asked(const mref_cfg *cfg, int ep, long call, long calls, err *e)
{
    if (!cfg->stop || !*cfg->stop)
        return 0;
    return err_set(e, ERR_STOPPED, "stopped at epoch %d before host call %ld of %ld", ep, call,
                   calls);
}

int mref_train(mref_net *n, const mref_cfg *cfg, const mdata_split *train, const mref_hooks *h,
               err *e)
{
    if (cfg->epochs < 0 || cfg->batch < 1 || cfg->grad_accum < 1 || cfg->device_iters < 1)
        return err_set(e, ERR_INPUT,
                       "bad training configuration (epochs %d, batch %d, gradient accumulation "
                       "%d, device iterations %d)",
                       cfg->epochs, cfg->batch, cfg->grad_accum, cfg->device_iters);
    if (cfg->batch > mref_max_batch(n))
        return err_set(e, ERR_INPUT, "batch size %d exceeds the network's buffers (%d)", cfg->batch,
                       mref_max_batch(n));
    const long per_call = (long)cfg->batch * cfg->grad_accum * cfg->device_iters;
    const long calls = (long)train->n / per_call;
    if (cfg->epochs > 0 && calls < 1)
        return err_set(e, ERR_INPUT,
                       "the training set has %zu images, fewer than one host call of batch %d x "
                       "gradient accumulation %d x device iterations %d = %ld images",
                       train->n, cfg->batch, cfg->grad_accum, cfg->device_iters, per_call);
    if (train->n > UINT32_MAX)
        return err_set(e, ERR_INPUT, "training set too large (%zu images)", train->n);
    adamw opt;
    if (adamw_init(&opt, mref_nparams(n), &cfg->opt, e))
        return ERR_INPUT;
    uint32_t *perm = xmalloc(sizeof(uint32_t) * (train->n ? train->n : 1));
    int *labels = xmalloc(sizeof(int) * (size_t)cfg->batch);
    float lut[256];
    mdata_norm_table(lut);
    mrng rng;
    mrng_seed(&rng, cfg->seed, MRNG_STREAM_DATA);
    float *params = mref_params(n), *grads = mref_grads(n);
    const float inv_g = 1.0f / (float)cfg->grad_accum;
    int rc = 0;
    for (int ep = 1; ep <= cfg->epochs && rc == 0; ep++) {
        if (h && h->epoch_begin)
            h->epoch_begin(h->ctx, ep, cfg->epochs);
        for (size_t i = 0; i < train->n; i++)
            perm[i] = (uint32_t)i;
        mrng_shuffle(&rng, perm, train->n);
        size_t pos = 0;
        for (long call = 1; call <= calls; call++) {
            if ((rc = stop_asked(cfg, ep, call, calls, e)) != 0)
                break;
            double loss_sum = 0.0;
            long correct = 0;
            for (int it = 0; it < cfg->device_iters; it++) {
                mref_zero_grads(n);
                for (int g = 0; g < cfg->grad_accum; g++) {
                    int c = 0;
                    mdata_gather(train, perm + pos, (size_t)cfg->batch, lut, mref_input(n), labels);
                    pos += (size_t)cfg->batch;
                    loss_sum += mref_forward_backward(n, cfg->batch, mref_input(n), labels, &c);
                    correct += c;
                }
                if (cfg->grad_accum > 1)
                    for (size_t i = 0; i < mref_nparams(n); i++)
                        grads[i] *= inv_g;
                adamw_step(&opt, params, grads);
            }
            if (h && h->call_done) {
                mref_progress p = {
                    .epoch = ep,
                    .epochs = cfg->epochs,
                    .call = (int)call,
                    .calls = (int)calls,
                    .images = per_call,
                    .loss = loss_sum / ((double)cfg->grad_accum * cfg->device_iters),
                    .accuracy = 100.0 * (double)correct / (double)per_call,
                };
                h->call_done(h->ctx, &p);
            }
        }
    }
    free(perm);
    free(labels);
    adamw_free(&opt);
    return rc;
}

int mref_test(mref_net *n, int batch, const mdata_split *set, double *accuracy, err *e)
{
    if (batch < 1 || batch > mref_max_batch(n))
        return err_set(e, ERR_INPUT, "test batch size %d is not in 1..%d", batch,
                       mref_max_batch(n));
    if (set->n == 0)
        return err_set(e, ERR_INPUT, "the test set is empty");
    uint32_t *index = xmalloc(sizeof(uint32_t) * (size_t)batch);
    int *labels = xmalloc(sizeof(int) * (size_t)batch);
    float lut[256];
    mdata_norm_table(lut);
    long correct = 0;
    for (size_t pos = 0; pos < set->n; pos += (size_t)batch) {
        int b = set->n - pos < (size_t)batch ? (int)(set->n - pos) : batch;
        for (int i = 0; i < b; i++)
            index[i] = (uint32_t)(pos + (size_t)i);
        mdata_gather(set, index, (size_t)b, lut, mref_input(n), labels);
        const float *z = mref_forward(n, b, mref_input(n));
        for (int i = 0; i < b; i++)
            correct += mlayer_argmax(z + (size_t)i * MDATA_CLASSES, MDATA_CLASSES) == labels[i];
    }
    *accuracy = 100.0 * (double)correct / (double)set->n;
    free(index);
    free(labels);
    return 0;
}
