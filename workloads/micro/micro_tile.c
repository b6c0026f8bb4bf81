/* micro_tile: microbenchmarks inside the tiles — sync latency, local memory bandwidth and
 * the AMP's fp32 peak.
 *
 * Every program reads the cycle counter ($ccount) before and after the part it measures and
 * stores both at the top of tile memory; the figures come from those counters. Sync: a run of
 * unrolled `sync internal` (or `sync external` across 2..16 IPUs); per sync = (cycles counted -
 * the first `get`'s own cycle) / syncs, minus the sync instruction's own 6 cycles. Memory: six workers
 * per tile each run a zero-overhead `rpt` of ld128pi (or st64pi) over their own buffer; bytes /
 * cycles, per tile and over the whole IPU. AMP: six workers per tile each run a `rpt` of
 * `amp` on every tile; 2 x 16 MAC per `amp` / time (an `amp` takes 16 / amp_macs_per_issue
 * issue slots, so Mk1's preset halves the rate). The counted span includes starting and
 * joining the workers (about 45 cycles against 6 x 1024), as a real measurement would.
 *
 * Left out: memory bank conflicts and the tile's interleaved/non-interleaved regions (the
 * model has neither), and sync with the host. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/micro/micro_int.h"

enum {
    NSYNC = 32,      /* unrolled syncs per run */
    EXT_TILES = 16,  /* tiles per IPU for external syncs (their latency has no tile term) */
    LOOP = 1024,     /* rpt iterations per worker: memory */
    AMP_LOOP = 4096, /* rpt iterations per worker: AMP (its start and end cost more) */
};

/* Where a program leaves its two counters: the top 16 bytes of tile memory. */
static uint32_t res_addr(const mach *m)
{
    return (m->sram_bytes - 16) & ~15u;
}

/* ---- sync ---- */

static int sync_run(const mach *m, const wl_micro_cfg *cfg, uint32_t nipus, uint32_t ntiles,
                    const char *zone, double *per_sync, err *e)
{
    txt s = {0};
    txt_printf(&s, "main:   get     r10, $ccount\n");
    for (int k = 0; k < NSYNC; k++)
        txt_printf(&s, "        sync    %s\n", zone);
    txt_printf(&s,
               "        get     r11, $ccount\n"
               "        li      r2, %u\n"
               "        st32    r10, [r2+0]\n"
               "        st32    r11, [r2+4]\n"
               "        halt\n",
               res_addr(m));
    char *text = txt_take(&s);
    micro_prog p = {.src = text, .nipus = nipus, .ntiles = ntiles, .reserve = 16};
    micro_run r;
    int rc = micro_run_prog(m, &p, cfg, &r, e);
    free(text);
    if (rc == ERR_OK) {
        uint32_t t0 = micro_rd32(r.g, 0, 0, res_addr(m)),
                 t1 = micro_rd32(r.g, 0, 0, res_addr(m) + 4);
        *per_sync = (double)(t1 - t0 - 1) / NSYNC - 6;
    }
    micro_run_free(&r);
    return rc;
}

int micro_sync(const mach *m, const wl_micro_cfg *cfg, wl_micro_table *t, err *e)
{
    double v;
    int rc = sync_run(m, cfg, 1, m->tiles_per_ipu, "internal", &v, e);
    if (rc == ERR_OK)
        micro_add(t, "sync", "cycles", v, micro_implied_sync_internal(m),
                  micro_published_for(m).sync_internal, "internal sync, %u tiles",
                  m->tiles_per_ipu);
    uint32_t ntiles = m->tiles_per_ipu < EXT_TILES ? m->tiles_per_ipu : EXT_TILES;
    for (uint32_t n = 2; rc == ERR_OK && n <= 16; n *= 2) {
        rc = sync_run(m, cfg, n, ntiles, "external", &v, e);
        if (rc == ERR_OK)
            micro_add(t, "sync", "cycles", v, micro_implied_sync_external(m, n), NAN,
                      "external sync, %u IPUs", n);
    }
    return rc;
}

/* ---- memory and AMP: six workers per tile, on every tile ---- */

typedef struct span {
    double tile0; /* cycles of tile 0 */
    double ipu;   /* cycles from the earliest start to the latest end over the IPU */
} span;

/* Run `body` (one worker instruction using r0 as its pointer) LOOP times in six workers on
 * every tile; worker w's r0 starts at buf + w x stride. `tail` runs after the loop. */
static int workers_run(const mach *m, const wl_micro_cfg *cfg, const char *head, const char *body,
                       uint32_t loop, const char *tail, uint32_t buf, uint32_t stride,
                       uint32_t reserve, micro_setup_fn setup, void *ctx, span *sp, micro_run *r,
                       err *e)
{
    memset(r, 0, sizeof *r);
    txt s = {0};
    txt_printf(&s,
               "main:   get     r10, $ccount\n"
               "        li      r1, %u\n"
               "        runall  worker, r1\n"
               "        join\n"
               "        get     r11, $ccount\n"
               "        li      r2, %u\n"
               "        st32    r10, [r2+0]\n"
               "        st32    r11, [r2+4]\n"
               "        halt\n"
               "worker: get     r1, $wid\n"
               "        muli    r1, r1, %u\n"
               "        add     r0, r0, r1\n"
               "%s"
               "        li      r2, %u\n"
               "        rpt     r2, end\n"
               "        %s\n"
               "end:\n%s"
               "        exit\n",
               buf, res_addr(m), stride, head, loop, body, tail);
    char *text = txt_take(&s);
    micro_prog p = {.src = text,
                    .nipus = 1,
                    .ntiles = m->tiles_per_ipu,
                    .reserve = reserve,
                    .setup = setup,
                    .ctx = ctx};
    int rc = micro_run_prog(m, &p, cfg, r, e);
    free(text);
    if (rc != ERR_OK)
        return rc;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t x = 0; x < m->tiles_per_ipu; x++) {
        uint32_t t0 = micro_rd32(r->g, 0, x, res_addr(m)),
                 t1 = micro_rd32(r->g, 0, x, res_addr(m) + 4);
        lo = t0 < lo ? t0 : lo;
        hi = t1 > hi ? t1 : hi;
        if (x == 0)
            sp->tile0 = (double)(t1 - t0);
    }
    sp->ipu = (double)(hi - lo);
    return ERR_OK;
}

int micro_memory(const mach *m, const wl_micro_cfg *cfg, wl_micro_table *t, err *e)
{
    /* the stride fits the wider access; each pass moves width x LOOP bytes per worker */
    uint32_t stride = LOOP * MICRO_LOAD_BYTES, reserve = ISA_NWORKERS * stride + 16;
    if (reserve > m->sram_bytes / 2)
        return err_set(e, ERR_INPUT, "memory: %u bytes of tile memory are too few", m->sram_bytes);
    uint32_t buf = (res_addr(m) - ISA_NWORKERS * stride) & ~15u;
    const unsigned width[2] = {MICRO_LOAD_BYTES, MICRO_STORE_BYTES};
    double tiles = m->tiles_per_ipu;
    micro_published pub = micro_published_for(m);
    const char *what[2] = {"load", "store"},
               *body[2] = {"ld128pi r4, [r0]+=16", "st64pi  r4, [r0]+=8"};
    double implied[2] = {micro_implied_load(m), micro_implied_store(m)};
    double published[2] = {pub.load, pub.store};
    int rc = ERR_OK;
    for (int k = 0; k < 2 && rc == ERR_OK; k++) {
        double bytes = (double)ISA_NWORKERS * LOOP * width[k];
        span sp;
        micro_run r;
        rc = workers_run(m, cfg, "", body[k], LOOP, "", buf, stride, reserve, NULL, NULL, &sp, &r,
                         e);
        micro_run_free(&r);
        if (rc == ERR_OK)
            micro_add(t, "memory", "B/cycle", bytes / sp.tile0, implied[k], published[k],
                      "%s bandwidth, one tile (6 workers, %s)", what[k], k ? "st64pi" : "ld128pi");
        if (rc == ERR_OK)
            micro_add(t, "memory", "TB/s", bytes * tiles / sp.ipu * (double)m->clock_hz / 1e12,
                      implied[k] * tiles * (double)m->clock_hz / 1e12, NAN,
                      "%s bandwidth, whole IPU (%u tiles)", what[k], m->tiles_per_ipu);
    }
    return rc;
}

/* Tile 0's operands are ones, so each accumulator must end at AMP_LOOP; other tiles read zeros
 * (same timing). */
static void amp_setup(eng *g, void *ctx)
{
    uint32_t buf = *(const uint32_t *)ctx;
    const float one = 1.0f;
    uint8_t *mem = eng_tile_mem(g, 0, 0);
    for (uint32_t i = 0; i < AMP_LOOP * 4; i++)
        memcpy(mem + buf + 4 * i, &one, 4);
}

int micro_amp(const mach *m, const wl_micro_cfg *cfg, wl_micro_table *t, err *e)
{
    /* one buffer of LOOP x 16 bytes read as both operands; each worker's 16 accumulators are
     * stored (ampst, 64 bytes) below it */
    uint32_t abytes = AMP_LOOP * 16, cbytes = ISA_NWORKERS * 64, reserve = abytes + cbytes + 16;
    if (reserve > m->sram_bytes / 2)
        return err_set(e, ERR_INPUT, "amp: %u bytes of tile memory are too few", m->sram_bytes);
    uint32_t abuf = (res_addr(m) - abytes) & ~15u, cbuf = (abuf - cbytes) & ~15u;
    char head[160], tail[160];
    snprintf(head, sizeof head, "        mov     r3, r0\n        ampz\n");
    snprintf(tail, sizeof tail,
             "        get     r1, $wid\n        muli    r1, r1, 64\n"
             "        li      r2, %u\n        add     r2, r2, r1\n"
             "        ampst   r2\n",
             cbuf);
    span sp;
    micro_run r;
    int rc = workers_run(m, cfg, head, "amp     r0, r3", AMP_LOOP, tail, abuf, 0, reserve,
                         amp_setup, &abuf, &sp, &r, e);
    for (uint32_t i = 0; rc == ERR_OK && i < ISA_NWORKERS * 16; i++) {
        float v;
        memcpy(&v, eng_tile_mem(r.g, 0, 0) + cbuf + 4 * i, 4);
        if (v != (float)AMP_LOOP)
            rc = err_set(e, ERR_INPUT, "amp: accumulator %u of tile 0 is %g, expected %d", i,
                         (double)v, AMP_LOOP);
    }
    micro_run_free(&r);
    double flops = 2.0 * MICRO_AMP_MACS * AMP_LOOP * ISA_NWORKERS * m->tiles_per_ipu;
    if (rc == ERR_OK)
        micro_add(t, "amp", "TFLOPS", flops / sp.ipu * (double)m->clock_hz / 1e12,
                  micro_implied_amp(m) / 1e12, micro_published_for(m).fp32 / 1e12,
                  "AMP fp32 peak, %u tiles x 6 workers", m->tiles_per_ipu);
    return rc;
}
