/* gnet: a network's forward pass from its layer table, each layer on its block's IPU (gnet.h).
 * It models what the operation library models (each plan's steps, the Copies between one
 * operation's output layout and the next one's input); it adds no timing of its own. Where
 * the IPU changes, the activation crosses onto the same tiles of the next IPU in the layout
 * it has (gnet_cross, as PopART's IpuCopy), so that every layer's plan, and the order of its
 * sums, is the same in any placement. Left out here:
 * training (gnet_train.c), the pipeline's stages (gnet_pipe.c). */
#include "workloads/mnist/gnet_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"

void gnet_add(gnet_progs *q, gr_prog p)
{
    if (p == GR_NONE)
        return;
    q->p = xgrow(q->p, &q->cap, q->n + 1, sizeof *q->p);
    q->p[q->n++] = p;
}

gr_prog gnet_seq(graph *g, gnet_progs *q)
{
    gr_prog p = q->n ? gr_seq(g, q->p, q->n) : GR_NONE;
    free(q->p);
    *q = (gnet_progs){0};
    return p;
}

gr_tensor gnet_flat(gnet_bld *b, const char *name)
{
    size_t n = b->net->n->nparams;
    gr_tensor t = gr_tensor_new(b->g, name, GR_F32, 1, (uint32_t[]){(uint32_t)n});
    for (uint32_t s = 0; s < b->nseg; s++)
        for (uint32_t i = 0; i < b->seg[s].w_held; i++) {
            size_t lo = gnet_seg_at(b, s, i), hi = gnet_seg_at(b, s, i + 1);
            if (hi > lo)
                gr_map_region(b->g, t, b->seg[s].ipu, i, lo, hi);
        }
    gr_keep(b->g, t);
    return t;
}

size_t gnet_seg_at(const gnet_bld *b, uint32_t s, uint32_t i)
{
    return b->seg[s].lo + op_split(b->seg[s].hi - b->seg[s].lo, i, b->seg[s].w_held, 4);
}

/* A tile's share of the exchange code: the transfers one sender of a plan's input makes at
 * most (each a few instructions of its exchange program, docs/planning.md); the transfers of
 * a plan's weight exchange one holder of the weights' copies makes at most (each some ten
 * cycles of set-up: 256 keep the exchange near its bytes' time); the copies in pieces of at
 * most GNET_PIECE_BYTES a tile, GNET_COPY_BYTES in all. */
enum {
    GNET_SENDS = 2048,
    GNET_HOLDER_SENDS = 256,
    GNET_PIECE_BYTES = 32 * 1024,
    GNET_COPY_BYTES = 8 << 20
};

/* Element (co, ci, y, x) of w [cout][cin][k][k] into (ci, co, k-1-y, k-1-x) of dst: a transfer
 * an element. */
static size_t flip_xfers(gr_xfer *x, gr_tensor src, size_t at, gr_tensor dst, uint32_t co,
                         uint32_t ci, uint32_t k)
{
    size_t n = 0;
    for (uint32_t o = 0; o < co; o++)
        for (uint32_t i = 0; i < ci; i++)
            for (uint32_t y = 0; y < k; y++)
                for (uint32_t z = 0; z < k; z++) {
                    size_t from = (((size_t)o * ci + i) * k + y) * k + z;
                    size_t to = (((size_t)i * co + o) * k + (k - 1 - y)) * k + (k - 1 - z);
                    x[n++] = (gr_xfer){src, at + from, dst, to, 1};
                }
    return n;
}

static uint32_t gcd_u32(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* The next tile to hold a piece of a weights' copy: tiles in the order of a step near 0.618 of
 * the IPU and prime to its tile count, from the middle, so that every piece of every copy has
 * a tile of its own until they outnumber the tiles, spread over the whole IPU. */
static uint32_t next_holder(gnet_bld *b)
{
    uint32_t T = b->m->tiles_per_ipu, step = (uint32_t)(0.618 * T);
    while (step > 1 && gcd_u32(step, T) != 1)
        step--;
    if (b->holders++ == 0)
        b->holder = T / 2;
    else
        b->holder = (uint32_t)(((uint64_t)b->holder + step) % T);
    return b->holder;
}

/* Layer l's weights (and, flip clear, its bias after them) in copies over the IPU, enough
 * that their holders share `sends` transfers at most GNET_HOLDER_SENDS each (*holders: how
 * many tiles hold a piece): the first from the flat
 * vector (flip: element by element, rearranged as the input gradient reads them, [cin][cout]
 * [k][k] with the kernel flipped; a linear layer's transposed), the others from it by
 * doubling (the copies made so far each send one: log2 of them rounds), into b->prep. Each copy in pieces of at most GNET_PIECE_BYTES, each on a tile of its own
 * (next_holder). */
static op_ref weights(gnet_bld *b, int l, int flip, uint64_t sends, op_ref *bias, uint32_t *holders)
{
    const mspec_net *n = b->net->n;
    const mspec_tensor *t = &n->t[n->param[l]];
    uint32_t co = (uint32_t)t->shape[0], ci = (uint32_t)t->shape[1];
    uint32_t k = t->ndim == 4 ? (uint32_t)t->shape[2] : 1, T = b->m->tiles_per_ipu;
    size_t nw = t->count, per = nw + (flip ? 0 : t[1].count);
    size_t pieces = (4 * per + GNET_PIECE_BYTES - 1) / GNET_PIECE_BYTES;
    size_t copies = (sends + GNET_HOLDER_SENDS * pieces - 1) / (GNET_HOLDER_SENDS * pieces);
    size_t most = GNET_COPY_BYTES / (4 * per);
    copies = copies > most ? most : copies;
    copies = copies * pieces > T ? T / pieces : copies;
    copies = copies < 1 ? 1 : copies;
    size_t total = copies * per, np = copies * pieces;
    *holders = (uint32_t)np;
    char name[64];
    snprintf(name, sizeof name, "%s.%s", n->s->layer[l].name, flip ? "w.flipped" : "w.copies");
    gr_tensor c = gr_tensor_new(b->g, name, GR_F32, 1, (uint32_t[]){(uint32_t)total});
    for (size_t j = 0; j < np; j++)
        gr_map_region(b->g, c, b->ipu, next_holder(b),
                      op_split(total, (unsigned)j, (unsigned)np, 4),
                      op_split(total, (unsigned)j + 1, (unsigned)np, 4));
    gr_xfer *x = xmalloc((flip && nw > copies ? nw : copies) * sizeof *x);
    size_t nx = flip ? flip_xfers(x, b->net->params, t->offset, c, co, ci, k) : 0;
    if (!flip) /* the weights then the bias, one stretch of the flat vector */
        x[nx++] = (gr_xfer){b->net->params, t->offset, c, 0, per};
    gnet_add(&b->prep, gr_copy_many(b->g, x, nx));
    for (size_t have = 1; have < copies; have *= 2) { /* doubling: each holder sends once */
        size_t n = 0;
        for (size_t j = 0; j < have && have + j < copies; j++)
            x[n++] = (gr_xfer){c, j * per, c, (have + j) * per, per};
        gnet_add(&b->prep, gr_copy_many(b->g, x, n));
    }
    free(x);
    if (bias)
        *bias = (op_ref){c, nw, (uint32_t)copies, per};
    return (op_ref){c, 0, (uint32_t)copies, per};
}

gr_tensor gnet_params(gnet_bld *b)
{
    const mspec_net *n = b->net->n;
    b->nseg = 0;
    for (int l = 0; l < n->s->nlayers; l++) {
        if (n->param[l] < 0)
            continue;
        const mspec_tensor *w = &n->t[n->param[l]];
        size_t lo = w->offset, hi = w[1].offset + w[1].count; /* the weights, then the bias */
        if (b->nseg && b->seg[b->nseg - 1].ipu == b->net->ipu[l]) {
            b->seg[b->nseg - 1].hi = hi;
            continue;
        }
        b->seg[b->nseg].ipu = b->net->ipu[l];
        b->seg[b->nseg].lo = b->nseg ? b->seg[b->nseg - 1].hi : lo;
        b->seg[b->nseg++].hi = hi;
    }
    for (uint32_t s = 0; s < b->nseg; s++) {
        uint32_t parts = (uint32_t)((b->seg[s].hi - b->seg[s].lo + 1023) / 1024);
        b->seg[s].w_held = parts < b->m->tiles_per_ipu ? parts : b->m->tiles_per_ipu;
    }
    return b->net->params = gnet_flat(b, "params");
}

int gnet_plan(gnet_bld *b, const char *name, const char *pass, const op_conv_shape *s,
              const op_act *x, uint32_t x_tiles, uint32_t x_run, const gnet_w *w, int bias,
              uint32_t reuse, op_conv *c)
{
    gnet *net = b->net;
    if (net->nplans == MNET_MAX_PLANS)
        return err_set(b->e, ERR_INPUT, "network %s: more than %d planned operations",
                       net->n->s->name, MNET_MAX_PLANS);
    mnet_plan *pl = &net->plan[net->nplans];
    *pl = (mnet_plan){"", pass, b->ipu, *s, {{0}}, {0}};
    snprintf(pl->name, sizeof pl->name, "%s", name);
    op_conv_ctx ctx = {b->m->tiles_per_ipu,
                       x_tiles,
                       w->layer >= 0 ? 32 : w->senders,
                       reuse,
                       GNET_RESERVE + b->kept[b->ipu],
                       x_run,
                       GNET_SENDS,
                       b->avail,
                       0};
    err pe;
    err_clear(&pe);
    if (op_conv_plan(b->m, s, &ctx, &pl->part, &pl->est, &pe) != ERR_OK)
        return err_set(b->e, ERR_INPUT, "network %s: %s (%s): %s", net->n->s->name, name, pass,
                       pe.msg);
    op_ref wr = w->ref, br = {GR_NONE, 0, 0, 0};
    if (w->layer >= 0) { /* the copies made, the plan's estimate with their holders */
        wr = weights(b, w->layer, w->flip, pl->est.w_sends, bias ? &br : NULL, &ctx.w_tiles);
        op_conv_estimate(b->m, s, &pl->part, &ctx, &pl->est, NULL);
    }
    op_conv_build(b->g, name, b->ipu, b->m->tiles_per_ipu - pl->est.tiles, s, &pl->part, x, wr, br,
                  c);
    b->kept[b->ipu] += pl->est.bytes;
    net->nplans++;
    return ERR_OK;
}

/* Plan layer l's forward (shape s) on x and build it: its output becomes cur. */
static int planned(gnet_bld *b, int l, const op_conv_shape *s, const op_act *x, uint32_t x_run)
{
    gnet_layer *gl = &b->net->layer[l];
    op_conv c;
    gnet_w w = {l, 0, {GR_NONE, 0, 0, 0}, 0};
    if (gnet_plan(b, b->net->n->s->layer[l].name, "forward", s, x, b->held, x_run, &w, 1, b->reuse,
                  &c) != ERR_OK)
        return ERR_INPUT;
    const mnet_plan *pl = &b->net->plan[b->net->nplans - 1];
    gl->held = b->held;
    gnet_add(&b->prep, c.prep);
    gnet_add(&b->run, c.run);
    b->held = pl->est.tiles;
    b->cur = c.y;
    gl->planned = 1;
    gl->part = pl->part;
    gl->est = pl->est;
    return ERR_OK;
}

op_act gnet_spread(gnet_bld *b, const char *name, const uint32_t dim[OP_DIMS])
{
    uint32_t pc = b->m->tiles_per_ipu / dim[OP_B];
    pc = pc < dim[OP_C] ? pc : dim[OP_C];
    return op_act_new(b->g, name, b->ipu, 0, dim, (uint32_t[]){dim[OP_B], pc ? pc : 1, 1, 1});
}

/* A new layout of cur's dimensions, a sample a tile from tile 0 (spread: gnet_spread), and
 * the Copy into it. */
static op_act per_sample(gnet_bld *b, const char *name, const char *what, int spread)
{
    char nm[64];
    snprintf(nm, sizeof nm, "%s.%s", name, what);
    uint32_t dim[OP_DIMS];
    for (int d = 0; d < OP_DIMS; d++)
        dim[d] = op_act_dim(&b->cur, d);
    op_act s = spread ? gnet_spread(b, nm, dim)
                      : op_act_new(b->g, nm, b->ipu, 0, dim, (uint32_t[]){dim[OP_B], 1, 1, 1});
    gnet_add(&b->run, op_act_copy(b->g, &b->cur, &s));
    b->held = s.part[OP_B] * s.part[OP_C];
    return s;
}

static int conv(gnet_bld *b, int l)
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
    b->net->layer[l].in = x;
    return planned(b, l, &s, &x, 0);
}

/* Where the activation's blocks allow it, on them; else on a copy in blocks of a sample and
 * whole channels (gnet_spread). */
static int pool(gnet_bld *b, int l)
{
    const char *name = b->net->n->s->layer[l].name;
    gr_cs cs;
    op_act out, arg, y = b->cur;
    if (op_pool_fwd(b->g, name, &y, &cs, &out, &arg) != ERR_OK) {
        y = per_sample(b, name, "in", 1);
        if (op_pool_fwd(b->g, name, &y, &cs, &out, &arg) != ERR_OK)
            return err_set(b->e, ERR_INPUT, "network %s: layer %s: cannot pool its input",
                           b->net->n->s->name, name);
    }
    gnet_add(&b->run, gr_execute(b->g, cs));
    b->net->layer[l].in = y;
    b->net->layer[l].arg = arg;
    b->cur = out;
    return ERR_OK;
}

static int relu(gnet_bld *b, int l)
{
    gr_cs cs = gr_cs_new(b->g, b->net->n->s->layer[l].name);
    op_relu(b->g, cs, b->cur.t, GR_NONE);
    gnet_add(&b->run, gr_execute(b->g, cs));
    return ERR_OK;
}

/* y^T = W x^T + b: after another linear layer its output read through a view, else the input
 * flattened into a sample's row by a Copy. */
static int linear(gnet_bld *b, int l)
{
    const mspec_layer *L = &b->net->n->s->layer[l];
    uint32_t B = b->net->batch, K = (uint32_t)mspec_size(b->net->n->in[l]);
    op_act x;
    b->net->layer[l].in.t = GR_NONE;
    uint32_t x_run = 0; /* y^T read as it is; rows [B][K] read transposed, word by word */
    if (b->mm) {
        b->net->layer[l].yt = b->cur;
        x = op_mm_in_t(&b->cur, OP_MM_FWD);
    } else {
        x_run = 1;
        op_act r = per_sample(b, L->name, "rows", 0);
        op_act m = op_act_make(r.t, (uint32_t[]){B, K, 1, 1}, (uint32_t[]){B, 1, 1, 1});
        b->net->layer[l].in = m;
        x = op_mm_in(&m, OP_MM_FWD);
    }
    op_conv_shape s = op_mm_shape(OP_MM_FWD, B, K, (uint32_t)L->out, 0);
    b->mm = 1;
    return planned(b, l, &s, &x, x_run);
}

/* a's layout in a new tensor on the same tiles of IPU ipu (op_clone). */
static op_act clone(gnet_bld *b, const char *name, uint32_t ipu, const op_act *a)
{
    op_act c = *a;
    c.at = 0;
    c.t = op_clone(b->g, name, a->t, a->at, op_act_elems(a), ipu);
    return c;
}

op_act gnet_cross(gnet_bld *b, gnet_progs *q, gnet_xing *x, const op_act *a, uint32_t from,
                  uint32_t ipu, const char *name)
{
    if (from == ipu)
        return *a;
    op_act to = clone(b, name, ipu, a);
    if (!x) {
        gnet_add(q, op_act_copy(b->g, a, &to));
        return to;
    }
    op_act src = *a;
    if (q) {
        char nm[80];
        snprintf(nm, sizeof nm, "%s.sent", name);
        src = clone(b, nm, from, a);
        gnet_add(q, op_act_copy(b->g, a, &src));
    }
    x->n = op_act_xfers(&src, &to, &x->x);
    x->to = to;
    return to;
}

/* A linear layer's output y^T landed from another IPU (in its own layout, on the tiles it
 * left), copied on-chip into blocks of a feature each (whole rows of B), one a tile from
 * tile 0, which becomes cur: its own layout has a few large blocks, from which the next
 * layer's weight gradient would gather element by element, a piece each, from a few tiles
 * (over eight IPUs the deep table's tile 0 would need 837,352 B of send code). */
static void spread_features(gnet_bld *b, const char *name)
{
    op_act like = b->cur;
    int f = like.map[OP_C];
    for (int d = 0; d < OP_DIMS; d++) {
        like.part[d] = d == f ? like.dim[d] : 1;
        like.grain[d] = 1;
    }
    if (like.part[f] > b->m->tiles_per_ipu)
        like.part[f] = b->m->tiles_per_ipu;
    char nm[80];
    snprintf(nm, sizeof nm, "%s.spread", name);
    op_act to = op_act_like(b->g, nm, b->ipu, 0, &like);
    gnet_add(&b->run, op_act_copy(b->g, &b->cur, &to));
    b->cur = to;
    b->held = like.part[f];
}

int gnet_forward(gnet_bld *b)
{
    static int (*const step[])(gnet_bld *, int) = {[MSPEC_CONV] = conv,
                                                   [MSPEC_POOL_RELU] = pool,
                                                   [MSPEC_RELU] = relu,
                                                   [MSPEC_LINEAR] = linear};
    const mspec_net *n = b->net->n;
    for (int l = 0; l < n->s->nlayers; l++) {
        char name[64];
        snprintf(name, sizeof name, "%s.x", n->s->layer[l].name);
        b->ipu = b->net->ipu[l];
        uint32_t from = l ? b->net->ipu[l - 1] : b->ipu;
        if (from != b->ipu)
            b->cur = gnet_cross(b, &b->run, b->pipelined ? &b->up[l] : NULL, &b->cur, from, b->ipu,
                                name);
        b->run_at[l] = b->run.n;
        if (from != b->ipu && b->mm)
            spread_features(b, name);
        if (step[n->s->layer[l].kind](b, l) != ERR_OK)
            return ERR_INPUT;
        b->run_end[l] = b->run.n;
        b->net->layer[l].out = b->cur;
    }
    b->net->logits = op_mm_out(&b->cur, OP_MM_FWD);
    return ERR_OK;
}

int gnet_build(graph *g, const mach *m, const mspec_net *n, uint32_t batch, uint32_t ipu, gnet *out,
               err *e)
{
    *out = (gnet){.n = n, .batch = batch};
    for (int l = 0; l < n->s->nlayers; l++)
        out->ipu[l] = ipu;
    if (batch < 1 || batch > m->tiles_per_ipu)
        return err_set(e, ERR_INPUT, "network %s: a batch of %u on %u tiles (a sample a tile)",
                       n->s->name, batch, m->tiles_per_ipu);
    gnet_bld b = {.g = g,
                  .net = out,
                  .m = m,
                  .ipu = ipu,
                  .reuse = 1,
                  .avail = op_avail_bytes(m, OP_AVAIL_DEFAULT),
                  .e = e};
    gnet_params(&b);
    uint32_t dim[OP_DIMS] = {batch, (uint32_t)n->s->c, (uint32_t)n->s->h, (uint32_t)n->s->w};
    out->x = op_act_new(g, "input", ipu, 0, dim, (uint32_t[]){batch, 1, 1, 1});
    gr_keep(g, out->x.t);
    b.cur = out->x;
    b.held = batch;
    int rc = gnet_forward(&b);
    if (rc == ERR_OK) {
        gr_keep(g, out->logits.t);
        gnet_add(&b.prep, gnet_seq(g, &b.run));
        out->prog = gnet_seq(g, &b.prep);
    }
    free(b.prep.p);
    free(b.run.p);
    return rc;
}
