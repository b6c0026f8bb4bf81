/* engine_int: the engine's private layout, shared by its files, and the small interfaces
 * between them. Calls between the files run one way: engine.c calls engine_rank.c,
 * engine_host.c and engine_report.c; engine_rank.c calls engine_report.c; engine_stats.c
 * reads the layout and engine.h's accessors (engine.c); nothing calls back. */
#ifndef IPUSIM_ENGINE_INT_H
#define IPUSIM_ENGINE_INT_H

#include "base/text.h"
#include "hw/engine.h"
#include "hw/pool.h"
#include "hw/sim.h"

/* A release: a timed event on the kernel, and the process it triggers to carry it out. The
 * kernel holds whether and when it is pending (sim_event_pending, sim_next_time). */
typedef struct release {
    struct eng *g;
    int ipu;        /* -1: every IPU (external sync) */
    int group;      /* -1: every tile of the IPU(s); else one sync group */
    uint64_t cycle; /* while pending: the cycle the tiles resume at (the event's time) */
    sim_event *ev;  /* notified for the release's time; its process carries it out */
} release;

/* eng_class_steps of one IPU: each superstep's class, and the rows (nclass + 2). */
typedef struct eng_classes {
    uint32_t *of;
    size_t n;
    uint32_t nclass;
    eng_class_sum *sum;
} eng_classes;

struct eng {
    eng_cfg cfg;
    mach m;
    uint32_t nipus, ntiles;
    chip *chips;
    pool *pool;
    sim *k;          /* the system's kernel (not owned) */
    sim_module *mod; /* "eng" */
    int loaded;
    isa_insn **codes; /* the decoded text of each distinct program loaded */
    size_t ncodes;
    tile_cfg tcfg;
    tile **run; /* the runnable tiles: those the next round runs */
    size_t nrun;
    release *rel;                     /* the releases: [ipu * (ISA_NGROUPS + 1) + group + 1], then
                             one for external at [nipus * (ISA_NGROUPS + 1)] */
    uint64_t *last;                   /* per IPU: the cycle its last IPU-wide superstep began */
    uint64_t (*pend)[ISA_NGROUPS][3]; /* per IPU and sync group: its host copies (begin, mid,
                                       * end + sync) since then */
    uint8_t *done;                    /* per IPU: all tiles halted */
    uint64_t rounds;
    uint64_t last_ns; /* host time the last compute round took */
    int faulted;      /* some tile faulted since the program was loaded */
    int park;         /* releases may park tiles (park.h): nothing reads tiles between supersteps */
    uint32_t fused;   /* the fused operations loaded code may use (eng_set_fused) */
    /* eng_log_syncs: release cycles of whole-IPU syncs, in order, sync_cap per IPU (of IPU
     * sync_ipu, or of every IPU), sync_n[i] of IPU i so far */
    uint64_t *sync_log;
    size_t sync_cap, *sync_n;
    uint32_t sync_ipu;
    eng_classes *cls;          /* per IPU, eng_class_steps (NULL: none set) */
    uint64_t beat_at;          /* host time (ns, monotonic) from which the next heartbeat is due */
    uint64_t beat_cycle;       /* the latest cycle a heartbeat reported (it never goes back) */
    sim_port *pfabric, *phost; /* "fabric", "host" */
    eng_fabric fabric;         /* read from the ports at eng_run */
    eng_host host;
    int has_host;
    eng_ipu_stats *ipu;      /* per IPU */
    eng_sync *sync;          /* per IPU: what the zones made of it after the last round */
    struct rank_comm *ranks; /* cfg.ranks: NULL or one rank, or several (engine_rank.c) */
    uint32_t lo, hi;         /* the IPUs this rank steps */
    uint64_t now;            /* the cycle of the releases carried out last (0 at the start) */
    eng_stop stop;           /* eng_stop_at (cycle UINT64_MAX: none) */
    eng_stop fault;          /* eng_fault_stop: where one process met the ranks' error */
    uint32_t past_first[2];  /* this rank's superstep fault (ipu, tile), for the meeting */
};

/* ---- reports naming tiles (engine_report.c; it calls none of the files below) ---- */

enum { NAMED_TILES = 8, NAMED_IPUS = 8 }; /* tiles, IPUs a report names; the rest counted */

/* "ipu I: tiles ... still computing, K waiting at syncs[, H halted][, F faulted]". */
void eng_ipu_state(txt *b, const struct eng *g, uint32_t i);

/* Whether the tile faulted past the superstep limit. */
int eng_past_superstep(const tile *x);

/* A superstep fault's others past the limit: a line "ipu I tiles ..." for each of IPUs
 * [lo, hi) with tiles past it, but tile first_tile of IPU first_ipu; and the fault message's
 * part for such lines ("; also past it: ...", NAMED_IPUS of them named). */
void eng_past_lines(const struct eng *g, uint32_t lo, uint32_t hi, uint32_t first_ipu,
                    uint32_t first_tile, txt *out);
void eng_past_text(txt *b, const char *lines);

/* After a superstep fault of `first`: "; also past it: ipu I tiles ..." for the others (with
 * several ranks, the meeting adds every rank's: eng_rank_meet). */
void eng_also_past(txt *b, const struct eng *g, const tile *first);

/* ---- several ranks (engine_rank.c; engine.c calls it, it calls only engine_report.c) ---- */

/* The IPUs of rank `id` of `size`, in whole boxes where there are boxes (whole host-link
 * groups at least when `whole_links`). */
void eng_rank_share(const mach *m, uint32_t nipus, int whole_links, unsigned id, unsigned size,
                    uint32_t *lo, uint32_t *hi);

/* Every rank brings its rc (its error in e) and a value *v (every rank calls it). Every rank
 * returns the same: the error of the lowest rank that has one (its IPUs come first, so one
 * process meets it first), set in e, or ERR_OK with *v the largest of the values. */
int eng_rank_agree(struct eng *g, int rc, uint64_t *v, err *e);

/* This rank can go no further alone: `rc` (ERR_OK, or its own error in e, with fault_at
 * the start of the superstep it happened in and its cycle) and its IPUs' classifications
 * meet every other rank's. Every rank then returns the same: the earliest error (by
 * superstep start, cycle, then rank), or ERR_OK with
 * g->sync and g->done holding every IPU's state and *decide set to what the whole system
 * does: ENG_WAIT_DONE (every IPU halted), ENG_WAIT_EXTERNAL (every IPU waits at one
 * external zone, latest arrival *at), ENG_WAIT_NONE (a deadlock). */
int eng_rank_meet(struct eng *g, int rc, const uint64_t fault_at[2], eng_wait *decide, uint64_t *at,
                  err *e);

/* Before a deadlock report with several ranks: every tile's state and sync zone from its
 * IPU's owner (what the fabric's report reads), on every rank. */
void eng_rank_states(struct eng *g);

/* At the end of a run of several ranks: every IPU's statistics (supersteps, finish, time
 * split, and its tiles' counters) from its owner, on every rank. */
void eng_rank_results(struct eng *g);

/* ---- host copies (engine_host.c; engine.c calls it, it calls none of the engine's files) ---- */

/* Carry out the host copies of the tiles of IPU `ipu` (group -1: all its tiles; else those
 * in the sync group) that arrived by `at`: ERR_OK with *t filled (zero when there were
 * none), or ERR_FAULT. */
int eng_host_copy(struct eng *g, uint32_t ipu, int group, uint64_t at, eng_htime *t, err *e);

#endif
