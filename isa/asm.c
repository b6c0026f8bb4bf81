/* asm: the ipusim assembler (syntax in isa/asm.h and docs/isa.md).
 *
 * Three steps over the source. Parse: each line becomes statements (labels, instructions,
 * directives) whose operands keep their expressions unevaluated. Layout: statements get
 * section offsets in order and labels get defined; text sits at 0, data after it aligned to
 * 16 (or to its largest .align). Emit: expressions are evaluated with every label known and
 * the bytes are written. Errors do not stop any step, so every error in the file is
 * reported, sorted by position. The image is then decoded (isa_prog_decode), which checks
 * rpt bodies. Left out: macros, includes, local numeric labels, .equ, relocations. */
#include "isa/asm.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/asm_int.h"
#include "isa/isa_int.h"

#define MAX_SIZE (1u << 24)  /* largest image, 16 MiB (an Mk2 tile has 624 KiB) */
#define MAX_ALIGN (1u << 16) /* largest .align */

typedef enum { S_LABEL, S_INSN, S_WORD, S_BYTE, S_FLOAT, S_SPACE, S_ALIGN, S_GLOBAL } stmt_kind;
typedef enum { O_REG, O_CSR, O_ZONE, O_EXPR, O_MEM, O_MEMPI } opnd_kind;
enum { F_RD, F_RA, F_RB, F_RC, F_IMM }; /* bit numbers of ISA_USE_* */

typedef struct operand {
    uint8_t kind;
    uint8_t reg;  /* O_REG, and the base register of O_MEM / O_MEMPI */
    int value;    /* O_CSR, O_ZONE */
    int expr;     /* O_EXPR, O_MEM (-1: no offset), O_MEMPI */
    int col;
} operand;

typedef struct item {
    int64_t v; /* .word/.byte: expression node; .float: the bits */
    int col;
} item;

typedef struct stmt {
    uint8_t kind, sect;
    uint16_t op;
    uint8_t nopnd;
    int line, col;
    operand opnd[4];
    size_t arg0, nargs; /* items of .word/.byte/.float */
    int expr;           /* .space/.align, and its column */
    int ecol;
    const char *name;   /* label, .global */
    size_t len;
    uint64_t off;       /* offset in its section, from layout */
} stmt;

typedef struct unit {
    asm_ctx c;
    stmt *st;
    size_t nst, capst;
    item *it;
    size_t nit, capit;
    int sect; /* current section while parsing */
} unit;

/* The operands each format takes, and the field each one fills. */
static const struct {
    uint8_t n, kind[4], field[4];
} shapes[FMT_COUNT] = {
    [FMT_NONE] = {0, {0}, {0}},
    [FMT_R] = {1, {O_REG}, {F_RA}},
    [FMT_RR] = {2, {O_REG, O_REG}, {F_RD, F_RA}},
    [FMT_RRR] = {3, {O_REG, O_REG, O_REG}, {F_RD, F_RA, F_RB}},
    [FMT_RRRR] = {4, {O_REG, O_REG, O_REG, O_REG}, {F_RD, F_RA, F_RB, F_RC}},
    [FMT_RI] = {2, {O_REG, O_EXPR}, {F_RD, F_IMM}},
    [FMT_RRI] = {3, {O_REG, O_REG, O_EXPR}, {F_RD, F_RA, F_IMM}},
    [FMT_MEM] = {2, {O_REG, O_MEM}, {F_RD, F_RA}},
    [FMT_MEMPI] = {2, {O_REG, O_MEMPI}, {F_RD, F_RA}},
    [FMT_I] = {1, {O_EXPR}, {F_IMM}},
    [FMT_RL] = {2, {O_REG, O_EXPR}, {F_RA, F_IMM}},
    [FMT_IR] = {2, {O_EXPR, O_REG}, {F_IMM, F_RA}},
    [FMT_RC] = {2, {O_REG, O_CSR}, {F_RD, F_IMM}},
    [FMT_CR] = {2, {O_CSR, O_REG}, {F_IMM, F_RA}},
};

static const char *const kind_names[] = {
    [O_REG] = "a register",
    [O_CSR] = "a control register ($tile, $scratch, ...)",
    [O_ZONE] = "a sync zone",
    [O_EXPR] = "an immediate",
    [O_MEM] = "a memory operand [ra+imm]",
    [O_MEMPI] = "a post-increment operand [ra]+=imm",
};

void asm_error(asm_ctx *c, int line, int col, const char *fmt, ...)
{
    if (!asm_grow((void **)&c->diags, &c->capdiags, c->ndiags + 1, sizeof *c->diags)) {
        c->oom = 1;
        return;
    }
    asm_diag *d = &c->diags[c->ndiags];
    d->line = line;
    d->col = col;
    d->seq = c->ndiags++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
}

static stmt *new_stmt(unit *u, stmt_kind kind, int line, int col)
{
    if (!asm_grow((void **)&u->st, &u->capst, u->nst + 1, sizeof *u->st)) {
        u->c.oom = 1;
        return NULL;
    }
    stmt *s = &u->st[u->nst++];
    memset(s, 0, sizeof *s);
    s->kind = (uint8_t)kind;
    s->sect = (uint8_t)u->sect;
    s->line = line;
    s->col = col;
    s->expr = -1;
    return s;
}

static int add_item(unit *u, int64_t v, int col)
{
    if (!asm_grow((void **)&u->it, &u->capit, u->nit + 1, sizeof *u->it)) {
        u->c.oom = 1;
        return 0;
    }
    u->it[u->nit++] = (item){v, col};
    return 1;
}

static int tok_is(const asm_tok *t, int punct)
{
    return t->kind == T_PUNCT && t->punct == punct;
}

static int tok_eq(const asm_tok *t, const char *s)
{
    return t->kind == T_IDENT && t->len == strlen(s) && memcmp(t->s, s, t->len) == 0;
}

/* Register number of a register name (r0..r15, lr), 16 for r16 and beyond, -1 otherwise. */
static int reg_number(const char *s, size_t len)
{
    if (len == 2 && s[0] == 'l' && s[1] == 'r')
        return ISA_LR;
    if (len < 2 || s[0] != 'r')
        return -1;
    int v = 0;
    for (size_t i = 1; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v < ISA_NREGS ? v * 10 + (s[i] - '0') : ISA_NREGS;
    }
    return v < ISA_NREGS ? v : ISA_NREGS;
}

static int parse_reg(asm_parser *p, uint8_t *reg)
{
    int r = p->tok.kind == T_IDENT ? reg_number(p->tok.s, p->tok.len) : -1;
    if (r < 0) {
        asm_expected(p, "a register");
        return -1;
    }
    if (r >= ISA_NREGS) {
        asm_error(p->c, p->line, p->tok.col, "register `%.*s` out of range (r0..r15)",
                  (int)(p->tok.len > 20 ? 20 : p->tok.len), p->tok.s);
        return -1;
    }
    *reg = (uint8_t)r;
    asm_advance(p);
    return 0;
}

/* [ra], [ra+e], [ra-e], [ra]+=e */
static int parse_mem(asm_parser *p, operand *o)
{
    asm_advance(p);
    if (parse_reg(p, &o->reg))
        return -1;
    o->kind = O_MEM;
    o->expr = -1;
    if (tok_is(&p->tok, ']')) {
        asm_advance(p);
        if (!tok_is(&p->tok, P_ADDEQ))
            return 0;
        asm_advance(p);
        o->kind = O_MEMPI;
        return (o->expr = asm_parse_expr(p)) < 0 ? -1 : 0;
    }
    if (!tok_is(&p->tok, '+') && !tok_is(&p->tok, '-')) {
        asm_expected(p, "`]`, `+` or `-`");
        return -1;
    }
    if ((o->expr = asm_parse_expr(p)) < 0) /* the sign is the expression's unary operator */
        return -1;
    if (!tok_is(&p->tok, ']')) {
        asm_expected(p, "`]`");
        return -1;
    }
    asm_advance(p);
    return 0;
}

static int parse_operand(asm_parser *p, operand *o)
{
    asm_tok t = p->tok;
    o->col = t.col;
    if (t.kind == T_IDENT && reg_number(t.s, t.len) >= 0) {
        o->kind = O_REG;
        return parse_reg(p, &o->reg);
    }
    if (t.kind == T_CSR) {
        o->kind = O_CSR;
        o->value = isa_csr_lookup(t.s, t.len);
        if (o->value < 0) {
            asm_error(p->c, p->line, t.col, "unknown control register `$%.*s`",
                      (int)(t.len > 40 ? 40 : t.len), t.s);
            return -1;
        }
        asm_advance(p);
        return 0;
    }
    if (tok_is(&t, '['))
        return parse_mem(p, o);
    o->kind = O_EXPR;
    return (o->expr = asm_parse_expr(p)) < 0 ? -1 : 0;
}

static void parse_insn(unit *u, asm_parser *p)
{
    asm_tok m = p->tok;
    isa_op op = isa_lookup(m.s, m.len);
    if (op == OP_ILLEGAL) {
        asm_error(&u->c, p->line, m.col, "unknown mnemonic `%.*s`", (int)(m.len > 40 ? 40 : m.len),
                  m.s);
        return;
    }
    if (u->sect != SEC_TEXT) {
        asm_error(&u->c, p->line, m.col, "instruction outside .text");
        return;
    }
    const isa_opinfo *oi = isa_info(op);
    const char *sx = isa_fmt_syntax(oi->fmt);
    char use[48]; /* "add rd, ra, rb", for messages */
    snprintf(use, sizeof use, "%s%s%s", oi->name, *sx ? " " : "", sx);
    operand ops[4];
    int n = 0;
    asm_advance(p);
    while (p->tok.kind != T_EOL) {
        if (n == 4 || n == shapes[oi->fmt].n) {
            asm_error(&u->c, p->line, p->tok.col, "too many operands for `%s` (%s)", oi->name,
                      use);
            return;
        }
        if (parse_operand(p, &ops[n]))
            return;
        n++;
        if (!tok_is(&p->tok, ','))
            break;
        asm_advance(p);
        if (p->tok.kind == T_EOL) {
            asm_expected(p, "an operand");
            return;
        }
    }
    if (p->tok.kind != T_EOL) {
        asm_expected(p, n == shapes[oi->fmt].n ? "end of line" : "`,`");
        return;
    }
    if (n != shapes[oi->fmt].n) {
        asm_error(&u->c, p->line, m.col, "`%s` takes %d operand%s (%s)", oi->name,
                  shapes[oi->fmt].n, shapes[oi->fmt].n == 1 ? "" : "s", use);
        return;
    }
    unsigned pair = isa_pair_fields(op);
    int zone_op = oi->fmt == FMT_I && !(oi->flags & FL_BRANCH);
    for (int i = 0; i < n; i++) {
        operand *o = &ops[i];
        if (zone_op && o->kind == O_EXPR && u->c.nodes[o->expr].kind == E_SYM) {
            const asm_expr *e = &u->c.nodes[o->expr];
            o->kind = O_ZONE;
            o->value = isa_zone_lookup(e->name, e->len);
            if (o->value < 0) {
                asm_error(&u->c, p->line, o->col, "unknown sync zone `%.*s` (internal, external)",
                          (int)(e->len > 40 ? 40 : e->len), e->name);
                return;
            }
            continue;
        }
        if (o->kind != shapes[oi->fmt].kind[i]) {
            asm_error(&u->c, p->line, o->col, "`%s` expects %s here (%s)", oi->name,
                      kind_names[shapes[oi->fmt].kind[i]], use);
            return;
        }
        if (o->kind == O_REG && (pair >> shapes[oi->fmt].field[i] & 1) && (o->reg & 1)) {
            asm_error(&u->c, p->line, o->col,
                      "`%s` needs an even register (the low half of a pair), not r%u", oi->name,
                      o->reg);
            return;
        }
    }
    stmt *s = new_stmt(u, S_INSN, p->line, m.col);
    if (!s)
        return;
    s->op = (uint16_t)op;
    s->nopnd = (uint8_t)n;
    memcpy(s->opnd, ops, (size_t)n * sizeof *ops);
}

/* .float items: decimal or scientific numbers, inf, nan, with a sign. */
static void parse_floats(unit *u, asm_parser *p, stmt *s)
{
    asm_lex *lx = &p->lx;
    for (;;) {
        while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\r'))
            lx->p++;
        const char *b = lx->p;
        int col = (int)(b - lx->line) + 1;
        while (lx->p < lx->end && !strchr(", \t\r;#", *lx->p))
            lx->p++;
        char buf[64];
        size_t n = (size_t)(lx->p - b);
        char *endp = buf;
        float f = 0;
        if (n > 0 && n < sizeof buf && !memchr(b, 0, n)) {
            memcpy(buf, b, n);
            buf[n] = '\0';
            errno = 0;
            f = strtof(buf, &endp);
        }
        if (n == 0 || endp != buf + n || (errno == ERANGE && isinf(f))) {
            asm_error(p->c, p->line, col, n ? "bad float `%.*s`" : "expected a float%.*s",
                      (int)(n > 40 ? 40 : n), b);
            return;
        }
        uint32_t bits;
        memcpy(&bits, &f, 4);
        if (!add_item(u, bits, col))
            return;
        s->nargs++;
        asm_advance(p);
        if (!tok_is(&p->tok, ','))
            return;
    }
}

static void parse_directive(unit *u, asm_parser *p)
{
    asm_tok d = p->tok;
    static const struct {
        const char *name;
        int kind;
    } dirs[] = {
        {".text", -1},       {".data", -2},       {".word", S_WORD},    {".byte", S_BYTE},
        {".float", S_FLOAT}, {".space", S_SPACE}, {".align", S_ALIGN}, {".global", S_GLOBAL},
        {".globl", S_GLOBAL},
    };
    int kind = -3;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (tok_eq(&d, dirs[i].name))
            kind = dirs[i].kind;
    if (kind == -3) {
        asm_error(&u->c, p->line, d.col, "unknown directive `%.*s`",
                  (int)(d.len > 40 ? 40 : d.len), d.s);
        return;
    }
    if (kind < 0) {
        u->sect = kind == -1 ? SEC_TEXT : SEC_DATA;
        asm_advance(p);
        return;
    }
    stmt *s = new_stmt(u, (stmt_kind)kind, p->line, d.col);
    if (!s)
        return;
    if (kind == S_FLOAT) {
        s->arg0 = u->nit;
        parse_floats(u, p, s);
        return;
    }
    asm_advance(p);
    if (kind == S_GLOBAL) {
        if (p->tok.kind != T_IDENT || reg_number(p->tok.s, p->tok.len) >= 0) {
            asm_expected(p, "a label name");
            return;
        }
        s->name = p->tok.s;
        s->len = p->tok.len;
        s->col = p->tok.col;
        asm_advance(p);
        return;
    }
    if (kind == S_SPACE || kind == S_ALIGN) {
        s->ecol = p->tok.col;
        s->expr = asm_parse_expr(p);
        return;
    }
    s->arg0 = u->nit; /* .word / .byte */
    for (;;) {
        int col = p->tok.col;
        int e = asm_parse_expr(p);
        if (e < 0 || !add_item(u, e, col))
            return;
        s->nargs++;
        if (!tok_is(&p->tok, ','))
            return;
        asm_advance(p);
    }
}

static void parse_line(unit *u, int line, const char *b, const char *end)
{
    asm_parser p = {.c = &u->c, .line = line, .lx = {b, b, end}};
    size_t nd = u->c.ndiags;
    asm_advance(&p);
    while (p.tok.kind == T_IDENT) { /* labels */
        asm_lex peek = p.lx;
        asm_tok colon = asm_lex_next(&peek);
        if (!tok_is(&colon, ':'))
            break;
        if (reg_number(p.tok.s, p.tok.len) >= 0 || (p.tok.len == 1 && p.tok.s[0] == '.')) {
            asm_error(&u->c, line, p.tok.col, "`%.*s` cannot be a label name",
                      (int)(p.tok.len > 20 ? 20 : p.tok.len), p.tok.s);
            return;
        }
        stmt *s = new_stmt(u, S_LABEL, line, p.tok.col);
        if (!s)
            return;
        s->name = p.tok.s;
        s->len = p.tok.len;
        p.lx = peek;
        asm_advance(&p);
    }
    if (p.tok.kind == T_EOL)
        return;
    if (p.tok.kind != T_IDENT || (p.tok.len == 1 && p.tok.s[0] == '.'))
        asm_expected(&p, "a label, directive or instruction");
    else if (p.tok.s[0] == '.')
        parse_directive(u, &p);
    else
        parse_insn(u, &p);
    if (u->c.ndiags == nd && p.tok.kind != T_EOL)
        asm_expected(&p, "end of line");
}

/* ---- layout: section offsets and label addresses ---- */

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static void layout(unit *u, uint64_t size[2], uint64_t *data_align)
{
    asm_ctx *c = &u->c;
    int big = 0;
    stmt *last_text = NULL;
    *data_align = 16;
    for (size_t i = 0; i < u->nst; i++) {
        stmt *s = &u->st[i];
        uint64_t *o = &size[s->sect], before = *o;
        int64_t v;
        s->off = *o;
        switch ((stmt_kind)s->kind) {
        case S_LABEL: {
            int k = asm_sym_find(c, s->name, s->len);
            if (k >= 0) {
                asm_error(c, s->line, s->col, "duplicate label `%.*s` (first defined on line %d)",
                          (int)(s->len > 64 ? 64 : s->len), s->name, c->syms[k].line);
                break;
            }
            if ((k = asm_sym_add(c, s->name, s->len)) < 0) {
                c->oom = 1;
                break;
            }
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
        case S_FLOAT:
            *o += 4 * s->nargs;
            break;
        case S_BYTE:
            *o += s->nargs;
            break;
        case S_SPACE:
            if (s->expr >= 0 && asm_eval(c, s->expr, 1, (int64_t)*o, &v) == 0) {
                if (v < 0 || v > MAX_SIZE)
                    asm_error(c, s->line, s->ecol,
                              "`.space` needs a size from 0 to %u, not %lld", MAX_SIZE,
                              (long long)v);
                else
                    *o += (uint64_t)v;
            }
            break;
        case S_ALIGN:
            if (s->expr >= 0 && asm_eval(c, s->expr, 1, (int64_t)*o, &v) == 0) {
                if (v < 1 || v > MAX_ALIGN || (v & (v - 1)))
                    asm_error(c, s->line, s->ecol,
                              "`.align` needs a power of two from 1 to %u, not %lld", MAX_ALIGN,
                              (long long)v);
                else
                    *o = align_up(*o, (uint64_t)v);
                if (s->sect == SEC_DATA && v > (int64_t)*data_align && v <= MAX_ALIGN &&
                    !(v & (v - 1)))
                    *data_align = (uint64_t)v; /* data starts aligned to its largest .align */
            }
            break;
        case S_GLOBAL:
            break;
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

static int fits32(int64_t v)
{
    return v >= -(int64_t)2147483648 && v <= (int64_t)UINT32_MAX;
}

/* Evaluate an immediate; 0 and *imm set, or -1 after an error. */
static int eval_imm(asm_ctx *c, int expr, int line, int col, int64_t dot, uint32_t *imm)
{
    int64_t v;
    if (asm_eval(c, expr, 0, dot, &v))
        return -1;
    if (!fits32(v)) {
        asm_error(c, line, col, "value %lld does not fit in 32 bits", (long long)v);
        return -1;
    }
    *imm = (uint32_t)v;
    return 0;
}

static void emit_insn(unit *u, const stmt *s, uint8_t *image)
{
    asm_ctx *c = &u->c;
    const isa_opinfo *oi = isa_info(s->op);
    unsigned f[5] = {0};
    uint32_t imm = 0;
    int bad = 0;
    for (int i = 0; i < s->nopnd; i++) {
        const operand *o = &s->opnd[i];
        int64_t v;
        switch ((opnd_kind)o->kind) {
        case O_REG:
            f[shapes[oi->fmt].field[i]] = o->reg;
            break;
        case O_CSR:
        case O_ZONE:
            imm = (uint32_t)o->value;
            break;
        case O_EXPR:
            if (oi->fmt == FMT_I && !(oi->flags & FL_BRANCH)) {
                if (asm_eval(c, o->expr, 0, (int64_t)s->off, &v)) {
                    bad = 1;
                } else if (v < 0 || v >= ISA_NZONES) {
                    asm_error(c, s->line, o->col, "sync zone %lld out of range (0..%d)",
                              (long long)v, ISA_NZONES - 1);
                    bad = 1;
                } else {
                    imm = (uint32_t)v;
                }
            } else {
                bad |= eval_imm(c, o->expr, s->line, o->col, (int64_t)s->off, &imm) != 0;
            }
            break;
        case O_MEM:
        case O_MEMPI:
            f[F_RA] = o->reg;
            if (o->expr >= 0)
                bad |= eval_imm(c, o->expr, s->line, o->col, (int64_t)s->off, &imm) != 0;
            break;
        }
    }
    if (bad || !image)
        return;
    uint64_t w = ISA_ENCODE(s->op, f[F_RD], f[F_RA], f[F_RB], f[F_RC], imm);
    put32(image, s->off, (uint32_t)w);
    put32(image, s->off + 4, (uint32_t)(w >> 32));
}

static void emit_items(unit *u, const stmt *s, uint8_t *image, uint64_t base)
{
    asm_ctx *c = &u->c;
    for (size_t j = 0; j < s->nargs; j++) {
        const item *it = &u->it[s->arg0 + j];
        if (s->kind == S_FLOAT) {
            put32(image, base + s->off + 4 * j, (uint32_t)it->v);
            continue;
        }
        int64_t dot = (int64_t)(base + s->off + (s->kind == S_WORD ? 4 * j : j)), v;
        if (asm_eval(c, (int)it->v, 0, dot, &v))
            continue;
        if (s->kind == S_WORD) {
            if (!fits32(v))
                asm_error(c, s->line, it->col, "value %lld does not fit in 32 bits", (long long)v);
            else
                put32(image, (uint64_t)dot, (uint32_t)v);
        } else if (v < -128 || v > 255) {
            asm_error(c, s->line, it->col, "value %lld does not fit in a byte", (long long)v);
        } else if (image) {
            image[dot] = (uint8_t)v;
        }
    }
}

static void emit(unit *u, uint8_t *image, int *slot_stmt)
{
    asm_ctx *c = &u->c;
    for (size_t i = 0; i < u->nst; i++) {
        const stmt *s = &u->st[i];
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

static int report(asm_ctx *c, err *e)
{
    if (c->oom)
        return err_set(e, ERR_ASM, "%s: out of memory", c->file);
    qsort(c->diags, c->ndiags, sizeof *c->diags, cmp_diag);
    isa_buf b = {0};
    for (size_t i = 0; i < c->ndiags && b.len < ERR_MSG_MAX; i++) {
        const asm_diag *d = &c->diags[i];
        const char *ls;
        size_t ll;
        line_text(c, d->line, &ls, &ll);
        isa_buf_printf(&b, "%s%s:%d:%d: error: %s\n%.*s\n", i ? "\n" : "", c->file, d->line,
                       d->col, d->msg, (int)ll, ls);
        for (int k = 0; k + 1 < d->col && b.len < ERR_MSG_MAX; k++)
            isa_buf_printf(&b, "%c", (size_t)k < ll && ls[k] == '\t' ? '\t' : ' ');
        isa_buf_printf(&b, "^");
    }
    char *msg = isa_buf_take(&b);
    err_set(e, ERR_ASM, "%s", msg ? msg : "out of memory");
    free(msg);
    return ERR_ASM;
}

static int split_lines(asm_ctx *c)
{
    size_t cap = 0;
    for (size_t i = 0; i <= c->srclen; i++) {
        if (i == c->srclen && i > 0 && c->src[i - 1] == '\n')
            break;
        if (i == 0 || c->src[i - 1] == '\n') {
            if (!asm_grow((void **)&c->line_off, &cap, c->nlines + 1, sizeof *c->line_off))
                return 0;
            c->line_off[c->nlines++] = i;
        }
    }
    return 1;
}

/* Fill prog from the laid-out and emitted unit; ERR_OK or an error already reported. */
static int build_prog(unit *u, isa_prog *out, uint8_t *image, uint64_t text, uint64_t total,
                      const int *slot_stmt)
{
    asm_ctx *c = &u->c;
    out->image = image;
    out->text_size = (uint32_t)text;
    out->data_addr = c->data_addr;
    out->size = (uint32_t)total;
    int m = asm_sym_find(c, "main", 4);
    out->entry = m >= 0 ? (uint32_t)asm_sym_value(c, m, 0) : 0;
    out->syms = calloc(c->nsyms ? c->nsyms : 1, sizeof *out->syms);
    if (!out->syms)
        return c->oom = 1, -1;
    for (size_t i = 0; i < c->nsyms; i++) {
        isa_sym *s = &out->syms[out->nsyms];
        s->name = strndup(c->syms[i].name, c->syms[i].len);
        if (!s->name)
            return c->oom = 1, -1;
        s->addr = (uint32_t)asm_sym_value(c, (int)i, 0);
        s->global = c->syms[i].global;
        out->nsyms++;
    }
    uint32_t pc;
    err tmp;
    err_clear(&tmp);
    if (isa_prog_decode_at(out, &pc, &tmp) != ERR_OK) {
        const stmt *s = pc != UINT32_MAX && slot_stmt[pc / 8] >= 0 ? &u->st[slot_stmt[pc / 8]]
                                                                    : NULL;
        asm_error(c, s ? s->line : 1, s ? s->col : 1, "%s", tmp.msg);
        return -1;
    }
    return 0;
}

int asm_assemble(const char *name, const char *src, size_t len, isa_prog *out, err *e)
{
    memset(out, 0, sizeof *out);
    unit u = {.c = {.file = name, .src = src, .srclen = len}, .sect = SEC_TEXT};
    asm_ctx *c = &u.c;
    uint8_t *image = NULL;
    int *slot_stmt = NULL;
    if (!split_lines(c)) {
        c->oom = 1;
        goto done;
    }
    for (size_t i = 0; i < c->nlines && !c->oom; i++) {
        size_t b = c->line_off[i], end = b;
        while (end < len && src[end] != '\n')
            end++;
        parse_line(&u, (int)i + 1, src + b, src + end);
    }

    uint64_t size[2] = {0, 0}, data_align = 16;
    if (!c->oom)
        layout(&u, size, &data_align);
    uint64_t text = size[SEC_TEXT], total = 0;
    int fits = !c->oom && align_up(text, data_align) + size[SEC_DATA] <= MAX_SIZE;
    if (fits) {
        c->data_addr = (uint32_t)align_up(text, data_align);
        total = c->data_addr + size[SEC_DATA];
        image = calloc(total ? total : 1, 1);
        slot_stmt = malloc((text / 8 + 1) * sizeof *slot_stmt);
        if (!image || !slot_stmt)
            c->oom = 1;
        else
            memset(slot_stmt, 0xff, (text / 8 + 1) * sizeof *slot_stmt);
    }
    if (!c->oom)
        emit(&u, fits ? image : NULL, slot_stmt);
    if (!c->oom && c->ndiags == 0) {
        int st = build_prog(&u, out, image, text, total, slot_stmt);
        image = NULL; /* owned by out now */
        if (st == 0)
            goto done;
    }
done:
    free(slot_stmt);
    free(image);
    int status = ERR_OK;
    if (c->oom || c->ndiags) {
        status = report(c, e);
        isa_prog_free(out);
    }
    free(c->line_off);
    free(c->diags);
    free(c->nodes);
    free(c->syms);
    free(c->hash);
    free(u.st);
    free(u.it);
    return status;
}

int asm_assemble_file(const char *path, isa_prog *out, err *e)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(e, ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = cap < ((size_t)1 << 30) ? realloc(buf, cap * 2) : NULL;
        if (!nb) {
            free(buf);
            buf = NULL;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return err_set(e, ERR_INPUT, "%s: cannot read", path);
    }
    int st = asm_assemble(path, buf, n, out, e);
    free(buf);
    return st;
}
