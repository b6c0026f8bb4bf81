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
/* Append the string s as it is (no formatting: for long texts, as txt_printf(b, "%s", s)). */
void txt_put(txt *b, const char *s);
/* Keep the first n bytes (n at most the length). */
void txt_cut(txt *b, size_t n);
/* Hand over the string (an empty one if nothing was written; never NULL); the txt is zeroed. */
char *txt_take(txt *b);
/* The text so far ("" when empty); valid until the next txt_printf. */
const char *txt_str(const txt *b);
/* Drop the text; the buffer can be used again. */
void txt_free(txt *b);

/* Append n bytes of text read from a file (source, a profile's summary) to b as a terminal can
 * show them, so that no input can drive the terminal: control bytes (ESC, CR, a line feed
 * too, so it is one line; a tab stays) and bytes that are not UTF-8 become \xNN. With pad,
 * also the blanks that put a caret under byte `upto` (tabs stay tabs, a character takes one
 * column). */
void txt_show(txt *b, const char *s, size_t n, txt *pad, size_t upto);

/* v as the shortest decimal that reads back as exactly v (%.Pg with the least P from 1 to 17:
 * 8567.510188, not 8567.5101880000002; 0.1, not 0.10000000000000001), as JSON and CSV want
 * numbers; a whole number below 2^53 with all its digits (730, not 7.3e+02); "null" for NaN
 * and infinities. Returns buf. */
enum { TEXT_NUM = 32 };
char *text_num(double v, char buf[TEXT_NUM]);

#endif
