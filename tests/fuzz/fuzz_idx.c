/* libFuzzer target for the IDX reader (workloads/mnist/idx.h). Inputs that start with the gzip
 * magic go through idx_read from an in-memory file (memfd), exercising zlib's stream and error
 * handling; all others go to idx_parse directly. Either way the reader must return a status
 * (never crash, leak or read out of bounds) and, on success, describe exactly the input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workloads/mnist/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read every data byte (so ASan sees any overrun). */
static unsigned touch(const idx_array *a)
{
    unsigned sum = 0;
    for (size_t i = 0; i < a->count * a->elem_size; i++)
        sum += a->data[i];
    return sum;
}

static void check(const idx_array *a, size_t len)
{
    size_t count = 1;
    for (int i = 0; i < a->ndim; i++)
        count *= a->dims[i];
    if (count != a->count || a->data_offset + count * a->elem_size != len)
        abort();
    if (touch(a) > (unsigned)(count * a->elem_size) * 255u)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    err e;
    idx_array a;
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
        int fd = memfd_create("fuzz_idx", 0);
        if (fd < 0)
            return 0;
        if (write(fd, data, size) == (ssize_t)size) {
            char path[64];
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
            if (idx_read(path, &a, &e) == 0) {
                if (touch(&a) > (unsigned)(a.count * a.elem_size) * 255u)
                    abort();
                idx_free(&a);
            } else if (e.status != ERR_INPUT || !strstr(e.msg, path)) {
                abort();
            }
        }
        close(fd);
        return 0;
    }
    if (idx_parse(data, size, "fuzz", &a, &e) == 0)
        check(&a, size);
    else if (e.status != ERR_INPUT || strncmp(e.msg, "fuzz: ", 6) != 0)
        abort();
    return 0;
}
