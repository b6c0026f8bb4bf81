/* libFuzzer target for the program image loader (isa_prog_load, the `ipusim asm -o` format):
 * any bytes, given as a file (an in-memory one, memfd), must load or be refused with an error
 * naming the file, never crash, leak or read out of bounds. A loaded image must be
 * consistent: its text inside its image, decoded whole, every symbol named. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "isa/isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_image", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    err e;
    isa_prog p;
    if (isa_prog_load(&p, path, &e) != 0) {
        if (!strstr(e.msg, path))
            abort();
        close(fd);
        return 0;
    }
    if (p.text_size > p.size || p.data_addr > p.size || p.ncode * 8u != p.text_size)
        abort();
    for (size_t k = 0; k < p.nsyms; k++)
        if (!p.syms[k].name)
            abort();
    isa_prog_free(&p);
    close(fd);
    return 0;
}
