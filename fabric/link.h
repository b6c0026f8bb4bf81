/* link: IPU-Links and the topology between IPUs, and transfers over them with shared bandwidth.
 *
 * A link_net is built from a machine (mach): which IPUs are wired to which, with how many
 * physical links, at what bandwidth and latency. Nodes 0..nipus-1 are the IPUs; systems of
 * several POD64s add one gateway node per box after them (ids nipus..nnodes-1).
 *
 * Wiring (docs/fabric.md, "IPU-Links and topology", gives the reasoning):
 *   "m2000"  boxes of ipus_per_box IPUs, fully connected inside a box; up to 16 boxes form one
 *            POD as a 2-D torus of boxes over IPU-Links (2 boxes: 2x1, 4: 2x2, 8: 4x2, 16: 4x4),
 *            IPU j of a box wired to IPU j of each neighbouring box; several POD64s form a ring
 *            over GW-Links between the boxes' gateways. Sizes: 1, 2, 4 x 2^b up to 64, or 64 x P.
 *   "ladder" Mk1 C2 cards of 2 IPUs: rungs 2k<->2k+1 (on a card), rails 2k<->2k+2 and
 *            2k+1<->2k+3 (between cards, gw_* parameters), no wrap-around. Sizes: 1 or even.
 *
 * A physical connection between two nodes is a pair of directed links, one per direction. A
 * directed link bundles the connection's nphys physical links: its bandwidth is nphys x the
 * per-link bandwidth (traffic to a neighbour is striped over all links to it). Directed link
 * ids are dense, 0..link_count()-1, and carry statistics.
 *
 * Routing is deterministic shortest path by hop count (hop distances by breadth-first search).
 * Where several neighbours of a node u lie one hop closer to dst, the route from src takes the
 * ((src + dst) mod count)-th of them in increasing node id: a fixed rule that spreads the
 * pairs of an all-to-all over the equal-length paths (on a 64-IPU all-to-all it puts 2.7x less
 * on the busiest link than "lowest id first").
 *
 * Transfers (link_transfers) are fluid flows with max-min fair sharing, computed by the one
 * solver of fabric/flow.h; see link_transfers. */
#ifndef IPUSIM_LINK_H
#define IPUSIM_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "hw/machine.h"
#include "hw/sim.h"

typedef struct link_net link_net;

/* What a directed link is. */
typedef enum link_kind {
    LINK_IPU = 0,  /* IPU-Link between two IPUs */
    LINK_PCIE = 1, /* an IPU to its box's gateway (multi-POD systems only) */
    LINK_GW = 2,   /* GW-Link between two gateways (multi-POD systems only) */
} link_kind;

/* One directed link. */
typedef struct link_info {
    uint32_t src, dst; /* node ids */
    uint32_t nphys;    /* physical links bundled in this direction */
    link_kind kind;
    uint64_t bytes_per_s; /* nphys x the bandwidth of one link, one direction */
    sim_time latency;     /* ps, one hop */
} link_info;

/* ---- Topology ---------------------------------------------------------------------------- */

/* Build the network of m->nipus IPUs wired as m->topology says. ERR_INPUT (message names the
 * parameter and the sizes allowed) for an unsupported size or shape, a zero bandwidth, or too
 * few links per IPU for the wiring. */
link_net *link_net_new(const mach *m, err *e);
void link_net_free(link_net *net);

uint32_t link_nipus(const link_net *net);
uint32_t link_nnodes(const link_net *net); /* IPUs + gateways */
uint32_t link_count(const link_net *net);  /* directed links */
const link_info *link_get(const link_net *net, uint32_t id);

/* One line saying how the system is wired, e.g. "m2000: 16 boxes of 4 IPUs, 4x4 torus". */
const char *link_shape(const link_net *net);

/* Neighbours of a node, and the physical links wired at it (outgoing direction, every kind). */
uint32_t link_degree(const link_net *net, uint32_t node);
uint32_t link_phys(const link_net *net, uint32_t node);

/* Sum of the bandwidths of an IPU's outgoing IPU-Links (B/s): what "all links of an IPU" can
 * move at once. A Mk2 IPU with all 10 links wired: 10 x 32 GB/s = 320 GB/s. */
uint64_t link_ipu_bandwidth(const link_net *net, uint32_t ipu);

/* The directed link from node a to node b, or UINT32_MAX when they are not neighbours. */
uint32_t link_between(const link_net *net, uint32_t a, uint32_t b);

/* ---- Routing ----------------------------------------------------------------------------- */

/* The route from src to dst (node ids): writes up to max directed link ids, in order, to out
 * and returns the hop count (0 when src == dst; it may exceed max, then out holds the first
 * max hops). */
size_t link_route(const link_net *net, uint32_t src, uint32_t dst, uint32_t *out, size_t max);

/* Sum of the hop latencies of the route (ps), and its bottleneck bandwidth (B/s; UINT64_MAX
 * when src == dst). */
sim_time link_route_latency(const link_net *net, uint32_t src, uint32_t dst);
uint64_t link_route_bandwidth(const link_net *net, uint32_t src, uint32_t dst);

/* A ring through every IPU, each one a direct neighbour of the next (and the last of the
 * first) where the topology allows: a box-by-box snake over the m2000 torus, up one rail and
 * down the other on a ladder. Writes link_nipus() ids to out (room for that many). Multi-POD
 * systems chain the POD rings; the hops between PODs go through the gateways. */
void link_ring(const link_net *net, uint32_t *out);

/* ---- Transfers ---------------------------------------------------------------------------- */

typedef struct link_xfer {
    uint32_t src_ipu, dst_ipu; /* IPU ids */
    uint64_t bytes;
    sim_time start; /* ps; in: when the first byte may leave */
    sim_time end;   /* ps; out: when the last byte arrives */
} link_xfer;

/* Move n transfers over the network, filling each x[i].end. Analytic: it computes the end
 * times at once and posts nothing on any kernel, so a caller may use any time origin.
 *
 * Model: each transfer is a fluid flow along its route from x[i].start. Active flows share
 * every directed link max-min fairly (fabric/flow.h, the one solver: progressive filling in
 * units of 1/720720 B/s, rates recomputed at every start and every completion, exact integer
 * amounts). A
 * flow's last byte arrives when its bytes have drained at those rates (the last interval
 * rounded up to a whole ps) plus the route's latency (sum of hop latencies), added once:
 * store-and-forward and packet effects are not modelled. Zero-byte transfers arrive at start +
 * latency; a transfer from an IPU to itself arrives at start and uses no link. Results do not
 * depend on the order of the transfers.
 *
 * Statistics (below) accumulate over calls until link_stats_reset. ERR_INPUT for an IPU id out
 * of range (then nothing moved). */
int link_transfers(link_net *net, link_xfer *x, size_t n, err *e);

/* ---- Statistics --------------------------------------------------------------------------- */

uint64_t link_bytes(const link_net *net, uint32_t id);         /* bytes moved over the link */
sim_time link_busy(const link_net *net, uint32_t id);          /* ps with >= 1 flow on it */
uint64_t link_ipu_sent(const link_net *net, uint32_t ipu);     /* bytes of transfers it sent */
uint64_t link_ipu_received(const link_net *net, uint32_t ipu); /* bytes of transfers it got */
void link_stats_reset(link_net *net);

#endif
