/* text: a growing string built with printf, and reading a whole file — plumbing that the
 * assembler, the disassembler, the docs generator, the exchange compiler, the workloads and
 * the CLI all need, written once. */
#ifndef IPUSIM_TEXT_H
#define IPUSIM_TEXT_H

#include <stddef.h>

/* A growing malloc'd string; zero-initialise it. On allocation failure `oom` is set and
 * further appends are dropped. */
typedef struct txt {
    char *p;
    size_t len, cap;
    int oom;
} txt;

void txt_printf(txt *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand over the string (an empty one if nothing was written; NULL after an allocation
 * failure, the buffer then freed); the txt is zeroed. */
char *txt_take(txt *b);

/* Read a whole file of at most `max` bytes into a malloc'd buffer with a NUL after the data.
 * Returns NULL with errno set when it cannot be opened or read (EFBIG past max, ENOMEM). */
char *txt_read_file(const char *path, size_t max, size_t *len);

#endif
