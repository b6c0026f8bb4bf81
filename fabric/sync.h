/* sync: the sync zones — who takes part in a sync, when it releases, and what a deadlock is.
 *
 * A tile that reaches `sync ZONE` waits until every tile of the zone has arrived; the zone
 * then releases at the latest arrival + the zone's latency (plus the host's copies for the
 * zones with the host, carried out by the engine through its host port). The zones:
 *   internal, internal_host        every tile of one IPU;
 *   group, group_host              the tiles of one IPU in the same sync group ($group);
 *   external (GS1), gs2, and their _host variants: every tile of every IPU.
 * Latencies: internal and group zones take the machine's sync_internal; the external zones
 * take mach_sync_external (the IPU Model's hop formula); a zone with the host adds sync_host.
 * The engine reaches these rules through its fabric port (fabric/xchg.h builds the port). */
#ifndef IPUSIM_SYNC_H
#define IPUSIM_SYNC_H

#include <stdint.h>

#include "base/err.h"
#include "hw/chip.h"
#include "hw/engine.h"
#include "hw/machine.h"

/* Cycles from the last arrival at `zone` to its release (without the host's copies). */
uint64_t sync_latency(const mach *m, unsigned zone);

/* What the zones make of IPU c after a compute round (see eng_sync in hw/engine.h). */
void sync_classify(const mach *m, const chip *c, eng_sync *s);

/* The report when no zone can ever complete: ERR_FAULT with one line naming, for the first
 * IPU stuck inside itself, the tiles waiting at each zone and the tiles that halted (and marks
 * the waiting tiles faulted), or, when IPUs wait at an external sync that others will never
 * reach, the IPUs and why. s[i] is IPU i's classification; s[i].what is ENG_WAIT_DONE for an
 * IPU whose tiles have all halted. */
int sync_deadlock(chip *chips, const eng_sync *s, uint32_t nipus, err *e);

#endif
