/* micro_pp: ping-pong latency programs — one tile sends a block to another, they sync, the
 * other sends the block back, they sync, N round trips, timed by the first tile's own cycle
 * counter; the on-chip (send, sync internal) and IPU-Link (gsend, sync external) latency rows.
 *
 * A pair is tile A (the timer) and tile B, on one IPU or on two. Every tile of the system runs
 * the program; the ones in neither role only take part in the syncs. A half trip from a sync
 * release r: the sender issues `li` (the block's address) at r and `send`/`gsend` at r + 1,
 * then `sync`; the other tile goes straight to `sync`. The block is PP_WORDS port cycles long
 * (PP_WORDS x xchg_bytes_per_cycle bytes), so its last word lands PP_WORDS cycles after its
 * first, later than either tile reaches the sync (a sync arrives 6 cycles after it issues, and
 * no sooner than the port is idle); so the release waits for the last word:
 *   next release = r + li + L + PP_WORDS + S
 * where L is the one-way latency to the first word (the figure) and S the zone's sync latency.
 * A reads $ccount right after an aligning sync (t0) and right after the last release (t1);
 * the first `li` issues one `get` after t0, so
 *   t1 - t0 = get + 2N (li + L + PP_WORDS + S)
 *   L = (t1 - t0 - get) / 2N - li - PP_WORDS - S
 * with get and li the supervisor costs from isa/opcodes.def (1 each), and S the preset's
 * sync_internal (on chip) or external sync for 2 IPUs (mach_sync_external), the fixed costs
 * the `sync` row measures on its own. B echoes block k from its receive buffer into slot k of
 * A's table, so a round trip completes only once A's block k has reached B; the benchmark
 * checks every word of every echoed block.
 *
 * Left out: for the IPU-Link pair, a connection slower than a tile's port (under ~4 B/cycle)
 * would land the last word later than PP_WORDS after the first and add its serialisation to L;
 * the presets' links are 8-12x faster. */
#include <stdlib.h>

#include "isa/isa.h"
#include "workloads/micro/micro_int.h"

enum { PP_TOKEN = 0x7e000000u };

/* Where a pair keeps its blocks, on every tile (top of memory): A's blocks to send (tx) and
 * echoed blocks (rx), one table per pair, B's receive buffer, A's two counters per pair. */
typedef struct pp_mem {
    uint32_t bytes, tx, rx, buf, res, top;
} pp_mem;

static pp_mem pp_layout(const mach *m, size_t npairs)
{
    pp_mem a;
    a.bytes = PP_WORDS * m->xchg_bytes_per_cycle;
    uint32_t table = PP_TRIPS * a.bytes;
    a.top = (m->sram_bytes - 16) & ~15u;
    a.res = (a.top - 8 * (uint32_t)npairs) & ~15u;
    a.buf = (a.res - a.bytes) & ~15u;
    a.rx = (a.buf - (uint32_t)npairs * table) & ~15u;
    a.tx = (a.rx - (uint32_t)npairs * table) & ~15u;
    return a;
}

static uint32_t pp_token(size_t pair, uint32_t k, uint32_t word)
{
    return PP_TOKEN | (uint32_t)pair << 16 | k << 8 | word;
}

typedef struct pp_ctx {
    const micro_pair *p;
    size_t n;
    pp_mem a;
} pp_ctx;

/* A's blocks: block k of pair j holds pp_token(j, k, word). */
static void pp_setup(eng *g, void *ctx)
{
    const pp_ctx *c = ctx;
    uint32_t table = PP_TRIPS * c->a.bytes;
    for (size_t j = 0; j < c->n; j++)
        for (uint32_t k = 0; k < PP_TRIPS; k++)
            for (uint32_t w = 0; w < c->a.bytes / 4; w++)
                micro_wr32(g, c->p[j].a_ipu, c->p[j].a_tile,
                           c->a.tx + (uint32_t)j * table + k * c->a.bytes + 4 * w,
                           pp_token(j, k, w));
}

static uint32_t pp_id(uint32_t ipu, uint32_t tile)
{
    return ipu << 16 | tile;
}

/* The destination operand of a send to (ipu, tile): a tile id on chip, ipu << 16 | tile over
 * the links. */
static uint32_t pp_dst(int global, uint32_t ipu, uint32_t tile)
{
    return global ? pp_id(ipu, tile) : tile;
}

/* Pair j's code: dispatch on the tile's id (r1), then A's, B's or a bystander's syncs. */
static void pp_pair_code(txt *s, const micro_pair *p, size_t j, const pp_mem *a, int global)
{
    const char *op = global ? "gsend" : "send", *z = global ? "external" : "internal";
    uint32_t table = PP_TRIPS * a->bytes, tx = a->tx + (uint32_t)j * table,
             rx = a->rx + (uint32_t)j * table;
    txt_printf(s,
               "        cmpeqi  r3, r1, %u\n        brnz    r3, a%zu\n"
               "        cmpeqi  r3, r1, %u\n        brnz    r3, b%zu\n",
               pp_id(p->a_ipu, p->a_tile), j, pp_id(p->b_ipu, p->b_tile), j);
    for (int k = 0; k < 2 * PP_TRIPS + 1; k++)
        txt_printf(s, "        sync    %s\n", z);
    txt_printf(s, "        br      e%zu\n", j);
    /* A: the timer */
    txt_printf(s,
               "a%zu:     li      r4, %u\n        li      r6, %u\n        li      r7, %u\n"
               "        sync    %s\n        get     r10, $ccount\n",
               j, a->bytes, a->buf, pp_dst(global, p->b_ipu, p->b_tile), z);
    for (uint32_t k = 0; k < PP_TRIPS; k++)
        txt_printf(s,
                   "        li      r5, %u\n        %-7s r5, r4, r7, r6\n"
                   "        sync    %s\n        sync    %s\n",
                   tx + k * a->bytes, op, z, z);
    txt_printf(s,
               "        get     r11, $ccount\n        li      r8, %u\n"
               "        st32    r10, [r8+0]\n        st32    r11, [r8+4]\n        br      e%zu\n",
               a->res + 8 * (uint32_t)j, j);
    /* B: echoes block k from its buffer into slot k of A's table */
    txt_printf(s,
               "b%zu:     li      r4, %u\n        li      r6, %u\n        li      r7, %u\n"
               "        sync    %s\n",
               j, a->bytes, a->buf, pp_dst(global, p->a_ipu, p->a_tile), z);
    for (uint32_t k = 0; k < PP_TRIPS; k++)
        txt_printf(s,
                   "        sync    %s\n        li      r5, %u\n        %-7s r6, r4, r7, r5\n"
                   "        sync    %s\n",
                   z, rx + k * a->bytes, op, z);
    txt_printf(s, "e%zu:\n", j);
}

static char *pp_program(const micro_pair *p, size_t n, const pp_mem *a, int global)
{
    txt s = {0};
    txt_printf(&s, "main:   get     r1, $ipu\n        shli    r1, r1, 16\n"
                   "        get     r2, $tile\n        or      r1, r1, r2\n");
    for (size_t j = 0; j < n; j++)
        pp_pair_code(&s, &p[j], j, a, global);
    txt_printf(&s, "        halt\n");
    return txt_take(&s);
}

/* Every word A got back must be the one it sent in that round trip. */
static int pp_check(eng *g, const micro_pair *p, size_t n, const pp_mem *a, const char *bench,
                    err *e)
{
    uint32_t table = PP_TRIPS * a->bytes;
    for (size_t j = 0; j < n; j++)
        for (uint32_t k = 0; k < PP_TRIPS; k++)
            for (uint32_t w = 0; w < a->bytes / 4; w++) {
                uint32_t v = micro_rd32(g, p[j].a_ipu, p[j].a_tile,
                                        a->rx + (uint32_t)j * table + k * a->bytes + 4 * w);
                if (v != pp_token(j, k, w))
                    return err_set(e, ERR_INPUT,
                                   "%s: pair %zu, round trip %u, word %u came back as 0x%08x, "
                                   "sent 0x%08x",
                                   bench, j, k, w, v, pp_token(j, k, w));
            }
    return ERR_OK;
}

int micro_pingpong(const mach *m, const micro_cfg *cfg, const micro_pair *p, size_t n,
                   uint32_t nipus, uint32_t ntiles, uint64_t sync_cycles, const char *bench,
                   double *lat, err *e)
{
    if (m->xchg_bytes_per_cycle == 0 || m->xchg_bytes_per_cycle > 1024)
        return err_set(e, ERR_INPUT, "%s: xchg_bytes_per_cycle = %u", bench,
                       m->xchg_bytes_per_cycle);
    int global = nipus > 1;
    pp_mem a = pp_layout(m, n);
    if (a.tx > a.top || a.tx < m->sram_bytes / 2)
        return err_set(e, ERR_INPUT, "%s: %u bytes of tile memory are too few", bench,
                       m->sram_bytes);
    char *text = pp_program(p, n, &a, global);
    pp_ctx c = {p, n, a};
    micro_prog pr = {.src = text,
                     .nipus = nipus,
                     .ntiles = ntiles,
                     .reserve = m->sram_bytes - a.tx,
                     .setup = pp_setup,
                     .ctx = &c};
    micro_run r;
    int rc = micro_run_prog(m, &pr, cfg, &r, e);
    free(text);
    if (rc == ERR_OK)
        rc = pp_check(r.g, p, n, &a, bench, e);
    double get = isa_info(OP_get)->scycles, li = isa_info(OP_li)->scycles;
    for (size_t j = 0; rc == ERR_OK && j < n; j++) {
        uint32_t t0 = micro_rd32(r.g, p[j].a_ipu, p[j].a_tile, a.res + 8 * (uint32_t)j),
                 t1 = micro_rd32(r.g, p[j].a_ipu, p[j].a_tile, a.res + 8 * (uint32_t)j + 4);
        double half = (double)(t1 - t0 - get) / (2.0 * PP_TRIPS);
        lat[j] = half - li - PP_WORDS - (double)sync_cycles;
    }
    micro_run_free(&r);
    return rc;
}
