/* machine: the parameters of a simulated system, as plain data, and its presets.
 *
 * The presets are INI files, machines/NAME.ini, embedded in the library at build time; every
 * number there names its source. One descriptor table (mach_params) names each field with its
 * INI section, type, range, unit and meaning; parsing, validation, `ipusim machine show` and
 * docs/machines.md all come from it. A user's own INI file loads the same way. */
#ifndef IPUSIM_MACHINE_H
#define IPUSIM_MACHINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct mach {
    char name[32];
    /* ---- chip ---- */
    uint32_t tiles_per_ipu;         /* tiles on one IPU */
    uint32_t sram_bytes;            /* SRAM per tile */
    uint64_t clock_hz;              /* tile clock */
    uint32_t amp_macs_per_issue;    /* AMP units: fp32 MACs per tile cycle (docs/timing.md) */
    uint32_t load_bytes_per_cycle;  /* bytes a tile loads per cycle (binds: docs/timing.md) */
    uint32_t store_bytes_per_cycle; /* bytes a tile stores per cycle (binds likewise) */
    /* ---- on-chip exchange: layout and latency (fabric/xchg) ---- */
    uint32_t xchg_bytes_per_cycle; /* a tile sends and receives this many bytes per cycle */
    uint32_t tiles_per_supertile;  /* tiles that share a supertile (same exchange port group) */
    uint32_t tiles_per_column;     /* tiles in one column of the layout */
    uint32_t xchg_base;            /* cycles from send to arrival within one supertile */
    uint32_t xchg_per_supertile;   /* extra cycles per supertile of distance along a column */
    uint32_t xchg_per_column;      /* extra cycles per column of displacement */
    uint32_t xchg_turn;            /* extra cycles when source and destination columns differ */
    /* ---- syncs ---- */
    uint32_t sync_internal; /* cycles from the last arrival to release, one IPU */
    uint32_t sync_hop_ps;   /* external sync: ps per hop per direction (IPU Model: 15 ns) */
    uint32_t sync_host;     /* extra cycles when the host takes part in a sync */
    /* ---- system and IPU-Links (fabric/link) ---- */
    uint32_t nipus;            /* IPUs in the system */
    char topology[16];         /* "m2000" (boxes of 4, torus of boxes) or "ladder" (Mk1) */
    uint32_t ipus_per_box;     /* IPUs in one box or card */
    uint32_t links_per_ipu;    /* IPU-Links per IPU */
    uint64_t link_bytes_per_s; /* one link, one direction, effective */
    uint32_t link_latency_ns;  /* one link hop */
    uint64_t gw_bytes_per_s;   /* a gateway link between boxes, one direction */
    uint32_t gw_latency_ns;    /* one gateway hop */
    /* ---- host I/O (host/): the host link and remote buffers ---- */
    uint64_t host_link_bytes_per_s; /* the host link a group of IPUs shares, one direction */
    uint32_t host_link_ipus;        /* IPUs per group (behind one host link, one remote memory) */
    uint64_t host_ipu_bytes_per_s;  /* one IPU's own attachment (its PCIe link), one direction */
    uint32_t host_latency_ns;       /* host link, one way */
    char remote_at[16];             /* where remote buffers live: "gateway" or "host" */
    uint64_t remote_bytes_per_s;    /* a group's remote memory, reads and writes together */
    uint32_t remote_latency_ns;     /* remote buffer access, one way */
} mach;

/* Fill *m from a built-in preset by name ("mk2", "mk1"): parses machines/NAME.ini as embedded
 * in the library. ERR_INPUT for an unknown name. */
int mach_builtin(mach *m, const char *name, err *e);

/* ---- the descriptor table ---- */
typedef enum mach_type {
    MACH_U32,  /* whole number, stored as uint32_t */
    MACH_U64,  /* whole number, stored as uint64_t */
    MACH_ENUM, /* one word of `choices`, stored as a NUL-terminated char array */
} mach_type;

typedef struct mach_param {
    const char *section; /* INI section: chip, exchange, sync, system, links, host */
    const char *key;     /* INI key = the field name */
    mach_type type;
    size_t offset;       /* offsetof(mach, field) */
    size_t size;         /* sizeof the field */
    uint64_t min, max;   /* valid range (numbers) */
    const char *choices; /* MACH_ENUM: the words allowed, separated by spaces */
    const char *unit;    /* "tiles", "bytes", "Hz", "cycles", "B/s", ... ("-" for words) */
    const char *meaning; /* one line */
} mach_param;

enum { MACH_NPARAMS = 31 };

/* The MACH_NPARAMS parameters, in INI order (every field of mach except name). */
const mach_param *mach_params(void);
/* A parameter by key, or NULL. */
const mach_param *mach_param_find(const char *key);
/* Its value in *m as text ("1472", "m2000"). Returns buf. */
char *mach_param_format(const mach *m, const mach_param *p, char *buf, size_t len);
/* Its valid range as text ("1 to 65536", "m2000 or ladder"). Returns buf. */
char *mach_param_range(const mach_param *p, char *buf, size_t len);

/* ---- loading presets ---- */
enum { MACH_COMMENT_MAX = 480 };

/* Where the values came from, for `machine show`: the file as messages name it and, per
 * parameter (in mach_params order), its line and its source comment: the comment lines right
 * above the key and the comment after its value, without the ';', joined by spaces. */
typedef struct mach_src {
    char file[256];
    int line[MACH_NPARAMS]; /* 0 when set by mach_set */
    char comment[MACH_NPARAMS][MACH_COMMENT_MAX];
} mach_src;

/* Load a preset: SPEC is a built-in name, or a file if it contains '/' or ends in ".ini".
 * src may be NULL. Errors (ERR_INPUT) read "FILE:LINE: error: MESSAGE" with FILE the user's
 * path or machines/NAME.ini for a built-in; "FILE: error: cannot open ..." for a missing
 * file; "unknown machine 'X' (known: ...)" for an unknown name. Every key is required. */
int mach_load(mach *m, mach_src *src, const char *spec, err *e);

/* Parse INI text (NUL-terminated) that messages call `file`; the machine is named `name`.
 * Used by mach_load; open for tests and fuzzing. On error *m is unchanged. Reentrant: no
 * state outside the call (libinih reads through a line-counting reader, so the handler knows
 * each key's line; Debian's libinih passes no line numbers). */
int mach_parse(mach *m, mach_src *src, const char *name, const char *file, const char *text,
               err *e);

/* Set one parameter from text, checking it as the INI parser does. The message (ERR_INPUT)
 * carries no position: "unknown machine parameter 'foo'", "clock_hz: 'x' is not a whole
 * number", ... The caller adds where the text came from. On error *m is unchanged. src
 * (may be NULL) records the change: line 0, comment "override (the preset had V: ...)". */
int mach_set(mach *m, mach_src *src, const char *key, const char *value, err *e);

/* Every field within its range and every word one of its choices (for a mach that code has
 * changed). The message names the first bad key. */
int mach_check(const mach *m, err *e);

/* The embedded preset text of machines/NAME.ini, or NULL; the i-th embedded name in file
 * name order, NULL past the end. Generated by the Makefile ($(BUILD)/gen/machines.c). */
const char *mach_preset_text(const char *name);
const char *mach_preset_name(size_t i);

/* External (all-IPU) sync latency in cycles: internal latency plus the IPU Model's
 * ceil(15 ns x f x hops x 2), hops = 1 + (nipus / 2) / 2 (docs/sources.md, Chip). */
uint32_t mach_sync_external(const mach *m);

/* fp32 peak in FLOP per second for one IPU: 2 x MACs per tile cycle x tiles x clock. */
double mach_fp32_peak_flops(const mach *m);

/* Convert tile cycles to picoseconds (integer, rounded down). */
uint64_t mach_cycles_to_ps(const mach *m, uint64_t cycles);

#endif
