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

/* The zone every tile of the IPU waits at (idle tiles count as there), or ISA_NZONES. */
static unsigned whole_zone(const chip_census *n, uint32_t ntiles)
{
    for (unsigned z = 0; z < ISA_NZONES; z++)
        if (isa_zone_info_of(z)->scope != ISA_SCOPE_GROUP && n->nzone[z] &&
            n->nzone[z] + n->nidle == ntiles)
            return z;
    return ISA_NZONES;
}

void sync_classify(const mach *m, const chip *c, eng_sync *s)
{
    chip_census tmp;
    const chip_census *n = chip_census_of(c, &tmp);
    memset(s, 0, sizeof *s);
    s->at = n->at;
    for (uint32_t gr = 0; gr < ISA_NGROUPS; gr++)
        s->grp_at[gr] = n->ngrp[gr] ? n->all_grp[gr] : 0;
    s->runnable = n->nrun > 0;
    if (n->nhalt + n->nidle == c->ntiles) {
        s->what = ENG_WAIT_DONE;
        return;
    }
    unsigned z = whole_zone(n, c->ntiles);
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
        int host = n->ngrp[gr] && n->ngz[gr][1] == n->ngrp[gr];
        if (!n->ngrp[gr] || (!host && n->ngz[gr][0] != n->ngrp[gr]))
            continue;
        s->group[s->ngroups++] = (eng_group_wait){
            .group = gr,
            .host = host,
            .at = n->at_grp[gr],
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

/* Append "ipu I (at ZONE 0-3; halted 4; idle 5)" for chip c: its tiles' states. */
static size_t describe_ipu(const chip *c, char *buf, size_t len)
{
    char list[200];
    size_t used = (size_t)snprintf(buf, len, "ipu %u (", c->id);
    const char *sep = "";
    for (int z = 0; z <= ISA_NZONES && used < len; z++) {
        tile_state st = z < ISA_NZONES ? TILE_SYNC : TILE_HALTED;
        if (list_tiles(c, st, z < ISA_NZONES ? z : -1, list, sizeof list) == 0)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s%s %s", sep,
                                 z < ISA_NZONES ? "at " : "halted",
                                 z < ISA_NZONES ? isa_zone_name((unsigned)z) : "", list);
        sep = "; ";
    }
    static const struct {
        tile_state st;
        const char *name;
    } other[] = {{TILE_RUNNABLE, "runnable"}, {TILE_FAULTED, "faulted"}, {TILE_IDLE, "idle"}};
    for (unsigned k = 0; k < sizeof other / sizeof other[0] && used < len; k++) {
        if (list_tiles(c, other[k].st, -1, list, sizeof list) == 0)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s %s", sep, other[k].name, list);
        sep = "; ";
    }
    if (used < len)
        used += (size_t)snprintf(buf + used, len - used, ")");
    return used < len ? used : len;
}

/* Whether an IPU is `want`: ENG_WAIT_EXTERNAL at `zone`, ENG_WAIT_DONE, or (want < 0) neither. */
static int ipu_is(const eng_sync *s, int want, unsigned zone)
{
    if (want == ENG_WAIT_EXTERNAL)
        return s->what == ENG_WAIT_EXTERNAL && s->zone == zone;
    if (want < 0)
        return s->what != ENG_WAIT_EXTERNAL && s->what != ENG_WAIT_DONE;
    return (int)s->what == want;
}

/* Append "; LABEL: N IPUs (ipu I (...), ...)" for the IPUs that are `want` (ipu_is). */
static size_t list_ipus(const chip *chips, const eng_sync *s, uint32_t nipus, int want,
                        unsigned zone, const char *label, char *msg, size_t used, size_t len)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < nipus; i++)
        n += ipu_is(&s[i], want, zone);
    if (!n || used >= len)
        return used;
    used += (size_t)snprintf(msg + used, len - used, "%s %s: %u IPUs (",
                             msg[used - 1] == ':' ? "" : ";", label, n);
    uint32_t shown = 0;
    for (uint32_t i = 0; i < nipus && used < len; i++) {
        if (!ipu_is(&s[i], want, zone))
            continue;
        if (shown == 8) { /* a long list ends with its count */
            used += (size_t)snprintf(msg + used, len - used, ", ... %u more", n - shown);
            break;
        }
        if (shown++)
            used += (size_t)snprintf(msg + used, len - used, ", ");
        if (used < len)
            used += describe_ipu(&chips[i], msg + used, len - used);
    }
    if (used < len)
        used += (size_t)snprintf(msg + used, len - used, ")");
    return used < len ? used : len;
}

/* IPUs wait at an external sync that the others will never reach: name them all. */
static int external_deadlock(const chip *chips, const eng_sync *s, uint32_t nipus,
                             uint32_t last_ext, uint64_t at, int mixed, err *e)
{
    char msg[ERR_MSG_MAX];
    size_t used = (size_t)snprintf(msg, sizeof msg, "ipu %u cycle %llu: sync deadlock:", last_ext,
                                   (unsigned long long)at);
    for (unsigned z = 0; z < ISA_NZONES; z++) {
        char label[64];
        snprintf(label, sizeof label, "waiting at %s sync", isa_zone_name(z));
        used = list_ipus(chips, s, nipus, ENG_WAIT_EXTERNAL, z, label, msg, used, sizeof msg);
    }
    used = list_ipus(chips, s, nipus, ENG_WAIT_DONE, 0, "missing (all tiles halted)", msg, used,
                     sizeof msg);
    used = list_ipus(chips, s, nipus, -1, 0, "missing (elsewhere)", msg, used, sizeof msg);
    if (mixed && used < sizeof msg)
        snprintf(msg + used, sizeof msg - used, "; the IPUs wait at different external zones");
    return err_set(e, ERR_FAULT, "%s", msg);
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
        return external_deadlock(chips, s, nipus, last_ext, ext_at, (int)mixed, e);
    for (uint32_t i = 0; i < nipus; i++)
        if (s[i].what == ENG_WAIT_NONE && !s[i].runnable)
            return ipu_deadlock(&chips[i], s[i].at, e);
    return external_deadlock(chips, s, nipus, last_ext, ext_at, (int)mixed, e);
}
