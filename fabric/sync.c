/* sync: the sync zones' membership, release latencies and deadlock reports.
 *
 * After a compute round every tile of an IPU is waiting at a sync, halted or faulted; the
 * classification here says which zone, if any, is complete: all tiles halted; all at one
 * IPU-wide zone (released by the engine on its own); all at one external zone (released
 * with every other IPU); or, per sync group, all tiles of a group at `group`/`group_host`.
 * Left out: the sync network's own timing beyond one latency per zone (no per-tile distance
 * to the sync controller, no SyncAns phase), and zones spanning a subset of IPUs. */
#include "fabric/sync.h"

#include <stdio.h>
#include <string.h>

#include "base/num.h"

uint64_t sync_latency(const mach *m, unsigned zone)
{
    const isa_zone_info *z = isa_zone_info_of(zone);
    uint64_t lat = z->scope == ISA_SCOPE_GS1 || z->scope == ISA_SCOPE_GS2 ? mach_sync_external(m)
                                                                          : m->sync_internal;
    return lat + (z->host ? m->sync_host : 0);
}

/* Tiles of c per zone and per group, and their arrivals. */
typedef struct census {
    uint32_t nhalt, nrun, nidle, nzone[ISA_NZONES];
    uint32_t ngrp[ISA_NGROUPS], ngz[ISA_NGROUPS][2]; /* [0] group, [1] group_host */
    uint64_t at, at_grp[ISA_NGROUPS], all_grp[ISA_NGROUPS];
} census;

static void count(const chip *c, census *n)
{
    memset(n, 0, sizeof *n);
    uint8_t group_zone[ISA_NZONES], host_zone[ISA_NZONES]; /* the zone table, looked up once */
    for (unsigned z = 0; z < ISA_NZONES; z++) {
        group_zone[z] = isa_zone_info_of(z)->scope == ISA_SCOPE_GROUP;
        host_zone[z] = (uint8_t)isa_zone_info_of(z)->host;
    }
    for (uint32_t t = 0; t < c->ntiles; t++) {
        const tile *x = &c->tiles[t];
        if (x->state == TILE_IDLE) { /* in every zone at once, in no group */
            n->nidle++;
            continue;
        }
        uint32_t gr = x->group < ISA_NGROUPS ? x->group : 0;
        n->ngrp[gr]++;
        n->at = max_u64(n->at, x->at);
        n->all_grp[gr] = max_u64(n->all_grp[gr], x->at);
        n->nhalt += x->state == TILE_HALTED;
        n->nrun += x->state == TILE_RUNNABLE;
        if (x->state != TILE_SYNC || x->zone >= ISA_NZONES)
            continue;
        n->nzone[x->zone]++;
        if (group_zone[x->zone]) {
            n->ngz[gr][host_zone[x->zone]]++;
            n->at_grp[gr] = max_u64(n->at_grp[gr], x->at);
        }
    }
}

/* The zone every tile of the IPU waits at (idle tiles count as there), or ISA_NZONES. */
static unsigned whole_zone(const census *n, uint32_t ntiles)
{
    for (unsigned z = 0; z < ISA_NZONES; z++)
        if (isa_zone_info_of(z)->scope != ISA_SCOPE_GROUP && n->nzone[z] &&
            n->nzone[z] + n->nidle == ntiles)
            return z;
    return ISA_NZONES;
}

void sync_classify(const mach *m, const chip *c, eng_sync *s)
{
    census n;
    count(c, &n);
    memset(s, 0, sizeof *s);
    s->at = n.at;
    s->first = n.at;
    for (uint32_t gr = 0; gr < ISA_NGROUPS; gr++)
        if (n.ngrp[gr] && n.all_grp[gr] < s->first)
            s->first = n.all_grp[gr];
    s->runnable = n.nrun > 0;
    if (n.nhalt + n.nidle == c->ntiles) {
        s->what = ENG_WAIT_DONE;
        return;
    }
    unsigned z = whole_zone(&n, c->ntiles);
    if (z < ISA_NZONES) {
        const isa_zone_info *zi = isa_zone_info_of(z);
        s->what = zi->scope == ISA_SCOPE_INTERNAL ? ENG_WAIT_IPU : ENG_WAIT_EXTERNAL;
        s->zone = z;
        s->host = zi->host;
        s->latency = sync_latency(m, z);
        return;
    }
    s->what = ENG_WAIT_NONE;
    for (uint32_t gr = 0; gr < ISA_NGROUPS; gr++) {
        int host = n.ngrp[gr] && n.ngz[gr][1] == n.ngrp[gr];
        if (!n.ngrp[gr] || (!host && n.ngz[gr][0] != n.ngrp[gr]))
            continue;
        s->group[s->ngroups++] = (eng_group_wait){
            .group = gr,
            .host = host,
            .at = n.at_grp[gr],
            .latency = sync_latency(m, host ? ISA_ZONE_GROUP_HOST : ISA_ZONE_GROUP),
        };
    }
}

/* Append "a-b,c,..." for the tiles of chip c in `state` (zone < 0: any zone). */
static size_t list_tiles(const chip *c, tile_state state, int zone, char *buf, size_t len)
{
    size_t n = 0, used = 0;
    buf[0] = '\0';
    uint32_t t = 0;
    while (t < c->ntiles) {
        const tile *x = &c->tiles[t];
        if (x->state != state || (zone >= 0 && x->zone != (uint32_t)zone)) {
            t++;
            continue;
        }
        uint32_t a = t;
        while (t + 1 < c->ntiles && c->tiles[t + 1].state == state &&
               (zone < 0 || c->tiles[t + 1].zone == (uint32_t)zone))
            t++;
        n += t - a + 1;
        if (used + 32 < len) {
            if (a == t)
                used += (size_t)snprintf(buf + used, len - used, "%s%u", used ? "," : "", a);
            else
                used += (size_t)snprintf(buf + used, len - used, "%s%u-%u", used ? "," : "", a, t);
        } else if (used + 4 < len && buf[used - 1] != '.') {
            used += (size_t)snprintf(buf + used, len - used, ",...");
        }
        t++;
    }
    return n;
}

/* One IPU whose tiles wait at zones that can never complete. */
static int ipu_deadlock(chip *c, uint64_t at, err *e)
{
    char list[400], msg[2400];
    size_t used = (size_t)snprintf(msg, sizeof msg, "ipu %u cycle %llu: sync deadlock:", c->id,
                                   (unsigned long long)at);
    for (uint32_t z = 0; z < ISA_NZONES && used < sizeof msg; z++) {
        size_t n = list_tiles(c, TILE_SYNC, (int)z, list, sizeof list);
        if (n || z <= ISA_ZONE_EXTERNAL)
            used += (size_t)snprintf(msg + used, sizeof msg - used,
                                     "%s waiting at %s sync: %zu "
                                     "tiles (%s)",
                                     z ? ";" : "", isa_zone_name(z), n, n ? list : "none");
    }
    size_t nh = list_tiles(c, TILE_HALTED, -1, list, sizeof list);
    if (used < sizeof msg)
        snprintf(msg + used, sizeof msg - used, "; missing (halted): %zu tiles (%s)", nh,
                 nh ? list : "none");
    err_set(e, ERR_FAULT, "%s", msg);
    for (uint32_t t = 0; t < c->ntiles; t++)
        if (c->tiles[t].state == TILE_SYNC)
            tile_set_fault(&c->tiles[t], FAULT_SYNC_DEADLOCK, c->tiles[t].at);
    return ERR_FAULT;
}

int sync_deadlock(chip *chips, const eng_sync *s, uint32_t nipus, err *e)
{
    uint32_t next = 0, last_ext = 0, nother = 0, mixed = 0;
    uint64_t ext_at = 0;
    for (uint32_t i = 0; i < nipus; i++) {
        if (s[i].what == ENG_WAIT_EXTERNAL) {
            mixed |= next && s[i].zone != s[last_ext].zone;
            last_ext = i;
            next++;
            ext_at = max_u64(ext_at, s[i].at);
        } else {
            nother += s[i].what != ENG_WAIT_DONE;
        }
    }
    if (next && !nother)
        return err_set(e, ERR_FAULT,
                       "ipu %u cycle %llu: sync deadlock: %u IPUs wait at an external sync; "
                       "missing: %s",
                       last_ext, (unsigned long long)ext_at, next,
                       mixed ? "IPUs waiting at a different external zone"
                             : "IPUs whose tiles have all halted");
    for (uint32_t i = 0; i < nipus; i++)
        if (s[i].what == ENG_WAIT_NONE && !s[i].runnable)
            return ipu_deadlock(&chips[i], s[i].at, e);
    return err_set(e, ERR_FAULT,
                   "ipu %u cycle %llu: sync deadlock: %u IPUs wait at an external "
                   "sync; missing: IPUs elsewhere",
                   last_ext, (unsigned long long)ext_at, next);
}
