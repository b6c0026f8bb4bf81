/* vtx: one tile's vertices of one codelet, its work cut over the tile's six workers as the
 * codelet's header says (workloads/codelets/): the builders the planned operations
 * (conv.c) and a network's own steps (workloads/mnist/mnet_graph.c) share, so that a codelet's
 * fields are laid out in one place. Each builder models nothing itself: the cycles are the
 * codelets' (their headers' closed forms), the split the one the planner's cost model assumes
 * (conv_cost.c: a sixth of the channels, rows or pairs a worker). */
#include "workloads/ops/ops.h"

#define NW 6 /* workers a tile */

static gr_field reg(op_sl s, size_t off, size_t len)
{
    return gr_region(s.t, s.at + off, s.at + off + len);
}

/* The element-wise codelets over a and a second operand b, in one table: the fields of a
 * worker's vertex over a's elements [lo, lo + len) of the slice. */
static const struct {
    const char *codelet;
    int nf;
    char f[9]; /* 'a', 'b': that slice's elements; 'n': their count; 'z': b's first 3 words;
                * '0', '1', '4': that constant */
} ELEM[OP_E_N] = {
    [OP_E_RELU] = {"relu_fwd", 3, "aan"},       /* x, y (in place), n */
    [OP_E_RELU_GRAD] = {"relu_bwd", 4, "abbn"}, /* out, dy, dx (in place), n */
    [OP_E_ACC] = {"acc_add", 3, "abn"},         /* dst, src, n */
    /* dst, src (the descriptor: never read, no valid rows), one block, its descriptor (all
     * zero: no valid rows), R = 1, C = n, strides: one row of n zeros */
    [OP_E_ZERO] = {"conv_pack", 8, "az1z1n44"},
};

static gr_field elem_field(char c, op_sl a, op_sl b, size_t lo, size_t len)
{
    switch (c) {
    case 'a': return reg(a, lo, len);
    case 'b': return reg(b, lo, len);
    case 'z': return reg(b, 0, 3);
    case 'n': return gr_u32((uint32_t)len);
    default: return gr_u32((uint32_t)(c - '0'));
    }
}

void op_v_elem(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_elem op, op_sl a, op_sl b,
               size_t grain)
{
    for (unsigned v = 0; v < NW; v++) {
        size_t lo = op_split(a.n, v, NW, grain), hi = op_split(a.n, v + 1, NW, grain);
        if (hi == lo)
            continue;
        gr_field f[8];
        for (int i = 0; i < ELEM[op].nf; i++)
            f[i] = elem_field(ELEM[op].f[i], a, b, lo, hi - lo);
        gr_vertex(g, cs, ELEM[op].codelet, 0, ipu, tile, f, (size_t)ELEM[op].nf);
    }
}

void op_v_reduce(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl out, op_sl parts,
                 uint32_t n, uint32_t P, uint32_t stride, float k)
{
    for (unsigned v = 0; v < NW; v++) {
        size_t a = op_split(n, v, NW, 2), z = op_split(n, v + 1, NW, 2);
        if (z == a)
            continue;
        gr_field f[6] = {
            reg(out, a, z - a),        reg(parts, a, (size_t)(P - 1) * stride + (z - a)),
            gr_u32((uint32_t)(z - a)), gr_u32(P),
            gr_u32(stride * 4),        gr_f32(k)};
        gr_vertex(g, cs, "reduce_add", 0, ipu, tile, f, 6);
    }
}

void op_v_pack(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, const cplan_pack *p, op_sl list,
               op_sl dst, op_sl src)
{
    uint32_t RC = p->R * p->C;
    for (unsigned v = 0; v < NW; v++) {
        uint32_t b0 = p->nblocks * v / NW, b1 = p->nblocks * (v + 1) / NW;
        if (b1 == b0)
            continue;
        gr_field f[8] = {reg(dst, (size_t)b0 * RC, (size_t)(b1 - b0) * RC),
                         reg(src, 0, src.n),
                         gr_u32(b1 - b0),
                         reg(list, 3 * (size_t)b0, 3 * (size_t)(b1 - b0)),
                         gr_u32(p->R),
                         gr_u32(p->C),
                         gr_u32(p->sr),
                         gr_u32(p->sc)};
        gr_vertex(g, cs, "conv_pack", 0, ipu, tile, f, 8);
    }
}

void op_v_ungroup(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl out, op_sl in, uint32_t C,
                  uint32_t P, int acc)
{
    for (unsigned v = 0; v < NW; v++) {
        uint32_t c0 = C * v / NW, c1 = C * (v + 1) / NW;
        if (c1 == c0)
            continue;
        gr_field f[6] = {reg(out, (size_t)c0 * P, (size_t)(c1 - c0) * P),
                         reg(in, 0, in.n),
                         gr_u32(c0),
                         gr_u32(c1 - c0),
                         gr_u32(P),
                         gr_u32(acc != 0)};
        gr_vertex(g, cs, "conv_ungroup", 0, ipu, tile, f, 6);
    }
}

void op_v_bias(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl y, op_sl bias, uint32_t C,
               uint32_t P, uint32_t B, uint32_t istride, int grad)
{
    for (unsigned v = 0; v < NW; v++) {
        uint32_t c0 = C * v / NW, c1 = C * (v + 1) / NW;
        if (c1 == c0)
            continue;
        size_t span = (size_t)(B - 1) * istride + (size_t)(c1 - c0) * P;
        gr_field f[7] = {reg(y, (size_t)c0 * P, span),
                         reg(bias, c0, c1 - c0),
                         gr_u32(c1 - c0),
                         gr_u32(P),
                         gr_u32(B),
                         gr_u32(P),
                         gr_u32(istride)};
        gr_vertex(g, cs, grad ? "bias_grad" : "bias_add", 0, ipu, tile, f, 7);
    }
}

void op_v_pool_fwd(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl in, op_sl out, op_sl arg,
                   uint32_t R, uint32_t w)
{
    for (unsigned v = 0; v < NW; v++) {
        size_t r0 = op_split(R, v, NW, 1), r1 = op_split(R, v + 1, NW, 1), h = w / 2;
        if (r1 == r0) /* the codelet takes one row or more */
            continue;
        gr_field f[5] = {reg(in, 2 * r0 * w, 2 * (r1 - r0) * w), reg(out, r0 * h, (r1 - r0) * h),
                         reg(arg, r0 * h, (r1 - r0) * h), gr_u32((uint32_t)(r1 - r0)), gr_u32(w)};
        gr_vertex(g, cs, "maxpool_relu_fwd", 0, ipu, tile, f, 5);
    }
}

void op_v_pool_bwd(graph *g, gr_cs cs, uint32_t ipu, uint32_t tile, op_sl dout, op_sl out,
                   op_sl arg, op_sl din, uint32_t R, uint32_t w)
{
    for (unsigned v = 0; v < NW; v++) {
        size_t r0 = op_split(R, v, NW, 1), r1 = op_split(R, v + 1, NW, 1), h = w / 2;
        if (r1 == r0)
            continue;
        gr_field f[6] = {reg(dout, r0 * h, (r1 - r0) * h), reg(out, r0 * h, (r1 - r0) * h),
                         reg(arg, r0 * h, (r1 - r0) * h),  reg(din, 2 * r0 * w, 2 * (r1 - r0) * w),
                         gr_u32((uint32_t)(r1 - r0)),      gr_u32(w)};
        gr_vertex(g, cs, "maxpool_relu_bwd", 0, ipu, tile, f, 6);
    }
}
