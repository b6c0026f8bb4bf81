/* engine_xchg: delivering the exchange at a sync — gather, time, check, copy.
 *
 * Tiles log their sends while they compute (tile.c); nothing crosses tiles until the sync
 * that ends the superstep. Here every logged stream is expanded to one stream per receiving
 * tile, timed by the fabric (on-chip: send + layout latency, one word per cycle; between
 * IPUs: the IPU-Link model), checked (a receiver takes one stream at a time: two streams
 * landing on one tile at overlapping cycles are a simulated fault naming both senders, the
 * receiver and the cycle), and copied into the receivers' memory in parallel on the host
 * threads, receiver by receiver in arrival order, so memory is bit-identical for any
 * --threads. Received data is visible after the sync (BSP); a receiver that reads the
 * destination before then reads the old contents. Left out: exchange bus contention between
 * different senders (the scheduling helper in fabric/ avoids it, as Poplar's compiler does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/engine_int.h"

typedef struct dkey {
    uint32_t dst_ipu, dst_tile;
    uint64_t arrive;
    uint32_t seq; /* index in g->dv: the gather order breaks ties */
} dkey;

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

static delivery *push(eng *g)
{
    if (g->ndv == g->capdv) {
        size_t cap = g->capdv ? 2 * g->capdv : 1024;
        delivery *n = realloc(g->dv, cap * sizeof *n);
        if (!n)
            return NULL;
        g->dv = n;
        g->capdv = cap;
    }
    return &g->dv[g->ndv++];
}

typedef struct copy_job {
    eng *g;
    const dkey *keys;
    const size_t *at; /* receiver r owns keys[at[r] .. at[r+1]) */
} copy_job;

static void copy_receiver(void *ctx, size_t r)
{
    copy_job *j = ctx;
    for (size_t x = j->at[r]; x < j->at[r + 1]; x++) {
        const delivery *d = &j->g->dv[j->keys[x].seq];
        uint8_t *mem = chip_tile_mem(&j->g->chips[d->s.dst_ipu], d->s.dst_tile);
        memcpy(mem + d->dst_addr, d->data, d->s.bytes);
    }
}

/* Gather the pending sends of IPUs [lo, hi) into g->dv: on-chip first, then global. */
static int gather(eng *g, uint32_t lo, uint32_t hi, int global, size_t *n_onchip)
{
    g->ndv = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            *n_onchip = g->ndv;
        if (pass == 1 && !global)
            break;
        for (uint32_t i = lo; i < hi; i++) {
            for (uint32_t t = 0; t < g->ntiles; t++) {
                const tile_outbox *o = &g->chips[i].tiles[t].out;
                for (size_t k = 0; k < o->n; k++) {
                    const tile_send *s = &o->s[k];
                    if (s->kind > TILE_GSEND || s->global != pass)
                        continue;
                    uint32_t first = s->dst & 0xffffu;
                    uint32_t count = s->global ? 1 : (s->dst >> 16) + 1;
                    for (uint32_t d = 0; d < count; d++) {
                        delivery *v = push(g);
                        if (!v)
                            return -1;
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
        }
    }
    return 0;
}

/* Remove delivered sends from the outboxes of IPUs [lo, hi). */
static void clear_sent(eng *g, uint32_t lo, uint32_t hi, int global)
{
    for (uint32_t i = lo; i < hi; i++) {
        for (uint32_t t = 0; t < g->ntiles; t++) {
            tile_outbox *o = &g->chips[i].tiles[t].out;
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

int eng_deliver(eng *g, uint32_t lo, uint32_t hi, int global, uint64_t *end, err *e)
{
    *end = 0;
    size_t n_on = 0;
    g->moved = (eng_moved){0, 0};
    if (gather(g, lo, hi, global, &n_on) != 0)
        return err_set(e, ERR_INPUT, "out of host memory for the exchange");
    size_t n = g->ndv;
    g->moved = (eng_moved){n_on, n - n_on};
    if (n == 0)
        return ERR_OK;
    if (!g->has_fabric) {
        const delivery *d = &g->dv[0];
        return err_set(e, ERR_FAULT, "ipu %u tile %u ctx 0 pc 0x%x cycle %llu: exchange without "
                                     "a fabric model attached",
                       d->s.src_ipu, d->s.src_tile, d->src_pc, (unsigned long long)d->s.send);
    }

    /* timing: the fabric fills arrive/end; the stream array is strided inside deliveries */
    eng_stream *st = malloc(n * sizeof *st);
    dkey *keys = malloc(n * sizeof *keys);
    size_t *at = malloc((n + 1) * sizeof *at);
    if (!st || !keys || !at) {
        free(st);
        free(keys);
        free(at);
        return err_set(e, ERR_INPUT, "out of host memory for the exchange");
    }
    for (size_t x = 0; x < n; x++)
        st[x] = g->dv[x].s;
    g->fabric.onchip(g->fabric.ctx, st, n_on);
    int rc = ERR_OK;
    if (n > n_on)
        rc = g->fabric.global(g->fabric.ctx, g->k, st + n_on, n - n_on, e);
    if (rc != ERR_OK)
        goto out;
    for (size_t x = 0; x < n; x++) {
        g->dv[x].s = st[x];
        keys[x] = (dkey){st[x].dst_ipu, st[x].dst_tile, st[x].arrive, (uint32_t)x};
    }
    qsort(keys, n, sizeof *keys, cmp_key);

    /* one stream at a time per receiver */
    size_t nrecv = 0;
    for (size_t x = 0; x < n; x++) {
        const eng_stream *cur = &g->dv[keys[x].seq].s;
        if (x == 0 || keys[x].dst_ipu != keys[x - 1].dst_ipu ||
            keys[x].dst_tile != keys[x - 1].dst_tile) {
            at[nrecv++] = x;
            continue;
        }
        const eng_stream *prev = &g->dv[keys[x - 1].seq].s;
        if (cur->arrive < prev->end) {
            rc = err_set(e, ERR_FAULT,
                         "ipu %u tile %u cycle %llu: exchange conflict: the stream from ipu %u "
                         "tile %u lands at cycles %llu..%llu and the stream from ipu %u tile %u "
                         "at cycles %llu..%llu",
                         cur->dst_ipu, cur->dst_tile, (unsigned long long)cur->arrive,
                         prev->src_ipu, prev->src_tile, (unsigned long long)prev->arrive,
                         (unsigned long long)prev->end - 1, cur->src_ipu, cur->src_tile,
                         (unsigned long long)cur->arrive, (unsigned long long)cur->end - 1);
            goto out;
        }
    }
    at[nrecv] = n;

    copy_job job = {g, keys, at};
    pool_run(g->pool, nrecv, copy_receiver, &job);

    /* accounting, in a fixed order */
    for (uint32_t i = lo; i < hi; i++) {
        uint64_t fs = UINT64_MAX, le = 0, gfs = UINT64_MAX, gle = 0;
        for (size_t x = 0; x < n; x++) {
            const eng_stream *s = &g->dv[x].s;
            if (!g->dv[x].global && s->dst_ipu == i) {
                g->ipu[i].xchg_bytes += s->bytes;
                g->ipu[i].xchg_streams++;
                fs = s->send < fs ? s->send : fs;
                le = s->end > le ? s->end : le;
            } else if (g->dv[x].global && (s->dst_ipu == i || s->src_ipu == i)) {
                if (s->src_ipu == i)
                    g->ipu[i].global_tx_bytes += s->bytes;
                if (s->dst_ipu == i)
                    g->ipu[i].global_rx_bytes += s->bytes;
                gfs = s->send < gfs ? s->send : gfs;
                gle = s->end > gle ? s->end : gle;
            }
        }
        if (le > fs)
            g->ipu[i].xchg_cycles += le - fs;
        if (gle > gfs)
            g->ipu[i].global_cycles += gle - gfs;
    }
    for (size_t x = 0; x < n; x++) {
        const eng_stream *s = &g->dv[keys[x].seq].s;
        if (s->end > *end)
            *end = s->end;
        if (g->trace)
            g->trace(g->trace_ctx, s, g->dv[keys[x].seq].global);
    }
    clear_sent(g, lo, hi, global);
out:
    free(st);
    free(keys);
    free(at);
    return rc;
}

eng_moved eng_last_moved(const eng *g)
{
    return g->moved;
}
