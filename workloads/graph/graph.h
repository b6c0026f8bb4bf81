/* graph: a Poplar-style graph of tensors, vertices and programs, lowered to one program image
 * per tile (docs/graph.md).
 *
 * A researcher builds a graph in four steps:
 *   1. tensors: gr_tensor_new (type, shape), then map their elements onto tiles
 *      (gr_map_region, or gr_map_linear which spreads them by a grain);
 *   2. vertices: gr_cs_new makes a compute set; gr_vertex adds a vertex to it: a codelet
 *      (docs/codelets.md) on one tile with its fields (tensor regions on that tile, scalars);
 *   3. programs: gr_execute (run a compute set), gr_copy (move a tensor's elements to another
 *      tensor's tiles: the exchange) and gr_copy_many (several slices in one exchange),
 *      gr_sync, gr_repeat (a counted loop), gr_seq (in order);
 *   4. gr_compile lowers the control program to supervisor code on every tile (the same
 *      control flow everywhere, different data), with each tile's tensors, vertex states and
 *      codelets in its own image; gr_load puts the images on an engine.
 * Ids are small integers handed out in order; every function checks its arguments and
 * records the first error in the graph (gr_compile then reports it), so building code can be
 * written without an error check per call. */
#ifndef IPUSIM_GRAPH_H
#define IPUSIM_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "hw/engine.h"
#include "hw/machine.h"
#include "isa/isa.h"

typedef enum gr_type { GR_F32, GR_F16, GR_I32, GR_U8 } gr_type;

typedef struct graph graph;
typedef uint32_t gr_tensor; /* ids; GR_NONE on an error */
typedef uint32_t gr_cs;
typedef uint32_t gr_prog;
#define GR_NONE UINT32_MAX
#define GR_MAX_DIMS 6

/* A graph over `nipus` IPUs of machine m (the tiles per IPU and SRAM size come from m). */
graph *gr_new(const mach *m, uint32_t nipus);
/* Run the graph as `replicas` copies (Poplar's replicated graph): replica r on IPUs r x nipus
 * .. (r + 1) x nipus - 1, the same tensors, vertices and program on each, copies between IPUs
 * within a replica, streams on each replica's own IPUs. gr_write writes every replica;
 * gr_read reads replica 0. Default 1. */
void gr_replicate(graph *g, uint32_t replicas);
/* Tiles first .. first + n - 1 of IPU ipu are I/O tiles (sync group 1): a stream copy into
 * tensors on them alone syncs them alone (`group_host`) and the IPU's other tiles leave it
 * out, so it overlaps the other tiles' next superstep (the I/O tiles join every whole-IPU sync
 * of their IPU, after their copy); a copy from them to the other tiles is the hand-over.
 * (docs/graph.md) */
void gr_io_tiles(graph *g, uint32_t ipu, uint32_t first, uint32_t n);
void gr_free(graph *g);
/* Record an error met while building (only the first is kept; gr_status and gr_compile
 * report it): for builders above the graph, the operation library's. */
void gr_fail(graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ERR_OK, or the first error recorded while building (its message in e). */
int gr_status(const graph *g, err *e);

/* Register codelet source text under `name` (tests, or codelets outside the library); by
 * default a codelet NAME comes from wl_codelet(NAME). The text is copied. */
void gr_codelet_src(graph *g, const char *name, const char *src);

/* ---- tensors ---- */
gr_tensor gr_tensor_new(graph *g, const char *name, gr_type type, unsigned ndim,
                        const uint32_t *shape);
size_t gr_tensor_elems(const graph *g, gr_tensor t);
/* Keep t live for the whole run (the host writes or reads it between runs: weights,
 * optimiser state). Other tensors are live from their first use to their last in program
 * order (over a whole loop when used inside one), and tensors never live together share
 * memory (docs/graph.md). */
void gr_keep(graph *g, gr_tensor t);
/* Give each region of t whole 8-byte pairs of memory (its last word's partner unused): a
 * codelet that moves pairs may then read and write a region of an odd number of words whole
 * (stash_ring). */
void gr_pairs(graph *g, gr_tensor t);
/* Host data for elements [at, at + n) of t (n x the type's size bytes, copied), written into
 * the tiles by gr_load: the tables and constants a graph's vertices read (Poplar's constant
 * tensors). t is kept (gr_keep), so nothing else ever shares its memory. */
void gr_init(graph *g, gr_tensor t, size_t at, const void *data, size_t n);
/* Elements [begin, end) of t (row-major) live on tile `tile` of IPU `ipu`, contiguous. */
void gr_map_region(graph *g, gr_tensor t, uint32_t ipu, uint32_t tile, size_t begin, size_t end);
/* Spread t over tiles [first, first + ntiles) of one IPU in pieces of whole grains (grain
 * elements; the last piece takes the remainder), as evenly as whole grains allow. */
void gr_map_linear(graph *g, gr_tensor t, uint32_t ipu, uint32_t first, uint32_t ntiles,
                   size_t grain);
/* A mapped region: elements [begin, end) of a tensor on tile `tile` of IPU `ipu`. */
typedef struct gr_where {
    uint32_t ipu, tile;
    size_t begin, end;
} gr_where;
/* t's regions in the order they were mapped: how many there are; the first cap of them into
 * out (element-wise operations follow their tensor's mapping). */
size_t gr_regions(const graph *g, gr_tensor t, gr_where *out, size_t cap);

/* ---- compute sets and vertices ---- */
typedef enum gr_field_kind { GR_F_REGION, GR_F_U32, GR_F_F32 } gr_field_kind;
/* One word of a vertex's state: the address of elements [begin, end) of a tensor (which must
 * lie on the vertex's tile, inside one mapped region), or a scalar. */
typedef struct gr_field {
    gr_field_kind kind;
    gr_tensor t;
    size_t begin, end;
    uint32_t u;
    float f;
} gr_field;
static inline gr_field gr_region(gr_tensor t, size_t begin, size_t end)
{
    gr_field f = {GR_F_REGION, t, begin, end, 0, 0.0f};
    return f;
}
static inline gr_field gr_u32(uint32_t u)
{
    gr_field f = {GR_F_U32, GR_NONE, 0, 0, u, 0.0f};
    return f;
}
static inline gr_field gr_f32(float v)
{
    gr_field f = {GR_F_F32, GR_NONE, 0, 0, 0, v};
    return f;
}

gr_cs gr_cs_new(graph *g, const char *name);
/* A worker vertex of codelet `codelet` on (ipu, tile) in compute set cs, with nf fields.
 * Returns its index in the graph. supervisor: 1 for a supervisor codelet (docs/codelets.md).
 * The fields must be what the codelet's header declares (its "# State" entries: their
 * number and kinds, and worker or supervisor), else the vertex is refused (GR_NONE, an
 * error naming the field in gr_status). */
uint32_t gr_vertex(graph *g, gr_cs cs, const char *codelet, int supervisor, uint32_t ipu,
                   uint32_t tile, const gr_field *f, size_t nf);

/* ---- programs ---- */
gr_prog gr_execute(graph *g, gr_cs cs);
/* One piece of a Copy: elements [src_at, src_at + n) of src go to [dst_at, dst_at + n) of dst
 * (same element type). */
typedef struct gr_xfer {
    gr_tensor src;
    size_t src_at;
    gr_tensor dst;
    size_t dst_at;
    size_t n;
} gr_xfer;
/* Several pieces in one exchange phase: planned together by the exchange compiler (on-chip)
 * and in rounds of global exchange (between IPUs), then one internal sync. Pieces may not
 * write the same destination element twice, nor read an element another piece of the Copy
 * writes; every element of every slice must be mapped (checked by gr_compile). A piece may
 * stay on one tile: the tile sends to itself (docs/graph.md). The pieces are copied. */
gr_prog gr_copy_many(graph *g, const gr_xfer *x, size_t n);
/* Copy every element of src to the same element of dst (same type and element count): a
 * gr_copy_many of one whole-tensor piece. */
gr_prog gr_copy(graph *g, gr_tensor src, gr_tensor dst);
gr_prog gr_sync(graph *g, unsigned zone);
/* Stream copies with the host (docs/host.md): every tile holding t asks for (in) or sends
 * (out) its regions of t, then all tiles sync with the host (`internal_host`), which carries
 * the copies out. The host's buffer holds the regions in tile order, a tile's regions in the
 * order they were mapped (the tensor in element order when it is mapped in ascending tiles).
 * Stream 0 is the IPU's infeed, 1 its outfeed. */
gr_prog gr_stream_in(graph *g, gr_tensor t);
gr_prog gr_stream_out(graph *g, gr_tensor t);
/* Remote buffers (Streaming Memory, docs/host.md): write t's elements to remote buffer `buf`
 * from byte `off` on (the tensor in element order), or read them back; then
 * `sync internal_host`, which carries the copies out. */
#define GR_REMOTE_BUFFERS 64 /* buffer ids 0..63; replica r's buffer b is the host's r x 64 + b */
gr_prog gr_remote_write(graph *g, gr_tensor t, uint32_t buf, uint64_t off);
gr_prog gr_remote_read(graph *g, gr_tensor t, uint32_t buf, uint64_t off);
gr_prog gr_repeat(graph *g, uint32_t n, gr_prog body);
/* The sum of fp32 tensor t over the replicas (gr_replicate), in place on every replica: a
 * ring over the IPU-Links, each of t's tile regions cut in R chunks, R - 1 rounds of
 * reduce-scatter (replica r sends a chunk to replica r + 1, which adds it to its own: own +
 * received, reduce_add), then R - 1 rounds of all-gather (docs/graph.md). Chunk c's sum runs
 * from replica c round the ring: g[c-1] + (... + (g[c+1] + g[c])), the same on every replica.
 * With one replica it does nothing. */
gr_prog gr_all_reduce(graph *g, gr_tensor t);
gr_prog gr_seq(graph *g, const gr_prog *p, size_t n);

/* ---- lowering ---- */

/* Memory of one tile, in bytes. */
typedef struct gr_tile_mem {
    uint32_t code;   /* supervisor code and codelets */
    uint32_t state;  /* vertex states */
    uint32_t always; /* always-live tensor regions */
    uint32_t other;  /* not-always-live tensor regions (their sum, before sharing) */
    uint32_t data;   /* the tensors' pool: the peak of live data after sharing */
    uint32_t total;  /* the image: code, state, data and alignment */
} gr_tile_mem;

typedef struct gr_summary {
    uint32_t compute_sets, vertices, exchanges;
    uint64_t exchange_bytes;
    uint32_t tiles_used;    /* tiles holding anything */
    uint32_t max_tile;      /* the tile with the largest image (ipu x tiles + tile) */
    uint32_t max_bytes;     /* its image */
    double mean_bytes;      /* over the tiles used */
    uint32_t programs;      /* distinct images assembled */
    double compile_seconds; /* host time of gr_compile */
} gr_summary;

typedef struct gr_exe gr_exe;

/* Lower the control program `main` to one image per tile, the images assembled on the
 * threads of `threads` (hw/pool.h; NULL: the caller's alone; the images and any message are
 * the same either way). A tile that would need more memory than its SRAM stops the compile
 * with one message naming the tile, the bytes it needs, the SRAM, and its largest tensors. */
struct pool;
gr_exe *gr_compile(graph *g, gr_prog main, struct pool *threads, err *e);
void gr_exe_free(gr_exe *x);
const gr_summary *gr_exe_summary(const gr_exe *x);
/* Tile memory of (ipu, tile); an IPU of a replica r > 0 is that of replica 0's IPU ipu mod
 * nipus. */
const gr_tile_mem *gr_exe_tile(const gr_exe *x, uint32_t ipu, uint32_t tile);
/* IPU `ipu`'s steps in run order (a replica's IPU: those of its IPU in replica 0), each
 * ending with one whole-IPU sync (an Execute with
 * vertices there, a Copy's on-chip phase there and each of its rounds between IPUs, a stream
 * or remote-buffer copy of regions there, a Sync), loops unrolled: the first `cap` into out;
 * returns how many. Paired with the engine's sync log of that IPU (eng_log_syncs), step k ran
 * from release k - 1 to release k: a per-step profile. */
typedef struct gr_step {
    const char *what; /* "execute", "copy", "stream in", "stream out", "remote read",
                       * "remote write", "sync" */
    const char *name; /* the compute set; the copy's (first) destination; the streamed
                       * tensor; the sync's zone */
    uint32_t round;   /* a copy's round between IPUs (it ends with an external sync): its
                       * number from 1, of `rounds`; 0: not one */
    uint32_t rounds;
} gr_step;
size_t gr_exe_steps(const gr_exe *x, uint32_t ipu, gr_step *out, size_t cap);
/* A step's name as the profile and the compute sets' table show it: an execute's compute
 * set ("conv2"), else what it does and to what ("stream in infeed", "copy x (round 1/3)"). */
void gr_step_label(const gr_step *s, char *buf, size_t len);
/* How many tiles of IPU `ipu` (a replica's: its IPU in replica 0) hold a vertex of a compute
 * set named `layer`, or `layer` then a dot and anything ("conv1" counts "conv1.amp" and
 * "conv1.dw.reduce", not "conv10"): the tiles a layer's compute sets use, named as a workload
 * names them. */
uint32_t gr_exe_layer_tiles(const gr_exe *x, const char *layer, uint32_t ipu);
/* The same for the union of n layers' compute sets: the tiles any of them uses. */
uint32_t gr_exe_layers_tiles(const gr_exe *x, const char *const *layers, size_t n, uint32_t ipu);

/* Load the images (tiles with nothing are idle), then write the gr_init data. */
int gr_load(const gr_exe *x, eng *e_, err *e);
/* Where element `elem` of tensor t lives once loaded: its tile and address; -1 if unmapped. */
int gr_exe_where(const gr_exe *x, gr_tensor t, size_t elem, uint32_t *ipu, uint32_t *tile,
                 uint32_t *addr);
/* Copy n elements of host data into (write) or out of (read) a loaded tensor from element
 * `at`, across its regions. Under several ranks gr_read is a collective (every rank calls it
 * alike) and reads each region as the rank that owns its tile holds it. */
void gr_write(const gr_exe *x, eng *g, gr_tensor t, size_t at, const void *src, size_t n);
void gr_read(const gr_exe *x, eng *g, gr_tensor t, size_t at, void *dst, size_t n);

#endif
