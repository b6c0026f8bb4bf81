/* alloc: allocation with the one out-of-memory policy, and growable arrays.
 *
 * Policy: running out of host memory is not an input error that a caller can report and
 * recover from. xmalloc, xcalloc, xrealloc, xstrdup and xgrow never return NULL: on failure
 * they write one line "ipusim: out of memory allocating N bytes" to stderr with write(2) and
 * call abort(). This is the single exception to "the core never prints or exits"; no other
 * code handles allocation failure (no NULL checks, no "out of memory" errors, no oom flags).
 * A size computation that overflows size_t counts as a failure of SIZE_MAX bytes. */
#ifndef IPUSIM_ALLOC_H
#define IPUSIM_ALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
/* Zeroed array of n elements of `size` bytes (n * size checked for overflow). */
void *xcalloc(size_t n, size_t size);
/* As xcalloc, the array aligned to `align` bytes (a power of two, a multiple of the pointer
 * size: 64 puts each element of a 64-byte multiple at the start of a cache line). free()
 * frees it. */
void *xcalloc_aligned(size_t n, size_t size, size_t align);
/* realloc(p, n); xrealloc(p, 0) frees p and returns a 1-byte block, never NULL. */
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* The first n bytes of s (fewer when s ends sooner) as a new string. */
char *xstrndup(const char *s, size_t n);

/* Grow the array p of `elem`-byte elements, whose capacity is *cap elements, to hold at least
 * `need` elements: the capacity doubles from 16 until it fits, and *cap is updated. Returns p
 * unchanged when it is already big enough, else the moved array (old contents kept). Use:
 *     a->v = xgrow(a->v, &a->cap, a->n + 1, sizeof *a->v);
 *     a->v[a->n++] = x; */
void *xgrow(void *p, size_t *cap, size_t need, size_t elem);

/* Report an allocation of n bytes that failed, as above, and abort. */
_Noreturn void xoom(size_t n);

#endif
