/* rundir: `--out DIR`, a run as a directory (as gem5's m5out/), for the commands that write a
 * JSON report (run, gemm, io-bench, mnist). DIR gets
 *   config.json  how the run was made: the report's "config" member (the program's version,
 *                the command line as typed, the machine with its overrides, the options)
 *   stats.json   what it measured: the rest of the report (--json FILE holds both)
 *   report.txt   what the command printed on standard output
 *   profile/     with --profile: the profile (docs/profiling.md)
 * The command runs as if given `--json STAGE/stats.json` (and `--profile-dir STAGE/profile`
 * with --profile), STAGE a directory beside DIR; standard output reaches the terminal as it is
 * printed and report.txt both (a thread copies it). When the command succeeds the set is put
 * in DIR's place in one step (base/file.h), so DIR holds one whole run: a failed or stopped run
 * leaves it as it was, and an existing DIR must be an earlier run (it holds config.json) or
 * empty. Under MPI ranks rank 0 writes the set, as it writes --json. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/json.h"
#include "base/rank.h"
#include "cli/cli.h"

/* The index of "--out" in argv, 0 when absent, -1 after an error line. */
static int find_out(const char *cmd, int argc, char **argv)
{
    int at = 0;
    for (int i = 1; i < argc && !at; i++)
        at = strcmp(argv[i], "--out") == 0 ? i : 0;
    if (at && at + 1 >= argc) {
        fprintf(stderr, "ipusim %s: --out needs a value\n", cmd);
        return -1;
    }
    for (int i = 1; at && i < argc; i++)
        if (i != at + 1 &&
            (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--profile-dir") == 0)) {
            fprintf(stderr, "ipusim %s: %s: --out DIR writes the run's files itself\n", cmd,
                    argv[i]);
            return -1;
        }
    return at;
}

/* DIR may be replaced: absent, an empty directory, or an earlier run's (config.json in it).
 * 0, or 2 after one line. */
static int check_dir(const char *cmd, const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return 0;
    char *cfg = xmalloc(strlen(dir) + 16);
    sprintf(cfg, "%s/config.json", dir);
    int ours = S_ISDIR(st.st_mode) && access(cfg, F_OK) == 0, empty = 0;
    free(cfg);
    DIR *d = S_ISDIR(st.st_mode) && !ours ? opendir(dir) : NULL;
    if (d) {
        struct dirent *e;
        empty = 1;
        while ((e = readdir(d)))
            empty &= strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
        closedir(d);
    }
    if (ours || empty)
        return 0;
    fprintf(stderr, "ipusim %s: --out %s: %s; give another name or remove it\n", cmd, dir,
            S_ISDIR(st.st_mode) ? "a directory that is not a run's (no config.json)"
                                : "exists and is not a directory");
    return 2;
}

/* ---- standard output to the terminal and report.txt ---- */

typedef struct copier {
    int from, to, file;
    pthread_t th;
    int saved;            /* the original standard output */
    int to_err, file_err; /* the first write error (errno) on each side; 0: none */
} copier;

static void *copy_run(void *arg)
{
    copier *t = arg;
    char buf[8192];
    for (;;) {
        ssize_t n = read(t->from, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        /* after an error on one side the other goes on, and the pipe is drained all the same
         * (the command never blocks on it) */
        if (!t->to_err && file_write_all(t->to, buf, (size_t)n) != 0)
            t->to_err = errno;
        if (!t->file_err && file_write_all(t->file, buf, (size_t)n) != 0)
            t->file_err = errno;
    }
}

/* Standard output into a pipe that a thread copies to the terminal and to path. 0 or -1. */
static int copy_begin(copier *t, const char *path)
{
    int p[2];
    t->file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (t->file < 0 || pipe(p) != 0)
        return -1;
    fflush(stdout);
    t->saved = dup(STDOUT_FILENO);
    t->from = p[0];
    t->to = t->saved;
    if (t->saved < 0 || dup2(p[1], STDOUT_FILENO) < 0 ||
        pthread_create(&t->th, NULL, copy_run, t)) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    close(p[1]);
    return 0;
}

/* Standard output back; the copy finished. 0, or -1 with errno when report.txt could not be
 * written (t->to_err: when the terminal's copy could not). */
static int copy_end(copier *t)
{
    fflush(stdout);
    dup2(t->saved, STDOUT_FILENO); /* closes the pipe's last write end: the thread ends */
    pthread_join(t->th, NULL);
    close(t->saved);
    close(t->from);
    int ok = !t->file_err && fsync(t->file) == 0, saved = t->file_err ? t->file_err : errno;
    ok = close(t->file) == 0 && ok;
    errno = ok ? 0 : saved ? saved : EIO;
    return ok ? 0 : -1;
}

/* ---- the report split in two ---- */

/* stats.json as the command wrote it becomes stats.json without its config and config.json,
 * with the command line as typed. 0, or 2 after one line. */
static int split_report(const char *cmd, const char *stage, int argc, char **argv)
{
    char *path = xmalloc(strlen(stage) + 16);
    sprintf(path, "%s/stats.json", stage);
    err e;
    err_clear(&e);
    json *r = json_load(path, (size_t)1 << 32, &e), *cfg = r ? json_at(r, "config") : NULL;
    int rc = cfg && json_at(cfg, "argv") ? 0 : 2;
    if (!rc) {
        json_object_get(cfg);
        json_object_object_del(r, "config");
        json_put(cfg, "argv", cli_json_argv(argc, argv)); /* as typed, with --out DIR; in place */
        rc = json_save(path, r, &e);
        sprintf(path, "%s/config.json", stage);
        rc = rc || json_save(path, cfg, &e);
        json_object_put(cfg);
    }
    if (rc)
        fprintf(stderr, "ipusim %s: --out: the report could not be split in config and stats\n",
                cmd);
    json_object_put(r);
    free(path);
    return rc ? 2 : 0;
}

/* argv without "--out DIR", with the staged --json (and --profile-dir) after it. */
static char **staged_args(int argc, char **argv, int at, const char *stage, int *n)
{
    char **a = xmalloc(((size_t)argc + 5) * sizeof *a);
    int k = 0, profile = 0;
    for (int i = 0; i < argc; i++) {
        if (i == at || i == at + 1)
            continue;
        profile |= strcmp(argv[i], "--profile") == 0;
        a[k++] = xstrdup(argv[i]);
    }
    a[k++] = xstrdup("--json");
    a[k] = xmalloc(strlen(stage) + 16);
    sprintf(a[k++], "%s/stats.json", stage);
    if (profile) {
        a[k++] = xstrdup("--profile-dir");
        a[k] = xmalloc(strlen(stage) + 16);
        sprintf(a[k++], "%s/profile", stage);
    }
    a[k] = NULL;
    *n = k;
    return a;
}

int cli_rundir(const cli_cmd *c, int argc, char **argv)
{
    int at = find_out(c->name, argc, argv);
    if (at <= 0)
        return at < 0 ? 2 : c->fn(argc, argv);
    const char *dir = argv[at + 1];
    if (check_dir(c->name, dir))
        return 2;
    int lead = !rank_launched() || rank_launched_id() == 0, n = 0, rc;
    err e;
    char *stage = lead ? file_dir_stage(dir, &e) : xstrdup("/nonexistent/ipusim-out");
    if (!stage) {
        fprintf(stderr, "ipusim %s: --out %s: %s\n", c->name, dir, e.msg);
        return 2;
    }
    char **args = staged_args(argc, argv, at, stage, &n), *txtpath = NULL;
    copier t = {0};
    if (lead) {
        txtpath = xmalloc(strlen(stage) + 16);
        sprintf(txtpath, "%s/report.txt", stage);
    }
    if (lead && copy_begin(&t, txtpath) != 0) {
        fprintf(stderr, "ipusim %s: --out %s: cannot write '%s': %s\n", c->name, dir, txtpath,
                strerror(errno));
        rc = 2;
    } else {
        rc = c->fn(n, args);
        if (lead && copy_end(&t) != 0 && rc == 0) {
            fprintf(stderr, "ipusim %s: --out %s: cannot write '%s': %s\n", c->name, dir, txtpath,
                    strerror(errno));
            rc = 2;
        }
        if (lead && t.to_err && rc == 0) { /* as without --out (main.c): the set is not kept */
            fprintf(stderr, "ipusim %s: cannot write the report to standard output: %s\n", c->name,
                    strerror(t.to_err));
            rc = 2;
        }
    }
    if (lead && rc == 0)
        rc = split_report(c->name, stage, argc, argv);
    if (lead && rc == 0 && file_dir_commit(stage, dir, &e) != 0) {
        fprintf(stderr, "ipusim %s: --out %s: %s\n", c->name, dir, e.msg);
        rc = 2;
    } else if (lead && rc != 0) {
        file_remove_tree(stage); /* DIR stays as it was */
    }
    for (int i = 0; i < n; i++)
        free(args[i]);
    free(args);
    free(txtpath);
    free(stage);
    return rc;
}
