/* adamw: torch.optim.AdamW (decoupled weight decay, bias-corrected, amsgrad off) on one flat
 * fp32 parameter vector. Defaults as PyTorch and the tutorial: lr 0.001, betas (0.9, 0.999),
 * eps 1e-8, weight decay 0.01. Step t (from 1) does, elementwise, in PyTorch's fp32 order:
 *   p = p * (1 - lr*wd)
 *   m = m + (1 - b1) * (g - m)                      (torch.lerp)
 *   v = v * b2 + ((1 - b2) * g) * g
 *   p = p + ((-lr / (1 - b1^t)) * m) / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * with the scalar factors computed in double, as Python does, and rounded to fp32 once. */
#ifndef IPUSIM_MNIST_ADAMW_H
#define IPUSIM_MNIST_ADAMW_H

#include <stddef.h>

#include "base/err.h"

typedef struct adamw_cfg {
    double lr, beta1, beta2, eps, weight_decay;
} adamw_cfg;

typedef struct adamw {
    adamw_cfg cfg;
    size_t n;
    long step;    /* steps taken */
    float *m, *v; /* first and second moments, n each */
} adamw;

adamw_cfg adamw_defaults(void);
/* Zeroed moments for n parameters. 0 or ERR_INPUT (bad hyper-parameters). */
int adamw_init(adamw *o, size_t n, const adamw_cfg *cfg, err *e);
/* One update of param[n] with grad[n]. */
void adamw_step(adamw *o, float *param, const float *grad);
void adamw_free(adamw *o);

#endif
