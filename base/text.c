/* text: growing printf strings. Models nothing; see text.h. */
#include "base/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

/* Room for n more bytes and the NUL: the buffer at least doubles when it grows. */
static void reserve(txt *b, size_t n)
{
    if (b->p && b->cap - b->len > n)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len <= n)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

enum { LINE = 128 }; /* room made before formatting: a line fits the first time */

void txt_printf(txt *b, const char *fmt, ...)
{
    reserve(b, LINE);
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p + b->len, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->p[b->len] = '\0';
            return; /* an invalid format: nothing is appended */
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        reserve(b, (size_t)n);
    }
}

void txt_put(txt *b, const char *s)
{
    size_t n = strlen(s);
    reserve(b, n);
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

void txt_cut(txt *b, size_t n)
{
    if (b->p && n < b->len) {
        b->len = n;
        b->p[n] = '\0';
    }
}

char *txt_take(txt *b)
{
    char *p = b->p ? b->p : xcalloc(1, 1);
    memset(b, 0, sizeof *b);
    return p;
}

const char *txt_str(const txt *b)
{
    return b->p ? b->p : "";
}

void txt_free(txt *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Length of the UTF-8 sequence at s (n bytes left) that a terminal may show as it is: a
 * valid sequence of a character that is not a C1 control; 0 otherwise. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
               : s[0] >= 0xe0 && s[0] <= 0xef ? 3
               : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                              : 0;
    if (!k || k > n || (s[0] == 0xc2 && s[1] < 0xa0))
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return k;
}

void txt_show(txt *b, const char *s, size_t n, txt *pad, size_t upto)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = u[i] >= 0x80 ? utf8_len(u + i, n - i) : 1;
        int esc = k == 0 || (u[i] < 0x20 && u[i] != '\t') || u[i] == 0x7f;
        if (esc) {
            txt_printf(b, "\\x%02x", u[i]);
            k = 1;
        } else {
            txt_printf(b, "%.*s", (int)k, s + i);
        }
        if (pad && i < upto)
            txt_printf(pad, "%s", u[i] == '\t' ? "\t" : esc ? "    " : " ");
        i += k;
    }
}

char *text_num(double v, char buf[TEXT_NUM])
{
    if (v != v || v - v != 0) { /* NaN or an infinity: JSON has no number for them */
        snprintf(buf, TEXT_NUM, "null");
        return buf;
    }
    if (v == (double)(long long)v && v > -9007199254740992.0 && v < 9007199254740992.0) {
        snprintf(buf, TEXT_NUM, "%.0f", v); /* a whole number: all its digits, no exponent */
        return buf;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, TEXT_NUM, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}
