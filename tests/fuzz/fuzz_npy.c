/* libFuzzer target for the .npy reader (workloads/mnist/npy.h): npy_parse_f32 must return a
 * status for any bytes (never crash, leak or read out of bounds), name the input in every
 * error, and on success describe exactly the input: the shape's element count times 4 is the
 * data after the header, and every float is readable. An accepted array re-encodes to a file
 * that parses to the same shape and bits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/mnist/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    err e;
    npy_array a;
    if (npy_parse_f32(data, size, "fuzz", &a, &e) != 0) {
        if (e.status != ERR_INPUT || strncmp(e.msg, "fuzz", 4) != 0)
            abort();
        return 0;
    }
    size_t count = 1;
    for (int i = 0; i < a.ndim; i++)
        count *= (size_t)a.shape[i];
    if (count != a.count || count * 4 > size)
        abort();
    unsigned char *enc = NULL;
    size_t len = 0;
    if (npy_encode_f32(a.data, a.ndim, a.shape, &enc, &len, &e) == 0) {
        npy_array b;
        if (npy_parse_f32(enc, len, "again", &b, &e) != 0 || b.count != a.count ||
            b.ndim != a.ndim || memcmp(b.data, a.data, a.count * 4) != 0)
            abort();
        npy_free(&b);
        free(enc);
    }
    npy_free(&a);
    return 0;
}
