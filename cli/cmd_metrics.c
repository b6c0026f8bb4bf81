/* cmd_metrics: `ipusim metrics` — every statistic the reports write, from the engine's tables
 * (hw/stats.h), one line each: the CSV column a sweep gives it, its unit, its title and its
 * meaning, tab-separated, and for a time category a fifth field, its colour. plots/render.sh
 * and plots/profile.sh read it for key titles, axis labels and the categories' colours, so a
 * plot names and colours a statistic as every other does. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "hw/stats.h"

static void row(const char *column, const eng_stat *s, const char *title, const char *colour)
{
    printf("%s\t%s\t%s\t%s%s%s\n", column, s->unit, title, s->meaning, colour ? "\t" : "",
           colour ? colour : "");
}

int cli_cmd_metrics(int argc, char **argv)
{
    if (argc > 1)
        return cli_unknown("metrics", argv[1]);
    char col[128], title[128];
    const eng_stat *t = eng_stat_table();
    for (unsigned i = 0; i < ENG_NSTAT; i++) {
        snprintf(col, sizeof col, "stats.%s", t[i].key);
        snprintf(title, sizeof title, "%s%s%s", t[i].line ? t[i].line : "", t[i].line ? " " : "",
                 t[i].label);
        row(col, &t[i], title, NULL);
    }
    t = eng_ipu_stat_table();
    for (unsigned i = 0; i < ENG_NIPU_STAT; i++) {
        snprintf(col, sizeof col, "per_ipu.N.%s", t[i].key);
        row(col, &t[i], t[i].key, NULL);
    }
    /* the time split: io-bench's (IPU 0's), and every IPU's in run, gemm and io-bench */
    static const char *const split[] = {"iobench.split.%s", "per_ipu.N.split.%s"};
    t = eng_cat_table();
    for (unsigned k = 0; k < 2; k++)
        for (unsigned i = 0; i < ENG_NCAT; i++) {
            snprintf(col, sizeof col, split[k], t[i].key);
            row(col, &t[i], t[i].label, eng_cat_colour(i));
        }
    /* the compute sets' table (bench/profile/csets.h): mnist's train and test sections */
    printf("simulated.PHASE.compute_sets.ipus.N.sets.K.supersteps\t\tcompute set supersteps\t"
           "the supersteps of IPU N that ran program step K (sorted by cycles)\n"
           "simulated.PHASE.compute_sets.ipus.N.sets.K.cycles\tcycles\tcompute set cycles\t"
           "their cycles summed over the run\n"
           "simulated.PHASE.compute_sets.ipus.N.sets.K.split.CATEGORY\tcycles\tcompute set "
           "split\tthose cycles in one time category (hw/cats.def)\n");
    return 0;
}
