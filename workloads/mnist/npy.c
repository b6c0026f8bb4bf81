/* npy: encodes and decodes .npy files of fp32 data, with a small parser for the header's Python
 * dict literal (strings, True/False, tuples of integers; nothing else is legal there for the
 * arrays we exchange). Models nothing. Leaves out: other dtypes, big-endian data, structured
 * arrays, pickled objects and Fortran order for arrays of two or more dimensions; each is
 * rejected with a message naming the file. Assumes a little-endian host. */
#include "workloads/mnist/npy.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/file.h"

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* ---- header dict parser ---- */

typedef struct hp {
    const char *s, *end, *name;
    err *e;
} hp;

static void hp_ws(hp *h)
{
    while (h->s < h->end && (*h->s == ' ' || *h->s == '\t' || *h->s == '\n' || *h->s == '\r'))
        h->s++;
}

static int hp_fail(hp *h, const char *what, const char *hdr)
{
    return err_set(h->e, ERR_INPUT, "%s: bad .npy header at header byte %ld: %s", h->name,
                   (long)(h->s - hdr), what);
}

/* A quoted string into buf (no escapes: none occur in legal headers). */
static int hp_str(hp *h, char *buf, size_t cap, const char *hdr)
{
    hp_ws(h);
    if (h->s >= h->end || (*h->s != '\'' && *h->s != '"'))
        return hp_fail(h, "expected a quoted string", hdr);
    char q = *h->s++;
    size_t n = 0;
    while (h->s < h->end && *h->s != q) {
        if (n + 1 >= cap)
            return hp_fail(h, "string too long", hdr);
        if ((unsigned char)*h->s < 0x20 || *h->s == 0x7f)
            return hp_fail(h, "control byte in a string", hdr);
        buf[n++] = *h->s++;
    }
    if (h->s >= h->end)
        return hp_fail(h, "unterminated string", hdr);
    h->s++;
    buf[n] = '\0';
    return 0;
}

static int hp_char(hp *h, char c)
{
    hp_ws(h);
    if (h->s < h->end && *h->s == c) {
        h->s++;
        return 1;
    }
    return 0;
}

static int parse_header(const char *hdr, size_t len, const char *name, npy_array *out, err *e)
{
    hp h = {hdr, hdr + len, name, e};
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
    if (!hp_char(&h, '{'))
        return hp_fail(&h, "expected '{'", hdr);
    while (!hp_char(&h, '}')) {
        char key[32], val[32];
        if (hp_str(&h, key, sizeof key, hdr))
            return ERR_INPUT;
        if (!hp_char(&h, ':'))
            return hp_fail(&h, "expected ':'", hdr);
        if (strcmp(key, "descr") == 0) {
            if (hp_str(&h, val, sizeof val, hdr))
                return ERR_INPUT;
            if (strcmp(val, "<f4") != 0)
                return err_set(e, ERR_INPUT, "%s: dtype '%s' is not little-endian float32 ('<f4')",
                               name, val);
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            hp_ws(&h);
            if ((size_t)(h.end - h.s) >= 4 && memcmp(h.s, "True", 4) == 0) {
                fortran = 1;
                h.s += 4;
            } else if ((size_t)(h.end - h.s) >= 5 && memcmp(h.s, "False", 5) == 0) {
                h.s += 5;
            } else {
                return hp_fail(&h, "fortran_order must be True or False", hdr);
            }
            have_order = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (!hp_char(&h, '('))
                return hp_fail(&h, "shape must be a tuple", hdr);
            out->ndim = 0;
            while (!hp_char(&h, ')')) {
                hp_ws(&h);
                if (h.s >= h.end || !isdigit((unsigned char)*h.s))
                    return hp_fail(&h, "shape entries must be non-negative integers", hdr);
                int64_t v = 0;
                while (h.s < h.end && isdigit((unsigned char)*h.s)) {
                    if (v > (INT64_MAX - 9) / 10)
                        return hp_fail(&h, "shape entry too large", hdr);
                    v = v * 10 + (*h.s++ - '0');
                }
                if (h.s < h.end && *h.s == 'L') /* Python 2 longs */
                    h.s++;
                if (out->ndim == NPY_MAX_DIMS)
                    return hp_fail(&h, "too many dimensions", hdr);
                out->shape[out->ndim++] = v;
                if (!hp_char(&h, ',')) {
                    if (!hp_char(&h, ')'))
                        return hp_fail(&h, "expected ',' or ')' in shape", hdr);
                    break;
                }
            }
            have_shape = 1;
        } else {
            return err_set(e, ERR_INPUT, "%s: unexpected key '%s' in .npy header", name, key);
        }
        if (!hp_char(&h, ',')) {
            if (!hp_char(&h, '}'))
                return hp_fail(&h, "expected ',' or '}'", hdr);
            break;
        }
    }
    hp_ws(&h);
    if (h.s != h.end)
        return hp_fail(&h, "text after the header dict", hdr);
    if (!have_descr || !have_order || !have_shape)
        return err_set(e, ERR_INPUT, "%s: .npy header lacks %s", name,
                       !have_descr   ? "'descr'"
                       : !have_order ? "'fortran_order'"
                                     : "'shape'");
    int nontrivial = 0;
    for (int i = 0; i < out->ndim; i++)
        nontrivial += out->shape[i] > 1;
    if (fortran && nontrivial > 1)
        return err_set(e, ERR_INPUT, "%s: Fortran-order arrays are not supported", name);
    return 0;
}

int npy_parse_f32(const void *buf, size_t len, const char *name, npy_array *out, err *e)
{
    const unsigned char *p = buf;
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(p, npy_magic, 6) != 0)
        return err_set(e, ERR_INPUT, "%s: not a .npy file (bad magic at byte offset 0)", name);
    size_t hlen, hoff;
    if (p[6] == 1) {
        hlen = p[8] | (size_t)p[9] << 8;
        hoff = 10;
    } else if (p[6] == 2 || p[6] == 3) {
        if (len < 12)
            return err_set(e, ERR_INPUT, "%s: truncated .npy header at byte offset %zu", name, len);
        hlen = p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
        hoff = 12;
    } else {
        return err_set(e, ERR_INPUT, "%s: unsupported .npy version %d.%d at byte offset 6", name,
                       p[6], p[7]);
    }
    if (hlen > len - hoff)
        return err_set(e, ERR_INPUT,
                       "%s: truncated .npy header: %zu bytes announced at byte offset %zu, file "
                       "ends at %zu",
                       name, hlen, hoff, len);
    if (parse_header((const char *)p + hoff, hlen, name, out, e))
        return ERR_INPUT;
    /* the bytes the shape needs, exactly (overflow: more than 2^62 elements) */
    uint64_t count = 1;
    int huge = 0;
    for (int i = 0; i < out->ndim && !huge; i++) {
        uint64_t v = (uint64_t)out->shape[i];
        if (v != 0 && count > (UINT64_C(1) << 62) / v)
            huge = 1;
        else
            count *= v;
    }
    size_t doff = hoff + hlen, avail = len - doff;
    if (huge || count * 4 != avail) {
        char need[64];
        if (huge)
            snprintf(need, sizeof need, "more than 2^64");
        else
            snprintf(need, sizeof need, "%llu", (unsigned long long)(count * 4));
        return err_set(e, ERR_INPUT,
                       "%s: data size mismatch: shape needs %s bytes from byte offset %zu, "
                       "file has %zu%s",
                       name, need, doff, avail, !huge && count * 4 > avail ? " (truncated?)" : "");
    }
    out->count = count;
    out->data = xmalloc(count ? count * 4 : 4);
    memcpy(out->data, p + doff, count * 4);
    return 0;
}

int npy_read_f32(const char *path, npy_array *out, err *e)
{
    memset(out, 0, sizeof *out);
    size_t len = 0;
    unsigned char *buf = (unsigned char *)file_read(path, (size_t)1 << 31, &len, e);
    if (!buf)
        return ERR_INPUT;
    int rc = npy_parse_f32(buf, len, path, out, e);
    free(buf);
    return rc;
}

int npy_encode_f32(const float *data, int ndim, const int64_t *shape, unsigned char **out,
                   size_t *out_len, err *e)
{
    char dict[64 + 24 * NPY_MAX_DIMS];
    if (ndim < 0 || ndim > NPY_MAX_DIMS)
        return err_set(e, ERR_INPUT, "npy: %d dimensions (at most %d)", ndim, NPY_MAX_DIMS);
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "",
                      (long long)shape[i]);
        count *= (size_t)shape[i];
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", ndim == 1 ? "," : "");
    /* numpy pads magic + version + length + dict + '\n' to a multiple of 64 bytes. */
    size_t total_hdr = ((10 + (size_t)n + 1 + 63) / 64) * 64;
    size_t hlen = total_hdr - 10;
    size_t len = total_hdr + count * 4;
    unsigned char *b = xmalloc(len);
    memcpy(b, npy_magic, 6);
    b[6] = 1;
    b[7] = 0;
    b[8] = (unsigned char)(hlen & 0xff);
    b[9] = (unsigned char)(hlen >> 8);
    memcpy(b + 10, dict, (size_t)n);
    memset(b + 10 + n, ' ', hlen - (size_t)n - 1);
    b[total_hdr - 1] = '\n';
    if (count)
        memcpy(b + total_hdr, data, count * 4);
    *out = b;
    *out_len = len;
    return 0;
}

int npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape, err *e)
{
    unsigned char *b;
    size_t len;
    if (npy_encode_f32(data, ndim, shape, &b, &len, e))
        return ERR_INPUT;
    int rc = file_write_atomic(path, b, len, e);
    free(b);
    return rc;
}

void npy_free(npy_array *a)
{
    if (a) {
        free(a->data);
        memset(a, 0, sizeof *a);
    }
}
