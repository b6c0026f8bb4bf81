/* asm: the ipusim assembler. Source syntax is described in docs/isa.md.
 *
 *   .text / .data            switch section (text is placed at 0, data after it, 16-aligned)
 *   label:                   define a label at the current address of the section
 *   .word e, e, ...          32-bit values (constant expressions; labels allowed); in .text
 *                            two .words make one instruction slot (low word first)
 *   .byte e, e, ...          8-bit values
 *   .float f, f, ...         fp32 values (decimal, scientific, inf, nan, signed)
 *   .space n                 n zero bytes
 *   .align n                 pad to a multiple of n bytes (a power of two)
 *   .global name             mark a symbol global (the supervisor starts at `main`, else 0)
 *   # or ; comment           to end of line ("; expect:" lines are comments too)
 *   registers r0..r15, lr (= r15); control registers by name, $tile $scratch ...
 *   (isa/csrs.def); sync zones by name, `internal` `external` ... (isa/zones.def), or number;
 *   each instruction's operands as its format lists them (isa/formats.def)
 *   memory operands [ra], [ra+e], [ra-e]; post-increment [ra]+=e
 *   constant expressions: integers (dec, 0x, 0b, char 'c'), labels, `.` (current address),
 *   + - * / % << >> & | ^ ~ unary -, parentheses.
 *
 * Errors: every error in the file is reported, each as
 *   file:line:col: error: message
 *   <the source line>
 *   <spaces>^
 */
#ifndef IPUSIM_ASM_H
#define IPUSIM_ASM_H

#include <stddef.h>

#include "base/err.h"
#include "isa/isa.h"

/* Assemble `len` bytes of source named `name` (used in messages) into *out (decoded and ready
 * to load). Returns ERR_OK, or ERR_ASM with every error in e->msg. *out is zeroed on error. */
int asm_assemble(const char *name, const char *src, size_t len, isa_prog *out, err *e);

/* Only lay the source out (no image): the address `sym` would have once assembled
 * (UINT32_MAX when the source does not define it). An instruction takes one slot whatever its
 * operands, so they are not read. ERR_OK, or ERR_ASM with the errors found so far (those of
 * labels, mnemonics, directives and layout: an instruction's operands show theirs only when
 * assembled). For a caller that needs an address before it can write the final text (the
 * graph compiler's first pass). */
int asm_symbol_address(const char *name, const char *src, size_t len, const char *sym,
                       uint32_t *addr, err *e);

/* The source without its comments and the blanks around each line's tokens, line for line
 * (the same lines, so a message's line number holds): the same program in fewer bytes, for a
 * caller that pastes one text into many (the graph compiler's codelets). A comment starts as
 * the assembler's lexer says (`#` or `;` outside a character constant). Returns a malloc'd,
 * NUL-terminated text and its length in *outlen. */
char *asm_strip(const char *src, size_t len, size_t *outlen);

/* Read and assemble a file (the program a user gives). ERR_ASM as asm_assemble, and also for
 * a file without instructions ("PATH:1:1: error: no instructions ...": an empty program that
 * asm_assemble takes would start outside its text). ERR_INPUT for a file that cannot be read
 * or is not source: an image (or most of its magic) and, unless its name ends in .s, .S or
 * .asm, a file whose first 4 KiB hold a NUL or another control byte than tab, LF, FF and CR
 * ("PATH: not an ipusim program image (no IPUSIMX1 magic) nor assembly text"). */
int asm_assemble_file(const char *path, isa_prog *out, err *e);

#endif
