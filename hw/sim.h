/* sim: the simulation kernel. Integer time, a callback scheduler, and SystemC-style events,
 * method processes, modules and interface ports on top of it.
 *
 * One kernel object `sim` is passed first to every function. It owns every object created on
 * it (events, processes, modules, ports) and frees them all in sim_free; there is no
 * per-object free, as in SystemC where the model is built once and then run. There are no
 * mutable globals, so any number of kernels can live in one process, also in different threads
 * (a kernel itself is single-threaded: use each from one thread at a time).
 *
 * In ipusim the kernel is the system's one timeline of pending time: the engine's sync
 * releases are timed events on it, and the engine asks it (sim_next_time) when the next one
 * is due. The fabric's and the host's transfers are analytic: their completion times are
 * computed (fabric/flow.c) and folded into the release they precede, not scheduled here.
 *
 * How a run proceeds (docs/kernel.md explains it at length): at each time step the kernel runs
 * delta cycles, each made of
 *   1. evaluate: the callbacks due now (in (time, sequence) order), then every runnable
 *      process;
 *   2. delta notification: events notified for the next delta fire, making processes runnable.
 * When a delta leaves nothing runnable and nothing due now, time advances to the earliest
 * scheduled callback (timed notifications and timed next_trigger are such callbacks).
 *
 * Left out on purpose, as nothing uses it: threads (SC_THREAD, wait()); time units other than
 * the picosecond; immediate notification, cancelling, next_trigger on an event, stopping a
 * run; hierarchical port binding; channels with an update phase (sc_signal, sc_fifo); a limit
 * on deltas per time step (a zero-delay loop spins forever). */
#ifndef IPUSIM_SIM_H
#define IPUSIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* ---- Time ----------------------------------------------------------------------------------- */

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

/* Time of the start of cycle `cycles` (cycle 0 starts at 0): floor(cycles * num / den),
 * computed in 128 bits, saturating at SIM_FOREVER. Rounding down per edge, not per period,
 * means no drift: cycle 3 of a 1.33 GHz clock is at 2255 ps, cycle 1330000000 at exactly 1 s. */
sim_time sim_clock_time(sim_clock c, uint64_t cycles);

/* The inverse: the number of the last cycle that has started at or before t, i.e. the largest
 * n with sim_clock_time(c, n) <= t. sim_clock_cycles(c, sim_clock_time(c, n)) == n. */
uint64_t sim_clock_cycles(sim_clock c, sim_time t);

/* ---- Kernel and callbacks ------------------------------------------------------------------- */

typedef struct sim sim;
typedef void (*sim_fn)(sim *k, void *arg);

/* Create / destroy a kernel; sim_free frees every object created on it. sim_new aborts when
 * out of memory (so does every constructor below). */
sim *sim_new(void);
void sim_free(sim *k);

sim_time sim_now(const sim *k);

/* Run fn(k, arg) at absolute time `at` (>= now). Callbacks due at the same time run in the
 * order they were scheduled; one scheduled for the current time runs in the next delta cycle. */
void sim_schedule_at(sim *k, sim_time at, sim_fn fn, void *arg);

/* When the next work is due: the current time when a delta cycle is (something is runnable
 * or notified for the next delta), else the earliest scheduled callback (a timed
 * notification or next_trigger is one); SIM_FOREVER when nothing is pending. The kernel owns
 * what is pending: a model asks it here rather than keeping its own list of times. */
sim_time sim_next_time(sim *k);

/* sim_run's results. */
enum {
    SIM_ERROR = -1, /* elaboration failed (a port problem: sim_elaborate says which) */
    SIM_IDLE = 0,   /* nothing left to do: no callback scheduled, nothing runnable */
    SIM_UNTIL = 1,  /* reached `until`; work remains after it */
};

/* Run every delta cycle of every time step <= until, then return. On SIM_UNTIL and SIM_IDLE
 * the time becomes `until` (unless until is SIM_FOREVER), as sc_start(t) does, so a later
 * schedule counts from there. Elaborates first if needed (see sim_elaborate). */
int sim_run(sim *k, sim_time until);

/* ---- Modules -------------------------------------------------------------------------------- */

typedef struct sim_module sim_module;
typedef struct sim_event sim_event;
typedef struct sim_proc sim_proc;
typedef struct sim_port sim_port;

/* A module is a named node of the hierarchy; a model usually wraps one in its own struct.
 * Objects created with a module get the hierarchical name "parent.child.name" (elaboration's
 * messages use it); with a NULL module the name is used as is. Names may be NULL (anonymous).
 * The kernel keeps a copy. */
sim_module *sim_module_new(sim *k, sim_module *parent, const char *name);

/* ---- Events --------------------------------------------------------------------------------- */

/* An event has at most one pending notification. As in SystemC, a new notification replaces
 * the pending one only if it is earlier: delta beats timed, and an earlier timed notification
 * beats a later one; otherwise it is ignored. */
sim_event *sim_event_new(sim *k, sim_module *m, const char *name);

/* Delta: fires in the delta-notification phase of the current delta cycle. */
void sim_event_notify_delta(sim_event *e);
/* Timed: fires `delay` ps from now; a delay of 0 is a delta notification. */
void sim_event_notify_at(sim_event *e, sim_time delay);
/* Whether a notification is pending. */
bool sim_event_pending(const sim_event *e);

/* ---- Method processes (SC_METHOD) ----------------------------------------------------------- */

enum { SIM_DONT_INIT = 1u }; /* do not run the process once at the start (dont_initialize) */

/* A method process: fn(k, arg) runs to completion each time it is triggered. Its static
 * sensitivity is the nsens events in sens. Unless SIM_DONT_INIT is given, it is runnable at
 * creation, so it first runs in the next evaluate phase. A process is runnable at most once
 * per evaluate phase, however many of its events fire. */
sim_proc *sim_method(sim *k, sim_module *m, const char *name, sim_fn fn, void *arg,
                     sim_event *const *sens, size_t nsens, unsigned flags);

/* Dynamic sensitivity, called by the running process (asserts one is running): its next
 * activation comes only after `delay` ps (0: next delta), instead of by its static
 * sensitivity; after that activation static sensitivity applies again. When called more than
 * once during an activation, the last call wins. */
void sim_next_trigger_time(sim *k, sim_time delay);

/* ---- Interface ports (sc_port<IF>) ---------------------------------------------------------- */

/* A port is a module's named access point to a service that another module provides. It
 * names the interface it needs (a string such as "eng_fabric", compared with strcmp; the
 * kernel keeps copies). An implementation of an interface is a struct of function pointers
 * and a context pointer, owned by the module that provides it and living as long as the
 * kernel. A port binds to an implementation (not NULL), naming the implementation's
 * interface. Binding again replaces the previous binding (a system constructor may put a
 * different module in place of another). Bind after building the modules and before sim_run;
 * sim_elaborate checks the bindings. */
enum { SIM_PORT_OPTIONAL = 1u }; /* the port may stay unbound: sim_port_get then gives NULL */

sim_port *sim_port_new(sim *k, sim_module *m, const char *name, const char *iface, unsigned flags);
void sim_port_bind(sim_port *p, const char *iface, const void *impl);
/* The implementation bound to, or NULL. */
const void *sim_port_get(const sim_port *p);

/* End of elaboration: checks every port. Returns ERR_OK, or ERR_INPUT with one line per
 * problem: "port sys.eng.fabric is not bound" (a required port left unbound), "port
 * sys.eng.host wants interface eng_host but is bound to eng_fabric" (the implementation has
 * another interface). sim_run calls it when ports were added or bound since the last
 * successful call. */
int sim_elaborate(sim *k, err *e);

#endif
