/* text: a growing string built with printf — plumbing that the assembler, the disassembler,
 * the docs generator, the exchange compiler, the workloads and the CLI all need, written once.
 * Whole files are read with base/file.h. */
#ifndef IPUSIM_TEXT_H
#define IPUSIM_TEXT_H

#include <stddef.h>

/* A growing malloc'd string; zero-initialise it. Allocation follows base/alloc.h (it never
 * fails). */
typedef struct txt {
    char *p;
    size_t len, cap;
} txt;

void txt_printf(txt *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand over the string (an empty one if nothing was written; never NULL); the txt is zeroed. */
/* Append the string s as it is (no formatting: for long texts, as txt_printf(b, "%s", s)). */
void txt_put(txt *b, const char *s);
char *txt_take(txt *b);
/* The text so far ("" when empty); valid until the next txt_printf. */
const char *txt_str(const txt *b);
/* Drop the text; the buffer can be used again. */
void txt_free(txt *b);

#endif
