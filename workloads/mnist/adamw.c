/* adamw: the AdamW update of PyTorch's single-tensor CPU path (_single_tensor_adamw), written
 * out so each fp32 operation happens in the same order as there. Leaves out amsgrad,
 * maximize, capturable/foreach/fused variants and per-group settings (the tutorial uses one
 * group with defaults). */
#include "workloads/mnist/adamw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

adamw_cfg adamw_defaults(void)
{
    return (adamw_cfg){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 1e-2};
}

int adamw_init(adamw *o, size_t n, const adamw_cfg *cfg, err *e)
{
    memset(o, 0, sizeof *o);
    if (!(cfg->lr >= 0) || !(cfg->beta1 >= 0 && cfg->beta1 < 1) ||
        !(cfg->beta2 >= 0 && cfg->beta2 < 1) || !(cfg->eps >= 0) || !(cfg->weight_decay >= 0))
        return err_set(e, ERR_INPUT,
                       "AdamW: bad hyper-parameters (lr %g, betas %g %g, eps %g, weight decay %g)",
                       cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay);
    o->cfg = *cfg;
    o->n = n;
    o->m = xcalloc(n ? n : 1, sizeof(float));
    o->v = xcalloc(n ? n : 1, sizeof(float));
    return 0;
}

void adamw_step(adamw *o, float *restrict param, const float *restrict grad)
{
    const adamw_cfg *c = &o->cfg;
    o->step++;
    const double bc1 = 1.0 - pow(c->beta1, (double)o->step);
    const double bc2 = 1.0 - pow(c->beta2, (double)o->step);
    const float decay = (float)(1.0 - c->lr * c->weight_decay);
    const float w1 = (float)(1.0 - c->beta1);
    const float b2 = (float)c->beta2, w2 = (float)(1.0 - c->beta2);
    const float neg_step = (float)(-(c->lr / bc1));
    const float bc2_sqrt = (float)sqrt(bc2);
    const float eps = (float)c->eps;
    float *restrict m = o->m, *restrict v = o->v;
    for (size_t i = 0; i < o->n; i++) {
        const float g = grad[i];
        float p = param[i] * decay;
        m[i] = m[i] + w1 * (g - m[i]);
        v[i] = v[i] * b2 + (w2 * g) * g;
        const float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        param[i] = p + (neg_step * m[i]) / denom;
    }
}

void adamw_free(adamw *o)
{
    free(o->m);
    free(o->v);
    memset(o, 0, sizeof *o);
}
