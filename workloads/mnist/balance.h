/* mbal: a pipeline's placement chosen from measured stage cycles (docs/pipelining.md,
 * "Balancing from measurements"). A placement of a network's B blocks over IPUs is a set of
 * cuts (the IPU changes after block c), its stages the runs of blocks between them. The cost
 * of a placement is its main pipeline step: the slowest stage's passes, then the Copy of
 * every crossing (mnet_pipe_steps).
 *
 * The model. A stage's passes are a sequence of program steps, each ending in a sync, so
 * their cycles add; each step belongs to one of the stage's blocks (by the layer its name
 * starts with; a step named after a layer of another stage, such as the copy a stage leaves
 * for the next one's input, to the stage's block nearest that layer; any other, such as the
 * stash or the labels, to the stage's first block). What a block's steps cost depends on its
 * neighbourhood alone: whether its input crossed (a cut before it), whether its output
 * crosses (a cut after it) and whether it is in the last stage (whose pass is fused): its
 * key, one of MBAL_KEYS. A stage's work is the sum over its blocks of their cost under their
 * keys; the Copy, the sum over the cuts of each cut's Copy alone. Both are measured: a few
 * pipelined runs (the calibration, chosen so that every key any candidate placement gives
 * is seen, and every cut alone) are simulated, and each block's steps in their main
 * pipeline step are added up per key. A calibration run whose graph does not fit the tiles'
 * SRAM is no candidate (its message, naming the IPU and tile, is kept).
 *
 * Left out: the memory of a placement never compiled (the run's compile says, naming the
 * IPU and tile, where the chosen one does not fit); costs that depend on blocks two away or more (none in the
 * networks here, as far as the tests' placements show); fill, flush and the weight update
 * (the main step is the rate at which micro-batches pass). Nothing here prints. */
#ifndef IPUSIM_MNIST_BALANCE_H
#define IPUSIM_MNIST_BALANCE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "hw/machine.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/mnet.h"
#include "workloads/mnist/spec.h"

/* A placement: bit c - 1 set when block c (from 1) and block c + 1 are on different IPUs. */
typedef uint32_t mbal_cuts;

/* A block's neighbourhood in a placement. */
typedef enum mbal_key {
    MBAL_ALONE,     /* neither its input nor its output crosses, not in the last stage */
    MBAL_SENDS,     /* its output crosses (the last block of a stage, not the last stage) */
    MBAL_TAKES,     /* its input crossed (the first block of a middle stage) */
    MBAL_BOTH,      /* a middle stage of this block alone */
    MBAL_LAST,      /* in the last stage, not its first block */
    MBAL_LAST_TAKE, /* the first block of the last stage */
    MBAL_KEYS
} mbal_key;

/* "alone", "sends", ... as the search's table names them. */
const char *mbal_key_name(mbal_key k);
/* Block b's (from 1, of B) key in placement p. */
mbal_key mbal_key_of(mbal_cuts p, int B, int b);
/* The stages of p. */
uint32_t mbal_stages(mbal_cuts p);
/* Each block's IPU (stage_ipu[0 .. B)) in p; and p from them (the IPUs in order). */
void mbal_to_ipus(mbal_cuts p, int B, uint32_t *stage_ipu);
mbal_cuts mbal_from_ipus(const uint32_t *stage_ipu, int B);
/* "0,0,1,1". */
const char *mbal_text(mbal_cuts p, int B, char *buf, size_t len);

/* The stage counts a placement may have: ok[s] for s = 0 .. MSPEC_MAX_BLOCKS. */
typedef struct mbal_counts {
    uint8_t ok[MSPEC_MAX_BLOCKS + 1];
} mbal_counts;

/* The stage counts 2 .. most (most at most B) that a system of m's kind can be (a machine of
 * that many IPUs: an m2000 below one box only a power of two, a ladder only even). */
mbal_counts mbal_counts_of(const mach *m, int B, uint32_t most);

enum { MBAL_MAX_RUNS = 128 }; /* placements of up to 8 blocks */

/* One calibration run as simulated. */
typedef struct mbal_run {
    mbal_cuts p;
    mnet_pipe_steps m; /* its steps (the main step's cycles, each IPU's work, the Copy) */
} mbal_run;

/* What the calibration measured. */
typedef struct mbal_cal {
    int B;
    uint64_t work[MSPEC_MAX_BLOCKS][MBAL_KEYS]; /* a block's steps in a main step, per key */
    uint8_t seen[MSPEC_MAX_BLOCKS][MBAL_KEYS];
    uint64_t copy[MSPEC_MAX_BLOCKS]; /* the Copy of the placement cutting after block c + 1
                                      * alone */
    uint8_t copy_seen[MSPEC_MAX_BLOCKS];
    size_t nruns;
    mbal_run run[MBAL_MAX_RUNS];
    size_t nunfit; /* placements whose graph did not fit, and the compile's message */
    mbal_cuts unfit[MBAL_MAX_RUNS];
    char why[MBAL_MAX_RUNS][256];
} mbal_cal;

/* The next calibration run for the stage counts n allows, given what c holds (its B set):
 * 1 and *p, or 0 when it has all it needs. First every cut alone (its Copy), then the
 * placement giving the most keys not yet seen, plus one where it would give a cut's Copy not
 * yet known (a cut whose run alone did not fit: exactly one of the placement's cuts unknown),
 * of the placements still candidates (ties: fewer stages, then the lower number), never one
 * already run or found not to fit. */
int mbal_next(const mbal_cal *c, const mbal_counts *n, mbal_cuts *p);

/* Record that placement p does not fit (why: the compile's message). */
void mbal_unfit(mbal_cal *c, mbal_cuts p, const char *why);

/* Add the run of placement p of net (the engine g ran graph x; pi its pipeline) to c:
 * ERR_OK, or ERR_INPUT when its sync logs end before its main step or it has none. */
int mbal_record(mbal_cal *c, const mspec *net, mbal_cuts p, const eng *g, const gr_exe *x,
                const mnet_pipe_info *pi, err *e);

/* A placement's estimate. */
typedef struct mbal_est {
    mbal_cuts p;
    uint32_t stages;
    uint64_t work[MSPEC_MAX_BLOCKS]; /* each stage's passes in the main step */
    uint64_t copy, step;             /* the Copy; the main step: slowest work + copy */
    int slowest;                     /* the stage setting the pace */
    const mbal_run *run;             /* the calibration's run of p, or NULL */
} mbal_est;

/* The estimate of p from c: ERR_OK, or ERR_INPUT when c has not seen a key p needs or a
 * Copy it crosses (a cut's Copy comes from its run alone, or, where that did not fit, from a
 * run holding it whose other cuts are known: that run's Copy less theirs). */
/* The Copy of the cut after block `cut` (from 1): from its run alone (*run = SIZE_MAX), or
 * else from calibration run *run, the first holding it whose other cuts' Copies were measured
 * alone (its Copy less theirs, at least 0). 1, or 0 when neither is. */
int mbal_cut_copy(const mbal_cal *c, int cut, uint64_t *v, size_t *run);

int mbal_estimate(const mbal_cal *c, mbal_cuts p, mbal_est *out, err *e);

/* A placement's expected main step: its calibration run's, where it was simulated (x->run),
 * else its estimate. */
uint64_t mbal_expected(const mbal_est *x);

/* Every placement of the stage counts n allows that c can estimate and has not found not to
 * fit, by expected main step (mbal_expected: a run ranks by what it simulated), fastest
 * first (ties: fewer stages, then the placement's number); returns how many (at most
 * MBAL_MAX_RUNS). */
size_t mbal_search(const mbal_cal *c, const mbal_counts *n, mbal_est *out);

/* The configuration of a calibration run of placement p from c: one pipelined device
 * iteration of one replica over p's IPUs, its steps logged (mnet_cfg.log_steps). */
mnet_cfg mbal_run_cfg(const mnet_cfg *c, mbal_cuts p);

/* Run the calibration of configuration c (the network, machine, batch, G, schedule, threads as
 * given; one device iteration of batch x G images of train from params, which are not
 * changed) for the stage counts n allows, into cal (mbal_next's runs), then simulate the
 * placement mbal_search ranks first until it is a run (a run ranks by its simulated main
 * step; one that does not fit drops out; a key keeps its first measurement): the chosen is
 * the fastest simulated placement, and no estimate is faster. `done` (if any) is called after each
 * run with it (r) or, for a placement whose graph does not fit, NULL and the placement.
 * ERR_OK, or the failing run's error. */
int mbal_calibrate(const mnet_cfg *c, const mbal_counts *n, const mdata_split *train,
                   const float *params, mbal_cal *cal,
                   void (*done)(void *ctx, const mbal_cal *cal, const mbal_run *r, mbal_cuts p),
                   void *ctx, err *e);

#endif
