/* fuzz_machine: libFuzzer target for the machine preset parser. Arbitrary bytes (cut at the
 * first NUL, as a file would be refused there) go to mach_parse; when they parse, the machine
 * must pass mach_check and every parameter must have come from a line of the text, or the
 * target aborts. On failure the message must carry the "FILE:LINE: error:" position. Left
 * out: files (mach_load's reading is plain stdio). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hw/machine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    err *e = malloc(sizeof *e);
    mach_src *src = malloc(sizeof *src);
    if (!text || !e || !src)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    mach m;
    if (mach_parse(&m, src, "fuzz", "fuzz.ini", text, e) == ERR_OK) {
        if (mach_check(&m, e) != ERR_OK)
            abort();
        for (size_t i = 0; i < MACH_NPARAMS; i++)
            if (src->line[i] <= 0)
                abort();
    } else if (strncmp(e->msg, "fuzz.ini:", 9) != 0 || !strstr(e->msg, ": error: ")) {
        abort();
    }
    free(src);
    free(e);
    free(text);
    return 0;
}
