/* tile: the barrel-threaded tile — supervisor, six workers, and their timing.
 *
 * Timing model (docs/timing.md): the barrel has six slots; cycle c belongs to slot c mod 6. A
 * worker owns one slot from its start to its exit and issues once per turn. `run` at cycle c
 * gives the supervisor's slot c mod 6 to a free worker context, whose first instruction issues
 * at c + 6; `runall` at c starts workers 0..5 in slots c..c+5 (first issues at c+6..c+11) and
 * needs all six contexts free. The supervisor issues in slots no worker owns. `join` at c lets
 * the supervisor go on at max(c + 6, last exit + 1); `sync` at c arrives at max(c + 6, last
 * exit + 1); `halt` at c finishes at max(c + 1, last exit + 1). `send`/`gsend` at c streams
 * its words from max(c, port free) at 4 bytes per cycle while the supervisor goes on; sync
 * and halt also wait until the outgoing port is idle (docs/fabric.md). A step ends early when
 * the context running reaches the end of its chunk of cycles; the next step goes on from the
 * saved state, so the chunk is invisible in every result (docs/timing.md, "Long runs").
 * Left out: instruction fetch, bank conflicts, exceptions other than the modelled faults. */
#include "hw/tile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"

void tile_free(tile *t)
{
    free(t->out.s);
    free(t->out.data);
    memset(&t->out, 0, sizeof t->out);
}

void tile_init(tile *t, uint32_t ipu, uint32_t id, uint8_t *mem, const isa_insn *code,
               uint32_t ncode, uint32_t image, uint32_t entry)
{
    tile_free(t);
    memset(t, 0, sizeof *t);
    t->ipu = ipu;
    t->id = id;
    t->mem = mem;
    t->code = code;
    t->ncode = ncode;
    t->image = image;
    t->sup.pc = entry;
    t->sup.wid = ISA_SUPER_WID;
    for (unsigned k = 0; k < ISA_NWORKERS; k++)
        t->wk[k].wid = k;
    t->state = code ? TILE_RUNNABLE : TILE_IDLE;
    t->env = (isa_env){
        .code = code,
        .ncode = ncode,
        .mem = mem,
        .tile = id,
        .ipu = ipu,
        .scratch = &t->scratch,
        .group = &t->group,
        .slot_free_from = t->slot_free_from,
        .slots_free = &t->workers_done,
        .cw = t->cw,
    };
    isa_env_set_mem(&t->env, mem, 0); /* the size comes with the first step's cfg */
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The last cycle an instruction may issue at in this step, for a context going on from cycle
 * `now`: the run's cycle limit, the superstep's limit, or the end of the chunk, whichever comes first. */
static uint64_t step_limit(const tile *t, const tile_cfg *cfg, uint64_t now)
{
    uint64_t lim = min_u64(cfg->limit, add_sat(t->step_start, cfg->step_max));
    return min_u64(lim, add_sat(now, cfg->chunk));
}

static int copy_inline(void *ctx, const isa_insn *in, uint32_t pc, uint64_t c);

/* The context's view of the tile (set up by tile_init; what comes from cfg, and this step's
 * limit and copy callback, here). */
static const isa_env *step_env(tile *t, const tile_cfg *cfg)
{
    isa_env *env = &t->env;
    if (env->memsize != cfg->memsize)
        isa_env_set_mem(env, env->mem, cfg->memsize);
    env->ntiles = cfg->ntiles;
    env->nipus = cfg->nipus;
    env->limit = step_limit(t, cfg, tile_now(t));
    t->cfg = cfg;
    env->copy = cfg->inline_copy ? copy_inline : NULL;
    env->copy_ctx = t;
    return env;
}

static void fault(tile *t, int ctx)
{
    t->state = TILE_FAULTED;
    t->fault_ctx = ctx;
}

/* A context stopped at this step's limit (its t: the cycle it would issue at next): past
 * the run's cycle limit or the superstep's limit is a fault (1, with c->fault set); else the chunk ran
 * out (0): the context is saved as it was and goes on at the next step. */
static int past_limit(tile *t, const tile_cfg *cfg, isa_cpu *c)
{
    if (c->t > cfg->limit) {
        c->fault = FAULT_LIMIT;
        t->fault_limit = cfg->limit;
        return 1;
    }
    if (c->t > add_sat(t->step_start, cfg->step_max)) {
        c->fault = FAULT_SUPERSTEP;
        t->fault_step_max = cfg->step_max;
        return 1;
    }
    c->fault = FAULT_NONE;
    return 0;
}

/* Run worker context k (just started, or resumed after a chunk ran out in it), which owns
 * barrel slot `slot`, to its exit. Returns 0; 1 when the chunk ran out (t->in_worker says
 * where); or -1 when the worker faulted (the tile is then marked faulted). */
static int run_worker(tile *t, const tile_cfg *cfg, const isa_env *env, unsigned k, unsigned slot)
{
    isa_cpu *w = &t->wk[k];
    isa_stop stop = isa_run_worker(w, env);
    t->in_worker = 0;
    if (stop == STOP_LIMIT && !past_limit(t, cfg, w)) {
        t->in_worker = (uint8_t)(k + 1);
        return 1;
    }
    if (stop != STOP_EXIT) {
        fault(t, 1 + (int)k);
        return -1;
    }
    uint64_t done = w->t + 1; /* w->t is the exit's issue cycle */
    t->ctx_free_from[k] = done;
    t->slot_free_from[slot] = done;
    if (done > t->workers_done)
        t->workers_done = done;
    return 0;
}

/* Start worker context k at `start` in barrel slot `slot` and run it: as run_worker. */
static int start_worker(tile *t, const tile_cfg *cfg, const isa_env *env, unsigned k,
                        uint32_t entry, uint32_t arg, uint64_t start, unsigned slot)
{
    isa_cpu *w = &t->wk[k];
    memset(w->r, 0, sizeof w->r);
    w->r[0] = arg;
    w->pc = entry;
    w->t = start;
    w->rpt_left = 0;
    isa_amp_empty(&w->amp); /* a started context's AMP pipeline is empty */
    w->fault = FAULT_NONE;
    t->workers_started++;
    return run_worker(t, cfg, env, k, slot);
}

/* No free worker context for the run or runall the supervisor just issued: the fault names
 * that instruction (pc goes back to it). */
static int no_context(tile *t)
{
    t->sup.pc -= ISA_INSN_BYTES;
    t->sup.fault = FAULT_TOO_MANY_WORKERS;
    fault(t, 0);
    return -1;
}

/* `run` issued at c: one worker in the supervisor's slot. As run_worker. */
static int start_one(tile *t, const tile_cfg *cfg, const isa_env *env, const isa_insn *in,
                     uint64_t c)
{
    unsigned k = 0;
    while (k < ISA_NWORKERS && t->ctx_free_from[k] > c)
        k++;
    if (k == ISA_NWORKERS)
        return no_context(t);
    return start_worker(t, cfg, env, k, (uint32_t)in->imm, t->sup.r[in->ra], c + ISA_BARREL,
                        (unsigned)(c % ISA_BARREL));
}

/* `runall` issued at c: workers k0..5 (k0 > 0 when going on after a chunk ran out in worker
 * k0 - 1), worker k in slot (c + k) mod 6. As run_worker. */
static int start_all(tile *t, const tile_cfg *cfg, const isa_env *env, const isa_insn *in,
                     uint64_t c, unsigned k0)
{
    for (unsigned k = 0; k0 == 0 && k < ISA_NWORKERS; k++)
        if (t->ctx_free_from[k] > c)
            return no_context(t);
    for (unsigned k = k0; k < ISA_NWORKERS; k++) {
        int rc = start_worker(t, cfg, env, k, (uint32_t)in->imm, t->sup.r[in->ra],
                              c + ISA_BARREL + k, (unsigned)((c + k) % ISA_BARREL));
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The supervisor goes on after the run/runall `in` issued at c whose workers have all
 * exited (an rpt body may end with it). */
static void started(isa_cpu *s, const isa_insn *in, uint64_t c)
{
    s->t = c + in->scycles;
    if (s->rpt_left)
        isa_rpt_wrap(s);
}

/* A chunk ran out in a worker started by the run/runall before sup.pc (issued at sup.t, which
 * waits until its workers have exited): finish it and the workers after it. As run_worker. */
static int resume_workers(tile *t, const tile_cfg *cfg, const isa_env *env)
{
    isa_cpu *s = &t->sup;
    const isa_insn *in = &t->code[s->pc / ISA_INSN_BYTES - 1];
    uint64_t c = s->t;
    unsigned k = t->in_worker - 1u;
    int all = in->op == OP_runall;
    int rc = run_worker(t, cfg, env, k, (unsigned)((c + (all ? k : 0)) % ISA_BARREL));
    /* The contexts after it go on from the run/runall's cycle, far behind where this worker
     * got to: their chunk counts from there (else a chunk would be all their work) */
    t->env.limit = step_limit(t, cfg, c);
    if (rc == 0 && all)
        rc = start_all(t, cfg, env, in, c, k + 1);
    if (rc == 0)
        started(s, in, c);
    return rc;
}

/* A copy's checks (send/gsend/hin/hout/rbin/rbout): 0, or 1 with s->fault and its details
 * set. Either way it leaves the supervisor's fault details as the copy does. */
static int copy_faults(tile *t, const tile_cfg *cfg, const isa_insn *in)
{
    isa_cpu *s = &t->sup;
    uint32_t addr = s->r[in->rd], bytes = s->r[in->ra], dst = s->r[in->rb];
    int exchange = in->op == OP_send || in->op == OP_gsend;
    uint32_t daddr = exchange ? s->r[in->rc] : 0;
    s->fault_addr = 0;
    s->fault_op = (uint8_t)in->op;
    s->fault_len = bytes;
    s->fault_size = cfg->memsize;
    if ((addr | bytes | daddr) & 3u) {
        s->fault = FAULT_COPY_ALIGN;
        s->fault_what = addr & 3u ? 0 : bytes & 3u ? 1 : 2;
        s->fault_addr = addr & 3u ? addr : bytes & 3u ? bytes : daddr;
    } else if ((uint64_t)addr + bytes > cfg->memsize) {
        s->fault = FAULT_COPY_RANGE;
        s->fault_what = 0;
        s->fault_addr = addr;
    } else if (exchange && (uint64_t)daddr + bytes > cfg->memsize) {
        s->fault = FAULT_COPY_RANGE;
        s->fault_what = 2;
        s->fault_addr = daddr;
    } else if (in->op == OP_send && (dst & 0xffffu) + (dst >> 16) + 1 > cfg->ntiles) {
        s->fault = FAULT_XCHG_DEST;
        s->fault_addr = dst;
    } else if (in->op == OP_gsend && ((dst >> 16) >= cfg->nipus || (dst & 0xffffu) >= cfg->ntiles ||
                                      (dst >> 16) == t->ipu)) {
        s->fault = FAULT_XCHG_DEST;
        s->fault_addr = dst;
    }
    return s->fault != FAULT_NONE;
}

/* Log a checked copy issued at cycle c from pc (with the payload of an outgoing one). A send
 * occupies the outgoing port for one cycle per xchg_bpc bytes from max(c, port free); the
 * supervisor goes on at once (the port streams on its own); sync and halt wait for the port.
 * Host copies are timed at the host sync. */
static void copy_log(tile *t, const tile_cfg *cfg, const isa_insn *in, uint32_t pc, uint64_t c)
{
    const isa_cpu *s = &t->sup;
    uint32_t addr = s->r[in->rd], bytes = s->r[in->ra], dst = s->r[in->rb];
    uint32_t four =
        in->op == OP_send || in->op == OP_gsend || in->op == OP_rbin || in->op == OP_rbout;
    uint32_t daddr = four ? s->r[in->rc] : 0;
    uint8_t kind = in->op == OP_send    ? TILE_SEND
                   : in->op == OP_gsend ? TILE_GSEND
                   : in->op == OP_hin   ? TILE_HIN
                   : in->op == OP_hout  ? TILE_HOUT
                   : in->op == OP_rbin  ? TILE_RBIN
                                        : TILE_RBOUT;
    int exchange = kind == TILE_SEND || kind == TILE_GSEND;
    tile_outbox *o = &t->out;
    if (o->n == o->cap)
        o->s = xgrow(o->s, &o->cap, o->n + 1, sizeof *o->s);
    int outgoing = kind != TILE_HIN && kind != TILE_RBIN;
    if (outgoing && o->used + bytes + 1 > o->dcap) /* at least one byte: a payload is never NULL */
        o->data = xgrow(o->data, &o->dcap, o->used + bytes + 1, 1);
    uint64_t start = c;
    if (exchange) {
        start = c > t->port_free ? c : t->port_free;
        t->port_free = start + (bytes + cfg->xchg_bpc - 1) / cfg->xchg_bpc;
    }
    o->s[o->n++] = (tile_send){
        .start = start,
        .bytes = bytes,
        .dst = dst,
        .dst_addr = exchange ? daddr : addr,
        .offset = (kind == TILE_RBIN || kind == TILE_RBOUT) ? daddr : 0,
        .data = (uint32_t)o->used,
        .pc = pc,
        .global = kind == TILE_GSEND,
        .kind = kind,
    };
    if (outgoing && bytes) {
        memcpy(o->data + o->used, t->mem + addr, bytes);
        o->used += bytes;
    }
}

/* A copy the supervisor stopped at (issued at c; pc already past it): check and log it.
 * Returns the supervisor's next issue cycle, or 0 after a fault (the tile is then marked
 * faulted). */
static uint64_t do_copy(tile *t, const tile_cfg *cfg, const isa_insn *in, uint64_t c)
{
    isa_cpu *s = &t->sup;
    if (copy_faults(t, cfg, in)) {
        s->pc -= ISA_INSN_BYTES;
        s->t = c;
        fault(t, 0);
        return 0;
    }
    copy_log(t, cfg, in, s->pc - ISA_INSN_BYTES, c);
    return c + in->scycles;
}

/* isa_env.copy: the same copy, in the interpreter (the tile's step's cfg in t->cfg); one that
 * faults is left to the stop (do_copy), which sets the same details again. */
static int copy_inline(void *ctx, const isa_insn *in, uint32_t pc, uint64_t c)
{
    tile *t = ctx;
    if (copy_faults(t, t->cfg, in))
        return 1;
    copy_log(t, t->cfg, in, pc, c);
    return 0;
}

/* Carry out the instruction the supervisor stopped at (issued at c; pc already past it).
 * 0: go on; 1: the tile stops here (sync, halt, a fault, or a chunk that ran out in a
 * worker). */
static int super_op(tile *t, const tile_cfg *cfg, const isa_env *env, isa_stop stop,
                    const isa_insn *in, uint64_t c)
{
    isa_cpu *s = &t->sup;
    switch (stop) {
    case STOP_RUN:
    case STOP_RUNALL: {
        int rc =
            stop == STOP_RUN ? start_one(t, cfg, env, in, c) : start_all(t, cfg, env, in, c, 0);
        if (rc != 0)
            return 1;
        started(s, in, c);
        return 0;
    }
    case STOP_JOIN: s->t = max_u64(c + in->scycles, t->workers_done); break;
    case STOP_SYNC: tile_arrive(t, in, c, TILE_SYNC); return 1;
    case STOP_SEND: {
        uint64_t next = do_copy(t, cfg, in, c);
        if (!next)
            return 1;
        s->t = next;
        break;
    }
    case STOP_HALT: tile_arrive(t, in, c, TILE_HALTED); return 1;
    default: fault(t, 0); return 1;
    }
    if (s->rpt_left) /* join, a copy: an rpt body may end with one */
        isa_rpt_wrap(s);
    return 0;
}

/* The supervisor's loop: interpret to the next instruction the tile handles, carry it out. */
static void run_super(tile *t, const tile_cfg *cfg, const isa_env *env)
{
    isa_cpu *s = &t->sup;
    for (;;) {
        isa_stop stop = isa_run_super(s, env);
        if (stop == STOP_LIMIT && !past_limit(t, cfg, s))
            return; /* the chunk ran out: still runnable, it goes on at s->pc, s->t */
        if (stop == STOP_FAULT || stop == STOP_LIMIT) {
            fault(t, 0);
            return;
        }
        const isa_insn *in = &t->code[s->pc / ISA_INSN_BYTES];
        uint64_t c = s->t; /* issue cycle of the stopping instruction */
        if (c > cfg->limit) {
            s->fault = FAULT_LIMIT;
            t->fault_limit = cfg->limit;
            fault(t, 0);
            return;
        }
        s->ninsn++;
        s->busy += in->scycles;
        s->pc += ISA_INSN_BYTES;
        if (super_op(t, cfg, env, stop, in, c))
            return;
    }
}

void tile_step(tile *t, const tile_cfg *cfg)
{
    const isa_env *env = step_env(t, cfg);
    if (t->in_worker && resume_workers(t, cfg, env) != 0)
        return;
    run_super(t, cfg, env);
}

int tile_ctx(const tile *t)
{
    if (t->state == TILE_FAULTED)
        return t->fault_ctx;
    return t->state == TILE_RUNNABLE ? t->in_worker : 0;
}

const isa_cpu *tile_cpu(const tile *t)
{
    int ctx = tile_ctx(t);
    return ctx ? &t->wk[ctx - 1] : &t->sup;
}

uint64_t tile_now(const tile *t)
{
    return tile_cpu(t)->t;
}

void tile_set_fault(tile *t, isa_fault f, uint64_t cycle)
{
    t->sup.fault = f;
    t->sup.t = cycle;
    fault(t, 0);
}

void tile_fault_text(const tile *t, const tile_limit_names *names, char *buf, size_t len)
{
    const isa_cpu *c = t->fault_ctx == 0 ? &t->sup : &t->wk[t->fault_ctx - 1];
    char why[200];
    if (c->fault == FAULT_SUPERSTEP)
        snprintf(why, sizeof why, "superstep exceeds %s %llu (started at cycle %llu)",
                 names->superstep ? names->superstep : "the superstep limit",
                 (unsigned long long)t->fault_step_max, (unsigned long long)t->step_start);
    else if (c->fault == FAULT_LIMIT)
        snprintf(why, sizeof why, "run exceeds %s %llu",
                 names->run ? names->run : "the cycle limit", (unsigned long long)t->fault_limit);
    else
        isa_fault_text(c, why, sizeof why);
    snprintf(buf, len, "ipu %u tile %u ctx %d pc 0x%x cycle %llu: %s", t->ipu, t->id, t->fault_ctx,
             c->pc, (unsigned long long)c->t, why);
}
