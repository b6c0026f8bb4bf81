/* pass: what a supervisor waiting at a sync repeats until its next sync (isa_sync_pass), and
 * where such a pass can start (isa_insn.park, marked once when the code is built), read from
 * the decoded text and the registers alone: the ISA's half of parking (hw/park.h is the
 * engine's). Left out: passes through anything but sync, brnzdec, brnz, brz, br and nop (no
 * memory, workers, exchange or rpt), and passes longer than ISA_PASS_MAX instructions. */
#include "isa/interp.h"

/* What an instruction is to a loop's pass (isa_sync_pass). */
typedef enum pass_kind { PASS_NO, PASS_SYNC, PASS_COUNT, PASS_COND, PASS_JUMP, PASS_ON } pass_kind;

static pass_kind pass_kind_of(unsigned op)
{
    switch (op) {
    case OP_sync: return PASS_SYNC;
    case OP_brnzdec: return PASS_COUNT;
    case OP_brnz:
    case OP_brz: return PASS_COND;
    case OP_br: return PASS_JUMP;
    case OP_nop: return PASS_ON;
    default: return PASS_NO;
    }
}

/* Whether some registers make a loop's pass from code[k], now at code[j] after len
 * instructions, reach the sync at k - 1 (isa_insn.park: what isa_sync_pass can find). */
static int may_loop(const isa_insn *code, uint32_t ncode, uint32_t k, uint32_t j, unsigned len)
{
    if (j >= ncode || len >= ISA_PASS_MAX)
        return 0;
    const isa_insn *in = &code[j];
    switch (pass_kind_of(in->op)) {
    case PASS_SYNC: return j + 1 == k;
    case PASS_COND: /* either way */
        return may_loop(code, ncode, k, j + 1, len + 1) ||
               may_loop(code, ncode, k, in->target, len + 1);
    case PASS_COUNT: /* taken in a pass */
    case PASS_JUMP: return may_loop(code, ncode, k, in->target, len + 1);
    case PASS_ON: return may_loop(code, ncode, k, j + 1, len + 1);
    default: return 0;
    }
}

void isa_mark_passes(isa_insn *code, uint32_t n)
{
    for (uint32_t k = n; k-- > 0;) { /* from the end: each run of syncs counted once */
        const isa_insn *next = &code[k + 1];
        if (code[k].op == OP_sync) {
            int same = k + 1 < n && next->op == OP_sync && next->imm == code[k].imm;
            code[k].park = (uint16_t)(same && next->park < UINT16_MAX ? next->park + 1 : 1);
        }
    }
    for (uint32_t k = 1; k < n; k++)
        if (code[k - 1].op == OP_sync && code[k].op != OP_sync)
            code[k].park = (uint16_t)may_loop(code, n, k, k, 0);
}

/* A loop's pass from code[k] with registers r (isa_sync_pass). */
static uint32_t loop_pass(const isa_insn *code, uint32_t ncode, uint32_t k, const uint32_t *r,
                          isa_pass *p)
{
    uint32_t reads = 0, n = UINT32_MAX;
    for (uint32_t j = k, len = 0; len < ISA_PASS_MAX && j < ncode; len++) {
        const isa_insn *in = &code[j];
        uint32_t next = j + 1;
        switch (pass_kind_of(in->op)) {
        case PASS_SYNC:
            if (j + 1 != k || (p->counters & reads))
                return 0;
            p->n = n;
            p->len = len + 1;
            p->cost = p->lead + in->scycles;
            return n;
        case PASS_COUNT:
            if ((p->counters >> in->ra & 1) || r[in->ra] == 0)
                return 0;
            p->counters |= 1u << in->ra;
            n = n < r[in->ra] ? n : r[in->ra];
            next = in->target;
            break;
        case PASS_COND:
            reads |= 1u << in->ra;
            if ((r[in->ra] != 0) == (in->op == OP_brnz))
                next = in->target;
            break;
        case PASS_JUMP: next = in->target; break;
        case PASS_ON: break;
        default: return 0;
        }
        p->lead += in->scycles;
        j = next;
    }
    return 0;
}

uint32_t isa_sync_pass(const isa_insn *code, uint32_t ncode, uint32_t k, uint32_t zone,
                       const uint32_t *r, isa_pass *p)
{
    *p = (isa_pass){0, 0, 0, 0, 0, 0};
    if (k == 0 || k >= ncode || code[k - 1].op != OP_sync || code[k].park == 0)
        return 0;
    const isa_insn *in = &code[k];
    if (in->op != OP_sync)
        return loop_pass(code, ncode, k, r, p);
    if (in->imm != (int32_t)zone)
        return 0;
    *p = (isa_pass){in->park, 1, 0, 1, 0, in->scycles};
    return p->n;
}
