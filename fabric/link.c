/* link: IPU-Links, the topology between IPUs, and transfers with shared bandwidth.
 *
 * Models the wiring of an M2000 system (fully connected boxes of 4, a 2-D torus of boxes over
 * IPU-Links in a POD, a ring of PODs over gateway GW-Links) and of Mk1 C2 cards (a ladder),
 * deterministic shortest-path routing, and transfers as fluid flows that share each directed
 * link max-min fairly (the one solver, flow.c), computed analytically: no kernel, no events.
 * Each directed link has a
 * bandwidth and a latency; a route's latency is added once to a flow's drain time.
 *
 * Left out: store-and-forward, packets and link-level flow control (a flow's bytes fill its
 * whole route at once), adaptive or multi-path routing (a pair's route is fixed; traffic to a
 * neighbour is striped evenly over the parallel links to it), the latency growth under load
 * that the paper measured (4-7.7x), link errors, and the host link (host/). The numbers are
 * the preset's; docs/fabric.md says which are published and which assumed. */
#include "fabric/link.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fabric/flow.h"

#define NONE UINT32_MAX

enum {
    POD_BOXES = 16,  /* boxes in one POD (IPU-POD64 = 16 IPU-M2000s) */
    MAX_PODS = 16,   /* PODs joined by GW-Links: up to 1024 Mk2 IPUs */
    TORUS_LINKS = 4, /* links per IPU that leave an M2000: one per torus direction */
    RUNG_LINKS = 4,  /* ladder: links between the two IPUs of a C2 card */
};

struct link_net {
    uint32_t nipus, nnodes, nlinks, cap;
    link_info *links;
    uint32_t *adj_off, *adj; /* outgoing links of node v: adj[adj_off[v] .. adj_off[v+1]),
                                sorted by destination id */
    uint16_t *dist;          /* dist[s * nnodes + v]: hops from s to v (symmetric) */
    uint32_t *ring;          /* link_ring's answer */
    char shape[128];
    uint64_t *lbytes;
    sim_time *lbusy;
    uint64_t *sent, *recv;
};

/* ---- Building the wiring ------------------------------------------------------------------- */

/* Add nphys physical links between nodes a and b (both directions), merging with an existing
 * connection between them. */
static void connect(link_net *net, uint32_t a, uint32_t b, uint32_t nphys, uint64_t bw,
                    uint32_t lat_ns, link_kind kind)
{
    for (uint32_t i = 0; i < net->nlinks; i += 2) {
        link_info *l = &net->links[i];
        if ((l->src == a && l->dst == b) || (l->src == b && l->dst == a)) {
            for (int d = 0; d < 2; d++) {
                l[d].nphys += nphys;
                l[d].bytes_per_s = (uint64_t)l[d].nphys * bw;
            }
            return;
        }
    }
    if (net->nlinks + 2 > net->cap) {
        net->cap = net->cap ? 2 * net->cap : 64;
        net->links = xrealloc(net->links, net->cap * sizeof *net->links);
    }
    link_info l = {a, b, nphys, kind, (uint64_t)nphys * bw, (sim_time)lat_ns * SIM_NS};
    net->links[net->nlinks++] = l;
    l.src = b;
    l.dst = a;
    net->links[net->nlinks++] = l;
}

static bool pow2(uint32_t v)
{
    return v && !(v & (v - 1));
}

/* Box grid of a POD of B boxes (a power of two <= 16): X x Y, as square as possible. */
static void torus_dims(uint32_t B, uint32_t *X, uint32_t *Y)
{
    uint32_t lg = 0;
    while ((1u << lg) < B)
        lg++;
    *Y = 1u << (lg / 2);
    *X = B / *Y;
}

/* An m2000 system's sizes: IPUs a box (fewer below one box), boxes a POD, PODs, the physical
 * links between two IPUs of a box, the POD's torus X x Y. */
typedef struct m2000_dims {
    uint32_t box, boxes, pods, inbox, X, Y;
} m2000_dims;

/* Check m's sizes against the m2000 wiring and fill d; ERR_INPUT naming the rule broken. */
static int m2000_size(const mach *m, m2000_dims *d, err *e)
{
    uint32_t n = m->nipus, box = m->ipus_per_box;
    if (box == 0)
        return err_set(e, ERR_INPUT, "ipus_per_box must be at least 1");
    uint32_t inbox = box > 1 ? (m->links_per_ipu - TORUS_LINKS) / (box - 1) : 0;
    if (box > 1 && (m->links_per_ipu < TORUS_LINKS || inbox == 0))
        return err_set(e, ERR_INPUT,
                       "links_per_ipu = %u is too few for the m2000 wiring: %u leave the box "
                       "and each of the %u peers in a box needs at least one",
                       m->links_per_ipu, TORUS_LINKS, box - 1);
    uint32_t boxes = 1, pods = 1;
    if (n <= box) {
        if (!pow2(n) || (n < box && !pow2(box)))
            return err_set(e, ERR_INPUT,
                           "nipus = %u: an m2000 system below one box (%u IPUs) must be a "
                           "power-of-two part of it",
                           n, box);
        box = n;
    } else if (n % box) {
        return err_set(e, ERR_INPUT, "nipus = %u is not a multiple of ipus_per_box = %u", n, box);
    } else {
        boxes = n / box;
        if (boxes > POD_BOXES) {
            pods = boxes / POD_BOXES;
            if (boxes % POD_BOXES || pods > MAX_PODS)
                return err_set(e, ERR_INPUT,
                               "nipus = %u: m2000 systems beyond one POD are whole PODs of %u "
                               "boxes (%u IPUs), at most %u of them",
                               n, POD_BOXES, POD_BOXES * box, MAX_PODS);
            boxes = POD_BOXES;
        } else if (!pow2(boxes)) {
            return err_set(e, ERR_INPUT,
                           "nipus = %u: an m2000 POD holds 1, 2, 4, 8 or 16 boxes of %u IPUs", n,
                           box);
        }
    }
    *d = (m2000_dims){box, boxes, pods, inbox, 0, 0};
    torus_dims(boxes, &d->X, &d->Y);
    return ERR_OK;
}

/* The IPU-Links: every pair of IPUs in a box, and the boxes of a POD in a torus. */
static void m2000_torus(link_net *net, const mach *m, const m2000_dims *d)
{
    uint32_t box = d->box, X = d->X, Y = d->Y, pod_ipus = d->boxes * box;
    for (uint32_t p = 0; p < d->pods; p++) {
        for (uint32_t b = 0; b < d->boxes; b++) {
            uint32_t base = p * pod_ipus + b * box, x = b % X, y = b / X;
            for (uint32_t i = 0; i < box; i++)
                for (uint32_t j = i + 1; j < box; j++)
                    connect(net, base + i, base + j, d->inbox, m->link_bytes_per_s,
                            m->link_latency_ns, LINK_IPU);
            /* +x and +y neighbours only: each pair of boxes is joined once per direction of
             * the torus, twice when a dimension has 2 boxes (+1 and -1 are the same box). */
            uint32_t nb[2] = {y * X + (x + 1) % X, ((y + 1) % Y) * X + x};
            for (int k = 0; k < 2; k++) {
                if (nb[k] == b)
                    continue;
                for (uint32_t i = 0; i < box; i++)
                    connect(net, base + i, p * pod_ipus + nb[k] * box + i, 1, m->link_bytes_per_s,
                            m->link_latency_ns, LINK_IPU);
            }
        }
    }
}

/* Several PODs: one gateway per box (node n + global box index), wired to its IPUs (PCIe); box
 * b of POD p has a GW-Link to box b of PODs p-1 and p+1 (the "east/west" ports). */
static void m2000_gateways(link_net *net, const mach *m, const m2000_dims *d)
{
    uint32_t n = m->nipus, pods = d->pods, boxes = d->boxes;
    for (uint32_t g = 0; g < pods * boxes; g++) {
        for (uint32_t i = 0; i < d->box; i++)
            connect(net, g * d->box + i, n + g, 1, m->gw_bytes_per_s, 0, LINK_PCIE);
        uint32_t p = g / boxes, b = g % boxes;
        connect(net, n + g, n + ((p + 1) % pods) * boxes + b, 1, m->gw_bytes_per_s,
                m->gw_latency_ns, LINK_GW);
    }
    net->nnodes = n + pods * boxes;
}

static int build_m2000(link_net *net, const mach *m, err *e)
{
    m2000_dims d = {0};
    int rc = m2000_size(m, &d, e);
    if (rc != ERR_OK)
        return rc;
    uint32_t box = d.box, boxes = d.boxes, pods = d.pods, X = d.X, Y = d.Y, pod_ipus = boxes * box;
    m2000_torus(net, m, &d);
    if (pods > 1)
        m2000_gateways(net, m, &d);
    if (pods > 1)
        snprintf(net->shape, sizeof net->shape,
                 "m2000: %u PODs of %u boxes of %u IPUs (%ux%u torus), PODs in a ring over "
                 "GW-Links",
                 pods, boxes, box, X, Y);
    else if (boxes > 1)
        snprintf(net->shape, sizeof net->shape, "m2000: %u boxes of %u IPUs, %ux%u torus", boxes,
                 box, X, Y);
    else
        snprintf(net->shape, sizeof net->shape, "m2000: %u IPU%s of one box, fully connected", box,
                 box > 1 ? "s" : "");
    /* The ring: boxes in a snake over the grid (rows alternate direction; Y is 1 or even, so
     * the last box is a neighbour of the first), IPUs 0..box-1 in even boxes and back down in
     * odd ones, so every step is one hop. */
    uint32_t r = 0;
    for (uint32_t p = 0; p < pods; p++)
        for (uint32_t s = 0; s < boxes; s++) {
            uint32_t y = s / X, x = (y % 2) ? X - 1 - s % X : s % X, b = y * X + x;
            for (uint32_t i = 0; i < box; i++)
                net->ring[r++] = p * pod_ipus + b * box + ((s % 2) ? box - 1 - i : i);
        }
    return ERR_OK;
}

static int build_ladder(link_net *net, const mach *m, err *e)
{
    uint32_t n = m->nipus;
    if (m->ipus_per_box != 2)
        return err_set(e, ERR_INPUT,
                       "the ladder topology has 2 IPUs per card, not "
                       "ipus_per_box = %u",
                       m->ipus_per_box);
    if (n > 1 && n % 2)
        return err_set(e, ERR_INPUT,
                       "nipus = %u: a ladder of 2-IPU cards needs 1 or an even "
                       "number of IPUs",
                       n);
    if (m->links_per_ipu < RUNG_LINKS + 2)
        return err_set(e, ERR_INPUT,
                       "links_per_ipu = %u is too few for the ladder: %u on the "
                       "rung and at least 1 per rail",
                       m->links_per_ipu, RUNG_LINKS);
    uint32_t rail = (m->links_per_ipu - RUNG_LINKS) / 2;
    for (uint32_t k = 0; k + 1 < n; k += 2) {
        connect(net, k, k + 1, RUNG_LINKS, m->link_bytes_per_s, m->link_latency_ns, LINK_IPU);
        if (k + 2 < n) {
            connect(net, k, k + 2, rail, m->gw_bytes_per_s, m->gw_latency_ns, LINK_IPU);
            connect(net, k + 1, k + 3, rail, m->gw_bytes_per_s, m->gw_latency_ns, LINK_IPU);
        }
    }
    snprintf(net->shape, sizeof net->shape, "ladder: %u card%s of 2 IPUs", (n + 1) / 2,
             n > 2 ? "s" : "");
    uint32_t r = 0;
    for (uint32_t k = 0; k < n; k += 2)
        net->ring[r++] = k;
    for (uint32_t k = n - 1 - (n % 2); k < n; k -= 2)
        net->ring[r++] = k; /* odd ids, down */
    return ERR_OK;
}

/* Adjacency (sorted by destination, for the routing tie-break) and all hop distances. */
static void build_routes(link_net *net)
{
    uint32_t V = net->nnodes;
    net->adj_off = xcalloc(V + 1, sizeof *net->adj_off);
    net->adj = xcalloc(net->nlinks, sizeof *net->adj);
    for (uint32_t i = 0; i < net->nlinks; i++)
        net->adj_off[net->links[i].src + 1]++;
    for (uint32_t v = 0; v < V; v++)
        net->adj_off[v + 1] += net->adj_off[v];
    uint32_t *fill = xcalloc(V, sizeof *fill);
    for (uint32_t i = 0; i < net->nlinks; i++) {
        uint32_t s = net->links[i].src, at = net->adj_off[s] + fill[s]++;
        while (at > net->adj_off[s] && net->links[net->adj[at - 1]].dst > net->links[i].dst) {
            net->adj[at] = net->adj[at - 1];
            at--;
        }
        net->adj[at] = i;
    }
    free(fill);
    net->dist = xcalloc((size_t)V * V, sizeof *net->dist);
    uint32_t *queue = xcalloc(V, sizeof *queue);
    for (uint32_t s = 0; s < V; s++) {
        uint16_t *dist = net->dist + (size_t)s * V;
        uint32_t head = 0, tail = 0;
        for (uint32_t v = 0; v < V; v++)
            dist[v] = UINT16_MAX;
        dist[s] = 0;
        queue[tail++] = s;
        while (head < tail) {
            uint32_t u = queue[head++];
            for (uint32_t a = net->adj_off[u]; a < net->adj_off[u + 1]; a++) {
                uint32_t v = net->links[net->adj[a]].dst;
                if (dist[v] == UINT16_MAX) {
                    dist[v] = (uint16_t)(dist[u] + 1);
                    queue[tail++] = v;
                }
            }
        }
    }
    free(queue);
}

link_net *link_net_new(const mach *m, err *e)
{
    if (m->nipus == 0) {
        err_set(e, ERR_INPUT, "nipus must be at least 1");
        return NULL;
    }
    if (m->link_bytes_per_s == 0 || m->gw_bytes_per_s == 0) {
        err_set(e, ERR_INPUT, "%s must be positive",
                m->link_bytes_per_s == 0 ? "link_bytes_per_s" : "gw_bytes_per_s");
        return NULL;
    }
    link_net *net = xcalloc(1, sizeof *net);
    net->nipus = net->nnodes = m->nipus;
    net->ring = xcalloc(m->nipus, sizeof *net->ring);
    int rc;
    if (strcmp(m->topology, "m2000") == 0)
        rc = build_m2000(net, m, e);
    else if (strcmp(m->topology, "ladder") == 0)
        rc = build_ladder(net, m, e);
    else
        rc = err_set(e, ERR_INPUT, "unknown topology '%s' (known: m2000, ladder)", m->topology);
    if (rc != ERR_OK) {
        link_net_free(net);
        return NULL;
    }
    build_routes(net);
    net->lbytes = xcalloc(net->nlinks, sizeof *net->lbytes);
    net->lbusy = xcalloc(net->nlinks, sizeof *net->lbusy);
    net->sent = xcalloc(net->nipus, sizeof *net->sent);
    net->recv = xcalloc(net->nipus, sizeof *net->recv);
    return net;
}

void link_net_free(link_net *net)
{
    if (!net)
        return;
    free(net->links);
    free(net->adj_off);
    free(net->adj);
    free(net->dist);
    free(net->ring);
    free(net->lbytes);
    free(net->lbusy);
    free(net->sent);
    free(net->recv);
    free(net);
}

/* ---- Queries ------------------------------------------------------------------------------- */

uint32_t link_nipus(const link_net *net)
{
    return net->nipus;
}
uint32_t link_nnodes(const link_net *net)
{
    return net->nnodes;
}
uint32_t link_count(const link_net *net)
{
    return net->nlinks;
}
const char *link_shape(const link_net *net)
{
    return net->shape;
}

const link_info *link_get(const link_net *net, uint32_t id)
{
    assert(id < net->nlinks);
    return &net->links[id];
}

uint32_t link_degree(const link_net *net, uint32_t node)
{
    assert(node < net->nnodes);
    return net->adj_off[node + 1] - net->adj_off[node];
}

uint32_t link_phys(const link_net *net, uint32_t node)
{
    uint32_t sum = 0;
    for (uint32_t a = net->adj_off[node]; a < net->adj_off[node + 1]; a++)
        sum += net->links[net->adj[a]].nphys;
    return sum;
}

uint64_t link_ipu_bandwidth(const link_net *net, uint32_t ipu)
{
    assert(ipu < net->nipus);
    uint64_t sum = 0;
    for (uint32_t a = net->adj_off[ipu]; a < net->adj_off[ipu + 1]; a++)
        if (net->links[net->adj[a]].kind == LINK_IPU)
            sum += net->links[net->adj[a]].bytes_per_s;
    return sum;
}

uint32_t link_between(const link_net *net, uint32_t a, uint32_t b)
{
    for (uint32_t i = net->adj_off[a]; i < net->adj_off[a + 1]; i++)
        if (net->links[net->adj[i]].dst == b)
            return net->adj[i];
    return NONE;
}

/* The hop after node u on the route from src to dst: among u's links to a node one hop
 * closer to dst (in destination id order), the ((src + dst) mod count)-th. */
static uint32_t next_hop(const link_net *net, uint32_t src, uint32_t dst, uint32_t u)
{
    const uint16_t *d = net->dist + (size_t)dst * net->nnodes;
    uint32_t cand[64], n = 0;
    for (uint32_t a = net->adj_off[u]; a < net->adj_off[u + 1] && n < 64; a++)
        if (d[net->links[net->adj[a]].dst] + 1 == d[u])
            cand[n++] = net->adj[a];
    assert(n > 0); /* every topology here is connected */
    return cand[(src + dst) % n];
}

size_t link_route(const link_net *net, uint32_t src, uint32_t dst, uint32_t *out, size_t max)
{
    assert(src < net->nnodes && dst < net->nnodes);
    size_t hops = 0;
    for (uint32_t u = src; u != dst; hops++) {
        uint32_t id = next_hop(net, src, dst, u);
        if (hops < max)
            out[hops] = id;
        u = net->links[id].dst;
    }
    return hops;
}

sim_time link_route_latency(const link_net *net, uint32_t src, uint32_t dst)
{
    sim_time lat = 0;
    for (uint32_t u = src; u != dst;) {
        uint32_t id = next_hop(net, src, dst, u);
        lat += net->links[id].latency;
        u = net->links[id].dst;
    }
    return lat;
}

uint64_t link_route_bandwidth(const link_net *net, uint32_t src, uint32_t dst)
{
    uint64_t bw = UINT64_MAX;
    for (uint32_t u = src; u != dst;) {
        uint32_t id = next_hop(net, src, dst, u);
        if (net->links[id].bytes_per_s < bw)
            bw = net->links[id].bytes_per_s;
        u = net->links[id].dst;
    }
    return bw;
}

void link_ring(const link_net *net, uint32_t *out)
{
    memcpy(out, net->ring, net->nipus * sizeof *out);
}

/* ---- Statistics ---------------------------------------------------------------------------- */

uint64_t link_bytes(const link_net *net, uint32_t id)
{
    return net->lbytes[id];
}
sim_time link_busy(const link_net *net, uint32_t id)
{
    return net->lbusy[id];
}
uint64_t link_ipu_sent(const link_net *net, uint32_t ipu)
{
    return net->sent[ipu];
}
uint64_t link_ipu_received(const link_net *net, uint32_t ipu)
{
    return net->recv[ipu];
}

void link_stats_reset(link_net *net)
{
    memset(net->lbytes, 0, net->nlinks * sizeof *net->lbytes);
    memset(net->lbusy, 0, net->nlinks * sizeof *net->lbusy);
    memset(net->sent, 0, net->nipus * sizeof *net->sent);
    memset(net->recv, 0, net->nipus * sizeof *net->recv);
}

/* ---- Transfers: fluid flows through the one solver (flow.h) ------------------------------ */

/* flow_res book hook: a directed link is busy while its flows drain. */
static void book_busy(void *busy, sim_time a, sim_time b, uint64_t rate)
{
    (void)rate;
    *(sim_time *)busy += b - a;
}

int link_transfers(link_net *net, link_xfer *x, size_t n, err *e)
{
    size_t nhops = 0;
    for (size_t i = 0; i < n; i++) {
        if (x[i].src_ipu >= net->nipus || x[i].dst_ipu >= net->nipus)
            return err_set(e, ERR_INPUT,
                           "transfer %zu: IPU %u -> %u, but the system has %u "
                           "IPUs",
                           i, x[i].src_ipu, x[i].dst_ipu, net->nipus);
        nhops += link_route(net, x[i].src_ipu, x[i].dst_ipu, NULL, 0);
    }
    uint32_t *hops = xcalloc(nhops, sizeof *hops);
    flow_xfer *f = xcalloc(n, sizeof *f);
    flow_res *res = xcalloc(net->nlinks, sizeof *res);
    for (uint32_t l = 0; l < net->nlinks; l++)
        res[l] =
            (flow_res){.cap = net->links[l].bytes_per_s, .book = book_busy, .ctx = &net->lbusy[l]};
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = link_route(net, x[i].src_ipu, x[i].dst_ipu, hops + off, nhops - off);
        /* a transfer to the same IPU uses no link: it is done at its start */
        f[i] = (flow_xfer){.start = x[i].start,
                           .bytes = len ? x[i].bytes : 0,
                           .res = hops + off,
                           .nres = (uint32_t)len};
        off += len;
    }
    flow_solve(f, n, res, net->nlinks);
    for (size_t i = 0; i < n; i++) {
        x[i].end = f[i].end + link_route_latency(net, x[i].src_ipu, x[i].dst_ipu);
        for (uint32_t h = 0; h < f[i].nres; h++)
            net->lbytes[f[i].res[h]] += x[i].bytes;
        if (x[i].src_ipu != x[i].dst_ipu) {
            net->sent[x[i].src_ipu] += x[i].bytes;
            net->recv[x[i].dst_ipu] += x[i].bytes;
        }
    }
    free(hops);
    free(f);
    free(res);
    return ERR_OK;
}
