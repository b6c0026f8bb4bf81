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

int wl_gemm_run(const mach *m, const wl_gemm_cfg *cfg, wl_gemm_result *r, eng **out, err *e)
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
    int64_t params = isa_prog_sym(&prog, "params");

    const uint32_t mb = ceil_div(M, 4), nb = ceil_div(N, 4);
    uint32_t gm, gn;
    choose_grid(mb, nb, m->tiles_per_ipu, &gm, &gn);
    const uint32_t base = align16(prog.size);
    uint64_t need = base + tile_bytes(ceil_div(mb, gm), ceil_div(nb, gn), K);
    if (need > m->sram_bytes) {
        isa_prog_free(&prog);
        return err_set(e, ERR_INPUT,
                       "GEMM %ux%ux%u does not fit: the busiest tile needs %llu bytes of its %u "
                       "(K-splitting across tiles is not modelled; use a smaller --k)",
                       M, N, K, (unsigned long long)need, m->sram_bytes);
    }
    r->grid_m = gm;
    r->grid_n = gn;
    r->tiles_used = gm * gn;
    r->tile_bytes = (uint32_t)need;

    /* inputs */
    float *A = xmalloc((size_t)M * K * sizeof *A), *B = xmalloc((size_t)K * N * sizeof *B);
    uint64_t s = cfg->seed;
    for (size_t i = 0; i < (size_t)M * K; i++)
        A[i] = uniform(&s);
    for (size_t i = 0; i < (size_t)K * N; i++)
        B[i] = uniform(&s);

    mach mm = *m;
    mm.nipus = 1;
    eng_cfg ec = {.m = mm, .threads = cfg->threads, .max_cycles = cfg->max_cycles};
    eng *g = eng_new(&ec, e);
    int rc = g ? eng_load(g, &prog, e) : e->status;
    if (rc != ERR_OK)
        goto out;

    /* place panels, blocks and tables; tiles outside the grid get zero blocks */
    for (uint32_t ti = 0; ti < gm; ti++) {
        for (uint32_t tj = 0; tj < gn; tj++) {
            uint8_t *mem = eng_tile_mem(g, 0, ti * gn + tj);
            uint32_t m0 = mb * ti / gm, m1 = mb * (ti + 1) / gm;
            uint32_t n0 = nb * tj / gn, n1 = nb * (tj + 1) / gn;
            uint32_t na = m1 - m0, nbk = n1 - n0;
            uint32_t a_at = base, b_at = a_at + na * K * 16, c_at = b_at + nbk * K * 16;
            uint32_t tab = c_at + na * nbk * 64;
            for (uint32_t a = 0; a < na; a++)
                for (uint32_t k = 0; k < K; k++)
                    for (uint32_t q = 0; q < 4; q++) {
                        uint32_t row = (m0 + a) * 4 + q;
                        float v = row < M ? A[(size_t)row * K + k] : 0.0f;
                        memcpy(mem + a_at + (a * K + k) * 16 + q * 4, &v, 4);
                    }
            for (uint32_t b = 0; b < nbk; b++)
                for (uint32_t k = 0; k < K; k++)
                    for (uint32_t q = 0; q < 4; q++) {
                        uint32_t col = (n0 + b) * 4 + q;
                        float v = col < N ? B[(size_t)k * N + col] : 0.0f;
                        memcpy(mem + b_at + (b * K + k) * 16 + q * 4, &v, 4);
                    }
            uint32_t blk = 0;
            for (uint32_t a = 0; a < na; a++)
                for (uint32_t b = 0; b < nbk; b++, blk++) {
                    put32(mem, tab + blk * 12 + 0, a_at + a * K * 16);
                    put32(mem, tab + blk * 12 + 4, b_at + b * K * 16);
                    put32(mem, tab + blk * 12 + 8, c_at + blk * 64);
                }
            put32(mem, (uint32_t)params + 0, na * nbk);
            put32(mem, (uint32_t)params + 4, K);
            put32(mem, (uint32_t)params + 8, tab);
        }
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = eng_run(g, e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->host_seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc != ERR_OK)
        goto out;

    eng_stats st;
    eng_get_stats(g, &st);
    r->cycles = st.cycles;
    r->seconds = (double)st.cycles / (double)m->clock_hz;
    r->tflops = 2.0 * M * N * (double)K / r->seconds / 1e12;
    r->peak_tflops = mach_fp32_peak_flops(m) / 1e12;
    r->pct_peak = 100.0 * r->tflops / r->peak_tflops;

    if (cfg->check) {
        r->checked = 1;
        for (uint32_t ti = 0; ti < gm; ti++)
            for (uint32_t tj = 0; tj < gn; tj++) {
                const uint8_t *mem = eng_tile_mem(g, 0, ti * gn + tj);
                uint32_t m0 = mb * ti / gm, m1 = mb * (ti + 1) / gm;
                uint32_t n0 = nb * tj / gn, n1 = nb * (tj + 1) / gn;
                uint32_t na = m1 - m0, nbk = n1 - n0;
                uint32_t c_at = base + (na + nbk) * K * 16;
                for (uint32_t a = 0; a < na; a++)
                    for (uint32_t b = 0; b < nbk; b++)
                        for (uint32_t q = 0; q < 16; q++) {
                            uint32_t row = (m0 + a) * 4 + q / 4, col = (n0 + b) * 4 + q % 4;
                            if (row >= M || col >= N)
                                continue;
                            float got;
                            memcpy(&got, mem + c_at + (a * nbk + b) * 64 + q * 4, 4);
                            double ref = 0, abs_sum = 0;
                            for (uint32_t k = 0; k < K; k++) {
                                double p = (double)A[(size_t)row * K + k] * B[(size_t)k * N + col];
                                ref += p;
                                abs_sum += fabs(p);
                            }
                            double d = fabs((double)got - ref);
                            double ratio = d / wl_gemm_bound(K, abs_sum);
                            if (d > r->max_abs_err || isnan(d))
                                r->max_abs_err = d;
                            if (ratio > r->worst_ratio || isnan(ratio))
                                r->worst_ratio = ratio;
                            if (!(ratio <= 1.0))
                                r->mismatches++;
                        }
            }
    }
out:
    free(A);
    free(B);
    if (rc != ERR_OK) {
        eng_free(g);
        isa_prog_free(&prog);
        return rc;
    }
    /* the engine keeps a pointer to the program; it is freed with the engine's owner */
    isa_prog_free(&prog);
    *out = g;
    return ERR_OK;
}
