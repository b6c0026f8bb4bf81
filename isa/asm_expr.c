/* asm_expr: the assembler's bottom layer: its error list, tokens, constant expressions and
 * symbol table. asm_parse.c and asm.c call down into it; it calls neither of them.
 *
 * Errors are recorded (position and text) and shown later, sorted, by asm.c. Tokens are read
 * one line at a time. Expressions follow C precedence (| ^ & << >> + - * / %, unary - ~ +,
 * parentheses) over 128-bit integers checked for overflow; labels and `.` are their operands.
 * An expression is parsed once into nodes and evaluated when its value is needed, so forward
 * references work. Left out: floating-point expressions, strings, macros. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "isa/asm_int.h"

enum { MAX_DEPTH = 200 }; /* nesting of parentheses and height of an expression tree */

/* ---- diagnostics: every error is kept, with its position; asm.c sorts and shows them ---- */

void asm_error(asm_ctx *c, int line, int col, const char *fmt, ...)
{
    c->diags = xgrow(c->diags, &c->capdiags, c->ndiags + 1, sizeof *c->diags);
    asm_diag *d = &c->diags[c->ndiags];
    d->line = line;
    d->col = col;
    d->seq = c->ndiags++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
}

/* ---- tokens ---- */

/* Each byte's classes, one table made by the compiler (the lexer looks every byte up once):
 * blank, a name's first byte, a name's byte, a one-byte operator. */
enum { C_BLANK = 1, C_START = 2, C_NAME = 4, C_PUNCT = 8 };
#define CLASS(c)                                                                                   \
    ((c) == ' ' || (c) == '\t' || (c) == '\r' || (c) == '\v' || (c) == '\f' ? C_BLANK              \
     : ((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || (c) == '_' || (c) == '.'        \
         ? C_START | C_NAME                                                                        \
     : (c) >= '0' && (c) <= '9' ? C_NAME                                                           \
     : (c) == '+' || (c) == '-' || (c) == '*' || (c) == '/' || (c) == '%' || (c) == '&' ||         \
             (c) == '|' || (c) == '^' || (c) == '~' || (c) == '(' || (c) == ')' || (c) == '[' ||   \
             (c) == ']' || (c) == ',' || (c) == ':'                                                \
         ? C_PUNCT                                                                                 \
         : 0)
#define CLASS4(c) CLASS(c), CLASS((c) + 1), CLASS((c) + 2), CLASS((c) + 3)
#define CLASS16(c) CLASS4(c), CLASS4((c) + 4), CLASS4((c) + 8), CLASS4((c) + 12)
#define CLASS64(c) CLASS16(c), CLASS16((c) + 16), CLASS16((c) + 32), CLASS16((c) + 48)
static const unsigned char char_class[256] = {CLASS64(0), CLASS64(64), CLASS64(128), CLASS64(192)};

static int is_ident_start(int ch)
{
    return char_class[ch & 0xff] & C_START;
}

static int is_ident(int ch)
{
    return char_class[ch & 0xff] & C_NAME;
}

static int digit_value(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return 99;
}

static asm_tok lex_number(asm_lex *lx, asm_tok t)
{
    const char *p = lx->p;
    unsigned base = 10;
    if (p + 1 < lx->end && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        base = 16, p += 2;
    else if (p + 1 < lx->end && p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        base = 2, p += 2;
    uint64_t v = 0;
    int ndig = 0, big = 0;
    while (p < lx->end && (unsigned)digit_value((unsigned char)*p) < base) {
        unsigned d = (unsigned)digit_value((unsigned char)*p);
        if (v > (UINT64_MAX - d) / base)
            big = 1;
        v = v * base + d;
        ndig++, p++;
    }
    while (p < lx->end && is_ident((unsigned char)*p))
        p++, ndig = -1;
    t.len = (size_t)(p - t.s);
    lx->p = p;
    if (ndig <= 0) {
        t.kind = T_BAD;
        t.msg = "malformed number";
    } else if (big || v > (uint64_t)INT64_MAX) {
        t.kind = T_BAD;
        t.msg = "number too large";
    } else {
        t.kind = T_NUM;
        t.num = (int64_t)v;
    }
    return t;
}

static asm_tok lex_char(asm_lex *lx, asm_tok t)
{
    const char *p = lx->p + 1;
    int v = -1;
    if (p < lx->end && *p == '\\' && p + 1 < lx->end) {
        switch (p[1]) {
        case 'n': v = '\n'; break;
        case 't': v = '\t'; break;
        case 'r': v = '\r'; break;
        case '0': v = 0; break;
        case '\\': v = '\\'; break;
        case '\'': v = '\''; break;
        default: break;
        }
        p += 2;
    } else if (p < lx->end && *p != '\'') {
        v = (unsigned char)*p++;
    }
    if (v < 0 || p >= lx->end || *p != '\'') {
        lx->p = p < lx->end ? p + 1 : lx->end;
        t.kind = T_BAD;
        t.msg = "malformed character constant";
        t.len = (size_t)(lx->p - t.s);
        return t;
    }
    lx->p = p + 1;
    t.kind = T_NUM;
    t.num = v;
    t.len = (size_t)(lx->p - t.s);
    return t;
}

asm_tok asm_lex_next(asm_lex *lx)
{
    while (lx->p < lx->end && char_class[(unsigned char)*lx->p] & C_BLANK)
        lx->p++;
    asm_tok t = {.kind = T_EOL, .s = lx->p, .col = (int)(lx->p - lx->line) + 1};
    if (lx->p >= lx->end || *lx->p == '#' || *lx->p == ';') {
        lx->p = lx->end;
        return t;
    }
    int ch = (unsigned char)*lx->p;
    int next = lx->p + 1 < lx->end ? (unsigned char)lx->p[1] : 0;
    if (is_ident_start(ch) || (ch == '$' && is_ident(next))) { /* $7 too, for its message */
        const char *p = lx->p + (ch == '$');
        while (p < lx->end && is_ident((unsigned char)*p))
            p++;
        t.kind = ch == '$' ? T_CSR : T_IDENT;
        t.s = lx->p + (ch == '$');
        t.len = (size_t)(p - t.s);
        lx->p = p;
        return t;
    }
    if (ch >= '0' && ch <= '9')
        return lex_number(lx, t);
    if (ch == '\'')
        return lex_char(lx, t);
    t.kind = T_PUNCT;
    t.len = 1;
    if ((ch == '<' && next == '<') || (ch == '>' && next == '>') || (ch == '+' && next == '=')) {
        t.punct = ch == '<' ? P_SHL : ch == '>' ? P_SHR : P_ADDEQ;
        t.len = 2;
    } else if (char_class[ch] & C_PUNCT) {
        t.punct = ch;
    } else {
        t.kind = T_BAD;
        t.msg = NULL; /* asm_expected names the byte */
        if (ch == 0xef && next == 0xbb && lx->p + 2 < lx->end && (unsigned char)lx->p[2] == 0xbf) {
            t.msg = "unexpected UTF-8 byte order mark (save the file without it)";
            t.len = 3;
        }
    }
    lx->p += t.len;
    return t;
}

/* ---- the parser's helpers ---- */

void asm_advance(asm_parser *p)
{
    p->tok = asm_lex_next(&p->lx);
}

void asm_expected(asm_parser *p, const char *what)
{
    const asm_tok *t = &p->tok;
    unsigned ch = t->len ? (unsigned char)t->s[0] : 0;
    if (t->kind == T_BAD && t->msg)
        asm_error(p->c, p->line, t->col, "%s", t->msg);
    else if (t->kind == T_BAD && ch >= 0x80)
        asm_error(p->c, p->line, t->col, "unexpected byte 0x%02x (not ASCII)", ch);
    else if (t->kind == T_BAD && (ch < 0x20 || ch == 0x7f))
        asm_error(p->c, p->line, t->col, "unexpected byte 0x%02x (a control character)", ch);
    else if (t->kind == T_BAD)
        asm_error(p->c, p->line, t->col, "unexpected character `%c`", (char)ch);
    else if (t->kind == T_EOL)
        asm_error(p->c, p->line, t->col, "expected %s, found end of line", what);
    else
        asm_error(p->c, p->line, t->col, "expected %s, found `%.*s`", what,
                  (int)(t->len > 40 ? 40 : t->len), t->s);
}

/* ---- expression nodes ---- */

static int new_node(asm_parser *p, asm_expr e)
{
    asm_ctx *c = p->c;
    if (e.depth > MAX_DEPTH) {
        asm_error(c, e.line, e.col, "expression too complex");
        return -1;
    }
    c->nodes = xgrow(c->nodes, &c->capnodes, c->nnodes + 1, sizeof *c->nodes);
    c->nodes[c->nnodes] = e;
    return (int)c->nnodes++;
}

static int parse_binary(asm_parser *p, int level, int nest);

static int parse_unary(asm_parser *p, int nest)
{
    asm_tok t = p->tok;
    if (nest > MAX_DEPTH) {
        asm_error(p->c, p->line, t.col, "expression too deeply nested");
        return -1;
    }
    asm_expr e = {.line = p->line, .col = t.col, .a = -1, .b = -1, .depth = 1};
    if (t.kind == T_PUNCT && (t.punct == '-' || t.punct == '~' || t.punct == '+')) {
        asm_advance(p);
        int a = parse_unary(p, nest + 1);
        if (a < 0 || t.punct == '+')
            return a;
        e.kind = t.punct == '-' ? E_NEG : E_NOT;
        e.a = a;
        e.depth = (uint16_t)(p->c->nodes[a].depth + 1);
        return new_node(p, e);
    }
    if (t.kind == T_PUNCT && t.punct == '(') {
        asm_advance(p);
        int a = parse_binary(p, 0, nest + 1);
        if (a < 0)
            return -1;
        if (p->tok.kind != T_PUNCT || p->tok.punct != ')') {
            asm_expected(p, "`)`");
            return -1;
        }
        asm_advance(p);
        return a;
    }
    if (t.kind == T_NUM) {
        e.kind = E_NUM;
        e.val = t.num;
    } else if (t.kind == T_IDENT && t.len == 1 && t.s[0] == '.') {
        e.kind = E_DOT;
    } else if (t.kind == T_IDENT) {
        e.kind = E_SYM;
        e.name = t.s;
        e.len = t.len;
    } else {
        asm_expected(p, "an expression");
        return -1;
    }
    asm_advance(p);
    return new_node(p, e);
}

/* Binary operators by precedence level, lowest first. */
static const int levels[][4] = {
    {'|'}, {'^'}, {'&'}, {P_SHL, P_SHR}, {'+', '-'}, {'*', '/', '%'},
};
enum { NLEVELS = sizeof levels / sizeof levels[0] };

/* The level of a binary operator token, or -1. */
static int level_of(const asm_tok *t)
{
    for (int level = 0; t->kind == T_PUNCT && level < NLEVELS; level++)
        for (int i = 0; i < 4 && levels[level][i]; i++)
            if (levels[level][i] == t->punct)
                return level;
    return -1;
}

/* An operand then any operators of `level` or above, left to right (precedence climbing: an
 * operator's right side takes only the operators above it). */
static int parse_binary(asm_parser *p, int level, int nest)
{
    int a = parse_unary(p, nest);
    for (int l; a >= 0 && (l = level_of(&p->tok)) >= level;) {
        asm_tok op = p->tok;
        asm_advance(p);
        int b = parse_binary(p, l + 1, nest);
        if (b < 0)
            return -1;
        uint16_t da = p->c->nodes[a].depth, db = p->c->nodes[b].depth;
        asm_expr e = {.kind = E_BIN,
                      .op = op.punct,
                      .a = a,
                      .b = b,
                      .line = p->line,
                      .col = op.col,
                      .depth = (uint16_t)((da > db ? da : db) + 1)};
        a = new_node(p, e);
    }
    return a;
}

int asm_parse_expr(asm_parser *p)
{
    return parse_binary(p, 0, 0);
}

/* ---- evaluation (128-bit, every step checked for overflow) ---- */

const char *asm_val_str(asm_val v, char *buf)
{
    char tmp[48];
    int n = 0, neg = v < 0;
    do {
        int d = (int)(v % 10);
        tmp[n++] = (char)('0' + (d < 0 ? -d : d));
        v /= 10;
    } while (v);
    char *p = buf;
    if (neg)
        *p++ = '-';
    while (n)
        *p++ = tmp[--n];
    *p = '\0';
    return buf;
}

static int overflow(asm_ctx *c, const asm_expr *e)
{
    asm_error(c, e->line, e->col, "value overflows (more than 127 bits)");
    return -1;
}

int asm_eval(asm_ctx *c, int n, int layout, int64_t dot, asm_val *out)
{
    const asm_expr *e = &c->nodes[n];
    asm_val a = 0, b = 0;
    switch ((asm_expr_kind)e->kind) {
    case E_NUM: *out = e->val; return 0;
    case E_DOT: *out = dot; return 0;
    case E_SYM: {
        int i = asm_sym_find(c, e->name, e->len);
        if (i < 0) {
            if (layout)
                asm_error(c, e->line, e->col,
                          "`%.*s` must be a label defined before this line (.space/.align)",
                          (int)(e->len > 64 ? 64 : e->len), e->name);
            else
                asm_error(c, e->line, e->col, "undefined label `%.*s`",
                          (int)(e->len > 64 ? 64 : e->len), e->name);
            return -1;
        }
        *out = asm_sym_value(c, i, layout);
        return 0;
    }
    case E_NEG:
    case E_NOT:
        if (asm_eval(c, e->a, layout, dot, &a))
            return -1;
        if (e->kind == E_NOT)
            *out = ~a;
        else if (__builtin_sub_overflow((asm_val)0, a, out))
            return overflow(c, e);
        return 0;
    case E_BIN: break;
    }
    if (asm_eval(c, e->a, layout, dot, &a) | asm_eval(c, e->b, layout, dot, &b))
        return -1;
    switch (e->op) {
    case '|': *out = a | b; break;
    case '^': *out = a ^ b; break;
    case '&': *out = a & b; break;
    case '+':
        if (__builtin_add_overflow(a, b, out))
            return overflow(c, e);
        break;
    case '-':
        if (__builtin_sub_overflow(a, b, out))
            return overflow(c, e);
        break;
    case '*':
        if (__builtin_mul_overflow(a, b, out))
            return overflow(c, e);
        break;
    case '/':
    case '%':
        if (b == 0) {
            asm_error(c, e->line, e->col, "division by zero");
            return -1;
        }
        if (b == -1 && a == -(asm_val)(~(unsigned __int128)0 >> 1) - 1) /* the least / -1 */
            return overflow(c, e);
        *out = e->op == '/' ? a / b : a % b;
        break;
    case P_SHL:
    case P_SHR:
        if (b < 0 || b > 63) {
            char buf[48];
            asm_error(c, e->line, e->col, "shift count %s out of range (0..63)",
                      asm_val_str(b, buf));
            return -1;
        }
        if (e->op == P_SHR)
            *out = a >> b;
        else if (__builtin_mul_overflow(a, (asm_val)1 << b, out))
            return overflow(c, e);
        break;
    default: *out = 0; break;
    }
    return 0;
}

/* ---- symbols: an open-addressing hash over the array of definitions ---- */

static size_t hash_name(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return (size_t)h;
}

int asm_sym_find(const asm_ctx *c, const char *name, size_t len)
{
    if (!c->hcap)
        return -1;
    for (size_t h = hash_name(name, len) & (c->hcap - 1);; h = (h + 1) & (c->hcap - 1)) {
        int i = c->hash[h];
        if (i < 0)
            return -1;
        if (c->syms[i].len == len && memcmp(c->syms[i].name, name, len) == 0)
            return i;
    }
}

static void hash_insert(int *hash, size_t hcap, const asm_sym *s, int i)
{
    size_t h = hash_name(s->name, s->len) & (hcap - 1);
    while (hash[h] >= 0)
        h = (h + 1) & (hcap - 1);
    hash[h] = i;
}

int asm_sym_add(asm_ctx *c, const char *name, size_t len)
{
    if ((c->nsyms + 1) * 2 > c->hcap) {
        size_t hcap = c->hcap ? c->hcap * 2 : 64;
        int *hash = xmalloc(hcap * sizeof *hash);
        memset(hash, 0xff, hcap * sizeof *hash);
        for (size_t i = 0; i < c->nsyms; i++)
            hash_insert(hash, hcap, &c->syms[i], (int)i);
        free(c->hash);
        c->hash = hash;
        c->hcap = hcap;
    }
    c->syms = xgrow(c->syms, &c->capsyms, c->nsyms + 1, sizeof *c->syms);
    asm_sym *s = &c->syms[c->nsyms];
    memset(s, 0, sizeof *s);
    s->name = name;
    s->len = len;
    hash_insert(c->hash, c->hcap, s, (int)c->nsyms);
    return (int)c->nsyms++;
}

int64_t asm_sym_value(const asm_ctx *c, int i, int layout)
{
    const asm_sym *s = &c->syms[i];
    if (s->sect == SEC_DATA && !layout)
        return (int64_t)(c->data_addr + s->off);
    return (int64_t)s->off;
}
