/* sweep_json: a small JSON reader (RFC 8259) that turns a command's --json report into named
 * metrics: every number, under the path of members that leads to it ("stats.cycles",
 * "per_ipu.0.finish"). It reads the whole grammar (objects, arrays, numbers, strings with every
 * escape, true, false, null) and rejects anything else with the line and column of the first
 * bad byte. It builds no tree and keeps numbers as their text, so a CSV shows exactly what the
 * command wrote. Left out: strings, booleans and null as values (read, not kept), duplicate
 * member names (each is kept; the CSV uses the first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "bench/sweep/sweep.h"

enum { MAX_DEPTH = 64 };

typedef struct jr {
    const char *s;
    size_t len, at;
    char *msg;
    char *path; /* the current member path */
    size_t plen, pcap;
    sweep_metrics *out;
} jr;

static int fail(jr *r, const char *what)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < r->at && i < r->len; i++) {
        if (r->s[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    if (r->at >= r->len)
        snprintf(r->msg, SWEEP_MSG, "line %zu col %zu: %s, found the end of the input", line, col,
                 what);
    else if ((unsigned char)r->s[r->at] >= 0x20 && (unsigned char)r->s[r->at] < 0x7f)
        snprintf(r->msg, SWEEP_MSG, "line %zu col %zu: %s, found '%c'", line, col, what,
                 r->s[r->at]);
    else
        snprintf(r->msg, SWEEP_MSG, "line %zu col %zu: %s, found byte 0x%02x", line, col, what,
                 (unsigned char)r->s[r->at]);
    return 2;
}

static int peek(const jr *r)
{
    return r->at < r->len ? (unsigned char)r->s[r->at] : -1;
}

static void skip_ws(jr *r)
{
    while (r->at < r->len && r->s[r->at] && strchr(" \t\r\n", r->s[r->at]))
        r->at++;
}

/* Append bytes to the path (the caller restores plen afterwards). */
static void path_add(jr *r, const char *b, size_t n)
{
    r->path = xgrow(r->path, &r->pcap, r->plen + n + 1, 1);
    memcpy(r->path + r->plen, b, n);
    r->plen += n;
    r->path[r->plen] = '\0';
}

static int hex4(jr *r, unsigned *u)
{
    *u = 0;
    for (int i = 0; i < 4; i++) {
        int c = peek(r);
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return fail(r, "expected 4 hex digits after \\u");
        *u = *u * 16 + d;
        r->at++;
    }
    return 0;
}

/* A string at r->at (which is '"'). If keep, its decoded bytes are appended to the path. */
static int string(jr *r, int keep)
{
    r->at++;
    for (;;) {
        int c = peek(r);
        if (c < 0)
            return fail(r, "unterminated string");
        if (c == '"') {
            r->at++;
            return 0;
        }
        if (c < 0x20)
            return fail(r, "control character in a string");
        if (c != '\\') {
            r->at++;
            if (keep)
                path_add(r, (char[]){(char)c}, 1);
            continue;
        }
        r->at++;
        c = peek(r);
        const char *esc = "\"\\/bfnrt", *val = "\"\\/\b\f\n\r\t";
        const char *e = c > 0 ? strchr(esc, c) : NULL;
        char b[4];
        size_t n = 1;
        if (e) {
            r->at++;
            b[0] = val[e - esc];
        } else if (c == 'u') {
            size_t esc_at = r->at - 1;
            r->at++;
            unsigned u, lo;
            if (hex4(r, &u))
                return 2;
            if (u >= 0xdc00 && u <= 0xdfff) {
                r->at = esc_at;
                return fail(r, "lone low surrogate in \\u escape");
            }
            if (u >= 0xd800 && u <= 0xdbff) {
                if (peek(r) != '\\' || r->at + 1 >= r->len || r->s[r->at + 1] != 'u')
                    return fail(r, "expected a low surrogate \\uDC00..\\uDFFF");
                r->at += 2;
                if (hex4(r, &lo))
                    return 2;
                if (lo < 0xdc00 || lo > 0xdfff) {
                    r->at -= 4;
                    return fail(r, "expected a low surrogate \\uDC00..\\uDFFF");
                }
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (u < 0x80) {
                b[0] = (char)u;
            } else if (u < 0x800) {
                b[0] = (char)(0xc0 | u >> 6), b[1] = (char)(0x80 | (u & 0x3f)), n = 2;
            } else if (u < 0x10000) {
                b[0] = (char)(0xe0 | u >> 12), b[1] = (char)(0x80 | ((u >> 6) & 0x3f));
                b[2] = (char)(0x80 | (u & 0x3f)), n = 3;
            } else {
                b[0] = (char)(0xf0 | u >> 18), b[1] = (char)(0x80 | ((u >> 12) & 0x3f));
                b[2] = (char)(0x80 | ((u >> 6) & 0x3f)), b[3] = (char)(0x80 | (u & 0x3f)), n = 4;
            }
        } else {
            return fail(r, "unknown escape in a string");
        }
        if (keep)
            path_add(r, b, n);
    }
}

static int digits(jr *r, const char *what)
{
    if (peek(r) < '0' || peek(r) > '9')
        return fail(r, what);
    while (peek(r) >= '0' && peek(r) <= '9')
        r->at++;
    return 0;
}

static int number(jr *r)
{
    size_t start = r->at;
    if (peek(r) == '-')
        r->at++;
    if (peek(r) == '0')
        r->at++;
    else if (digits(r, "expected a digit"))
        return 2;
    if (peek(r) == '.') {
        r->at++;
        if (digits(r, "expected a digit after '.'"))
            return 2;
    }
    if (peek(r) == 'e' || peek(r) == 'E') {
        r->at++;
        if (peek(r) == '+' || peek(r) == '-')
            r->at++;
        if (digits(r, "expected a digit in the exponent"))
            return 2;
    }
    sweep_metrics *o = r->out;
    o->m = xgrow(o->m, &o->cap, o->n + 1, sizeof *o->m);
    sweep_metric *m = &o->m[o->n++];
    m->name = xstrdup(r->plen ? r->path : "value");
    m->text = xstrndup(r->s + start, r->at - start);
    return 0;
}

static int literal(jr *r, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i < n; i++, r->at++)
        if (peek(r) != word[i])
            return fail(r, "expected a value");
    return 0;
}

static int value(jr *r, int depth);

/* Members or elements of an object or array at r->at (which is '{' or '['). */
static int container(jr *r, int depth)
{
    int obj = peek(r) == '{';
    char close = obj ? '}' : ']';
    if (depth >= MAX_DEPTH)
        return fail(r, "nesting deeper than 64");
    r->at++;
    skip_ws(r);
    if (peek(r) == close) {
        r->at++;
        return 0;
    }
    size_t base = r->plen;
    for (size_t i = 0;; i++) {
        r->plen = base;
        if (base)
            path_add(r, ".", 1);
        if (obj) {
            if (peek(r) != '"')
                return fail(r, "expected a member name in quotes");
            if (string(r, 1))
                return 2;
            skip_ws(r);
            if (peek(r) != ':')
                return fail(r, "expected ':' after a member name");
            r->at++;
        } else {
            char idx[24];
            int n = snprintf(idx, sizeof idx, "%zu", i);
            path_add(r, idx, (size_t)n);
        }
        if (value(r, depth + 1))
            return 2;
        skip_ws(r);
        if (peek(r) == close) {
            r->at++;
            r->plen = base;
            if (r->path)
                r->path[base] = '\0';
            return 0;
        }
        if (peek(r) != ',')
            return fail(r, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        r->at++;
        skip_ws(r);
    }
}

static int value(jr *r, int depth)
{
    skip_ws(r);
    int c = peek(r);
    if (c == '{' || c == '[')
        return container(r, depth);
    if (c == '"')
        return string(r, 0);
    if (c == '-' || (c >= '0' && c <= '9'))
        return number(r);
    if (c == 't')
        return literal(r, "true");
    if (c == 'f')
        return literal(r, "false");
    if (c == 'n')
        return literal(r, "null");
    return fail(r, "expected a value");
}

int sweep_json_flatten(const char *text, size_t len, sweep_metrics *out, char *msg)
{
    jr r = {.s = text, .len = len, .msg = msg, .out = out};
    int rc = value(&r, 0);
    if (!rc) {
        skip_ws(&r);
        if (r.at < r.len)
            rc = fail(&r, "expected the end of the input after the value");
    }
    free(r.path);
    return rc;
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
