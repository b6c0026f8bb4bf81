/* graph_int: the graph's tables, shared by graph.c (building) and graph_lower.c (lowering). */
#ifndef IPUSIM_GRAPH_INT_H
#define IPUSIM_GRAPH_INT_H

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
    int keep; /* always live (gr_keep) */
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
    GR_P_STREAM_OUT
} gr_pkind;

typedef struct gr_prog_s {
    gr_pkind kind;
    uint32_t a, b; /* exec: cs; copy: src, dst; sync: zone; repeat: n, body; stream: tensor */
    gr_prog *kids; /* seq */
    size_t nkids;
} gr_prog_s;

typedef struct gr_src {
    char *name, *text;
} gr_src;

struct graph {
    mach m;
    uint32_t nipus;
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

uint32_t gr_type_size(gr_type t);
void gr_fail(graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
gr_tensor_s *gr_t(graph *g, gr_tensor t);
const gr_region_s *gr_region_of(const gr_tensor_s *t, uint32_t ipu, uint32_t tile, size_t begin,
                                size_t end);

#endif
