/* act: blocked activations, the layout every operation of the library reads and writes
 * (ops.h). A [B][C][H][W] tensor is cut in each dimension into parts of whole grains, as
 * evenly as the grains allow; the blocks follow one another in row-major block order and each
 * is row-major inside, so a block is one contiguous stretch that one tile can hold (Poplar
 * maps a convolution's output the same way, a tile's part of each dimension together). A
 * view reads a layout with its dimensions permuted (a matrix product's transposed operands)
 * without moving it: an operation reading a view gathers it element by element where its
 * rows are not the layout's.
 * Because part i of a dimension starts at the sum of the sizes of parts 0..i-1, the start of a
 * block has a closed form (op_block_at), so no table of offsets is kept. Left out: layouts in
 * which a block is not contiguous (Poplar's channel-grouped layouts), which the operations
 * would read through their Copy pieces just the same. */
#include "workloads/ops/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"

op_act op_act_make(gr_tensor t, const uint32_t dim[OP_DIMS], const uint32_t part[OP_DIMS])
{
    op_act a;
    a.t = t;
    for (int d = 0; d < OP_DIMS; d++) {
        a.dim[d] = dim[d];
        a.part[d] = part[d] ? part[d] : 1;
        a.grain[d] = 1;
    }
    a.pad = 0;
    a.at = 0;
    for (int d = 0; d < OP_DIMS; d++)
        a.map[d] = (uint8_t)d;
    return a;
}

op_act op_act_view(const op_act *a, const uint8_t map[OP_DIMS])
{
    op_act v = *a;
    for (int d = 0; d < OP_DIMS; d++)
        v.map[d] = a->map[map[d] & 3];
    return v;
}

uint32_t op_act_dim(const op_act *a, int d)
{
    return a->dim[a->map[d]];
}

uint32_t op_cut(uint32_t n, uint32_t parts, uint32_t grain, uint32_t i)
{
    uint32_t units = ceil_div_u32(n, grain);
    return (uint32_t)min_u64((uint64_t)grain * ((uint64_t)units * i / parts), n);
}

size_t op_split(size_t n, unsigned v, unsigned nv, size_t grain)
{
    return v >= nv ? n : n / grain * v / nv * grain;
}

uint32_t op_lo(const op_act *a, int d, uint32_t i)
{
    return op_cut(a->dim[d], a->part[d], a->grain[d], i);
}

uint32_t op_part_of(const op_act *a, int d, uint32_t v)
{
    uint32_t i = (uint32_t)((uint64_t)v * a->part[d] / (a->dim[d] ? a->dim[d] : 1));
    while (i > 0 && op_lo(a, d, i) > v)
        i--;
    while (i + 1 < a->part[d] && op_lo(a, d, i + 1) <= v)
        i++;
    return i;
}

size_t op_act_elems(const op_act *a)
{
    size_t blocks = (size_t)a->part[0] * a->part[1] * a->part[2] * a->part[3];
    return (size_t)a->dim[0] * a->dim[1] * a->dim[2] * a->dim[3] + blocks * a->pad;
}

/* Sizes of block idx in each dimension. */
static void sizes(const op_act *a, const uint32_t idx[OP_DIMS], size_t n[OP_DIMS])
{
    for (int d = 0; d < OP_DIMS; d++)
        n[d] = op_lo(a, d, idx[d] + 1) - op_lo(a, d, idx[d]);
}

/* Elements of the blocks before idx in block order: the whole slabs of dimension 0 before
 * it, then within its slab those of dimension 1, ...: lo0 D1 D2 D3 + n0 (lo1 D2 D3 + n1 (lo2
 * D3 + n2 lo3)); then the padding of the blocks before it. */
size_t op_block_at(const op_act *a, const uint32_t idx[OP_DIMS])
{
    size_t n[OP_DIMS], scale = 1;
    size_t at =
        (((size_t)idx[0] * a->part[1] + idx[1]) * a->part[2] + idx[2]) * a->part[3] + idx[3];
    at = at * a->pad + a->at;
    sizes(a, idx, n);
    for (int d = 0; d < OP_DIMS; d++) {
        size_t rest = 1;
        for (int e = d + 1; e < OP_DIMS; e++)
            rest *= a->dim[e];
        at += scale * op_lo(a, d, idx[d]) * rest;
        scale *= n[d];
    }
    return at;
}

size_t op_block_elems(const op_act *a, const uint32_t idx[OP_DIMS])
{
    size_t n[OP_DIMS];
    sizes(a, idx, n);
    return n[0] * n[1] * n[2] * n[3];
}

/* The stored index of the view's (b, c, y, x). */
static void stored(const op_act *a, uint32_t b, uint32_t c, uint32_t y, uint32_t x,
                   uint32_t v[OP_DIMS])
{
    uint32_t in[OP_DIMS] = {b, c, y, x};
    for (int d = 0; d < OP_DIMS; d++)
        v[a->map[d]] = in[d];
}

uint32_t op_act_run(const op_act *a, uint32_t b, uint32_t c, uint32_t y, uint32_t x)
{
    uint32_t v[OP_DIMS], s = a->map[OP_W];
    stored(a, b, c, y, x, v);
    for (int d = s + 1; d < OP_DIMS; d++) { /* inner stored dimensions must be one wide */
        uint32_t i = op_part_of(a, d, v[d]);
        if (op_lo(a, d, i + 1) - op_lo(a, d, i) > 1)
            return 1;
    }
    return op_lo(a, (int)s, op_part_of(a, (int)s, v[s]) + 1) - v[s];
}

size_t op_act_at(const op_act *a, uint32_t b, uint32_t c, uint32_t y, uint32_t x)
{
    uint32_t v[OP_DIMS], idx[OP_DIMS];
    size_t n[OP_DIMS];
    stored(a, b, c, y, x, v);
    for (int d = 0; d < OP_DIMS; d++)
        idx[d] = op_part_of(a, d, v[d]);
    sizes(a, idx, n);
    size_t in = 0;
    for (int d = 0; d < OP_DIMS; d++)
        in = in * n[d] + (v[d] - op_lo(a, d, idx[d]));
    return op_block_at(a, idx) + in;
}

/* Block k of a (row-major block order) on tile first + k of IPU ipu, its padding with it. */
static void map_blocks(graph *g, const op_act *a, uint32_t ipu, uint32_t first)
{
    uint32_t idx[OP_DIMS], k = 0;
    for (idx[0] = 0; idx[0] < a->part[0]; idx[0]++)
        for (idx[1] = 0; idx[1] < a->part[1]; idx[1]++)
            for (idx[2] = 0; idx[2] < a->part[2]; idx[2]++)
                for (idx[3] = 0; idx[3] < a->part[3]; idx[3]++, k++) {
                    size_t at = op_block_at(a, idx), n = op_block_elems(a, idx);
                    if (n)
                        gr_map_region(g, a->t, ipu, first + k, at, at + n + a->pad);
                }
}

op_act op_act_new(graph *g, const char *name, uint32_t ipu, uint32_t first,
                  const uint32_t dim[OP_DIMS], const uint32_t part[OP_DIMS])
{
    op_act a = op_act_make(gr_tensor_new(g, name, GR_F32, OP_DIMS, dim), dim, part);
    map_blocks(g, &a, ipu, first);
    return a;
}

op_act op_act_like(graph *g, const char *name, uint32_t ipu, uint32_t first, const op_act *like)
{
    op_act a = *like;
    a.at = 0;
    a.t = gr_tensor_new(g, name, GR_F32, 1, (uint32_t[]){(uint32_t)op_act_elems(&a)});
    map_blocks(g, &a, ipu, first);
    return a;
}

/* The pieces of op_act_copy, a stretch merged into the last piece when it continues it on
 * both sides. */
typedef struct runs {
    gr_xfer *x;
    size_t n, cap;
} runs;

static void run_add(runs *r, gr_xfer x)
{
    gr_xfer *l = r->n ? &r->x[r->n - 1] : NULL;
    if (l && l->src_at + l->n == x.src_at && l->dst_at + l->n == x.dst_at) {
        l->n += x.n;
        return;
    }
    r->x = xgrow(r->x, &r->cap, r->n + 1, sizeof *r->x);
    r->x[r->n++] = x;
}

static int is_layout(const op_act *a)
{
    return a->map[0] == 0 && a->map[1] == 1 && a->map[2] == 2 && a->map[3] == 3;
}

/* Through a view: the view's rows, each in stretches contiguous on both sides. */
static void view_runs(const op_act *src, const op_act *dst, runs *r)
{
    uint32_t n[OP_DIMS];
    for (int d = 0; d < OP_DIMS; d++)
        n[d] = op_act_dim(src, d);
    for (uint32_t b = 0; b < n[0]; b++)
        for (uint32_t c = 0; c < n[1]; c++)
            for (uint32_t y = 0; y < n[2]; y++)
                for (uint32_t x = 0; x < n[3];) {
                    uint32_t len =
                        (uint32_t)min_u64(n[3] - x, min_u64(op_act_run(src, b, c, y, x),
                                                            op_act_run(dst, b, c, y, x)));
                    run_add(r, (gr_xfer){src->t, op_act_at(src, b, c, y, x), dst->t,
                                         op_act_at(dst, b, c, y, x), len});
                    x += len;
                }
}

size_t op_act_xfers(const op_act *src, const op_act *dst, gr_xfer **out)
{
    runs r = {NULL, 0, 0};
    uint32_t i[OP_DIMS];
    if (!is_layout(src) || !is_layout(dst)) {
        view_runs(src, dst, &r);
        *out = r.x;
        return r.n;
    }
    for (i[0] = 0; i[0] < src->part[0]; i[0]++)
        for (i[1] = 0; i[1] < src->part[1]; i[1]++)
            for (i[2] = 0; i[2] < src->part[2]; i[2]++)
                for (i[3] = 0; i[3] < src->part[3]; i[3]++) {
                    uint32_t x0 = op_lo(src, OP_W, i[3]), x1 = op_lo(src, OP_W, i[3] + 1);
                    for (uint32_t b = op_lo(src, 0, i[0]); b < op_lo(src, 0, i[0] + 1); b++)
                        for (uint32_t c = op_lo(src, 1, i[1]); c < op_lo(src, 1, i[1] + 1); c++)
                            for (uint32_t y = op_lo(src, 2, i[2]); y < op_lo(src, 2, i[2] + 1); y++)
                                for (uint32_t x = x0; x < x1;) {
                                    uint32_t p = op_part_of(dst, OP_W, x);
                                    uint32_t e = (uint32_t)min_u64(x1, op_lo(dst, OP_W, p + 1));
                                    run_add(&r,
                                            (gr_xfer){src->t, op_act_at(src, b, c, y, x), dst->t,
                                                      op_act_at(dst, b, c, y, x), e - x});
                                    x = e;
                                }
                }
    *out = r.x;
    return r.n;
}

gr_prog op_act_copy(graph *g, const op_act *src, const op_act *dst)
{
    gr_xfer *x;
    size_t n = op_act_xfers(src, dst, &x);
    gr_prog p = n ? gr_copy_many(g, x, n) : GR_NONE;
    free(x);
    return p;
}

/* Row-major host order <-> the layout's, one element at a time (padding left alone). */
static void move(const op_act *a, const float *src, float *dst, int to_blocks)
{
    size_t i = 0;
    for (uint32_t b = 0; b < op_act_dim(a, 0); b++)
        for (uint32_t c = 0; c < op_act_dim(a, 1); c++)
            for (uint32_t y = 0; y < op_act_dim(a, 2); y++)
                for (uint32_t x = 0; x < op_act_dim(a, 3); x++, i++) {
                    size_t j = op_act_at(a, b, c, y, x) - a->at;
                    if (to_blocks)
                        dst[j] = src[i];
                    else
                        dst[i] = src[j];
                }
}

void op_act_block(const op_act *a, const float *rowmajor, float *dst)
{
    move(a, rowmajor, dst, 1);
}

void op_act_unblock(const op_act *a, const float *blocked, float *rowmajor)
{
    move(a, blocked, rowmajor, 0);
}
