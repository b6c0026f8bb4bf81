/* graph_int: the graph's tables, shared by graph.c (building) and graph_lower.c (lowering). */
#ifndef IPUSIM_GRAPH_INT_H
#define IPUSIM_GRAPH_INT_H

#include "base/text.h"
#include "workloads/graph/graph.h"

typedef struct gr_region_s {
    uint32_t ipu, tile;
    size_t begin, end; /* elements of the flattened tensor */
} gr_region_s;

typedef struct gr_tensor_s {
    char *name;
    gr_type type;
    unsigned ndim;
    uint32_t shape[GR_MAX_DIMS];
    size_t elems;
    int keep;  /* always live (gr_keep) */
    int pairs; /* regions in whole 8-byte pairs (gr_pairs) */
    gr_region_s *r;
    size_t nr, cr;
} gr_tensor_s;

typedef struct gr_vertex_s {
    gr_cs cs;
    char *codelet;
    int super;
    uint32_t ipu, tile;
    gr_field *f;
    size_t nf;
} gr_vertex_s;

typedef struct gr_cs_s {
    char *name;
} gr_cs_s;

typedef enum gr_pkind {
    GR_P_EXEC,
    GR_P_COPY,
    GR_P_SYNC,
    GR_P_REPEAT,
    GR_P_SEQ,
    GR_P_STREAM_IN,
    GR_P_STREAM_OUT,
    GR_P_REMOTE_READ,
    GR_P_REMOTE_WRITE,
    GR_P_ALL_REDUCE
} gr_pkind;

typedef struct gr_prog_s {
    gr_pkind kind;
    uint32_t a, b; /* exec: cs; sync: zone; repeat: n, body; stream: tensor; remote: tensor,
                      buffer; all-reduce: tensor */
    uint64_t off;  /* remote: the tensor's first byte in the buffer */
    gr_prog *kids; /* seq */
    size_t nkids;
    gr_xfer *xf; /* copy: its pieces */
    size_t nxf;
} gr_prog_s;

typedef struct gr_src {
    char *name, *text;
} gr_src;

/* A codelet's vertex as its header declares it, read once per codelet (gr_vertex checks every
 * vertex against it): supervisor or worker (a first line naming a "SUPERVISOR codelet"), and
 * each state word's name and kind from the "# State" section's entries, `+OFFSET NAME KIND`
 * with KIND region, u32 or f32, or KINDxN for N words (docs/codelets.md). why: NULL, or why
 * the header cannot be read. */
#define GR_VSPEC_WORDS 32
typedef struct gr_vspec {
    char *codelet, *why;
    int super;
    uint32_t nw;
    gr_field_kind kind[GR_VSPEC_WORDS];
    char name[GR_VSPEC_WORDS][16];
} gr_vspec;

/* The source text of codelet `name`: registered (gr_codelet_src) or the library's; NULL. */
const char *gr_codelet_text(const graph *g, const char *name);

/* Host data for a tensor, written at load (gr_init). */
typedef struct gr_init_s {
    gr_tensor t;
    size_t at, n;
    void *data;
} gr_init_s;

struct graph {
    mach m;
    uint32_t nipus;    /* of one replica */
    uint32_t replicas; /* gr_replicate: copies of the graph, replica r on IPUs r x nipus.. */
    uint32_t *io_first, *io_n; /* per IPU: its I/O tiles (gr_io_tiles), io_n 0: none */
    gr_tensor_s *t;
    size_t nt, ct;
    gr_vertex_s *v;
    size_t nv, cv;
    gr_cs_s *cs;
    size_t ncs, ccs;
    gr_prog_s *p;
    size_t np, cp;
    gr_src *src;
    size_t nsrc, csrc;
    gr_vspec *vs; /* the codelets' vertex declarations read so far */
    size_t nvs, cvs;
    gr_init_s *init; /* host data gr_load writes (gr_init) */
    size_t ninit, cinit;
    int bad;
    char why[256];
};

/* Where tensor regions lie in their tiles' data pools (graph_mem.c). */
typedef struct gr_placement {
    uint32_t **off;           /* per tensor, per region: byte offset in its tile's pool */
    uint32_t *pool;           /* per tile: pool bytes (the peak of live data) */
    uint32_t *always, *other; /* per tile: bytes of always-live and not-always-live regions */
} gr_placement;
void gr_plan_memory(const graph *g, gr_prog main, uint32_t ntiles, gr_placement *pl);
void gr_placement_free(gr_placement *pl, size_t ntensors);

/* A Copy's transfers (graph_copy.c): each the part of one piece between one source region
 * and one destination region. */
typedef struct gr_copy_xfer {
    gr_tensor ts, td; /* the source and destination tensors */
    uint32_t rs, rd;  /* their regions (indices in the tensors) */
    uint32_t src_ipu, src_tile, dst_ipu, dst_tile;
    uint32_t bytes, src_off, dst_off; /* offsets in the source and destination regions */
    int global;                       /* between IPUs */
    uint32_t round;                   /* global: its round */
    uint64_t start;                   /* on-chip: its planned send cycle (xcomp_schedule) */
} gr_copy_xfer;
typedef struct gr_copy_plan {
    gr_copy_xfer *x; /* the on-chip transfers, then the global ones, each by sending tile */
    size_t n;
    size_t *at; /* tile k's sends (k = ipu x tiles + tile; + ipus x tiles for its global
                   ones) are x[at[k] .. at[k + 1]) */
    uint64_t bytes;
    uint8_t *onchip; /* per IPU: it has on-chip transfers (its tiles run the on-chip phase) */
    uint32_t rounds; /* of global transfers */
} gr_copy_plan;
int gr_copy_plan_make(const graph *g, const gr_prog_s *p, gr_copy_plan *c, err *e);
void gr_copy_plan_free(gr_copy_plan *c);
/* The exchange subroutines a tile's text holds already, by Copy: a Copy's code is written
 * once a tile and called again wherever the Copy appears again (a pipeline's passes). */
typedef struct gr_subs {
    const void **key;
    unsigned *label;
    size_t n, cap, ckey;
} gr_subs;
void gr_subs_free(gr_subs *s);

/* Tile (ipu, tile)'s code for the copy (into code, its subroutines into sub); addr: the
 * regions' addresses per tensor, or NULL for the first pass (addresses 0); ipu0: the first
 * IPU of the replica whose code it is (sends between IPUs go to ipu0 + their IPU); zone: the
 * sync ending the on-chip phase ("internal", "group"), NULL: the tile has no part in it. */
int gr_copy_emit(const graph *g, const gr_copy_plan *c, uint32_t *const *addr, gr_subs *subs,
                 uint32_t ipu, uint32_t tile, uint32_t ipu0, const char *zone, txt *code, txt *sub,
                 unsigned *inst, err *e);
/* Is (ipu, tile) one of the IPU's I/O tiles? */
int gr_is_io(const graph *g, uint32_t ipu, uint32_t tile);

/* The all-reduce's code on replica rep's copy of tile (ipu, tile) (graph_coll.c): for each of
 * the tile's regions of the program's tensor, the ring's reduce-scatter and all-gather over
 * the replicas; the receive buffers and the adds' vertex states into data, the codelet it
 * runs named in *codelet. pool: the tile's pool label offsets of the tensor's regions
 * (graph_mem.c's placement); inst numbers the labels. */
void gr_all_reduce_emit(const graph *g, const gr_prog_s *p, const uint32_t *pool_off, uint32_t ipu,
                        uint32_t tile, uint32_t rep, txt *code, txt *data, unsigned *inst);
/* Its syncs on every IPU: for each region a tile may hold (the most on one tile), 2 (R - 1)
 * external and R - 1 internal. */
uint32_t gr_all_reduce_syncs(const graph *g, const gr_prog_s *p);

uint32_t gr_type_size(gr_type t);
gr_tensor_s *gr_t(graph *g, gr_tensor t);
const gr_region_s *gr_region_of(const gr_tensor_s *t, uint32_t ipu, uint32_t tile, size_t begin,
                                size_t end);

#endif
