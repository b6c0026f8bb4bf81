/* sim: a SystemC-style discrete-event kernel with integer picosecond time, the one timeline
 * of a system's pending time. It models what the IEEE 1666 scheduler does for method
 * processes: the evaluate / delta-notification cycle, delta and timed event notification,
 * static and timed dynamic (next_trigger) sensitivity, and named modules with interface ports
 * (sc_port<IF>) checked at elaboration. Underneath sits a Redis-ae-style callback scheduler:
 * a binary heap of callbacks keyed on (time, sequence number); an event's timed notification
 * replaced by an earlier one is cancelled lazily (marked, dropped when it surfaces). It leaves
 * out what no model uses: threads (SC_THREAD/wait), time units, immediate notification,
 * next_trigger on events, hierarchical port binding, channels with an update phase (signals,
 * FIFOs), stopping a run and a delta-loop limit. Everything lives in the `sim` object; no
 * globals. See docs/kernel.md. */
#include "hw/sim.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/text.h"

__extension__ typedef unsigned __int128 u128;

/* ---- Small helpers -------------------------------------------------------------------------- */

/* A growable array of pointers. */
typedef struct vec {
    void **v;
    size_t n, cap;
} vec;

static void vec_push(vec *a, void *p)
{
    a->v = xgrow(a->v, &a->cap, a->n + 1, sizeof *a->v);
    a->v[a->n++] = p;
}

/* ---- Objects -------------------------------------------------------------------------------- */

/* Every kernel-owned object starts with this header; the kernel keeps them in creation order
 * and frees them in sim_free. */
enum { OBJ_MODULE, OBJ_EVENT, OBJ_PROC, OBJ_PORT };

typedef struct obj {
    struct obj *next;
    sim *k;
    char *name; /* full hierarchical name, or NULL */
    int kind;
} obj;

struct sim_module {
    obj h;
};

enum { PEND_NONE, PEND_DELTA, PEND_TIMED };

struct sim_event {
    obj h;
    vec stat;       /* processes statically sensitive to this event */
    int pending;    /* PEND_* */
    sim_time when;  /* PEND_TIMED: when it fires */
    uint64_t timer; /* PEND_TIMED: the callback id */
};

struct sim_proc {
    obj h;
    sim_fn fn;
    void *arg;
    bool runnable;
    bool timed;      /* waits for a next_trigger_time, not for its events */
    bool next_timed; /* next_trigger_time was called during the running activation */
    sim_time next_delay;
};

struct sim_port {
    obj h;
    char *iface;       /* the interface the port wants */
    unsigned flags;    /* SIM_PORT_* */
    char *bound_iface; /* the interface of impl; NULL when not bound */
    const void *impl;  /* the implementation bound to, or NULL */
};

/* ---- The kernel ----------------------------------------------------------------------------- */

/* A heap entry: the key, and the slot holding the callback. Slots give ids a stable home:
 * id = generation << 32 | slot, and the generation changes each time the slot is freed, so an
 * old id does not match a new callback (until one slot has been reused 2^32 times). */
typedef struct hent {
    sim_time t;
    uint64_t seq;
    uint32_t slot;
} hent;

enum { SLOT_FREE, SLOT_PENDING, SLOT_CANCELLED };

typedef struct slot {
    sim_fn fn;
    void *arg;
    uint32_t gen;   /* never 0, so no id is 0 */
    uint32_t state; /* SLOT_* */
    uint32_t next_free;
} slot;

#define NO_SLOT UINT32_MAX

struct sim {
    sim_time now;
    uint64_t seq; /* next sequence number */

    hent *heap;
    size_t nheap, capheap;
    slot *slots;
    uint32_t nslots, capslots, free_slot;

    vec runq; /* runnable processes, run from runq_head in order */
    size_t runq_head;
    vec deltas; /* events with a delta notification */
    sim_proc *current;
    bool need_elab, running;

    obj *objs, *objs_tail;
};

sim *sim_new(void)
{
    sim *k = xcalloc(1, sizeof *k);
    k->free_slot = NO_SLOT;
    return k;
}

void sim_free(sim *k)
{
    if (!k)
        return;
    for (obj *o = k->objs, *next; o; o = next) {
        next = o->next;
        if (o->kind == OBJ_EVENT) {
            free(((sim_event *)o)->stat.v);
        } else if (o->kind == OBJ_PORT) {
            free(((sim_port *)o)->iface);
            free(((sim_port *)o)->bound_iface);
        }
        free(o->name);
        free(o);
    }
    free(k->runq.v);
    free(k->deltas.v);
    free(k->heap);
    free(k->slots);
    free(k);
}

sim_time sim_now(const sim *k)
{
    return k->now;
}

/* "prefix.name", or a copy of name when prefix is NULL; NULL when name is NULL. */
static char *join_name(const char *prefix, const char *name)
{
    if (!name)
        return NULL;
    size_t lp = prefix ? strlen(prefix) + 1 : 0, ln = strlen(name);
    char *s = xmalloc(lp + ln + 1);
    if (prefix) {
        memcpy(s, prefix, lp - 1);
        s[lp - 1] = '.';
    }
    memcpy(s + lp, name, ln + 1);
    return s;
}

static void *obj_new(sim *k, size_t size, int kind, const sim_module *m, const char *name)
{
    obj *o = xcalloc(1, size);
    o->k = k;
    o->kind = kind;
    o->name = join_name(m ? m->h.name : NULL, name);
    if (k->objs_tail)
        k->objs_tail->next = o;
    else
        k->objs = o;
    k->objs_tail = o;
    return o;
}

/* The full name of a kernel object; "" when anonymous. */
static const char *obj_name(const void *p)
{
    const obj *o = p;
    return o->name ? o->name : "";
}

sim_module *sim_module_new(sim *k, sim_module *parent, const char *name)
{
    return obj_new(k, sizeof(sim_module), OBJ_MODULE, parent, name);
}

/* ---- Time ----------------------------------------------------------------------------------- */

sim_time sim_clock_time(sim_clock c, uint64_t cycles)
{
    assert(c.den != 0);
    u128 x = (u128)cycles * c.num / c.den;
    return x > UINT64_MAX ? SIM_FOREVER : (sim_time)x;
}

uint64_t sim_clock_cycles(sim_clock c, sim_time t)
{
    assert(c.num != 0 && c.den != 0);
    /* largest n with floor(n*num/den) <= t  <=>  n*num <= (t+1)*den - 1 */
    u128 x = (((u128)t + 1) * c.den - 1) / c.num;
    return x > UINT64_MAX ? UINT64_MAX : (uint64_t)x;
}

/* ---- Callback heap -------------------------------------------------------------------------- */

static bool hless(const hent *a, const hent *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(sim *k, hent e)
{
    k->heap = xgrow(k->heap, &k->capheap, k->nheap + 1, sizeof *k->heap);
    size_t i = k->nheap++;
    while (i > 0 && hless(&e, &k->heap[(i - 1) / 2])) {
        k->heap[i] = k->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    k->heap[i] = e;
}

static void heap_pop(sim *k)
{
    hent last = k->heap[--k->nheap];
    size_t i = 0, n = k->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && hless(&k->heap[c + 1], &k->heap[c]))
            c++;
        if (!hless(&k->heap[c], &last))
            break;
        k->heap[i] = k->heap[c];
        i = c;
    }
    if (n > 0)
        k->heap[i] = last;
}

static void slot_free(sim *k, uint32_t i)
{
    slot *s = &k->slots[i];
    s->state = SLOT_FREE;
    s->gen = s->gen == UINT32_MAX ? 1 : s->gen + 1;
    s->next_free = k->free_slot;
    k->free_slot = i;
}

/* The earliest live entry, after dropping cancelled ones from the top; NULL if none. */
static const hent *heap_top(sim *k)
{
    while (k->nheap > 0 && k->slots[k->heap[0].slot].state == SLOT_CANCELLED) {
        uint32_t i = k->heap[0].slot;
        heap_pop(k);
        slot_free(k, i);
    }
    return k->nheap > 0 ? &k->heap[0] : NULL;
}

/* Schedule fn(k, arg) at `at`; returns an id (never 0) for cancel. */
static uint64_t schedule(sim *k, sim_time at, sim_fn fn, void *arg)
{
    assert(fn && at >= k->now);
    uint32_t i = k->free_slot;
    if (i != NO_SLOT) {
        k->free_slot = k->slots[i].next_free;
    } else {
        assert(k->nslots < NO_SLOT);
        if (k->nslots == k->capslots) { /* 32-bit ids, so not xgrow's size_t capacity */
            k->capslots = k->capslots ? 2 * k->capslots : 64;
            k->slots = xrealloc(k->slots, k->capslots * sizeof *k->slots);
        }
        i = k->nslots++;
        k->slots[i].gen = 1;
    }
    slot *s = &k->slots[i];
    s->fn = fn;
    s->arg = arg;
    s->state = SLOT_PENDING;
    heap_push(k, (hent){at, k->seq++, i});
    return (uint64_t)s->gen << 32 | i;
}

void sim_schedule_at(sim *k, sim_time at, sim_fn fn, void *arg)
{
    schedule(k, at, fn, arg);
}

/* Cancel the callback `id` if it is still pending (it is marked, and dropped when it reaches
 * the top of the heap); a stale id, of a callback that ran or was cancelled, does nothing. */
static void cancel(sim *k, uint64_t id)
{
    uint32_t i = (uint32_t)id, gen = (uint32_t)(id >> 32);
    if (i < k->nslots && k->slots[i].gen == gen && k->slots[i].state == SLOT_PENDING)
        k->slots[i].state = SLOT_CANCELLED;
}

/* ---- Events and processes ------------------------------------------------------------------- */

static void make_runnable(sim *k, sim_proc *p)
{
    if (p->runnable || p == k->current)
        return;
    p->runnable = true;
    vec_push(&k->runq, p);
}

/* The event happens now: wake the processes statically sensitive to it, but those waiting
 * for a next_trigger_time. */
static void trigger(sim *k, sim_event *e)
{
    for (size_t i = 0; i < e->stat.n; i++) {
        sim_proc *p = e->stat.v[i];
        if (!p->timed)
            make_runnable(k, p);
    }
}

sim_event *sim_event_new(sim *k, sim_module *m, const char *name)
{
    return obj_new(k, sizeof(sim_event), OBJ_EVENT, m, name);
}

bool sim_event_pending(const sim_event *e)
{
    return e->pending != PEND_NONE;
}

void sim_event_notify_delta(sim_event *e)
{
    if (e->pending == PEND_DELTA)
        return;
    if (e->pending == PEND_TIMED) /* a delta notification beats a timed one */
        cancel(e->h.k, e->timer);
    e->pending = PEND_DELTA; /* listed once: nothing takes a delta notification back */
    vec_push(&e->h.k->deltas, e);
}

static void event_fire(sim *k, void *arg)
{
    sim_event *e = arg;
    e->pending = PEND_NONE;
    trigger(k, e);
}

void sim_event_notify_at(sim_event *e, sim_time delay)
{
    sim *k = e->h.k;
    if (delay == 0) {
        sim_event_notify_delta(e);
        return;
    }
    assert(delay <= SIM_FOREVER - k->now);
    sim_time t = k->now + delay;
    if (e->pending == PEND_DELTA || (e->pending == PEND_TIMED && e->when <= t))
        return;
    if (e->pending == PEND_TIMED) /* an earlier timed notification beats a later one */
        cancel(k, e->timer);
    e->pending = PEND_TIMED;
    e->when = t;
    e->timer = schedule(k, t, event_fire, e);
}

sim_proc *sim_method(sim *k, sim_module *m, const char *name, sim_fn fn, void *arg,
                     sim_event *const *sens, size_t nsens, unsigned flags)
{
    assert(fn);
    sim_proc *p = obj_new(k, sizeof *p, OBJ_PROC, m, name);
    p->fn = fn;
    p->arg = arg;
    for (size_t i = 0; i < nsens; i++)
        vec_push(&sens[i]->stat, p);
    if (!(flags & SIM_DONT_INIT))
        make_runnable(k, p);
    return p;
}

void sim_next_trigger_time(sim *k, sim_time delay)
{
    assert(k->current && delay <= SIM_FOREVER - k->now);
    k->current->next_timed = true;
    k->current->next_delay = delay;
}

static void proc_timeout(sim *k, void *arg)
{
    sim_proc *p = arg;
    assert(p->timed);
    p->timed = false;
    make_runnable(k, p);
}

static void run_proc(sim *k, sim_proc *p)
{
    p->runnable = false;
    p->next_timed = false;
    k->current = p;
    p->fn(k, p->arg);
    k->current = NULL;
    p->timed = p->next_timed;
    if (p->timed)
        schedule(k, k->now + p->next_delay, proc_timeout, p);
}

/* ---- Interface ports and elaboration -------------------------------------------------------- */

sim_port *sim_port_new(sim *k, sim_module *m, const char *name, const char *iface, unsigned flags)
{
    assert(iface);
    sim_port *p = obj_new(k, sizeof *p, OBJ_PORT, m, name);
    p->iface = join_name(NULL, iface);
    p->flags = flags;
    k->need_elab = true;
    return p;
}

void sim_port_bind(sim_port *p, const char *iface, const void *impl)
{
    assert(iface && impl);
    free(p->bound_iface);
    p->bound_iface = join_name(NULL, iface);
    p->impl = impl;
    p->h.k->need_elab = true;
}

const void *sim_port_get(const sim_port *p)
{
    return p->impl;
}

/* p's problem, if any, as one line: an interface other than the one p wants, or a required
 * port left unbound. */
static void port_check(const sim_port *p, txt *line)
{
    if (p->bound_iface && strcmp(p->bound_iface, p->iface) != 0)
        txt_printf(line, "port %s wants interface %s but is bound to %s", obj_name(p), p->iface,
                   p->bound_iface);
    else if (!p->impl && !(p->flags & SIM_PORT_OPTIONAL))
        txt_printf(line, "port %s is not bound", obj_name(p));
}

int sim_elaborate(sim *k, err *e)
{
    int nbad = 0;
    for (obj *o = k->objs; o; o = o->next) {
        if (o->kind != OBJ_PORT)
            continue;
        txt line = {0};
        port_check((const sim_port *)o, &line);
        char *s = txt_take(&line);
        if (*s && nbad++ == 0)
            err_set(e, ERR_INPUT, "%s", s);
        else if (*s)
            err_append(e, "%s", s);
        free(s);
    }
    if (nbad)
        return ERR_INPUT;
    k->need_elab = false;
    return ERR_OK;
}

/* ---- The scheduler -------------------------------------------------------------------------- */

/* One delta cycle at the current time. */
static void delta(sim *k)
{
    /* Evaluate: callbacks due now that were scheduled before this delta began (so a zero
     * delay always means "next delta"), then every runnable process. */
    uint64_t limit = k->seq;
    const hent *h;
    while ((h = heap_top(k)) && h->t == k->now && h->seq < limit) {
        uint32_t i = h->slot;
        sim_fn fn = k->slots[i].fn;
        void *arg = k->slots[i].arg;
        heap_pop(k);
        slot_free(k, i); /* before the call: the running callback's id is already stale */
        fn(k, arg);
    }
    while (k->runq_head < k->runq.n)
        run_proc(k, k->runq.v[k->runq_head++]);
    k->runq.n = k->runq_head = 0;

    /* Delta notification: fire events, making processes runnable for the next delta. */
    for (size_t i = 0; i < k->deltas.n; i++) {
        sim_event *e = k->deltas.v[i];
        e->pending = PEND_NONE;
        trigger(k, e);
    }
    k->deltas.n = 0;
}

/* Whether a delta cycle is due at the current time. */
static bool work_now(sim *k)
{
    if (k->runq.n || k->deltas.n)
        return true;
    const hent *h = heap_top(k);
    return h && h->t == k->now;
}

sim_time sim_next_time(sim *k)
{
    if (work_now(k))
        return k->now;
    const hent *h = heap_top(k);
    return h ? h->t : SIM_FOREVER;
}

int sim_run(sim *k, sim_time until)
{
    assert(!k->running); /* sim_run is not reentrant */
    if (k->need_elab && sim_elaborate(k, NULL) != ERR_OK)
        return SIM_ERROR;
    k->running = true;
    int status;
    for (;;) {
        if (!work_now(k)) {
            const hent *h = heap_top(k);
            if (!h || h->t > until) {
                if (until != SIM_FOREVER && until > k->now)
                    k->now = until;
                status = h ? SIM_UNTIL : SIM_IDLE;
                break;
            }
            k->now = h->t;
        } else if (k->now > until) {
            status = SIM_UNTIL;
            break;
        }
        delta(k);
    }
    k->running = false;
    return status;
}
