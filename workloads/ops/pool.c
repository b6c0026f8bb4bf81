/* pool: 2 x 2 max-pooling (then ReLU, as the tutorial's network applies it) and its gradient
 * over a blocked activation where its blocks lie, as an element-wise operation follows its
 * input's mapping: each block's pooled block on the same tile, no exchange. It takes the
 * blocks a planned convolution leaves (ops.h), when each is whole on one tile with even rows
 * and columns; the caller pools elsewhere otherwise. The cycles are maxpool_relu_fwd's and
 * maxpool_relu_bwd's (their headers), a sixth of a block's output rows a worker. Left out:
 * windows other than 2 x 2 stride 2, blocks cut across a window (poplibs' pooling plans its
 * own partition and exchanges the halo). */
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "workloads/ops/ops.h"

/* The tile of region [at, at + n) of t, from its regions w[0..nw): 0, or -1 when no one
 * region holds it. */
static int tile_of_block(const gr_where *w, size_t nw, size_t at, size_t n, uint32_t *ipu,
                         uint32_t *tile)
{
    for (size_t k = 0; k < nw; k++)
        if (w[k].begin <= at && at + n <= w[k].end) {
            *ipu = w[k].ipu;
            *tile = w[k].tile;
            return 0;
        }
    return -1;
}

int op_pool_layout(const op_act *y)
{
    for (int d = 0; d < OP_DIMS; d++)
        if (y->map[d] != d)
            return 0;
    if (y->pad || y->dim[OP_H] % 2 || y->dim[OP_W] % 2)
        return 0;
    for (int d = OP_H; d <= OP_W; d++)
        for (uint32_t i = 0; i <= y->part[d]; i++)
            if (op_lo(y, d, i) % 2)
                return 0;
    return 1;
}

/* A layout of dim blocked as y (its parts and grains); no tensor yet. */
static op_act blocked_as(const op_act *y, const uint32_t dim[OP_DIMS])
{
    op_act a = op_act_make(GR_NONE, dim, y->part);
    for (int d = 0; d < OP_DIMS; d++)
        a.grain[d] = y->grain[d];
    return a;
}

/* The layout of y's pooled halves. */
static op_act half_layout(const op_act *y)
{
    uint32_t dim[OP_DIMS] = {y->dim[0], y->dim[1], y->dim[2] / 2, y->dim[3] / 2};
    return blocked_as(y, dim);
}

/* Layout a in a new tensor named name.role. */
static op_act with_tensor(graph *g, op_act a, const char *name, const char *role, gr_type ty)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s.%s", name, role);
    a.t = gr_tensor_new(g, nm, ty, OP_DIMS, a.dim);
    return a;
}

/* A block of y and its pooled block: where each lies in its tensor, its size, its tile, its
 * columns and its pairs of rows. */
typedef struct pblock {
    size_t at, n, o, m;
    uint32_t ipu, tile, cols, pairs;
} pblock;

/* y's non-empty blocks in block order with their pooled blocks' places in h (a layout of
 * y's halves), *nb of them (malloc'd), or NULL when one is not whole on one tile. */
static pblock *blocks_of(graph *g, const op_act *y, const op_act *h, size_t *nb)
{
    size_t nw = gr_regions(g, y->t, NULL, 0), n = 0;
    gr_where *w = xmalloc((nw ? nw : 1) * sizeof *w);
    gr_regions(g, y->t, w, nw);
    size_t total = (size_t)y->part[0] * y->part[1] * y->part[2] * y->part[3];
    pblock *b = xmalloc((total ? total : 1) * sizeof *b);
    uint32_t idx[OP_DIMS];
    int ok = 1;
    for (idx[0] = 0; idx[0] < y->part[0] && ok; idx[0]++)
        for (idx[1] = 0; idx[1] < y->part[1] && ok; idx[1]++)
            for (idx[2] = 0; idx[2] < y->part[2] && ok; idx[2]++)
                for (idx[3] = 0; idx[3] < y->part[3] && ok; idx[3]++) {
                    pblock *p = &b[n];
                    p->at = y->at + op_block_at(y, idx);
                    p->n = op_block_elems(y, idx);
                    if (!p->n)
                        continue;
                    p->o = op_block_at(h, idx);
                    p->m = op_block_elems(h, idx);
                    p->cols = op_lo(y, OP_W, idx[3] + 1) - op_lo(y, OP_W, idx[3]);
                    p->pairs = (uint32_t)(p->n / p->cols / 2);
                    ok = tile_of_block(w, nw, p->at, p->n, &p->ipu, &p->tile) == 0;
                    n++;
                }
    free(w);
    if (!ok) {
        free(b);
        return NULL;
    }
    *nb = n;
    return b;
}

int op_pool_fwd(graph *g, const char *name, const op_act *y, gr_cs *cs, op_act *out, op_act *arg)
{
    if (!op_pool_layout(y))
        return ERR_INPUT;
    op_act h = half_layout(y);
    size_t nb;
    pblock *b = blocks_of(g, y, &h, &nb);
    if (!b)
        return ERR_INPUT;
    *cs = gr_cs_new(g, name);
    *out = with_tensor(g, h, name, "y", GR_F32);
    *arg = with_tensor(g, h, name, "arg", GR_I32);
    for (size_t k = 0; k < nb; k++) {
        gr_map_region(g, out->t, b[k].ipu, b[k].tile, b[k].o, b[k].o + b[k].m);
        gr_map_region(g, arg->t, b[k].ipu, b[k].tile, b[k].o, b[k].o + b[k].m);
        op_v_pool_fwd(g, *cs, b[k].ipu, b[k].tile, (op_sl){y->t, b[k].at, b[k].n},
                      (op_sl){out->t, b[k].o, b[k].m}, (op_sl){arg->t, b[k].o, b[k].m}, b[k].pairs,
                      b[k].cols);
    }
    free(b);
    return ERR_OK;
}

int op_pool_bwd(graph *g, const char *name, const op_act *y, const op_act *out, const op_act *arg,
                gr_tensor dout, gr_cs *cs, op_act *din)
{
    size_t nb;
    pblock *b = op_pool_layout(y) ? blocks_of(g, y, out, &nb) : NULL;
    if (!b)
        return ERR_INPUT;
    *din = with_tensor(g, blocked_as(y, y->dim), name, "din", GR_F32);
    *cs = gr_cs_new(g, name);
    for (size_t k = 0; k < nb; k++) {
        size_t at = b[k].at - y->at; /* din holds y's blocks from its start */
        gr_map_region(g, din->t, b[k].ipu, b[k].tile, at, at + b[k].n);
        op_v_pool_bwd(g, *cs, b[k].ipu, b[k].tile, (op_sl){dout, b[k].o, b[k].m},
                      (op_sl){out->t, b[k].o, b[k].m}, (op_sl){arg->t, b[k].o, b[k].m},
                      (op_sl){din->t, at, b[k].n}, b[k].pairs, b[k].cols);
    }
    free(b);
    return ERR_OK;
}
