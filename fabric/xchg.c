/* xchg: on-chip exchange timing and the fabric object that plugs into the BSP engine.
 *
 * Layout model (constants in the machine preset): tiles are numbered down columns of
 * tiles_per_column tiles; within a column, tiles_per_supertile neighbours share a supertile.
 * A word travels from its sender's supertile along the column and across columns:
 *   latency = base + per_supertile x |Δrow| + per_column x |Δcolumn| + (Δcolumn ≠ 0) x turn.
 * The receiver takes one stream at a time at xchg_bytes_per_cycle, so a stream of B bytes
 * sent at cycle t lands over [t + latency, t + latency + ceil(B / bpc)).
 * Between IPUs a stream leaves its tile, crosses to the chip's link port (base cycles, an
 * assumption: the port sits one supertile hop away), travels the IPU-Link route with the
 * link model's shared bandwidth, and crosses to the receiving tile (base cycles again). The
 * receiver is occupied from the first word's landing to the last's. With several ranks
 * (base/rank.h) the deliveries at an external sync are gathered from every rank, payloads
 * included, in one process's order, so every rank times them alike and copies into its own
 * tiles. Left out: exchange-bus contention between senders of one IPU (the compiled
 * schedule avoids it), congestion growth of on-chip latency (+24% under full load in the
 * paper), and link packetisation. */
#include "fabric/xchg.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/rank.h"
#include "fabric/link.h"
#include "fabric/sync.h"
#include "hw/pool.h"
#include "hw/sim.h"

/* A stream with what the fabric needs to deliver it. */
typedef struct delivery {
    eng_stream s;
    const uint8_t *data;
    uint32_t dst_addr;
    uint32_t src_pc;
    uint8_t global;
} delivery;

typedef struct dkey {
    uint32_t dst_ipu, dst_tile;
    uint64_t arrive;
    uint32_t seq; /* index in g->dv: the gather order breaks ties */
} dkey;

struct xchg_sys {
    mach m;
    link_net *net;
    xchg_trace_fn trace;
    void *trace_ctx;
    delivery *dv; /* scratch: the streams of the delivery under way */
    size_t ndv, capdv;
    delivery *gv; /* scratch of gather: the streams between IPUs, appended to dv after */
    size_t ngv, capgv;
    size_t kept; /* sends gather left in the outboxes (other passes', host copies) */
    dkey *tmp;   /* scratch of sort_keys */
    size_t captmp;
    uint32_t *rc; /* scratch of sort_streams: a count per receiving tile, zero between uses */
    size_t caprc;
    xchg_pos *pos;    /* each tile's place in the layout (xchg_pos_of), for onchip */
    eng_fabric iface; /* what the engine's port "fabric" is bound to */
};

uint32_t xchg_column(const mach *m, uint32_t tile)
{
    return tile / m->tiles_per_column;
}

uint32_t xchg_row(const mach *m, uint32_t tile)
{
    return (tile % m->tiles_per_column) / m->tiles_per_supertile;
}

xchg_pos xchg_pos_of(const mach *m, uint32_t tile)
{
    return (xchg_pos){xchg_column(m, tile), xchg_row(m, tile)};
}

xchg_pos *xchg_pos_table(const mach *m, uint32_t n)
{
    xchg_pos *p = xmalloc((n ? n : 1) * sizeof *p);
    for (uint32_t t = 0; t < n; t++)
        p[t] = xchg_pos_of(m, t);
    return p;
}

uint32_t xchg_latency(const mach *m, uint32_t src, uint32_t dst)
{
    return xchg_latency_pos(m, xchg_pos_of(m, src), xchg_pos_of(m, dst));
}

uint64_t xchg_words(const mach *m, uint64_t bytes)
{
    uint64_t bpc = m->xchg_bytes_per_cycle ? m->xchg_bytes_per_cycle : 4;
    return (bytes + bpc - 1) / bpc;
}

/* Streams within an IPU: the layout's latency (from the tiles' places, looked up), then one
 * word per cycle. */
static void onchip(const xchg_sys *x, delivery *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        eng_stream *s = &d[i].s;
        s->arrive = s->send + xchg_latency_pos(&x->m, x->pos[s->src_tile], x->pos[s->dst_tile]);
        s->end = s->arrive + xchg_words(&x->m, s->bytes);
    }
}

/* The first cycle that starts at or after time t. */
static uint64_t cycle_at_or_after(sim_clock clk, sim_time t)
{
    uint64_t c = sim_clock_cycles(clk, t);
    return sim_clock_time(clk, c) < t ? c + 1 : c;
}

/* Streams between IPUs: the link model's exact transfer times, from the streams' send cycles
 * on the system's one time base (the model is analytic, so IPUs that ran ahead of the kernel
 * between external syncs are timed exactly all the same). */
static int global(xchg_sys *x, delivery *d, size_t n, err *e)
{
    link_xfer *lx = xcalloc(n, sizeof *lx);
    sim_clock clk = sim_clock_hz(x->m.clock_hz);
    for (size_t i = 0; i < n; i++) {
        lx[i].src_ipu = d[i].s.src_ipu;
        lx[i].dst_ipu = d[i].s.dst_ipu;
        lx[i].bytes = d[i].s.bytes;
        lx[i].start = sim_clock_time(clk, d[i].s.send + x->m.xchg_base);
    }
    int rc = link_transfers(x->net, lx, n, e);
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        eng_stream *s = &d[i].s;
        /* first cycle at or after the last byte's arrival, then the hop to the tile */
        uint64_t c = cycle_at_or_after(clk, lx[i].end);
        uint64_t words = xchg_words(&x->m, s->bytes);
        uint64_t lat_c = cycle_at_or_after(clk, link_route_latency(x->net, s->src_ipu, s->dst_ipu));
        s->arrive = s->send + 2 * (uint64_t)x->m.xchg_base + lat_c;
        s->end = c + x->m.xchg_base;
        if (s->end < s->arrive + words)
            s->end = s->arrive + words;
    }
    free(lx);
    return rc;
}

/* ---- delivery: gather, time, check, copy ---- */

static int cmp_key(const void *a, const void *b)
{
    const dkey *x = a, *y = b;
    if (x->dst_ipu != y->dst_ipu)
        return x->dst_ipu < y->dst_ipu ? -1 : 1;
    if (x->dst_tile != y->dst_tile)
        return x->dst_tile < y->dst_tile ? -1 : 1;
    if (x->arrive != y->arrive)
        return x->arrive < y->arrive ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Room for n more deliveries in g->dv: the first of them. */
static delivery *push(xchg_sys *g, size_t n)
{
    if (g->ndv + n > g->capdv) /* mostly there is room: a call per send cost more than the push */
        g->dv = xgrow(g->dv, &g->capdv, g->ndv + n, sizeof *g->dv);
    delivery *d = &g->dv[g->ndv];
    g->ndv += n;
    return d;
}

/* Likewise in g->gv, gather's streams between IPUs. */
static delivery *push_global(xchg_sys *g, size_t n)
{
    if (g->ngv + n > g->capgv)
        g->gv = xgrow(g->gv, &g->capgv, g->ngv + n, sizeof *g->gv);
    delivery *d = &g->gv[g->ngv];
    g->ngv += n;
    return d;
}

typedef struct copy_job {
    const xchg_sys *x;
    const eng_xview *v;
    const dkey *keys;
    const size_t *at; /* receiver r owns keys[at[r] .. at[r+1]) */
} copy_job;

static void copy_receiver(void *ctx, size_t r)
{
    copy_job *j = ctx;
    for (size_t x = j->at[r]; x < j->at[r + 1]; x++) {
        const delivery *d = &j->x->dv[j->keys[x].seq];
        if (d->s.dst_ipu < j->v->own_lo || d->s.dst_ipu >= j->v->own_hi)
            return; /* another rank's receiver: that rank copies */
        uint8_t *mem = chip_tile_mem(&j->v->chips[d->s.dst_ipu], d->s.dst_tile);
        memcpy(mem + d->dst_addr, d->data, d->s.bytes);
    }
}

/* Append the sends tile t of IPU i logged, one delivery per receiving tile: on-chip ones to
 * g->dv, and those between IPUs to g->gv when `global` is set; count the others in g->kept. */
static void gather_tile(xchg_sys *g, const tile_outbox *o, uint32_t i, uint32_t t, int global)
{
    for (size_t k = 0; k < o->n; k++) {
        const tile_send *s = &o->s[k];
        if (s->kind > TILE_GSEND || (s->global && !global)) {
            g->kept++;
            continue;
        }
        uint32_t first = s->dst & 0xffffu, count = s->global ? 1 : (s->dst >> 16) + 1;
        delivery *v = s->global ? push_global(g, 1) : push(g, count);
        for (uint32_t d = 0; d < count; d++, v++) {
            v->s = (eng_stream){
                .src_ipu = i,
                .src_tile = t,
                .dst_ipu = s->global ? s->dst >> 16 : i,
                .dst_tile = first + d,
                .bytes = s->bytes,
                .send = s->start,
            };
            v->data = o->data + s->data;
            v->dst_addr = s->dst_addr;
            v->src_pc = s->pc;
            v->global = s->global;
        }
    }
}

/* Gather the pending sends of IPUs [lo, hi) (of the tiles in each chip's outq) into g->dv:
 * on-chip first (*n_onchip of them),
 * then, when `global` is set, those between IPUs (each kind in the order of the tiles and
 * their sends: one pass over the outboxes). */
static void gather(xchg_sys *g, const eng_xview *v, uint32_t lo, uint32_t hi, int global,
                   size_t *n_onchip)
{
    g->ndv = 0;
    g->ngv = 0;
    g->kept = 0;
    for (uint32_t i = lo; i < hi; i++) {
        const chip *c = &v->chips[i];
        for (uint32_t k = 0; k < c->noutq; k++)
            gather_tile(g, &c->tiles[c->outq[k]].out, i, c->outq[k], global);
    }
    *n_onchip = g->ndv;
    if (g->ngv)
        memcpy(push(g, g->ngv), g->gv, g->ngv * sizeof *g->gv);
}

/* ---- several ranks: every rank times every stream, each copies into its own tiles ---- */

/* A delivery as it travels between ranks (its payload follows all of them). */
typedef struct wire {
    eng_stream s;
    uint32_t dst_addr, src_pc;
    uint64_t global;
} wire;

/* This rank's gathered deliveries, n_on of them on chip: counts, records, then payloads. */
static uint8_t *pack(const xchg_sys *g, size_t n_on, size_t *len)
{
    size_t n = g->ndv, bytes = 0;
    for (size_t x = 0; x < n; x++)
        bytes += g->dv[x].s.bytes;
    *len = 2 * sizeof(uint64_t) + n * sizeof(wire) + bytes;
    uint8_t *buf = xmalloc(*len), *p = buf + 2 * sizeof(uint64_t) + n * sizeof(wire);
    uint64_t head[2] = {n_on, n - n_on};
    memcpy(buf, head, sizeof head);
    for (size_t x = 0; x < n; x++) {
        const delivery *d = &g->dv[x];
        wire w;
        memset(&w, 0, sizeof w);
        w.s = d->s;
        w.dst_addr = d->dst_addr;
        w.src_pc = d->src_pc;
        w.global = d->global;
        memcpy(buf + sizeof head + x * sizeof w, &w, sizeof w);
        memcpy(p, d->data, d->s.bytes);
        p += d->s.bytes;
    }
    return buf;
}

/* Append rank block `b`'s deliveries of one pass (0: on chip, 1: between IPUs). */
static void unpack(xchg_sys *g, const uint8_t *b, int pass)
{
    uint64_t head[2];
    memcpy(head, b, sizeof head);
    size_t n = (size_t)(head[0] + head[1]);
    const uint8_t *p = b + sizeof head + n * sizeof(wire);
    for (size_t x = 0; x < n; x++) {
        wire w;
        memcpy(&w, b + sizeof head + x * sizeof w, sizeof w);
        if ((x >= head[0]) == pass) {
            delivery *d = push(g, 1);
            *d = (delivery){w.s, p, w.dst_addr, w.src_pc, (uint8_t)w.global};
        }
        p += w.s.bytes;
    }
}

/* Several ranks: replace g->dv by every rank's deliveries in the order one process gathers
 * them (on chip for every IPU, then between IPUs; ranks own ascending runs of IPUs). Returns
 * the buffer the payloads now point into (free it after the copy). */
static uint8_t *share(xchg_sys *g, const eng_xview *v, size_t *n_on)
{
    size_t len, size = rank_size(v->ranks);
    uint8_t *mine = pack(g, *n_on, &len);
    size_t *counts = xmalloc(size * sizeof *counts);
    uint8_t *all = rank_allgatherv(v->ranks, mine, len, counts);
    free(mine);
    g->ndv = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            *n_on = g->ndv;
        size_t at = 0;
        for (size_t r = 0; r < size; at += counts[r++])
            unpack(g, all + at, pass);
    }
    free(counts);
    return all;
}

/* Remove delivered sends from the outboxes of IPUs [lo, hi) (every send, without reading
 * them, when gather left none). */
static void clear_sent(const xchg_sys *g, const eng_xview *v, uint32_t lo, uint32_t hi, int global)
{
    for (uint32_t i = lo; i < hi; i++) {
        const chip *c = &v->chips[i];
        for (uint32_t k = 0; k < c->noutq; k++) {
            tile_outbox *o = &c->tiles[c->outq[k]].out;
            if (g->kept == 0) {
                o->n = 0;
                o->used = 0;
                continue;
            }
            size_t keep = 0;
            for (size_t k = 0; k < o->n; k++)
                if (o->s[k].kind > TILE_GSEND || (o->s[k].global && !global))
                    o->s[keep++] = o->s[k];
            o->n = keep;
            if (keep == 0)
                o->used = 0;
        }
    }
}

/* The fabric's timing of n streams: on-chip first (n_on of them), then between IPUs. */
static int time_streams(xchg_sys *g, size_t n_on, err *e)
{
    size_t n = g->ndv;
    onchip(g, g->dv, n_on);
    return n > n_on ? global(g, g->dv + n_on, n - n_on, e) : ERR_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Keys [lo, hi) by arrival, stably, by insertion (they are few). */
static void insert_keys(dkey *k, size_t lo, size_t hi)
{
    for (size_t i = lo + 1; i < hi; i++) {
        dkey v = k[i];
        size_t j = i;
        for (; j > lo && k[j - 1].arrive > v.arrive; j--)
            k[j] = k[j - 1];
        k[j] = v;
    }
}

/* The sorted runs of w keys of src merged in pairs into dst (n keys; stable: of equal
 * arrivals the left run's first). */
static void merge_runs(const dkey *src, dkey *dst, size_t n, size_t w)
{
    for (size_t lo = 0; lo < n; lo += 2 * w) {
        size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
        size_t a = lo, b = mid, o = lo;
        while (a < mid && b < hi)
            dst[o++] = src[b].arrive < src[a].arrive ? src[b++] : src[a++];
        while (a < mid)
            dst[o++] = src[a++];
        while (b < hi)
            dst[o++] = src[b++];
    }
}

/* A stable radix sort of the n keys on the arrival's offset from the earliest, a byte a
 * pass, through tmp. */
static void radix_keys(dkey *k, size_t n, dkey *tmp)
{
    uint64_t lo = k[0].arrive, hi = k[0].arrive;
    for (size_t i = 1; i < n; i++) {
        lo = k[i].arrive < lo ? k[i].arrive : lo;
        hi = k[i].arrive > hi ? k[i].arrive : hi;
    }
    dkey *src = k, *dst = tmp;
    for (unsigned sh = 0; sh < 64 && (hi - lo) >> sh; sh += 8) {
        size_t at[257] = {0};
        for (size_t i = 0; i < n; i++)
            at[((src[i].arrive - lo) >> sh & 0xffu) + 1]++;
        for (unsigned d = 0; d < 256; d++)
            at[d + 1] += at[d];
        for (size_t i = 0; i < n; i++)
            dst[at[(src[i].arrive - lo) >> sh & 0xffu]++] = src[i];
        dkey *t = src;
        src = dst;
        dst = t;
    }
    if (src != k)
        memcpy(k, src, n * sizeof *k);
}

/* Sort one receiver's keys (cmp_key: they are all of one receiver, in gather order, so by
 * arrival, stably), through tmp (room for n keys when n > SORT_INSERT): by insertion when
 * they are few; a merge sort of runs of SORT_INSERT sorted by insertion up to SORT_RADIX
 * (the planned MNIST's reductions land tens of partial sums on a tile, often in reverse:
 * insertion sorting them took ~1.7% of its instructions); above, a radix sort (the many
 * streams of a partial-sum reduction into one tile, where qsort with cmp_key took ~2.5% of
 * the planned MNIST's host time). */
enum { SORT_INSERT = 8, SORT_RADIX = 256 };
static void sort_keys(dkey *k, size_t n, dkey *tmp)
{
    if (n > SORT_RADIX) {
        radix_keys(k, n, tmp);
        return;
    }
    for (size_t lo = 0; lo < n; lo += SORT_INSERT)
        insert_keys(k, lo, lo + SORT_INSERT < n ? lo + SORT_INSERT : n);
    dkey *src = k, *dst = tmp;
    for (size_t w = SORT_INSERT; w < n; w *= 2) {
        merge_runs(src, dst, n, w);
        dkey *t = src;
        src = dst;
        dst = t;
    }
    if (src != k)
        memcpy(k, src, n * sizeof *k);
}

/* Order the streams by (receiver, arrival, gather order) into keys, at[r] where receiver r's
 * streams begin: nothing to do where they are so already; else a counting sort by receiver
 * (stable: gather order within each), then each receiver's few streams by arrival where they
 * are not so already. An exchange of partial
 * sums sends 10^5 streams to 10^3 receivers: one comparison sort of them all took longer
 * than timing and copying them. */
static void sort_streams(xchg_sys *g, uint32_t nipus, dkey *keys, size_t *at, size_t *nrecv)
{
    size_t n = g->ndv, T = g->m.tiles_per_ipu, nr = 0;
    for (size_t x = 0; x < n; x++) {
        const eng_stream *s = &g->dv[x].s;
        keys[x] = (dkey){s->dst_ipu, s->dst_tile, s->arrive, (uint32_t)x};
    }
    size_t sorted = 1; /* often so already: streams gathered by sender, each to the next tile */
    while (sorted < n && cmp_key(&keys[sorted - 1], &keys[sorted]) < 0)
        sorted++;
    if (sorted >= n) {
        for (size_t x = 0; x < n; x++)
            if (x == 0 || keys[x].dst_ipu != keys[x - 1].dst_ipu ||
                keys[x].dst_tile != keys[x - 1].dst_tile)
                at[nr++] = x;
        at[nr] = n;
        *nrecv = nr;
        return;
    }
    if (g->caprc < (size_t)nipus * T) {
        free(g->rc);
        g->caprc = (size_t)nipus * T;
        g->rc = xcalloc(g->caprc, sizeof *g->rc); /* kept zero between deliveries */
    }
    uint32_t *recv = xmalloc((n ? n : 1) * sizeof *recv);
    for (size_t x = 0; x < n; x++) {
        uint32_t r = g->dv[x].s.dst_ipu * (uint32_t)T + g->dv[x].s.dst_tile;
        if (g->rc[r]++ == 0)
            recv[nr++] = r;
    }
    qsort(recv, nr, sizeof *recv, cmp_u32);
    for (size_t k = 0, pos = 0; k < nr; k++) {
        uint32_t c = g->rc[recv[k]];
        g->rc[recv[k]] = (uint32_t)pos;
        at[k] = pos;
        pos += c;
    }
    at[nr] = n;
    for (size_t x = 0; x < n; x++) {
        const eng_stream *s = &g->dv[x].s;
        keys[g->rc[s->dst_ipu * (uint32_t)T + s->dst_tile]++] =
            (dkey){s->dst_ipu, s->dst_tile, s->arrive, (uint32_t)x};
    }
    for (size_t k = 0; k < nr; k++) {
        g->rc[recv[k]] = 0;
        size_t sorted = at[k] + 1; /* often so already: in gather order */
        while (sorted < at[k + 1] && keys[sorted - 1].arrive <= keys[sorted].arrive)
            sorted++;
        if (sorted < at[k + 1]) {
            size_t m = at[k + 1] - at[k];
            if (m > SORT_INSERT && g->captmp < m) {
                free(g->tmp);
                g->captmp = m;
                g->tmp = xmalloc(m * sizeof *g->tmp);
            }
            sort_keys(keys + at[k], m, g->tmp);
        }
    }
    free(recv);
    *nrecv = nr;
}

/* Order the streams (sort_streams) and check that a receiver takes one stream at a time. */
static int check_receivers(xchg_sys *g, uint32_t nipus, dkey *keys, size_t *at, size_t *nrecv,
                           err *e)
{
    size_t n = g->ndv;
    sort_streams(g, nipus, keys, at, nrecv);
    for (size_t x = 1; x < n; x++) {
        const eng_stream *cur = &g->dv[keys[x].seq].s;
        if (keys[x].dst_ipu != keys[x - 1].dst_ipu || keys[x].dst_tile != keys[x - 1].dst_tile)
            continue;
        const eng_stream *prev = &g->dv[keys[x - 1].seq].s;
        if (cur->arrive < prev->end)
            return err_set(e, ERR_FAULT,
                           "ipu %u tile %u cycle %llu: exchange conflict: the stream from ipu %u "
                           "tile %u lands at cycles %llu..%llu and the stream from ipu %u tile %u "
                           "at cycles %llu..%llu",
                           cur->dst_ipu, cur->dst_tile, (unsigned long long)cur->arrive,
                           prev->src_ipu, prev->src_tile, (unsigned long long)prev->arrive,
                           (unsigned long long)prev->end - 1, cur->src_ipu, cur->src_tile,
                           (unsigned long long)cur->arrive, (unsigned long long)cur->end - 1);
    }
    return ERR_OK;
}

/* Per IPU of [lo, hi): bytes received on chip, bytes sent and received over the links, and
 * the span from the first send to the last landing of each (sums, minima and maxima: one
 * pass over the streams). Returns the last landing of all. */
static uint64_t account(const xchg_sys *g, const eng_xview *v, uint32_t lo, uint32_t hi)
{
    typedef struct span {
        uint64_t fs, le, gfs, gle;
    } span;
    uint32_t n = hi - lo;
    span *sp = xmalloc((n ? n : 1) * sizeof *sp);
    for (uint32_t i = 0; i < n; i++)
        sp[i] = (span){UINT64_MAX, 0, UINT64_MAX, 0};
    uint64_t end = 0;
    for (size_t x = 0; x < g->ndv; x++) {
        const eng_stream *s = &g->dv[x].s;
        end = s->end > end ? s->end : end;
        if (!g->dv[x].global) {
            if (s->dst_ipu < lo || s->dst_ipu >= hi)
                continue;
            eng_ipu_stats *st = &v->ipu[s->dst_ipu];
            span *p = &sp[s->dst_ipu - lo];
            st->xchg_bytes += s->bytes;
            st->xchg_streams++;
            p->fs = s->send < p->fs ? s->send : p->fs;
            p->le = s->end > p->le ? s->end : p->le;
            continue;
        }
        for (int side = 0; side < 2; side++) { /* the sender's IPU, then the receiver's */
            uint32_t i = side ? s->dst_ipu : s->src_ipu;
            if (i < lo || i >= hi || (side && i == s->src_ipu))
                continue;
            span *p = &sp[i - lo];
            if (s->src_ipu == i)
                v->ipu[i].global_tx_bytes += s->bytes;
            if (s->dst_ipu == i)
                v->ipu[i].global_rx_bytes += s->bytes;
            p->gfs = s->send < p->gfs ? s->send : p->gfs;
            p->gle = s->end > p->gle ? s->end : p->gle;
        }
    }
    for (uint32_t i = lo; i < hi; i++) {
        const span *p = &sp[i - lo];
        if (p->le > p->fs)
            v->ipu[i].xchg_cycles += p->le - p->fs;
        if (p->gle > p->gfs)
            v->ipu[i].global_cycles += p->gle - p->gfs;
    }
    free(sp);
    return end;
}

/* Deliveries of fewer bytes than XCHG_SHARE_BYTES are copied on the calling thread alone:
 * the copy takes less host time than waking the pool's threads; unless there are at least
 * XCHG_SHARE_RECEIVERS receivers and the threads are still awake: each receiver's memory is
 * somewhere else in the host's memory, and its copy waits on it however small (bench/speed
 * (h), 1472 busy tiles, the even ones sending 8 bytes each superstep: 2 threads 1.79x faster
 * than one before, 1.82x to 1.89x after). */
enum { XCHG_SHARE_BYTES = 256 * 1024, XCHG_SHARE_RECEIVERS = 256 };

static int deliver(void *ctx, const eng_xview *v, uint32_t lo, uint32_t hi, int global,
                   eng_moved *moved, err *e)
{
    xchg_sys *g = ctx;
    size_t n_on = 0;
    *moved = (eng_moved){0, 0, 0};
    gather(g, v, lo, hi, global, &n_on);
    uint8_t *shared = global && rank_size(v->ranks) > 1 ? share(g, v, &n_on) : NULL;
    size_t n = g->ndv;
    *moved = (eng_moved){n_on, n - n_on, 0};
    if (n == 0) {
        free(shared);
        return ERR_OK;
    }
    dkey *keys = xmalloc(n * sizeof *keys);
    size_t *at = xmalloc((n + 1) * sizeof *at), nrecv = 0;
    int rc = time_streams(g, n_on, e);
    if (rc == ERR_OK)
        rc = check_receivers(g, v->nipus, keys, at, &nrecv, e);
    if (rc == ERR_OK) {
        copy_job job = {g, v, keys, at};
        uint64_t bytes = 0;
        for (size_t x = 0; x < n; x++)
            bytes += g->dv[x].s.bytes;
        if (bytes >= XCHG_SHARE_BYTES || (nrecv >= XCHG_SHARE_RECEIVERS && pool_awake(v->pool)))
            pool_run(v->pool, nrecv, copy_receiver, &job);
        else /* too little to be worth waking the threads */
            for (size_t r = 0; r < nrecv; r++)
                copy_receiver(&job, r);
        moved->end = account(g, v, lo, hi);
        for (size_t x = 0; g->trace && x < n; x++) {
            const delivery *d = &g->dv[keys[x].seq];
            g->trace(g->trace_ctx, &d->s, d->global);
        }
        clear_sent(g, v, lo, hi, global);
    }
    free(keys);
    free(at);
    free(shared);
    return rc;
}

/* ---- the fabric port ---- */

xchg_sys *xchg_sys_new(const mach *m, err *e)
{
    xchg_sys *x = xcalloc(1, sizeof *x);
    x->m = *m;
    if (x->m.tiles_per_column == 0 || x->m.tiles_per_supertile == 0) {
        free(x);
        err_set(e, ERR_INPUT,
                "machine %s: tiles_per_column and tiles_per_supertile must be "
                "positive",
                m->name);
        return NULL;
    }
    x->net = link_net_new(m, e);
    if (!x->net) {
        free(x);
        return NULL;
    }
    x->pos = xchg_pos_table(m, m->tiles_per_ipu);
    return x;
}

void xchg_sys_free(xchg_sys *x)
{
    if (!x)
        return;
    link_net_free(x->net);
    free(x->dv);
    free(x->gv);
    free(x->tmp);
    free(x->rc);
    free(x->pos);
    free(x);
}

static void classify(void *ctx, const chip *c, eng_sync *s)
{
    const xchg_sys *x = ctx;
    sync_classify(&x->m, c, s);
}

static int deadlock(void *ctx, chip *chips, const eng_sync *s, uint32_t nipus, err *e)
{
    (void)ctx;
    return sync_deadlock(chips, s, nipus, e);
}

const eng_fabric *xchg_sys_iface(xchg_sys *x)
{
    x->iface = (eng_fabric){.ctx = x, .deliver = deliver, .sync = classify, .deadlock = deadlock};
    return &x->iface;
}

void xchg_set_trace(xchg_sys *x, xchg_trace_fn fn, void *ctx)
{
    x->trace = fn;
    x->trace_ctx = ctx;
}
