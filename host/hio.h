/* hio: the host side of a system, plugged into the BSP engine's host copies.
 *
 * Per IPU one infeed stream (id 0) and one outfeed stream (id 1) (host/strm.h) over the host
 * links of host/host.h, plus remote buffers (Streaming Memory) held in host memory. At a
 * host sync the engine hands over the copies of the tiles taking part; hio times them (the
 * infeed's buffer k, then the outfeed's, then remote-buffer copies, one after another),
 * moves the bytes (the infeed's from `fill`, the outfeed's to `drain`), and reports
 * StreamCopyBegin / Mid and the remote-buffer time. A remote buffer (by id, shared by the
 * IPUs) grows to the end of the furthest copy into or out of it; it starts zeroed, and bytes
 * never written read as zeros. */
#ifndef IPUSIM_HIO_H
#define IPUSIM_HIO_H

#include <stdint.h>

#include "host/host.h"
#include "host/strm.h"
#include "hw/engine.h"

enum { HIO_INFEED = 0, HIO_OUTFEED = 1 };

/* Where infeed bytes come from: fill `bytes` bytes at `offset` of buffer k of IPU ipu's
 * infeed. (io-bench makes synthetic images; a training workload serves its dataset.) */
typedef void (*hio_fill_fn)(void *ctx, uint32_t ipu, uint64_t k, uint64_t offset, uint8_t *dst,
                            uint32_t bytes);

/* Where outfeed bytes go: buffer k of IPU ipu's outfeed, `bytes` bytes at `offset` (the
 * tiles' copies in tile order, as the infeed's), available to the host from device cycle
 * `cycle` (the copy's end). src is valid during the call only. NULL: dropped. */
typedef void (*hio_drain_fn)(void *ctx, uint32_t ipu, uint64_t k, uint64_t offset,
                             const uint8_t *src, uint32_t bytes, uint64_t cycle);

typedef struct hio_cfg {
    host_cfg in;  /* the infeed: loaders, preparation, callback, depth, buffer size */
    host_cfg out; /* the outfeed: depth, host drain time, buffer size */
    hio_fill_fn fill;
    void *fill_ctx;
    hio_drain_fn drain;
    void *drain_ctx;
    /* NULL, or told the cycle at which every IPU and the host met at an external sync with
     * the host (eng_host.meet: a host call's end, where the program marks one) */
    void (*meet)(void *ctx, uint64_t cycle);
    void *meet_ctx;
} hio_cfg;

typedef struct hio hio;

hio *hio_new(const mach *m, const hio_cfg *c, err *e);
void hio_free(hio *h);
/* The interface the engine's port "host" binds to (hw/engine.h: eng_host); it lives as long
 * as h. */
const eng_host *hio_iface(hio *h);

#endif
