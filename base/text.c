/* text: growing printf strings and whole-file reads. Models nothing; see text.h. */
#include "base/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void txt_printf(txt *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len <= (size_t)n)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

char *txt_take(txt *b)
{
    char *p = b->p;
    if (b->oom) {
        free(p);
        p = NULL;
    } else if (!p) {
        p = calloc(1, 1);
    }
    memset(b, 0, sizeof *b);
    return p;
}

char *txt_read_file(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        if (cap >= max) {
            free(buf);
            fclose(f);
            errno = EFBIG;
            return NULL;
        }
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            errno = ENOMEM;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad || n > max) {
        free(buf);
        if (bad)
            errno = EIO;
        else if (buf)
            errno = EFBIG;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}
