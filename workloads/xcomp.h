/* xcomp: the exchange compiler — on-chip transfers in, conflict-free send times and the tile
 * code that keeps them out.
 *
 * Compiling an exchange is software (Poplar's compiler does it); the timing it plans against
 * is the fabric's (fabric/xchg.h: xchg_latency, xchg_words). A workload describes the
 * transfers of one exchange, xcomp_schedule() plans them, xcomp_emit() writes the code that
 * every tile calls right after a sync; the sync that follows delivers the data. */
#ifndef IPUSIM_XCOMP_H
#define IPUSIM_XCOMP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "hw/machine.h"

/* One transfer: `bytes` from src_addr on tile `src` to dst_addr on every tile in
 * [dst_first, dst_first + dst_count) of the same IPU (a multicast when dst_count > 1).
 * Bytes and addresses are multiples of 4. */
typedef struct xcomp_xfer {
    uint32_t src;
    uint32_t dst_first, dst_count;
    uint32_t bytes;
    uint32_t src_addr, dst_addr;
    uint64_t start; /* filled by xcomp_schedule: cycle of the send after the code's entry */
} xcomp_xfer;

typedef struct xcomp_plan {
    uint64_t cycles;      /* when the last word has landed, from the code's entry */
    uint64_t lower_bound; /* max over tiles of the cycles it sends, or receives, for */
} xcomp_plan;

/* The emitted code's timing, which the plan accounts for: cycles of supervisor code from the
 * entry to the earliest set-up of a tile's first send (dispatch on the tile id), and cycles
 * of set-up (4 `li`) between two sends of one tile. */
#define XCOMP_PROLOGUE 17
#define XCOMP_SETUP 4

/* Give every transfer a start cycle such that no tile sends two streams at once, no tile
 * receives two streams at once, and each tile's code can issue its sends on time (XCOMP_SETUP
 * cycles of set-up per send, after XCOMP_PROLOGUE). List scheduling: the sender that can start
 * soonest starts its transfer that can start soonest (ties: lower tile, then the caller's
 * order). Fills x[k].start and *plan. ntiles: tiles per IPU. ERR_INPUT on a transfer outside
 * the tiles or not 4-byte aligned, or when host memory runs out. */
int xcomp_schedule(const mach *m, uint32_t ntiles, xcomp_xfer *x, size_t n, xcomp_plan *plan,
                   err *e);

/* Assembly for a planned exchange: a subroutine `label` that every tile calls (`call label`)
 * right after a sync; it dispatches on $tile, issues that tile's sends at their planned
 * cycles, and returns. The caller then syncs (the sync delivers the data). Uses r1-r5 and a
 * table `label`_tab of ntiles words in .data. Returns malloc'd text (the caller frees), or
 * NULL with e set (ERR_INPUT) when a transfer's tiles are outside [0, ntiles), or its start
 * is earlier than its tile's code can issue it, or host memory runs out. */
char *xcomp_emit(uint32_t ntiles, const xcomp_xfer *x, size_t n, const char *label, err *e);

/* The same exchange as code for one tile only, for per-tile programs: a subroutine `label`
 * that issues this tile's sends at their planned cycles counted from its entry (no dispatch,
 * no table) and returns; a tile with no sends gets a bare `ret`. Every tile must enter its
 * subroutine at the same cycle (right after a sync). NULL with e set as for xcomp_emit. */
char *xcomp_emit_tile(uint32_t ntiles, uint32_t tile, const xcomp_xfer *x, size_t n,
                      const char *label, err *e);

#endif
