/* Tests of isa/: every opcode of the table through encode, decode, disassembly and
 * re-assembly; illegal encodings; branch targets; every control register, sync zone and
 * operand format against hand-written lists; every opcode's privilege in both contexts and the
 * supervisor's load-use stall per load and operand kind (the interpreter run directly); the
 * rpt-body check of isa_prog_decode; docs/isa.md against isa_doc_markdown(); the binary container's
 * round trip and its rejection of corrupt and truncated files. Run from the repo root. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isa/asm.h"
#include "isa/interp.h"
#include "isa/isa.h"

/* An instance of op with valid operands, walking its format's operand kinds: registers that
 * suit pairs and quads (different ones per field), targets inside a 4-instruction text. */
static isa_insn sample(unsigned op)
{
    const isa_fmtinfo *fi = isa_fmt_info(isa_info(op)->fmt);
    isa_insn in = {.op = (uint16_t)op, .target = UINT32_MAX};
    uint8_t *reg[4] = {&in.rd, &in.ra, &in.rb, &in.rc};
    static const uint8_t regs[4] = {12, 4, 8, 14}; /* rd, ra, rb, rc */
    assert_non_null(fi);
    for (unsigned i = 0; i < fi->n; i++) {
        isa_operand o = fi->opd[i];
        switch ((isa_kind)o.kind) {
        case ISA_K_REG: *reg[o.field] = o.field == ISA_F_RA ? 3 : regs[o.field]; break;
        case ISA_K_PAIR:
        case ISA_K_QUAD: *reg[o.field] = regs[o.field]; break;
        case ISA_K_IMM: in.imm = -5; break;
        case ISA_K_TARGET:
        case ISA_K_ENTRY: in.imm = 0x18; break;
        case ISA_K_ZONE: in.imm = ISA_ZONE_EXTERNAL_HOST; break;
        case ISA_K_CSR: in.imm = CSR_CCOUNT; break;
        case ISA_K_CWSLOT: in.imm = 31; break;
        case ISA_K_MEM: in.ra = 15, in.imm = -12; break;
        case ISA_K_MEMPI: in.ra = 7, in.imm = 16; break;
        case ISA_K_NO:
        case ISA_K_COUNT: fail(); break;
        }
    }
    return in;
}

static void test_every_opcode(void **state)
{
    (void)state;
    for (unsigned op = 0; op < OP_COUNT; op++) {
        const isa_opinfo *oi = isa_info(op);
        assert_non_null(oi->name);
        assert_non_null(oi->semantics);
        assert_int_equal(isa_lookup(oi->name, strlen(oi->name)), op);

        isa_insn in = sample(op);
        uint64_t w = isa_encode(&in);
        assert_int_equal(ISA_GET_OP(w), op);
        isa_insn d = isa_decode_word(w);
        assert_int_equal(d.op, op);
        assert_int_equal(d.rd, in.rd);
        assert_int_equal(d.ra, in.ra);
        assert_int_equal(d.rb, in.rb);
        assert_int_equal(d.rc, in.rc);
        assert_int_equal(d.imm, in.imm);
        assert_int_equal(d.wcycles, oi->wcycles);
        assert_int_equal(d.scycles, oi->scycles);
        /* the branches with a target operand (docs/isa.md, Control) */
        static const char *const targets[] = {"br", "brz", "brnz", "brnzdec", "call", "rpt"};
        int branch = 0;
        for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++)
            branch |= strcmp(oi->name, targets[k]) == 0;
        assert_int_equal(d.target, branch ? (uint32_t)in.imm / 8 : UINT32_MAX);
        assert_true(isa_encode(&d) == w);

        /* disassemble, re-assemble (followed by three nops so targets lie in the text) */
        char text[128], src[256];
        isa_disasm_insn(w, text, sizeof text);
        assert_int_equal(strncmp(text, oi->name, strlen(oi->name)), 0);
        snprintf(src, sizeof src, "%s\nnop\nnop\nnop\n", text);
        err e;
        err_clear(&e);
        isa_prog p;
        int st = asm_assemble("op.s", src, strlen(src), &p, &e);
        if (st != ERR_OK)
            fail_msg("%s: `%s`: %s", oi->name, text, e.msg);
        assert_int_equal(p.text_size, 32);
        uint64_t got = 0;
        for (int i = 7; i >= 0; i--)
            got = got << 8 | p.image[i];
        if (got != w)
            fail_msg("%s: `%s` re-assembles to %016llx, not %016llx", oi->name, text,
                     (unsigned long long)got, (unsigned long long)w);
        assert_int_equal(p.code[0].op, op);
        isa_prog_free(&p);
    }
    assert_int_equal(isa_lookup("bogus", 5), OP_ILLEGAL);
    assert_int_equal(isa_lookup("addx", 3), OP_add); /* the length counts, not the NUL */
    assert_string_equal(isa_info(OP_ILLEGAL)->name, "illegal");
    assert_string_equal(isa_info(1000)->name, "illegal");
}

static void expect_illegal(uint64_t w)
{
    isa_insn d = isa_decode_word(w);
    if (d.op != OP_ILLEGAL)
        fail_msg("%016llx decodes as %s", (unsigned long long)w, isa_info(d.op)->name);
    assert_int_equal(d.target, UINT32_MAX);
    /* disassembles as raw words that re-assemble to the same bytes */
    char text[128], src[160];
    isa_disasm_insn(w, text, sizeof text);
    assert_int_equal(strncmp(text, ".word 0x", 8), 0);
    snprintf(src, sizeof src, "%s\n", text);
    err e;
    isa_prog p;
    assert_int_equal(asm_assemble("ill.s", src, strlen(src), &p, &e), ERR_OK);
    assert_int_equal(p.text_size, 8);
    uint64_t got = 0;
    for (int i = 7; i >= 0; i--)
        got = got << 8 | p.image[i];
    assert_true(got == w);
    assert_int_equal(p.code[0].op, OP_ILLEGAL);
    isa_prog_free(&p);
}

static void test_illegal_encodings(void **state)
{
    (void)state;
    expect_illegal(ISA_ENCODE(OP_COUNT, 0, 0, 0, 0, 0)); /* unknown opcodes */
    expect_illegal(ISA_ENCODE(0xff, 0, 0, 0, 0, 0));
    expect_illegal(ISA_ENCODE(OP_nop, 0, 0, 0, 0, 0) | (uint64_t)1 << 32); /* reserved bits */
    expect_illegal(ISA_ENCODE(OP_add, 1, 2, 3, 0, 0) | (uint64_t)0x80 << 32);
    expect_illegal(ISA_ENCODE(OP_nop, 1, 0, 0, 0, 0)); /* unused fields */
    expect_illegal(ISA_ENCODE(OP_nop, 0, 0, 0, 0, 1));
    expect_illegal(ISA_ENCODE(OP_add, 1, 2, 3, 4, 0));
    expect_illegal(ISA_ENCODE(OP_add, 1, 2, 3, 0, 7));
    expect_illegal(ISA_ENCODE(OP_br, 0, 1, 0, 0, 0x40));
    expect_illegal(ISA_ENCODE(OP_li, 1, 1, 0, 0, 5));
    expect_illegal(ISA_ENCODE(OP_ld32, 1, 2, 3, 0, 0));
    expect_illegal(ISA_ENCODE(OP_get, 1, 1, 0, 0, CSR_TILE));
    expect_illegal(ISA_ENCODE(OP_v2add, 1, 2, 4, 0, 0)); /* odd pair registers */
    expect_illegal(ISA_ENCODE(OP_v2add, 0, 3, 4, 0, 0));
    expect_illegal(ISA_ENCODE(OP_v2fma, 0, 2, 4, 7, 0));
    expect_illegal(ISA_ENCODE(OP_ld64, 3, 2, 0, 0, 0));
    expect_illegal(ISA_ENCODE(OP_st64pi, 5, 2, 0, 0, 8));
    expect_illegal(ISA_ENCODE(OP_get, 1, 0, 0, 0, CSR_COUNT)); /* bad CSR, bad zone */
    expect_illegal(ISA_ENCODE(OP_put, 0, 1, 0, 0, 0xffffffffu));
    expect_illegal(ISA_ENCODE(OP_sync, 0, 0, 0, 0, ISA_NZONES));

    /* the address register of a pair load/store may be odd */
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_ld64, 2, 3, 0, 0, 0)).op, OP_ld64);
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_st64pi, 4, 7, 0, 0, 8)).op, OP_st64pi);
    /* an all-zero word is a nop */
    assert_int_equal(isa_decode_word(0).op, OP_nop);
}

static void test_branch_targets(void **state)
{
    (void)state;
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_br, 0, 0, 0, 0, 0x40)).target, 8);
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_br, 0, 0, 0, 0, 0x41)).target, UINT32_MAX);
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_brnz, 0, 3, 0, 0, 0)).target, 0);
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_rpt, 0, 3, 0, 0, 0x20)).target, 4);
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_call, 0, 0, 0, 0, -8)).target, 0x1fffffff);
    /* not branches: run's entry and sync's zone */
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_run, 0, 1, 0, 0, 0x40)).target, UINT32_MAX);
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_sync, 0, 0, 0, 0, 1)).target, UINT32_MAX);
}

static void test_csrs(void **state)
{
    (void)state;
    /* written from docs/isa.md's list, not from isa/csrs.def */
    static const struct {
        const char *name;
        int writable;
    } want[] = {{"tile", 0},   {"ipu", 0},   {"wid", 0},     {"ccount", 0}, {"ccounth", 0},
                {"ntiles", 0}, {"nipus", 0}, {"scratch", 1}, {"group", 1}};
    assert_int_equal(CSR_COUNT, sizeof want / sizeof want[0]);
    for (unsigned i = 0; i < CSR_COUNT; i++) {
        assert_string_equal(isa_csr_name(i), want[i].name);
        assert_int_equal(isa_csr_lookup(want[i].name, strlen(want[i].name)), i);
        assert_int_equal(isa_csr_writable(i), want[i].writable);
        assert_non_null(isa_csr_meaning(i));
        assert_true(strlen(isa_csr_meaning(i)) > 0);
    }
    assert_int_equal(CSR_SCRATCH, 7);
    assert_int_equal(CSR_GROUP, 8);
    assert_null(isa_csr_name(CSR_COUNT));
    assert_null(isa_csr_meaning(CSR_COUNT));
    assert_int_equal(isa_csr_writable(CSR_COUNT), 0);
    assert_int_equal(isa_csr_lookup("tilex", 5), -1);
    assert_int_equal(isa_csr_lookup("tilex", 4), CSR_TILE);
}

static void test_zones(void **state)
{
    (void)state;
    /* the eight zones with their numbers, scopes and host flags, written from the ISA's
     * definition (not from isa/zones.def) */
    static const struct {
        unsigned id;
        const char *name;
        isa_scope scope;
        int host;
    } want[] = {
        {ISA_ZONE_INTERNAL, "internal", ISA_SCOPE_INTERNAL, 0},
        {ISA_ZONE_EXTERNAL, "external", ISA_SCOPE_GS1, 0},
        {ISA_ZONE_GS2, "gs2", ISA_SCOPE_GS2, 0},
        {ISA_ZONE_EXTERNAL_HOST, "external_host", ISA_SCOPE_GS1, 1},
        {ISA_ZONE_GS2_HOST, "gs2_host", ISA_SCOPE_GS2, 1},
        {ISA_ZONE_INTERNAL_HOST, "internal_host", ISA_SCOPE_INTERNAL, 1},
        {ISA_ZONE_GROUP, "group", ISA_SCOPE_GROUP, 0},
        {ISA_ZONE_GROUP_HOST, "group_host", ISA_SCOPE_GROUP, 1},
    };
    assert_int_equal(ISA_NZONES, 8);
    for (unsigned i = 0; i < ISA_NZONES; i++) {
        assert_int_equal(want[i].id, i); /* the numbers programs encode */
        const isa_zone_info *z = isa_zone_info_of(i);
        assert_non_null(z);
        assert_string_equal(z->name, want[i].name);
        assert_string_equal(isa_zone_name(i), want[i].name);
        assert_int_equal(z->scope, want[i].scope);
        assert_int_equal(z->host, want[i].host);
        assert_non_null(z->meaning);
        assert_int_equal(isa_zone_lookup(want[i].name, strlen(want[i].name)), i);
    }
    assert_null(isa_zone_info_of(ISA_NZONES));
    assert_null(isa_zone_name(ISA_NZONES));
    /* the GS1 zones' other spelling; nothing else */
    assert_int_equal(isa_zone_lookup("gs1", 3), ISA_ZONE_EXTERNAL);
    assert_int_equal(isa_zone_lookup("gs1_host", 8), ISA_ZONE_EXTERNAL_HOST);
    assert_int_equal(isa_zone_lookup("gs1_hos", 7), -1);
    assert_int_equal(isa_zone_lookup("gs1_hostx", 9), -1);
    assert_int_equal(isa_zone_lookup("gs", 2), -1);
    assert_int_equal(isa_zone_lookup("global", 6), -1);
    assert_int_equal(isa_zone_lookup("externalx", 8), ISA_ZONE_EXTERNAL);
    assert_int_equal(isa_zone_lookup("external_", 9), -1);
}

/* Every format's syntax, written by hand; and the pair/quad rules of the P and Q formats. */
static void test_formats(void **state)
{
    (void)state;
    static const struct {
        isa_fmt f;
        const char *syntax;
    } want[] = {
        {FMT_NONE, ""},
        {FMT_R, "ra"},
        {FMT_RR, "rd, ra"},
        {FMT_RRR, "rd, ra, rb"},
        {FMT_RRRR, "rd, ra, rb, rc"},
        {FMT_PPP, "rd, ra, rb"},
        {FMT_PPPP, "rd, ra, rb, rc"},
        {FMT_RI, "rd, imm"},
        {FMT_RRI, "rd, ra, imm"},
        {FMT_MEM, "rd, [ra+imm]"},
        {FMT_PMEM, "rd, [ra+imm]"},
        {FMT_MEMPI, "rd, [ra]+=imm"},
        {FMT_PMEMPI, "rd, [ra]+=imm"},
        {FMT_QMEMPI, "rd, [ra]+=imm"},
        {FMT_L, "target"},
        {FMT_RL, "ra, target"},
        {FMT_IR, "entry, ra"},
        {FMT_Z, "zone"},
        {FMT_RC, "rd, $csr"},
        {FMT_CR, "$csr, ra"},
        {FMT_WR, "slot, ra"},
    };
    assert_int_equal(FMT_COUNT, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char sx[64];
        isa_fmt_syntax(want[i].f, sx, sizeof sx);
        assert_string_equal(sx, want[i].syntax);
        assert_non_null(isa_fmt_info(want[i].f));
    }
    assert_null(isa_fmt_info(FMT_COUNT));
    /* the P formats: every register even; PMEM: rd even, the base may be odd */
    assert_int_equal(isa_decode_word(ISA_ENCODE(OP_v2fma, 0, 2, 4, 6, 0)).op, OP_v2fma);
    for (unsigned f = 0; f < 4; f++) {
        unsigned r[4] = {0, 2, 4, 6};
        r[f] = 5;
        assert_int_equal(isa_decode_word(ISA_ENCODE(OP_v2fma, r[0], r[1], r[2], r[3], 0)).op,
                         OP_ILLEGAL);
        r[f] = 3; /* plain RRRR: odd registers are fine */
        assert_int_equal(isa_decode_word(ISA_ENCODE(OP_fma, r[0], r[1], r[2], r[3], 0)).op, OP_fma);
    }
    /* the Q format: rd a multiple of 4 */
    for (unsigned rd = 0; rd < ISA_NREGS; rd++)
        assert_int_equal(isa_decode_word(ISA_ENCODE(OP_ld128pi, rd, 3, 0, 0, 16)).op,
                         rd % 4 ? OP_ILLEGAL : OP_ld128pi);
}

/* A program image of n instructions built by hand (no assembler). */
static void hand_prog(isa_prog *p, const uint64_t *w, uint32_t n)
{
    memset(p, 0, sizeof *p);
    p->text_size = p->data_addr = p->size = n * 8;
    p->image = calloc(n ? n * 8 : 1, 1);
    for (uint32_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            p->image[i * 8 + b] = (uint8_t)(w[i] >> (8 * b));
}

static void test_prog_decode_rpt(void **state)
{
    (void)state;
    const uint64_t nop = ISA_ENCODE(OP_nop, 0, 0, 0, 0, 0);
    err e;
    isa_prog p;

    uint64_t good[] = {ISA_ENCODE(OP_rpt, 0, 1, 0, 0, 0x18), nop, nop,
                       ISA_ENCODE(OP_br, 0, 0, 0, 0, 0x1000) /* outside the text: fine */,
                       ISA_ENCODE(OP_COUNT, 0, 0, 0, 0, 0) /* illegal: fine until run */};
    hand_prog(&p, good, 5);
    assert_int_equal(isa_prog_decode(&p, &e), ERR_OK);
    assert_int_equal(p.ncode, 5);
    assert_int_equal(p.code[0].target, 3);
    assert_int_equal(p.code[3].target, 0x200);
    assert_int_equal(p.code[4].op, OP_ILLEGAL);
    isa_prog_free(&p);

    uint64_t branch[] = {nop, ISA_ENCODE(OP_rpt, 0, 1, 0, 0, 0x20), nop,
                         ISA_ENCODE(OP_brz, 0, 2, 0, 0, 0), nop};
    hand_prog(&p, branch, 5);
    assert_int_equal(isa_prog_decode(&p, &e), ERR_INPUT);
    assert_string_equal(e.msg, "pc 0x8: rpt body [0x10, 0x20) contains the branch `brz` at 0x18");
    assert_null(p.code);
    isa_prog_free(&p);

    uint64_t empty[] = {ISA_ENCODE(OP_rpt, 0, 1, 0, 0, 0x8), nop};
    hand_prog(&p, empty, 2);
    assert_int_equal(isa_prog_decode(&p, &e), ERR_INPUT);
    assert_string_equal(e.msg, "pc 0x0: rpt body [0x8, 0x8) is empty");
    isa_prog_free(&p);

    uint64_t past[] = {ISA_ENCODE(OP_rpt, 0, 1, 0, 0, 0x18), nop};
    hand_prog(&p, past, 2);
    assert_int_equal(isa_prog_decode(&p, &e), ERR_INPUT);
    assert_string_equal(e.msg, "pc 0x0: rpt body [0x8, 0x18) runs past the end of the text (0x10)");
    isa_prog_free(&p);

    uint64_t odd[] = {ISA_ENCODE(OP_rpt, 0, 1, 0, 0, 0xc), nop};
    hand_prog(&p, odd, 2);
    assert_int_equal(isa_prog_decode(&p, &e), ERR_INPUT);
    assert_string_equal(e.msg, "pc 0x0: rpt end 0xc is not a multiple of 8");
    isa_prog_free(&p);

    uint64_t nested[] = {ISA_ENCODE(OP_rpt, 0, 1, 0, 0, 0x18), ISA_ENCODE(OP_rpt, 0, 1, 0, 0, 0x18),
                         nop};
    hand_prog(&p, nested, 3);
    assert_int_equal(isa_prog_decode(&p, &e), ERR_INPUT);
    isa_prog_free(&p);
}

/* ---- what the interpreter takes from the tables: privilege and the load-use stall ---- */

typedef struct machine {
    isa_insn *code;
    uint8_t mem[256];
    uint32_t scratch, group;
    uint64_t free_from[ISA_BARREL], slots_free;
    uint8_t cw[ISA_CW_BYTES];
    isa_env env;
    isa_cpu cpu;
} machine;

/* Load a decoded program into m: registers all 64 (an aligned address), pc 0, cycle 0. */
static void machine_init(machine *m, const isa_prog *p, int worker)
{
    memset(m, 0, sizeof *m);
    m->code = isa_code_build(p, ISA_FUSED_ALL);
    assert_non_null(m->code);
    m->env = (isa_env){.code = m->code,
                       .ncode = p->ncode,
                       .ntiles = 1,
                       .nipus = 1,
                       .scratch = &m->scratch,
                       .group = &m->group,
                       .limit = 1000,
                       .slot_free_from = m->free_from,
                       .slots_free = &m->slots_free,
                       .cw = m->cw};
    isa_env_set_mem(&m->env, m->mem, sizeof m->mem);
    for (unsigned r = 0; r < ISA_NREGS; r++)
        m->cpu.r[r] = 64;
    m->cpu.wid = worker ? 0 : ISA_SUPER_WID;
}

static int named(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return 1;
    return 0;
}

/* Every opcode in both contexts: the worker-only ones fault in the supervisor, the
 * supervisor-only ones in a worker, at their own pc and issue cycle; nothing else does. */
static void test_privilege(void **state)
{
    (void)state;
    /* written from docs/isa.md's "runs on" column, not from isa/opcodes.def */
    static const char *const worker_only[] = {
        "fadd",   "fsub",  "fmul", "fma",    "fmin",   "fmax",   "fcmplt", "fcmple",
        "fcmpeq", "fneg",  "fabs", "itof",   "ftoi",   "f16tof", "ftof16", "i8tof",
        "fdiv",   "fsqrt", "fexp", "flog",   "v2add",  "v2sub",  "v2mul",  "v2max",
        "v2min",  "v2fma", "ampz", "f32amp", "f16amp", "ampst",  "exit"};
    static const char *const super_only[] = {"run",   "runall", "join", "sync", "halt",
                                             "send",  "gsend",  "hin",  "hout", "rbin",
                                             "rbout", "put",    "ldcw"};
    for (unsigned op = 0; op < OP_COUNT; op++) {
        const char *name = isa_info(op)->name;
        for (int worker = 0; worker <= 1; worker++) {
            isa_insn in = sample(op);
            uint64_t w[4] = {isa_encode(&in), ISA_ENCODE(worker ? OP_exit : OP_halt, 0, 0, 0, 0, 0),
                             0, 0};
            isa_prog p;
            hand_prog(&p, w, 4);
            err e;
            assert_int_equal(isa_prog_decode(&p, &e), ERR_OK);
            machine m;
            machine_init(&m, &p, worker);
            isa_stop st = worker ? isa_run_worker(&m.cpu, &m.env) : isa_run_super(&m.cpu, &m.env);
            int want = worker ? named(name, super_only, sizeof super_only / sizeof *super_only)
                              : named(name, worker_only, sizeof worker_only / sizeof *worker_only);
            int got = st == STOP_FAULT && m.cpu.fault == FAULT_PRIVILEGE;
            if (got != want)
                fail_msg("`%s` in a %s: stop %d fault %d", name, worker ? "worker" : "supervisor",
                         st, m.cpu.fault);
            if (got) {
                assert_int_equal(m.cpu.pc, 0);
                assert_int_equal(m.cpu.t, 0);
            }
            free(m.code);
            isa_prog_free(&p);
        }
    }
}

/* The supervisor's load-use stall: a register loaded at cycle c is usable from c + 7. Each
 * program is a load at cycle 0 and one instruction, then halt: the halt issues at 8 when the
 * instruction waited for the load (issue 7, cost 1), at 2 when it did not. */
static void test_load_use(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        uint64_t halt_at;
    } cases[] = {
        {"ld32 r4, [r1]\naddi r9, r4, 0\n", 8}, /* ra */
        {"ld32 r4, [r1]\naddi r9, r5, 0\n", 2},
        {"ld32 r4, [r1]\nadd r9, r1, r4\n", 8}, /* rb */
        {"ld32 r4, [r1]\nli r4, 1\n", 2},       /* written, not read */
        {"ld32 r4, [r1]\nnop\n", 2},
        {"ld32 r1, [r1]\nld32 r4, [r1]\n", 8},  /* a memory operand's base */
        {"ld64 r4, [r1]\naddi r9, r5, 0\n", 8}, /* a pair load: both registers */
        {"ld64 r4, [r1]\naddi r9, r6, 0\n", 2},
        {"ld32pi r4, [r1]+=0\nst32 r4, [r1]\n", 8}, /* a store reads rd */
        {"ld64pi r4, [r1]+=8\nst32 r5, [r2]\n", 8},
        {"ld32 r3, [r1]\nst64 r2, [r1]\n", 8}, /* a pair store reads rd + 1 */
        {"ld32 r4, [r1]\nst64 r2, [r1]\n", 2},
        {"ld128pi r4, [r1]+=16\naddi r9, r7, 0\n", 8}, /* a quad load: four registers */
        {"ld128pi r4, [r1]+=16\naddi r9, r8, 0\n", 2},
        {"ld128pi r4, [r1]+=16\naddi r9, r3, 0\n", 2},
        {"ld32pi r4, [r1]+=4\naddi r9, r1, 0\n", 2}, /* the post-increment is no load */
        {"ld32 r4, [r1]\nput $scratch, r4\n", 8},
        {"ld32 r4, [r1]\nget r4, $tile\n", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[128];
        snprintf(src, sizeof src, "%shalt\n", cases[i].src);
        err e;
        isa_prog p;
        if (asm_assemble("lu.s", src, strlen(src), &p, &e) != ERR_OK)
            fail_msg("%s", e.msg);
        machine m;
        machine_init(&m, &p, 0);
        isa_stop st = isa_run_super(&m.cpu, &m.env);
        if (st != STOP_HALT || m.cpu.t != cases[i].halt_at)
            fail_msg("case %zu (%s): stop %d at %llu, want halt at %llu", i, cases[i].src, st,
                     (unsigned long long)m.cpu.t, (unsigned long long)cases[i].halt_at);
        free(m.code);
        isa_prog_free(&p);
    }
}

static void test_docs_match(void **state)
{
    (void)state;
    char *want = isa_doc_markdown();
    assert_non_null(want);
    FILE *f = fopen("docs/isa.md", "rb");
    if (!f)
        fail_msg("docs/isa.md missing (run the tests from the repo root; `make docs`)");
    size_t cap = strlen(want) + 2, n;
    char *got = malloc(cap);
    n = fread(got, 1, cap, f);
    fclose(f);
    if (n != strlen(want) || memcmp(got, want, n) != 0)
        fail_msg("docs/isa.md differs from isa_doc_markdown(): run `make docs`");
    /* every opcode appears in the document */
    for (unsigned op = 0; op < OP_COUNT; op++) {
        char row[64];
        snprintf(row, sizeof row, "| %u | `%s", op, isa_info(op)->name);
        assert_non_null(strstr(want, row));
    }
    free(got);
    free(want);
}

/* ---- the binary container ---- */

static const char prog_src[] = ".global main\n"
                               "main:\n"
                               "    li r1, 3\n"
                               "    rpt r1, done\n"
                               "    addi r2, r2, 1\n"
                               "done:\n"
                               "    halt\n"
                               ".data\n"
                               "table: .word 1, 2, 3\n"
                               "       .byte 9\n";

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/ipusim_isa_XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static void write_file(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *b = malloc(1 << 16);
    *n = fread(b, 1, 1 << 16, f);
    fclose(f);
    return b;
}

/* q, loaded from p's file, is p: the header, image, decoded text and symbols. */
static void assert_same_prog(const isa_prog *p, const isa_prog *q)
{
    assert_int_equal(q->text_size, p->text_size);
    assert_int_equal(q->data_addr, p->data_addr);
    assert_int_equal(q->size, p->size);
    assert_int_equal(q->entry, p->entry);
    assert_memory_equal(q->image, p->image, p->size);
    assert_int_equal(q->ncode, p->ncode);
    assert_memory_equal(q->code, p->code, p->ncode * sizeof *p->code);
    assert_int_equal(q->nsyms, p->nsyms);
    for (size_t i = 0; i < p->nsyms; i++) {
        assert_string_equal(q->syms[i].name, p->syms[i].name);
        assert_int_equal(q->syms[i].addr, p->syms[i].addr);
        assert_int_equal(q->syms[i].global, p->syms[i].global);
    }
}

/* Corruptions of p's file (n bytes) written at `bad` are each refused: every truncation,
 * trailing bytes, bad magic, lengths and layout, a symbol name past the end, an rpt body
 * holding a branch. */
static void assert_bad_files(const char *bad, const uint8_t *file, size_t n, const isa_prog *p)
{
    err e;
    isa_prog q;
    /* every truncation is rejected */
    for (size_t k = 0; k < n; k++) {
        write_file(bad, file, k);
        assert_int_equal(isa_prog_load(&q, bad, &e), ERR_INPUT);
        assert_null(q.image);
    }
    /* trailing bytes, bad magic, bad lengths, bad layout */
    uint8_t *m = malloc(n + 1);
    memcpy(m, file, n);
    m[n] = 0;
    write_file(bad, m, n + 1);
    assert_int_equal(isa_prog_load(&q, bad, &e), ERR_INPUT);
    static const struct {
        size_t at;
        uint8_t v;
    } flips[] = {
        {0, 'X'},   /* magic */
        {8, 3},     /* text_size not a multiple of 8 */
        {11, 0x80}, /* text_size huge */
        {15, 0x80}, /* data_addr past size */
        {19, 0x7f}, /* size past the file */
        {27, 0x40}, /* nsyms huge */
    };
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        memcpy(m, file, n);
        m[flips[i].at] = flips[i].v;
        write_file(bad, m, n);
        assert_int_equal(isa_prog_load(&q, bad, &e), ERR_INPUT);
    }
    /* a symbol name length running past the end */
    memcpy(m, file, n);
    size_t sym0 = 28 + p->size;
    m[sym0 + 5] = 0xff;
    write_file(bad, m, n);
    assert_int_equal(isa_prog_load(&q, bad, &e), ERR_INPUT);
    /* a well-formed file whose rpt body holds a branch */
    memcpy(m, file, n);
    m[28 + 16 + 7] = OP_br; /* turn `addi` at 0x10 into a branch */
    m[28 + 16 + 6] = 0;
    m[28 + 16 + 0] = 0;
    write_file(bad, m, n);
    assert_int_equal(isa_prog_load(&q, bad, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "contains the branch `br`"));
    free(m);
}

static void test_save_load(void **state)
{
    (void)state;
    err e;
    isa_prog p, q;
    assert_int_equal(asm_assemble("p.s", prog_src, strlen(prog_src), &p, &e), ERR_OK);
    char *dir = temp_dir(), path[256], bad[256];
    snprintf(path, sizeof path, "%s/p.ipx", dir);
    snprintf(bad, sizeof bad, "%s/bad.ipx", dir);
    assert_int_equal(isa_prog_save(&p, path, &e), ERR_OK);
    assert_int_equal(isa_prog_load(&q, path, &e), ERR_OK);

    assert_same_prog(&p, &q);
    assert_int_equal(isa_prog_sym(&q, "table"), p.data_addr);
    assert_int_equal(isa_prog_sym(&q, "main"), 0);
    assert_int_equal(isa_prog_sym(&q, "nothere"), -1);
    isa_prog_free(&q);

    size_t n;
    uint8_t *file = read_file(path, &n);
    assert_true(n > 28);

    assert_bad_files(bad, file, n, &p);
    /* a missing file */
    snprintf(bad, sizeof bad, "%s/none.ipx", dir);
    assert_int_equal(isa_prog_load(&q, bad, &e), ERR_INPUT);
    /* saving into a missing directory fails and leaves nothing */
    snprintf(bad, sizeof bad, "%s/no/such/dir.ipx", dir);
    assert_int_equal(isa_prog_save(&p, bad, &e), ERR_INPUT);

    free(file);
    snprintf(bad, sizeof bad, "%s/bad.ipx", dir);
    unlink(bad);
    unlink(path);
    rmdir(dir);
    free(dir);
    isa_prog_free(&p);
}

/* isa_code_build counts the syncs of one zone in a row from each sync (what lets the engine
 * park a tile in a run of them): "sync internal" x 3, "sync external", "sync internal", a
 * nop, then 65,537 internal syncs, counted from the end in pieces of at most 65,535 (the
 * last 65,535 count down to 1, the two before them restart at 1 and 2). Non-syncs hold 0. */
static void test_sync_runs(void **state)
{
    (void)state;
    enum { LONG = 65537 };
    static const char head[] = "sync internal\nsync internal\nsync internal\nsync external\n"
                               "sync internal\nnop\n";
    static const char line[] = "sync internal\n";
    size_t n = strlen(head) + LONG * strlen(line) + 8;
    char *src = malloc(n), *w = src + strlen(head);
    memcpy(src, head, strlen(head));
    for (unsigned k = 0; k < LONG; k++, w += strlen(line))
        memcpy(w, line, strlen(line));
    strcpy(w, "halt\n");
    isa_prog p;
    err e;
    err_clear(&e);
    assert_int_equal(asm_assemble("runs.s", src, strlen(src), &p, &e), ERR_OK);
    free(src);
    isa_insn *c = isa_code_build(&p, ISA_FUSED_ALL);
    static const uint16_t want[6] = {3, 2, 1, 1, 1, 0};
    for (unsigned k = 0; k < 6; k++)
        assert_int_equal(c[k].park, want[k]);
    assert_int_equal(c[6].park, 2);
    assert_int_equal(c[7].park, 1);
    assert_int_equal(c[8].park, 65535);
    assert_int_equal(c[6 + LONG - 1].park, 1);
    assert_int_equal(c[6 + LONG].park, 0); /* halt */
    free(c);
    isa_prog_free(&p);
}

/* isa_code_build decodes the image itself: a program whose decoded copy was dropped
 * (isa_prog_drop_code, as the graph compiler does once it has checked each program) builds
 * the same code, entry for entry, as before the drop; the copy is gone and ncode stays. */
static void test_code_after_drop(void **state)
{
    (void)state;
    static const char src[] = "main: li r1, 3\nl: rpt r1, e\n  nop\ne: brnzdec r1, l\n"
                              "  sync internal\n  halt\n";
    isa_prog p;
    err e;
    err_clear(&e);
    assert_int_equal(asm_assemble("drop.s", src, strlen(src), &p, &e), ERR_OK);
    isa_insn *a = isa_code_build(&p, ISA_FUSED_ALL);
    uint32_t n = p.ncode;
    isa_prog_drop_code(&p);
    assert_null(p.code);
    assert_int_equal(p.ncode, n);
    isa_insn *b = isa_code_build(&p, ISA_FUSED_ALL);
    assert_memory_equal(a, b, (n + 1) * sizeof *a);
    static const uint8_t ops[] = {OP_li, OP_rpt, OP_nop, OP_brnzdec, OP_sync, OP_halt};
    assert_int_equal(n, sizeof ops);
    for (uint32_t k = 0; k < n; k++)
        assert_int_equal(b[k].op, ops[k]);
    assert_int_equal(b[0].imm, 3);
    assert_int_equal(b[3].target, 1); /* brnzdec r1, l: instruction 1 */
    assert_int_equal(b[n].op, OP_ILLEGAL);
    free(a);
    free(b);
    isa_prog_free(&p);
}

/* isa_insn.park after a sync that is not followed by another: 1 where some registers make
 * a loop back to it of branches, brnzdec, br and nop, at most ISA_PASS_MAX instructions
 * (the sync included); 0 for a loop with anything else, one too long, or none. */
static void test_loop_marks(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        uint16_t park;
    } c[] = {
        {"l: sync internal\n   brz r1, x\n   nop\nx: brnzdec r2, l\n   halt\n", 1},
        {"l: sync internal\n   brnzdec r2, m\nm: brnzdec r3, l\n   halt\n", 1},
        {"l: sync internal\n   br m\n   halt\nm: brnz r1, l\n   halt\n", 1},
        {"l: sync internal\n   addi r1, r1, 1\n   brnzdec r2, l\n   halt\n", 0},
        {"l: sync internal\n   nop\n   nop\n   nop\n   nop\n   nop\n   nop\n   brnzdec r2, l\n"
         "   halt\n",
         1},
        {"l: sync internal\n   nop\n   nop\n   nop\n   nop\n   nop\n   nop\n   nop\n"
         "   brnzdec r2, l\n   halt\n",
         0},
        {"   sync internal\n   brnzdec r2, l\nl: sync internal\n   halt\n", 0},
    };
    for (unsigned k = 0; k < sizeof c / sizeof c[0]; k++) {
        isa_prog p;
        err e;
        err_clear(&e);
        assert_int_equal(asm_assemble("loop.s", c[k].src, strlen(c[k].src), &p, &e), ERR_OK);
        isa_insn *code = isa_code_build(&p, ISA_FUSED_ALL);
        if (code[1].park != c[k].park)
            fail_msg("case %u: park %u, not %u", k, code[1].park, c[k].park);
        free(code);
        isa_prog_free(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_opcode),    cmocka_unit_test(test_illegal_encodings),
        cmocka_unit_test(test_branch_targets),  cmocka_unit_test(test_csrs),
        cmocka_unit_test(test_zones),           cmocka_unit_test(test_formats),
        cmocka_unit_test(test_privilege),       cmocka_unit_test(test_load_use),
        cmocka_unit_test(test_prog_decode_rpt), cmocka_unit_test(test_docs_match),
        cmocka_unit_test(test_save_load),       cmocka_unit_test(test_sync_runs),
        cmocka_unit_test(test_code_after_drop), cmocka_unit_test(test_loop_marks),
    };
    return cmocka_run_group_tests_name("isa", tests, NULL, NULL);
}
