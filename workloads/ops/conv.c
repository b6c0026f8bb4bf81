/* conv: a convolution planned over many tiles, built as graph steps (docs/planning.md).
 *
 * Each tile of a partition (ops.h) owns one output block (samples, output channels in whole
 * groups of 16, output rows and columns) and one range of input channels. Its input patch,
 * the block's rows and columns with the kernel's halo and the range's channels, arrives by
 * one Copy from wherever the input lies (any blocked layout); its slice of the weights and
 * bias by another, in the prep program, after which conv_pack lays the weights out as the
 * AMP's 8 x 16 blocks where they stay (kept) until the next prep. A call then runs conv_amp
 * (workloads/graph/conv_plan.h plans its passes for the tile's shape), conv_ungroup into the
 * block, bias_add; with the input channels split over pci tiles, each tile's block is a
 * partial sum: the first part adds the bias, and the block is cut in pci chunks of whole
 * pairs, chunk j gathered from every part onto part j's tile and summed there in part order
 * (reduce_add), as poplibs reduces a convolution's partials in a stage of its own. So with
 * pci = 1 the output is bit-exact with the C layers' loop (mlayer_conv_fwd's order: the
 * sum over (ci, ky, kx), then the bias); with pci > 1 the parts' sums are added in part
 * order after the bias was added to part 0.
 * Strides and zero padding: a tile's patch covers the input rows and columns its block
 * reads, the padding left zero (the patch is kept, so nothing else writes there), and
 * conv_amp's rows step through it by the stride (cplan_fwd_strided); a kernel wider than 8
 * takes a pass per 8 columns of each kernel row. Left out: dilation, and multicast of the weights (graph_copy sends one stream per receiver). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"
#include "workloads/graph/conv_plan.h"
#include "workloads/ops/ops.h"

/* One tensor with a region on each tile of the partition (tile k: elements [at[k], at[k] +
 * n[k])), as the per-tile buffers of a layer are one tensor in Poplar's profiles. */
typedef struct cat {
    gr_tensor t;
    size_t *at, *n;
} cat;

static cat cat_new(graph *g, const char *name, const char *role, gr_type ty, uint32_t ipu,
                   uint32_t first, const size_t *n, uint32_t tiles)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s.%s", name, role);
    cat c = {GR_NONE, xcalloc(tiles, sizeof *c.at), xcalloc(tiles, sizeof *c.n)};
    size_t total = 0;
    for (uint32_t k = 0; k < tiles; k++) {
        c.at[k] = total;
        c.n[k] = n[k];
        total += n[k];
    }
    if (total == 0)
        return c; /* a role the partition does not need */
    uint32_t shape[1] = {(uint32_t)total};
    c.t = gr_tensor_new(g, nm, ty, 1, shape);
    for (uint32_t k = 0; k < tiles; k++)
        if (n[k])
            gr_map_region(g, c.t, ipu, first + k, c.at[k], c.at[k] + n[k]);
    return c;
}

static void cat_free(cat *c)
{
    free(c->at);
    free(c->n);
}

static gr_field reg(const cat *c, uint32_t k, size_t off, size_t len)
{
    return gr_region(c->t, c->at[k] + off, c->at[k] + off + len);
}

/* One tile's share of the partition. */
typedef struct tshare {
    uint32_t b0, nb, c0, nco, oy0, oh, ox0, ow, ci0, nci, ici;
    uint32_t ky0, nky, ipart; /* its kernel rows; its partial sum's part (ici pk + ik) */
    uint32_t yidx[OP_DIMS];   /* its output block */
    int plan;                 /* its conv_amp plan (in the build's list) */
} tshare;

typedef struct build {
    graph *g;
    const char *name;
    uint32_t ipu, first, tiles, K, st, pad; /* st: the stride (1 and up) */
    const op_conv_shape *s;
    const op_conv_part *p;
    op_act y;
    tshare *sh;
    cplan_conv *plans;
    uint32_t nplans;
} build;

/* The tile index of (ib, iy, ix, ico, ici, ik): the partial sums of a block (ici, ik) on
 * consecutive tiles. */
static uint32_t tile_of(const op_conv_part *p, const uint32_t i[OP_NPART])
{
    uint32_t t = 0;
    static const int order[OP_NPART] = {OP_PB, OP_PY, OP_PX, OP_PCO, OP_PCI, OP_PK};
    for (int d = 0; d < OP_NPART; d++)
        t = t * p->p[order[d]] + i[order[d]];
    return t;
}

/* The next index of an odometer over the partition's dimensions; 0 after the last. */
static int next_idx(uint32_t i[OP_NPART], const op_conv_part *p)
{
    for (int d = OP_NPART - 1; d >= 0; d--) {
        if (++i[d] < p->p[d])
            return 1;
        i[d] = 0;
    }
    return 0;
}

/* The partial sums of each output block: input-channel parts x kernel-row parts. */
static uint32_t nparts(const build *b)
{
    return b->p->p[OP_PCI] * b->p->p[OP_PK];
}

/* OP_W_DX and OP_W_T: the AMP's blocks in the passes' order (group g, input channel ci,
 * kernel row ky, columns 8 kc ..), row kx and column co of a block being
 * v[ci][co][K-1-ky][K-1-kx] (flip) or v[ci][co][ky][kx] of the tile's slice [nci][nco][nky]
 * [K] (nky of v's rows: with a flip, the rows mirroring the tile's kernel rows): the columns
 * nky K floats apart, the rows read backwards (a stride of -4 bytes) or forwards. */
static void t_pack(cplan_pack *p, uint32_t nci, uint32_t nco, uint32_t K, uint32_t nky, int flip)
{
    cplan_pack_free(p);
    cplan_pack_init(p, 8, 16, flip ? (uint32_t)-4 : 4, nky * K * 4);
    for (uint32_t g = 0; g < ceil_div_u32(nco, 16); g++)
        for (uint32_t ci = 0; ci < nci; ci++)
            for (uint32_t ky = 0; ky < nky; ky++)
                for (uint32_t kx = 0; kx < K; kx += 8) {
                    uint32_t row = ((ci * nco + 16 * g) * nky + (flip ? nky - 1 - ky : ky)) * K;
                    cplan_pack_block(p, (row + (flip ? K - 1 - kx : kx)) * 4,
                                     (uint32_t)min_u64(8, K - kx),
                                     (uint32_t)min_u64(16, nco - 16 * g));
                }
}

/* The shares, and one conv_amp plan per distinct tile shape. */
static void shares(build *b)
{
    const op_conv_part *p = b->p;
    b->sh = xcalloc(b->tiles, sizeof *b->sh);
    b->plans = xcalloc(b->tiles, sizeof *b->plans);
    uint32_t i[OP_NPART] = {0};
    do {
        tshare *t = &b->sh[tile_of(p, i)];
        const op_act *y = &b->y;
        t->b0 = op_lo(y, OP_B, i[OP_PB]);
        t->nb = op_lo(y, OP_B, i[OP_PB] + 1) - t->b0;
        t->c0 = op_lo(y, OP_C, i[OP_PCO]);
        t->nco = op_lo(y, OP_C, i[OP_PCO] + 1) - t->c0;
        t->oy0 = op_lo(y, OP_H, i[OP_PY]);
        t->oh = op_lo(y, OP_H, i[OP_PY] + 1) - t->oy0;
        t->ox0 = op_lo(y, OP_W, i[OP_PX]);
        t->ow = op_lo(y, OP_W, i[OP_PX] + 1) - t->ox0;
        t->ci0 = op_cut(b->s->cin, p->p[OP_PCI], 1, i[OP_PCI]);
        t->nci = op_cut(b->s->cin, p->p[OP_PCI], 1, i[OP_PCI] + 1) - t->ci0;
        t->ici = i[OP_PCI];
        t->ky0 = op_cut(b->K, p->p[OP_PK], 1, i[OP_PK]);
        t->nky = op_cut(b->K, p->p[OP_PK], 1, i[OP_PK] + 1) - t->ky0;
        t->ipart = i[OP_PCI] * p->p[OP_PK] + i[OP_PK];
        uint32_t idx[OP_DIMS] = {i[OP_PB], i[OP_PCO], i[OP_PY], i[OP_PX]};
        memcpy(t->yidx, idx, sizeof idx);
        cplan_shape cs = {
            t->nci, (t->oh - 1) * b->st + t->nky, (t->ow - 1) * b->st + b->K, t->nco, b->K, t->nky};
        int k = 0;
        while (k < (int)b->nplans &&
               (memcmp(&b->plans[k].s, &cs, sizeof cs) || b->plans[k].B != t->nb))
            k++;
        if (k == (int)b->nplans) {
            err e = {0};
            if (cplan_fwd_strided(&b->plans[k], &cs, t->nb, b->st, &e) != ERR_OK)
                gr_fail(b->g, "%s: %s", b->name, e.msg);
            else if (b->s->form != OP_W_FWD)
                t_pack(&b->plans[k].wpack, t->nci, t->nco, b->K, t->nky, b->s->form == OP_W_DX);
            b->nplans++;
        }
        t->plan = k;
    } while (next_idx(i, p));
}

/* Sizes per tile of one role. */
typedef size_t (*size_fn)(const build *b, const tshare *t);

static cat role(build *b, const char *name, gr_type ty, size_fn f)
{
    size_t *n = xmalloc(b->tiles * sizeof *n);
    for (uint32_t k = 0; k < b->tiles; k++)
        n[k] = f(b, &b->sh[k]);
    cat c = cat_new(b->g, b->name, name, ty, b->ipu, b->first, n, b->tiles);
    free(n);
    return c;
}

static const cplan_conv *plan_of(const build *b, const tshare *t)
{
    return &b->plans[t->plan];
}
static size_t sz_patch(const build *b, const tshare *t)
{
    return plan_of(b, t)->in_bytes / 4;
}
static size_t sz_wloc(const build *b, const tshare *t)
{
    return (size_t)t->nco * t->nci * t->nky * b->K;
}
static size_t sz_bloc(const build *b, const tshare *t)
{
    return t->ipart == 0 && !b->s->nobias ? t->nco : 0;
}
static size_t sz_wblk(const build *b, const tshare *t)
{
    return plan_of(b, t)->wts_bytes / 4;
}
static size_t sz_part(const build *b, const tshare *t)
{
    return plan_of(b, t)->out_bytes / 4;
}
static size_t sz_out(const build *b, const tshare *t)
{
    (void)b;
    return (size_t)t->nb * t->nco * t->oh * t->ow;
}
static size_t sz_wl(const build *b, const tshare *t)
{
    return cplan_amp_wl_words(&plan_of(b, t)->amp);
}
static size_t sz_ptab(const build *b, const tshare *t)
{
    return 3 * (size_t)plan_of(b, t)->amp.npasses;
}
static size_t sz_list(const build *b, const tshare *t)
{
    return 3 * (size_t)plan_of(b, t)->wpack.nblocks;
}
/* The tile's partial output block, with the input channels or kernel rows split (else it
 * writes y). */
static size_t sz_ypart(const build *b, const tshare *t)
{
    return nparts(b) > 1 ? sz_out(b, t) : 0;
}

/* The gathered parts of a tile's chunk: R rows of the largest chunk, whole pairs. */
static size_t gath_stride(const build *b, const tshare *t)
{
    size_t n = sz_out(b, t), st = 0;
    uint32_t R = nparts(b);
    for (uint32_t j = 0; j < R; j++)
        st = max_u64(st, op_split(n, j + 1, R, 2) - op_split(n, j, R, 2));
    return (st + 1) / 2 * 2;
}
static size_t sz_gath(const build *b, const tshare *t)
{
    return nparts(b) > 1 ? nparts(b) * gath_stride(b, t) : 0;
}

/* The tables every tile's codelets read, as host data. */
static void tables(build *b, const cat *wl, const cat *ptab, const cat *list)
{
    for (uint32_t k = 0; k < b->tiles; k++) {
        const cplan_conv *c = plan_of(b, &b->sh[k]);
        uint32_t *w = xmalloc(4 * (size_t)cplan_amp_wl_words(&c->amp));
        cplan_amp_worklists(&c->amp, w);
        gr_init(b->g, wl->t, wl->at[k], w, wl->n[k]);
        free(w);
        gr_init(b->g, ptab->t, ptab->at[k], c->amp.ptab, ptab->n[k]);
        gr_init(b->g, list->t, list->at[k], c->wpack.list, list->n[k]);
    }
}

/* ---- the pieces of the Copies ---- */

typedef struct pieces {
    gr_xfer *x;
    size_t n, cap;
} pieces;

static void put(pieces *q, gr_xfer x)
{
    q->x = xgrow(q->x, &q->cap, q->n + 1, sizeof *q->x);
    q->x[q->n++] = x;
}

static gr_prog copy_of(graph *g, pieces *q)
{
    gr_prog p = q->n ? gr_copy_many(g, q->x, q->n) : GR_NONE;
    free(q->x);
    memset(q, 0, sizeof *q);
    return p;
}

/* Tile k's patch from x: each (sample, channel, row) of it in stretches that lie in one of
 * x's column parts. Patch row r, column c is x's row oy0 stride - pad + r, column ox0 stride -
 * pad + c; what lies outside x (the padding) is never written, so it stays zero (the patch is
 * kept). */
static void patch_pieces(const build *b, const op_act *x, const cat *patch, uint32_t k, pieces *q)
{
    const tshare *t = &b->sh[k];
    uint32_t hp = (t->oh - 1) * b->st + t->nky, wp = (t->ow - 1) * b->st + b->K;
    int64_t y0 = (int64_t)t->oy0 * b->st - b->pad + t->ky0;
    int64_t x0 = (int64_t)t->ox0 * b->st - b->pad;
    uint32_t xb = (uint32_t)(x0 < 0 ? 0 : x0);
    uint32_t xe = (uint32_t)min_u64((uint64_t)(x0 + wp), b->s->w);
    for (uint32_t bl = 0; bl < t->nb; bl++)
        for (uint32_t cl = 0; cl < t->nci; cl++)
            for (uint32_t r = 0; r < hp; r++) {
                int64_t iy = y0 + r;
                if (iy < 0 || iy >= b->s->h)
                    continue;
                for (uint32_t xs = xb; xs < xe;) {
                    uint32_t xb_ = t->b0 + bl, xc = t->ci0 + cl;
                    uint32_t end =
                        (uint32_t)min_u64(xe, xs + op_act_run(x, xb_, xc, (uint32_t)iy, xs));
                    size_t src = op_act_at(x, xb_, xc, (uint32_t)iy, xs);
                    size_t dst = patch->at[k] + (((size_t)bl * t->nci + cl) * hp + r) * wp +
                                 (size_t)(xs - x0);
                    put(q, (gr_xfer){x->t, src, patch->t, dst, end - xs});
                    xs = end;
                }
            }
}

/* Tile k's slice of the weights and of the bias. OP_W_FWD: w [cout][cin][K][K], the slice
 * [nco][nci][nky][K]; OP_W_DX, OP_W_T: v [cin][cout][K][K], the slice [nci][nco][nky][K] as v
 * holds it (t_pack reads it transposed, and flipped for OP_W_DX: there the rows mirroring
 * the tile's kernel rows). A stretch for the whole slice where it is whole rows, else one per
 * output (or input) channel, or per channel pair when the kernel's rows are split. */
static void weight_pieces(const build *b, op_ref w, op_ref bias, const cat *wloc, const cat *bloc,
                          uint32_t k, pieces *q)
{
    const tshare *t = &b->sh[k];
    const uint32_t K = b->K, T = b->s->form != OP_W_FWD; /* T: v [cin][cout] */
    size_t kk = (size_t)K * K, rows = (size_t)t->nky * K;
    uint32_t r0 = b->s->form == OP_W_DX ? K - t->ky0 - t->nky : t->ky0; /* v's first row */
    uint32_t n1 = T ? t->nci : t->nco, n2 = T ? t->nco : t->nci;        /* the slice's [n1][n2] */
    uint32_t a1 = T ? t->ci0 : t->c0, a2 = T ? t->c0 : t->ci0, d2 = T ? b->s->cout : b->s->cin;
    if (w.copies > 1) /* the tiles read the copies in turn */
        w.at += k % w.copies * w.stride;
    if (bias.copies > 1)
        bias.at += k % bias.copies * bias.stride;
    if (t->nky < K) /* a stretch per channel pair: its kernel rows */
        for (uint32_t i = 0; i < n1; i++)
            for (uint32_t j = 0; j < n2; j++)
                put(q, (gr_xfer){w.t, w.at + ((size_t)(a1 + i) * d2 + a2 + j) * kk + r0 * K,
                                 wloc->t, wloc->at[k] + ((size_t)i * n2 + j) * rows, rows});
    else if (n2 == d2) /* whole rows of w (or v): one stretch */
        put(q, (gr_xfer){w.t, w.at + (size_t)a1 * n2 * kk, wloc->t, wloc->at[k], n1 * n2 * kk});
    else
        for (uint32_t i = 0; i < n1; i++)
            put(q, (gr_xfer){w.t, w.at + ((size_t)(a1 + i) * d2 + a2) * kk, wloc->t,
                             wloc->at[k] + (size_t)i * n2 * kk, n2 * kk});
    if (bloc->n[k])
        put(q, (gr_xfer){bias.t, bias.at + t->c0, bloc->t, bloc->at[k], t->nco});
}

/* ---- the vertices ---- */

/* Tile k's share of role c, as a slice. */
static op_sl sl_of(const cat *c, uint32_t k)
{
    return (op_sl){c->t, c->at[k], c->n[k]};
}

static void v_pack(build *b, gr_cs cs, uint32_t k, const cat *wblk, const cat *wloc,
                   const cat *list)
{
    op_v_pack(b->g, cs, b->ipu, b->first + k, &plan_of(b, &b->sh[k])->wpack, sl_of(list, k),
              sl_of(wblk, k), sl_of(wloc, k));
}

static void v_amp(build *b, gr_cs cs, uint32_t k, const cat *patch, const cat *part,
                  const cat *wblk, const cat *wl, const cat *ptab)
{
    const cplan_amp *a = &plan_of(b, &b->sh[k])->amp;
    gr_field f[9] = {reg(patch, k, 0, patch->n[k]),
                     reg(part, k, 0, part->n[k]),
                     reg(wblk, k, 0, wblk->n[k]),
                     reg(wl, k, 0, wl->n[k]),
                     gr_u32((uint32_t)a->radj),
                     gr_u32(a->npasses),
                     reg(ptab, k, 0, ptab->n[k]),
                     gr_u32(a->zall),
                     gr_u32(0)};
    gr_vertex(b->g, cs, "conv_amp", 1, b->ipu, b->first + k, f, 9);
}

/* The tile's output block ([nb][nco][oh][ow]): y's region, or its partial with pci > 1. */
typedef struct outb {
    gr_tensor t;
    size_t at;
} outb;

static outb out_of(const build *b, const cat *ypart, uint32_t k)
{
    if (nparts(b) > 1)
        return (outb){ypart->t, ypart->at[k]};
    return (outb){b->y.t, op_block_at(&b->y, b->sh[k].yidx)};
}

static void v_ungroup(build *b, gr_cs cs, uint32_t k, outb o, const cat *part)
{
    const tshare *t = &b->sh[k];
    size_t P = (size_t)t->oh * t->ow, per = part->n[k] / t->nb;
    for (uint32_t bl = 0; bl < t->nb; bl++)
        op_v_ungroup(b->g, cs, b->ipu, b->first + k,
                     (op_sl){o.t, o.at + (size_t)bl * t->nco * P, (size_t)t->nco * P},
                     (op_sl){part->t, part->at[k] + bl * per, per}, t->nco, (uint32_t)P,
                     b->s->acc != 0);
}

static void v_bias(build *b, gr_cs cs, uint32_t k, outb o, const cat *bloc)
{
    const tshare *t = &b->sh[k];
    uint32_t P = t->oh * t->ow;
    op_v_bias(b->g, cs, b->ipu, b->first + k, (op_sl){o.t, o.at, (size_t)t->nb * t->nco * P},
              sl_of(bloc, k), t->nco, P, t->nb, t->nco * P, 0);
}

/* The reduction of tile k's chunk: the pieces gathering it from every part, its vertices. */
static void reduce(build *b, gr_cs cs, uint32_t k, const cat *ypart, const cat *gath, pieces *q)
{
    const tshare *t = &b->sh[k];
    uint32_t R = nparts(b), j = t->ipart, k0 = k - j;
    size_t n = ypart->n[k], a0 = op_split(n, j, R, 2), len = op_split(n, j + 1, R, 2) - a0;
    size_t st = gath_stride(b, t), yat = op_block_at(&b->y, t->yidx);
    if (len == 0)
        return;
    gr_map_region(b->g, b->y.t, b->ipu, b->first + k, yat + a0, yat + a0 + len);
    for (uint32_t i = 0; i < R; i++)
        put(q, (gr_xfer){ypart->t, ypart->at[k0 + i] + a0, gath->t, gath->at[k] + i * st, len});
    op_v_reduce(b->g, cs, b->ipu, b->first + k, (op_sl){b->y.t, yat + a0, len}, sl_of(gath, k),
                (uint32_t)len, R, (uint32_t)st, 1.0f);
}

static gr_cs cs_new(build *b, int step)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s.%s", b->name, op_conv_step_name(step));
    return gr_cs_new(b->g, nm);
}

static gr_prog seq(graph *g, const gr_prog *p, size_t n)
{
    gr_prog q[8];
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] != GR_NONE)
            q[m++] = p[i];
    return gr_seq(g, q, m);
}

/* The per-tile tensors of a plan, one each role (cat_new), in one table. */
enum { R_PATCH, R_W, R_BIAS, R_WBLK, R_PART, R_WL, R_PTAB, R_LIST, R_YPART, R_GATH, R_N };

static void make_roles(build *b, cat *r)
{
    static const struct {
        const char *name;
        gr_type ty;
        size_fn f;
    } tab[R_N] = {
        [R_PATCH] = {"patch", GR_F32, sz_patch},  [R_W] = {"w", GR_F32, sz_wloc},
        [R_BIAS] = {"bias", GR_F32, sz_bloc},     [R_WBLK] = {"w.blocks", GR_F32, sz_wblk},
        [R_PART] = {"partials", GR_F32, sz_part}, [R_WL] = {"wl", GR_I32, sz_wl},
        [R_PTAB] = {"ptab", GR_I32, sz_ptab},     [R_LIST] = {"w.list", GR_I32, sz_list},
        [R_YPART] = {"y.part", GR_F32, sz_ypart}, [R_GATH] = {"y.parts", GR_F32, sz_gath},
    };
    for (int k = 0; k < R_N; k++)
        r[k] = role(b, tab[k].name, tab[k].ty, tab[k].f);
    gr_keep(b->g, r[R_PATCH].t); /* the padding and the 8 floats after each patch stay zero */
    gr_keep(b->g, r[R_WBLK].t);  /* the weights stay laid out between preps */
    if (r[R_BIAS].t != GR_NONE)
        gr_keep(b->g, r[R_BIAS].t);
    tables(b, &r[R_WL], &r[R_PTAB], &r[R_LIST]);
}

/* The plan's compute sets (GR_NONE for the steps it does not make). */
static void make_sets(build *b, op_conv *out)
{
    for (int k = 0; k < OP_S_N; k++) {
        int absent = (k == OP_S_BIAS && b->s->nobias) || (k == OP_S_REDUCE && nparts(b) == 1);
        out->cs[k] = op_conv_step_compute(k) && !absent ? cs_new(b, k) : GR_NONE;
    }
}

/* Tile k's share: the pieces of the three Copies and its vertices. */
static void tile_build(build *b, const cat *r, const op_conv *out, uint32_t k, op_ref w,
                       op_ref bias, const op_act *x, pieces q[3])
{
    const tshare *t = &b->sh[k];
    weight_pieces(b, w, bias, &r[R_W], &r[R_BIAS], k, &q[0]);
    patch_pieces(b, x, &r[R_PATCH], k, &q[1]);
    v_pack(b, out->cs[OP_S_PACK], k, &r[R_WBLK], &r[R_W], &r[R_LIST]);
    v_amp(b, out->cs[OP_S_AMP], k, &r[R_PATCH], &r[R_PART], &r[R_WBLK], &r[R_WL], &r[R_PTAB]);
    outb o = out_of(b, &r[R_YPART], k);
    if (nparts(b) == 1) {
        size_t at = op_block_at(&b->y, t->yidx);
        gr_map_region(b->g, b->y.t, b->ipu, b->first + k, at, at + sz_out(b, t));
    }
    v_ungroup(b, out->cs[OP_S_UNGROUP], k, o, &r[R_PART]);
    if (t->ipart == 0 && out->cs[OP_S_BIAS] != GR_NONE)
        v_bias(b, out->cs[OP_S_BIAS], k, o, &r[R_BIAS]);
    if (out->cs[OP_S_REDUCE] != GR_NONE)
        reduce(b, out->cs[OP_S_REDUCE], k, &r[R_YPART], &r[R_GATH], &q[2]);
}

static gr_prog exec_of(graph *g, gr_cs cs)
{
    return cs == GR_NONE ? GR_NONE : gr_execute(g, cs);
}

op_act op_conv_out_layout(const op_conv_shape *s, const op_conv_part *p)
{
    uint32_t dim[OP_DIMS] = {s->B, s->cout, op_conv_ho(s), op_conv_wo(s)};
    uint32_t part[OP_DIMS] = {p->p[OP_PB], p->p[OP_PCO], p->p[OP_PY], p->p[OP_PX]};
    op_act y = op_act_make(GR_NONE, dim, part);
    y.grain[OP_C] = 16;
    return y;
}

void op_conv_build(graph *g, const char *name, uint32_t ipu, uint32_t first, const op_conv_shape *s,
                   const op_conv_part *p, const op_act *x, op_ref w, op_ref bias, op_conv *out)
{
    err e = {0};
    uint32_t xd[OP_DIMS] = {s->B, s->cin, s->h, s->w};
    for (int d = 0; d < OP_DIMS && x; d++)
        if (op_act_dim(x, d) != xd[d])
            err_set(&e, ERR_INPUT, "the input is %ux%ux%ux%u, the convolution's %ux%ux%ux%u",
                    op_act_dim(x, 0), op_act_dim(x, 1), op_act_dim(x, 2), op_act_dim(x, 3), xd[0],
                    xd[1], xd[2], xd[3]);
    if (e.status != ERR_OK || op_conv_check(s, p, &e) != ERR_OK) {
        gr_fail(g, "%s: %s", name, e.msg);
        memset(out, 0, sizeof *out);
        out->prep = out->run = GR_NONE;
        return;
    }
    build b = {g,      name, ipu, first, 1,    s->k, s->stride ? s->stride : 1,
               s->pad, s,    p,   {0},   NULL, NULL, 0};
    for (int d = 0; d < OP_NPART; d++)
        b.tiles *= p->p[d];
    char nm[96];
    snprintf(nm, sizeof nm, "%s.y", name);
    b.y = op_conv_out_layout(s, p);
    b.y.t = gr_tensor_new(g, nm, GR_F32, OP_DIMS, b.y.dim);
    if (s->acc)
        gr_keep(g, b.y.t); /* it sums over calls */
    shares(&b);
    cat r[R_N];
    make_roles(&b, r);
    make_sets(&b, out);
    pieces q[3] = {{0}, {0}, {0}}; /* the weights, the input, the partial sums */
    for (uint32_t k = 0; k < b.tiles; k++)
        tile_build(&b, r, out, k, w, bias, x, q);
    gr_prog prep[2] = {copy_of(g, &q[0]), exec_of(g, out->cs[OP_S_PACK])};
    gr_prog run[6] = {copy_of(g, &q[1]),
                      exec_of(g, out->cs[OP_S_AMP]),
                      exec_of(g, out->cs[OP_S_UNGROUP]),
                      exec_of(g, out->cs[OP_S_BIAS]),
                      copy_of(g, &q[2]),
                      exec_of(g, out->cs[OP_S_REDUCE])};
    out->prep = seq(g, prep, 2);
    out->run = seq(g, run, 6);
    out->y = b.y;
    for (int k = 0; k < R_N; k++)
        cat_free(&r[k]);
    for (uint32_t k = 0; k < b.nplans; k++)
        cplan_free(&b.plans[k]);
    free(b.plans);
    free(b.sh);
}
