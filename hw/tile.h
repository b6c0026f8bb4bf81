/* tile: one IPU tile — SRAM, a supervisor context, six worker contexts and the barrel.
 *
 * A tile runs alone between syncs (BSP), so tile_step() interprets the supervisor in a tight
 * loop and returns when it reaches a sync, halts or faults, or when it has run a chunk of
 * cycles (it then stays runnable, and the next step goes on where it stopped: a long
 * superstep is run in pieces with the same result). Workers started with `run` or `runall`
 * are interpreted to their `exit` on the spot (a chunk may end inside one: the next step
 * finishes it first): they share nothing with the supervisor or each other while they run
 * (as in Poplar, the workers of a compute set write disjoint memory), so running them one
 * after another gives the same memory and the same issue cycles as interleaving them in the
 * barrel. */
#ifndef IPUSIM_TILE_H
#define IPUSIM_TILE_H

#include <stddef.h>
#include <stdint.h>

#include "isa/interp.h"

typedef enum tile_state {
    TILE_RUNNABLE, /* will run at sup.t */
    TILE_SYNC,     /* waiting at a sync: zone, arrival cycle in `at` */
    TILE_HALTED,   /* finished: `at` is the cycle after its last issue */
    TILE_FAULTED,  /* stopped by a simulated fault, see fault_* */
    TILE_IDLE,     /* holds no program: never runs, and counts as arrived at every sync */
} tile_state;

#define TILE_NCTX (1 + ISA_NWORKERS) /* context 0 is the supervisor, 1..6 the workers */

/* What every tile of one IPU shares while running. */
typedef struct tile_cfg {
    uint32_t memsize;
    uint32_t ntiles, nipus;
    uint64_t limit;    /* the run's cycle limit: last cycle an instruction may issue at */
    uint64_t step_max; /* the superstep limit: an instruction may issue at most this many
                          cycles after the tile's superstep began (UINT64_MAX: no limit) */
    uint64_t chunk;    /* a step runs the tile at most this many cycles past where it went on
                          (>= 1); results do not depend on it */
    uint32_t xchg_bpc; /* exchange bytes per cycle a tile sends */
    int inline_copy;   /* the supervisor carries out its copies in the interpreter (isa_env.copy)
                          rather than stopping at each; results do not depend on it */
} tile_cfg;

/* What a logged copy is. */
enum { TILE_SEND, TILE_GSEND, TILE_HIN, TILE_HOUT, TILE_RBIN, TILE_RBOUT };

/* One send, gsend or host copy, logged by the tile until the sync that carries it out.
 * Outgoing payloads (send, gsend, hout, rbout) are copied when the instruction issues, so
 * the tile may reuse its buffer at once. */
typedef struct tile_send {
    uint64_t start; /* cycle the first word leaves the tile (send/gsend); issue cycle else */
    uint32_t bytes;
    uint32_t dst;      /* send: first | (count - 1) << 16; gsend: ipu << 16 | tile;
                          hin/hout: stream; rbin/rbout: remote buffer */
    uint32_t dst_addr; /* send/gsend: address on the receiver; hin/rbin: where data lands;
                          hout/rbout: unused */
    uint32_t offset;   /* rbin/rbout: offset in the remote buffer */
    uint32_t data;     /* offset of the payload in the outbox's data */
    uint32_t pc;       /* of the instruction, for reports */
    uint8_t global;    /* gsend */
    uint8_t kind;      /* TILE_SEND ... */
} tile_send;

typedef struct tile_outbox {
    tile_send *s;
    size_t n, cap;
    uint8_t *data;
    size_t used, dcap;
} tile_outbox;

typedef struct tile {
    /* what a superstep reads or moves for every tile, together at the front, one cache line
     * (a tile visited only to sync touches these, the second line and the supervisor's
     * first: three lines a tile; a parked tile, none) */
    _Alignas(64) tile_state state;
    uint32_t zone;         /* the zone of the sync it waits at */
    uint64_t at;           /* sync arrival or halt cycle */
    uint64_t step_start;   /* the cycle its superstep began: its last sync release (or 0) */
    uint64_t workers_done; /* cycle after the latest worker exit */
    uint64_t port_free;    /* the cycle from which the outgoing port is free */
    const isa_insn *code;  /* its program's decoded text with the end sentinel (isa_code_build),
                              owned by the engine; NULL for an idle tile */
    uint32_t ncode;
    uint32_t group;    /* CSR_GROUP: the tile's sync group */
    uint8_t in_worker; /* runnable with a chunk that ran out in worker context in_worker - 1,
                          started by the run/runall before sup.pc (0: none) */
    uint32_t ipu;
    /* the second line: what a release and the rounds' bookkeeping read besides */
    uint64_t parked; /* parked (park.h): 1 + the IPU's count of IPU-wide releases when it
                        parked; 0: not parked */
    uint32_t id;
    uint32_t image;      /* bytes of its program image (code and data): its memory in use */
    tile_outbox out;     /* exchange sends not yet delivered */
    isa_env env;         /* what its contexts see of it (tile_init; cfg's part per step) */
    const tile_cfg *cfg; /* the step's, while it runs (isa_env.copy reads it) */
    uint64_t slot_free_from[ISA_BARREL]; /* the supervisor may use slot s from this cycle */
    _Alignas(64) isa_cpu sup;            /* pc, time, counts and r0-r7 on one line */
    uint8_t *mem;                        /* memsize bytes, owned by the chip */
    isa_cpu wk[ISA_NWORKERS];
    uint64_t ctx_free_from[ISA_NWORKERS]; /* a worker context may be started from this cycle */
    uint64_t workers_started;
    uint8_t cw[ISA_CW_BYTES]; /* the AMP's weights, shared by the workers (ldcw) */
    uint32_t scratch;         /* CSR_SCRATCH */
    int fault_ctx;            /* context that faulted (0 supervisor, 1..6) */
    uint64_t fault_step_max;  /* FAULT_SUPERSTEP: the limit it ran past */
    uint64_t fault_limit;     /* FAULT_LIMIT: the run's cycle limit it ran past */
} tile;
_Static_assert(offsetof(tile, parked) == 64, "a tile's second line starts at `parked`");

/* Reset a tile to run `code` (ncode instructions, from a program image of `image` bytes) from
 * `entry` at cycle 0; code NULL makes it idle. Frees a previous outbox. */
void tile_init(tile *t, uint32_t ipu, uint32_t id, uint8_t *mem, const isa_insn *code,
               uint32_t ncode, uint32_t image, uint32_t entry);
/* Free what a tile owns (its outbox); the tile can be initialised again. */
void tile_free(tile *t);

/* Run a runnable tile until it waits at a sync, halts or faults, or until the context
 * running would issue more than cfg->chunk cycles past tile_now(t): it then stays runnable
 * and the next call goes on from there, so the chunk never changes a result. An instruction
 * past cfg->limit is FAULT_LIMIT; one more than cfg->step_max cycles after step_start is
 * FAULT_SUPERSTEP (FAULT_LIMIT first when both). */
void tile_step(tile *t, const tile_cfg *cfg);

/* The supervisor at sync or halt `in` issued at c: the tile waits at the zone, or has
 * halted, once its workers have exited and its outgoing port is idle. */
static inline void tile_arrive(tile *t, const isa_insn *in, uint64_t c, tile_state state)
{
    isa_cpu *s = &t->sup;
    if (state == TILE_SYNC && s->rpt_left)
        isa_rpt_wrap(s);
    t->state = state;
    if (state == TILE_SYNC)
        t->zone = (uint32_t)in->imm;
    uint64_t at = c + in->scycles;
    at = at > t->workers_done ? at : t->workers_done;
    t->at = at > t->port_free ? at : t->port_free;
    s->t = t->at;
}

/* The instruction index a tile's supervisor reaches after its next instruction at `in`, a
 * `brnzdec ra, target` (ra not yet decremented), and the instruction there; NULL when that
 * is past the text. */
static inline const isa_insn *tile_after_brnzdec(const tile *t, const isa_insn *in, uint32_t k)
{
    uint32_t next = t->sup.r[in->ra] != 0 ? in->target : k + 1;
    return next < t->ncode ? &t->code[next] : NULL;
}

/* A tile just released whose next instruction is a `sync`, or a `brnzdec` that leads to a
 * `sync` (a counted loop of syncs): carry them out as tile_step would (the brnzdec issues
 * at the release, the sync its cost later, and the tile waits at the sync's zone from the
 * sync's issue + its cost), without entering the interpreter, and return 1. Neither can wait
 * for anything: by the release the tile's workers and its outgoing port are idle, and any
 * load's result is usable (a load's registers 7 cycles after its issue; the release is at
 * least the sync's cost of 6 after a later issue). 0, with the tile unchanged, when its next
 * instructions are anything else (or an rpt body is under way, a chunk ran out in a worker,
 * or an instruction would issue past cfg->limit or the superstep limit): tile_step it.
 * Inline: a release tries it on every tile it resumes. */
static inline int tile_sync_at_once(tile *t, const tile_cfg *cfg)
{
    isa_cpu *s = &t->sup;
    uint64_t c = s->t;
    uint32_t k = s->pc / ISA_INSN_BYTES;
    if (k >= t->ncode || s->pc % ISA_INSN_BYTES || t->in_worker || s->rpt_left || c > cfg->limit ||
        c < t->workers_done)
        return 0;
    const isa_insn *in = &t->code[k];
    if (in->op == OP_brnzdec) { /* the loop's branch, then its sync */
        const isa_insn *sy = tile_after_brnzdec(t, in, k);
        uint64_t at = c + in->scycles;
        if (!sy || sy->op != OP_sync || at > cfg->limit || at - t->step_start > cfg->step_max)
            return 0;
        s->pc = (uint32_t)(sy - t->code) * ISA_INSN_BYTES;
        if (s->r[in->ra] != 0)
            s->r[in->ra]--;
        s->ninsn++;
        s->busy += in->scycles;
        c = at;
        in = sy;
    } else if (in->op != OP_sync) {
        return 0;
    }
    s->ninsn++;
    s->busy += in->scycles;
    s->pc += ISA_INSN_BYTES;
    tile_arrive(t, in, c, TILE_SYNC);
    return 1;
}

/* The context a tile goes on in, or stopped in: a runnable tile's unfinished worker (1..6)
 * or its supervisor (0); a faulted tile's faulting context; else 0 (the supervisor). */
int tile_ctx(const tile *t);
/* That context: its pc, and in t the cycle it goes on at (or arrived, halted, faulted). */
const isa_cpu *tile_cpu(const tile *t);
/* tile_cpu(t)->t: where the tile is in time. */
uint64_t tile_now(const tile *t);

/* Resume a tile waiting at a sync: its supervisor's next issue is at `cycle` (inline: a
 * release resumes every tile of an IPU). */
static inline void tile_release(tile *t, uint64_t cycle)
{
    t->state = TILE_RUNNABLE;
    t->sup.t = cycle;
    t->step_start = cycle;
}

/* Ask the host to bring into cache what stepping or releasing t first reads: the tile's
 * first two lines and its supervisor's first (a hint: it changes nothing). */
static inline void tile_prefetch(const tile *t)
{
    __builtin_prefetch(t);
    __builtin_prefetch((const char *)t + 64);
    __builtin_prefetch(&t->sup);
}

/* Mark a tile as faulted by something outside it (a sync deadlock) at `cycle`. */
void tile_set_fault(tile *t, isa_fault f, uint64_t cycle);

/* How the run's user sets the two cycle limits, as a fault past one names it (the CLI's
 * options, "--max-cycles" and "--max-superstep-cycles"); NULL: "the cycle limit", "the
 * superstep limit". */
typedef struct tile_limit_names {
    const char *run, *superstep;
} tile_limit_names;

/* "ipu I tile T ctx C pc 0xP cycle N: reason" for a faulted tile; a limit's reason names the
 * limit as `names` says. */
void tile_fault_text(const tile *t, const tile_limit_names *names, char *buf, size_t len);

#endif
