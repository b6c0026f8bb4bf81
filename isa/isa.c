/* isa: the tables built from isa/opcodes.def, formats.def, csrs.def and zones.def; decoding
 * and encoding of 64-bit words; program images (decode at load, rpt-body checks) and their
 * binary container.
 *
 * Decoding walks the opcode's format and is strict: anything the tables do not describe
 * exactly (unknown opcode, reserved bits, fields the format does not use, odd pair registers,
 * unaligned quads, a bad CSR or zone) becomes OP_ILLEGAL, which faults only when executed.
 * Branch targets outside the text are not checked here either; they fault at run time. Left
 * out: relocation, multiple text segments, compression of the container. */
#include "isa/isa.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"
#include "base/file.h"
#include "isa/isa_int.h"

static const isa_opinfo op_table[OP_COUNT + 1] = {
#define OP(name, fmt, wc, sc, lb, sb, un, fl, sem) {#name, FMT_##fmt, wc, sc, lb, sb, un, fl, sem},
#include "isa/opcodes.def"
#undef OP
    {"illegal", FMT_NONE, 1, 1, 0, 0, 0, 0, "not a valid instruction: faults when executed"},
};

static const struct {
    const char *syntax, *what;
} kind_table[ISA_K_COUNT] = {
#define KIND(name, syntax, what) {syntax, what},
#define FMT(...)
#include "isa/formats.def"
#undef FMT
#undef KIND
};

#define OPD(k, f)                                                                                  \
    {                                                                                              \
        ISA_K_##k, ISA_F_##f                                                                       \
    }
static const isa_fmtinfo fmt_table[FMT_COUNT] = {
#define KIND(...)
/* clang-format off */
#define FMT(name, k0, f0, k1, f1, k2, f2, k3, f3)                                            \
    {#name,                                                                                 \
     (ISA_K_##k0 != ISA_K_NO) + (ISA_K_##k1 != ISA_K_NO) + (ISA_K_##k2 != ISA_K_NO) +         \
         (ISA_K_##k3 != ISA_K_NO),                                                          \
     {OPD(k0, f0), OPD(k1, f1), OPD(k2, f2), OPD(k3, f3)}},
/* clang-format on */
#include "isa/formats.def"
#undef FMT
#undef KIND
};
#undef OPD

static const struct {
    const char *name;
    int writable;
    const char *meaning;
} csr_table[CSR_COUNT] = {
#define CSR(id, name, writable, meaning) {name, writable, meaning},
#include "isa/csrs.def"
#undef CSR
};

static const isa_zone_info zone_table[ISA_NZONES] = {
#define ZONE(id, name, scope, host, meaning) {name, ISA_SCOPE_##scope, host, meaning},
#include "isa/zones.def"
#undef ZONE
};

/* Scope names, the other spelling of a zone (isa_zone_lookup). */
static const char *const scope_names[] = {
    [ISA_SCOPE_INTERNAL] = "internal",
    [ISA_SCOPE_GROUP] = "group",
    [ISA_SCOPE_GS1] = "gs1",
    [ISA_SCOPE_GS2] = "gs2",
};

/* ---- table access ---- */

const isa_opinfo *isa_info(unsigned op)
{
    return &op_table[op < OP_COUNT ? op : OP_ILLEGAL];
}

static int name_eq(const char *s, const char *name, size_t len)
{
    return len && s[0] == name[0] && strncmp(s, name, len) == 0 && s[len] == '\0';
}

isa_op isa_lookup(const char *name, size_t len)
{
    for (unsigned op = 0; op < OP_COUNT; op++)
        if (name_eq(op_table[op].name, name, len))
            return (isa_op)op;
    return OP_ILLEGAL;
}

const isa_fmtinfo *isa_fmt_info(unsigned f)
{
    return f < FMT_COUNT ? &fmt_table[f] : NULL;
}

/* How docs and messages write an operand ("rd", "imm", "[ra]+=imm", ...). */
static const char *operand_syntax(isa_operand o)
{
    static const char *const fields[] = {"rd", "ra", "rb", "rc", "imm", ""};
    if (o.kind >= ISA_K_COUNT)
        return "?";
    if (isa_kind_regs(o.kind))
        return o.field <= ISA_F_NO ? fields[o.field] : "?";
    return kind_table[o.kind].syntax;
}

const char *isa_kind_what(unsigned kind)
{
    return kind < ISA_K_COUNT ? kind_table[kind].what : "?";
}

unsigned isa_kind_regs(unsigned kind)
{
    return kind == ISA_K_REG ? 1 : kind == ISA_K_PAIR ? 2 : kind == ISA_K_QUAD ? 4 : 0;
}

void isa_fmt_syntax(unsigned f, char *buf, size_t len)
{
    const isa_fmtinfo *fi = isa_fmt_info(f);
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    for (unsigned i = 0; fi && i < fi->n && at < len; i++) {
        int k = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", operand_syntax(fi->opd[i]));
        at += k > 0 ? (size_t)k : 0;
    }
}

const char *isa_csr_name(unsigned csr)
{
    return csr < CSR_COUNT ? csr_table[csr].name : NULL;
}

int isa_csr_lookup(const char *name, size_t len)
{
    for (unsigned i = 0; i < CSR_COUNT; i++)
        if (name_eq(csr_table[i].name, name, len))
            return (int)i;
    return -1;
}

int isa_csr_writable(unsigned csr)
{
    return csr < CSR_COUNT && csr_table[csr].writable;
}

const char *isa_csr_meaning(unsigned csr)
{
    return csr < CSR_COUNT ? csr_table[csr].meaning : NULL;
}

const isa_zone_info *isa_zone_info_of(unsigned zone)
{
    return zone < ISA_NZONES ? &zone_table[zone] : NULL;
}

const char *isa_zone_name(unsigned zone)
{
    return zone < ISA_NZONES ? zone_table[zone].name : NULL;
}

/* "gs1" or "gs1_host": a scope's name, with "_host" for a zone the host takes part in. */
static int scope_spelling(const isa_zone_info *z, const char *name, size_t len)
{
    const char *s = scope_names[z->scope];
    size_t n = strlen(s);
    if (len < n || memcmp(s, name, n) != 0)
        return 0;
    return z->host ? name_eq("_host", name + n, len - n) : len == n;
}

int isa_zone_lookup(const char *name, size_t len)
{
    for (unsigned i = 0; i < ISA_NZONES; i++)
        if (name_eq(zone_table[i].name, name, len) || scope_spelling(&zone_table[i], name, len))
            return (int)i;
    return -1;
}

/* ---- decode / encode ---- */

/* The registers an operand names, a bit each (its kind's width from field f's register). */
static unsigned opd_regs(isa_operand o, const unsigned reg[4])
{
    unsigned n = isa_kind_regs(o.kind), m = 0;
    for (unsigned k = 0; k < n; k++)
        m |= 1u << ((reg[o.field] + k) % ISA_NREGS);
    return m;
}

/* Check one operand of a decoded word; 0 when it makes the word illegal. Fills the branch
 * target and the registers it reads or loads. */
static int decode_operand(isa_operand o, const isa_opinfo *oi, const unsigned reg[4], isa_insn *in)
{
    uint32_t uimm = (uint32_t)in->imm;
    unsigned regs = opd_regs(o, reg);
    switch ((isa_kind)o.kind) {
    case ISA_K_PAIR:
    case ISA_K_QUAD:
        if (reg[o.field] % isa_kind_regs(o.kind))
            return 0;
        /* fall through */
    case ISA_K_REG:
        if (o.field != ISA_F_RD || (oi->flags & (FL_STORE | FL_RDSRC)))
            in->reads |= (uint16_t)regs;
        else if (oi->flags & FL_LOAD)
            in->loads |= (uint16_t)regs;
        return 1;
    case ISA_K_MEM:
    case ISA_K_MEMPI: in->reads |= (uint16_t)(1u << reg[ISA_F_RA]); return 1;
    case ISA_K_TARGET:
        if (uimm % ISA_INSN_BYTES == 0)
            in->target = uimm / ISA_INSN_BYTES;
        return 1;
    case ISA_K_CSR: return uimm < CSR_COUNT;
    case ISA_K_ZONE: return uimm < ISA_NZONES;
    case ISA_K_CWSLOT: return uimm < ISA_CW_SLOTS;
    case ISA_K_IMM:
    case ISA_K_ENTRY:
    case ISA_K_NO:
    case ISA_K_COUNT: return 1;
    }
    return 1;
}

/* The encoding fields a format's operands fill, a bit each (1u << ISA_F_*). */
static unsigned fmt_fields(const isa_fmtinfo *fi)
{
    unsigned use = 0;
    for (unsigned i = 0; i < fi->n; i++) {
        isa_operand o = fi->opd[i];
        use |= 1u << o.field;
        if (o.kind == ISA_K_MEM || o.kind == ISA_K_MEMPI)
            use |= 1u << ISA_F_IMM;
    }
    return use;
}

isa_insn isa_decode_word(uint64_t w)
{
    isa_insn ill = {.op = OP_ILLEGAL, .target = UINT32_MAX};
    ill.wcycles = op_table[OP_ILLEGAL].wcycles;
    ill.wtc = (uint16_t)(ISA_BARREL * ill.wcycles);
    ill.scycles = op_table[OP_ILLEGAL].scycles;

    unsigned op = ISA_GET_OP(w);
    if (op >= OP_COUNT || ISA_GET_RSVD(w) != 0)
        return ill;
    const isa_opinfo *oi = &op_table[op];
    const isa_fmtinfo *fi = &fmt_table[oi->fmt];
    unsigned use = fmt_fields(fi);
    const unsigned reg[4] = {ISA_GET_RD(w), ISA_GET_RA(w), ISA_GET_RB(w), ISA_GET_RC(w)};
    for (unsigned f = ISA_F_RD; f <= ISA_F_RC; f++)
        if (reg[f] && !(use & 1u << f))
            return ill;
    if (ISA_GET_IMM(w) && !(use & 1u << ISA_F_IMM))
        return ill;

    isa_insn in = {
        .op = (uint8_t)op,
        .wtc = (uint16_t)(ISA_BARREL * oi->wcycles),
        .rd = (uint8_t)reg[ISA_F_RD],
        .ra = (uint8_t)reg[ISA_F_RA],
        .rb = (uint8_t)reg[ISA_F_RB],
        .rc = (uint8_t)reg[ISA_F_RC],
        .wcycles = oi->wcycles,
        .scycles = oi->scycles,
        .imm = ISA_GET_IMM(w),
        .target = UINT32_MAX,
    };
    for (unsigned i = 0; i < fi->n; i++)
        if (!decode_operand(fi->opd[i], oi, reg, &in))
            return ill;
    if (op == OP_ret)
        in.reads |= 1u << ISA_LR; /* the one implicit operand */
    return in;
}

unsigned isa_op_cost(unsigned op, const isa_rates *r, int super)
{
    const isa_opinfo *oi = isa_info(op);
    unsigned c = super ? oi->scycles : oi->wcycles;
    unsigned need[3] = {ceil_div_u32(oi->lbytes, r->load_bpc),
                        ceil_div_u32(oi->sbytes, r->store_bpc),
                        ceil_div_u32(oi->units, r->amp_units)};
    for (unsigned k = 0; k < 3; k++)
        c = need[k] > c ? need[k] : c;
    return c;
}

void isa_code_rate(isa_insn *code, uint32_t n, const isa_rates *r)
{
    for (uint32_t k = 0; k < n; k++) {
        code[k].wcycles = (uint8_t)isa_op_cost(code[k].op, r, 0);
        code[k].scycles = (uint8_t)isa_op_cost(code[k].op, r, 1);
        code[k].wtc = (uint16_t)(ISA_BARREL * code[k].wcycles);
    }
}

uint64_t isa_encode(const isa_insn *in)
{
    return ISA_ENCODE(in->op, in->rd, in->ra, in->rb, in->rc, in->imm);
}

/* ---- program images ---- */

void isa_prog_decode_text(const isa_prog *prog, isa_insn *out)
{
    for (uint32_t i = 0; i < prog->text_size / ISA_INSN_BYTES; i++)
        out[i] = isa_decode_word(isa_rd64(prog->image + (size_t)i * ISA_INSN_BYTES));
}

void isa_prog_drop_code(isa_prog *prog)
{
    free(prog->code);
    prog->code = NULL;
}

int isa_prog_decode_at(isa_prog *prog, uint32_t *bad_pc, err *e)
{
    *bad_pc = UINT32_MAX;
    free(prog->code);
    prog->code = NULL;
    prog->ncode = 0;
    if (prog->text_size % ISA_INSN_BYTES || prog->text_size > prog->data_addr ||
        prog->data_addr > prog->size || (prog->size && !prog->image))
        return err_set(e, ERR_INPUT, "inconsistent image layout (text %u, data at %u, size %u)",
                       prog->text_size, prog->data_addr, prog->size);
    uint32_t n = prog->text_size / ISA_INSN_BYTES;
    isa_insn *code = xcalloc(n, sizeof *code);
    isa_prog_decode_text(prog, code);

    for (uint32_t i = 0; i < n; i++) {
        if (code[i].op != OP_rpt)
            continue;
        uint64_t pc = (uint64_t)i * 8, start = pc + 8, end = (uint64_t)code[i].target * 8;
        *bad_pc = (uint32_t)pc;
        if (code[i].target == UINT32_MAX) {
            err_set(e, ERR_INPUT, "rpt end 0x%x is not a multiple of 8", (uint32_t)code[i].imm);
            goto fail;
        }
        if (end <= start) {
            err_set(e, ERR_INPUT, "rpt body [0x%llx, 0x%llx) is empty", (unsigned long long)start,
                    (unsigned long long)end);
            goto fail;
        }
        if (end > prog->text_size) {
            err_set(e, ERR_INPUT, "rpt body [0x%llx, 0x%llx) runs past the end of the text (0x%x)",
                    (unsigned long long)start, (unsigned long long)end, prog->text_size);
            goto fail;
        }
        for (uint32_t j = i + 1; j < end / 8; j++) {
            if (isa_info(code[j].op)->flags & FL_BRANCH) {
                err_set(e, ERR_INPUT, "rpt body [0x%llx, 0x%llx) contains the branch `%s` at 0x%x",
                        (unsigned long long)start, (unsigned long long)end,
                        isa_info(code[j].op)->name, j * 8);
                goto fail;
            }
        }
    }
    prog->code = code;
    prog->ncode = n;
    return ERR_OK;
fail:
    free(code);
    return ERR_INPUT;
}

int isa_prog_decode(isa_prog *prog, err *e)
{
    uint32_t pc;
    err tmp;
    err_clear(&tmp);
    int st = isa_prog_decode_at(prog, &pc, &tmp);
    if (st == ERR_OK)
        return ERR_OK;
    if (pc != UINT32_MAX)
        return err_set(e, st, "pc 0x%x: %s", pc, tmp.msg);
    return err_set(e, st, "%s", tmp.msg);
}

void isa_prog_free(isa_prog *prog)
{
    if (!prog)
        return;
    free(prog->image);
    for (size_t i = 0; i < prog->nsyms; i++)
        free(prog->syms[i].name);
    free(prog->syms);
    free(prog->code);
    memset(prog, 0, sizeof *prog);
}

int64_t isa_prog_sym(const isa_prog *prog, const char *name)
{
    for (size_t i = 0; i < prog->nsyms; i++)
        if (strcmp(prog->syms[i].name, name) == 0)
            return prog->syms[i].addr;
    return -1;
}

/* ---- the binary container ---- */

static const char magic[8] = {'I', 'P', 'U', 'S', 'I', 'M', 'X', '1'};

static uint8_t *put(uint8_t *p, const void *src, size_t n)
{
    if (n)
        memcpy(p, src, n);
    return p + n;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return put(p, b, 4);
}

int isa_prog_save(const isa_prog *prog, const char *path, err *e)
{
    size_t len = sizeof magic + 5 * 4 + prog->size;
    for (size_t i = 0; i < prog->nsyms; i++) {
        size_t n = strlen(prog->syms[i].name);
        if (n > 0xffff)
            return err_set(e, ERR_INPUT, "%s: symbol name too long", path);
        len += 7 + n;
    }
    if (prog->nsyms > UINT32_MAX)
        return err_set(e, ERR_INPUT, "%s: too many symbols", path);
    uint8_t *buf = xmalloc(len), *p = put(buf, magic, sizeof magic);
    p = put_u32(p, prog->text_size);
    p = put_u32(p, prog->data_addr);
    p = put_u32(p, prog->size);
    p = put_u32(p, prog->entry);
    p = put_u32(p, (uint32_t)prog->nsyms);
    p = put(p, prog->image, prog->size);
    for (size_t i = 0; i < prog->nsyms; i++) {
        size_t n = strlen(prog->syms[i].name);
        p = put_u32(p, prog->syms[i].addr);
        uint8_t b[3] = {(uint8_t)(prog->syms[i].global != 0), (uint8_t)n, (uint8_t)(n >> 8)};
        p = put(p, b, 3);
        p = put(p, prog->syms[i].name, n);
    }
    int rc = file_write_atomic(path, buf, len, e);
    free(buf);
    return rc;
}

/* A cursor over the loaded bytes; every read checks what is left. */
typedef struct reader {
    const uint8_t *p;
    size_t left;
} reader;

static int take(reader *r, void *dst, size_t n)
{
    if (n > r->left)
        return 0;
    if (n)
        memcpy(dst, r->p, n);
    r->p += n;
    r->left -= n;
    return 1;
}

static int take_u32(reader *r, uint32_t *v)
{
    uint8_t b[4];
    if (!take(r, b, 4))
        return 0;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return 1;
}

int isa_prog_load(isa_prog *prog, const char *path, err *e)
{
    memset(prog, 0, sizeof *prog);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (!(buf = (uint8_t *)file_read(path, (size_t)1 << 31, &len, e)))
        return ERR_INPUT;
    reader r = {buf, len};
    char m[8];
    uint32_t nsyms = 0;
    const char *why = NULL;
    if (!take(&r, m, 8) || memcmp(m, magic, 8) != 0) {
        why = "not an ipusim image (bad magic)";
        goto bad;
    }
    if (!take_u32(&r, &prog->text_size) || !take_u32(&r, &prog->data_addr) ||
        !take_u32(&r, &prog->size) || !take_u32(&r, &prog->entry) || !take_u32(&r, &nsyms)) {
        why = "truncated header";
        goto bad;
    }
    if (prog->text_size % ISA_INSN_BYTES || prog->text_size > prog->data_addr ||
        prog->data_addr > prog->size) {
        why = "inconsistent layout";
        goto bad;
    }
    if (prog->size > r.left) {
        why = "truncated image";
        goto bad;
    }
    prog->image = xmalloc(prog->size);
    take(&r, prog->image, prog->size);
    if (nsyms > r.left / 7) { /* each symbol takes at least 7 bytes plus its name */
        why = "truncated symbol table";
        goto bad;
    }
    prog->syms = xcalloc(nsyms, sizeof *prog->syms);
    for (uint32_t i = 0; i < nsyms; i++) {
        uint8_t b[3];
        isa_sym *s = &prog->syms[i];
        if (!take_u32(&r, &s->addr) || !take(&r, b, 3)) {
            why = "truncated symbol table";
            goto bad;
        }
        size_t n = (size_t)b[1] | (size_t)b[2] << 8;
        if (b[0] > 1 || n == 0 || n > r.left || memchr(r.p, 0, n)) {
            why = "bad symbol";
            goto bad;
        }
        s->global = b[0];
        s->name = xmalloc(n + 1);
        prog->nsyms = i + 1;
        take(&r, s->name, n);
        s->name[n] = '\0';
    }
    if (r.left) {
        why = "trailing bytes after the symbol table";
        goto bad;
    }
    free(buf);
    err tmp;
    err_clear(&tmp);
    if (isa_prog_decode(prog, &tmp) != ERR_OK) {
        err_set(e, ERR_INPUT, "%s: %s", path, tmp.msg);
        isa_prog_free(prog);
        return ERR_INPUT;
    }
    return ERR_OK;
bad:
    free(buf);
    isa_prog_free(prog);
    return err_set(e, ERR_INPUT, "%s: %s", path, why);
}
