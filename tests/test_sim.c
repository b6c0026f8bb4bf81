/* Tests of the simulation kernel (hw/sim): callback ordering, delta cycles, static and
 * timed dynamic sensitivity, event notification rules, the next time due, run-until, a small
 * clocked module composition through interface ports checked against hand-derived times,
 * port binding and elaboration errors, two kernels at once, and clock conversion. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hw/sim.h"

/* ---- A trace of (time, value) records ------------------------------------------------------- */

#define TRACE_MAX 64

typedef struct trace {
    int n;
    sim_time t[TRACE_MAX];
    uint64_t v[TRACE_MAX];
} trace;

static void rec(trace *tr, sim *k, uint64_t v)
{
    assert_true(tr->n < TRACE_MAX);
    tr->t[tr->n] = sim_now(k);
    tr->v[tr->n] = v;
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

/* ---- Callback ordering ---------------------------------------------------------------------- */

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
    /* All at time 100, scheduled in the order 3, 0, 5, 1, 4, 2. */
    const int order[] = {3, 0, 5, 1, 4, 2};
    for (int i = 0; i < 6; i++)
        sim_schedule_at(k, 100, cb_rec, &g[order[i]]);
    assert_int_equal(sim_next_time(k), 100);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    const uint64_t want[] = {3, 0, 5, 1, 4, 2};
    expect_values(&tr, want, 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(tr.t[i], 100);
    assert_int_equal(sim_next_time(k), SIM_FOREVER);
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
    assert_non_null(items);
    uint64_t x = 88172645463325252u; /* xorshift64 */
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        items[i] = (order_item){&chk, x % 50, i};
        sim_schedule_at(k, items[i].t, cb_order, &items[i]);
    }
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    assert_int_equal(chk.n, N);
    assert_int_equal(chk.bad, 0);
    free(items);
    sim_free(k);
}

/* ---- Delta cycles --------------------------------------------------------------------------- */

static void p_count(sim *k, void *arg)
{
    rec(arg, k, 0);
}

/* Process a runs at the start; b waits on e1, c on e2, d on e3 (never notified), f on e4.
 * Each records its letter's number (a=1, b=2, c=3, d=4, f=5) in one trace. */
typedef struct delta_sys {
    sim_event *e1, *e2, *e3, *e4;
    trace tr;
    bool e2_pending; /* e2 pending right after b notified it */
} delta_sys;

static void p_a(sim *k, void *arg)
{
    delta_sys *s = arg;
    rec(&s->tr, k, 1);
    sim_event_notify_delta(s->e1);
    sim_event_notify_delta(s->e1); /* already pending: still one notification */
    sim_event_notify_delta(s->e4);
}

static void p_b(sim *k, void *arg)
{
    delta_sys *s = arg;
    rec(&s->tr, k, 2);
    sim_event_notify_delta(s->e2);
    s->e2_pending = sim_event_pending(s->e2);
}

static void p_c(sim *k, void *arg)
{
    rec(&((delta_sys *)arg)->tr, k, 3);
}
static void p_d(sim *k, void *arg)
{
    rec(&((delta_sys *)arg)->tr, k, 4);
}
static void p_f(sim *k, void *arg)
{
    rec(&((delta_sys *)arg)->tr, k, 5);
}

static void test_delta_notification(void **state)
{
    (void)state;
    sim *k = sim_new();
    delta_sys s = {0};
    s.e1 = sim_event_new(k, NULL, "e1");
    s.e2 = sim_event_new(k, NULL, "e2");
    s.e3 = sim_event_new(k, NULL, "e3");
    s.e4 = sim_event_new(k, NULL, "e4");
    sim_method(k, NULL, "c", p_c, &s, &s.e2, 1, SIM_DONT_INIT); /* created before b: no matter */
    sim_method(k, NULL, "f", p_f, &s, &s.e4, 1, SIM_DONT_INIT);
    sim_method(k, NULL, "b", p_b, &s, &s.e1, 1, SIM_DONT_INIT);
    sim_method(k, NULL, "d", p_d, &s, &s.e3, 1, SIM_DONT_INIT);
    sim_method(k, NULL, "a", p_a, &s, NULL, 0, 0);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);

    /* Delta 0: a. Its delta notifications fire at the end of delta 0, in the order they were
     * first made (e1, then e4), so delta 1 runs b, then f. b's notification of e2 makes delta
     * 2 run c. Everything at time 0; four activations. */
    const uint64_t who[] = {1, 2, 5, 3};
    expect_values(&s.tr, who, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(s.tr.t[i], 0);
    assert_true(s.e2_pending);
    assert_false(sim_event_pending(s.e2)); /* fired */
    assert_int_equal(sim_now(k), 0);
    sim_free(k);
}

/* ---- Sensitivity ---------------------------------------------------------------------------- */

static void cb_notify(sim *k, void *arg)
{
    (void)k, sim_event_notify_delta(arg);
}

typedef struct two_events {
    sim_event *a, *b;
} two_events;

static void cb_notify_both(sim *k, void *arg)
{
    (void)k;
    two_events *t = arg;
    sim_event_notify_delta(t->a);
    sim_event_notify_delta(t->b);
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
    sim_schedule_at(k, 40, cb_notify, e[0]);
    sim_run(k, SIM_FOREVER);
    const sim_time want[] = {10, 20, 30, 40};
    assert_int_equal(tr.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tr.t[i], want[i]);
    sim_free(k);
}

typedef struct dyn_sys {
    trace tr;
    sim_event *e1;
} dyn_sys;

static void p_dyn(sim *k, void *arg)
{
    dyn_sys *d = arg;
    rec(&d->tr, k, 0);
    if (d->tr.n == 1)
        sim_next_trigger_time(k, 5); /* overridden: the last call wins */
    if (d->tr.n < 3)
        sim_next_trigger_time(k, 10); /* at 0, 10, 20, then static again */
}

static void test_dynamic_time(void **state)
{
    (void)state;
    sim *k = sim_new();
    dyn_sys d = {0};
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
    for (int i = 0; i < 3; i++)
        assert_int_equal(tr.t[i], 0);
    sim_free(k);
}

static void cb_chain(sim *k, void *arg)
{
    tag *g = arg;
    cb_rec(k, g);
    if (g->tr->n < 4)                                /* three links, plus `other` */
        sim_schedule_at(k, sim_now(k), cb_chain, g); /* same time, next delta */
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
    const uint64_t want[] = {0, 9, 0, 0}; /* the first link's successor after `other` */
    expect_values(&tr, want, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tr.t[i], 10);
    sim_free(k);
}

/* ---- Event notification rules --------------------------------------------------------------- */

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
    case 300: /* notify_at 0 is a delta notification */
        sim_event_notify_at(e, 0);
        assert_true(sim_event_pending(e));
        assert_int_equal(sim_next_time(k), 300);
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
    for (sim_time t = 0; t <= 300; t += 100)
        sim_schedule_at(k, t, cb_rules, e);
    sim_run(k, SIM_FOREVER);
    const sim_time want[] = {20, 120, 200, 300};
    assert_int_equal(tr.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tr.t[i], want[i]);
    assert_int_equal(sim_now(k), 300);
    sim_free(k);
}

/* ---- The next time due ---------------------------------------------------------------------- */

/* As the engine uses the kernel: timed events, each with a process; the model asks for the
 * next time due and runs the kernel to it, one time step at a time. */
static void test_next_time(void **state)
{
    (void)state;
    sim *k = sim_new();
    trace tr = {0};
    assert_int_equal(sim_next_time(k), SIM_FOREVER);
    sim_event *e[3];
    for (int i = 0; i < 3; i++) {
        e[i] = sim_event_new(k, NULL, NULL);
        sim_method(k, NULL, NULL, p_count, &tr, &e[i], 1, SIM_DONT_INIT);
    }
    sim_event_notify_at(e[0], 300);
    sim_event_notify_at(e[1], 100);
    sim_event_notify_at(e[2], 100);
    assert_int_equal(sim_next_time(k), 100);
    sim_event_notify_at(e[0], 50); /* earlier: replaces 300, whose entry is dropped */
    assert_int_equal(sim_next_time(k), 50);
    const sim_time steps[] = {50, 100, SIM_FOREVER};
    const int ran[] = {1, 3, 3};
    for (int i = 0; i < 3; i++) {
        sim_time t = sim_next_time(k);
        assert_int_equal(t, steps[i]);
        if (t != SIM_FOREVER)
            assert_int_equal(sim_run(k, t), i == 0 ? SIM_UNTIL : SIM_IDLE);
        assert_int_equal(tr.n, ran[i]);
    }
    assert_false(sim_event_pending(e[0]));
    assert_int_equal(sim_now(k), 100);
    sim_event_notify_at(e[1], 0); /* a delta notification: due now */
    assert_int_equal(sim_next_time(k), 100);
    assert_int_equal(sim_run(k, 100), SIM_IDLE);
    assert_int_equal(tr.n, 4);
    sim_free(k);
}

/* ---- Run-until ------------------------------------------------------------------------------ */

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
    sim_schedule_at(k, sim_now(k) + 1, cb_rec, &g[3]); /* from the bound: t=26 */
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

/* ---- Modules and interface ports: a clock, a counter of its ticks, a sampler ---------------- */

/* Interface "tick": told of each clock tick. */
typedef struct tick_if {
    void *ctx;
    void (*tick)(void *ctx);
} tick_if;

/* Interface "sink": takes each value the counter produces. */
typedef struct sink_if {
    void *ctx;
    void (*put)(void *ctx, sim *k, uint64_t v);
} sink_if;

/* The clock module: its process tells its port "out" of a tick at 0, P, 2P, ... */
typedef struct clkgen {
    sim_module *m;
    sim_port *out;
    sim_time period;
} clkgen;

static void clkgen_run(sim *k, void *arg)
{
    clkgen *c = arg;
    const tick_if *out = sim_port_get(c->out);
    out->tick(out->ctx);
    sim_next_trigger_time(k, c->period);
}

/* The counter provides "tick" (it notifies its event `ticked` for the next delta) and has a
 * port "out" (a sink). Its process, sensitive to `ticked`, puts the number of ticks so far. */
typedef struct counter {
    sim_module *m;
    sim_port *out;
    sim_event *ticked;
    uint64_t n;
    tick_if impl;
} counter;

static void counter_tick(void *ctx)
{
    sim_event_notify_delta(((counter *)ctx)->ticked);
}

static void counter_run(sim *k, void *arg)
{
    counter *c = arg;
    const sink_if *out = sim_port_get(c->out);
    out->put(out->ctx, k, ++c->n);
}

/* The sampler provides "sink": it records (time, value). */
typedef struct sampler {
    sim_module *m;
    trace tr;
    sink_if impl;
} sampler;

static void sampler_put(void *ctx, sim *k, uint64_t v)
{
    rec(&((sampler *)ctx)->tr, k, v);
}

/* top { clk: clkgen, core { cnt: counter }, smp: sampler }. */
typedef struct system {
    sim_module *top, *core;
    clkgen gen;
    counter cnt;
    sampler smp;
} system_t;

static void system_build(system_t *y, sim *k, sim_time period)
{
    memset(y, 0, sizeof *y);
    y->top = sim_module_new(k, NULL, "top");

    y->gen.m = sim_module_new(k, y->top, "clk");
    y->gen.out = sim_port_new(k, y->gen.m, "out", "tick", 0);
    y->gen.period = period;
    sim_method(k, y->gen.m, "run", clkgen_run, &y->gen, NULL, 0, 0);

    y->core = sim_module_new(k, y->top, "core");
    y->cnt.m = sim_module_new(k, y->core, "cnt");
    y->cnt.out = sim_port_new(k, y->cnt.m, "out", "sink", 0);
    y->cnt.ticked = sim_event_new(k, y->cnt.m, "ticked");
    y->cnt.impl = (tick_if){&y->cnt, counter_tick};
    sim_method(k, y->cnt.m, "run", counter_run, &y->cnt, &y->cnt.ticked, 1, SIM_DONT_INIT);

    y->smp.m = sim_module_new(k, y->top, "smp");
    y->smp.impl = (sink_if){&y->smp, sampler_put};

    /* Binding, after construction, as in an sc_main. */
    sim_port_bind(y->gen.out, "tick", &y->cnt.impl);
    sim_port_bind(y->cnt.out, "sink", &y->smp.impl);
}

/* The clock's process runs at 0 (its first run), P, 2P, ... and has the counter notify its
 * event for the next delta; the counter runs in that next delta and puts n. So the samples
 * are (i*P, i+1) for every i*P <= until. */
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
    assert_ptr_equal(sim_port_get(y.gen.out), &y.cnt.impl);
    assert_ptr_equal(sim_port_get(y.cnt.out), &y.smp.impl);

    assert_int_equal(sim_run(k, 3500), SIM_UNTIL);
    expect_samples(&y.smp.tr, 1000, 4);
    assert_int_equal(sim_next_time(k), 4000); /* the clock's next tick */

    assert_int_equal(sim_run(k, 5000), SIM_UNTIL); /* the tick at exactly the bound runs */
    expect_samples(&y.smp.tr, 1000, 6);
    assert_int_equal(y.cnt.n, 6);
    assert_int_equal(sim_now(k), 5000);
    sim_free(k);
}

/* ---- Interface ports: binding, elaboration errors ------------------------------------------- */

/* Two implementations of different interfaces; the tests only compare pointers. */
typedef struct some_if {
    void *ctx;
} some_if;

static void test_port_bind(void **state)
{
    (void)state;
    sim *k = sim_new();
    some_if fab1 = {NULL}, fab2 = {NULL};
    sim_module *eng = sim_module_new(k, sim_module_new(k, NULL, "sys"), "eng");
    sim_port *p = sim_port_new(k, eng, "fabric", "eng_fabric", 0);
    assert_null(sim_port_get(p));
    sim_port_bind(p, "eng_fabric", &fab1);
    assert_ptr_equal(sim_port_get(p), &fab1); /* before elaboration too */
    assert_int_equal(sim_elaborate(k, NULL), ERR_OK);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);

    /* Binding again replaces. */
    sim_port_bind(p, "eng_fabric", &fab2);
    assert_ptr_equal(sim_port_get(p), &fab2);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);

    /* A new binding is checked again by the next sim_run: a wrong interface stops it, and
     * replacing that binding with a right one lets it run. */
    sim_port_bind(p, "eng_host", &fab1);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_ERROR);
    sim_port_bind(p, "eng_fabric", &fab1);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    /* So is a new port. */
    sim_port *late = sim_port_new(k, eng, "late", "eng_fabric", 0);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_ERROR);
    sim_port_bind(late, "eng_fabric", &fab1);
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    assert_ptr_equal(sim_port_get(late), &fab1);
    sim_free(k);
}

static void cb_mark(sim *k, void *arg)
{
    (void)k;
    *(int *)arg = 1;
}

static void test_port_errors(void **state)
{
    (void)state;
    sim *k = sim_new();
    some_if fab = {NULL};
    sim_module *eng = sim_module_new(k, sim_module_new(k, NULL, "sys"), "eng");
    sim_port_new(k, eng, "fabric", "eng_fabric", 0); /* left unbound */
    sim_port *ph = sim_port_new(k, eng, "host", "eng_host", 0);
    sim_port_bind(ph, "eng_fabric", &fab); /* the wrong implementation */
    int ran = 0;
    sim_schedule_at(k, 10, cb_mark, &ran);
    err e;
    err_clear(&e);
    assert_int_equal(sim_elaborate(k, &e), ERR_INPUT);
    assert_int_equal(e.status, ERR_INPUT);
    assert_string_equal(e.msg, "port sys.eng.fabric is not bound\n"
                               "port sys.eng.host wants interface eng_host but is bound to "
                               "eng_fabric");
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_ERROR); /* and nothing runs */
    assert_int_equal(ran, 0);
    assert_int_equal(sim_now(k), 0);
    sim_free(k);
}

static void test_port_optional(void **state)
{
    (void)state;
    sim *k = sim_new();
    some_if host = {NULL};
    sim_module *eng = sim_module_new(k, sim_module_new(k, NULL, "sys"), "eng");
    sim_port *ph = sim_port_new(k, eng, "host", "eng_host", SIM_PORT_OPTIONAL);
    assert_int_equal(sim_elaborate(k, NULL), ERR_OK);
    assert_null(sim_port_get(ph));
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    sim_port_bind(ph, "eng_host", &host);
    assert_ptr_equal(sim_port_get(ph), &host);
    assert_int_equal(sim_elaborate(k, NULL), ERR_OK);
    sim_free(k);
}

/* ---- Two kernels ---------------------------------------------------------------------------- */

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

/* ---- Clock conversion ----------------------------------------------------------------------- */

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
    sim_clock p = {750, 1}; /* a 750 ps period */
    assert_int_equal(sim_clock_time(p, 4), 3000);
    assert_int_equal(sim_clock_cycles(p, 2999), 3);
    assert_int_equal(sim_clock_cycles(p, 3000), 4);
    assert_int_equal(sim_clock_time(p, UINT64_MAX), SIM_FOREVER); /* saturates */
    sim_clock fast = sim_clock_hz(SIM_S * 4);                     /* 0.25 ps */
    assert_int_equal(sim_clock_cycles(fast, UINT64_MAX), UINT64_MAX);
    assert_int_equal(sim_clock_time(sim_clock_hz(3), 2), 666666666666);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_time_order),    cmocka_unit_test(test_time_order),
        cmocka_unit_test(test_heap_many),           cmocka_unit_test(test_delta_notification),
        cmocka_unit_test(test_static_sensitivity),  cmocka_unit_test(test_dynamic_time),
        cmocka_unit_test(test_dynamic_time_zero),   cmocka_unit_test(test_zero_delay_callback),
        cmocka_unit_test(test_event_rules),         cmocka_unit_test(test_next_time),
        cmocka_unit_test(test_run_until),           cmocka_unit_test(test_counter_sampler),
        cmocka_unit_test(test_port_bind),           cmocka_unit_test(test_port_errors),
        cmocka_unit_test(test_port_optional),       cmocka_unit_test(test_two_kernels_interleaved),
        cmocka_unit_test(test_two_kernels_threads), cmocka_unit_test(test_clock_conversion),
    };
    return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
