/* metrics: every statistic a command's JSON report can hold, declared once, with its unit and
 * meaning, and the commands that write it. `ipusim metrics` lists them (cli/cmd_metrics.c); a
 * sweep's CSV columns are these paths; the plot scripts take titles and units from the list;
 * tests/test_metrics.c runs every command's report and checks that each member it writes is
 * declared here and each declared one is written.
 *
 * The tables, each an X-macro file of rows, next to the code that computes the numbers:
 *   hw/stats.def, hw/ipu_stats.def, hw/cats.def   the engine's: a run, an IPU, the time split
 *   hw/machine.c (mach_params)                    the machine's parameters
 *   cli/report_stats.def     the report of a run on the engine (run, gemm, io-bench)
 *   workloads/gemm/gemm_stats.def, workloads/iobench/iobench_stats.def,
 *   workloads/micro/micro_stats.def, workloads/mnist/mnist_stats.def   each workload's
 *   cli/config_stats.def     the "config" member of every report: the machine, and those
 *                            of "options" that are no option of a command's table
 *   the commands' option tables (cli/cli.h's cli_opt, listed by cli/commands.c): each row
 *   with a key is config.options.KEY, with the row's unit and meaning
 *
 * A row of the last six is METRIC(PATTERN, UNIT, COMMANDS, MEANING):
 *   PATTERN   the member's dotted path in the JSON report, which is the CSV column a sweep
 *             gives it. Its words are the members' names, or placeholders, in capitals, where
 *             a family repeats:
 *               N      an index, 0, 1, ...        PHASE  train or test (mnist's passes)
 *               LAYER  a layer of the network     STEP   a step of a planned convolution
 *               STAT, IPU_STAT, CAT   a key of hw/stats.def, hw/ipu_stats.def, hw/cats.def
 *               PARAM  a machine parameter's key (ipusim machine keys)
 *   UNIT      "" for a count, "text" for a string, "bool" for 0 or 1 (true or false), or the
 *             unit. NULL when the last word is STAT, IPU_STAT, CAT or PARAM: the row then
 *             stands for one statistic per entry of that table, with the entry's unit and
 *             meaning (listed one by one).
 *   COMMANDS  the commands whose report holds it, separated by spaces
 *   MEANING   one line; for a NULL unit, whose the entries are ("IPU N's time split")
 *
 * To add a statistic: write it in the command's writer and add its row to the table of its
 * family; test_metrics fails until both are there. An option's echo needs no more than its
 * row's key, unit and meaning. */
#ifndef IPUSIM_METRICS_H
#define IPUSIM_METRICS_H

#include <stddef.h>

/* One row of a table. */
typedef struct cli_metric {
    const char *pattern, *unit, *commands, *meaning;
    const char *table; /* the file that declares it */
} cli_metric;

/* Every row of the tables, in the order `ipusim metrics` lists them; *n gets their number. */
const cli_metric *cli_metric_rows(size_t *n);

/* One statistic as `ipusim metrics` lists it: a row, or one entry of the table that a row with
 * a NULL unit names. */
typedef struct cli_stat {
    char column[160];   /* the pattern (with its last word the entry's key) */
    char title[96];     /* a short title: the engine's label, else the last word in words */
    char meaning[320];  /* the row's meaning (and the entry's) */
    const char *unit;   /* as in the rows */
    const char *colour; /* a time category's colour, "#rrggbb" (hw/cats.def); else NULL */
    char commands[64];  /* the commands whose report holds it, separated by spaces */
    const char *table;  /* the file that declares it */
} cli_stat;

typedef void cli_stat_fn(void *ctx, const cli_stat *s);
/* Call fn for each statistic that command's report can hold (NULL: every command's), in
 * order. */
void cli_stats_each(const char *command, cli_stat_fn *fn, void *ctx);

/* 1 when path (a JSON leaf's dotted path, a CSV column: "per_ipu.2.split.Sync") is one of the
 * paths pattern stands for ("per_ipu.N.split.Sync", "per_ipu.N.split.CAT"); else 0. */
int cli_metric_match(const char *pattern, const char *path);
/* 1 when cmd is one of the space-separated words of commands. */
int cli_metric_has(const char *commands, const char *cmd);

#endif
