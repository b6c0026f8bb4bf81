/* xchg: the exchange fabric's timing and the compiler's exchange scheduler.
 *
 * On-chip: a word sent by tile s at cycle t lands on tile d at t + xchg_latency(s, d);
 * a tile sends and receives xchg_bytes_per_cycle (4) bytes per cycle. Between IPUs, streams
 * travel over the IPU-Link model (fabric/link.h). xchg_sys bundles both and plugs them into
 * the BSP engine. The scheduler turns a set of transfers into conflict-free exchange code. */
#ifndef IPUSIM_XCHG_H
#define IPUSIM_XCHG_H

#include <stddef.h>
#include <stdint.h>

#include "hw/engine.h"
#include "base/err.h"
#include "hw/machine.h"

/* ---- the on-chip layout and latency model ---- */

/* Column, and supertile position within the column, of a tile. */
uint32_t xchg_column(const mach *m, uint32_t tile);
uint32_t xchg_row(const mach *m, uint32_t tile);
/* Cycles from a word leaving `src` to it landing on `dst` (same IPU):
 *   base + per_supertile x |row(src) - row(dst)| + per_column x |col(src) - col(dst)|
 *        + (columns differ ? turn : 0) */
uint32_t xchg_latency(const mach *m, uint32_t src, uint32_t dst);
/* Cycles a receiver needs for `bytes` (ceil(bytes / xchg_bytes_per_cycle)). */
uint64_t xchg_words(const mach *m, uint64_t bytes);

/* ---- the fabric as the engine sees it ---- */
typedef struct xchg_sys xchg_sys;
/* Build the fabric of m (m->nipus IPUs and their IPU-Links). NULL and e set on failure. */
xchg_sys *xchg_sys_new(const mach *m, err *e);
void xchg_sys_free(xchg_sys *x);
/* Plug its timing into an engine built for the same machine; x must outlive the run. */
void xchg_sys_attach(xchg_sys *x, eng *g);
/* Called for every delivered stream (global = 1 for streams between IPUs), receiver by
 * receiver in arrival order. */
typedef void (*xchg_trace_fn)(void *ctx, const eng_stream *s, int global);
void xchg_set_trace(xchg_sys *x, xchg_trace_fn fn, void *ctx);

/* ---- the scheduler ---- */

/* One transfer: `bytes` from src_addr on tile `src` to dst_addr on every tile in
 * [dst_first, dst_first + dst_count) of the same IPU (a multicast when dst_count > 1). */
typedef struct xchg_xfer {
    uint32_t src;
    uint32_t dst_first, dst_count;
    uint32_t bytes;
    uint32_t src_addr, dst_addr;
    uint64_t start; /* filled by xchg_schedule: cycle after the exchange begins */
} xchg_xfer;

typedef struct xchg_plan {
    uint64_t cycles;      /* when the last word has landed, from the exchange's start */
    uint64_t lower_bound; /* max over tiles of (bytes sent, bytes received) / bytes per cycle */
} xchg_plan;

/* Cycles of supervisor code before a tile's first send (dispatch on the tile id). */
#define XCHG_PROLOGUE 17

/* Give every transfer a start cycle such that no tile sends two streams at once and no tile
 * receives two streams at once, accounting for the code that issues the sends (4 cycles of
 * set-up per send, after XCHG_PROLOGUE). List scheduling: the sender that can start soonest
 * starts its transfer that can start soonest (ties: the caller's order). Fills x[k].start. */
int xchg_schedule(const mach *m, uint32_t ntiles, xchg_xfer *x, size_t n, xchg_plan *plan,
                  err *e);

/* Emit assembly for the schedule: a subroutine `label` that every tile calls (`call label`)
 * right after a sync; it dispatches on $tile, issues that tile's sends at their scheduled
 * cycles, and returns. The caller then syncs (the sync delivers the data). Uses r1-r6 and a
 * table in .data. malloc'd text; caller frees. */
char *xchg_emit(const mach *m, uint32_t ntiles, const xchg_xfer *x, size_t n,
                const char *label);

#endif
