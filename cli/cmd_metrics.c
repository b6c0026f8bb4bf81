/* cmd_metrics: `ipusim metrics` — every statistic the JSON reports write, from the tables
 * (cli/metrics.h lists them), one line each, tab-separated: the CSV column a sweep gives it
 * (N for an index, PHASE, LAYER, STEP for a member of a set), its unit, its title, its
 * meaning, a time category's colour (else empty) and the commands whose report holds it.
 * plots/render.sh asks it for key titles and axis labels (the lines of a column given as an
 * argument), plots/profile.sh for the categories' colours, so a plot names and colours a
 * statistic as every other does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/text.h"
#include "cli/cli.h"
#include "cli/metrics.h"

typedef struct want {
    const char **columns; /* the columns asked for; none: every statistic */
    int ncolumns;
    size_t found; /* count: the statistics that match columns[0] */
} want;

static void print(void *ctx, const cli_stat *s)
{
    want *w = ctx;
    int hit = w->ncolumns == 0;
    for (int i = 0; i < w->ncolumns && !hit; i++)
        hit = cli_metric_match(s->column, w->columns[i]);
    if (hit)
        printf("%s\t%s\t%s\t%s\t%s\t%s\n", s->column, s->unit, s->title, s->meaning,
               s->colour ? s->colour : "", s->commands);
}

/* Count the statistics that match column (ctx: a want of one column). */
static void count(void *ctx, const cli_stat *s)
{
    want *w = ctx;
    w->found += (size_t)cli_metric_match(s->column, w->columns[0]);
}

/* Is cmd a command that writes a report? 0, or 2 after one line naming those that do. */
static int check_command(const char *cmd)
{
    size_t n;
    const cli_metric *r = cli_metric_rows(&n);
    txt names = {0};
    for (size_t i = 0; i < n; i++) {
        if (cli_metric_has(r[i].commands, cmd)) {
            txt_free(&names);
            return 0;
        }
        for (const char *c = r[i].commands; *c; c += strcspn(c, " "), c += *c == ' ') {
            char word[32];
            snprintf(word, sizeof word, "%.*s", (int)strcspn(c, " "), c);
            if (!cli_metric_has(txt_str(&names), word))
                txt_printf(&names, "%s%s", names.len ? " " : "", word);
        }
    }
    fprintf(stderr, "ipusim metrics: --command %s: not a command with a JSON report (%s)\n", cmd,
            txt_str(&names));
    txt_free(&names);
    return 2;
}

int cli_cmd_metrics(int argc, char **argv)
{
    const char *cmd = NULL;
    want w = {xmalloc((size_t)argc * sizeof *w.columns), 0, 0};
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        if (strcmp(argv[i], "--command") == 0) {
            rc = cli_value("metrics", argc, argv, &i, &cmd);
            rc = rc ? rc : check_command(cmd);
        } else if (argv[i][0] == '-') {
            rc = cli_unknown("metrics", argv[i]);
        } else {
            w.columns[w.ncolumns++] = argv[i];
        }
    }
    for (int i = 0; i < w.ncolumns && !rc; i++) {
        want one = {w.columns + i, 1, 0};
        cli_stats_each(cmd, count, &one);
        if (!one.found) {
            fprintf(stderr, "ipusim metrics: %s: not a statistic of %s%s report\n", w.columns[i],
                    cmd ? cmd : "any", cmd ? "'s" : " command's");
            rc = 2;
        }
    }
    if (!rc)
        cli_stats_each(cmd, print, &w);
    free(w.columns);
    return rc;
}
