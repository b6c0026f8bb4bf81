/* gnet_train: the simulated MNIST run's graph of a network from its layer table, on one IPU,
 * or sharded or pipelined over several (gnet.h, gnet_mnet; the stages: gnet_pipe.c). Per micro-batch: the infeed's images and labels, the forward
 * (gnet.c), the logits into the outfeed buffer, the softmax cross-entropy and its gradient
 * (xent_fwd_bwd) on one tile, then the backward layer by layer from the last, as PopLibs
 * computes it: a linear layer's input gradient dx^T = W^T dy^T and weight gradient
 * dW = dy^T x as planned matrix products, its bias gradient a reduction of dy^T's rows; a
 * convolution's input gradient as the convolution of dy with the kernel flipped and its
 * channels swapped (padding k - 1 - p), its weight gradient as the convolution with the roles
 * swapped (the input [cin][B][h][w], the "weights" dy a sample a tile), its bias gradient
 * bias_grad on each sample's dy; a pool's gradient on its blocks (op_pool_bwd), a ReLU's on
 * its output's mapping. Each weight and bias gradient is accumulated over the G micro-batches
 * of an update next to where it is made; the update moves them into the flat gradient
 * vector (the conv biases' per-sample sums added first), scales by 1/G and applies AdamW
 * (mnet_adamw) where the parameters live, then lays the new weights out for the plans.
 *
 * What it models is the operation library's (each plan's steps and Copies; docs/planning.md)
 * and the run's (mnet.c). Over several IPUs each layer works on its block's IPU: the
 * activation and its gradient cross where the IPU changes (gnet_cross), the labels go from
 * the infeed on IPU 0 to the loss's tile; pipelined, gnet_pipe.c cuts the stages out of the
 * programs built here. Left out: replicas (the tutorial's own graph, mnet_graph.c, does
 * them), I/O tiles, the u8 and fp16 infeeds, the offloaded optimiser, strides in training (their input gradient is a dilated convolution,
 * which the library does not build). The gradients' sums go in another order than the
 * reference trainer's where a plan splits them (docs/mnist.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/gnet_int.h"
#include "workloads/mnist/mnet_int.h"

enum { GNET_ROW_TILES = 16 }; /* tiles holding a linear layer's dy^T rows */

typedef struct trn {
    gnet_bld *b;
    mnet_b *mb;
    uint32_t B, lt; /* the batch; the loss's tile */
    uint32_t lipu;  /* the loss's IPU: the last layer's */
    /* the labels as the loss reads them: in the infeed after the images (on the loss's tile
     * when it is on the first IPU), else a copy of them on the loss's tile (labels.at 0) */
    op_sl labels;
    uint32_t scratch; /* the next tile for a layer's gradient rows or bias sums */
    gnet_progs bwd;   /* a micro-batch's backward */
    gnet_progs dprep; /* the input gradients' preps: after every update */
    gr_xfer *gx, *ux; /* update: conv biases' partial sums to their tile; every gradient
                          * into grads */
    size_t ngx, cgx, nux, cux;
    gr_cs dbsum, zero; /* update: the conv biases' sums; the accumulators zeroed */
    op_act g;          /* the gradient at the current layer's output */
    uint32_t gheld;    /* the tiles holding it */
    /* where each layer's backward starts in bwd; pipelined: the gradient's crossing into it */
    size_t bwd_at[MSPEC_MAX_LAYERS];
    gnet_xing down[MSPEC_MAX_LAYERS];
} trn;

static void xfers(gr_xfer **x, size_t *n, size_t *cap, const op_act *src, const op_act *dst)
{
    gr_xfer *p;
    size_t k = op_act_xfers(src, dst, &p);
    *x = xgrow(*x, cap, *n + k, sizeof **x);
    memcpy(*x + *n, p, k * sizeof *p);
    *n += k;
    free(p);
}

static const char *nm(char *buf, size_t n, const char *layer, const char *what)
{
    snprintf(buf, n, "%s.%s", layer, what);
    return buf;
}

/* A gradient accumulator mapped as t, kept between micro-batches, zeroed by the update. */
static gr_tensor accumulator(trn *t, const char *name, gr_tensor like)
{
    gr_tensor a = op_like(t->b->g, name, like);
    gr_keep(t->b->g, a);
    op_zero(t->b->g, t->zero, a, name);
    return a;
}

/* Elements of grads from `at` as a row-major layout of dims d. */
static op_act grads_at(trn *t, size_t at, const uint32_t d[OP_DIMS])
{
    op_act a = op_act_make(t->mb->grads, d, (uint32_t[]){1, 1, 1, 1});
    a.at = at;
    return a;
}

/* Parameter tensor i's gradient in grads, dims its shape (1 where absent). */
static op_act param_act(trn *t, int i)
{
    const mspec_tensor *p = &t->b->net->n->t[i];
    uint32_t d[OP_DIMS] = {1, 1, 1, 1};
    for (int k = 0; k < p->ndim; k++)
        d[k] = (uint32_t)p->shape[k];
    return grads_at(t, p->offset, d);
}

/* The plan's output accumulated (acc += y after each run): the compute set into bwd. */
static op_act accumulate(trn *t, const char *layer, const op_conv *c)
{
    char n1[64];
    op_act a = c->y;
    a.t = accumulator(t, nm(n1, sizeof n1, layer, "dw.acc"), c->y.t);
    gr_cs cs = gr_cs_new(t->b->g, n1);
    op_acc(t->b->g, cs, a.t, c->y.t);
    gnet_add(&t->bwd, gr_execute(t->b->g, cs));
    return a;
}

/* The current gradient laid out as `as` (a new tensor mapped as as->t): what an element-wise
 * gradient (a ReLU's, a pool's) reads. */
static op_act laid_as(trn *t, const char *name, const op_act *as)
{
    op_act d = *as;
    d.t = op_like(t->b->g, name, as->t);
    gnet_add(&t->bwd, op_act_copy(t->b->g, &t->g, &d));
    return d;
}

/* ---- the layers' backward: t->g from the gradient at the output to that at the input ---- */

/* A convolution's bias gradient: bias_grad of each block of dy (a sample and channels) on its
 * tile into partial sums, the B partial sums onto one tile, reduced there and added into
 * grads' bias at the update. */
static void conv_bias_grad(trn *t, int l, const op_act *dy)
{
    gnet_bld *b = t->b;
    const mspec_net *n = b->net->n;
    const mspec_layer *L = &n->s->layer[l];
    mspec_dims out = n->out[l];
    uint32_t B = t->B, co = (uint32_t)out.c, P = (uint32_t)(out.h * out.w), cp = (co + 1) & ~1u;
    char n1[64];
    uint32_t shape[1] = {B * cp};
    gr_tensor dbp = gr_tensor_new(b->g, nm(n1, sizeof n1, L->name, "db.parts"), GR_F32, 1, shape);
    uint32_t pc = dy->part[OP_C];
    for (uint32_t s = 0; s < B; s++)
        for (uint32_t j = 0; j < pc; j++) {
            uint32_t c0 = op_lo(dy, OP_C, j), c1 = op_lo(dy, OP_C, j + 1);
            gr_map_region(b->g, dbp, b->ipu, s * pc + j, (size_t)s * cp + c0,
                          (size_t)s * cp + (j + 1 == pc ? cp : c1));
        }
    gr_keep(b->g, dbp);
    op_zero(b->g, t->zero, dbp, n1);
    gr_cs cs = gr_cs_new(b->g, nm(n1, sizeof n1, L->name, "bias.grad"));
    for (uint32_t s = 0; s < B; s++)
        for (uint32_t j = 0; j < pc; j++) {
            uint32_t c0 = op_lo(dy, OP_C, j), c1 = op_lo(dy, OP_C, j + 1);
            op_sl rows = {dy->t, ((size_t)s * co + c0) * P, (size_t)(c1 - c0) * P};
            op_v_bias(b->g, cs, b->ipu, s * pc + j, rows,
                      (op_sl){dbp, (size_t)s * cp + c0, c1 - c0}, c1 - c0, P, 1, 0, 1);
        }
    gnet_add(&t->bwd, gr_execute(b->g, cs));
    /* the biases' sums: the B partial sums onto one tile, added there into grads' bias */
    uint32_t rt = t->scratch++;
    gr_tensor stage =
        gr_tensor_new(b->g, nm(n1, sizeof n1, L->name, "db.gather"), GR_F32, 1, shape);
    gr_map_region(b->g, stage, b->ipu, rt, 0, shape[0]);
    shape[0] = cp;
    gr_tensor dbs = gr_tensor_new(b->g, nm(n1, sizeof n1, L->name, "db.sum"), GR_F32, 1, shape);
    gr_map_region(b->g, dbs, b->ipu, rt, 0, cp);
    t->gx = xgrow(t->gx, &t->cgx, t->ngx + 1, sizeof *t->gx);
    t->gx[t->ngx++] = (gr_xfer){dbp, 0, stage, 0, (size_t)B * cp};
    op_v_reduce(b->g, t->dbsum, b->ipu, rt, (op_sl){dbs, 0, co}, (op_sl){stage, 0, B * cp}, co, B,
                cp, 1.0f);
    op_act sum = op_act_make(dbs, (uint32_t[]){co, 1, 1, 1}, (uint32_t[]){1, 1, 1, 1});
    op_act gb = param_act(t, n->param[l] + 1);
    xfers(&t->ux, &t->nux, &t->cux, &sum, &gb);
}

/* dW^T [cin][cout][k][k] = the input [cin][B][h][w] convolved with dy [cout][B][ho][wo],
 * accumulated, into grads' weights at the update. */
static int conv_weight_grad(trn *t, int l, const op_act *dy)
{
    gnet_bld *b = t->b;
    const mspec_net *n = b->net->n;
    const mspec_layer *L = &n->s->layer[l];
    mspec_dims in = n->in[l], out = n->out[l];
    uint32_t B = t->B, co = (uint32_t)out.c;
    char n1[64];
    static const uint8_t swap[OP_DIMS] = {1, 0, 2, 3};
    op_conv_shape ws = {(uint32_t)in.c,
                        B,
                        (uint32_t)in.h,
                        (uint32_t)in.w,
                        co,
                        (uint32_t)out.h,
                        1,
                        (uint32_t)L->pad,
                        OP_W_T,
                        1,
                        0};
    op_act xv = op_act_view(&b->net->layer[l].in, swap);
    op_conv dw;
    gnet_w wd = {-1, 0, {dy->t, 0, 1, 0}, B * dy->part[OP_C]};
    if (gnet_plan(b, nm(n1, sizeof n1, L->name, "dw"), "weight gradient", &ws, &xv,
                  b->net->layer[l].held, 0, &wd, 0, 1, &dw) != ERR_OK)
        return ERR_INPUT;
    gnet_add(&t->bwd, dw.prep);
    gnet_add(&t->bwd, dw.run);
    op_act acc = accumulate(t, L->name, &dw), accv = op_act_view(&acc, swap);
    op_act gw = param_act(t, n->param[l]);
    xfers(&t->ux, &t->nux, &t->cux, &accv, &gw);
    return ERR_OK;
}

/* dx = dy convolved with w flipped, channels swapped, padded by k - 1 - p: t->g from here. */
static int conv_input_grad(trn *t, int l)
{
    gnet_bld *b = t->b;
    const mspec_net *n = b->net->n;
    const mspec_layer *L = &n->s->layer[l];
    mspec_dims in = n->in[l], out = n->out[l];
    char n1[64];
    op_conv_shape xs = {t->B,
                        (uint32_t)out.c,
                        (uint32_t)out.h,
                        (uint32_t)out.w,
                        (uint32_t)in.c,
                        (uint32_t)L->k,
                        1,
                        (uint32_t)(L->k - 1 - L->pad),
                        OP_W_FWD,
                        1,
                        0};
    gnet_w wf = {l, 1, {GR_NONE, 0, 0, 0}, 0};
    op_conv dx;
    if (gnet_plan(b, nm(n1, sizeof n1, L->name, "dx"), "input gradient", &xs, &t->g, t->gheld, 0,
                  &wf, 0, t->mb->G, &dx) != ERR_OK)
        return ERR_INPUT;
    gnet_add(&t->dprep, dx.prep);
    gnet_add(&t->bwd, dx.run);
    t->g = dx.y;
    t->gheld = b->net->plan[b->net->nplans - 1].est.tiles;
    return ERR_OK;
}

static int conv_bwd(trn *t, int l)
{
    gnet_bld *b = t->b;
    const mspec_net *n = b->net->n;
    const mspec_layer *L = &n->s->layer[l];
    mspec_dims out = n->out[l];
    char n1[64];
    /* dy row-major in blocks of a sample and channels (gnet_spread): the weight gradient's
     * "weights", and bias_grad's rows on each block's tile */
    op_act dy = gnet_spread(b, nm(n1, sizeof n1, L->name, "dy"),
                            (uint32_t[]){t->B, (uint32_t)out.c, (uint32_t)out.h, (uint32_t)out.w});
    gnet_add(&t->bwd, op_act_copy(b->g, &t->g, &dy));
    conv_bias_grad(t, l, &dy);
    if (conv_weight_grad(t, l, &dy) != ERR_OK)
        return ERR_INPUT;
    return l == 0 ? ERR_OK : conv_input_grad(t, l);
}

static int pool_bwd(trn *t, int l)
{
    gnet_bld *b = t->b;
    const gnet_layer *gl = &b->net->layer[l];
    const char *name = b->net->n->s->layer[l].name;
    char n1[64];
    op_act dout = laid_as(t, nm(n1, sizeof n1, name, "dy"), &gl->out), din;
    gr_cs cs;
    if (op_pool_bwd(b->g, nm(n1, sizeof n1, name, "grad"), &gl->in, &gl->out, &gl->arg, dout.t, &cs,
                    &din) != ERR_OK)
        return err_set(b->e, ERR_INPUT, "network %s: layer %s: cannot pool its gradient",
                       b->net->n->s->name, name);
    gnet_add(&t->bwd, gr_execute(b->g, cs));
    t->g = din;
    return ERR_OK;
}

static int relu_bwd(trn *t, int l)
{
    gnet_bld *b = t->b;
    const char *name = b->net->n->s->layer[l].name;
    char n1[64];
    op_act dy = laid_as(t, nm(n1, sizeof n1, name, "dy"), &b->net->layer[l].out);
    gr_cs cs = gr_cs_new(b->g, nm(n1, sizeof n1, name, "grad"));
    op_relu(b->g, cs, b->net->layer[l].out.t, dy.t);
    gnet_add(&t->bwd, gr_execute(b->g, cs));
    t->g = dy;
    return ERR_OK;
}

/* dy^T [N][M] in rows over GRAD_ROW_TILES tiles, its rows' sums the bias gradient (a
 * reduce_add a row on the row's tile, then added to the accumulator); the weight gradient
 * dW = dy^T x (dy^T read as the weights, as they are), the input gradient dx^T = W^T dy^T,
 * back to the flattened input's shape a sample a tile where a 4-D layer came before. */
static int linear_bwd(trn *t, int l)
{
    gnet_bld *b = t->b;
    const mspec_net *n = b->net->n;
    const mspec_layer *L = &n->s->layer[l];
    const mspec_tensor *w = &n->t[n->param[l]];
    const gnet_layer *gl = &b->net->layer[l];
    uint32_t M = t->B, N = (uint32_t)L->out, K = (uint32_t)mspec_size(n->in[l]);
    uint32_t parts = N < GNET_ROW_TILES ? N : GNET_ROW_TILES, first = t->scratch;
    t->scratch += parts;
    char n1[64];
    op_act dyt = op_act_new(b->g, nm(n1, sizeof n1, L->name, "dyT"), b->ipu, first,
                            (uint32_t[]){1, N, 1, M}, (uint32_t[]){1, parts, 1, 1});
    gnet_add(&t->bwd, op_act_copy(b->g, &t->g, &dyt));
    op_act db = op_act_new(b->g, nm(n1, sizeof n1, L->name, "db"), b->ipu, first,
                           (uint32_t[]){1, N, 1, 1}, (uint32_t[]){1, parts, 1, 1});
    gr_cs cs = gr_cs_new(b->g, nm(n1, sizeof n1, L->name, "bias.grad"));
    for (uint32_t c = 0; c < N; c++)
        op_v_reduce(b->g, cs, b->ipu, first + op_part_of(&dyt, OP_C, c), (op_sl){db.t, c, 1},
                    (op_sl){dyt.t, (size_t)c * M, M}, 1, M, 1, 1.0f);
    gnet_add(&t->bwd, gr_execute(b->g, cs));
    op_act dba = db;
    dba.t = accumulator(t, nm(n1, sizeof n1, L->name, "db.acc"), db.t);
    cs = gr_cs_new(b->g, n1);
    op_acc(b->g, cs, dba.t, db.t);
    gnet_add(&t->bwd, gr_execute(b->g, cs));
    op_act gb = grads_at(t, w[1].offset, (uint32_t[]){1, N, 1, 1});
    xfers(&t->ux, &t->nux, &t->cux, &dba, &gb);
    op_conv_shape ws = op_mm_shape(OP_MM_DW, M, K, N, 0), xs = op_mm_shape(OP_MM_DX, M, K, N, 0);
    ws.form = xs.form = OP_W_FWD;
    /* the weight gradient reads rows [B][K] as they are, a y^T [1][K][1][B] transposed */
    int rows = gl->in.t != GR_NONE;
    op_act x = rows ? op_mm_in(&gl->in, OP_MM_DW) : op_mm_in_t(&gl->yt, OP_MM_DW);
    op_act dyin = op_mm_in_t(&dyt, OP_MM_DX);
    op_conv dw, dx;
    gnet_w wd = {-1, 0, {dyt.t, 0, 1, 0}, parts}, wt = {l, 1, {GR_NONE, 0, 0, 0}, 0};
    if (gnet_plan(b, nm(n1, sizeof n1, L->name, "dw"), "weight gradient", &ws, &x, gl->held,
                  rows ? 0 : 1, &wd, 0, 1, &dw) != ERR_OK ||
        gnet_plan(b, nm(n1, sizeof n1, L->name, "dx"), "input gradient", &xs, &dyin, parts, 0, &wt,
                  0, t->mb->G, &dx) != ERR_OK)
        return ERR_INPUT;
    gnet_add(&t->bwd, dw.prep);
    gnet_add(&t->bwd, dw.run);
    op_act acc = accumulate(t, L->name, &dw), accv = op_mm_out(&acc, OP_MM_DW);
    op_act gw = param_act(t, n->param[l]);
    xfers(&t->ux, &t->nux, &t->cux, &accv, &gw);
    gnet_add(&t->dprep, dx.prep);
    gnet_add(&t->bwd, dx.run);
    t->g = dx.y;
    t->gheld = b->net->plan[b->net->nplans - 1].est.tiles;
    if (gl->in.t == GR_NONE)
        return ERR_OK;
    /* dx [B][K] a sample a tile, read as the flattened layer's [B][c][h][w] */
    op_act dxm = op_mm_out(&dx.y, OP_MM_DX);
    op_act r = op_act_new(b->g, nm(n1, sizeof n1, L->name, "dx.rows"), b->ipu, 0,
                          (uint32_t[]){M, K, 1, 1}, (uint32_t[]){M, 1, 1, 1});
    gnet_add(&t->bwd, op_act_copy(b->g, &dxm, &r));
    mspec_dims d = n->in[l];
    t->g = op_act_make(r.t, (uint32_t[]){M, (uint32_t)d.c, (uint32_t)d.h, (uint32_t)d.w},
                       (uint32_t[]){M, 1, 1, 1});
    t->gheld = M;
    return ERR_OK;
}

/* ---- the loss, the update, the run ---- */

/* n floats on a tile of the loss's IPU (the last layer's). */
static gr_tensor on_tile(trn *t, const char *name, uint32_t tile, size_t n)
{
    gr_tensor x = gr_tensor_new(t->b->g, name, GR_F32, 1, (uint32_t[]){(uint32_t)n});
    gr_map_region(t->b->g, x, t->lipu, tile, 0, n);
    return x;
}

/* The logits into the outfeed buffer ([B][10], then the mean loss and a pad word) on the
 * loss's tile; in training the softmax cross-entropy and its gradient dz [B][10] there, in
 * ranges of rows (a worker each), the ranges' losses summed and divided by B into the buffer.
 * t->g becomes dz^T. */
static void loss(trn *t, gnet_progs *pre)
{
    gnet_bld *b = t->b;
    uint32_t B = t->B, ipu = t->lipu, nv = B < 6 ? B : 6;
    op_act res = op_act_make(t->mb->res, (uint32_t[]){B, 10, 1, 1}, (uint32_t[]){1, 1, 1, 1});
    gnet_add(pre, op_act_copy(b->g, &b->net->logits, &res));
    if (!t->mb->train)
        return;
    gr_tensor dz = on_tile(t, "loss.dz", t->lt, 10 * (size_t)B);
    gr_tensor sums = on_tile(t, "loss.sums", t->lt, 2 * (size_t)nv);
    gr_cs k0 = gr_cs_new(b->g, "loss"), k1 = gr_cs_new(b->g, "loss.mean");
    for (uint32_t v = 0; v < nv; v++) {
        uint32_t r0 = B * v / nv, r1 = B * (v + 1) / nv;
        gr_field f[7] = {gr_region(t->mb->res, 10 * (size_t)r0, 10 * (size_t)r1),
                         gr_region(t->labels.t, t->labels.at + r0, t->labels.at + r1),
                         gr_region(dz, 10 * (size_t)r0, 10 * (size_t)r1),
                         gr_u32(r1 - r0),
                         gr_u32(B),
                         gr_region(sums, 2 * (size_t)v, 2 * (size_t)v + 1),
                         gr_region(sums, 2 * (size_t)v + 1, 2 * (size_t)v + 2)};
        gr_vertex(b->g, k0, "xent_fwd_bwd", 0, ipu, t->lt, f, 7);
    }
    op_v_reduce(b->g, k1, ipu, t->lt, (op_sl){t->mb->res, 10 * (size_t)B, 1},
                (op_sl){sums, 0, 2 * (size_t)nv}, 1, nv, 2, 1.0f / (float)B);
    gnet_add(pre, gr_execute(b->g, k0));
    gnet_add(pre, gr_execute(b->g, k1));
    op_act dza = op_act_make(dz, (uint32_t[]){B, 10, 1, 1}, (uint32_t[]){1, 1, 1, 1});
    t->g = op_mm_in(&dza, OP_MM_DX);
    t->gheld = 1;
}

/* After G micro-batches: the conv biases' partial sums gathered and added, every accumulated
 * gradient into grads, scaled there by 1/G (reduce_add of one part, k = 1/G: x 1 exactly when
 * G is 1, as the reference skips it), the AdamW step, the accumulators zeroed, then the new
 * weights laid out for the plans (preps). */
static gr_prog update(trn *t, gr_prog zero, gr_prog preps)
{
    graph *g = t->b->g;
    mnet_b *mb = t->mb;
    gnet_progs q = {0};
    if (t->ngx) {
        gnet_add(&q, gr_copy_many(g, t->gx, t->ngx));
        gnet_add(&q, gr_execute(g, t->dbsum));
    }
    gnet_add(&q, gr_copy_many(g, t->ux, t->nux));
    gr_cs c1 = gr_cs_new(g, "grads.scale"), c2 = gr_cs_new(g, "adamw");
    for (size_t k = 0; k < mb->nupd; k++) {
        op_sl r = {mb->grads, mb->upd[k].begin, mb->upd[k].end - mb->upd[k].begin};
        op_v_reduce(g, c1, mb->upd[k].gt / mb->T, mb->upd[k].gt % mb->T, r, r, (uint32_t)r.n, 1,
                    (uint32_t)r.n, 1.0f / (float)mb->G);
    }
    mnet_adamw(mb, c1, c2);
    gnet_add(&q, gr_execute(g, c1));
    gnet_add(&q, gr_execute(g, c2));
    gnet_add(&q, zero);
    gnet_add(&q, preps);
    return gnet_seq(g, &q);
}

int gnet_check(const mnet_cfg *c, const mspec_net *n, int train, err *e)
{
    int pipe_train = c->pipelined && train;
    const char *why = c->replicas > 1               ? "replicas"
                      : c->io_tiles                 ? "I/O tiles"
                      : c->dtype != MNET_FP32       ? "an infeed other than fp32"
                      : c->offload                  ? "an offloaded optimiser"
                      : c->max_tiles                ? "a tile limit"
                      : pipe_train && !c->recompute ? "stashing every activation (--recompute off)"
                      : pipe_train && c->out_mode != STRM_ALL && c->out_mode != STRM_FINAL
                          ? "a pipelined outfeed other than all or final"
                          : NULL;
    if (why)
        return err_set(e, ERR_INPUT,
                       "network %s: the simulated run of a network other than the tutorial's is "
                       "on one IPU, sharded or pipelined over several, without %s",
                       n->s->name, why);
    int K = mspec_blocks(n->s);
    char on[96];
    if (!mnet_stages_in_order(c->stage_ipu, K))
        return err_set(e, ERR_INPUT,
                       "network %s: blocks B1..B%d on IPUs %s: B1 goes on IPU 0 and each next "
                       "block on the same IPU or the next",
                       n->s->name, K, mnet_stages_text(c->stage_ipu, K, on, sizeof on));
    if (n->s->c * n->s->h * n->s->w != MDATA_PIXELS || n->classes != MDATA_CLASSES)
        return err_set(e, ERR_INPUT, "network %s: the infeed takes %d-pixel images of %d classes",
                       n->s->name, MDATA_PIXELS, MDATA_CLASSES);
    for (int l = 0; train && l < n->s->nlayers; l++) {
        const mspec_layer *L = &n->s->layer[l];
        if (L->kind == MSPEC_CONV && L->stride > 1)
            return err_set(e, ERR_INPUT,
                           "network %s: layer %s: stride %d: training needs its input gradient, "
                           "a dilated convolution the operation library does not build",
                           n->s->name, L->name, L->stride);
        if (L->kind == MSPEC_CONV && (n->out[l].h * n->out[l].w % 4 || n->out[l].h != n->out[l].w))
            return err_set(e, ERR_INPUT,
                           "network %s: layer %s: a %d x %d output: training needs square "
                           "output planes of whole 16-byte rows (bias_grad, the weight gradient's "
                           "kernel)",
                           n->s->name, L->name, n->out[l].h, n->out[l].w);
    }
    return ERR_OK;
}

/* The tensors every run has: the parameters (and in training their gradient and AdamW's
 * state, with the update's ranges), the infeed (a sample's image on its tile, the labels on
 * the loss's) and the outfeed buffer. */
static void tensors(trn *t, gnet_bld *b)
{
    mnet_b *mb = t->mb;
    gnet *net = b->net;
    mb->params = gnet_params(b);
    if (mb->train) {
        mb->grads = gnet_flat(b, "grads");
        mb->opt_m = gnet_flat(b, "adamw.m");
        mb->opt_v = gnet_flat(b, "adamw.v");
        for (uint32_t s = 0; s < b->nseg; s++)
            for (uint32_t i = 0; i < b->seg[s].w_held; i++) {
                mb->upd = xgrow(mb->upd, &mb->cupd, mb->nupd + 1, sizeof *mb->upd);
                mb->upd[mb->nupd++] = (mnet_upd){b->seg[s].ipu * mb->T + i, gnet_seg_at(b, s, i),
                                                 gnet_seg_at(b, s, i + 1)};
            }
    }
    uint32_t B = t->B, px = mb->px;
    mb->xin = gr_tensor_new(b->g, "infeed", GR_F32, 1, (uint32_t[]){B * px + B});
    for (uint32_t s = 0; s < B; s++)
        gr_map_region(b->g, mb->xin, net->ipu[0], s, (size_t)s * px, (size_t)(s + 1) * px);
    gr_map_region(b->g, mb->xin, net->ipu[0], t->lt, (size_t)B * px, (size_t)B * (px + 1));
    t->labels = (op_sl){mb->xin, (size_t)B * px, B};
    uint32_t dim[OP_DIMS] = {B, (uint32_t)net->n->s->c, (uint32_t)net->n->s->h,
                             (uint32_t)net->n->s->w};
    net->x = op_act_make(mb->xin, dim, (uint32_t[]){B, 1, 1, 1});
    mb->res = on_tile(t, "outfeed", t->lt, mnet_res_words(mb));
    b->cur = net->x;
    b->held = B;
}

/* The backward of every layer, the last first. */
static int backward(trn *t)
{
    static int (*const step[])(trn *, int) = {[MSPEC_CONV] = conv_bwd,
                                              [MSPEC_POOL_RELU] = pool_bwd,
                                              [MSPEC_RELU] = relu_bwd,
                                              [MSPEC_LINEAR] = linear_bwd};
    gnet_bld *b = t->b;
    const mspec_net *n = b->net->n;
    for (int l = n->s->nlayers - 1; l >= 0; l--) {
        char name[64];
        snprintf(name, sizeof name, "%s.dy", n->s->layer[l].name);
        b->ipu = b->net->ipu[l];
        t->g =
            gnet_cross(b, b->pipelined ? NULL : &t->bwd, b->pipelined ? &t->down[l] : NULL, &t->g,
                       l + 1 < n->s->nlayers ? b->net->ipu[l + 1] : t->lipu, b->ipu, name);
        t->bwd_at[l] = t->bwd.n;
        if (step[n->s->layer[l].kind](t, l) != ERR_OK)
            return ERR_INPUT;
    }
    return ERR_OK;
}

/* The new weights laid out for every plan: the forward's preps, then the input gradients'. */
static gr_prog all_preps(trn *t)
{
    for (size_t k = 0; k < t->dprep.n; k++)
        gnet_add(&t->b->prep, t->dprep.p[k]);
    return gnet_seq(t->b->g, &t->b->prep);
}

/* The programs: training, init (zero, preps) then mnet_loop's; the test pass, the preps then
 * per micro-batch the infeed, the forward and the outfeed. */
static void programs(trn *t, const mnet_cfg *c, gnet_progs *pre, uint32_t updates,
                     uint32_t per_call)
{
    gnet_bld *b = t->b;
    mnet_b *mb = t->mb;
    gnet_progs q = {0};
    gr_prog preps = all_preps(t);
    if (!mb->train) {
        gnet_add(pre, gr_stream_out(b->g, mb->res));
        gnet_add(&q, preps);
        gnet_add(&q, gr_repeat(b->g, updates, gnet_seq(b->g, pre)));
        mb->main = gnet_seq(b->g, &q);
        return;
    }
    gr_prog zero = gr_execute(b->g, t->zero);
    mnet_sum sum = {GR_NONE, GR_NONE, GR_NONE};
    if (c->out_mode == STRM_SUM) {
        sum.acc = on_tile(t, "outfeed.sum", t->lt, mnet_res_words(mb));
        gr_keep(b->g, sum.acc);
        sum.zero = gr_cs_new(b->g, "outfeed.sum.zero");
        sum.add = gr_cs_new(b->g, "outfeed.sum.add");
        op_zero(b->g, sum.zero, sum.acc, "outfeed.sum");
        op_acc(b->g, sum.add, sum.acc, mb->res);
    }
    mnet_mb m = {gnet_seq(b->g, pre), gnet_seq(b->g, &t->bwd), update(t, zero, preps)};
    gnet_add(&q, zero);
    gnet_add(&q, preps);
    gnet_add(&q, mnet_loop(b->g, c, mb->G, &m, mb->res, &sum, updates, per_call));
    mb->main = gnet_seq(b->g, &q);
}

/* The pipelined programs: init (zero, preps) then the stages' schedule (gnet_pipe.c). b->run
 * is left whole: the stages take their parts of it. */
static void pipelined(trn *t, const mnet_cfg *c, gr_prog loss, uint32_t updates, uint32_t per_call)
{
    gnet_bld *b = t->b;
    mnet_b *mb = t->mb;
    gnet_progs q = {0};
    gr_prog preps = all_preps(t), zero = GR_NONE;
    if (mb->train) {
        zero = gr_execute(b->g, t->zero);
        gnet_add(&q, zero);
    }
    gnet_add(&q, preps);
    gnet_pipe_in in = {
        b,         mb,      c,           loss,  &t->bwd,
        t->bwd_at, t->down, t->labels.t, t->lt, mb->train ? update(t, zero, preps) : GR_NONE,
        updates,   per_call};
    gnet_pipe_main(&in, &q);
    mb->main = gnet_seq(b->g, &q);
}

static int build(trn *t, const mnet_cfg *c, uint32_t updates, uint32_t per_call)
{
    gnet_bld *b = t->b;
    mnet_b *mb = t->mb;
    tensors(t, b);
    if (mb->train) {
        t->zero = gr_cs_new(b->g, "grads.zero");
        t->dbsum = gr_cs_new(b->g, "grads.bias");
    }
    t->scratch = t->B;
    gnet_progs pre = {0}, lq = {0};
    gnet_add(&pre, gr_stream_in(b->g, mb->xin));
    b->pipelined = c->pipelined;
    if (mb->train && t->lipu != b->net->ipu[0]) { /* the labels to (or onto) the loss's IPU */
        gr_tensor l = on_tile(t, b->pipelined ? "labels.in" : "labels", t->lt, t->B);
        if (!b->pipelined)
            gnet_add(&pre, gr_copy_many(b->g, &(gr_xfer){mb->xin, t->labels.at, l, 0, t->B}, 1));
        t->labels = (op_sl){l, 0, t->B};
    }
    int rc = gnet_forward(b);
    if (rc == ERR_OK) {
        if (!b->pipelined) /* pipelined, the stages take their parts of b->run */
            gnet_add(&pre, gnet_seq(b->g, &b->run));
        loss(t, b->pipelined ? &lq : &pre);
        if (mb->train)
            rc = backward(t);
    }
    if (rc == ERR_OK && t->scratch >= t->lt)
        rc = err_set(b->e, ERR_INPUT, "network %s: %u tiles are too few for a batch of %u",
                     b->net->n->s->name, mb->T, t->B);
    if (rc == ERR_OK && b->pipelined)
        pipelined(t, c, gnet_seq(b->g, &lq), updates, per_call);
    else if (rc == ERR_OK)
        programs(t, c, &pre, updates, per_call);
    free(pre.p);
    free(lq.p);
    if (rc == ERR_OK)
        rc = gr_status(b->g, b->e);
    return rc;
}

int gnet_mnet(mnet_b *mb, const mnet_cfg *c, const mspec_net *n, int train, uint32_t updates,
              uint32_t per_call, err *e)
{
    memset(mb, 0, sizeof *mb);
    if (gnet_check(c, n, train, e) || (train && mnet_check_output(c, e)))
        return ERR_INPUT;
    *mb = (mnet_b){.train = train,
                   .B = (uint32_t)(train ? c->run.batch : c->run.test_batch),
                   .G = (uint32_t)c->run.grad_accum,
                   .updates = updates,
                   .opt = c->run.opt,
                   .dtype = MNET_FP32,
                   .px = MDATA_PIXELS,
                   .R = 1,
                   .nipus = 1,
                   .T = c->m.tiles_per_ipu,
                   .planned = 1,
                   .xio = GR_NONE,
                   .nparams = n->nparams};
    if (mb->B < 1 || mb->B + 1 > mb->T)
        return err_set(e, ERR_INPUT, "network %s: a batch of %u on %u tiles (a sample a tile)",
                       n->s->name, mb->B, mb->T);
    gnet *net = xcalloc(1, sizeof *net);
    *net = (gnet){.n = n, .batch = mb->B};
    for (int l = 0; l < n->s->nlayers; l++) {
        net->ipu[l] = c->stage_ipu[n->s->layer[l].block - 1];
        mb->nipus = net->ipu[l] + 1 > mb->nipus ? net->ipu[l] + 1 : mb->nipus;
    }
    mb->g = gr_new(&c->m, mb->nipus);
    gnet_bld b = {.g = mb->g,
                  .net = net,
                  .m = &c->m,
                  .reuse = train ? mb->G : updates,
                  .avail = op_avail_bytes(&c->m, c->mem_prop),
                  .e = e};
    trn t = {.b = &b, .mb = mb, .B = mb->B, .lt = mb->T - 1, .lipu = net->ipu[n->s->nlayers - 1]};
    int rc = build(&t, c, updates, per_call);
    mb->pipe.nplans = net->nplans;
    memcpy(mb->pipe.plan, net->plan, sizeof net->plan);
    free(b.prep.p);
    free(b.run.p);
    free(t.bwd.p);
    free(t.dprep.p);
    free(t.gx);
    free(t.ux);
    for (int l = 0; l < n->s->nlayers; l++) {
        free(b.up[l].x);
        free(t.down[l].x);
    }
    free(net);
    return rc;
}
