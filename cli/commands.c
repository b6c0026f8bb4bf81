/* commands: the commands' table (each one's name, entry, summary and help or option table),
 * and the help that lists them. Models nothing. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

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

const cli_cmd *cli_commands(void)
{
    return commands;
}

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

void cli_usage_all(FILE *f)
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
