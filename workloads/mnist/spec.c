/* mspec: the networks as tables, and what follows from a table (spec.h). It models no time:
 * shapes and the parameters' layout only. The tutorial's table is the PopTorch tutorial's
 * network (docs/sources.md, Tutorial); "wide" is a wider conv-net for Fashion-MNIST with the
 * padding and stride the tutorial's lacks; "deep" has eight blocks, for a pipeline over eight
 * IPUs. Left out: layers other than the four kinds, and
 * inputs other than one image of c x h x w. */
#include "workloads/mnist/spec.h"

#include <stdio.h>
#include <string.h>

static const mspec NETS[] = {
    {"tutorial",
     "the PopTorch tutorial's: conv 1->10 k5, pool, conv 10->20 k5, pool, linear 320->256, "
     "ReLU, linear 256->10",
     1,
     28,
     28,
     7,
     {
         {MSPEC_CONV, "conv1", "layer1.conv", 1, 10, 5, 1, 0},
         {MSPEC_POOL_RELU, "pool1", NULL, 1, 0, 0, 0, 0},
         {MSPEC_CONV, "conv2", "layer2.conv", 2, 20, 5, 1, 0},
         {MSPEC_POOL_RELU, "pool2", NULL, 2, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer3", "layer3", 3, 256, 0, 0, 0},
         {MSPEC_RELU, "relu3", NULL, 3, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer4", "layer4", 4, 10, 0, 0, 0},
     }},
    {"wide",
     "a wider conv-net: conv 1->16 k5 padding 2, pool, conv 16->32 k3 padding 1, pool, linear "
     "1568->128, ReLU, linear 128->10",
     1,
     28,
     28,
     7,
     {
         {MSPEC_CONV, "conv1", "layer1.conv", 1, 16, 5, 1, 2},
         {MSPEC_POOL_RELU, "pool1", NULL, 1, 0, 0, 0, 0},
         {MSPEC_CONV, "conv2", "layer2.conv", 2, 32, 3, 1, 1},
         {MSPEC_POOL_RELU, "pool2", NULL, 2, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer3", "layer3", 3, 128, 0, 0, 0},
         {MSPEC_RELU, "relu3", NULL, 3, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer4", "layer4", 4, 10, 0, 0, 0},
     }},
    {"deep",
     "eight blocks, one an IPU: conv 1->8 k3 padding 1, pool | conv 8->16 k3 padding 1, pool | "
     "linear 784->256, ReLU | 256->256, ReLU | 256->256, ReLU | 256->128, ReLU | 128->128, ReLU "
     "| 128->10",
     1,
     28,
     28,
     15,
     {
         {MSPEC_CONV, "conv1", "layer1.conv", 1, 8, 3, 1, 1},
         {MSPEC_POOL_RELU, "pool1", NULL, 1, 0, 0, 0, 0},
         {MSPEC_CONV, "conv2", "layer2.conv", 2, 16, 3, 1, 1},
         {MSPEC_POOL_RELU, "pool2", NULL, 2, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer3", "layer3", 3, 256, 0, 0, 0},
         {MSPEC_RELU, "relu3", NULL, 3, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer4", "layer4", 4, 256, 0, 0, 0},
         {MSPEC_RELU, "relu4", NULL, 4, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer5", "layer5", 5, 256, 0, 0, 0},
         {MSPEC_RELU, "relu5", NULL, 5, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer6", "layer6", 6, 128, 0, 0, 0},
         {MSPEC_RELU, "relu6", NULL, 6, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer7", "layer7", 7, 128, 0, 0, 0},
         {MSPEC_RELU, "relu7", NULL, 7, 0, 0, 0, 0},
         {MSPEC_LINEAR, "layer8", "layer8", 8, 10, 0, 0, 0},
     }},
};

const mspec *mspec_at(int i)
{
    return i >= 0 && i < (int)(sizeof NETS / sizeof NETS[0]) ? &NETS[i] : NULL;
}

const mspec *mspec_tutorial(void)
{
    return &NETS[0];
}

int mspec_blocks(const mspec *s)
{
    return s->nlayers ? s->layer[s->nlayers - 1].block : 0;
}

const mspec *mspec_find(const char *name)
{
    for (int i = 0; mspec_at(i); i++)
        if (strcmp(mspec_at(i)->name, name) == 0)
            return mspec_at(i);
    return NULL;
}

/* A parameter tensor of layer l: its key then `what` ("weight", "bias"). */
static void add_tensor(mspec_net *n, int l, const char *what, int ndim, const int64_t *shape,
                       int fan_in)
{
    mspec_tensor *t = &n->t[n->ntensors++];
    snprintf(t->name, sizeof t->name, "%s.%s", n->s->layer[l].key, what);
    t->ndim = ndim;
    t->count = 1;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->count *= (size_t)shape[d];
    }
    t->offset = n->nparams;
    t->fan_in = fan_in;
    t->layer = l;
    n->nparams += t->count;
}

/* Layer l's output from its input (n->in[l]); its parameters. ERR_INPUT when its shape does
 * not follow. */
static int resolve_layer(mspec_net *n, int l, err *e)
{
    const mspec_layer *L = &n->s->layer[l];
    mspec_dims in = n->in[l], *out = &n->out[l];
    n->param[l] = -1;
    switch (L->kind) {
    case MSPEC_CONV: {
        int s = L->stride > 1 ? L->stride : 1;
        if (L->out < 1 || L->k < 1 || L->pad < 0 || in.h + 2 * L->pad < L->k ||
            in.w + 2 * L->pad < L->k)
            return err_set(e, ERR_INPUT,
                           "network %s: layer %s: a %d x %d kernel over %d x %d padded by %d",
                           n->s->name, L->name, L->k, L->k, in.h, in.w, L->pad);
        *out = (mspec_dims){L->out, (in.h + 2 * L->pad - L->k) / s + 1,
                            (in.w + 2 * L->pad - L->k) / s + 1};
        n->param[l] = n->ntensors;
        int fan = in.c * L->k * L->k;
        add_tensor(n, l, "weight", 4, (int64_t[]){L->out, in.c, L->k, L->k}, fan);
        add_tensor(n, l, "bias", 1, (int64_t[]){L->out}, fan);
        return ERR_OK;
    }
    case MSPEC_POOL_RELU:
        if (in.h % 2 || in.w % 2 || in.h == 1)
            return err_set(e, ERR_INPUT, "network %s: layer %s: a 2 x 2 pool over %d x %d planes",
                           n->s->name, L->name, in.h, in.w);
        *out = (mspec_dims){in.c, in.h / 2, in.w / 2};
        return ERR_OK;
    case MSPEC_RELU:
        if (l == 0)
            return err_set(e, ERR_INPUT,
                           "network %s: layer %s: a ReLU first (it works in place on the input)",
                           n->s->name, L->name);
        *out = in;
        return ERR_OK;
    case MSPEC_LINEAR: {
        int fan = (int)mspec_size(in);
        if (L->out < 1)
            return err_set(e, ERR_INPUT, "network %s: layer %s: %d outputs", n->s->name, L->name,
                           L->out);
        *out = (mspec_dims){L->out, 1, 1};
        n->param[l] = n->ntensors;
        add_tensor(n, l, "weight", 2, (int64_t[]){L->out, fan}, fan);
        add_tensor(n, l, "bias", 1, (int64_t[]){L->out}, fan);
        return ERR_OK;
    }
    }
    return err_set(e, ERR_INPUT, "network %s: layer %s: unknown kind", n->s->name, L->name);
}

int mspec_resolve(const mspec *s, mspec_net *n, err *e)
{
    memset(n, 0, sizeof *n);
    n->s = s;
    if (s->nlayers < 1 || s->nlayers > MSPEC_MAX_LAYERS)
        return err_set(e, ERR_INPUT, "network %s: %d layers (1 to %d)", s->name, s->nlayers,
                       MSPEC_MAX_LAYERS);
    mspec_dims d = {s->c, s->h, s->w};
    for (int l = 0; l < s->nlayers; l++) {
        int b = s->layer[l].block, prev = l ? s->layer[l - 1].block : 1;
        if (b < 1 || b > MSPEC_MAX_BLOCKS || b < prev || b > prev + 1)
            return err_set(e, ERR_INPUT,
                           "network %s: layer %s: block %d: the blocks go 1, 2, ... in layer "
                           "order, %d at most",
                           s->name, s->layer[l].name, b, MSPEC_MAX_BLOCKS);
        n->in[l] = d;
        int rc = resolve_layer(n, l, e);
        if (rc != ERR_OK)
            return rc;
        d = n->out[l];
    }
    if (s->layer[s->nlayers - 1].kind != MSPEC_LINEAR)
        return err_set(e, ERR_INPUT,
                       "network %s: ends in %s, not a linear layer (the loss's logits)", s->name,
                       s->layer[s->nlayers - 1].name);
    n->classes = d.c;
    return ERR_OK;
}
