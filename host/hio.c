/* hio: the host as the engine's host-copy model — streams, host links, remote buffers.
 *
 * At a host sync of IPU i whose tiles arrived by cycle `at`, the tiles' copies run in this
 * order, each starting when the previous ended: the infeed (all `hin` of the sync form buffer
 * k of IPU i's infeed, sliced in tile order; k counts the IPU's infeed copies), the outfeed
 * (all `hout`: buffer k of its outfeed), then the remote-buffer reads (all `rbin` of the sync
 * as one transfer) and writes (all `rbout`, one transfer), as Poplar runs a remote-buffer
 * copy of a tensor as one program over its tiles. A copy's rate is capped by the receiving
 * (or sending) tiles' exchange ports: tiles x xchg_bytes_per_cycle x clock (a remote copy
 * counts each tile once, however many regions it moves). Begin, Mid and the remote time are converted to tile cycles
 * rounding up. Left out: overlapping the infeed and outfeed of one sync (they share the
 * tiles' exchange ports in the real chip too, so sequential is the conservative choice). */
#include "host/hio.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "hw/tile.h"

typedef struct rbuf {
    uint8_t *data;
    size_t size;
} rbuf;

struct hio {
    mach m;
    hio_cfg cfg;
    host *host;
    strm **in, **out;     /* per IPU */
    uint64_t *kin, *kout; /* per IPU: copies so far */
    rbuf *rb;             /* remote buffers by id */
    uint32_t nrb;
    eng_host iface; /* what the engine's port "host" is bound to */
};

hio *hio_new(const mach *m, const hio_cfg *c, err *e)
{
    hio *h = xcalloc(1, sizeof *h);
    h->m = *m;
    h->cfg = *c;
    uint32_t n = m->nipus ? m->nipus : 1;
    h->in = xcalloc(n, sizeof *h->in);
    h->out = xcalloc(n, sizeof *h->out);
    h->kin = xcalloc(n, sizeof *h->kin);
    h->kout = xcalloc(n, sizeof *h->kout);
    if (!(h->host = host_new(m, e))) {
        hio_free(h);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        h->in[i] = strm_new(&c->in, STRM_IN, 2 * i, e);
        h->out[i] = h->in[i] ? strm_new(&c->out, STRM_OUT, 2 * i + 1, e) : NULL;
        if (!h->out[i]) {
            hio_free(h);
            return NULL;
        }
    }
    return h;
}

void hio_free(hio *h)
{
    if (!h)
        return;
    uint32_t n = h->m.nipus ? h->m.nipus : 1;
    for (uint32_t i = 0; i < n; i++) {
        if (h->in)
            strm_free(h->in[i]);
        if (h->out)
            strm_free(h->out[i]);
    }
    for (uint32_t b = 0; b < h->nrb; b++)
        free(h->rb[b].data);
    free(h->rb);
    free(h->in);
    free(h->out);
    free(h->kin);
    free(h->kout);
    host_free(h->host);
    free(h);
}

/* Remote buffer `id` grown to hold [0, end). */
static uint8_t *remote(hio *h, uint32_t id, uint64_t end, err *e)
{
    if (id >= 4096 || end > ((uint64_t)1 << 32)) {
        err_set(e, ERR_FAULT, "remote buffer %u: offset past 4 GiB or id past 4095", id);
        return NULL;
    }
    if (id >= h->nrb) {
        h->rb = xrealloc(h->rb, (id + 1) * sizeof *h->rb);
        memset(h->rb + h->nrb, 0, (id + 1 - h->nrb) * sizeof *h->rb);
        h->nrb = id + 1;
    }
    rbuf *b = &h->rb[id];
    if (end > b->size) {
        b->data = xrealloc(b->data, end);
        memset(b->data + b->size, 0, end - b->size);
        b->size = end;
    }
    return b->data;
}

static uint64_t to_cycles(const mach *m, sim_time ps)
{
    sim_clock clk = sim_clock_hz(m->clock_hz);
    uint64_t c = sim_clock_cycles(clk, ps);
    return sim_clock_time(clk, c) < ps ? c + 1 : c;
}

/* Buffer k of IPU ipu's infeed into the tiles' `hin` destinations, sliced in tile order. */
static void fill_in(const hio *h, uint32_t ipu, uint64_t k, eng_hcopy *c, size_t n)
{
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].kind != TILE_HIN)
            continue;
        if (h->cfg.fill)
            h->cfg.fill(h->cfg.fill_ctx, ipu, k, off, c[i].dst, c[i].bytes);
        else
            memset(c[i].dst, 0, c[i].bytes);
        off += c[i].bytes;
    }
}

/* Buffer k of IPU ipu's outfeed, the tiles' `hout` sources in tile order, to the drain (if
 * any), available from tile cycle `cycle`. */
static void drain_out(const hio *h, uint32_t ipu, uint64_t k, const eng_hcopy *c, size_t n,
                      uint64_t cycle)
{
    uint64_t off = 0;
    for (size_t i = 0; h->cfg.drain && i < n; i++) {
        if (c[i].kind != TILE_HOUT)
            continue;
        h->cfg.drain(h->cfg.drain_ctx, ipu, k, off, c[i].src, c[i].bytes, cycle);
        off += c[i].bytes;
    }
}

/* A sync's host copies as they go: the time now, and the phases' sums so far. */
typedef struct phases {
    sim_time now, begin, mid, rem, end;
} phases;

/* The tiles' copies of one stream (kind TILE_HIN: the infeed, TILE_HOUT: the outfeed), if any:
 * one buffer over the host link, the data moved; ERR_FAULT for a copy to another stream or
 * copies that do not make one buffer. */
static int stream_copy(hio *h, uint32_t ipu, uint64_t at, int kind, eng_hcopy *c, size_t n,
                       uint64_t port, phases *ph, err *e)
{
    uint64_t bytes = 0, tiles = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].kind != kind)
            continue;
        if (c[i].id != (kind == TILE_HIN ? HIO_INFEED : HIO_OUTFEED))
            return err_set(e, ERR_FAULT,
                           "ipu %u tile %u cycle %llu: %s to stream %u: the "
                           "host has infeed 0 and outfeed 1",
                           ipu, c[i].tile, (unsigned long long)at,
                           kind == TILE_HIN ? "hin" : "hout", c[i].id);
        bytes += c[i].bytes;
        tiles++;
    }
    if (!tiles)
        return ERR_OK;
    const host_cfg *hc = kind == TILE_HIN ? &h->cfg.in : &h->cfg.out;
    if (bytes != hc->bytes_per_buffer)
        return err_set(e, ERR_FAULT,
                       "ipu %u cycle %llu: the tiles' %s copies total %llu "
                       "bytes, the stream's buffer is %llu",
                       ipu, (unsigned long long)at, kind == TILE_HIN ? "hin" : "hout",
                       (unsigned long long)bytes, (unsigned long long)hc->bytes_per_buffer);
    uint64_t k = kind == TILE_HIN ? h->kin[ipu]++ : h->kout[ipu]++;
    strm_copy sc = kind == TILE_HIN
                       ? strm_in_copy(h->in[ipu], h->host, ipu, k, ph->now, tiles * port)
                       : strm_out_copy(h->out[ipu], h->host, ipu, k, ph->now, tiles * port);
    ph->begin += sc.begin;
    ph->mid += sc.mid;
    ph->now = sc.end;
    /* Unbuffered (depth 1), the host's callback for the copy runs while the IPU waits:
     * infeed, the callback that hands the buffer back; outfeed, the host consuming it.
     * Buffered, the host does this from its ring while the IPU goes on. */
    if (hc->depth == 1) {
        sim_time wait = kind == TILE_HIN ? hc->callback_ps : hc->drain_ps;
        ph->end += wait;
        ph->now += wait;
        strm_add_end(kind == TILE_HIN ? h->in[ipu] : h->out[ipu], wait);
    }
    /* The outfeed's bytes are the host's once its last byte has arrived, at sc.end: a time
     * on the kernel's timeline, which started this sync at `at`'s time, so sc.end is `at`
     * plus the infeed's Begin, Mid and (depth 1) End plus this copy's Begin and Mid, and
     * to_cycles rounds it up to the tile cycle by which the copy has ended (never later than
     * the release, whose parts are each rounded up). */
    if (kind == TILE_HIN)
        fill_in(h, ipu, k, c, n);
    else
        drain_out(h, ipu, k, c, n, to_cycles(&h->m, sc.end));
    return ERR_OK;
}

/* The tiles' remote-buffer copies: the data moved, then the reads and the writes as one
 * transfer each; ERR_FAULT when a buffer cannot hold the copy (remote). */
static int remote_copies(hio *h, uint32_t ipu, const eng_hcopy *c, size_t n, uint64_t port,
                         phases *ph, err *e)
{
    uint64_t rbytes[2] = {0, 0}, rtiles[2] = {0, 0};
    uint32_t last[2] = {UINT32_MAX, UINT32_MAX};
    for (size_t i = 0; i < n; i++) {
        if (c[i].kind != TILE_RBIN && c[i].kind != TILE_RBOUT)
            continue;
        int in = c[i].kind == TILE_RBIN;
        if (c[i].bytes) {
            uint8_t *b = remote(h, c[i].id, (uint64_t)c[i].offset + c[i].bytes, e);
            if (!b)
                return e->status;
            if (in)
                memcpy(c[i].dst, b + c[i].offset, c[i].bytes);
            else
                memcpy(b + c[i].offset, c[i].src, c[i].bytes);
        }
        rbytes[in] += c[i].bytes;
        rtiles[in] += c[i].tile != last[in]; /* the copies come in tile order */
        last[in] = c[i].tile;
    }
    for (int in = 1; in >= 0; in--) { /* the reads, then the writes: one transfer each */
        if (!rtiles[in])
            continue;
        sim_time done = host_remote_transfer(h->host, ipu, in ? HOST_IN : HOST_OUT, rbytes[in],
                                             ph->now, rtiles[in] * port);
        ph->rem += done - ph->now;
        ph->now = done;
    }
    return ERR_OK;
}

static int copy(void *ctx, uint32_t ipu, int group, uint64_t at, eng_hcopy *c, size_t n,
                eng_htime *t, err *e)
{
    (void)group;
    hio *h = ctx;
    sim_clock clk = sim_clock_hz(h->m.clock_hz);
    phases ph = {.now = sim_clock_time(clk, at)};
    uint64_t port = (uint64_t)h->m.xchg_bytes_per_cycle * h->m.clock_hz;
    for (int kind = TILE_HIN; kind <= TILE_HOUT; kind++) {
        int rc = stream_copy(h, ipu, at, kind, c, n, port, &ph, e);
        if (rc != ERR_OK)
            return rc;
    }
    int rc = remote_copies(h, ipu, c, n, port, &ph, e);
    if (rc != ERR_OK)
        return rc;
    t->begin = to_cycles(&h->m, ph.begin);
    t->mid = to_cycles(&h->m, ph.mid);
    t->remote = to_cycles(&h->m, ph.rem);
    t->end = to_cycles(&h->m, ph.end);
    return ERR_OK;
}

static void retire(void *ctx, uint64_t cycle)
{
    hio *h = ctx;
    host_retire(h->host, sim_clock_time(sim_clock_hz(h->m.clock_hz), cycle));
}

static void meet(void *ctx, uint64_t cycle)
{
    hio *h = ctx;
    if (h->cfg.meet)
        h->cfg.meet(h->cfg.meet_ctx, cycle);
}

const eng_host *hio_iface(hio *h)
{
    h->iface = (eng_host){.ctx = h, .copy = copy, .retire = retire, .meet = meet};
    return &h->iface;
}
