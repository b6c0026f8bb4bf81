/* engine: the BSP engine — every tile of every IPU, supersteps, syncs, host threads.
 *
 * eng_run() alternates two things until every tile has halted: compute rounds, in which all
 * runnable tiles run in parallel on the thread pool until each reaches a sync, halts or
 * faults (a round runs each tile at most a chunk of cycles; rounds repeat until none is
 * runnable); and sync resolution, in which a zone whose tiles have all arrived is released at
 * (latest arrival + zone latency) by an event on the simulation kernel. A sync that can never
 * complete is a simulated fault naming the waiting and the missing tiles. Between rounds the
 * engine honours a stop request and calls a heartbeat; neither changes a result. */
#ifndef IPUSIM_ENGINE_H
#define IPUSIM_ENGINE_H

#include <signal.h>
#include <stdint.h>

#include "hw/chip.h"
#include "base/err.h"
#include "hw/machine.h"
#include "hw/stats.h"
#include "isa/isa.h"

/* A compute round runs each tile at most this many cycles past where it went on (unless
 * eng_cfg.chunk_cycles says otherwise): the most a stop request or a heartbeat waits for. */
#define ENG_CHUNK_CYCLES (1ull << 20)

struct eng;

/* One interval of an IPU's time in one category (hw/cats.def): [start, end) in tile cycles. */
typedef struct eng_span {
    unsigned cat; /* ENG_CAT_* (hw/stats.h) */
    uint64_t start, end;
} eng_span;

/* The most spans one superstep is split into (eng_settled.span). */
enum { ENG_MAX_SPANS = 12 };

/* One whole-IPU superstep as the engine settled it: from the IPU's previous release (or 0) to
 * its release, cut into consecutive spans by category, exactly as the time categories count
 * them. `index` counts the IPU's whole-IPU supersteps from 0: with a graph, superstep k is
 * program step k (workloads/graph/graph.h, gr_exe_steps). The IPU's last record (`last`) runs
 * from its last release to the cycle its last tile halted. When the hook runs, the IPU's
 * counters (eng_get_ipu_stats) include what the superstep moved and every tile of the IPU
 * waits at the sync (or has halted). */
typedef struct eng_settled {
    uint32_t ipu;
    uint64_t index;
    uint64_t start, end;
    int last;
    unsigned nspans;
    eng_span span[ENG_MAX_SPANS]; /* in time order, none empty, together [start, end) */
} eng_settled;

/* Watching a long run from outside: nothing here changes a result. */
typedef struct eng_watch {
    /* Non-NULL: read between compute rounds; once non-zero, eng_run returns ERR_STOPPED
     * ("stopped at cycle N: ipu I: tiles T (pc P), ... still computing, K waiting at
     * syncs"). A signal handler may set it. */
    const volatile sig_atomic_t *stop;
    /* Non-NULL: the heartbeat, called between compute rounds at most every progress_ns of
     * host time (0: after every round) with the latest cycle any tile has reached and the
     * supersteps of the IPU with the most. */
    void (*progress)(void *ctx, uint64_t cycle, uint64_t supersteps);
    void *progress_ctx;
    uint64_t progress_ns;
    /* Non-NULL: the profile hook, called as each IPU's superstep is settled, in each IPU's
     * time order (IPUs interleave); NULL costs one test per superstep. */
    void (*settled)(void *ctx, const struct eng *g, const eng_settled *s);
    void *settled_ctx;
} eng_watch;

typedef struct eng_cfg {
    mach m;              /* machine; m.nipus IPUs of m.tiles_per_ipu tiles */
    unsigned threads;    /* host threads (0: online CPUs) */
    uint64_t max_cycles; /* no instruction issues after this cycle */
    /* A fault (FAULT_SUPERSTEP) when an instruction would issue more than this many cycles
     * after its tile's last sync release (or cycle 0); 0: no limit. */
    uint64_t max_superstep_cycles;
    tile_limit_names limit_names; /* the two limits as a fault past one names them */
    uint64_t chunk_cycles; /* a round runs a tile at most this many cycles (0: ENG_CHUNK_CYCLES) */
    eng_watch watch;
    /* The run's ranks (base/rank.h); NULL or one rank: this process steps every IPU. With R
     * ranks each steps the tiles of its own IPUs only (eng_owned) and the ranks meet when
     * none of their own IPUs can go further alone: at external syncs and at the end. */
    struct rank_comm *ranks;
    /* With several ranks, never split a host-link group of m.host_link_ipus IPUs between
     * them (set when a host is attached: the link's bookings then stay in one rank, taken in
     * the order one process takes them). Ranks past the groups own no IPU. */
    int whole_host_links;
} eng_cfg;

typedef struct eng eng;
struct sim;
struct sim_module;
struct sim_port;

/* One exchange stream as the fabric sees it: a block from one tile to one tile. */
typedef struct eng_stream {
    uint32_t src_ipu, src_tile, dst_ipu, dst_tile;
    uint32_t bytes;
    uint64_t send;   /* cycle the first word leaves the sender */
    uint64_t arrive; /* cycle the first word lands (filled by the fabric) */
    uint64_t end;    /* cycle after the last word has landed (filled by the fabric) */
} eng_stream;

/* ---- the engine's fabric port ----------------------------------------------------------
 * The fabric (fabric/xchg.h) offers the engine two things: the exchange (timing, conflict
 * checks and delivery of the streams the tiles logged) and the sync zones (which zone is
 * complete, its latency, and the deadlock report). The engine keeps the tiles, the rounds,
 * the release events and the time accounting. */

/* What the engine lends the fabric for a delivery. */
typedef struct eng_xview {
    chip *chips;
    uint32_t nipus;
    uint32_t own_lo, own_hi;   /* this rank's IPUs: only their tiles hold sends and take data */
    struct rank_comm *ranks;   /* NULL or one rank: every IPU is this process's */
    struct pool *pool;         /* the host threads (hw/pool.h), for copying in parallel */
    struct eng_ipu_stats *ipu; /* per IPU: the exchange's bytes and cycles are added here */
} eng_xview;

/* What a delivery moved: streams within IPUs and between them, and the cycle after the last
 * word landed (0 when nothing was sent). */
typedef struct eng_moved {
    size_t onchip, global;
    uint64_t end;
} eng_moved;

/* What the sync zones make of one IPU after a compute round. */
typedef enum eng_wait {
    ENG_WAIT_NONE,     /* no IPU-wide zone is complete (sync groups may be: see group[]) */
    ENG_WAIT_DONE,     /* every tile has halted */
    ENG_WAIT_IPU,      /* every tile waits at one IPU-wide zone (internal, internal_host) */
    ENG_WAIT_EXTERNAL, /* every tile waits at one external zone (GS1, GS2, with the host) */
} eng_wait;

/* A sync group whose tiles all wait at `group` or `group_host`. */
typedef struct eng_group_wait {
    uint32_t group;
    int host;         /* group_host: the host's copies come first */
    uint64_t at;      /* the group's latest arrival */
    uint64_t latency; /* the zone's release latency */
} eng_group_wait;

typedef struct eng_sync {
    eng_wait what;
    unsigned zone;    /* ENG_WAIT_IPU, ENG_WAIT_EXTERNAL: the zone */
    int host;         /* the zone takes the host's copies */
    uint64_t latency; /* cycles from the last arrival to the release, host copies aside */
    uint64_t at;      /* the latest arrival (or halt) of any tile of the IPU */
    uint64_t grp_at[ISA_NGROUPS]; /* the latest arrival (or halt) of each sync group's tiles,
                                   * 0 for a group without tiles */
    int runnable;                 /* some tile is still runnable */
    uint32_t ngroups;             /* ENG_WAIT_NONE: the complete sync groups, in group order */
    eng_group_wait group[ISA_NGROUPS];
} eng_sync;

/* The fabric's interface (bound to the engine's port "fabric"). */
typedef struct eng_fabric {
    void *ctx;
    /* Deliver the pending exchange of IPUs [lo, hi): on-chip streams, and streams between
     * IPUs too when `global` is set. ERR_OK, or ERR_FAULT (a receiver conflict). */
    int (*deliver)(void *ctx, const eng_xview *v, uint32_t lo, uint32_t hi, int global,
                   eng_moved *moved, err *e);
    /* Classify IPU c after a compute round. */
    void (*sync)(void *ctx, const chip *c, eng_sync *s);
    /* Report a deadlock (s[i]: IPU i's classification): always ERR_FAULT. */
    int (*deadlock)(void *ctx, chip *chips, const eng_sync *s, uint32_t nipus, err *e);
} eng_fabric;

/* One host copy (stream copy or remote-buffer copy) of one tile, as the host sees it. */
typedef struct eng_hcopy {
    uint32_t ipu, tile;
    uint8_t kind; /* TILE_HIN, TILE_HOUT, TILE_RBIN, TILE_RBOUT (hw/tile.h) */
    uint32_t id;  /* the stream, or the remote buffer */
    uint32_t bytes;
    uint32_t offset;    /* in the remote buffer */
    uint8_t *dst;       /* hin/rbin: where the bytes go (tile memory) */
    const uint8_t *src; /* hout/rbout: the bytes (copied when the instruction issued) */
} eng_hcopy;

/* What a host copy took, in tile cycles from the moment the tiles had all arrived. */
typedef struct eng_htime {
    uint64_t begin;  /* the IPU waited for the host (buffers not ready / no free slot) */
    uint64_t mid;    /* stream data moving over the host link */
    uint64_t remote; /* remote-buffer data moving (StreamCopyMidRemoteBuffer) */
    uint64_t end;    /* the IPU waited for the host to finish the copy (StreamCopyEnd) */
} eng_htime;

/* The host plugs in here (host/ builds one). `group` is the sync group of the tiles taking
 * part, or -1 for a whole IPU; `at` is their latest arrival. The host moves the data (fills
 * dst, takes src) and says how long it took. Without a host, a host copy is a fault. */
typedef struct eng_host {
    void *ctx;
    int (*copy)(void *ctx, uint32_t ipu, int group, uint64_t at, eng_hcopy *c, size_t n,
                eng_htime *t, err *e);
    /* Optional: every IPU has passed cycle `cycle` (an external sync released): no later copy
     * starts before it, so the host may forget its bookings before then. */
    void (*retire)(void *ctx, uint64_t cycle);
    /* Optional: every IPU and the host met at an external sync with the host
     * (`external_host`, `gs2_host`), released at `cycle`: the host has the IPUs' attention
     * (the end of a host call, when a program marks its calls with one). */
    void (*meet)(void *ctx, uint64_t cycle);
} eng_host;

/* The host memory a system of m's IPUs and tiles takes, in bytes, when every tile runs a small
 * program: each tile's state, its SRAM's first page and page tables (the estimate eng_new
 * checks against the memory this host has available, MemAvailable). */
uint64_t eng_host_bytes(const mach *m);

/* Build the engine as module "eng" under `parent` on kernel k (lazily mapped tile memory,
 * the thread pool, one release event per IPU, sync group and the system). NULL and e set on
 * failure. The system constructor (host/system.h) is the one caller. */
eng *eng_new(struct sim *k, struct sim_module *parent, const eng_cfg *cfg, err *e);
void eng_free(eng *g);

/* Load `prog` on every tile of every IPU (each tile reads its ids from control registers).
 * The engine keeps its own decoded copy of the text; prog may be freed afterwards. */
int eng_load(eng *g, const isa_prog *prog, err *e);

/* Load a program per tile: progs[ipu x tiles_per_ipu + tile]; NULL leaves that tile idle (it
 * holds nothing, never runs, and counts as arrived at every sync). Tiles given the same
 * program pointer share one decoded copy; the programs may be freed afterwards. */
int eng_load_tiles(eng *g, const isa_prog *const *progs, err *e);

/* The fused operations (isa/interp.h, ISA_FUSED_*) the programs loaded from now on may use:
 * ISA_FUSED_ALL (the default), or fewer for the differential tests (0: the base instructions
 * alone); no result depends on it. */
void eng_set_fused(eng *g, uint32_t fused);

/* Bytes of the program image loaded on a tile (0 for an idle tile): its memory in use. */
uint32_t eng_tile_image(const eng *g, uint32_t ipu, uint32_t tile);

/* Record the release cycles of the first `cap` whole-IPU syncs of IPU `ipu` (ENG_LOG_ALL:
 * of every IPU; any zone: internal, with the host, external) in the next run (cap 0: stop
 * recording); eng_sync_log gives an IPU's, in order, and their number. A per-step profile: a
 * graph's program steps each end with one such sync (workloads/graph/graph.h,
 * gr_exe_steps). */
#define ENG_LOG_ALL UINT32_MAX
void eng_log_syncs(eng *g, uint32_t ipu, size_t cap);
const uint64_t *eng_sync_log(const eng *g, uint32_t ipu, size_t *n);

/* The compute sets' tally: each IPU's cycles by category summed over the supersteps of each
 * class (a compiled graph's program steps of one name: workloads/graph/graph.h, gr_load).
 * Superstep k of IPU `ipu` (eng_settled.index) is of class of[k] (< nclass) for k < n; the
 * IPU's last record, from its last release to its halt, is the row "end", and a superstep
 * past the n the row "other". names (nclass) and of are copied. Set before the run; costs
 * an add per span the engine counts anyway. */
typedef struct eng_class_sum {
    const char *name;
    uint64_t supersteps;    /* the records of the class (the "end" row: 1) */
    uint64_t cat[ENG_NCAT]; /* their cycles by time category (Idle: none) */
} eng_class_sum;
void eng_class_steps(eng *g, uint32_t ipu, const uint32_t *of, size_t n, const char *const *names,
                     uint32_t nclass);
/* IPU ipu's rows (nclass + 2, *n), or NULL (*n 0) when none were set. Under several ranks
 * every IPU's, from its owner, once the run is over. */
const eng_class_sum *eng_class_sums(const eng *g, uint32_t ipu, uint32_t *n);

/* Run to completion. ERR_OK, or ERR_FAULT with "ipu I tile T ctx C pc P cycle N: reason",
 * or ERR_STOPPED when cfg.watch.stop was set (the run cannot go on; its statistics are those
 * of a run cut short). */
int eng_run(eng *g, err *e);

/* The engine's ports, for the system constructor to bind: "fabric" (interface "eng_fabric",
 * required) and "host" (interface "eng_host", optional: without it a host copy is a fault).
 * eng_run elaborates the kernel and reads both once. */
struct sim_port *eng_port_fabric(eng *g);
struct sim_port *eng_port_host(eng *g);

/* The IPUs [*lo, *hi) this rank steps (all of them for one rank): whole boxes of
 * m.ipus_per_box where the system is made of them (whole host-link groups with a host),
 * split as evenly as they go, the first ranks taking the most. */
void eng_owned(const eng *g, uint32_t *lo, uint32_t *hi);
/* The same for any rank r of the run's ranks. */
void eng_owned_by(const eng *g, unsigned r, uint32_t *lo, uint32_t *hi);
/* The run's ranks (eng_cfg.ranks: NULL for this process alone). */
struct rank_comm *eng_ranks(const eng *g);
/* The engine's host threads (hw/pool.h), lent to work between runs (a graph's assembly). */
struct pool *eng_pool(const eng *g);

/* Where one process stops at an error, with several ranks: after the compute rounds of the
 * releases at `cycle`, with the IPUs of the ranks below `settled` settled (one process
 * settles the IPUs in order after each round and stops at an error found there: the ranks
 * below the one that met it settle, and it settles up to the error; at a tile's fault it
 * settles none: settled 0). */
typedef struct eng_stop {
    uint64_t cycle;
    unsigned settled;
} eng_stop;

/* Several ranks, after eng_run returned an error met in a superstep (a tile's fault, an
 * exchange or host copy error found while settling): 1 and *at where one process stopped;
 * 0 otherwise (one rank, a deadlock, a stop). The ranks met only when none could go on, so a
 * rank may have run past that point; to report what one process reports, run the loaded
 * program again with eng_stop_at(at). */
int eng_fault_stop(const eng *g, eng_stop *at);
/* For the next eng_run of several ranks: carry out no release after at->cycle, and after the
 * compute rounds of the releases at that cycle meet the other ranks without settling (the
 * ranks below at->settled settle first): where one process stops. */
void eng_stop_at(eng *g, const eng_stop *at);

/* After a run of several ranks, make `len` bytes at `addr` of a tile's memory the same on
 * every rank (its owner's): a collective, every rank calls it with the same arguments. One
 * rank: nothing to do. */
void eng_share_mem(eng *g, uint32_t ipu, uint32_t tile, uint32_t addr, uint32_t len);

/* Results. */
/* (the statistics: eng_get_stats, eng_get_ipu_stats and their tables, hw/stats.h) */
const mach *eng_machine(const eng *g);
uint32_t eng_nipus(const eng *g);
uint32_t eng_ntiles(const eng *g);
unsigned eng_threads(const eng *g);
int eng_numa_nodes(const eng *g);
const tile *eng_tile(const eng *g, uint32_t ipu, uint32_t t);
/* Tile memory, for loaders and dumps (NULL when out of range). */
uint8_t *eng_tile_mem(eng *g, uint32_t ipu, uint32_t t);

#endif
