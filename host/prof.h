/* prof: bandwidth profiles — how much of a resource's capacity is booked, over time — and
 * fluid flows that book them. Private to host/ (host.c runs its transfers through these).
 *
 * A profile is a capacity (B/s) and a piecewise-constant booked rate: segment i covers
 * [t[i], t[i+1]) at rate used[i], the last segment runs to forever. It starts as one empty
 * segment from `horizon` (0). Booking adds a rate over an interval, splitting segments at its
 * ends and merging neighbours that end up equal, so a profile whose bookings do not overlap
 * stays two segments per booking at most, and retiring drops what lies before a horizon. */
#ifndef IPUSIM_HOST_PROF_H
#define IPUSIM_HOST_PROF_H

#include <stddef.h>
#include <stdint.h>

#include "hw/sim.h"

typedef struct host_prof {
    uint64_t cap;      /* capacity, B/s */
    size_t n, room;    /* segments in use, allocated */
    sim_time *t;       /* segment starts, increasing; t[0] == horizon */
    uint64_t *used;    /* booked rate of each segment, <= cap */
    sim_time busy;     /* ps booked with a rate > 0, since the last host_prof_reset_busy */
} host_prof;

void host_prof_init(host_prof *p, uint64_t cap);
void host_prof_free(host_prof *p);

/* Capacity left at time t (>= horizon), and in *next the end of the segment holding t
 * (SIM_FOREVER for the last one). */
uint64_t host_prof_left(const host_prof *p, sim_time t, sim_time *next);

/* Book `rate` more over [a, b) (a < b, a >= horizon); asserts the capacity holds. Adds to busy
 * the parts of [a, b) that had nothing booked. */
void host_prof_book(host_prof *p, sim_time a, sim_time b, uint64_t rate);

/* Drop the history before t (no later call may look before t). */
void host_prof_retire(host_prof *p, sim_time t);

/* The earliest time a profile may still be asked about. */
sim_time host_prof_horizon(const host_prof *p);

/* ---- Flows (flow.c) ---------------------------------------------------------------------- */

/* One transfer as a fluid flow through up to three resources. */
typedef struct host_flow {
    host_prof *res[3];
    size_t nres;
    uint64_t cap;   /* its own rate limit, B/s (UINT64_MAX: none) */
    uint64_t bytes;
    sim_time start; /* its first byte may leave */
    sim_time end;   /* out: its last byte has left (no latency) */
} host_flow;

/* Drain the n flows together over what earlier bookings left: at every moment the active
 * flows (started, not finished) share the capacity left on each resource max-min fairly
 * (progressive filling, in whole B/s: a resource's leftover below one B/s per flow stays
 * unused), each up to its cap; the rates change only when a flow starts or ends or a
 * resource's bookings change. Books the rates and fills each end. Exact integer arithmetic
 * (amounts in B/s x ps); a flow's last interval is rounded up to a whole ps. */
void host_flows_run(host_flow *f, size_t n);

#endif
