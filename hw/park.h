/* park: tiles waiting at a sync that the engine need not visit, and the releases that free
 * the tiles waiting at a sync.
 *
 * A tile whose next superstep will be the same as the one before (a run of syncs of one zone,
 * or a loop back to its sync of at most ISA_PASS_MAX instructions: isa_sync_pass) is parked:
 * it leaves its IPU's c->act, and each IPU-wide release moves it on by one pass without
 * visiting it (the census counts it at once, arriving the pass's cycles after the release).
 * It is brought up to date in closed form (its counters, pc, counts and times) before the
 * first release it would meet differently, before a sync group's release, before its sync
 * would pass the cycle limit, and whenever the engine reads the tiles (park_wake). The
 * record of an IPU's parked tiles is its chip_parked (hw/chip.h); this module alone reads and
 * writes it, and the tiles' `parked` field. The engine calls three things: park_tile after a
 * round, park_release for a release, park_wake before it reads the tiles. */
#ifndef IPUSIM_PARK_H
#define IPUSIM_PARK_H

#include <stddef.h>
#include <stdint.h>

#include "hw/chip.h"
#include "hw/tile.h"

/* park_tile's work, once the cheap tests have passed. */
int park_tile_at(chip *c, tile *x, const tile_cfg *cfg);

/* Park tile x of chip c, which has just arrived at a sync (returns 1: it leaves c->act at the
 * next release), or return 0 when it cannot be. Inline: the first tests, which turn away most
 * tiles, are asked of every tile that arrives. */
static inline int park_tile(chip *c, tile *x, const tile_cfg *cfg)
{
    if (x->state != TILE_SYNC)
        return 0;
    uint32_t k = x->sup.pc / ISA_INSN_BYTES; /* isa_insn.park: a pass may start there */
    if (k >= x->ncode || !x->code[k].park)
        return 0;
    return park_tile_at(c, x, cfg);
}

/* Release at `cycle` the tiles of chip c waiting at a sync (group -1: an IPU-wide release;
 * else sync group `group`'s): the parked ones move on by one pass (or are all brought up to
 * date first, when one would meet this release differently, for a group's release, or when
 * a parked tile's sync would pass cfg->limit); each other tile waiting there is resumed at
 * `cycle`, and one whose next instructions only sync again does so at once (tile_sync_at_once)
 * and is counted into the census and, with may_park, parked where it can be; the others are
 * appended to run[*nrun], the tiles the next round steps. The census starts again from the
 * halted tiles (after a group's release it is counted afresh until the next IPU-wide one). */
void park_release(chip *c, int group, uint64_t cycle, const tile_cfg *cfg, int may_park, tile **run,
                  size_t *nrun);

/* Bring every parked tile of c up to date and back into c->act: before anything reads their
 * times or counters (their state and zone are always current). */
void park_wake(chip *c, const tile_cfg *cfg);

#endif
