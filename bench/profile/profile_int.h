/* profile_int: the profile's state, shared by its recording (profile.c) and its output
 * (profile_out.c). */
#ifndef IPUSIM_BENCH_PROFILE_INT_H
#define IPUSIM_BENCH_PROFILE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "bench/profile/profile.h"
#include "hw/stats.h"
#include "hw/tile.h"

/* The bytes a superstep moved, from the engine's per-IPU counters (hw/stats.h). */
typedef struct prof_bytes {
    const char *key; /* the slice's arg, the summary's key */
    const char *label;
    size_t off;   /* in eng_ipu_stats */
    unsigned cat; /* the category whose span moves them (its first in a step carries them) */
} prof_bytes;
enum { PROF_NB = 6 };
extern const prof_bytes prof_bytes_tab[PROF_NB];

/* The window's units: as the window names them, and in words. */
typedef struct prof_unit {
    const char *key, *text;
} prof_unit;
extern const prof_unit prof_units[PROFILE_NUNITS];

enum { PROF_MAX_RANGES = 32, PROF_MAX_TILES = 64, PROF_TOP_TILES = 5, PROF_TID_TILES = 100 };

typedef struct prof_rec { /* one settled superstep */
    uint32_t ipu, tiles, last;
    uint64_t index, start, end;
    size_t span0, nspans; /* into profile.spans */
    size_t tile0, ntile;  /* into profile.tspans */
    uint64_t bytes[PROF_NB];
} prof_rec;

typedef struct prof_tspan { /* a context of a chosen tile in one superstep */
    uint32_t tile;
    uint8_t ctx; /* 0 supervisor, 1..6 workers */
    uint64_t start, end, busy;
} prof_tspan;

typedef struct prof_range {
    long lo, hi;
} prof_range;

/* The steps' names of a compiled graph, per IPU. */
typedef struct prof_names {
    gr_step *st; /* per IPU, the steps */
    size_t *n;   /* per IPU, how many */
    size_t *at;  /* per IPU, where its steps begin in st */
} prof_names;

struct profile {
    profile_opts o;
    int unit, all; /* the window: its unit, and every period */
    prof_range win[PROF_MAX_RANGES];
    size_t nwin;
    prof_range tiles[PROF_MAX_TILES];
    size_t ntiles;
    /* recorded */
    prof_rec *r;
    size_t nr, rcap;
    eng_span *spans;
    size_t nspans, scap;
    prof_tspan *tspans;
    size_t ntspans, tcap;
    uint64_t *marks[PROFILE_NUNITS];
    size_t nmarks[PROFILE_NUNITS], mcap[PROFILE_NUNITS];
    uint32_t nipus, ntile; /* of the engine, once seen */
    uint64_t (*last_bytes)[PROF_NB];
    uint64_t *busy;               /* per IPU and tile: its issue cycles so far */
    uint64_t (*cbusy)[TILE_NCTX]; /* per IPU and chosen tile: each context's */
    struct rank_comm *ranks;      /* the engine's (several ranks: gathered at the end) */
    int gathered;
    /* built by profile_finish */
    txt trace, summary, json, timeline, props, tilemem;
    size_t events;
    int truncated, finished;
};

/* The k-th chosen tile (ids in list order), or UINT32_MAX past the last. */
uint32_t prof_chosen(const profile *p, size_t k);
/* The number of periods of the unit (its marks + 1), and whether period k is in the window. */
size_t prof_nperiods(const profile *p, int unit);
int prof_in_window(const profile *p, size_t period);
/* Whether the record's period is in the window. */
int prof_rec_in_window(const profile *p, const prof_rec *r);
/* The record's name: its step's label (gr_step_label), "superstep K" past the graph's steps
 * or without one, "end" for an IPU's last record. */
const char *prof_step_name(const prof_names *nm, const prof_rec *r, char *buf, size_t len);
/* The records in time order over every IPU, each IPU's in its own order. */
int prof_by_time(const void *a, const void *b);
typedef struct prof_order {
    uint64_t start;
    uint32_t ipu;
    size_t k; /* the record */
} prof_order;

/* profile_out.c: the files, built from the records. */
void prof_build_trace(profile *p, const eng *g, const prof_names *nm, const char *what);
void prof_build_summary(profile *p, const eng *g, const gr_exe *x, const prof_names *nm,
                        const char *what);
void prof_build_csv(profile *p, const eng *g, const gr_exe *x, const prof_names *nm);

#endif
