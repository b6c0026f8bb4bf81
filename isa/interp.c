/* interp: the instruction interpreter, with exact issue times for one context.
 *
 * Decode happens once (isa_prog_decode); this file only dispatches on pre-decoded isa_insn
 * structs, through macros so that a switch or GCC's computed goto can be used
 * (isa/interp_loop.inc is included twice: once for workers, once for the supervisor; with
 * computed goto a worker jumps to the handler address isa_code_build stored in each
 * instruction, the supervisor through its table). The fast paths are fused operations
 * (isa/fused.def: a short loop or run of base instructions run at once, with handlers of
 * their own in isa/interp_fused.inc) that isa_code_build puts on the text, each for workers
 * or for the supervisor. What
 * the table says is enforced at dispatch, not in handlers: an opcode the context may not run
 * (FL_SUPER, FL_WORKER) faults; after an FL_LOAD opcode the supervisor's stall tracks the
 * registers it loaded (isa_insn.loads); before each issue it waits for those it reads
 * (isa_insn.reads).
 *
 * Timing. A worker issues one instruction per barrel turn: its next issue is 6 x wcycles tile
 * cycles after this one (wcycles and scycles as isa_code_rate set them for the machine's
 * memory bandwidth and AMP units); memory latency is hidden by the barrel. The supervisor issues in any
 * barrel slot that no running worker owns: after an instruction costing scycles it issues at
 * the first cycle >= issue + scycles whose slot (cycle mod 6) is free; a register loaded by a
 * supervisor load is usable 7 cycles after the load issues (the 6-cycle load-use stall of
 * docs/sources.md, Chip). The AMP (f32amp, f16amp, ampst, ampz, ldcw) is the stationary-weight
 * model of docs/timing.md, "The AMP". Left out: bank conflicts, instruction fetch, and
 * self-modifying code (the text is decoded once at load).
 *
 * Floating point is IEEE fp32 as the host computes it with -ffp-contract=off (the Makefile), so
 * results are bit-identical on every run and thread count; `fma` and `v2fma` use fmaf, `fdiv`
 * and `fsqrt` C's / and sqrtf (correctly rounded); `fexp` and `flog` round the host libm's
 * double exp and log once, so they are deterministic for a given libm (docs/timing.md). */
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

/* ---- the AMP (docs/timing.md, "The AMP") ---- */

/* A row's shape by kind: steps, inputs per step, output lanes. */
typedef struct amp_shape {
    unsigned steps, in_per_step, lanes, in_bytes;
} amp_shape;
static const amp_shape amp_shapes[] = {
    [ISA_AMP_F32] = {8, 1, 16, 4},
    [ISA_AMP_F16] = {4, 4, 8, 8},
};

/* out[n] = p[n] + sum over k < NIN of x[k] * w[k][n], for n < LANES: each lane sums in k
 * order, each product rounded to fp32 and then each sum (-ffp-contract=off keeps them
 * apart). Lanes are independent, so k runs outside and the lane inside, with fixed trip
 * counts the compiler can unroll or vectorise. */
#define AMP_ROW(NIN, LANES, W)                                                                     \
    do {                                                                                           \
        float acc_[LANES];                                                                         \
        memcpy(acc_, a->p, sizeof acc_);                                                           \
        for (unsigned k = 0; k < (NIN); k++) {                                                     \
            const float xk = a->x[k];                                                              \
            for (unsigned n = 0; n < (LANES); n++) {                                               \
                float prod = xk * (W)[k][n];                                                       \
                acc_[n] = acc_[n] + prod;                                                          \
            }                                                                                      \
        }                                                                                          \
        memcpy(a->out, acc_, sizeof acc_);                                                         \
    } while (0)

/* f32amp's row, AMP_ROW(8, 16, w) on inputs x[8] and partials p[16] into out[16], with the
 * 16 lanes in four vectors of four held in registers and the weights read in place: each
 * lane's arithmetic is the scalar one (the product rounded, then the sum, in k order; GCC's
 * vector extension does elementwise IEEE operations). Twice as fast as the array form, whose
 * accumulators go through memory. x and p are bytes (fp32 values, any alignment): the
 * pipeline's own arrays, or a whole row's inputs and partials read in place from tile memory
 * (amp_row_whole). */
typedef float amp_v4 __attribute__((vector_size(16)));

static void amp_row_f32(const uint8_t *x, const uint8_t *p, const uint8_t *cw, float *out)
{
    amp_v4 c0, c1, c2, c3, w0, w1, w2, w3;
    memcpy(&c0, p, 16);
    memcpy(&c1, p + 16, 16);
    memcpy(&c2, p + 32, 16);
    memcpy(&c3, p + 48, 16);
    for (unsigned k = 0; k < 8; k++, cw += 64) {
        float xk;
        memcpy(&xk, x + 4 * k, 4);
        const amp_v4 xv = {xk, xk, xk, xk};
        memcpy(&w0, cw, 16);
        memcpy(&w1, cw + 16, 16);
        memcpy(&w2, cw + 32, 16);
        memcpy(&w3, cw + 48, 16);
        c0 = c0 + xv * w0;
        c1 = c1 + xv * w1;
        c2 = c2 + xv * w2;
        c3 = c3 + xv * w3;
    }
    memcpy(out, &c0, 16);
    memcpy(out + 4, &c1, 16);
    memcpy(out + 8, &c2, 16);
    memcpy(out + 12, &c3, 16);
}

/* The row is complete: compute it against the weights, f32[8][16] (f32amp) or f16[16][8]
 * (f16amp), row k for input k; it becomes the finished row. */
static void amp_finish(isa_amp *a, const uint8_t *cw)
{
    const amp_shape *s = &amp_shapes[a->kind];
    if (a->kind == ISA_AMP_F32) {
        amp_row_f32((const uint8_t *)a->x, (const uint8_t *)a->p, cw, a->out);
    } else {
        uint16_t h[16][8];
        float w[16][8];
        memcpy(h, cw, sizeof h);
        for (unsigned k = 0; k < 16; k++)
            for (unsigned n = 0; n < 8; n++)
                w[k][n] = bits_f(isa_half_to_float_bits(h[k][n]));
        AMP_ROW(16, 8, w);
    }
    a->out_at = a->row_at;
    a->out_lanes = (uint8_t)s->lanes;
    a->out_kind = a->kind;
    a->step = 0;
    a->kind = ISA_AMP_NONE;
}

/* May a kind step go on in this pipeline? Not when a row of the other kind is under way, or
 * none is and a finished row of the other kind waits to be stored (FAULT_AMP). */
static inline int amp_may(const isa_amp *a, int kind)
{
    return a->step ? a->kind == kind : !a->out_lanes || a->out_kind == kind;
}

/* One f32amp or f16amp step, checked by the caller (amp_may, and the accesses: in_bytes of
 * the shape at in, 8 at pp, each aligned to its size): the row's next inputs from in, two
 * partials from pp, then two lanes of the finished row stored where they belong. */
static inline void amp_step(isa_amp *a, const uint8_t *cw, uint8_t *mem, uint32_t in, uint32_t pp,
                            int kind)
{
    const amp_shape *s = &amp_shapes[kind];
    const unsigned j = a->step;
    if (j == 0)
        a->row_at = pp;
    a->kind = (uint8_t)kind;
    for (unsigned q = 0; q < s->in_per_step; q++) {
        uint32_t v = 0;
        if (kind == ISA_AMP_F32)
            memcpy(&v, mem + in, 4);
        else {
            uint16_t h;
            memcpy(&h, mem + in + 2 * q, 2);
            v = isa_half_to_float_bits(h);
        }
        a->x[j * s->in_per_step + q] = bits_f(v);
    }
    memcpy(&a->p[2 * j], mem + pp, 8);
    if (a->out_lanes) { /* lanes 2j, 2j+1 of the finished row */
        memcpy(mem + a->out_at + 8 * j, &a->out[2 * j], 8);
        a->out_lanes -= 2;
    }
    a->step = (uint8_t)(j + 1);
    if (j + 1 == s->steps)
        amp_finish(a, cw);
}

/* ampst: store the finished row (all its lanes: no row is in progress). */
static void amp_drain(isa_amp *a, uint8_t *mem)
{
    if (a->out_lanes)
        memcpy(mem + a->out_at, a->out, 4u * a->out_lanes);
    a->out_lanes = 0;
}

/* A whole f32amp row at once (the fused amprow, amprows, ampsteps: 8 steps from step 0, checked by
 * the caller as each step would be: amp_may, the 32 input bytes at in and the 64 partial
 * bytes at pp aligned and in range). The 8 steps read inputs and partials and store the
 * finished row's lanes in turn; when those stores cannot touch what the row reads, storing
 * the row before first, then reading the inputs and partials into the pipeline (once, where
 * the steps leave them) and computing the row from there leaves memory and the pipeline as
 * the 8 steps do. Else (a row accumulated in place over the one before) the steps one by
 * one. */
static __attribute__((noinline)) void amp_row_steps(isa_amp *a, const uint8_t *cw, uint8_t *mem,
                                                    uint32_t in, uint32_t pp)
{
    for (uint32_t k = 0; k < 8; k++)
        amp_step(a, cw, mem, in + 4 * k, pp + 8 * k, ISA_AMP_F32);
}

static void amp_row_whole(isa_amp *a, const uint8_t *cw, uint8_t *mem, uint32_t in, uint32_t pp)
{
    uint64_t o0 = a->out_at, o1 = o0 + 4u * a->out_lanes;
    if (a->out_lanes &&
        ((o0 < (uint64_t)in + 32 && in < o1) || (o0 < (uint64_t)pp + 64 && pp < o1))) {
        amp_row_steps(a, cw, mem, in, pp);
        return;
    }
    if (a->out_lanes == 16) /* the row before, whole (a fixed-size copy) */
        memcpy(mem + a->out_at, a->out, 64);
    else
        amp_drain(a, mem);
    memcpy(a->x, mem + in, 32);
    memcpy(a->p, mem + pp, 64);
    amp_row_f32((const uint8_t *)a->x, (const uint8_t *)a->p, cw, a->out);
    a->out_at = pp;
    a->out_lanes = 16;
    a->out_kind = ISA_AMP_F32;
    a->row_at = pp;
    a->step = 0;
    a->kind = ISA_AMP_NONE;
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

/* One copy of each interpreter function: a worker jumps to the label addresses stored in its
 * code (isa_insn.wgo), which must be this copy's, so it is neither inlined nor cloned. */
#if defined(__GNUC__) && !defined(__clang__)
#define INTERP_ONE_COPY __attribute__((noinline, noclone))
#else
#define INTERP_ONE_COPY __attribute__((noinline))
#endif

/* The handlers' addresses a worker's code stores (isa_insn.wgo): by opcode, and by fused
 * operation (NULL with switch dispatch). */
typedef struct interp_labels {
    const void *const *op;    /* [OP_COUNT + 1]: OP_ILLEGAL's last */
    const void *const *fused; /* [ISA_FUSED_COUNT] */
} interp_labels;

#define IS_WORKER 1
#define RUN_FN run_worker
#include "isa/interp_loop.inc"
#undef IS_WORKER
#undef RUN_FN

#define IS_WORKER 0
#define RUN_FN run_super
#include "isa/interp_loop.inc"
#undef IS_WORKER
#undef RUN_FN

isa_stop isa_run_worker(isa_cpu *cpu, const isa_env *env)
{
    return run_worker(cpu, env, NULL);
}

isa_stop isa_run_super(isa_cpu *cpu, const isa_env *env)
{
    return run_super(cpu, env, NULL);
}

void isa_rpt_wrap(isa_cpu *cpu)
{
    if (cpu->rpt_left && cpu->pc / ISA_INSN_BYTES == cpu->rpt_end && --cpu->rpt_left)
        cpu->pc = cpu->rpt_start * ISA_INSN_BYTES;
}

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
    case FAULT_BAD_PC:
        if (cpu->fault_addr % ISA_INSN_BYTES)
            snprintf(buf, len, "misaligned pc 0x%x (instructions are %d-byte aligned)",
                     cpu->fault_addr, ISA_INSN_BYTES);
        else
            snprintf(buf, len, "pc outside the text segment");
        break;
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
    case FAULT_SUPERSTEP: snprintf(buf, len, "superstep ran past its cycle limit"); break;
    case FAULT_SYNC_DEADLOCK: snprintf(buf, len, "sync deadlock"); break;
    case FAULT_AMP:
        snprintf(buf, len, "%s",
                 cpu->wid == ISA_SUPER_WID
                     ? "AMP weights loaded (ldcw) while a worker runs"
                     : "AMP misuse: ampst with a row in progress, or f32amp and f16amp mixed "
                       "before ampst or ampz");
        break;
    case FAULT_XCHG_DEST:
        snprintf(buf, len, "exchange to a tile, IPU or address outside the system (0x%x)",
                 cpu->fault_addr);
        break;
    case FAULT_COPY_ALIGN:
        snprintf(buf, len, "%s %s 0x%x is not a multiple of 4", isa_info(cpu->fault_op)->name,
                 cpu->fault_what == 1   ? "length"
                 : cpu->fault_what == 2 ? "destination address"
                                        : "address",
                 cpu->fault_addr);
        break;
    case FAULT_COPY_RANGE:
        snprintf(buf, len,
                 "%s of %u bytes %s 0x%x (up to 0x%llx) runs past the %stile's %u bytes of memory",
                 isa_info(cpu->fault_op)->name, cpu->fault_len,
                 cpu->fault_what == 2 ? "to" : "from", cpu->fault_addr,
                 (unsigned long long)cpu->fault_addr + cpu->fault_len,
                 cpu->fault_what == 2 ? "destination " : "", cpu->fault_size);
        break;
    }
}

isa_insn *isa_code_build(const isa_prog *prog, uint32_t fused)
{
    isa_insn *code = xcalloc((size_t)prog->ncode + 1, sizeof *code);
    isa_prog_decode_text(prog, code);
    isa_fuse(code, prog->ncode, fused);
    isa_mark_passes(code, prog->ncode);
    code[prog->ncode].op = OP_ILLEGAL;
    code[prog->ncode].imm = -1; /* marks the end-of-text sentinel */
    code[prog->ncode].target = UINT32_MAX;
    interp_labels jt;
    run_worker(NULL, NULL, &jt);
    for (uint32_t k = 0; jt.op && k <= prog->ncode; k++)
        code[k].wgo = code[k].fused && code[k].fused < ISA_FUSED_SUPER_FIRST
                          ? jt.fused[code[k].fused]
                          : jt.op[code[k].op <= OP_COUNT ? code[k].op : OP_COUNT];
    return code;
}
