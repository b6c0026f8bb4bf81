/* cmd_sweep: `ipusim sweep --param ... [-j N] --out FILE.csv -- COMMAND ARGS`, the options
 * of a sweep. The grid, the JSON reader, the CSV and the runner are the module bench/sweep/
 * (bench/sweep/sweep.h): this command hands it a way to run one subcommand in-process and
 * prints its progress lines on stderr. docs/sweep.md is the user's page, with the
 * bench/NAME.sweep files that `make sweep` runs. */
#include <stdio.h>
#include <string.h>

#include "bench/sweep/sweep.h"
#include "cli/cli.h"

/* The sweep runs a point: the subcommand's function (ctx is its cli_cmd). */
static int run_cmd(void *ctx, int argc, char **argv)
{
    const cli_cmd *c = ctx;
    return c->fn(argc, argv);
}

static void say(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "ipusim sweep: %s\n", line);
}

int cli_cmd_sweep(int argc, char **argv)
{
    const char *cmd = "sweep", *out = NULL;
    sweep_grid g = {0};
    uint64_t jobs = 1;
    int rc = 0, i = 1;
    char msg[SWEEP_MSG];
    for (; i < argc && rc == 0; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "--") == 0)
            break;
        if (strcmp(a, "--param") == 0) {
            rc = cli_value(cmd, argc, argv, &i, &v);
            if (!rc && (rc = sweep_grid_add(&g, v, msg)) != 0)
                fprintf(stderr, "ipusim %s: %s\n", cmd, msg);
        } else if (strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0) {
            rc = cli_opt_u64(cmd, argc, argv, &i, 1, SWEEP_MAX_JOBS, &jobs);
        } else if (strcmp(a, "--out") == 0 || strcmp(a, "-o") == 0) {
            rc = cli_value(cmd, argc, argv, &i, &out);
        } else if (a[0] == '-') {
            rc = cli_unknown(cmd, a);
        } else {
            fprintf(stderr, "ipusim %s: '%s': the command to sweep comes after '--'\n", cmd, a);
            rc = 2;
        }
    }
    const cli_cmd *c = NULL;
    if (rc == 0) {
        if (g.np == 0)
            fprintf(stderr, "ipusim %s: no --param given\n", cmd);
        else if (!out)
            fprintf(stderr, "ipusim %s: no --out FILE.csv given\n", cmd);
        else if (i + 1 >= argc)
            fprintf(stderr, "ipusim %s: no command given (-- COMMAND ARGS)\n", cmd);
        else if (!(c = cli_find(argv[i + 1])))
            fprintf(stderr, "ipusim %s: unknown command '%s' (see 'ipusim --help')\n", cmd,
                    argv[i + 1]);
        else if (c->fn == cli_cmd_sweep)
            fprintf(stderr, "ipusim %s: a sweep cannot run a sweep\n", cmd);
        rc = c && c->fn != cli_cmd_sweep ? 0 : 2;
    }
    if (rc == 0) {
        sweep_opts o = {.grid = &g,
                        .cmdname = c->name,
                        .run = run_cmd,
                        .ctx = (void *)c,
                        .args = argv + i + 2,
                        .nargs = argc - i - 2,
                        .jobs = (unsigned)jobs,
                        .out = out,
                        .say = say,
                        .stop = cli_stop_flag()};
        cli_stop_install();
        rc = sweep_run(&o);
    }
    sweep_grid_free(&g);
    return rc;
}
