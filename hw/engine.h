/* engine: the BSP engine — every tile of every IPU, supersteps, syncs, host threads.
 *
 * eng_run() alternates two things until every tile has halted: a compute round, in which
 * all runnable tiles run in parallel on the thread pool until each reaches a sync, halts or
 * faults; and sync resolution, in which a zone whose tiles have all arrived is released at
 * (latest arrival + zone latency) by an event on the simulation kernel. A sync that can never
 * complete is a simulated fault naming the waiting and the missing tiles. */
#ifndef IPUSIM_ENGINE_H
#define IPUSIM_ENGINE_H

#include <stdint.h>

#include "hw/chip.h"
#include "hw/err.h"
#include "hw/machine.h"
#include "isa/isa.h"

typedef struct eng_cfg {
    mach m;              /* machine; m.nipus IPUs of m.tiles_per_ipu tiles */
    unsigned threads;    /* host threads (0: online CPUs) */
    uint64_t max_cycles; /* no instruction issues after this cycle */
} eng_cfg;

typedef struct eng_stats {
    uint64_t cycles;               /* the cycle at which the last tile of any IPU halted */
    uint64_t supersteps;           /* sync releases summed over IPUs */
    uint64_t ninsn[TILE_NCTX];     /* instructions executed per context, all tiles */
    uint64_t busy[TILE_NCTX];      /* issue cycles used per context, all tiles */
    uint64_t workers_started;
    uint64_t tiles;                /* tiles simulated */
    uint64_t rounds;               /* parallel compute rounds the host ran */
} eng_stats;

typedef struct eng eng;

/* The statistics table: one place for names, units and meanings, used by the text report,
 * the JSON report and CSV columns. eng_stat_values() fills values in table order. */
typedef struct eng_stat {
    const char *name;    /* JSON key / CSV column */
    const char *label;   /* text report label */
    const char *unit;
    const char *meaning;
} eng_stat;
enum { ENG_NSTAT = 7 + TILE_NCTX };
const eng_stat *eng_stat_table(void);
void eng_stat_values(const eng_stats *st, const mach *m, double v[ENG_NSTAT]);

/* Build the system (lazily mapped tile memory, thread pool). NULL and e set on failure. */
eng *eng_new(const eng_cfg *cfg, err *e);
void eng_free(eng *g);

/* Load `prog` on every tile of every IPU (each tile reads its ids from control registers).
 * The engine keeps its own decoded copy of the text; prog may be freed afterwards. */
int eng_load(eng *g, const isa_prog *prog, err *e);

/* Run to completion. ERR_OK, or ERR_FAULT with "ipu I tile T ctx C pc P cycle N: reason". */
int eng_run(eng *g, err *e);

/* Results. */
void eng_get_stats(const eng *g, eng_stats *st);
const mach *eng_machine(const eng *g);
uint32_t eng_nipus(const eng *g);
uint32_t eng_ntiles(const eng *g);
unsigned eng_threads(const eng *g);
int eng_numa_nodes(const eng *g);
const chip *eng_chip(const eng *g, uint32_t ipu);
const tile *eng_tile(const eng *g, uint32_t ipu, uint32_t t);
/* Tile memory, for loaders and dumps (NULL when out of range). */
uint8_t *eng_tile_mem(eng *g, uint32_t ipu, uint32_t t);

#endif
