/* table: the commands' option tables read three ways: the parser (argv into the command's
 * configuration and the run context), the help writer (the usage text, with each default as
 * the configuration holds it) and the echo (the JSON config's "options"). Models nothing; one
 * table per command keeps an option's name, range, default, help and echo in one row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/text.h"
#include "cli/cli.h"

/* Where row r's value lives: in the run context x or in the configuration cfg. */
static void *field(const cli_opt *r, const cli_ctx *x, const void *cfg)
{
    return (char *)(r->ctx ? (const void *)x : cfg) + r->off;
}

static const cli_opt *find(const cli_table *t, const char *name)
{
    for (size_t k = 0; k < t->nrows; k++)
        if (t->rows[k].name && t->rows[k].kind != CLI_TEXT && strcmp(t->rows[k].name, name) == 0)
            return &t->rows[k];
    return NULL;
}

/* CLI_ENUM: v one of r's names, its value into *dst; else one line naming them. */
static int take_enum(const char *cmd, const cli_opt *r, const char *v, int *dst)
{
    int n = 0;
    while (r->names[n])
        n++;
    for (int k = 0; k < n; k++)
        if (strcmp(v, r->names[k]) == 0) {
            *dst = r->vals ? r->vals[k] : k;
            return 0;
        }
    txt list = {0};
    for (int k = 0; k < n; k++)
        txt_printf(&list, "%s%s", k == 0 ? "" : k == n - 1 ? " or " : ", ", r->names[k]);
    fprintf(stderr, "ipusim %s: %s %s: expected %s\n", cmd, r->name, v, txt_str(&list));
    txt_free(&list);
    return 2;
}

/* A value-taking row: fetch argv[*i + 1] and store it by the row's kind. */
static int take_value(const char *cmd, const cli_opt *r, int argc, char **argv, int *i, void *p)
{
    const char *opt = argv[*i], *v = NULL;
    uint64_t u;
    int rc = cli_value(cmd, argc, argv, i, &v);
    if (rc)
        return rc;
    switch (r->kind) {
    case CLI_U64: return cli_u64(cmd, opt, v, r->min, r->max, p);
    case CLI_U32:
        if ((rc = cli_u64(cmd, opt, v, r->min, r->max, &u)) == 0)
            *(uint32_t *)p = (uint32_t)u;
        return rc;
    case CLI_INT: return cli_int(cmd, opt, v, (long)r->min, (long)r->max, p);
    case CLI_DBL: return cli_double(cmd, opt, v, r->dmin, r->dmax, p);
    case CLI_US: return cli_us(cmd, opt, v, p);
    case CLI_STR: *(const char **)p = v; return 0;
    case CLI_ENUM: return take_enum(cmd, r, v, p);
    default: return r->val(cmd, opt, v, p);
    }
}

static int take(const char *cmd, const cli_opt *r, int argc, char **argv, int *i, void *p)
{
    switch (r->kind) {
    case CLI_FLAG:
    case CLI_CLEAR: *(int *)p = r->kind == CLI_FLAG; return 0;
    case CLI_TAKE: return r->take(cmd, argc, argv, i, p);
    default: return take_value(cmd, r, argc, argv, i, p);
    }
}

/* The modes of argument a: its row's, or those of the machine's or the profile's options. */
static unsigned modes_of(const cli_table *t, const cli_opt *r, const char *a)
{
    if (r)
        return r->modes;
    if (strcmp(a, "--machine") == 0 || strcmp(a, "--set") == 0)
        return t->machine_modes;
    return t->profile && strncmp(a, "--profile", 9) == 0 ? t->profile_modes : 0;
}

/* Note a, an option of the given modes, as the first of each mode given (cli_ctx.first). */
static void note_modes(cli_ctx *x, const char *a, unsigned modes)
{
    for (unsigned b = 0; b < sizeof x->first / sizeof x->first[0]; b++)
        if ((modes >> b & 1) && !x->first[b])
            x->first[b] = a;
}

int cli_parse(const cli_table *t, cli_ctx *x, void *cfg, int argc, char **argv)
{
    const char *cmd = t->cmd;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const cli_opt *r = find(t, a);
        int rc;
        note_modes(x, a, modes_of(t, r, a));
        if (r) {
            rc = take(cmd, r, argc, argv, &i, field(r, x, cfg));
        } else if ((rc = cli_machine_opt(cmd, argc, argv, &i, &x->mo)) >= 0) {
        } else if (t->profile && (rc = cli_profile_opt(cmd, argc, argv, &i, &x->po)) >= 0) {
        } else if (!t->pos || (rc = t->pos(x, cfg, a)) < 0) {
            return cli_unknown(cmd, a);
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- the help ---- */

/* Row r's value at p as the help writes it: by its name where it has names, by its echo where
 * it has one, else by its kind. */
static void value_text(const cli_opt *r, const cli_ctx *x, const void *p, txt *out)
{
    if (r->names) {
        for (int k = 0; r->names[k]; k++)
            if ((r->vals ? r->vals[k] : k) == *(const int *)p)
                txt_printf(out, "%s", r->names[k]);
        return;
    }
    if (r->echo) {
        json *j = r->echo(x, p);
        txt_printf(out, "%s", json_object_get_string(j));
        json_object_put(j);
        return;
    }
    switch (r->kind) {
    case CLI_FLAG:
    case CLI_CLEAR:
    case CLI_INT: txt_printf(out, "%d", *(const int *)p); break;
    case CLI_U64: txt_printf(out, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case CLI_U32: txt_printf(out, "%u", *(const uint32_t *)p); break;
    case CLI_DBL: txt_printf(out, "%g", *(const double *)p); break;
    case CLI_US: txt_printf(out, "%g", (double)*(const uint64_t *)p / 1e6); break;
    case CLI_STR:
        txt_printf(out, "%s", *(const char *const *)p ? *(const char *const *)p : "");
        break;
    default: break;
    }
}

/* The help text of row r with its "{}" and "{--NAME}" replaced by the defaults. */
static void expand(const cli_table *t, const cli_opt *r, const cli_ctx *x, const void *cfg,
                   txt *out)
{
    for (const char *s = r->help; *s; s++) {
        const char *end = s[0] == '{' ? strchr(s, '}') : NULL;
        if (!end) {
            txt_printf(out, "%c", *s);
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(end - s - 1), s + 1);
        const cli_opt *d = name[0] ? find(t, name) : r;
        if (d)
            value_text(d, x, field(d, x, cfg), out);
        s = end;
    }
}

static void help_row(const cli_table *t, const cli_opt *r, const cli_ctx *x, const void *cfg,
                     FILE *f)
{
    if (!r->help)
        return;
    if (r->kind == CLI_TEXT && !r->head) {
        fputs(r->help, f);
        return;
    }
    char head[96];
    if (r->head)
        snprintf(head, sizeof head, "%s", r->head);
    else
        snprintf(head, sizeof head, "%s%s%s", r->name, r->arg ? " " : "", r->arg ? r->arg : "");
    int col = r->col ? r->col : t->col;
    txt body = {0};
    expand(t, r, x, cfg, &body);
    const char *line = txt_str(&body);
    if ((int)strlen(head) > col) /* a long head: the text starts under the column */
        fprintf(f, "  %s\n%*s", head, col + 3, "");
    else
        fprintf(f, "  %-*s ", col, head);
    for (const char *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1)
        fprintf(f, "%.*s\n%*s", (int)(nl - line), line, col + 3, "");
    fprintf(f, "%s\n", line);
    txt_free(&body);
}

void cli_help(const cli_table *t, FILE *f)
{
    cli_ctx *x = xmalloc(sizeof *x);
    void *cfg = xcalloc(1, t->cfg_size ? t->cfg_size : 1);
    cli_ctx_init(x, t->cmd, 0, NULL, NULL);
    if (t->init)
        t->init(x, cfg);
    fputs(t->head, f);
    for (size_t k = 0; k < t->nrows; k++)
        help_row(t, &t->rows[k], x, cfg, f);
    fputs(t->tail, f);
    free(cfg);
    free(x);
}

/* ---- the echo ---- */

json *cli_echo_threads(const cli_ctx *x, const void *dst)
{
    (void)dst;
    return json_u64(x->threads);
}

/* Row r's value as JSON: by its names (a string) or its kind. */
static json *echo_value(const cli_opt *r, const cli_ctx *x, const void *p)
{
    switch (r->names ? CLI_ENUM : r->kind) {
    case CLI_FLAG:
    case CLI_CLEAR:
    case CLI_INT: return json_u64((uint64_t) * (const int *)p);
    case CLI_U64: return json_u64(*(const uint64_t *)p);
    case CLI_U32: return json_u64(*(const uint32_t *)p);
    case CLI_DBL: return json_num(*(const double *)p);
    case CLI_US: return json_num((double)*(const uint64_t *)p / 1e6);
    case CLI_STR: return *(const char *const *)p ? json_str(*(const char *const *)p) : NULL;
    default: {
        txt s = {0};
        value_text(r, x, p, &s);
        json *v = json_str(txt_str(&s));
        txt_free(&s);
        return v;
    }
    }
}

/* Put v at key in o; "a.b" puts it as b of the object a (made when missing); "a.N" puts it (an
 * array) at a. */
static void put_key(json *o, const char *key, json *v)
{
    const char *dot = strchr(key, '.');
    if (!dot || strcmp(dot, ".N") == 0) {
        char k[64];
        snprintf(k, sizeof k, "%.*s", (int)(dot ? dot - key : (ptrdiff_t)strlen(key)), key);
        json_put(o, k, v);
        return;
    }
    char outer[64];
    snprintf(outer, sizeof outer, "%.*s", (int)(dot - key), key);
    json *in = json_at(o, outer);
    if (!in)
        in = json_put(o, outer, json_obj());
    put_key(in, dot + 1, v);
}

void cli_echo(const cli_table *t, const cli_ctx *x, const void *cfg, json *o, unsigned skip)
{
    const cli_opt **by = xmalloc(t->nrows * sizeof *by);
    size_t n = 0;
    for (size_t k = 0; k < t->nrows; k++) { /* the keyed rows by pos, ties in table order */
        const cli_opt *r = &t->rows[k];
        if (!r->key || (r->modes & skip))
            continue;
        size_t j = n++;
        for (; j > 0 && by[j - 1]->pos > r->pos; j--)
            by[j] = by[j - 1];
        by[j] = r;
    }
    for (size_t k = 0; k < n; k++) {
        const void *p = field(by[k], x, cfg);
        put_key(o, by[k]->key, by[k]->echo ? by[k]->echo(x, p) : echo_value(by[k], x, p));
    }
    free(by);
    if (t->common_modes & skip)
        return;
    if (t->profile)
        cli_json_common(o, x->progress, &x->po);
    else
        json_put_u64(o, "progress", (uint64_t)x->progress);
}
