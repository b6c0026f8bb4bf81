/* interp: the instruction interpreter, with exact issue times for one context.
 *
 * Decode happens once (isa_prog_decode); this file only dispatches on pre-decoded isa_insn
 * structs, through macros so that a switch or GCC's computed goto can be used
 * (isa/interp_loop.inc is included twice: once for workers, once for the supervisor). What
 * the table says is enforced at dispatch, not in handlers: an opcode the context may not run
 * (FL_SUPER, FL_WORKER) faults; after an FL_LOAD opcode the supervisor's stall tracks the
 * registers it loaded (isa_insn.loads); before each issue it waits for those it reads
 * (isa_insn.reads).
 *
 * Timing. A worker issues one instruction per barrel turn: its next issue is 6 x wcycles tile
 * cycles after this one; memory latency is hidden by the barrel. The supervisor issues in any
 * barrel slot that no running worker owns: after an instruction costing scycles it issues at
 * the first cycle >= issue + scycles whose slot (cycle mod 6) is free; a register loaded by a
 * supervisor load is usable 7 cycles after the load issues (the 6-cycle load-use stall of
 * FACTS.md). Left out: bank conflicts, the 16 B/cycle load-port limit (see docs/timing.md),
 * instruction fetch, and self-modifying code (the text is decoded once at load).
 *
 * Floating point is IEEE fp32 as the host computes it with -ffp-contract=off (ISO C mode), so
 * results are bit-identical on every run and thread count; `fma` and `v2fma` use fmaf. */
#include "isa/interp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

#if defined(__GNUC__) && !defined(ISA_INTERP_SWITCH)
#define ISA_INTERP_GOTO 1
#else
#define ISA_INTERP_GOTO 0
#endif

static inline float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t f_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline uint32_t ld32(const uint8_t *m, uint32_t a)
{
    uint32_t v;
    memcpy(&v, m + a, 4);
    return v;
}

static inline void st32(uint8_t *m, uint32_t a, uint32_t v)
{
    memcpy(m + a, &v, 4);
}

static inline uint32_t ftoi_sat(float f)
{
    if (isnan(f))
        return 0;
    if (f >= 2147483648.0f)
        return 0x7fffffffu;
    if (f < -2147483648.0f)
        return 0x80000000u;
    return (uint32_t)(int32_t)f;
}

/* IEEE binary16 -> binary32, exact. */
uint32_t isa_half_to_float_bits(uint32_t h)
{
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf or nan */
        return sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0);
    if (exp == 0) {
        if (man == 0)
            return sign;
        /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        man &= 0x3ffu;
        return sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13);
    }
    return sign | ((exp + 127 - 15) << 23) | (man << 13);
}

/* IEEE binary32 -> binary16, round to nearest even, overflow to inf, nan stays nan. */
uint32_t isa_float_bits_to_half(uint32_t f)
{
    uint32_t sign = (f >> 16) & 0x8000u;
    uint32_t exp = (f >> 23) & 0xffu;
    uint32_t man = f & 0x7fffffu;
    if (exp == 0xff)
        return sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0);
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f)
        return sign | 0x7c00u;
    if (e <= 0) {
        if (e < -10)
            return sign; /* rounds to zero */
        man |= 0x800000u;
        unsigned shift = (unsigned)(14 - e);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            half++;
        return sign | half;
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
        half++; /* may carry into the exponent, up to inf: correct */
    return sign | half;
}

/* First cycle >= c at which the supervisor owns a barrel slot. */
static uint64_t super_slot(uint64_t c, const uint64_t *free_from)
{
    uint64_t best = UINT64_MAX;
    for (unsigned s = 0; s < ISA_BARREL; s++) {
        uint64_t from = c > free_from[s] ? c : free_from[s];
        uint64_t r = from % ISA_BARREL;
        uint64_t at = from + (s >= r ? s - r : s + ISA_BARREL - r);
        if (at < best)
            best = at;
    }
    return best;
}

/* The dispatch for an opcode with flags fl in a worker (w = 1) or the supervisor (w = 0):
 * the one place FL_SUPER and FL_WORKER are enforced. An opcode the context may not run goes
 * to the PRIVILEGE handler, which faults (after any load-use stall, at its issue cycle). */
#define RUNS_IN(fl, w) (!((fl) & ((w) ? FL_SUPER : FL_WORKER)))
#define OP_PRIVILEGE (OP_COUNT + 1) /* the switch dispatch's case for it */

#define IS_WORKER 1
#define RUN_FN isa_run_worker
#include "isa/interp_loop.inc"
#undef IS_WORKER
#undef RUN_FN

#define IS_WORKER 0
#define RUN_FN isa_run_super
#include "isa/interp_loop.inc"
#undef IS_WORKER
#undef RUN_FN

void isa_fault_text(const isa_cpu *cpu, char *buf, unsigned len)
{
    switch (cpu->fault) {
    case FAULT_NONE: snprintf(buf, len, "no fault"); break;
    case FAULT_ILLEGAL: snprintf(buf, len, "illegal instruction"); break;
    case FAULT_PRIVILEGE:
        snprintf(buf, len, "%s",
                 cpu->wid == ISA_SUPER_WID ? "worker-only instruction in the supervisor"
                                           : "supervisor-only instruction in a worker");
        break;
    case FAULT_BAD_PC: snprintf(buf, len, "pc outside the text segment"); break;
    case FAULT_OUT_OF_RANGE:
        snprintf(buf, len, "memory access out of range at 0x%x", cpu->fault_addr);
        break;
    case FAULT_MISALIGNED:
        snprintf(buf, len, "misaligned memory access at 0x%x", cpu->fault_addr);
        break;
    case FAULT_TOO_MANY_WORKERS:
        snprintf(buf, len, "too many workers: no free worker context (six per tile)");
        break;
    case FAULT_CSR:
        snprintf(buf, len, "write to a read-only control register, or a bad value (0x%x)",
                 cpu->fault_addr);
        break;
    case FAULT_LIMIT: snprintf(buf, len, "ran past the cycle limit"); break;
    case FAULT_SYNC_DEADLOCK: snprintf(buf, len, "sync deadlock"); break;
    case FAULT_XCHG_DEST:
        snprintf(buf, len, "exchange to a tile, IPU or address outside the system (0x%x)",
                 cpu->fault_addr);
        break;
    }
}

isa_insn *isa_code_build(const isa_prog *prog)
{
    isa_insn *code = xcalloc((size_t)prog->ncode + 1, sizeof *code);
    if (prog->ncode)
        memcpy(code, prog->code, prog->ncode * sizeof *code);
    code[prog->ncode].op = OP_ILLEGAL;
    code[prog->ncode].imm = -1; /* marks the end-of-text sentinel */
    code[prog->ncode].target = UINT32_MAX;
    return code;
}
