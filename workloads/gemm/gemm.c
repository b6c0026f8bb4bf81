/* wl_gemm: the proof on real work — a GEMM over every tile and worker of one IPU.
 *
 * Mapping: C is cut into 4x4 blocks; the tiles form a grid_m x grid_n grid (chosen to
 * minimise the blocks of the busiest tile) and each tile owns a rectangle of blocks with the
 * whole K, so no exchange is needed: the loader writes each tile's A and B panels into its
 * memory, as a Poplar graph's initial tensor placement would. Six workers share a tile's
 * blocks (codelet workloads/gemm/gemm.s). Left out: K-splitting across tiles (a GEMM whose
 * panels do not fit in one tile's memory is refused with the size it would need), and the
 * exchange that would gather C (fabric issue). */
#include "workloads/gemm/gemm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/rng.h"
#include "isa/asm.h"
#include "workloads/codelets.h"

static float uniform(uint64_t *s)
{
    /* 24 random bits -> [-1, 1) exactly representable */
    return (float)(int32_t)(rng_splitmix64(s) >> 40) / 8388608.0f - 1.0f;
}

double wl_gemm_bound(uint32_t k, double sum_abs)
{
    double u = ldexp(1.0, -24), n = (double)k + 1.0;
    return n * u / (1.0 - n * u) * sum_abs + 1e-30;
}

static uint32_t ceil_div(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

static uint32_t align16(uint32_t x)
{
    return (x + 15u) & ~15u;
}

/* Bytes a tile needs after the image for ma x nb blocks of depth k. */
static uint64_t tile_bytes(uint32_t ma, uint32_t nb, uint32_t k)
{
    return (uint64_t)(ma + nb) * k * 16 + (uint64_t)ma * nb * (64 + 12);
}

static void choose_grid(uint32_t mb, uint32_t nb, uint32_t tiles, uint32_t *gm, uint32_t *gn)
{
    uint64_t best = UINT64_MAX;
    *gm = *gn = 1;
    for (uint32_t a = 1; a <= tiles && a <= mb; a++) {
        uint32_t b = tiles / a;
        if (b > nb)
            b = nb;
        uint64_t per = (uint64_t)ceil_div(mb, a) * ceil_div(nb, b);
        /* fewer blocks on the busiest tile first; then less memory (squarer rectangles) */
        uint64_t key = per * 1000000 + (ceil_div(mb, a) + ceil_div(nb, b));
        if (key < best) {
            best = key;
            *gm = a;
            *gn = b;
        }
    }
}

static void put32(uint8_t *mem, uint32_t addr, uint32_t v)
{
    memcpy(mem + addr, &v, 4);
}

/* Where a tile's panels and tables lie: tile (ti, tj) of the gm x gn grid owns block rows
 * [m0, m1) and block columns [n0, n1) of C; after the image at `base` come its A panel
 * (na blocks x K x 16 bytes), its B panel, its C blocks (64 bytes each) and the table of
 * (A, B, C) addresses per block (12 bytes each). */
typedef struct layout {
    uint32_t M, N, K, mb, nb, gm, gn, base, params;
} layout;

typedef struct tile_part {
    uint32_t m0, n0, na, nbk, a_at, b_at, c_at, tab;
} tile_part;

static tile_part part_of(const layout *L, uint32_t ti, uint32_t tj)
{
    tile_part p;
    p.m0 = L->mb * ti / L->gm;
    p.n0 = L->nb * tj / L->gn;
    p.na = L->mb * (ti + 1) / L->gm - p.m0;
    p.nbk = L->nb * (tj + 1) / L->gn - p.n0;
    p.a_at = L->base;
    p.b_at = p.a_at + p.na * L->K * 16;
    p.c_at = p.b_at + p.nbk * L->K * 16;
    p.tab = p.c_at + p.na * p.nbk * 64;
    return p;
}

/* Write tile (ti, tj)'s panels (zero beyond M and N), block table and parameters. */
static void place_tile(const layout *L, uint8_t *mem, uint32_t ti, uint32_t tj, const float *A,
                       const float *B)
{
    const uint32_t K = L->K;
    tile_part p = part_of(L, ti, tj);
    for (uint32_t a = 0; a < p.na; a++)
        for (uint32_t k = 0; k < K; k++)
            for (uint32_t q = 0; q < 4; q++) {
                uint32_t row = (p.m0 + a) * 4 + q;
                float v = row < L->M ? A[(size_t)row * K + k] : 0.0f;
                memcpy(mem + p.a_at + (a * K + k) * 16 + q * 4, &v, 4);
            }
    for (uint32_t b = 0; b < p.nbk; b++)
        for (uint32_t k = 0; k < K; k++)
            for (uint32_t q = 0; q < 4; q++) {
                uint32_t col = (p.n0 + b) * 4 + q;
                float v = col < L->N ? B[(size_t)k * L->N + col] : 0.0f;
                memcpy(mem + p.b_at + (b * K + k) * 16 + q * 4, &v, 4);
            }
    uint32_t blk = 0;
    for (uint32_t a = 0; a < p.na; a++)
        for (uint32_t b = 0; b < p.nbk; b++, blk++) {
            put32(mem, p.tab + blk * 12 + 0, p.a_at + a * K * 16);
            put32(mem, p.tab + blk * 12 + 4, p.b_at + b * K * 16);
            put32(mem, p.tab + blk * 12 + 8, p.c_at + blk * 64);
        }
    put32(mem, L->params + 0, p.na * p.nbk);
    put32(mem, L->params + 4, K);
    put32(mem, L->params + 8, p.tab);
}

/* Compare tile (ti, tj)'s C blocks with a double-precision reference, against the bound. */
static void check_tile(const layout *L, const uint8_t *mem, uint32_t ti, uint32_t tj,
                       const float *A, const float *B, wl_gemm_result *r)
{
    tile_part p = part_of(L, ti, tj);
    for (uint32_t a = 0; a < p.na; a++)
        for (uint32_t b = 0; b < p.nbk; b++)
            for (uint32_t q = 0; q < 16; q++) {
                uint32_t row = (p.m0 + a) * 4 + q / 4, col = (p.n0 + b) * 4 + q % 4;
                if (row >= L->M || col >= L->N)
                    continue;
                float got;
                memcpy(&got, mem + p.c_at + (a * p.nbk + b) * 64 + q * 4, 4);
                double ref = 0, abs_sum = 0;
                for (uint32_t k = 0; k < L->K; k++) {
                    double x = (double)A[(size_t)row * L->K + k] * B[(size_t)k * L->N + col];
                    ref += x;
                    abs_sum += fabs(x);
                }
                double d = fabs((double)got - ref);
                double ratio = d / wl_gemm_bound(L->K, abs_sum);
                if (d > r->max_abs_err || isnan(d))
                    r->max_abs_err = d;
                if (ratio > r->worst_ratio || isnan(ratio))
                    r->worst_ratio = ratio;
                if (!(ratio <= 1.0))
                    r->mismatches++;
            }
}

int wl_gemm_run(const mach *m, const wl_gemm_cfg *cfg, wl_gemm_result *r, sys **out, err *e)
{
    memset(r, 0, sizeof *r);
    *out = NULL;
    const uint32_t M = cfg->m, N = cfg->n, K = cfg->k;
    if (M == 0 || N == 0 || K == 0)
        return err_set(e, ERR_INPUT, "GEMM sizes must be positive (m %u n %u k %u)", M, N, K);
    const char *src = wl_codelet("gemm");
    if (!src)
        return err_set(e, ERR_INPUT, "the gemm codelet is missing from this build");
    isa_prog prog;
    if (asm_assemble("workloads/gemm/gemm.s", src, strlen(src), &prog, e) != ERR_OK)
        return e->status;
    layout L = {.M = M,
                .N = N,
                .K = K,
                .mb = ceil_div(M, 4),
                .nb = ceil_div(N, 4),
                .base = align16(prog.size),
                .params = (uint32_t)isa_prog_sym(&prog, "params")};
    choose_grid(L.mb, L.nb, m->tiles_per_ipu, &L.gm, &L.gn);
    uint64_t need = L.base + tile_bytes(ceil_div(L.mb, L.gm), ceil_div(L.nb, L.gn), K);
    if (need > m->sram_bytes) {
        isa_prog_free(&prog);
        return err_set(e, ERR_INPUT,
                       "GEMM %ux%ux%u does not fit: the busiest tile needs %llu bytes of its %u "
                       "(K-splitting across tiles is not modelled; use a smaller --k)",
                       M, N, K, (unsigned long long)need, m->sram_bytes);
    }
    r->grid_m = L.gm;
    r->grid_n = L.gn;
    r->tiles_used = L.gm * L.gn;
    r->tile_bytes = (uint32_t)need;

    float *A = xmalloc((size_t)M * K * sizeof *A), *B = xmalloc((size_t)K * N * sizeof *B);
    uint64_t s = cfg->seed;
    for (size_t i = 0; i < (size_t)M * K; i++)
        A[i] = uniform(&s);
    for (size_t i = 0; i < (size_t)K * N; i++)
        B[i] = uniform(&s);

    mach mm = *m;
    mm.nipus = 1;
    sys_cfg sc = {.m = mm, .threads = cfg->threads, .max_cycles = cfg->max_cycles};
    sys *sy = sys_new(&sc, e);
    eng *g = sy ? sys_engine(sy) : NULL;
    int rc = g ? eng_load(g, &prog, e) : e->status;
    isa_prog_free(&prog); /* the engine decoded its own copy of the text at eng_load */
    /* tiles outside the grid keep zero memory: their workers find no block */
    for (uint32_t ti = 0; rc == ERR_OK && ti < L.gm; ti++)
        for (uint32_t tj = 0; tj < L.gn; tj++)
            place_tile(&L, eng_tile_mem(g, 0, ti * L.gn + tj), ti, tj, A, B);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rc == ERR_OK)
        rc = eng_run(g, e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->host_seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc == ERR_OK) {
        eng_stats st;
        eng_get_stats(g, &st);
        r->cycles = st.cycles;
        r->seconds = (double)st.cycles / (double)m->clock_hz;
        r->tflops = 2.0 * M * N * (double)K / r->seconds / 1e12;
        r->peak_tflops = mach_fp32_peak_flops(m) / 1e12;
        r->pct_peak = 100.0 * r->tflops / r->peak_tflops;
        r->checked = cfg->check;
        for (uint32_t ti = 0; cfg->check && ti < L.gm; ti++)
            for (uint32_t tj = 0; tj < L.gn; tj++)
                check_tile(&L, eng_tile_mem(g, 0, ti * L.gn + tj), ti, tj, A, B, r);
    }
    free(A);
    free(B);
    if (rc != ERR_OK) {
        sys_free(sy);
        return rc;
    }
    *out = sy;
    return ERR_OK;
}
