/* engine_host: carrying out the tiles' host copies at a host sync.
 *
 * Tiles log `hin`/`hout` (stream copies) and `rbin`/`rbout` (remote-buffer copies) while
 * they compute; when a zone with the host (internal_host, group_host, external_host,
 * gs2_host) is complete, the copies of the tiles taking part go to the attached host model
 * in tile order, and the host moves the data and says how long it waited (StreamCopyBegin)
 * and moved (StreamCopyMid, and its remote-buffer part). Which bytes a tile gets is the
 * host's business: per stream, the tiles' requests take consecutive slices of the current
 * buffer in (IPU, tile) order. Only the tiles in the chip's outq (those whose outboxes hold
 * something) are visited. Left out: the host copy's data crossing the on-chip exchange
 * (the host model bounds the rate by the receiving tiles' 4 B/cycle). */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "hw/engine_int.h"

int eng_host_copy(eng *g, uint32_t ipu, int group, uint64_t at, eng_htime *t, err *e)
{
    memset(t, 0, sizeof *t);
    chip *c = &g->chips[ipu];
    size_t n = 0;
    for (uint32_t q = 0; q < c->noutq; q++) {
        const tile *tl = &c->tiles[c->outq[q]];
        if (group >= 0 && tl->group != (uint32_t)group)
            continue;
        for (size_t k = 0; k < tl->out.n; k++)
            n += tl->out.s[k].kind >= TILE_HIN;
    }
    if (n == 0)
        return ERR_OK;
    if (!g->has_host) {
        for (uint32_t q = 0; q < c->noutq; q++) {
            uint32_t x = c->outq[q];
            for (size_t k = 0; k < c->tiles[x].out.n; k++)
                if (c->tiles[x].out.s[k].kind >= TILE_HIN)
                    return err_set(e, ERR_FAULT,
                                   "ipu %u tile %u ctx 0 pc 0x%x cycle %llu: host "
                                   "copy without a host model attached",
                                   ipu, x, c->tiles[x].out.s[k].pc,
                                   (unsigned long long)c->tiles[x].out.s[k].start);
        }
    }
    eng_hcopy *cp = xmalloc(n * sizeof *cp);
    size_t m = 0;
    for (uint32_t q = 0; q < c->noutq; q++) {
        uint32_t x = c->outq[q];
        tile *tl = &c->tiles[x];
        if (group >= 0 && tl->group != (uint32_t)group)
            continue;
        for (size_t k = 0; k < tl->out.n; k++) {
            const tile_send *s = &tl->out.s[k];
            if (s->kind < TILE_HIN)
                continue;
            int incoming = s->kind == TILE_HIN || s->kind == TILE_RBIN;
            cp[m++] = (eng_hcopy){
                .ipu = ipu,
                .tile = x,
                .kind = s->kind,
                .id = s->dst,
                .bytes = s->bytes,
                .offset = s->offset,
                .dst = incoming ? tl->mem + s->dst_addr : NULL,
                .src = incoming ? NULL : tl->out.data + s->data,
            };
        }
    }
    int rc = g->host.copy(g->host.ctx, ipu, group, at, cp, n, t, e);
    free(cp);
    if (rc != ERR_OK)
        return rc;
    for (uint32_t q = 0; q < c->noutq; q++) {
        tile *tl = &c->tiles[c->outq[q]];
        if (group >= 0 && tl->group != (uint32_t)group)
            continue;
        size_t keep = 0;
        for (size_t k = 0; k < tl->out.n; k++) {
            const tile_send *s = &tl->out.s[k];
            if (s->kind < TILE_HIN) {
                tl->out.s[keep++] = *s;
                continue;
            }
            if (s->kind == TILE_HIN)
                g->ipu[ipu].host_in_bytes += s->bytes;
            else if (s->kind == TILE_HOUT)
                g->ipu[ipu].host_out_bytes += s->bytes;
            else
                g->ipu[ipu].remote_bytes += s->bytes;
        }
        tl->out.n = keep;
        if (keep == 0)
            tl->out.used = 0;
    }
    return ERR_OK;
}
