/* micro_tile: microbenchmarks inside the tiles — sync latency, local memory bandwidth and
 * the AMP's fp32 peak.
 *
 * Every program reads the cycle counter ($ccount) before and after the part it measures and
 * stores both at the top of tile memory; the figures come from those counters. Sync: a run of
 * unrolled `sync internal` (or `sync external` across 2..16 IPUs); per sync = (cycles counted -
 * the first `get`'s own cycle) / syncs, minus the sync instruction's own 6 cycles. Memory: six workers
 * per tile each run a zero-overhead `rpt` of ld128pi (or st64pi) over their own buffer; bytes /
 * cycles, per tile and over the whole IPU; an access wider than the preset's bytes per
 * cycle takes more issue slots (docs/timing.md, "Memory bandwidth"), so the figure is what
 * the program gets. AMP: the supervisor loads the weights (32 ldcw, before the counted span),
 * then six workers per tile each run a `rpt` of 1024 `f32amp` steps and drain with `ampst`,
 * on every tile; 2 x 16 MAC per step / time (f32amp needs 16 AMP units: 2 slots on Mk1).
 * The counted span includes starting, draining and joining the workers (about 90 cycles
 * against 6 x 1024), as a real measurement would.
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
    AMP_LOOP = 1024, /* f32amp steps per worker: AMP (128 rows of partials each) */
};

/* Where a program leaves its two counters: the top 16 bytes of tile memory. */
static uint32_t res_addr(const mach *m)
{
    return (m->sram_bytes - 16) & ~15u;
}

/* ---- sync ---- */

static int sync_run(const mach *m, const micro_cfg *cfg, uint32_t nipus, uint32_t ntiles,
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

int micro_sync(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
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

/* A program of six workers on every tile: the supervisor runs `sup` (before the first
 * counter), then the workers; worker w's r0 starts at buf + w x stride, it runs `head`,
 * `body` (one instruction) `loop` times in a zero-overhead rpt, then `tail`. */
typedef struct wk_prog {
    const char *sup, *head, *body, *tail;
    uint32_t loop, buf, stride, reserve;
    micro_setup_fn setup;
    void *ctx;
} wk_prog;

static int workers_run(const mach *m, const micro_cfg *cfg, const wk_prog *w, span *sp,
                       micro_run *r, err *e)
{
    memset(r, 0, sizeof *r);
    txt s = {0};
    txt_printf(&s,
               "main:\n%s"
               "        get     r10, $ccount\n"
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
               w->sup, w->buf, res_addr(m), w->stride, w->head, w->loop, w->body, w->tail);
    char *text = txt_take(&s);
    micro_prog p = {.src = text,
                    .nipus = 1,
                    .ntiles = m->tiles_per_ipu,
                    .reserve = w->reserve,
                    .setup = w->setup,
                    .ctx = w->ctx};
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

int micro_memory(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
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
        wk_prog w = {.sup = "",
                     .head = "",
                     .body = body[k],
                     .tail = "",
                     .loop = LOOP,
                     .buf = buf,
                     .stride = stride,
                     .reserve = reserve};
        rc = workers_run(m, cfg, &w, &sp, &r, e);
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

/* Where the AMP benchmark's data lie, below the counters: weights (512 bytes), inputs
 * shared by the workers, then each worker's partials. */
typedef struct amp_buf {
    uint32_t w, in, part;
} amp_buf;

/* Tile 0's weights and inputs are ones, so every lane of every row ends at 8 (0 + 8 x 1 x 1);
 * other tiles read zeros (same timing). */
static void amp_setup(eng *g, void *ctx)
{
    const amp_buf *b = ctx;
    const float one = 1.0f;
    uint8_t *mem = eng_tile_mem(g, 0, 0);
    for (uint32_t i = 0; i < ISA_CW_BYTES / 4; i++)
        memcpy(mem + b->w + 4 * i, &one, 4);
    for (uint32_t i = 0; i < AMP_LOOP; i++)
        memcpy(mem + b->in + 4 * i, &one, 4);
}

int micro_amp(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    /* AMP_LOOP f32amp steps per worker = AMP_LOOP / 8 rows: 4 bytes of input a step (shared),
     * 8 bytes of partials a step (each worker its own) */
    uint32_t pbytes = AMP_LOOP * 8, reserve = ISA_CW_BYTES + AMP_LOOP * 4 + 6 * pbytes + 16;
    if (reserve > m->sram_bytes / 2)
        return err_set(e, ERR_INPUT, "amp: %u bytes of tile memory are too few", m->sram_bytes);
    amp_buf b;
    b.w = (res_addr(m) - ISA_CW_BYTES) & ~15u;
    b.in = (b.w - AMP_LOOP * 4) & ~15u;
    b.part = (b.in - 6 * pbytes) & ~15u;
    txt sup = {0};
    txt_printf(&sup, "        li      r3, %u\n", b.w);
    for (unsigned k = 0; k < ISA_CW_SLOTS; k++)
        txt_printf(&sup, "        ldcw    %u, r3\n", k);
    char *suptext = txt_take(&sup), head[64];
    snprintf(head, sizeof head, "        li      r3, %u\n", b.in);
    wk_prog w = {.sup = suptext,
                 .head = head,
                 .body = "f32amp  r0, r3",
                 .tail = "        ampst\n",
                 .loop = AMP_LOOP,
                 .buf = b.part,
                 .stride = pbytes,
                 .reserve = reserve,
                 .setup = amp_setup,
                 .ctx = &b};
    span sp;
    micro_run r;
    int rc = workers_run(m, cfg, &w, &sp, &r, e);
    free(suptext);
    if (rc == ERR_OK)
        eng_share_mem(r.g, 0, 0, b.part, 6 * pbytes); /* from its owner */
    for (uint32_t i = 0; rc == ERR_OK && i < 6 * pbytes / 4; i++) {
        float v;
        memcpy(&v, eng_tile_mem(r.g, 0, 0) + b.part + 4 * i, 4);
        if (v != 8.0f)
            rc = err_set(e, ERR_INPUT, "amp: partial %u of tile 0 is %g, expected 8", i, (double)v);
    }
    micro_run_free(&r);
    double flops = 2.0 * MICRO_AMP_MACS * AMP_LOOP * ISA_NWORKERS * m->tiles_per_ipu;
    if (rc == ERR_OK)
        micro_add(t, "amp", "TFLOPS", flops / sp.ipu * (double)m->clock_hz / 1e12,
                  micro_implied_amp(m) / 1e12, micro_published_for(m).fp32 / 1e12,
                  "AMP fp32 peak, %u tiles x 6 workers", m->tiles_per_ipu);
    return rc;
}
