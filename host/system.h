/* system: the one constructor of a whole simulated system.
 *
 * A system is one machine (hw/machine.h) built as modules on one simulation kernel: the BSP
 * engine with the IPUs' tiles (hw/engine.h), the fabric with the on-chip exchange, the sync
 * zones and the IPU-Links (fabric/xchg.h), and, when asked for, the host with its streams,
 * host links and remote buffers (host/hio.h). The engine meets the fabric and the host only
 * through its ports, bound here. Every command (run, gemm, io-bench, micro, mnist) builds
 * its system with sys_new and tears it down with sys_free. */
#ifndef IPUSIM_SYSTEM_H
#define IPUSIM_SYSTEM_H

#include <stdint.h>

#include "base/err.h"
#include "fabric/xchg.h"
#include "host/hio.h"
#include "hw/engine.h"
#include "hw/machine.h"
#include "hw/sim.h"

/* What a command adds to any run, whichever workload builds the system; zero: nothing. */
typedef struct sys_ctl {
    /* a fault when an instruction would issue more than this many cycles after its tile's
     * last sync release (0: no limit; the CLI's default: CLI_MAX_SUPERSTEP_CYCLES) */
    uint64_t max_superstep_cycles;
    eng_watch watch; /* a stop flag and a heartbeat (hw/engine.h) */
    /* how the command's user sets sys_cfg.max_cycles and the superstep limit, as a fault
     * past one names them (the CLI: its options' names) */
    tile_limit_names limit_names;
} sys_ctl;

typedef struct sys_cfg {
    mach m;                  /* the machine: m.nipus IPUs of m.tiles_per_ipu tiles */
    unsigned threads;        /* host threads (0: the online CPUs) */
    uint64_t max_cycles;     /* no instruction issues after this cycle (0: no limit) */
    sys_ctl ctl;             /* the superstep limit, a stop flag, a heartbeat */
    uint64_t chunk_cycles;   /* cycles a compute round runs a tile (0: ENG_CHUNK_CYCLES) */
    const hio_cfg *host;     /* the host's streams; NULL: no host (a host copy is a fault) */
    struct rank_comm *ranks; /* the run's ranks (base/rank.h); NULL: this process alone */
} sys_cfg;

typedef struct sys sys;

/* Build the system. NULL with e set on bad configuration (or no memory for the tiles). */
sys *sys_new(const sys_cfg *c, err *e);
/* Tear down every module and the kernel. NULL is allowed. */
void sys_free(sys *s);

/* Its parts: the engine (load, run, statistics, tile memory) and the fabric (exchange
 * trace). */
eng *sys_engine(const sys *s);
xchg_sys *sys_fabric(const sys *s);

/* The one rule for a workload's I/O tiles: the last io_tiles of an IPU of `tiles` tiles take
 * the host's stream copies, and at least one tile must be left to compute. ERR_INPUT with e
 * naming the setting as the caller's user sets it (`name`: the CLI's "--io-tiles"), the value
 * and the IPU's tiles otherwise. */
int sys_io_tiles_check(const char *name, uint32_t io_tiles, uint32_t tiles, err *e);

#endif
