/* strm: infeed and outfeed streams — the host side of a ring of D buffers (docs/host.md).
 *
 * Infeed (host -> IPU). Buffer k (k = 0, 1, 2, ... in the order the device consumes them) is
 * requested from the host at
 *
 *     D >= 2 (prefetch):     R_k = 0 for k < D,  R_k = release of buffer k - D otherwise;
 *     D = 1  (no prefetch):  R_k = the time the device reaches the stream copy of buffer k;
 *
 * (and never before R_{k-1}: the host serves requests in order). The host starts filling it
 * one callback latency later, F_k = R_k + callback_ps, and queues its samples_per_buffer
 * samples. A pool of `loaders` workers shared by all the stream's buffers takes the queued
 * samples in order (FIFO by sample), each taking its next free worker for a random
 * preparation time (host_prep); the buffer is ready at R'_k = when its last sample is done:
 *
 *     sample n of buffer k:  start_n = max(F_k, earliest free worker), done_n = start_n + p_n,
 *                            that worker is free again at done_n;   ready_k = max_n done_n.
 *
 * This is the exact event-by-event result of a FIFO multi-server queue (no kernel needed;
 * tests/test_host.c checks it against loader processes on the kernel). The device's copy of
 * buffer k starts at max(ready_k, device_at_k): StreamCopyBegin = max(0, ready_k -
 * device_at_k), StreamCopyMid = the transfer, and the buffer is released when its transfer
 * ends. With D >= 2 the host works up to D buffers ahead of the device; with D = 1 every copy
 * waits at least callback_ps + the fill time.
 *
 * Outfeed (IPU -> host). A ring of D host-side buffers. The device's copy of buffer k needs a
 * free one: it starts at max(device_at_k, drained_{k-D}) (no wait for k < D), where the host
 * drains buffers one at a time in order, starting callback_ps after a transfer ends:
 *
 *     drained_k = max(end_k + callback_ps, drained_{k-1}) + drain_ps.
 *
 * A host that drains slower than the device produces fills the ring and, after D buffers,
 * holds every copy back by the difference.
 *
 * Calls come in buffer order: strm_in_ready with non-decreasing k, each buffer released once,
 * in order, and buffer k - D released before strm_in_ready(k) (the ring has no room for k
 * until then; D = 1: buffer k - 1); likewise strm_out_slot / strm_out_done. Breaking that is
 * a simulator bug (assert). Memory per stream is O(D + loaders), however long the run. */
#ifndef IPUSIM_STRM_H
#define IPUSIM_STRM_H

#include <stdbool.h>
#include <stdint.h>

#include "host/host.h"

typedef enum strm_kind { STRM_IN = 0, STRM_OUT = 1 } strm_kind;

typedef struct strm strm;

/* A stream with config c (checked: NULL and ERR_INPUT with host_cfg_check's message when
 * bad). id tells streams apart: it is mixed into the seed, so two streams of one config draw
 * different preparation times. */
strm *strm_new(const host_cfg *c, strm_kind kind, uint32_t id, err *e);
void strm_free(strm *s);

const host_cfg *strm_cfg(const strm *s);
strm_kind strm_kind_of(const strm *s);

/* ---- Infeed ----------------------------------------------------------------------------- */

/* When buffer k is ready, given that the device reached its copy at device_at (used for the
 * request time when D = 1, and for the Begin statistic). Asking again for the same k gives
 * the same answer (device_at is then updated for the statistics). */
sim_time strm_in_ready(strm *s, uint64_t k, sim_time device_at);

/* The device has consumed buffer k: its transfer ended at t. Counts the buffer's Begin and
 * Mid (t - max(ready, device_at)) in the statistics. */
void strm_in_release(strm *s, uint64_t k, sim_time t);

/* What the host did for buffer k (still in the ring: one of the last D asked for): request,
 * fill start (request + callback) and ready times. false if k is not there. */
typedef struct strm_buf {
    sim_time request, fill, ready;
} strm_buf;
bool strm_in_buffer(const strm *s, uint64_t k, strm_buf *out);

/* ---- Outfeed ---------------------------------------------------------------------------- */

/* When the device's copy of buffer k may start: max(device_at, drained_{k-D}). */
sim_time strm_out_slot(strm *s, uint64_t k, sim_time device_at);

/* The transfer of buffer k ended at t: the host drains it (see above). Counts Begin (slot
 * wait) and Mid in the statistics. */
void strm_out_done(strm *s, uint64_t k, sim_time t);

/* When the host has drained buffer k (among the last D done), or SIM_FOREVER if not known. */
sim_time strm_out_drained(const strm *s, uint64_t k);

/* ---- A whole copy, as the device sees it -------------------------------------------------- */

typedef struct strm_copy {
    sim_time device_at; /* the device reached the copy */
    sim_time ready;     /* infeed: the buffer was ready; outfeed: a host buffer was free */
    sim_time start;     /* max(device_at, ready): the first byte leaves */
    sim_time end;       /* the last byte has arrived (latency included) */
    sim_time begin;     /* StreamCopyBegin: start - device_at */
    sim_time mid;       /* StreamCopyMid: end - start */
} strm_copy;

/* Buffer k of an infeed, copied to `ipu` over h's host link: strm_in_ready, then
 * host_link_transfer(bytes_per_buffer, cap), then strm_in_release at its end. */
strm_copy strm_in_copy(strm *s, host *h, uint32_t ipu, uint64_t k, sim_time device_at,
                       uint64_t max_bytes_per_s);

/* Buffer k of an outfeed from `ipu`: strm_out_slot, host_link_transfer, strm_out_done. */
strm_copy strm_out_copy(strm *s, host *h, uint32_t ipu, uint64_t k, sim_time device_at,
                        uint64_t max_bytes_per_s);

/* StreamCopyEnd is the engine's (e.g. the host sync after a copy): it adds it here so the
 * stream's statistics hold all three phases. */
void strm_add_end(strm *s, sim_time end_ps);

/* ---- Outfeed modes ------------------------------------------------------------------------ */

/* What an outfeed returns over a run of I device iterations (docs/sources.md, Host I/O;
 * training defaults to Final, inference to All). */
typedef enum strm_mode {
    STRM_ALL = 0,    /* every iteration's result: I copies */
    STRM_FINAL = 1,  /* the last iteration's only: 1 copy, at i = I - 1 */
    STRM_SUM = 2,    /* the sum over iterations, accumulated on the device: 1 copy, at I - 1 */
    STRM_EVERYN = 3, /* every n-th: at i = n-1, 2n-1, ...: floor(I / n) copies */
} strm_mode;

/* "all", "final", "sum" or "every:N" (N >= 1). ERR_INPUT, one line, for anything else:
 * "outfeed mode 'some': unknown (all, final, sum or every:N)". *n is 1 unless every:N. */
int strm_mode_parse(const char *text, strm_mode *mode, uint32_t *n, err *e);
const char *strm_mode_name(strm_mode mode); /* "all", "final", "sum", "every" */
/* The mode as strm_mode_parse reads it: "all", "final", "sum", "every:N". Returns buf. */
char *strm_mode_format(strm_mode mode, uint32_t n, char *buf, size_t len);

/* Bytes the device copies out at iteration i (0-based) of iters: bytes if this iteration
 * copies a buffer out in this mode, 0 if not. */
uint64_t strm_outfeed_copies(strm_mode mode, uint32_t n, uint64_t iters, uint64_t i,
                             uint64_t bytes);

/* How many copies a run of iters iterations makes. */
uint64_t strm_outfeed_count(strm_mode mode, uint32_t n, uint64_t iters);

/* ---- Statistics ---------------------------------------------------------------------------- */

typedef enum strm_stat_id {
    STRM_BUFFERS,      /* buffers copied (released / done) */
    STRM_BYTES,        /* bytes_per_buffer x buffers */
    STRM_BEGIN_PS,     /* StreamCopyBegin, summed */
    STRM_BEGIN_MAX_PS, /* the longest single Begin */
    STRM_WAITS,        /* copies with Begin > 0 */
    STRM_MID_PS,       /* StreamCopyMid, summed */
    STRM_END_PS,       /* StreamCopyEnd, summed (strm_add_end) */
    STRM_SAMPLES,      /* infeed: samples prepared */
    STRM_PREP_PS,      /* infeed: preparation times, summed (loader busy time) */
    STRM_FILL_PS,      /* infeed: fill start to ready, summed over buffers */
    STRM_DRAIN_PS,     /* outfeed: host drain time, summed */
    STRM_NSTAT
} strm_stat_id;

uint64_t strm_stat(const strm *s, strm_stat_id id);

typedef struct strm_stat_info {
    const char *name; /* JSON key / CSV column */
    const char *unit;
    const char *meaning;
} strm_stat_info;
const strm_stat_info *strm_stat_table(void); /* STRM_NSTAT rows in strm_stat_id order */

#endif
