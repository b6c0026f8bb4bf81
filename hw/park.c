/* park: parked tiles, and the release of the tiles waiting at a sync (hw/park.h).
 *
 * What a tile repeats at a sync is the ISA's to say (isa_sync_pass, isa_insn.park); this
 * module decides which tiles to park, moves them on at each IPU-wide release without visiting
 * them, and brings them up to date in closed form: a pass's counters count down by one, a run
 * of syncs moves the pc on by one instruction, and the instruction and issue counts grow by
 * the pass's. Left out: parking at a sync group's zone (a group's release would unpark it at
 * once), tiles inside an rpt body, and passes longer than ISA_PASS_MAX instructions. */
#include "hw/park.h"

#include <string.h>

#include "base/num.h"

/* The pass of tile t, which waits at a sync (or did: only its pc, registers and zone are
 * read): isa_sync_pass, with no rpt under way and the sync issuing within cfg->step_max of
 * the release; returns p->n (0: none). The caller checks cfg->limit at each release. */
static uint32_t pass_of(const tile *t, const tile_cfg *cfg, isa_pass *p)
{
    const isa_cpu *s = &t->sup;
    uint32_t n = 0;
    *p = (isa_pass){0, 0, 0, 0, 0, 0};
    if (!s->rpt_left && s->pc % ISA_INSN_BYTES == 0)
        n = isa_sync_pass(t->code, t->ncode, s->pc / ISA_INSN_BYTES, t->zone, s->r, p);
    if (n == 0 || p->lead > cfg->step_max)
        return p->n = 0;
    return n;
}

/* Bring parked tile t up to date: `passes` passes (pass_of, from where it parked) were made
 * since it parked, the last released at `cycle`. */
static void unpark(tile *t, const tile_cfg *cfg, uint64_t passes, uint64_t cycle)
{
    isa_cpu *s = &t->sup;
    isa_pass p;
    pass_of(t, cfg, &p); /* what it was parked with: nothing it reads has changed */
    for (unsigned r = 0; r < ISA_NREGS; r++)
        if (p.counters >> r & 1)
            s->r[r] -= (uint32_t)passes;
    if (p.run)
        s->pc += (uint32_t)passes * ISA_INSN_BYTES;
    s->ninsn += passes * p.len;
    s->busy += passes * p.cost;
    t->parked = 0;
    if (passes == 0)
        return;
    t->step_start = cycle;
    t->at = s->t = cycle + p.cost; /* its workers and port were idle at the release */
}

int park_tile_at(chip *c, tile *x, const tile_cfg *cfg)
{
    isa_pass pass;
    if (x->zone >= ISA_NZONES || chip_zone_kind[x->zone].group)
        return 0; /* a group's release would unpark it at once */
    if (pass_of(x, cfg, &pass) == 0)
        return 0;
    chip_parked *p = &c->park;
    x->parked = p->wide + 1;
    chip_census_add_at(&p->census, x, pass.cost);
    if (p->n == 0 || p->wide + pass.n + 1 < p->expiry) /* the first release past its passes */
        p->expiry = p->wide + pass.n + 1;
    p->lead = max_u64(p->lead, pass.lead);
    p->n++;
    return 1;
}

void park_wake(chip *c, const tile_cfg *cfg)
{
    chip_parked *p = &c->park;
    if (p->n == 0)
        return;
    for (uint32_t k = 0; k < c->nlive; k++) {
        tile *x = &c->tiles[c->live[k]];
        if (x->parked)
            unpark(x, cfg, p->wide + 1 - x->parked, p->wide_at);
    }
    memcpy(c->act, c->live, c->nlive * sizeof *c->act);
    c->nact = c->nlive;
    p->n = 0;
    p->lead = 0;
    memset(&p->census, 0, sizeof p->census);
}

/* Add census s, its cycles counted from `base`, into d. */
static void census_merge(chip_census *d, const chip_census *s, uint64_t base)
{
    d->ncounted += s->ncounted;
    d->nhalt += s->nhalt;
    d->nrun += s->nrun;
    for (unsigned z = 0; z < ISA_NZONES; z++)
        d->nzone[z] += s->nzone[z];
    for (unsigned gr = 0; gr < ISA_NGROUPS; gr++) {
        if (s->ngrp[gr])
            d->all_grp[gr] = max_u64(d->all_grp[gr], base + s->all_grp[gr]);
        if (s->ngz[gr][0] + s->ngz[gr][1])
            d->at_grp[gr] = max_u64(d->at_grp[gr], base + s->at_grp[gr]);
        d->ngrp[gr] += s->ngrp[gr];
        d->ngz[gr][0] += s->ngz[gr][0];
        d->ngz[gr][1] += s->ngz[gr][1];
    }
}

/* Before a release at `cycle` visits c->act: wake the parked tiles when it is a group's, when
 * one would meet it differently, or when a parked tile's sync would pass the limit; then the
 * census starts again from the halted tiles and, for an IPU-wide release, the parked tiles
 * arrive again. */
static void release_parked(chip *c, int group, uint64_t cycle, const tile_cfg *cfg)
{
    chip_parked *p = &c->park;
    uint64_t limit = cfg->limit;
    if (p->n &&
        (group >= 0 || p->wide + 1 == p->expiry || cycle > limit || p->lead > limit - cycle))
        park_wake(c, cfg);
    c->census_ok = group < 0;
    if (group >= 0)
        return;
    c->census = c->halted;
    p->wide++;
    p->wide_at = cycle;
    if (p->n)
        census_merge(&c->census, &p->census, cycle);
    p->passes += p->n;
}

/* Resume the tiles of c->act waiting at a sync that a release at `cycle` frees (grp: its
 * sync group, UINT32_MAX: all): park_release's visit, out of line so that a release that
 * visits no tile (every one parked) does not pay for its registers. */
static __attribute__((noinline)) void release_act(chip *c, uint32_t grp, uint64_t cycle,
                                                  const tile_cfg *cfg, int may_park, tile **run,
                                                  size_t *nrun)
{
    uint32_t keep = 0;
    size_t n = *nrun;
    for (uint32_t k = 0; k < c->nact; k++) {
        tile *x = &c->tiles[c->act[k]];
        if (k + 4 < c->nact) /* what a release and tile_sync_at_once touch */
            tile_prefetch(&c->tiles[c->act[k + 4]]);
        if (x->parked) /* since the last round: it leaves act */
            continue;
        if (x->state != TILE_SYNC || (grp != UINT32_MAX && x->group != grp)) {
            c->act[keep++] = x->id;
            continue;
        }
        tile_release(x, cycle);
        if (!tile_sync_at_once(x, cfg)) { /* the next round runs it */
            run[n++] = x;
            c->act[keep++] = x->id;
            continue;
        }
        chip_census_add(&c->census, x); /* a tile with nothing to do but sync again */
        if (!may_park || !park_tile(c, x, cfg))
            c->act[keep++] = x->id;
    }
    c->nact = keep;
    *nrun = n;
}

void park_release(chip *c, int group, uint64_t cycle, const tile_cfg *cfg, int may_park, tile **run,
                  size_t *nrun)
{
    release_parked(c, group, cycle, cfg);
    if (c->nact)
        release_act(c, group < 0 ? UINT32_MAX : (uint32_t)group, cycle, cfg, may_park, run, nrun);
}
