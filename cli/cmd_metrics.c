/* cmd_metrics: `ipusim metrics` — every statistic the reports write, from the engine's tables
 * (hw/stats.h), one line each: the CSV column a sweep gives it, its unit, its title and its
 * meaning, tab-separated. plots/render.sh reads it for key titles and axis labels, so a plot
 * names a statistic as the text report does. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "hw/stats.h"

static void row(const char *column, const eng_stat *s, const char *title)
{
    printf("%s\t%s\t%s\t%s\n", column, s->unit, title, s->meaning);
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
        row(col, &t[i], title);
    }
    t = eng_ipu_stat_table();
    for (unsigned i = 0; i < ENG_NIPU_STAT; i++) {
        snprintf(col, sizeof col, "per_ipu.N.%s", t[i].key);
        row(col, &t[i], t[i].key);
    }
    t = eng_cat_table();
    for (unsigned i = 0; i < ENG_NCAT; i++) {
        snprintf(col, sizeof col, "iobench.split.%s", t[i].key);
        row(col, &t[i], t[i].label);
    }
    return 0;
}
