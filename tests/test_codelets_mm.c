/* test_codelets_mm: the matrix-product codelets (workloads/codelets/mm_*.s) run through the
 * engine on one tile.
 *   mm_amp (a supervisor codelet, in a harness that calls it): the three products of the
 *   tutorial's linear layers (layer3 320 -> 256, layer4 256 -> 10, micro-batch 40) and of
 *   ragged ones, on Mk2 and Mk1: bit for bit against the fp32 loop in k order, against
 *   mlayer_linear_fwd / _bwd (bit for bit for dx and dw, within a stated bound for y and an
 *   accumulated dw), and the cycles exactly against mm_amp_model, derived below from
 *   docs/timing.md.
 *   The layout codelets (workers, in a harness that runs one): every value moved or zeroed
 *   as the layout says, nothing else touched, the cycles exactly against closed forms.
 *   All of them in a graph of one tile (layer4's forward product). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "tests/testutil.h"
#include "workloads/codelets.h"
#include "workloads/graph/graph.h"
#include "workloads/mnist/layers.h"

/* ---- a harness: one tile running one codelet ---- */

/* The program: li r1, state (cycle 0); `call NAME` (1; 6 cycles: the codelet starts at 7)
 * for a supervisor codelet, or `run NAME, r1` (1) and join for a worker one; then halt. */
typedef struct rig {
    sys *s;
    eng *g;
    uint8_t *mem;
    uint32_t state, next; /* the state's address; the first free byte after the image */
    uint32_t size;        /* the tile's memory */
} rig;

static void rig_new(rig *r, const char *machine, const char *codelet, int super)
{
    const char *src = wl_codelet(codelet);
    assert_non_null(src);
    size_t len = strlen(src) + 512;
    char *text = malloc(len);
    assert_non_null(text);
    snprintf(text, len,
             "        .text\n        .global main\nmain:   li      r1, state\n"
             "        %s %s%s\n%s        halt\n        .text\n%s\n"
             "        .data\n        .align  16\nstate:  .space  64\n",
             super ? "call   " : "run    ", codelet, super ? "" : ", r1",
             super ? "" : "        join\n", src);
    isa_prog prog;
    tu_assemble(codelet, text, &prog);
    free(text);
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 1, .max_cycles = 100000000};
    if (mach_builtin(&cfg.m, machine, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    cfg.m.tiles_per_ipu = 1;
    r->s = sys_new(&cfg, &e);
    if (!r->s)
        fail_msg("%s", e.msg);
    r->g = sys_engine(r->s);
    if (eng_load(r->g, &prog, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    r->state = (uint32_t)isa_prog_sym(&prog, "state");
    r->next = (prog.size + 15u) & ~15u;
    r->size = cfg.m.sram_bytes;
    r->mem = eng_tile_mem(r->g, 0, 0);
    isa_prog_free(&prog);
}

static void rig_free(rig *r)
{
    sys_free(r->s);
}

/* bytes of tile memory, 16-byte aligned */
static uint32_t rig_alloc(rig *r, uint32_t bytes)
{
    uint32_t at = r->next;
    r->next = (at + bytes + 15u) & ~15u;
    assert_true(r->next <= r->size);
    return at;
}

static void rig_state(rig *r, const uint32_t *w, unsigned n)
{
    memcpy(r->mem + r->state, w, 4 * n);
}

static uint64_t rig_run(rig *r)
{
    err e;
    err_clear(&e);
    if (eng_run(r->g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    eng_stats st;
    eng_get_stats(r->g, &st);
    return st.cycles;
}

static void putf(uint8_t *mem, uint32_t addr, float v)
{
    memcpy(mem + addr, &v, 4);
}

static float getf(const uint8_t *mem, uint32_t addr)
{
    float v;
    memcpy(&v, mem + addr, 4);
    return v;
}

static float uniform(uint64_t *s)
{
    /* 24 random bits -> [-1, 1), exactly representable */
    return (float)(int32_t)(rng_splitmix64(s) >> 40) / 8388608.0f - 1.0f;
}

static float *rand_floats(size_t n, uint64_t *s)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = uniform(s);
    return p;
}

static uint32_t cdiv(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

/* A matrix seen through strides: element (i, j) = p[i si + j sj] (so one view serves a
 * matrix and its transpose). */
typedef struct view {
    const float *p;
    size_t si, sj;
} view;

static float at(view v, uint32_t i, uint32_t j)
{
    return v.p[i * v.si + j * v.sj];
}

/* ---- mm_amp ---- */

/* Rows of worker w (of 6) when M rows are split as mm_amp.s says: [floor(M w / 6),
 * floor(M (w + 1) / 6)). */
static uint32_t rows_of(uint32_t M, uint32_t w)
{
    return M * (w + 1) / 6 - M * w / 6;
}

/* The harness's cycles around mm_amp (M rows, kc chunks, nq blocks; zero: the flag; a:
 * f32amp's worker slots, 1 on Mk2 and 2 on Mk1), derived from docs/timing.md and the
 * instructions of workloads/codelets/mm_amp.s:
 *   li r1 at 0, call at 1 (a branch: 6), so the codelet's first instruction issues at t = 7.
 *   Prologue, one cycle each (supervisor ALU, loads, stores, li; no load-use stall: M, loaded
 *   first at t, is first used at t + 9, >= t + 7; the zero flag, loaded at t + 6, at t + 63;
 *   nq at t + 68): 7 ld32, 2 li, six workers x 9 (muli, shri, sub, shli, st32 x 3, shli x 2),
 *   cmpeqi, addi, shli, li, li, addi: 69 cycles; then the first block: st32, st32, mov, rpt
 *   (6), 32 ldcw (16 bytes each at 16 B per cycle: 1 cycle): the first runall at t + 110.
 *   A pass, runall at c: worker w with R rows issues get, shli, 5 ld32, add, add, and, mov,
 *   rpt, z st64pi (z = 8R on a block's first pass when zeroing, else 0), rpt, 8R f32amp of
 *   a slots, ampst (64 bytes at 8 B per cycle: 8 slots), exit: S = 22 + z + 8aR slots. It
 *   issues first at c + 6 + w (runall) and exits at e = c + 6 + w + 6 (S - 1); its slot is
 *   free from e + 1 and comes round to the supervisor at e + 6. The supervisor (runall costs
 *   6, then no slot until a worker exits) issues join at min_w (e_w + 6), which completes at
 *   j = max(join + 6, max_w e_w + 1).
 *   Then st32 (j), add (j + 1), and the rpt body starts again at no cost: 32 ldcw, runall at
 *   j + 34. After a block's last pass: add, add, brnzdec (j + 4, taken: 6), st32, st32, mov,
 *   rpt (j + 13: 6), 32 ldcw: runall at j + 51. After the last block: brnzdec falls through
 *   (j + 4: 6), ret (j + 10: 6), halt at j + 16 finishes at j + 17. */
static uint64_t mm_amp_model(uint32_t M, uint32_t kc, uint32_t nq, int zero, uint32_t a)
{
    uint64_t c = 7 + 110, j = 0;
    for (uint32_t q = 0; q < nq; q++)
        for (uint32_t ch = 0; ch < kc; ch++) {
            uint64_t join = UINT64_MAX, last = 0;
            for (uint32_t w = 0; w < 6; w++) {
                uint64_t R = rows_of(M, w), z = zero && ch == 0 ? 8 * R : 0;
                uint64_t S = 22 + z + 8 * a * R, e = c + 6 + w + 6 * (S - 1);
                join = e + 6 < join ? e + 6 : join;
                last = e + 1 > last ? e + 1 : last;
            }
            j = join + 6 > last ? join + 6 : last;
            c = j + (ch + 1 < kc ? 34 : 51);
        }
    return j + 17;
}

/* C[m][n] = (c0 ? c0[m][n] : 0) + sum over k in order of A[m][k] B[k][n], as the AMP sums: the
 * fp32 loop, each product rounded, then each sum (ISO C: no contraction). */
static void loop_ref(uint32_t M, uint32_t K, uint32_t N, view A, view B, const float *c0, float *C)
{
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++) {
            float c = c0 ? c0[(size_t)m * N + n] : 0.0f;
            for (uint32_t k = 0; k < K; k++) {
                float p = at(A, m, k) * at(B, k, n);
                c = c + p;
            }
            C[(size_t)m * N + n] = c;
        }
}

/* |got - want| <= 2 gamma_{K+1} (|c0| + sum |A B|): two fp32 sums of the same K + 1 terms in
 * different orders, each within gamma_{K+1} of the exact sum (Higham, Lemma 3.1). */
static void check_close(uint32_t M, uint32_t K, uint32_t N, view A, view B, const float *c0,
                        const float *got, const float *want)
{
    double u = ldexp(1.0, -24), g = (K + 1) * u / (1 - (K + 1) * u);
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++) {
            double abs = c0 ? fabs(c0[(size_t)m * N + n]) : 0.0;
            for (uint32_t k = 0; k < K; k++)
                abs += fabs((double)at(A, m, k) * at(B, k, n));
            double d = fabs((double)got[(size_t)m * N + n] - want[(size_t)m * N + n]);
            if (!(d <= 2 * g * abs))
                fail_msg("(%u, %u): %.9g vs %.9g, bound %.3g", m, n, got[(size_t)m * N + n],
                         want[(size_t)m * N + n], 2 * g * abs);
        }
}

/* One product on the AMP: C[M][N] = A[M][K] B[K][N] (c0 NULL: zero = 1) or c0 + A B (zero = 0),
 * laid out as mm_amp.s's header says (K padded to 8 and N to 16 with zeros; the partials of a
 * zeroing run start as NaN to show they are overwritten). Asserts the cycles against
 * mm_amp_model, the result bit for bit against loop_ref, and the padding columns 0. */
static void amp_product(const char *machine, uint32_t M, uint32_t K, uint32_t N, view A, view B,
                        const float *c0, float *C)
{
    rig r;
    rig_new(&r, machine, "mm_amp", 1);
    const uint32_t kc = cdiv(K, 8), nq = cdiv(N, 16);
    const uint32_t in = rig_alloc(&r, kc * M * 32), w = rig_alloc(&r, nq * kc * 512),
                   out = rig_alloc(&r, nq * M * 64);
    for (uint32_t c = 0; c < kc; c++)
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t j = 0; j < 8; j++)
                putf(r.mem, in + ((c * M + m) * 8 + j) * 4,
                     c * 8 + j < K ? at(A, m, c * 8 + j) : 0);
    for (uint32_t q = 0; q < nq; q++)
        for (uint32_t c = 0; c < kc; c++)
            for (uint32_t k = 0; k < 8; k++)
                for (uint32_t n = 0; n < 16; n++) {
                    uint32_t kk = c * 8 + k, col = q * 16 + n;
                    putf(r.mem, w + ((q * kc + c) * 128 + k * 16 + n) * 4,
                         kk < K && col < N ? at(B, kk, col) : 0);
                }
    for (uint32_t q = 0; q < nq; q++)
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t n = 0; n < 16; n++) {
                uint32_t col = q * 16 + n;
                putf(r.mem, out + ((q * M + m) * 16 + n) * 4,
                     !c0       ? NAN
                     : col < N ? c0[(size_t)m * N + col]
                               : 0);
            }
    const uint32_t st[7] = {in, w, out, M, kc, nq, c0 ? 0 : 1};
    rig_state(&r, st, 7);
    uint64_t cycles = rig_run(&r);
    uint32_t a = strcmp(machine, "mk1") == 0 ? 2 : 1;
    assert_int_equal(cycles, mm_amp_model(M, kc, nq, !c0, a));
    for (uint32_t q = 0; q < nq; q++)
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t n = 0; n < 16; n++) {
                uint32_t col = q * 16 + n;
                float v = getf(r.mem, out + ((q * M + m) * 16 + n) * 4);
                if (col < N)
                    C[(size_t)m * N + col] = v;
                else
                    assert_true(v == 0.0f);
            }
    rig_free(&r);
    float *want = malloc(((size_t)M * N + 1) * sizeof *want);
    assert_non_null(want);
    loop_ref(M, K, N, A, B, c0, want);
    assert_memory_equal(C, want, (size_t)M * N * sizeof *C);
    free(want);
}

/* The three products of a linear layer of `in` -> `out` on a micro-batch of B, two
 * micro-batches for the weight gradient, against mlayer_linear_fwd / _bwd: dx and the first
 * dw bit for bit (mm_acc sums k in order from 0, as the AMP), y and the accumulated dw
 * within check_close (other summation orders). */
static void linear_layer(const char *machine, uint32_t B, uint32_t in, uint32_t out, uint64_t seed)
{
    uint64_t s = seed;
    float *x = rand_floats((size_t)B * in, &s), *w = rand_floats((size_t)out * in, &s);
    float *dy = rand_floats((size_t)B * out, &s), *x2 = rand_floats((size_t)B * in, &s);
    float *dy2 = rand_floats((size_t)B * out, &s);
    float *b = calloc(out, sizeof *b), *db = calloc(out, sizeof *db);
    float *y = malloc((size_t)B * out * 4), *yml = malloc((size_t)B * out * 4);
    float *dx = malloc((size_t)B * in * 4), *dxml = malloc((size_t)B * in * 4);
    float *dw = malloc((size_t)out * in * 4), *dw2 = malloc((size_t)out * in * 4);
    float *dwml = calloc((size_t)out * in, 4);
    assert_true(b && db && y && yml && dx && dxml && dw && dw2 && dwml);

    /* forward: M = B, K = in, N = out; in = x, W = w^T */
    view vx = {x, in, 1}, vwt = {w, 1, in};
    amp_product(machine, B, in, out, vx, vwt, NULL, y);
    mlayer_linear_fwd((int)B, (int)in, (int)out, x, w, b, yml);
    check_close(B, in, out, vx, vwt, NULL, y, yml);

    /* input gradient: M = B, K = out, N = in; in = dy, W = w */
    view vdy = {dy, out, 1}, vw = {w, in, 1};
    amp_product(machine, B, out, in, vdy, vw, NULL, dx);
    mlayer_linear_bwd((int)B, (int)in, (int)out, x, w, dy, dwml, db, dxml);
    assert_memory_equal(dx, dxml, (size_t)B * in * 4);

    /* weight gradient: M = out, K = B, N = in; in = dy^T, W = x; zeroed first */
    view vdyt = {dy, 1, out};
    amp_product(machine, out, B, in, vdyt, vx, NULL, dw);
    assert_memory_equal(dw, dwml, (size_t)out * in * 4);

    /* the next micro-batch accumulates into it */
    view vdyt2 = {dy2, 1, out}, vx2 = {x2, in, 1};
    amp_product(machine, out, B, in, vdyt2, vx2, dw, dw2);
    mlayer_linear_bwd((int)B, (int)in, (int)out, x2, w, dy2, dwml, db, NULL);
    check_close(out, B, in, vdyt2, vx2, dw, dw2, dwml);

    free(x), free(w), free(dy), free(x2), free(dy2), free(b), free(db), free(y), free(yml);
    free(dx), free(dxml), free(dw), free(dw2), free(dwml);
}

/* layer3 of the tutorial network: Linear(320, 256), B = 40. Forward: kc = 40, nq = 16 (640
 * passes); dx: kc = 32, nq = 20; dw: M = 256, kc = 5, nq = 20. */
static void test_fc3(void **state)
{
    (void)state;
    linear_layer("mk2", 40, 320, 256, 3);
}

/* layer4: Linear(256, 10), B = 40. Forward: N = 10 padded to 16 (nq = 1); dx: K = 10 padded to
 * 16 (kc = 2), nq = 16; dw: M = 10 (workers of 1 and 2 rows), kc = 5. */
static void test_fc4(void **state)
{
    (void)state;
    linear_layer("mk2", 40, 256, 10, 4);
}

/* Ragged shapes on Mk2 and Mk1 (f32amp 2 slots): B = 13 (workers of 2 and 3 rows), in = 20,
 * out = 11 (K and N padded; dw has M = 11); B = 5 (a worker with no rows), in = 3 (odd: one
 * chunk, 5 zeros), out = 1; B = 1, in = 8, out = 17; B = out = 6 and 12 (M a multiple of 6 and
 * of 3: the split's floor(M w / 6) lands exactly on integers). */
static void test_ragged(void **state)
{
    (void)state;
    linear_layer("mk2", 13, 20, 11, 5);
    linear_layer("mk1", 13, 20, 11, 6);
    linear_layer("mk2", 5, 3, 1, 7);
    linear_layer("mk2", 1, 8, 17, 8);
    linear_layer("mk2", 6, 24, 12, 9);
}

/* ---- the layout codelets ---- */

/* A worker codelet in the harness: li r1 at 0, run at 1 (6) gives the worker slot 1, first
 * issue at 7, exit at 7 + 6 (S - 1); the supervisor's join issues at 8 (the next free slot)
 * and completes at max(8 + 6, 6S + 2) = 6S + 2; halt there finishes at 6S + 3. */
static uint64_t worker_cycles(uint64_t slots)
{
    return 6 * slots + 3;
}

static const float SENTINEL = -1234.5f; /* what a codelet must not overwrite */

static uint32_t fill(rig *r, uint32_t floats, const float *src)
{
    uint32_t a = rig_alloc(r, floats * 4 + 4);
    for (uint32_t i = 0; i < floats; i++)
        putf(r->mem, a + 4 * i, src ? src[i] : SENTINEL);
    return a;
}

/* Floats [0, n) at addr equal want where want is not SENTINEL, else SENTINEL (untouched). */
static void check_floats(const rig *r, uint32_t addr, const float *want, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        float got = getf(r->mem, addr + 4 * i);
        if (memcmp(&got, &want[i], 4) != 0)
            fail_msg("float %u: %.9g, want %.9g", i, got, want[i]);
    }
}

static float *sentinels(uint32_t n)
{
    float *p = malloc((n + 1) * sizeof *p);
    assert_non_null(p);
    for (uint32_t i = 0; i <= n; i++)
        p[i] = SENTINEL;
    return p;
}

/* Slots of mm_rows_to_chunks (its instructions, one slot each: no load or store of more than
 * 8 bytes): 5 ld32 and 8 ALU, brz; with no rows, exit: 15. Else addi, and a row: mov,
 * rpt, per full chunk 4 x (ld64pi, st64) and add, rpt, 2 a value pair, rpt, 1 a zero pair,
 * addi, brnzdec; exit. */
static uint64_t rows_to_chunks_slots(uint32_t rows, uint32_t K)
{
    uint64_t f = K / 8, t = K % 8 / 2, z = (8 - K % 8) % 8 / 2;
    return rows == 0 ? 15 : 16 + rows * (6 + 9 * f + 2 * t + z);
}

/* Rows [m0, m0 + rows) of A[Mt][K] to chunks [kc][Mt][8] (the rest untouched). */
static void run_rows_to_chunks(uint32_t Mt, uint32_t K, uint32_t m0, uint32_t rows, uint64_t seed)
{
    uint64_t s = seed;
    const uint32_t kc = cdiv(K, 8), n = kc * Mt * 8;
    float *A = rand_floats((size_t)Mt * K, &s), *want = sentinels(n);
    for (uint32_t c = 0; c < kc; c++)
        for (uint32_t m = m0; m < m0 + rows; m++)
            for (uint32_t j = 0; j < 8; j++)
                want[(c * Mt + m) * 8 + j] = c * 8 + j < K ? A[(size_t)m * K + c * 8 + j] : 0;
    rig r;
    rig_new(&r, "mk2", "mm_rows_to_chunks", 0);
    uint32_t src = fill(&r, Mt * K, A), dst = fill(&r, n, NULL);
    const uint32_t st[5] = {src + m0 * K * 4, dst + m0 * 32, rows, K, Mt};
    rig_state(&r, st, 5);
    assert_int_equal(rig_run(&r), worker_cycles(rows_to_chunks_slots(rows, K)));
    check_floats(&r, dst, want, n);
    rig_free(&r);
    free(A);
    free(want);
}

static void test_rows_to_chunks(void **state)
{
    (void)state;
    run_rows_to_chunks(40, 320, 0, 40, 11); /* layer3's x: f = 40 */
    run_rows_to_chunks(40, 10, 7, 7, 12);   /* layer4's dy: 1 full chunk, 1 pair, 3 zero pairs */
    run_rows_to_chunks(13, 20, 4, 6, 13);   /* 2 full, 2 pairs, 2 zero pairs */
    run_rows_to_chunks(9, 6, 8, 1, 14);     /* no full chunk */
    run_rows_to_chunks(5, 16, 2, 0, 15);    /* no rows */
}

/* Slots of mm_partials_to_rows: 5 ld32, 5 ALU, brz; no rows: exit (12). Else addi, and a
 * row: mov, rpt, per full block 4 x (ld128pi, st64pi, st64pi) and add, rpt, 2 a pair,
 * addi, brnzdec; exit. */
static uint64_t partials_to_rows_slots(uint32_t rows, uint32_t N)
{
    uint64_t f = N / 16, t = N % 16 / 2;
    return rows == 0 ? 12 : 13 + rows * (5 + 13 * f + 2 * t);
}

/* Rows [m0, m0 + rows) of partials [nq][Mt][16] to C[Mt][N]. */
static void run_partials_to_rows(uint32_t Mt, uint32_t N, uint32_t m0, uint32_t rows, uint64_t seed)
{
    uint64_t s = seed;
    const uint32_t nq = cdiv(N, 16), n = Mt * N;
    float *P = rand_floats((size_t)nq * Mt * 16, &s), *want = sentinels(n);
    for (uint32_t m = m0; m < m0 + rows; m++)
        for (uint32_t c = 0; c < N; c++)
            want[m * N + c] = P[(c / 16 * Mt + m) * 16 + c % 16];
    rig r;
    rig_new(&r, "mk2", "mm_partials_to_rows", 0);
    uint32_t src = fill(&r, nq * Mt * 16, P), dst = fill(&r, n, NULL);
    const uint32_t st[5] = {src + m0 * 64, dst + m0 * N * 4, rows, N, Mt};
    rig_state(&r, st, 5);
    assert_int_equal(rig_run(&r), worker_cycles(partials_to_rows_slots(rows, N)));
    check_floats(&r, dst, want, n);
    rig_free(&r);
    free(P);
    free(want);
}

static void test_partials_to_rows(void **state)
{
    (void)state;
    run_partials_to_rows(40, 256, 0, 40, 21); /* layer3's y */
    run_partials_to_rows(40, 10, 33, 7, 22);  /* layer4's y: 5 pairs */
    run_partials_to_rows(13, 38, 4, 5, 23);   /* 2 full blocks, 3 pairs */
    run_partials_to_rows(6, 2, 0, 6, 24);
    run_partials_to_rows(6, 32, 3, 0, 25);
}

/* Slots of mm_cols_to_chunks: 6 ld32, 4 ALU, brz, addi, 2 li; per chunk mov, li, add,
 * brnzdec; per k (8 a chunk) cmpltu, mul, sub, mov, mov, rpt, rpt, addi, addi, add, brnzdec
 * and 2 a value (ld32pi, st32pi) or, for a padding k, 1 (st32pi); exit:
 * 14 + kc (4 + 8 x 11) + rows (2K + (8 kc - K)) + 1. */
static uint64_t cols_to_chunks_slots(uint32_t rows, uint32_t K)
{
    uint64_t kc = cdiv(K, 8);
    return 15 + 92 * kc + (uint64_t)rows * (K + 8 * kc);
}

/* Columns [m0, m0 + rows) of A[K][L] to rows of chunks [kc][Mt][8] (Mt >= L). */
static void run_cols_to_chunks(uint32_t K, uint32_t L, uint32_t Mt, uint32_t m0, uint32_t rows,
                               uint64_t seed)
{
    uint64_t s = seed;
    const uint32_t kc = cdiv(K, 8), n = kc * Mt * 8;
    float *A = rand_floats((size_t)K * L, &s), *want = sentinels(n);
    for (uint32_t c = 0; c < kc; c++)
        for (uint32_t m = m0; m < m0 + rows; m++)
            for (uint32_t j = 0; j < 8; j++)
                want[(c * Mt + m) * 8 + j] = c * 8 + j < K ? A[(size_t)(c * 8 + j) * L + m] : 0;
    rig r;
    rig_new(&r, "mk2", "mm_cols_to_chunks", 0);
    uint32_t src = fill(&r, K * L, A), dst = fill(&r, n, NULL);
    const uint32_t st[6] = {src + m0 * 4, dst + m0 * 32, rows, K, L, Mt};
    rig_state(&r, st, 6);
    assert_int_equal(rig_run(&r), worker_cycles(cols_to_chunks_slots(rows, K)));
    check_floats(&r, dst, want, n);
    rig_free(&r);
    free(A);
    free(want);
}

static void test_cols_to_chunks(void **state)
{
    (void)state;
    run_cols_to_chunks(40, 256, 256, 43, 43, 31); /* layer3's dy^T, one worker's share */
    run_cols_to_chunks(40, 10, 16, 0, 10, 32);    /* layer4's dy^T, rows 10..15 left alone */
    run_cols_to_chunks(13, 20, 20, 5, 7, 33);     /* K padded: 3 zero k's */
    run_cols_to_chunks(3, 4, 4, 1, 0, 34);        /* no rows */
}

/* Slots of mm_rows_to_blocks: 6 ld32, 10 ALU, brz; rows > 0: addi and a row: mov, rpt, per
 * full block 8 x (ld64pi, st64) and add, rpt, 2 a value pair, rpt, 1 a zero pair, addi,
 * brnzdec; brz; zrows > 0: addi and a zero row: mov, rpt, per block 8 st64 and add, addi,
 * brnzdec; exit. */
static uint64_t rows_to_blocks_slots(uint32_t rows, uint32_t zrows, uint32_t N)
{
    uint64_t f = N / 16, t = N % 16 / 2, z = (16 - N % 16) % 16 / 2, nq = cdiv(N, 16);
    return 19 + (rows ? 1 + rows * (6 + 17 * f + 2 * t + z) : 0) +
           (zrows ? 1 + zrows * (4 + 9 * nq) : 0);
}

/* Rows [k0, k0 + rows) of B[K][N] into blocks [nq][kc][8][16], then zrows zero rows. */
static void run_rows_to_blocks(uint32_t K, uint32_t N, uint32_t k0, uint32_t rows, uint32_t zrows,
                               uint64_t seed)
{
    uint64_t s = seed;
    const uint32_t kc = cdiv(K, 8), nq = cdiv(N, 16), n = nq * kc * 128;
    float *B = rand_floats((size_t)K * N, &s), *want = sentinels(n);
    for (uint32_t k = k0; k < k0 + rows + zrows; k++)
        for (uint32_t c = 0; c < nq * 16; c++)
            want[(c / 16 * kc) * 128 + k * 16 + c % 16] =
                k < k0 + rows && c < N ? B[(size_t)k * N + c] : 0;
    rig r;
    rig_new(&r, "mk2", "mm_rows_to_blocks", 0);
    uint32_t src = fill(&r, K * N, B), dst = fill(&r, n, NULL);
    const uint32_t st[6] = {src + k0 * N * 4, dst + k0 * 64, rows, zrows, N, kc};
    rig_state(&r, st, 6);
    assert_int_equal(rig_run(&r), worker_cycles(rows_to_blocks_slots(rows, zrows, N)));
    check_floats(&r, dst, want, n);
    rig_free(&r);
    free(B);
    free(want);
}

static void test_rows_to_blocks(void **state)
{
    (void)state;
    run_rows_to_blocks(40, 320, 0, 40, 0, 41); /* layer3's x as weights: 20 full blocks */
    run_rows_to_blocks(10, 256, 0, 10, 6, 42); /* layer4's w for dx: K padded to 16 */
    run_rows_to_blocks(20, 22, 8, 12, 4, 43);  /* 1 full block, 3 pairs, 5 zero pairs */
    run_rows_to_blocks(12, 6, 3, 5, 0, 44);
    run_rows_to_blocks(5, 18, 5, 0, 3, 45); /* zero rows only */
}

/* Slots of mm_cols_to_blocks: 6 ld32, 6 ALU, brz; cols > 0: addi and a column: 6 of address
 * (shri, mul, andi, shli, add, add), rpt, 3 a pair (ld64pi, st32, st32pi), rpt, 1 a padding
 * k, addi, brnzdec; brz; zcols > 0: addi and a zero column: 6 of address, rpt, 1 a k, addi,
 * brnzdec; exit. */
static uint64_t cols_to_blocks_slots(uint32_t cols, uint32_t zcols, uint32_t K)
{
    uint64_t kc = cdiv(K, 8);
    return 15 + (cols ? 1 + cols * (10 + 3 * K / 2 + 8 * kc - K) : 0) +
           (zcols ? 1 + zcols * (9 + 8 * kc) : 0);
}

/* Rows [n0, n0 + cols) of A[N][K] into columns of blocks [nq][kc][8][16], then zcols zero
 * columns; nq counts the columns written. */
static void run_cols_to_blocks(uint32_t N, uint32_t K, uint32_t n0, uint32_t cols, uint32_t zcols,
                               uint64_t seed)
{
    uint64_t s = seed;
    const uint32_t kc = cdiv(K, 8), nq = cdiv(n0 + cols + zcols, 16), n = nq * kc * 128;
    float *A = rand_floats((size_t)N * K, &s), *want = sentinels(n);
    for (uint32_t c = n0; c < n0 + cols + zcols; c++)
        for (uint32_t k = 0; k < kc * 8; k++)
            want[(c / 16 * kc) * 128 + k * 16 + c % 16] =
                c < n0 + cols && k < K ? A[(size_t)c * K + k] : 0;
    rig r;
    rig_new(&r, "mk2", "mm_cols_to_blocks", 0);
    uint32_t src = fill(&r, N * K, A), dst = fill(&r, n, NULL);
    const uint32_t st[6] = {src + n0 * K * 4, dst, n0, cols, zcols, K};
    rig_state(&r, st, 6);
    assert_int_equal(rig_run(&r), worker_cycles(cols_to_blocks_slots(cols, zcols, K)));
    check_floats(&r, dst, want, n);
    rig_free(&r);
    free(A);
    free(want);
}

static void test_cols_to_blocks(void **state)
{
    (void)state;
    run_cols_to_blocks(256, 320, 40, 43, 0, 51); /* layer3's w^T, one worker's share */
    run_cols_to_blocks(10, 256, 0, 10, 6, 52);   /* layer4's w^T: N padded to 16 */
    run_cols_to_blocks(20, 12, 3, 9, 0, 53);     /* K padded: 4 zeros a column */
    run_cols_to_blocks(20, 14, 16, 4, 12, 54);   /* the second block column */
    run_cols_to_blocks(4, 2, 4, 0, 5, 55);       /* zero columns only */
}

/* ---- the codelets in a graph ---- */

/* layer4's forward product on one tile of a graph (workloads/graph): x[40][256] to chunks
 * (six mm_rows_to_chunks vertices) and w[10][256] to w^T blocks (one mm_cols_to_blocks
 * vertex, N padded to 16) in one compute set, mm_amp (a supervisor vertex) in the next, the
 * partials to y[40][10] (six mm_partials_to_rows vertices) in the third; the codelets come
 * from wl_codelet. y is the fp32 loop's bit for bit, and mlayer_linear_fwd's (bias 0) within
 * check_close. */
static void test_graph_fc4_forward(void **state)
{
    (void)state;
    enum { B = 40, IN = 256, OUT = 10, KC = IN / 8, NQ = 1 };
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 1};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.tiles_per_ipu = 1;
    sys *sy = sys_new(&cfg, &e);
    assert_non_null(sy);
    graph *g = gr_new(&cfg.m, 1);
    uint32_t sx[2] = {B, IN}, sw[2] = {OUT, IN}, sy2[2] = {B, OUT};
    uint32_t sxc[1] = {KC * B * 8}, swb[1] = {NQ * KC * 128}, sp[1] = {NQ * B * 16};
    gr_tensor x = gr_tensor_new(g, "x", GR_F32, 2, sx), w = gr_tensor_new(g, "w", GR_F32, 2, sw);
    gr_tensor xc = gr_tensor_new(g, "x_chunks", GR_F32, 1, sxc);
    gr_tensor wb = gr_tensor_new(g, "wT_blocks", GR_F32, 1, swb);
    gr_tensor part = gr_tensor_new(g, "partials", GR_F32, 1, sp);
    gr_tensor y = gr_tensor_new(g, "y", GR_F32, 2, sy2);
    const gr_tensor all[6] = {x, w, xc, wb, part, y};
    for (int i = 0; i < 6; i++)
        gr_map_region(g, all[i], 0, 0, 0, gr_tensor_elems(g, all[i]));
    gr_keep(g, x); /* the host writes x and w and reads y; the rest may share memory */
    gr_keep(g, w);
    gr_keep(g, y);

    gr_cs lay = gr_cs_new(g, "layout"), mm = gr_cs_new(g, "mm"), back = gr_cs_new(g, "rows");
    for (uint32_t v = 0; v < 6; v++) {
        uint32_t m0 = B * v / 6, n = rows_of(B, v);
        gr_field f[5] = {gr_region(x, (size_t)m0 * IN, (size_t)(m0 + n) * IN),
                         gr_region(xc, (size_t)m0 * 8, sxc[0]), gr_u32(n), gr_u32(IN), gr_u32(B)};
        gr_vertex(g, lay, "mm_rows_to_chunks", 0, 0, 0, f, 5);
        gr_field p[5] = {gr_region(part, (size_t)m0 * 16, sp[0]),
                         gr_region(y, (size_t)m0 * OUT, (size_t)(m0 + n) * OUT), gr_u32(n),
                         gr_u32(OUT), gr_u32(B)};
        gr_vertex(g, back, "mm_partials_to_rows", 0, 0, 0, p, 5);
    }
    gr_field fw[6] = {gr_region(w, 0, OUT * IN),
                      gr_region(wb, 0, swb[0]),
                      gr_u32(0),
                      gr_u32(OUT),
                      gr_u32(16 * NQ - OUT),
                      gr_u32(IN)};
    gr_vertex(g, lay, "mm_cols_to_blocks", 0, 0, 0, fw, 6);
    gr_field fm[7] = {gr_region(xc, 0, sxc[0]),
                      gr_region(wb, 0, swb[0]),
                      gr_region(part, 0, sp[0]),
                      gr_u32(B),
                      gr_u32(KC),
                      gr_u32(NQ),
                      gr_u32(1)};
    gr_vertex(g, mm, "mm_amp", 1, 0, 0, fm, 7);
    gr_prog steps[3] = {gr_execute(g, lay), gr_execute(g, mm), gr_execute(g, back)};
    gr_exe *ex = gr_compile(g, gr_seq(g, steps, 3), NULL, &e);
    if (!ex)
        fail_msg("%s", e.msg);
    eng *en = sys_engine(sy);
    assert_int_equal(gr_load(ex, en, &e), ERR_OK);

    uint64_t s = 9;
    float *hx = rand_floats(B * IN, &s), *hw = rand_floats(OUT * IN, &s);
    float got[B * OUT], want[B * OUT], ml[B * OUT], bias[OUT] = {0};
    gr_write(ex, en, x, 0, hx, B * IN);
    gr_write(ex, en, w, 0, hw, OUT * IN);
    if (eng_run(en, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    gr_read(ex, en, y, 0, got, B * OUT);
    view vx = {hx, IN, 1}, vwt = {hw, 1, IN};
    loop_ref(B, IN, OUT, vx, vwt, NULL, want);
    assert_memory_equal(got, want, sizeof got);
    mlayer_linear_fwd(B, IN, OUT, hx, hw, bias, ml);
    check_close(B, IN, OUT, vx, vwt, NULL, got, ml);
    free(hx);
    free(hw);
    gr_exe_free(ex);
    gr_free(g);
    sys_free(sy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fc3),
        cmocka_unit_test(test_fc4),
        cmocka_unit_test(test_ragged),
        cmocka_unit_test(test_rows_to_chunks),
        cmocka_unit_test(test_partials_to_rows),
        cmocka_unit_test(test_cols_to_chunks),
        cmocka_unit_test(test_rows_to_blocks),
        cmocka_unit_test(test_cols_to_blocks),
        cmocka_unit_test(test_graph_fc4_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
