/* alloc: malloc wrappers that never return NULL, and array growth by doubling. Models
 * nothing. It is the one place that handles running out of memory: one line on stderr, then
 * abort() (see alloc.h for why this is not an err). */
#include "base/alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void xoom(size_t n)
{
    char line[80];
    int len = snprintf(line, sizeof line, "ipusim: out of memory allocating %zu bytes\n", n);
    if (len > 0 && write(STDERR_FILENO, line, (size_t)len) < 0)
        abort(); /* nothing more to do: abort either way */
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        xoom(n);
    return p;
}

void *xcalloc_aligned(size_t n, size_t size, size_t align)
{
    if (size && n > SIZE_MAX / size)
        xoom(SIZE_MAX);
    size_t bytes = n && size ? n * size : 1;
    void *p = NULL;
    if (posix_memalign(&p, align, bytes) != 0)
        xoom(bytes);
    memset(p, 0, bytes);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        xoom(SIZE_MAX);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        xoom(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        xoom(n);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = memcpy(xmalloc(len + 1), s, len);
    p[len] = '\0';
    return p;
}

void *xgrow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            xoom(SIZE_MAX);
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem)
        xoom(SIZE_MAX);
    p = xrealloc(p, c * elem);
    *cap = c;
    return p;
}
