/* sweep_run: runs the points of a sweep in this process, N at a time on N pthreads, and
 * appends one CSV row per point as it completes.
 *
 * Each point calls the subcommand's function with its own argv and `--json TMPDIR/point-I.json`;
 * the commands keep no globals, so points can run side by side. Their human reports go to
 * stdout, which is shared: for the whole sweep file descriptor 1 points at /dev/null (restored
 * after), and the sweep reports progress on stderr. The row is the point's parameter values,
 * its exit status and every number of its JSON report (sweep_json.c), in the columns of the
 * CSV's header: the header comes from the first point that produced a report (or from the
 * file, when resuming), and a point's numbers that the header lacks are left out (with one
 * warning). Each row is formatted whole and appended with a single write() to a file opened
 * O_APPEND, so a killed sweep leaves a header and whole rows. Progress and errors go to the
 * caller's say() one line at a time (under the lock). A re-run skips the points whose
 * parameter values already have a row (failed ones too: delete a row to run it again; the
 * exit status stays 1 while the CSV holds a failed point). A stop (Ctrl-C) starts no further
 * point and records no point that failed meanwhile (its command was stopped): a re-run goes on
 * from the rows written.
 * Left out: time limits per point (a point runs until its command returns). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "bench/sweep/sweep.h"

enum { STACK_BYTES = 16 << 20, MAX_JSON_BYTES = 256 << 20 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One line to the caller's say(), formatted. */
static void say(const sweep_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const sweep_opts *o, const char *fmt, ...)
{
    char line[SWEEP_MSG + 512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->say(o->ctx, line);
}

typedef struct held {
    size_t point;
    int status;
} held;

typedef struct run {
    const sweep_opts *o;
    size_t *todo, ntodo;
    pthread_mutex_t mu;
    size_t next, finished, nfailed;
    size_t nearlier; /* points whose earlier row has a non-zero status */
    int fd;
    char tmpdir[256];
    double t0;
    char **cols; /* the header (owned by csv or by own_cols) */
    size_t ncols;
    char **own_cols;
    held *held; /* rows finished before there was a header */
    size_t nheld;
    int io_error, warned;
} run;

/* 0 when all of buf reached the file; after the first failure nothing more is written. */
static int put_all(run *r, const char *buf, size_t len)
{
    ssize_t n = r->io_error ? -1 : write(r->fd, buf, len);
    if (n != (ssize_t)len && !r->io_error) {
        say(r->o, "cannot write '%s': %s; stopping", r->o->out,
            n < 0 ? strerror(errno) : "short write");
        r->io_error = 1;
    }
    return n == (ssize_t)len ? 0 : -1;
}

/* Format one row and append it with one write(); a metric the point lacks is empty. 0 when
 * the row is on disk. */
static int write_row(run *r, size_t point, int status, const sweep_metrics *m)
{
    const sweep_grid *g = r->o->grid;
    char *buf = NULL, num[16];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        xoom(BUFSIZ); /* open_memstream fails only for memory */
    for (unsigned j = 0; j < g->np; j++)
        sweep_csv_field(f, sweep_grid_value(g, point, j), j == 0);
    snprintf(num, sizeof num, "%d", status);
    sweep_csv_field(f, num, 0);
    for (size_t c = g->np + 1; c < r->ncols; c++) {
        const char *v = "";
        for (size_t i = 0; m && i < m->n; i++)
            if (strcmp(m->m[i].name, r->cols[c]) == 0) {
                v = m->m[i].text;
                break;
            }
        sweep_csv_field(f, v, 0);
    }
    fputc('\n', f);
    fclose(f);
    int rc = put_all(r, buf, len);
    free(buf);
    return rc;
}

static int has_col(char **cols, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cols[i], name) == 0)
            return 1;
    return 0;
}

/* The header of a new file: the parameters, status, then m's numbers in its order; then the
 * rows that waited for it. */
static void write_header(run *r, const sweep_metrics *m)
{
    const sweep_grid *g = r->o->grid;
    size_t n = g->np + 1 + (m ? m->n : 0);
    r->own_cols = xmalloc(n * sizeof *r->own_cols);
    r->cols = r->own_cols;
    r->ncols = 0;
    for (unsigned j = 0; j < g->np; j++)
        r->cols[r->ncols++] = g->p[j].name;
    r->cols[r->ncols++] = "status";
    for (size_t i = 0; m && i < m->n; i++) {
        if (has_col(r->cols, r->ncols, m->m[i].name))
            continue;
        r->cols[r->ncols++] = xstrdup(m->m[i].name);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        xoom(BUFSIZ); /* open_memstream fails only for memory */
    for (size_t c = 0; c < r->ncols; c++)
        sweep_csv_field(f, r->cols[c], c == 0);
    fputc('\n', f);
    fclose(f);
    put_all(r, buf, len);
    free(buf);
    for (size_t i = 0; i < r->nheld; i++)
        write_row(r, r->held[i].point, r->held[i].status, NULL);
    r->nheld = 0;
}

/* 0: the report read into m; 1: no report file; 2: unreadable or malformed (msg). */
static int read_report(const char *path, sweep_metrics *m, char *msg)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 1;
    err e;
    size_t n = 0;
    char *s = file_read(path, MAX_JSON_BYTES, &n, &e);
    if (!s) {
        snprintf(msg, SWEEP_MSG, "%.*s", SWEEP_MSG - 1, e.msg);
        return 2;
    }
    int rc = sweep_json_flatten(s, n, m, msg);
    free(s);
    return rc;
}

/* A stop was asked for (Ctrl-C, SIGTERM). */
static int stop_asked(const run *r)
{
    return r->o->stop && *r->o->stop;
}

/* One point, start to row. */
static void run_point(run *r, size_t point)
{
    const sweep_opts *o = r->o;
    char json[320], label[256], msg[SWEEP_MSG];
    snprintf(json, sizeof json, "%s/point-%zu.json", r->tmpdir, point);
    sweep_grid_label(o->grid, point, label, sizeof label);
    int argc = 0;
    char **argv = sweep_argv(o->grid, point, o->cmdname, o->args, o->nargs, json, &argc);
    double t = now_s();
    int st = argv ? o->run(o->ctx, argc, argv) : 2;
    t = now_s() - t;
    free(argv);
    sweep_metrics m = {0};
    int jr = read_report(json, &m, msg);
    remove(json);
    pthread_mutex_lock(&r->mu);
    if (st != 0 && stop_asked(r)) { /* stopped: no row, so that a re-run runs it */
        say(r->o, "%s: stopped, not recorded", label);
        pthread_mutex_unlock(&r->mu);
        sweep_metrics_free(&m);
        return;
    }
    if (jr == 2)
        say(r->o, "%s: JSON report: %s", label, msg);
    else if (jr == 1 && st == 0)
        say(r->o, "%s: the command wrote no JSON report", label);
    if (jr && st == 0)
        st = 2;
    if (jr)
        sweep_metrics_free(&m);
    if (!r->cols && m.n)
        write_header(r, &m);
    int on_disk = 1; /* a held row is reported now and written with the header */
    if (r->cols) {
        on_disk = write_row(r, point, st, &m) == 0;
        for (size_t i = 0; i < m.n && !r->warned; i++)
            if (!has_col(r->cols, r->ncols, m.m[i].name)) {
                say(r->o,
                    "%s: '%s' is not a column of '%s'; left out "
                    "(and any others)",
                    label, m.m[i].name, o->out);
                r->warned = 1;
            }
    } else {
        r->held[r->nheld++] = (held){point, st};
    }
    r->finished++;
    r->nfailed += st != 0;
    if (!on_disk)
        say(r->o, "[%zu/%zu] %s: not recorded: its row could not be written to '%s'", r->finished,
            r->ntodo, label, o->out);
    else if (st)
        say(r->o, "[%zu/%zu] %s: status %d, %.2f s", r->finished, r->ntodo, label, st, t);
    else
        say(r->o, "[%zu/%zu] %s: ok, %.2f s", r->finished, r->ntodo, label, t);
    pthread_mutex_unlock(&r->mu);
    sweep_metrics_free(&m);
}

static void *worker(void *arg)
{
    run *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        int stop = r->io_error || r->next == r->ntodo || stop_asked(r);
        size_t point = stop ? 0 : r->todo[r->next++];
        pthread_mutex_unlock(&r->mu);
        if (stop)
            return NULL;
        run_point(r, point);
    }
}

/* The points to run, the CSV opened for appending (its torn tail cut off, or emptied when it
 * holds no metric column), the temporary directory. 0 or 2. */
static int prepare(run *r, sweep_csv *csv)
{
    const sweep_opts *o = r->o;
    char msg[SWEEP_MSG];
    if (sweep_args_check(o->grid, o->args, o->nargs, msg) ||
        sweep_csv_load(o->out, o->grid, csv, msg)) {
        say(r->o, "%s", msg);
        return 2;
    }
    r->fd = open(o->out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (r->fd < 0) {
        say(r->o, "cannot open '%s': %s", o->out, strerror(errno));
        return 2;
    }
    size_t keep = csv->valid_len;
    if (csv->cols && csv->ncols == o->grid->np + 1) {
        say(r->o, "'%s' has no metric columns (every point failed): starting it again", o->out);
        keep = 0;
    } else if (csv->file_len > keep) {
        say(r->o, "'%s': cutting off a torn last line", o->out);
    }
    if (keep < csv->file_len && ftruncate(r->fd, (off_t)keep) != 0) {
        say(r->o, "cannot truncate '%s': %s", o->out, strerror(errno));
        return 2;
    }
    if (keep == 0) {
        sweep_csv_free(csv);
    } else {
        r->cols = csv->cols;
        r->ncols = csv->ncols;
    }
    r->todo = xmalloc((o->grid->npoints + 1) * sizeof *r->todo);
    r->held = xmalloc((o->grid->npoints + 1) * sizeof *r->held);
    for (size_t i = 0; i < o->grid->npoints; i++) {
        if (!sweep_csv_done(csv, o->grid, i))
            r->todo[r->ntodo++] = i;
        else
            r->nearlier += sweep_csv_failed(csv, o->grid, i);
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(r->tmpdir, sizeof r->tmpdir, "%s/ipusim-sweep-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (r->ntodo && !mkdtemp(r->tmpdir)) {
        say(r->o, "cannot make a directory '%s': %s", r->tmpdir, strerror(errno));
        return 2;
    }
    return 0;
}

/* Run the points on min(jobs, points) threads, with stdout on /dev/null meanwhile. */
static int run_all(run *r)
{
    unsigned n = r->o->jobs < r->ntodo ? r->o->jobs : (unsigned)r->ntodo, started = 0;
    pthread_t th[SWEEP_MAX_JOBS];
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved < 0 || nul < 0 || dup2(nul, STDOUT_FILENO) < 0) {
        say(r->o, "cannot send stdout to /dev/null: %s", strerror(errno));
        if (saved >= 0)
            close(saved);
        if (nul >= 0)
            close(nul);
        return 2;
    }
    close(nul);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, STACK_BYTES);
    for (unsigned k = 0; k < n; k++)
        if (pthread_create(&th[started], &at, worker, r) == 0)
            started++;
    pthread_attr_destroy(&at);
    if (started == 0) /* no thread to be had: run them here */
        worker(r);
    for (unsigned k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    return 0;
}

int sweep_run(const sweep_opts *o)
{
    run r = {.o = o, .fd = -1};
    sweep_csv csv;
    memset(&csv, 0, sizeof csv);
    pthread_mutex_init(&r.mu, NULL);
    int rc = prepare(&r, &csv);
    size_t npts = o->grid->npoints;
    if (!rc && r.ntodo == 0)
        say(o, "all %zu points are already in '%s'", npts, o->out);
    if (!rc && r.ntodo) {
        say(o, "%zu points, %zu already in '%s', %zu to run, %u at a time", npts, npts - r.ntodo,
            o->out, r.ntodo, o->jobs < r.ntodo ? o->jobs : (unsigned)r.ntodo);
        r.t0 = now_s();
        rc = run_all(&r);
        if (!r.cols && r.nheld) /* no point wrote a report: a header of parameters and status */
            write_header(&r, NULL);
        if (r.io_error)
            rc = 2;
        if (!rc && stop_asked(&r) && r.finished < r.ntodo) {
            say(o,
                "stopped: %zu points in %.1f s, %zu failed, %zu not run -> %s (a re-run goes on)",
                r.finished, now_s() - r.t0, r.nfailed, r.ntodo - r.finished, o->out);
            rc = 3;
        } else if (!rc) {
            say(o, "%zu points in %.1f s, %zu failed -> %s", r.finished, now_s() - r.t0, r.nfailed,
                o->out);
        }
        rmdir(r.tmpdir);
    }
    if (!rc && r.nearlier)
        say(o,
            "'%s' has %zu earlier row%s of failed points (delete a row to run its point "
            "again)",
            o->out, r.nearlier, r.nearlier == 1 ? "" : "s");
    if (r.fd >= 0 && close(r.fd) != 0 && !rc) {
        say(o, "cannot write '%s': %s", o->out, strerror(errno));
        rc = 2;
    }
    if (r.own_cols)
        for (size_t c = o->grid->np + 1; c < r.ncols; c++)
            free(r.own_cols[c]);
    free(r.own_cols);
    free(r.todo);
    free(r.held);
    sweep_csv_free(&csv);
    pthread_mutex_destroy(&r.mu);
    if (!rc && (r.nfailed || r.nearlier))
        rc = 1;
    return rc;
}
