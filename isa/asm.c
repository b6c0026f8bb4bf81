/* asm: the ipusim assembler (syntax in isa/asm.h and docs/isa.md).
 *
 * Three steps over the source. Parse (asm_parse.c): each line becomes statements (labels,
 * instructions, directives) whose operands keep their expressions unevaluated. Layout:
 * statements get section offsets in order and labels get defined; text sits at 0, data after
 * it aligned to 16 (or to its largest .align). Emit: expressions are evaluated with every
 * label known and the bytes are written. Errors do not stop any step (each is recorded by
 * asm_error, asm_expr.c), so every error in the file is reported, sorted by position. The
 * image is then decoded (isa_prog_decode), which checks rpt bodies. Left out: macros,
 * includes, local numeric labels, .equ, relocations. */
#include "isa/asm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/file.h"
#include "isa/asm_int.h"
#include "isa/isa_int.h"

#define MAX_SIZE (1u << 24)  /* largest image, 16 MiB (an Mk2 tile has 624 KiB) */
#define MAX_ALIGN (1u << 16) /* largest .align */

/* ---- layout: section offsets and label addresses ---- */

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static void layout(asm_unit *u, uint64_t size[2], uint64_t *data_align)
{
    asm_ctx *c = &u->c;
    int big = 0;
    asm_stmt *last_text = NULL;
    *data_align = 16;
    for (size_t i = 0; i < u->nst; i++) {
        asm_stmt *s = &u->st[i];
        uint64_t *o = &size[s->sect], before = *o;
        asm_val v;
        char vb[48];
        s->off = *o;
        switch ((asm_stmt_kind)s->kind) {
        case S_LABEL: {
            int k = asm_sym_find(c, s->name, s->len);
            if (k >= 0) {
                asm_error(c, s->line, s->col, "duplicate label `%.*s` (first defined on line %d)",
                          (int)(s->len > 64 ? 64 : s->len), s->name, c->syms[k].line);
                break;
            }
            k = asm_sym_add(c, s->name, s->len);
            c->syms[k].sect = s->sect;
            c->syms[k].off = *o;
            c->syms[k].line = s->line;
            break;
        }
        case S_INSN:
            if (*o % ISA_INSN_BYTES) { /* report, then realign so that errors do not cascade */
                asm_error(c, s->line, s->col,
                          "instruction at 0x%llx is not 8-aligned (.word in .text comes in pairs)",
                          (unsigned long long)*o);
                s->off = *o = align_up(*o, ISA_INSN_BYTES);
            }
            *o += ISA_INSN_BYTES;
            break;
        case S_WORD:
        case S_FLOAT: *o += 4 * s->nargs; break;
        case S_BYTE: *o += s->nargs; break;
        case S_SPACE:
            if (s->expr >= 0 && asm_eval(c, s->expr, 1, (int64_t)*o, &v) == 0) {
                if (v < 0 || v > MAX_SIZE)
                    asm_error(c, s->line, s->ecol, "`.space` needs a size from 0 to %u, not %s",
                              MAX_SIZE, asm_val_str(v, vb));
                else
                    *o += (uint64_t)v;
            }
            break;
        case S_ALIGN:
            if (s->expr >= 0 && asm_eval(c, s->expr, 1, (int64_t)*o, &v) == 0) {
                if (v < 1 || v > MAX_ALIGN || (v & (v - 1)))
                    asm_error(c, s->line, s->ecol,
                              "`.align` needs a power of two from 1 to %u, not %s", MAX_ALIGN,
                              asm_val_str(v, vb));
                else
                    *o = align_up(*o, (uint64_t)v);
                if (s->sect == SEC_DATA && v > (int64_t)*data_align && v <= MAX_ALIGN &&
                    !(v & (v - 1)))
                    *data_align = (uint64_t)v; /* data starts aligned to its largest .align */
            }
            break;
        case S_GLOBAL: break;
        }
        if (s->sect == SEC_TEXT && *o != before)
            last_text = s;
        if (*o > MAX_SIZE && !big) {
            asm_error(c, s->line, s->col, "program larger than %u bytes", MAX_SIZE);
            big = 1;
        }
    }
    if (size[SEC_TEXT] % ISA_INSN_BYTES && last_text)
        asm_error(c, last_text->line, last_text->col,
                  "text ends at 0x%llx, not a multiple of 8 (.word in .text comes in pairs)",
                  (unsigned long long)size[SEC_TEXT]);
    if (!big && align_up(size[SEC_TEXT], *data_align) + size[SEC_DATA] > MAX_SIZE && u->nst)
        asm_error(c, u->st[u->nst - 1].line, 1, "program larger than %u bytes", MAX_SIZE);
}

/* ---- emission ---- */

static void put32(uint8_t *image, uint64_t addr, uint32_t v)
{
    if (!image)
        return;
    for (int i = 0; i < 4; i++)
        image[addr + (uint64_t)i] = (uint8_t)(v >> (8 * i));
}

static int fits32(asm_val v)
{
    return v >= -(int64_t)2147483648 && v <= (int64_t)UINT32_MAX;
}

/* Evaluate an immediate; 0 and *imm set, or -1 after an error. */
static int eval_imm(asm_ctx *c, int expr, int line, int col, int64_t dot, uint32_t *imm)
{
    asm_val v;
    char vb[48];
    if (asm_eval(c, expr, 0, dot, &v))
        return -1;
    if (!fits32(v)) {
        asm_error(c, line, col, "value %s does not fit in 32 bits", asm_val_str(v, vb));
        return -1;
    }
    *imm = (uint32_t)v;
    return 0;
}

/* Evaluate an index operand (a zone given as a number, a weight slot) that must lie in
 * [0, n); 0 and *imm set, or -1 after an error naming `what`. */
static int eval_index(asm_ctx *c, const asm_operand *o, int line, int64_t dot, int64_t n,
                      const char *what, uint32_t *imm)
{
    asm_val v;
    char vb[48];
    if (asm_eval(c, o->expr, 0, dot, &v))
        return -1;
    if (v < 0 || v >= n) {
        asm_error(c, line, o->col, "%s %s does not exist (0..%lld)", what, asm_val_str(v, vb),
                  (long long)n - 1);
        return -1;
    }
    *imm = (uint32_t)v;
    return 0;
}

/* Encode one instruction: each operand fills the field its format names. */
static void emit_insn(asm_unit *u, const asm_stmt *s, uint8_t *image)
{
    asm_ctx *c = &u->c;
    const isa_fmtinfo *fi = isa_fmt_info(isa_info(s->op)->fmt);
    unsigned f[ISA_F_NO] = {0};
    uint32_t imm = 0;
    int bad = 0;
    int64_t dot = (int64_t)s->off;
    for (int i = 0; i < s->nopnd; i++) {
        const asm_operand *o = &s->opnd[i];
        isa_operand want = fi->opd[i];
        switch ((asm_opnd_kind)o->kind) {
        case O_REG:
        case O_MEM:
        case O_MEMPI:
            f[want.field] = o->reg;
            if (o->kind != O_REG && o->expr >= 0)
                bad |= eval_imm(c, o->expr, s->line, o->col, dot, &imm) != 0;
            break;
        case O_CSR:
        case O_ZONE: imm = (uint32_t)o->value; break;
        case O_EXPR:
            if (want.kind == ISA_K_ZONE)
                bad |= eval_index(c, o, s->line, dot, ISA_NZONES, "sync zone", &imm) != 0;
            else if (want.kind == ISA_K_CWSLOT)
                bad |= eval_index(c, o, s->line, dot, ISA_CW_SLOTS, "weight slot", &imm) != 0;
            else
                bad |= eval_imm(c, o->expr, s->line, o->col, dot, &imm) != 0;
            break;
        }
    }
    if (bad || !image)
        return;
    uint64_t w = ISA_ENCODE(s->op, f[ISA_F_RD], f[ISA_F_RA], f[ISA_F_RB], f[ISA_F_RC], imm);
    put32(image, s->off, (uint32_t)w);
    put32(image, s->off + 4, (uint32_t)(w >> 32));
}

static void emit_items(asm_unit *u, const asm_stmt *s, uint8_t *image, uint64_t base)
{
    asm_ctx *c = &u->c;
    for (size_t j = 0; j < s->nargs; j++) {
        const asm_item *it = &u->it[s->arg0 + j];
        if (s->kind == S_FLOAT) {
            put32(image, base + s->off + 4 * j, (uint32_t)it->v);
            continue;
        }
        int64_t dot = (int64_t)(base + s->off + (s->kind == S_WORD ? 4 * j : j));
        asm_val v;
        char vb[48];
        if (asm_eval(c, (int)it->v, 0, dot, &v))
            continue;
        if (s->kind == S_WORD) {
            if (!fits32(v))
                asm_error(c, s->line, it->col, "value %s does not fit in 32 bits",
                          asm_val_str(v, vb));
            else
                put32(image, (uint64_t)dot, (uint32_t)v);
        } else if (v < -128 || v > 255) {
            asm_error(c, s->line, it->col, "value %s does not fit in a byte", asm_val_str(v, vb));
        } else if (image) {
            image[dot] = (uint8_t)v;
        }
    }
}

static void emit(asm_unit *u, uint8_t *image, int *slot_stmt)
{
    asm_ctx *c = &u->c;
    for (size_t i = 0; i < u->nst; i++) {
        const asm_stmt *s = &u->st[i];
        uint64_t base = s->sect == SEC_DATA ? c->data_addr : 0;
        if (s->sect == SEC_TEXT && slot_stmt && s->kind >= S_INSN && s->kind <= S_FLOAT) {
            /* which statement each 8-byte text slot starts in, for decode errors */
            uint64_t n = s->kind == S_INSN ? 8 : s->kind == S_BYTE ? s->nargs : 4 * s->nargs;
            for (uint64_t a = s->off / 8; a * 8 < s->off + n; a++)
                if (slot_stmt[a] < 0)
                    slot_stmt[a] = (int)i;
        }
        if (s->kind == S_INSN) {
            emit_insn(u, s, image);
        } else if (s->kind == S_WORD || s->kind == S_BYTE || s->kind == S_FLOAT) {
            emit_items(u, s, image, base);
        } else if (s->kind == S_GLOBAL) {
            int k = asm_sym_find(c, s->name, s->len);
            if (k < 0)
                asm_error(c, s->line, s->col, "`.global` names an undefined label `%.*s`",
                          (int)(s->len > 64 ? 64 : s->len), s->name);
            else
                c->syms[k].global = 1;
        }
    }
}

/* ---- putting it together ---- */

static int cmp_diag(const void *pa, const void *pb)
{
    const asm_diag *a = pa, *b = pb;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void line_text(const asm_ctx *c, int line, const char **s, size_t *len)
{
    size_t b = c->line_off[line - 1], e = b;
    while (e < c->srclen && c->src[e] != '\n')
        e++;
    if (e > b && c->src[e - 1] == '\r')
        e--;
    *s = c->src + b;
    *len = e - b;
}

enum {
    MAX_SHOWN = 100,  /* errors shown; the rest are counted */
    SHOW_LINE = 160,  /* bytes of a long source line shown around the caret */
    SHOW_BEFORE = 80, /* of which before it */
};

/* One error: its heading, its source line (a window of a long one) and the caret. */
static void report_one(const asm_ctx *c, const asm_diag *d, txt *b)
{
    const char *ls;
    size_t ll;
    line_text(c, d->line, &ls, &ll);
    size_t at = (size_t)d->col - 1, from = 0, n = ll;
    if (ll > SHOW_LINE) {
        size_t a = at < ll ? at : ll;
        from = a > SHOW_BEFORE ? a - SHOW_BEFORE : 0;
        n = ll - from < SHOW_LINE ? ll - from : SHOW_LINE;
    }
    txt pad = {0};
    txt_printf(b, "%s:%d:%d: error: ", c->file, d->line, d->col);
    txt_show(b, d->msg, strlen(d->msg), NULL, 0);
    txt_printf(b, "\n%s", from ? "..." : "");
    if (from)
        txt_printf(&pad, "   ");
    txt_show(b, ls + from, n, &pad, at - from);
    if (from + n < ll)
        txt_printf(b, "...");
    for (size_t k = from + n; k < at; k++) /* a column past the end of the line */
        txt_printf(&pad, " ");
    txt_printf(b, "\n%s^", pad.len ? txt_str(&pad) : "");
    txt_free(&pad);
}

/* Every error into e, sorted by position: the first MAX_SHOWN (fewer if the message would
 * not fit in ERR_MSG_MAX), then how many more there are. */
static int report(asm_ctx *c, err *e)
{
    qsort(c->diags, c->ndiags, sizeof *c->diags, cmp_diag);
    txt b = {0}, one = {0};
    size_t shown = 0;
    for (; shown < c->ndiags && shown < MAX_SHOWN; shown++) {
        txt_free(&one);
        report_one(c, &c->diags[shown], &one);
        if (b.len + 1 + one.len + 40 >= ERR_MSG_MAX) /* room for "and N more errors" */
            break;
        txt_printf(&b, "%s%s", shown ? "\n" : "", txt_str(&one));
    }
    txt_free(&one);
    if (shown < c->ndiags)
        txt_printf(&b, "\nand %zu more error%s", c->ndiags - shown,
                   c->ndiags - shown == 1 ? "" : "s");
    char *msg = txt_take(&b);
    err_set(e, ERR_ASM, "%s", msg);
    free(msg);
    return ERR_ASM;
}

static void split_lines(asm_ctx *c)
{
    size_t cap = 0;
    for (size_t i = 0; i < c->srclen || i == 0;) {
        c->line_off = xgrow(c->line_off, &cap, c->nlines + 1, sizeof *c->line_off);
        c->line_off[c->nlines++] = i;
        const char *nl = i < c->srclen ? memchr(c->src + i, '\n', c->srclen - i) : NULL;
        if (!nl)
            break;
        i = (size_t)(nl - c->src) + 1;
    }
}

char *asm_strip(const char *src, size_t len, size_t *outlen)
{
    char *out = xmalloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(src + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - src) : len;
        asm_lex lx = {src + i, src + i, src + end};
        asm_tok t = asm_lex_next(&lx);
        const char *from = t.s, *to = t.s; /* the first token's start, the last one's end */
        for (; t.kind != T_EOL; t = asm_lex_next(&lx))
            to = lx.p;
        memcpy(out + n, from, (size_t)(to - from));
        n += (size_t)(to - from);
        if (nl)
            out[n++] = '\n';
        i = end + 1;
    }
    out[n] = '\0';
    *outlen = n;
    return out;
}

/* Fill prog from the laid-out and emitted unit; ERR_OK or an error already reported. */
static int build_prog(asm_unit *u, isa_prog *out, uint8_t *image, uint64_t text, uint64_t total,
                      const int *slot_stmt)
{
    asm_ctx *c = &u->c;
    out->image = image;
    out->text_size = (uint32_t)text;
    out->data_addr = c->data_addr;
    out->size = (uint32_t)total;
    int m = asm_sym_find(c, "main", 4);
    out->entry = m >= 0 ? (uint32_t)asm_sym_value(c, m, 0) : 0;
    out->syms = xcalloc(c->nsyms, sizeof *out->syms);
    for (size_t i = 0; i < c->nsyms; i++) {
        isa_sym *s = &out->syms[out->nsyms];
        s->name = xstrndup(c->syms[i].name, c->syms[i].len);
        s->addr = (uint32_t)asm_sym_value(c, (int)i, 0);
        s->global = c->syms[i].global;
        out->nsyms++;
    }
    /* in address order (labels at one address in the order written): the order a listing
     * shows them in, so that disassembly re-assembles to the same symbol table */
    for (size_t i = 1; i < out->nsyms; i++)
        for (size_t j = i; j > 0 && out->syms[j - 1].addr > out->syms[j].addr; j--) {
            isa_sym tmp = out->syms[j];
            out->syms[j] = out->syms[j - 1];
            out->syms[j - 1] = tmp;
        }
    uint32_t pc;
    err tmp;
    err_clear(&tmp);
    if (isa_prog_decode_at(out, &pc, &tmp) != ERR_OK) {
        const asm_stmt *s =
            pc != UINT32_MAX && slot_stmt[pc / 8] >= 0 ? &u->st[slot_stmt[pc / 8]] : NULL;
        asm_error(c, s ? s->line : 1, s ? s->col : 1, "%s", tmp.msg);
        return -1;
    }
    return 0;
}

/* Parse every line of u's source and lay it out: the sections' sizes and data's alignment. */
static void parse_and_layout(asm_unit *u, uint64_t size[2], uint64_t *data_align)
{
    asm_ctx *c = &u->c;
    split_lines(c);
    for (size_t i = 0; i < c->nlines; i++) {
        size_t b = c->line_off[i], end = i + 1 < c->nlines ? c->line_off[i + 1] - 1 : c->srclen;
        if (end == c->srclen && end > b && c->src[end - 1] == '\n')
            end--;
        asm_parse_line(u, (int)i + 1, c->src + b, c->src + end);
    }
    layout(u, size, data_align);
}

static void unit_free(asm_unit *u)
{
    free(u->c.line_off);
    free(u->c.diags);
    free(u->c.nodes);
    free(u->c.syms);
    free(u->c.hash);
    free(u->st);
    free(u->it);
}

int asm_symbol_address(const char *name, const char *src, size_t len, const char *sym,
                       uint32_t *addr, err *e)
{
    asm_unit u = {
        .c = {.file = name, .src = src, .srclen = len}, .sect = SEC_TEXT, .layout_only = 1};
    asm_ctx *c = &u.c;
    uint64_t size[2] = {0, 0}, data_align = 16;
    parse_and_layout(&u, size, &data_align);
    c->data_addr = (uint32_t)align_up(size[SEC_TEXT], data_align);
    int k = asm_sym_find(c, sym, strlen(sym));
    int status = ERR_OK;
    if (c->ndiags)
        status = report(c, e);
    else
        *addr = k >= 0 ? (uint32_t)asm_sym_value(c, k, 0) : UINT32_MAX;
    unit_free(&u);
    return status;
}

/* asm_assemble; need_text: a source without instructions is an error (a file given to run),
 * not an empty program. */
static int assemble(const char *name, const char *src, size_t len, int need_text, isa_prog *out,
                    err *e)
{
    memset(out, 0, sizeof *out);
    asm_unit u = {.c = {.file = name, .src = src, .srclen = len}, .sect = SEC_TEXT};
    asm_ctx *c = &u.c;
    uint8_t *image = NULL;
    int *slot_stmt = NULL;
    uint64_t size[2] = {0, 0}, data_align = 16;
    parse_and_layout(&u, size, &data_align);
    uint64_t text = size[SEC_TEXT], total = 0;
    int fits = align_up(text, data_align) + size[SEC_DATA] <= MAX_SIZE;
    if (fits) {
        c->data_addr = (uint32_t)align_up(text, data_align);
        total = c->data_addr + size[SEC_DATA];
        image = xcalloc(total, 1);
        slot_stmt = xmalloc((text / 8 + 1) * sizeof *slot_stmt);
        memset(slot_stmt, 0xff, (text / 8 + 1) * sizeof *slot_stmt);
    }
    emit(&u, fits ? image : NULL, slot_stmt);
    if (need_text && text == 0 && c->ndiags == 0) /* the pc would start outside the text */
        asm_error(c, 1, 1,
                  "no instructions (the program is empty, or only comments, labels "
                  "and data)");
    if (c->ndiags == 0) {
        build_prog(&u, out, image, text, total, slot_stmt); /* its errors land in c->diags */
        image = NULL;                                       /* owned by out now */
    }
    free(slot_stmt);
    free(image);
    int status = ERR_OK;
    if (c->ndiags) {
        status = report(c, e);
        isa_prog_free(out);
    }
    unit_free(&u);
    return status;
}

/* A name that says the file is source (.s, .S, .asm): assembled whatever it holds, so that a
 * stray byte in it gets its line and column. */
static int named_source(const char *path)
{
    size_t n = strlen(path);
    return (n > 2 && (strcmp(path + n - 2, ".s") == 0 || strcmp(path + n - 2, ".S") == 0)) ||
           (n > 4 && strcmp(path + n - 4, ".asm") == 0);
}

/* Text, as far as its first 4 KiB show: no NUL byte and no control byte other than tab, line
 * feed, form feed and carriage return (what an image, an object file or a compressed file
 * holds early on, and assembly source never does). */
static int looks_like_text(const char *buf, size_t n)
{
    for (size_t i = 0; i < n && i < 4096; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if ((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\f' && ch != '\r') || ch == 0x7f)
            return 0;
    }
    return 1;
}

int asm_assemble(const char *name, const char *src, size_t len, isa_prog *out, err *e)
{
    return assemble(name, src, len, 0, out, e);
}

int asm_assemble_file(const char *path, isa_prog *out, err *e)
{
    memset(out, 0, sizeof *out);
    size_t n = 0;
    char *buf = file_read_text(path, (size_t)1 << 30, &n, e);
    if (!buf)
        return ERR_INPUT;
    /* A file that starts like an image (isa_prog_save: the magic "IPUSIMX1", then five
     * little-endian u32s, which hold zero bytes) is not assembled as source: most of the magic
     * in place and a NUL byte in those 28 bytes, which source text never has. */
    static const char magic[8] = "IPUSIMX1";
    int same = 0;
    for (size_t i = 0; i < 8 && i < n; i++)
        same += buf[i] == magic[i];
    if (n >= 28 && same >= 5 && memchr(buf, 0, 28)) {
        free(buf);
        return err_set(e, ERR_INPUT, "%s: %s", path,
                       same == 8 ? "an ipusim image, not assembly source"
                                 : "not an ipusim image (bad magic)");
    }
    if (!named_source(path) && !looks_like_text(buf, n)) {
        free(buf);
        return err_set(e, ERR_INPUT,
                       "%s: not an ipusim program image (no IPUSIMX1 magic) nor assembly text",
                       path);
    }
    int st = assemble(path, buf, n, 1, out, e);
    free(buf);
    return st;
}
