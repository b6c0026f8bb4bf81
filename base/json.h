/* json: the project's JSON, read and written with json-c (Debian's libjson-c).
 *
 * Every JSON file the program writes is built as a json-c tree and printed here; every one it
 * reads is parsed here. The wrapper adds what json-c leaves to its user: numbers printed in
 * their shortest exact form (text_num, base/text.h), text without "\/" escapes, a file
 * written whole or not at all (file_write_atomic), parse errors as one "file:line:col: error:"
 * line, and lookups by dotted path. Objects keep their members in insertion order. */
#ifndef IPUSIM_JSON_H
#define IPUSIM_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/err.h"

typedef struct json_object json;

/* A number, printed as text_num prints it (NaN and infinities: null). */
json *json_num(double v);
/* A count: all its digits. */
json *json_u64(uint64_t v);
/* true or false. */
json *json_boolean(int v);
/* A string (NULL: JSON null). */
json *json_str(const char *s);
/* An empty object, an empty array. */
json *json_obj(void);
json *json_arr(void);

/* Add member key (copied) to object o, or append to array o when key is NULL; the value is
 * owned by o from then on. Returns v, to fill a nested value in place. */
json *json_put(json *o, const char *key, json *v);
/* The same, shorter to read where most members are numbers or counts. */
void json_put_num(json *o, const char *key, double v);
void json_put_u64(json *o, const char *key, uint64_t v);
void json_put_str(json *o, const char *key, const char *s);
/* Add every member of the object `more` to o, in their order, and free more (NULL: nothing). */
void json_append(json *o, json *more);

/* o's text as the project prints JSON (two-space indent, "key": value, no "\/"), ending with a
 * newline; owned by the caller (free). */
char *json_text(json *o);
/* The same written to path whole or not at all (file_write_atomic); 0, or e's status. */
int json_save(const char *path, json *o, err *e);

/* Parse text (len bytes) named name in messages; NULL after one "name:line:col: error: ..."
 * in e (ERR_INPUT). The result is the caller's (json_object_put). */
json *json_parse(const char *name, const char *text, size_t len, err *e);
/* Read and parse the file at path (at most max bytes). */
json *json_load(const char *path, size_t max, err *e);

/* The value at a dotted path ("a.b.2.c": members by name, array elements by index), or NULL.
 * Borrowed from root. */
json *json_at(json *root, const char *path);

/* Call fn for every leaf (number, string, boolean, null) below o, depth first in member order,
 * with its dotted path (prefix first, when not NULL) and its text: a number or boolean as
 * printed, a string's own characters, "null". Empty objects and arrays have no leaves. */
typedef void json_leaf_fn(void *ctx, const char *path, const char *value, json_type type);
void json_leaves(json *o, const char *prefix, json_leaf_fn *fn, void *ctx);

#endif
