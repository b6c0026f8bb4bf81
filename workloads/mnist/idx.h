/* idx: the IDX file format of MNIST (train-images-idx3-ubyte and friends), raw or gzip.
 *
 * Layout (big-endian): two zero bytes, a type byte (0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32,
 * 0x0D f32, 0x0E f64), a dimension count, one u32 size per dimension, then the data in
 * row-major order. A file must hold exactly header + product(dims) x element size bytes.
 * Errors name the file and the byte offset (in the decompressed stream for .gz files). */
#ifndef IPUSIM_MNIST_IDX_H
#define IPUSIM_MNIST_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum {
    IDX_U8 = 0x08,
    IDX_I8 = 0x09,
    IDX_I16 = 0x0B,
    IDX_I32 = 0x0C,
    IDX_F32 = 0x0D,
    IDX_F64 = 0x0E,
};

#define IDX_MAX_DIMS 8
/* Largest file (after decompression) the reader accepts: 1 GiB. */
#define IDX_MAX_BYTES ((size_t)1 << 30)

typedef struct idx_array {
    int type; /* IDX_U8 ... */
    int ndim; /* 1 .. IDX_MAX_DIMS */
    uint32_t dims[IDX_MAX_DIMS];
    size_t count;              /* product of dims */
    size_t elem_size;          /* bytes per element */
    const unsigned char *data; /* count x elem_size bytes, as stored (big-endian) */
    size_t data_offset;        /* byte offset of data in the file */
    unsigned char *owned;      /* buffer to free, or NULL when data points into the caller's */
} idx_array;

/* Parse an IDX image held in memory; `name` names it in errors. data points into buf (no copy),
 * so buf must outlive *out. Returns 0 or ERR_INPUT. */
int idx_parse(const void *buf, size_t len, const char *name, idx_array *out, err *e);

/* Read a file, raw or gzip (detected by content), and parse it. Free with idx_free. */
int idx_read(const char *path, idx_array *out, err *e);

/* Write an IDX file whole or not at all (temporary name, then rename); gzip when gz != 0.
 * data holds count x elem_size bytes already in big-endian order. */
int idx_write(const char *path, int type, int ndim, const uint32_t *dims, const void *data, int gz,
              err *e);

void idx_free(idx_array *a);

/* Bytes per element of an IDX type, or 0 for an unknown type. */
size_t idx_type_size(int type);

#endif
