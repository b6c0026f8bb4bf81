/* sweep_run: runs the points of a sweep in this process, N at a time on N pthreads, and
 * appends one CSV row per point as it completes.
 *
 * Each point calls the subcommand's function with its own argv and `--json` into the sweep's
 * directory of points (FILE.points/ beside FILE.csv), where its report is kept afterwards as
 * NAME=VALUE,...json; the commands keep no globals, so points can run side by side. Their
 * human reports go to stdout, which is shared: for the whole sweep file descriptor 1 points at
 * /dev/null (restored after), and the sweep reports progress on stderr. The row is the point's
 * parameter values, its exit status and every number of its JSON report (sweep_json.c), in the
 * columns of the CSV's header: the header comes from the first point that produced a report
 * (or from the file, when resuming), and a point that brings numbers the header lacks adds
 * their columns: the file is rewritten whole (atomically) with the new header and the earlier
 * rows' fields in their places, so the CSV holds the union of the points' columns. Each row is
 * formatted whole and appended with a single write() to a file opened O_APPEND, so a killed
 * sweep leaves a header and whole rows. The directory of points is locked (flock) for the
 * whole sweep: a second sweep on the same CSV is refused at once. Progress and errors go to the
 * caller's say() one line at a time (under the lock). A re-run skips the points whose
 * parameter values already have a row (failed ones too: delete a row to run it again; the
 * exit status stays 1 while the CSV holds a failed point). A stop (Ctrl-C) starts no further
 * point and records no point that failed meanwhile (its command was stopped): a re-run goes on
 * from the rows written.
 * Left out: time limits per point (a point runs until its command returns). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
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
    char dir[4096]; /* the points' reports: FILE.points beside FILE.csv */
    int dirfd;      /* open on dir, and locked, for the whole sweep */
    int made_dir;   /* dir was made by this sweep (removed if it cannot start) */
    double t0;
    sweep_cols cols; /* the header */
    held *held;      /* rows finished before there was a header */
    size_t nheld;
    int io_error;
} run;

/* 0 when all of buf reached the file; after the first failure nothing more is written. A
 * short write (the disk filled part way through the row) goes on, so the reason is named
 * ("No space left on device"); the torn row is cut off when the sweep resumes. */
static int put_all(run *r, const char *buf, size_t len)
{
    if (r->io_error)
        return -1;
    if (file_write_all(r->fd, buf, len) == 0)
        return 0;
    say(r->o, "cannot write '%s': %s; stopping", r->o->out, strerror(errno));
    r->io_error = 1;
    return -1;
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
    for (size_t c = g->np + 1; c < r->cols.n; c++) {
        const char *v = "";
        for (size_t i = 0; m && i < m->n; i++)
            if (strcmp(m->m[i].name, r->cols.name[c]) == 0) {
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

/* The header of a new file: the parameters, status, then m's numbers in its order; then the
 * rows that waited for it. */
static void write_header(run *r, const sweep_metrics *m)
{
    const sweep_grid *g = r->o->grid;
    sweep_cols *c = &r->cols;
    for (unsigned j = 0; j <= g->np; j++) {
        c->name = xgrow(c->name, &c->cap, c->n + 1, sizeof *c->name);
        c->name[c->n++] = xstrdup(j < g->np ? g->p[j].name : "status");
    }
    sweep_cols_merge(c, g->np + 1, m);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        xoom(BUFSIZ); /* open_memstream fails only for memory */
    for (size_t k = 0; k < c->n; k++)
        sweep_csv_field(f, c->name[k], k == 0);
    fputc('\n', f);
    fclose(f);
    put_all(r, buf, len);
    free(buf);
    for (size_t i = 0; i < r->nheld; i++)
        write_row(r, r->held[i].point, r->held[i].status, NULL);
    r->nheld = 0;
}

/* Open the CSV for appending. 0, or -1 after saying why. */
static int open_csv(run *r)
{
    r->fd = open(r->o->out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (r->fd < 0)
        say(r->o, "cannot open '%s': %s", r->o->out, strerror(errno));
    return r->fd < 0 ? -1 : 0;
}

/* The header for a point's numbers m: written first when there is none, or grown by the
 * columns m brings (the file rewritten whole with them). Called under the lock. */
static void fit_header(run *r, const sweep_metrics *m)
{
    const sweep_grid *g = r->o->grid;
    char msg[SWEEP_MSG];
    if (!r->cols.n) {
        if (m->n)
            write_header(r, m);
        return;
    }
    if (r->io_error || sweep_cols_merge(&r->cols, g->np + 1, m) == 0)
        return;
    close(r->fd);
    r->fd = -1;
    if (sweep_csv_rewrite(r->o->out, &r->cols, msg)) {
        say(r->o, "cannot add columns to '%s': %s; stopping", r->o->out, msg);
        r->io_error = 1;
        return;
    }
    if (open_csv(r))
        r->io_error = 1;
}

/* Where point's report is kept: DIR/NAME=VALUE,NAME=VALUE.json, each byte of a value outside
 * [A-Za-z0-9._+-] as %XX (DIR/point.json without parameters; DIR/point-I.json when the name
 * would be longer than 200 bytes). */
static void report_path(const run *r, size_t point, char *buf, size_t len)
{
    const sweep_grid *g = r->o->grid;
    char name[256] = "point";
    size_t n = g->np ? 0 : 5;
    for (unsigned j = 0; j < g->np && n < 200; j++) {
        n += (size_t)snprintf(name + n, sizeof name - n, "%s%s=", j ? "," : "", g->p[j].name);
        for (const unsigned char *v = (const unsigned char *)sweep_grid_value(g, point, j);
             *v && n < 200; v++)
            n += (size_t)(isalnum(*v) || strchr("._+-", *v)
                              ? snprintf(name + n, sizeof name - n, "%c", *v)
                              : snprintf(name + n, sizeof name - n, "%%%02X", *v));
    }
    if (n >= 200)
        snprintf(name, sizeof name, "point-%zu", point);
    snprintf(buf, len, "%s/%s.json", r->dir, name);
}

/* 0: the report read into m; 1: no report file; 2: unreadable or malformed (msg: one
 * "path:line:col: error: ..." line for a report that is not JSON). */
static int read_report(const char *path, sweep_metrics *m, char *msg)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 1;
    err e;
    err_clear(&e);
    json *o = json_load(path, MAX_JSON_BYTES, &e);
    if (!o) {
        snprintf(msg, SWEEP_MSG, "%.*s", SWEEP_MSG - 1, e.msg);
        return 2;
    }
    sweep_json_metrics(o, m);
    json_object_put(o);
    return 0;
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
    char json[4400], keep[4400], label[256], msg[SWEEP_MSG];
    snprintf(json, sizeof json, "%s/.point-%zu.json", r->dir, point);
    sweep_grid_label(o->grid, point, label, sizeof label);
    int argc = 0;
    char **argv = sweep_argv(o->grid, point, o->cmdname, o->args, o->nargs, json, &argc);
    double t = now_s();
    int st = argv ? o->run(o->ctx, argc, argv) : 2;
    t = now_s() - t;
    free(argv);
    sweep_metrics m = {0};
    int jr = read_report(json, &m, msg);
    pthread_mutex_lock(&r->mu);
    if (st != 0 && stop_asked(r)) { /* stopped: no row, so that a re-run runs it */
        remove(json);
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
    fit_header(r, &m);
    int on_disk = 1; /* a held row is reported now and written with the header */
    if (r->cols.n)
        on_disk = write_row(r, point, st, &m) == 0;
    else
        r->held[r->nheld++] = (held){point, st};
    report_path(r, point, keep, sizeof keep);
    if (jr == 0 && on_disk)
        rename(json, keep); /* the point's report, beside its row */
    else
        remove(keep); /* no report of this run: none of an earlier one either */
    remove(json);
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

/* Make (or open) the directory of points, FILE.points beside FILE.csv, and lock it for the
 * whole sweep. 0, or 2 after saying why. */
static int lock_dir(run *r)
{
    const char *out = r->o->out;
    size_t n = strlen(out);
    n -= n > 4 && strcmp(out + n - 4, ".csv") == 0 ? 4 : 0;
    if (n + sizeof ".points" + 64 > sizeof r->dir) { /* 64: DIR/.point-I.json, its twin */
        say(r->o, "'%.60s...': %zu bytes, too long a path for the reports beside it (at most %zu)",
            out, strlen(out), sizeof r->dir - sizeof ".points" - 64);
        return 2;
    }
    snprintf(r->dir, sizeof r->dir, "%.*s.points", (int)n, out);
    r->made_dir = mkdir(r->dir, 0755) == 0;
    if (!r->made_dir && errno != EEXIST) {
        say(r->o, "cannot make a directory '%s': %s", r->dir, strerror(errno));
        return 2;
    }
    r->dirfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (r->dirfd < 0) {
        say(r->o, "cannot open the directory '%s': %s", r->dir, strerror(errno));
        return 2;
    }
    if (flock(r->dirfd, LOCK_EX | LOCK_NB) != 0) {
        say(r->o,
            "'%s' is being written by another sweep (it holds '%s'): wait for it to end, "
            "or give another --out",
            out, r->dir);
        return 2;
    }
    return 0;
}

/* Remove the reports a killed run left half made (.point-I.json) and, when the CSV starts
 * afresh, every report (they belong to rows no longer there). */
static void clean_dir(const run *r, int fresh)
{
    DIR *d = opendir(r->dir);
    struct dirent *e;
    char path[4400];
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        int report = n > 5 && strcmp(e->d_name + n - 5, ".json") == 0;
        if (report && (fresh || strncmp(e->d_name, ".point-", 7) == 0)) {
            snprintf(path, sizeof path, "%s/%s", r->dir, e->d_name);
            remove(path);
        }
    }
    if (d)
        closedir(d);
}

/* The points to run, the directory of points locked, the CSV opened for appending (its torn
 * tail cut off, or emptied when it holds no metric column). 0 or 2. */
static int prepare(run *r, sweep_csv *csv)
{
    const sweep_opts *o = r->o;
    char msg[SWEEP_MSG];
    if (sweep_args_check(o->grid, o->args, o->nargs, msg)) {
        say(r->o, "%s", msg);
        return 2;
    }
    if (lock_dir(r))
        return 2;
    if (sweep_csv_load(o->out, o->grid, csv, msg)) {
        say(r->o, "%s", msg);
        return 2;
    }
    if (open_csv(r))
        return 2;
    size_t keep = csv->valid_len;
    if (csv->cols.n && csv->cols.n == o->grid->np + 1) {
        say(r->o, "'%s' has no metric columns (every point failed): starting it again", o->out);
        keep = 0;
    } else if (csv->file_len > keep) {
        say(r->o, "'%s': cutting off a torn last line", o->out);
    }
    if (keep < csv->file_len && ftruncate(r->fd, (off_t)keep) != 0) {
        say(r->o, "cannot truncate '%s': %s", o->out, strerror(errno));
        return 2;
    }
    if (keep == 0)
        sweep_csv_free(csv);
    r->cols = csv->cols; /* the header's columns, now the run's */
    csv->cols = (sweep_cols){0};
    clean_dir(r, keep == 0);
    r->todo = xmalloc((o->grid->npoints + 1) * sizeof *r->todo);
    r->held = xmalloc((o->grid->npoints + 1) * sizeof *r->held);
    for (size_t i = 0; i < o->grid->npoints; i++) {
        if (!sweep_csv_done(csv, o->grid, i))
            r->todo[r->ntodo++] = i;
        else
            r->nearlier += sweep_csv_failed(csv, o->grid, i);
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
    run r = {.o = o, .fd = -1, .dirfd = -1};
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
        if (!r.cols.n && r.nheld) /* no point wrote a report: a header of parameters, status */
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
    if (rc == 2 && r.made_dir && r.ntodo == 0)
        rmdir(r.dir); /* made for a sweep that could not start */
    if (r.dirfd >= 0)
        close(r.dirfd); /* the lock goes with it */
    sweep_cols_free(&r.cols);
    free(r.todo);
    free(r.held);
    sweep_csv_free(&csv);
    pthread_mutex_destroy(&r.mu);
    if (!rc && (r.nfailed || r.nearlier))
        rc = 1;
    return rc;
}
