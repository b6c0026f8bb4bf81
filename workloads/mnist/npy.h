/* npy: NumPy's .npy format for little-endian fp32 arrays, the way weights travel between
 * ipusim and PyTorch (np.load / np.save).
 *
 * A file is the magic "\x93NUMPY", a version byte pair (1.0: u16 header length; 2.0 and 3.0:
 * u32), an ASCII Python dict {'descr': '<f4', 'fortran_order': False, 'shape': (a, b), }
 * padded with spaces to a 64-byte boundary and ended by '\n', then the raw data. The writer
 * writes version 1.0 exactly as numpy does; the reader takes any version, keys in any order,
 * any spacing, and rejects every dtype but little-endian float32. */
#ifndef IPUSIM_MNIST_NPY_H
#define IPUSIM_MNIST_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define NPY_MAX_DIMS 8

typedef struct npy_array {
    int ndim; /* 0 for a scalar */
    int64_t shape[NPY_MAX_DIMS];
    size_t count; /* product of shape (1 for a scalar) */
    float *data;  /* count floats, host order; owned */
} npy_array;

/* Parse a .npy image in memory (name for errors). Copies the data out. 0 or ERR_INPUT. */
int npy_parse_f32(const void *buf, size_t len, const char *name, npy_array *out, err *e);
int npy_read_f32(const char *path, npy_array *out, err *e);

/* Build the bytes of a version 1.0 file in a malloc'd buffer (*out, *out_len). */
int npy_encode_f32(const float *data, int ndim, const int64_t *shape, unsigned char **out,
                   size_t *out_len, err *e);
/* Write whole or not at all (temporary name, then rename). */
int npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape, err *e);

void npy_free(npy_array *a);

#endif
