/* sweep_json: a command's --json report as named metrics: every number, under the path of
 * members that leads to it ("stats.cycles", "per_ipu.0.finish"; a bare number: "value"). The
 * report is read with base/json (json-c) and each number kept as the text the report has, so
 * a CSV shows exactly what the command wrote. Left out: strings, booleans and null (no
 * metric); mnist's compute sets' tables (rows by position, sorted by cycles: each point's
 * report, kept beside the CSV, has them); a number json-c does not keep the text of (a whole number: its digits as json-c
 * prints them, so "-0" reads as 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "bench/sweep/sweep.h"

/* Is path inside a compute sets' table (bench/profile/csets.h)? Its rows are sorted by cycles,
 * so a row's position names another compute set from one point to the next: no column. */
static int in_table(const char *path)
{
    const char *t = strstr(path, "compute_sets.");
    return t && (t == path || t[-1] == '.');
}

static void add_number(void *ctx, const char *path, const char *value, json_type type)
{
    if ((type != json_type_double && type != json_type_int) || in_table(path))
        return;
    sweep_metrics *o = ctx;
    o->m = xgrow(o->m, &o->cap, o->n + 1, sizeof *o->m);
    sweep_metric *m = &o->m[o->n++];
    m->name = xstrdup(*path ? path : "value");
    m->text = xstrdup(value);
}

void sweep_json_metrics(json *o, sweep_metrics *out)
{
    json_leaves(o, NULL, add_number, out);
}

int sweep_json_flatten(const char *name, const char *text, size_t len, sweep_metrics *out,
                       char *msg)
{
    err e;
    err_clear(&e);
    json *o = json_parse(name, text, len, &e);
    if (!o) {
        snprintf(msg, SWEEP_MSG, "%.*s", SWEEP_MSG - 1, e.msg);
        return 2;
    }
    sweep_json_metrics(o, out);
    json_object_put(o);
    return 0;
}

void sweep_metrics_free(sweep_metrics *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->m[i].name);
        free(m->m[i].text);
    }
    free(m->m);
    memset(m, 0, sizeof *m);
}
