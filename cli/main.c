/* main: `ipusim COMMAND [OPTIONS]` — the command line split into its command and options (the
 * GNU --NAME=VALUE form), the checks every command shares (outputs that are inputs, names that
 * fit), and the dispatch through the commands' table (cli/commands.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/file.h"
#include "base/rank.h"
#include "cli/cli.h"
#include "bench/profile/profile.h"

/* The GNU form --NAME=VALUE of every long option: split into --NAME VALUE before the command
 * sees its arguments (those after a sweep's '--' too: they are a command's options). The
 * options without a value refuse one. Returns the new argv (argc in *n; every string its own
 * copy: free with free_args), or NULL after one error line. */
static char **split_long_opts(const char *cmd, int argc, char **argv, int *n)
{
    static const char *const flags[] = {"--help",     "--reference", "--no-check",
                                        "--progress", "--profile",   "--rank-stats"};
    char **out = xmalloc((2 * (size_t)argc + 1) * sizeof *out);
    int k = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        if (i == 0 || strncmp(a, "--", 2) != 0 || !eq || eq == a + 2) {
            out[k++] = xstrdup(argv[i]);
            continue;
        }
        size_t len = (size_t)(eq - a);
        char *name = xmalloc(len + 1);
        memcpy(name, a, len);
        name[len] = '\0';
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++) {
            if (strcmp(name, flags[f]) == 0) {
                fprintf(stderr, "ipusim %s: %s takes no value ('%s')\n", cmd, name, a);
                free(name);
                for (int j = 0; j < k; j++)
                    free(out[j]);
                free(out);
                return NULL;
            }
        }
        out[k++] = name;
        out[k++] = xstrdup(eq + 1);
    }
    out[k] = NULL;
    *n = k;
    return out;
}

static void free_args(char **args, int n)
{
    for (int i = 0; i < n; i++)
        free(args[i]);
    free(args);
}

/* The command's report reached standard output whole (a full disk, a closed pipe would cut
 * it short): else one line and exit status 2, unless the command had failed already. */
static int report_written(const char *cmd, int rc)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    /* an earlier write may have failed, its errno long gone: a write of nothing says why on
     * a device or a closed descriptor (ENOSPC from /dev/full, EBADF) */
    int why = errno;
    if (write(STDOUT_FILENO, "", 0) < 0)
        why = errno;
    fprintf(stderr, "ipusim %s: cannot write the report to standard output: %s\n", cmd,
            strerror(why ? why : EIO));
    return rc ? rc : 2;
}

/* An output option naming a file or directory that the command line also names elsewhere
 * (the program, the machine file, a data set): refused before anything runs, as writing it
 * would destroy an input. 0, or 2 after one line. (--save-weights onto --load-weights is a
 * training that goes on from its weights: the set is replaced whole.) */
static int output_is_input(const char *cmd, int n, char **args)
{
    static const char *const outputs[] = {"--json", "--csv", "--out", "-o", "--profile-dir"};
    for (int i = 1; i + 1 < n; i++) {
        int is_out = 0;
        for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++)
            is_out |= strcmp(args[i], outputs[k]) == 0;
        struct stat so, si;
        if (!is_out || stat(args[i + 1], &so) != 0)
            continue;
        for (int j = 1; j < n; j++)
            if (j != i + 1 && args[j][0] != '-' && stat(args[j], &si) == 0 &&
                si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
                fprintf(stderr,
                        "ipusim %s: %s %s: the output is also an input of the command ('%s'); "
                        "nothing written\n",
                        cmd, args[i], args[i + 1], args[j]);
                return 2;
            }
    }
    return 0;
}

/* An output option whose file or directory could never be written (a name in it longer than
 * NAME_MAX, the whole longer than PATH_MAX): refused before anything runs, rather than after
 * a whole run ends in "File name too long". 0, or 2 after one line. */
static int output_name_fits(const char *cmd, int n, char **args)
{
    static const char *const outputs[] = {"--json", "--csv",         "--out",
                                          "-o",     "--profile-dir", "--save-weights"};
    for (int i = 1; i + 1 < n; i++)
        for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++) {
            err e;
            if (strcmp(args[i], outputs[k]) != 0 || file_name_check(args[i + 1], &e) == ERR_OK)
                continue;
            fprintf(stderr, "ipusim %s: %s %.60s%s: %s; nothing run\n", cmd, args[i], args[i + 1],
                    strlen(args[i + 1]) > 60 ? "..." : "", e.msg);
            return 2;
        }
    return 0;
}

/* What a command does beyond its own work: SPREADS, it spreads over MPI ranks
 * (docs/scale-out.md); REPORT, it writes a JSON report and so takes --out DIR (cli/rundir.c). */
enum { SPREADS = 1, REPORT = 2 };
static int has_trait(const char *name, unsigned trait)
{
    static const struct {
        const char *name;
        unsigned traits;
    } traits[] = {
        {"run", SPREADS | REPORT},
        {"micro", SPREADS | REPORT},
        {"io-bench", SPREADS | REPORT},
        {"mnist", SPREADS | REPORT},
        {"gemm", REPORT},
    };
    for (size_t i = 0; i < sizeof traits / sizeof traits[0]; i++)
        if (strcmp(name, traits[i].name) == 0)
            return (traits[i].traits & trait) != 0;
    return 0;
}

/* Under mpirun as several ranks, a command that does not spread over ranks yet: one line
 * from rank 0, status 2 from every rank. */
static int not_spread(const char *name, int *argc, char ***argv)
{
    err e;
    err_clear(&e);
    rank_comm *rc = rank_open(argc, argv, &e);
    if (rc ? rank_id(rc) == 0 : rank_launched_id() == 0)
        fprintf(stderr, "ipusim %s: %s\n", name,
                rc ? "runs as one process only so far (under mpirun 'ipusim run', 'micro', "
                     "'io-bench' and 'mnist' spread over ranks; see docs/scale-out.md)"
                   : e.msg);
    rank_close(rc);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_usage_all(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        cli_usage_all(stdout);
        return report_written("--help", 0);
    }
    if (strcmp(name, "--version") == 0) {
        printf("ipusim %s\n", cli_version());
        return report_written("--version", 0);
    }
    if (strcmp(name, "help") == 0) {
        if (argc < 3 || strcmp(argv[2], "help") == 0) {
            cli_usage_all(stdout);
            return report_written("help", 0);
        }
        const cli_cmd *c = cli_find(argv[2]);
        if (!c) {
            fprintf(stderr, "ipusim help: unknown command '%s'\n", argv[2]);
            return 2;
        }
        cli_usage(c, stdout);
        return report_written("help", 0);
    }
    const cli_cmd *c = cli_find(name);
    if (!c) {
        fprintf(stderr, "ipusim: unknown command '%s' (see 'ipusim --help')\n", name);
        return 2;
    }
    int n;
    char **args = split_long_opts(name, argc - 1, argv + 1, &n);
    if (!args)
        return 2;
    for (int i = 1; i < n; i++) {
        if (strcmp(args[i], "--help") == 0 || strcmp(args[i], "-h") == 0) {
            cli_usage(c, stdout);
            free_args(args, n);
            return report_written(name, 0);
        }
    }
    if (output_is_input(name, n, args) || output_name_fits(name, n, args)) {
        free_args(args, n);
        return 2;
    }
    int rc = !has_trait(name, SPREADS) && rank_launched() ? not_spread(name, &argc, &argv)
             : has_trait(name, REPORT)                    ? cli_rundir(c, n, args)
                                                          : c->fn(n, args);
    free_args(args, n);
    return report_written(name, rc);
}
