/* graph_coll: the sum of a tensor over the replicas of a replicated graph (gr_all_reduce),
 * lowered onto each tile as the ring all-reduce the fabric's collectives run, on the ring's
 * one schedule (coll_step_chunk, fabric/coll.h; replica r is ring position r + 1)
 * (docs/graph.md): each of the tile's regions of the tensor is cut in R chunks (whole 8-byte
 * pairs, the last chunk takes the rest); in round s of R - 1, replica r sends chunk
 * (r - s) mod R of each region to the same tile of replica r + 1 (gsend, over the IPU-Links, then `sync
 * external`), which adds it to its own copy of that chunk (reduce_add: own + received, the
 * six workers each a part, then `sync internal`); after them replica r holds the whole sum of
 * chunk (r + 1) mod R, and R - 1 rounds of all-gather pass the sums on round the ring,
 * written straight into the tensor; a tile with several regions does them one after another
 * (a tile takes one incoming stream at a time), every tile as many times as the most regions
 * a tile holds. The received chunk lands in a buffer after the tile's
 * pool, at the address the sender names from its own image: every replica's image of a tile
 * has the same layout (a send and six adds a region each round, empty ones too: a 0-byte
 * gsend, an add of 0 elements), so the adds' stride from own to received is positive and
 * the same everywhere. Left out: rings in both directions at once (half the
 * rounds' bytes each way), and reductions other than the sum. */
#include "workloads/graph/graph_int.h"

#include "base/num.h"
#include "fabric/coll.h"

enum { NW = 6 }; /* workers a tile */

/* Start of chunk c of R over n elements: the ring's chunks of the n / 2 pairs, the last
 * chunk taking an odd element too. */
static size_t chunk(size_t n, uint32_t c, uint32_t R)
{
    return c >= R ? n : 2 * coll_chunk_begin(n / 2, R, c);
}

/* Replica rep's ring position: rep + 1, so that the reduce-scatter leaves it the sum of
 * chunk rep + 1 (mod R). */
static uint32_t position(uint32_t rep, uint32_t R)
{
    return (rep + 1) % R;
}

/* Region k is the tile's j-th region of t (in t's order). */
static int is_slot(const gr_tensor_s *t, size_t k, uint32_t ipu, uint32_t tile, uint32_t j)
{
    if (t->r[k].ipu != ipu || t->r[k].tile != tile)
        return 0;
    uint32_t before = 0;
    for (size_t q = 0; q < k; q++)
        before += t->r[q].ipu == ipu && t->r[q].tile == tile;
    return before == j;
}

/* The most regions of t on one tile. */
static uint32_t slots(const gr_tensor_s *t)
{
    uint32_t most = 0;
    for (size_t k = 0; k < t->nr; k++) {
        uint32_t n = 0;
        for (size_t q = 0; q < t->nr; q++)
            n += t->r[q].ipu == t->r[k].ipu && t->r[q].tile == t->r[k].tile;
        most = n > most ? n : most;
    }
    return most;
}

uint32_t gr_all_reduce_syncs(const graph *g, const gr_prog_s *p)
{
    return g->replicas > 1 ? 3 * (g->replicas - 1) * slots(&g->t[p->a]) : 0;
}

/* The send of one round: chunk c of the tile's j-th region to the next replica, into its
 * receive buffer (reduce = 1) or into the tensor (reduce = 0). A tile receives one stream at
 * a time, so each round moves one region a tile. */
static void sends(const graph *g, const gr_tensor_s *t, const uint32_t *off, uint32_t ipu,
                  uint32_t tile, uint32_t rep, uint32_t j, uint32_t c, unsigned id, int reduce,
                  txt *code)
{
    uint32_t R = g->replicas, next = (rep + 1) % R * g->nipus + ipu;
    for (size_t k = 0; k < t->nr; k++) {
        const gr_region_s *r = &t->r[k];
        if (!is_slot(t, k, ipu, tile, j))
            continue;
        size_t n = r->end - r->begin, a = chunk(n, c, R), z = chunk(n, c + 1, R);
        txt_printf(code, "        li      r1, POOL+%zu\n        li      r2, %zu\n", off[k] + 4 * a,
                   4 * (z - a));
        txt_printf(code, "        li      r3, %u\n", next << 16 | tile);
        if (reduce)
            txt_printf(code, "        li      r4, A%uB%zu\n", id, k);
        else
            txt_printf(code, "        li      r4, POOL+%zu\n", off[k] + 4 * a);
        txt_printf(code, "        gsend   r1, r2, r3, r4\n");
    }
    txt_printf(code, "        sync    external\n");
}

/* The add of one round: chunk c of the tile's j-th region += what arrived, over the workers. */
static void adds(const graph *g, const gr_tensor_s *t, const uint32_t *off, uint32_t ipu,
                 uint32_t tile, uint32_t j, uint32_t c, unsigned id, unsigned s, txt *code,
                 txt *data)
{
    uint32_t R = g->replicas;
    unsigned wave = 0;
    for (size_t k = 0; k < t->nr; k++) {
        const gr_region_s *r = &t->r[k];
        if (!is_slot(t, k, ipu, tile, j))
            continue;
        size_t n = r->end - r->begin, a = chunk(n, c, R), len = chunk(n, c + 1, R) - a;
        for (unsigned w = 0; w < NW; w++) {
            size_t wa = len / 2 * w / NW * 2, wz = w + 1 == NW ? len : len / 2 * (w + 1) / NW * 2;
            size_t own = off[k] + 4 * (a + wa);
            txt_printf(data,
                       "        .align  8\nA%uS%zu_%u_%u: .word POOL+%zu, POOL+%zu, %zu, 2, "
                       "A%uB%zu+%zu-(POOL+%zu), 0x3f800000\n",
                       id, k, s, w, own, own, wz - wa, id, k, 4 * wa, own);
            txt_printf(code, "        li      r1, A%uS%zu_%u_%u\n        run     reduce_add, r1\n",
                       id, k, s, w);
            if (++wave == ISA_NWORKERS) {
                txt_printf(code, "        join\n");
                wave = 0;
            }
        }
    }
    txt_printf(code, "%s        sync    internal\n", wave ? "        join\n" : "");
}

void gr_all_reduce_emit(const graph *g, const gr_prog_s *p, const uint32_t *pool_off, uint32_t ipu,
                        uint32_t tile, uint32_t rep, txt *code, txt *data, unsigned *inst)
{
    uint32_t R = g->replicas;
    if (R < 2)
        return;
    const gr_tensor_s *t = &g->t[p->a];
    unsigned id = (*inst)++;
    for (size_t k = 0; k < t->nr; k++) { /* the receive buffers: the largest chunk each */
        const gr_region_s *r = &t->r[k];
        if (r->ipu != ipu || r->tile != tile)
            continue;
        size_t n = r->end - r->begin, most = 0;
        for (uint32_t c = 0; c < R; c++)
            most = max_u64(most, chunk(n, c + 1, R) - chunk(n, c, R));
        txt_printf(data, "        .align  8\nA%uB%zu:  .space  %zu\n", id, k, 4 * most);
    }
    uint32_t pos = position(rep, R), prev = (pos + R - 1) % R; /* what prev sends arrives */
    for (uint32_t j = 0, n = slots(t); j < n; j++) {
        for (uint32_t s = 0; s + 1 < R; s++) { /* reduce-scatter */
            sends(g, t, pool_off, ipu, tile, rep, j,
                  coll_step_chunk(COLL_ALLREDUCE, R, s, pos, NULL), id, 1, code);
            adds(g, t, pool_off, ipu, tile, j, coll_step_chunk(COLL_ALLREDUCE, R, s, prev, NULL),
                 id, s, code, data);
        }
        for (uint32_t s = R - 1; s < coll_steps(COLL_ALLREDUCE, R); s++) /* all-gather */
            sends(g, t, pool_off, ipu, tile, rep, j,
                  coll_step_chunk(COLL_ALLREDUCE, R, s, pos, NULL), id, 0, code);
    }
}
