/* flow: the one max-min fair fluid solver, used by the IPU-Links (link.c) and the host (host/).
 *
 * A set of transfers (flows) runs through shared resources (directed links, ports, memories),
 * each flow crossing a list of them and each resource with a capacity in B/s. Between events
 * the rates are constant and max-min fair: progressive filling raises the rates of all flows
 * not yet fixed together; a flow's rate is fixed when a resource it crosses is saturated or
 * when it reaches its own cap. Events are a flow starting, a flow finishing, and a change of
 * a time-varying resource's capacity. The solver computes every flow's end time at once
 * (analytic: no kernel, no events posted), and reports the rates it decided to each
 * resource's book hook.
 *
 * Arithmetic is exact integers, with three roundings, all stated:
 *   - rates are whole units of 1/FLOW_RATE_PER B/s (below): a progressive-filling step gives
 *     every unfixed flow on a resource at most floor(capacity left / flows not fixed); a
 *     resource whose leftover is then below 1 unit per unfixed flow is full, and all its
 *     unfixed flows are fixed (that leftover stays unused). So k <= 16 equal flows split a
 *     capacity exactly; no result depends on the order of the flows;
 *   - amounts are units x ps (bytes x 10^12 x FLOW_RATE_PER, in 128 bits), so a drain at a
 *     fixed rate is exact; a flow's last interval is rounded up to a whole ps (it ends at the
 *     first ps by which all its bytes have drained), and it holds its rate until then: events
 *     fall on whole ps;
 *   - the book hook gets the rate in B/s rounded up (never above the capacity it was given).
 * Alone on resources of capacity C (and no cap), a flow of B bytes from t ends at
 * t + ceil(B x 10^12 / C) ps. Cost: per event O(F x H + rounds x R) for F active flows of H
 * hops over R resources, rounds <= the distinct bottleneck levels. */
#ifndef IPUSIM_FLOW_H
#define IPUSIM_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "hw/sim.h"

/* The solver's rate unit is 1/FLOW_RATE_PER B/s: 720720 = lcm(1..16), so a capacity in whole
 * B/s splits exactly among up to 16 flows (and any count that divides 720720). Capacities and
 * caps above UINT64_MAX / 720720 B/s (25.6 TB/s) count as that much. On random link traffic
 * (up to 60 transfers on 4-64 IPUs) the ends equal those of the earlier floating-point solver
 * and are ceil(exact) or within 2 ps of it; the difference is the whole-ps event grid. */
#define FLOW_RATE_PER 720720

/* A resource. Constant capacity unless `left` is given. */
typedef struct flow_res {
    uint64_t cap; /* B/s, when left is NULL */
    /* Optional, a resource whose capacity varies over time (earlier bookings, host/): the
     * capacity left at t (never asked before the earliest flow start), and in *next the next
     * time that changes (SIM_FOREVER: never). */
    uint64_t (*left)(void *ctx, sim_time t, sim_time *next);
    /* Optional: called once per interval [a, b) in which the flows of this solve put a total
     * rate > 0 on the resource (intervals of one solve do not overlap, in time order). */
    void (*book)(void *ctx, sim_time a, sim_time b, uint64_t rate);
    void *ctx; /* passed to left and book */
} flow_res;

/* A flow. */
typedef struct flow_xfer {
    sim_time start; /* ps: its first byte may leave */
    uint64_t bytes;
    uint64_t cap;        /* its own rate limit, B/s; 0: none */
    const uint32_t *res; /* the resources it crosses: indices into the solve's array, each at
                            most once; nres may be 0 (then it is limited by its cap only) */
    uint32_t nres;
    sim_time end; /* out: ps when its last byte has left (no latency); start when
                            bytes == 0 */
} flow_xfer;

/* Drain the n flows together over the nr resources, filling each f[i].end and calling the
 * resources' book hooks. A flow with neither resources nor cap, or one that can never get a
 * rate > 0, is a caller's bug (assert). */
void flow_solve(flow_xfer *f, size_t n, const flow_res *r, size_t nr);

#endif
