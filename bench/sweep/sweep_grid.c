/* sweep_grid: the parameters of a sweep, the grid of points they span, and the argv each
 * point runs with. Values are kept as text (what the CSV shows and the command parses);
 * ranges are expanded here into canonical text ("%lld" for whole numbers, "%.12g" for
 * decimals) so a re-run produces the same strings and resume can match them. Nothing here
 * knows what a parameter means: the command checks its own values. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "bench/sweep/sweep.h"

static int name_char(char c, int first)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '-'));
}

/* Length of the parameter name at s (0 if none). */
static size_t name_len(const char *s, size_t max)
{
    size_t n = 0;
    while (n < max && s[n] && name_char(s[n], n == 0))
        n++;
    return n;
}

/* A number in [s, s + len): whole (*isint) or decimal, finite. 0 ok, -1 not a number. */
static int parse_num(const char *s, size_t len, double *d, long long *ll, int *isint)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (*end == '\0' && errno == 0) {
        *ll = v;
        *d = (double)v;
        *isint = 1;
        return 0;
    }
    errno = 0;
    double x = strtod(buf, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(x) || buf[0] == ' ' ||
        strpbrk(buf, "xXpPnNiI"))
        return -1;
    *d = x;
    *isint = 0;
    return 0;
}

typedef struct vlist {
    char **v;
    size_t n, cap;
} vlist;

static int vpush(vlist *l, const char *text, size_t len, char *msg)
{
    if (l->n == SWEEP_MAX_VALUES) {
        snprintf(msg, SWEEP_MSG, "more than %d values", SWEEP_MAX_VALUES);
        return 2;
    }
    l->v = xgrow(l->v, &l->cap, l->n + 1, sizeof *l->v);
    l->v[l->n++] = xstrndup(text, len);
    return 0;
}

static int vpushf(vlist *l, int isint, long long ll, double d, char *msg)
{
    char buf[64];
    int n = isint ? snprintf(buf, sizeof buf, "%lld", ll) : snprintf(buf, sizeof buf, "%.12g", d);
    return vpush(l, buf, (size_t)n, msg);
}

/* Expand A..B[:STEP|:xF] (the text after '='). */
static int expand_range(const char *r, const char *dots, vlist *l, char *msg)
{
    const char *b = dots + 2, *colon = strchr(b, ':');
    size_t blen = colon ? (size_t)(colon - b) : strlen(b);
    double a, z, s = 1;
    long long ai, zi, si = 1;
    int aint, zint, sint = 1, geo = 0;
    if (parse_num(r, (size_t)(dots - r), &a, &ai, &aint) || *b == '.' ||
        parse_num(b, blen, &z, &zi, &zint)) {
        snprintf(msg, SWEEP_MSG, "'%s' is not a range A..B[:STEP]", r);
        return 2;
    }
    if (colon) {
        const char *st = colon + 1;
        geo = *st == 'x';
        if (parse_num(st + geo, strlen(st + geo), &s, &si, &sint) || s <= 0 || (geo && s <= 1)) {
            snprintf(msg, SWEEP_MSG, "'%s': the step must be a number > 0 (or xF with F > 1)", r);
            return 2;
        }
    }
    int isint = aint && zint && sint;
    if (geo) {
        if (a <= 0 || a > z) {
            snprintf(msg, SWEEP_MSG, "'%s': a geometric range needs 0 < A <= B", r);
            return 2;
        }
        if (isint) {
            for (long long v = ai; v <= zi; v *= si) {
                if (vpushf(l, 1, v, 0, msg))
                    return 2;
                if (v > zi / si)
                    break;
            }
        } else {
            for (size_t i = 0;; i++) {
                double v = a * pow(s, (double)i);
                if (v > z * (1 + 1e-12))
                    break;
                if (vpushf(l, 0, 0, v, msg))
                    return 2;
            }
        }
        return 0;
    }
    int down = isint ? ai > zi : a > z; /* (as doubles, -2^63 + 2 is -2^63) */
    if (isint) {
        unsigned long long span = down ? (unsigned long long)ai - (unsigned long long)zi
                                       : (unsigned long long)zi - (unsigned long long)ai;
        /* the points are span / si + 1, which overflows for the whole int64 range: compare
         * before adding; each point is then computed in unsigned arithmetic (it lies between
         * A and B, so it fits, but A + i * STEP on the way there need not) */
        unsigned long long q = span / (unsigned long long)si;
        if (q >= SWEEP_MAX_VALUES) {
            snprintf(msg, SWEEP_MSG, "'%s' has more than %d values (the most one --param takes)", r,
                     SWEEP_MAX_VALUES);
            return 2;
        }
        for (unsigned long long i = 0, a0 = (unsigned long long)ai; i <= q; i++)
            if (vpushf(l, 1,
                       (long long)(down ? a0 - i * (unsigned long long)si
                                        : a0 + i * (unsigned long long)si),
                       0, msg))
                return 2;
        return 0;
    }
    double n = floor(fabs(z - a) / s * (1 + 1e-12) + 1e-9) + 1;
    if (!(n <= SWEEP_MAX_VALUES)) {
        snprintf(msg, SWEEP_MSG, "'%s' has more than %d values (the most one --param takes)", r,
                 SWEEP_MAX_VALUES);
        return 2;
    }
    for (size_t i = 0; i < (size_t)n; i++)
        if (vpushf(l, 0, 0, down ? a - (double)i * s : a + (double)i * s, msg))
            return 2;
    return 0;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* One value given twice would be one point run twice (and one CSV row for both). */
static int check_distinct(const vlist *l, char *msg)
{
    if (l->n < 2)
        return 0; /* (and l->v may be NULL) */
    char **s = xmalloc(l->n * sizeof *s);
    memcpy(s, l->v, l->n * sizeof *s);
    qsort(s, l->n, sizeof *s, cmp_str);
    int rc = 0;
    for (size_t i = 1; i < l->n && !rc; i++)
        if (strcmp(s[i - 1], s[i]) == 0) {
            snprintf(msg, SWEEP_MSG, "value '%s' given twice", s[i]);
            rc = 2;
        }
    free(s);
    return rc;
}

/* One value of a list at p, up to the next ',' or the end: as written, or, when it starts with
 * '"', the text up to the closing quote (a doubled quote inside is one quote), so that a value
 * can hold commas. *next gets the character after it (',' or the end). 0, or 2 with msg. */
static int one_value(const char *r, const char *p, vlist *l, const char **next, char *msg)
{
    char *v;
    size_t n = 0;
    if (*p == '"') {
        const char *q = p + 1;
        v = xmalloc(strlen(q) + 1);
        for (;; q++) {
            if (!*q) {
                free(v);
                snprintf(msg, SWEEP_MSG, "'%s': a quote is never closed", r);
                return 2;
            }
            if (*q == '"' && q[1] != '"')
                break;
            q += *q == '"';
            v[n++] = *q;
        }
        *next = q + 1;
        if (**next && **next != ',') {
            free(v);
            snprintf(msg, SWEEP_MSG, "'%s': text after a closing quote", r);
            return 2;
        }
    } else {
        const char *c = strchr(p, ',');
        n = c ? (size_t)(c - p) : strlen(p);
        v = xstrndup(p, n);
        *next = p + n;
    }
    v[n] = '\0';
    int rc = 0;
    if (n == 0) {
        snprintf(msg, SWEEP_MSG, "'%s' has an empty value", r);
        rc = 2;
    }
    for (size_t i = 0; i < n && !rc; i++)
        if ((unsigned char)v[i] < 0x20) {
            snprintf(msg, SWEEP_MSG, "a value holds a control character");
            rc = 2;
        }
    if (!rc)
        rc = vpush(l, v, n, msg);
    free(v);
    return rc;
}

static int parse_values(const char *r, vlist *l, char *msg)
{
    const char *dots = strstr(r, "..");
    double d;
    long long ll;
    int isint;
    if (!strchr(r, ',') && *r != '"' && dots &&
        parse_num(r, (size_t)(dots - r), &d, &ll, &isint) == 0)
        return expand_range(r, dots, l, msg);
    for (const char *p = r;;) {
        const char *next;
        if (one_value(r, p, l, &next, msg))
            return 2;
        if (!*next)
            return 0;
        p = next + 1;
    }
}

int sweep_grid_add(sweep_grid *g, const char *spec, char *msg)
{
    char pfx[SWEEP_MSG / 2];
    snprintf(pfx, sizeof pfx, "--param %s", spec);
    const char *eq = strchr(spec, '=');
    size_t nl = name_len(spec, eq ? (size_t)(eq - spec) : 0);
    if (!eq || nl == 0 || nl != (size_t)(eq - spec) || !eq[1]) {
        snprintf(msg, SWEEP_MSG, "%s: expected NAME=V1,V2,.. or NAME=A..B[:STEP]", pfx);
        return 2;
    }
    if (g->np == SWEEP_MAX_PARAMS) {
        snprintf(msg, SWEEP_MSG, "%s: at most %d parameters", pfx, SWEEP_MAX_PARAMS);
        return 2;
    }
    if (nl == 6 && strncmp(spec, "status", 6) == 0) {
        snprintf(msg, SWEEP_MSG, "%s: 'status' is the CSV's own column", pfx);
        return 2;
    }
    for (unsigned j = 0; j < g->np; j++)
        if (strlen(g->p[j].name) == nl && strncmp(g->p[j].name, spec, nl) == 0) {
            snprintf(msg, SWEEP_MSG, "%s: parameter '%.*s' given twice", pfx, (int)nl, spec);
            return 2;
        }
    vlist l = {0};
    char m2[SWEEP_MSG];
    int rc = parse_values(eq + 1, &l, m2);
    if (!rc)
        rc = check_distinct(&l, m2);
    if (!rc && l.n > SWEEP_MAX_POINTS / (g->npoints ? g->npoints : 1)) {
        snprintf(m2, SWEEP_MSG, "the grid would have more than %d points", SWEEP_MAX_POINTS);
        rc = 2;
    }
    sweep_param *p = &g->p[g->np];
    if (!rc)
        p->name = xstrndup(spec, nl);
    if (rc) {
        snprintf(msg, SWEEP_MSG, "%.200s: %.300s", pfx, m2);
        for (size_t i = 0; i < l.n; i++)
            free(l.v[i]);
        free(l.v);
        return 2;
    }
    p->values = l.v;
    p->nvalues = l.n;
    g->npoints = (g->np ? g->npoints : 1) * l.n;
    g->np++;
    return 0;
}

void sweep_grid_free(sweep_grid *g)
{
    for (unsigned j = 0; j < g->np; j++) {
        for (size_t i = 0; i < g->p[j].nvalues; i++)
            free(g->p[j].values[i]);
        free(g->p[j].values);
        free(g->p[j].name);
    }
    memset(g, 0, sizeof *g);
}

const char *sweep_grid_value(const sweep_grid *g, size_t point, unsigned j)
{
    for (unsigned k = g->np; k-- > j + 1;)
        point /= g->p[k].nvalues;
    return g->p[j].values[point % g->p[j].nvalues];
}

void sweep_grid_label(const sweep_grid *g, size_t point, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (unsigned j = 0; j < g->np && at < len; j++) {
        int n = snprintf(buf + at, len - at, "%s%s=%s", j ? " " : "", g->p[j].name,
                         sweep_grid_value(g, point, j));
        at += n > 0 ? (size_t)n : 0;
    }
}

/* The parameter named by "{NAME}" at s (s[0] == '{'), or -1; *skip gets its length. */
static int brace_param(const sweep_grid *g, const char *s, size_t *skip, size_t *nl_out)
{
    size_t nl = name_len(s + 1, (size_t)-1);
    *nl_out = nl;
    if (nl == 0 || s[1 + nl] != '}')
        return -1;
    *skip = nl + 2;
    for (unsigned j = 0; j < g->np; j++)
        if (strlen(g->p[j].name) == nl && strncmp(g->p[j].name, s + 1, nl) == 0)
            return (int)j;
    return -2;
}

int sweep_args_check(const sweep_grid *g, char *const *args, int nargs, char *msg)
{
    for (int i = 0; i < nargs; i++) {
        if (strcmp(args[i], "--json") == 0) {
            snprintf(msg, SWEEP_MSG,
                     "the command's --json is the sweep's own (it reads each "
                     "point's report from it): leave it out");
            return 2;
        }
        for (const char *s = strchr(args[i], '{'); s; s = strchr(s + 1, '{')) {
            size_t skip, nl;
            if (brace_param(g, s, &skip, &nl) == -2) {
                snprintf(msg, SWEEP_MSG, "'{%.*s}' in the command's arguments names no --param",
                         (int)nl, s + 1);
                return 2;
            }
        }
    }
    return 0;
}

/* Copy arg with {NAME} substituted to out (if non-NULL); return the length. Marks the
 * parameters it mentions in used[]. */
static size_t subst(const sweep_grid *g, size_t point, const char *arg, char *out,
                    unsigned char *used)
{
    size_t n = 0;
    for (const char *s = arg; *s;) {
        size_t skip, nl;
        int j = *s == '{' ? brace_param(g, s, &skip, &nl) : -1;
        if (j >= 0) {
            const char *v = sweep_grid_value(g, point, (unsigned)j);
            size_t vl = strlen(v);
            if (out)
                memcpy(out + n, v, vl);
            n += vl;
            s += skip;
            used[j] = 1;
        } else {
            if (out)
                out[n] = *s;
            n++;
            s++;
        }
    }
    if (out)
        out[n] = '\0';
    return n;
}

char **sweep_argv(const sweep_grid *g, size_t point, const char *cmdname, char *const *args,
                  int nargs, const char *json, int *argc_out)
{
    unsigned char used[SWEEP_MAX_PARAMS] = {0};
    size_t bytes = strlen(cmdname) + 1 + strlen(json) + 1 + sizeof "--json";
    int argc = 1 + nargs + 2;
    for (int i = 0; i < nargs; i++)
        bytes += subst(g, point, args[i], NULL, used) + 1;
    for (unsigned j = 0; j < g->np; j++)
        if (!used[j]) {
            bytes += strlen(g->p[j].name) + 3 + strlen(sweep_grid_value(g, point, j)) + 1;
            argc += 2;
        }
    char **argv = xmalloc((size_t)(argc + 1) * sizeof *argv + bytes);
    char *s = (char *)(argv + argc + 1);
    int k = 0;
#define PUT(...) (argv[k++] = s, s += sprintf(s, __VA_ARGS__) + 1)
    PUT("%s", cmdname);
    for (int i = 0; i < nargs; i++) {
        argv[k++] = s;
        s += subst(g, point, args[i], s, used) + 1;
    }
    for (unsigned j = 0; j < g->np; j++)
        if (!used[j]) {
            PUT("--%s", g->p[j].name);
            PUT("%s", sweep_grid_value(g, point, j));
        }
    PUT("--json");
    PUT("%s", json);
#undef PUT
    argv[k] = NULL;
    *argc_out = argc;
    return argv;
}
