/* chip: an IPU as an array of tiles over one lazily mapped block of SRAM.
 *
 * The block is an anonymous private mapping with MAP_NORESERVE: pages cost host memory only
 * once a tile touches them, so 64 IPUs of 1472 x 624 KiB fit in a modest host. The chip
 * also keeps what the engine's per-superstep passes visit: the live tiles, the tiles with
 * copies to carry out, the census of arrivals, and the record of the parked tiles (loops
 * and runs of syncs, moved on by each IPU-wide release without being visited: hw/park.c).
 * Left out:
 * the exchange and the IPU's links (fabric/), and memory banks and their conflicts. */
#include "hw/chip.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/alloc.h"
#include "base/num.h"

int chip_init(chip *c, uint32_t id, const mach *m, uint32_t ntiles, err *e)
{
    memset(c, 0, sizeof *c);
    c->id = id;
    c->ntiles = ntiles;
    c->memsize = m->sram_bytes;
    c->mem_bytes = (size_t)ntiles * m->sram_bytes;
    void *p = mmap(NULL, c->mem_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return err_set(e, ERR_INPUT, "cannot map %zu bytes of tile memory for ipu %u", c->mem_bytes,
                       id);
    c->mem = p;
    c->tiles = xcalloc_aligned(ntiles, sizeof *c->tiles, 64); /* fronts on cache lines */
    for (uint32_t t = 0; t < ntiles; t++)
        tile_init(&c->tiles[t], id, t, chip_tile_mem(c, t), NULL, 0, 0, 0);
    return ERR_OK;
}

void chip_free(chip *c)
{
    for (uint32_t t = 0; c->tiles && t < c->ntiles; t++)
        tile_free(&c->tiles[t]);
    if (c->mem)
        munmap(c->mem, c->mem_bytes);
    free(c->tiles);
    free(c->live);
    free(c->act);
    free(c->outq);
    free(c->queued);
    memset(c, 0, sizeof *c);
}

void chip_index_live(chip *c)
{
    free(c->live);
    c->live = xmalloc((c->ntiles ? c->ntiles : 1) * sizeof *c->live);
    c->nlive = 0;
    for (uint32_t t = 0; t < c->ntiles; t++)
        if (c->tiles[t].state != TILE_IDLE)
            c->live[c->nlive++] = t;
    free(c->act);
    c->act = xmalloc((c->ntiles ? c->ntiles : 1) * sizeof *c->act);
    memcpy(c->act, c->live, c->nlive * sizeof *c->act);
    c->nact = c->nlive;
    memset(&c->park, 0, sizeof c->park);
    free(c->outq);
    free(c->queued);
    c->outq = xmalloc((c->ntiles ? c->ntiles : 1) * sizeof *c->outq);
    c->queued = xcalloc(c->ntiles ? c->ntiles : 1, 1);
    c->noutq = 0;
    memset(&c->census, 0, sizeof c->census);
    memset(&c->halted, 0, sizeof c->halted);
    c->census_ok = 1; /* every live tile is runnable: each is counted when it stops */
}

const chip_census *chip_census_of(const chip *c, chip_census *tmp)
{
    if (c->census_ok && c->census.ncounted == c->nlive) {
        *tmp = c->census;
    } else {
        memset(tmp, 0, sizeof *tmp);
        for (uint32_t k = 0; k < c->nlive; k++)
            chip_census_add(tmp, &c->tiles[c->live[k]]);
    }
    tmp->nidle = c->ntiles - c->nlive; /* idle tiles: in every zone at once, in no group */
    tmp->at = 0;
    for (uint32_t gr = 0; gr < ISA_NGROUPS; gr++)
        tmp->at = max_u64(tmp->at, tmp->all_grp[gr]);
    return tmp;
}

void chip_queue_out(chip *c, uint32_t t)
{
    if (c->queued[t])
        return;
    c->queued[t] = 1;
    uint32_t k = c->noutq++;
    while (k > 0 && c->outq[k - 1] > t) { /* rarely: tiles mostly come in order */
        c->outq[k] = c->outq[k - 1];
        k--;
    }
    c->outq[k] = t;
}

void chip_prune_out(chip *c)
{
    uint32_t keep = 0;
    for (uint32_t k = 0; k < c->noutq; k++) {
        uint32_t t = c->outq[k];
        if (c->tiles[t].out.n)
            c->outq[keep++] = t;
        else
            c->queued[t] = 0;
    }
    c->noutq = keep;
}

uint8_t *chip_tile_mem(const chip *c, uint32_t tile)
{
    return c->mem + (size_t)tile * c->memsize;
}

void chip_load_tile(chip *c, uint32_t t, const isa_prog *prog, const isa_insn *code)
{
    uint8_t *m = chip_tile_mem(c, t);
    if (!prog) {
        tile_init(&c->tiles[t], c->id, t, m, NULL, 0, 0, 0);
        return;
    }
    memcpy(m, prog->image, prog->size);
    tile_init(&c->tiles[t], c->id, t, m, code, prog->ncode, prog->size, prog->entry);
}
