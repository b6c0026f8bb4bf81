/* wl_micro: microbenchmarks of a simulated machine — the table that shows the presets hold.
 *
 * Each benchmark builds real tile programs (assembly generated in C), runs them on the BSP
 * engine with the fabric attached, and measures its figures from the run: the cycle counters
 * the program reads ($ccount: latencies by ping-pong, syncs, memory, AMP, all-reduce), or for
 * the exchange and link bandwidths the exchange trace and the per-IPU DoExchange cycles.
 * Next to each measured figure sit the figure the preset's parameters imply (a formula over
 * the mach fields, written in micro.c) and the published figure (docs/sources.md) where one
 * exists. Nothing here prints: the caller gets rows. */
#ifndef IPUSIM_WL_MICRO_H
#define IPUSIM_WL_MICRO_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "host/system.h"
#include "hw/machine.h"

/* One line of the table. */
typedef struct wl_micro_row {
    const char *bench; /* the benchmark that measured it ("sync", "link", ...) */
    char what[72];     /* what was measured, e.g. "external sync, 4 IPUs" */
    const char *unit;  /* "cycles", "B/cycle", "GB/s", "TB/s", "TFLOPS" */
    double sim;        /* measured from the simulated run */
    double implied;    /* what the preset's parameters imply */
    double published;  /* docs/sources.md's figure for this chip, NaN when there is none */
} wl_micro_row;

typedef struct wl_micro_table {
    wl_micro_row *rows;
    size_t n, cap;
} wl_micro_table;

/* A microbenchmark program's default cycle limit: 10^11, far past the longest of them. */
#define WL_MICRO_MAX_CYCLES 100000000000ull

typedef struct wl_micro_cfg {
    unsigned threads;        /* host threads (0: online CPUs) */
    uint64_t max_cycles;     /* no instruction of a program issues after this cycle (0: the
                                default, WL_MICRO_MAX_CYCLES) */
    struct rank_comm *ranks; /* the run's ranks (base/rank.h); NULL: this process alone. Each
                                program's IPUs are shared out among them, and every rank
                                computes the same table */
} wl_micro_cfg;

/* The benchmarks, in table order: their names and one-line summaries (i < wl_micro_count()). */
size_t wl_micro_count(void);
const char *wl_micro_name(size_t i);
const char *wl_micro_summary(size_t i);

/* Run one benchmark by name, or all of them for NULL or "all", on machine m (its nipus is
 * ignored: each benchmark picks the IPUs it needs; its tiles_per_ipu is the IPU whole-IPU
 * benchmarks use). Appends rows to *t (start from a zeroed table). ERR_INPUT for an unknown
 * name (the message lists the names) or a machine a benchmark cannot run on; ERR_FAULT if a
 * benchmark program faults (a bug here). On error the rows appended so far stay in *t. */
int wl_micro_run(const mach *m, const char *name, const wl_micro_cfg *cfg, wl_micro_table *t,
                 err *e);
/* The same under a command's controls (a superstep limit, a stop flag: ERR_STOPPED, a
 * heartbeat); ctl NULL: none. */
int wl_micro_run_ctl(const mach *m, const char *name, const wl_micro_cfg *cfg, const sys_ctl *ctl,
                     wl_micro_table *t, err *e);

void wl_micro_table_free(wl_micro_table *t);

/* 100 x (x - ref) / ref; NaN when ref is NaN or 0. */
double wl_micro_diff_pct(double x, double ref);

/* The table as CSV text (header line, then one line per row; NaN as an empty field), malloc'd.
 * Columns: bench, what, unit, simulated, implied, published,
 * sim_vs_implied_pct, sim_vs_published_pct. */
char *wl_micro_csv(const wl_micro_table *t);

#endif
