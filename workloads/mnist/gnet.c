/* gnet: a network's forward pass from its layer table, over one IPU (gnet.h). It models what
 * the operation library models (each plan's steps, the Copies between one operation's output
 * layout and the next one's input); it adds no timing of its own. Left out: training, the
 * host's infeed (the input and parameters are written into the graph's tensors), several
 * IPUs. */
#include "workloads/mnist/gnet.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"

/* Bytes of each tile kept for what a plan's estimate does not count (code, vertex states,
 * the input, the parameters and the Copies' buffers); the plans before a layer's on the same
 * tiles add theirs (their blocks and patches stay). */
enum { GNET_RESERVE = 96 * 1024 };

/* The programs made so far: the plans' preps (weights to their tiles), then the run. */
typedef struct progs {
    gr_prog *p;
    size_t n, cap;
} progs;

static void add(progs *q, gr_prog p)
{
    if (p == GR_NONE)
        return;
    q->p = xgrow(q->p, &q->cap, q->n + 1, sizeof *q->p);
    q->p[q->n++] = p;
}

typedef struct build {
    graph *g;
    gnet *net;
    const mach *m;
    progs prep, run;
    op_act cur;      /* the activation the next layer reads */
    int mm;          /* cur is a linear layer's output, y^T [1][N][1][B] */
    uint32_t held;   /* tiles holding cur (the next plan's input senders) */
    uint32_t w_held; /* tiles holding the parameters */
    uint32_t kept;   /* bytes the plans so far keep on their tiles */
    err *e;
} build;

/* The parameters, [nparams] in equal runs of whole 16-byte groups over the first tiles. */
static gr_tensor params_of(build *b, uint32_t tiles)
{
    size_t n = b->net->n->nparams;
    gr_tensor t = gr_tensor_new(b->g, "params", GR_F32, 1, (uint32_t[]){(uint32_t)n});
    uint32_t parts = (uint32_t)((n + 1023) / 1024);
    parts = parts < tiles ? parts : tiles;
    for (uint32_t i = 0; i < parts; i++) {
        size_t lo = op_split(n, i, parts, 4), hi = op_split(n, i + 1, parts, 4);
        if (hi > lo)
            gr_map_region(b->g, t, b->net->ipu, i, lo, hi);
    }
    b->w_held = parts;
    gr_keep(b->g, t);
    return t;
}

/* Plan s for layer l and build it on cur (x): its output becomes cur. */
static int planned(build *b, int l, const op_conv_shape *s, const op_act *x)
{
    gnet_layer *gl = &b->net->layer[l];
    const mspec_layer *L = &b->net->n->s->layer[l];
    const mspec_tensor *w = &b->net->n->t[b->net->n->param[l]];
    op_conv_ctx ctx = {b->m->tiles_per_ipu, b->held, b->w_held, 1, GNET_RESERVE + b->kept, 0};
    err pe;
    err_clear(&pe);
    if (op_conv_plan(b->m, s, &ctx, &gl->part, &gl->est, &pe) != ERR_OK)
        return err_set(b->e, ERR_INPUT, "network %s: layer %s: %s", b->net->n->s->name, L->name,
                       pe.msg);
    op_conv c;
    op_conv_build(b->g, L->name, b->net->ipu, 0, s, &gl->part, x,
                  (op_ref){b->net->params, w->offset, 1, 0},
                  (op_ref){b->net->params, w[1].offset, 1, 0}, &c);
    add(&b->prep, c.prep);
    add(&b->run, c.run);
    b->kept += gl->est.bytes;
    b->held = gl->est.tiles;
    b->cur = c.y;
    gl->planned = 1;
    return ERR_OK;
}

/* A new layout of cur's dimensions, a sample a tile from tile 0, and the Copy into it. */
static op_act per_sample(build *b, const char *name, const char *what)
{
    char nm[64];
    snprintf(nm, sizeof nm, "%s.%s", name, what);
    uint32_t dim[OP_DIMS];
    for (int d = 0; d < OP_DIMS; d++)
        dim[d] = op_act_dim(&b->cur, d);
    op_act s = op_act_new(b->g, nm, b->net->ipu, 0, dim, (uint32_t[]){dim[OP_B], 1, 1, 1});
    add(&b->run, op_act_copy(b->g, &b->cur, &s));
    b->held = dim[OP_B];
    return s;
}

static int conv(build *b, int l)
{
    const mspec_layer *L = &b->net->n->s->layer[l];
    mspec_dims in = b->net->n->in[l];
    op_conv_shape s = {b->net->batch,
                       (uint32_t)in.c,
                       (uint32_t)in.h,
                       (uint32_t)in.w,
                       (uint32_t)L->out,
                       (uint32_t)L->k,
                       (uint32_t)L->stride,
                       (uint32_t)L->pad,
                       OP_W_FWD,
                       0,
                       0};
    op_act x = b->cur;
    b->mm = 0;
    return planned(b, l, &s, &x);
}

/* Where the activation's blocks allow it, on them; else on a copy a sample a tile. */
static int pool(build *b, int l)
{
    const char *name = b->net->n->s->layer[l].name;
    gr_cs cs;
    op_act out, arg, y = b->cur;
    if (op_pool_fwd(b->g, name, &y, &cs, &out, &arg) != ERR_OK) {
        y = per_sample(b, name, "in");
        if (op_pool_fwd(b->g, name, &y, &cs, &out, &arg) != ERR_OK)
            return err_set(b->e, ERR_INPUT, "network %s: layer %s: cannot pool its input",
                           b->net->n->s->name, name);
    }
    add(&b->run, gr_execute(b->g, cs));
    b->cur = out;
    return ERR_OK;
}

static int relu(build *b, int l)
{
    gr_cs cs = gr_cs_new(b->g, b->net->n->s->layer[l].name);
    op_relu(b->g, cs, b->cur.t, GR_NONE);
    add(&b->run, gr_execute(b->g, cs));
    return ERR_OK;
}

/* y^T = W x^T + b: after another linear layer its output read through a view, else the input
 * flattened into a sample's row by a Copy. */
static int linear(build *b, int l)
{
    const mspec_layer *L = &b->net->n->s->layer[l];
    uint32_t B = b->net->batch, K = (uint32_t)mspec_size(b->net->n->in[l]);
    op_act x;
    if (b->mm) {
        x = op_mm_in_t(&b->cur, OP_MM_FWD);
    } else {
        op_act r = per_sample(b, L->name, "rows");
        op_act m = op_act_make(r.t, (uint32_t[]){B, K, 1, 1}, (uint32_t[]){B, 1, 1, 1});
        x = op_mm_in(&m, OP_MM_FWD);
    }
    op_conv_shape s = op_mm_shape(OP_MM_FWD, B, K, (uint32_t)L->out, 0);
    b->mm = 1;
    return planned(b, l, &s, &x);
}

int gnet_build(graph *g, const mach *m, const mspec_net *n, uint32_t batch, uint32_t ipu, gnet *out,
               err *e)
{
    *out = (gnet){.n = n, .batch = batch, .ipu = ipu};
    if (batch < 1 || batch > m->tiles_per_ipu)
        return err_set(e, ERR_INPUT, "network %s: a batch of %u on %u tiles (a sample a tile)",
                       n->s->name, batch, m->tiles_per_ipu);
    build b = {.g = g, .net = out, .m = m, .e = e};
    out->params = params_of(&b, m->tiles_per_ipu);
    uint32_t dim[OP_DIMS] = {batch, (uint32_t)n->s->c, (uint32_t)n->s->h, (uint32_t)n->s->w};
    out->x = op_act_new(g, "input", ipu, 0, dim, (uint32_t[]){batch, 1, 1, 1});
    gr_keep(g, out->x.t);
    b.cur = out->x;
    b.held = batch;
    static int (*const step[])(build *, int) = {[MSPEC_CONV] = conv,
                                                [MSPEC_POOL_RELU] = pool,
                                                [MSPEC_RELU] = relu,
                                                [MSPEC_LINEAR] = linear};
    int rc = ERR_OK;
    for (int l = 0; l < n->s->nlayers && rc == ERR_OK; l++) {
        rc = step[n->s->layer[l].kind](&b, l);
        out->layer[l].out = b.cur;
    }
    if (rc == ERR_OK) {
        out->logits = op_mm_out(&b.cur, OP_MM_FWD);
        gr_keep(g, out->logits.t);
        for (size_t k = 0; k < b.run.n; k++)
            add(&b.prep, b.run.p[k]);
        out->prog = gr_seq(g, b.prep.p, b.prep.n);
    }
    free(b.prep.p);
    free(b.run.p);
    return rc;
}
