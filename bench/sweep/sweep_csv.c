/* sweep_csv: the sweep's CSV file. Reading an earlier one for resume (its header, and the
 * parameter values of every row, so the points already there are skipped), and quoting fields
 * as RFC 4180 does (a field holding a comma, a quote or a line break is quoted, quotes
 * doubled). Writing the rows is the runner's job (one write() each, sweep_run.c). A torn last
 * line (no newline: the disk filled, say) is not counted; the runner cuts it off. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/file.h"
#include "bench/sweep/sweep.h"

typedef struct rec {
    char **f;
    size_t n, cap;
} rec;

static void rec_clear(rec *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->f[i]);
    r->n = 0;
}

static void rec_push(rec *r, const char *b, size_t n)
{
    r->f = xgrow(r->f, &r->cap, r->n + 1, sizeof *r->f);
    char *s = xmalloc(n + 1);
    /* Undo the quoting: "" inside a quoted field is one quote. */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        s[k++] = b[i];
        if (b[i] == '"' && i + 1 < n && b[i + 1] == '"')
            i++;
    }
    s[k] = '\0';
    r->f[r->n++] = s;
}

/* One record from s[*at, len): 0, or 1 malformed (a quote in the middle
 * of an unquoted field, text after a closing quote, a quote never closed). */
static int read_rec(const char *s, size_t len, size_t *at, rec *r)
{
    size_t i = *at;
    rec_clear(r);
    for (;;) {
        size_t a, b;
        if (i < len && s[i] == '"') {
            a = ++i;
            for (;; i++) {
                if (i >= len)
                    return 1;
                if (s[i] == '"') {
                    if (i + 1 < len && s[i + 1] == '"')
                        i++;
                    else
                        break;
                }
            }
            b = i++;
        } else {
            a = i;
            while (i < len && s[i] != ',' && s[i] != '\n' && s[i] != '\r') {
                if (s[i] == '"')
                    return 1;
                i++;
            }
            b = i;
        }
        rec_push(r, s + a, b - a);
        if (i < len && s[i] == ',') {
            i++;
            continue;
        }
        if (i < len && s[i] == '\r')
            i++;
        if (i < len && s[i] != '\n')
            return 1;
        *at = i + 1;
        return 0;
    }
}

static size_t line_of(const char *s, size_t at)
{
    size_t line = 1;
    for (size_t i = 0; i < at; i++)
        line += s[i] == '\n';
    return line;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static char *join_key(char *const *vals, size_t n)
{
    size_t len = 1;
    for (size_t j = 0; j < n; j++)
        len += strlen(vals[j]) + 1;
    char *k = xmalloc(len), *p = k;
    for (size_t j = 0; j < n; j++)
        p += sprintf(p, "%s%s", j ? "\x1f" : "", vals[j]);
    *p = '\0';
    return k;
}

char *sweep_point_key(const sweep_grid *g, size_t point)
{
    char *vals[SWEEP_MAX_PARAMS];
    for (unsigned j = 0; j < g->np; j++)
        vals[j] = (char *)sweep_grid_value(g, point, j);
    return join_key(vals, g->np);
}

/* The length of a UTF-8 byte-order mark at the start of s[0, len) (3), or 0. Spreadsheets
 * save CSV with one; it is no part of the first column's name, and a rewrite keeps it. */
static size_t bom_len(const char *s, size_t len)
{
    return len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

static int parse(const char *path, const char *s, const sweep_grid *g, sweep_csv *c, char *msg)
{
    size_t at = bom_len(s, c->valid_len), cap = 0;
    rec r = {0};
    int rc = 0;
    while (at < c->valid_len && !rc) {
        size_t start = at;
        if (s[at] == '\n' || (s[at] == '\r' && s[at + 1] == '\n')) { /* a blank line */
            at += s[at] == '\r' ? 2 : 1;
            continue;
        }
        if (read_rec(s, c->valid_len, &at, &r)) {
            snprintf(msg, SWEEP_MSG, "%s:%zu: malformed CSV line", path, line_of(s, start));
            rc = 2;
            break;
        }
        if (!c->cols.n) { /* the header */
            int ok = r.n >= g->np + 1 && strcmp(r.f[g->np], "status") == 0;
            for (unsigned j = 0; ok && j < g->np; j++)
                ok = strcmp(r.f[j], g->p[j].name) == 0;
            if (!ok) {
                char want[SWEEP_MSG / 2] = "";
                for (unsigned j = 0; j < g->np; j++)
                    snprintf(want + strlen(want), sizeof want - strlen(want), "%s,", g->p[j].name);
                snprintf(msg, SWEEP_MSG,
                         "%s: its columns do not start with %sstatus (this "
                         "sweep's parameters): use another --out or delete it",
                         path, want);
                rc = 2;
                break;
            }
            c->cols = (sweep_cols){r.f, r.n, r.cap};
            r = (rec){0};
            continue;
        }
        if (r.n != c->cols.n) {
            snprintf(msg, SWEEP_MSG, "%s:%zu: %zu fields, the header has %zu", path,
                     line_of(s, start), r.n, c->cols.n);
            rc = 2;
            break;
        }
        c->done = xgrow(c->done, &cap, c->ndone + 1, sizeof *c->done);
        c->done[c->ndone++] = join_key(r.f, g->np);
        if (strcmp(r.f[g->np], "0") != 0) {
            c->bad = xrealloc(c->bad, (c->nbad + 1) * sizeof *c->bad);
            c->bad[c->nbad++] = xstrdup(c->done[c->ndone - 1]);
        }
    }
    rec_clear(&r);
    free(r.f);
    if (!rc && c->ndone)
        qsort(c->done, c->ndone, sizeof *c->done, cmp_str);
    if (!rc && c->nbad)
        qsort(c->bad, c->nbad, sizeof *c->bad, cmp_str);
    return rc;
}

int sweep_csv_load(const char *path, const sweep_grid *g, sweep_csv *c, char *msg)
{
    memset(c, 0, sizeof *c);
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        return 0; /* a fresh sweep */
    err e;
    size_t len = 0;
    char *s = file_read_text(path, (size_t)1 << 34, &len, &e);
    if (!s) {
        snprintf(msg, SWEEP_MSG, "%.*s", SWEEP_MSG - 1, e.msg);
        return 2;
    }
    int rc = 0;
    c->file_len = len;
    while (!rc && c->valid_len < len) { /* up to the last newline */
        const char *nl = memchr(s + c->valid_len, '\n', len - c->valid_len);
        if (!nl)
            break;
        c->valid_len = (size_t)(nl - s) + 1;
    }
    if (!rc)
        rc = parse(path, s, g, c, msg);
    free(s);
    if (rc)
        sweep_csv_free(c);
    return rc;
}

void sweep_csv_free(sweep_csv *c)
{
    sweep_cols_free(&c->cols);
    for (size_t i = 0; i < c->ndone; i++)
        free(c->done[i]);
    for (size_t i = 0; i < c->nbad; i++)
        free(c->bad[i]);
    free(c->done);
    free(c->bad);
    memset(c, 0, sizeof *c);
}

static int find(char **keys, size_t n, const sweep_grid *g, size_t point)
{
    if (!n)
        return 0;
    char *k = sweep_point_key(g, point);
    int found = bsearch(&k, keys, n, sizeof *keys, cmp_str) != NULL;
    free(k);
    return found;
}

int sweep_csv_done(const sweep_csv *c, const sweep_grid *g, size_t point)
{
    return find(c->done, c->ndone, g, point);
}

int sweep_csv_failed(const sweep_csv *c, const sweep_grid *g, size_t point)
{
    return find(c->bad, c->nbad, g, point);
}

void sweep_csv_field(FILE *f, const char *text, int first)
{
    if (!first)
        fputc(',', f);
    if (!strpbrk(text, ",\"\r\n")) {
        fputs(text, f);
        return;
    }
    fputc('"', f);
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

static int col_index(char *const *cols, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cols[i], name) == 0)
            return (int)i;
    return -1;
}

size_t sweep_cols_merge(sweep_cols *c, size_t first, const sweep_metrics *m)
{
    size_t at = first, added = 0;
    for (size_t i = 0; m && i < m->n; i++) {
        int k = col_index(c->name, c->n, m->m[i].name);
        if (k >= 0) {
            at = (size_t)k + 1;
            continue;
        }
        c->name = xgrow(c->name, &c->cap, c->n + 1, sizeof *c->name);
        memmove(c->name + at + 1, c->name + at, (c->n - at) * sizeof *c->name);
        c->name[at++] = xstrdup(m->m[i].name);
        c->n++;
        added++;
    }
    return added;
}

void sweep_cols_free(sweep_cols *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->name[i]);
    free(c->name);
    memset(c, 0, sizeof *c);
}

/* Every record of s[0, len) after the header, its fields put in the columns of `to`
 * (from[j]: the record's field for column j, or -1 for an empty one), into f. */
static int move_rows(const char *s, size_t len, size_t at, const int *from, size_t ncols, FILE *f)
{
    rec r = {0};
    int rc = 0;
    while (at < len && !rc) {
        if (s[at] == '\n' || (s[at] == '\r' && at + 1 < len && s[at + 1] == '\n')) {
            at += s[at] == '\r' ? 2 : 1;
            continue;
        }
        rc = read_rec(s, len, &at, &r);
        for (size_t j = 0; j < ncols && !rc; j++)
            sweep_csv_field(f, from[j] >= 0 && (size_t)from[j] < r.n ? r.f[from[j]] : "", j == 0);
        fputc('\n', f);
    }
    rec_clear(&r);
    free(r.f);
    return rc;
}

int sweep_csv_rewrite(const char *path, const sweep_cols *to, char *msg)
{
    err e;
    size_t len = 0, at = 0;
    char *s = file_read_text(path, (size_t)1 << 34, &len, &e), *buf = NULL;
    if (!s) {
        snprintf(msg, SWEEP_MSG, "%.*s", SWEEP_MSG - 1, e.msg);
        return 2;
    }
    rec hdr = {0};
    at = bom_len(s, len);
    int rc = read_rec(s, len, &at, &hdr);
    int *from = xmalloc((to->n + 1) * sizeof *from);
    for (size_t j = 0; j < to->n; j++)
        from[j] = rc ? -1 : col_index(hdr.f, hdr.n, to->name[j]);
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    if (!f)
        xoom(BUFSIZ); /* open_memstream fails only for memory */
    fwrite(s, 1, bom_len(s, len), f);
    for (size_t j = 0; j < to->n; j++)
        sweep_csv_field(f, to->name[j], j == 0);
    fputc('\n', f);
    if (!rc)
        rc = move_rows(s, len, at, from, to->n, f);
    fclose(f);
    if (rc)
        snprintf(msg, SWEEP_MSG, "%s: malformed CSV line", path);
    else if (file_write_atomic(path, buf, blen, &e)) {
        snprintf(msg, SWEEP_MSG, "%.*s", SWEEP_MSG - 1, e.msg);
        rc = 2;
    }
    rec_clear(&hdr);
    free(hdr.f);
    free(from);
    free(buf);
    free(s);
    return rc ? 2 : 0;
}
