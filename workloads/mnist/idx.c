/* idx: reads and writes IDX files (the MNIST container) through zlib, which passes plain files
 * through unchanged, so one path serves raw and .gz. The whole decompressed file is held in
 * memory and the array points into it: no second copy. It checks the magic, the type, the
 * dimensions (overflow-safe) and that the size is exact; it does not convert multi-byte
 * elements to host order (MNIST is all u8), and it caps files at IDX_MAX_BYTES so a gzip bomb
 * is an error, not an out-of-memory. */
#include "workloads/mnist/idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/file.h"

size_t idx_type_size(int type)
{
    switch (type) {
    case IDX_U8:
    case IDX_I8: return 1;
    case IDX_I16: return 2;
    case IDX_I32:
    case IDX_F32: return 4;
    case IDX_F64: return 8;
    default: return 0;
    }
}

int idx_parse(const void *buf, size_t len, const char *name, idx_array *out, err *e)
{
    const unsigned char *p = buf;
    memset(out, 0, sizeof *out);
    if (len < 4)
        return err_set(e, ERR_INPUT, "%s: truncated IDX header at byte offset %zu (need 4 bytes)",
                       name, len);
    if (p[0] != 0 || p[1] != 0)
        return err_set(e, ERR_INPUT,
                       "%s: bad IDX magic at byte offset 0 (0x%02x 0x%02x, expected 0x00 0x00)",
                       name, p[0], p[1]);
    size_t es = idx_type_size(p[2]);
    if (es == 0)
        return err_set(e, ERR_INPUT, "%s: unknown IDX element type 0x%02x at byte offset 2", name,
                       p[2]);
    int nd = p[3];
    if (nd < 1 || nd > IDX_MAX_DIMS)
        return err_set(e, ERR_INPUT, "%s: IDX dimension count %d at byte offset 3 is not in 1..%d",
                       name, nd, IDX_MAX_DIMS);
    size_t hdr = 4 + 4 * (size_t)nd;
    if (len < hdr)
        return err_set(e, ERR_INPUT,
                       "%s: truncated IDX header at byte offset %zu (%d dimensions need %zu bytes)",
                       name, len, nd, hdr);
    size_t count = 1;
    for (int i = 0; i < nd; i++) {
        const unsigned char *d = p + 4 + 4 * i;
        uint32_t v = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
        out->dims[i] = v;
        if (v != 0 && count > IDX_MAX_BYTES / es / v)
            return err_set(e, ERR_INPUT,
                           "%s: IDX dimensions too large at byte offset %d (more than %zu bytes)",
                           name, 4 + 4 * i, IDX_MAX_BYTES);
        count *= v;
    }
    size_t need = hdr + count * es;
    if (len < need)
        return err_set(e, ERR_INPUT,
                       "%s: truncated IDX data: file ends at byte offset %zu, expected %zu bytes "
                       "(%zu elements of %zu bytes from offset %zu)",
                       name, len, need, count, es, hdr);
    if (len > need)
        return err_set(e, ERR_INPUT, "%s: %zu unexpected trailing bytes at byte offset %zu", name,
                       len - need, need);
    out->type = p[2];
    out->ndim = nd;
    out->count = count;
    out->elem_size = es;
    out->data = p + hdr;
    out->data_offset = hdr;
    return 0;
}

int idx_read(const char *path, idx_array *out, err *e)
{
    memset(out, 0, sizeof *out);
    int fd = file_open(path, e);
    if (fd < 0)
        return ERR_INPUT;
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        xoom(sizeof(gz)); /* gzdopen fails only when it cannot allocate its state */
    }
    gzbuffer(gz, 1 << 17);
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = xmalloc(cap);
    int rc = 0;
    for (;;) {
        if (len == cap) {
            if (cap > IDX_MAX_BYTES) {
                rc = err_set(e, ERR_INPUT, "%s: larger than %zu bytes at byte offset %zu", path,
                             IDX_MAX_BYTES, len);
                break;
            }
            cap = cap * 2 > IDX_MAX_BYTES ? IDX_MAX_BYTES + 1 : cap * 2;
            buf = xrealloc(buf, cap);
        }
        size_t want = cap - len;
        if (want > (1u << 30))
            want = 1u << 30;
        int n = gzread(gz, buf + len, (unsigned)want);
        if (n < 0) {
            int zerr = 0;
            const char *msg = gzerror(gz, &zerr);
            rc = err_set(e, ERR_INPUT,
                         "%s: corrupt gzip data at byte offset %zu (compressed offset %ld): %s",
                         path, len, (long)gzoffset(gz), msg);
            break;
        }
        len += (size_t)n;
        if (n == 0 || (size_t)n < want) {
            int zerr = 0;
            const char *msg = gzerror(gz, &zerr);
            if (zerr != Z_OK && zerr != Z_STREAM_END) {
                rc = err_set(e, ERR_INPUT,
                             "%s: corrupt or truncated gzip data at byte offset %zu "
                             "(compressed offset %ld): %s",
                             path, len, (long)gzoffset(gz), msg);
                break;
            }
            if (n == 0 || gzeof(gz))
                break;
        }
    }
    gzclose(gz);
    if (rc == 0)
        rc = idx_parse(buf, len, path, out, e);
    if (rc != 0) {
        free(buf);
        memset(out, 0, sizeof *out);
        return rc;
    }
    out->owned = buf;
    return 0;
}

/* The gzip file of the same bytes (as gzwrite writes it: default level, no name, mtime 0);
 * *len is the size in and out. */
static unsigned char *gzip(const unsigned char *raw, size_t *len)
{
    z_stream z = {0};
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        xoom(sizeof z); /* deflateInit2 with valid arguments fails only for memory */
    size_t cap = deflateBound(&z, (uLong)*len), done = 0;
    unsigned char *out = xmalloc(cap);
    z.next_in = (unsigned char *)raw;
    z.next_out = out;
    int st;
    do { /* avail_* are 32-bit: feed at most 1 GiB at a time */
        size_t in = *len - (size_t)((const unsigned char *)z.next_in - raw);
        z.avail_in = in > (1u << 30) ? 1u << 30 : (unsigned)in;
        z.avail_out = cap - done > (1u << 30) ? 1u << 30 : (unsigned)(cap - done);
        st = deflate(&z, z.avail_in == in ? Z_FINISH : Z_NO_FLUSH);
        done = (size_t)(z.next_out - out);
    } while (st == Z_OK);
    deflateEnd(&z);
    *len = done;
    return out;
}

int idx_write(const char *path, int type, int ndim, const uint32_t *dims, const void *data, int gz,
              err *e)
{
    size_t es = idx_type_size(type);
    if (es == 0 || ndim < 1 || ndim > IDX_MAX_DIMS)
        return err_set(e, ERR_INPUT, "%s: bad IDX type 0x%02x or dimension count %d", path, type,
                       ndim);
    unsigned char hdr[4 + 4 * IDX_MAX_DIMS] = {0, 0, (unsigned char)type, (unsigned char)ndim};
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        hdr[4 + 4 * i] = (unsigned char)(dims[i] >> 24);
        hdr[5 + 4 * i] = (unsigned char)(dims[i] >> 16);
        hdr[6 + 4 * i] = (unsigned char)(dims[i] >> 8);
        hdr[7 + 4 * i] = (unsigned char)dims[i];
        count *= dims[i];
    }
    size_t hlen = 4 + 4 * (size_t)ndim, dlen = count * es;
    unsigned char *raw = xmalloc(hlen + dlen);
    memcpy(raw, hdr, hlen);
    if (dlen)
        memcpy(raw + hlen, data, dlen);
    size_t len = hlen + dlen;
    unsigned char *out = gz ? gzip(raw, &len) : raw;
    if (out != raw)
        free(raw);
    int rc = file_write_atomic(path, out, len, e);
    free(out);
    return rc;
}

void idx_free(idx_array *a)
{
    if (a) {
        free(a->owned);
        memset(a, 0, sizeof *a);
    }
}
