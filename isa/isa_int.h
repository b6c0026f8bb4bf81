/* isa_int: helpers shared by isa.c, asm.c, disasm.c and doc.c; not part of the public API. */
#ifndef IPUSIM_ISA_INT_H
#define IPUSIM_ISA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/text.h"
#include "isa/isa.h"

/* Which fields of the encoding a format uses. */
enum {
    ISA_USE_RD = 1u << 0,
    ISA_USE_RA = 1u << 1,
    ISA_USE_RB = 1u << 2,
    ISA_USE_RC = 1u << 3,
    ISA_USE_IMM = 1u << 4,
};
unsigned isa_fmt_fields(isa_fmt f);
/* Register fields that must be even for op (FL_PAIR: all its registers, except the address
 * register ra of a load/store). */
unsigned isa_pair_fields(unsigned op);

/* isa_prog_decode, telling the caller the pc of a faulty rpt (for the assembler's line
 * numbers): on an rpt error e->msg has no "pc ..." prefix and *bad_pc is its pc; on other
 * errors *bad_pc is UINT32_MAX. */
int isa_prog_decode_at(isa_prog *prog, uint32_t *bad_pc, err *e);



#endif
