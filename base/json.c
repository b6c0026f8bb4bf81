/* json: JSON read and written through json-c, with the project's number form and errors.
 *
 * Models nothing. json-c prints a double with 17 significant digits unless the object carries
 * its own text, so every number made here carries text_num's shortest exact form; json-c's
 * parser keeps a double's text as read, so a value read and written again is unchanged (a
 * whole number is kept as its value: "-0" reads back as 0). The parser runs in json-c's strict
 * mode (no trailing commas, no leading zeros, no single quotes). Left out: streaming (each
 * file is one tree in memory; the largest, a profile's trace, is written a record at a time
 * by its writer with json_text per record); what json-c's strict mode still takes (NaN and
 * Infinity, "1.", control characters inside strings, whole numbers past 64 bits, clamped): no
 * writer here produces them. */
#include "base/json.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/text.h"

json *json_num(double v)
{
    char buf[TEXT_NUM];
    if (v != v || v - v != 0)
        return NULL; /* json-c prints a NULL value as null */
    return json_object_new_double_s(v, text_num(v, buf));
}

json *json_u64(uint64_t v)
{
    return json_object_new_uint64(v);
}

json *json_boolean(int v)
{
    return json_object_new_boolean(v != 0);
}

json *json_str(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

json *json_obj(void)
{
    return json_object_new_object();
}

json *json_arr(void)
{
    return json_object_new_array();
}

json *json_put(json *o, const char *key, json *v)
{
    if (key)
        json_object_object_add(o, key, v);
    else
        json_object_array_add(o, v);
    return v;
}

void json_put_num(json *o, const char *key, double v)
{
    json_put(o, key, json_num(v));
}

void json_put_u64(json *o, const char *key, uint64_t v)
{
    json_put(o, key, json_u64(v));
}

void json_put_str(json *o, const char *key, const char *s)
{
    json_put(o, key, json_str(s));
}

void json_append(json *o, json *more)
{
    if (!more)
        return;
    json_object_object_foreach(more, k, v)
    {
        json_put(o, k, json_object_get(v)); /* a reference of its own: more is freed next */
    }
    json_object_put(more);
}

char *json_text(json *o)
{
    const int flags =
        JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE;
    size_t n = 0;
    const char *s = json_object_to_json_string_length(o, flags, &n);
    char *out = xmalloc(n + 2);
    memcpy(out, s, n);
    out[n] = '\n';
    out[n + 1] = '\0';
    return out;
}

int json_save(const char *path, json *o, err *e)
{
    char *s = json_text(o);
    int rc = file_write_atomic(path, s, strlen(s), e);
    free(s);
    return rc;
}

/* The 1-based line and column of byte offset `at` of text. */
static void position(const char *text, size_t at, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

static json *parse_error(const char *name, const char *text, size_t at, const char *what, err *e)
{
    unsigned line, col;
    position(text, at, &line, &col);
    err_set(e, ERR_INPUT, "%s:%u:%u: error: %s", name, line, col, what);
    return NULL;
}

json *json_parse(const char *name, const char *text, size_t len, err *e)
{
    if (len > (size_t)0x7fffffff)
        return parse_error(name, text, 0, "file too large for the JSON reader", e);
    json_tokener *tok = json_tokener_new_ex(64);
    if (!tok)
        abort();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json *o = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error je = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (je == json_tokener_continue)
        return parse_error(name, text, len, "the JSON text ends before its value does", e);
    if (je != json_tokener_success)
        return parse_error(name, text, end, json_tokener_error_desc(je), e);
    while (end < len && text[end] && strchr(" \t\r\n", text[end]))
        end++;
    if (end < len) {
        json_object_put(o);
        return parse_error(name, text, end, "text after the JSON value", e);
    }
    return o;
}

json *json_load(const char *path, size_t max, err *e)
{
    size_t len = 0;
    char *text = file_read_text(path, max, &len, e);
    if (!text)
        return NULL;
    json *o = json_parse(path, text, len, e);
    free(text);
    return o;
}

/* The member or element named by the n bytes at key. */
static json *step(json *o, const char *key, size_t n)
{
    char name[256];
    if (n >= sizeof name)
        return NULL;
    memcpy(name, key, n);
    name[n] = '\0';
    if (json_object_is_type(o, json_type_object)) {
        json *v = NULL;
        return json_object_object_get_ex(o, name, &v) ? v : NULL;
    }
    if (!json_object_is_type(o, json_type_array) || n == 0 || strspn(name, "0123456789") != n)
        return NULL;
    size_t i = strtoul(name, NULL, 10);
    return i < json_object_array_length(o) ? json_object_array_get_idx(o, i) : NULL;
}

json *json_at(json *root, const char *path)
{
    json *o = root;
    while (o && *path) {
        size_t n = strcspn(path, ".");
        o = step(o, path, n);
        path += n + (path[n] == '.');
    }
    return o;
}

/* json_leaves below o, its path in p (a growing buffer). */
static void leaves(json *o, txt *p, json_leaf_fn *fn, void *ctx)
{
    size_t mark = p->len;
    json_type t = json_object_get_type(o);
    if (t == json_type_object) {
        json_object_object_foreach(o, k, v)
        {
            txt_printf(p, "%s%s", mark ? "." : "", k);
            leaves(v, p, fn, ctx);
            txt_cut(p, mark);
        }
    } else if (t == json_type_array) {
        for (size_t i = 0; i < json_object_array_length(o); i++) {
            txt_printf(p, "%s%zu", mark ? "." : "", i);
            leaves(json_object_array_get_idx(o, i), p, fn, ctx);
            txt_cut(p, mark);
        }
    } else {
        fn(ctx, txt_str(p), o ? json_object_get_string(o) : "null", t);
    }
}

void json_leaves(json *o, const char *prefix, json_leaf_fn *fn, void *ctx)
{
    txt p = {0};
    txt_put(&p, prefix ? prefix : "");
    leaves(o, &p, fn, ctx);
    txt_free(&p);
}
