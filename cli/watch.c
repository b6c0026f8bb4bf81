/* watch: Ctrl-C, SIGTERM and the heartbeat of a long simulation, for the commands that run
 * one (run, gemm, io-bench, micro, mnist, sweep). Models nothing.
 *
 * SIGINT and SIGTERM set the one flag of the process, which the engine reads between compute
 * rounds (hw/engine.h, eng_watch): the run stops with ERR_STOPPED, the command prints the stop
 * report as one line and exits 3 without writing its output files. The handler is installed
 * with SA_RESETHAND, so a second Ctrl-C kills the process at once. The flag is this
 * program's one mutable global (a signal handler can reach nothing else); it is never
 * cleared, so the points of a sweep running beside each other all see it.
 *
 * The heartbeat, at most once a second: with --progress, a line
 * "ipusim CMD: cycle N, S supersteps, H.H s" on stderr each time (with "PHASE: " before
 * "cycle" when the command names the part under way, as mnist's test pass), and "; P% done, about T s
 * left" after it once the command has said how many cycles it expects (mnist: from its
 * calls so far); without it, when stdout and stderr are both terminals (an interactive run,
 * not a sweep's point, whose stdout is /dev/null), the same text redrawn in place on one line,
 * erased before the command prints a line and when the run ends. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

const volatile sig_atomic_t *cli_stop_flag(void)
{
    return &stop_requested;
}

int cli_stopped(void)
{
    return stop_requested != 0;
}

/* Handle sig, unless it is ignored (a background job of a shell ignores SIGINT: so do we). */
static void install(int sig)
{
    struct sigaction sa, old;
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND; /* the second signal has its default effect: the process ends */
    sigaction(sig, &sa, NULL);
}

void cli_stop_install(void)
{
    install(SIGINT);
    install(SIGTERM);
}

enum { HEARTBEAT_NS = 1000000000 };

void cli_watch_begin(cli_watch *w, const char *cmd, int progress)
{
    memset(w, 0, sizeof *w);
    w->cmd = cmd;
    w->t0 = cli_now();
    if (progress)
        w->mode = CLI_BEAT_LINES;
    else if (isatty(STDOUT_FILENO) && isatty(STDERR_FILENO))
        w->mode = CLI_BEAT_REDRAW;
    cli_stop_install();
}

static void beat(void *ctx, uint64_t cycle, uint64_t supersteps)
{
    cli_watch *w = ctx;
    char line[200];
    double host = cli_now() - w->t0;
    int n = snprintf(line, sizeof line, "ipusim %s: %s%scycle %llu, %llu supersteps, %.1f s",
                     w->cmd, w->phase ? w->phase : "", w->phase ? ": " : "",
                     (unsigned long long)cycle, (unsigned long long)supersteps, host);
    if (w->expect && cycle > 0 && cycle < w->expect) {
        double f = (double)cycle / (double)w->expect;
        snprintf(line + n, sizeof line - (size_t)n, "; %.0f%% done, about %.0f s left", 100 * f,
                 host * (1 - f) / f);
    }
    if (w->mode == CLI_BEAT_LINES) {
        fprintf(stderr, "%s\n", line);
    } else {
        fprintf(stderr, "\r%-79s", line);
        w->shown = 1;
    }
    fflush(stderr);
}

eng_watch cli_watch_eng(cli_watch *w)
{
    eng_watch x = {.stop = cli_stop_flag()};
    if (w->mode != CLI_BEAT_NONE) {
        x.progress = beat;
        x.progress_ctx = w;
        x.progress_ns = HEARTBEAT_NS;
    }
    return x;
}

void cli_watch_clear(cli_watch *w)
{
    if (w->shown)
        fprintf(stderr, "\r%79s\r", "");
    w->shown = 0;
}
