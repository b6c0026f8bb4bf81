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

/* The element-wise codelets over a tensor a and a second operand b, in one table: the
 * fields of a vertex over elements [lo, hi) of region k of a. */
enum { E_RELU, E_RELU_GRAD, E_ACC, E_ZERO, E_N };
static const struct {
    const char *codelet;
    int nf;
    char f[9]; /* 'a', 'b': that tensor's elements; 'n': their count; 'z': b's 3 words
                * [4k, 4k + 3); '0', '1', '4': that constant */
} ELEM[E_N] = {
    [E_RELU] = {"relu_fwd", 3, "aan"},       /* x, y (in place), n */
    [E_RELU_GRAD] = {"relu_bwd", 4, "abbn"}, /* out, dy, dx (in place), n */
    [E_ACC] = {"acc_add", 3, "abn"},         /* dst, src, n */
    /* dst, src (the descriptor: never read, no valid rows), one block, its descriptor (all
     * zero: no valid rows), R = 1, C = n, strides: one row of n zeros */
    [E_ZERO] = {"conv_pack", 8, "az1z1n44"},
};

static gr_field field(char c, gr_tensor a, gr_tensor b, size_t k, size_t lo, size_t hi)
{
    switch (c) {
    case 'a': return gr_region(a, lo, hi);
    case 'b': return gr_region(b, lo, hi);
    case 'z': return gr_region(b, 4 * k, 4 * k + 3);
    case 'n': return gr_u32((uint32_t)(hi - lo));
    default: return gr_u32((uint32_t)(c - '0'));
    }
}

/* Operation op over each region of a, split over the workers in runs of whole groups of
 * four floats. */
static void elementwise(graph *g, gr_cs cs, int op, gr_tensor a, gr_tensor b)
{
    size_t n;
    gr_where *w = regions(g, a, &n);
    for (size_t k = 0; k < n; k++) {
        size_t len = w[k].end - w[k].begin;
        for (unsigned v = 0; v < NW; v++) {
            size_t lo = w[k].begin + op_split(len, v, NW, 4),
                   hi = w[k].begin + op_split(len, v + 1, NW, 4);
            if (hi == lo)
                continue;
            gr_field f[8];
            for (int i = 0; i < ELEM[op].nf; i++)
                f[i] = field(ELEM[op].f[i], a, b, k, lo, hi);
            gr_vertex(g, cs, ELEM[op].codelet, 0, w[k].ipu, w[k].tile, f, (size_t)ELEM[op].nf);
        }
    }
    free(w);
}

void op_relu(graph *g, gr_cs cs, gr_tensor y, gr_tensor dy)
{
    elementwise(g, cs, dy == GR_NONE ? E_RELU : E_RELU_GRAD, y, dy);
}

void op_acc(graph *g, gr_cs cs, gr_tensor dst, gr_tensor src)
{
    elementwise(g, cs, E_ACC, dst, src);
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
    elementwise(g, cs, E_ZERO, t, zl);
}
