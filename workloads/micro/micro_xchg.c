/* micro_xchg: on-chip exchange microbenchmarks — latency against distance, one tile's
 * streaming bandwidth, and the all-to-all bandwidth of a whole IPU.
 *
 * Latency: a ping-pong (micro_pp.c) between tile 0 and a tile of its supertile, the far end of
 * its column and the last tile of the IPU, 16 round trips each, timed by tile 0's $ccount;
 * one-way latency = (counted cycles - get) / 32 - li - 8 block words - sync_internal.
 * Bandwidth of one tile: tile 0 streams a 64 KiB block to the last tile;
 * bytes / (end of the last word - send). All-to-all: every tile of the IPU sends a block in
 * each of a few shift rounds (round r: tile s to tile s + shift_r), scheduled by the exchange
 * compiler (xcomp_schedule) and run as the code it emits (xcomp_emit); bytes received / the
 * engine's on-chip exchange cycles (first send to last word landed).
 *
 * Left out: congestion (the fabric model has none: the paper's +24% under full load is not
 * modelled, see docs/fabric.md). The all-to-all keeps to a few rounds because the emitted
 * exchange code holds every tile's sends and is loaded on every tile; it runs one superstep
 * per round, because the greedy scheduler, given all rounds as one set, can land a whole
 * block late (docs/fabric.md, "Microbenchmarks"); all rounds land in one receive buffer (the
 * benchmark measures time, not contents). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/micro/micro_int.h"
#include "workloads/xcomp.h"

static const char *B = "xchg-latency";
static const char *BW = "xchg-bandwidth";

/* ---- latency ---- */

int micro_xchg_latency(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    uint32_t n = m->tiles_per_ipu;
    if (n < 2)
        return err_set(e, ERR_INPUT, "xchg-latency needs at least 2 tiles per IPU");
    uint32_t col_end = (m->tiles_per_column < n ? m->tiles_per_column : n) - 1;
    const micro_pair pair[3] = {{0, 0, 0, 1}, {0, 0, 0, col_end}, {0, 0, 0, n - 1}};
    const char *label[3] = {"same supertile", "same column, far end", "far column"};
    double lat[3];
    int rc = micro_pingpong(m, cfg, pair, 3, 1, n, m->sync_internal, B, lat, e);
    for (int k = 0; rc == ERR_OK && k < 3; k++)
        micro_add(t, B, "cycles", lat[k], micro_implied_xchg_latency(m, 0, pair[k].b_tile), NAN,
                  "exchange latency, tile 0 <-> %u (%s)", pair[k].b_tile, label[k]);
    return rc;
}

/* ---- bandwidth of one tile ---- */

static int tile_bandwidth(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    uint32_t n = m->tiles_per_ipu, bytes = 64 * 1024;
    while (bytes > m->sram_bytes / 4)
        bytes /= 2;
    uint32_t src = (m->sram_bytes - 2 * bytes) & ~15u, dst = (m->sram_bytes - bytes) & ~15u;
    txt s = {0};
    txt_printf(&s,
               "main:   get     r1, $tile\n"
               "        brnz    r1, done\n"
               "        li      r2, %u\n"
               "        li      r3, %u\n"
               "        li      r4, %u\n"
               "        li      r5, %u\n"
               "        send    r2, r3, r4, r5\n"
               "done:   sync    internal\n"
               "        halt\n",
               src, bytes, n - 1, dst);
    char *text = txt_take(&s);
    micro_prog p = {.src = text, .nipus = 1, .ntiles = n, .reserve = 2 * bytes + 32};
    micro_run r;
    int rc = micro_run_prog(m, &p, cfg, &r, e);
    free(text);
    if (rc == ERR_OK && r.ntr != 1)
        rc = err_set(e, ERR_INPUT, "xchg-bandwidth: %zu streams delivered, expected 1", r.ntr);
    if (rc == ERR_OK)
        micro_add(t, BW, "B/cycle", (double)bytes / (double)(r.tr[0].end - r.tr[0].send),
                  micro_implied_tile_xchg(m), micro_published_for(m).tile_xchg,
                  "exchange bandwidth, one tile (%u KiB, tile 0 -> %u)", bytes / 1024, n - 1);
    micro_run_free(&r);
    return rc;
}

/* ---- all-to-all over a whole IPU ---- */

enum {
    A2A_ROUNDS = 3,         /* shift rounds, one superstep each */
    A2A_BYTES = 24000,      /* block per tile and round, when tile memory allows */
    A2A_CODE_PER_SEND = 56, /* bytes of emitted code per send: 4 li, send, ret, table word */
};

/* Emit one round's exchange (tile s sends `bytes` to s + shift) as subroutine xcR. */
static char *a2a_round(const mach *m, uint32_t n, uint32_t r, uint32_t shift, uint32_t bytes,
                       uint32_t src, uint32_t dst, err *e)
{
    xcomp_xfer *x = xcalloc(n, sizeof *x);
    for (uint32_t s = 0; s < n; s++)
        x[s] = (xcomp_xfer){s, (s + shift) % n, 1, bytes, src, dst, 0};
    xcomp_plan plan;
    char label[16], *code = NULL;
    snprintf(label, sizeof label, "xc%u", r);
    if (xcomp_schedule(m, n, x, n, &plan, e) == ERR_OK)
        code = xcomp_emit(n, x, n, label, e);
    free(x);
    return code;
}

static int all_to_all(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    uint32_t n = m->tiles_per_ipu, R = A2A_ROUNDS;
    if (n < 2)
        return err_set(e, ERR_INPUT, "xchg-bandwidth needs at least 2 tiles per IPU");
    /* Every tile holds the whole exchange code (all tiles' sends): the block is what is left,
     * halved (send and receive buffers), up to A2A_BYTES. */
    uint64_t code = (uint64_t)R * n * A2A_CODE_PER_SEND + 1024;
    uint64_t left = m->sram_bytes > code ? (m->sram_bytes - code) / 2 : 0;
    uint32_t bytes = (uint32_t)(left < A2A_BYTES ? left : A2A_BYTES) & ~15u;
    if (bytes < 1024)
        return err_set(e, ERR_INPUT,
                       "xchg-bandwidth: %u tiles' exchange code leaves no room "
                       "for buffers in %u bytes of tile memory",
                       n, m->sram_bytes);
    uint32_t src = (m->sram_bytes - 2 * bytes) & ~15u, dst = (m->sram_bytes - bytes) & ~15u;
    txt s = {0};
    for (uint32_t r = 0; r < R; r++)
        txt_printf(&s, "%s       call    xc%u\n        sync    internal\n", r ? "" : "main:", r);
    txt_printf(&s, "        halt\n");
    int rc = ERR_OK;
    uint32_t shift[A2A_ROUNDS];
    for (uint32_t r = 0; r < R && rc == ERR_OK; r++) {
        /* near neighbours first, then a third and two thirds of the way round the chip */
        shift[r] = 1 + r * (n / R);
        char *c = a2a_round(m, n, r, shift[r], bytes, src, dst, e);
        if (!c)
            rc = e->status;
        else
            txt_put(&s, c);
        free(c);
    }
    char *text = txt_take(&s);
    micro_run run = {0};
    micro_prog p = {.src = text, .nipus = 1, .ntiles = n, .reserve = 2 * bytes + 32};
    if (rc == ERR_OK)
        rc = micro_run_prog(m, &p, cfg, &run, e);
    free(text);
    eng_ipu_stats st = {0};
    if (rc == ERR_OK)
        eng_get_ipu_stats(run.g, 0, &st);
    uint64_t want = (uint64_t)n * R * bytes;
    if (rc == ERR_OK && (st.xchg_bytes != want || st.xchg_cycles == 0))
        rc = err_set(e, ERR_INPUT, "xchg-bandwidth: %llu bytes exchanged, expected %llu",
                     (unsigned long long)st.xchg_bytes, (unsigned long long)want);
    if (rc == ERR_OK)
        micro_add(t, BW, "TB/s",
                  (double)st.xchg_bytes / (double)st.xchg_cycles * (double)m->clock_hz / 1e12,
                  micro_implied_ipu_xchg(m) / 1e12, micro_published_for(m).ipu_xchg / 1e12,
                  "all-to-all, %u tiles, shifts %u/%u/%u, %u B each", n, shift[0], shift[1],
                  shift[2], bytes);
    micro_run_free(&run);
    return rc;
}

int micro_xchg_bandwidth(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    int rc = tile_bandwidth(m, cfg, t, e);
    return rc == ERR_OK ? all_to_all(m, cfg, t, e) : rc;
}
