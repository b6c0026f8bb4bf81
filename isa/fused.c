/* fused: where the fused pseudo-operations of isa/fused.def stand in a program's text.
 *
 * Each row of the table has a matcher here: whether the instructions from code[k] on are its
 * pattern, read from the decoded text alone (opcodes, registers, rpt targets). What only the
 * run can tell (the registers' values, the limit, how the loop was entered) is left to the
 * fused handler (isa/interp_fused.inc), which falls back to the base instruction. A run (the
 * supervisor's li and nop, ldcw) is matched on its first two instructions; the handler runs
 * as many as follow at run time. Left out:
 * any pattern across a branch target (the text is not analysed for control flow: a pattern
 * is only ever entered at its first instruction's handler, which checks what it needs). */
#include "isa/interp.h"

/* code[k] is the body of an rpt of len instructions: an rpt just before it ends there. */
static int rpt_body(const isa_insn *code, uint32_t k, uint32_t len)
{
    return k > 0 && code[k - 1].op == OP_rpt && code[k - 1].target == k + len;
}

/* code[k..k+8) is a whole f32amp row: 8 steps on the same rd and ra, rd != ra. */
static int amp_row(const isa_insn *code, uint32_t n, uint32_t k)
{
    if (k + 8 > n || code[k].op != OP_f32amp || code[k].rd == code[k].ra)
        return 0;
    for (uint32_t q = 1; q < 8; q++)
        if (code[k + q].op != OP_f32amp || code[k + q].rd != code[k].rd ||
            code[k + q].ra != code[k].ra)
            return 0;
    return 1;
}

static int match_ampsteps(const isa_insn *code, uint32_t n, uint32_t k)
{
    return k < n && code[k].op == OP_f32amp && code[k].rd != code[k].ra && rpt_body(code, k, 1);
}

static int match_amprows(const isa_insn *code, uint32_t n, uint32_t k)
{
    return amp_row(code, n, k) && k + 9 <= n && code[k + 8].op == OP_add && rpt_body(code, k, 9);
}

static int match_amprow(const isa_insn *code, uint32_t n, uint32_t k)
{
    return amp_row(code, n, k);
}

static int match_copy32(const isa_insn *code, uint32_t n, uint32_t k)
{
    if (k + 2 > n || !rpt_body(code, k, 2))
        return 0;
    const isa_insn *ld = &code[k], *st = &code[k + 1];
    return ld->op == OP_ld32pi && st->op == OP_st32pi && st->rd == ld->rd && ld->ra != ld->rd &&
           st->ra != ld->rd && st->ra != ld->ra;
}

static int match_fill32(const isa_insn *code, uint32_t n, uint32_t k)
{
    return k < n && code[k].op == OP_st32pi && code[k].ra != code[k].rd && rpt_body(code, k, 1);
}

static int match_fill64(const isa_insn *code, uint32_t n, uint32_t k)
{
    const isa_insn *in = &code[k];
    return k < n && in->op == OP_st64pi && in->ra != in->rd && in->ra != in->rd + 1 &&
           rpt_body(code, k, 1);
}

/* code[k] and the one after are li or nop (neither reads a register, loads, or branches). */
static int straight(const isa_insn *code, uint32_t n, uint32_t k)
{
    for (uint32_t q = k; q < k + 2; q++)
        if (q >= n || (code[q].op != OP_li && code[q].op != OP_nop))
            return 0;
    return 1;
}

static int match_lis(const isa_insn *code, uint32_t n, uint32_t k)
{
    return straight(code, n, k);
}

static int match_nops(const isa_insn *code, uint32_t n, uint32_t k)
{
    return straight(code, n, k);
}

static int match_delay(const isa_insn *code, uint32_t n, uint32_t k)
{
    return k < n && code[k].op == OP_brnzdec && code[k].target == k;
}

/* code[k] and the one after load the AMP's weights from the same register into slots in
 * turn (the slot of the next is one more, and within the store). */
static int match_ldcws(const isa_insn *code, uint32_t n, uint32_t k)
{
    if (k + 2 > n || code[k].op != OP_ldcw || code[k + 1].op != OP_ldcw ||
        code[k + 1].ra != code[k].ra || code[k + 1].imm != code[k].imm + 1)
        return 0;
    return code[k].imm >= 0 && (uint32_t)code[k].imm + 2u <= ISA_CW_BYTES / 16u;
}

static const struct {
    uint8_t base;
    int (*match)(const isa_insn *code, uint32_t n, uint32_t k);
} fused_tab[ISA_FUSED_COUNT] = {
#define FUSED(name, base, ctx, pattern) [ISA_FUSED_##name] = {OP_##base, match_##name},
#include "isa/fused.def"
#undef FUSED
};

/* the supervisor's rows come last: its dispatch tells them from the workers' by one compare */
#define FUSED(name, base, ctx, pattern)                                                            \
    _Static_assert(((int)ISA_FUSED_##name >= (int)ISA_FUSED_SUPER_FIRST) == ISA_FUSED_CTX_##ctx,   \
                   "isa/fused.def: the supervisor's rows (S) after the workers' (W)");
#include "isa/fused.def"
#undef FUSED

void isa_fuse(isa_insn *code, uint32_t n, uint32_t mask)
{
    for (uint32_t k = 0; k < n; k++) {
        code[k].fused = ISA_FUSED_NONE;
        for (unsigned f = ISA_FUSED_NONE + 1; f < ISA_FUSED_COUNT; f++)
            if ((mask >> f & 1) && code[k].op == fused_tab[f].base &&
                fused_tab[f].match(code, n, k)) {
                code[k].fused = (uint8_t)f;
                break;
            }
    }
}
