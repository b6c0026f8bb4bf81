/* chip: one IPU — its tiles, their SRAM, and the program they run. */
#ifndef IPUSIM_CHIP_H
#define IPUSIM_CHIP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "hw/machine.h"
#include "hw/tile.h"
#include "isa/isa.h"

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
    uint32_t *outq; /* the tiles whose outbox may hold copies not yet carried out, ascending
                       (every tile with one is here): what delivery and host copies visit */
    uint32_t noutq;
    uint8_t *queued;     /* per tile: it is in outq */
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

/* Memory of one tile. */
uint8_t *chip_tile_mem(const chip *c, uint32_t tile);

#endif
