/* asm_parse: the assembler's first step, source lines to statements.
 *
 * A line is labels, then at most one directive or instruction, then a comment. Operands are
 * checked here against the kinds the opcode's format lists (isa/formats.def): counts, source
 * forms, register ranges, even pairs, aligned quads, CSR and zone names; their expressions
 * are kept as nodes and evaluated later, in asm.c, once every label is placed. Left out:
 * macros, strings, .equ. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "isa/asm_int.h"

/* The source form an operand kind takes. */
static asm_opnd_kind source_form(isa_kind k)
{
    switch (k) {
    case ISA_K_REG:
    case ISA_K_PAIR:
    case ISA_K_QUAD: return O_REG;
    case ISA_K_CSR: return O_CSR;
    case ISA_K_MEM: return O_MEM;
    case ISA_K_MEMPI: return O_MEMPI;
    default: return O_EXPR; /* immediates, targets, entries; zones by number or by name */
    }
}

static asm_stmt *new_stmt(asm_unit *u, asm_stmt_kind kind, int line, int col)
{
    u->st = xgrow(u->st, &u->capst, u->nst + 1, sizeof *u->st);
    asm_stmt *s = &u->st[u->nst++];
    memset(s, 0, sizeof *s);
    s->kind = (uint8_t)kind;
    s->sect = (uint8_t)u->sect;
    s->line = line;
    s->col = col;
    s->expr = -1;
    return s;
}

static void add_item(asm_unit *u, int64_t v, int col)
{
    u->it = xgrow(u->it, &u->capit, u->nit + 1, sizeof *u->it);
    u->it[u->nit++] = (asm_item){v, col};
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
static int parse_mem(asm_parser *p, asm_operand *o)
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

static int parse_operand(asm_parser *p, asm_operand *o)
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
            char names[160] = "";
            for (unsigned r = 0; isa_csr_name(r); r++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s$%s",
                         r ? ", " : "", isa_csr_name(r));
            if (t.s[0] >= '0' && t.s[0] <= '9')
                asm_error(p->c, p->line, t.col,
                          "control registers are named, not numbered: `$%.*s` is none of %s",
                          (int)(t.len > 20 ? 20 : t.len), t.s, names);
            else
                asm_error(p->c, p->line, t.col, "unknown control register `$%.*s` (%s)",
                          (int)(t.len > 40 ? 40 : t.len), t.s, names);
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

/* A zone operand written as a name: resolve it (o becomes O_ZONE); 0, or -1 after an error.
 * Other expressions stay O_EXPR and are range-checked when evaluated (asm.c). */
static int resolve_zone(asm_unit *u, int line, asm_operand *o)
{
    const asm_expr *e = &u->c.nodes[o->expr];
    if (e->kind != E_SYM)
        return 0;
    o->kind = O_ZONE;
    o->value = isa_zone_lookup(e->name, e->len);
    if (o->value >= 0)
        return 0;
    char names[160] = "";
    for (unsigned z = 0; z < ISA_NZONES; z++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", z ? ", " : "",
                 isa_zone_name(z));
    asm_error(&u->c, line, o->col, "unknown sync zone `%.*s` (%s)",
              (int)(e->len > 40 ? 40 : e->len), e->name, names);
    return -1;
}

/* "add rd, ra, rb": an instruction's usage, for messages (made only when one is needed). */
typedef struct usage {
    char s[56];
} usage;

static usage usage_of(const isa_opinfo *oi)
{
    char sx[40];
    usage u;
    isa_fmt_syntax(oi->fmt, sx, sizeof sx);
    snprintf(u.s, sizeof u.s, "%s%s%s", oi->name, *sx ? " " : "", sx);
    return u;
}

/* Check operand o against the kind its format expects; 0, or -1 after an error. */
static int check_operand(asm_unit *u, int line, const isa_opinfo *oi, isa_kind want, asm_operand *o)
{
    if (o->kind != source_form(want)) {
        asm_error(&u->c, line, o->col, "`%s` expects %s here (%s)", oi->name, isa_kind_what(want),
                  usage_of(oi).s);
        return -1;
    }
    if (want == ISA_K_ZONE)
        return resolve_zone(u, line, o);
    if (want == ISA_K_PAIR && (o->reg & 1)) {
        asm_error(&u->c, line, o->col,
                  "`%s` needs an even register (the low half of a pair), not r%u", oi->name,
                  o->reg);
        return -1;
    }
    if (want == ISA_K_QUAD && (o->reg & 3)) {
        asm_error(&u->c, line, o->col,
                  "`%s` needs r0, r4, r8 or r12 (the first of four registers), not r%u", oi->name,
                  o->reg);
        return -1;
    }
    return 0;
}

/* The opcode of mnemonic s (len > 0 bytes), or OP_ILLEGAL: isa_lookup's, remembered. */
static isa_op lookup_op(asm_unit *u, const char *s, size_t len)
{
    uint32_t k = 0;
    for (size_t i = 0; i < len; i++)
        k = k * 31u + (unsigned char)s[i];
    size_t h = (k ^ k >> 10) & (ASM_OP_MEMO - 1); /* the ISA's frequent mnemonics apart */
    if (u->ops[h]) {
        const char *name = isa_info(u->ops[h] - 1u)->name;
        if (strncmp(name, s, len) == 0 && name[len] == '\0')
            return (isa_op)(u->ops[h] - 1u);
    }
    isa_op op = isa_lookup(s, len);
    if (op != OP_ILLEGAL)
        u->ops[h] = (uint16_t)(op + 1);
    return op;
}

static void parse_insn(asm_unit *u, asm_parser *p)
{
    asm_tok m = p->tok;
    isa_op op = lookup_op(u, m.s, m.len);
    if (op == OP_ILLEGAL) {
        asm_lex peek = p->lx;
        asm_tok next = asm_lex_next(&peek);
        if (next.kind == T_BAD && next.s == m.s + m.len) { /* "h\xc3\xa9": the byte, not `h` */
            p->tok = next;
            asm_expected(p, "an instruction");
            return;
        }
        asm_error(&u->c, p->line, m.col, "unknown mnemonic `%.*s`", (int)(m.len > 40 ? 40 : m.len),
                  m.s);
        return;
    }
    if (u->sect != SEC_TEXT) {
        asm_error(&u->c, p->line, m.col, "instruction outside .text");
        return;
    }
    if (u->layout_only) {
        new_stmt(u, S_INSN, p->line, m.col)->op = (uint16_t)op;
        p->lx.p = p->lx.end;
        p->tok = asm_lex_next(&p->lx); /* the end of the line */
        return;
    }
    const isa_opinfo *oi = isa_info(op);
    const isa_fmtinfo *fi = isa_fmt_info(oi->fmt);
    asm_operand ops[4];
    int n = 0;
    asm_advance(p);
    while (p->tok.kind != T_EOL) {
        if (p->tok.kind == T_BAD) { /* a stray byte, named as such */
            asm_expected(p, "an operand");
            return;
        }
        if (n == fi->n) {
            asm_error(&u->c, p->line, p->tok.col, "too many operands for `%s` (%s)", oi->name,
                      usage_of(oi).s);
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
        asm_expected(p, n == fi->n ? "end of line" : "`,`");
        return;
    }
    if (n != fi->n) {
        asm_error(&u->c, p->line, m.col, "`%s` takes %d operand%s (%s)", oi->name, fi->n,
                  fi->n == 1 ? "" : "s", usage_of(oi).s);
        return;
    }
    for (int i = 0; i < n; i++)
        if (check_operand(u, p->line, oi, (isa_kind)fi->opd[i].kind, &ops[i]))
            return;
    asm_stmt *s = new_stmt(u, S_INSN, p->line, m.col);
    s->op = (uint16_t)op;
    s->nopnd = (uint8_t)n;
    memcpy(s->opnd, ops, (size_t)n * sizeof *ops);
}

/* .float items: decimal or scientific numbers, inf, nan, with a sign. */
static void parse_floats(asm_unit *u, asm_parser *p, asm_stmt *s)
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
        float f = 0;
        int ok = 0;
        if (n > 0 && n < sizeof buf && !memchr(b, 0, n)) {
            char *endp;
            memcpy(buf, b, n);
            buf[n] = '\0';
            errno = 0;
            f = strtof(buf, &endp);
            ok = endp == buf + n && !(errno == ERANGE && isinf(f));
        }
        if (!ok) {
            asm_error(p->c, p->line, col, n ? "bad float `%.*s`" : "expected a float%.*s",
                      (int)(n > 40 ? 40 : n), b);
            return;
        }
        uint32_t bits;
        memcpy(&bits, &f, 4);
        add_item(u, bits, col);
        s->nargs++;
        asm_advance(p);
        if (!tok_is(&p->tok, ','))
            return;
    }
}

static void parse_directive(asm_unit *u, asm_parser *p)
{
    asm_tok d = p->tok;
    static const struct {
        const char *name;
        int kind;
    } dirs[] = {
        {".text", -1},       {".data", -2},         {".word", S_WORD},
        {".byte", S_BYTE},   {".float", S_FLOAT},   {".space", S_SPACE},
        {".align", S_ALIGN}, {".global", S_GLOBAL}, {".globl", S_GLOBAL},
    };
    int kind = -3;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (tok_eq(&d, dirs[i].name))
            kind = dirs[i].kind;
    if (kind == -3) {
        asm_error(&u->c, p->line, d.col, "unknown directive `%.*s`", (int)(d.len > 40 ? 40 : d.len),
                  d.s);
        return;
    }
    if (kind < 0) {
        u->sect = kind == -1 ? SEC_TEXT : SEC_DATA;
        asm_advance(p);
        return;
    }
    if (kind == S_GLOBAL) {
        asm_advance(p);
        if (p->tok.kind != T_IDENT || reg_number(p->tok.s, p->tok.len) >= 0) {
            asm_expected(p, "a label name");
            return;
        }
        asm_stmt *s = new_stmt(u, S_GLOBAL, p->line, p->tok.col);
        s->name = p->tok.s;
        s->len = p->tok.len;
        asm_advance(p);
        return;
    }
    asm_stmt *s = new_stmt(u, (asm_stmt_kind)kind, p->line, d.col);
    if (kind == S_FLOAT) {
        s->arg0 = u->nit;
        parse_floats(u, p, s);
        return;
    }
    asm_advance(p);
    if (kind == S_SPACE || kind == S_ALIGN) {
        s->ecol = p->tok.col;
        s->expr = asm_parse_expr(p);
        return;
    }
    s->arg0 = u->nit; /* .word / .byte */
    for (;;) {
        int col = p->tok.col;
        int e = asm_parse_expr(p);
        if (e < 0)
            return;
        add_item(u, e, col);
        s->nargs++;
        if (!tok_is(&p->tok, ','))
            return;
        asm_advance(p);
    }
}

void asm_parse_line(asm_unit *u, int line, const char *b, const char *end)
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
        if (p.tok.len > ASM_MAX_NAME) {
            asm_error(&u->c, line, p.tok.col, "label name is %zu bytes long (at most %d)",
                      p.tok.len, ASM_MAX_NAME);
            return;
        }
        asm_stmt *s = new_stmt(u, S_LABEL, line, p.tok.col);
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
