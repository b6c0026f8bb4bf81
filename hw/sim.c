/* sim: a SystemC-style discrete-event kernel with integer picosecond time. It models what the
 * IEEE 1666 scheduler does for method processes: the evaluate / update / delta-notification
 * cycle, immediate, delta and timed event notification, static and dynamic (next_trigger)
 * sensitivity, signals with deferred update, bounded FIFOs, and named modules with ports.
 * Underneath sits a Redis-ae-style callback scheduler: a binary heap of callbacks keyed on
 * (time, sequence number), cancelled by id lazily (marked, dropped when they surface).
 * It leaves out threads (SC_THREAD/wait), time units, event and/or lists, writer checks and a
 * delta-loop limit. Everything lives in the `sim` object; no globals. See docs/kernel.md. */
#include "hw/sim.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

__extension__ typedef unsigned __int128 u128;

/* ---- Small helpers ---------------------------------------------------------------------- */

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

/* ---- Objects ---------------------------------------------------------------------------- */

/* Every kernel-owned object starts with this header; the kernel keeps them in creation order
 * and frees them in sim_free. */
enum { OBJ_MODULE, OBJ_EVENT, OBJ_PROC, OBJ_PORT, OBJ_SIGNAL, OBJ_FIFO };

typedef struct obj {
    struct obj *next;
    sim *k;
    char *name; /* full hierarchical name, or NULL */
    int kind;
} obj;

struct sim_module {
    obj h;
    sim_module *parent;
};

enum { PEND_NONE, PEND_DELTA, PEND_TIMED };

struct sim_event {
    obj h;
    vec stat;        /* processes statically sensitive to this event */
    vec dyn;         /* processes whose next_trigger is this event */
    int pending;     /* PEND_* */
    bool in_deltas;  /* listed in k->deltas (maybe stale after a cancel) */
    sim_time when;   /* PEND_TIMED: when it fires */
    uint64_t timer;  /* PEND_TIMED: the callback id */
};

enum { DYN_NONE, DYN_EVENT, DYN_TIME }; /* what a process waits for; NONE = static */

struct sim_proc {
    obj h;
    sim_fn fn;
    void *arg;
    bool runnable;
    int dyn;            /* DYN_*: the trigger installed for the next activation */
    int next;           /* DYN_*: set by next_trigger during the running activation */
    sim_event *next_ev;
    sim_time next_delay;
};

struct sim_port {
    obj h;
    obj *target; /* signal, FIFO or outer port; NULL when unbound */
};

struct sim_signal {
    obj h;
    size_t size;
    bool update_requested;
    sim_event *changed, *posedge, *negedge; /* created on first request */
    unsigned char data[];                   /* current value, then next value */
};

struct sim_fifo {
    obj h;
    size_t depth, esz;
    size_t head, count;         /* ring: oldest element, elements stored */
    size_t readable;            /* elements readers may take in this delta */
    size_t nread, nwritten;     /* reads / writes in this delta */
    bool update_requested;
    sim_event *written, *read;  /* created on first request */
    unsigned char *buf;
};

/* A port sensitivity waiting for sim_elaborate. */
typedef struct port_sens {
    sim_proc *p;
    sim_port *port;
    sim_port_event which;
} port_sens;

/* ---- The kernel ------------------------------------------------------------------------- */

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
    uint32_t gen;       /* never 0, so no id is 0 */
    uint32_t state;     /* SLOT_* */
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
    uint64_t npending; /* scheduled, not run, not cancelled */

    vec runq;        /* runnable processes, run from runq_head in order */
    size_t runq_head;
    vec updates;     /* signals and FIFOs written in this delta */
    vec deltas;      /* events with a delta notification */
    vec port_sens;   /* port_sens records for sim_elaborate */
    sim_proc *current;
    bool stop, need_elab, running;

    uint64_t ndeltas, ncallbacks, nactivations;
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
            free(((sim_event *)o)->dyn.v);
        } else if (o->kind == OBJ_FIFO) {
            free(((sim_fifo *)o)->buf);
        }
        free(o->name);
        free(o);
    }
    for (size_t i = 0; i < k->port_sens.n; i++)
        free(k->port_sens.v[i]);
    free(k->port_sens.v);
    free(k->runq.v);
    free(k->updates.v);
    free(k->deltas.v);
    free(k->heap);
    free(k->slots);
    free(k);
}

sim_time sim_now(const sim *k) { return k->now; }
uint64_t sim_delta_count(const sim *k) { return k->ndeltas; }
uint64_t sim_pending(const sim *k) { return k->npending; }
uint64_t sim_callbacks_run(const sim *k) { return k->ncallbacks; }
uint64_t sim_activations(const sim *k) { return k->nactivations; }
sim_proc *sim_current(const sim *k) { return k->current; }

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

const char *sim_name(const void *p)
{
    const obj *o = p;
    return o->name ? o->name : "";
}

sim_module *sim_module_new(sim *k, sim_module *parent, const char *name)
{
    sim_module *m = obj_new(k, sizeof *m, OBJ_MODULE, parent, name);
    m->parent = parent;
    return m;
}

sim_module *sim_module_parent(const sim_module *m) { return m->parent; }

/* ---- Time ------------------------------------------------------------------------------- */

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

/* ---- Callback heap ---------------------------------------------------------------------- */

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

uint64_t sim_schedule_at(sim *k, sim_time at, sim_fn fn, void *arg)
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
    k->npending++;
    return (uint64_t)s->gen << 32 | i;
}

uint64_t sim_schedule(sim *k, sim_time delay, sim_fn fn, void *arg)
{
    assert(delay <= SIM_FOREVER - k->now);
    return sim_schedule_at(k, k->now + delay, fn, arg);
}

int sim_cancel(sim *k, uint64_t id)
{
    uint32_t i = (uint32_t)id, gen = (uint32_t)(id >> 32);
    if (i >= k->nslots || k->slots[i].gen != gen || k->slots[i].state != SLOT_PENDING)
        return -1;
    k->slots[i].state = SLOT_CANCELLED; /* dropped when it reaches the top of the heap */
    k->npending--;
    return 0;
}

/* ---- Events and processes --------------------------------------------------------------- */

static void make_runnable(sim *k, sim_proc *p)
{
    if (p->runnable || p == k->current)
        return;
    p->runnable = true;
    vec_push(&k->runq, p);
}

/* The event happens now: wake its dynamic waiters and, for processes without a dynamic
 * trigger, its static ones. */
static void trigger(sim *k, sim_event *e)
{
    for (size_t i = 0; i < e->stat.n; i++) {
        sim_proc *p = e->stat.v[i];
        if (p->dyn == DYN_NONE)
            make_runnable(k, p);
    }
    for (size_t i = 0; i < e->dyn.n; i++) {
        sim_proc *p = e->dyn.v[i];
        assert(p->dyn == DYN_EVENT);
        p->dyn = DYN_NONE;
        make_runnable(k, p);
    }
    e->dyn.n = 0;
}

sim_event *sim_event_new(sim *k, sim_module *m, const char *name)
{
    return obj_new(k, sizeof(sim_event), OBJ_EVENT, m, name);
}

void sim_event_cancel(sim_event *e)
{
    if (e->pending == PEND_TIMED)
        sim_cancel(e->h.k, e->timer);
    e->pending = PEND_NONE; /* a stale k->deltas entry is skipped */
}

bool sim_event_pending(const sim_event *e) { return e->pending != PEND_NONE; }

void sim_event_notify(sim_event *e)
{
    sim_event_cancel(e);
    trigger(e->h.k, e);
}

void sim_event_notify_delta(sim_event *e)
{
    if (e->pending == PEND_DELTA)
        return;
    sim_event_cancel(e);
    e->pending = PEND_DELTA;
    if (!e->in_deltas) {
        e->in_deltas = true;
        vec_push(&e->h.k->deltas, e);
    }
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
    sim_event_cancel(e);
    e->pending = PEND_TIMED;
    e->when = t;
    e->timer = sim_schedule_at(k, t, event_fire, e);
}

sim_proc *sim_method(sim *k, sim_module *m, const char *name, sim_fn fn, void *arg,
                     sim_event *const *sens, size_t nsens, unsigned flags)
{
    assert(fn);
    sim_proc *p = obj_new(k, sizeof *p, OBJ_PROC, m, name);
    p->fn = fn;
    p->arg = arg;
    for (size_t i = 0; i < nsens; i++)
        sim_sensitive(p, sens[i]);
    if (!(flags & SIM_DONT_INIT))
        make_runnable(k, p);
    return p;
}

void sim_sensitive(sim_proc *p, sim_event *e) { vec_push(&e->stat, p); }

void sim_next_trigger_event(sim *k, sim_event *e)
{
    assert(k->current && e);
    k->current->next = DYN_EVENT;
    k->current->next_ev = e;
}

void sim_next_trigger_time(sim *k, sim_time delay)
{
    assert(k->current);
    k->current->next = DYN_TIME;
    k->current->next_delay = delay;
}

static void proc_timeout(sim *k, void *arg)
{
    sim_proc *p = arg;
    assert(p->dyn == DYN_TIME);
    p->dyn = DYN_NONE;
    make_runnable(k, p);
}

static void run_proc(sim *k, sim_proc *p)
{
    p->runnable = false;
    p->next = DYN_NONE;
    k->current = p;
    k->nactivations++;
    p->fn(k, p->arg);
    k->current = NULL;
    p->dyn = p->next;
    if (p->next == DYN_EVENT)
        vec_push(&p->next_ev->dyn, p);
    else if (p->next == DYN_TIME)
        sim_schedule(k, p->next_delay, proc_timeout, p);
}

/* ---- Signals ---------------------------------------------------------------------------- */

/* A channel's event, created on first request and named "channel.suffix". */
static sim_event *lazy_event(sim_event **slotp, obj *owner, const char *suffix)
{
    if (!*slotp) {
        *slotp = obj_new(owner->k, sizeof **slotp, OBJ_EVENT, NULL, NULL);
        if (owner->name)
            (*slotp)->h.name = join_name(owner->name, suffix);
    }
    return *slotp;
}

static void request_update(sim *k, obj *o, bool *requested)
{
    if (!*requested) {
        *requested = true;
        vec_push(&k->updates, o);
    }
}

sim_signal *sim_signal_new_sized(sim *k, sim_module *m, const char *name, size_t size,
                                 const void *init)
{
    assert(size > 0);
    sim_signal *s = obj_new(k, sizeof *s + 2 * size, OBJ_SIGNAL, m, name);
    s->size = size;
    if (init) {
        memcpy(s->data, init, size);
        memcpy(s->data + size, init, size);
    }
    return s;
}

sim_signal *sim_signal_new(sim *k, sim_module *m, const char *name, uint64_t init)
{
    return sim_signal_new_sized(k, m, name, sizeof init, &init);
}

size_t sim_signal_size(const sim_signal *s) { return s->size; }
void sim_signal_readv(const sim_signal *s, void *out) { memcpy(out, s->data, s->size); }

void sim_signal_writev(sim_signal *s, const void *in)
{
    memcpy(s->data + s->size, in, s->size);
    request_update(s->h.k, &s->h, &s->update_requested);
}

uint64_t sim_signal_read(const sim_signal *s)
{
    uint64_t v;
    assert(s->size == sizeof v);
    memcpy(&v, s->data, sizeof v);
    return v;
}

void sim_signal_write(sim_signal *s, uint64_t v)
{
    assert(s->size == sizeof v);
    sim_signal_writev(s, &v);
}

sim_event *sim_signal_changed(sim_signal *s) { return lazy_event(&s->changed, &s->h, "changed"); }
sim_event *sim_signal_posedge(sim_signal *s) { return lazy_event(&s->posedge, &s->h, "posedge"); }
sim_event *sim_signal_negedge(sim_signal *s) { return lazy_event(&s->negedge, &s->h, "negedge"); }

static bool nonzero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return true;
    return false;
}

static void signal_update(sim_signal *s)
{
    s->update_requested = false;
    unsigned char *cur = s->data, *nxt = s->data + s->size;
    if (memcmp(cur, nxt, s->size) == 0)
        return;
    bool was = nonzero(cur, s->size);
    memcpy(cur, nxt, s->size);
    bool is = nonzero(cur, s->size);
    if (s->changed)
        sim_event_notify_delta(s->changed);
    if (s->posedge && !was && is)
        sim_event_notify_delta(s->posedge);
    if (s->negedge && was && !is)
        sim_event_notify_delta(s->negedge);
}

/* ---- FIFOs ------------------------------------------------------------------------------ */

sim_fifo *sim_fifo_new(sim *k, sim_module *m, const char *name, size_t depth, size_t elem_size)
{
    assert(depth > 0 && elem_size > 0);
    sim_fifo *f = obj_new(k, sizeof *f, OBJ_FIFO, m, name);
    f->depth = depth;
    f->esz = elem_size;
    f->buf = xcalloc(depth, elem_size);
    return f;
}

/* Slots read in this delta are not free until the update phase (sc_fifo::num_free). */
size_t sim_fifo_num_free(const sim_fifo *f) { return f->depth - f->count - f->nread; }
size_t sim_fifo_num_available(const sim_fifo *f) { return f->readable; }

bool sim_fifo_nb_write(sim_fifo *f, const void *elem)
{
    if (sim_fifo_num_free(f) == 0)
        return false;
    memcpy(f->buf + (f->head + f->count) % f->depth * f->esz, elem, f->esz);
    f->count++;
    f->nwritten++;
    request_update(f->h.k, &f->h, &f->update_requested);
    return true;
}

bool sim_fifo_nb_read(sim_fifo *f, void *elem)
{
    if (f->readable == 0)
        return false;
    memcpy(elem, f->buf + f->head * f->esz, f->esz);
    f->head = (f->head + 1) % f->depth;
    f->count--;
    f->readable--;
    f->nread++;
    request_update(f->h.k, &f->h, &f->update_requested);
    return true;
}

sim_event *sim_fifo_data_written(sim_fifo *f) { return lazy_event(&f->written, &f->h, "written"); }
sim_event *sim_fifo_data_read(sim_fifo *f) { return lazy_event(&f->read, &f->h, "read"); }

static void fifo_update(sim_fifo *f)
{
    f->update_requested = false;
    if (f->nread && f->read)
        sim_event_notify_delta(f->read);
    if (f->nwritten && f->written)
        sim_event_notify_delta(f->written);
    f->readable = f->count;
    f->nread = f->nwritten = 0;
}

/* ---- Ports and elaboration -------------------------------------------------------------- */

sim_port *sim_port_new(sim *k, sim_module *m, const char *name)
{
    k->need_elab = true;
    return obj_new(k, sizeof(sim_port), OBJ_PORT, m, name);
}

static void port_bind(sim_port *p, obj *target)
{
    assert(!p->target && target && target != &p->h);
    p->target = target;
}

void sim_port_bind_signal(sim_port *p, sim_signal *s) { port_bind(p, &s->h); }
void sim_port_bind_fifo(sim_port *p, sim_fifo *f) { port_bind(p, &f->h); }
void sim_port_bind_port(sim_port *p, sim_port *outer) { port_bind(p, &outer->h); }

/* The channel at the end of the chain, or NULL if some port on the way is unbound. */
static obj *port_resolve(const sim_port *p)
{
    obj *o = p->target;
    for (int depth = 0; o && o->kind == OBJ_PORT; depth++) {
        assert(depth < 1000); /* a binding cycle */
        o = ((sim_port *)o)->target;
    }
    return o;
}

sim_signal *sim_port_signal(const sim_port *p)
{
    obj *o = port_resolve(p);
    assert(o && o->kind == OBJ_SIGNAL);
    return (sim_signal *)o;
}

sim_fifo *sim_port_fifo(const sim_port *p)
{
    obj *o = port_resolve(p);
    assert(o && o->kind == OBJ_FIFO);
    return (sim_fifo *)o;
}

void sim_sensitive_port(sim_proc *p, sim_port *port, sim_port_event which)
{
    port_sens *r = xmalloc(sizeof *r);
    *r = (port_sens){p, port, which};
    vec_push(&p->h.k->port_sens, r);
    p->h.k->need_elab = true;
}

/* The event `which` of channel o, or NULL when o has no such event. */
static sim_event *channel_event(obj *o, sim_port_event which)
{
    if (o->kind == OBJ_SIGNAL) {
        sim_signal *s = (sim_signal *)o;
        switch (which) {
        case SIM_ON_CHANGE: return sim_signal_changed(s);
        case SIM_ON_POSEDGE: return sim_signal_posedge(s);
        case SIM_ON_NEGEDGE: return sim_signal_negedge(s);
        default: return NULL;
        }
    }
    if (o->kind == OBJ_FIFO) {
        sim_fifo *f = (sim_fifo *)o;
        switch (which) {
        case SIM_ON_WRITTEN: return sim_fifo_data_written(f);
        case SIM_ON_READ: return sim_fifo_data_read(f);
        default: return NULL;
        }
    }
    return NULL;
}

static void report(err *e, int *nbad, const char *what, const char *name)
{
    if ((*nbad)++ == 0)
        err_set(e, ERR_INPUT, "port %s %s", name, what);
    else
        err_append(e, "port %s %s", name, what);
}

int sim_elaborate(sim *k, err *e)
{
    int nbad = 0;
    for (obj *o = k->objs; o; o = o->next)
        if (o->kind == OBJ_PORT && !port_resolve((sim_port *)o))
            report(e, &nbad, "is not bound", sim_name(o));
    for (size_t i = 0; i < k->port_sens.n; i++) {
        port_sens *r = k->port_sens.v[i];
        obj *o = port_resolve(r->port);
        if (o && !channel_event(o, r->which))
            report(e, &nbad, "is bound to a channel without the event a process is sensitive to",
                   sim_name(r->port));
    }
    if (nbad)
        return ERR_INPUT;
    for (size_t i = 0; i < k->port_sens.n; i++) {
        port_sens *r = k->port_sens.v[i];
        sim_sensitive(r->p, channel_event(port_resolve(r->port), r->which));
        free(r);
    }
    k->port_sens.n = 0;
    k->need_elab = false;
    return ERR_OK;
}

/* ---- The scheduler ---------------------------------------------------------------------- */

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
        k->npending--;
        k->ncallbacks++;
        fn(k, arg);
    }
    while (k->runq_head < k->runq.n)
        run_proc(k, k->runq.v[k->runq_head++]);
    k->runq.n = k->runq_head = 0;

    /* Update: commit writes; changes post delta notifications. */
    for (size_t i = 0; i < k->updates.n; i++) {
        obj *o = k->updates.v[i];
        if (o->kind == OBJ_SIGNAL)
            signal_update((sim_signal *)o);
        else
            fifo_update((sim_fifo *)o);
    }
    k->updates.n = 0;

    /* Delta notification: fire events, making processes runnable for the next delta. */
    for (size_t i = 0; i < k->deltas.n; i++) {
        sim_event *e = k->deltas.v[i];
        e->in_deltas = false;
        if (e->pending == PEND_DELTA) {
            e->pending = PEND_NONE;
            trigger(k, e);
        }
    }
    k->deltas.n = 0;
    k->ndeltas++;
}

/* Whether a delta cycle is due at the current time. */
static bool work_now(sim *k)
{
    if (k->runq.n || k->updates.n || k->deltas.n)
        return true;
    const hent *h = heap_top(k);
    return h && h->t == k->now;
}

void sim_stop(sim *k) { k->stop = true; }

int sim_run(sim *k, sim_time until)
{
    assert(!k->running); /* sim_run is not reentrant */
    if (k->need_elab && sim_elaborate(k, NULL) != ERR_OK)
        return SIM_ERROR;
    k->running = true;
    k->stop = false;
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
        if (k->stop) {
            k->stop = false;
            status = SIM_STOPPED;
            break;
        }
    }
    k->running = false;
    return status;
}
