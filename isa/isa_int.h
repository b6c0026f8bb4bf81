/* isa_int: helpers shared by isa.c, asm.c and disasm.c; not part of the public API. */
#ifndef IPUSIM_ISA_INT_H
#define IPUSIM_ISA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/text.h"
#include "isa/isa.h"

/* isa_prog_decode, telling the caller the pc of a faulty rpt (for the assembler's line
 * numbers): on an rpt error e->msg has no "pc ..." prefix and *bad_pc is its pc; on other
 * errors *bad_pc is UINT32_MAX. */
int isa_prog_decode_at(isa_prog *prog, uint32_t *bad_pc, err *e);

/* The little-endian 64-bit word at p (an instruction of an image). */
static inline uint64_t isa_rd64(const uint8_t *p)
{
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--)
        w = w << 8 | p[i];
    return w;
}

#endif
