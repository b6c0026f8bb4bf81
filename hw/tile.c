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
 * and halt also wait until the outgoing port is idle (docs/fabric.md).
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
}

static isa_env make_env(tile *t, const tile_cfg *cfg)
{
    isa_env env = {
        .code = t->code,
        .ncode = t->ncode,
        .mem = t->mem,
        .memsize = cfg->memsize,
        .tile = t->id,
        .ipu = t->ipu,
        .ntiles = cfg->ntiles,
        .nipus = cfg->nipus,
        .scratch = &t->scratch,
        .group = &t->group,
        .limit = cfg->limit,
        .slot_free_from = t->slot_free_from,
        .cw = t->cw,
    };
    return env;
}

static void fault(tile *t, int ctx)
{
    t->state = TILE_FAULTED;
    t->fault_ctx = ctx;
}

/* Start worker context k at `start` in barrel slot `slot` and run it to its exit. Returns 0,
 * or -1 when the worker faulted (the tile is then marked faulted). */
static int start_worker(tile *t, const isa_env *env, unsigned k, uint32_t entry, uint32_t arg,
                        uint64_t start, unsigned slot)
{
    isa_cpu *w = &t->wk[k];
    memset(w->r, 0, sizeof w->r);
    w->r[0] = arg;
    w->pc = entry;
    w->t = start;
    w->rpt_left = 0;
    memset(&w->amp, 0, sizeof w->amp); /* a started context's AMP pipeline is empty */
    w->fault = FAULT_NONE;
    t->workers_started++;
    if (isa_run_worker(w, env) != STOP_EXIT) {
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

/* send/gsend/hin/hout/rbin/rbout at cycle c: check it and log it (with the payload of an
 * outgoing copy). A send occupies the outgoing port for one cycle per xchg_bpc bytes from
 * max(c, port free); the supervisor goes on at once (the port streams on its own); sync and
 * halt wait for the port. Host copies are timed at the host sync. Returns the supervisor's
 * next issue cycle, or 0 after a fault (the tile is then marked faulted). */
static uint64_t do_copy(tile *t, const tile_cfg *cfg, const isa_insn *in, uint64_t c)
{
    isa_cpu *s = &t->sup;
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
    s->fault_addr = 0;
    s->fault_op = (uint8_t)in->op;
    s->fault_len = bytes;
    s->fault_size = cfg->memsize;
    if ((addr | bytes | (exchange ? daddr : 0)) & 3u) {
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
    } else if (kind == TILE_SEND && (dst & 0xffffu) + (dst >> 16) + 1 > cfg->ntiles) {
        s->fault = FAULT_XCHG_DEST;
        s->fault_addr = dst;
    } else if (kind == TILE_GSEND && ((dst >> 16) >= cfg->nipus || (dst & 0xffffu) >= cfg->ntiles ||
                                      (dst >> 16) == t->ipu)) {
        s->fault = FAULT_XCHG_DEST;
        s->fault_addr = dst;
    }
    if (s->fault != FAULT_NONE) {
        s->pc -= ISA_INSN_BYTES;
        s->t = c;
        fault(t, 0);
        return 0;
    }
    tile_outbox *o = &t->out;
    o->s = xgrow(o->s, &o->cap, o->n + 1, sizeof *o->s);
    int outgoing = kind != TILE_HIN && kind != TILE_RBIN;
    if (outgoing) /* at least one byte, so a payload pointer is never NULL */
        o->data = xgrow(o->data, &o->dcap, o->used + bytes + 1, 1);
    uint64_t start = c;
    if (exchange) {
        start = c > o->port_free ? c : o->port_free;
        o->port_free = start + (bytes + cfg->xchg_bpc - 1) / cfg->xchg_bpc;
    }
    o->s[o->n++] = (tile_send){
        .start = start,
        .bytes = bytes,
        .dst = dst,
        .dst_addr = exchange ? daddr : addr,
        .offset = (kind == TILE_RBIN || kind == TILE_RBOUT) ? daddr : 0,
        .data = (uint32_t)o->used,
        .pc = s->pc - ISA_INSN_BYTES,
        .global = kind == TILE_GSEND,
        .kind = kind,
    };
    if (outgoing && bytes) {
        memcpy(o->data + o->used, t->mem + addr, bytes);
        o->used += bytes;
    }
    return c + in->scycles;
}

void tile_step(tile *t, const tile_cfg *cfg)
{
    isa_env env = make_env(t, cfg);
    isa_cpu *s = &t->sup;
    for (;;) {
        isa_stop stop = isa_run_super(s, &env);
        if (stop == STOP_FAULT || stop == STOP_LIMIT) {
            fault(t, 0);
            return;
        }
        const isa_insn *in = &t->code[s->pc / ISA_INSN_BYTES];
        uint64_t c = s->t; /* issue cycle of the stopping instruction */
        if (c > cfg->limit) {
            s->fault = FAULT_LIMIT;
            fault(t, 0);
            return;
        }
        s->ninsn++;
        s->busy += in->scycles;
        s->pc += ISA_INSN_BYTES;
        switch (stop) {
        case STOP_RUN: {
            unsigned k = 0;
            while (k < ISA_NWORKERS && t->ctx_free_from[k] > c)
                k++;
            if (k == ISA_NWORKERS) {
                s->pc -= ISA_INSN_BYTES;
                s->fault = FAULT_TOO_MANY_WORKERS;
                fault(t, 0);
                return;
            }
            if (start_worker(t, &env, k, (uint32_t)in->imm, s->r[in->ra], c + ISA_BARREL,
                             (unsigned)(c % ISA_BARREL)) != 0)
                return;
            s->t = c + in->scycles;
            break;
        }
        case STOP_RUNALL: {
            for (unsigned k = 0; k < ISA_NWORKERS; k++) {
                if (t->ctx_free_from[k] > c) {
                    s->pc -= ISA_INSN_BYTES;
                    s->fault = FAULT_TOO_MANY_WORKERS;
                    fault(t, 0);
                    return;
                }
            }
            for (unsigned k = 0; k < ISA_NWORKERS; k++) {
                if (start_worker(t, &env, k, (uint32_t)in->imm, s->r[in->ra], c + ISA_BARREL + k,
                                 (unsigned)((c + k) % ISA_BARREL)) != 0)
                    return;
            }
            s->t = c + in->scycles;
            break;
        }
        case STOP_JOIN: s->t = max_u64(c + in->scycles, t->workers_done); break;
        case STOP_SYNC:
            if (s->rpt_left)
                isa_rpt_wrap(s);
            t->state = TILE_SYNC;
            t->zone = (uint32_t)in->imm;
            t->at = max_u64(max_u64(c + in->scycles, t->workers_done), t->out.port_free);
            s->t = t->at;
            return;
        case STOP_SEND: {
            uint64_t next = do_copy(t, cfg, in, c);
            if (!next)
                return;
            s->t = next;
            break;
        }
        case STOP_HALT:
            t->state = TILE_HALTED;
            t->at = max_u64(max_u64(c + in->scycles, t->workers_done), t->out.port_free);
            s->t = t->at;
            return;
        default: fault(t, 0); return;
        }
        if (s->rpt_left) /* run, runall, join, a copy: an rpt body may end with one */
            isa_rpt_wrap(s);
    }
}

void tile_release(tile *t, uint64_t cycle)
{
    t->state = TILE_RUNNABLE;
    t->sup.t = cycle;
}

void tile_set_fault(tile *t, isa_fault f, uint64_t cycle)
{
    t->sup.fault = f;
    t->sup.t = cycle;
    fault(t, 0);
}

void tile_fault_text(const tile *t, char *buf, size_t len)
{
    const isa_cpu *c = t->fault_ctx == 0 ? &t->sup : &t->wk[t->fault_ctx - 1];
    char why[160];
    isa_fault_text(c, why, sizeof why);
    snprintf(buf, len, "ipu %u tile %u ctx %d pc 0x%x cycle %llu: %s", t->ipu, t->id, t->fault_ctx,
             c->pc, (unsigned long long)c->t, why);
}
