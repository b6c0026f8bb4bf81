/* micro: the microbenchmark table — which benchmarks exist, how one program is run for them,
 * and the two columns every measured figure is compared with.
 *
 * The benchmarks themselves (micro_xchg.c, micro_link.c, micro_tile.c, micro_coll.c, and the
 * ping-pong of micro_pp.c) generate tile programs, run them on the engine with the fabric
 * attached and measure from the run: latencies, syncs, memory, AMP and all-reduce from the
 * programs' own $ccount readings, the exchange and link bandwidths from the run's exchange
 * trace or DoExchange cycles (docs/fabric.md, "Microbenchmarks", says which row is which, and
 * what a latency row subtracts). This file holds
 * what they compare against: the figure the preset's parameters imply, as a formula over the
 * mach fields written out here (so a reader sees exactly what "implied" means), and the
 * published figure from docs/sources.md, Chip for the chip the preset names. Left out: figures
 * docs/sources.md does not give (NaN), and any published figure for a user's own preset (its
 * chip is not known). */
#include "workloads/micro/micro.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/rank.h"
#include "isa/asm.h"
#include "workloads/micro/micro_int.h"

/* ---- the benchmarks ---- */

typedef struct bench {
    const char *name, *summary;
    int (*fn)(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e);
} bench;

static const bench benches[] = {
    {"xchg-latency",
     "tile-to-tile exchange latency by ping-pong: same supertile, same column, far column",
     micro_xchg_latency},
    {"xchg-bandwidth", "exchange bandwidth of one tile, and all-to-all over a whole IPU",
     micro_xchg_bandwidth},
    {"sync", "internal sync of one IPU, external sync of 2, 4, 8, 16 IPUs", micro_sync},
    {"link", "IPU-Link bandwidth (one link, all links of an IPU) and latency (ping-pong)",
     micro_link},
    {"memory", "local load and store bandwidth per tile and per IPU (six workers)", micro_memory},
    {"amp", "AMP fp32 peak per IPU (six workers on every tile)", micro_amp},
    {"allreduce", "ring all-reduce bus bandwidth against message size, as a tile program",
     micro_allreduce},
};
enum { NBENCH = sizeof benches / sizeof benches[0] };

size_t wl_micro_count(void)
{
    return NBENCH;
}

const char *wl_micro_name(size_t i)
{
    return i < NBENCH ? benches[i].name : NULL;
}

const char *wl_micro_summary(size_t i)
{
    return i < NBENCH ? benches[i].summary : NULL;
}

int wl_micro_run(const mach *m, const char *name, const wl_micro_cfg *cfg, wl_micro_table *t,
                 err *e)
{
    return wl_micro_run_ctl(m, name, cfg, NULL, t, e);
}

int wl_micro_run_ctl(const mach *m, const char *name, const wl_micro_cfg *cfg, const sys_ctl *ctl,
                     wl_micro_table *t, err *e)
{
    micro_cfg mc = {.threads = cfg ? cfg->threads : 0,
                    .max_cycles = cfg && cfg->max_cycles ? cfg->max_cycles : WL_MICRO_MAX_CYCLES,
                    .ranks = cfg ? cfg->ranks : NULL};
    if (ctl)
        mc.ctl = *ctl;
    int all = !name || strcmp(name, "all") == 0, found = 0;
    for (size_t i = 0; i < NBENCH; i++) {
        if (!all && strcmp(name, benches[i].name) != 0)
            continue;
        found = 1;
        int rc = benches[i].fn(m, &mc, t, e);
        if (rc != ERR_OK)
            return rc;
    }
    if (found)
        return ERR_OK;
    char names[256] = "";
    for (size_t i = 0; i < NBENCH; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s, ", benches[i].name);
    return err_set(e, ERR_INPUT, "unknown microbenchmark '%s' (known: %sall)", name, names);
}

void wl_micro_table_free(wl_micro_table *t)
{
    free(t->rows);
    memset(t, 0, sizeof *t);
}

double wl_micro_diff_pct(double x, double ref)
{
    if (isnan(ref) || isnan(x) || ref == 0)
        return NAN;
    return 100.0 * (x - ref) / ref;
}

/* ---- shared helpers ---- */

void micro_add(wl_micro_table *t, const char *bench, const char *unit, double sim, double implied,
               double published, const char *fmt, ...)
{
    t->rows = xgrow(t->rows, &t->cap, t->n + 1, sizeof *t->rows);
    wl_micro_row *r = &t->rows[t->n++];
    memset(r, 0, sizeof *r);
    r->bench = bench;
    r->unit = unit;
    r->sim = sim;
    r->implied = implied;
    r->published = published;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->what, sizeof r->what, fmt, ap);
    va_end(ap);
}

/* A rank sees the on-chip streams of its own IPUs and every stream between IPUs: it keeps
 * those between IPUs only on rank 0, so that gathering the ranks' lists gives each once. */
static void on_trace(void *ctx, const eng_stream *s, int global)
{
    micro_run *r = ctx;
    if (global && rank_id(r->ranks) != 0)
        return;
    r->tr = xgrow(r->tr, &r->cap, r->ntr + 1, sizeof *r->tr);
    r->tr[r->ntr++] = *s;
}

/* Several ranks: every rank's trace becomes the whole run's (each rank's list in turn). */
static void gather_trace(micro_run *r)
{
    unsigned size = rank_size(r->ranks);
    size_t *counts = xmalloc(size * sizeof *counts);
    eng_stream *all = rank_allgatherv(r->ranks, r->tr, r->ntr * sizeof *r->tr, counts);
    size_t n = 0;
    for (unsigned k = 0; k < size; k++)
        n += counts[k] / sizeof *r->tr;
    free(counts);
    free(r->tr);
    r->tr = all;
    r->ntr = r->cap = n;
}

int micro_run_prog(const mach *m, const micro_prog *p, const micro_cfg *cfg, micro_run *r, err *e)
{
    memset(r, 0, sizeof *r);
    isa_prog prog;
    int rc = asm_assemble("micro.s", p->src, strlen(p->src), &prog, e);
    if (rc != ERR_OK)
        return rc;
    if ((uint64_t)prog.size + p->reserve > m->sram_bytes) {
        rc = err_set(e, ERR_INPUT,
                     "machine %s: a microbenchmark program of %u bytes and its "
                     "%u bytes of buffers do not fit in %u bytes of tile memory",
                     m->name, prog.size, p->reserve, m->sram_bytes);
        isa_prog_free(&prog);
        return rc;
    }
    sys_cfg sc = {.m = *m,
                  .threads = cfg ? cfg->threads : 0,
                  .max_cycles = cfg ? cfg->max_cycles : WL_MICRO_MAX_CYCLES,
                  .ranks = cfg ? cfg->ranks : NULL};
    if (cfg)
        sc.ctl = cfg->ctl;
    sc.m.nipus = p->nipus;
    sc.m.tiles_per_ipu = p->ntiles;
    if (!(r->s = sys_new(&sc, e))) {
        isa_prog_free(&prog);
        return e->status;
    }
    r->g = sys_engine(r->s);
    r->ranks = sc.ranks;
    xchg_set_trace(sys_fabric(r->s), on_trace, r);
    rc = eng_load(r->g, &prog, e);
    isa_prog_free(&prog);
    if (rc != ERR_OK)
        return rc;
    if (p->setup)
        p->setup(r->g, p->ctx);
    rc = eng_run(r->g, e);
    if (rank_size(r->ranks) > 1)
        gather_trace(r);
    return rc;
}

void micro_run_free(micro_run *r)
{
    sys_free(r->s);
    free(r->tr);
    memset(r, 0, sizeof *r);
}

uint32_t micro_rd32(eng *g, uint32_t ipu, uint32_t tile, uint32_t addr)
{
    uint32_t v;
    eng_share_mem(g, ipu, tile, addr, 4);
    memcpy(&v, eng_tile_mem(g, ipu, tile) + addr, 4);
    return v;
}

void micro_wr32(eng *g, uint32_t ipu, uint32_t tile, uint32_t addr, uint32_t v)
{
    memcpy(eng_tile_mem(g, ipu, tile) + addr, &v, 4);
}

/* ---- what the preset implies ----
 * Each formula reads only mach fields (and the two ISA facts in micro_int.h). */

static uint32_t absdiff(uint32_t a, uint32_t b)
{
    return a > b ? a - b : b - a;
}

/* Layout: tiles numbered down columns of tiles_per_column; tiles_per_supertile neighbours
 * share a supertile. latency = xchg_base + xchg_per_supertile x |rows apart| +
 * xchg_per_column x |columns apart| + xchg_turn if the columns differ. */
double micro_implied_xchg_latency(const mach *m, uint32_t src, uint32_t dst)
{
    uint32_t tpc = m->tiles_per_column, tps = m->tiles_per_supertile;
    uint32_t dc = absdiff(src / tpc, dst / tpc);
    uint32_t dr = absdiff((src % tpc) / tps, (dst % tpc) / tps);
    return (double)m->xchg_base + (double)m->xchg_per_supertile * dr +
           (double)m->xchg_per_column * dc + (dc ? m->xchg_turn : 0);
}

/* A tile sends xchg_bytes_per_cycle bytes per cycle. */
double micro_implied_tile_xchg(const mach *m)
{
    return m->xchg_bytes_per_cycle;
}

/* Every tile sending and receiving at once: xchg_bytes_per_cycle x tiles x clock. */
double micro_implied_ipu_xchg(const mach *m)
{
    return (double)m->xchg_bytes_per_cycle * m->tiles_per_ipu * (double)m->clock_hz;
}

double micro_implied_sync_internal(const mach *m)
{
    return m->sync_internal;
}

/* sync_internal + ceil(sync_hop_ps x clock x hops x 2), hops = 1 + (nipus / 2) / 2: the IPU
 * Model's formula (docs/sources.md, Chip), on top of the on-chip sync. */
double micro_implied_sync_external(const mach *m, uint32_t nipus)
{
    double hops = 1 + (nipus / 2) / 2;
    double c = (double)m->sync_hop_ps * 1e-12 * (double)m->clock_hz * hops * 2;
    return m->sync_internal + ceil(c - 1e-9);
}

double micro_implied_link(const mach *m)
{
    return (double)m->link_bytes_per_s;
}

/* tile -> link port (xchg_base), one link hop (link_latency_ns, rounded up to a cycle), link
 * port -> tile (xchg_base). */
double micro_implied_link_latency(const mach *m)
{
    return 2.0 * m->xchg_base +
           ceil((double)m->link_latency_ns * 1e-9 * (double)m->clock_hz - 1e-9);
}

/* Six workers, each issuing once per ISA_BARREL cycles, one access of `width` bytes per issue
 * (ld128pi 16, st64pi 8): width B per cycle, unless the preset's tile memory is narrower. */
static double ldst(double bytes_per_cycle, unsigned width)
{
    double isa = (double)width * ISA_NWORKERS / ISA_BARREL;
    return bytes_per_cycle < isa ? bytes_per_cycle : isa;
}

double micro_implied_load(const mach *m)
{
    return ldst(m->load_bytes_per_cycle, MICRO_LOAD_BYTES);
}

double micro_implied_store(const mach *m)
{
    return ldst(m->store_bytes_per_cycle, MICRO_STORE_BYTES);
}

/* 2 FLOP x amp_macs_per_issue MAC per tile cycle x tiles x clock (six workers keep one `amp`
 * issuing per cycle; an `amp` does 16 MAC in 16 / amp_macs_per_issue issue slots). */
double micro_implied_amp(const mach *m)
{
    return 2.0 * m->amp_macs_per_issue * m->tiles_per_ipu * (double)m->clock_hz;
}

double micro_implied_allreduce(uint32_t R, double bytes, double alpha_s, double beta)
{
    double T = 2.0 * (R - 1) * (alpha_s + bytes / R / beta);
    return 2.0 * (R - 1) / R * bytes / T;
}

/* ---- published (docs/sources.md, Chip) ---- */

micro_published micro_published_for(const mach *m)
{
    micro_published p = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    int mk2 = strcmp(m->name, "mk2") == 0, mk1 = strcmp(m->name, "mk1") == 0;
    if (!mk2 && !mk1)
        return p;
    p.tile_xchg = 4;      /* [GC] poplibs exchangeBytesPerCycle */
    p.sync_internal = 90; /* [GC] poplibs planner heuristic */
    p.load = 16;          /* [PAPER] interleaved region */
    p.store = 8;          /* [PAPER] */
    if (mk2) {
        p.ipu_xchg = 8e12;  /* [PRESS] "8 TB/s, any pattern" */
        p.link_ipu = 320e9; /* [PRESS] 10 links, 320 GB/s per IPU */
        p.fp32 = 62.5e12;   /* [GC] POD datasheets */
    } else {
        p.ipu_xchg = 7.8e12; /* docs/sources.md, Chip: ~7.8 TB/s */
        p.link = 13.6e9;     /* [GC] IPU Model: 128 Gbit/s per direction at 85% */
        p.fp32 = 31.1e12;    /* [PAPER] */
    }
    return p;
}

/* ---- CSV ---- */

static void csv_num(txt *b, double v)
{
    if (isnan(v))
        txt_printf(b, ",");
    else
        txt_printf(b, ",%.6g", v);
}

char *wl_micro_csv(const wl_micro_table *t)
{
    txt b = {0};
    txt_printf(&b, "bench,what,unit,simulated,implied,published,sim_vs_implied_pct,"
                   "sim_vs_published_pct\n");
    for (size_t i = 0; i < t->n; i++) {
        const wl_micro_row *r = &t->rows[i];
        txt_printf(&b, "%s,\"", r->bench);
        for (const char *c = r->what; *c; c++) {
            if (*c == '"')
                txt_printf(&b, "\"");
            txt_printf(&b, "%c", *c);
        }
        txt_printf(&b, "\",%s", r->unit);
        csv_num(&b, r->sim);
        csv_num(&b, r->implied);
        csv_num(&b, r->published);
        csv_num(&b, wl_micro_diff_pct(r->sim, r->implied));
        csv_num(&b, wl_micro_diff_pct(r->sim, r->published));
        txt_printf(&b, "\n");
    }
    return txt_take(&b);
}
