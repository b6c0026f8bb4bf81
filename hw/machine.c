/* machine: built-in parameter sets for the Mk2 (GC200 in an IPU-M2000) and Mk1 (GC2) IPUs.
 *
 * Sources (FACTS.md section 1): tiles per IPU and SRAM per tile are Graphcore's published
 * figures; the Mk2 clock is derived from its 250 TFLOPS fp16 peak (1.325 GHz); the internal
 * sync latency of 90 cycles is the poplibs planner heuristic; the external sync term is the
 * IPU Model's formula. It leaves out everything the fabric issue adds (exchange layout,
 * links, host link) and reading presets from INI files. */
#include "hw/machine.h"

#include "hw/sim.h"

#include <stdio.h>
#include <string.h>

static const mach builtin[] = {
    {
        .name = "mk2",
        .tiles_per_ipu = 1472,          /* [GC] GC200 */
        .sram_bytes = 624 * 1024,       /* [GC] 624 KiB per tile */
        .clock_hz = 1325000000ull,      /* [D] 249.6 TFLOPS fp16 / (1472 x 128) */
        .sync_internal = 90,            /* [GC] poplibs planner heuristic */
        .sync_hop_ps = 15000,           /* [GC] IPU Model: 15 ns per hop */
        .sync_host = 1000,              /* assumption: a host round trip adds ~0.75 us */
        .amp_macs_per_issue = 16,       /* 16 fp32 MAC per tile cycle = 6 workers x 16 / 6 */
        .load_bytes_per_cycle = 16,     /* [PAPER] 16 B/cycle read */
        .store_bytes_per_cycle = 8,     /* [PAPER] 8 B/cycle write */
        .xchg_bytes_per_cycle = 4,      /* [GC] poplibs exchangeBytesPerCycle */
        .tiles_per_supertile = 4,       /* [3P] */
        .tiles_per_column = 64,         /* assumption: 23 columns of 64 tiles */
        .xchg_base = 8,                 /* assumption */
        .xchg_per_supertile = 1,        /* assumption */
        .xchg_per_column = 6,           /* [3P] ~6 cycles per column */
        .xchg_turn = 4,                 /* assumption */
        .nipus = 1,
        .topology = "m2000",
        .ipus_per_box = 4,              /* [PRESS] 4 IPUs per M2000 */
        .links_per_ipu = 10,            /* [PRESS] 10 IPU-Links per IPU */
        .link_bytes_per_s = 32000000000ull, /* [PRESS] 320 GB/s per IPU over 10 links */
        .link_latency_ns = 100,         /* assumption */
        .gw_bytes_per_s = 12500000000ull, /* [PRESS] 100 GbE */
        .gw_latency_ns = 1000,          /* assumption */
    },
    {
        .name = "mk1",
        .tiles_per_ipu = 1216,          /* [GC] GC2 */
        .sram_bytes = 256 * 1024,       /* [GC] 256 KiB per tile */
        .clock_hz = 1600000000ull,      /* [GC] 1.6 GHz */
        .sync_internal = 90,            /* [GC] poplibs planner heuristic */
        .sync_hop_ps = 15000,           /* [GC] IPU Model */
        .sync_host = 1000,              /* assumption */
        .amp_macs_per_issue = 16,       /* assumption: the same AMP instruction on Mk1; its
                                           published peak is 8 MAC/cycle (FACTS.md), so Mk1
                                           GEMMs report against the Mk2-style rate */
        .load_bytes_per_cycle = 16,     /* [PAPER] */
        .store_bytes_per_cycle = 8,     /* [PAPER] */
        .xchg_bytes_per_cycle = 4,      /* [GC] */
        .tiles_per_supertile = 4,       /* [3P] */
        .tiles_per_column = 64,         /* assumption: 19 columns of 64 tiles */
        .xchg_base = 8,                 /* assumption */
        .xchg_per_supertile = 1,        /* assumption */
        .xchg_per_column = 6,           /* [3P] */
        .xchg_turn = 4,                 /* assumption */
        .nipus = 1,
        .topology = "ladder",
        .ipus_per_box = 2,              /* [PRESS] 2 IPUs per C2 card */
        .links_per_ipu = 10,            /* [GC] */
        .link_bytes_per_s = 13600000000ull, /* [GC] IPU Model: 128 Gbit/s x 85% */
        .link_latency_ns = 100,         /* assumption */
        .gw_bytes_per_s = 13600000000ull, /* assumption: cards joined by IPU-Links */
        .gw_latency_ns = 100,           /* assumption */
    },
};

int mach_builtin(mach *m, const char *name, err *e)
{
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
        if (strcmp(builtin[i].name, name) == 0) {
            *m = builtin[i];
            return ERR_OK;
        }
    }
    return err_set(e, ERR_INPUT, "unknown machine '%s' (known: mk2, mk1)", name);
}

uint32_t mach_sync_external(const mach *m)
{
    uint64_t hops = 1 + (m->nipus / 2) / 2;
    /* ceil(hop_ps x 1e-12 x f x hops x 2) with integers: ps x Hz / 1e12 */
    unsigned __int128 num = (unsigned __int128)m->sync_hop_ps * hops * 2 * m->clock_hz;
    unsigned __int128 den = 1000000000000ull;
    return m->sync_internal + (uint32_t)((num + den - 1) / den);
}

double mach_fp32_peak_flops(const mach *m)
{
    /* six workers each issue one amp every 6 cycles: amp_macs_per_issue MACs per tile cycle */
    return 2.0 * m->amp_macs_per_issue * m->tiles_per_ipu * (double)m->clock_hz;
}

uint64_t mach_cycles_to_ps(const mach *m, uint64_t cycles)
{
    return sim_clock_time(sim_clock_hz(m->clock_hz), cycles);
}
