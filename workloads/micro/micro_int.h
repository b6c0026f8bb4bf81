/* micro_int: what the microbenchmark files share — running a program with the fabric and a
 * trace, adding rows, building assembly text, and the two reference columns: the figures the
 * preset implies (formulas over mach fields) and the published figures (docs/sources.md). */
#ifndef IPUSIM_WL_MICRO_INT_H
#define IPUSIM_WL_MICRO_INT_H

#include <stdint.h>

#include "host/system.h"
#include "hw/engine.h"
#include "base/text.h"
#include "workloads/micro/micro.h"

/* What every benchmark runs with: the caller's host threads and controls. */
typedef struct micro_cfg {
    unsigned threads;
    uint64_t max_cycles; /* wl_micro_cfg's, 0 replaced by WL_MICRO_MAX_CYCLES */
    sys_ctl ctl;
    struct rank_comm *ranks;
} micro_cfg;

/* ---- running one program ---- */

typedef struct micro_run {
    sys *s;
    eng *g;         /* the system's engine */
    eng_stream *tr; /* every delivered stream: in the engine's delivery order in one process;
                       after a run of several ranks, rank by rank (what reads it sums, takes
                       extremes or counts, which no order changes) */
    size_t ntr, cap;
    struct rank_comm *ranks; /* the run's ranks (NULL: this process alone) */
} micro_run;

typedef void (*micro_setup_fn)(eng *g, void *ctx);

/* How to run one program. */
typedef struct micro_prog {
    const char *src; /* assembly */
    uint32_t nipus, ntiles;
    uint32_t reserve;     /* bytes at the top of tile memory the image must leave free */
    micro_setup_fn setup; /* may be NULL: places data in tile memory before the run */
    void *ctx;
} micro_prog;

/* Assemble p->src and run it on every tile of p->nipus x p->ntiles IPUs of m. On ERR_OK the
 * engine stays in r->g for inspection. Free r with micro_run_free whatever the result. */
int micro_run_prog(const mach *m, const micro_prog *p, const micro_cfg *cfg, micro_run *r, err *e);
void micro_run_free(micro_run *r);

/* A 32-bit word of tile memory (after a run of several ranks, read from the tile's owner:
 * every rank must read the same words in the same order). */
uint32_t micro_rd32(eng *g, uint32_t ipu, uint32_t tile, uint32_t addr);
void micro_wr32(eng *g, uint32_t ipu, uint32_t tile, uint32_t addr, uint32_t v);

/* Append a row; `what` is printf-style. */
void micro_add(wl_micro_table *t, const char *bench, const char *unit, double sim, double implied,
               double published, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* ---- ping-pong latency (micro_pp.c) ---- */

/* Round trips per pair, and a block's length in port cycles (PP_WORDS x xchg_bytes_per_cycle
 * bytes: longer than a sync's own 6 cycles, so a release always waits for the last word). */
enum { PP_TRIPS = 16, PP_WORDS = 8 };

/* Tile A (the timer) and tile B of one ping-pong. */
typedef struct micro_pair {
    uint32_t a_ipu, a_tile, b_ipu, b_tile;
} micro_pair;

/* Run the n pairs one after another on nipus x ntiles (send and sync internal on one IPU,
 * gsend and sync external on several) and give each pair's one-way latency to the first word,
 * in cycles: from A's two $ccount readings, less the fixed costs (micro_pp.c), sync_cycles
 * being the zone's sync latency. ERR_INPUT when an echoed word is wrong. */
int micro_pingpong(const mach *m, const micro_cfg *cfg, const micro_pair *p, size_t n,
                   uint32_t nipus, uint32_t ntiles, uint64_t sync_cycles, const char *bench,
                   double *lat, err *e);

/* ---- assembly text ---- */

/* Programs are built with base/text.h (txt, txt_printf). */

/* ---- what the preset implies (micro.c; each a formula over mach fields) ---- */

/* ISA facts the formulas use (docs/isa.md): ld128pi moves 16 bytes and st64pi 8 bytes per
 * worker issue; one `amp` is a 4x4 outer product, 16 fp32 MAC. */
enum { MICRO_LOAD_BYTES = 16, MICRO_STORE_BYTES = 8, MICRO_AMP_MACS = 16 };

double micro_implied_xchg_latency(const mach *m, uint32_t src, uint32_t dst); /* cycles */
double micro_implied_tile_xchg(const mach *m);                     /* B/cycle, one tile streaming */
double micro_implied_ipu_xchg(const mach *m);                      /* B/s, every tile of an IPU */
double micro_implied_sync_internal(const mach *m);                 /* cycles */
double micro_implied_sync_external(const mach *m, uint32_t nipus); /* cycles */
double micro_implied_link(const mach *m);         /* B/s, one IPU-Link, one direction */
double micro_implied_link_latency(const mach *m); /* cycles, 4 bytes to a neighbour IPU */
double micro_implied_load(const mach *m);         /* B/cycle per tile */
double micro_implied_store(const mach *m);        /* B/cycle per tile */
double micro_implied_amp(const mach *m);          /* FLOP/s per IPU */
/* Ring all-reduce bus bandwidth (B/s) from the alpha-beta model: T = 2(R-1)(alpha + S/(R
 * beta)), bus bandwidth = 2(R-1)/R x S / T. alpha in seconds, beta in B/s. The additions'
 * compute is not in it. */
double micro_implied_allreduce(uint32_t R, double bytes, double alpha_s, double beta);

/* ---- published figures (docs/sources.md, Chip) for the chip the preset names ---- */
typedef struct micro_published {
    double tile_xchg;     /* B/cycle */
    double ipu_xchg;      /* B/s */
    double sync_internal; /* cycles */
    double link;          /* B/s, one link */
    double link_ipu;      /* B/s, all links of an IPU */
    double load, store;   /* B/cycle per tile */
    double fp32;          /* FLOP/s per IPU */
} micro_published;
/* mk2 or mk1 by the machine's name; every field NaN for any other machine. */
micro_published micro_published_for(const mach *m);

/* ---- the benchmarks (one function each; rows appended to t) ---- */
int micro_xchg_latency(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e);
int micro_xchg_bandwidth(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e);
int micro_sync(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e);
int micro_link(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e);
int micro_memory(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e);
int micro_amp(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e);
int micro_allreduce(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e);

#endif
