/* engine: the BSP engine over a set of IPUs (supersteps, sync zones, host threads).
 *
 * A compute round runs every runnable tile, in parallel on the pool; tiles are independent
 * between syncs, so the order in which threads run them cannot change any result. A round
 * runs each tile at most a chunk of cycles (a tile goes on where it stopped in the next
 * round, so chunks change no result either); rounds repeat until no tile is runnable, and
 * between them the engine honours a stop request and calls the heartbeat. After the
 * rounds each IPU is classified: all tiles halted (done); all waiting at an internal sync
 * (released at the latest arrival + the machine's internal latency); all waiting at an
 * external sync (ready; released with every other IPU at the latest arrival over all IPUs +
 * the external latency); anything else is a deadlock. Releases are timed events on the
 * simulation kernel, at their time in picoseconds, and the kernel owns what is pending: the
 * engine asks it when the next release is due and runs it there. The exchange and the host
 * copies a release waits for are analytic: the fabric and the host (through the engine's
 * ports) compute when they end, and that folds into the release's time; nothing of theirs is
 * scheduled. With several ranks this process steps only its own IPUs and meets the other
 * ranks when they can go no further alone (engine_rank.c); the reports that name tiles are
 * engine_report.c's. Left out here: exchange between tiles and IPUs (fabric/), host streams
 * (host/). */
#include "hw/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/num.h"
#include "base/rank.h"
#include "base/text.h"
#include "hw/engine_int.h"
#include "hw/park.h"
#include "isa/interp.h"

static void on_release(sim *k, void *arg);

/* One event per release record, and the method process it triggers: "rel.I" (IPU I, every
 * tile), "rel.I.G" (sync group G of IPU I), "rel.all" (an external sync). */
static void make_releases(eng *g)
{
    size_t nrel = (size_t)g->nipus * (ISA_NGROUPS + 1) + 1;
    for (size_t x = 0; x < nrel; x++) {
        release *r = &g->rel[x];
        char name[48];
        r->g = g;
        r->ipu = x + 1 == nrel ? -1 : (int)(x / (ISA_NGROUPS + 1));
        r->group = x + 1 == nrel ? -1 : (int)(x % (ISA_NGROUPS + 1)) - 1;
        if (r->ipu < 0)
            snprintf(name, sizeof name, "rel.all");
        else if (r->group < 0)
            snprintf(name, sizeof name, "rel.%d", r->ipu);
        else
            snprintf(name, sizeof name, "rel.%d.%d", r->ipu, r->group);
        r->ev = sim_event_new(g->k, g->mod, name);
        sim_method(g->k, g->mod, name, on_release, r, &r->ev, 1, SIM_DONT_INIT);
    }
}

/* The host memory this process may still take, in bytes (0 if unknown): MemAvailable of
 * /proc/meminfo (free memory and the caches the kernel can drop), else the physical memory. */
static uint64_t host_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    if (kib)
        return (uint64_t)kib * 1024;
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

/* Refuse a system whose host memory would exceed what this host has available: `bytes` is
 * the estimate, `each` what it counts per tile. */
static int check_host_memory(uint64_t bytes, uint64_t tiles, const char *what, err *e)
{
    uint64_t have = host_memory();
    if (have && bytes > have)
        return err_set(e, ERR_INPUT,
                       "%s needs about %.1f GiB of host memory (%.1f KiB a tile), more than the "
                       "%.1f GiB this machine has available",
                       what, (double)bytes / (1u << 30),
                       (double)bytes / (double)(tiles ? tiles : 1) / 1024,
                       (double)have / (1u << 30));
    return ERR_OK;
}

static uint64_t page_bytes(void)
{
    long size = sysconf(_SC_PAGESIZE);
    return size > 0 ? (uint64_t)size : 4096;
}

/* Host memory of a tile's SRAM holding `image` bytes: the pages it touches (SRAM is mapped
 * lazily: a tile costs nothing until its program is written; at least a page then) and its
 * share of the page tables that map them (a page of tables maps page / 8 pages; tiles
 * sram_bytes apart share it when they are closer than that span). Measured on x86-64 Linux
 * with 4 KiB pages (tests/test_engine.c, test_host_memory_measured): a tile of mk2 running
 * a one-instruction program costs 8.1 KiB of resident memory and 1.2 KiB of page tables. */
static uint64_t sram_bytes_used(uint64_t sram_bytes, uint64_t image)
{
    uint64_t page = page_bytes(), span = page / 8 * page;
    uint64_t pages = image ? (image + page - 1) / page : 1;
    uint64_t tables = sram_bytes >= span ? page : page * sram_bytes / span;
    return pages * page + tables;
}

/* Host memory of a system: per tile its state, the engine's slot for it and its SRAM holding
 * a small program (every tile of `ipusim run` gets one), and per IPU its records. */
static uint64_t state_bytes(const mach *m, uint64_t nipus, uint64_t ntiles)
{
    return nipus * ntiles * (sizeof(tile) + sizeof(tile *) + sram_bytes_used(m->sram_bytes, 0)) +
           nipus * (sizeof(chip) + sizeof(eng_ipu_stats) + sizeof(eng_sync));
}

uint64_t eng_host_bytes(const mach *m)
{
    return state_bytes(m, m->nipus ? m->nipus : 1, m->tiles_per_ipu);
}

eng *eng_new(sim *k, sim_module *parent, const eng_cfg *cfg, err *e)
{
    uint64_t nip = cfg->m.nipus ? cfg->m.nipus : 1;
    char what[96];
    snprintf(what, sizeof what, "a system of %llu IPUs x %u tiles", (unsigned long long)nip,
             cfg->m.tiles_per_ipu);
    if (check_host_memory(state_bytes(&cfg->m, nip, cfg->m.tiles_per_ipu),
                          nip * cfg->m.tiles_per_ipu, what, e) != ERR_OK)
        return NULL;
    eng *g = xcalloc(1, sizeof *g);
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
    g->chips = xcalloc(g->nipus, sizeof *g->chips);
    g->run = xcalloc((size_t)g->nipus * g->ntiles, sizeof *g->run);
    g->rel = xcalloc((size_t)g->nipus * (ISA_NGROUPS + 1) + 1, sizeof *g->rel);
    g->last = xcalloc(g->nipus, sizeof *g->last);
    g->pend = xcalloc(g->nipus, sizeof *g->pend);
    g->done = xcalloc(g->nipus, 1);
    g->ipu = xcalloc(g->nipus, sizeof *g->ipu);
    g->sync = xcalloc(g->nipus, sizeof *g->sync);
    g->pool = pool_new(cfg->threads ? cfg->threads : pool_online_cpus());
    g->k = k;
    g->ranks = cfg->ranks;
    g->stop.cycle = g->fault.cycle = UINT64_MAX;
    g->park = cfg->watch.settled == NULL; /* the profile reads every tile each superstep */
    g->fused = ISA_FUSED_ALL;
    g->past_first[0] = g->past_first[1] = UINT32_MAX;
    eng_rank_share(&g->m, g->nipus, cfg->whole_host_links, rank_id(g->ranks), rank_size(g->ranks),
                   &g->lo, &g->hi);
    for (uint32_t i = 0; i < g->nipus; i++) {
        if (chip_init(&g->chips[i], i, &g->m, g->ntiles, e) != ERR_OK) {
            eng_free(g);
            return NULL;
        }
    }
    g->mod = sim_module_new(k, parent, "eng");
    g->pfabric = sim_port_new(k, g->mod, "fabric", "eng_fabric", 0);
    g->phost = sim_port_new(k, g->mod, "host", "eng_host", SIM_PORT_OPTIONAL);
    make_releases(g);
    return g;
}

static void free_codes(eng *g)
{
    for (size_t i = 0; i < g->ncodes; i++)
        free(g->codes[i]);
    free(g->codes);
    g->codes = NULL;
    g->ncodes = 0;
}

static void free_classes(eng_classes *c)
{
    for (uint32_t k = 0; c->sum && k < c->nclass; k++)
        free((char *)c->sum[k].name);
    free(c->of);
    free(c->sum);
    memset(c, 0, sizeof *c);
}

void eng_free(eng *g)
{
    if (!g)
        return;
    if (g->chips)
        for (uint32_t i = 0; i < g->nipus; i++)
            chip_free(&g->chips[i]);
    free(g->chips);
    free(g->sync_log);
    free(g->sync_n);
    for (uint32_t i = 0; g->cls && i < g->nipus; i++)
        free_classes(&g->cls[i]);
    free(g->cls);
    free(g->run);
    free(g->rel);
    free(g->last);
    free(g->pend);
    free(g->done);
    free(g->ipu);
    free(g->sync);
    free_codes(g);
    pool_free(g->pool);
    free(g);
}

/* ---- loading, in parallel so each thread first-touches (and places) its own tiles ---- */

typedef struct load_job {
    eng *g;
    const isa_prog *const *progs; /* per tile, NULL: idle */
    isa_insn **code;              /* per tile: its program's decoded text */
    size_t total;
} load_job;

static void load_share(void *ctx, size_t k)
{
    load_job *j = ctx;
    eng *g = j->g;
    unsigned n = pool_threads(g->pool);
    for (size_t x = k; x < j->total; x += n) { /* on a NUMA host, thread k runs these */
        chip *c = &g->chips[x / g->ntiles];
        uint32_t t = (uint32_t)(x % g->ntiles);
        if (c->id < g->lo || c->id >= g->hi) { /* another rank's: idle here, SRAM untouched */
            chip_load_tile(c, t, NULL, NULL);
            c->tiles[t].image = j->progs[x] ? j->progs[x]->size : 0; /* what it holds there */
            continue;
        }
        pool_place(g->pool, (unsigned)k, chip_tile_mem(c, t), c->memsize);
        chip_load_tile(c, t, j->progs[x], j->code[x]);
    }
}

/* Order of (program, tile) pairs by program, so tiles sharing one decode it once. */
typedef struct prog_ref {
    const isa_prog *p;
    size_t tile;
} prog_ref;

static int by_prog(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const prog_ref *)a)->p, y = (uintptr_t)((const prog_ref *)b)->p;
    return (x > y) - (x < y);
}

/* Decode each distinct program once, for this machine's rates; code[x] for tile x. */
static void decode_all(eng *g, const isa_prog *const *progs, size_t total, isa_insn **code)
{
    isa_rates rates = {.load_bpc = g->m.load_bytes_per_cycle,
                       .store_bpc = g->m.store_bytes_per_cycle,
                       .amp_units = g->m.amp_macs_per_issue};
    prog_ref *r = xmalloc(total * sizeof *r);
    for (size_t x = 0; x < total; x++)
        r[x] = (prog_ref){progs[x], x};
    qsort(r, total, sizeof *r, by_prog);
    g->codes = xmalloc(total * sizeof *g->codes);
    for (size_t x = 0; x < total; x++) {
        if (!r[x].p) {
            code[r[x].tile] = NULL;
            continue;
        }
        if (x == 0 || r[x].p != r[x - 1].p) {
            isa_insn *c = isa_code_build(r[x].p, g->fused);
            isa_code_rate(c, r[x].p->ncode, &rates);
            g->codes[g->ncodes++] = c;
        }
        code[r[x].tile] = g->codes[g->ncodes - 1];
    }
    free(r);
}

void eng_set_fused(eng *g, uint32_t fused)
{
    g->fused = fused;
}

int eng_load_tiles(eng *g, const isa_prog *const *progs, err *e)
{
    size_t total = (size_t)g->nipus * g->ntiles;
    for (size_t x = 0; x < total; x++)
        if (progs[x] && progs[x]->size > g->m.sram_bytes)
            return err_set(e, ERR_INPUT,
                           "ipu %zu tile %zu: program image of %u bytes does not fit in %u bytes "
                           "of tile memory",
                           x / g->ntiles, x % g->ntiles, progs[x]->size, g->m.sram_bytes);
    /* what loading adds to the tiles' state (allocated, so no longer available): the SRAM
     * the images fill, and the decoded text (a run of tiles sharing a program counted once) */
    uint64_t touched = 0, text = 0, loaded = 0;
    for (size_t x = 0; x < total; x++)
        if (progs[x]) {
            loaded++;
            touched += sram_bytes_used(g->m.sram_bytes, progs[x]->size);
            if (x == 0 || progs[x] != progs[x - 1])
                text += (uint64_t)(progs[x]->ncode + 1) * sizeof(isa_insn);
        }
    char what[96];
    snprintf(what, sizeof what, "loading the program on %zu tiles", total);
    if (check_host_memory(touched + text, loaded, what, e) != ERR_OK)
        return ERR_INPUT;
    free_codes(g);
    isa_insn **code = xmalloc(total * sizeof *code);
    decode_all(g, progs, total, code);
    g->loaded = 1;
    g->tcfg = (tile_cfg){
        .memsize = g->m.sram_bytes,
        .ntiles = g->ntiles,
        .nipus = g->nipus,
        .limit = g->cfg.max_cycles,
        .step_max = g->cfg.max_superstep_cycles ? g->cfg.max_superstep_cycles : UINT64_MAX,
        .chunk = g->cfg.chunk_cycles ? g->cfg.chunk_cycles : ENG_CHUNK_CYCLES,
        .xchg_bpc = g->m.xchg_bytes_per_cycle ? g->m.xchg_bytes_per_cycle : 4,
        .inline_copy = g->fused != 0, /* with the fast paths: the differential tests' 0 stops */
    };
    load_job j = {g, progs, code, total};
    /* one item per thread: item k places tiles k, k + T, ... on thread k's node */
    pool_run(g->pool, pool_threads(g->pool), load_share, &j);
    free(code);
    for (uint32_t i = 0; i < g->nipus; i++) {
        chip_index_live(&g->chips[i]);
        g->chips[i].supersteps = 0;
        g->chips[i].finish = 0;
        g->done[i] = 0;
        memset(&g->ipu[i], 0, sizeof g->ipu[i]);
        g->last[i] = 0;
        memset(g->pend[i], 0, sizeof g->pend[i]);
    }
    g->rounds = 0;
    g->faulted = 0;
    return ERR_OK;
}

int eng_load(eng *g, const isa_prog *prog, err *e)
{
    if (prog->size > g->m.sram_bytes)
        return err_set(e, ERR_INPUT,
                       "program image of %u bytes does not fit in %u bytes of tile memory",
                       prog->size, g->m.sram_bytes);
    size_t total = (size_t)g->nipus * g->ntiles;
    const isa_prog **progs = xmalloc(total * sizeof *progs);
    for (size_t x = 0; x < total; x++)
        progs[x] = prog;
    int rc = eng_load_tiles(g, progs, e);
    free(progs);
    return rc;
}

/* ---- the run ---- */

void eng_log_syncs(eng *g, uint32_t ipu, size_t cap)
{
    free(g->sync_log);
    free(g->sync_n);
    g->sync_log = cap ? xmalloc((size_t)g->nipus * cap * sizeof *g->sync_log) : NULL;
    g->sync_n = xcalloc(g->nipus, sizeof *g->sync_n);
    g->sync_cap = cap;
    g->sync_ipu = ipu;
}

void eng_class_steps(eng *g, uint32_t ipu, const uint32_t *of, size_t n, const char *const *names,
                     uint32_t nclass)
{
    if (ipu >= g->nipus)
        return;
    if (!g->cls)
        g->cls = xcalloc(g->nipus, sizeof *g->cls);
    eng_classes *c = &g->cls[ipu];
    free_classes(c);
    c->of = xmalloc((n ? n : 1) * sizeof *c->of);
    memcpy(c->of, of, n * sizeof *of);
    c->n = n;
    c->nclass = nclass;
    c->sum = xcalloc((size_t)nclass + 2, sizeof *c->sum);
    for (uint32_t k = 0; k < nclass; k++)
        c->sum[k].name = xstrdup(names[k]);
    c->sum[nclass].name = "end";
    c->sum[nclass + 1].name = "other";
}

const eng_class_sum *eng_class_sums(const eng *g, uint32_t ipu, uint32_t *n)
{
    const eng_classes *c = g->cls && ipu < g->nipus ? &g->cls[ipu] : NULL;
    *n = c && c->sum ? c->nclass + 2 : 0;
    return *n ? c->sum : NULL;
}

/* The tally's row of IPU i's superstep being accounted (NULL: no tally). */
static eng_class_sum *class_row(const eng *g, uint32_t i)
{
    const eng_classes *c = g->cls ? &g->cls[i] : NULL;
    if (!c || !c->sum)
        return NULL;
    uint64_t k = g->chips[i].supersteps;
    return &c->sum[g->done[i] ? c->nclass : k < c->n ? c->of[k] : c->nclass + 1];
}

const uint64_t *eng_sync_log(const eng *g, uint32_t ipu, size_t *n)
{
    *n = g->sync_n && ipu < g->nipus ? g->sync_n[ipu] : 0;
    return *n ? g->sync_log + (size_t)ipu * g->sync_cap : NULL;
}

static void step_one(void *ctx, size_t i)
{
    eng *g = ctx;
    const volatile sig_atomic_t *stop = g->cfg.watch.stop;
    if (stop && *stop) /* the round ends at once: its tiles not yet stepped stay as they were */
        return;
    if (i + 2 < g->nrun) /* the lines a short step reads (tile.h: the front, sup's first) */
        tile_prefetch(g->run[i + 2]);
    tile_step(g->run[i], &g->tcfg);
}

/* Resume the tiles of chip c that release r frees (hw/park.h: the parked move on by
 * themselves, those that only sync again do so at once, the others go to the next round). */
static void release_chip(eng *g, chip *c, const release *r)
{
    park_release(c, r->group, r->cycle, &g->tcfg, g->park, g->run, &g->nrun);
}

static void on_release(sim *k, void *arg)
{
    (void)k;
    release *r = arg;
    eng *g = r->g;
    g->now = r->cycle;
    uint32_t lo = r->ipu < 0 ? 0 : (uint32_t)r->ipu;
    uint32_t hi = r->ipu < 0 ? g->nipus : lo + 1;
    for (uint32_t i = lo; i < hi; i++) {
        release_chip(g, &g->chips[i], r);
        if (r->group < 0) {
            g->chips[i].supersteps++;
            if ((g->sync_ipu == ENG_LOG_ALL || i == g->sync_ipu) && g->sync_n &&
                g->sync_n[i] < g->sync_cap)
                g->sync_log[(size_t)i * g->sync_cap + g->sync_n[i]++] = r->cycle;
        }
    }
}

/* Bring the parked tiles of this rank's IPUs up to date, before anything reads their times or
 * counters (a parked tile's state and zone are always current). */
static void unpark_all(eng *g)
{
    for (uint32_t i = g->lo; i < g->hi; i++)
        park_wake(&g->chips[i], &g->tcfg);
}

/* The release record of an IPU (-1: all) and sync group (-1: every tile). */
static release *rel_of(eng *g, int ipu, int group)
{
    size_t slot = ipu < 0 ? (size_t)g->nipus * (ISA_NGROUPS + 1)
                          : (size_t)ipu * (ISA_NGROUPS + 1) + (size_t)(group + 1);
    return &g->rel[slot];
}

/* Whether the release of an IPU (-1: all) and sync group (-1: every tile) is pending. */
static int rel_pending(eng *g, int ipu, int group)
{
    return sim_event_pending(rel_of(g, ipu, group)->ev);
}

/* Put the release on the kernel's timeline at `cycle` (not before the releases carried out
 * last: the kernel's time never goes back). */
static void schedule_release(eng *g, int ipu, int group, uint64_t cycle)
{
    release *r = rel_of(g, ipu, group);
    r->cycle = cycle;
    sim_event_notify_at(r->ev, mach_cycles_to_ps(&g->m, cycle) - sim_now(g->k));
}

/* Deliver the pending exchange of IPUs [lo, hi) through the fabric port. */
static int deliver(eng *g, uint32_t lo, uint32_t hi, int global, eng_moved *m, err *e)
{
    eng_xview v = {g->chips, g->nipus, g->lo, g->hi, g->ranks, g->pool, g->ipu};
    return g->fabric.deliver(g->fabric.ctx, &v, lo, hi, global, m, e);
}

static uint64_t copy_cycles(const eng_htime *t)
{
    return t->begin + t->mid + t->remote + t->end;
}

/* Add d cycles of category cat at *t to IPU i's split (and to the record, when profiling, and
 * the compute sets' row cs, when tallied). */
static void add(eng *g, uint32_t i, eng_settled *r, eng_class_sum *cs, unsigned cat, uint64_t *t,
                uint64_t d)
{
    if (d == 0)
        return;
    g->ipu[i].cat[cat] += d;
    if (cs)
        cs->cat[cat] += d;
    if (r)
        r->span[r->nspans++] = (eng_span){cat, *t, *t + d};
    *t += d;
}

/* Account an IPU-wide superstep of IPU i, from g->last[i] to its release `rel`: the tiles'
 * work up to `work_end` (compute, or exchange if it moved any), then either the host copy
 * (starting at `copy_at`: Begin, Mid, remote, and End up to the release) or the sync. With
 * sync groups that copied from the host meanwhile (I/O tiles), `grp_at` gives when each group's
 * tiles had all arrived: when the last group to arrive is one that copied, the time the IPU
 * waited for it after the others were in is the part of its copies that did not hide under
 * their work (Begin, then Mid, then End); a copy that ended before the others did costs
 * nothing. With a profile hook, the spans go to it as they are counted. */
static void account(eng *g, uint32_t i, const uint64_t *grp_at, uint64_t work_end, eng_moved m,
                    uint64_t copy_at, const eng_htime *ht, uint64_t rel)
{
    eng_settled rec, *r = g->cfg.watch.settled ? &rec : NULL;
    uint64_t t = g->last[i];
    eng_class_sum *cs = class_row(g, i);
    if (cs)
        cs->supersteps++;
    if (r)
        rec = (eng_settled){
            .ipu = i, .index = g->chips[i].supersteps, .start = t, .end = rel, .last = g->done[i]};
    unsigned kind = m.global ? ENG_CAT_GLOBAL : m.onchip ? ENG_CAT_EXCHANGE : ENG_CAT_COMPUTE;
    uint32_t last = 0;
    uint64_t others = t; /* when every group but the last had arrived */
    for (uint32_t gr = 1; grp_at && gr < ISA_NGROUPS; gr++)
        last = grp_at[gr] > grp_at[last] ? gr : last;
    for (uint32_t gr = 0; grp_at && gr < ISA_NGROUPS; gr++)
        others = gr != last ? max_u64(others, grp_at[gr]) : others;
    const uint64_t *pend = g->pend[i][last];
    if (grp_at && pend[0] + pend[1] + pend[2] && others < work_end && kind == ENG_CAT_COMPUTE) {
        add(g, i, r, cs, kind, &t, others - t);
        static const unsigned part[3] = {ENG_CAT_BEGIN, ENG_CAT_MID, ENG_CAT_END};
        for (unsigned k = 0; k < 3 && t < work_end; k++)
            add(g, i, r, cs, part[k], &t, min_u64(pend[k], work_end - t));
    }
    memset(g->pend[i], 0, sizeof g->pend[i]);
    if (work_end > t)
        add(g, i, r, cs, kind, &t, work_end - t);
    if (ht) {
        if (copy_at > t)
            add(g, i, r, cs, ENG_CAT_SYNC, &t, copy_at - t);
        add(g, i, r, cs, ENG_CAT_BEGIN, &t, ht->begin);
        add(g, i, r, cs, ENG_CAT_MID, &t, ht->mid);
        add(g, i, r, cs, ENG_CAT_REMOTE, &t, ht->remote);
        add(g, i, r, cs, ENG_CAT_END, &t, ht->end);
    }
    add(g, i, r, cs, ENG_CAT_SYNC, &t, rel > t ? rel - t : 0);
    g->last[i] = rel;
    if (r)
        g->cfg.watch.settled(g->cfg.watch.settled_ctx, g, r);
}

/* IPU i's tiles have all halted: its last on-chip exchange lands, and it is done. */
static int finish_ipu(eng *g, uint32_t i, const eng_sync *s, err *e)
{
    eng_moved moved;
    int rc = deliver(g, i, i + 1, 0, &moved, e);
    if (rc != ERR_OK)
        return rc;
    chip *c = &g->chips[i];
    g->done[i] = 1;
    c->finish = max_u64(s->at, moved.end);
    account(g, i, NULL, c->finish, moved, c->finish, NULL, c->finish);
    return ERR_OK;
}

/* IPU i's tiles all wait at an IPU-wide zone: its exchange lands, the host copies (for
 * internal_host), then the release after the zone's latency. */
static int release_ipu(eng *g, uint32_t i, const eng_sync *s, err *e)
{
    eng_moved moved;
    int rc = deliver(g, i, i + 1, 0, &moved, e);
    if (rc != ERR_OK)
        return rc;
    uint64_t start = max_u64(s->at, moved.end);
    eng_htime ht = {0, 0, 0, 0};
    if (s->host && (rc = eng_host_copy(g, i, -1, start, &ht, e)) != ERR_OK)
        return rc;
    uint64_t rel = start + copy_cycles(&ht) + s->latency;
    account(g, i, s->grp_at, start, moved, start, s->host ? &ht : NULL, rel);
    schedule_release(g, (int)i, -1, rel);
    return ERR_OK;
}

/* Release the sync groups of IPU i whose tiles have all arrived (and whose release is not
 * already scheduled); with group_host, the group's host copies come first and overlap the
 * other tiles' work (they show in the IPU's time split only where the IPU waited). */
static int release_groups(eng *g, uint32_t i, const eng_sync *s, int *progress, err *e)
{
    for (uint32_t k = 0; k < s->ngroups; k++) {
        const eng_group_wait *w = &s->group[k];
        if (rel_pending(g, (int)i, (int)w->group))
            continue;
        eng_htime ht = {0, 0, 0, 0};
        if (w->host) {
            int rc = eng_host_copy(g, i, (int)w->group, w->at, &ht, e);
            if (rc != ERR_OK)
                return rc;
            g->ipu[i].io[0] += ht.begin;
            g->ipu[i].io[1] += ht.mid + ht.remote;
            g->ipu[i].io[2] += ht.end;
            uint64_t *p = g->pend[i][w->group];
            p[0] += ht.begin;
            p[1] += ht.mid + ht.remote;
            p[2] += ht.end + w->latency;
        }
        schedule_release(g, (int)i, (int)w->group, w->at + copy_cycles(&ht) + w->latency);
        *progress = 1;
    }
    return ERR_OK;
}

/* Every IPU waits at the external zone of s[0..nipus); the last arrived at `at`. The global
 * exchange lands, the host copies of every IPU run (for the zones with the host), and every
 * IPU is released together. */
static int release_external(eng *g, const eng_sync *s, uint64_t at, err *e)
{
    eng_moved moved;
    int rc = deliver(g, 0, g->nipus, 1, &moved, e);
    if (rc != ERR_OK)
        return rc;
    uint64_t start = max_u64(at, moved.end), end = start;
    eng_htime *ht = xcalloc(g->nipus, sizeof *ht);
    for (uint32_t i = 0; s[0].host && i < g->nipus && rc == ERR_OK; i++)
        if ((rc = eng_host_copy(g, i, -1, start, &ht[i], e)) == ERR_OK)
            end = max_u64(end, start + copy_cycles(&ht[i]));
    if (s[0].host && rank_size(g->ranks) > 1) /* each rank copied for its own IPUs */
        rc = eng_rank_agree(g, rc, &end, e);
    if (rc != ERR_OK) {
        free(ht);
        return rc;
    }
    uint64_t rel = end + s[0].latency;
    for (uint32_t i = 0; i < g->nipus; i++) {
        uint64_t own = s[i].at;
        account(g, i, NULL, max_u64(own, moved.onchip || moved.global ? moved.end : 0), moved,
                start, s[0].host ? &ht[i] : NULL, rel);
    }
    free(ht);
    if (g->has_host && g->host.retire)
        g->host.retire(g->host.ctx, start);
    if (s[0].host && g->has_host && g->host.meet)
        g->host.meet(g->host.ctx, rel);
    schedule_release(g, -1, -1, rel);
    return ERR_OK;
}

/* ---- reports ---- */

/* The latest cycle any tile has reached (parked tiles brought up to date first);
 * *supersteps: the most of any IPU. */
static uint64_t reached(eng *g, uint64_t *supersteps)
{
    unpark_all(g);
    uint64_t cycle = 0;
    *supersteps = 0;
    for (uint32_t i = 0; i < g->nipus; i++) {
        const chip *c = &g->chips[i];
        *supersteps = max_u64(*supersteps, c->supersteps);
        for (uint32_t t = 0; t < c->ntiles; t++)
            if (c->tiles[t].state != TILE_IDLE)
                cycle = max_u64(cycle, tile_now(&c->tiles[t]));
    }
    return cycle;
}

/* The run was stopped between rounds: ERR_STOPPED naming where every IPU is. */
static int stopped(eng *g, err *e)
{
    txt b = {0};
    uint64_t steps;
    txt_printf(&b, "stopped at cycle %llu", (unsigned long long)reached(g, &steps));
    /* several ranks: this one knows only its own IPUs' tiles */
    uint32_t lo = rank_size(g->ranks) > 1 ? g->lo : 0,
             hi = rank_size(g->ranks) > 1 ? g->hi : g->nipus;
    for (uint32_t i = lo; i < hi && i < lo + NAMED_IPUS; i++) {
        txt_printf(&b, i > lo ? "; " : ": ");
        eng_ipu_state(&b, g, i);
    }
    if (hi - lo > NAMED_IPUS)
        txt_printf(&b, "; and %u more IPUs", hi - lo - NAMED_IPUS);
    if (hi - lo < g->nipus)
        txt_printf(&b, "; %u IPU%s on the other ranks", g->nipus - (hi - lo),
                   g->nipus - (hi - lo) == 1 ? "" : "s");
    int rc = err_set(e, ERR_STOPPED, "%s", txt_str(&b));
    txt_free(&b);
    return rc;
}

/* The run's error for the earliest fault by (cycle, ipu, tile), or ERR_OK when none; at[0]
 * the cycle its superstep began, at[1] its cycle. A superstep fault names the other tiles
 * past the limit too. */
static int first_fault(eng *g, uint64_t *at, err *e)
{
    if (!g->faulted)
        return ERR_OK;
    const tile *first = NULL;
    uint64_t first_t = 0;
    for (uint32_t i = g->lo; i < g->hi; i++) {
        const chip *ch = &g->chips[i];
        for (uint32_t k = 0; k < ch->nlive; k++) {
            const tile *x = &ch->tiles[ch->live[k]];
            if (x->state != TILE_FAULTED)
                continue;
            const isa_cpu *c = x->fault_ctx ? &x->wk[x->fault_ctx - 1] : &x->sup;
            if (!first || c->t < first_t) {
                first = x;
                first_t = c->t;
            }
        }
    }
    if (!first)
        return ERR_OK;
    char buf[512];
    tile_fault_text(first, &g->cfg.limit_names, buf, sizeof buf);
    txt b = {0};
    txt_printf(&b, "%s", buf);
    g->past_first[0] = g->past_first[1] = UINT32_MAX;
    if (eng_past_superstep(first) && rank_size(g->ranks) > 1) { /* the others at the meeting */
        g->past_first[0] = first->ipu;
        g->past_first[1] = first->id;
    } else if (eng_past_superstep(first)) {
        eng_also_past(&b, g, first);
    }
    at[0] = first->step_start;
    at[1] = first_t;
    int rc = err_set(e, ERR_FAULT, "%s", txt_str(&b));
    txt_free(&b);
    return rc;
}

/* Whether a release is pending (at or before eng_stop_at's cycle): the kernel's next time. */
static int any_pending(const eng *g)
{
    sim_time next = sim_next_time(g->k);
    return next != SIM_FOREVER &&
           (g->stop.cycle == UINT64_MAX || next <= mach_cycles_to_ps(&g->m, g->stop.cycle));
}

/* eng_stop_at: the releases at its cycle have been carried out and their rounds run, and
 * this rank does not settle after them. */
static int at_stop(const eng *g)
{
    return g->stop.cycle != UINT64_MAX && g->now >= g->stop.cycle &&
           rank_id(g->ranks) >= g->stop.settled;
}

/* What the IPUs waiting at external zones are: how many, the latest arrival, whether they
 * wait at different zones, and whether every IPU not done waits at one. */
typedef struct ext_wait {
    uint32_t n;
    unsigned zone; /* of the last one */
    uint64_t at;
    int mixed, all;
} ext_wait;

/* Settle IPU i after a round: finish it, release its IPU-wide zone or its groups, or note
 * that it waits at an external zone. */
static int settle_ipu(eng *g, uint32_t i, int *progress, ext_wait *x, err *e)
{
    eng_sync *s = &g->sync[i];
    if (g->done[i]) {
        s->what = ENG_WAIT_DONE;
        return ERR_OK;
    }
    if (rel_pending(g, (int)i, -1)) {
        x->all = 0;
        return ERR_OK;
    }
    g->fabric.sync(g->fabric.ctx, &g->chips[i], s);
    if (s->what == ENG_WAIT_EXTERNAL) {
        x->mixed |= x->n && s->zone != x->zone;
        x->zone = s->zone;
        x->at = max_u64(x->at, s->at);
        x->n++;
        return ERR_OK;
    }
    x->all = 0;
    if (s->what == ENG_WAIT_NONE)
        return release_groups(g, i, s, progress, e);
    *progress = 1;
    return s->what == ENG_WAIT_DONE ? finish_ipu(g, i, s, e) : release_ipu(g, i, s, e);
}

/* The fabric's sync deadlock report (it marks the waiting tiles faulted). */
static int deadlock(eng *g, err *e)
{
    g->faulted = 1;
    return g->fabric.deadlock(g->fabric.ctx, g->chips, g->sync, g->nipus, e);
}

/* Several ranks: this one can go no further alone (`rc`: its own error, in the superstep
 * that began at at[0], at cycle at[1]); it meets the others and every rank does the same:
 * return the earliest error, end the run, release the external sync, or report the
 * deadlock. */
static int meet(eng *g, int rc, uint64_t at[2], int *progress, err *e)
{
    eng_wait what;
    uint64_t last;
    const volatile sig_atomic_t *stop = g->cfg.watch.stop;
    if (rc == ERR_OK && stop && *stop) {
        rc = stopped(g, e);
        at[0] = at[1] = UINT64_MAX;
    }
    if ((rc = eng_rank_meet(g, rc, at, &what, &last, e)) != ERR_OK)
        return rc;
    *progress = what != ENG_WAIT_DONE;
    if (what == ENG_WAIT_EXTERNAL)
        return release_external(g, g->sync, last, e);
    if (what == ENG_WAIT_DONE)
        return ERR_OK;
    eng_rank_states(g); /* the report names every IPU's tiles */
    return deadlock(g, e);
}

/* After a round: report the first fault; release every zone that is complete (delivering
 * the exchange and the host copies first); detect deadlock. ERR_OK with *progress set when
 * something was scheduled (*progress 0: every tile has halted), or ERR_FAULT. With several
 * ranks, this rank's own IPUs go on alone while they can, then meet the others'. */
static int resolve(eng *g, int *progress, err *e)
{
    uint64_t at[2] = {0, 0};
    int rc = first_fault(g, at, e), ranks = rank_size(g->ranks) > 1;
    if (rc != ERR_OK)
        return ranks ? meet(g, rc, at, progress, e) : rc;
    *progress = rel_pending(g, -1, -1); /* the whole system waits for that */
    if (*progress)
        return ERR_OK;
    if (ranks && at_stop(g)) /* one process found its fault here, before settling anything */
        return meet(g, ERR_OK, at, progress, e);
    int pending = any_pending(g), all_done = 1;
    ext_wait x = {0, 0, 0, 0, 1};
    for (uint32_t i = g->lo; i < g->hi; i++) {
        all_done &= g->done[i];
        if ((rc = settle_ipu(g, i, progress, &x, e)) == ERR_OK)
            continue;
        at[0] = g->now; /* found settling, after the rounds of the releases at now */
        at[1] = UINT64_MAX;
        return ranks ? meet(g, rc, at, progress, e) : rc;
    }
    if (ranks) { /* alone while a release (up to eng_stop_at's) is pending */
        *progress = any_pending(g);
        return *progress ? ERR_OK : meet(g, ERR_OK, at, progress, e);
    }
    if (x.n && x.all && !*progress) {
        if (x.n < g->nipus || x.mixed) /* some IPU is done, or IPUs wait at other zones */
            return deadlock(g, e);
        *progress = 1;
        return release_external(g, g->sync, x.at, e);
    }
    if (!*progress && !pending && !all_done)
        return deadlock(g, e);
    *progress |= pending;
    return ERR_OK;
}

/* ---- the loop: rounds, releases, a stop request, the heartbeat ---- */

static uint64_t host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The heartbeat, when one is due (host time only decides when it is called). */
static void heartbeat(eng *g)
{
    const eng_watch *w = &g->cfg.watch;
    if (!w->progress)
        return;
    uint64_t now = host_ns();
    if (w->progress_ns && now < g->beat_at)
        return;
    g->beat_at = now + w->progress_ns;
    /* a tile's context may move back (a later worker of a runall after an earlier one ran
     * ahead): the cycles already reached stay reached */
    uint64_t steps, cycle = reached(g, &steps);
    g->beat_cycle = max_u64(g->beat_cycle, cycle);
    w->progress(w->progress_ctx, g->beat_cycle, steps);
}

/* A round of more than one tile is shared among the threads while they are still spinning
 * from the last shared round (handing them a job then costs about a microsecond), or when
 * the last round took at least ENG_WAKE_WORTH_NS of host time. Otherwise (they have gone
 * to sleep: waking them costs tens of microseconds on a small host, up to a millisecond on
 * a busy one) this thread steps the round's tiles until the round has taken
 * ENG_WAKE_WORTH_NS, and only then wakes them for the tiles left: a short round never wakes
 * them, a long one loses at most that much. A run's first round counts as after a short
 * one. Measured on 2 threads: the pipelined MNIST epoch (17,000 rounds of 20 tiles on
 * average) took 7.6 s when a round was run alone after any shared round under 100 us, 5.3 s
 * with a rule like this one; bench/speed (c), 25,000 sync-only supersteps, took 0.1-0.3 ms
 * longer on 2 threads than on one while every run's first round woke the threads, the same
 * time now; (a), one round of 1472 long tiles, is shared after its first tile. */
enum { ENG_WAKE_WORTH_NS = 100000 };

/* The runnable tiles of every IPU into g->run, at the start of a run (from then on the
 * releases add the tiles they resume, and each round keeps those still runnable). */
static void collect_runnable(eng *g)
{
    g->nrun = 0;
    for (uint32_t i = g->lo; i < g->hi; i++) {
        chip *c = &g->chips[i];
        for (uint32_t k = 0; k < c->nlive; k++)
            if (c->tiles[c->live[k]].state == TILE_RUNNABLE)
                g->run[g->nrun++] = &c->tiles[c->live[k]];
    }
}

/* After a round, in one pass over the tiles it ran: queue those whose outboxes hold copies
 * (chip outq, after dropping the tiles emptied since), note a fault, count those that
 * stopped into their IPU's census (chip_census_add), park those at a sync that can be, and
 * keep in g->run those still runnable (a chunk ran out). Returns whether any is. */
static int after_round(eng *g)
{
    for (uint32_t i = 0; i < g->nipus; i++)
        chip_prune_out(&g->chips[i]);
    size_t keep = 0;
    for (size_t x = 0; x < g->nrun; x++) {
        tile *t = g->run[x];
        if (x + 4 < g->nrun) /* what this pass reads is in a tile's first two lines */
            __builtin_prefetch(g->run[x + 4]);
        if (t->out.n)
            chip_queue_out(&g->chips[t->ipu], t->id);
        if (t->state == TILE_RUNNABLE) {
            g->run[keep++] = t;
            continue;
        }
        chip *c = &g->chips[t->ipu];
        chip_census_add(&c->census, t);
        if (t->state == TILE_HALTED)
            chip_census_add(&c->halted, t);
        else if (g->park)
            park_tile(c, t, &g->tcfg);
        g->faulted |= t->state == TILE_FAULTED;
    }
    g->nrun = keep;
    return keep > 0;
}

/* The tiles of g->run from `from` on, a pool job's items. */
typedef struct rest_job {
    eng *g;
    size_t from;
} rest_job;

static void step_rest(void *ctx, size_t i)
{
    const rest_job *j = ctx;
    step_one(j->g, j->from + i);
}

/* One compute round over every runnable tile, shared among the host threads; or, when it is
 * not known to be worth waking them (ENG_WAKE_WORTH_NS), stepped on this thread until it
 * has taken that long, the threads then woken for the tiles left. Host time only: it
 * decides which thread steps a tile, never what a tile does, so results stay the same for
 * any threads. Returns whether some tile is still runnable (its chunk ran out): then
 * another round comes before the syncs are resolved. */
static int compute_round(eng *g)
{
    if (!g->nrun)
        return 0;
    uint64_t t0 = host_ns();
    size_t x = 0;
    if (g->nrun == 1 || (g->last_ns < ENG_WAKE_WORTH_NS && !pool_awake(g->pool)))
        do
            step_one(g, x++);
        while (x < g->nrun && host_ns() - t0 < ENG_WAKE_WORTH_NS);
    if (x < g->nrun) {
        rest_job j = {g, x};
        pool_run(g->pool, g->nrun - x, step_rest, &j);
    }
    g->last_ns = host_ns() - t0;
    g->rounds++;
    return after_round(g);
}

/* Carry out only the earliest releases, the kernel's next time step (each sets g->now to
 * its cycle): IPUs run ahead of each other between external syncs, and one released now may
 * reach its next sync before another's pending release; every blocked IPU resumes at or
 * after the earliest, so nothing can be scheduled before it (the kernel's time never goes
 * back). */
static void run_releases(eng *g)
{
    sim_time next = sim_next_time(g->k);
    if (next != SIM_FOREVER)
        sim_run(g->k, next);
}

static int run_loop(eng *g, err *e);

int eng_run(eng *g, err *e)
{
    int rc = run_loop(g, e);
    unpark_all(g);
    if (rank_size(g->ranks) > 1 && (rc == ERR_OK || rc == ERR_FAULT))
        eng_rank_results(g);
    return rc;
}

/* The rounds and releases until every tile has halted (or a fault, or a stop). */
static int run_loop(eng *g, err *e)
{
    if (!g->loaded)
        return err_set(e, ERR_INPUT, "no program loaded");
    int rc = sim_elaborate(g->k, e);
    if (rc != ERR_OK)
        return rc;
    g->fabric = *(const eng_fabric *)sim_port_get(g->pfabric);
    const eng_host *h = sim_port_get(g->phost);
    g->has_host = h != NULL;
    if (h)
        g->host = *h;
    const volatile sig_atomic_t *stop = g->cfg.watch.stop;
    g->beat_at = host_ns() + g->cfg.watch.progress_ns;
    g->beat_cycle = 0;
    g->last_ns = 0; /* the first round: as after a short one */
    collect_runnable(g);
    for (;;) {
        if (stop && *stop && rank_size(g->ranks) == 1)
            return stopped(g, e);
        if (stop && *stop) { /* several ranks: every one got the signal (mpirun passes it on):
                              * meet now, even with tiles still runnable, and stop together */
            uint64_t at[2] = {0, 0};
            int progress;
            return meet(g, ERR_OK, at, &progress, e);
        }
        int more = compute_round(g);
        heartbeat(g);
        if (more)
            continue;
        int progress = 0;
        if ((rc = resolve(g, &progress, e)) != ERR_OK)
            return rc;
        if (!progress)
            break;
        run_releases(g);
    }
    /* global sends nobody synced for still land (after every tile halted) */
    eng_moved moved;
    if ((rc = deliver(g, 0, g->nipus, 1, &moved, e)) != ERR_OK)
        return rc;
    for (uint32_t i = 0; i < g->nipus; i++)
        g->chips[i].finish = max_u64(g->chips[i].finish, moved.end);
    return ERR_OK;
}

sim_port *eng_port_fabric(eng *g)
{
    return g->pfabric;
}

sim_port *eng_port_host(eng *g)
{
    return g->phost;
}

const mach *eng_machine(const eng *g)
{
    return &g->m;
}
uint32_t eng_nipus(const eng *g)
{
    return g->nipus;
}
uint32_t eng_ntiles(const eng *g)
{
    return g->ntiles;
}
unsigned eng_threads(const eng *g)
{
    return pool_threads(g->pool);
}
int eng_numa_nodes(const eng *g)
{
    return pool_numa_nodes(g->pool);
}

const tile *eng_tile(const eng *g, uint32_t ipu, uint32_t t)
{
    return ipu < g->nipus && t < g->ntiles ? &g->chips[ipu].tiles[t] : NULL;
}

uint8_t *eng_tile_mem(eng *g, uint32_t ipu, uint32_t t)
{
    return ipu < g->nipus && t < g->ntiles ? chip_tile_mem(&g->chips[ipu], t) : NULL;
}

uint32_t eng_tile_image(const eng *g, uint32_t ipu, uint32_t t)
{
    return ipu < g->nipus && t < g->ntiles ? g->chips[ipu].tiles[t].image : 0;
}
