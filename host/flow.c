/* flow: transfers as fluid flows sharing bandwidth profiles max-min fairly.
 *
 * Models a set of transfers that run at the same time through shared resources (an IPU's
 * PCIe port, a group's host link, a remote memory) as fluids: between events the rates are
 * constant and max-min fair over the capacity that earlier bookings left (progressive
 * filling); events are a flow starting, a flow finishing, and a change in a resource's
 * earlier bookings. Leaves out packets, arbitration granularity and priorities: a real link
 * shares by round robin over packets, which max-min fairness approximates over any interval
 * much longer than a packet. Cost: O(F^2) per event for F flows, fine for the tens of IPUs
 * of one host sync. */
#include "host/prof.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct fstate {
    unsigned __int128 work; /* B/s x ps left to drain */
    uint64_t rate;
    bool done, frozen;
} fstate;

typedef struct rstate {
    host_prof *p;
    uint64_t left;   /* capacity left at this moment, B/s */
    uint64_t booked; /* sum of the active flows' rates */
    uint32_t unfrozen;
} rstate;

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static size_t res_index(rstate *r, size_t *nr, host_prof *p)
{
    for (size_t i = 0; i < *nr; i++)
        if (r[i].p == p)
            return i;
    r[*nr] = (rstate){.p = p};
    return (*nr)++;
}

/* Max-min fair rates at time t for the active flows act[0..na); lowers *next to the first
 * change of a resource's bookings after t. */
static void fair_rates(const host_flow *f, fstate *s, const size_t *act, size_t na, rstate *r,
                       size_t *nr, size_t *ri, sim_time t, sim_time *next)
{
    *nr = 0;
    for (size_t a = 0; a < na; a++) {
        size_t i = act[a];
        s[i].rate = 0;
        s[i].frozen = false;
        for (size_t k = 0; k < f[i].nres; k++) {
            size_t x = res_index(r, nr, f[i].res[k]);
            ri[i * 3 + k] = x;
            r[x].unfrozen++;
        }
    }
    for (size_t x = 0; x < *nr; x++) {
        sim_time nx;
        r[x].left = host_prof_left(r[x].p, t, &nx);
        *next = nx < *next ? nx : *next;
    }
    for (size_t unfrozen = na; unfrozen > 0;) {
        uint64_t inc = UINT64_MAX;
        for (size_t x = 0; x < *nr; x++)
            if (r[x].unfrozen)
                inc = min_u64(inc, r[x].left / r[x].unfrozen);
        for (size_t a = 0; a < na; a++)
            if (!s[act[a]].frozen)
                inc = min_u64(inc, f[act[a]].cap - s[act[a]].rate);
        for (size_t a = 0; a < na; a++) {
            size_t i = act[a];
            if (s[i].frozen)
                continue;
            s[i].rate += inc;
            for (size_t k = 0; k < f[i].nres; k++)
                r[ri[i * 3 + k]].left -= inc;
        }
        /* freeze the flows of saturated resources and those at their cap: at least one */
        for (size_t a = 0; a < na; a++) {
            size_t i = act[a];
            if (s[i].frozen)
                continue;
            bool stop = s[i].rate == f[i].cap;
            for (size_t k = 0; k < f[i].nres && !stop; k++) {
                const rstate *x = &r[ri[i * 3 + k]];
                stop = x->left / x->unfrozen == 0;
            }
            if (stop) {
                s[i].frozen = true;
                unfrozen--;
                for (size_t k = 0; k < f[i].nres; k++)
                    r[ri[i * 3 + k]].unfrozen--;
            }
        }
    }
}

void host_flows_run(host_flow *f, size_t n)
{
    fstate *s = calloc(n ? n : 1, sizeof *s);
    size_t *act = calloc(n ? n : 1, sizeof *act);
    size_t *ri = calloc(n ? 3 * n : 1, sizeof *ri);
    rstate *r = calloc(n ? 3 * n : 1, sizeof *r);
    if (!s || !act || !ri || !r)
        abort();
    size_t left = 0;
    sim_time t = SIM_FOREVER;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < f[i].nres; k++)
            assert(f[i].start >= host_prof_horizon(f[i].res[k]) &&
                   "host: a transfer starts before the retire horizon");
        s[i].work = (unsigned __int128)f[i].bytes * SIM_S;
        f[i].end = f[i].start;
        s[i].done = s[i].work == 0;
        if (!s[i].done) {
            left++;
            t = f[i].start < t ? f[i].start : t;
        }
    }
    while (left > 0) {
        size_t na = 0;
        sim_time next = SIM_FOREVER;
        for (size_t i = 0; i < n; i++) {
            if (s[i].done)
                continue;
            if (f[i].start <= t)
                act[na++] = i;
            else if (f[i].start < next)
                next = f[i].start;
        }
        size_t nr = 0;
        if (na > 0)
            fair_rates(f, s, act, na, r, &nr, ri, t, &next);
        sim_time dt = next == SIM_FOREVER ? SIM_FOREVER : next - t;
        for (size_t a = 0; a < na; a++) {
            const fstate *x = &s[act[a]];
            if (x->rate > 0) {
                unsigned __int128 need = (x->work + x->rate - 1) / x->rate;
                dt = need < dt ? (sim_time)need : dt;
            }
        }
        assert(dt > 0 && dt != SIM_FOREVER);
        for (size_t a = 0; a < na; a++) {
            size_t i = act[a];
            if (s[i].rate == 0)
                continue;
            unsigned __int128 moved = (unsigned __int128)s[i].rate * dt;
            for (size_t k = 0; k < f[i].nres; k++)
                r[ri[i * 3 + k]].booked += s[i].rate;
            if (moved >= s[i].work) {
                s[i].work = 0;
                s[i].done = true;
                f[i].end = t + dt;
                left--;
            } else {
                s[i].work -= moved;
            }
        }
        for (size_t x = 0; x < nr; x++)
            if (r[x].booked)
                host_prof_book(r[x].p, t, t + dt, r[x].booked);
        t += dt;
    }
    free(s);
    free(act);
    free(ri);
    free(r);
}
