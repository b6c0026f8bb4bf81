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
 * receiver is occupied from the first word's landing to the last's. Left out: exchange-bus
 * contention between senders of one IPU (the compiled schedule avoids it), congestion growth
 * of on-chip latency (+24% under full load in the paper), and link packetisation. */
#include "fabric/xchg.h"

#include <stdlib.h>

#include "fabric/link.h"
#include "hw/sim.h"

struct xchg_sys {
    mach m;
    link_net *net;
};

uint32_t xchg_column(const mach *m, uint32_t tile)
{
    return tile / m->tiles_per_column;
}

uint32_t xchg_row(const mach *m, uint32_t tile)
{
    return (tile % m->tiles_per_column) / m->tiles_per_supertile;
}

static uint32_t absdiff(uint32_t a, uint32_t b)
{
    return a > b ? a - b : b - a;
}

uint32_t xchg_latency(const mach *m, uint32_t src, uint32_t dst)
{
    uint32_t dc = absdiff(xchg_column(m, src), xchg_column(m, dst));
    uint32_t dr = absdiff(xchg_row(m, src), xchg_row(m, dst));
    return m->xchg_base + m->xchg_per_supertile * dr + m->xchg_per_column * dc +
           (dc ? m->xchg_turn : 0);
}

uint64_t xchg_words(const mach *m, uint64_t bytes)
{
    uint64_t bpc = m->xchg_bytes_per_cycle ? m->xchg_bytes_per_cycle : 4;
    return (bytes + bpc - 1) / bpc;
}

static void onchip(void *ctx, eng_stream *s, size_t n)
{
    const xchg_sys *x = ctx;
    for (size_t i = 0; i < n; i++) {
        s[i].arrive = s[i].send + xchg_latency(&x->m, s[i].src_tile, s[i].dst_tile);
        s[i].end = s[i].arrive + xchg_words(&x->m, s[i].bytes);
    }
}

static int global(void *ctx, sim *k, eng_stream *s, size_t n, err *e)
{
    (void)k; /* IPUs run ahead of each other between external syncs: the link model is
                analytic, so each delivery's times are computed on their own, from cycle 0 */
    xchg_sys *x = ctx;
    link_xfer *lx = calloc(n ? n : 1, sizeof *lx);
    if (!lx)
        return err_set(e, ERR_INPUT, "out of host memory for the link model");
    sim_clock clk = sim_clock_hz(x->m.clock_hz);
    for (size_t i = 0; i < n; i++) {
        lx[i].src_ipu = s[i].src_ipu;
        lx[i].dst_ipu = s[i].dst_ipu;
        lx[i].bytes = s[i].bytes;
        lx[i].start = sim_clock_time(clk, s[i].send + x->m.xchg_base);
    }
    int rc = link_transfers(x->net, lx, n, e);
    for (size_t i = 0; rc == ERR_OK && i < n; i++) {
        /* first cycle at or after the last byte's arrival, then the hop to the tile */
        uint64_t c = sim_clock_cycles(clk, lx[i].end);
        if (sim_clock_time(clk, c) < lx[i].end)
            c++;
        uint64_t words = xchg_words(&x->m, s[i].bytes);
        sim_time lat = link_route_latency(x->net, s[i].src_ipu, s[i].dst_ipu);
        uint64_t lat_c = sim_clock_cycles(clk, lat);
        if (sim_clock_time(clk, lat_c) < lat)
            lat_c++;
        s[i].arrive = s[i].send + 2 * (uint64_t)x->m.xchg_base + lat_c;
        s[i].end = c + x->m.xchg_base;
        if (s[i].end < s[i].arrive + words)
            s[i].end = s[i].arrive + words;
    }
    free(lx);
    return rc;
}

xchg_sys *xchg_sys_new(const mach *m, err *e)
{
    xchg_sys *x = calloc(1, sizeof *x);
    if (!x) {
        err_set(e, ERR_INPUT, "out of host memory");
        return NULL;
    }
    x->m = *m;
    if (x->m.tiles_per_column == 0 || x->m.tiles_per_supertile == 0) {
        free(x);
        err_set(e, ERR_INPUT, "machine %s: tiles_per_column and tiles_per_supertile must be "
                              "positive", m->name);
        return NULL;
    }
    x->net = link_net_new(m, e);
    if (!x->net) {
        free(x);
        return NULL;
    }
    return x;
}

void xchg_sys_free(xchg_sys *x)
{
    if (!x)
        return;
    link_net_free(x->net);
    free(x);
}

void xchg_sys_attach(xchg_sys *x, eng *g)
{
    eng_fabric f = {.ctx = x, .onchip = onchip, .global = global};
    eng_set_fabric(g, &f);
}

struct link_net *xchg_sys_links(xchg_sys *x)
{
    return x->net;
}
