/* disasm: instructions and whole programs back to assembly text the assembler accepts.
 *
 * Each operand prints by its kind in the opcode's format (isa/formats.def), so nothing here
 * lists opcodes or formats.
 * Small immediates print in decimal, others in hex; a word that does not decode prints as
 * `.word lo, hi`. A program listing keeps every label where it was (with `.global` for the
 * global ones), and branch targets and worker entries name the first label at their address
 * (else the address), so that it reproduces the program byte for byte when re-assembled,
 * symbol table included (for every program the assembler makes: text at 0, data at the text
 * end aligned to 16 or to a larger power of two, symbols in address order). */
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

/* The first label at addr, or NULL. */
static const char *label_at(const isa_prog *prog, uint32_t addr)
{
    for (size_t i = 0; prog && i < prog->nsyms; i++)
        if (prog->syms[i].addr == addr)
            return prog->syms[i].name;
    return NULL;
}

/* One operand as the assembler reads it back; prog (may be NULL) names addresses. */
static void put_operand(char *buf, size_t len, isa_operand o, const isa_insn *in,
                        const isa_prog *prog)
{
    const unsigned reg[4] = {in->rd, in->ra, in->rb, in->rc};
    long long off = in->imm;
    switch ((isa_kind)o.kind) {
    case ISA_K_REG:
    case ISA_K_PAIR:
    case ISA_K_QUAD: snprintf(buf, len, "r%u", reg[o.field]); break;
    case ISA_K_IMM: fmt_imm(buf, len, in->imm); break;
    case ISA_K_TARGET:
    case ISA_K_ENTRY: {
        const char *l = label_at(prog, (uint32_t)in->imm);
        if (l)
            snprintf(buf, len, "%s", l);
        else
            snprintf(buf, len, "0x%" PRIx32, (uint32_t)in->imm);
        break;
    }
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

static void disasm_insn(uint64_t word, char *buf, size_t len, const isa_prog *prog)
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
        char opd[300];
        put_operand(opd, sizeof opd, fi->opd[i], &in, prog);
        int k = snprintf(buf + at, len - at, "%s%s", i ? ", " : " ", opd);
        at += k > 0 ? (size_t)k : 0;
    }
}

void isa_disasm_insn(uint64_t word, char *buf, size_t len)
{
    disasm_insn(word, buf, len, NULL);
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

/* The labels at addr, in symbol order, each with `.global` after it when it is global. */
static void put_labels(txt *b, const isa_prog *prog, uint32_t addr)
{
    for (size_t i = 0; i < prog->nsyms; i++)
        if (prog->syms[i].addr == addr) {
            txt_printf(b, "%s:\n", prog->syms[i].name);
            if (prog->syms[i].global)
                txt_printf(b, "    .global %s\n", prog->syms[i].name);
        }
}

/* The first label address in (a, to), else to. */
static uint32_t next_label(const isa_prog *prog, uint32_t a, uint32_t to)
{
    uint32_t n = to;
    for (size_t i = 0; i < prog->nsyms; i++)
        if (prog->syms[i].addr > a && prog->syms[i].addr < n)
            n = prog->syms[i].addr;
    return n;
}

/* Bytes [a, lim) of the image, no label inside: zero runs (16 bytes or more) as .space, the
 * rest as .word lines of up to four words, a piece shorter than a word as .byte. */
static void dump_run(txt *b, const uint8_t *img, uint32_t a, uint32_t lim)
{
    while (a < lim) {
        uint32_t z = a;
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
}

/* Data bytes [from, to) of the image, the labels where they are. */
static void dump_data(txt *b, const isa_prog *prog, uint32_t from, uint32_t to)
{
    for (uint32_t a = from; a < to;) {
        put_labels(b, prog, a);
        uint32_t lim = next_label(prog, a, to);
        dump_run(b, prog->image, a, lim);
        a = lim;
    }
}

/* The text: an instruction a slot, the labels before it; a slot with a label inside it (not
 * 8-aligned) as .byte pieces around the labels. */
static void dump_text(txt *b, const isa_prog *prog)
{
    for (uint32_t pc = 0; pc + ISA_INSN_BYTES <= prog->text_size; pc += ISA_INSN_BYTES) {
        put_labels(b, prog, pc);
        uint32_t end = pc + ISA_INSN_BYTES, at = next_label(prog, pc, end);
        if (at < end) { /* a label inside the slot */
            for (uint32_t from = pc; from < end; from = at, at = next_label(prog, at, end)) {
                if (from > pc)
                    put_labels(b, prog, from);
                dump_bytes(b, prog->image, from, at);
            }
            continue;
        }
        char insn[400];
        disasm_insn(isa_rd64(prog->image + pc), insn, sizeof insn, prog);
        txt_printf(b, "    %-40s# 0x%04x\n", insn, pc);
    }
}

char *isa_disasm_prog(const isa_prog *prog)
{
    txt b = {0};
    txt_printf(&b,
               "# ipusim disassembly: text 0x%x bytes, data at 0x%x, image 0x%x bytes, "
               "entry 0x%x\n",
               prog->text_size, prog->data_addr, prog->size, prog->entry);
    /* The assembler puts data at the text end aligned to 16, or to the data's largest
     * .align; reproduce a larger alignment with .align, anything else with padding bytes. */
    uint32_t t = prog->text_size, d16 = (t + 15) & ~15u, d = prog->data_addr, from = d16, p = 0;
    if (d > d16) {
        p = d & (0u - d); /* the largest power of two dividing d, at most 2^16 */
        p = p < (1u << 16) ? p : 1u << 16;
        if (((uint64_t)t + p - 1) / p * p == d && all_zero(prog->image + d16, d - d16))
            from = d;
        else
            p = 0;
    }
    txt_printf(&b, ".text\n");
    dump_text(&b, prog);
    if (t < from) /* labels at the text's end (at `from` they are the data's first) */
        put_labels(&b, prog, t);
    txt_printf(&b, ".data\n");
    if (p)
        txt_printf(&b, "    .align %u\n", p);
    uint32_t end = prog->size > from ? prog->size : from;
    dump_data(&b, prog, from, end);
    put_labels(&b, prog, end);
    return txt_take(&b);
}
