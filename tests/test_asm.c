/* Tests of the assembler (isa/asm.c): directives and data layout, labels in both sections,
 * constant expressions (precedence, labels, `.`), memory operand syntax, raw words in the
 * text, the entry point, every kind of error with its exact `file:line:col: error:` text and
 * caret, several errors from one file, the rpt-body check, the disassemble/re-assemble
 * round trip of a program with text and data, and asm_strip (comments gone, the program the
 * same: every codelet of the tree assembles to the same image stripped). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "isa/asm.h"
#include "isa/isa.h"

static isa_prog assemble_ok(const char *src)
{
    err e;
    isa_prog p;
    err_clear(&e);
    if (asm_assemble("t.s", src, strlen(src), &p, &e) != ERR_OK)
        fail_msg("assembly failed:\n%s", e.msg);
    return p;
}

/* Assemble src expecting failure; returns the message (static storage of the caller). */
static void assemble_bad(const char *src, err *e)
{
    isa_prog p;
    err_clear(e);
    int st = asm_assemble("t.s", src, strlen(src), &p, e);
    if (st != ERR_ASM)
        fail_msg("expected an assembly error for:\n%s", src);
    assert_int_equal(e->status, ERR_ASM);
    assert_null(p.image);
    assert_null(p.code);
    assert_int_equal(p.size, 0);
}

static uint32_t word_at(const isa_prog *p, uint32_t addr)
{
    assert_true(addr + 4 <= p->size);
    const uint8_t *b = p->image + addr;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void test_directives_and_layout(void **state)
{
    (void)state;
    isa_prog p = assemble_ok(".text\n"
                             "main: li r1, msg\n"
                             "      halt\n"
                             ".data\n"
                             "msg:  .word 0x11223344, -1\n"
                             "b:    .byte 1, 0xff, -2, 'A'\n"
                             "      .align 8\n"
                             "f:    .float 1.5, -0.25, 1e10, inf, -inf, nan, 3, -2.5e-3\n"
                             "      .space 3\n"
                             "end:  .byte 7\n");
    assert_int_equal(p.text_size, 16);
    assert_int_equal(p.data_addr, 16);
    assert_int_equal(isa_prog_sym(&p, "msg"), 16);
    assert_int_equal(isa_prog_sym(&p, "b"), 24);
    assert_int_equal(isa_prog_sym(&p, "f"), 32);
    assert_int_equal(isa_prog_sym(&p, "end"), 32 + 32 + 3);
    assert_int_equal(p.size, 32 + 32 + 3 + 1);
    assert_int_equal(p.code[0].op, OP_li);
    assert_int_equal(p.code[0].imm, 16);
    assert_int_equal(word_at(&p, 16), 0x11223344);
    assert_int_equal(word_at(&p, 20), 0xffffffff);
    assert_int_equal(word_at(&p, 24), 0x41feff01);
    assert_int_equal(word_at(&p, 28), 0);
    assert_int_equal(word_at(&p, 32), fbits(1.5f));
    assert_int_equal(word_at(&p, 36), fbits(-0.25f));
    assert_int_equal(word_at(&p, 40), fbits(1e10f));
    assert_int_equal(word_at(&p, 44), fbits(INFINITY));
    assert_int_equal(word_at(&p, 48), fbits(-INFINITY));
    assert_true(isnan(*(const float *)(const void *)(p.image + 52)) ||
                word_at(&p, 52) == 0x7fc00000);
    assert_int_equal(word_at(&p, 52) & 0x7f800000, 0x7f800000);
    assert_int_equal(word_at(&p, 56), fbits(3.0f));
    assert_int_equal(word_at(&p, 60), fbits(-2.5e-3f));
    assert_int_equal(p.image[64] | p.image[65] | p.image[66], 0);
    assert_int_equal(p.image[67], 7);
    isa_prog_free(&p);

    /* data starts at the text end aligned to 16, or to the data's largest .align */
    p = assemble_ok("nop\nnop\nnop\n.data\nx: .word 1\n");
    assert_int_equal(p.text_size, 24);
    assert_int_equal(p.data_addr, 32);
    assert_int_equal(isa_prog_sym(&p, "x"), 32);
    assert_int_equal(p.size, 36);
    isa_prog_free(&p);
    p = assemble_ok("nop\nnop\nnop\n.data\nx: .word 1\n.align 64\ny: .word 2\n");
    assert_int_equal(p.data_addr, 64);
    assert_int_equal(isa_prog_sym(&p, "x"), 64);
    assert_int_equal(isa_prog_sym(&p, "y"), 128);
    isa_prog_free(&p);

    /* sections interleave; .text resumes where it stopped; .space and .align in the text */
    p = assemble_ok(".data\nd1: .word 5\n.text\nt1: nop\n.data\nd2: .word 6\n.text\nt2: nop\n"
                    ".align 32\nt3: .space 8\nt4: halt\n");
    assert_int_equal(isa_prog_sym(&p, "t1"), 0);
    assert_int_equal(isa_prog_sym(&p, "t2"), 8);
    assert_int_equal(isa_prog_sym(&p, "t3"), 32);
    assert_int_equal(isa_prog_sym(&p, "t4"), 40);
    assert_int_equal(p.text_size, 48);
    assert_int_equal(p.code[2].op, OP_nop); /* padding is zero: a nop */
    assert_int_equal(p.code[5].op, OP_halt);
    assert_int_equal(isa_prog_sym(&p, "d1"), 48);
    assert_int_equal(isa_prog_sym(&p, "d2"), 52);
    isa_prog_free(&p);

    /* an empty file is an empty program */
    p = assemble_ok("");
    assert_int_equal(p.text_size, 0);
    assert_int_equal(p.size, 0);
    assert_int_equal(p.ncode, 0);
    isa_prog_free(&p);
}

/* asm_symbol_address lays out only: its address of a symbol is the one the assembled image
 * gives (a data label after 5 instructions: text 40 bytes, data at 48 by its .align 16; a
 * text label at 16); a symbol not defined gives UINT32_MAX; an unknown mnemonic still fails,
 * an instruction's operands are not read. */
static void test_symbol_address_by_layout(void **state)
{
    (void)state;
    static const char src[] = "        .text\nmain:   nop\n        nop\nsub:    nop\n        nop\n"
                              "        halt\n        .data\n        .align 16\nPOOL:   .space 8\n"
                              "X:      .word 1\n";
    isa_prog p = assemble_ok(src);
    static const struct {
        const char *sym;
        uint32_t want;
    } cases[] = {{"POOL", 48}, {"X", 56}, {"sub", 16}, {"main", 0}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        uint32_t a = 0;
        err e;
        err_clear(&e);
        assert_int_equal(asm_symbol_address("t.s", src, strlen(src), cases[k].sym, &a, &e), ERR_OK);
        assert_int_equal(a, cases[k].want);
        assert_int_equal(a, (uint32_t)isa_prog_sym(&p, cases[k].sym));
    }
    isa_prog_free(&p);
    uint32_t a = 0;
    err e;
    err_clear(&e);
    assert_int_equal(asm_symbol_address("t.s", src, strlen(src), "none", &a, &e), ERR_OK);
    assert_int_equal(a, UINT32_MAX);
    static const char bad[] = "main:   addi r1, r1\n        frob r1\n";
    assert_int_equal(asm_symbol_address("t.s", bad, strlen(bad), "main", &a, &e), ERR_ASM);
    assert_non_null(strstr(e.msg, "t.s:2:9: error: unknown mnemonic `frob`"));
    assert_null(strstr(e.msg, "t.s:1:")); /* the operands are the assembly's to check */
    /* an instruction's operands, read or not, take the same slot */
    static const char ops[] = "  li r1, (1 << 40)\n  add r1, r1\nX: nop\n";
    assert_int_equal(asm_symbol_address("t.s", ops, strlen(ops), "X", &a, &e), ERR_OK);
    assert_int_equal(a, 16);
}

static void test_expressions(void **state)
{
    (void)state;
    isa_prog p = assemble_ok("start: nop\n"
                             "here:  nop\n"
                             ".data\n"
                             "vals: .word 1+2*3, (1+2)*3, 1<<4|1, -8>>1, ~0&0xff, 10%3, 7/2\n"
                             "      .word -7/2, 0b101, 0x1F, 'a', '\\n', 2+3<<1, 1|2^3&1, -(-5)\n"
                             "      .word ., here-start, fwd, fwd-vals, -2147483648, 0xffffffff\n"
                             "      .word ((((1)))), -~1, 6/-4*2, 3 - 2 - 1\n"
                             "fwd:  .word 0\n");
    static const uint32_t want[] = {
        7, 9,           17,  (uint32_t)-4, 0xff,        1, 3, (uint32_t)-3,
        5, 31,          'a', '\n',         10,          3, 5, 0 /* . */,
        8, 0 /* fwd */, 100, 0x80000000u,  0xffffffffu, 1, 2, (uint32_t)-2,
        0};
    uint32_t base = (uint32_t)isa_prog_sym(&p, "vals");
    assert_int_equal(base, 16);
    for (uint32_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint32_t w = want[i];
        if (i == 15)
            w = base + 4 * 15;
        if (i == 17)
            w = (uint32_t)isa_prog_sym(&p, "fwd");
        if (word_at(&p, base + 4 * i) != w)
            fail_msg("word %u: got %#x, want %#x", i, word_at(&p, base + 4 * i), w);
    }
    isa_prog_free(&p);

    /* immediates: labels, `.`, forward references, the full 32-bit range */
    p = assemble_ok("a: li r1, b - a\n"
                    "   li r2, . + 8\n"
                    "   addi r3, r3, -2147483648\n"
                    "   li r4, 0xffffffff\n"
                    "   muli r5, r5, (b - a) / 8 * 3\n"
                    "   li r6, (0x7fffffffffffffff + 1) / (1 << 62) - (1<<63>>63)\n"
                    "b: br a\n");
    assert_int_equal(p.code[0].imm, 48);
    assert_int_equal(p.code[1].imm, 16);
    assert_int_equal(p.code[2].imm, INT32_MIN);
    assert_int_equal(p.code[3].imm, -1);
    assert_int_equal(p.code[4].imm, 18);
    assert_int_equal(p.code[5].imm, 1); /* 2 - 1: no step wraps */
    assert_int_equal(p.code[6].imm, 0);
    assert_int_equal(p.code[6].target, 0);
    isa_prog_free(&p);
}

static void test_operand_syntax(void **state)
{
    (void)state;
    isa_prog p = assemble_ok("ld32 r1, [r2]\n"
                             "ld32 r1, [r2+8]\n"
                             "st32 r1, [r2-4]\n"
                             "ld32 r1, [ r2 + tbl*4 ]\n"
                             "ld64 r4, [r3+16-8]\n"
                             "st32pi r1, [r2]+=16\n"
                             "ld64pi r6, [lr] += -8\n"
                             "get r1, $ccount\n"
                             "put $scratch, lr\n"
                             "sync internal\n"
                             "sync 1\n"
                             "run 0x40, r3\n"
                             "rpt r1, 0x70\n"
                             "v2fma r0, r2, r4, r14\n"
                             "br 0x40\n"
                             ".data\n"
                             ".word 0\n"
                             "tbl: .word 0\n");
    const isa_insn *c = p.code;
    assert_int_equal(c[0].ra, 2);
    assert_int_equal(c[0].imm, 0);
    assert_int_equal(c[1].imm, 8);
    assert_int_equal(c[2].imm, -4);
    assert_int_equal(c[3].imm, 4 * isa_prog_sym(&p, "tbl"));
    assert_int_equal(c[4].op, OP_ld64);
    assert_int_equal(c[4].ra, 3);
    assert_int_equal(c[4].imm, 8);
    assert_int_equal(c[5].op, OP_st32pi);
    assert_int_equal(c[5].imm, 16);
    assert_int_equal(c[6].rd, 6);
    assert_int_equal(c[6].ra, 15);
    assert_int_equal(c[6].imm, -8);
    assert_int_equal(c[7].imm, CSR_CCOUNT);
    assert_int_equal(c[8].imm, CSR_SCRATCH);
    assert_int_equal(c[8].ra, ISA_LR);
    assert_int_equal(c[9].imm, ISA_ZONE_INTERNAL);
    assert_int_equal(c[10].imm, ISA_ZONE_EXTERNAL);
    assert_int_equal(c[11].imm, 0x40);
    assert_int_equal(c[11].ra, 3);
    assert_int_equal(c[12].target, 14);
    assert_int_equal(c[13].rc, 14);
    assert_int_equal(c[14].target, 8);
    isa_prog_free(&p);

    /* every zone by name and by number; the GS1 zones also by their scope's name */
    p = assemble_ok("sync internal\nsync external\nsync gs2\nsync external_host\n"
                    "sync gs2_host\nsync internal_host\nsync group\nsync group_host\n"
                    "sync gs1\nsync gs1_host\nsync 7\nsync 2+3\n");
    static const int zones[] = {0, 1, 2, 3, 4, 5, 6, 7, 1, 3, 7, 5};
    for (unsigned i = 0; i < sizeof zones / sizeof zones[0]; i++)
        assert_int_equal(p.code[i].imm, zones[i]);
    isa_prog_free(&p);
}

static void test_text_words_and_entry(void **state)
{
    (void)state;
    /* .word pairs in the text make raw instructions (low word first), legal or not */
    isa_prog p = assemble_ok("nop\n"
                             ".word 0, 0xff000000\n"
                             ".word 7, 0x02000000\n"
                             ".word 0x11, 0x02300000 ; li r3, 0x11\n"
                             "  # comment line\n"
                             "; expect: r3 = 17\n"
                             ".global main\n"
                             "main: halt\r\n"
                             "after: nop # trailing comment\n");
    assert_int_equal(p.ncode, 6);
    assert_int_equal(p.code[1].op, OP_ILLEGAL);
    assert_int_equal(p.code[2].op, OP_li);
    assert_int_equal(p.code[2].imm, 7);
    assert_int_equal(p.code[3].rd, 3);
    assert_int_equal(p.code[3].imm, 0x11);
    assert_int_equal(p.entry, 32);
    assert_int_equal(isa_prog_sym(&p, "main"), 32);
    for (size_t i = 0; i < p.nsyms; i++)
        assert_int_equal(p.syms[i].global, strcmp(p.syms[i].name, "main") == 0);
    isa_prog_free(&p);

    /* without `main` the entry is 0; several labels may share a line */
    p = assemble_ok("a: b: nop\nc:\n d: halt\n");
    assert_int_equal(p.entry, 0);
    assert_int_equal(isa_prog_sym(&p, "b"), 0);
    assert_int_equal(isa_prog_sym(&p, "c"), 8);
    assert_int_equal(isa_prog_sym(&p, "d"), 8);
    isa_prog_free(&p);
}

static void test_error_exact(void **state)
{
    (void)state;
    err e;
    assemble_bad("  nop\n  add r1, r2, r99\n", &e);
    assert_string_equal(e.msg, "t.s:2:15: error: register `r99` out of range (r0..r15)\n"
                               "  add r1, r2, r99\n"
                               "              ^");
    /* tabs in the line keep the caret under the token */
    assemble_bad("\tli\tr1,\tnowhere\n", &e);
    assert_string_equal(e.msg, "t.s:1:9: error: undefined label `nowhere`\n"
                               "\tli\tr1,\tnowhere\n"
                               "\t  \t   \t^");
    /* the named file and CRLF line ends */
    isa_prog p;
    const char *src = "nop\r\nfoo r1\r\n";
    assert_int_equal(asm_assemble("dir/prog.s", src, strlen(src), &p, &e), ERR_ASM);
    assert_string_equal(e.msg, "dir/prog.s:2:1: error: unknown mnemonic `foo`\nfoo r1\n^");

    /* stray bytes are named; control bytes (ESC included) are shown escaped, never raw, and
     * the caret stays under the token; UTF-8 text is shown as it is */
    static const struct {
        const char *src;
        size_t len;
        const char *want;
    } bytes[] = {
        {"nop\0\n", 5,
         "t.s:1:4: error: unexpected byte 0x00 (a control character)\nnop\\x00\n   ^"},
        {"\xef\xbb\xbfnop\n", 7,
         "t.s:1:1: error: unexpected UTF-8 byte order mark (save the file without it)\n"
         "\xef\xbb\xbfnop\n^"},
        {"li r1, \x1b[31m\n", 13,
         "t.s:1:8: error: unexpected byte 0x1b (a control character)\nli r1, \\x1b[31m\n       ^"},
        {"li r1, '\x1b' + x\n", 15,
         "t.s:1:14: error: undefined label `x`\nli r1, '\\x1b' + x\n                ^"},
        {"h\xc3\xa9llo r1 # \xc3\n", 14,
         "t.s:1:2: error: unexpected byte 0xc3 (not ASCII)\nh\xc3\xa9llo r1 # \\xc3\n ^"},
        {"x: li r1, \xc3\xa9\n", 13,
         "t.s:1:11: error: unexpected byte 0xc3 (not ASCII)\nx: li r1, \xc3\xa9\n          ^"},
        {".data\n.float 1\x1b\n", 16,
         "t.s:2:8: error: bad float `1\\x1b`\n.float 1\\x1b\n       ^"},
    };
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        assert_int_equal(asm_assemble("t.s", bytes[i].src, bytes[i].len, &p, &e), ERR_ASM);
        if (strcmp(e.msg, bytes[i].want) != 0)
            fail_msg("case %zu:\n got: %s\nwant: %s", i, e.msg, bytes[i].want);
    }
}

/* Sources with one error each, and the exact first line of its message. */
static const struct {
    const char *src, *want;
} error_kinds[] = {
    {"br nowhere\n", "t.s:1:4: error: undefined label `nowhere`"},
    {"a: nop\na: nop\n", "t.s:2:1: error: duplicate label `a` (first defined on line 1)"},
    {"nop\n  frob r1\n", "t.s:2:3: error: unknown mnemonic `frob`"},
    {"add r1, r2\n", "t.s:1:1: error: `add` takes 3 operands (add rd, ra, rb)"},
    {"nop r1\n", "t.s:1:5: error: too many operands for `nop` (nop)"},
    {"add r1, r2, r3, r4\n", "t.s:1:17: error: too many operands for `add` (add rd, ra, rb)"},
    {"add r1, r2, 5\n", "t.s:1:13: error: `add` expects a register here (add rd, ra, rb)"},
    {"li r1, r2\n", "t.s:1:8: error: `li` expects an immediate here (li rd, imm)"},
    {"ld32 r1, r2\n",
     "t.s:1:10: error: `ld32` expects a memory operand [ra+imm] here (ld32 rd, [ra+imm])"},
    {"ld32pi r1, [r2+4]\n", "t.s:1:12: error: `ld32pi` expects a post-increment operand "
                            "[ra]+=imm here (ld32pi rd, [ra]+=imm)"},
    {"mov r16, r1\n", "t.s:1:5: error: register `r16` out of range (r0..r15)"},
    {"v2add r2, r3, r4\n",
     "t.s:1:11: error: `v2add` needs an even register (the low half of a pair), not r3"},
    {"ld64 r5, [r2]\n",
     "t.s:1:6: error: `ld64` needs an even register (the low half of a pair), not r5"},
    {"li r1, 0x100000000\n", "t.s:1:8: error: value 4294967296 does not fit in 32 bits"},
    {"li r1, -2147483649\n", "t.s:1:8: error: value -2147483649 does not fit in 32 bits"},
    {".data\n.word 1, 1<<32\n", "t.s:2:10: error: value 4294967296 does not fit in 32 bits"},
    {".data\n.byte 256\n", "t.s:2:7: error: value 256 does not fit in a byte"},
    {".wrd 1\n", "t.s:1:1: error: unknown directive `.wrd`"},
    {"li r1, 4/(2-2)\n", "t.s:1:9: error: division by zero"},
    {"li r1, 4%0\n", "t.s:1:9: error: division by zero"},
    {"li r1, 1<<64\n", "t.s:1:9: error: shift count 64 out of range (0..63)"},
    /* 64-bit steps do not wrap: the true value is reported */
    {"li r1, 0x7fffffffffffffff*0x7fffffffffffffff\n",
     "t.s:1:8: error: value 85070591730234615847396907784232501249 does not fit in 32 bits"},
    {"li r1, 1<<63\n", "t.s:1:8: error: value 9223372036854775808 does not fit in 32 bits"},
    {"li r1, 0x7fffffffffffffff+1\n",
     "t.s:1:8: error: value 9223372036854775808 does not fit in 32 bits"},
    {"li r1, -0x7fffffffffffffff-2\n",
     "t.s:1:8: error: value -9223372036854775809 does not fit in 32 bits"},
    {".data\n.byte 1<<63\n", "t.s:2:7: error: value 9223372036854775808 does not fit in a byte"},
    {"li r1, 0x7fffffffffffffff*0x7fffffffffffffff*4\n",
     "t.s:1:45: error: value overflows (more than 127 bits)"},
    {"get r1, $tilee\n", "t.s:1:9: error: unknown control register `$tilee` ($tile, $ipu, "
                         "$wid, $ccount, $ccounth, $ntiles, $nipus, $scratch, $group)"},
    {"get r1, $7\n",
     "t.s:1:9: error: control registers are named, not numbered: `$7` is "
     "none of $tile, $ipu, $wid, $ccount, $ccounth, $ntiles, $nipus, $scratch, $group"},
    {"put $0x10, r1\n",
     "t.s:1:5: error: control registers are named, not numbered: `$0x10` "
     "is none of $tile, $ipu, $wid, $ccount, $ccounth, $ntiles, $nipus, $scratch, $group"},
    {"sync 99\n", "t.s:1:6: error: sync zone 99 does not exist (0..7)"},
    {"sync 8\n", "t.s:1:6: error: sync zone 8 does not exist (0..7)"},
    {"ldcw 32, r1\n", "t.s:1:6: error: weight slot 32 does not exist (0..31)"},
    {"ldcw -1, r1\n", "t.s:1:6: error: weight slot -1 does not exist (0..31)"},
    {"ldcw r1, r1\n", "t.s:1:6: error: `ldcw` expects a weight slot (0..31) here (ldcw slot, ra)"},
    {"sync r1\n", "t.s:1:6: error: `sync` expects a sync zone here (sync zone)"},
    {"br r1\n", "t.s:1:4: error: `br` expects a branch target here (br target)"},
    {"brz 4, 8\n", "t.s:1:5: error: `brz` expects a register here (brz ra, target)"},
    {"run r1, r2\n", "t.s:1:5: error: `run` expects a worker entry address here (run entry, ra)"},
    {"get r1, 3\n", "t.s:1:9: error: `get` expects a control register ($tile, $scratch, "
                    "...) here (get rd, $csr)"},
    {"put r1, r2\n", "t.s:1:5: error: `put` expects a control register ($tile, $scratch, "
                     "...) here (put $csr, ra)"},
    {"ld128pi r2, [r1]+=16\n",
     "t.s:1:9: error: `ld128pi` needs r0, r4, r8 or r12 (the first of four registers), not r2"},
    {"v2fma r0, r2, r4, r7\n",
     "t.s:1:19: error: `v2fma` needs an even register (the low half of a pair), not r7"},
    {"st64pi r3, [r2]+=8\n",
     "t.s:1:8: error: `st64pi` needs an even register (the low half of a pair), not r3"},
    {".align 3\n", "t.s:1:8: error: `.align` needs a power of two from 1 to 65536, not 3"},
    {".data\n.space -1\n", "t.s:2:8: error: `.space` needs a size from 0 to 16777216, not -1"},
    {".space n\nn: nop\n",
     "t.s:1:8: error: `n` must be a label defined before this line (.space/.align)"},
    {".data\nnop\n", "t.s:2:1: error: instruction outside .text"},
    {".global nothing\n", "t.s:1:9: error: `.global` names an undefined label `nothing`"},
    {".global\n", "t.s:1:8: error: expected a label name, found end of line"},
    {".global r1\n", "t.s:1:9: error: expected a label name, found `r1`"},
    {"li r1, (1+2\n", "t.s:1:12: error: expected `)`, found end of line"},
    {"li r1,\n", "t.s:1:7: error: expected an operand, found end of line"},
    {"li r1 5\n", "t.s:1:7: error: expected `,`, found `5`"},
    {"li r1, 0x\n", "t.s:1:8: error: malformed number"},
    {"li r1, 99999999999999999999\n", "t.s:1:8: error: number too large"},
    {"li r1, 'ab'\n", "t.s:1:8: error: malformed character constant"},
    {"li r1, @\n", "t.s:1:8: error: unexpected character `@`"},
    {"nop\x7f\n", "t.s:1:4: error: unexpected byte 0x7f (a control character)"},
    {"li r1, 1\xff\n", "t.s:1:9: error: unexpected byte 0xff (not ASCII)"},
    {"caf\xc3\xa9: nop\n", "t.s:1:4: error: unexpected byte 0xc3 (not ASCII)"},
    {"ld32 r1, [r2*4]\n", "t.s:1:13: error: expected `]`, `+` or `-`, found `*`"},
    {"ld32 r1, [r2+4\n", "t.s:1:15: error: expected `]`, found end of line"},
    {".data\n.float 1.5e\n", "t.s:2:8: error: bad float `1.5e`"},
    {".data\n.float 1e99\n", "t.s:2:8: error: bad float `1e99`"},
    {".data\n.float\n", "t.s:2:7: error: expected a float"},
    {"r3: nop\n", "t.s:1:1: error: `r3` cannot be a label name"},
    {"42\n", "t.s:1:1: error: expected a label, directive or instruction, found `42`"},
    {"nop\n.word 1\nnop\n",
     "t.s:3:1: error: instruction at 0xc is not 8-aligned (.word in .text comes in pairs)"},
    {"nop\n.word 1\n",
     "t.s:2:1: error: text ends at 0xc, not a multiple of 8 (.word in .text comes in pairs)"},
    {"nop\nrpt r1, e\nbrz r2, e\ne: halt\n",
     "t.s:2:1: error: rpt body [0x10, 0x18) contains the branch `brz` at 0x10"},
    {"rpt r1, e\ne: halt\n", "t.s:1:1: error: rpt body [0x8, 0x8) is empty"},
    {"rpt r1, 0x20\nnop\n",
     "t.s:1:1: error: rpt body [0x8, 0x20) runs past the end of the text (0x10)"},
    {"rpt r1, 0x0c\nnop\nnop\n", "t.s:1:1: error: rpt end 0xc is not a multiple of 8"},
};

/* Case i: src has exactly one error (three lines: heading, source, caret), whose heading is
 * exactly `want`. */
static void assert_one_error(size_t i, const char *src, const char *want)
{
    err e;
    assemble_bad(src, &e);
    size_t n = strcspn(e.msg, "\n");
    if (n != strlen(want) || strncmp(e.msg, want, n) != 0)
        fail_msg("case %zu:\n got: %.*s\nwant: %s", i, (int)n, e.msg, want);
    const char *p = e.msg;
    int lines = 1;
    while ((p = strchr(p, '\n')) != NULL)
        p++, lines++;
    if (lines != 3)
        fail_msg("case %zu: %d lines:\n%s", i, lines, e.msg);
}

/* Each source has one error; the message's first line must be exactly `want`. */
static void test_error_kinds(void **state)
{
    (void)state;
    err e;
    assemble_bad("sync everywhere\n", &e); /* the message lists every zone */
    assert_non_null(strstr(e.msg, "t.s:1:6: error: unknown sync zone `everywhere` (internal, "));
    for (unsigned z = 0; z < ISA_NZONES; z++)
        assert_non_null(strstr(e.msg, isa_zone_name(z)));
    for (size_t i = 0; i < sizeof error_kinds / sizeof error_kinds[0]; i++)
        assert_one_error(i, error_kinds[i].src, error_kinds[i].want);
}

static void test_many_errors(void **state)
{
    (void)state;
    const char *src = "main:\n"              /* 1 */
                      "  add r1, r2\n"       /* 2: operand count */
                      "  li r1, undefined\n" /* 3: undefined label */
                      "  nop\n"              /* 4 */
                      "  bogus\n"            /* 5: unknown mnemonic */
                      "main:\n"              /* 6: duplicate */
                      "  li r2, 1/0\n"       /* 7: division by zero */
                      "  get r1, $x\n"       /* 8: unknown CSR */
                      ".data\n"              /* 9 */
                      "  .word 1, , 2\n"     /* 10: missing expression */
                      "  .frob\n";           /* 11: bad directive */
    err e;
    assemble_bad(src, &e);
    static const char *const heads[] = {
        "t.s:2:3: error: ",  "t.s:3:10: error: ", "t.s:5:3: error: ",   "t.s:6:1: error: ",
        "t.s:7:11: error: ", "t.s:8:11: error: ", "t.s:10:12: error: ", "t.s:11:3: error: ",
    };
    const char *at = e.msg;
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        const char *h = strstr(at, heads[i]);
        if (!h)
            fail_msg("missing `%s` (in order) in:\n%s", heads[i], e.msg);
        at = h + 1;
    }
    int n = 0;
    for (const char *p = e.msg; (p = strstr(p, ": error: ")) != NULL; p++)
        n++;
    assert_int_equal(n, 8);
}

/* Bounds: a label longer than an image can store is an error at its line; a long source
 * line is shown as a window around the caret; after MAX_SHOWN errors (or when the message
 * would pass ERR_MSG_MAX) the rest are counted, never cut off mid-message. */
static void test_error_limits(void **state)
{
    (void)state;
    err e;
    size_t n = 200000;
    char *src = malloc(n + 16), *want = malloc(400);
    memset(src, 'a', n);
    strcpy(src + n, ": nop\n");
    assemble_bad(src, &e);
    snprintf(want, 400,
             "t.s:1:1: error: label name is 200000 bytes long (at most 65535)\n%.160s...\n^", src);
    assert_string_equal(e.msg, want);
    strcpy(src + 65535, ": nop\n"); /* the longest label */
    isa_prog p = assemble_ok(src);
    assert_int_equal(p.nsyms, 1);
    isa_prog_free(&p);

    /* an error far along a long line: 80 bytes before the caret, 80 from it */
    memset(src, ' ', 2006);
    memcpy(src, "li r1,", 6);
    memset(src + 2006, 'c', 300);
    memcpy(src + 2006, "x # ", 4);
    strcpy(src + 2306, "\n");
    assemble_bad(src, &e);
    snprintf(want, 400, "t.s:1:2007: error: undefined label `x`\n...%.160s...\n%83s^",
             src + 2006 - 80, "");
    assert_string_equal(e.msg, want);

    /* 200,000 errors: the first 100, then a count */
    char *many = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++)
        memcpy(many + 2 * i, "x\n", 2);
    many[2 * n] = '\0';
    assemble_bad(many, &e);
    int errors = 0;
    for (const char *q = e.msg; (q = strstr(q, ": error: ")) != NULL; q++)
        errors++;
    assert_int_equal(errors, 100);
    assert_non_null(
        strstr(e.msg, "t.s:100:1: error: unknown mnemonic `x`\nx\n^\nand 199900 more errors"));
    assert_int_equal(strcmp(e.msg + strlen(e.msg) - 22, "and 199900 more errors"), 0);

    /* long lines: fewer than 100 fit in the message; still whole ones, then the count */
    size_t len = 0;
    for (int i = 0; i < 1000; i++)
        len += (size_t)sprintf(many + len, "x %0300d\n", i);
    assemble_bad(many, &e);
    errors = 0;
    for (const char *q = e.msg; (q = strstr(q, ": error: ")) != NULL; q++)
        errors++;
    assert_true(errors > 10 && errors < 100);
    assert_true(strlen(e.msg) < ERR_MSG_MAX - 1);
    snprintf(want, 400, "0...\n^\nand %d more errors", 1000 - errors);
    assert_int_equal(strcmp(e.msg + strlen(e.msg) - strlen(want), want), 0);
    free(many);
    free(src);
    free(want);
}

static void roundtrip(const char *src)
{
    isa_prog p = assemble_ok(src);
    char *text = isa_disasm_prog(&p);
    assert_non_null(text);
    err e;
    isa_prog q;
    if (asm_assemble("disasm.s", text, strlen(text), &q, &e) != ERR_OK)
        fail_msg("re-assembly failed:\n%s\n--- listing:\n%s", e.msg, text);
    assert_int_equal(q.text_size, p.text_size);
    assert_int_equal(q.data_addr, p.data_addr);
    assert_int_equal(q.size, p.size);
    assert_int_equal(q.entry, p.entry);
    assert_memory_equal(q.image, p.image, p.size);
    /* the symbols too: every label, where it was, global or not, in the same order */
    assert_int_equal(q.nsyms, p.nsyms);
    for (size_t i = 0; i < p.nsyms; i++) {
        if (strcmp(q.syms[i].name, p.syms[i].name) != 0 || q.syms[i].addr != p.syms[i].addr ||
            q.syms[i].global != p.syms[i].global)
            fail_msg("symbol %zu: %s at 0x%x (global %d), want %s at 0x%x (global %d):\n%s", i,
                     q.syms[i].name, q.syms[i].addr, q.syms[i].global, p.syms[i].name,
                     p.syms[i].addr, p.syms[i].global, text);
        if (i && p.syms[i].addr < p.syms[i - 1].addr)
            fail_msg("symbols out of address order: %s after %s", p.syms[i].name,
                     p.syms[i - 1].name);
    }
    free(text);
    isa_prog_free(&p);
    isa_prog_free(&q);
}

static void test_disasm_roundtrip(void **state)
{
    (void)state;
    roundtrip(".text\n"
              "init: li r1, 0x12345678\n"
              "      li r2, -1\n"
              "      addi r3, r3, -4097\n"
              "      ld64 r4, [r5-8]\n"
              "      st32pi r1, [r2]+=-4\n"
              ".global main\n"
              "main: li r6, table\n"
              "      rpt r6, done\n"
              "      fma r1, r2, r3, r4\n"
              "      v2add r8, r10, r12\n"
              "done: get r7, $wid\n"
              "      put $scratch, r7\n"
              "      .word 0xdeadbeef, 0xfe000000\n"
              "      run worker, r1\n"
              "      sync external\n"
              "      brnzdec r1, main\n"
              "      call 0x1000\n"
              "      halt\n"
              "      ldcw 31, r3\n"
              "worker: ampz\n"
              "      f32amp r2, r4\n"
              "      f16amp r6, r8\n"
              "      ampst\n"
              "      exit\n"
              ".data\n"
              "table: .word 1, 2, 3, table\n"
              "       .float 0.5, -inf\n"
              "       .align 128\n"
              "       .space 40\n"
              "big:   .word 0, 0, 0, 0, 0, 0, 0, 9\n"
              "       .byte 1, 2, 3\n");
    roundtrip("halt\n");                                       /* text only, 16-aligned */
    roundtrip("nop\nnop\nnop\n.data\n.byte 5\n");              /* data after a pad */
    roundtrip("");                                             /* nothing at all */
    roundtrip("nop\nmain:\n");                                 /* entry at the text end */
    roundtrip("nop\n.data\n.word 1\nmain: .byte 2\n");         /* entry in the data */
    roundtrip("nop\n.data\n.byte 1, 2\nmain:\n");              /* entry at the image end */
    roundtrip(".byte 1, 2, 3\nmain: .byte 4, 5, 6, 7, 8\n");   /* entry inside a text slot */
    roundtrip(".space 65544\n.data\n.align 65536\n.word 3\n"); /* the largest .align */
    /* labels: a data label written before text ones (the table is in address order), two at
     * one address, one inside a slot, at the text's end, at the image's end, a global one */
    roundtrip(".data\nd0: .word 7\n.text\nb: a: nop\n.word 1\nmid: .word 2\nl7: br l7\nbr a\n"
              "tend:\n.data\nd1: .byte 1\nend:\n.global a\n");
}

/* The listing names branch targets and worker entries by their labels. */
static void test_disasm_labels(void **state)
{
    (void)state;
    isa_prog p = assemble_ok("main: runall work, r0\n join\n brnz r1, main\n halt\n"
                             "work: exit\n");
    char *text = isa_disasm_prog(&p);
    assert_non_null(strstr(text, "\nmain:\n    runall work, r0 "));
    assert_non_null(strstr(text, "\n    brnz r1, main "));
    assert_non_null(strstr(text, "\nwork:\n    exit "));
    free(text);
    isa_prog_free(&p);
}

/* A temporary directory for a test's files, and the path of NAME in it. */
static void temp_dir(char dir[32], char *path, size_t len, const char *name)
{
    snprintf(dir, 32, "/tmp/ipusim_asm_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/%s", dir, name);
}

/* path now holds n bytes of text (n = SIZE_MAX: the string). */
static void write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite(text, 1, n == SIZE_MAX ? strlen(text) : n, f);
    fclose(f);
}

static void test_assemble_file(void **state)
{
    (void)state;
    char dir[32], path[128];
    temp_dir(dir, path, sizeof path, "x.s");
    write_file(path, "main: li r1, 5\n  halt\n", SIZE_MAX);
    err e;
    isa_prog p;
    assert_int_equal(asm_assemble_file(path, &p, &e), ERR_OK);
    assert_int_equal(p.ncode, 2);
    isa_prog_free(&p);
    write_file(path, "  halt r1\n", SIZE_MAX);
    assert_int_equal(asm_assemble_file(path, &p, &e), ERR_ASM);
    assert_int_equal(strncmp(e.msg, path, strlen(path)), 0);

    /* an image whose magic is corrupted is not taken for source; nor is an image */
    const char *src = "main: li r1, 5\n  halt\n";
    assert_int_equal(asm_assemble("x.s", src, strlen(src), &p, &e), ERR_OK);
    assert_int_equal(isa_prog_save(&p, path, &e), ERR_OK);
    isa_prog_free(&p);
    assert_int_equal(asm_assemble_file(path, &p, &e), ERR_INPUT);
    char want[400];
    snprintf(want, sizeof want, "%s: an ipusim image, not assembly source", path);
    assert_string_equal(e.msg, want);
    FILE *f = fopen(path, "r+");
    fputs("IPUSIMX2", f);
    fclose(f);
    assert_int_equal(asm_assemble_file(path, &p, &e), ERR_INPUT);
    snprintf(want, sizeof want, "%s: not an ipusim image (bad magic)", path);
    assert_string_equal(e.msg, want);
    assert_null(p.image);
    /* source that starts with the magic's letters is still source */
    write_file(path, "IPUSIMX2: li r1, 5\n  halt\n", SIZE_MAX);
    assert_int_equal(asm_assemble_file(path, &p, &e), ERR_OK);
    isa_prog_free(&p);

    unlink(path);
    assert_int_equal(asm_assemble_file(path, &p, &e), ERR_INPUT);
    assert_null(p.image);
    rmdir(dir);
}

/* A file without instructions is refused (asm_assemble takes it as an empty program). */
static void test_assemble_file_empty(void **state)
{
    (void)state;
    char dir[32], path[128], want[400];
    temp_dir(dir, path, sizeof path, "x.s");
    err e;
    isa_prog p;
    static const char *const none[] = {"", "# only\n; comments\n\n", "main:\n.data\nx: .word 1\n"};
    for (size_t k = 0; k < sizeof none / sizeof none[0]; k++) {
        write_file(path, none[k], SIZE_MAX);
        assert_int_equal(asm_assemble_file(path, &p, &e), ERR_ASM);
        snprintf(want, sizeof want,
                 "%s:1:1: error: no instructions (the program is empty, or only comments, labels "
                 "and data)\n",
                 path);
        assert_int_equal(strncmp(e.msg, want, strlen(want)), 0);
        assert_null(p.image);
    }
    unlink(path);
    rmdir(dir);
}

/* A file that is not text (a NUL or a control byte other than tab, LF, FF, CR in its first
 * 4 KiB) is neither image nor source, in one line; unless it is named as source, where each
 * stray byte gets its line and column. */
static void test_assemble_file_binary(void **state)
{
    (void)state;
    char dir[32], path[128], bin[128], want[400];
    temp_dir(dir, path, sizeof path, "x.s");
    snprintf(bin, sizeof bin, "%s/x.bin", dir);
    err e;
    isa_prog p;
    static const char elf[] = "\177ELF\002\001\001";
    write_file(bin, elf, sizeof elf); /* with its NUL */
    assert_int_equal(asm_assemble_file(bin, &p, &e), ERR_INPUT);
    snprintf(want, sizeof want,
             "%s: not an ipusim program image (no IPUSIMX1 magic) nor assembly text", bin);
    assert_string_equal(e.msg, want);
    assert_null(p.image);
    /* text under any name is source: tab, CR, FF are text */
    write_file(bin, "main:\tli r1, 5\r\n\f  halt\n", SIZE_MAX);
    assert_int_equal(asm_assemble_file(bin, &p, &e), ERR_OK);
    assert_int_equal(p.ncode, 2);
    isa_prog_free(&p);
    FILE *f = fopen(bin, "w"); /* one control byte, past long comments, still in the first 4 KiB */
    for (int k = 0; k < 4000; k++)
        fputc(k % 80 == 79 ? '\n' : '#', f);
    fputs("\nmain: halt\x1b\n", f);
    fclose(f);
    assert_int_equal(asm_assemble_file(bin, &p, &e), ERR_INPUT);
    write_file(path, elf, sizeof elf); /* the same bytes as the ELF in a .s file: diagnostics */
    assert_int_equal(asm_assemble_file(path, &p, &e), ERR_ASM);
    assert_non_null(strstr(e.msg, ":1:1: error: unexpected byte 0x7f (a control character)"));
    unlink(bin);
    unlink(path);
    rmdir(dir);
}

/* asm_strip drops comments (`#` and `;`, not a `#` in a character constant) and the blanks
 * around a line's tokens, keeping every line (a CRLF's CR too goes); an error in a stripped
 * text names the same line. */
static void test_strip(void **state)
{
    (void)state;
    static const char src[] = "# header\n"
                              "\tli  r1, '#'   # the hash character\n"
                              "   ; only a comment\n"
                              "\n"
                              "x:  .word 1;2\r\n"
                              "  nop  ";
    static const char want[] = "\n"
                               "li  r1, '#'\n"
                               "\n"
                               "\n"
                               "x:  .word 1\n"
                               "nop";
    size_t n;
    char *out = asm_strip(src, strlen(src), &n);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
    free(out);
    err e;
    isa_prog p;
    static const char bad[] = "# one\n# two\n   nop r1   # three\n";
    out = asm_strip(bad, strlen(bad), &n);
    assert_int_equal(asm_assemble("s.s", out, n, &p, &e), ERR_ASM);
    assert_int_equal(strncmp(e.msg, "s.s:3:", 6), 0);
    free(out);
}

/* Two images alike: layout, bytes and symbols. */
static void assert_same_prog(const isa_prog *a, const isa_prog *b, const char *name)
{
    if (a->size != b->size || a->text_size != b->text_size || a->data_addr != b->data_addr ||
        a->entry != b->entry || a->nsyms != b->nsyms || memcmp(a->image, b->image, a->size))
        fail_msg("%s: stripped, a different image", name);
    for (size_t i = 0; i < a->nsyms; i++)
        if (a->syms[i].addr != b->syms[i].addr || a->syms[i].global != b->syms[i].global ||
            strcmp(a->syms[i].name, b->syms[i].name) != 0)
            fail_msg("%s: stripped, symbol %zu differs", name, i);
}

/* Every codelet in workloads/codelets (as the graph compiler pastes them) assembles to the
 * same program stripped as whole, in fewer bytes. */
static void test_strip_codelets(void **state)
{
    (void)state;
    DIR *d = opendir("workloads/codelets");
    assert_non_null(d);
    int seen = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len < 3 || strcmp(de->d_name + len - 2, ".s") != 0)
            continue;
        char path[300];
        snprintf(path, sizeof path, "workloads/codelets/%s", de->d_name);
        err e;
        size_t n, m;
        char *src = file_read_text(path, 1 << 20, &n, &e);
        assert_non_null(src);
        char *out = asm_strip(src, n, &m);
        assert_true(m < n);
        isa_prog a, b;
        assert_int_equal(asm_assemble(path, src, n, &a, &e), ERR_OK);
        assert_int_equal(asm_assemble(path, out, m, &b, &e), ERR_OK);
        assert_same_prog(&a, &b, path);
        isa_prog_free(&a);
        isa_prog_free(&b);
        free(src);
        free(out);
        seen++;
    }
    closedir(d);
    assert_true(seen >= 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directives_and_layout),
        cmocka_unit_test(test_expressions),
        cmocka_unit_test(test_symbol_address_by_layout),
        cmocka_unit_test(test_operand_syntax),
        cmocka_unit_test(test_text_words_and_entry),
        cmocka_unit_test(test_error_exact),
        cmocka_unit_test(test_error_kinds),
        cmocka_unit_test(test_many_errors),
        cmocka_unit_test(test_error_limits),
        cmocka_unit_test(test_disasm_roundtrip),
        cmocka_unit_test(test_disasm_labels),
        cmocka_unit_test(test_assemble_file),
        cmocka_unit_test(test_assemble_file_empty),
        cmocka_unit_test(test_assemble_file_binary),
        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_strip_codelets),
    };
    return cmocka_run_group_tests_name("asm", tests, NULL, NULL);
}
