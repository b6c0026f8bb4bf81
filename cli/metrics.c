/* metrics: the statistics of every command's JSON report, from the tables (cli/metrics.h
 * lists them), and the placeholders of their patterns: what each stands for, and, for those
 * that name a table (STAT, IPU_STAT, CAT, PARAM), each entry's unit, title and meaning. It
 * gathers and matches; it computes no statistic and writes no report. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/metrics.h"
#include "hw/machine.h"
#include "hw/stats.h"
#include "workloads/mnist/mnet.h"
#include "workloads/ops/ops.h"

static const cli_metric rows[] = {
#define METRIC(pattern, unit, commands, meaning) {pattern, unit, commands, meaning, TABLE},
#define TABLE "cli/report_stats.def"
#include "cli/report_stats.def"
#undef TABLE
#define TABLE "workloads/gemm/gemm_stats.def"
#include "workloads/gemm/gemm_stats.def"
#undef TABLE
#define TABLE "workloads/iobench/iobench_stats.def"
#include "workloads/iobench/iobench_stats.def"
#undef TABLE
#define TABLE "workloads/micro/micro_stats.def"
#include "workloads/micro/micro_stats.def"
#undef TABLE
#define TABLE "workloads/mnist/mnist_stats.def"
#include "workloads/mnist/mnist_stats.def"
#undef TABLE
#define TABLE "cli/config_stats.def"
#include "cli/config_stats.def"
#undef TABLE
#undef METRIC
};

const cli_metric *cli_metric_rows(size_t *n)
{
    *n = sizeof rows / sizeof rows[0];
    return rows;
}

/* ---- the placeholders ---- */

/* Entry i of a placeholder's set: its key, and for a table's entry its unit, meaning, colour
 * and title. 0 past the last. */
typedef struct entry {
    const char *key, *unit, *meaning, *colour;
    char title[96];
} entry;

static void title_of(char *t, size_t len, const char *a, const char *b)
{
    snprintf(t, len, "%s%s%s", a ? a : "", a ? " " : "", b);
    for (; *t; t++)
        *t = *t == '_' ? ' ' : *t;
}

static int eng_entry(const eng_stat *tab, size_t n, size_t i, entry *e)
{
    if (i >= n)
        return 0;
    *e = (entry){tab[i].key, tab[i].unit, tab[i].meaning, NULL, ""};
    title_of(e->title, sizeof e->title, tab[i].line, tab[i].label);
    return 1;
}

static int stat_at(size_t i, entry *e)
{
    return eng_entry(eng_stat_table(), ENG_NSTAT, i, e);
}

static int ipu_stat_at(size_t i, entry *e)
{
    if (!eng_entry(eng_ipu_stat_table(), ENG_NIPU_STAT, i, e))
        return 0;
    title_of(e->title, sizeof e->title, NULL, e->key); /* its labels continue a line */
    return 1;
}

static int cat_at(size_t i, entry *e)
{
    if (!eng_entry(eng_cat_table(), ENG_NCAT, i, e))
        return 0;
    e->colour = eng_cat_colour((unsigned)i);
    return 1;
}

static int param_at(size_t i, entry *e)
{
    if (i >= MACH_NPARAMS)
        return 0;
    const mach_param *p = &mach_params()[i];
    *e = (entry){p->key, strcmp(p->unit, "-") ? p->unit : "text", p->meaning, NULL, ""};
    title_of(e->title, sizeof e->title, NULL, p->key);
    return 1;
}

static int phase_at(size_t i, entry *e)
{
    static const char *const phases[] = {"train", "test"}; /* cli/cmd_mnist_sim.c's passes */
    *e = (entry){i < 2 ? phases[i] : NULL, NULL, NULL, NULL, ""};
    return i < 2;
}

static int layer_at(size_t i, entry *e)
{
    *e = (entry){i < MNET_NLAYERS ? mnet_layer_name((int)i) : NULL, NULL, NULL, NULL, ""};
    return i < MNET_NLAYERS;
}

static int step_at(size_t i, entry *e)
{
    *e = (entry){i < OP_S_N ? op_conv_step_name((int)i) : NULL, NULL, NULL, NULL, ""};
    return i < OP_S_N;
}

/* The placeholders: a word in capitals and its set (at NULL: N, an index). */
static const struct hole {
    const char *word;
    int (*at)(size_t i, entry *e);
} holes[] = {
    {"N", NULL},       {"PHASE", phase_at},       {"LAYER", layer_at}, {"STEP", step_at},
    {"STAT", stat_at}, {"IPU_STAT", ipu_stat_at}, {"CAT", cat_at},     {"PARAM", param_at},
};

/* The placeholder that the word w (n characters) is, or NULL. */
static const struct hole *hole_of(const char *w, size_t n)
{
    for (size_t k = 0; k < sizeof holes / sizeof holes[0]; k++)
        if (strlen(holes[k].word) == n && strncmp(holes[k].word, w, n) == 0)
            return &holes[k];
    return NULL;
}

/* ---- matching ---- */

static int match_words(const char *w, const char *p);

/* The rest of the pattern after a word (we: its end) against the path from p. */
static int match_rest(const char *we, const char *p)
{
    if (*we == '\0')
        return *p == '\0';
    return *p == '.' && match_words(we + 1, p + 1);
}

/* The pattern's words from w against the path from p: a literal word is itself, N one or
 * more digits, another placeholder one of its set's keys (which may hold dots: STEP). */
static int match_words(const char *w, const char *p)
{
    const char *we = w + strcspn(w, ".");
    size_t n = (size_t)(we - w);
    const struct hole *h = hole_of(w, n);
    if (!h)
        return strncmp(w, p, n) == 0 && match_rest(we, p + n);
    if (!h->at) {
        size_t d = strspn(p, "0123456789");
        return d > 0 && match_rest(we, p + d);
    }
    entry e;
    for (size_t i = 0; h->at(i, &e); i++) {
        size_t k = strlen(e.key);
        if (strncmp(e.key, p, k) == 0 && match_rest(we, p + k))
            return 1;
    }
    return 0;
}

int cli_metric_match(const char *pattern, const char *path)
{
    return match_words(pattern, path);
}

int cli_metric_has(const char *commands, const char *cmd)
{
    size_t n = strlen(cmd);
    for (const char *c = commands; *c;) {
        size_t k = strcspn(c, " ");
        if (k == n && strncmp(c, cmd, n) == 0)
            return 1;
        c += k + (c[k] == ' ');
    }
    return 0;
}

/* ---- the list ---- */

/* A row that stands for one statistic: its title is its last literal word. */
static void plain(const cli_metric *r, cli_stat *s)
{
    snprintf(s->column, sizeof s->column, "%s", r->pattern);
    snprintf(s->meaning, sizeof s->meaning, "%s", r->meaning);
    s->unit = r->unit;
    s->colour = NULL;
    snprintf(s->commands, sizeof s->commands, "%s", r->commands);
    s->table = r->table;
    const char *last = r->pattern;
    for (const char *w = r->pattern; *w;) {
        size_t n = strcspn(w, ".");
        if (!hole_of(w, n))
            last = w;
        w += n + (w[n] == '.');
    }
    char word[96];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(last, "."), last);
    title_of(s->title, sizeof s->title, NULL, word);
}

/* A row with a NULL unit: one statistic per entry of the table its last word names. */
static void expand(const cli_metric *r, cli_stat *s, cli_stat_fn *fn, void *ctx)
{
    const char *last = strrchr(r->pattern, '.');
    last = last ? last + 1 : r->pattern;
    const struct hole *h = hole_of(last, strlen(last));
    assert(h && h->at); /* a NULL unit is for a row ending in a table's placeholder */
    entry e;
    for (size_t i = 0; h->at(i, &e); i++) {
        snprintf(s->column, sizeof s->column, "%.*s%s", (int)(last - r->pattern), r->pattern,
                 e.key);
        snprintf(s->title, sizeof s->title, "%s", e.title);
        snprintf(s->meaning, sizeof s->meaning, "%s: %s", r->meaning, e.meaning);
        s->unit = e.unit;
        s->colour = e.colour;
        fn(ctx, s);
    }
}

/* ---- the options ----
 * config.options.KEY: a row with a key of a command's option table (cli/commands.c's table
 * gives each command's). A key whose unit and meaning are the same in several tables is
 * listed once, at its first table, with each of them as its commands. */

static int same_option(const cli_opt *a, const cli_opt *b)
{
    return a->key && b->key && strcmp(a->key, b->key) == 0 && strcmp(a->unit, b->unit) == 0 &&
           strcmp(a->means, b->means) == 0;
}

/* 1 when table t has a row as r. */
static int table_has(const cli_table *t, const cli_opt *r)
{
    for (size_t k = 0; k < t->nrows; k++)
        if (same_option(&t->rows[k], r))
            return 1;
    return 0;
}

/* 1 when a command before c (in cli/commands.c's table) has a row as r. */
static int has_option(const cli_cmd *c, const cli_opt *r)
{
    for (const cli_cmd *b = cli_commands(); b != c; b++)
        if (b->opts && table_has(b->opts, r))
            return 1;
    return 0;
}

/* Row r of c's table as a metric row: its pattern and commands into the buffers. */
static cli_metric option_metric(const cli_cmd *c, const cli_opt *r, char *pattern, size_t plen,
                                char *commands, size_t clen)
{
    assert(r->unit && r->means); /* a row with a key says what its echo is */
    snprintf(pattern, plen, "config.options.%s", r->key);
    size_t at = (size_t)snprintf(commands, clen, "%s", c->name);
    for (const cli_cmd *d = c + 1; d->name && at < clen; d++)
        if (d->opts && table_has(d->opts, r))
            at += (size_t)snprintf(commands + at, clen - at, " %s", d->name);
    return (cli_metric){pattern, r->unit, commands, r->means, c->opts->file};
}

static void options_each(const char *command, cli_stat_fn *fn, void *ctx)
{
    for (const cli_cmd *c = cli_commands(); c->name; c++)
        for (size_t k = 0; c->opts && k < c->opts->nrows; k++) {
            const cli_opt *r = &c->opts->rows[k];
            if (!r->key || has_option(c, r))
                continue;
            char pattern[96], commands[64];
            cli_metric m = option_metric(c, r, pattern, sizeof pattern, commands, sizeof commands);
            if (command && !cli_metric_has(m.commands, command))
                continue;
            cli_stat s;
            plain(&m, &s);
            fn(ctx, &s);
        }
}

void cli_stats_each(const char *command, cli_stat_fn *fn, void *ctx)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const cli_metric *r = &rows[i];
        if (command && !cli_metric_has(r->commands, command))
            continue;
        cli_stat s;
        plain(r, &s);
        if (r->unit)
            fn(ctx, &s);
        else
            expand(r, &s, fn, ctx);
    }
    options_each(command, fn, ctx);
}
