/* pool: 2 x 2 max-pooling (then ReLU, as the tutorial's network applies it) over a blocked
 * activation where its blocks lie, as an element-wise operation follows its input's mapping:
 * each block's pooled block on the same tile, no exchange. It takes the blocks a planned
 * convolution leaves (ops.h), when each is whole on one tile with even rows and columns; the
 * caller pools elsewhere otherwise. The cycles are maxpool_relu_fwd's (its header), a sixth
 * of a block's output rows a worker. Left out: windows other than 2 x 2 stride 2, blocks cut
 * across a window (poplibs' pooling plans its own partition and exchanges the halo). */
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

/* y's layout admits pooling in place: a plain layout (no view, no padding) whose every part
 * boundary of rows and columns is even. */
static int poolable(const op_act *y)
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

static op_act half(graph *g, const char *name, const char *role, gr_type ty, const op_act *y)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s.%s", name, role);
    uint32_t dim[OP_DIMS] = {y->dim[0], y->dim[1], y->dim[2] / 2, y->dim[3] / 2};
    op_act a = op_act_make(gr_tensor_new(g, nm, ty, OP_DIMS, dim), dim, y->part);
    for (int d = 0; d < OP_DIMS; d++)
        a.grain[d] = y->grain[d];
    return a;
}

int op_pool_fwd(graph *g, const char *name, const op_act *y, gr_cs *cs, op_act *out, op_act *arg)
{
    if (!poolable(y))
        return ERR_INPUT;
    size_t nw = gr_regions(g, y->t, NULL, 0);
    gr_where *w = xmalloc((nw ? nw : 1) * sizeof *w);
    gr_regions(g, y->t, w, nw);
    uint32_t idx[OP_DIMS], ipu = 0, tile = 0;
    int rc = ERR_OK;
    for (idx[0] = 0; idx[0] < y->part[0] && rc == ERR_OK; idx[0]++) /* every block on a tile */
        for (idx[1] = 0; idx[1] < y->part[1] && rc == ERR_OK; idx[1]++)
            for (idx[2] = 0; idx[2] < y->part[2] && rc == ERR_OK; idx[2]++)
                for (idx[3] = 0; idx[3] < y->part[3] && rc == ERR_OK; idx[3]++)
                    if (tile_of_block(w, nw, y->at + op_block_at(y, idx), op_block_elems(y, idx),
                                      &ipu, &tile))
                        rc = ERR_INPUT;
    if (rc == ERR_OK) {
        *cs = gr_cs_new(g, name);
        *out = half(g, name, "y", GR_F32, y);
        *arg = half(g, name, "arg", GR_I32, y);
        for (idx[0] = 0; idx[0] < y->part[0]; idx[0]++)
            for (idx[1] = 0; idx[1] < y->part[1]; idx[1]++)
                for (idx[2] = 0; idx[2] < y->part[2]; idx[2]++)
                    for (idx[3] = 0; idx[3] < y->part[3]; idx[3]++) {
                        size_t at = y->at + op_block_at(y, idx), n = op_block_elems(y, idx);
                        size_t o = op_block_at(out, idx), m = op_block_elems(out, idx);
                        if (!n)
                            continue;
                        tile_of_block(w, nw, at, n, &ipu, &tile);
                        gr_map_region(g, out->t, ipu, tile, o, o + m);
                        gr_map_region(g, arg->t, ipu, tile, o, o + m);
                        uint32_t cols = op_lo(y, OP_W, idx[3] + 1) - op_lo(y, OP_W, idx[3]);
                        op_v_pool_fwd(g, *cs, ipu, tile, (op_sl){y->t, at, n},
                                      (op_sl){out->t, o, m}, (op_sl){arg->t, o, m},
                                      (uint32_t)(n / cols / 2), cols); /* row pairs */
                    }
    }
    free(w);
    return rc;
}
