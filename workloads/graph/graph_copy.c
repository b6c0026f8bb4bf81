/* graph_copy: a Copy program as exchange — on-chip transfers planned by the exchange compiler,
 * transfers between IPUs in rounds of global exchange.
 *
 * Every pair of overlapping regions of the source and destination tensors is one transfer.
 * Transfers inside one IPU are planned per IPU by xcomp_schedule (conflict-free send times;
 * each sending tile gets its own send code from xcomp_emit_tile), and delivered by `sync
 * internal`. Transfers between IPUs go over the IPU-Links as `gsend`s in rounds: a round
 * holds at most one transfer per sending tile and one per receiving tile (first fit, in the
 * tensors' order), so no receiver ever takes two streams at once whatever the links' timing;
 * each round ends with `sync external`, which delivers it. Every tile of every IPU runs the
 * same phases (an on-chip phase if any IPU has on-chip transfers, then the rounds), so the
 * syncs match. Left out: planning global streams by their link timing (rounds are
 * conservative: a receiver could take a second stream once the first has landed). */
#include "workloads/graph/graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/xcomp.h"

/* One transfer and where it comes from: regions rs of the source, rd of the destination. */
static void add(gr_copy_plan *c, size_t *cap, gr_copy_xfer x)
{
    c->x = xgrow(c->x, cap, c->n + 1, sizeof *c->x);
    c->x[c->n++] = x;
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

/* Plan each IPU's on-chip transfers with the exchange compiler. */
static int schedule_onchip(const graph *g, gr_copy_plan *c, err *e)
{
    for (uint32_t ipu = 0; ipu < g->nipus; ipu++) {
        size_t n = 0;
        xcomp_xfer *xs = xmalloc((c->n ? c->n : 1) * sizeof *xs);
        size_t *back = xmalloc((c->n ? c->n : 1) * sizeof *back);
        for (size_t k = 0; k < c->n; k++)
            if (!c->x[k].global && c->x[k].src_ipu == ipu) {
                xs[n] = (xcomp_xfer){.src = c->x[k].src_tile,
                                     .dst_first = c->x[k].dst_tile,
                                     .dst_count = 1,
                                     .bytes = c->x[k].bytes};
                back[n++] = k;
            }
        xcomp_plan plan;
        int rc = n ? xcomp_schedule(&g->m, g->m.tiles_per_ipu, xs, n, &plan, e) : ERR_OK;
        for (size_t q = 0; rc == ERR_OK && q < n; q++)
            c->x[back[q]].start = xs[q].start;
        c->onchip |= n > 0;
        free(xs);
        free(back);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

int gr_copy_plan_make(const graph *g, const gr_prog_s *p, gr_copy_plan *c, err *e)
{
    const gr_tensor_s *s = &g->t[p->a], *d = &g->t[p->b];
    size_t es = gr_type_size(s->type), cap = 0;
    memset(c, 0, sizeof *c);
    for (size_t a = 0; a < s->nr; a++)
        for (size_t b = 0; b < d->nr; b++) {
            const gr_region_s *rs = &s->r[a], *rd = &d->r[b];
            size_t lo = rs->begin > rd->begin ? rs->begin : rd->begin;
            size_t hi = rs->end < rd->end ? rs->end : rd->end;
            if (lo >= hi)
                continue;
            if (((hi - lo) * es) % 4 || ((lo - rs->begin) * es) % 4 || ((lo - rd->begin) * es) % 4)
                return err_set(e, ERR_INPUT,
                               "copy %s -> %s: elements [%zu, %zu) are not whole 32-bit words "
                               "on both sides",
                               s->name, d->name, lo, hi);
            add(c, &cap,
                (gr_copy_xfer){.src_ipu = rs->ipu,
                               .src_tile = rs->tile,
                               .dst_ipu = rd->ipu,
                               .dst_tile = rd->tile,
                               .bytes = (uint32_t)((hi - lo) * es),
                               .src_off = (uint32_t)((lo - rs->begin) * es),
                               .dst_off = (uint32_t)((lo - rd->begin) * es),
                               .rs = (uint32_t)a,
                               .rd = (uint32_t)b,
                               .global = rs->ipu != rd->ipu});
            c->bytes += (hi - lo) * es;
        }
    make_rounds(c, g->m.tiles_per_ipu, g->nipus);
    return schedule_onchip(g, c, e);
}

void gr_copy_plan_free(gr_copy_plan *c)
{
    free(c->x);
    memset(c, 0, sizeof *c);
}

/* The address of a transfer's side: its offset, plus its region's address when known. */
static uint32_t at(uint32_t *const *addr, gr_tensor t, uint32_t region, uint32_t off)
{
    return addr ? addr[t][region] + off : 0;
}

/* The tile's on-chip send code, as a subroutine in sub; its call in code. */
static int emit_onchip(const graph *g, const gr_prog_s *p, const gr_copy_plan *c,
                       uint32_t *const *addr, uint32_t ipu, uint32_t tile, txt *code, txt *sub,
                       unsigned *inst, err *e)
{
    size_t n = 0;
    xcomp_xfer *xs = xmalloc((c->n ? c->n : 1) * sizeof *xs);
    int sends = 0;
    for (size_t k = 0; k < c->n; k++) {
        const gr_copy_xfer *x = &c->x[k];
        if (x->global || x->src_ipu != ipu)
            continue;
        xs[n++] = (xcomp_xfer){.src = x->src_tile,
                               .dst_first = x->dst_tile,
                               .dst_count = 1,
                               .bytes = x->bytes,
                               .src_addr = at(addr, p->a, x->rs, x->src_off),
                               .dst_addr = at(addr, p->b, x->rd, x->dst_off),
                               .start = x->start};
        sends |= x->src_tile == tile;
    }
    int rc = ERR_OK;
    if (sends) {
        char label[32];
        snprintf(label, sizeof label, "X%u", (*inst)++);
        char *text = xcomp_emit_tile(g->m.tiles_per_ipu, tile, xs, n, label, e);
        if (text) {
            txt_printf(sub, "%s", text);
            txt_printf(code, "        call    %s\n", label);
            free(text);
        } else {
            rc = ERR_INPUT;
        }
    }
    free(xs);
    txt_printf(code, "        sync    internal\n");
    return rc;
}

int gr_copy_emit(const graph *g, const gr_prog_s *p, const gr_copy_plan *c, uint32_t *const *addr,
                 uint32_t ipu, uint32_t tile, txt *code, txt *sub, unsigned *inst, err *e)
{
    if (c->onchip && emit_onchip(g, p, c, addr, ipu, tile, code, sub, inst, e) != ERR_OK)
        return ERR_INPUT;
    for (uint32_t r = 0; r < c->rounds; r++) {
        for (size_t k = 0; k < c->n; k++) {
            const gr_copy_xfer *x = &c->x[k];
            if (!x->global || x->round != r || x->src_ipu != ipu || x->src_tile != tile)
                continue;
            txt_printf(code, "        li      r1, %u\n        li      r2, %u\n",
                       at(addr, p->a, x->rs, x->src_off), x->bytes);
            txt_printf(code, "        li      r3, %u\n        li      r4, %u\n",
                       x->dst_ipu << 16 | x->dst_tile, at(addr, p->b, x->rd, x->dst_off));
            txt_printf(code, "        gsend   r1, r2, r3, r4\n");
        }
        txt_printf(code, "        sync    external\n");
    }
    return ERR_OK;
}
