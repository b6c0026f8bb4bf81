/* engine_report: the engine's reports that name tiles: where the tiles of an IPU are (for a
 * stop), and the other tiles past the superstep limit after a superstep fault (for one process,
 * and for the ranks' meeting). It reads the tiles' state and writes text; it models nothing
 * and calls nothing of the engine's other files (engine.c and engine_rank.c call it). */
#include <string.h>

#include "base/text.h"
#include "hw/engine_int.h"

/* "T (pc 0xP)", or "T (ctx C pc 0xP)" for a worker context: a tile where it is now. */
static void name_tile(txt *b, const tile *x)
{
    int ctx = tile_ctx(x);
    if (ctx)
        txt_printf(b, "%u (ctx %d pc 0x%x)", x->id, ctx, tile_cpu(x)->pc);
    else
        txt_printf(b, "%u (pc 0x%x)", x->id, tile_cpu(x)->pc);
}

/* "tiles A (pc P), B (pc P), ... and M more" (or "tile A (pc P)") for the tiles of IPU i
 * that `keep` accepts, but `skip`: the first NAMED_TILES named. Returns how many there are
 * (nothing is written for none). */
static uint32_t list_tiles(txt *b, const eng *g, uint32_t i, int (*keep)(const tile *),
                           const tile *skip)
{
    uint32_t n = 0;
    for (uint32_t t = 0; t < g->ntiles; t++) {
        const tile *x = &g->chips[i].tiles[t];
        n += x != skip && keep(x);
    }
    uint32_t named = 0;
    for (uint32_t t = 0; t < g->ntiles && named < NAMED_TILES; t++) {
        const tile *x = &g->chips[i].tiles[t];
        if (x == skip || !keep(x))
            continue;
        txt_printf(b, "%s", named == 0 ? (n == 1 ? "tile " : "tiles ") : ", ");
        name_tile(b, x);
        named++;
    }
    if (n > named)
        txt_printf(b, " and %u more", n - named);
    return n;
}

static int is_runnable(const tile *x)
{
    return x->state == TILE_RUNNABLE;
}

static uint32_t count_state(const chip *c, tile_state st)
{
    uint32_t n = 0;
    for (uint32_t t = 0; t < c->ntiles; t++)
        n += c->tiles[t].state == st;
    return n;
}

void eng_ipu_state(txt *b, const eng *g, uint32_t i)
{
    const chip *c = &g->chips[i];
    txt_printf(b, "ipu %u: ", i);
    if (list_tiles(b, g, i, is_runnable, NULL) == 0)
        txt_printf(b, "no tile");
    txt_printf(b, " still computing, %u waiting at syncs", count_state(c, TILE_SYNC));
    uint32_t h = count_state(c, TILE_HALTED), f = count_state(c, TILE_FAULTED);
    if (h)
        txt_printf(b, ", %u halted", h);
    if (f)
        txt_printf(b, ", %u faulted", f);
}

int eng_past_superstep(const tile *x)
{
    return x->state == TILE_FAULTED && tile_cpu(x)->fault == FAULT_SUPERSTEP;
}

void eng_past_lines(const eng *g, uint32_t lo, uint32_t hi, uint32_t first_ipu, uint32_t first_tile,
                    txt *out)
{
    const tile *first = &g->chips[first_ipu].tiles[first_tile];
    for (uint32_t i = lo; i < hi; i++) {
        txt part = {0};
        if (list_tiles(&part, g, i, eng_past_superstep, first))
            txt_printf(out, "ipu %u %s\n", i, txt_str(&part));
        txt_free(&part);
    }
}

void eng_past_text(txt *b, const char *lines)
{
    uint32_t ipus = 0;
    for (const char *p = lines, *nl; p && (nl = strchr(p, '\n')); p = nl + 1, ipus++)
        if (ipus < NAMED_IPUS)
            txt_printf(b, "%s%.*s", ipus ? "; " : "; also past it: ", (int)(nl - p), p);
    if (ipus > NAMED_IPUS)
        txt_printf(b, "; and tiles of %u more IPUs", ipus - NAMED_IPUS);
}

void eng_also_past(txt *b, const eng *g, const tile *first)
{
    txt lines = {0};
    eng_past_lines(g, 0, g->nipus, first->ipu, first->id, &lines);
    eng_past_text(b, txt_str(&lines));
    txt_free(&lines);
}
