/* ctx: the run context, the life cycle every simulating command shares around its own work:
 * the MPI ranks it spreads over (cli_spread: joined, the same command line on every rank,
 * only rank 0 printing; cli_ranks_agree: one status for all), the machine resolved from
 * --machine, --set, --ipus and --tiles; the profile and the watch (Ctrl-C, SIGTERM, the
 * heartbeat) attached to the system's control; the run's host time and the ranks' collective
 * counters; the profile's files and --rank-stats' lines after it. Models nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/rank.h"
#include "cli/cli.h"

/* ---- the ranks ---- */

/* Ranks other than 0 print nothing: their standard output goes to /dev/null and their
 * standard error to a temporary file, whose last line rank 0 prints when that rank fails
 * (cli_ranks_agree). */
static struct rank_comm *ranks_open(const char *cmd, int *argc, char ***argv, int *status)
{
    err e;
    err_clear(&e);
    rank_comm *ranks = rank_open(argc, argv, &e);
    if (!ranks) {
        *status = rank_launched_id() == 0 ? cli_report_err(cmd, &e) : e.status;
        return NULL;
    }
    if (rank_id(ranks) != 0) { /* without /dev/null the rank writes where it can */
        FILE *out = freopen("/dev/null", "w", stdout), *tmp = tmpfile();
        (void)out;
        if (!tmp || dup2(fileno(tmp), STDERR_FILENO) < 0) {
            FILE *err = freopen("/dev/null", "w", stderr);
            (void)err;
        }
        if (tmp)
            fclose(tmp); /* fd 2 keeps the file */
    }
    return ranks;
}

enum { RANK_LINE = 240, RANK_ARGV = 240 };

/* The last line this rank wrote to its standard error, without its "ipusim CMD: " prefix,
 * into line (n bytes), or "" (rank 0's standard error is the terminal: nothing to read). */
static void last_err_line(const char *cmd, char *line, size_t n)
{
    char buf[1024];
    off_t end = lseek(STDERR_FILENO, 0, SEEK_CUR);
    off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
    ssize_t got = end > 0 ? pread(STDERR_FILENO, buf, (size_t)(end - from), from) : -1;
    line[0] = 0;
    if (got <= 0)
        return;
    while (got > 0 && buf[got - 1] == '\n')
        got--;
    buf[got] = 0;
    const char *l = strrchr(buf, '\n');
    l = l ? l + 1 : buf;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "ipusim %s: ", cmd);
    if (strncmp(l, prefix, strlen(prefix)) == 0)
        l += strlen(prefix);
    size_t k = strlen(l) < n ? strlen(l) : n - 1;
    memcpy(line, l, k);
    line[k] = 0;
}

/* The CRC-32 of the command line and of every regular file it names (a program, a machine
 * file): what the ranks compare before they start, read as every input is (base/file's
 * file_open). A file this rank cannot open counts as the message saying why. */
static uint32_t command_digest(int argc, char **argv, char *text, size_t n)
{
    unsigned long c = crc32(0L, Z_NULL, 0);
    size_t at = 0;
    text[0] = 0;
    for (int i = 0; i < argc; i++) {
        c = crc32_z(c, (const unsigned char *)argv[i], strlen(argv[i]) + 1);
        if (at < n)
            at += (size_t)snprintf(text + at, n - at, "%s%s", i ? " " : "", argv[i]);
        struct stat st;
        if (stat(argv[i], &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        err e;
        int fd = file_open(argv[i], &e);
        if (fd < 0) { /* its name and why it cannot be read */
            c = crc32_z(c, (const unsigned char *)e.msg, strlen(e.msg));
            continue;
        }
        unsigned char buf[65536];
        ssize_t got;
        while ((got = read(fd, buf, sizeof buf)) > 0)
            c = crc32_z(c, buf, (size_t)got);
        close(fd);
    }
    return (uint32_t)c;
}

/* Every rank runs the same command line on the same files, or none starts: rank 0 names the
 * first rank that differs. 0, or 2 on every rank. */
static int ranks_same_command(struct rank_comm *ranks, const char *cmd, int argc, char **argv)
{
    struct said {
        uint32_t crc;
        char text[RANK_ARGV];
    } mine;
    memset(&mine, 0, sizeof mine);
    mine.crc = command_digest(argc, argv, mine.text, sizeof mine.text);
    unsigned n = rank_size(ranks), r = 1;
    struct said *all = xmalloc(n * sizeof *all);
    rank_allgather(ranks, &mine, sizeof mine, all);
    while (r < n && all[r].crc == all[0].crc)
        r++;
    if (r < n && rank_id(ranks) == 0) {
        if (strcmp(all[r].text, all[0].text) != 0)
            fprintf(stderr,
                    "ipusim %s: the ranks must run one command line: rank 0 runs '%s', rank %u "
                    "'%s'\n",
                    cmd, all[0].text, r, all[r].text);
        else
            fprintf(stderr,
                    "ipusim %s: rank %u reads other files than rank 0 (a program or machine file "
                    "that differs, or cannot be read) for '%s'\n",
                    cmd, r, all[0].text);
    }
    free(all);
    return r < n ? 2 : 0;
}

int cli_spread(const char *cmd, int argc, char **argv,
               int (*fn)(int argc, char **argv, struct rank_comm *ranks))
{
    int rc = 0;
    struct rank_comm *ranks = ranks_open(cmd, &argc, &argv, &rc);
    if (!ranks)
        return rc;
    if (rank_size(ranks) == 1 || (rc = ranks_same_command(ranks, cmd, argc, argv)) == 0)
        rc = fn(argc, argv, ranks);
    rank_close(ranks);
    return rc;
}

/* --rank-stats: per rank, the run's host time, the part of it spent in the ranks'
 * collectives (waiting for the others at the meetings, and moving the exchange), and the
 * process's peak resident memory, gathered to rank 0, which prints a line for each. */
void cli_rank_stats(struct rank_comm *ranks, double run_s, uint64_t wait_ns, uint64_t calls)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double mine[4] = {run_s, (double)wait_ns * 1e-9, (double)calls, (double)ru.ru_maxrss / 1024.0};
    unsigned n = rank_size(ranks);
    double *all = xmalloc(n * sizeof mine);
    rank_allgather(ranks, mine, sizeof mine, all);
    for (unsigned r = 0; r < n; r++) {
        const double *x = all + 4 * r;
        printf("  %-22s rank %u: run %.3f s, in collectives %.3f s (%.1f%%, %.0f calls), peak "
               "memory %.1f MiB\n",
               r ? "" : "rank stats", r, x[0], x[1], x[0] > 0 ? 100.0 * x[1] / x[0] : 0.0, x[2],
               x[3]);
    }
    free(all);
}

int cli_ranks_agree(struct rank_comm *ranks, const char *cmd, int rc)
{
    struct said {
        int32_t rc;
        char line[RANK_LINE];
    } mine;
    memset(&mine, 0, sizeof mine);
    mine.rc = rc;
    if (rc && rank_id(ranks) != 0)
        last_err_line(cmd, mine.line, sizeof mine.line);
    unsigned size = rank_size(ranks), r = 0;
    struct said *all = xmalloc(size * sizeof *all);
    rank_allgather(ranks, &mine, sizeof mine, all);
    while (r < size && all[r].rc == 0)
        r++;
    rc = r < size ? all[r].rc : 0;
    if (r < size && r > 0 && rank_id(ranks) == 0 && all[0].rc == 0)
        fprintf(stderr, "ipusim %s: rank %u: %s\n", cmd, r,
                all[r].line[0] ? all[r].line : "failed");
    free(all);
    return rc;
}

/* ---- the run ---- */

void cli_ctx_init(cli_ctx *x, const char *cmd, int argc, char **argv, struct rank_comm *ranks)
{
    memset(x, 0, sizeof *x);
    x->inv = (cli_inv){cmd, argc, argv, &x->mo};
    x->max_step = CLI_MAX_SUPERSTEP_CYCLES;
    x->ranks = ranks;
    cli_profile_init(&x->po);
}

int cli_ctx_parse(cli_ctx *x, const cli_table *t, void *cfg, int argc, char **argv,
                  struct rank_comm *ranks)
{
    if (t->init)
        t->init(x, cfg); /* first: cfg may hold x (mnist's does) */
    cli_ctx_init(x, t->cmd, argc, argv, ranks);
    return cli_parse(t, x, cfg, argc, argv);
}

int cli_ctx_machine(cli_ctx *x, const char *fixed)
{
    const char *cmd = x->inv.cmd;
    int rc = cli_machine_resolve(cmd, &x->mo, &x->m);
    if (!rc)
        rc = cli_ipus(cmd, x->ipus, &x->mo, fixed, &x->m);
    return rc ? rc : cli_tiles(cmd, x->tiles, &x->m);
}

int cli_ctx_begin(cli_ctx *x)
{
    int rc = cli_profile_new(x->inv.cmd, &x->po, &x->m, &x->pf);
    if (rc)
        return rc;
    cli_watch_begin(&x->w, x->inv.cmd, x->progress);
    x->ctl = (sys_ctl){x->max_step, cli_watch_eng(&x->w), CLI_LIMIT_NAMES};
    profile_attach(x->pf, &x->ctl.watch);
    return 0;
}

void cli_ctx_start(cli_ctx *x)
{
    rank_waited(x->ranks, &x->wait0, &x->calls0);
    x->t0 = cli_now();
}

void cli_ctx_stop(cli_ctx *x, const struct eng *g)
{
    x->host = cli_now() - x->t0;
    rank_waited(x->ranks, &x->wait, &x->calls);
    x->wait -= x->wait0;
    x->calls -= x->calls0;
    if (g)
        x->threads = eng_threads(g);
    cli_watch_clear(&x->w);
}

int cli_ctx_profile(cli_ctx *x, const struct eng *g, const char *what)
{
    if (!x->pf)
        return 0;
    profile_finish(x->pf, g, NULL, what);
    return cli_profile_done(x->pf, x->inv.cmd, stdout) != 0 ? 2 : 0;
}

void cli_ctx_close(cli_ctx *x)
{
    if (x->rank_stats)
        cli_rank_stats(x->ranks, x->host, x->wait, x->calls);
    profile_free(x->pf);
    x->pf = NULL;
}
