/* xchg: the exchange fabric's timing.
 *
 * On-chip: a word sent by tile s at cycle t lands on tile d at t + xchg_latency(s, d);
 * a tile sends and receives xchg_bytes_per_cycle (4) bytes per cycle. Between IPUs, streams
 * travel over the IPU-Link model (fabric/link.h). xchg_sys bundles both and plugs them into
 * the BSP engine. The exchange compiler (workloads/xcomp.h) plans transfers against this timing. */
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
/* A tile's place in the layout: its column and row, for callers that time many pairs (the
 * exchange compiler keeps one per tile rather than dividing for each pair). */
typedef struct xchg_pos {
    uint32_t col, row;
} xchg_pos;
xchg_pos xchg_pos_of(const mach *m, uint32_t tile);
/* The places of tiles 0 .. n - 1, a new array (the caller frees it). */
xchg_pos *xchg_pos_table(const mach *m, uint32_t n);
/* Cycles from a word leaving `src` to it landing on `dst` (same IPU):
 *   base + per_supertile x |row(src) - row(dst)| + per_column x |col(src) - col(dst)|
 *        + (columns differ ? turn : 0) */
static inline uint32_t xchg_latency_pos(const mach *m, xchg_pos src, xchg_pos dst)
{
    uint32_t dc = src.col > dst.col ? src.col - dst.col : dst.col - src.col;
    uint32_t dr = src.row > dst.row ? src.row - dst.row : dst.row - src.row;
    return m->xchg_base + m->xchg_per_supertile * dr + m->xchg_per_column * dc +
           (dc ? m->xchg_turn : 0);
}
/* The same from tile numbers. */
uint32_t xchg_latency(const mach *m, uint32_t src, uint32_t dst);
/* Cycles a receiver needs for `bytes` (ceil(bytes / xchg_bytes_per_cycle)). */
uint64_t xchg_words(const mach *m, uint64_t bytes);

/* ---- the fabric as the engine sees it ---- */
typedef struct xchg_sys xchg_sys;
/* Build the fabric of m (m->nipus IPUs and their IPU-Links). NULL and e set on failure. */
xchg_sys *xchg_sys_new(const mach *m, err *e);
void xchg_sys_free(xchg_sys *x);
/* The interface the engine's port "fabric" binds to (hw/engine.h: eng_fabric); it lives as
 * long as x. */
const eng_fabric *xchg_sys_iface(xchg_sys *x);
/* Called for every delivered stream (global = 1 for streams between IPUs), receiver by
 * receiver in arrival order. */
typedef void (*xchg_trace_fn)(void *ctx, const eng_stream *s, int global);
void xchg_set_trace(xchg_sys *x, xchg_trace_fn fn, void *ctx);

#endif
