/* chip: one IPU — its tiles, their SRAM, and the program they run. */
#ifndef IPUSIM_CHIP_H
#define IPUSIM_CHIP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "hw/machine.h"
#include "hw/tile.h"
#include "isa/isa.h"

/* What an IPU's live tiles are doing after a round, for the sync zones (fabric/sync.c): how
 * many are halted, runnable, at each zone, in each sync group (and at its `group` and
 * `group_host` zones), and the latest arrivals (or halts). */
typedef struct chip_census {
    uint32_t ncounted; /* live tiles counted */
    uint32_t nhalt, nrun, nidle, nzone[ISA_NZONES];
    uint32_t ngrp[ISA_NGROUPS], ngz[ISA_NGROUPS][2]; /* [0] group, [1] group_host */
    uint64_t at, at_grp[ISA_NGROUPS], all_grp[ISA_NGROUPS];
} chip_census;

/* The record of an IPU's parked tiles: those in a loop of syncs, or a run of syncs, at an
 * IPU-wide zone. An IPU-wide release moves each on by one pass without visiting it, and
 * counts them into the census at once. hw/park.c alone reads and writes it (hw/park.h). */
typedef struct chip_parked {
    uint32_t n;         /* tiles parked */
    uint64_t wide;      /* IPU-wide releases carried out on this IPU since loading */
    uint64_t wide_at;   /* the cycle of the latest */
    uint64_t expiry;    /* the IPU-wide release (counted as `wide`) some parked tile would
                           meet differently: they are unparked before it */
    uint64_t lead;      /* the most cycles from a release to a parked tile's sync */
    uint64_t passes;    /* passes made parked since loading (one a tile a release) */
    chip_census census; /* the parked tiles', arrival cycles counted from the release */
} chip_parked;

typedef struct chip {
    uint32_t id;
    uint32_t ntiles;
    uint32_t memsize; /* SRAM bytes per tile */
    uint8_t *mem;     /* ntiles x memsize, mapped lazily (pages appear on first touch) */
    size_t mem_bytes;
    tile *tiles;
    uint32_t *live; /* the tiles holding a program (not idle), ascending: what the
                          * per-superstep loops visit (chip_index_live after loading) */
    uint32_t nlive;
    uint32_t *act; /* the live tiles not parked, ascending: what a release visits (park.h) */
    uint32_t nact;
    chip_parked park;
    uint32_t *outq; /* the tiles whose outbox may hold copies not yet carried out, ascending
                       (every tile with one is here): what delivery and host copies visit */
    uint32_t noutq;
    uint8_t *queued;     /* per tile: it is in outq */
    chip_census census;  /* kept by the engine: the tiles that stopped (at a sync, or halted)
                            since the IPU's last IPU-wide release, and those halted before */
    chip_census halted;  /* the tiles halted so far */
    int census_ok;       /* census is kept (no sync group was released since) */
    uint64_t supersteps; /* syncs released on this IPU (internal and external) */
    uint64_t finish;     /* cycle at which its last tile halted */
} chip;

/* Map memory for `ntiles` tiles of m->sram_bytes each. ERR_INPUT if it cannot be mapped. */
int chip_init(chip *c, uint32_t id, const mach *m, uint32_t ntiles, err *e);
void chip_free(chip *c);

/* Copy the program image into tile t and reset it to run `code` (prog decoded) from its
 * entry; prog NULL (code NULL) leaves the tile idle, holding nothing. */
void chip_load_tile(chip *c, uint32_t t, const isa_prog *prog, const isa_insn *code);

/* Index the tiles that hold a program (c->live), after every tile was loaded. */
void chip_index_live(chip *c);

/* Put tile t in c->outq (its outbox holds copies), in tile order, unless it is there. */
void chip_queue_out(chip *c, uint32_t t);

/* Drop the tiles whose outboxes are empty from c->outq. */
void chip_prune_out(chip *c);

/* Per zone: whether it is a sync group's zone, and whether the host takes part. */
static const struct {
    uint8_t group, host;
} chip_zone_kind[ISA_NZONES] = {
#define ZONE(id, name, scope, host, meaning)                                                       \
    [ISA_ZONE_##id] = {ISA_SCOPE_##scope == ISA_SCOPE_GROUP, host},
#include "isa/zones.def"
#undef ZONE
};

/* Count tile x, arrived (or halted) at `at`, into n (inline: after every round, for every
 * tile that stopped). The latest arrival over all groups, n->at, is left to chip_census_of. */
static inline void chip_census_add_at(chip_census *n, const tile *x, uint64_t at)
{
    uint32_t gr = x->group < ISA_NGROUPS ? x->group : 0;
    n->ncounted++;
    n->ngrp[gr]++;
    if (at > n->all_grp[gr])
        n->all_grp[gr] = at;
    if (x->state != TILE_SYNC || x->zone >= ISA_NZONES) {
        n->nhalt += x->state == TILE_HALTED;
        n->nrun += x->state == TILE_RUNNABLE;
        return;
    }
    n->nzone[x->zone]++;
    if (chip_zone_kind[x->zone].group) {
        n->ngz[gr][chip_zone_kind[x->zone].host]++;
        if (at > n->at_grp[gr])
            n->at_grp[gr] = at;
    }
}

/* Count tile x into n at its own arrival (or halt). */
static inline void chip_census_add(chip_census *n, const tile *x)
{
    chip_census_add_at(n, x, x->at);
}

/* The census of c's live tiles: c->census when it is kept and counts every live tile, else
 * counted afresh into *tmp. */
const chip_census *chip_census_of(const chip *c, chip_census *tmp);

/* Memory of one tile. */
uint8_t *chip_tile_mem(const chip *c, uint32_t tile);

#endif
