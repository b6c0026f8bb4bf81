/* main: `ipusim COMMAND [OPTIONS]` — the dispatch table and the help texts. */
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

/* clang-format off */
static const cli_cmd commands[] = {
    {"run", cli_cmd_run, "assemble a program and run it on every tile of the system", NULL,
     &cli_run_opts},
    {"asm", cli_cmd_asm, "assemble a program into a binary image",
     "usage: ipusim asm PROG.s [-o OUT.bin]\n"
     "\n"
     "Assembles PROG.s and writes the image (default: PROG.bin). Every error in the file is\n"
     "reported as file:line:col: error: message, with the line and a caret; a file without\n"
     "instructions is one (there is nothing to run). An -o that is the input file (by any\n"
     "path) is refused.\n"
     "\n"
     "Exit status: 0 ok, 1 assembly errors, 2 bad options or files.\n", NULL},
    {"disasm", cli_cmd_disasm, "disassemble a binary image (or a .s file) to assembly",
     "usage: ipusim disasm PROG.bin|PROG.s [-o OUT.s]\n"
     "\n"
     "Prints assembly that `ipusim asm` turns back into the same bytes, symbol table\n"
     "included: every label where it was (.global for the global ones), branch targets and\n"
     "worker entries by their labels.\n"
     "\n"
     "Exit status: 0 ok, 1 assembly errors (a .s input), 2 bad options or files.\n", NULL},
    {"gemm", cli_cmd_gemm,
     "C = A x B spread over every tile and worker of one IPU",
     NULL, &cli_gemm_opts},
    {"isa-doc", cli_cmd_isa_doc, "print docs/isa.md, generated from the opcode table",
     "usage: ipusim isa-doc\n"
     "\n"
     "Exit status: 0 ok, 2 bad options.\n", NULL},
    {"machine", cli_cmd_machine, "show a machine preset: every parameter, its unit and source",
     "usage: ipusim machine show [NAME|FILE] [--set KEY=VALUE ...]\n"
     "       ipusim machine list\n"
     "       ipusim machine keys\n"
     "\n"
     "show: every parameter of the preset (default mk2; a FILE contains '/' or ends in .ini)\n"
     "after the --set overrides, with its unit and the source comment from the INI file,\n"
     "then figures derived from them (fp32 peak, SRAM, exchange and link bandwidth, sync).\n"
     "list: the built-in presets. keys: the table of keys as Markdown (docs/machines.md).\n"
     "NAME|FILE and --machine choose the same thing: give one (both are refused).\n"
     "\n"
     CLI_MACHINE_HELP
     "\n"
     "Every command that simulates takes --machine and --set. Presets: machines/*.ini;\n"
     "how to write one: docs/machines.md.\n"
     "\n"
     "Exit status: 0 ok, 2 bad options or preset files.\n", NULL},
    {"micro", cli_cmd_micro,
     "microbenchmarks: measured against implied and published figures",
     NULL, &cli_micro_opts},
    {"metrics", cli_cmd_metrics, "list every statistic of the JSON reports: column, unit, meaning",
     "usage: ipusim metrics [--command CMD] [COLUMN ...]\n"
     "\n"
     "Prints every statistic a command's JSON report can hold, one line each, tab-separated:\n"
     "its path in the report, which is the CSV column a sweep gives it (N stands for an index,\n"
     "PHASE for train or test, LAYER for a layer, STEP for a step of a planned convolution),\n"
     "its unit ('' a count, text a string), a title, its meaning, a time category's colour\n"
     "(else empty) and the commands whose report holds it. The lines come from the tables that\n"
     "declare the statistics (cli/metrics.h lists them; docs/sweep.md, \"The statistics'\n"
     "names\"); 'make plots' takes key titles, axis labels and colours from here.\n"
     "\n"
     "  --command CMD            only the statistics of CMD's report (run, gemm, io-bench,\n"
     "                           micro, mnist)\n"
     "  COLUMN ...               only the lines of these columns (per_ipu.2.finish: the line\n"
     "                           per_ipu.N.finish); one that is no statistic is an error\n"
     "\n"
     "Exit status: 0 ok, 2 bad options or a COLUMN that is no statistic.\n", NULL},
    {"sweep", cli_cmd_sweep, "run a command over a grid of parameters, one CSV row per point",
     "usage: ipusim sweep --param SPEC [--param SPEC ...] [-j N] --out FILE.csv -- COMMAND ARGS\n"
     "\n"
     "Runs COMMAND once per point of the grid (every combination of the parameters; the first\n"
     "varies slowest), in this process, N points at a time. Each parameter reaches the command\n"
     "as '--NAME VALUE' after ARGS, or in place of '{NAME}' where ARGS mention it. The sweep adds\n"
     "'--json FILE' and reads every number of that report into the point's row: the parameters,\n"
     "'status' (the command's exit status), then the metrics (nested names joined by '.').\n"
     "Rows are appended whole as points finish; a re-run skips the points already in FILE.csv.\n"
     "A point that reports numbers the CSV lacks adds their columns (the file is rewritten\n"
     "whole). Each point's report is kept in FILE.points/NAME=VALUE,...json; a second sweep on\n"
     "the same FILE.csv is refused while one runs. The commands' reports are not shown;\n"
     "progress goes to stderr.\n"
     "\n"
     "  --param NAME=V1,V2,..    the listed values (\"0,1\",\"2,3\": a quoted value may hold commas)\n"
     "  --param NAME=A..B[:S]    A, A+S, .. up to B (S defaults to 1; decimals allowed)\n"
     "  --param NAME=A..B:xF     A, A*F, A*F*F, .. up to B (64..1024:x2)\n"
     "  -j, --jobs N             points at a time (default 1); each point's own --threads adds up\n"
     "  -o, --out FILE.csv       the CSV (appended to; created with a header when new)\n"
     "\n"
     "Example: ipusim sweep --param k=64..1024:x2 -j 2 --out gemm-k.csv -- gemm --threads 1\n"
     "Standard sweeps: bench/*.sweep, run by 'make sweep', plotted by 'make plots'\n"
     "(docs/sweep.md).\n"
     "\n"
     "Ctrl-C or SIGTERM starts no further point and stops the running ones; a stopped point\n"
     "gets no row, so a re-run goes on from the rows written.\n"
     "\n"
     "Exit status: 0 every point ok, 1 some point failed (its status is in the CSV), 2 bad\n"
     "options, unknown command, or a CSV that cannot be read or written, 3 stopped.\n", NULL},
    {"mnist", cli_cmd_mnist,
     "train the PopTorch tutorial's MNIST conv-net pipelined over simulated IPUs (--reference: on the host)",
     NULL, &cli_mnist_opts},
    {"io-bench", cli_cmd_iobench,
     "stream micro-batches through the host link: prefetch depth, I/O tiles, dtype trade-offs",
     NULL, &cli_iobench_opts},
    {"profile", cli_cmd_profile, "a profile written by --profile: its summary again, its plots",
     "usage: ipusim profile DIR [--plot]\n"
     "\n"
     "Prints the execution summary and memory report of the run that wrote the profile in DIR\n"
     "(run, gemm, io-bench or mnist with --profile --profile-dir DIR), as the run printed them.\n"
     "\n"
     "  --plot    also render DIR/timeline, DIR/proportions and DIR/tile-memory as PNG and SVG\n"
     "            with gnuplot (plots/profile.sh)\n"
     "\n"
     "The trace, DIR/trace.json, opens in the Perfetto UI (ui.perfetto.dev) and in\n"
     "chrome://tracing; docs/profiling.md says how to read it and the pictures.\n"
     "\n"
     "Exit status: 0 ok, 2 bad options, a missing or unreadable profile, or plotting failed.\n", NULL},
    /* ---- more subcommands register here ---- */
    {NULL, NULL, NULL, NULL, NULL},
};
/* clang-format on */

const cli_cmd *cli_find(const char *name)
{
    for (const cli_cmd *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

void cli_usage(const cli_cmd *c, FILE *f)
{
    if (c->opts)
        cli_help(c->opts, f);
    else
        fputs(c->usage, f);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ipusim COMMAND [OPTIONS]\n\n"
               "A cycle-level simulator of Graphcore-style IPU systems.\n\ncommands:\n");
    for (const cli_cmd *c = commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fprintf(f, "  %-10s %s\n", "help", "help COMMAND: the options of one command");
    fprintf(f, "\nipusim --version prints the release and the commit it was built from.\n");
    fprintf(f,
            "\nDocumentation: README.md and docs/: architecture.md, codelets.md, fabric.md,\n"
            "graph.md, host.md, isa.md, kernel.md, machines.md, mnist.md, pipelining.md,\n"
            "planning.md, "
            "profiling.md, scale-out.md, sources.md, sweep.md,\n"
            "timing.md.\n"
            "\nExit status: 0 ok, 1 assembly errors, 2 bad options or input files, 3 a simulated\n"
            "fault, or a run stopped by Ctrl-C or SIGTERM (one line saying where; no output\n"
            "files; a second Ctrl-C ends the process at once).\n");
}

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
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        usage(stdout);
        return report_written("--help", 0);
    }
    if (strcmp(name, "--version") == 0) {
        printf("ipusim %s\n", cli_version());
        return report_written("--version", 0);
    }
    if (strcmp(name, "help") == 0) {
        if (argc < 3 || strcmp(argv[2], "help") == 0) {
            usage(stdout);
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
