/* stats: the engine's statistics, what a run measured, and the tables that name them.
 *
 * Three tables, each an X-macro file: the run statistics (hw/stats.def: eng_stats, the whole
 * run), the per-IPU statistics (hw/ipu_stats.def: eng_ipu_stats) and the time categories
 * (hw/cats.def: eng_ipu_stats.cat[]). A row gives the JSON key (and so the sweeps' CSV
 * column), the text report's label and how it shows the value, the unit, the meaning, and
 * how the value is obtained. The text report, the JSON report, the sweeps and the plots read
 * these rows; nothing indexes statistics by position. Part of the engine (prefix eng_): the
 * engine fills the structs, hw/engine_stats.c reads them out and holds the tables. */
#ifndef IPUSIM_STATS_H
#define IPUSIM_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "hw/machine.h"
#include "hw/tile.h"

/* What a whole run measured (eng_get_stats). */
typedef struct eng_stats {
    uint64_t cycles;           /* the cycle at which the last tile of any IPU halted */
    uint64_t supersteps;       /* sync releases summed over IPUs */
    uint64_t ninsn[TILE_NCTX]; /* instructions executed per context, all tiles */
    uint64_t busy[TILE_NCTX];  /* issue cycles used per context, all tiles */
    uint64_t workers_started;
    uint64_t tiles;  /* tiles simulated */
    uint64_t rounds; /* parallel compute rounds the host ran */
    uint64_t parked; /* tile passes the releases made without visiting the tile (parked tiles,
                        hw/chip.h): host work saved, nothing simulated; this rank's own */
} eng_stats;

/* Time categories per IPU (hw/cats.def); they add up to the total cycles. */
enum {
#define CAT(id, name, colour, meaning) ENG_CAT_##id,
#include "hw/cats.def"
#undef CAT
    ENG_NCAT
};

/* Per-IPU accounting (eng_get_ipu_stats; docs/sources.md, Profiles names: DoExchange,
 * GlobalExchange). hw/ipu_stats.def names the members the reports show. */
typedef struct eng_ipu_stats {
    uint64_t supersteps; /* syncs released */
    uint64_t finish;     /* cycle its last tile halted */
    uint64_t xchg_bytes; /* on-chip bytes received by its tiles */
    uint64_t xchg_streams;
    uint64_t xchg_cycles;     /* per superstep: last on-chip arrival - first send, summed */
    uint64_t global_tx_bytes; /* sent to other IPUs */
    uint64_t global_rx_bytes; /* received from other IPUs */
    uint64_t global_cycles;   /* per external superstep: last arrival - first send, summed */
    uint64_t cat[ENG_NCAT];   /* the IPU's cycles by category; they sum to the total cycles */
    uint64_t io[3];           /* overlapped host copies of sync groups (I/O tiles): begin,
                                 mid (with remote), end cycles, not part of cat[] */
    uint64_t host_in_bytes, host_out_bytes, remote_bytes;
} eng_ipu_stats;

/* How the text report shows a value: the low bits are the decimals; the flags say whether the
 * unit follows the value ("0.060 us", "16.2%": '%' sticks to the number) and whether, on a
 * line of several values, it continues the previous phrase ("DoExchange 0 B in 0 cycles")
 * instead of starting one after a comma. */
enum {
    ENG_TEXT_DEC = 0x0f,
    ENG_TEXT_UNIT = 0x10,
    ENG_TEXT_JOIN = 0x20,
};

/* One statistic: a row of one of the tables. */
typedef struct eng_stat {
    const char *key;     /* JSON key / CSV column (the last part of it) */
    const char *label;   /* text report label */
    const char *line;    /* run statistics: NULL (a line of its own, titled label) or the
                            title of the line it shares with its neighbours */
    const char *unit;    /* "" for a count */
    const char *meaning; /* one line */
    unsigned text;       /* decimals | ENG_TEXT_* */
    /* The value from the statistics struct (eng_stats for the run table, eng_ipu_stats for
     * the per-IPU and category tables), the machine, and arg. */
    double (*get)(const void *stats, const mach *m, size_t arg);
    size_t arg;
} eng_stat;

/* The number of rows of each table. */
enum {
    ENG_NSTAT = 0
#define STAT(...) +1
#include "hw/stats.def"
#undef STAT
};
enum {
    ENG_NIPU_STAT = 0
#define IPU_STAT(...) +1
#include "hw/ipu_stats.def"
#undef IPU_STAT
};

/* The tables: ENG_NSTAT run statistics, ENG_NIPU_STAT per-IPU statistics, ENG_NCAT time
 * categories (in ENG_CAT_* order), each in the order the reports show them. */
const eng_stat *eng_stat_table(void);
const eng_stat *eng_ipu_stat_table(void);
const eng_stat *eng_cat_table(void);
/* Category cat's colour in every picture, "#rrggbb" (hw/cats.def). */
const char *eng_cat_colour(unsigned cat);
/* The row of tab (n rows) with this key, or NULL. */
const eng_stat *eng_stat_find(const eng_stat *tab, size_t n, const char *key);
/* A row's value: stats is the eng_stats or eng_ipu_stats its table reads (see eng_stat.get);
 * m the machine (for times). */
double eng_stat_value(const eng_stat *s, const void *stats, const mach *m);

struct eng;
/* Results of a run. */
void eng_get_ipu_stats(const struct eng *g, uint32_t ipu, eng_ipu_stats *st);
void eng_get_stats(const struct eng *g, eng_stats *st);

/* Tile balance, as PopVision shows it: the mean over the max of the issue cycles (every
 * context's) of the compute tiles holding a program, of IPU ipu (UINT32_MAX: of every IPU).
 * The last io_tiles tiles of each IPU are I/O tiles (they take the host's copies while the
 * others compute): left out of the balance and reported apart. */
typedef struct eng_balance {
    double percent;    /* mean / max, % */
    uint32_t tiles;    /* the compute tiles counted */
    uint32_t busiest;  /* the busiest of them: ipu x tiles per IPU + tile */
    uint32_t io_tiles; /* the I/O tiles holding a program */
    double io_percent; /* their mean issue cycles, % of the busiest compute tile's */
} eng_balance;
eng_balance eng_tile_balance(const struct eng *g, uint32_t ipu, uint32_t io_tiles);

#endif
