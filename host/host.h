/* host: the host as the IPUs see it — its link to the IPUs, remote buffers, and the run options
 * of its data loaders (docs/host.md gives the equations and a worked example).
 *
 * Two halves:
 *
 * 1. host_cfg: run options, not machine parameters. How many data-loader workers feed a
 *    stream, how long a sample takes to prepare (a mean and a seeded distribution: fixed,
 *    uniform, exponential, or bursty), the callback latency, the buffering (prefetch) depth,
 *    and the buffer geometry. host_cfg_check validates it with one-line messages; the streams
 *    of strm.h run on it.
 *
 * 2. host: the host link and remote buffers of a machine (the [host] section of the preset).
 *    IPUs form groups of mach.host_link_ipus (IPU i is in group i / host_link_ipus). Each
 *    group has one host link (one capacity per direction, full duplex) and one remote memory
 *    (one capacity, reads and writes together); each IPU has its own attachment (its PCIe
 *    link, one capacity per direction). A transfer crosses a path of these resources:
 *
 *        stream copy,   host -> IPU or IPU -> host:   IPU port[dir], group link[dir]
 *        remote buffer, remote_at = gateway (Mk2):    IPU port[dir], group memory
 *        remote buffer, remote_at = host (Mk1):       IPU port[dir], group link[dir], memory
 *
 *    and, per transfer, an optional cap (max_bytes_per_s: the engine's receiving-tiles bound).
 *    Each resource keeps the bandwidth already booked over time (a piecewise-constant
 *    profile). A call moves its transfers as fluid flows over what earlier calls left: the
 *    transfers of one call (host_transfer_batch) share every resource max-min fairly among
 *    themselves, rates changing whenever one starts or ends; then they are booked. Transfers
 *    booked by earlier calls are never slowed by later ones (first come, first served between
 *    calls), so every answer is final when returned, no resource ever carries more than its
 *    capacity, and results depend only on the calls and their order. Give the transfers that
 *    happen together (all IPUs' copies at one host sync) in one batch to share fairly; one at
 *    a time, the first takes all it can and the next what is left. Alone on its path, a
 *    transfer of B bytes from `start` ends at
 *
 *        start + latency + ceil(B x 10^12 / min(port, link, cap)) ps.
 *
 *    On Mk2 (22.5 GB/s host link for four IPUs, 13.39 GB/s per IPU port) four IPUs streaming
 *    in one batch get 5.625 GB/s each and end together; one by one the first gets 13.39, the
 *    second the 9.11 left, and so on; either way the box moves 22.5 GB/s while all four run.
 *
 * All times are integer picoseconds (sim_time), all rates and bookings integer bytes per
 * second (fabric/flow.h shares them out in units of 1/720720 B/s); the arithmetic is exact
 * (128-bit), so results are bit-identical from run to run. There are no
 * globals: build as many hosts as you like. Nothing here prints. */
#ifndef IPUSIM_HOST_H
#define IPUSIM_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/rng.h"
#include "hw/machine.h"
#include "hw/sim.h"

/* ---- Run options: data loaders, prefetch, buffers ----------------------------------------- */

/* How long one sample takes to prepare, around the mean host_cfg.prep_ps. */
typedef enum host_dist_kind {
    HOST_FIXED = 0,   /* always the mean */
    HOST_UNIFORM = 1, /* uniform on mean x [1 - spread, 1 + spread] */
    HOST_EXP = 2,     /* exponential with that mean (memoryless: many short, a few long) */
    HOST_BURSTY = 3,  /* fast on average with bursts: at a sample outside a burst, a burst of
                       * `len` consecutive samples starts with probability p; a sample in a
                       * burst takes k x base, any other base, with base set so that the mean is
                       * prep_ps (see host_dist_base). len = 1: isolated slow samples;
                       * len = a few buffers' worth: the host stalls now and then (a two-state
                       * on/off host with geometric off periods and fixed on periods). */
} host_dist_kind;

typedef struct host_dist {
    host_dist_kind kind;
    double spread; /* HOST_UNIFORM: half-width as a fraction of the mean, 0 to 1 */
    double p;      /* HOST_BURSTY: probability a burst starts at a sample, 0 to 1 (excluded) */
    double k;      /* HOST_BURSTY: slowdown of a sample in a burst, >= 1 */
    uint32_t len;  /* HOST_BURSTY: samples in one burst, >= 1 */
} host_dist;

typedef struct host_cfg {
    uint32_t loaders;            /* data-loader workers per stream, >= 1 */
    sim_time prep_ps;            /* mean preparation time of one sample (0: instant) */
    host_dist dist;              /* its distribution */
    uint64_t seed;               /* random stream; mixed with the stream id in strm_new */
    sim_time callback_ps;        /* the IPU asks for a buffer -> the host starts filling it */
    uint32_t depth;              /* buffering (prefetch) depth D, 1 to HOST_MAX_DEPTH */
    uint32_t samples_per_buffer; /* samples in one buffer (one stream copy), >= 1 */
    uint64_t bytes_per_buffer;   /* bytes one stream copy moves */
    sim_time drain_ps;           /* outfeed: host time to consume one buffer after it landed */
} host_cfg;

/* TensorFlow's IPUInfeedQueue allows 1 to 255 (docs/sources.md, Host I/O) */
enum { HOST_MAX_DEPTH = 255 };

/* The defaults, each an assumption docs/host.md explains: 1 loader, 10 us per sample, fixed,
 * seed 1, callback 5 us, depth 1 (Poplar's default), 1 sample of 0 bytes per buffer, drain 0. */
host_cfg host_cfg_default(void);

/* ERR_OK, or ERR_INPUT with one line naming the option and its allowed range, e.g.
 * "host: depth 0 is out of range (1 to 255)". */
int host_cfg_check(const host_cfg *c, err *e);

/* Parse a distribution: "fixed", "uniform:SPREAD", "exp", "bursty:P:K" or "bursty:P:K:LEN"
 * (P a probability, K a slowdown, LEN samples; decimals allowed for P, K, SPREAD). On error
 * (ERR_INPUT, one line: "host dist 'bursty:2:3': P must be at least 0 and below 1") *d is
 * unchanged. host_dist_format writes the same syntax back. */
int host_dist_parse(host_dist *d, const char *text, err *e);
char *host_dist_format(const host_dist *d, char *buf, size_t len);

/* The base time of a bursty distribution (the time of a sample outside a burst):
 * mean / (1 + f (k - 1)) with f = p len / (1 - p + p len) the long-run fraction of samples in
 * bursts; the mean itself for the other kinds. Rounded to the nearest ps. */
sim_time host_dist_base(const host_dist *d, sim_time mean);

/* A seeded source of preparation times (xoshiro256** seeded by splitmix64): the n-th call to
 * host_prep_next gives sample n's time. Same (cfg, id) -> same sequence. */
typedef struct host_prep {
    host_dist dist;
    sim_time mean, base;
    rng rng;
    uint32_t burst_left; /* HOST_BURSTY: samples left in the current burst */
} host_prep;

void host_prep_init(host_prep *g, const host_cfg *c, uint64_t id);
sim_time host_prep_next(host_prep *g);

/* ---- The host link and remote buffers --------------------------------------------------- */

typedef enum host_dir {
    HOST_IN = 0,  /* host (or remote memory) -> IPU */
    HOST_OUT = 1, /* IPU -> host (or remote memory) */
} host_dir;

typedef struct host host;

/* A host for m->nipus IPUs with the [host] parameters of m (copied). ERR_INPUT if m fails
 * mach_check. */
host *host_new(const mach *m, err *e);
void host_free(host *h);

uint32_t host_ngroups(const host *h);             /* ceil(nipus / host_link_ipus) */
uint32_t host_group(const host *h, uint32_t ipu); /* ipu / host_link_ipus */

/* One transfer, for host_transfer_batch. */
typedef struct host_xfer {
    uint32_t ipu;
    host_dir dir;
    int remote; /* 0: stream copy over the host link; 1: remote-buffer copy */
    uint64_t bytes;
    sim_time start;           /* its first byte may leave */
    uint64_t max_bytes_per_s; /* its own rate cap (the receiving tiles' bound); 0: none */
    sim_time end;             /* out: its last byte has arrived (latency included) */
} host_xfer;

/* Move n transfers that share fairly (see above), filling each end. Asserts every ipu <
 * nipus and every start >= the retire horizon. Zero bytes arrive at start + latency and book
 * nothing. */
void host_transfer_batch(host *h, host_xfer *x, size_t n);

/* A stream copy of `bytes` over the host link, its first byte leaving at `start`, alone in its
 * batch: returns the time its last byte has arrived. max_bytes_per_s: as in host_xfer. */
sim_time host_link_transfer(host *h, uint32_t ipu, host_dir dir, uint64_t bytes, sim_time start,
                            uint64_t max_bytes_per_s);

/* A remote-buffer copy (Streaming Memory or host memory, per remote_at), the same way, with
 * remote_latency_ns. HOST_IN reads the remote buffer into the IPU, HOST_OUT writes it. */
sim_time host_remote_transfer(host *h, uint32_t ipu, host_dir dir, uint64_t bytes, sim_time start,
                              uint64_t max_bytes_per_s);

/* What a transfer would take alone on an idle path (no booking): latency + drain time. For
 * planning (e.g. whether a copy fits under a compute superstep). remote: 0 link, 1 remote. */
sim_time host_alone_time(const host *h, int remote, uint64_t bytes, uint64_t max_bytes_per_s);

/* Promise that no later transfer starts before t: the booking history before t is dropped
 * (memory stays bounded on long runs). Call it at points every IPU has passed (a sync). */
void host_retire(host *h, sim_time t);

/* ---- Statistics (docs/host.md) ---------------------------------------------------------- */

/* Per IPU, summed over its transfers. "time" is a transfer's start to its end (latency
 * included), summed; "busy" is the time its port carried data in that direction (union of
 * the drain intervals of its link and remote transfers). */
typedef enum host_stat_id {
    HOST_LINK_IN_BYTES,
    HOST_LINK_OUT_BYTES,
    HOST_LINK_IN_COPIES,
    HOST_LINK_OUT_COPIES,
    HOST_LINK_IN_PS,
    HOST_LINK_OUT_PS,
    HOST_REMOTE_IN_BYTES,
    HOST_REMOTE_OUT_BYTES,
    HOST_REMOTE_IN_COPIES,
    HOST_REMOTE_OUT_COPIES,
    HOST_REMOTE_IN_PS,
    HOST_REMOTE_OUT_PS,
    HOST_PORT_IN_BUSY_PS,
    HOST_PORT_OUT_BUSY_PS,
    HOST_NSTAT
} host_stat_id;

uint64_t host_stat(const host *h, uint32_t ipu, host_stat_id id);

/* Per group: the time its host link carried data, per direction, and its remote memory. */
sim_time host_link_busy(const host *h, uint32_t group, host_dir dir);
sim_time host_remote_busy(const host *h, uint32_t group);

/* Zero every statistic (bookings stay). */
void host_stats_reset(host *h);

/* The statistics table (HOST_NSTAT rows in host_stat_id order): names, units, meanings, for
 * reports, JSON and CSV columns. */
typedef struct host_stat_info {
    const char *name; /* JSON key / CSV column */
    const char *unit; /* "B", "copies", "ps" */
    const char *meaning;
} host_stat_info;
const host_stat_info *host_stat_table(void);

#endif
