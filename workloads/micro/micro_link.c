/* micro_link: IPU-Link microbenchmarks — bandwidth of one link and of all links of an IPU,
 * and the latency of a 4-byte global send.
 *
 * A tile's exchange port moves 4 bytes per cycle (5.3 GB/s on Mk2), a link 32 GB/s: so to
 * saturate a connection, twice as many tiles as its bandwidth needs each `gsend` a block to a
 * tile of the neighbour IPU at once, and the blocks are sized so that every connection drains
 * in about 32k cycles (latency then costs under 1%). Bandwidth = bytes / (last word landed -
 * first send), from the exchange trace. Neighbours in one M2000 box are joined by several
 * physical links (2 on Mk2, 4 on a Mk1 card), striped as one connection: "one link" divides
 * the measured connection bandwidth by that count. "All links" sends from the best-connected
 * IPU of a 16-IPU system (or the largest smaller one the preset can wire) to all its
 * neighbours at once: on Mk2 every IPU of the 2x2 torus of boxes has all 10 links wired; on
 * the Mk1 ladder an end IPU has 7, an inner one 10. Latency: a ping-pong (micro_pp.c) between
 * tile 0 of IPU 0 and tile 0 of IPU 1, 16 round trips of gsend + sync external, timed by the
 * first tile's $ccount; one-way latency = (counted cycles - get) / 32 - li - 8 block words -
 * the external sync of 2 IPUs. It is the latency to the first word: tile to link port, the
 * link hop, link port to tile.
 *
 * Left out: the latency growth under load the paper measured (4.0-7.7x), which the link model
 * does not have (docs/fabric.md), and gateway links between PODs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fabric/link.h"
#include "workloads/micro/micro_int.h"

static const char *B = "link";

enum { DRAIN_CYCLES = 32768 };

/* What a sending tile does: send len bytes to dst (ipu << 16 | tile); len 0: nothing. */
typedef struct lsend {
    uint32_t ipu, tile;
    uint32_t dst, len;
} lsend;

typedef struct lplan {
    lsend *s;
    size_t n;
    uint32_t ent; /* address of a tile's two words */
} lplan;

static void lsetup(eng *g, void *ctx)
{
    const lplan *p = ctx;
    for (size_t i = 0; i < p->n; i++) {
        const lsend *s = &p->s[i];
        micro_wr32(g, s->ipu, s->tile, p->ent + 0, s->dst);
        micro_wr32(g, s->ipu, s->tile, p->ent + 4, s->len);
    }
}

/* Run the plan on nipus x ntiles; every tile sends from and receives into one buffer of
 * maxlen bytes below its entry. */
static int lrun(const mach *m, const micro_cfg *cfg, lplan *p, uint32_t nipus, uint32_t ntiles,
                uint32_t maxlen, micro_run *r, err *e)
{
    p->ent = (m->sram_bytes - 16) & ~15u;
    uint32_t buf = (p->ent - maxlen) & ~15u;
    txt s = {0};
    txt_printf(&s,
               "main:   li      r1, %u\n"
               "        li      r4, %u\n"
               "        ld32    r2, [r1+0]\n"
               "        ld32    r3, [r1+4]\n"
               "        brz     r3, a\n"
               "        gsend   r4, r3, r2, r4\n"
               "a:      sync    external\n"
               "        halt\n",
               p->ent, buf);
    char *text = txt_take(&s);
    micro_prog pr = {.src = text,
                     .nipus = nipus,
                     .ntiles = ntiles,
                     .reserve = maxlen + 32,
                     .setup = lsetup,
                     .ctx = p};
    int rc = micro_run_prog(m, &pr, cfg, r, e);
    free(text);
    return rc;
}

/* Bytes / (last end - first send) over the trace, in B/s. */
static double trace_bw(const mach *m, const micro_run *r)
{
    uint64_t lo = UINT64_MAX, hi = 0, bytes = 0;
    for (size_t i = 0; i < r->ntr; i++) {
        lo = r->tr[i].send < lo ? r->tr[i].send : lo;
        hi = r->tr[i].end > hi ? r->tr[i].end : hi;
        bytes += r->tr[i].bytes;
    }
    return hi > lo ? (double)bytes / (double)(hi - lo) * (double)m->clock_hz : NAN;
}

/* Tiles (twice what the bandwidth needs) and bytes per tile to drain bw in DRAIN_CYCLES. */
static void size_flows(const mach *m, double bw, uint32_t *k, uint32_t *len)
{
    double tile_bw = (double)m->xchg_bytes_per_cycle * (double)m->clock_hz;
    *k = 2 * (uint32_t)ceil(bw / tile_bw);
    *len = 4 * (uint32_t)(DRAIN_CYCLES * bw / (double)m->clock_hz / *k / 4);
    if (*len < 4) /* a link so slow that one word takes longer than DRAIN_CYCLES */
        *len = 4;
}

static int one_link(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    mach m2 = *m;
    m2.nipus = 2;
    link_net *net = link_net_new(&m2, e);
    if (!net)
        return e->status;
    uint32_t l = link_between(net, 0, 1);
    if (l == UINT32_MAX) {
        link_net_free(net);
        return err_set(e, ERR_INPUT, "link: IPUs 0 and 1 of a 2-IPU %s system are not wired",
                       m->name);
    }
    link_info li = *link_get(net, l);
    link_net_free(net);

    uint32_t k, len;
    size_flows(m, (double)li.bytes_per_s, &k, &len);
    lplan p = {xcalloc(k, sizeof(lsend)), k, 0};
    for (uint32_t i = 0; i < k; i++)
        p.s[i] = (lsend){0, i, 1u << 16 | i, len};
    micro_run r;
    int rc = lrun(m, cfg, &p, 2, k, len, &r, e);
    free(p.s);
    if (rc == ERR_OK && r.ntr != k)
        rc = err_set(e, ERR_INPUT, "link: %zu streams delivered, expected %u", r.ntr, k);
    if (rc == ERR_OK)
        micro_add(t, B, "GB/s", trace_bw(m, &r) / li.nphys / 1e9, micro_implied_link(m) / 1e9,
                  micro_published_for(m).link / 1e9,
                  "IPU-Link bw, one link (IPU 0->1 over %u links, %u tiles)", li.nphys, k);
    micro_run_free(&r);
    return rc;
}

/* Ping-pong between tile 0 of IPU 0 and tile 0 of IPU 1 (one tile per IPU): gsend, sync
 * external; the fixed cost subtracted is the external sync of 2 IPUs. */
static int link_latency(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    mach m2 = *m;
    m2.nipus = 2;
    const micro_pair pair = {0, 0, 1, 0};
    double lat;
    int rc = micro_pingpong(m, cfg, &pair, 1, 2, 1, mach_sync_external(&m2), B, &lat, e);
    if (rc == ERR_OK)
        micro_add(t, B, "cycles", lat, micro_implied_link_latency(m), NAN,
                  "IPU-Link latency, ping-pong IPU 0 <-> 1 (gsend)");
    return rc;
}

static int all_links(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    /* 16 IPUs (all 10 links wired on Mk2); a smaller system if the preset cannot build it */
    mach mn = *m;
    link_net *net = NULL;
    for (uint32_t n = 16; n >= 2 && !net; n /= 2) {
        mn.nipus = n;
        net = link_net_new(&mn, e);
    }
    if (!net)
        return e->status;
    err_clear(e);
    uint32_t src = 0;
    for (uint32_t i = 1; i < link_nipus(net); i++)
        if (link_ipu_bandwidth(net, i) > link_ipu_bandwidth(net, src))
            src = i;
    double implied = (double)link_ipu_bandwidth(net, src);
    lplan p = {NULL, 0, 0};
    uint32_t ntiles = 0, maxlen = 0, nb = 0, nphys = 0;
    int rc = ERR_OK;
    for (uint32_t l = 0; l < link_count(net) && rc == ERR_OK; l++) {
        const link_info *li = link_get(net, l);
        if (li->src != src || li->kind != LINK_IPU)
            continue;
        uint32_t k, len;
        size_flows(m, (double)li->bytes_per_s, &k, &len);
        p.s = xrealloc(p.s, (p.n + k) * sizeof *p.s);
        for (uint32_t i = 0; i < k; i++, ntiles++)
            p.s[p.n++] = (lsend){src, ntiles, li->dst << 16 | ntiles, len};
        maxlen = len > maxlen ? len : maxlen;
        nb++;
        nphys += li->nphys;
    }
    link_net_free(net);
    micro_run r = {0};
    if (rc == ERR_OK)
        rc = lrun(m, cfg, &p, mn.nipus, ntiles, maxlen, &r, e);
    free(p.s);
    if (rc == ERR_OK && r.ntr != ntiles)
        rc = err_set(e, ERR_INPUT, "link: %zu streams delivered, expected %u", r.ntr, ntiles);
    if (rc == ERR_OK)
        micro_add(t, B, "GB/s", trace_bw(m, &r) / 1e9, implied / 1e9,
                  micro_published_for(m).link_ipu / 1e9,
                  "IPU-Link bw, all %u links of IPU %u (to %u IPUs)", nphys, src, nb);
    micro_run_free(&r);
    return rc;
}

int micro_link(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    int rc = one_link(m, cfg, t, e);
    if (rc == ERR_OK)
        rc = link_latency(m, cfg, t, e);
    return rc == ERR_OK ? all_links(m, cfg, t, e) : rc;
}
