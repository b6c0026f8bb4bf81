/* strm: the host side of infeed and outfeed streams — request times with and without
 * prefetch, the data-loader pool, the outfeed drain, the outfeed modes, and per-stream
 * Begin/Mid/End statistics. strm.h gives the equations.
 *
 * Models the host as a FIFO queue of samples served by `loaders` identical workers, computed
 * exactly sample by sample when the device asks for a buffer (lazily, in buffer order), and the
 * outfeed host as one consumer draining buffers in order. Leaves out the host's other work
 * (the loaders do nothing but prepare samples), memory copies into the stream buffer, the
 * order in which workers finish inside a buffer (only the last one matters), and the device
 * side: where the copy lands, I/O tiles and the engine's phases are the engine's business. */
#include "host/strm.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"

/* One buffer's place in the ring (index k % depth). */
typedef struct slot {
    uint64_t k;             /* buffer held, or UINT64_MAX */
    sim_time request, fill; /* infeed: R_k, F_k */
    sim_time ready;         /* infeed: the buffer is ready; outfeed: the slot frees */
    sim_time device_at;     /* the device reached its copy (last strm_*_ready / slot call) */
    sim_time start;         /* outfeed: the slot was free (the copy may start) */
    sim_time released;      /* infeed: transfer end; outfeed: drained */
    bool done;              /* released (infeed) / drained (outfeed) */
} slot;

struct strm {
    host_cfg c;
    strm_kind kind;
    host_prep prep;
    slot *ring;            /* [depth] */
    sim_time *free;        /* min-heap of the loaders' free times [loaders] */
    uint64_t next_fill;    /* infeed: the first buffer not filled yet; outfeed: next slot call */
    uint64_t next_done;    /* the buffer strm_in_release / strm_out_done expects next */
    sim_time last_request; /* infeed: R_{k-1}; outfeed: drained_{k-1} */
    uint64_t stat[STRM_NSTAT];
};

strm *strm_new(const host_cfg *c, strm_kind kind, uint32_t id, err *e)
{
    if (host_cfg_check(c, e) != ERR_OK)
        return NULL;
    strm *s = xcalloc(1, sizeof *s);
    s->c = *c;
    s->kind = kind;
    host_prep_init(&s->prep, c, ((uint64_t)kind << 32) | id);
    s->ring = xcalloc(c->depth, sizeof *s->ring);
    s->free = xcalloc(c->loaders, sizeof *s->free);
    for (uint32_t i = 0; i < c->depth; i++)
        s->ring[i].k = UINT64_MAX;
    return s;
}

void strm_free(strm *s)
{
    if (!s)
        return;
    free(s->ring);
    free(s->free);
    free(s);
}

const host_cfg *strm_cfg(const strm *s)
{
    return &s->c;
}
strm_kind strm_kind_of(const strm *s)
{
    return s->kind;
}

static slot *at(const strm *s, uint64_t k)
{
    return &s->ring[k % s->c.depth];
}

/* ---- the loader pool ---- */

/* Replace the heap's minimum (the earliest free worker) by v and restore the heap. */
static void heap_replace_min(sim_time *h, uint32_t n, sim_time v)
{
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        sim_time mv = v;
        if (l < n && h[l] < mv)
            m = l, mv = h[l];
        if (r < n && h[r] < mv)
            m = r, mv = h[r];
        if (m == i)
            break;
        h[i] = h[m];
        i = m;
    }
    h[i] = v;
}

/* Fill a buffer: its samples queue at `fill_at` behind the earlier ones; returns its ready
 * time. */
static sim_time fill(strm *s, sim_time fill_at)
{
    sim_time ready = fill_at;
    for (uint32_t n = 0; n < s->c.samples_per_buffer; n++) {
        sim_time p = host_prep_next(&s->prep);
        sim_time done = max_u64(fill_at, s->free[0]) + p;
        heap_replace_min(s->free, s->c.loaders, done);
        ready = max_u64(ready, done);
        s->stat[STRM_PREP_PS] += p;
    }
    s->stat[STRM_SAMPLES] += s->c.samples_per_buffer;
    return ready;
}

/* ---- infeed ---- */

sim_time strm_in_ready(strm *s, uint64_t k, sim_time device_at)
{
    assert(s->kind == STRM_IN);
    uint32_t d = s->c.depth;
    if (k < s->next_fill) { /* asked again */
        slot *b = at(s, k);
        assert(b->k == k && !b->done && "strm_in_ready: buffer already released or overwritten");
        b->device_at = device_at;
        return b->ready;
    }
    assert((d >= 2 || k == s->next_fill) && "strm_in_ready: without prefetch no buffer is skipped");
    for (uint64_t j = s->next_fill; j <= k; j++) {
        slot *b = at(s, j);
        sim_time req;
        if (d == 1) {
            assert((j == 0 || (b->k == j - 1 && b->done)) &&
                   "strm_in_ready: buffer k - 1 not released (depth 1)");
            req = max_u64(device_at, j == 0 ? 0 : b->released);
        } else if (j < d) {
            req = 0;
        } else {
            assert(b->k == j - d && b->done && "strm_in_ready: buffer k - depth not released");
            req = b->released;
        }
        req = max_u64(req, s->last_request);
        s->last_request = req;
        *b = (slot){.k = j, .request = req, .fill = req + s->c.callback_ps};
        b->ready = fill(s, b->fill);
        b->device_at = device_at;
        s->stat[STRM_FILL_PS] += b->ready - b->fill;
    }
    s->next_fill = k + 1;
    return at(s, k)->ready;
}

static void count_copy(strm *s, sim_time device_at, sim_time start, sim_time end)
{
    sim_time begin = start > device_at ? start - device_at : 0;
    s->stat[STRM_BUFFERS]++;
    s->stat[STRM_BYTES] += s->c.bytes_per_buffer;
    s->stat[STRM_BEGIN_PS] += begin;
    s->stat[STRM_WAITS] += begin > 0;
    if (begin > s->stat[STRM_BEGIN_MAX_PS])
        s->stat[STRM_BEGIN_MAX_PS] = begin;
    s->stat[STRM_MID_PS] += end > start ? end - start : 0;
}

void strm_in_release(strm *s, uint64_t k, sim_time t)
{
    assert(s->kind == STRM_IN);
    slot *b = at(s, k);
    assert(k == s->next_done && k < s->next_fill && b->k == k &&
           "strm_in_release: buffers are released once each, in order, after strm_in_ready");
    sim_time start = max_u64(b->ready, b->device_at);
    b->released = t;
    b->done = true;
    s->next_done = k + 1;
    count_copy(s, b->device_at, start, t);
}

bool strm_in_buffer(const strm *s, uint64_t k, strm_buf *out)
{
    const slot *b = at(s, k);
    if (s->kind != STRM_IN || k >= s->next_fill || b->k != k)
        return false;
    *out = (strm_buf){.request = b->request, .fill = b->fill, .ready = b->ready};
    return true;
}

/* ---- outfeed ---- */

sim_time strm_out_slot(strm *s, uint64_t k, sim_time device_at)
{
    assert(s->kind == STRM_OUT);
    slot *b = at(s, k);
    if (k + 1 == s->next_fill) { /* asked again */
        assert(b->k == k && !b->done);
        b->device_at = device_at;
        b->start = max_u64(device_at, b->ready);
        return b->start;
    }
    assert(k == s->next_fill && k == s->next_done && "strm_out_slot: one buffer at a time");
    sim_time free_at = 0;
    if (k >= s->c.depth) {
        assert(b->k == k - s->c.depth && b->done);
        free_at = b->released;
    }
    *b = (slot){
        .k = k, .ready = free_at, .device_at = device_at, .start = max_u64(device_at, free_at)};
    s->next_fill = k + 1;
    return b->start;
}

void strm_out_done(strm *s, uint64_t k, sim_time t)
{
    assert(s->kind == STRM_OUT);
    slot *b = at(s, k);
    assert(k == s->next_done && b->k == k && !b->done &&
           "strm_out_done: each buffer once, in order, after strm_out_slot");
    sim_time drain_start = max_u64(t + s->c.callback_ps, s->last_request);
    b->released = drain_start + s->c.drain_ps;
    b->done = true;
    s->last_request = b->released;
    s->next_done = k + 1;
    s->stat[STRM_DRAIN_PS] += s->c.drain_ps;
    count_copy(s, b->device_at, b->start, t);
}

sim_time strm_out_drained(const strm *s, uint64_t k)
{
    const slot *b = at(s, k);
    if (s->kind != STRM_OUT || b->k != k || !b->done)
        return SIM_FOREVER;
    return b->released;
}

/* ---- whole copies ---- */

strm_copy strm_in_copy(strm *s, host *h, uint32_t ipu, uint64_t k, sim_time device_at,
                       uint64_t max_bytes_per_s)
{
    strm_copy c = {.device_at = device_at};
    c.ready = strm_in_ready(s, k, device_at);
    c.start = max_u64(c.ready, device_at);
    c.end = host_link_transfer(h, ipu, HOST_IN, s->c.bytes_per_buffer, c.start, max_bytes_per_s);
    c.begin = c.start - device_at;
    c.mid = c.end - c.start;
    strm_in_release(s, k, c.end);
    return c;
}

strm_copy strm_out_copy(strm *s, host *h, uint32_t ipu, uint64_t k, sim_time device_at,
                        uint64_t max_bytes_per_s)
{
    strm_copy c = {.device_at = device_at};
    c.ready = c.start = strm_out_slot(s, k, device_at);
    c.end = host_link_transfer(h, ipu, HOST_OUT, s->c.bytes_per_buffer, c.start, max_bytes_per_s);
    c.begin = c.start - device_at;
    c.mid = c.end - c.start;
    strm_out_done(s, k, c.end);
    return c;
}

void strm_add_end(strm *s, sim_time end_ps)
{
    s->stat[STRM_END_PS] += end_ps;
}

/* ---- outfeed modes ---- */

int strm_mode_parse(const char *text, strm_mode *mode, uint32_t *n, err *e)
{
    static const char *names[] = {"all", "final", "sum"};
    for (int i = 0; i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            *mode = (strm_mode)i;
            *n = 1;
            return ERR_OK;
        }
    if (strncmp(text, "every:", 6) == 0) {
        const char *d = text + 6;
        size_t len = strspn(d, "0123456789");
        unsigned long long v = 0;
        for (size_t i = 0; i < len && v <= UINT32_MAX; i++)
            v = v * 10 + (unsigned)(d[i] - '0');
        if (len == 0 || d[len] != '\0' || v < 1 || v > UINT32_MAX)
            return err_set(e, ERR_INPUT,
                           "outfeed mode '%.40s': N must be a whole number from "
                           "1 to %u",
                           text, UINT32_MAX);
        *mode = STRM_EVERYN;
        *n = (uint32_t)v;
        return ERR_OK;
    }
    return err_set(e, ERR_INPUT, "outfeed mode '%.40s': unknown (all, final, sum or every:N)",
                   text);
}

const char *strm_mode_name(strm_mode mode)
{
    static const char *names[] = {"all", "final", "sum", "every"};
    return (unsigned)mode < 4 ? names[mode] : "?";
}

char *strm_mode_format(strm_mode mode, uint32_t n, char *buf, size_t len)
{
    if (mode == STRM_EVERYN)
        snprintf(buf, len, "every:%u", n);
    else
        snprintf(buf, len, "%s", strm_mode_name(mode));
    return buf;
}

uint64_t strm_outfeed_copies(strm_mode mode, uint32_t n, uint64_t iters, uint64_t i, uint64_t bytes)
{
    assert(i < iters);
    switch (mode) {
    case STRM_ALL: return bytes;
    case STRM_FINAL:
    case STRM_SUM: return i + 1 == iters ? bytes : 0;
    case STRM_EVERYN: assert(n >= 1); return (i + 1) % n == 0 ? bytes : 0;
    }
    return 0;
}

uint64_t strm_outfeed_count(strm_mode mode, uint32_t n, uint64_t iters)
{
    switch (mode) {
    case STRM_ALL: return iters;
    case STRM_FINAL:
    case STRM_SUM: return iters > 0;
    case STRM_EVERYN: return n ? iters / n : 0;
    }
    return 0;
}

/* ---- statistics ---- */

static const strm_stat_info stat_table[STRM_NSTAT] = {
    [STRM_BUFFERS] = {"buffers", "buffers", "buffers copied"},
    [STRM_BYTES] = {"bytes", "B", "bytes copied (bytes_per_buffer x buffers)"},
    [STRM_BEGIN_PS] = {"begin_ps", "ps", "StreamCopyBegin: the device waited for the host"},
    [STRM_BEGIN_MAX_PS] = {"begin_max_ps", "ps", "the longest single StreamCopyBegin"},
    [STRM_WAITS] = {"waits", "copies", "copies whose StreamCopyBegin was not zero"},
    [STRM_MID_PS] = {"mid_ps", "ps", "StreamCopyMid: the transfers"},
    [STRM_END_PS] = {"end_ps", "ps", "StreamCopyEnd, as the engine accounted it"},
    [STRM_SAMPLES] = {"samples", "samples", "infeed: samples the loaders prepared"},
    [STRM_PREP_PS] = {"prep_ps", "ps", "infeed: the loaders' busy time (preparation, summed)"},
    [STRM_FILL_PS] = {"fill_ps", "ps", "infeed: fill start to buffer ready, summed"},
    [STRM_DRAIN_PS] = {"drain_ps", "ps", "outfeed: the host's drain time, summed"},
};

const strm_stat_info *strm_stat_table(void)
{
    return stat_table;
}

uint64_t strm_stat(const strm *s, strm_stat_id id)
{
    assert(id < STRM_NSTAT);
    return s->stat[id];
}
