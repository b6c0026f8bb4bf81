/* engine: the BSP engine over a set of IPUs (supersteps, sync zones, host threads).
 *
 * A compute round runs every runnable tile, in parallel on the pool; tiles are independent
 * between syncs, so the order in which threads run them cannot change any result. After a
 * round each IPU is classified: all tiles halted (done); all waiting at an internal sync
 * (released at the latest arrival + the machine's internal latency); all waiting at an
 * external sync (ready; released with every other IPU at the latest arrival over all IPUs +
 * the external latency); anything else is a deadlock. Releases are events on the simulation
 * kernel at their time in picoseconds, so later fabric and host modules share one timeline.
 * Left out here: exchange between tiles and IPUs (fabric/), host streams (host/). */
#include "hw/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/engine_int.h"
#include "isa/interp.h"

eng *eng_new(const eng_cfg *cfg, err *e)
{
    eng *g = calloc(1, sizeof *g);
    if (!g) {
        err_set(e, ERR_INPUT, "out of memory");
        return NULL;
    }
    g->cfg = *cfg;
    g->m = cfg->m;
    if (g->m.amp_macs_per_issue == 0 || 16 % g->m.amp_macs_per_issue != 0) {
        err_set(e, ERR_INPUT, "amp_macs_per_issue must divide 16 (it is %u)",
                g->m.amp_macs_per_issue);
        free(g);
        return NULL;
    }
    g->nipus = cfg->m.nipus ? cfg->m.nipus : 1;
    g->m.nipus = g->nipus;
    g->ntiles = cfg->m.tiles_per_ipu;
    g->chips = calloc(g->nipus, sizeof *g->chips);
    g->run = calloc((size_t)g->nipus * g->ntiles, sizeof *g->run);
    g->rel = calloc((size_t)g->nipus * (ISA_NGROUPS + 1) + 1, sizeof *g->rel);
    g->last = calloc(g->nipus, sizeof *g->last);
    g->pend = calloc(g->nipus, sizeof *g->pend);
    g->done = calloc(g->nipus, 1);
    g->ipu = calloc(g->nipus, sizeof *g->ipu);
    g->pool = pool_new(cfg->threads ? cfg->threads : pool_online_cpus());
    g->k = sim_new();
    if (!g->chips || !g->run || !g->rel || !g->last || !g->pend || !g->done || !g->ipu || !g->pool || !g->k) {
        err_set(e, ERR_INPUT, "out of memory");
        eng_free(g);
        return NULL;
    }
    for (uint32_t i = 0; i < g->nipus; i++) {
        if (chip_init(&g->chips[i], i, &g->m, g->ntiles, e) != ERR_OK) {
            eng_free(g);
            return NULL;
        }
    }
    return g;
}

void eng_free(eng *g)
{
    if (!g)
        return;
    if (g->chips)
        for (uint32_t i = 0; i < g->nipus; i++)
            chip_free(&g->chips[i]);
    free(g->chips);
    free(g->run);
    free(g->rel);
    free(g->last);
    free(g->pend);
    free(g->done);
    free(g->ipu);
    free(g->dv);
    free(g->code);
    pool_free(g->pool);
    if (g->k)
        sim_free(g->k);
    free(g);
}

/* ---- loading, in parallel so each thread first-touches (and places) its own tiles ---- */

typedef struct load_job {
    eng *g;
    const isa_prog *prog;
    size_t total;
} load_job;

static void load_share(void *ctx, size_t k)
{
    load_job *j = ctx;
    eng *g = j->g;
    unsigned n = pool_threads(g->pool);
    size_t lo = j->total * k / n, hi = j->total * (k + 1) / n;
    for (size_t x = lo; x < hi; x++) {
        chip *c = &g->chips[x / g->ntiles];
        uint32_t t = (uint32_t)(x % g->ntiles);
        pool_place(g->pool, (unsigned)k, chip_tile_mem(c, t), c->memsize);
        chip_load_tiles(c, j->prog, t, t + 1);
    }
}

int eng_load(eng *g, const isa_prog *prog, err *e)
{
    if (prog->size > g->m.sram_bytes)
        return err_set(e, ERR_INPUT, "program image of %u bytes does not fit in %u bytes of tile memory",
                       prog->size, g->m.sram_bytes);
    free(g->code);
    g->code = isa_code_build(prog);
    if (!g->code)
        return err_set(e, ERR_INPUT, "out of memory");
    /* `amp` does 16 MAC; a machine with fewer MAC per issue spends 16 / that many slots */
    for (uint32_t k = 0; k < prog->ncode; k++)
        if (g->code[k].op == OP_amp) {
            g->code[k].wcycles = (uint8_t)(16 / g->m.amp_macs_per_issue);
            g->code[k].wtc = (uint8_t)(ISA_BARREL * g->code[k].wcycles);
        }
    g->loaded = 1;
    g->tcfg = (tile_cfg){
        .code = g->code,
        .ncode = prog->ncode,
        .memsize = g->m.sram_bytes,
        .ntiles = g->ntiles,
        .nipus = g->nipus,
        .limit = g->cfg.max_cycles,
        .xchg_bpc = g->m.xchg_bytes_per_cycle ? g->m.xchg_bytes_per_cycle : 4,
    };
    load_job j = {g, prog, (size_t)g->nipus * g->ntiles};
    /* one item per thread: thread k loads the same tiles it will run in a full round */
    pool_run(g->pool, pool_threads(g->pool), load_share, &j);
    for (uint32_t i = 0; i < g->nipus; i++) {
        g->chips[i].supersteps = 0;
        g->chips[i].finish = 0;
        g->done[i] = 0;
        memset(&g->ipu[i], 0, sizeof g->ipu[i]);
        g->last[i] = 0;
        memset(g->pend[i], 0, sizeof g->pend[i]);
    }
    g->rounds = 0;
    return ERR_OK;
}

/* ---- the run ---- */

static void step_one(void *ctx, size_t i)
{
    eng *g = ctx;
    tile_step(g->run[i], &g->tcfg);
}

static void on_release(sim *k, void *arg)
{
    (void)k;
    release *r = arg;
    eng *g = r->g;
    r->pending = 0;
    uint32_t lo = r->ipu < 0 ? 0 : (uint32_t)r->ipu;
    uint32_t hi = r->ipu < 0 ? g->nipus : lo + 1;
    for (uint32_t i = lo; i < hi; i++) {
        chip *c = &g->chips[i];
        for (uint32_t t = 0; t < c->ntiles; t++) {
            tile *x = &c->tiles[t];
            if (x->state == TILE_SYNC && (r->group < 0 || x->group == (uint32_t)r->group))
                tile_release(x, r->cycle);
        }
        if (r->group < 0)
            c->supersteps++;
    }
}

/* The release record of an IPU (-1: all) and sync group (-1: every tile). */
static release *rel_of(eng *g, int ipu, int group)
{
    size_t slot = ipu < 0 ? (size_t)g->nipus * (ISA_NGROUPS + 1)
                          : (size_t)ipu * (ISA_NGROUPS + 1) + (size_t)(group + 1);
    return &g->rel[slot];
}

static void schedule_release(eng *g, int ipu, int group, uint64_t cycle)
{
    release *r = rel_of(g, ipu, group);
    r->g = g;
    r->ipu = ipu;
    r->group = group;
    r->cycle = cycle;
    r->pending = 1;
    sim_schedule_at(g->k, mach_cycles_to_ps(&g->m, cycle), on_release, r);
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

static int deadlock(eng *g, const chip *c, uint64_t at, err *e)
{
    char list[400], msg[2400];
    size_t used = (size_t)snprintf(msg, sizeof msg, "ipu %u cycle %llu: sync deadlock:", c->id,
                                   (unsigned long long)at);
    for (uint32_t z = 0; z < ISA_NZONES && used < sizeof msg; z++) {
        size_t n = list_tiles(c, TILE_SYNC, (int)z, list, sizeof list);
        if (n || z <= ISA_ZONE_EXTERNAL)
            used += (size_t)snprintf(msg + used, sizeof msg - used, "%s waiting at %s sync: %zu "
                                     "tiles (%s)", z ? ";" : "", isa_zone_name(z), n,
                                     n ? list : "none");
    }
    size_t nh = list_tiles(c, TILE_HALTED, -1, list, sizeof list);
    if (used < sizeof msg)
        snprintf(msg + used, sizeof msg - used, "; missing (halted): %zu tiles (%s)", nh,
                 nh ? list : "none");
    err_set(e, ERR_FAULT, "%s", msg);
    for (uint32_t t = 0; t < c->ntiles; t++)
        if (c->tiles[t].state == TILE_SYNC)
            tile_set_fault(&c->tiles[t], FAULT_SYNC_DEADLOCK, c->tiles[t].at);
    (void)g;
    return ERR_FAULT;
}

/* Release latency of a zone: internal from the machine; GS1 and GS2 span every IPU with the
 * external formula; the host zones add the host's part. */
static uint64_t zone_latency(const eng *g, uint32_t zone)
{
    switch (zone) {
    case ISA_ZONE_INTERNAL:
    case ISA_ZONE_GROUP: return g->m.sync_internal;
    case ISA_ZONE_INTERNAL_HOST:
    case ISA_ZONE_GROUP_HOST: return (uint64_t)g->m.sync_internal + g->m.sync_host;
    case ISA_ZONE_EXTERNAL:
    case ISA_ZONE_GS2: return mach_sync_external(&g->m);
    default: return (uint64_t)mach_sync_external(&g->m) + g->m.sync_host;
    }
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static int is_external(uint32_t z)
{
    return z == ISA_ZONE_EXTERNAL || z == ISA_ZONE_GS2 || z == ISA_ZONE_EXTERNAL_HOST ||
           z == ISA_ZONE_GS2_HOST;
}

static int is_host(uint32_t z)
{
    return z == ISA_ZONE_INTERNAL_HOST || z == ISA_ZONE_GROUP_HOST ||
           z == ISA_ZONE_EXTERNAL_HOST || z == ISA_ZONE_GS2_HOST;
}

/* Account an IPU-wide superstep of IPU i, from g->last[i] to its release `rel`: the tiles'
 * work up to `work_end` (compute, or exchange if it moved any), then either the host copy
 * (starting at `copy_at`: Begin, Mid, remote, and End up to the release) or the sync. */
static void account(eng *g, uint32_t i, uint64_t first, uint64_t work_end, eng_moved m,
                    uint64_t copy_at, const eng_htime *ht, uint64_t rel)
{
    uint64_t *cat = g->ipu[i].cat, t = g->last[i];
    unsigned kind = m.global ? ENG_CAT_GLOBAL : m.onchip ? ENG_CAT_EXCHANGE : ENG_CAT_COMPUTE;
    /* the IPU waited for a sync group (I/O tiles) still copying from the host: that wait is
     * the part of their copies that did not hide under the others' work */
    if (first > t && first < work_end && kind == ENG_CAT_COMPUTE) {
        cat[kind] += first - t;
        t = first;
        static const unsigned part[3] = {ENG_CAT_BEGIN, ENG_CAT_MID, ENG_CAT_END};
        for (unsigned k = 0; k < 3 && t < work_end; k++) {
            uint64_t d = g->pend[i][k] < work_end - t ? g->pend[i][k] : work_end - t;
            cat[part[k]] += d;
            t += d;
        }
    }
    memset(g->pend[i], 0, sizeof g->pend[i]);
    if (work_end > t) {
        cat[kind] += work_end - t;
        t = work_end;
    }
    if (ht) {
        if (copy_at > t) {
            cat[ENG_CAT_SYNC] += copy_at - t;
            t = copy_at;
        }
        cat[ENG_CAT_BEGIN] += ht->begin;
        cat[ENG_CAT_MID] += ht->mid;
        cat[ENG_CAT_REMOTE] += ht->remote;
        cat[ENG_CAT_END] += ht->end;
        t += ht->begin + ht->mid + ht->remote + ht->end;
    }
    cat[ENG_CAT_SYNC] += rel > t ? rel - t : 0;
    g->last[i] = rel;
}

typedef struct ipu_scan {
    uint32_t nhalt, nzone[ISA_NZONES];
    uint32_t ngrp[ISA_NGROUPS], ngz[ISA_NGROUPS][2]; /* [0] group, [1] group_host */
    uint64_t at, at_grp[ISA_NGROUPS];
    uint64_t first; /* the latest arrival of the group that arrived first (all groups) */
} ipu_scan;

static void scan(const chip *c, ipu_scan *s)
{
    memset(s, 0, sizeof *s);
    uint64_t all[ISA_NGROUPS] = {0};
    for (uint32_t t = 0; t < c->ntiles; t++) {
        const tile *x = &c->tiles[t];
        uint32_t gr = x->group < ISA_NGROUPS ? x->group : 0;
        s->ngrp[gr]++;
        s->at = max_u64(s->at, x->at);
        all[gr] = max_u64(all[gr], x->at);
        if (x->state == TILE_HALTED) {
            s->nhalt++;
        } else if (x->state == TILE_SYNC && x->zone < ISA_NZONES) {
            s->nzone[x->zone]++;
            if (x->zone == ISA_ZONE_GROUP || x->zone == ISA_ZONE_GROUP_HOST) {
                s->ngz[gr][x->zone == ISA_ZONE_GROUP_HOST]++;
                s->at_grp[gr] = max_u64(s->at_grp[gr], x->at);
            }
        }
    }
    s->first = s->at;
    for (uint32_t gr = 0; gr < ISA_NGROUPS; gr++)
        if (s->ngrp[gr] && all[gr] < s->first)
            s->first = all[gr];
}

/* Release the sync groups of IPU i that have all arrived at `group`/`group_host`. */
static int release_groups(eng *g, uint32_t i, const ipu_scan *s, int *progress, err *e)
{
    for (uint32_t gr = 0; gr < ISA_NGROUPS; gr++) {
        if (!s->ngrp[gr] || rel_of(g, (int)i, (int)gr)->pending)
            continue;
        int host = s->ngz[gr][1] == s->ngrp[gr];
        if (!host && s->ngz[gr][0] != s->ngrp[gr])
            continue;
        eng_htime ht = {0, 0, 0, 0};
        if (host) {
            int rc = eng_host_copy(g, i, (int)gr, s->at_grp[gr], &ht, e);
            if (rc != ERR_OK)
                return rc;
        }
        uint64_t copy = ht.begin + ht.mid + ht.remote + ht.end;
        uint32_t z = host ? ISA_ZONE_GROUP_HOST : ISA_ZONE_GROUP;
        uint64_t rel = s->at_grp[gr] + copy + zone_latency(g, z);
        if (host) {
            g->ipu[i].io[0] += ht.begin;
            g->ipu[i].io[1] += ht.mid + ht.remote;
            g->ipu[i].io[2] += ht.end;
            g->pend[i][0] += ht.begin;
            g->pend[i][1] += ht.mid + ht.remote;
            g->pend[i][2] += ht.end + zone_latency(g, z);
        }
        schedule_release(g, (int)i, (int)gr, rel);
        *progress = 1;
    }
    return ERR_OK;
}

/* The whole system waits at external zone z; every IPU has arrived by `at`. */
static int release_external(eng *g, uint32_t z, uint64_t at, err *e)
{
    uint64_t land = 0;
    int rc = eng_deliver(g, 0, g->nipus, 1, &land, e);
    if (rc != ERR_OK)
        return rc;
    eng_moved moved = eng_last_moved(g);
    uint64_t start = max_u64(at, land), end = start;
    eng_htime *ht = calloc(g->nipus, sizeof *ht);
    if (!ht)
        return err_set(e, ERR_INPUT, "out of host memory");
    for (uint32_t i = 0; is_host(z) && i < g->nipus; i++) {
        rc = eng_host_copy(g, i, -1, start, &ht[i], e);
        if (rc != ERR_OK) {
            free(ht);
            return rc;
        }
        end = max_u64(end, start + ht[i].begin + ht[i].mid + ht[i].remote + ht[i].end);
    }
    uint64_t rel = end + zone_latency(g, z);
    for (uint32_t i = 0; i < g->nipus; i++) {
        uint64_t own = 0;
        for (uint32_t t = 0; t < g->ntiles; t++)
            own = max_u64(own, g->chips[i].tiles[t].at);
        account(g, i, own, max_u64(own, moved.onchip || moved.global ? land : 0), moved, start,
                is_host(z) ? &ht[i] : NULL, rel);
    }
    free(ht);
    if (g->has_host && g->host.retire)
        g->host.retire(g->host.ctx, start);
    schedule_release(g, -1, -1, rel);
    return ERR_OK;
}

/* After a round: report the first fault; release every zone that is complete (delivering
 * the exchange and the host copies first); detect deadlock. ERR_OK with *progress set when
 * something was scheduled (*progress 0: every tile has halted), or ERR_FAULT. */
static int resolve(eng *g, int *progress, err *e)
{
    /* faults: the earliest by (cycle, ipu, tile) */
    const tile *first = NULL;
    uint64_t first_t = 0;
    for (uint32_t i = 0; i < g->nipus; i++) {
        for (uint32_t t = 0; t < g->ntiles; t++) {
            const tile *x = &g->chips[i].tiles[t];
            if (x->state != TILE_FAULTED)
                continue;
            const isa_cpu *c = x->fault_ctx ? &x->wk[x->fault_ctx - 1] : &x->sup;
            if (!first || c->t < first_t) {
                first = x;
                first_t = c->t;
            }
        }
    }
    if (first) {
        char buf[512];
        tile_fault_text(first, buf, sizeof buf);
        return err_set(e, ERR_FAULT, "%s", buf);
    }

    *progress = 0;
    /* zones already released (at a later time than the kernel has reached) wait for that */
    int pending = 0;
    size_t nrel = (size_t)g->nipus * (ISA_NGROUPS + 1) + 1;
    for (size_t x = 0; x < nrel; x++)
        pending |= g->rel[x].pending;
    if (rel_of(g, -1, -1)->pending) {
        *progress = 1;
        return ERR_OK;
    }
    int ext_ready = 0, any_done = 0, all_ext = 1, mixed = 0, all_done = 1;
    uint32_t ext_zone = 0;
    uint64_t ext_at = 0, stuck_at = 0;
    const chip *ext_chip = NULL, *stuck = NULL;
    for (uint32_t i = 0; i < g->nipus; i++) {
        chip *c = &g->chips[i];
        if (g->done[i]) {
            any_done = 1;
            continue;
        }
        all_done = 0;
        if (rel_of(g, (int)i, -1)->pending) {
            all_ext = 0;
            continue;
        }
        ipu_scan s;
        scan(c, &s);
        uint64_t land = 0;
        if (s.nhalt == c->ntiles) {
            int rc = eng_deliver(g, i, i + 1, 0, &land, e);
            if (rc != ERR_OK)
                return rc;
            g->done[i] = 1;
            c->finish = max_u64(s.at, land);
            account(g, i, c->finish, c->finish, eng_last_moved(g), c->finish, NULL, c->finish);
            any_done = 1;
            all_ext = 0;
            *progress = 1;
            continue;
        }
        uint32_t wide = s.nzone[ISA_ZONE_INTERNAL] == c->ntiles        ? ISA_ZONE_INTERNAL
                        : s.nzone[ISA_ZONE_INTERNAL_HOST] == c->ntiles ? ISA_ZONE_INTERNAL_HOST
                                                                        : ISA_NZONES;
        if (wide < ISA_NZONES) {
            int rc = eng_deliver(g, i, i + 1, 0, &land, e);
            if (rc != ERR_OK)
                return rc;
            eng_moved moved = eng_last_moved(g);
            uint64_t start = max_u64(s.at, land);
            eng_htime ht = {0, 0, 0, 0};
            if (wide == ISA_ZONE_INTERNAL_HOST && (rc = eng_host_copy(g, i, -1, start, &ht, e)))
                return rc;
            uint64_t rel = start + ht.begin + ht.mid + ht.remote + ht.end + zone_latency(g, wide);
            account(g, i, s.first, start, moved, start, wide == ISA_ZONE_INTERNAL_HOST ? &ht : NULL,
                    rel);
            schedule_release(g, (int)i, -1, rel);
            *progress = 1;
            all_ext = 0;
            continue;
        }
        uint32_t ext = ISA_NZONES;
        for (uint32_t z = 0; z < ISA_NZONES; z++)
            if (is_external(z) && s.nzone[z] == c->ntiles)
                ext = z;
        if (ext < ISA_NZONES) {
            if (ext_ready && ext != ext_zone)
                mixed = 1;
            ext_zone = ext;
            ext_ready++;
            ext_at = max_u64(ext_at, s.at);
            ext_chip = c;
            continue;
        }
        all_ext = 0;
        int before = *progress;
        int rc = release_groups(g, i, &s, progress, e);
        if (rc != ERR_OK)
            return rc;
        if (*progress == before && !stuck) {
            int any_runnable = 0;
            for (uint32_t t = 0; t < c->ntiles; t++)
                any_runnable |= c->tiles[t].state == TILE_RUNNABLE;
            if (!any_runnable) {
                stuck = c;
                stuck_at = s.at;
            }
        }
    }
    if (ext_ready && all_ext && !*progress) {
        if (any_done || mixed)
            return err_set(e, ERR_FAULT,
                           "ipu %u cycle %llu: sync deadlock: %d IPUs wait at an external sync; "
                           "missing: %s",
                           ext_chip->id, (unsigned long long)ext_at, ext_ready,
                           mixed ? "IPUs waiting at a different external zone"
                                 : "IPUs whose tiles have all halted");
        int rc = release_external(g, ext_zone, ext_at, e);
        if (rc != ERR_OK)
            return rc;
        *progress = 1;
    }
    if (!*progress && pending)
        *progress = 1;
    if (!*progress && !all_done)
        return stuck ? deadlock(g, stuck, stuck_at, e)
                     : err_set(e, ERR_FAULT, "ipu %u cycle %llu: sync deadlock: %d IPUs wait at "
                                             "an external sync; missing: IPUs elsewhere",
                               ext_chip ? ext_chip->id : 0, (unsigned long long)ext_at,
                               ext_ready);
    return ERR_OK;
}

int eng_run(eng *g, err *e)
{
    if (!g->loaded)
        return err_set(e, ERR_INPUT, "no program loaded");
    for (;;) {
        g->nrun = 0;
        for (uint32_t i = 0; i < g->nipus; i++)
            for (uint32_t t = 0; t < g->ntiles; t++)
                if (g->chips[i].tiles[t].state == TILE_RUNNABLE)
                    g->run[g->nrun++] = &g->chips[i].tiles[t];
        if (g->nrun) {
            pool_run(g->pool, g->nrun, step_one, g);
            g->rounds++;
        }
        int progress = 0;
        int rc = resolve(g, &progress, e);
        if (rc != ERR_OK)
            return rc;
        if (!progress)
            break;
        /* Carry out only the earliest releases: IPUs run ahead of each other between external
         * syncs, and one released now may reach its next sync before another's pending
         * release; every blocked IPU resumes at or after the earliest, so nothing can be
         * scheduled before it (the kernel's time never goes back). */
        uint64_t first = UINT64_MAX;
        size_t nrel = (size_t)g->nipus * (ISA_NGROUPS + 1) + 1;
        for (size_t x = 0; x < nrel; x++)
            if (g->rel[x].pending && g->rel[x].cycle < first)
                first = g->rel[x].cycle;
        if (first != UINT64_MAX)
            sim_run(g->k, mach_cycles_to_ps(&g->m, first));
    }
    /* global sends nobody synced for still land (after every tile halted) */
    uint64_t end = 0;
    int rc = eng_deliver(g, 0, g->nipus, 1, &end, e);
    if (rc != ERR_OK)
        return rc;
    for (uint32_t i = 0; i < g->nipus; i++)
        g->chips[i].finish = max_u64(g->chips[i].finish, end);
    return ERR_OK;
}

void eng_set_fabric(eng *g, const eng_fabric *f)
{
    g->fabric = *f;
    g->has_fabric = f->onchip && f->global;
}

void eng_set_host(eng *g, const eng_host *h)
{
    g->host = *h;
    g->has_host = h->copy != NULL;
}

void eng_set_trace(eng *g, eng_trace_fn fn, void *ctx)
{
    g->trace = fn;
    g->trace_ctx = ctx;
}

sim *eng_kernel(eng *g)
{
    return g->k;
}

const mach *eng_machine(const eng *g) { return &g->m; }
uint32_t eng_nipus(const eng *g) { return g->nipus; }
uint32_t eng_ntiles(const eng *g) { return g->ntiles; }
unsigned eng_threads(const eng *g) { return pool_threads(g->pool); }
int eng_numa_nodes(const eng *g) { return pool_numa_nodes(g->pool); }

const chip *eng_chip(const eng *g, uint32_t ipu)
{
    return ipu < g->nipus ? &g->chips[ipu] : NULL;
}

const tile *eng_tile(const eng *g, uint32_t ipu, uint32_t t)
{
    return ipu < g->nipus && t < g->ntiles ? &g->chips[ipu].tiles[t] : NULL;
}

uint8_t *eng_tile_mem(eng *g, uint32_t ipu, uint32_t t)
{
    return ipu < g->nipus && t < g->ntiles ? chip_tile_mem(&g->chips[ipu], t) : NULL;
}
