/* prof: piecewise-constant bandwidth bookings of one resource (a host link direction, an IPU's
 * PCIe port, a remote memory).
 *
 * Models what a resource has promised to the transfers booked on it so far: a rate over each
 * interval of time. Leaves out everything about how bytes really move (packets, credits,
 * arbitration): a booking is a constant rate over an interval, and host.c decides the rates.
 * Segments sit in two sorted arrays; a lookup is a binary search, a booking inserts at most
 * two boundaries and merges equal neighbours. */
#include "host/prof.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

/* Room for `need` segments in both arrays (they share one capacity). */
static void grow(host_prof *p, size_t need)
{
    size_t room = p->room;
    p->t = xgrow(p->t, &room, need, sizeof *p->t);
    p->used = xgrow(p->used, &p->room, need, sizeof *p->used);
}

void host_prof_init(host_prof *p, uint64_t cap)
{
    memset(p, 0, sizeof *p);
    p->cap = cap;
    grow(p, 16);
    p->n = 1;
    p->t[0] = 0;
    p->used[0] = 0;
}

void host_prof_free(host_prof *p)
{
    free(p->t);
    free(p->used);
    memset(p, 0, sizeof *p);
}

sim_time host_prof_horizon(const host_prof *p)
{
    return p->t[0];
}

/* Index of the segment holding t (t >= t[0]): the last i with t[i] <= t. */
static size_t find(const host_prof *p, sim_time t)
{
    assert(t >= p->t[0] && "host: a transfer starts before the retire horizon");
    size_t lo = 0, hi = p->n; /* t[lo] <= t < t[hi] (t[n] = forever) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->t[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

uint64_t host_prof_left(const host_prof *p, sim_time t, sim_time *next)
{
    size_t i = find(p, t);
    *next = i + 1 < p->n ? p->t[i + 1] : SIM_FOREVER;
    return p->cap - p->used[i];
}

/* Make t a segment boundary; returns the index of the segment starting at t. */
static size_t split(host_prof *p, sim_time t)
{
    size_t i = find(p, t);
    if (p->t[i] == t)
        return i;
    grow(p, p->n + 1);
    memmove(p->t + i + 2, p->t + i + 1, (p->n - i - 1) * sizeof *p->t);
    memmove(p->used + i + 2, p->used + i + 1, (p->n - i - 1) * sizeof *p->used);
    p->t[i + 1] = t;
    p->used[i + 1] = p->used[i];
    p->n++;
    return i + 1;
}

/* Merge segments [lo, hi] with equal neighbours (lo >= 1 is compared with lo - 1). */
static void merge(host_prof *p, size_t lo, size_t hi)
{
    if (lo == 0)
        lo = 1;
    size_t w = lo; /* next slot to write */
    for (size_t r = lo; r < p->n; r++) {
        if (r <= hi + 1 && p->used[r] == p->used[w - 1])
            continue; /* same rate as the segment before: drop the boundary */
        p->t[w] = p->t[r];
        p->used[w] = p->used[r];
        w++;
    }
    p->n = w;
}

void host_prof_book(host_prof *p, sim_time a, sim_time b, uint64_t rate)
{
    assert(a < b && b != SIM_FOREVER);
    if (rate == 0)
        return;
    size_t i = split(p, a);
    size_t j = split(p, b); /* segments i .. j-1 cover [a, b) exactly */
    for (size_t s = i; s < j; s++) {
        assert(p->used[s] <= p->cap - rate && "host: a resource is booked over its capacity");
        if (p->used[s] == 0)
            p->busy += p->t[s + 1] - p->t[s];
        p->used[s] += rate;
    }
    merge(p, i, j);
}

void host_prof_retire(host_prof *p, sim_time t)
{
    if (t <= p->t[0])
        return;
    size_t i = find(p, t); /* keep segment i, starting it at t */
    memmove(p->t, p->t + i, (p->n - i) * sizeof *p->t);
    memmove(p->used, p->used + i, (p->n - i) * sizeof *p->used);
    p->n -= i;
    p->t[0] = t;
}
