/* prof: bandwidth profiles — how much of a resource's capacity is booked, over time. Private
 * to host/ (host.c runs its transfers through fabric/flow.h over these).
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
    uint64_t cap;   /* capacity, B/s */
    size_t n, room; /* segments in use, allocated */
    sim_time *t;    /* segment starts, increasing; t[0] == horizon */
    uint64_t *used; /* booked rate of each segment, <= cap */
    sim_time busy;  /* ps booked with a rate > 0, since the last host_prof_reset_busy */
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

#endif
