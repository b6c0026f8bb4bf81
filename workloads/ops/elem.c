/* elem: element-wise operations, which follow their tensor's mapping (ops.h): each mapped
 * region of the tensor is worked on by the tile that holds it, split over the six workers in
 * runs of whole groups of four floats (the codelets' 16-byte steps; the graph places every
 * region 16-byte aligned). No exchange: an operand read beside the tensor must be mapped as
 * it is (op_like makes one so). Left out: broadcasting and operands of other mappings, which
 * a Copy (op_act_copy) brings into this one first, as Poplar's element-wise operations do. */
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "workloads/ops/ops.h"

#define NW 6

/* The regions of t (freed by the caller), their number in *n. */
static gr_where *regions(const graph *g, gr_tensor t, size_t *n)
{
    *n = gr_regions(g, t, NULL, 0);
    gr_where *w = xmalloc((*n ? *n : 1) * sizeof *w);
    gr_regions(g, t, w, *n);
    return w;
}

gr_tensor op_like(graph *g, const char *name, gr_tensor t)
{
    uint32_t shape[1] = {(uint32_t)gr_tensor_elems(g, t)};
    gr_tensor l = gr_tensor_new(g, name, GR_F32, 1, shape);
    size_t n;
    gr_where *w = regions(g, t, &n);
    for (size_t k = 0; k < n; k++)
        gr_map_region(g, l, w[k].ipu, w[k].tile, w[k].begin, w[k].end);
    free(w);
    return l;
}

/* Worker v's share [a, z) of a region of len elements, in groups of four. */
static size_t share(size_t len, unsigned v)
{
    return op_split(len, v, NW, 4);
}

void op_relu(graph *g, gr_cs cs, gr_tensor y, gr_tensor dy)
{
    size_t n;
    gr_where *w = regions(g, y, &n);
    for (size_t k = 0; k < n; k++) {
        size_t len = w[k].end - w[k].begin;
        for (unsigned v = 0; v < NW; v++) {
            size_t a = w[k].begin + share(len, v), z = w[k].begin + share(len, v + 1);
            if (z == a)
                continue;
            gr_field fb[4] = {gr_region(y, a, z), gr_region(dy, a, z), gr_region(dy, a, z),
                              gr_u32((uint32_t)(z - a))};
            gr_field ff[3] = {gr_region(y, a, z), gr_region(y, a, z), gr_u32((uint32_t)(z - a))};
            if (dy == GR_NONE)
                gr_vertex(g, cs, "relu_fwd", 0, w[k].ipu, w[k].tile, ff, 3);
            else
                gr_vertex(g, cs, "relu_bwd", 0, w[k].ipu, w[k].tile, fb, 4);
        }
    }
    free(w);
}

void op_acc(graph *g, gr_cs cs, gr_tensor dst, gr_tensor src)
{
    size_t n;
    gr_where *w = regions(g, dst, &n);
    for (size_t k = 0; k < n; k++) {
        size_t len = w[k].end - w[k].begin;
        for (unsigned v = 0; v < NW; v++) {
            size_t a = w[k].begin + share(len, v), z = w[k].begin + share(len, v + 1);
            if (z == a)
                continue;
            gr_field f[3] = {gr_region(dst, a, z), gr_region(src, a, z), gr_u32((uint32_t)(z - a))};
            gr_vertex(g, cs, "acc_add", 0, w[k].ipu, w[k].tile, f, 3);
        }
    }
    free(w);
}

/* conv_pack with one empty block a worker writes its share as one row of zeros; the block's
 * 3-word descriptor (all zero) is a small constant tensor, one on each tile of t. */
void op_zero(graph *g, gr_cs cs, gr_tensor t, const char *name)
{
    size_t n;
    gr_where *w = regions(g, t, &n);
    char nm[96];
    snprintf(nm, sizeof nm, "%s.zero.list", name);
    uint32_t shape[1] = {(uint32_t)(4 * (n ? n : 1))};
    gr_tensor zl = gr_tensor_new(g, nm, GR_I32, 1, shape);
    static const uint32_t zeros[4] = {0, 0, 0, 0};
    for (size_t k = 0; k < n; k++) {
        gr_map_region(g, zl, w[k].ipu, w[k].tile, 4 * k, 4 * k + 4);
        gr_init(g, zl, 4 * k, zeros, 4);
        size_t len = w[k].end - w[k].begin;
        for (unsigned v = 0; v < NW; v++) {
            size_t a = w[k].begin + op_split(len, v, NW, 1),
                   z = w[k].begin + op_split(len, v + 1, NW, 1);
            if (z == a)
                continue;
            gr_field f[8] = {gr_region(t, a, z), gr_u32(0),
                             gr_u32(1),          gr_region(zl, 4 * k, 4 * k + 3),
                             gr_u32(1),          gr_u32((uint32_t)(z - a)),
                             gr_u32(4),          gr_u32(4)};
            gr_vertex(g, cs, "conv_pack", 0, w[k].ipu, w[k].tile, f, 8);
        }
    }
    free(w);
}
