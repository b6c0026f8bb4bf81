/* wl_iobench: a device loop that exposes the host I/O trade-offs (prefetch depth, I/O
 * tiles, transfer precision, outfeed mode).
 *
 * Per step, each IPU streams in a micro-batch of images from its infeed, converts and
 * normalises them on the tiles (a codelet per dtype), does `work_macs` fp32 MACs per sample
 * on the AMP units, and streams results out as the outfeed mode says. Without I/O tiles the
 * stream copy is its own phase; with N I/O tiles (the last N of each IPU, sync group 1) the
 * next micro-batch lands on them during the compute, and an exchange compiled by
 * workloads/xcomp hands it to the compute tiles. Everything runs on the simulated tiles;
 * the host side is host/hio. */
#ifndef IPUSIM_WL_IOBENCH_H
#define IPUSIM_WL_IOBENCH_H

#include <stdint.h>

#include "host/system.h"

enum { IOB_FP32 = 0, IOB_FP16 = 1, IOB_INT8 = 2 };

typedef struct wl_iobench_cfg {
    uint32_t batch;     /* samples per micro-batch, per IPU */
    uint32_t sample_px; /* pixels per sample (784: 28 x 28) */
    int dtype;          /* IOB_FP32, IOB_FP16, IOB_INT8: the bytes on the link */
    uint64_t work_macs; /* fp32 MACs per sample on the device */
    uint32_t steps;     /* micro-batches per IPU */
    uint32_t io_tiles;  /* 0, or an even count of I/O tiles per IPU */
    strm_mode out_mode; /* outfeed mode */
    uint32_t out_n;     /* EveryN's n */
    uint32_t out_bytes; /* result bytes per sample (10 fp32 logits: 40) */
    host_cfg host;      /* loaders, preparation, callback, depth (buffer sizes are set here) */
    sim_time drain_ps;  /* outfeed: host time per buffer */
    unsigned threads;
    uint64_t max_cycles;
    sys_ctl ctl; /* a superstep limit, a stop flag (ERR_STOPPED), a heartbeat; zero: none */
    struct rank_comm *ranks; /* the run's MPI ranks (base/rank.h); NULL: this process alone */
} wl_iobench_cfg;

/* Defaults: batch 40, 784 px, fp32, 10,000 MACs/sample, 20 steps, no I/O tiles, outfeed all,
 * 40 B/sample, host_cfg_default(). */
wl_iobench_cfg wl_iobench_defaults(void);

/* A dtype by name ("fp32", "fp16", "int8"); -1 when unknown. */
int wl_iobench_dtype(const char *name);
const char *wl_iobench_dtype_name(int dtype);

/* Seed 001's rule of thumb for I/O tiles: 1.05 x bytes of one micro-batch / 624 kB, rounded
 * to a power of two (at least 2). */
uint32_t wl_iobench_rule_of_thumb(uint64_t batch_bytes);

typedef struct wl_iobench_result {
    uint64_t batch_bytes; /* bytes of one micro-batch on the link */
    uint32_t compute_tiles;
    uint64_t cycles;
    double seconds; /* simulated */
    double steps_per_s, samples_per_s;
    uint64_t cat[ENG_NCAT];   /* IPU 0's cycles by category */
    uint64_t io[3];           /* IPU 0's overlapped I/O-tile copies: begin, mid, end */
    uint64_t handover_cycles; /* planned cycles of one hand-over exchange (I/O tiles) */
    uint32_t rule_of_thumb;
} wl_iobench_result;

/* Build, run and measure. ERR_INPUT for bad configurations (one line, e.g. I/O tiles that
 * cannot hold a micro-batch: the message gives the rule-of-thumb count). *out gets the
 * system for reports (its engine and host; the caller frees it with sys_free). */
int wl_iobench_run(const mach *m, const wl_iobench_cfg *c, wl_iobench_result *r, sys **out, err *e);

#endif
