/* machine: the parameters of a simulated system, as plain data.
 *
 * This issue ships a built-in table (mk2, mk1); INI presets in machines/ come with the fabric
 * work. Every number names its source in machine.c. */
#ifndef IPUSIM_MACHINE_H
#define IPUSIM_MACHINE_H

#include <stdint.h>

#include "hw/err.h"

typedef struct mach {
    char name[32];
    /* ---- chip ---- */
    uint32_t tiles_per_ipu;      /* tiles on one IPU */
    uint32_t sram_bytes;         /* SRAM per tile */
    uint64_t clock_hz;           /* tile clock */
    uint32_t amp_macs_per_issue; /* fp32 MACs one `amp` performs (peak = 6 workers' issues) */
    uint32_t load_bytes_per_cycle;  /* published local load bandwidth per tile (for micro) */
    uint32_t store_bytes_per_cycle; /* published local store bandwidth per tile (for micro) */
    /* ---- on-chip exchange: layout and latency (fabric/xchg) ---- */
    uint32_t xchg_bytes_per_cycle; /* a tile sends and receives this many bytes per cycle */
    uint32_t tiles_per_supertile;  /* tiles that share a supertile (same exchange port group) */
    uint32_t tiles_per_column;     /* tiles in one column of the layout */
    uint32_t xchg_base;            /* cycles from send to arrival within one supertile */
    uint32_t xchg_per_supertile;   /* extra cycles per supertile of distance along a column */
    uint32_t xchg_per_column;      /* extra cycles per column of displacement */
    uint32_t xchg_turn;            /* extra cycles when source and destination columns differ */
    /* ---- syncs ---- */
    uint32_t sync_internal;      /* cycles from the last arrival to release, one IPU */
    uint32_t sync_hop_ps;        /* external sync: ps per hop per direction (IPU Model: 15 ns) */
    uint32_t sync_host;          /* extra cycles when the host takes part in a sync */
    /* ---- system and IPU-Links (fabric/link) ---- */
    uint32_t nipus;              /* IPUs in the system */
    char topology[16];           /* "m2000" (boxes of 4, torus of boxes) or "ladder" (Mk1) */
    uint32_t ipus_per_box;       /* IPUs in one box or card */
    uint32_t links_per_ipu;      /* IPU-Links per IPU */
    uint64_t link_bytes_per_s;   /* one link, one direction, effective */
    uint32_t link_latency_ns;    /* one link hop */
    uint64_t gw_bytes_per_s;     /* a gateway link between boxes, one direction */
    uint32_t gw_latency_ns;      /* one gateway hop */
} mach;

/* Fill *m from a built-in name ("mk2", "mk1"); ERR_INPUT for an unknown name. */
int mach_builtin(mach *m, const char *name, err *e);

/* External (all-IPU) sync latency in cycles: internal latency plus the IPU Model's
 * ceil(15 ns x f x hops x 2), hops = 1 + (nipus / 2) / 2 (FACTS.md section 1). */
uint32_t mach_sync_external(const mach *m);

/* fp32 peak in FLOP per second for one IPU: 2 x MACs per tile cycle x tiles x clock. */
double mach_fp32_peak_flops(const mach *m);

/* Convert tile cycles to picoseconds (integer, rounded down). */
uint64_t mach_cycles_to_ps(const mach *m, uint64_t cycles);

#endif
