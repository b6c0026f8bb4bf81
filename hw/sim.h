/* sim: the simulation kernel. Integer time, a callback scheduler, and SystemC-style events,
 * method processes, modules and interface ports on top of it.
 *
 * One kernel object `sim` is passed first to every function. It owns every object created on
 * it (events, processes, modules, ports) and frees them all in sim_free; there is no
 * per-object free, as in SystemC where the model is built once and then run. There are no
 * mutable globals, so any number of kernels can live in one process, also in different threads
 * (a kernel itself is single-threaded: use each from one thread at a time).
 *
 * How a run proceeds (docs/kernel.md explains it at length): at each time step the kernel runs
 * delta cycles, each made of
 *   1. evaluate: the callbacks due now (in (time, sequence) order), then every runnable
 *      process; an immediate notification makes processes runnable in this same phase;
 *   2. delta notification: events notified for the next delta fire, making processes runnable.
 * When a delta leaves nothing runnable and nothing due now, time advances to the earliest
 * scheduled callback (timed notifications and timed next_trigger are such callbacks).
 *
 * Left out on purpose: threads (SC_THREAD, wait()); time units other than the picosecond;
 * event lists (and/or) in next_trigger; channels with an update phase (sc_signal, sc_fifo: no
 * module used them); a limit on deltas per time step (a zero-delay loop spins forever). */
#ifndef IPUSIM_SIM_H
#define IPUSIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* ---- Time ------------------------------------------------------------------------------- */

/* Simulated time in picoseconds. 2^64 ps is about 213 days. */
typedef uint64_t sim_time;

#define SIM_PS ((sim_time)1)
#define SIM_NS ((sim_time)1000)
#define SIM_US ((sim_time)1000000)
#define SIM_MS ((sim_time)1000000000)
#define SIM_S ((sim_time)1000000000000)
#define SIM_FOREVER UINT64_MAX /* sim_run(k, SIM_FOREVER): run until nothing is left */

/* A clock domain: a period of num/den picoseconds, exact. A 1.33 GHz clock is
 * {SIM_S, 1330000000}; a 750 ps clock is {750, 1}. */
typedef struct sim_clock {
    uint64_t num, den;
} sim_clock;

static inline sim_clock sim_clock_hz(uint64_t hz)
{
    return (sim_clock){SIM_S, hz};
}
static inline sim_clock sim_clock_period(sim_time ps)
{
    return (sim_clock){ps, 1};
}

/* Time of the start of cycle `cycles` (cycle 0 starts at 0): floor(cycles * num / den),
 * computed in 128 bits, saturating at SIM_FOREVER. Rounding down per edge, not per period,
 * means no drift: cycle 3 of a 1.33 GHz clock is at 2255 ps, cycle 1330000000 at exactly 1 s. */
sim_time sim_clock_time(sim_clock c, uint64_t cycles);

/* The inverse: the number of the last cycle that has started at or before t, i.e. the largest
 * n with sim_clock_time(c, n) <= t. sim_clock_cycles(c, sim_clock_time(c, n)) == n. */
uint64_t sim_clock_cycles(sim_clock c, sim_time t);

/* ---- Kernel and low-level callbacks (Redis ae.c style) ----------------------------------- */

typedef struct sim sim;
typedef void (*sim_fn)(sim *k, void *arg);

/* Create / destroy a kernel; sim_free frees every object created on it. sim_new aborts when
 * out of memory (so does every constructor below). */
sim *sim_new(void);
void sim_free(sim *k);

sim_time sim_now(const sim *k);

/* Run fn(k, arg) `delay` ps from now, or at absolute time `at` (>= now). Callbacks due at the
 * same time run in the order they were scheduled. A callback scheduled with delay 0 runs in the
 * next delta cycle of the current time step. Returns an id (never 0) for sim_cancel. */
uint64_t sim_schedule(sim *k, sim_time delay, sim_fn fn, void *arg);
uint64_t sim_schedule_at(sim *k, sim_time at, sim_fn fn, void *arg);

/* Cancel a scheduled callback. Safe from inside callbacks and processes, also for a callback
 * due at the current time (it is marked and dropped when it reaches the top of the heap).
 * Returns 0, or -1 if the id is unknown, has already run, is running, or was cancelled. */
int sim_cancel(sim *k, uint64_t id);

/* sim_run's results. */
enum {
    SIM_ERROR = -1,  /* elaboration failed (a port problem: sim_elaborate says which) */
    SIM_IDLE = 0,    /* nothing left to do: no callback scheduled, nothing runnable */
    SIM_UNTIL = 1,   /* reached `until`; work remains after it */
    SIM_STOPPED = 2, /* sim_stop was called */
};

/* Run every delta cycle of every time step <= until, then return. On SIM_UNTIL and SIM_IDLE
 * the time becomes `until` (unless until is SIM_FOREVER), as sc_start(t) does, so a later
 * sim_schedule counts from there. Elaborates first if needed (see sim_elaborate). */
int sim_run(sim *k, sim_time until);

/* Ask sim_run to return SIM_STOPPED at the end of the current delta cycle, whose remaining
 * callbacks and processes still run. A later sim_run resumes exactly where this one stopped. */
void sim_stop(sim *k);

/* Counters: delta cycles run so far (sc_delta_count), callbacks scheduled and not yet run or
 * cancelled, callbacks run, process activations. */
uint64_t sim_delta_count(const sim *k);
uint64_t sim_pending(const sim *k);
uint64_t sim_callbacks_run(const sim *k);
uint64_t sim_activations(const sim *k);

/* ---- Names ------------------------------------------------------------------------------ */

typedef struct sim_module sim_module;
typedef struct sim_event sim_event;
typedef struct sim_proc sim_proc;
typedef struct sim_port sim_port;

/* A module is a named node of the hierarchy; a model usually wraps one in its own struct.
 * Objects created with a module get the hierarchical name "parent.child.name"; with a NULL
 * module the name is used as is. Names may be NULL (anonymous). The kernel keeps a copy. */
sim_module *sim_module_new(sim *k, sim_module *parent, const char *name);
sim_module *sim_module_parent(const sim_module *m);

/* Full name of any kernel object above (module, event, process, port); "" when anonymous. */
const char *sim_name(const void *obj);

/* ---- Events ----------------------------------------------------------------------------- */

/* An event has at most one pending notification. As in SystemC, a new notification replaces
 * the pending one only if it is earlier: immediate beats delta beats timed, and an earlier
 * timed notification beats a later one; otherwise it is ignored. */
sim_event *sim_event_new(sim *k, sim_module *m, const char *name);

/* Immediate: processes sensitive to e become runnable in the current evaluate phase (never the
 * process that is running the notify). Cancels a pending notification. */
void sim_event_notify(sim_event *e);
/* Delta: fires in the delta-notification phase of the current delta cycle. */
void sim_event_notify_delta(sim_event *e);
/* Timed: fires `delay` ps from now; a delay of 0 is a delta notification. */
void sim_event_notify_at(sim_event *e, sim_time delay);
/* Cancel a pending delta or timed notification (no-op if none). */
void sim_event_cancel(sim_event *e);
/* Whether a notification is pending. */
bool sim_event_pending(const sim_event *e);

/* ---- Method processes (SC_METHOD) ------------------------------------------------------- */

enum { SIM_DONT_INIT = 1u }; /* do not run the process once at the start (dont_initialize) */

/* A method process: fn(k, arg) runs to completion each time it is triggered. Its static
 * sensitivity is the nsens events in sens (more can be added with sim_sensitive). Unless
 * SIM_DONT_INIT is given, it is runnable at creation, so it first runs in the next evaluate
 * phase. A process is runnable at most once per evaluate phase, however many of its events
 * fire. */
sim_proc *sim_method(sim *k, sim_module *m, const char *name, sim_fn fn, void *arg,
                     sim_event *const *sens, size_t nsens, unsigned flags);

/* Add e to p's static sensitivity. */
void sim_sensitive(sim_proc *p, sim_event *e);

/* Dynamic sensitivity, called by the running process (asserts one is running): its next
 * activation is triggered by e only, or only after `delay` ps (0: next delta), instead of by
 * its static sensitivity; after that activation static sensitivity applies again. When called
 * more than once during an activation, the last call wins. */
void sim_next_trigger_event(sim *k, sim_event *e);
void sim_next_trigger_time(sim *k, sim_time delay);

/* The running process, or NULL inside a plain callback or outside sim_run. */
sim_proc *sim_current(const sim *k);

/* ---- Interface ports (sc_port<IF>) ------------------------------------------------------ */

/* A port is a module's named access point to a service that another module provides. It
 * names the interface it needs (a string such as "eng_fabric", compared with strcmp; the
 * kernel keeps copies). An implementation of an interface is a struct of function pointers
 * and a context pointer, owned by the module that provides it and living as long as the
 * kernel. A port binds either to an implementation (not NULL), naming the implementation's
 * interface, or to a port of an enclosing module (hierarchical binding), which binds further
 * out; sim_port_get follows the chain. Binding again replaces the previous binding, of either
 * kind (a system constructor may put a different module in place of another). Bind after
 * building the modules and before sim_run; sim_elaborate checks the bindings. */
enum { SIM_PORT_OPTIONAL = 1u }; /* the port may stay unbound: sim_port_get then gives NULL */

sim_port *sim_port_new(sim *k, sim_module *m, const char *name, const char *iface, unsigned flags);
void sim_port_bind(sim_port *p, const char *iface, const void *impl);
void sim_port_bind_port(sim_port *p, sim_port *outer);
/* The implementation at the end of the chain, or NULL (it ends unbound, or in a cycle). */
const void *sim_port_get(const sim_port *p);

/* End of elaboration: checks every port. Returns ERR_OK, or ERR_INPUT with one line per
 * problem: "port sys.eng.fabric is not bound" (a required port whose chain ends unbound),
 * "port sys.eng.host wants interface eng_host but is bound to eng_fabric" (the implementation
 * or outer port it is bound to has another interface), "port a is in a binding cycle: a -> b
 * -> a" (once per cycle, from its first-created port). sim_run calls it when ports were added
 * or bound since the last successful call. */
int sim_elaborate(sim *k, err *e);

#endif
