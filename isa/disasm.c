/* disasm: instructions and whole programs back to assembly text the assembler accepts.
 *
 * Each operand prints by its kind in the opcode's format (isa/formats.def), so nothing here
 * lists opcodes or formats.
 * Branch targets and worker entries print as absolute addresses, small immediates in decimal,
 * others in hex; a word that does not decode prints as `.word lo, hi`. A program listing
 * reproduces the image byte for byte when re-assembled (for every image the assembler makes:
 * text at 0, data at the text end aligned to 16 or to a larger power of two). Symbols other
 * than `main` (the entry) are not reproduced: branches name addresses, not labels. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/isa.h"
#include "isa/isa_int.h"

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Small values in decimal, others as 32-bit hex (both re-assemble to the same bits). */
static void fmt_imm(char *buf, size_t len, int32_t v)
{
    if (v >= -4096 && v <= 4096)
        snprintf(buf, len, "%" PRId32, v);
    else
        snprintf(buf, len, "0x%" PRIx32, (uint32_t)v);
}

/* One operand as the assembler reads it back. */
static void put_operand(char *buf, size_t len, isa_operand o, const isa_insn *in)
{
    const unsigned reg[4] = {in->rd, in->ra, in->rb, in->rc};
    long long off = in->imm;
    switch ((isa_kind)o.kind) {
    case ISA_K_REG:
    case ISA_K_PAIR:
    case ISA_K_QUAD: snprintf(buf, len, "r%u", reg[o.field]); break;
    case ISA_K_IMM: fmt_imm(buf, len, in->imm); break;
    case ISA_K_TARGET:
    case ISA_K_ENTRY: snprintf(buf, len, "0x%" PRIx32, (uint32_t)in->imm); break;
    case ISA_K_ZONE: snprintf(buf, len, "%s", isa_zone_name((uint32_t)in->imm)); break;
    case ISA_K_CWSLOT: snprintf(buf, len, "%" PRIu32, (uint32_t)in->imm); break;
    case ISA_K_CSR: snprintf(buf, len, "$%s", isa_csr_name((uint32_t)in->imm)); break;
    case ISA_K_MEM:
        if (off == 0)
            snprintf(buf, len, "[r%u]", in->ra);
        else
            snprintf(buf, len, "[r%u%c%lld]", in->ra, off < 0 ? '-' : '+', off < 0 ? -off : off);
        break;
    case ISA_K_MEMPI: snprintf(buf, len, "[r%u]+=%lld", in->ra, off); break;
    case ISA_K_NO:
    case ISA_K_COUNT: snprintf(buf, len, "?"); break;
    }
}

void isa_disasm_insn(uint64_t word, char *buf, size_t len)
{
    isa_insn in = isa_decode_word(word);
    if (in.op == OP_ILLEGAL) {
        snprintf(buf, len, ".word 0x%08" PRIx32 ", 0x%08" PRIx32, (uint32_t)word,
                 (uint32_t)(word >> 32));
        return;
    }
    const isa_opinfo *oi = isa_info(in.op);
    const isa_fmtinfo *fi = isa_fmt_info(oi->fmt);
    size_t at = (size_t)snprintf(buf, len, "%s", oi->name);
    for (unsigned i = 0; i < fi->n && at < len; i++) {
        char opd[32];
        put_operand(opd, sizeof opd, fi->opd[i], &in);
        int k = snprintf(buf + at, len - at, "%s%s", i ? ", " : " ", opd);
        at += k > 0 ? (size_t)k : 0;
    }
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static void dump_bytes(txt *b, const uint8_t *img, uint32_t from, uint32_t to)
{
    txt_printf(b, "    .byte");
    for (uint32_t i = from; i < to; i++)
        txt_printf(b, "%s0x%02x", i == from ? " " : ", ", img[i]);
    txt_printf(b, "\n");
}

/* Data bytes [from, to) of the image: zero runs as .space, the rest as .word lines of up to
 * four words, pieces shorter than a word as .byte; `main:` where the entry is. */
static void dump_data(txt *b, const uint8_t *img, uint32_t from, uint32_t to, uint32_t entry)
{
    uint32_t a = from;
    while (a < to) {
        if (a == entry)
            txt_printf(b, "main:\n");
        uint32_t lim = entry > a && entry < to ? entry : to, z = a;
        while (lim - z >= 16 && all_zero(img + z, 16))
            z += 16;
        if (z > a) {
            txt_printf(b, "    .space %u\n", z - a);
            a = z;
            continue;
        }
        if (lim - a < 4) {
            dump_bytes(b, img, a, lim);
            a = lim;
            continue;
        }
        uint32_t n = (lim - a) / 4 < 4 ? (lim - a) / 4 : 4;
        char line[80];
        int k = snprintf(line, sizeof line, "    .word");
        for (uint32_t i = 0; i < n; i++)
            k += snprintf(line + k, sizeof line - (size_t)k, "%s0x%08" PRIx32, i ? ", " : " ",
                          rd32(img + a + 4 * i));
        txt_printf(b, "%-60s# 0x%04x\n", line, a);
        a += 4 * n;
    }
    if (a == entry)
        txt_printf(b, "main:\n");
}

char *isa_disasm_prog(const isa_prog *prog)
{
    txt b = {0};
    uint32_t entry = prog->entry;
    txt_printf(&b,
               "# ipusim disassembly: text 0x%x bytes, data at 0x%x, image 0x%x bytes, "
               "entry 0x%x\n",
               prog->text_size, prog->data_addr, prog->size, entry);
    txt_printf(&b, ".text\n");
    for (uint32_t pc = 0; pc + ISA_INSN_BYTES <= prog->text_size; pc += ISA_INSN_BYTES) {
        char insn[64];
        if (pc == entry)
            txt_printf(&b, "main:\n");
        if (entry > pc && entry < pc + ISA_INSN_BYTES) { /* an entry inside a slot */
            dump_bytes(&b, prog->image, pc, entry);
            txt_printf(&b, "main:\n");
            dump_bytes(&b, prog->image, entry, pc + ISA_INSN_BYTES);
            continue;
        }
        isa_disasm_insn(isa_rd64(prog->image + pc), insn, sizeof insn);
        txt_printf(&b, "    %-40s# 0x%04x\n", insn, pc);
    }
    if (entry == prog->text_size)
        txt_printf(&b, "main:\n");

    /* The assembler puts data at the text end aligned to 16, or to the data's largest
     * .align; reproduce a larger alignment with .align, anything else with padding bytes. */
    uint32_t t = prog->text_size, d16 = (t + 15) & ~15u, d = prog->data_addr, from = d16;
    txt_printf(&b, ".data\n");
    if (d > d16) {
        uint32_t p = d & (0u - d); /* the largest power of two dividing d, at most 2^16 */
        p = p < (1u << 16) ? p : 1u << 16;
        if (((uint64_t)t + p - 1) / p * p == d && all_zero(prog->image + d16, d - d16)) {
            txt_printf(&b, "    .align %u\n", p);
            from = d;
        }
    }
    dump_data(&b, prog->image, from, prog->size > from ? prog->size : from,
              entry > t ? entry : UINT32_MAX);
    return txt_take(&b);
}
