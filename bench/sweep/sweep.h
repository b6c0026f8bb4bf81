/* sweep: running one command over a grid of parameter values, in-process, and writing one
 * CSV row per point: the engine of `ipusim sweep` (cli/cmd_sweep.c is the command). It does not
 * know the CLI: the caller hands it a function that runs one command with an argv, and one
 * that shows a line of progress or an error; it prints nothing itself.
 *
 *   sweep_grid.c  parameters (NAME=V1,V2 | NAME=A..B[:STEP] | NAME=A..B:xF), the grid they
 *                 span, and the argv of each point
 *   sweep_json.c  a point's JSON report (read with base/json) as named metrics, one per number
 *   sweep_csv.c   the CSV: reading an earlier one (resume), quoting, formatting rows, the
 *                 columns (the union of the points'), rewriting it whole when they grow
 *   sweep_run.c   the runner: N pthreads, stdout to /dev/null, one write() per row, each
 *                 point's JSON report kept, a lock against a second sweep on the same CSV
 *
 * Every function that can fail on bad input writes one line (no trailing newline) into
 * msg[SWEEP_MSG] and returns 2; the caller prints it. */
#ifndef IPUSIM_SWEEP_H
#define IPUSIM_SWEEP_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "base/json.h"

enum {
    SWEEP_MSG = 512,            /* size of every msg buffer */
    SWEEP_MAX_PARAMS = 16,      /* --param options per sweep */
    SWEEP_MAX_VALUES = 100000,  /* values of one parameter */
    SWEEP_MAX_POINTS = 1000000, /* points of the grid */
    SWEEP_MAX_JOBS = 256,       /* -j */
};

/* ---- the grid (sweep_grid.c) ---- */
typedef struct sweep_param {
    char *name;
    char **values; /* canonical text of each value: what the CSV holds and argv receives */
    size_t nvalues;
} sweep_param;

typedef struct sweep_grid {
    sweep_param p[SWEEP_MAX_PARAMS];
    unsigned np;
    size_t npoints; /* product of the nvalues (1 with no parameter) */
} sweep_grid;

/* Parse one --param SPEC and append it to the grid:
 *   NAME=V1,V2,...   the listed values (text, kept as written; a value in double quotes may
 *                    hold commas, a doubled quote inside it is one quote: "a,b",c)
 *   NAME=A..B        whole numbers A, A+1, .., B (or down to B when A > B)
 *   NAME=A..B:STEP   A, A+STEP, .. up to B (decimals allowed; STEP > 0; counts down if A > B)
 *   NAME=A..B:xF     A, A*F, A*F*F, .. up to B (0 < A <= B, F > 1): 64..1024:x2
 * NAME is [A-Za-z_][A-Za-z0-9_-]*, not "status", not given twice. */
int sweep_grid_add(sweep_grid *g, const char *spec, char *msg);
void sweep_grid_free(sweep_grid *g);
/* The value of parameter j at point i. Points are numbered in a fixed order: the first
 * parameter varies slowest, the last fastest (nested loops in the order given). */
const char *sweep_grid_value(const sweep_grid *g, size_t point, unsigned j);
/* "k=64 m=128": the point's values, for progress lines. */
void sweep_grid_label(const sweep_grid *g, size_t point, char *buf, size_t len);

/* Check the command's ARGS against the grid: every {NAME} must name a parameter, and --json
 * is the sweep's own. */
int sweep_args_check(const sweep_grid *g, char *const *args, int nargs, char *msg);
/* argv for one point: CMDNAME, ARGS with each {NAME} replaced by its value, then
 * `--NAME VALUE` for every parameter ARGS does not mention, then `--json JSON`. One
 * malloc'd block (free it once); *argc_out gets the count. */
char **sweep_argv(const sweep_grid *g, size_t point, const char *cmdname, char *const *args,
                  int nargs, const char *json, int *argc_out);

/* ---- JSON (sweep_json.c) ---- */
typedef struct sweep_metric {
    char *name; /* members joined with '.', array elements by index: "stats.cycles", "a.0" */
    char *text; /* the number exactly as the JSON wrote it */
} sweep_metric;

typedef struct sweep_metrics {
    sweep_metric *m;
    size_t n, cap;
} sweep_metrics;

/* Append every number below o (base/json.h) to out, under its path, as the text it has. */
void sweep_json_metrics(json *o, sweep_metrics *out);
/* Parse text (len bytes, named name in messages) and append its numbers to out. On malformed
 * input: 2 and one "name:line:col: error: ..." line in msg (json_parse). */
int sweep_json_flatten(const char *name, const char *text, size_t len, sweep_metrics *out,
                       char *msg);
void sweep_metrics_free(sweep_metrics *m);

/* ---- CSV (sweep_csv.c) ---- */
/* A CSV header: its column names, malloc'd. */
typedef struct sweep_cols {
    char **name;
    size_t n, cap;
} sweep_cols;

typedef struct sweep_csv {
    sweep_cols cols; /* the header's columns; n 0: no header (new or empty file) */
    char **done;     /* each row's parameter values joined by '\x1f', sorted */
    size_t ndone;
    char **bad; /* the same for the rows whose status is not 0 */
    size_t nbad;
    size_t valid_len; /* bytes up to the end of the last whole line */
    size_t file_len;
} sweep_csv;

/* Read an earlier CSV at path (a missing file is an empty one). Its first columns must be the
 * grid's parameter names in order, then "status"; anything after a last newline (a torn line)
 * is not counted (file_len > valid_len tells). */
int sweep_csv_load(const char *path, const sweep_grid *g, sweep_csv *out, char *msg);
void sweep_csv_free(sweep_csv *c);
/* Was the point already written? With a non-zero status? */
int sweep_csv_done(const sweep_csv *c, const sweep_grid *g, size_t point);
int sweep_csv_failed(const sweep_csv *c, const sweep_grid *g, size_t point);
/* The key sweep_csv_done() compares, malloc'd. */
char *sweep_point_key(const sweep_grid *g, size_t point);
/* Add to c every name of m that it lacks, each right after the name before it in m (the first
 * ones after column `first`), so that columns of one kind stay together as the points name
 * them. Returns how many were added. */
size_t sweep_cols_merge(sweep_cols *c, size_t first, const sweep_metrics *m);
void sweep_cols_free(sweep_cols *c);
/* Rewrite the CSV at path whole (file_write_atomic: the old file stays if it fails) with the
 * header `to`: each row's fields moved to their columns' new places, empty in the columns its
 * header lacks. 0, or 2 with msg. */
int sweep_csv_rewrite(const char *path, const sweep_cols *to, char *msg);
/* Append one field to a line being built (quoted when it holds , " or a line break),
 * preceded by a comma unless first. */
void sweep_csv_field(FILE *f, const char *text, int first);

/* ---- the runner (sweep_run.c) ---- */
typedef struct sweep_opts {
    const sweep_grid *grid;
    const char *cmdname; /* argv[0] of every point */
    /* Run the command with argv (argv[0] = cmdname); its exit status. Called from several
     * threads at once when jobs > 1. */
    int (*run)(void *ctx, int argc, char **argv);
    void *ctx;
    char *const *args; /* the command's arguments after its name */
    int nargs;
    unsigned jobs;   /* points at a time, >= 1 */
    const char *out; /* the CSV */
    /* Show one line of progress or an error (no newline); never called by two threads at
     * once. */
    void (*say)(void *ctx, const char *line);
    /* NULL, or a flag a signal handler sets (the commands' runs read it too): once set, no
     * further point starts, and a point that fails meanwhile gets no row (it was stopped, so
     * a re-run runs it again). */
    const volatile sig_atomic_t *stop;
} sweep_opts;

/* Run every point not yet in the CSV, N at a time, with stdout sent to /dev/null meanwhile;
 * progress and errors through say. Returns 0 when every point of the grid has a row with status
 * 0, 1 when some has another status (this run's or an earlier one's), 2 when the sweep itself
 * could not run, 3 when it was stopped (o->stop) before every point had run. */
int sweep_run(const sweep_opts *o);

#endif
