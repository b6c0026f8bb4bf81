/* conv_cost: the convolution planner's cost model and search (docs/planning.md).
 *
 * A candidate partition (ops.h, op_conv_part) compiles to the steps of op_conv_build; each
 * step's cycles are estimated for every distinct block shape a tile can get (a dimension cut
 * as evenly as whole grains allow has at most two part sizes) and the largest is the step's,
 * since a step ends at the sync its slowest tile reaches. Compute steps follow the codelets'
 * closed forms (the headers of conv_amp.s, conv_ungroup.s, bias_add.s, reduce_add.s,
 * conv_pack.s) and the supervisor's issue rules of docs/timing.md: a compute set is `li` and
 * `run` a vertex, `join` after six, then `sync`; conv_amp is a `call`. Exchange steps follow
 * docs/fabric.md: a tile receives one stream at a time and sends one, 4 bytes a cycle, the
 * exchange code's prologue and per-send set-up before its sends, the sync after. Every step
 * ends with the IPU's internal sync latency.
 *
 * Left out (so the estimate is a model, held to the simulation by tests/test_ops.c): the
 * exchange's latencies between tiles and the list scheduler's gaps (estimated by one average
 * hop), the senders' side of the weight exchange (assumed as spread as the receivers'), and
 * the memory of code and vertex states (the caller's `reserve`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"
#include "workloads/ops/ops.h"
#include "workloads/xcomp.h"

#define NW 6 /* workers a tile */

/* The steps: their names, and where the graph's step list names them: a compute set
 * "<op>.<name>", or a Copy by the tensor it lands in, "<op>.<landing>" (conv.c's roles). */
static const struct {
    const char *name, *landing; /* landing: NULL for a compute set */
} steps[OP_S_N] = {[OP_S_WX] = {"weights.x", "w"},      [OP_S_PACK] = {"pack", NULL},
                   [OP_S_IN] = {"in.x", "patch"},       [OP_S_AMP] = {"amp", NULL},
                   [OP_S_UNGROUP] = {"ungroup", NULL},  [OP_S_BIAS] = {"bias", NULL},
                   [OP_S_RX] = {"reduce.x", "y.parts"}, [OP_S_REDUCE] = {"reduce", NULL}};

const char *op_conv_step_name(int s)
{
    return s >= 0 && s < OP_S_N ? steps[s].name : "?";
}

int op_conv_step_compute(int s)
{
    return s >= 0 && s < OP_S_N && !steps[s].landing;
}

int op_conv_step_of(const char *op, const gr_step *st)
{
    size_t n = strlen(op);
    if (strncmp(st->name, op, n) || st->name[n] != '.')
        return -1;
    int copy = strcmp(st->what, "copy") == 0;
    if (!copy && strcmp(st->what, "execute"))
        return -1;
    for (int k = 0; k < OP_S_N; k++)
        if (copy == !!steps[k].landing &&
            strcmp(st->name + n + 1, copy ? steps[k].landing : steps[k].name) == 0)
            return k;
    return -1;
}

/* ---- a compute set on one tile: the supervisor's issue rules (docs/timing.md) ---- */

/* The barrel: when each slot's worker exits (0: free). */
typedef struct barrel {
    uint64_t exit[NW];
    int busy[NW];
    uint64_t last_exit;
} barrel;

/* The first cycle >= t whose slot no running worker owns: for each slot its first cycle at
 * or after t (and after its worker's exit, if busy), the earliest of them. */
static uint64_t issue(const barrel *b, uint64_t t)
{
    uint64_t best = UINT64_MAX;
    for (unsigned s = 0; s < NW; s++) {
        uint64_t from = b->busy[s] && b->exit[s] + 1 > t ? b->exit[s] + 1 : t;
        uint64_t c = from + (s + NW - from % NW) % NW; /* the first cycle >= from of slot s */
        best = c < best ? c : best;
    }
    return best;
}

/* Arrival at the sync of a compute set whose worker vertices take S[0..n) slots each, in
 * order, from cycle 0: li, run (a worker issues S times from run + 6, exits at run + 6 S),
 * join after each six, then sync (arrives at max(issue + 6, last exit + 1)). */
static uint64_t workers_cycles(const uint64_t *S, size_t n)
{
    barrel b = {{0}, {0}, 0};
    uint64_t t = 0;
    unsigned wave = 0;
    for (size_t k = 0; k < n; k++) {
        t = issue(&b, t) + 1; /* li */
        uint64_t c = issue(&b, t);
        b.busy[c % NW] = 1;
        b.exit[c % NW] = c + 6 * S[k];
        b.last_exit = max_u64(b.last_exit, b.exit[c % NW]);
        t = c + 6;
        if (++wave == NW || k + 1 == n) { /* join */
            uint64_t j = issue(&b, t);
            t = max_u64(j + 6, b.last_exit + 1);
            memset(b.busy, 0, sizeof b.busy);
            wave = 0;
        }
    }
    return max_u64(issue(&b, t) + 6, b.last_exit + 1); /* sync */
}

/* ---- the codelets' slots (their headers) ---- */

/* conv_ungroup of nc channels of P positions (acc = 1: adding to its output). */
static uint64_t ungroup_S(uint64_t nc, uint64_t P, uint64_t acc)
{
    return nc ? 10 + nc * (10 + (2 + 2 * acc) * P) : 9;
}

/* bias_add over B images of C channels of P. */
static uint64_t bias_S(uint64_t B, uint64_t C, uint64_t P)
{
    return 16 + B * (4 + C * (6 + 5 * (P / 4) + 3 * (P % 4)));
}

/* reduce_add of n outputs from P parts. */
static uint64_t reduce_S(uint64_t n, uint64_t P)
{
    uint64_t B = n / 4, h = n % 4 >= 2, o = n % 2;
    return 15 + (B > 0) + B * (5 + 5 * P) + h * (3 + 3 * P) + o * (2 + 3 * P);
}

/* conv_pack of blocks [b0, b1) of 8 x 16 with cv valid columns each, block i holding kernel
 * columns 8 (i mod nk) .. of a row of K: rv = min(8, K - 8 (i mod nk)) valid rows. */
static uint64_t pack_S(uint64_t b0, uint64_t b1, uint64_t nk, uint64_t K, uint64_t cv)
{
    const uint64_t R = 8, C = 16;
    uint64_t S = 11;
    for (uint64_t i = b0; i < b1; i++) {
        uint64_t rv = min_u64(R, K - 8 * (i % nk));
        S += 11 + rv * (5 + 3 * cv + C - cv) + (R - rv) * C;
    }
    return S;
}

/* Slots of one f32amp step on machine m (isa/opcodes.def: 12 bytes loaded, 8 stored, 16
 * MACs). */
static uint64_t amp_step(const mach *m)
{
    uint64_t s = 1;
    s = max_u64(s, ceil_div_u32(12, m->load_bytes_per_cycle));
    s = max_u64(s, ceil_div_u32(8, m->store_bytes_per_cycle));
    return max_u64(s, ceil_div_u32(16, m->amp_macs_per_issue));
}

/* conv_amp (the header's timeline) of passes passes, the first of every `first_every` zeroing,
 * each with runs runs of len rows split over the workers as cplan does (worker w: rows
 * [R w / 6, R (w + 1) / 6)), from the caller's li to its arrival at the sync after it. */
static uint64_t amp_cycles(const mach *m, uint64_t passes, uint64_t first_every, uint64_t runs,
                           uint64_t len)
{
    uint64_t R = runs * len, a = amp_step(m), t = 1 + 6; /* li; call: the entry */
    uint64_t c = t + 50, J = 0;                          /* the first runall */
    for (uint64_t p = 0; p < passes; p++) {
        uint64_t z = p % first_every == 0 ? 8 : 0, join = UINT64_MAX, done = 0;
        for (uint64_t w = 0; w < NW; w++) {
            uint64_t lo = R * w / NW, hi = R * (w + 1) / NW, S = 26;
            if (hi > lo) {
                uint64_t nr = (hi - 1) / len - lo / len + 1;
                S = 27 + 10 * nr + (8 * a + 1 + z) * (hi - lo);
            }
            join = min_u64(join, c + w + 6 * S + 6);
            done = max_u64(done, c + w + 6 * S + 1);
        }
        J = max_u64(join + 6, done);
        c = J + 40;
    }
    return J + 13 + 6; /* ret, then the sync */
}

/* ---- a partition's blocks ---- */

typedef struct blk {
    uint64_t nb, oh, ow, nci, nco, go; /* samples, output rows and columns, channels, groups */
    uint64_t nky;                      /* kernel rows */
} blk;

/* The distinct sizes of n cut into p parts of whole grains g (at most 3), into v. */
static unsigned part_sizes(uint32_t n, uint32_t p, uint32_t g, uint64_t v[3])
{
    unsigned k = 0;
    for (uint32_t i = 0; i < p; i++) {
        uint64_t s = op_cut(n, p, g, i + 1) - op_cut(n, p, g, i);
        unsigned j = 0;
        while (j < k && v[j] != s)
            j++;
        if (j == k && k < 3)
            v[k++] = s;
    }
    return k;
}

/* An exchange whose busiest receiver takes recv bytes and whose senders share `words` words
 * in `sends` transfers: the exchange code's prologue, the busier side (a receiver takes one
 * stream at a time; a sender sets up each transfer, then streams it), an average hop, the
 * sync. */
static uint64_t exch_cycles(const mach *m, uint64_t recv, uint64_t words, uint64_t sends,
                            uint64_t senders)
{
    uint64_t n = max_u64(senders, 1), per = max_u64(words, XCOMP_SETUP * sends) / n;
    uint64_t busy = max_u64((recv + 3) / 4, per + XCOMP_SETUP);
    uint64_t hop = m->xchg_base + m->xchg_turn + m->xchg_per_column * 4;
    return XCOMP_PROLOGUE + busy + hop + 6 + m->sync_internal;
}

/* The steps of worker vertices on a block (S: room for their slots): ungrouping the AMP's
 * output, the bias, packing the weights into the AMP's blocks (one a pass). */
static void worker_steps(const mach *m, const op_conv_shape *s, const blk *b, uint64_t passes,
                         uint64_t *S, uint64_t st[OP_S_N])
{
    uint64_t K = s->k, P = b->oh * b->ow, nk = (K + 7) / 8;
    size_t n = 0;
    for (uint64_t i = 0; i < b->nb; i++)
        for (uint64_t v = 0; v < NW; v++) {
            uint64_t c0 = b->nco * v / NW, c1 = b->nco * (v + 1) / NW;
            if (c1 > c0)
                S[n++] = ungroup_S(c1 - c0, P, s->acc != 0);
        }
    st[OP_S_UNGROUP] = workers_cycles(S, n) + m->sync_internal;
    n = 0;
    for (uint64_t v = 0; v < NW; v++) {
        uint64_t c0 = b->nco * v / NW, c1 = b->nco * (v + 1) / NW;
        if (c1 > c0)
            S[n++] = bias_S(b->nb, c1 - c0, P);
    }
    st[OP_S_BIAS] = workers_cycles(S, n) + m->sync_internal;
    uint64_t blocks = passes;
    n = 0;
    for (uint64_t v = 0; v < NW; v++) {
        uint64_t b0 = blocks * v / NW, b1 = blocks * (v + 1) / NW;
        /* every group but the last is 16 channels wide: the largest blocks; block i holds
         * kernel columns 8 (i mod nk) .. */
        if (b1 > b0)
            S[n++] = pack_S(b0, b1, nk, K, min_u64(16, b->nco));
    }
    st[OP_S_PACK] = workers_cycles(S, n) + m->sync_internal;
}

/* Steps and memory of one block shape; the estimate keeps the largest of each. */
static void blk_cost(const mach *m, const op_conv_shape *s, const op_conv_part *p,
                     const op_conv_ctx *ctx, uint64_t tiles, const blk *b, op_conv_est *e)
{
    uint64_t K = s->k, P = b->oh * b->ow, sd = s->stride ? s->stride : 1;
    uint64_t R = (uint64_t)p->p[OP_PCI] * p->p[OP_PK]; /* the partial sums of a block */
    uint64_t hp = (b->oh - 1) * sd + b->nky, wp = (b->ow - 1) * sd + K;
    uint64_t *S = xmalloc((size_t)(b->nb + 1) * NW * sizeof *S);      /* the vertices' slots */
    uint64_t nk = (K + 7) / 8, passes = b->go * b->nci * b->nky * nk; /* 8 kernel columns a pass */
    uint64_t st[OP_S_N] = {0};
    st[OP_S_AMP] =
        amp_cycles(m, passes, b->nci * b->nky * nk, b->nb * b->oh, b->ow) + m->sync_internal;
    worker_steps(m, s, b, passes, S, st);
    uint64_t blocks = passes;
    size_t n = 0;
    /* the input, its receivers: the patch's rows and columns that lie in the input (the
     * padding is not sent), at most the input's (op_conv_estimate adds the senders' side) */
    uint64_t rin = min_u64(hp, s->h), cin = min_u64(wp, s->w);
    uint64_t in = b->nb * b->nci * rin * cin * 4;
    st[OP_S_IN] = exch_cycles(m, in, 0, 0, 1);
    /* the weights: one stretch a tile, or one an output channel when the input channels
     * are split, or one a channel pair when the kernel's rows are, and the bias; cut where
     * they cross from one sender's part of w to the next */
    uint64_t wl = b->nco * b->nci * b->nky * K, wb = (wl + b->nco) * 4;
    uint64_t wall = (uint64_t)s->cout * s->cin * K * K;
    uint64_t cuts = 2 +
                    (b->nky < K        ? b->nco * b->nci
                     : b->nci < s->cin ? b->nco
                                       : 0) +
                    wl * ctx->w_tiles / wall;
    st[OP_S_WX] = exch_cycles(m, wb, tiles * wb / 4, tiles * cuts, ctx->w_tiles);
    e->w_sends = max_u64(e->w_sends, tiles * cuts);
    uint64_t chunk = 0;
    if (R > 1) {
        /* the block in R chunks of whole pairs, as op_conv_build cuts it: the last the
         * largest */
        uint64_t out = b->nb * b->nco * P;
        chunk = out - op_split(out, (unsigned)R - 1, (unsigned)R, 2);
        st[OP_S_RX] = exch_cycles(m, R * chunk * 4, R * chunk, R, 1);
        n = 0;
        for (unsigned v = 0; v < NW; v++) {
            size_t a = op_split(chunk, v, NW, 2), z = op_split(chunk, v + 1, NW, 2);
            if (z > a)
                S[n++] = reduce_S(z - a, R);
        }
        st[OP_S_REDUCE] = workers_cycles(S, n) + m->sync_internal;
    }
    free(S);
    for (int k = 0; k < OP_S_N; k++)
        e->step[k] = max_u64(e->step[k], st[k]);
    uint64_t runs = b->nb * b->oh;
    uint64_t mem = (b->nb * b->nci * hp * wp + 8) * 4                      /* the patch */
                   + wl * 4 + b->nco * 4                                   /* w and bias slices */
                   + blocks * 512                                          /* the AMP's blocks */
                   + b->nb * b->go * P * 64                                /* partials */
                   + b->nb * b->nco * P * 4                                /* y (or its partial) */
                   + (R > 1 ? R * chunk * 4 + chunk * 4 : 0)               /* gathered parts, y */
                   + (12 + 3 * (runs + NW) + 3 * passes + 3 * blocks) * 4; /* tables */
    /* its output, which the next operation reads: the block, or with R parts its chunk of y */
    uint64_t out = R > 1 ? chunk * 4 : b->nb * b->nco * P * 4;
    e->bytes = (uint32_t)max_u64(e->bytes, min_u64(mem, UINT32_MAX));
    e->temp = (uint32_t)max_u64(e->temp, min_u64(mem - out, UINT32_MAX));
    e->in_bytes = max_u64(e->in_bytes, in);
    e->w_bytes = max_u64(e->w_bytes, wb);
    e->red_bytes = max_u64(e->red_bytes, R * chunk * 4);
}

static uint32_t out_size(uint32_t n, const op_conv_shape *s)
{
    uint32_t st = s->stride ? s->stride : 1, full = n + 2 * s->pad;
    return full >= s->k ? (full - s->k) / st + 1 : 0;
}

uint32_t op_conv_ho(const op_conv_shape *s)
{
    return out_size(s->h, s);
}

uint32_t op_conv_wo(const op_conv_shape *s)
{
    return out_size(s->w, s);
}

/* The next index of an odometer over OP_NPART dimensions of n[d] values each (the first
 * dimension turning slowest); 0 after the last. */
static int next(unsigned i[OP_NPART], const unsigned n[OP_NPART])
{
    for (int d = OP_NPART - 1; d >= 0; d--) {
        if (++i[d] < n[d])
            return 1;
        i[d] = 0;
    }
    return 0;
}

/* The distinct part sizes of each of the partition's dimensions (a cut as even as whole
 * grains allow has at most two, with the grain's remainder three). */
typedef struct sizes {
    uint64_t v[OP_NPART][3];
    unsigned n[OP_NPART];
} sizes;

static void sizes_of(const op_conv_shape *s, const op_conv_part *p, sizes *z)
{
    uint32_t n[OP_NPART] = {s->B, op_conv_ho(s), op_conv_wo(s), s->cin, s->cout, s->k};
    uint32_t grain[OP_NPART] = {1, 1, 1, 1, 16, 1};
    for (int d = 0; d < OP_NPART; d++)
        z->n[d] = part_sizes(n[d], p->p[d], grain[d], z->v[d]);
}

int op_conv_check(const op_conv_shape *s, const op_conv_part *p, err *e)
{
    uint32_t ho = op_conv_ho(s), wo = op_conv_wo(s);
    uint32_t dim[OP_NPART] = {s->B, ho, wo, s->cin, ceil_div_u32(s->cout, 16), s->k};
    if (s->k == 0 || ho == 0 || wo == 0 || s->pad >= s->k)
        return err_set(e, ERR_INPUT,
                       "convolution: kernel %u on %u x %u with padding %u (a kernel that fits, "
                       "padding less than the kernel)",
                       s->k, s->h, s->w, s->pad);
    for (int d = 0; d < OP_NPART; d++)
        if (p->p[d] == 0 || p->p[d] > dim[d])
            return err_set(e, ERR_INPUT, "convolution: %u parts of %u in dimension %d", p->p[d],
                           dim[d], d);
    if (s->acc && (!s->nobias || p->p[OP_PCI] > 1 || p->p[OP_PK] > 1))
        return err_set(e, ERR_INPUT,
                       "convolution: an accumulating convolution has no bias and its input "
                       "channels and kernel rows in one part (%u, %u)",
                       p->p[OP_PCI], p->p[OP_PK]);
    sizes z;
    sizes_of(s, p, &z);
    for (unsigned a = 0; a < z.n[OP_PB]; a++)
        for (unsigned y = 0; y < z.n[OP_PY]; y++)
            for (unsigned x = 0; x < z.n[OP_PX]; x++)
                for (unsigned c = 0; c < z.n[OP_PCO]; c++) {
                    uint64_t rows = z.v[OP_PB][a] * z.v[OP_PCO][c];
                    uint64_t oh = z.v[OP_PY][y], ow = z.v[OP_PX][x];
                    if (!s->nobias && rows > 1 && oh * ow % 4) /* bias_add's 16-byte rows */
                        return err_set(e, ERR_INPUT,
                                       "convolution: blocks of %llu x %llu outputs are not whole "
                                       "16-byte rows",
                                       (unsigned long long)oh, (unsigned long long)ow);
                }
    return ERR_OK;
}

/* The input rows (or columns) the parts of an output dimension of n read that lie in the
 * input of size in, the kernel's K rows cut in kparts: part i's outputs [lo, hi) with kernel
 * rows [k0, k1) read rows lo stride - pad + k0 .. (hi - 1) stride - pad + k1 - 1. */
static uint64_t rows_read(const op_conv_shape *s, uint32_t n, uint32_t parts, uint32_t kparts,
                          uint32_t in)
{
    int64_t st = s->stride ? s->stride : 1, sum = 0;
    for (uint32_t i = 0; i < parts; i++)
        for (uint32_t j = 0; j < kparts; j++) {
            int64_t lo = op_cut(n, parts, 1, i), hi = op_cut(n, parts, 1, i + 1);
            int64_t k0 = op_cut(s->k, kparts, 1, j), k1 = op_cut(s->k, kparts, 1, j + 1);
            if (hi == lo || k1 == k0)
                continue;
            int64_t r0 = lo * st - s->pad + k0, r1 = (hi - 1) * st - s->pad + k1;
            r0 = r0 < 0 ? 0 : r0;
            r1 = r1 > in ? in : r1;
            sum += r1 > r0 ? r1 - r0 : 0;
        }
    return (uint64_t)sum;
}

/* The input exchange's senders: the input's tiles share every patch's rows that lie in the
 * input, a transfer a row (the input's blocks are whole rows): over all the tiles, pco B Cin
 * x the rows read x the columns read words, in pco B Cin x the rows read transfers; through
 * a view (x_run), a transfer for each x_run columns of a row (a transpose: every word). */
static uint64_t in_senders(const mach *m, const op_conv_shape *s, const op_conv_part *p,
                           const op_conv_ctx *ctx, op_conv_est *e)
{
    uint64_t ry = rows_read(s, op_conv_ho(s), p->p[OP_PY], p->p[OP_PK], s->h);
    uint64_t cx = rows_read(s, op_conv_wo(s), p->p[OP_PX], 1, s->w);
    uint64_t each = (uint64_t)p->p[OP_PCO] * s->B * s->cin;
    uint64_t per_row = ctx->x_run ? (cx + ctx->x_run - 1) / ctx->x_run : 1;
    e->in_sends = each * ry * per_row;
    return exch_cycles(m, 0, each * ry * cx, e->in_sends, ctx->x_tiles);
}

int op_conv_estimate(const mach *m, const op_conv_shape *s, const op_conv_part *p,
                     const op_conv_ctx *ctx, op_conv_est *e, err *er)
{
    memset(e, 0, sizeof *e);
    int rc = op_conv_check(s, p, er);
    if (rc != ERR_OK)
        return rc;
    uint64_t tiles = 1;
    for (int d = 0; d < OP_NPART; d++)
        tiles *= p->p[d];
    e->tiles = (uint32_t)min_u64(tiles, UINT32_MAX);
    sizes z;
    sizes_of(s, p, &z);
    unsigned i[OP_NPART] = {0};
    do { /* every combination of the dimensions' part sizes */
        blk k = {z.v[OP_PB][i[OP_PB]],   z.v[OP_PY][i[OP_PY]],   z.v[OP_PX][i[OP_PX]],
                 z.v[OP_PCI][i[OP_PCI]], z.v[OP_PCO][i[OP_PCO]], 0,
                 z.v[OP_PK][i[OP_PK]]};
        k.go = ceil_div_u32((uint32_t)k.nco, 16);
        blk_cost(m, s, p, ctx, tiles, &k, e);
    } while (next(i, z.n));
    e->step[OP_S_IN] = max_u64(e->step[OP_S_IN], in_senders(m, s, p, ctx, e));
    if (p->p[OP_PCI] * p->p[OP_PK] == 1)
        e->step[OP_S_RX] = e->step[OP_S_REDUCE] = 0;
    if (s->nobias)
        e->step[OP_S_BIAS] = 0;
    for (int k = 0; k < OP_S_N; k++) {
        if (k == OP_S_WX || k == OP_S_PACK)
            e->prep += e->step[k];
        else
            e->run += e->step[k];
    }
    uint64_t reuse = ctx->reuse ? ctx->reuse : 1;
    e->cost = e->run + (e->prep + reuse - 1) / reuse;
    return ERR_OK;
}

/* The candidate part counts of a dimension of n in grains of g: the fewest parts for each
 * largest part size (more parts of the same largest size only add tiles). */
static unsigned candidates(uint32_t n, uint32_t *out, unsigned cap)
{
    unsigned k = 0;
    uint32_t last = 0;
    for (uint32_t p = 1; p <= n && k < cap; p++) {
        uint32_t big = ceil_div_u32(n, p);
        if (big != last)
            out[k++] = p;
        last = big;
    }
    return k;
}

/* Whether p leaves output blocks that op_pool_fwd pools where they lie (op_conv_ctx.pool):
 * no reduction (its chunks would split a block over tiles), and a layout pooling admits. */
static int poolable(const op_conv_shape *s, const op_conv_part *p, uint32_t pool)
{
    if (!pool)
        return 1;
    op_act y = op_conv_out_layout(s, p);
    return p->p[OP_PCI] * p->p[OP_PK] == 1 && op_pool_layout(&y);
}

int op_conv_plan(const mach *m, const op_conv_shape *s, const op_conv_ctx *ctx, op_conv_part *best,
                 op_conv_est *be, err *e)
{
    uint32_t tiles = ctx->tiles, reserve = ctx->reserve;
    enum { CAP = 256 };
    uint32_t c[OP_NPART][CAP],
        dim[OP_NPART] = {s->B, op_conv_ho(s), op_conv_wo(s), s->cin, ceil_div_u32(s->cout, 16),
                         s->k};
    unsigned nc[OP_NPART];
    for (int d = 0; d < OP_NPART; d++)
        nc[d] = candidates(dim[d], c[d], CAP);
    int found = 0, capped = 0;
    uint32_t limit = m->sram_bytes > reserve ? m->sram_bytes - reserve : 0, least = UINT32_MAX,
             least_temp = UINT32_MAX;
    unsigned i[OP_NPART] = {0};
    do {
        op_conv_part p;
        uint64_t t = 1;
        for (int d = 0; d < OP_NPART; d++)
            t *= p.p[d] = c[d][i[d]];
        op_conv_est est;
        if (t > tiles || !poolable(s, &p, ctx->pool) ||
            op_conv_estimate(m, s, &p, ctx, &est, NULL) != ERR_OK)
            continue;
        least = est.bytes < least ? est.bytes : least;
        least_temp = est.temp < least_temp ? est.temp : least_temp;
        if (est.bytes > limit || (ctx->avail && est.temp > ctx->avail))
            continue;
        if (ctx->x_sends && est.in_sends > (uint64_t)ctx->x_sends * max_u64(ctx->x_tiles, 1)) {
            capped = 1;
            continue;
        }
        if (!found || est.cost < be->cost || (est.cost == be->cost && est.tiles < be->tiles)) {
            *best = p;
            *be = est;
            found = 1;
        }
    } while (next(i, nc));
    uint32_t field = op_conv_ho(s) * op_conv_wo(s);
    if (!found && least == UINT32_MAX)
        return err_set(e, ERR_INPUT,
                       "convolution %ux%ux%ux%u -> %u channels (kernel %u): no valid partition "
                       "over %u tiles%s",
                       s->B, s->cin, s->h, s->w, s->cout, s->k, tiles,
                       !s->nobias && field % 4
                           ? " (the bias is added to whole 16-byte rows of a block's outputs, and "
                             "the output's positions a channel, a matrix product's batch, are "
                             "not a multiple of 4)"
                           : "");
    if (!found && capped)
        return err_set(e, ERR_INPUT,
                       "convolution %ux%ux%ux%u -> %u channels (kernel %u): no partition over "
                       "%u tiles that fits %u bytes a tile has its input's %u sender%s make at "
                       "most %u transfer%s each",
                       s->B, s->cin, s->h, s->w, s->cout, s->k, tiles, limit, ctx->x_tiles,
                       ctx->x_tiles == 1 ? "" : "s", ctx->x_sends, ctx->x_sends == 1 ? "" : "s");
    if (!found && ctx->avail)
        return err_set(e, ERR_INPUT,
                       "convolution %ux%ux%ux%u -> %u channels (kernel %u): no partition over "
                       "%u tiles fits %u bytes a tile (the smallest needs %u) with at most %u "
                       "of working memory (the available memory proportion; the smallest "
                       "needs %u)",
                       s->B, s->cin, s->h, s->w, s->cout, s->k, tiles, limit, least, ctx->avail,
                       least_temp);
    if (!found)
        return err_set(e, ERR_INPUT,
                       "convolution %ux%ux%ux%u -> %u channels (kernel %u): no partition over "
                       "%u tiles fits %u bytes a tile (the smallest needs %u)",
                       s->B, s->cin, s->h, s->w, s->cout, s->k, tiles, limit, least);
    return ERR_OK;
}

uint32_t op_avail_bytes(const mach *m, double prop)
{
    double b = prop * (double)m->sram_bytes;
    return b < 1.0 ? 1 : b >= (double)m->sram_bytes ? m->sram_bytes : (uint32_t)b;
}

void op_conv_part_text(const op_conv_part *p, char *buf, size_t n)
{
    int k = snprintf(buf, n, "b %u y %u x %u ci %u co %u", p->p[OP_PB], p->p[OP_PY], p->p[OP_PX],
                     p->p[OP_PCI], p->p[OP_PCO]);
    if (p->p[OP_PK] > 1 && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " ky %u", p->p[OP_PK]);
}
