/* graph_copy: a Copy program as one exchange phase — the on-chip transfers of all its pieces
 * planned together by the exchange compiler, those between IPUs in rounds of global exchange.
 *
 * A Copy is a list of pieces, each n elements of a source tensor from src_at to a destination
 * tensor from dst_at. In piece coordinates (element i of a piece is source element src_at + i
 * and destination element dst_at + i), every stretch of a piece that lies in one source
 * region and one destination region is one transfer; an element of a piece that is not
 * mapped, on either side, is an error. Transfers inside one IPU, a tile sending to itself
 * included (the fabric takes a send to the sender's own tile like any other, at the base
 * latency), are planned per IPU by xcomp_schedule (conflict-free send times; each sending
 * tile gets its own send code from xcomp_emit_tile), and delivered by one `sync internal`.
 * Transfers between IPUs go over the IPU-Links as `gsend`s in rounds: a round holds at most
 * one transfer per sending tile and one per receiving tile (first fit, in piece order), so no
 * receiver ever takes two streams at once whatever the links' timing; each round ends with
 * `sync external`, which delivers it. Every tile of every IPU runs the same phases (an
 * on-chip phase if any IPU has on-chip transfers, then the rounds), so the syncs match. The
 * plan keeps the transfers grouped by sending tile, so each tile's code is written from its
 * own transfers alone. Left out: planning global streams by their link timing (rounds are
 * conservative: a receiver could take a second stream once the first has landed), and
 * multicast (pieces sharing a source, as a broadcast, send one stream per destination). */
#include "workloads/graph/graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/xcomp.h"

/* A region of a tensor by its first element, for finding the region holding an element. */
typedef struct rkey {
    size_t begin;
    uint32_t k;
} rkey;

static int by_begin(const void *a, const void *b)
{
    const rkey *x = a, *y = b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

/* Per tensor that a piece of p names: its regions sorted by first element (else NULL). */
static rkey **sort_regions(const graph *g, const gr_prog_s *p)
{
    rkey **ord = xcalloc(g->nt ? g->nt : 1, sizeof *ord);
    for (size_t q = 0; q < 2 * p->nxf; q++) {
        gr_tensor id = q % 2 ? p->xf[q / 2].dst : p->xf[q / 2].src;
        const gr_tensor_s *t = &g->t[id];
        if (ord[id])
            continue;
        ord[id] = xmalloc((t->nr ? t->nr : 1) * sizeof **ord);
        for (size_t k = 0; k < t->nr; k++)
            ord[id][k] = (rkey){t->r[k].begin, (uint32_t)k};
        qsort(ord[id], t->nr, sizeof **ord, by_begin);
    }
    return ord;
}

/* The region of t holding element `elem` (ord: t's regions sorted), or GR_NONE. */
static uint32_t region_at(const gr_tensor_s *t, const rkey *ord, size_t elem)
{
    size_t lo = 0, hi = t->nr; /* the first region beginning after elem */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ord[mid].begin <= elem)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || t->r[ord[lo - 1].k].end <= elem)
        return GR_NONE;
    return ord[lo - 1].k;
}

static void add(gr_copy_plan *c, size_t *cap, gr_copy_xfer x)
{
    c->x = xgrow(c->x, cap, c->n + 1, sizeof *c->x);
    c->x[c->n++] = x;
}

/* Elements [i, i + len) of piece p, in source region a and destination region b, as one
 * transfer; not whole 32-bit words on both sides: an error. */
static int stretch(const graph *g, const gr_xfer *p, size_t i, size_t len, uint32_t a, uint32_t b,
                   gr_copy_plan *c, size_t *cap, err *e)
{
    const gr_tensor_s *s = &g->t[p->src], *d = &g->t[p->dst];
    const gr_region_s *rs = &s->r[a], *rd = &d->r[b];
    size_t es = gr_type_size(s->type), so = (p->src_at + i - rs->begin) * es,
           dof = (p->dst_at + i - rd->begin) * es;
    if ((len * es) % 4 || so % 4 || dof % 4)
        return err_set(e, ERR_INPUT,
                       "copy %s -> %s: elements [%zu, %zu) -> [%zu, %zu) are not whole 32-bit "
                       "words on both sides",
                       s->name, d->name, p->src_at + i, p->src_at + i + len, p->dst_at + i,
                       p->dst_at + i + len);
    add(c, cap,
        (gr_copy_xfer){.ts = p->src,
                       .td = p->dst,
                       .rs = a,
                       .rd = b,
                       .src_ipu = rs->ipu,
                       .src_tile = rs->tile,
                       .dst_ipu = rd->ipu,
                       .dst_tile = rd->tile,
                       .bytes = (uint32_t)(len * es),
                       .src_off = (uint32_t)so,
                       .dst_off = (uint32_t)dof,
                       .global = rs->ipu != rd->ipu});
    c->bytes += len * es;
    return ERR_OK;
}

/* Piece k's transfers: one per stretch of it inside one source and one destination region. */
static int piece_xfers(const graph *g, const gr_xfer *p, size_t k, rkey *const *ord,
                       gr_copy_plan *c, size_t *cap, err *e)
{
    const gr_tensor_s *s = &g->t[p->src], *d = &g->t[p->dst];
    for (size_t i = 0; i < p->n;) {
        size_t se = p->src_at + i, de = p->dst_at + i;
        uint32_t a = region_at(s, ord[p->src], se), b = region_at(d, ord[p->dst], de);
        if (a == GR_NONE || b == GR_NONE)
            return err_set(e, ERR_INPUT,
                           "copy %s -> %s: piece %zu, elements [%zu, %zu) -> [%zu, %zu): "
                           "element %zu of %s is not mapped to a tile",
                           s->name, d->name, k, p->src_at, p->src_at + p->n, p->dst_at,
                           p->dst_at + p->n, a == GR_NONE ? se : de,
                           a == GR_NONE ? s->name : d->name);
        size_t len = p->n - i;
        if (s->r[a].end - se < len)
            len = s->r[a].end - se;
        if (d->r[b].end - de < len)
            len = d->r[b].end - de;
        if (stretch(g, p, i, len, a, b, c, cap, e) != ERR_OK)
            return ERR_INPUT;
        i += len;
    }
    return ERR_OK;
}

/* Rounds for the global transfers: first fit, one send and one receive per tile a round. */
static void make_rounds(gr_copy_plan *c, uint32_t ntiles, uint32_t nipus)
{
    size_t tiles = (size_t)ntiles * nipus;
    uint32_t *sends = NULL, *recvs = NULL; /* per round and tile: taken */
    size_t cap_s = 0, cap_r = 0;
    c->rounds = 0;
    for (size_t k = 0; k < c->n; k++) {
        gr_copy_xfer *x = &c->x[k];
        if (!x->global)
            continue;
        size_t s = (size_t)x->src_ipu * ntiles + x->src_tile,
               d = (size_t)x->dst_ipu * ntiles + x->dst_tile;
        uint32_t r = 0;
        while (r < c->rounds && (sends[r * tiles + s] || recvs[r * tiles + d]))
            r++;
        if (r == c->rounds) {
            c->rounds++;
            sends = xgrow(sends, &cap_s, c->rounds * tiles, sizeof *sends);
            recvs = xgrow(recvs, &cap_r, c->rounds * tiles, sizeof *recvs);
            memset(sends + r * tiles, 0, tiles * sizeof *sends);
            memset(recvs + r * tiles, 0, tiles * sizeof *recvs);
        }
        sends[r * tiles + s] = recvs[r * tiles + d] = 1;
        x->round = r;
    }
    free(sends);
    free(recvs);
}

/* The group of a transfer: its sending tile, on-chip ones before global ones. */
static size_t group_of(const gr_copy_xfer *x, uint32_t ntiles, size_t total)
{
    return (x->global ? total : 0) + (size_t)x->src_ipu * ntiles + x->src_tile;
}

/* Sort the transfers into their groups (a stable counting sort: piece order kept within a
 * group), with c->at indexing the groups. */
static void group(gr_copy_plan *c, uint32_t ntiles, size_t total)
{
    size_t ngroups = 2 * total;
    c->at = xcalloc(ngroups + 1, sizeof *c->at);
    for (size_t k = 0; k < c->n; k++)
        c->at[group_of(&c->x[k], ntiles, total) + 1]++;
    for (size_t q = 0; q < ngroups; q++)
        c->at[q + 1] += c->at[q];
    size_t *next = xmalloc(ngroups * sizeof *next);
    memcpy(next, c->at, ngroups * sizeof *next);
    gr_copy_xfer *out = xmalloc((c->n ? c->n : 1) * sizeof *out);
    for (size_t k = 0; k < c->n; k++)
        out[next[group_of(&c->x[k], ntiles, total)]++] = c->x[k];
    free(next);
    free(c->x);
    c->x = out;
}

/* Plan each IPU's on-chip transfers (contiguous in c->x once grouped) with the exchange
 * compiler. */
static int schedule_onchip(const graph *g, gr_copy_plan *c, err *e)
{
    uint32_t nt = g->m.tiles_per_ipu;
    for (uint32_t ipu = 0; ipu < g->nipus; ipu++) {
        size_t k0 = c->at[(size_t)ipu * nt], n = c->at[(size_t)(ipu + 1) * nt] - k0;
        if (n == 0)
            continue;
        xcomp_xfer *xs = xmalloc(n * sizeof *xs);
        for (size_t q = 0; q < n; q++)
            xs[q] = (xcomp_xfer){.src = c->x[k0 + q].src_tile,
                                 .dst_first = c->x[k0 + q].dst_tile,
                                 .dst_count = 1,
                                 .bytes = c->x[k0 + q].bytes};
        xcomp_plan plan;
        int rc = xcomp_schedule(&g->m, nt, xs, n, &plan, e);
        for (size_t q = 0; rc == ERR_OK && q < n; q++)
            c->x[k0 + q].start = xs[q].start;
        free(xs);
        if (rc != ERR_OK)
            return rc;
        c->onchip[ipu] = 1;
    }
    return ERR_OK;
}

int gr_copy_plan_make(const graph *g, const gr_prog_s *p, gr_copy_plan *c, err *e)
{
    uint32_t nt = g->m.tiles_per_ipu;
    size_t cap = 0, total = (size_t)g->nipus * nt;
    memset(c, 0, sizeof *c);
    c->onchip = xcalloc(g->nipus, 1);
    rkey **ord = sort_regions(g, p);
    int rc = ERR_OK;
    for (size_t k = 0; rc == ERR_OK && k < p->nxf; k++)
        rc = piece_xfers(g, &p->xf[k], k, ord, c, &cap, e);
    for (size_t i = 0; i < g->nt; i++)
        free(ord[i]);
    free(ord);
    if (rc != ERR_OK)
        return rc;
    make_rounds(c, nt, g->nipus);
    group(c, nt, total);
    return schedule_onchip(g, c, e);
}

void gr_copy_plan_free(gr_copy_plan *c)
{
    free(c->x);
    free(c->at);
    free(c->onchip);
    memset(c, 0, sizeof *c);
}

/* The address of a transfer's side: its offset, plus its region's address when known. */
static uint32_t at(uint32_t *const *addr, gr_tensor t, uint32_t region, uint32_t off)
{
    return addr ? addr[t][region] + off : 0;
}

void gr_subs_free(gr_subs *s)
{
    free(s->key);
    free(s->label);
    memset(s, 0, sizeof *s);
}

/* The label of c's subroutine on this tile if its text has it, else -1. */
static long sub_find(const gr_subs *s, const void *c)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->key[i] == c)
            return (long)s->label[i];
    return -1;
}

static void sub_add(gr_subs *s, const void *c, unsigned label)
{
    size_t cap = s->cap;
    s->key = xgrow(s->key, &s->ckey, s->n + 1, sizeof *s->key);
    s->label = xgrow(s->label, &cap, s->n + 1, sizeof *s->label);
    s->cap = cap;
    s->key[s->n] = c;
    s->label[s->n++] = label;
}

/* The tile's on-chip send code (from its own transfers, x[k0 .. k0 + n)), as a subroutine in
 * sub; its call in code; then the sync that delivers every tile's sends. */
static int emit_onchip(const graph *g, const gr_copy_plan *c, uint32_t *const *addr, gr_subs *subs,
                       uint32_t tile, size_t k0, size_t n, const char *zone, txt *code, txt *sub,
                       unsigned *inst, err *e)
{
    int rc = ERR_OK;
    long have = n ? sub_find(subs, c) : -1;
    if (have >= 0) {
        txt_printf(code, "        call    X%ld\n", have);
    } else if (n) {
        xcomp_xfer *xs = xmalloc(n * sizeof *xs);
        for (size_t q = 0; q < n; q++) {
            const gr_copy_xfer *x = &c->x[k0 + q];
            xs[q] = (xcomp_xfer){.src = x->src_tile,
                                 .dst_first = x->dst_tile,
                                 .dst_count = 1,
                                 .bytes = x->bytes,
                                 .src_addr = at(addr, x->ts, x->rs, x->src_off),
                                 .dst_addr = at(addr, x->td, x->rd, x->dst_off),
                                 .start = x->start};
        }
        char label[32];
        sub_add(subs, c, *inst);
        snprintf(label, sizeof label, "X%u", (*inst)++);
        char *text = xcomp_emit_tile(g->m.tiles_per_ipu, tile, xs, n, label, e);
        if (text) {
            txt_put(sub, text);
            txt_printf(code, "        call    %s\n", label);
            free(text);
        } else {
            rc = ERR_INPUT;
        }
        free(xs);
    }
    txt_printf(code, "        sync    %s\n", zone);
    return rc;
}

/* The tile's global sends (x[k0 .. k1)), round by round, each round ending in the external
 * sync that delivers it. */
static void emit_rounds(const gr_copy_plan *c, uint32_t *const *addr, size_t k0, size_t k1,
                        uint32_t ipu0, txt *code)
{
    for (uint32_t r = 0; r < c->rounds; r++) {
        for (size_t k = k0; k < k1; k++) {
            const gr_copy_xfer *x = &c->x[k];
            if (x->round != r)
                continue;
            txt_printf(code, "        li      r1, %u\n        li      r2, %u\n",
                       at(addr, x->ts, x->rs, x->src_off), x->bytes);
            txt_printf(code, "        li      r3, %u\n        li      r4, %u\n",
                       (ipu0 + x->dst_ipu) << 16 | x->dst_tile, at(addr, x->td, x->rd, x->dst_off));
            txt_printf(code, "        gsend   r1, r2, r3, r4\n");
        }
        txt_printf(code, "        sync    external\n");
    }
}

int gr_copy_emit(const graph *g, const gr_copy_plan *c, uint32_t *const *addr, gr_subs *subs,
                 uint32_t ipu, uint32_t tile, uint32_t ipu0, const char *zone, txt *code, txt *sub,
                 unsigned *inst, err *e)
{
    size_t total = (size_t)g->nipus * g->m.tiles_per_ipu,
           k = (size_t)ipu * g->m.tiles_per_ipu + tile;
    if (c->onchip[ipu] && zone &&
        emit_onchip(g, c, addr, subs, tile, c->at[k], c->at[k + 1] - c->at[k], zone, code, sub,
                    inst, e) != ERR_OK)
        return ERR_INPUT;
    emit_rounds(c, addr, c->at[total + k], c->at[total + k + 1], ipu0, code);
    return ERR_OK;
}
