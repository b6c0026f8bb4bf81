/* asm_int: the assembler's private state, shared by its three files, which call in one
 * direction: asm.c (layout, emission, showing the errors) -> asm_parse.c (lines to
 * statements) -> asm_expr.c (the error list, tokens, constant expressions, symbols). State is
 * passed down (asm_ctx, asm_unit), results come back; no file calls one above it.
 * Not part of the public API. */
#ifndef IPUSIM_ASM_INT_H
#define IPUSIM_ASM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "isa/asm.h"

/* ---- tokens (one source line at a time) ---- */
typedef enum asm_tok_kind {
    T_EOL,   /* end of line, or a comment */
    T_IDENT, /* name, directive, register, or `.` alone */
    T_NUM,   /* integer or character literal */
    T_CSR,   /* $name (s/len without the $) */
    T_PUNCT, /* punct: a character, or P_SHL / P_SHR / P_ADDEQ */
    T_BAD,   /* lexical error; msg says why */
} asm_tok_kind;

enum { P_SHL = 256, P_SHR, P_ADDEQ };

typedef struct asm_tok {
    asm_tok_kind kind;
    const char *s; /* token text */
    size_t len;
    int col; /* 1-based byte column */
    int punct;
    int64_t num;
    const char *msg;
} asm_tok;

typedef struct asm_lex {
    const char *line; /* first byte of the line */
    const char *p;    /* next byte to read */
    const char *end;  /* one past the last byte of the line (the '\n' is not included) */
} asm_lex;

asm_tok asm_lex_next(asm_lex *lx);

/* ---- constant expressions: nodes in one growing array, referred to by index ---- */
typedef enum asm_expr_kind { E_NUM, E_SYM, E_DOT, E_NEG, E_NOT, E_BIN } asm_expr_kind;

typedef struct asm_expr {
    uint8_t kind;
    uint16_t depth;   /* height of the tree, bounded so evaluation cannot overflow the stack */
    int op;           /* E_BIN: the operator (a punct code) */
    int a, b;         /* operands (node indices) */
    int64_t val;      /* E_NUM */
    const char *name; /* E_SYM */
    size_t len;
    int line, col; /* for messages */
} asm_expr;

/* ---- symbols ---- */
enum { SEC_TEXT, SEC_DATA };
enum { ASM_MAX_NAME = 0xffff }; /* longest label: an image stores a name's length in 16 bits */

typedef struct asm_sym {
    const char *name; /* points into the source */
    size_t len;
    uint8_t sect;
    int global;
    uint64_t off; /* offset in its section */
    int line;     /* where it is defined */
} asm_sym;

typedef struct asm_diag {
    int line, col;
    size_t seq;
    char msg[240];
} asm_diag;

/* The whole assembler state for one source file. */
typedef struct asm_ctx {
    const char *file;
    const char *src;
    size_t srclen;
    size_t *line_off; /* start offset of each line (1-based lines: line_off[line - 1]) */
    size_t nlines;

    asm_diag *diags;
    size_t ndiags, capdiags;

    asm_expr *nodes;
    size_t nnodes, capnodes;

    asm_sym *syms;
    size_t nsyms, capsyms;
    int *hash; /* open addressing over syms, -1 = empty; capacity hcap (a power of two) */
    size_t hcap;

    uint32_t data_addr; /* known once layout is done */
} asm_ctx;

/* Record an error at line:col (1-based); asm.c sorts and shows them all at the end. */
void asm_error(asm_ctx *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The parser's view of one line: the lexer and the current token. */
typedef struct asm_parser {
    asm_ctx *c;
    int line;
    asm_lex lx;
    asm_tok tok;
} asm_parser;

void asm_advance(asm_parser *p);
/* Report "expected <what>" at the current token (or the lexer's own message). */
void asm_expected(asm_parser *p, const char *what);
/* Parse a constant expression starting at the current token; returns its node index, or -1
 * after reporting an error. */
int asm_parse_expr(asm_parser *p);

/* A constant's value while it is evaluated: 128 bits, so that a 64-bit result that
 * overflowed (1<<63, INT64_MAX*INT64_MAX) is reported as its true value rather than wrapped. */
__extension__ typedef __int128 asm_val;

/* v in decimal, into buf (at least 48 bytes); returns buf. */
const char *asm_val_str(asm_val v, char *buf);

/* Evaluate node n. layout != 0: symbols defined so far only, with section offsets (the value
 * of .space and .align); otherwise every symbol, as an absolute address. `dot` is the value
 * of `.`. Returns 0, or -1 after reporting an error (a step whose value overflows 128 bits
 * included); the caller checks the range it needs. */
int asm_eval(asm_ctx *c, int n, int layout, int64_t dot, asm_val *out);

/* Symbol table. */
int asm_sym_find(const asm_ctx *c, const char *name, size_t len); /* index or -1 */
int asm_sym_add(asm_ctx *c, const char *name, size_t len);        /* its index */
int64_t asm_sym_value(const asm_ctx *c, int i, int layout);

/* ---- statements (asm_parse.c makes them, asm.c lays them out and emits them) ---- */
typedef enum { S_LABEL, S_INSN, S_WORD, S_BYTE, S_FLOAT, S_SPACE, S_ALIGN, S_GLOBAL } asm_stmt_kind;
/* What an operand looked like in the source; the format's operand kinds (isa/formats.def)
 * say which of these each position takes. */
typedef enum { O_REG, O_CSR, O_ZONE, O_EXPR, O_MEM, O_MEMPI } asm_opnd_kind;

typedef struct asm_operand {
    uint8_t kind;
    uint8_t reg; /* O_REG, and the base register of O_MEM / O_MEMPI */
    int value;   /* O_CSR, O_ZONE */
    int expr;    /* O_EXPR, O_MEM (-1: no offset), O_MEMPI */
    int col;
} asm_operand;

typedef struct asm_item {
    int64_t v; /* .word/.byte: expression node; .float: the bits */
    int col;
} asm_item;

typedef struct asm_stmt {
    uint8_t kind, sect;
    uint16_t op;
    uint8_t nopnd;
    int line, col;
    asm_operand opnd[4];
    size_t arg0, nargs; /* items of .word/.byte/.float */
    int expr, ecol;     /* .space/.align: the expression and its column */
    const char *name;   /* label, .global */
    size_t len;
    uint64_t off; /* offset in its section, from layout */
} asm_stmt;

/* One assembly: the context plus the parsed statements. */
enum { ASM_OP_MEMO = 1024 }; /* a power of two */

typedef struct asm_unit {
    asm_ctx c;
    asm_stmt *st;
    size_t nst, capst;
    asm_item *it;
    size_t nit, capit;
    int sect;        /* current section while parsing */
    int layout_only; /* asm_symbol_address: an instruction's operands are not read (one slot
                      * whatever they are: the layout needs no more) */
    /* mnemonics met so far, by a hash of the name: opcode + 1 (0: none), as isa_lookup gave
     * it (a text repeats a few dozen mnemonics thousands of times) */
    uint16_t ops[ASM_OP_MEMO];
} asm_unit;

/* Parse one source line [b, end) into statements, reporting its errors. */
void asm_parse_line(asm_unit *u, int line, const char *b, const char *end);

#endif
