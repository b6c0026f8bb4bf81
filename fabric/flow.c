/* flow: transfers as fluid flows sharing resources max-min fairly, in exact integers.
 *
 * Models transfers that run at the same time through shared resources (the directed
 * IPU-Links of a route; an IPU's PCIe port, a host link, a remote memory) as fluids: between
 * events every rate is constant and max-min fair (progressive filling); an event is a flow
 * starting or finishing or a resource's capacity changing. Leaves out packets, arbitration
 * granularity and priorities: a real link shares by round robin over packets, which max-min
 * fairness approximates over any interval much longer than a packet. Rounding: see flow.h.
 *
 * Progressive filling runs as a level: every flow not yet fixed has the same rate L, so a
 * round raises L by the smallest step that fills a resource or reaches a cap, then fixes the
 * flows concerned. The flows of each resource are listed once per event, so a round costs the
 * resources still in use plus the flows it fixes. */
#include "fabric/flow.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/num.h"

typedef unsigned __int128 u128;

/* Rates inside the solver are in units of 1/PER B/s (see flow.h); MAX_BPS, the most a
 * capacity or cap may be in B/s, keeps them within 64 bits. */
#define PER ((uint64_t)FLOW_RATE_PER)
#define MAX_BPS (UINT64_MAX / PER)

/* B/s to solver units, saturating at MAX_BPS. */
static uint64_t units(uint64_t bps)
{
    return (bps < MAX_BPS ? bps : MAX_BPS) * PER;
}

typedef struct fstate {
    u128 work;     /* rate units x ps left to drain */
    uint64_t cap;  /* UINT64_MAX: none */
    uint64_t rate; /* this event's rate */
    bool done, frozen;
} fstate;

typedef struct rstate {
    uint64_t left;   /* capacity left at this level, rate units */
    uint64_t booked; /* sum of the rates on it during this event */
    uint32_t unf;    /* flows on it not yet fixed (then, while listing: how many listed) */
    uint32_t off, n; /* its flows: on[off .. off + n) in index order */
    bool seen;
} rstate;

typedef struct capkey {
    uint64_t cap;
    size_t i;
} capkey;

typedef struct solve {
    flow_xfer *f;
    const flow_res *r;
    fstate *s;
    rstate *rs;
    size_t *act, na;       /* active flows, by index */
    uint32_t *touched, nt; /* resources the active flows cross */
    uint32_t *live, nl;    /* fair_rates: those of them with flows still filling */
    uint32_t *sat, ns;     /* fair_rates: those of them full at this level */
    size_t *on;            /* per resource, its active flows */
    capkey *capl;          /* active capped flows by (cap, index) */
} solve;

static int cmp_cap(const void *a, const void *b)
{
    const capkey *p = a, *q = b;
    if (p->cap != q->cap)
        return p->cap < q->cap ? -1 : 1;
    return (p->i > q->i) - (p->i < q->i);
}

/* The resources of the active flows, their capacity left at t (lowering *next to the next
 * change), and per resource the list of its active flows in index order. */
static void list_resources(solve *v, sim_time t, sim_time *next)
{
    v->nt = 0;
    for (size_t a = 0; a < v->na; a++) {
        const flow_xfer *f = &v->f[v->act[a]];
        for (uint32_t k = 0; k < f->nres; k++) {
            rstate *x = &v->rs[f->res[k]];
            if (!x->seen) {
                *x = (rstate){.seen = true};
                v->touched[v->nt++] = f->res[k];
            }
            x->n++;
        }
    }
    uint32_t at = 0;
    for (uint32_t j = 0; j < v->nt; j++) {
        uint32_t id = v->touched[j];
        rstate *x = &v->rs[id];
        x->off = at;
        at += x->n;
        x->unf = 0;
        sim_time nx = SIM_FOREVER;
        x->left = units(v->r[id].left ? v->r[id].left(v->r[id].ctx, t, &nx) : v->r[id].cap);
        *next = nx < *next ? nx : *next;
    }
    for (size_t a = 0; a < v->na; a++) {
        const flow_xfer *f = &v->f[v->act[a]];
        for (uint32_t k = 0; k < f->nres; k++) {
            rstate *x = &v->rs[f->res[k]];
            v->on[x->off + x->unf++] = v->act[a];
        }
    }
}

/* Fix flow i's rate at L (once); returns 1 when it was still filling. */
static size_t freeze(solve *v, size_t i, uint64_t L)
{
    if (v->s[i].frozen)
        return 0;
    v->s[i].frozen = true;
    v->s[i].rate = L;
    for (uint32_t k = 0; k < v->f[i].nres; k++)
        v->rs[v->f[i].res[k]].unf--;
    return 1;
}

/* One fixing pass at level L: the flows of the full resources (v->sat) and those at their
 * cap. Returns how many it fixed. */
static size_t fix(solve *v, uint64_t L, size_t capfrom, size_t ncap)
{
    size_t fixed = 0;
    for (uint32_t j = 0; j < v->ns; j++) {
        const rstate *x = &v->rs[v->sat[j]];
        for (uint32_t q = x->off; q < x->off + x->n; q++)
            fixed += freeze(v, v->on[q], L);
    }
    for (size_t q = capfrom; q < ncap && v->capl[q].cap == L; q++)
        fixed += freeze(v, v->capl[q].i, L);
    return fixed;
}

/* Max-min fair rates of the active flows at time t; lowers *next to the first change of a
 * resource's capacity after t. */
static void fair_rates(solve *v, sim_time t, sim_time *next)
{
    list_resources(v, t, next);
    size_t ncap = 0;
    for (size_t a = 0; a < v->na; a++) {
        fstate *s = &v->s[v->act[a]];
        s->frozen = false;
        s->rate = 0;
        if (s->cap != UINT64_MAX)
            v->capl[ncap++] = (capkey){s->cap, v->act[a]};
    }
    qsort(v->capl, ncap, sizeof *v->capl, cmp_cap);
    uint64_t L = 0;
    size_t capfrom = 0;
    v->nl = v->nt;
    for (uint32_t j = 0; j < v->nt; j++)
        v->live[j] = v->touched[j];
    for (size_t unfrozen = v->na; unfrozen > 0;) {
        uint64_t inc = UINT64_MAX;
        const rstate *m = NULL; /* the smallest left / unf, compared without dividing */
        for (uint32_t j = 0; j < v->nl; j++) {
            const rstate *x = &v->rs[v->live[j]];
            if (!m || (u128)x->left * m->unf < (u128)m->left * x->unf)
                m = x;
        }
        if (m)
            inc = m->left / m->unf;
        while (capfrom < ncap && v->s[v->capl[capfrom].i].frozen)
            capfrom++;
        if (capfrom < ncap)
            inc = min_u64(inc, v->capl[capfrom].cap - L);
        assert(inc != UINT64_MAX && "flow: a flow with neither a resource nor a cap");
        L += inc;
        v->ns = 0;
        for (uint32_t j = 0; j < v->nl; j++) {
            rstate *x = &v->rs[v->live[j]];
            x->left -= inc * x->unf;
            if (x->left < x->unf)
                v->sat[v->ns++] = v->live[j];
        }
        size_t fixed = fix(v, L, capfrom, ncap);
        assert(fixed > 0);
        unfrozen -= fixed;
        uint32_t keep = 0;
        for (uint32_t j = 0; j < v->nl; j++)
            if (v->rs[v->live[j]].unf)
                v->live[keep++] = v->live[j];
        v->nl = keep;
    }
}

/* Drain the active flows at their rates for up to dt ps (shortened to the first to finish);
 * books the resources. Returns the interval's length. */
static sim_time drain(solve *v, sim_time t, sim_time dt, size_t *left)
{
    for (size_t a = 0; a < v->na; a++) {
        const fstate *s = &v->s[v->act[a]];
        if (s->rate > 0) {
            u128 need = (s->work + s->rate - 1) / s->rate;
            dt = need < dt ? (sim_time)need : dt;
        }
    }
    assert(dt > 0 && dt != SIM_FOREVER && "flow: no flow can ever finish");
    for (size_t a = 0; a < v->na; a++) {
        size_t i = v->act[a];
        fstate *s = &v->s[i];
        if (s->rate == 0)
            continue;
        for (uint32_t k = 0; k < v->f[i].nres; k++)
            v->rs[v->f[i].res[k]].booked += s->rate;
        u128 moved = (u128)s->rate * dt;
        if (moved >= s->work) {
            s->work = 0;
            s->done = true;
            v->f[i].end = t + dt;
            (*left)--;
        } else {
            s->work -= moved;
        }
    }
    for (uint32_t j = 0; j < v->nt; j++) {
        uint32_t id = v->touched[j];
        rstate *x = &v->rs[id];
        if (x->booked && v->r[id].book)
            v->r[id].book(v->r[id].ctx, t, t + dt, x->booked / PER + (x->booked % PER != 0));
        x->seen = false;
    }
    return dt;
}

void flow_solve(flow_xfer *f, size_t n, const flow_res *r, size_t nr)
{
    size_t nlinks = 0;
    for (size_t i = 0; i < n; i++)
        nlinks += f[i].nres;
    solve v = {.f = f, .r = r};
    v.s = xcalloc(n, sizeof *v.s);
    v.rs = xcalloc(nr, sizeof *v.rs);
    v.act = xcalloc(n, sizeof *v.act);
    v.touched = xcalloc(nr, sizeof *v.touched);
    v.live = xcalloc(nr, sizeof *v.live);
    v.sat = xcalloc(nr, sizeof *v.sat);
    v.on = xcalloc(nlinks, sizeof *v.on);
    v.capl = xcalloc(n, sizeof *v.capl);
    size_t left = 0;
    sim_time t = SIM_FOREVER;
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < f[i].nres; k++)
            assert(f[i].res[k] < nr);
        v.s[i] = (fstate){.work = (u128)f[i].bytes * SIM_S * PER,
                          .cap = f[i].cap ? units(f[i].cap) : UINT64_MAX};
        f[i].end = f[i].start;
        v.s[i].done = f[i].bytes == 0;
        if (!v.s[i].done) {
            left++;
            t = f[i].start < t ? f[i].start : t;
        }
    }
    while (left > 0) {
        sim_time next = SIM_FOREVER;
        v.na = 0;
        for (size_t i = 0; i < n; i++) {
            if (v.s[i].done)
                continue;
            if (f[i].start <= t)
                v.act[v.na++] = i;
            else if (f[i].start < next)
                next = f[i].start;
        }
        v.nt = 0;
        if (v.na > 0)
            fair_rates(&v, t, &next);
        t += drain(&v, t, next == SIM_FOREVER ? SIM_FOREVER : next - t, &left);
    }
    free(v.s);
    free(v.rs);
    free(v.act);
    free(v.touched);
    free(v.live);
    free(v.sat);
    free(v.on);
    free(v.capl);
}
