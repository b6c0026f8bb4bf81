/* profile: what `--profile` writes (docs/profiling.md): a Chrome/Perfetto trace-event JSON of
 * a run in PopVision's categories, PopVision's execution summary and memory report per IPU,
 * and the CSV files the pictures are drawn from.
 *
 * A profile hooks into the engine (eng_watch.settled, hw/engine.h) and keeps every settled
 * superstep of every IPU in memory: its spans by category, the bytes it moved (the engine's
 * per-IPU counters, as differences) and the tiles that issued in it, and for the tiles asked
 * for (--profile-tiles) the supervisor's and each worker's activity. When the run is over
 * (profile_finish, while the engine and the compiled graph still exist) it names each
 * superstep after its program step (gr_exe_steps: superstep k is step k), keeps the periods
 * the window chooses (host calls or device iterations, marked by the command while it runs)
 * and builds the files; profile_done writes them, each whole or not at all. */
#ifndef IPUSIM_CLI_PROFILE_H
#define IPUSIM_CLI_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "hw/engine.h"
#include "workloads/graph/graph.h"

/* The options, as given. */
typedef struct profile_opts {
    int on;              /* --profile */
    const char *dir;     /* --profile-dir (default "profile") */
    const char *window;  /* --profile-window (default "calls:0,1,-1") */
    int window_given;    /* --profile-window was given: each of its items must name a period */
    const char *tiles;   /* --profile-tiles (NULL: none) */
    uint64_t max_mb;     /* --profile-max-mb (default 64) */
    const char *shaping; /* the first of the options above given, or NULL: without --profile
                          * it would shape nothing, and is refused */
} profile_opts;

#define PROFILE_HELP                                                                               \
    "  --profile                write a profile to --profile-dir: trace.json (Perfetto, chrome:\n" \
    "                           //tracing), summary.json and summary.txt, CSV for the plots\n"     \
    "                           (docs/profiling.md)\n"                                             \
    "  --profile-dir DIR        where (default ./profile)\n"                                       \
    "  --profile-window SPEC    [calls:|iterations:]LIST or all: the host calls or device\n"       \
    "                           iterations traced, LIST of indices and ranges A..B from 0,\n"      \
    "                           negative from the end (default calls:0,1,-1); an item naming\n"    \
    "                           none of the run's is an error after the run\n"                     \
    "  --profile-tiles LIST     tracks of the supervisor and workers of these tiles of each\n"     \
    "                           IPU (T or A..B, comma-separated, at most 64, that exist)\n"        \
    "  --profile-max-mb N       the trace's size bound in MiB: it stops where it reaches it,\n"    \
    "                           at about the same cycle on every IPU (default 64)\n"

/* The defaults. */
void profile_opts_init(profile_opts *o);
/* If argv[*i] is a profile option, take it (and its value) and return 0, or 2 after one error
 * line; any other argument: -1, nothing consumed. */
int profile_opt(const char *cmd, int argc, char **argv, int *i, profile_opts *o);

typedef struct profile profile;

/* With --profile: check the options against the machine m that will run (--profile-tiles
 * must name tiles its IPUs have), create the directory (its parent must exist) and check
 * that it is writable, before the run; NULL (o->on 0) or the profile in *out. 0, or 2 after
 * one error line. */
int profile_new(const char *cmd, const profile_opts *o, const mach *m, profile **out);
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
/* After a run that finished: write the files into the directory, each whole or not at all,
 * and print the summary (as summary.txt) to f, then where the files are and the trace's
 * size. 0, or 2 after one line. NULL p: 0. A --profile-window given with an item that names
 * none of the run's periods (calls:7 of a run of 3 host calls; a run without host calls or
 * iterations is one period) is that line, and no file is written. Under several ranks rank 0 writes the files and
 * every rank returns its status. */
int profile_done(profile *p, const char *cmd, FILE *f);

#endif
