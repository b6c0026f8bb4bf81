/* ctx: the run context, the life cycle every simulating command shares around its own work:
 * the machine resolved from --machine, --set, --ipus and --tiles; the profile and the watch
 * (Ctrl-C, SIGTERM, the heartbeat) attached to the system's control; the run's host time and
 * the ranks' collective counters; the profile's files and --rank-stats' lines after it.
 * Models nothing. */
#include <string.h>

#include "base/rank.h"
#include "cli/cli.h"

void cli_ctx_init(cli_ctx *x, const char *cmd, int argc, char **argv, struct rank_comm *ranks)
{
    memset(x, 0, sizeof *x);
    x->inv = (cli_inv){cmd, argc, argv, &x->mo};
    x->max_step = CLI_MAX_SUPERSTEP_CYCLES;
    x->ranks = ranks;
    cli_profile_init(&x->po);
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
    x->ctl = (sys_ctl){x->max_step, cli_watch_eng(&x->w)};
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
