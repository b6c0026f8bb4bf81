/* interp: executes one context's instructions straight-line with exact issue times.
 *
 * The tile (hw/tile.c) owns the barrel; this module runs one context until something the
 * tile must handle: a worker's `exit`; a supervisor's run/runall/join/sync/halt or exchange
 * and host copies; a fault; or the cycle limit. Workers advance 6 tile cycles per issue
 * slot; the supervisor advances by its cost and then to the next barrel slot no running
 * worker owns, with a 6-cycle load-use stall. */
#ifndef IPUSIM_INTERP_H
#define IPUSIM_INTERP_H

#include <stdint.h>

#include "isa/isa.h"

typedef enum isa_stop {
    STOP_NONE,
    STOP_EXIT, /* worker executed exit; t = its issue cycle */
    STOP_RUN,  /* supervisor at run/runall/join/sync/halt: pc points at it, t = issue cycle */
    STOP_RUNALL,
    STOP_JOIN,
    STOP_SYNC,
    STOP_HALT,
    STOP_SEND,  /* supervisor at send/gsend/hin/hout/rbin/rbout: the tile logs the copy */
    STOP_FAULT, /* cpu->fault says why; pc and t name the faulting instruction */
    STOP_LIMIT, /* the next issue would be past isa_env.limit: the context is saved before
                   that instruction (pc, t, registers, rpt loop, counts), so running it again
                   with a higher limit goes on exactly as if it had never stopped */
} isa_stop;

typedef enum isa_fault {
    FAULT_NONE,
    FAULT_ILLEGAL,      /* not a valid instruction */
    FAULT_PRIVILEGE,    /* supervisor-only op in a worker, or worker-only op in the supervisor */
    FAULT_BAD_PC,       /* pc outside the text segment, or not 8-aligned (fault_addr) */
    FAULT_OUT_OF_RANGE, /* memory access outside the tile's SRAM */
    FAULT_MISALIGNED,   /* memory access not aligned to its size */
    FAULT_TOO_MANY_WORKERS,
    FAULT_CSR,   /* write to a read-only control register, or a bad value ($group) */
    FAULT_LIMIT, /* an instruction would issue after the cycle limit (isa_env.limit) */
    FAULT_SYNC_DEADLOCK,
    FAULT_XCHG_DEST,  /* exchange to a tile, IPU or address that does not exist */
    FAULT_AMP,        /* ldcw while a worker runs; ampst, or f32amp after f16amp (or the
                        reverse), with a row in progress */
    FAULT_COPY_ALIGN, /* send/gsend/hin/hout/rbin/rbout: an address or length not a multiple
                         of 4 (fault_what says which, fault_addr its value) */
    FAULT_COPY_RANGE, /* a copy's bytes run past the source (fault_what 0) or destination
                         (fault_what 2) tile's memory of fault_size bytes */
    FAULT_SUPERSTEP,  /* an instruction would issue past the superstep's cycle limit (the tile
                         sets it: the interpreter only sees isa_env.limit) */
} isa_fault;

/* A worker's AMP pipeline (docs/timing.md, "The AMP"): the row in progress and the row
 * finished before it, whose lanes the next row's steps store two at a time. */
typedef struct isa_amp {
    float x[ISA_AMP_INPUTS];  /* the row in progress: its inputs so far */
    float p[ISA_AMP_LANES];   /* and its partials so far */
    float out[ISA_AMP_LANES]; /* the finished row */
    uint32_t row_at;          /* where the row in progress's partials are */
    uint32_t out_at;          /* where the finished row goes */
    uint8_t step;             /* steps of the row in progress done (0: none) */
    uint8_t kind;             /* ISA_AMP_F32 or ISA_AMP_F16 while a row is under way */
    uint8_t out_lanes;        /* lanes of the finished row not yet stored */
    uint8_t out_kind;         /* its kind */
} isa_amp;
enum { ISA_AMP_NONE, ISA_AMP_F32, ISA_AMP_F16 };

/* Empty an AMP pipeline (ampz, and a worker context when started): no row in progress and
 * no finished row to store. The inputs, partials and finished lanes are left as they are:
 * a row writes each of them before anything reads it. */
static inline void isa_amp_empty(isa_amp *a)
{
    a->step = 0;
    a->kind = ISA_AMP_NONE;
    a->out_lanes = 0;
    a->out_kind = ISA_AMP_NONE;
}

/* One context's architectural state. */
typedef struct isa_cpu {
    /* what every issue reads or moves, together at the front, then the registers (a
     * sync-only superstep touches these, and r0-r7 share their cache line when the context
     * starts one: the tile's supervisor does) */
    uint32_t pc;       /* byte address of the next instruction */
    uint32_t rpt_left; /* an rpt loop in progress: passes left (0: none), */
    uint64_t t;        /* tile cycle of the next issue */
    uint64_t ninsn;    /* instructions executed */
    uint64_t busy;     /* tile cycles of issue this context used (workers: 6 per slot) */
    uint32_t r[ISA_NREGS];
    uint32_t rpt_start, rpt_end; /* its first and last instruction indices */
    uint64_t ld_horizon;         /* supervisor: the latest of ld_ready (no stall from it on) */
    uint32_t wid;                /* worker id 0..5, or ISA_SUPER_WID */
    isa_fault fault;
    uint32_t fault_addr; /* the bad address (memory, pc, exchange) or CSR value of a fault */
    uint32_t fault_len;  /* FAULT_COPY_*: the copy's length in bytes */
    uint32_t fault_size; /* FAULT_COPY_RANGE: the tile memory's size in bytes */
    uint8_t fault_op;    /* FAULT_COPY_*: the copy's opcode */
    uint8_t fault_what;  /* FAULT_COPY_*: 0 source address, 1 length, 2 destination address */
    isa_amp amp;
    uint64_t ld_ready[ISA_NREGS]; /* supervisor: cycle from which a loaded register is usable */
} isa_cpu;

#define ISA_SUPER_WID 0xffffffffu

/* What a context sees of its tile. The barrel state is read-only here. */
typedef struct isa_env {
    const isa_insn *code; /* decoded text plus one sentinel entry at [ncode] */
    uint32_t ncode;
    uint8_t *mem;
    uint32_t memsize;
    uint32_t tile, ipu, ntiles, nipus;
    uint32_t *scratch;              /* the tile's CSR_SCRATCH */
    uint32_t *group;                /* the tile's CSR_GROUP */
    uint64_t limit;                 /* last cycle an instruction may issue at */
    const uint64_t *slot_free_from; /* [6]: the supervisor may use slot s (cycles c with
                                       c mod 6 == s) only at c >= slot_free_from[s] */
    const uint64_t *slots_free;     /* a cycle from which every slot is free (>= each
                                       slot_free_from[s]; the tile's latest worker exit) */
    uint8_t *cw;                    /* the tile's AMP weights, ISA_CW_BYTES */
    int64_t lim4, lim8, lim16;      /* the last aligned 4-, 8-, 16-byte unit an access may
                                       touch, or -1 (isa_env_set_mem) */
    /* The supervisor's copies (send, gsend, hin, hout, rbin, rbout) carried out without
     * leaving the interpreter: copy(copy_ctx, in, pc, c) for the instruction in at pc, issued
     * at cycle c, does what the tile does at a STOP_SEND and returns 0, and the supervisor
     * goes on at c + scycles as after any instruction; or it returns 1, having done nothing
     * the stop would not redo (a copy that faults), and the supervisor stops at it
     * (STOP_SEND). NULL: it stops at every copy. */
    int (*copy)(void *ctx, const isa_insn *in, uint32_t pc, uint64_t c);
    void *copy_ctx;
} isa_env;

/* Set a context's memory: mem, memsize, and the access bounds derived from memsize. */
static inline void isa_env_set_mem(isa_env *env, uint8_t *mem, uint32_t memsize)
{
    env->mem = mem;
    env->memsize = memsize;
    env->lim4 = memsize >= 4 ? (int64_t)((memsize - 4) >> 2) : -1;
    env->lim8 = memsize >= 8 ? (int64_t)((memsize - 8) >> 3) : -1;
    env->lim16 = memsize >= 16 ? (int64_t)((memsize - 16) >> 4) : -1;
}

/* Run a worker from cpu->pc at cpu->t until exit, fault or the limit. */
isa_stop isa_run_worker(isa_cpu *cpu, const isa_env *env);

/* Run the supervisor until run/runall/join/sync/halt, an exchange or host copy
 * (send/gsend/hin/hout/rbin/rbout) that env->copy does not carry out, a fault or the limit.
 * On those stops the instruction has not been executed; cpu->pc and cpu->t name it. */
isa_stop isa_run_super(isa_cpu *cpu, const isa_env *env);

/* After the tile has carried out the instruction the supervisor stopped at (STOP_RUN ...
 * STOP_SEND) and moved pc past it: if that was the last instruction of an rpt body, go back to
 * the body's start, or end the loop after its last pass, as the interpreter does. */
void isa_rpt_wrap(isa_cpu *cpu);

/* fp16 conversions as `f16tof` and `ftof16` do them (exact; round to nearest even). */
uint32_t isa_half_to_float_bits(uint32_t h);
uint32_t isa_float_bits_to_half(uint32_t f);

/* A short text for a fault ("misaligned 4-byte access at 0x102", ...). */
void isa_fault_text(const isa_cpu *cpu, char *buf, unsigned len);

/* The fused pseudo-operations (isa/fused.def): the interpreter's fast paths, a bit each in
 * isa_code_build's mask. */
typedef enum isa_fused {
    ISA_FUSED_NONE, /* isa_insn.fused of an instruction no fused operation stands on */
#define FUSED(name, base, ctx, pattern) ISA_FUSED_##name,
#include "isa/fused.def"
#undef FUSED
    ISA_FUSED_COUNT
} isa_fused;
/* The first of the supervisor's rows (ctx S, the last rows): the count less theirs. */
enum {
    ISA_FUSED_CTX_W = 0,
    ISA_FUSED_CTX_S = 1,
    ISA_FUSED_SUPER_FIRST = ISA_FUSED_COUNT - (0
#define FUSED(name, base, ctx, pattern) +ISA_FUSED_CTX_##ctx
#include "isa/fused.def"
#undef FUSED
                                               )
};
#define ISA_FUSED_ALL (((1u << ISA_FUSED_COUNT) - 1u) & ~1u) /* every fast path */

/* Build the executable code array for a program: the decoded text plus a sentinel that
 * faults with FAULT_BAD_PC when execution falls off the end, each entry with the fused
 * operation standing on it (isa_insn.fused: those of `fused`, a mask of 1 << ISA_FUSED_x
 * bits; 0 runs the base instructions alone, the differential tests' reference), its worker
 * dispatch (isa_insn.wgo) and what a tile at a sync may repeat from it (isa_insn.park).
 * malloc'd; caller frees. */
isa_insn *isa_code_build(const isa_prog *prog, uint32_t fused);

/* Set isa_insn.park of code[0..n) (isa/pass.c; the sentinel's stays 0). */
void isa_mark_passes(isa_insn *code, uint32_t n);

/* Set isa_insn.fused of code[0..n): the first row of isa/fused.def in `mask` whose pattern
 * starts at each instruction (isa/fused.c), else ISA_FUSED_NONE. */
void isa_fuse(isa_insn *code, uint32_t n, uint32_t mask);

/* ---- passes: what a supervisor waiting at a sync does from its release to its next sync,
 * when that is the same many times in a row (isa/pass.c; the engine parks such a tile,
 * hw/park.h) ---- */

enum { ISA_PASS_MAX = 8 }; /* instructions a loop's pass may have, its sync included */

typedef struct isa_pass {
    uint32_t n;        /* passes made the same way, the first included (0: none) */
    uint32_t len;      /* instructions a pass issues */
    uint32_t counters; /* a loop's brnzdec registers, a bit each: each counts down once a pass */
    int run;           /* a run of syncs: each pass moves the pc on one instruction */
    uint64_t lead;     /* supervisor cycles from a pass's first issue to its sync's issue */
    uint64_t cost;     /* to its arrival: lead + the sync's cycles */
} isa_pass;

/* The pass of a supervisor whose next instruction is code[k], code[k - 1] being the sync it
 * waits at (zone `zone`), with registers r: returns p->n, 0 when there is none. Two shapes:
 * a run of syncs of that zone (k is one of them: isa_insn.park of them), and a loop back to
 * the sync at k - 1 (the pc comes back) through nothing but `brnz` and `brz` on registers
 * the loop leaves alone, `brnzdec` on counters no other instruction of the pass reads (the
 * loop goes round while every counter is above 0) and `br` and `nop`, ISA_PASS_MAX
 * instructions at most (`L: sync; brnzdec ra, L` is the simplest). Each pass issues one
 * instruction after another, each its supervisor cycles after the last (no worker or load
 * can delay one, and none touches memory). */
uint32_t isa_sync_pass(const isa_insn *code, uint32_t ncode, uint32_t k, uint32_t zone,
                       const uint32_t *r, isa_pass *p);

#endif
