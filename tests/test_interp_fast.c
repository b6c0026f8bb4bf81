/* test_interp_fast: the worker interpreter's fast paths, the fused operations of
 * isa/fused.def (isa/interp_fused.inc: a one-instruction st32pi or st64pi fill run as a loop
 * of its own, f32amp's passes as whole rows, an ld32pi-st32pi copy, and conv_amp's loop of a
 * row and an add) against the same instructions one dispatch at a time.
 *
 * Each case is run twice from the same registers, memory and AMP weights: as `rpt rN, e;
 * BODY; e: exit`, and as `nop` followed by N copies of BODY and `exit` (the same issues at
 * the same cycles: rpt and nop take one slot each), where no fast path applies (built with
 * no fused operation, isa_code_build's mask 0), with the table's costs and again with memory
 * and AMP rates that make loads, stores and f32amp take several slots (isa_code_rate). Both
 * runs are stopped by every cycle limit
 * from the first issue to past the exit, and then resumed without a limit; at each stop and
 * at the end they must agree on the stop, fault and its address, cycle, instruction and busy
 * counts, the position in the program (a pass of the rpt against a copy), every register,
 * the AMP pipeline (its inputs, partials, finished row and state), and the whole of tile
 * memory. The cases run fills and copies past the end of memory, onto misaligned addresses,
 * backwards through address 0, overlapping, with a base register also stored, and rows that
 * start mid-row, after a finished row, and with inputs that run out of memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/asm.h"
#include "isa/interp.h"
#include "isa/isa.h"
#include "tests/testutil.h"

enum { MEMSZ = 4096 }; /* r9 holds the rpt count */

typedef struct machine {
    isa_insn *code;
    uint32_t ncode;
    uint8_t mem[MEMSZ];
    uint32_t scratch, group;
    uint64_t free_from[ISA_BARREL], slots_free;
    uint8_t cw[ISA_CW_BYTES];
    isa_env env;
    isa_cpu cpu;
} machine;

/* A case: the body, the count, a prefix run before the loop (both programs), registers. */
typedef struct fcase {
    const char *body;
    const char *prefix; /* instructions before the rpt (or nop), "" for none */
    uint32_t n;
    uint32_t r1, r2; /* the bodies' address registers */
} fcase;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* A finite fp32 value, with a sign, of modest size, so rows round in interesting ways. */
static uint32_t rnd_float(void)
{
    return (rnd() & 0x807fffffu) | ((uint32_t)(120 + rnd() % 16) << 23);
}

static void build(machine *m, const char *src, int unrolled, const uint8_t *mem, const uint8_t *cw,
                  const uint32_t *regs, const isa_rates *rates)
{
    isa_prog p;
    tu_assemble("fast", src, &p);
    memset(m, 0, sizeof *m);
    m->code = isa_code_build(&p, unrolled ? 0 : ISA_FUSED_ALL); /* unrolled: no fused op */
    m->ncode = p.ncode;
    if (rates)
        isa_code_rate(m->code, p.ncode, rates);
    memcpy(m->mem, mem, MEMSZ);
    memcpy(m->cw, cw, sizeof m->cw);
    m->env = (isa_env){.code = m->code,
                       .ncode = p.ncode,
                       .ntiles = 1,
                       .nipus = 1,
                       .scratch = &m->scratch,
                       .group = &m->group,
                       .limit = UINT64_MAX,
                       .slot_free_from = m->free_from,
                       .slots_free = &m->slots_free,
                       .cw = m->cw};
    isa_env_set_mem(&m->env, m->mem, MEMSZ);
    memcpy(m->cpu.r, regs, sizeof m->cpu.r);
    m->cpu.wid = 0;
    isa_amp_empty(&m->cpu.amp);
    isa_prog_free(&p);
}

/* Where a context stands, as the unrolled program's instruction index: the looped program's
 * rpt body (blen instructions) at pass j (of n) is the unrolled copy j. */
static uint32_t position(const machine *m, int unrolled, uint32_t npre, uint32_t n, uint32_t blen)
{
    uint32_t at = m->cpu.pc / ISA_INSN_BYTES;
    if (unrolled || at <= npre)
        return at;
    if (at <= npre + blen && m->cpu.rpt_left) /* in the body: n - rpt_left passes done */
        return npre + 1 + (n - m->cpu.rpt_left) * blen + (at - npre - 1);
    return at + n * blen - blen; /* the exit */
}

static void same(const char *what, const fcase *c, uint64_t limit, isa_stop s1, const machine *a,
                 isa_stop s2, const machine *b, uint32_t npre, uint32_t blen)
{
    char where[200];
    snprintf(where, sizeof where, "%s: `%s` x %u (prefix `%s`, r1 0x%x, r2 0x%x), limit %llu", what,
             c->body, c->n, c->prefix, c->r1, c->r2, (unsigned long long)limit);
    if (s1 != s2 || a->cpu.fault != b->cpu.fault || a->cpu.fault_addr != b->cpu.fault_addr)
        fail_msg("%s: stop %d fault %d at 0x%x, unrolled stop %d fault %d at 0x%x", where, s1,
                 a->cpu.fault, a->cpu.fault_addr, s2, b->cpu.fault, b->cpu.fault_addr);
    if (a->cpu.t != b->cpu.t || a->cpu.ninsn != b->cpu.ninsn || a->cpu.busy != b->cpu.busy)
        fail_msg("%s: cycle %llu insns %llu busy %llu, unrolled %llu %llu %llu", where,
                 (unsigned long long)a->cpu.t, (unsigned long long)a->cpu.ninsn,
                 (unsigned long long)a->cpu.busy, (unsigned long long)b->cpu.t,
                 (unsigned long long)b->cpu.ninsn, (unsigned long long)b->cpu.busy);
    uint32_t pa = position(a, 0, npre, c->n, blen), pb = position(b, 1, npre, c->n, blen);
    if (pa != pb)
        fail_msg("%s: at instruction %u, unrolled %u", where, pa, pb);
    for (unsigned r = 0; r < ISA_NREGS; r++)
        if (a->cpu.r[r] != b->cpu.r[r])
            fail_msg("%s: r%u = 0x%x, unrolled 0x%x", where, r, a->cpu.r[r], b->cpu.r[r]);
    const isa_amp *x = &a->cpu.amp, *y = &b->cpu.amp;
    if (x->step != y->step || x->kind != y->kind || x->out_lanes != y->out_lanes ||
        x->out_kind != y->out_kind || (x->out_lanes && x->out_at != y->out_at) ||
        (x->step && x->row_at != y->row_at) || memcmp(x->out, y->out, sizeof x->out) ||
        memcmp(x->x, y->x, sizeof x->x) || memcmp(x->p, y->p, sizeof x->p))
        fail_msg("%s: AMP step %u kind %u lanes %u at 0x%x, unrolled %u %u %u 0x%x", where, x->step,
                 x->kind, x->out_lanes, x->out_at, y->step, y->kind, y->out_lanes, y->out_at);
    for (uint32_t k = 0; k < MEMSZ; k++)
        if (a->mem[k] != b->mem[k])
            fail_msg("%s: memory byte 0x%x = 0x%02x, unrolled 0x%02x", where, k, a->mem[k],
                     b->mem[k]);
}

static uint32_t lines(const char *s)
{
    uint32_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Both forms of c under every limit, then resumed; returns how many limits were tried. */
static unsigned run_case(const fcase *c)
{
    static char loop[1 << 12], flat[1 << 16];
    snprintf(loop, sizeof loop, "%s        rpt     r9, e\n        %s\ne:      exit\n", c->prefix,
             c->body);
    size_t n = (size_t)snprintf(flat, sizeof flat, "%s        nop\n", c->prefix);
    for (uint32_t k = 0; k < c->n; k++)
        n += (size_t)snprintf(flat + n, sizeof flat - n, "        %s\n", c->body);
    snprintf(flat + n, sizeof flat - n, "        exit\n");
    const uint32_t npre = lines(c->prefix), blen = lines(c->body) + 1;

    static uint8_t mem[MEMSZ];
    uint8_t cw[ISA_CW_BYTES];
    for (uint32_t k = 0; k < MEMSZ; k += 4)
        tu_put32(mem, k, rnd_float());
    for (uint32_t k = 0; k < ISA_CW_BYTES; k += 4)
        tu_put32(cw, k, rnd_float());
    uint32_t regs[ISA_NREGS];
    for (unsigned r = 0; r < ISA_NREGS; r++)
        regs[r] = rnd_float();
    regs[1] = c->r1;
    regs[2] = c->r2;
    regs[9] = c->n;

    /* the table's costs, and a machine whose loads, stores and AMP take several slots (the
       extra slots counted, a load and a store of different lengths) */
    static const isa_rates slow = {.load_bpc = 2, .store_bpc = 1, .amp_units = 4};
    static machine a, b;
    unsigned tried = 0;
    for (int r = 0; r < 2; r++) {
        const isa_rates *rates = r ? &slow : NULL;
        /* without a limit first: the end cycle bounds the limits tried */
        build(&a, loop, 0, mem, cw, regs, rates);
        build(&b, flat, 1, mem, cw, regs, rates);
        isa_stop s1 = isa_run_worker(&a.cpu, &a.env), s2 = isa_run_worker(&b.cpu, &b.env);
        same("no limit", c, UINT64_MAX, s1, &a, s2, &b, npre, blen);
        const uint64_t end = a.cpu.t;
        free(a.code);
        free(b.code);

        for (uint64_t limit = 0; limit <= end + ISA_BARREL; limit++, tried++) {
            build(&a, loop, 0, mem, cw, regs, rates);
            build(&b, flat, 1, mem, cw, regs, rates);
            a.env.limit = b.env.limit = limit;
            s1 = isa_run_worker(&a.cpu, &a.env);
            s2 = isa_run_worker(&b.cpu, &b.env);
            same("stopped", c, limit, s1, &a, s2, &b, npre, blen);
            if (s1 == STOP_LIMIT) { /* go on as if it had never stopped */
                a.cpu.fault = b.cpu.fault = FAULT_NONE;
                a.env.limit = b.env.limit = UINT64_MAX;
                s1 = isa_run_worker(&a.cpu, &a.env);
                s2 = isa_run_worker(&b.cpu, &b.env);
                same("resumed", c, limit, s1, &a, s2, &b, npre, blen);
            }
            free(a.code);
            free(b.code);
        }
    }
    return tried;
}

/* st32pi and st64pi fills: in range, running off the end of memory, misaligned from the start
 * or after a pass, backwards through 0, a zero step, and the base register stored too (no
 * fast path: each pass stores a new value). */
static void test_fills(void **state)
{
    (void)state;
    static const uint32_t counts[] = {0, 1, 2, 3, 8, 33};
    static const struct {
        const char *body;
        uint32_t r1;
    } fills[] = {
        {"st32pi  r4, [r1]+=4", 0x400},
        {"st32pi  r4, [r1]+=4", MEMSZ - 12},   /* out of range at the fourth pass */
        {"st32pi  r4, [r1]+=4", 0x402},        /* misaligned */
        {"st32pi  r4, [r1]+=-4", 8},           /* through 0 to 0xfffffffc */
        {"st32pi  r4, [r1]+=6", 0x400},        /* misaligned from the second pass */
        {"st32pi  r4, [r1]+=0", 0x400},        /* one word, again and again */
        {"st32pi  r1, [r1]+=4", 0x400},        /* the base is the value */
        {"st32pi  r4, [r1]+=64", 0x400},       /* a strided fill */
        {"st64pi  r4, [r1]+=8", 0x400},        /* */
        {"st64pi  r4, [r1]+=8", MEMSZ - 24},   /* out of range at the fourth pass */
        {"st64pi  r4, [r1]+=8", 0x404},        /* misaligned */
        {"st64pi  r4, [r1]+=-8", 16},          /* through 0 */
        {"st64pi  r4, [r1]+=12", 0x400},       /* misaligned from the second pass */
        {"st64pi  r4, [r4]+=8", 0x400},        /* the base is the pair's first */
        {"st64pi  r0, [r1]+=8", 0x400},        /* the base is the pair's second */
        {"st64pi  r12, [r1]+=-64", MEMSZ - 8}, /* a strided fill, backwards */
    };
    unsigned tried = 0;
    for (size_t f = 0; f < sizeof fills / sizeof *fills; f++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
            fcase c = {fills[f].body, "", counts[k], fills[f].r1, 0};
            if (strstr(c.body, "[r4]"))
                c.prefix = "        li      r4, 0x400\n";
            tried += run_case(&c);
        }
    assert_true(tried > 1000);
}

/* ld32pi then st32pi copies (a two-instruction body): apart, overlapping either way (each
 * store feeding the next pass's load, or the reverse), either side running out of memory or
 * misaligned from the start or after a pass, backwards, strided, and the forms left to the
 * dispatch: the value register also a base, one base for both, two value registers. */
static void test_copies(void **state)
{
    (void)state;
    static const uint32_t counts[] = {0, 1, 2, 3, 9, 33};
    static const struct {
        const char *body;
        uint32_t r1, r2;
    } copies[] = {
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=4", 0x400, 0x800},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=4", 0x400, 0x404},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=4", 0x404, 0x400},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=4", MEMSZ - 12, 0x800},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=4", 0x400, MEMSZ - 12},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=4", 0x402, 0x800},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=4", 0x400, 0x802},
        {"ld32pi  r4, [r1]+=6\n        st32pi  r4, [r2]+=4", 0x400, 0x800},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=6", 0x400, 0x800},
        {"ld32pi  r4, [r1]+=-4\n        st32pi  r4, [r2]+=-4", 8, 0x800},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=-4", 0x400, 8},
        {"ld32pi  r4, [r1]+=64\n        st32pi  r4, [r2]+=4", 0x400, 0x404},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r2]+=32", 0x400, 0x800},
        {"ld32pi  r4, [r1]+=0\n        st32pi  r4, [r2]+=4", 0x400, 0x800},
        {"ld32pi  r1, [r1]+=4\n        st32pi  r1, [r2]+=4", 0x400, 0x800},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r4]+=4", 0x400, 0x800},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r4, [r1]+=4", 0x400, 0x800},
        {"ld32pi  r4, [r1]+=4\n        st32pi  r5, [r2]+=4", 0x400, 0x800},
    };
    unsigned tried = 0;
    for (size_t f = 0; f < sizeof copies / sizeof *copies; f++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
            fcase c = {copies[f].body, "", counts[k], copies[f].r1, copies[f].r2};
            tried += run_case(&c);
        }
    assert_true(tried > 1000);
}

/* f32amp passes, rows at once: whole rows and the passes left over, rows that begin after a
 * row in progress (the prefix's steps) or a finished row waiting to be stored, inputs or
 * partials that run out of memory or are misaligned, one register for both (no fast path). */
static void test_amp_rows(void **state)
{
    (void)state;
    static const uint32_t counts[] = {0, 1, 7, 8, 9, 16, 23, 24, 41};
    static const struct {
        const char *prefix;
        uint32_t r1, r2;
        const char *body;
    } rows[] = {
        {"", 0x400, 0x800, "f32amp  r2, r1"},
        {"        f32amp  r2, r1\n        f32amp  r2, r1\n        f32amp  r2, r1\n", 0x400, 0x800,
         "f32amp  r2, r1"},
        {"        f32amp  r2, r1\n        f32amp  r2, r1\n        f32amp  r2, r1\n"
         "        f32amp  r2, r1\n        f32amp  r2, r1\n        f32amp  r2, r1\n"
         "        f32amp  r2, r1\n        f32amp  r2, r1\n",
         0x400, 0x800, "f32amp  r2, r1"},
        {"", MEMSZ - 40, 0x800, "f32amp  r2, r1"}, /* inputs run out in the second row */
        {"", 0x400, MEMSZ - 72, "f32amp  r2, r1"}, /* partials run out in the second row */
        {"", 0x402, 0x800, "f32amp  r2, r1"},      /* misaligned inputs */
        {"", 0x400, 0x804, "f32amp  r2, r1"},      /* misaligned partials */
        {"", 0x400, 0x800, "f32amp  r1, r1"},      /* one register: moves by 12 a pass */
        {"        f32amp  r2, r1\n", 0x800, 0x800, "f32amp  r2, r1"}, /* reads what it stores */
    };
    unsigned tried = 0;
    for (size_t f = 0; f < sizeof rows / sizeof *rows; f++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
            fcase c = {rows[f].body, rows[f].prefix, counts[k], rows[f].r1, rows[f].r2};
            tried += run_case(&c);
        }
    assert_true(tried > 1000);
}

/* The rpt body `8 x f32amp; add` (conv_amp's rows, `add ra, ra, rb`): its passes at once, with the
 * inputs moved on by 32 (packed), 0 (the same inputs again), -64 (backwards, through 0), or
 * past the end of memory after a few rows, partials misaligned, a first row that starts
 * mid-row, and adds that move the inputs by the partials' register, write another register,
 * or misalign the partials (the next row's inputs and partials are what the add leaves). */
#define STEP "f32amp  r2, r1\n        "
#define ROW8 STEP STEP STEP STEP STEP STEP STEP STEP
static void test_amp_row_loops(void **state)
{
    (void)state;
    static const uint32_t counts[] = {0, 1, 2, 5, 17};
    static const struct {
        const char *prefix;
        uint32_t r1, r2;
        const char *body;
    } loops[] = {
        {"        li      r3, 32\n", 0x400, 0x800, ROW8 "add     r1, r1, r3"},
        {"        li      r3, 0\n", 0x400, 0x800, ROW8 "add     r1, r1, r3"},
        {"        li      r3, -96\n", 0x100, 0x800, ROW8 "add     r1, r1, r3"},
        {"        li      r3, 64\n", MEMSZ - 256, 0x400, ROW8 "add     r1, r1, r3"},
        {"        li      r3, 32\n", 0x400, 0x804, ROW8 "add     r1, r1, r3"},
        {"        li      r3, 2\n", 0x400, 0x800, ROW8 "add     r1, r1, r3"},
        {"        li      r3, 32\n        f32amp  r2, r1\n", 0x400, 0x800,
         ROW8 "add     r1, r1, r3"},
        {"", 0x400, 0x800, ROW8 "add     r1, r1, r2"},
        {"        li      r3, 32\n", 0x400, 0x800, ROW8 "add     r3, r1, r3"},
        {"        li      r3, 32\n", 0x400, 0x800, ROW8 "add     r2, r2, r3"},
        {"", 0x400, 0x800, ROW8 "add     r1, r1, r1"},
        {"        li      r3, 4\n", 0x400, 0x800, ROW8 "add     r2, r2, r3"},
    };
    unsigned tried = 0;
    for (size_t f = 0; f < sizeof loops / sizeof *loops; f++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
            fcase c = {loops[f].body, loops[f].prefix, counts[k], loops[f].r1, loops[f].r2};
            tried += run_case(&c);
        }
    assert_true(tried > 1000);
}

/* Where isa_code_build puts the fused operations (isa/fused.def): on a pattern's first
 * instruction after its rpt, the first row that matches; not where a register is shared,
 * the rpt's body is longer or shorter, or the mask leaves the row out. */
static void test_fused_marks(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        uint32_t at, mask;
        unsigned want;
    } c[] = {
        {"rpt r9, e\nst32pi r4, [r1]+=4\ne: exit\n", 1, ISA_FUSED_ALL, ISA_FUSED_fill32},
        {"rpt r9, e\nst32pi r1, [r1]+=4\ne: exit\n", 1, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"rpt r9, e\nst32pi r4, [r1]+=4\ne: exit\n", 1, ISA_FUSED_ALL & ~(1u << ISA_FUSED_fill32),
         ISA_FUSED_NONE},
        {"rpt r9, e\nst64pi r4, [r1]+=8\ne: exit\n", 1, ISA_FUSED_ALL, ISA_FUSED_fill64},
        {"rpt r9, e\nst64pi r0, [r1]+=8\ne: exit\n", 1, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"rpt r9, e\nst32pi r4, [r1]+=4\nnop\ne: exit\n", 1, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"rpt r9, e\nld32pi r4, [r1]+=4\nst32pi r4, [r2]+=4\ne: exit\n", 1, ISA_FUSED_ALL,
         ISA_FUSED_copy32},
        {"rpt r9, e\nld32pi r4, [r1]+=4\nst32pi r4, [r1]+=4\ne: exit\n", 1, ISA_FUSED_ALL,
         ISA_FUSED_NONE},
        {"ld32pi r4, [r1]+=4\nst32pi r4, [r2]+=4\nexit\n", 0, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"rpt r9, e\nf32amp r2, r1\ne: exit\n", 1, ISA_FUSED_ALL, ISA_FUSED_ampsteps},
        {"rpt r9, e\nf32amp r1, r1\ne: exit\n", 1, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"rpt r9, e\n" ROW8 "add r1, r1, r3\ne: exit\n", 1, ISA_FUSED_ALL, ISA_FUSED_amprows},
        {"rpt r9, e\n" ROW8 "add r1, r1, r3\ne: exit\n", 2, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"rpt r9, e\n" ROW8 "add r1, r1, r3\ne: exit\n", 1,
         ISA_FUSED_ALL & ~(1u << ISA_FUSED_amprows), ISA_FUSED_amprow},
        {ROW8 "exit\n", 0, ISA_FUSED_ALL, ISA_FUSED_amprow},
        {ROW8 "exit\n", 0, 0, ISA_FUSED_NONE},
        {"li r1, 1\nnop\nhalt\n", 0, ISA_FUSED_ALL, ISA_FUSED_lis},
        {"li r1, 1\nnop\nhalt\n", 1, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"nop\nli r1, 1\nhalt\n", 0, ISA_FUSED_ALL, ISA_FUSED_nops},
        {"li r1, 1\nhalt\n", 0, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"d: brnzdec r5, d\nhalt\n", 0, ISA_FUSED_ALL, ISA_FUSED_delay},
        {"d: brnzdec r5, e\ne: halt\n", 0, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"ldcw 3, r2\nldcw 4, r2\nhalt\n", 0, ISA_FUSED_ALL, ISA_FUSED_ldcws},
        {"ldcw 3, r2\nldcw 5, r2\nhalt\n", 0, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"ldcw 3, r2\nldcw 4, r3\nhalt\n", 0, ISA_FUSED_ALL, ISA_FUSED_NONE},
        {"ldcw 3, r2\nldcw 4, r2\nhalt\n", 0, ISA_FUSED_ALL & ~(1u << ISA_FUSED_ldcws),
         ISA_FUSED_NONE},
    };
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        isa_prog p;
        tu_assemble("marks", c[k].src, &p);
        isa_insn *code = isa_code_build(&p, c[k].mask);
        if (code[c[k].at].fused != c[k].want)
            fail_msg("case %zu: fused %u at %u, not %u", k, code[c[k].at].fused, c[k].at,
                     c[k].want);
        free(code);
        isa_prog_free(&p);
    }
}

/* ---- the supervisor's fused runs (li and nop, ldcw, a delay loop) ---- */

/* A supervisor program built with every fused operation and with none, from the same state;
 * `busy_until` > 0: workers own barrel slots 1..5 until then (the supervisor may issue only
 * in slot 0 before it, so no run may be fused there). */
typedef struct scase {
    const char *src;
    uint32_t r2, r5;     /* the weights' address; the delay's count */
    uint64_t busy_until; /* 0: no worker */
    const isa_rates *rates;
} scase;

static void build_super(machine *m, const scase *c, int fused, const uint8_t *mem)
{
    uint8_t cw[ISA_CW_BYTES] = {0};
    uint32_t regs[ISA_NREGS] = {0};
    regs[2] = c->r2;
    regs[5] = c->r5;
    regs[7] = 0x100; /* where the loads of the load-use cases read */
    regs[9] = 3;     /* an rpt's count */
    build(m, c->src, !fused, mem, cw, regs, c->rates);
    m->cpu.wid = ISA_SUPER_WID;
    for (unsigned s = 1; s < ISA_BARREL; s++)
        m->free_from[s] = c->busy_until;
    m->slots_free = c->busy_until;
}

static void same_super(const char *what, const scase *c, uint64_t limit, isa_stop s1,
                       const machine *a, isa_stop s2, const machine *b)
{
    char where[240];
    snprintf(where, sizeof where, "%s: `%s` (r2 0x%x, r5 %u, busy to %llu), limit %llu", what,
             c->src, c->r2, c->r5, (unsigned long long)c->busy_until, (unsigned long long)limit);
    const isa_cpu *x = &a->cpu, *y = &b->cpu;
    if (s1 != s2 || x->fault != y->fault || x->fault_addr != y->fault_addr || x->pc != y->pc)
        fail_msg("%s: stop %d fault %d at 0x%x pc 0x%x, one at a time %d %d 0x%x 0x%x", where, s1,
                 x->fault, x->fault_addr, x->pc, s2, y->fault, y->fault_addr, y->pc);
    if (x->t != y->t || x->ninsn != y->ninsn || x->busy != y->busy || x->rpt_left != y->rpt_left ||
        x->ld_horizon != y->ld_horizon || memcmp(x->ld_ready, y->ld_ready, sizeof x->ld_ready))
        fail_msg("%s: cycle %llu insns %llu busy %llu rpt %u, one at a time %llu %llu %llu %u",
                 where, (unsigned long long)x->t, (unsigned long long)x->ninsn,
                 (unsigned long long)x->busy, x->rpt_left, (unsigned long long)y->t,
                 (unsigned long long)y->ninsn, (unsigned long long)y->busy, y->rpt_left);
    for (unsigned r = 0; r < ISA_NREGS; r++)
        if (x->r[r] != y->r[r])
            fail_msg("%s: r%u = 0x%x, one at a time 0x%x", where, r, x->r[r], y->r[r]);
    if (memcmp(a->cw, b->cw, sizeof a->cw) || memcmp(a->mem, b->mem, sizeof a->mem))
        fail_msg("%s: the weights or memory differ", where);
}

/* c fused and one at a time, without a limit and then under every limit to past its end
 * (resumed after each stop at the limit); returns how many fused dispatches the unlimited
 * run saved (its instructions less its dispatches are not visible: the cycles it ended at). */
static unsigned run_super_case(const scase *c)
{
    static uint8_t mem[MEMSZ];
    for (uint32_t k = 0; k < MEMSZ; k += 4)
        tu_put32(mem, k, rnd_float());
    tu_put32(mem, 0x100, 0x400); /* ld32 r2, [r7+0]: a weights' address */
    tu_put32(mem, 0x104, 17);    /* ld32 r5, [r7+4]: a delay's count */
    static machine a, b;
    build_super(&a, c, 1, mem);
    build_super(&b, c, 0, mem);
    isa_stop s1 = isa_run_super(&a.cpu, &a.env), s2 = isa_run_super(&b.cpu, &b.env);
    same_super("no limit", c, UINT64_MAX, s1, &a, s2, &b);
    const uint64_t end = a.cpu.t;
    free(a.code);
    free(b.code);
    unsigned tried = 0;
    for (uint64_t limit = 0; limit <= end + ISA_BARREL; limit++, tried++) {
        build_super(&a, c, 1, mem);
        build_super(&b, c, 0, mem);
        a.env.limit = b.env.limit = limit;
        s1 = isa_run_super(&a.cpu, &a.env);
        s2 = isa_run_super(&b.cpu, &b.env);
        same_super("stopped", c, limit, s1, &a, s2, &b);
        if (s1 == STOP_LIMIT) {
            a.cpu.fault = b.cpu.fault = FAULT_NONE;
            a.env.limit = b.env.limit = UINT64_MAX;
            s1 = isa_run_super(&a.cpu, &a.env);
            s2 = isa_run_super(&b.cpu, &b.env);
            same_super("resumed", c, limit, s1, &a, s2, &b);
        }
        free(a.code);
        free(b.code);
    }
    return tried;
}

#define LDCW8(r)                                                                                   \
    "ldcw 0, " r "\nldcw 1, " r "\nldcw 2, " r "\nldcw 3, " r "\nldcw 4, " r "\nldcw 5, " r        \
    "\nldcw 6, " r "\nldcw 7, " r "\n"

/* The exchange code's shape (li set-up, nop padding, delay loops, a send that stops), a
 * convolution pass's weight loads (aligned, misaligned, running out of memory, after a load
 * still filling the address, slots not in turn, the last slot), and runs that end an rpt
 * body; each with no worker and with workers owning the other slots (nothing fused may run),
 * with the table's costs and with an ldcw of several cycles. */
static void test_super_runs(void **state)
{
    (void)state;
    static const isa_rates slow = {.load_bpc = 2, .store_bpc = 1, .amp_units = 4};
    static const char *const src[] = {
        "li r1, 5\nnop\nli r2, 7\nli r3, 0x10000\nnop\nnop\nli r4, 3\nsend r1, r2, r3, r4\n",
        "nop\nnop\nnop\nli r1, 1\nhalt\n",
        "li r6, 1\nd: brnzdec r5, d\nli r6, 2\nli r1, 4\nhalt\n",
        "ld32 r5, [r7+4]\nd: brnzdec r5, d\nhalt\n",
        "d: brnzdec r5, d\nhalt\n",
        LDCW8("r2") "li r1, 1\nhalt\n",
        "ld32 r2, [r7+0]\n" LDCW8("r2") "halt\n",
        "ldcw 30, r2\nldcw 31, r2\nldcw 0, r2\nhalt\n",
        "ldcw 5, r2\nldcw 7, r2\nldcw 8, r2\nhalt\n",
        "ldcw 1, r2\nldcw 2, r3\nldcw 3, r2\nhalt\n",
        "rpt r9, e\nli r1, 1\nnop\nli r2, 2\ne: halt\n",
        "rpt r9, e\nnop\nnop\ne: li r3, 3\nhalt\n",
        "rpt r9, e\nldcw 0, r2\nldcw 1, r2\ne: halt\n",
        "rpt r9, e\nli r1, 1\ne: nop\nli r2, 2\nhalt\n",
        "rpt r9, e\nldcw 0, r2\ne: ldcw 1, r2\nhalt\n",
    };
    static const uint32_t addrs[] = {0x400, 0x404, MEMSZ - 64};
    static const uint32_t counts[] = {0, 1, 2, 9};
    static const uint64_t busy[] = {0, 40};
    unsigned tried = 0;
    for (size_t k = 0; k < sizeof src / sizeof *src; k++)
        for (size_t a = 0; a < sizeof addrs / sizeof *addrs; a++)
            for (size_t n = 0; n < sizeof counts / sizeof *counts; n++)
                for (size_t w = 0; w < sizeof busy / sizeof *busy; w++)
                    for (int r = 0; r < 2; r++) {
                        scase c = {src[k], addrs[a], counts[n], busy[w], r ? &slow : NULL};
                        tried += run_super_case(&c);
                    }
    assert_true(tried > 10000);
}

/* A worker running the supervisor's fused instructions (li, nop, a delay loop) takes their
 * base handlers: the same as with none fused. */
static void test_super_rows_in_worker(void **state)
{
    (void)state;
    fcase c = {"li r4, 1", "        li r5, 3\nd:      brnzdec r5, d\n        nop\n        nop\n", 4,
               0x400, 0};
    assert_true(run_case(&c) > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_marks),
        cmocka_unit_test(test_fills),
        cmocka_unit_test(test_copies),
        cmocka_unit_test(test_amp_rows),
        cmocka_unit_test(test_amp_row_loops),
        cmocka_unit_test(test_super_runs),
        cmocka_unit_test(test_super_rows_in_worker),
    };
    return cmocka_run_group_tests_name("interp_fast", tests, NULL, NULL);
}
