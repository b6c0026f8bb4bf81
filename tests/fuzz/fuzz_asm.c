/* fuzz_asm: libFuzzer target for the assembler. Arbitrary bytes go to asm_assemble; when
 * they assemble, the program is disassembled and re-assembled, and the two programs (images,
 * layout, entry and symbol tables) must be identical, or the target aborts. Everything is freed, so
 * LeakSanitizer checks the error paths too. Left out: running the program. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "isa/asm.h"
#include "isa/isa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    err *e = malloc(sizeof *e);
    if (!e)
        return 0;
    isa_prog p;
    if (asm_assemble("fuzz.s", (const char *)data, size, &p, e) == ERR_OK) {
        char *text = isa_disasm_prog(&p);
        if (!text)
            abort();
        isa_prog q;
        if (asm_assemble("disasm.s", text, strlen(text), &q, e) != ERR_OK)
            abort();
        if (q.text_size != p.text_size || q.data_addr != p.data_addr || q.size != p.size ||
            q.entry != p.entry || q.ncode != p.ncode || memcmp(q.image, p.image, p.size) != 0 ||
            q.nsyms != p.nsyms)
            abort();
        for (size_t i = 0; i < p.nsyms; i++)
            if (strcmp(q.syms[i].name, p.syms[i].name) != 0 || q.syms[i].addr != p.syms[i].addr ||
                q.syms[i].global != p.syms[i].global)
                abort();
        free(text);
        isa_prog_free(&q);
        isa_prog_free(&p);
    } else if (e->status != ERR_ASM || e->msg[0] == '\0' || p.image || p.code || p.syms) {
        abort();
    }
    free(e);
    return 0;
}
