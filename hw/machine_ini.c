/* machine_ini: loading a machine preset from INI text with libinih, with positions.
 *
 * libinih (as Debian builds it) gives its handler no line numbers and drops comments. So the
 * text is handed to ini_parse_stream() one line at a time by a reader that counts lines: when
 * the handler sees a key, the current line is the key's line, and its source comment (the
 * comment lines right above it, then the comment after its value) is read from the same text.
 * Every key of mach_params() must appear exactly once, in its own section; the first error (by
 * line) is reported as "FILE:LINE: error: MESSAGE" and *m is left untouched. Left out: include
 * files, expressions and unit suffixes (values are plain decimal numbers), and lines longer
 * than libinih's buffer (an error, not a silent cut).
 */
#include "hw/machine.h"

#include <ini.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/file.h"

enum {
    LINE_MAX_CHARS = INI_MAX_LINE - 3, /* libinih's buffer, less '\r', '\n' and NUL */
    FILE_MAX_BYTES = 1 << 20,
};

typedef struct ctx {
    const char **lines; /* lines[k] starts line k + 1 */
    int nlines;
    int cur; /* lines handed to libinih so far: the line it is parsing */
    mach *m;
    mach_src *src;
    int seen[MACH_NPARAMS]; /* line each key was set on, 0 if not yet */
    int err_line;           /* the first error by line, 0 if none */
    char err_msg[1024];
    err tmp;
} ctx;

static int is_file(const char *spec)
{
    size_t n = strlen(spec);
    return strchr(spec, '/') != NULL || (n >= 4 && strcmp(spec + n - 4, ".ini") == 0);
}

/* Record an error at `line` unless one on an earlier line is already known; returns 0 (the
 * handler's "failed"). */
__attribute__((format(printf, 3, 4))) static int fail(ctx *c, int line, const char *fmt, ...)
{
    if (c->err_line && c->err_line <= line)
        return 0;
    c->err_line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err_msg, sizeof c->err_msg, fmt, ap);
    va_end(ap);
    return 0;
}

static size_t line_len(const char *s) /* without '\r' and '\n' */
{
    size_t n = strcspn(s, "\n");
    return n > 0 && s[n - 1] == '\r' ? n - 1 : n;
}

static const char *skip_blank(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static int is_comment_line(const char *s)
{
    s = skip_blank(s);
    return *s == ';' || *s == '#';
}

static int known_section(const char *name, size_t len)
{
    for (size_t i = 0; i < MACH_NPARAMS; i++) {
        const char *s = mach_params()[i].section;
        if (strlen(s) == len && strncmp(s, name, len) == 0)
            return 1;
    }
    return 0;
}

/* "chip, exchange, ..." from the table (its sections are contiguous). */
static char *section_list(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < MACH_NPARAMS && n < len; i++) {
        const char *s = mach_params()[i].section;
        if (i == 0 || strcmp(s, mach_params()[i - 1].section) != 0)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", s);
    }
    return buf;
}

/* Lines too long for libinih, and section headers naming no known section. */
static void prescan(ctx *c)
{
    char known[128];
    for (int k = 0; k < c->nlines; k++) {
        const char *s = c->lines[k];
        if (line_len(s) > LINE_MAX_CHARS)
            fail(c, k + 1, "line is longer than %d characters", LINE_MAX_CHARS);
        s = skip_blank(s);
        const char *close = *s == '[' ? memchr(s, ']', line_len(s)) : NULL;
        if (close && !known_section(s + 1, (size_t)(close - s - 1)))
            fail(c, k + 1, "unknown section [%.*s] (known: %s)", (int)(close - s - 1), s + 1,
                 section_list(known, sizeof known));
    }
}

/* fgets for libinih over c->lines, counting lines. */
static char *reader(char *str, int num, void *stream)
{
    ctx *c = stream;
    if (c->cur >= c->nlines || num < 2)
        return NULL;
    const char *s = c->lines[c->cur++];
    size_t n = strcspn(s, "\n") + (s[strcspn(s, "\n")] == '\n');
    if (n > (size_t)num - 1) /* already an error (prescan); hand over what fits */
        n = (size_t)num - 1;
    memcpy(str, s, n);
    str[n] = '\0';
    return str;
}

/* Append the text of a comment (from its first character after ';'/'#' and blanks). */
static void append(char *out, size_t len, const char *text, size_t n)
{
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    size_t have = strlen(out);
    if (n == 0 || have + 2 >= len)
        return;
    snprintf(out + have, len - have, "%s%.*s", have ? " " : "", (int)n, text);
}

/* The source comment of the key on `line`: comment lines right above it, then the comment
 * after its value (a ';' after a blank, as libinih reads inline comments). */
static void comment_of(const ctx *c, int line, char *out, size_t len)
{
    out[0] = '\0';
    int top = line;
    while (top > 1 && is_comment_line(c->lines[top - 2]))
        top--;
    for (int l = top; l < line; l++) {
        const char *s = skip_blank(c->lines[l - 1]);
        size_t n = line_len(s);
        size_t k = strspn(s, ";#");
        const char *t = skip_blank(s + k);
        append(out, len, t, n - (size_t)(t - s));
    }
    const char *s = c->lines[line - 1];
    size_t n = line_len(s);
    const char *v = memchr(s, '=', n), *colon = memchr(s, ':', n);
    if (!v || (colon && colon < v))
        v = colon;
    if (!v)
        return;
    v = skip_blank(v + 1);
    const char *end = s + n;
    for (const char *p = v; p < end; p++) {
        if (*p == ';' && p > v && (p[-1] == ' ' || p[-1] == '\t')) {
            const char *t = skip_blank(p + 1);
            append(out, len, t, (size_t)(end - t));
            break;
        }
    }
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    ctx *c = user;
    int line = c->cur;
    const mach_param *p = mach_param_find(name);
    if (!p)
        return fail(c, line, "unknown machine parameter '%s'", name);
    if (strcmp(section, p->section) != 0) {
        if (!*section)
            return fail(c, line, "'%s' is outside a section (it belongs in [%s])", name,
                        p->section);
        return fail(c, line, "'%s' belongs in [%s], not [%s]", name, p->section, section);
    }
    size_t i = (size_t)(p - mach_params());
    if (c->seen[i]) {
        const char *s = c->lines[line - 1];
        if (*s == ' ' || *s == '\t')
            return fail(c, line,
                        "an indented line continues the value of '%s' from line %d "
                        "(remove the indentation)",
                        name, c->seen[i]);
        return fail(c, line, "'%s' is set twice (first on line %d)", name, c->seen[i]);
    }
    c->seen[i] = line;
    if (mach_set(c->m, NULL, name, value, &c->tmp) != ERR_OK)
        return fail(c, line, "%s", c->tmp.msg);
    if (c->src) {
        c->src->line[i] = line;
        comment_of(c, line, c->src->comment[i], sizeof c->src->comment[i]);
    }
    return 1;
}

/* The first key missing from the text, reported at its section's header (or the last line). */
static void check_missing(ctx *c)
{
    for (size_t i = 0; i < MACH_NPARAMS && !c->err_line; i++) {
        if (c->seen[i])
            continue;
        const mach_param *p = &mach_params()[i];
        int at = c->nlines > 0 ? c->nlines : 1;
        for (int k = 0; k < c->nlines; k++) {
            const char *s = skip_blank(c->lines[k]);
            size_t n = strlen(p->section);
            if (s[0] == '[' && strncmp(s + 1, p->section, n) == 0 && s[n + 1] == ']') {
                at = k + 1;
                break;
            }
        }
        fail(c, at,
             "missing key '%s' in [%s] (every parameter is required; see "
             "docs/machines.md)",
             p->key, p->section);
    }
}

int mach_parse(mach *m, mach_src *src, const char *name, const char *file, const char *text, err *e)
{
    ctx *c = xcalloc(1, sizeof *c);
    mach *out = xcalloc(1, sizeof *out);
    int nl = 1;
    for (const char *s = text; *s; s++)
        nl += *s == '\n';
    const char **lines = xcalloc((size_t)nl, sizeof *lines);
    for (const char *s = text; *s;) {
        lines[c->nlines++] = s;
        s += strcspn(s, "\n");
        s += *s == '\n';
    }
    c->lines = lines;
    c->m = out;
    c->src = src;
    snprintf(out->name, sizeof out->name, "%s", name);
    if (src) {
        memset(src, 0, sizeof *src);
        snprintf(src->file, sizeof src->file, "%s", file);
    }
    prescan(c);
    int ret = ini_parse_stream(reader, c, handler, c);
    if (ret > 0)
        fail(c, ret, "expected 'key = value', '[section]' or a ';' comment");
    else if (ret < 0)
        fail(c, 1, "libinih could not parse the text (status %d)", ret);
    check_missing(c);
    int rc = ERR_OK;
    if (c->err_line)
        rc = err_set(e, ERR_INPUT, "%s:%d: error: %s", file, c->err_line, c->err_msg);
    else
        *m = *out;
    free(lines);
    free(out);
    free(c);
    return rc;
}

/* Read a whole file as a NUL-terminated string; NULL with *e set. */
static char *read_text(const char *path, err *e)
{
    err fe;
    size_t n;
    char *buf = file_read_text(path, FILE_MAX_BYTES, &n, &fe);
    if (!buf) { /* the reader's "PATH: why" in this file's "PATH: error: why" form */
        err_set(e, fe.status, "%s: error: %s", path, fe.msg + strlen(path) + 2);
        return NULL;
    }
    const char *nul = memchr(buf, '\0', n);
    if (nul) {
        int line = 1;
        for (const char *s = buf; s < nul; s++)
            line += *s == '\n';
        err_set(e, ERR_INPUT, "%s:%d: error: contains a NUL byte; not a machine preset", path,
                line);
        free(buf);
        return NULL;
    }
    return buf;
}

static int unknown_machine(const char *name, err *e)
{
    char known[256] = "";
    size_t n = 0;
    for (size_t i = 0; mach_preset_name(i) && n < sizeof known; i++)
        n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "",
                              mach_preset_name(i));
    return err_set(e, ERR_INPUT, "unknown machine '%s' (known: %s; or an INI file)", name, known);
}

int mach_load(mach *m, mach_src *src, const char *spec, err *e)
{
    if (!is_file(spec)) {
        const char *text = mach_preset_text(spec);
        if (!text)
            return unknown_machine(spec, e);
        char file[64];
        snprintf(file, sizeof file, "machines/%.40s.ini", spec);
        return mach_parse(m, src, spec, file, text, e);
    }
    char *text = read_text(spec, e);
    if (!text)
        return ERR_INPUT;
    /* the machine's name: the file's base name without .ini */
    const char *base = strrchr(spec, '/') ? strrchr(spec, '/') + 1 : spec;
    size_t n = strlen(base);
    if (n >= 4 && strcmp(base + n - 4, ".ini") == 0)
        n -= 4;
    char name[sizeof m->name];
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), base);
    int rc = mach_parse(m, src, name, spec, text, e);
    free(text);
    return rc;
}

int mach_builtin(mach *m, const char *name, err *e)
{
    if (is_file(name))
        return unknown_machine(name, e);
    return mach_load(m, NULL, name, e);
}
