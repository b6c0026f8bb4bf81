/* isa: the opcode table built from isa/opcodes.def, decoding and encoding of 64-bit words,
 * program images (decode at load, rpt-body checks) and their binary container.
 *
 * Decoding is strict: anything the table does not describe exactly (unknown opcode, reserved
 * bits, fields the format does not use, odd pair registers, a bad CSR or zone) becomes
 * OP_ILLEGAL, which faults only when executed. Branch targets outside the text are not
 * checked here either; they fault at run time. Left out: relocation, multiple text segments,
 * compression of the container. */
#include "isa/isa.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/file.h"
#include "isa/isa_int.h"

static const isa_opinfo op_table[OP_COUNT + 1] = {
#define OP(name, fmt, wc, sc, fl, sem) {#name, FMT_##fmt, wc, sc, fl, sem},
#include "isa/opcodes.def"
#undef OP
    {"illegal", FMT_NONE, 1, 1, 0, "not a valid instruction: faults when executed"},
};

static const char *const fmt_syntax[FMT_COUNT] = {
    [FMT_NONE] = "",
    [FMT_R] = "ra",
    [FMT_RR] = "rd, ra",
    [FMT_RRR] = "rd, ra, rb",
    [FMT_RRRR] = "rd, ra, rb, rc",
    [FMT_RI] = "rd, imm",
    [FMT_RRI] = "rd, ra, imm",
    [FMT_MEM] = "rd, [ra+imm]",
    [FMT_MEMPI] = "rd, [ra]+=imm",
    [FMT_I] = "imm",
    [FMT_RL] = "ra, imm",
    [FMT_IR] = "imm, ra",
    [FMT_RC] = "rd, $csr",
    [FMT_CR] = "$csr, ra",
};

static const unsigned fmt_fields[FMT_COUNT] = {
    [FMT_NONE] = 0,
    [FMT_R] = ISA_USE_RA,
    [FMT_RR] = ISA_USE_RD | ISA_USE_RA,
    [FMT_RRR] = ISA_USE_RD | ISA_USE_RA | ISA_USE_RB,
    [FMT_RRRR] = ISA_USE_RD | ISA_USE_RA | ISA_USE_RB | ISA_USE_RC,
    [FMT_RI] = ISA_USE_RD | ISA_USE_IMM,
    [FMT_RRI] = ISA_USE_RD | ISA_USE_RA | ISA_USE_IMM,
    [FMT_MEM] = ISA_USE_RD | ISA_USE_RA | ISA_USE_IMM,
    [FMT_MEMPI] = ISA_USE_RD | ISA_USE_RA | ISA_USE_IMM,
    [FMT_I] = ISA_USE_IMM,
    [FMT_RL] = ISA_USE_RA | ISA_USE_IMM,
    [FMT_IR] = ISA_USE_RA | ISA_USE_IMM,
    [FMT_RC] = ISA_USE_RD | ISA_USE_IMM,
    [FMT_CR] = ISA_USE_RA | ISA_USE_IMM,
};

static const char *const csr_names[CSR_COUNT] = {
    [CSR_TILE] = "tile",     [CSR_IPU] = "ipu",       [CSR_WID] = "wid",
    [CSR_CCOUNT] = "ccount", [CSR_CCOUNTH] = "ccounth", [CSR_NTILES] = "ntiles",
    [CSR_NIPUS] = "nipus",   [CSR_SCRATCH] = "scratch", [CSR_GROUP] = "group",
};

static const char *const zone_names[ISA_NZONES] = {
    [ISA_ZONE_INTERNAL] = "internal",
    [ISA_ZONE_EXTERNAL] = "external",
    [ISA_ZONE_GS2] = "gs2",
    [ISA_ZONE_EXTERNAL_HOST] = "external_host",
    [ISA_ZONE_GS2_HOST] = "gs2_host",
    [ISA_ZONE_INTERNAL_HOST] = "internal_host",
    [ISA_ZONE_GROUP] = "group",
    [ISA_ZONE_GROUP_HOST] = "group_host",
};

/* ---- table access ---- */

const isa_opinfo *isa_info(unsigned op)
{
    return &op_table[op < OP_COUNT ? op : OP_ILLEGAL];
}

static int name_eq(const char *s, const char *name, size_t len)
{
    return strlen(s) == len && memcmp(s, name, len) == 0;
}

isa_op isa_lookup(const char *name, size_t len)
{
    for (unsigned op = 0; op < OP_COUNT; op++)
        if (name_eq(op_table[op].name, name, len))
            return (isa_op)op;
    return OP_ILLEGAL;
}

const char *isa_fmt_syntax(isa_fmt f)
{
    return (unsigned)f < FMT_COUNT ? fmt_syntax[f] : "?";
}

unsigned isa_fmt_fields(isa_fmt f)
{
    return (unsigned)f < FMT_COUNT ? fmt_fields[f] : 0;
}

unsigned isa_pair_fields(unsigned op)
{
    const isa_opinfo *oi = isa_info(op);
    if (!(oi->flags & FL_PAIR))
        return 0;
    if (oi->fmt == FMT_MEM || oi->fmt == FMT_MEMPI)
        return ISA_USE_RD;
    return fmt_fields[oi->fmt] & (ISA_USE_RD | ISA_USE_RA | ISA_USE_RB | ISA_USE_RC);
}

const char *isa_csr_name(unsigned csr)
{
    return csr < CSR_COUNT ? csr_names[csr] : NULL;
}

int isa_csr_lookup(const char *name, size_t len)
{
    for (unsigned i = 0; i < CSR_COUNT; i++)
        if (name_eq(csr_names[i], name, len))
            return (int)i;
    return -1;
}

int isa_csr_writable(unsigned csr)
{
    return csr == CSR_SCRATCH || csr == CSR_GROUP;
}

const char *isa_zone_name(unsigned zone)
{
    return zone < ISA_NZONES ? zone_names[zone] : NULL;
}

int isa_zone_lookup(const char *name, size_t len)
{
    if (name_eq("gs1", name, len))
        return ISA_ZONE_EXTERNAL;
    if (name_eq("gs1_host", name, len))
        return ISA_ZONE_EXTERNAL_HOST;
    for (unsigned i = 0; i < ISA_NZONES; i++)
        if (name_eq(zone_names[i], name, len))
            return (int)i;
    return -1;
}

/* ---- decode / encode ---- */

isa_insn isa_decode_word(uint64_t w)
{
    isa_insn ill = {.op = OP_ILLEGAL, .target = UINT32_MAX};
    ill.wcycles = op_table[OP_ILLEGAL].wcycles;
    ill.wtc = (uint8_t)(ISA_BARREL * ill.wcycles);
    ill.scycles = op_table[OP_ILLEGAL].scycles;

    unsigned op = ISA_GET_OP(w);
    if (op >= OP_COUNT || ISA_GET_RSVD(w) != 0)
        return ill;
    const isa_opinfo *oi = &op_table[op];
    unsigned use = fmt_fields[oi->fmt];
    unsigned rd = ISA_GET_RD(w), ra = ISA_GET_RA(w), rb = ISA_GET_RB(w), rc = ISA_GET_RC(w);
    int32_t imm = ISA_GET_IMM(w);
    uint32_t uimm = (uint32_t)imm;

    if ((rd && !(use & ISA_USE_RD)) || (ra && !(use & ISA_USE_RA)) ||
        (rb && !(use & ISA_USE_RB)) || (rc && !(use & ISA_USE_RC)) ||
        (uimm && !(use & ISA_USE_IMM)))
        return ill;
    unsigned pair = isa_pair_fields(op);
    if (((pair & ISA_USE_RD) && (rd & 1)) || ((pair & ISA_USE_RA) && (ra & 1)) ||
        ((pair & ISA_USE_RB) && (rb & 1)) || ((pair & ISA_USE_RC) && (rc & 1)))
        return ill;
    if ((oi->flags & FL_QUAD) && (rd & 3))
        return ill;
    if ((oi->fmt == FMT_RC || oi->fmt == FMT_CR) && uimm >= CSR_COUNT)
        return ill;
    if (oi->fmt == FMT_I && !(oi->flags & FL_BRANCH) && uimm >= ISA_NZONES)
        return ill;

    isa_insn in = {
        .op = (uint8_t)op,
        .wtc = (uint8_t)(ISA_BARREL * oi->wcycles),
        .rd = (uint8_t)rd,
        .ra = (uint8_t)ra,
        .rb = (uint8_t)rb,
        .rc = (uint8_t)rc,
        .wcycles = oi->wcycles,
        .scycles = oi->scycles,
        .imm = imm,
        .target = UINT32_MAX,
    };
    if ((oi->fmt == FMT_I || oi->fmt == FMT_RL) && (oi->flags & FL_BRANCH) && uimm % 8 == 0)
        in.target = uimm / 8;
    return in;
}

uint64_t isa_encode(const isa_insn *in)
{
    return ISA_ENCODE(in->op, in->rd, in->ra, in->rb, in->rc, in->imm);
}

/* ---- program images ---- */

static uint64_t rd64(const uint8_t *p)
{
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--)
        w = w << 8 | p[i];
    return w;
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
    for (uint32_t i = 0; i < n; i++)
        code[i] = isa_decode_word(rd64(prog->image + (size_t)i * ISA_INSN_BYTES));

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
        why = "not an ipusim program (bad magic)";
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

/* ---- string building for disasm.c and doc.c ---- */

