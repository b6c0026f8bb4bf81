/* Tests of the simulation kernel (hw/sim): callback ordering and cancellation, delta cycles,
 * static and dynamic sensitivity, event notification rules, FIFOs, run-until, ports, a small
 * clocked module composition checked against hand-derived times, and two kernels at once. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hw/sim.h"

/* ---- A trace of (time, value, delta) records -------------------------------------------- */

#define TRACE_MAX 64

typedef struct trace {
    int n;
    sim_time t[TRACE_MAX];
    uint64_t v[TRACE_MAX];
    uint64_t d[TRACE_MAX]; /* sim_delta_count when recorded */
} trace;

static void rec(trace *tr, sim *k, uint64_t v)
{
    assert_true(tr->n < TRACE_MAX);
    tr->t[tr->n] = sim_now(k);
    tr->v[tr->n] = v;
    tr->d[tr->n] = sim_delta_count(k);
    tr->n++;
}

/* A tagged callback argument: records its tag into a trace. */
typedef struct tag {
    trace *tr;
    uint64_t v;
} tag;

static void cb_rec(sim *k, void *arg)
{
    tag *g = arg;
    rec(g->tr, k, g->v);
}

static void expect_values(const trace *tr, const uint64_t *v, int n)
{
    assert_int_equal(tr->n, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(tr->v[i], v[i]);
}

/* ---- Callback ordering ------------------------------------------------------------------ */

static void test_equal_time_order(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    tag g[6];
    for (int i = 0; i < 6; i++)
        g[i] = (tag){&tr, (uint64_t)i};
    /* A first round, run and freed, so the callbacks below reuse internal slots in an order
     * unrelated to their scheduling order. */
    for (int i = 0; i < 6; i++)
        sim_schedule_at(k, 0, cb_rec, &g[i]); /* now stays 0 */
    sim_run(k, SIM_FOREVER);
    tr.n = 0;
    /* All at time 100, scheduled in the order 3, 0, 5, 1, 4, 2, relative and absolute mixed. */
    sim_schedule(k, 100, cb_rec, &g[3]);
    sim_schedule_at(k, 100, cb_rec, &g[0]);
    sim_schedule(k, 100, cb_rec, &g[5]);
    sim_schedule_at(k, 100, cb_rec, &g[1]);
    sim_schedule(k, 100, cb_rec, &g[4]);
    sim_schedule_at(k, 100, cb_rec, &g[2]);
    assert_int_equal(sim_pending(k), 6);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    const uint64_t want[] = {3, 0, 5, 1, 4, 2};
    expect_values(&tr, want, 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(tr.t[i], 100);
    assert_int_equal(sim_callbacks_run(k), 12); /* with the first round */
    assert_int_equal(sim_pending(k), 0);
    sim_free(k);
}

static void test_time_order(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    tag g[5];
    for (int i = 0; i < 5; i++)
        g[i] = (tag){&tr, (uint64_t)i};
    sim_schedule_at(k, 30, cb_rec, &g[0]);
    sim_schedule_at(k, 10, cb_rec, &g[1]);
    sim_schedule_at(k, 20, cb_rec, &g[2]);
    sim_schedule_at(k, 10, cb_rec, &g[3]);
    sim_schedule_at(k, 5, cb_rec, &g[4]);
    sim_run(k, SIM_FOREVER);
    const uint64_t want[] = {4, 1, 3, 2, 0};
    const sim_time when[] = {5, 10, 10, 20, 30};
    expect_values(&tr, want, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(tr.t[i], when[i]);
    assert_int_equal(sim_now(k), 30);
    sim_free(k);
}

/* Many pseudo-random times: each callback checks it runs in (time, scheduling order). */
typedef struct order_check {
    sim_time last_t;
    int last_i, n, bad;
} order_check;

typedef struct order_item {
    order_check *chk;
    sim_time t;
    int i;
} order_item;

static void cb_order(sim *k, void *arg)
{
    order_item *it = arg;
    order_check *c = it->chk;
    if (sim_now(k) != it->t)
        c->bad++;
    if (c->n > 0 && (it->t < c->last_t || (it->t == c->last_t && it->i < c->last_i)))
        c->bad++;
    c->last_t = it->t;
    c->last_i = it->i;
    c->n++;
}

static void test_heap_many(void **state)
{
    (void)state;
    enum { N = 2000 };
    sim *k = sim_new();
    order_check chk = {0};
    order_item *items = malloc(N * sizeof *items);
    uint64_t *ids = malloc(N * sizeof *ids);
    assert_non_null(items);
    assert_non_null(ids);
    uint64_t x = 88172645463325252u; /* xorshift64 */
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        items[i] = (order_item){&chk, x % 50, i};
        ids[i] = sim_schedule_at(k, items[i].t, cb_order, &items[i]);
    }
    /* Cancel every third one, so lazy deletion is exercised throughout the heap. */
    for (int i = 0; i < N; i += 3)
        assert_int_equal(sim_cancel(k, ids[i]), 0);
    assert_int_equal(sim_pending(k), N - (N + 2) / 3);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    assert_int_equal(chk.n, N - (N + 2) / 3);
    assert_int_equal(chk.bad, 0);
    free(items);
    free(ids);
    sim_free(k);
}

/* ---- Cancellation ----------------------------------------------------------------------- */

static void test_cancel_before_run(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    tag a = {&tr, 1}, b = {&tr, 2};
    uint64_t ia = sim_schedule(k, 10, cb_rec, &a);
    uint64_t ib = sim_schedule(k, 20, cb_rec, &b);
    assert_int_not_equal(ia, 0);
    assert_int_not_equal(ia, ib);
    assert_int_equal(sim_cancel(k, ia), 0);
    assert_int_equal(sim_cancel(k, ia), -1); /* twice */
    assert_int_equal(sim_cancel(k, 0), -1);  /* never an id */
    assert_int_equal(sim_cancel(k, 0x123456789abcull), -1);
    assert_int_equal(sim_pending(k), 1);
    sim_run(k, SIM_FOREVER);
    const uint64_t want[] = {2};
    expect_values(&tr, want, 1);
    sim_free(k);
}

typedef struct canceller {
    trace *tr;
    uint64_t victims[3];
    int results[3];
    uint64_t self;
    int self_result;
} canceller;

static void cb_cancel(sim *k, void *arg)
{
    canceller *c = arg;
    rec(c->tr, k, 100);
    for (int i = 0; i < 3; i++)
        c->results[i] = sim_cancel(k, c->victims[i]);
    c->self_result = sim_cancel(k, c->self); /* running: already gone */
}

static void test_cancel_from_callback(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    tag before = {&tr, 1}, same = {&tr, 2}, later = {&tr, 3}, other = {&tr, 4};
    canceller c = {.tr = &tr};
    c.victims[0] = sim_schedule_at(k, 10, cb_rec, &before); /* runs before the canceller */
    c.self = sim_schedule_at(k, 10, cb_cancel, &c);
    c.victims[1] = sim_schedule_at(k, 10, cb_rec, &same);  /* same time, after: cancelled */
    sim_schedule_at(k, 10, cb_rec, &other);                /* same time, untouched */
    c.victims[2] = sim_schedule_at(k, 30, cb_rec, &later); /* later: cancelled */
    sim_run(k, SIM_FOREVER);
    const uint64_t want[] = {1, 100, 4};
    expect_values(&tr, want, 3);
    assert_int_equal(c.results[0], -1); /* already ran */
    assert_int_equal(c.results[1], 0);
    assert_int_equal(c.results[2], 0);
    assert_int_equal(c.self_result, -1);
    assert_int_equal(sim_now(k), 10); /* the cancelled event at 30 does not advance time */
    assert_int_equal(sim_pending(k), 0);
    sim_free(k);
}

static void test_cancel_after_run(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    tag a = {&tr, 1}, b = {&tr, 2};
    uint64_t ia = sim_schedule(k, 5, cb_rec, &a);
    sim_run(k, SIM_FOREVER);
    assert_int_equal(sim_cancel(k, ia), -1);
    /* The slot is reused by the next callback; the old id must not cancel it. */
    uint64_t ib = sim_schedule(k, 5, cb_rec, &b);
    assert_int_not_equal(ia, ib);
    assert_int_equal(sim_cancel(k, ia), -1);
    sim_run(k, SIM_FOREVER);
    const uint64_t want[] = {1, 2};
    expect_values(&tr, want, 2);
    assert_int_equal(tr.t[1], 10);
    assert_int_equal(sim_cancel(k, ib), -1);
    sim_free(k);
}

/* ---- Delta cycles and signals ----------------------------------------------------------- */

typedef struct delta_sys {
    sim_signal *s;
    trace writer, reader, watcher;
} delta_sys;

static void p_writer(sim *k, void *arg)
{
    delta_sys *d = arg;
    rec(&d->writer, k, sim_signal_read(d->s)); /* before the write */
    sim_signal_write(d->s, 5);
    rec(&d->writer, k, sim_signal_read(d->s)); /* after: still the old value */
}

static void p_reader(sim *k, void *arg)
{
    delta_sys *d = arg;
    rec(&d->reader, k, sim_signal_read(d->s));
}

static void p_watcher(sim *k, void *arg)
{
    delta_sys *d = arg;
    rec(&d->watcher, k, sim_signal_read(d->s));
}

static void cb_write5(sim *k, void *arg) { (void)k, sim_signal_write(arg, 5); }
static void cb_write6(sim *k, void *arg) { (void)k, sim_signal_write(arg, 6); }

static void test_delta_visibility(void **state)
{
    (void)state;
    sim *k = sim_new();
    delta_sys d = {0};
    d.s = sim_signal_new(k, NULL, "s", 0);
    sim_event *changed = sim_signal_changed(d.s);
    sim_method(k, NULL, "writer", p_writer, &d, NULL, 0, 0);
    sim_method(k, NULL, "reader", p_reader, &d, NULL, 0, 0);
    sim_method(k, NULL, "watcher", p_watcher, &d, &changed, 1, SIM_DONT_INIT);
    sim_schedule_at(k, 10, cb_write5, d.s); /* same value: no change event */
    sim_schedule_at(k, 20, cb_write6, d.s);
    sim_run(k, SIM_FOREVER);

    /* Delta 0: the writer writes 5 but reads 0 before and after; the reader, in the same
     * delta after the writer, still reads 0. */
    assert_int_equal(d.writer.n, 2);
    assert_int_equal(d.writer.v[0], 0);
    assert_int_equal(d.writer.v[1], 0);
    assert_int_equal(d.writer.d[0], 0);
    assert_int_equal(d.reader.n, 1);
    assert_int_equal(d.reader.v[0], 0);
    assert_int_equal(d.reader.d[0], 0);
    /* Delta 1: woken by value-changed, the watcher sees 5. Then nothing at 10; 6 at 20. */
    assert_int_equal(d.watcher.n, 2);
    assert_int_equal(d.watcher.t[0], 0);
    assert_int_equal(d.watcher.v[0], 5);
    assert_int_equal(d.watcher.d[0], 1);
    assert_int_equal(d.watcher.t[1], 20);
    assert_int_equal(d.watcher.v[1], 6);
    assert_int_equal(sim_signal_read(d.s), 6);
    sim_free(k);
}

typedef struct wide {
    uint64_t a, b;
} wide;

static void cb_write_wide(sim *k, void *arg)
{
    sim_signal *s = arg;
    wide w = {0, 0};
    if (sim_now(k) == 10)
        w = (wide){0, 7}; /* rising: all-zero to non-zero */
    else if (sim_now(k) == 20)
        w = (wide){1, 7}; /* changed, still non-zero */
    /* at 30: back to zero (falling) */
    sim_signal_writev(s, &w);
}

static void p_count(sim *k, void *arg)
{
    rec(arg, k, 0);
}

static void test_sized_signal_edges(void **state)
{
    (void)state;
    sim *k = sim_new();
    wide z = {0, 0};
    sim_signal *s = sim_signal_new_sized(k, NULL, "w", sizeof(wide), &z);
    assert_int_equal(sim_signal_size(s), sizeof(wide));
    trace ch = {0}, pos = {0}, neg = {0};
    sim_event *e1 = sim_signal_changed(s), *e2 = sim_signal_posedge(s),
              *e3 = sim_signal_negedge(s);
    assert_string_equal(sim_name(e2), "w.posedge");
    sim_method(k, NULL, "ch", p_count, &ch, &e1, 1, SIM_DONT_INIT);
    sim_method(k, NULL, "pos", p_count, &pos, &e2, 1, SIM_DONT_INIT);
    sim_method(k, NULL, "neg", p_count, &neg, &e3, 1, SIM_DONT_INIT);
    for (sim_time t = 10; t <= 40; t += 10)
        sim_schedule_at(k, t, cb_write_wide, s); /* at 40: zero again, no change */
    sim_run(k, SIM_FOREVER);
    assert_int_equal(ch.n, 3);
    assert_int_equal(ch.t[0], 10);
    assert_int_equal(ch.t[1], 20);
    assert_int_equal(ch.t[2], 30);
    assert_int_equal(pos.n, 1);
    assert_int_equal(pos.t[0], 10);
    assert_int_equal(neg.n, 1);
    assert_int_equal(neg.t[0], 30);
    wide r;
    sim_signal_readv(s, &r);
    assert_true(r.a == 0 && r.b == 0);
    sim_free(k);
}

/* ---- Sensitivity ------------------------------------------------------------------------ */

static void cb_notify(sim *k, void *arg) { (void)k, sim_event_notify(arg); }
static void cb_notify_delta(sim *k, void *arg) { (void)k, sim_event_notify_delta(arg); }

typedef struct two_events {
    sim_event *a, *b;
} two_events;

static void cb_notify_both(sim *k, void *arg)
{
    (void)k;
    two_events *t = arg;
    sim_event_notify(t->a);
    sim_event_notify(t->b);
}

static void test_static_sensitivity(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    sim_event *e[2] = {sim_event_new(k, NULL, "e1"), sim_event_new(k, NULL, "e2")};
    sim_event *unrelated = sim_event_new(k, NULL, "e3");
    two_events both = {e[0], e[1]};
    sim_method(k, NULL, "p", p_count, &tr, e, 2, SIM_DONT_INIT);
    sim_schedule_at(k, 10, cb_notify, e[0]);
    sim_schedule_at(k, 20, cb_notify, e[1]);
    sim_schedule_at(k, 25, cb_notify, unrelated);
    sim_schedule_at(k, 30, cb_notify_both, &both); /* runs once for two events */
    sim_schedule_at(k, 40, cb_notify_delta, e[0]);
    sim_run(k, SIM_FOREVER);
    const sim_time want[] = {10, 20, 30, 40};
    assert_int_equal(tr.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tr.t[i], want[i]);
    /* Immediate notification runs in the callback's delta, delta notification in the next. */
    assert_int_equal(tr.d[2] + 1, tr.d[3] - 1); /* t=30 delta n, t=40: delta n+1 then n+2 */
    assert_int_equal(sim_activations(k), 4);
    sim_free(k);
}

typedef struct dyn_sys {
    trace tr;
    sim_event *e1, *e2;
    int mode; /* 0: time, 1: event */
} dyn_sys;

static void p_dyn(sim *k, void *arg)
{
    dyn_sys *d = arg;
    rec(&d->tr, k, 0);
    if (d->mode == 0) {
        if (d->tr.n < 3)
            sim_next_trigger_time(k, 10); /* at 0, 10, 20, then static again */
    } else if (d->tr.n == 1) {
        sim_next_trigger_time(k, 5);  /* overridden: the last call wins */
        sim_next_trigger_event(k, d->e2);
    }
}

static void test_dynamic_time(void **state)
{
    (void)state;
    sim *k = sim_new();
    dyn_sys d = {.mode = 0};
    d.e1 = sim_event_new(k, NULL, "e1");
    sim_method(k, NULL, "p", p_dyn, &d, &d.e1, 1, 0);
    sim_schedule_at(k, 5, cb_notify, d.e1);  /* ignored: waiting for time */
    sim_schedule_at(k, 15, cb_notify, d.e1); /* ignored */
    sim_schedule_at(k, 25, cb_notify, d.e1); /* static sensitivity is back */
    sim_run(k, SIM_FOREVER);
    const sim_time want[] = {0, 10, 20, 25};
    assert_int_equal(d.tr.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(d.tr.t[i], want[i]);
    sim_free(k);
}

static void p_zero_delay(sim *k, void *arg)
{
    trace *tr = arg;
    rec(tr, k, 0);
    if (tr->n < 3)
        sim_next_trigger_time(k, 0); /* next delta, same time */
}

static void test_dynamic_time_zero(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    sim_method(k, NULL, "p", p_zero_delay, &tr, NULL, 0, 0);
    sim_run(k, SIM_FOREVER);
    assert_int_equal(tr.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tr.t[i], 0);
        assert_int_equal(tr.d[i], (uint64_t)i);
    }
    sim_free(k);
}

static void cb_chain(sim *k, void *arg)
{
    tag *g = arg;
    cb_rec(k, g);
    if (g->tr->n < 4) /* three links, plus `other` */
        sim_schedule(k, 0, cb_chain, g); /* same time, next delta */
}

static void test_zero_delay_callback(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    tag g = {&tr, 0}, other = {&tr, 9};
    sim_schedule_at(k, 10, cb_chain, &g);
    sim_schedule_at(k, 10, cb_rec, &other); /* scheduled earlier than the chain's links */
    sim_run(k, SIM_FOREVER);
    const uint64_t want[] = {0, 9, 0, 0};
    expect_values(&tr, want, 4);
    const uint64_t deltas[] = {0, 0, 1, 2};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tr.t[i], 10);
        assert_int_equal(tr.d[i], deltas[i]);
    }
    sim_free(k);
}

static void test_dynamic_event(void **state)
{
    (void)state;
    sim *k = sim_new();
    dyn_sys d = {.mode = 1};
    d.e1 = sim_event_new(k, NULL, "e1");
    d.e2 = sim_event_new(k, NULL, "e2");
    sim_method(k, NULL, "p", p_dyn, &d, &d.e1, 1, 0);
    sim_schedule_at(k, 10, cb_notify, d.e1); /* ignored: waiting for e2 */
    sim_schedule_at(k, 20, cb_notify, d.e2); /* runs, and static sensitivity returns */
    sim_schedule_at(k, 30, cb_notify, d.e2); /* ignored: not statically sensitive */
    sim_schedule_at(k, 40, cb_notify, d.e1); /* runs */
    sim_run(k, SIM_FOREVER);
    const sim_time want[] = {0, 20, 40};
    assert_int_equal(d.tr.n, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(d.tr.t[i], want[i]);
    sim_free(k);
}

/* ---- Event notification rules ----------------------------------------------------------- */

static void cb_rules(sim *k, void *arg)
{
    sim_event *e = arg;
    switch (sim_now(k)) {
    case 0: /* earlier timed wins */
        sim_event_notify_at(e, 50);
        sim_event_notify_at(e, 20);
        break;
    case 100: /* later timed ignored */
        sim_event_notify_at(e, 20);
        sim_event_notify_at(e, 50);
        break;
    case 200: /* delta beats timed */
        sim_event_notify_at(e, 30);
        sim_event_notify_delta(e);
        break;
    case 300: /* cancel */
        sim_event_notify_at(e, 10);
        assert_true(sim_event_pending(e));
        sim_event_cancel(e);
        assert_false(sim_event_pending(e));
        break;
    case 400: /* immediate cancels the pending delta notification */
        sim_event_notify_delta(e);
        sim_event_notify(e);
        assert_false(sim_event_pending(e));
        break;
    case 500: /* notify_at 0 is a delta notification */
        sim_event_notify_at(e, 0);
        break;
    }
}

static void test_event_rules(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    sim_event *e = sim_event_new(k, NULL, "e");
    sim_method(k, NULL, "p", p_count, &tr, &e, 1, SIM_DONT_INIT);
    for (sim_time t = 0; t <= 500; t += 100)
        sim_schedule_at(k, t, cb_rules, e);
    sim_run(k, SIM_FOREVER);
    const sim_time want[] = {20, 120, 200, 400, 500};
    assert_int_equal(tr.n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(tr.t[i], want[i]);
    assert_int_equal(sim_now(k), 500);
    sim_free(k);
}

typedef struct self_sys {
    sim_event *e;
    trace q, r;
} self_sys;

static void p_self(sim *k, void *arg)
{
    self_sys *s = arg;
    rec(&s->q, k, 0);
    sim_event_notify(s->e); /* wakes r in this delta, not the notifier itself */
}

static void p_other(sim *k, void *arg)
{
    self_sys *s = arg;
    rec(&s->r, k, 0);
}

static void test_immediate_notify(void **state)
{
    (void)state;
    sim *k = sim_new();
    self_sys s = {0};
    s.e = sim_event_new(k, NULL, "e");
    sim_method(k, NULL, "q", p_self, &s, &s.e, 1, 0);
    sim_method(k, NULL, "r", p_other, &s, &s.e, 1, SIM_DONT_INIT);
    sim_run(k, SIM_FOREVER);
    assert_int_equal(s.q.n, 1);
    assert_int_equal(s.r.n, 1);
    assert_int_equal(s.r.d[0], 0);
    assert_int_equal(sim_delta_count(k), 1);
    sim_free(k);
}

/* ---- FIFO ------------------------------------------------------------------------------- */

typedef struct fifo_sys {
    sim_fifo *f;
    int wrote_more;
    bool w[3];          /* the producer callback's three writes */
    size_t cb_avail, cb_free;
    trace reads;        /* values read, with their delta */
    trace reader_avail; /* num_available at each reader activation */
    bool extra_read;    /* a read past the end */
    size_t free_after_reads;
    trace writer_free;  /* num_free at each writer activation */
} fifo_sys;

static void cb_produce(sim *k, void *arg)
{
    (void)k;
    fifo_sys *s = arg;
    uint32_t v[3] = {10, 20, 30};
    for (int i = 0; i < 3; i++)
        s->w[i] = sim_fifo_nb_write(s->f, &v[i]);
    s->cb_avail = sim_fifo_num_available(s->f); /* written this delta: not readable yet */
    s->cb_free = sim_fifo_num_free(s->f);
}

static void p_consume(sim *k, void *arg)
{
    fifo_sys *s = arg;
    rec(&s->reader_avail, k, sim_fifo_num_available(s->f));
    uint32_t v;
    while (sim_fifo_num_available(s->f) > 0) {
        assert_true(sim_fifo_nb_read(s->f, &v));
        rec(&s->reads, k, v);
    }
    s->extra_read = sim_fifo_nb_read(s->f, &v);
    s->free_after_reads = sim_fifo_num_free(s->f); /* slots free up next delta */
}

static void p_refill(sim *k, void *arg)
{
    fifo_sys *s = arg;
    rec(&s->writer_free, k, sim_fifo_num_free(s->f));
    if (!s->wrote_more++) {
        uint32_t v = 30;
        assert_true(sim_fifo_nb_write(s->f, &v));
    }
}

static void test_fifo(void **state)
{
    (void)state;
    sim *k = sim_new();
    fifo_sys s = {0};
    s.f = sim_fifo_new(k, NULL, "f", 2, sizeof(uint32_t));
    sim_event *wr = sim_fifo_data_written(s.f), *rd = sim_fifo_data_read(s.f);
    assert_string_equal(sim_name(wr), "f.written");
    assert_int_equal(sim_fifo_num_free(s.f), 2);
    assert_int_equal(sim_fifo_num_available(s.f), 0);
    sim_method(k, NULL, "consumer", p_consume, &s, &wr, 1, SIM_DONT_INIT);
    sim_method(k, NULL, "producer", p_refill, &s, &rd, 1, SIM_DONT_INIT);
    sim_schedule_at(k, 7, cb_produce, &s);
    sim_run(k, SIM_FOREVER);

    /* Delta 0 (t=7): two writes fit, the third finds the FIFO full. */
    assert_true(s.w[0] && s.w[1] && !s.w[2]);
    assert_int_equal(s.cb_avail, 0);
    assert_int_equal(s.cb_free, 0);
    /* Delta 1: the consumer sees 2 items, reads 10 and 20, then finds it empty. Delta 3: 30. */
    assert_int_equal(s.reader_avail.n, 2);
    assert_int_equal(s.reader_avail.v[0], 2);
    assert_int_equal(s.reader_avail.d[0], 1);
    assert_int_equal(s.reader_avail.v[1], 1);
    assert_int_equal(s.reader_avail.d[1], 3);
    const uint64_t want[] = {10, 20, 30};
    expect_values(&s.reads, want, 3);
    assert_false(s.extra_read);
    assert_int_equal(s.free_after_reads, 1); /* 30 is gone but its slot frees next delta */
    /* Delta 2: data_read woke the producer with two free slots; delta 4 again, two free. */
    assert_int_equal(s.writer_free.n, 2);
    assert_int_equal(s.writer_free.v[0], 2);
    assert_int_equal(s.writer_free.d[0], 2);
    assert_int_equal(s.writer_free.v[1], 2);
    assert_int_equal(s.writer_free.d[1], 4);
    for (int i = 0; i < s.reads.n; i++)
        assert_int_equal(s.reads.t[i], 7);
    sim_free(k);
}

/* ---- Run-until and stop ----------------------------------------------------------------- */

static void test_run_until(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    tag g[4] = {{&tr, 10}, {&tr, 20}, {&tr, 30}, {&tr, 26}};
    sim_schedule_at(k, 10, cb_rec, &g[0]);
    sim_schedule_at(k, 20, cb_rec, &g[1]);
    sim_schedule_at(k, 30, cb_rec, &g[2]);
    assert_int_equal(sim_run(k, 19), SIM_UNTIL);
    assert_int_equal(tr.n, 1);
    assert_int_equal(sim_now(k), 19);
    assert_int_equal(sim_run(k, 20), SIM_UNTIL); /* the bound is inclusive */
    assert_int_equal(tr.n, 2);
    assert_int_equal(sim_now(k), 20);
    assert_int_equal(sim_run(k, 25), SIM_UNTIL); /* time advances without events */
    assert_int_equal(tr.n, 2);
    assert_int_equal(sim_now(k), 25);
    sim_schedule(k, 1, cb_rec, &g[3]); /* counts from the bound: t=26 */
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    const uint64_t want[] = {10, 20, 26, 30};
    expect_values(&tr, want, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tr.t[i], want[i]);
    assert_int_equal(sim_now(k), 30);
    assert_int_equal(sim_run(k, 100), SIM_IDLE);
    assert_int_equal(sim_now(k), 100);
    sim_free(k);
}

static void cb_stop(sim *k, void *arg)
{
    cb_rec(k, arg);
    sim_stop(k);
}

static void test_stop(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    tag g[3] = {{&tr, 1}, {&tr, 2}, {&tr, 3}};
    sim_schedule_at(k, 10, cb_stop, &g[0]);
    sim_schedule_at(k, 10, cb_rec, &g[1]); /* same delta: still runs */
    sim_schedule_at(k, 20, cb_rec, &g[2]);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_STOPPED);
    assert_int_equal(sim_now(k), 10);
    assert_int_equal(tr.n, 2);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    assert_int_equal(tr.n, 3);
    assert_int_equal(sim_now(k), 20);
    sim_free(k);
}

/* ---- Modules: a clock, a counter on its rising edge, a sampler of the count ------------- */

typedef struct clkgen {
    sim_module *m;
    sim_port *out;
    sim_time half;
} clkgen;

static void clkgen_tick(sim *k, void *arg)
{
    clkgen *c = arg;
    sim_signal *s = sim_port_signal(c->out);
    sim_signal_write(s, !sim_signal_read(s));
    sim_next_trigger_time(k, c->half);
}

typedef struct counter {
    sim_module *m;
    sim_port *clk, *out;
    uint64_t n;
} counter;

static void counter_edge(sim *k, void *arg)
{
    (void)k;
    counter *c = arg;
    sim_signal_write(sim_port_signal(c->out), ++c->n);
}

typedef struct sampler {
    sim_module *m;
    sim_port *in;
    trace tr;
} sampler;

static void sampler_change(sim *k, void *arg)
{
    sampler *s = arg;
    rec(&s->tr, k, sim_signal_read(sim_port_signal(s->in)));
}

/* top { clk: clkgen, cnt: counter, mon { in; smp: sampler } }, signals top.clk, top.count */
typedef struct system {
    sim_module *top, *mon;
    sim_port *mon_in;
    sim_signal *clk, *count;
    clkgen gen;
    counter cnt;
    sampler smp;
} system_t;

static void system_build(system_t *y, sim *k, sim_time period)
{
    memset(y, 0, sizeof *y);
    y->top = sim_module_new(k, NULL, "top");
    y->clk = sim_signal_new(k, y->top, "clk", 0);
    y->count = sim_signal_new(k, y->top, "count", 0);

    y->gen.m = sim_module_new(k, y->top, "clk");
    y->gen.out = sim_port_new(k, y->gen.m, "out");
    y->gen.half = period / 2;
    sim_method(k, y->gen.m, "tick", clkgen_tick, &y->gen, NULL, 0, 0);

    y->cnt.m = sim_module_new(k, y->top, "cnt");
    y->cnt.clk = sim_port_new(k, y->cnt.m, "clk");
    y->cnt.out = sim_port_new(k, y->cnt.m, "out");
    sim_proc *p = sim_method(k, y->cnt.m, "edge", counter_edge, &y->cnt, NULL, 0,
                             SIM_DONT_INIT);
    sim_sensitive_port(p, y->cnt.clk, SIM_ON_POSEDGE); /* resolved at elaboration */

    y->mon = sim_module_new(k, y->top, "mon");
    y->mon_in = sim_port_new(k, y->mon, "in");
    y->smp.m = sim_module_new(k, y->mon, "smp");
    y->smp.in = sim_port_new(k, y->smp.m, "in");
    p = sim_method(k, y->smp.m, "sample", sampler_change, &y->smp, NULL, 0, SIM_DONT_INIT);
    sim_sensitive_port(p, y->smp.in, SIM_ON_CHANGE);

    /* Binding, after construction, as in an sc_main. */
    sim_port_bind_signal(y->gen.out, y->clk);
    sim_port_bind_signal(y->cnt.clk, y->clk);
    sim_port_bind_signal(y->cnt.out, y->count);
    sim_port_bind_signal(y->mon_in, y->count);
    sim_port_bind_port(y->smp.in, y->mon_in); /* through the enclosing module's port */
}

/* The clock rises at 0, P, 2P, ... (the first tick sets it to 1 at time 0, delta 0). The
 * counter sees each rise one delta later and writes n; the sampler sees n one delta after
 * that, still at the edge's time. So the samples are (i*P, i+1) for every i*P <= until. */
static void expect_samples(const trace *tr, sim_time period, int n)
{
    assert_int_equal(tr->n, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(tr->t[i], (sim_time)i * period);
        assert_int_equal(tr->v[i], (uint64_t)i + 1);
    }
}

static void test_counter_sampler(void **state)
{
    (void)state;
    sim *k = sim_new();
    system_t y;
    system_build(&y, k, 1000);
    assert_string_equal(sim_name(y.smp.in), "top.mon.smp.in");
    assert_string_equal(sim_name(y.clk), "top.clk");
    assert_string_equal(sim_name(y.cnt.m), "top.cnt");
    assert_ptr_equal(sim_module_parent(y.smp.m), y.mon);
    assert_ptr_equal(sim_port_signal(y.smp.in), y.count);

    assert_int_equal(sim_run(k, 3500), SIM_UNTIL);
    expect_samples(&y.smp.tr, 1000, 4);
    /* Each sample is two deltas after its clock edge's first delta. */
    assert_int_equal(y.smp.tr.d[0], 2);
    assert_int_equal(sim_signal_read(y.clk), 0); /* fell at 3500 */

    assert_int_equal(sim_run(k, 5000), SIM_UNTIL); /* edge at exactly the bound runs */
    expect_samples(&y.smp.tr, 1000, 6);
    assert_int_equal(sim_signal_read(y.count), 6);
    assert_int_equal(sim_now(k), 5000);
    sim_free(k);
}

static void test_elaboration_errors(void **state)
{
    (void)state;
    sim *k = sim_new();
    sim_module *m = sim_module_new(k, NULL, "top");
    sim_module *c = sim_module_new(k, m, "child");
    sim_port *a = sim_port_new(k, c, "a");
    sim_port *b = sim_port_new(k, c, "b");
    sim_port *up = sim_port_new(k, m, "up");
    sim_fifo *f = sim_fifo_new(k, m, "f", 4, 8);
    sim_proc *p = sim_method(k, c, "p", p_count, NULL, NULL, 0, SIM_DONT_INIT);
    sim_port_bind_port(b, up); /* up is unbound, so b is too */
    sim_sensitive_port(p, a, SIM_ON_CHANGE);
    err e;
    err_clear(&e);
    assert_int_equal(sim_elaborate(k, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "port top.child.a is not bound"));
    assert_non_null(strstr(e.msg, "port top.child.b is not bound"));
    assert_non_null(strstr(e.msg, "port top.up is not bound"));
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_ERROR);

    /* Bound to a FIFO, a value-changed sensitivity does not fit. */
    sim_port_bind_fifo(a, f);
    sim_signal *s = sim_signal_new(k, m, "s", 0);
    sim_port_bind_signal(up, s);
    err_clear(&e);
    assert_int_equal(sim_elaborate(k, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "port top.child.a is bound to a channel without"));
    assert_null(strstr(e.msg, "not bound"));
    sim_free(k);

    /* Fixed: elaboration passes, and sim_port_* follow the chain. */
    k = sim_new();
    m = sim_module_new(k, NULL, "top");
    a = sim_port_new(k, m, "a");
    b = sim_port_new(k, m, "b");
    f = sim_fifo_new(k, m, "f", 4, 8);
    p = sim_method(k, m, "p", p_count, NULL, NULL, 0, SIM_DONT_INIT);
    sim_port_bind_fifo(a, f);
    sim_port_bind_port(b, a);
    sim_sensitive_port(p, b, SIM_ON_WRITTEN);
    assert_int_equal(sim_elaborate(k, NULL), ERR_OK);
    assert_ptr_equal(sim_port_fifo(b), f);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    sim_free(k);
}

/* ---- Two kernels ------------------------------------------------------------------------ */

static void test_two_kernels_interleaved(void **state)
{
    (void)state;
    sim *k1 = sim_new(), *k2 = sim_new();
    system_t y1, y2;
    system_build(&y1, k1, 1000);
    system_build(&y2, k2, 700);
    for (sim_time t = 0; t <= 7000; t += 250) {
        sim_run(k1, t);
        sim_run(k2, t / 2);
    }
    expect_samples(&y1.smp.tr, 1000, 8); /* edges 0..7000 */
    expect_samples(&y2.smp.tr, 700, 6);  /* edges 0..3500: the bound is inclusive */
    assert_int_equal(sim_now(k1), 7000);
    assert_int_equal(sim_now(k2), 3500);
    sim_free(k1);
    sim_free(k2);
}

typedef struct thread_job {
    sim_time period, until;
    trace tr;
} thread_job;

static void *run_job(void *arg)
{
    thread_job *j = arg;
    sim *k = sim_new();
    system_t y;
    system_build(&y, k, j->period);
    for (sim_time t = 0; t <= j->until; t += 100)
        sim_run(k, t); /* many small runs, so the two threads overlap */
    j->tr = y.smp.tr;
    sim_free(k);
    return NULL;
}

static void test_two_kernels_threads(void **state)
{
    (void)state;
    thread_job j[2] = {{1000, 20000, {0}}, {600, 20000, {0}}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, run_job, &j[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    expect_samples(&j[0].tr, 1000, 21);
    expect_samples(&j[1].tr, 600, 34); /* 0, 600, ..., 19800 */
}

/* ---- Clock conversion ------------------------------------------------------------------- */

static void test_clock_conversion(void **state)
{
    (void)state;
    sim_clock c = sim_clock_hz(1330000000); /* 751.879... ps */
    assert_int_equal(sim_clock_time(c, 0), 0);
    assert_int_equal(sim_clock_time(c, 1), 751);
    assert_int_equal(sim_clock_time(c, 3), 2255); /* 2255.6: per-edge rounding, no drift */
    assert_int_equal(sim_clock_time(c, 1330000000), SIM_S);
    assert_int_equal(sim_clock_time(c, 1330000000ull * 3600), 3600 * SIM_S); /* 128-bit */
    assert_int_equal(sim_clock_cycles(c, 750), 0);
    assert_int_equal(sim_clock_cycles(c, 751), 1);
    assert_int_equal(sim_clock_cycles(c, SIM_S), 1330000000);
    assert_int_equal(sim_clock_cycles(c, SIM_S - 1), 1329999999);
    for (uint64_t n = 0; n < 100000; n += 7) {
        sim_time t = sim_clock_time(c, n);
        assert_int_equal(sim_clock_cycles(c, t), n);
        if (t > 0)
            assert_int_equal(sim_clock_cycles(c, t - 1), n - 1);
    }
    sim_clock p = sim_clock_period(750);
    assert_int_equal(sim_clock_time(p, 4), 3000);
    assert_int_equal(sim_clock_cycles(p, 2999), 3);
    assert_int_equal(sim_clock_cycles(p, 3000), 4);
    assert_int_equal(sim_clock_time(p, UINT64_MAX), SIM_FOREVER); /* saturates */
    sim_clock fast = sim_clock_hz(SIM_S * 4);                      /* 0.25 ps */
    assert_int_equal(sim_clock_cycles(fast, UINT64_MAX), UINT64_MAX);
    assert_int_equal(sim_clock_time(sim_clock_hz(3), 2), 666666666666);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_time_order),
        cmocka_unit_test(test_time_order),
        cmocka_unit_test(test_heap_many),
        cmocka_unit_test(test_cancel_before_run),
        cmocka_unit_test(test_cancel_from_callback),
        cmocka_unit_test(test_cancel_after_run),
        cmocka_unit_test(test_delta_visibility),
        cmocka_unit_test(test_sized_signal_edges),
        cmocka_unit_test(test_static_sensitivity),
        cmocka_unit_test(test_dynamic_time),
        cmocka_unit_test(test_dynamic_time_zero),
        cmocka_unit_test(test_zero_delay_callback),
        cmocka_unit_test(test_dynamic_event),
        cmocka_unit_test(test_event_rules),
        cmocka_unit_test(test_immediate_notify),
        cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_run_until),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_counter_sampler),
        cmocka_unit_test(test_elaboration_errors),
        cmocka_unit_test(test_two_kernels_interleaved),
        cmocka_unit_test(test_two_kernels_threads),
        cmocka_unit_test(test_clock_conversion),
    };
    return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
