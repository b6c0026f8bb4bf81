/* profile: what `--profile` writes (docs/profiling.md): a Chrome/Perfetto trace-event JSON of
 * a run in PopVision's categories, PopVision's execution summary and memory report per IPU,
 * the compute sets' table, and the CSV files the pictures are drawn from.
 *
 * A profile hooks into the engine (eng_watch.settled, hw/engine.h) and keeps every settled
 * superstep of every IPU in memory: its spans by category, the bytes it moved (the engine's
 * per-IPU counters, as differences) and the tiles that issued in it, and for the tiles asked
 * for (the tiles option) the supervisor's and each worker's activity. When the run is over
 * (profile_finish, while the engine and the compiled graph still exist) it names each
 * superstep after its program step (gr_exe_steps: superstep k is step k), keeps the periods
 * the window chooses (host calls or device iterations, marked by the command while it runs)
 * and builds the files; profile_write writes them, each whole or not at all. Nothing here
 * prints: errors come back as one line in an err, the summary as text for the caller. The
 * command line's options (--profile ...) are cli/'s (cli/profile_opts.c). */
#ifndef IPUSIM_BENCH_PROFILE_H
#define IPUSIM_BENCH_PROFILE_H

#include <stdint.h>

#include "base/err.h"
#include "base/text.h"
#include "hw/engine.h"
#include "workloads/graph/graph.h"

/* What to write, and where. */
typedef struct profile_opts {
    const char *dir;    /* the profile's directory (default "profile") */
    const char *window; /* [calls:|iterations:]LIST or all (default "calls:0,1,-1") */
    int window_given;   /* the window is the user's: each of its items must name a period */
    const char *tiles;  /* tiles whose contexts get tracks: T or A..B, comma-separated (NULL:
                         * none) */
    uint64_t max_mb;    /* the trace's size bound in MiB (default 64) */
} profile_opts;

/* The defaults. */
void profile_opts_init(profile_opts *o);

typedef struct profile profile;

/* Check the options against the machine m that will run (the tiles must be tiles its IPUs
 * have), check that the directory can be made or replaced (its parent must exist), before
 * the run; the profile in *out. 0, or ERR_INPUT with one line in e ("--profile-tiles ...:
 * ..."), *out NULL. Under mpirun only rank 0 checks the directory (it writes the files). */
int profile_new(const profile_opts *o, const mach *m, profile **out, err *e);
void profile_free(profile *p);

/* Hook the profile into a run's watch (before the system is built): it records each settled
 * superstep. NULL p: nothing. */
void profile_attach(profile *p, eng_watch *w);

/* The end of a host call (PROFILE_CALL) or of a device iteration (PROFILE_ITER) at `cycle`:
 * the boundaries of the window's periods. Any order. */
enum { PROFILE_CALL, PROFILE_ITER, PROFILE_NUNITS };
void profile_mark(profile *p, int unit, uint64_t cycle);

/* After the run: IPU ipu's whole-IPU supersteps (its last record, from its last release to
 * its halt, not counted), and the cycle superstep k began (k < that number; 0 past it).
 * Under several ranks the first of these calls and profile_finish is a collective (every
 * rank calls it): the records of every IPU come from the rank that owns it. */
size_t profile_steps(profile *p, const eng *g, uint32_t ipu);
uint64_t profile_step_start(profile *p, const eng *g, uint32_t ipu, size_t k);

/* The run is over: build the trace, the summaries and the CSV files from what was recorded,
 * the engine and the compiled graph (x: NULL when the run had none; the steps are then
 * "superstep K" and tile memory is the image's size). `what` names the run. Once only: a
 * second call does nothing. */
void profile_finish(profile *p, const eng *g, const gr_exe *x, const char *what);

/* After a run that finished (else nothing: 0): write the files into the directory, each
 * whole or not at all. 0, or the status with one line in e. A window given with an item that
 * names none of the run's periods (calls:7 of a run of 3 host calls; a run without host
 * calls or iterations is one period) is that line, on every rank, and no file is written.
 * Under several ranks only rank 0 writes (its status is its own: the caller makes the ranks
 * agree, profile_ranks). */
int profile_write(profile *p, err *e);
/* The ranks of the run profiled (after profile_finish). */
struct rank_comm *profile_ranks(const profile *p);

/* The summary as summary.txt holds it, then a line saying where the files are and how large
 * the trace is, into out (for the caller to print). */
void profile_report(const profile *p, txt *out);

#endif
