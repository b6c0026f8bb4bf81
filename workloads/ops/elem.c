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

/* The regions of t (freed by the caller), their number in *n. */
static gr_where *regions(const graph *g, gr_tensor t, size_t *n)
{
    *n = gr_regions(g, t, NULL, 0);
    gr_where *w = xmalloc((*n ? *n : 1) * sizeof *w);
    gr_regions(g, t, w, *n);
    return w;
}

static gr_tensor clone(graph *g, const char *name, gr_tensor t, size_t at, size_t n, int same,
                       uint32_t ipu)
{
    gr_tensor l = gr_tensor_new(g, name, GR_F32, 1, (uint32_t[]){(uint32_t)n});
    size_t nw;
    gr_where *w = regions(g, t, &nw);
    for (size_t k = 0; k < nw; k++) {
        size_t lo = w[k].begin > at ? w[k].begin : at, hi = w[k].end < at + n ? w[k].end : at + n;
        if (lo < hi)
            gr_map_region(g, l, same ? w[k].ipu : ipu, w[k].tile, lo - at, hi - at);
    }
    free(w);
    return l;
}

gr_tensor op_like(graph *g, const char *name, gr_tensor t)
{
    return clone(g, name, t, 0, gr_tensor_elems(g, t), 1, 0);
}

gr_tensor op_clone(graph *g, const char *name, gr_tensor t, size_t at, size_t n, uint32_t ipu)
{
    return clone(g, name, t, at, n, 0, ipu);
}

/* Operation op over each region of a, split over the workers in runs of whole groups of
 * four floats (op_v_elem); b: the second operand, read where a lies, or for E_ZERO the zero
 * descriptors, four words a region. */
static void elementwise(graph *g, gr_cs cs, op_elem op, gr_tensor a, gr_tensor b)
{
    size_t n;
    gr_where *w = regions(g, a, &n);
    for (size_t k = 0; k < n; k++) {
        size_t len = w[k].end - w[k].begin;
        op_sl sb = op == OP_E_ZERO ? (op_sl){b, 4 * k, 4} : (op_sl){b, w[k].begin, len};
        op_v_elem(g, cs, w[k].ipu, w[k].tile, op, (op_sl){a, w[k].begin, len}, sb, 4);
    }
    free(w);
}

void op_relu(graph *g, gr_cs cs, gr_tensor y, gr_tensor dy)
{
    elementwise(g, cs, dy == GR_NONE ? OP_E_RELU : OP_E_RELU_GRAD, y, dy);
}

void op_acc(graph *g, gr_cs cs, gr_tensor dst, gr_tensor src)
{
    elementwise(g, cs, OP_E_ACC, dst, src);
}

/* The zero descriptor is a small constant tensor, 4 words on each of t's regions' tiles. */
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
    }
    free(w);
    elementwise(g, cs, OP_E_ZERO, t, zl);
}
