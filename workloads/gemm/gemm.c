/* wl_gemm: the proof on real work — a GEMM over every tile and worker of one IPU, on the
 * stationary-weight AMP.
 *
 * Mapping: C's columns are cut into blocks of 16 (the AMP's outputs) and its rows into
 * ranges; the tiles form a grid_m x grid_n grid, each tile owning a range of rows and one or
 * more column blocks with the whole K, so no exchange is needed: the loader writes each
 * tile's A rows, B blocks (as the AMP's 8 x 16 weight blocks) and pass descriptors into its
 * memory, as a Poplar graph's initial tensor placement would. The grid is the one that the
 * codelet's cycle model (docs/timing.md, "The GEMM codelet") says finishes first among
 * those that fit in a tile's memory. K is padded to a multiple of 8 and N to one of 16 with
 * zeros. Left out: K-splitting across tiles (a GEMM whose rows and blocks do not fit in one
 * tile's memory is refused with the size it would need), and the exchange that would gather
 * C. */
#include "workloads/gemm/gemm.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/num.h"
#include "base/rng.h"
#include "isa/asm.h"
#include "workloads/codelets.h"

enum {
    KW = 8,         /* k values per pass: the f32amp weights' rows */
    NW = 16,        /* columns per block: the AMP's outputs */
    ROW_A = KW * 4, /* bytes of one row of A in one chunk */
    ROW_C = NW * 4, /* bytes of one row of C partials in one block */
    WBYTES = 512,   /* weights per pass */
    DESC = 16,      /* bytes per worker descriptor */
    WORKERS = 6,
    W_SETUP = 19,  /* worker slots besides its zeroing stores and AMP steps (gemm.s) */
    PASS_GAP = 51, /* supervisor cycles from the workers' end to the next runall */
};

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

static uint32_t align16(uint32_t x)
{
    return (x + 15u) & ~15u;
}

/* The GEMM as the tiles see it: sizes, padded sizes, grid, where the image ends. */
typedef struct layout {
    uint32_t M, N, K, kc, nb; /* kc chunks of 8 k, nb blocks of 16 columns */
    uint32_t gm, gn, base, params;
    uint32_t amp_slots; /* f32amp's issue slots on this machine */
} layout;

/* Tile (ti, tj)'s part: rows [m0, m0 + ma), blocks [q0, q0 + nq), and where its data lie. */
typedef struct tile_part {
    uint32_t m0, ma, q0, nq;
    uint32_t a_at, w_at, c_at, d_at, end;
} tile_part;

/* A part of ma rows from m0 and nq blocks from q0, laid out after the image. */
static tile_part part_sized(const layout *L, uint32_t m0, uint32_t ma, uint32_t q0, uint32_t nq)
{
    tile_part p = {.m0 = m0, .ma = ma, .q0 = q0, .nq = nq};
    uint32_t passes = nq * L->kc;
    p.a_at = L->base;
    p.w_at = p.a_at + L->kc * ma * ROW_A;
    p.c_at = p.w_at + passes * WBYTES;
    p.d_at = p.c_at + nq * ma * ROW_C;
    p.end = p.d_at + passes * WORKERS * DESC;
    return p;
}

static tile_part part_of(const layout *L, uint32_t ti, uint32_t tj)
{
    uint32_t m0 = L->M * ti / L->gm, q0 = L->nb * tj / L->gn;
    return part_sized(L, m0, L->M * (ti + 1) / L->gm - m0, q0, L->nb * (tj + 1) / L->gn - q0);
}

/* The busiest tile's part: the most rows and the most blocks. */
static tile_part part_max(const layout *L)
{
    return part_sized(L, 0, ceil_div_u32(L->M, L->gm), 0, ceil_div_u32(L->nb, L->gn));
}

/* Rows of a tile's ma that worker w streams. */
static uint32_t rows_of(uint32_t ma, uint32_t w)
{
    return ma * (w + 1) / WORKERS - ma * w / WORKERS;
}

/* The codelet's cycle model for a tile with ma rows and nq blocks (docs/timing.md): each
 * pass costs 6 x (the busiest worker's slots) + PASS_GAP. Used to choose the grid. */
static uint64_t tile_estimate(const layout *L, uint32_t ma, uint32_t nq)
{
    uint64_t rows = ceil_div_u32(ma, WORKERS);
    uint64_t pass = 6 * (W_SETUP + KW * L->amp_slots * rows) + PASS_GAP;
    return (uint64_t)nq * (L->kc * pass + 6 * KW * rows); /* + zeroing once per block */
}

static void choose_grid(layout *L, uint32_t tiles, uint32_t sram)
{
    uint64_t best = UINT64_MAX;
    L->gm = L->gn = 0;
    for (uint32_t gn = 1; gn <= L->nb && gn <= tiles; gn++) {
        uint32_t gm = tiles / gn < L->M ? tiles / gn : L->M;
        layout t = *L;
        t.gm = gm;
        t.gn = gn;
        tile_part p = part_max(&t);
        if (p.end > sram)
            continue;
        uint64_t est = tile_estimate(L, p.ma, p.nq);
        if (est < best) {
            best = est;
            L->gm = gm;
            L->gn = gn;
        }
    }
}

static void put32(uint8_t *mem, uint32_t addr, uint32_t v)
{
    memcpy(mem + addr, &v, 4);
}

static void putf(uint8_t *mem, uint32_t addr, float v)
{
    memcpy(mem + addr, &v, 4);
}

/* Tile (ti, tj)'s A rows by chunk, its weight blocks in pass order (block-major), its
 * descriptors and parameters. Its C partials are zeroed by the codelet. */
static void place_tile(const layout *L, uint8_t *mem, uint32_t ti, uint32_t tj, const float *A,
                       const float *B)
{
    tile_part p = part_of(L, ti, tj);
    for (uint32_t c = 0; c < L->kc; c++)
        for (uint32_t r = 0; r < p.ma; r++)
            for (uint32_t k = 0; k < KW; k++) {
                uint32_t kk = c * KW + k;
                float v = kk < L->K ? A[(size_t)(p.m0 + r) * L->K + kk] : 0.0f;
                putf(mem, p.a_at + (c * p.ma + r) * ROW_A + k * 4, v);
            }
    for (uint32_t q = 0; q < p.nq; q++)
        for (uint32_t c = 0; c < L->kc; c++)
            for (uint32_t k = 0; k < KW; k++)
                for (uint32_t n = 0; n < NW; n++) {
                    uint32_t kk = c * KW + k, col = (p.q0 + q) * NW + n;
                    float v = kk < L->K && col < L->N ? B[(size_t)kk * L->N + col] : 0.0f;
                    putf(mem, p.w_at + (q * L->kc + c) * WBYTES + (k * NW + n) * 4, v);
                }
    for (uint32_t q = 0; q < p.nq; q++)
        for (uint32_t c = 0; c < L->kc; c++)
            for (uint32_t w = 0, r0 = 0; w < WORKERS; r0 += rows_of(p.ma, w), w++) {
                uint32_t d = p.d_at + ((q * L->kc + c) * WORKERS + w) * DESC, R = rows_of(p.ma, w);
                put32(mem, d + 0, p.a_at + (c * p.ma + r0) * ROW_A);
                put32(mem, d + 4, p.c_at + (q * p.ma + r0) * ROW_C);
                put32(mem, d + 8, R * KW);
                put32(mem, d + 12, c == 0 ? R * ROW_C / 8 : 0);
            }
    put32(mem, L->params + 0, p.nq * L->kc);
    put32(mem, L->params + 4, p.w_at);
    put32(mem, L->params + 8, p.d_at);
}

/* One element's checks: bit for bit against the fp32 loop c = c + a*b in k order (what the
 * AMP computes: each product rounded, then each sum), and against a double reference within
 * the bound. */
static void check_elem(const layout *L, float got, uint32_t row, uint32_t col, const float *A,
                       const float *B, wl_gemm_result *r)
{
    float c = 0.0f;
    double ref = 0, abs_sum = 0;
    for (uint32_t k = 0; k < L->K; k++) {
        float a = A[(size_t)row * L->K + k], b = B[(size_t)k * L->N + col];
        float prod = a * b;
        c = c + prod;
        ref += (double)a * b;
        abs_sum += fabs((double)a * b);
    }
    if (memcmp(&c, &got, 4) != 0)
        r->inexact++;
    double d = fabs((double)got - ref);
    double ratio = d / wl_gemm_bound(L->K, abs_sum);
    if (d > r->max_abs_err || isnan(d))
        r->max_abs_err = d;
    if (ratio > r->worst_ratio || isnan(ratio))
        r->worst_ratio = ratio;
    if (!(ratio <= 1.0))
        r->mismatches++;
}

static void check_tile(const layout *L, const uint8_t *mem, uint32_t ti, uint32_t tj,
                       const float *A, const float *B, wl_gemm_result *r)
{
    tile_part p = part_of(L, ti, tj);
    for (uint32_t q = 0; q < p.nq; q++)
        for (uint32_t rr = 0; rr < p.ma; rr++)
            for (uint32_t n = 0; n < NW; n++) {
                uint32_t col = (p.q0 + q) * NW + n;
                if (col >= L->N)
                    continue;
                float got;
                memcpy(&got, mem + p.c_at + (q * p.ma + rr) * ROW_C + n * 4, 4);
                check_elem(L, got, p.m0 + rr, col, A, B, r);
            }
}

/* The refusal of a GEMM no grid fits: the smallest busiest-tile need over the grids, what
 * fills it, and what would shrink it (the K-dependent part, or the tile's share of C). */
static int too_big(layout *L, const mach *m, err *e)
{
    uint64_t best = UINT64_MAX;
    tile_part bp = {0};
    for (uint32_t gn = 1; gn <= L->nb && gn <= m->tiles_per_ipu; gn++) {
        L->gn = gn;
        L->gm = m->tiles_per_ipu / gn < L->M ? m->tiles_per_ipu / gn : L->M;
        tile_part p = part_max(L);
        if (p.end < best) {
            best = p.end;
            bp = p;
        }
    }
    uint64_t with_k = (uint64_t)(bp.w_at - bp.a_at) + (bp.c_at - bp.w_at); /* A rows, weights */
    uint64_t share = (uint64_t)bp.d_at - bp.c_at;                          /* C partials */
    return err_set(
        e, ERR_INPUT,
        "GEMM %ux%ux%u does not fit: the busiest tile would need at least %llu bytes "
        "of its %u (%llu for its rows of A and blocks of B, which grow with --k; %llu "
        "for its share of C, %u rows x %u columns, which grows with --m and --n): use %s, "
        "or more tiles (--set tiles_per_ipu=N); K-splitting across tiles is not modelled",
        L->M, L->N, L->K, (unsigned long long)best, m->sram_bytes, (unsigned long long)with_k,
        (unsigned long long)share, bp.ma, 16 * bp.nq,
        share > with_k ? "smaller --m or --n" : "a smaller --k (or --m, --n)");
}

/* Every tile of the grid's operands into its memory (tiles outside the grid keep zero memory:
 * their workers find no block). Placing takes seconds on a whole IPU (its SRAM's pages touched
 * for the first time): a stop request is honoured between rows of tiles. */
static int place_all(const layout *L, eng *g, const float *A, const float *B,
                     const volatile sig_atomic_t *stop, err *e)
{
    for (uint32_t ti = 0; ti < L->gm; ti++) {
        if (stop && *stop)
            return err_set(e, ERR_STOPPED,
                           "stopped before the run, placing the operands (row %u of "
                           "%u of the tile grid)",
                           ti, L->gm);
        for (uint32_t tj = 0; tj < L->gn; tj++)
            place_tile(L, eng_tile_mem(g, 0, ti * L->gn + tj), ti, tj, A, B);
    }
    return ERR_OK;
}

/* The run's cycles, time and rate against the machine's peak. */
static void run_figures(const layout *L, const mach *m, eng *g, wl_gemm_result *r)
{
    eng_stats st;
    eng_get_stats(g, &st);
    r->cycles = st.cycles;
    r->seconds = (double)st.cycles / (double)m->clock_hz;
    r->tflops = 2.0 * L->M * L->N * (double)L->K / r->seconds / 1e12;
    r->peak_tflops = mach_fp32_peak_flops(m) / 1e12;
    r->pct_peak = 100.0 * r->tflops / r->peak_tflops;
}

/* C checked tile by tile against the reference (check_tile); the check takes longer than the
 * run: a stop request ends it too, between tiles. */
static int check_all(const layout *L, eng *g, const float *A, const float *B,
                     const volatile sig_atomic_t *stop, wl_gemm_result *r, err *e)
{
    for (uint32_t ti = 0; ti < L->gm; ti++)
        for (uint32_t tj = 0; tj < L->gn; tj++) {
            if (stop && *stop)
                return err_set(e, ERR_STOPPED,
                               "stopped in the reference check of C, after the run's %llu "
                               "cycles: %u of %u tiles compared",
                               (unsigned long long)r->cycles, ti * L->gn + tj, L->gm * L->gn);
            check_tile(L, eng_tile_mem(g, 0, ti * L->gn + tj), ti, tj, A, B, r);
        }
    return ERR_OK;
}

int wl_gemm_run(const mach *m, const wl_gemm_cfg *cfg, wl_gemm_result *r, sys **out, err *e)
{
    return wl_gemm_run_ctl(m, cfg, NULL, r, out, e);
}

int wl_gemm_run_ctl(const mach *m, const wl_gemm_cfg *cfg, const sys_ctl *ctl, wl_gemm_result *r,
                    sys **out, err *e)
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
    isa_rates rates = {m->load_bytes_per_cycle, m->store_bytes_per_cycle, m->amp_macs_per_issue};
    layout L = {.M = M,
                .N = N,
                .K = K,
                .kc = ceil_div_u32(K, KW),
                .nb = ceil_div_u32(N, NW),
                .base = align16(prog.size),
                .params = (uint32_t)isa_prog_sym(&prog, "params"),
                .amp_slots = isa_op_cost(OP_f32amp, &rates, 0)};
    choose_grid(&L, m->tiles_per_ipu, m->sram_bytes);
    if (L.gm == 0) {
        isa_prog_free(&prog);
        return too_big(&L, m, e);
    }
    r->grid_m = L.gm;
    r->grid_n = L.gn;
    r->tiles_used = L.gm * L.gn;
    r->tile_bytes = part_max(&L).end;

    float *A = xmalloc((size_t)M * K * sizeof *A), *B = xmalloc((size_t)K * N * sizeof *B);
    uint64_t s = cfg->seed;
    for (size_t i = 0; i < (size_t)M * K; i++)
        A[i] = uniform(&s);
    for (size_t i = 0; i < (size_t)K * N; i++)
        B[i] = uniform(&s);

    mach mm = *m;
    mm.nipus = 1;
    sys_cfg sc = {.m = mm, .threads = cfg->threads, .max_cycles = cfg->max_cycles};
    if (ctl)
        sc.ctl = *ctl;
    sys *sy = sys_new(&sc, e);
    eng *g = sy ? sys_engine(sy) : NULL;
    int rc = g ? eng_load(g, &prog, e) : e->status;
    isa_prog_free(&prog); /* the engine decoded its own copy of the text at eng_load */
    const volatile sig_atomic_t *stop = ctl ? ctl->watch.stop : NULL;
    if (rc == ERR_OK)
        rc = place_all(&L, g, A, B, stop, e);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rc == ERR_OK)
        rc = eng_run(g, e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->host_seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc == ERR_OK) {
        run_figures(&L, m, g, r);
        r->checked = cfg->check;
        if (cfg->check)
            rc = check_all(&L, g, A, B, stop, r, e);
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
