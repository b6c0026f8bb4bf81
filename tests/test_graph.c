/* test_graph: the graph layer lowered to per-tile programs and run on the engine.
 *
 * A test codelet `addone` (x[i] += 1 for its n elements) is registered with the graph; its
 * cost is 6 x (5 + 3n) cycles from its first issue to its exit (two ld32 and li, rpt, three
 * body instructions per element, exit: docs/timing.md). Checked: values after repeated
 * compute sets and a copy between differently mapped tensors; exact cycles of a repeated
 * compute set, derived by hand below; each tile's memory use equal to its image, idle tiles
 * holding nothing, identical tiles sharing one program; the one-line errors of a graph
 * that does not fit and of a vertex whose field is not on its tile; and Copies of several
 * pieces (gr_copy_many) in one exchange phase: values, syncs and streams counted by the
 * engine, liveness, and their refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "host/hio.h"
#include "hw/pool.h"
#include "workloads/graph/graph.h"

static const char addone_src[] =
    "# addone: x[i] += 1.0f (a vertex's fields as its header declares\n"
    "# them: gr_vertex checks every vertex against this State)\n"
    "# State:\n"
    "#   +0  x   region  n floats\n"
    "#   +4  n   u32\n"
    "addone:\n"
    "        ld32    r1, [r0+0]\n"
    "        ld32    r2, [r0+4]\n"
    "        li      r3, 0x3f800000\n"
    "        rpt     r2, addone.end\n"
    "        ld32    r4, [r1+0]\n"
    "        fadd    r4, r4, r3\n"
    "        st32pi  r4, [r1]+=4\n"
    "addone.end:\n"
    "        exit\n";

typedef struct rig {
    sys *s;
    eng *g;
    graph *gr;
} rig;

/* A system of nipus Mk2 IPUs of `tiles` tiles (with host hc, or none) into cfg, built; fails
 * the test on any error. */
static sys *sys_of(sys_cfg *cfg, uint32_t nipus, uint32_t tiles, unsigned threads,
                   const hio_cfg *hc)
{
    err e;
    err_clear(&e);
    *cfg = (sys_cfg){.threads = threads, .host = hc};
    assert_int_equal(mach_builtin(&cfg->m, "mk2", &e), ERR_OK);
    cfg->m.tiles_per_ipu = tiles;
    cfg->m.nipus = nipus;
    sys *s = sys_new(cfg, &e);
    if (!s)
        fail_msg("%s", e.msg);
    return s;
}

/* Compile main (failing the test on an error), assembling on three threads. */
static gr_exe *compile_ok(graph *gr, gr_prog main)
{
    err e;
    err_clear(&e);
    pool *threads = pool_new(3);
    gr_exe *x = gr_compile(gr, main, threads, &e);
    pool_free(threads);
    if (!x)
        fail_msg("%s", e.msg);
    return x;
}

/* Load x (failing the test on an error). */
static void load_ok(const gr_exe *x, eng *g)
{
    err e;
    err_clear(&e);
    if (gr_load(x, g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
}

/* Run to the end (failing the test on a fault). */
static void run_ok(eng *g)
{
    err e;
    err_clear(&e);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
}

static void rig_new(rig *r, uint32_t ntiles)
{
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 2};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.tiles_per_ipu = ntiles;
    r->s = sys_new(&cfg, &e);
    assert_non_null(r->s);
    r->g = sys_engine(r->s);
    r->gr = gr_new(&cfg.m, 1);
    gr_codelet_src(r->gr, "addone", addone_src);
}

static void rig_free(rig *r)
{
    gr_free(r->gr);
    sys_free(r->s);
}

/* One addone vertex per region of t, in a new compute set. */
static gr_cs addone_cs(graph *g, gr_tensor t, uint32_t first, uint32_t ntiles, size_t per)
{
    gr_cs cs = gr_cs_new(g, "addone");
    for (uint32_t k = 0; k < ntiles; k++) {
        gr_field f[2] = {gr_region(t, k * per, (k + 1) * per), gr_u32((uint32_t)per)};
        gr_vertex(g, cs, "addone", 0, 0, first + k, f, 2);
    }
    return cs;
}

/* 32 elements over tiles 0..7 (4 each) of a 16-tile IPU, Repeat(3, Execute(addone)).
 * Cycles, every tile alike (n = 4, so the worker takes S = 5 + 12 = 17 slots): li r12 at 0;
 * li r1 at 1; run at 2 (slot 2): the worker issues from 8 to its exit at 8 + 6 x 16 = 104,
 * freeing slot 2 from 105; join at 9 (slot 3) completes at max(9 + 6, 105) = 105; sync at 105
 * arrives at 111 and releases at 111 + 90 = 201; brnzdec at 201 (6): the next pass's li at
 * 207, 206 cycles after the first's. The third pass's sync releases at 201 + 2 x 206 = 613;
 * brnzdec falls through at 613 (6), halt at 619 finishes at 620. */
static void test_repeat_exact(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 16);
    uint32_t shape[1] = {32};
    gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, shape);
    gr_map_linear(r.gr, a, 0, 0, 8, 4);
    gr_prog body = gr_execute(r.gr, addone_cs(r.gr, a, 0, 8, 4));
    gr_prog main = gr_repeat(r.gr, 3, body);
    gr_exe *x = compile_ok(r.gr, main);
    load_ok(x, r.g);
    float in[32], out[32];
    for (int i = 0; i < 32; i++)
        in[i] = 0.1f * (float)i - 1.3f;
    gr_write(x, r.g, a, 0, in, 32);
    eng_log_syncs(r.g, 0, 2); /* the first two releases only */
    run_ok(r.g);
    eng_stats st;
    eng_get_stats(r.g, &st);
    assert_int_equal(st.cycles, 620);
    size_t nrel;
    const uint64_t *rel = eng_sync_log(r.g, 0, &nrel);
    assert_int_equal(nrel, 2); /* releases at 201 and 201 + 206 (above) */
    assert_int_equal(rel[0], 201);
    assert_int_equal(rel[1], 407);
    gr_step steps[4];
    assert_int_equal(gr_exe_steps(x, 0, steps, 4), 3); /* the loop unrolled: three Executes */
    for (int k = 0; k < 3; k++) {
        assert_string_equal(steps[k].what, "execute");
        assert_string_equal(steps[k].name, "addone");
    }
    assert_int_equal(gr_exe_steps(x, 0, steps, 2), 2);
    /* the compute sets' tally (gr_load named the steps): three supersteps of addone, each its
     * compute then the 90 cycles of the sync, to the third release at 613 (3 x 90 of Sync,
     * 613 - 270 computing); then the end, from 613 to the halt at 620 */
    uint32_t nrow;
    const eng_class_sum *row = eng_class_sums(r.g, 0, &nrow);
    assert_int_equal(nrow, 3); /* addone, end, other */
    assert_string_equal(row[0].name, "addone");
    assert_int_equal(row[0].supersteps, 3);
    assert_int_equal(row[0].cat[ENG_CAT_COMPUTE], 613 - 270);
    assert_int_equal(row[0].cat[ENG_CAT_SYNC], 270);
    assert_string_equal(row[1].name, "end");
    assert_int_equal(row[1].supersteps, 1);
    assert_int_equal(row[1].cat[ENG_CAT_COMPUTE], 620 - 613);
    assert_int_equal(row[2].supersteps, 0);
    gr_read(x, r.g, a, 0, out, 32);
    for (int i = 0; i < 32; i++) {
        float want = in[i];
        for (int k = 0; k < 3; k++)
            want = want + 1.0f;
        assert_memory_equal(&out[i], &want, 4);
    }
    const gr_summary *sm = gr_exe_summary(x);
    assert_int_equal(sm->tiles_used, 8);
    assert_int_equal(sm->programs, 1); /* eight tiles, one text */
    for (uint32_t t = 0; t < 16; t++) {
        uint32_t img = eng_tile_image(r.g, 0, t);
        assert_int_equal(img, gr_exe_tile(x, 0, t)->total);
        assert_int_equal(img == 0, t >= 8);
    }
    assert_int_equal(gr_exe_tile(x, 0, 0)->data, 16);
    assert_int_equal(gr_exe_tile(x, 0, 0)->state, 8);
    gr_exe_free(x);
    rig_free(&r);
}

/* A sequence named in two places is lowered once a tile as a subroutine and called: main =
 * Repeat(2, Seq(S, Repeat(2, S))), S = Seq(Copy a to b, addone, addone, Repeat(2, addone)).
 * S runs at loop depths 1 and 2, so its own loop must count in r14 (a body emitted at depth 1
 * would count in r13, the caller's loop register, and run the wrong number of times): every
 * element of a gets 2 x 3 x 4 = 24 additions, and b holds a as the last call found it (20);
 * the Copy's send code is itself a subroutine its tiles call, overwriting lr, which the
 * call's return must survive. Against the same program with S written out twice (two
 * sequences, each named once: no calls), the code is smaller, and each of the 6 calls costs
 * call 6 + li 1 + st32 lr 1 (before the body) + li 1 + ld32 lr (ret waits for lr: 7, the
 * load-use latency) + ret 6 = 22 cycles (docs/timing.md; nothing else runs on the tile). */
static void test_called_seq(void **state)
{
    (void)state;
    uint64_t cycles[2];
    uint32_t code[2];
    for (int once = 0; once < 2; once++) {
        rig r;
        rig_new(&r, 16);
        uint32_t shape[1] = {32};
        gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, shape);
        gr_map_linear(r.gr, a, 0, 0, 8, 4);
        gr_tensor b = gr_tensor_new(r.gr, "b", GR_F32, 1, shape);
        gr_map_linear(r.gr, b, 0, 8, 8, 4);
        gr_cs cs = addone_cs(r.gr, a, 0, 8, 4);
        gr_prog s[2];
        for (int k = 0; k < 2; k++) {
            gr_xfer xf = {a, 0, b, 0, 32};
            gr_prog e4[4] = {gr_copy_many(r.gr, &xf, 1), gr_execute(r.gr, cs), gr_execute(r.gr, cs),
                             gr_repeat(r.gr, 2, gr_execute(r.gr, cs))};
            s[k] = k && once ? s[0] : gr_seq(r.gr, e4, 4);
        }
        gr_prog inner[2] = {s[0], gr_repeat(r.gr, 2, s[1])};
        gr_prog main = gr_repeat(r.gr, 2, gr_seq(r.gr, inner, 2));
        gr_exe *x = compile_ok(r.gr, main);
        load_ok(x, r.g);
        float in[32], out[32];
        for (int i = 0; i < 32; i++)
            in[i] = 0.1f * (float)i - 1.3f;
        gr_write(x, r.g, a, 0, in, 32);
        run_ok(r.g);
        eng_stats st;
        eng_get_stats(r.g, &st);
        cycles[once] = st.cycles;
        code[once] = gr_exe_tile(x, 0, 0)->code;
        for (int t = 0; t < 2; t++) { /* a: 24 additions; b: a before the last S added 4 */
            gr_read(x, r.g, t ? b : a, 0, out, 32);
            for (int i = 0; i < 32; i++) {
                float want = in[i];
                for (int k = 0; k < 24 - 4 * t; k++)
                    want = want + 1.0f;
                assert_memory_equal(&out[i], &want, 4);
            }
        }
        gr_step steps[40];
        assert_int_equal(gr_exe_steps(x, 0, steps, 40), 30); /* the loops unrolled */
        gr_exe_free(x);
        rig_free(&r);
    }
    assert_true(code[1] < code[0]);
    assert_int_equal(cycles[1] - cycles[0], 6 * 22);
}

/* Loops nested five deep (Repeat 2, 3, 2, 2, 2 of one Execute of addone): the three outer
 * ones count in r12..r14, the two inner ones in words of tile memory; the body runs
 * 2 x 3 x 2 x 2 x 2 = 48 times, so each element is its input plus 48 (exact: small integers
 * added to values of magnitude below 2). */
static void test_repeat_deep(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 16);
    uint32_t shape[1] = {8};
    gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, shape);
    gr_map_linear(r.gr, a, 0, 0, 2, 4);
    gr_prog p = gr_execute(r.gr, addone_cs(r.gr, a, 0, 2, 4));
    static const uint32_t count[5] = {2, 2, 2, 3, 2}; /* innermost first */
    for (int k = 0; k < 5; k++)
        p = gr_repeat(r.gr, count[k], p);
    gr_exe *x = compile_ok(r.gr, p);
    load_ok(x, r.g);
    float in[8], out[8];
    for (int i = 0; i < 8; i++)
        in[i] = 0.25f * (float)i - 1.0f;
    gr_write(x, r.g, a, 0, in, 8);
    run_ok(r.g);
    gr_read(x, r.g, a, 0, out, 8);
    for (int i = 0; i < 8; i++)
        assert_true(out[i] == in[i] + 48.0f);
    gr_exe_free(x);
    rig_free(&r);
}

/* Seven addone vertices of one element each on tile 0 of a 16-tile IPU, one Execute: the
 * lowering runs six workers (all the contexts), joins them, runs the seventh and joins it.
 * Each worker takes S = 5 + 3 = 8 slots, exiting 42 cycles after its first issue. By the
 * barrel's rules (docs/timing.md: li 1 cycle, run 6, the supervisor in the first slot no
 * worker owns, a run at c starts its worker at c + 6 in slot c mod 6, a worker exiting at e
 * frees its slot from e + 1, join at c goes on at max(c + 6, last exit + 1)):
 *   li 0; run 1 (slot 1): worker 0 issues 7..49;    li 8;  run 9 (slot 3): 15..57;
 *   li 16; run 17 (slot 5): 23..65;  li 24 (25 is worker 0's slot); run 26 (slot 2): 32..74;
 *   li 34 (35 owned); run 36 (slot 0): 42..84;  li 46 (47..51 owned); run 52 (slot 4): 58..100;
 *   join 61 (58..60 owned) goes on at max(67, 101) = 101;
 *   li 101; run 102 (slot 0): 108..150; join 109 goes on at 151;
 *   sync 151 arrives at 157 and releases at 157 + 90 = 247; halt 247 finishes at 248.
 * (Joining after five instead: join 46 goes on at 85, the last two run at 86 and 94, the
 * join at 101 goes on at 143, halt at 239 finishes at 240.) */
static void test_seven_workers(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 16);
    uint32_t shape[1] = {7};
    gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, shape);
    gr_map_linear(r.gr, a, 0, 0, 1, 7);
    gr_cs cs = gr_cs_new(r.gr, "addone");
    for (uint32_t k = 0; k < 7; k++) {
        gr_field f[2] = {gr_region(a, k, k + 1), gr_u32(1)};
        gr_vertex(r.gr, cs, "addone", 0, 0, 0, f, 2);
    }
    gr_exe *x = compile_ok(r.gr, gr_execute(r.gr, cs));
    load_ok(x, r.g);
    float in[7], out[7];
    for (int i = 0; i < 7; i++)
        in[i] = 0.5f * (float)i;
    gr_write(x, r.g, a, 0, in, 7);
    run_ok(r.g);
    eng_stats st;
    eng_get_stats(r.g, &st);
    assert_int_equal(st.cycles, 248);
    gr_read(x, r.g, a, 0, out, 7);
    for (int i = 0; i < 7; i++) {
        float want = in[i] + 1.0f;
        assert_memory_equal(&out[i], &want, 4);
    }
    gr_exe_free(x);
    rig_free(&r);
}

/* a on tiles 0..7, b on tiles 1..8 with another grain (5): a copy moves every element to
 * another tile or keeps it, then addone runs on b's tiles. b[i] = a[i] + 1 + 1 (once on a
 * before the copy, once on b after). */
static void test_copy_values(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 16);
    uint32_t shape[1] = {40};
    gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, shape);
    gr_tensor b = gr_tensor_new(r.gr, "b", GR_F32, 1, shape);
    gr_map_linear(r.gr, a, 0, 0, 8, 5);
    gr_map_linear(r.gr, b, 0, 1, 8, 5);
    gr_prog p[3] = {gr_execute(r.gr, addone_cs(r.gr, a, 0, 8, 5)), gr_copy(r.gr, a, b),
                    gr_execute(r.gr, addone_cs(r.gr, b, 1, 8, 5))};
    gr_prog main = gr_seq(r.gr, p, 3);
    gr_exe *x = compile_ok(r.gr, main);
    assert_int_equal(gr_exe_summary(x)->exchanges, 1);
    assert_int_equal(gr_exe_summary(x)->exchange_bytes, 160);
    load_ok(x, r.g);
    float in[40], out[40];
    for (int i = 0; i < 40; i++)
        in[i] = 1.0f / (float)(i + 3);
    gr_write(x, r.g, a, 0, in, 40);
    run_ok(r.g);
    gr_read(x, r.g, b, 0, out, 40);
    for (int i = 0; i < 40; i++) {
        float want = (in[i] + 1.0f) + 1.0f;
        assert_memory_equal(&out[i], &want, 4);
    }
    gr_exe_free(x);
    rig_free(&r);
}

/* 200,000 floats on one tile: 800,000 bytes against 638,976. */
static void test_too_big(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 4);
    uint32_t shape[2] = {1000, 200};
    gr_tensor w = gr_tensor_new(r.gr, "weights", GR_F32, 2, shape);
    gr_map_region(r.gr, w, 0, 2, 0, 200000);
    gr_cs cs = gr_cs_new(r.gr, "cs");
    gr_field f[2] = {gr_region(w, 0, 200000), gr_u32(200000)};
    gr_vertex(r.gr, cs, "addone", 0, 0, 2, f, 2);
    err e;
    err_clear(&e);
    assert_null(gr_compile(r.gr, gr_execute(r.gr, cs), eng_pool(r.g), &e));
    assert_non_null(strstr(e.msg, "ipu 0 tile 2 needs"));
    assert_non_null(strstr(e.msg, "of its 638976"));
    assert_non_null(strstr(e.msg, "weights 800000 B"));
    rig_free(&r);
}

/* Code that does not fit: 16 floats on one tile, run 300 times by a Seq of 300 Executes, each
 * lowered in place (a few supervisor instructions and a sync each, 8 bytes an instruction:
 * some 9,600 bytes), against an SRAM of 4,096 bytes: the error names the code's bytes before
 * the tensors. */
static void test_code_too_big(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 2);
    mach m;
    err e;
    err_clear(&e);
    assert_int_equal(mach_builtin(&m, "mk2", &e), ERR_OK);
    m.tiles_per_ipu = 2;
    m.sram_bytes = 4096;
    gr_free(r.gr);
    r.gr = gr_new(&m, 1);
    gr_codelet_src(r.gr, "addone", addone_src);
    uint32_t shape[1] = {16};
    gr_tensor t = gr_tensor_new(r.gr, "t", GR_F32, 1, shape);
    gr_map_region(r.gr, t, 0, 1, 0, 16);
    gr_cs cs = gr_cs_new(r.gr, "cs");
    gr_field f[2] = {gr_region(t, 0, 16), gr_u32(16)};
    gr_vertex(r.gr, cs, "addone", 0, 0, 1, f, 2);
    gr_prog p[300];
    for (int k = 0; k < 300; k++)
        p[k] = gr_execute(r.gr, cs);
    assert_null(gr_compile(r.gr, gr_seq(r.gr, p, 300), eng_pool(r.g), &e));
    unsigned need = 0, code = 0;
    const char *at = strstr(e.msg, "ipu 0 tile 1 needs ");
    assert_non_null(at);
    assert_int_equal(
        sscanf(at, "ipu 0 tile 1 needs %u bytes of its 4096 (code %u B;", &need, &code), 2);
    assert_true(code > 300 * 8 * 3 && code < need); /* at least li, run, sync each */
    assert_non_null(strstr(e.msg, "; largest tensors: t 64 B)"));
    rig_free(&r);
}

/* Two regions of one tensor on one tile, [0, 4) and [4, 12): a field starting at element 4
 * lies in the second, not one past the end of the first (first-fit places the larger
 * second region at 0 and the first at 32, so the end of the first is byte 48, outside both).
 * addone on [4, 12) must change elements 4..11 only. */
static void test_field_at_region_start(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 2);
    uint32_t shape[1] = {12};
    gr_tensor t = gr_tensor_new(r.gr, "t", GR_F32, 1, shape);
    gr_map_region(r.gr, t, 0, 1, 0, 4);
    gr_map_region(r.gr, t, 0, 1, 4, 12);
    gr_cs cs = gr_cs_new(r.gr, "cs");
    gr_field f[2] = {gr_region(t, 4, 12), gr_u32(8)};
    gr_vertex(r.gr, cs, "addone", 0, 0, 1, f, 2);
    err e;
    err_clear(&e);
    gr_exe *x = compile_ok(r.gr, gr_execute(r.gr, cs));
    load_ok(x, r.g);
    float v[12], got[12];
    for (int i = 0; i < 12; i++)
        v[i] = (float)i;
    gr_write(x, r.g, t, 0, v, 12);
    assert_int_equal(eng_run(r.g, &e), ERR_OK);
    gr_read(x, r.g, t, 0, got, 12);
    for (int i = 0; i < 12; i++)
        assert_true(got[i] == (i < 4 ? v[i] : v[i] + 1.0f));
    gr_exe_free(x);
    rig_free(&r);
}

/* A tensor far beyond any SRAM (80 MB: more than the assembler's .space takes) is still the
 * graph's one-line error, found before anything is assembled. */
static void test_far_too_big(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 4);
    uint32_t shape[1] = {20000000};
    gr_tensor w = gr_tensor_new(r.gr, "huge", GR_F32, 1, shape);
    gr_map_region(r.gr, w, 0, 1, 0, shape[0]);
    gr_cs cs = gr_cs_new(r.gr, "cs");
    gr_field f[2] = {gr_region(w, 0, 4), gr_u32(4)};
    gr_vertex(r.gr, cs, "addone", 0, 0, 1, f, 2);
    err e;
    err_clear(&e);
    assert_null(gr_compile(r.gr, gr_execute(r.gr, cs), eng_pool(r.g), &e));
    assert_non_null(strstr(e.msg, "graph does not fit: ipu 0 tile 1 needs 80000"));
    assert_non_null(strstr(e.msg, "(largest tensors: huge 80000000 B)"));
    rig_free(&r);
}

static void test_field_off_tile(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 4);
    uint32_t shape[1] = {8};
    gr_tensor t = gr_tensor_new(r.gr, "t", GR_F32, 1, shape);
    gr_map_linear(r.gr, t, 0, 0, 2, 4);
    gr_cs cs = gr_cs_new(r.gr, "cs");
    gr_field f[2] = {gr_region(t, 2, 6), gr_u32(4)}; /* crosses tiles 0 and 1 */
    gr_vertex(r.gr, cs, "addone", 0, 0, 0, f, 2);
    err e;
    err_clear(&e);
    assert_null(gr_compile(r.gr, gr_execute(r.gr, cs), eng_pool(r.g), &e));
    assert_non_null(strstr(e.msg, "is not in one region on that tile"));
    rig_free(&r);
}

/* Infeed of buffer k, byte at offset o: a pattern the test can recompute. */
static void fill(void *ctx, uint32_t ipu, uint64_t k, uint64_t offset, uint8_t *dst, uint32_t bytes)
{
    (void)ctx;
    for (uint32_t i = 0; i < bytes; i++)
        dst[i] = (uint8_t)(ipu * 7 + k * 31 + (offset + i) * 3);
}

/* Stream in twice (Repeat 2) into a tensor of 24 words mapped unevenly over tiles 0, 2 and 5
 * (regions [0, 4) on tile 0, [4, 14) on tile 2, [14, 24) on tile 5): the host's buffer is
 * sliced in tile order, so tile 0's region takes bytes 0..15, tile 2's 16..55, tile 5's
 * 56..95; after the second copy the tensor holds buffer 1. Mapped so that tile order is not
 * element order ([0, 4) on tile 2, [4, 14) on tile 0), the stream copy is refused. */
static void test_stream_in(void **state)
{
    (void)state;
    hio_cfg hc = {.in = host_cfg_default(), .out = host_cfg_default(), .fill = fill};
    hc.in.bytes_per_buffer = 96;
    hc.out.bytes_per_buffer = 4;
    sys_cfg cfg;
    sys *s = sys_of(&cfg, 1, 8, 1, &hc);
    graph *bad = gr_new(&cfg.m, 1);
    gr_tensor b = gr_tensor_new(bad, "in", GR_I32, 1, (uint32_t[]){24});
    gr_map_region(bad, b, 0, 2, 0, 4);
    gr_map_region(bad, b, 0, 0, 4, 14);
    gr_map_region(bad, b, 0, 5, 14, 24);
    assert_int_equal(gr_stream_in(bad, b), GR_NONE);
    err e;
    err_clear(&e);
    assert_int_equal(gr_status(bad, &e), ERR_INPUT);
    assert_string_equal(e.msg, "stream copy of in: region [4, 14) on ipu 0 tile 0 comes before "
                               "earlier elements in (ipu, tile) order; the host fills a "
                               "stream's tiles one after another");
    gr_free(bad);
    graph *gr = gr_new(&cfg.m, 1);
    uint32_t shape[1] = {24};
    gr_tensor t = gr_tensor_new(gr, "in", GR_I32, 1, shape);
    gr_map_region(gr, t, 0, 0, 0, 4);
    gr_map_region(gr, t, 0, 2, 4, 14);
    gr_map_region(gr, t, 0, 5, 14, 24);
    gr_prog main = gr_repeat(gr, 2, gr_stream_in(gr, t));
    gr_exe *x = compile_ok(gr, main);
    gr_step st[3];
    assert_int_equal(gr_exe_steps(x, 0, st, 3), 2);
    assert_string_equal(st[1].what, "stream in");
    assert_string_equal(st[1].name, "in");
    load_ok(x, sys_engine(s));
    run_ok(sys_engine(s));
    uint8_t got[96], buf[96];
    gr_read(x, sys_engine(s), t, 0, got, 24);
    fill(NULL, 0, 1, 0, buf, 96);
    assert_memory_equal(got + 0, buf + 0, 16);   /* elements 0..3: tile 0 */
    assert_memory_equal(got + 16, buf + 16, 40); /* elements 4..13: tile 2 */
    assert_memory_equal(got + 56, buf + 56, 40); /* elements 14..23: tile 5 */
    gr_exe_free(x);
    gr_free(gr);
    sys_free(s);
}

/* Replicas and the all-reduce: 4 replicas of a one-IPU graph (one M2000), t (13 fp32: 7 on
 * tile 1, 6 on tile 3) streamed in per IPU (replica r's values v(r, i) below, inexact, so that
 * the order of the sums shows), summed over the replicas, streamed out. Each region is cut in
 * 4 chunks of whole pairs, chunk c from 2 floor(floor(n / 2) c / 4) (7: [0, 0) [0, 2) [2, 4)
 * [4, 7); 6: [0, 0) [0, 2) [2, 4) [4, 6): an empty chunk sends nothing); chunk c's sum is
 * formed round the ring from replica c: g[c+3] + (g[c+2] + (g[c+1] + g[c])) (indices mod 4),
 * the same on every replica. Bytes each IPU sends over the IPU-Links: per region, every
 * chunk but (r + 1)'s in the reduce-scatter and every chunk but (r + 2)'s in the all-gather.
 * Steps: the stream, 3 x (a round, the add), 3 rounds, the stream. */
static float arv(uint32_t r, size_t i)
{
    return 0.1f * (float)(r + 1) + 1e-3f * (float)i + (r == 1 ? 3.0e-8f * (float)i : 0.0f);
}

static void ar_fill(void *ctx, uint32_t ipu, uint64_t k, uint64_t offset, uint8_t *dst,
                    uint32_t bytes)
{
    (void)ctx;
    (void)k;
    for (uint32_t b = 0; b < bytes; b += 4) {
        float v = arv(ipu, (offset + b) / 4);
        memcpy(dst + b, &v, 4);
    }
}

static void ar_drain(void *ctx, uint32_t ipu, uint64_t k, uint64_t offset, const uint8_t *src,
                     uint32_t bytes, uint64_t cycle)
{
    (void)k;
    (void)cycle;
    memcpy((uint8_t *)ctx + 52 * ipu + offset, src, bytes);
}

static void test_all_reduce(void **state)
{
    (void)state;
    uint8_t out[4 * 52];
    hio_cfg hc = {.in = host_cfg_default(),
                  .out = host_cfg_default(),
                  .fill = ar_fill,
                  .drain = ar_drain,
                  .drain_ctx = out};
    hc.in.bytes_per_buffer = hc.out.bytes_per_buffer = 52;
    sys_cfg cfg;
    sys *s = sys_of(&cfg, 4, 4, 2, &hc);
    graph *gr = gr_new(&cfg.m, 1);
    gr_replicate(gr, 4);
    gr_tensor t = gr_tensor_new(gr, "t", GR_F32, 1, (uint32_t[]){13});
    gr_map_region(gr, t, 0, 1, 0, 7);
    gr_map_region(gr, t, 0, 3, 7, 13);
    gr_prog p[3] = {gr_stream_in(gr, t), gr_all_reduce(gr, t), gr_stream_out(gr, t)};
    gr_exe *x = compile_ok(gr, gr_seq(gr, p, 3));
    gr_step st[16];
    assert_int_equal(gr_exe_steps(x, 0, st, 16), 1 + 3 * 2 + 3 + 1);
    load_ok(x, sys_engine(s));
    run_ok(sys_engine(s));
    static const size_t first[2] = {0, 7}, len[2] = {7, 6};
    static const size_t cut[2][5] = {{0, 0, 2, 4, 7}, {0, 0, 2, 4, 6}};
    int order_shows = 0;
    for (int k = 0; k < 2; k++)
        for (uint32_t c = 0; c < 4; c++)
            for (size_t i = first[k] + cut[k][c]; i < first[k] + cut[k][c + 1]; i++) {
                float want =
                    arv((c + 3) % 4, i) + (arv((c + 2) % 4, i) + (arv((c + 1) % 4, i) + arv(c, i)));
                float plain = ((arv(0, i) + arv(1, i)) + arv(2, i)) + arv(3, i);
                order_shows |= memcmp(&want, &plain, 4) != 0;
                for (uint32_t r = 0; r < 4; r++)
                    assert_memory_equal(out + 52 * r + 4 * i, &want, 4);
            }
    assert_true(order_shows); /* the ring's order, not replica 0 + 1 + 2, is what was summed */
    for (uint32_t r = 0; r < 4; r++) {
        eng_ipu_stats q;
        eng_get_ipu_stats(sys_engine(s), r, &q);
        uint64_t want = 0;
        for (int k = 0; k < 2; k++) {
            size_t c1 = (r + 1) % 4, c2 = (r + 2) % 4;
            want +=
                4 * (2 * len[k] - (cut[k][c1 + 1] - cut[k][c1]) - (cut[k][c2 + 1] - cut[k][c2]));
        }
        assert_int_equal(q.global_tx_bytes, want);
    }
    gr_exe_free(x);
    gr_free(gr);
    sys_free(s);
}

/* I/O tiles: tiles 6 and 7 of an 8-tile IPU. The micro-batch (8 words) lands on them
 * (infeed.io) while tiles 0..3 compute (addone over 2,000 floats each), then is handed over
 * to x on tiles 0 and 1: Seq(stream in, Repeat(3, Seq(copy io -> x, stream in io, compute))).
 * Without I/O tiles the same run streams into x before each compute. The I/O tiles' stream
 * copies overlap the compute supersteps (the I/O tiles alone sync with the host, group_host),
 * so the run with them ends earlier, by less than the copies' time; the last hand-over gives x
 * buffer 2 (the buffers are the I/O tiles' copies in order: 0 before the loop, 1 and 2 in it),
 * and the copies onto the I/O tiles are counted apart (io). */
static uint64_t io_run(int io, uint8_t *x_out, eng_ipu_stats *st)
{
    hio_cfg hc = {.in = host_cfg_default(), .out = host_cfg_default(), .fill = fill};
    hc.in.bytes_per_buffer = 32;
    hc.out.bytes_per_buffer = 4;
    sys_cfg cfg;
    sys *s = sys_of(&cfg, 1, 8, 2, &hc);
    graph *gr = gr_new(&cfg.m, 1);
    gr_codelet_src(gr, "addone", addone_src);
    gr_tensor x = gr_tensor_new(gr, "x", GR_I32, 1, (uint32_t[]){8});
    gr_map_linear(gr, x, 0, 0, 2, 4);
    gr_tensor w = gr_tensor_new(gr, "work", GR_F32, 1, (uint32_t[]){8000});
    gr_map_linear(gr, w, 0, 0, 4, 2000);
    gr_keep(gr, x);
    gr_prog body[3], first = GR_NONE;
    if (io) {
        gr_io_tiles(gr, 0, 6, 2);
        gr_tensor xio = gr_tensor_new(gr, "infeed.io", GR_I32, 1, (uint32_t[]){8});
        gr_map_linear(gr, xio, 0, 6, 2, 4);
        first = gr_stream_in(gr, xio);
        body[0] = gr_copy(gr, xio, x);
        body[1] = gr_stream_in(gr, xio);
    } else {
        body[0] = gr_stream_in(gr, x);
        body[1] = GR_NONE;
    }
    gr_prog comp = gr_execute(gr, addone_cs(gr, w, 0, 4, 2000));
    gr_prog loop;
    if (io) {
        body[2] = comp;
        loop = gr_seq(gr, (gr_prog[]){first, gr_repeat(gr, 3, gr_seq(gr, body, 3))}, 2);
    } else {
        loop = gr_repeat(gr, 3, gr_seq(gr, (gr_prog[]){body[0], comp}, 2));
    }
    gr_exe *xe = compile_ok(gr, loop);
    load_ok(xe, sys_engine(s));
    run_ok(sys_engine(s));
    gr_read(xe, sys_engine(s), x, 0, x_out, 8);
    eng_stats es;
    eng_get_stats(sys_engine(s), &es);
    eng_get_ipu_stats(sys_engine(s), 0, st);
    gr_exe_free(xe);
    gr_free(gr);
    sys_free(s);
    return es.cycles;
}

static void test_io_tiles(void **state)
{
    (void)state;
    uint8_t with[32], without[32], want[32];
    eng_ipu_stats a, b;
    uint64_t c_io = io_run(1, with, &a), c_plain = io_run(0, without, &b);
    fill(NULL, 0, 2, 0, want, 32);
    assert_memory_equal(with, want, 32);
    assert_memory_equal(without, want, 32);
    assert_true(a.io[1] > 0 && b.io[1] == 0); /* the I/O tiles' copies, apart */
    assert_true(c_io < c_plain);
    assert_true(c_plain - c_io < b.cat[ENG_CAT_BEGIN] + b.cat[ENG_CAT_MID] + b.cat[ENG_CAT_END]);
}

/* Liveness: on one tile, a (16 floats, kept), b and c (32 each). Run b's compute set twice
 * then c's: b is live over steps 0-1, c at step 2, so they share memory: largest first, b at
 * 0, c at 0 too, a (always live) after them at 128: a pool of 192 bytes, not 320. Inside a
 * Repeat the two are live over the whole loop, so they cannot share: 320. */
static void test_liveness(void **state)
{
    (void)state;
    for (int loop = 0; loop < 2; loop++) {
        rig r;
        rig_new(&r, 2);
        uint32_t s16[1] = {16}, s32[1] = {32};
        gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, s16);
        gr_tensor b = gr_tensor_new(r.gr, "b", GR_F32, 1, s32);
        gr_tensor c = gr_tensor_new(r.gr, "c", GR_F32, 1, s32);
        gr_keep(r.gr, a);
        gr_map_region(r.gr, a, 0, 0, 0, 16);
        gr_map_region(r.gr, b, 0, 0, 0, 32);
        gr_map_region(r.gr, c, 0, 0, 0, 32);
        gr_prog eb = gr_execute(r.gr, addone_cs(r.gr, b, 0, 1, 32));
        gr_prog ec = gr_execute(r.gr, addone_cs(r.gr, c, 0, 1, 32));
        gr_prog ea = gr_execute(r.gr, addone_cs(r.gr, a, 0, 1, 16));
        gr_prog main;
        if (loop) {
            gr_prog body[2] = {eb, ec};
            gr_prog p[2] = {gr_repeat(r.gr, 2, gr_seq(r.gr, body, 2)), ea};
            main = gr_seq(r.gr, p, 2);
        } else {
            gr_prog p[4] = {eb, eb, ec, ea};
            main = gr_seq(r.gr, p, 4);
        }
        err e;
        err_clear(&e);
        gr_exe *x = gr_compile(r.gr, main, NULL, &e);
        if (!x)
            fail_msg("%s", e.msg);
        const gr_tile_mem *tm = gr_exe_tile(x, 0, 0);
        assert_int_equal(tm->always, 64);
        assert_int_equal(tm->other, 256);
        assert_int_equal(tm->data, loop ? 320 : 192);
        load_ok(x, r.g);
        float in[16], out[16];
        for (int i = 0; i < 16; i++)
            in[i] = (float)i / 7.0f;
        gr_write(x, r.g, a, 0, in, 16);
        if (eng_run(r.g, &e) != ERR_OK)
            fail_msg("%s", e.msg);
        gr_read(x, r.g, a, 0, out, 16);
        for (int i = 0; i < 16; i++) {
            float want = in[i] + 1.0f;
            assert_memory_equal(&out[i], &want, 4);
        }
        gr_exe_free(x);
        rig_free(&r);
    }
}

/* gr_pairs: on one tile, a (3 floats, whole pairs) takes 16 bytes, b (5 floats) 20: 36
 * always live (12 + 20 = 32 without it). */
static void test_pairs(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 2);
    gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, (uint32_t[]){3});
    gr_tensor b = gr_tensor_new(r.gr, "b", GR_F32, 1, (uint32_t[]){5});
    gr_keep(r.gr, a);
    gr_keep(r.gr, b);
    gr_pairs(r.gr, a);
    gr_map_region(r.gr, a, 0, 0, 0, 3);
    gr_map_region(r.gr, b, 0, 0, 0, 5);
    err e;
    err_clear(&e);
    gr_exe *x = gr_compile(r.gr, gr_execute(r.gr, addone_cs(r.gr, a, 0, 1, 3)), NULL, &e);
    if (!x)
        fail_msg("%s", e.msg);
    assert_int_equal(gr_exe_tile(x, 0, 0)->always, 36);
    gr_exe_free(x);
    rig_free(&r);
}

/* A copy between IPUs: a (12 floats) on IPU 0 tiles 0..3 in threes, b on IPU 1 tiles 0..2 in
 * fours: six transfers over the IPU-Links, tile 0 of IPU 1 receiving two and tile 1 of IPU 0
 * sending two, so two rounds of gsend, each delivered by an external sync. addone on both
 * sides: b = a + 1 + 1, every tile of both IPUs running the same control flow. */
static void test_copy_between_ipus(void **state)
{
    (void)state;
    sys_cfg cfg;
    sys *s = sys_of(&cfg, 2, 4, 2, NULL);
    graph *gr = gr_new(&cfg.m, 2);
    gr_codelet_src(gr, "addone", addone_src);
    uint32_t shape[1] = {12};
    gr_tensor a = gr_tensor_new(gr, "a", GR_F32, 1, shape);
    gr_tensor b = gr_tensor_new(gr, "b", GR_F32, 1, shape);
    gr_keep(gr, a);
    gr_keep(gr, b);
    gr_map_linear(gr, a, 0, 0, 4, 3);
    gr_map_linear(gr, b, 1, 0, 3, 4);
    gr_cs ca = gr_cs_new(gr, "a"), cb = gr_cs_new(gr, "b");
    for (uint32_t k = 0; k < 4; k++) {
        gr_field f[2] = {gr_region(a, 3 * k, 3 * k + 3), gr_u32(3)};
        gr_vertex(gr, ca, "addone", 0, 0, k, f, 2);
    }
    for (uint32_t k = 0; k < 3; k++) {
        gr_field f[2] = {gr_region(b, 4 * k, 4 * k + 4), gr_u32(4)};
        gr_vertex(gr, cb, "addone", 0, 1, k, f, 2);
    }
    gr_prog p[3] = {gr_execute(gr, ca), gr_copy(gr, a, b), gr_execute(gr, cb)};
    gr_exe *x = compile_ok(gr, gr_seq(gr, p, 3));
    assert_int_equal(gr_exe_summary(x)->exchange_bytes, 48);
    load_ok(x, sys_engine(s));
    float in[12], out[12];
    for (int i = 0; i < 12; i++)
        in[i] = 0.3f * (float)i + 0.01f;
    gr_write(x, sys_engine(s), a, 0, in, 12);
    run_ok(sys_engine(s));
    gr_read(x, sys_engine(s), b, 0, out, 12);
    for (int i = 0; i < 12; i++) {
        float want = (in[i] + 1.0f) + 1.0f;
        assert_memory_equal(&out[i], &want, 4);
    }
    assert_int_equal(eng_tile_image(sys_engine(s), 1, 3), 0); /* holds nothing: idle */
    gr_exe_free(x);
    gr_free(gr);
    sys_free(s);
}

/* Each IPU runs its own program: a on IPU 0, b on IPU 1, Seq(Repeat(3, Execute(a's compute
 * set)), Execute(b's)). IPU 1 has nothing in the loop, so it leaves the loop out and runs b's
 * compute set at once, beside IPU 0's loop. IPU 0's timeline is test_repeat_exact's (the
 * same tile program, one tile): releases at 201, 407, 613 and halt at 620. IPU 1, without
 * the loop's `li r12`, one cycle earlier than a first pass: li r1 at 0, run at 1, the worker
 * issues from 7 to its exit at 103, join completes at 104, sync at 104 arrives at 110 and
 * releases at 110 + 90 = 200. Were IPU 1 to sync for IPU 0's compute sets, its one release
 * would come after IPU 0's three. */
static void test_per_ipu_programs(void **state)
{
    (void)state;
    sys_cfg cfg;
    sys *s = sys_of(&cfg, 2, 4, 2, NULL);
    graph *gr = gr_new(&cfg.m, 2);
    gr_codelet_src(gr, "addone", addone_src);
    uint32_t shape[1] = {4};
    gr_tensor a = gr_tensor_new(gr, "a", GR_F32, 1, shape);
    gr_tensor b = gr_tensor_new(gr, "b", GR_F32, 1, shape);
    gr_map_region(gr, a, 0, 0, 0, 4);
    gr_map_region(gr, b, 1, 0, 0, 4);
    gr_cs ca = gr_cs_new(gr, "a"), cb = gr_cs_new(gr, "b");
    gr_field fa[2] = {gr_region(a, 0, 4), gr_u32(4)}, fb[2] = {gr_region(b, 0, 4), gr_u32(4)};
    gr_vertex(gr, ca, "addone", 0, 0, 0, fa, 2);
    gr_vertex(gr, cb, "addone", 0, 1, 0, fb, 2);
    gr_prog p[2] = {gr_repeat(gr, 3, gr_execute(gr, ca)), gr_execute(gr, cb)};
    gr_exe *x = compile_ok(gr, gr_seq(gr, p, 2));
    gr_step st[4];
    assert_int_equal(gr_exe_steps(x, 0, st, 4), 3);
    assert_int_equal(gr_exe_steps(x, 1, st, 4), 1);
    assert_string_equal(st[0].name, "b");
    eng *g = sys_engine(s);
    load_ok(x, g);
    eng_log_syncs(g, 1, 4);
    run_ok(g);
    size_t n;
    const uint64_t *rel = eng_sync_log(g, 1, &n);
    assert_int_equal(n, 1);
    assert_int_equal(rel[0], 200);
    eng_stats es;
    eng_get_stats(g, &es);
    assert_int_equal(es.cycles, 620);
    gr_exe_free(x);
    gr_free(gr);
    sys_free(s);
}

/* Remote buffers: a (20 floats over tiles 0..3) written to remote buffer 3 from byte 64, read
 * back into b mapped over tiles 4..5 with another grain: b == a. */
static void test_remote(void **state)
{
    (void)state;
    hio_cfg hc = {.in = host_cfg_default(), .out = host_cfg_default(), .fill = fill};
    hc.in.bytes_per_buffer = 4;
    hc.out.bytes_per_buffer = 4;
    sys_cfg cfg;
    sys *s = sys_of(&cfg, 1, 8, 2, &hc);
    graph *gr = gr_new(&cfg.m, 1);
    uint32_t shape[1] = {20};
    gr_tensor a = gr_tensor_new(gr, "a", GR_F32, 1, shape);
    gr_tensor b = gr_tensor_new(gr, "b", GR_F32, 1, shape);
    gr_keep(gr, a);
    gr_keep(gr, b);
    gr_map_linear(gr, a, 0, 0, 4, 5);
    gr_map_linear(gr, b, 0, 4, 2, 10);
    gr_prog p[2] = {gr_remote_write(gr, a, 3, 64), gr_remote_read(gr, b, 3, 64)};
    gr_exe *x = compile_ok(gr, gr_seq(gr, p, 2));
    load_ok(x, sys_engine(s));
    float in[20], out[20];
    for (int i = 0; i < 20; i++)
        in[i] = 1.0f / (float)(i + 1);
    gr_write(x, sys_engine(s), a, 0, in, 20);
    run_ok(sys_engine(s));
    gr_read(x, sys_engine(s), b, 0, out, 20);
    assert_memory_equal(out, in, sizeof in);
    gr_exe_free(x);
    gr_free(gr);
    sys_free(s);
}

/* The codelets test_vertex_fields_checked makes vertices of: a good header, and headers
 * without a State section or with a malformed one. */
static void state_codelets(graph *g)
{
    gr_codelet_src(g, "addone", addone_src);
    gr_codelet_src(g, "nostate", "nostate:\n        exit\n");
    gr_codelet_src(g, "badkind", "# State:\n#   +0  x  region\n#   +4  n  word\nbadkind: exit\n");
    gr_codelet_src(g, "gap", "# State:\n#   +0  x  region\n#   +8  n  u32\ngap: exit\n");
    gr_codelet_src(g, "pair", "# State:\n#   +0  x  region\n#   +4  n  u32x1\npair: exit\n");
    gr_codelet_src(
        g, "later",
        "# see # State below\n# State:\n#   +0  x  region\n#   +4  n  u32\nlater: exit\n");
    gr_codelet_src(g, "midline", "# no # State here\nmidline: exit\n");
}

/* Every vertex is checked where it is made against its codelet's header (its "# State"
 * entries, docs/codelets.md): the number of fields, each field's kind, worker or supervisor;
 * a header without a State section, or with a malformed entry, is refused by name. Each
 * wrong vertex leaves one error naming the codelet, the tile and the field. */
static void test_vertex_fields_checked(void **state)
{
    (void)state;
    uint32_t shape[1] = {8};
    gr_field ok[2] = {gr_region(0, 0, 4), gr_u32(4)}, swapped[2] = {gr_u32(4), gr_region(0, 0, 4)};
    static const struct {
        const char *codelet;
        int super;
        size_t nf;
        int swap;
        const char *want;
    } cases[] = {
        {"addone", 0, 2, 0, NULL},
        {"addone", 0, 1, 0,
         "vertex addone on ipu 0 tile 1: 1 fields, its codelet's State declares 2"},
        {"addone", 0, 2, 1, "field 0 (x) is a u32, its codelet's State declares a region"},
        {"addone", 1, 2, 0, "made as a supervisor vertex, its codelet is a worker codelet"},
        {"nostate", 0, 2, 0, "codelet nostate: its header has no \"# State\" section"},
        {"badkind", 0, 2, 0, "State entry +4 n word: expected +4 and a kind"},
        {"gap", 0, 2, 0, "State entry +8 n u32: expected +4"},
        {"pair", 0, 2, 0, NULL},
        {"later", 0, 2, 0, NULL}, /* "# State" in a line before the section's */
        {"midline", 0, 2, 0, "codelet midline: its header has no \"# State\" section"},
        {"reduce_add", 0, 2, 0, "2 fields, its codelet's State declares 6"},
    };
    for (size_t q = 0; q < sizeof cases / sizeof *cases; q++) {
        rig r;
        rig_new(&r, 2);
        state_codelets(r.gr);
        gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, shape);
        gr_map_region(r.gr, a, 0, 1, 0, 8);
        gr_cs cs = gr_cs_new(r.gr, "cs");
        gr_field *f = cases[q].swap ? swapped : ok;
        f[cases[q].swap].t = a;
        uint32_t v = gr_vertex(r.gr, cs, cases[q].codelet, cases[q].super, 0, 1, f, cases[q].nf);
        err e;
        err_clear(&e);
        int rc = gr_status(r.gr, &e);
        if (!cases[q].want) {
            assert_int_equal(rc, ERR_OK);
            assert_int_not_equal(v, GR_NONE);
        } else {
            assert_int_equal(rc, ERR_INPUT);
            assert_int_equal(v, GR_NONE);
            if (!strstr(e.msg, cases[q].want) || !strstr(e.msg, cases[q].codelet))
                fail_msg("case %zu: %s", q, e.msg);
        }
        rig_free(&r);
    }
}

/* Every codelet of the library declares its vertex: each header's State reads. */
static void test_library_states(void **state)
{
    (void)state;
    static const char *const lib[] = {"acc_add",
                                      "adamw_hyper",
                                      "adamw_step",
                                      "bias_add",
                                      "bias_grad",
                                      "conv_amp",
                                      "conv_mac1",
                                      "conv_pack",
                                      "conv_ungroup",
                                      "f16_to_f32",
                                      "maxpool_relu_bwd",
                                      "maxpool_relu_fwd",
                                      "mm_amp",
                                      "mm_cols_to_blocks",
                                      "mm_cols_to_chunks",
                                      "mm_partials_to_rows",
                                      "mm_rows_to_blocks",
                                      "mm_rows_to_chunks",
                                      "norm_u8",
                                      "reduce_add",
                                      "relu_bwd",
                                      "relu_fwd",
                                      "scale_add",
                                      "stash_ring",
                                      "xent_fwd_bwd"};
    for (size_t k = 0; k < sizeof lib / sizeof *lib; k++) {
        rig r;
        rig_new(&r, 2);
        gr_cs cs = gr_cs_new(r.gr, "cs");
        int super = !strcmp(lib[k], "conv_amp") || !strcmp(lib[k], "mm_amp");
        gr_vertex(r.gr, cs, lib[k], super, 0, 1, NULL, 0);
        err e;
        err_clear(&e);
        assert_int_equal(gr_status(r.gr, &e), ERR_INPUT);
        if (!strstr(e.msg, "0 fields, its codelet's State declares "))
            fail_msg("%s: %s", lib[k], e.msg);
        rig_free(&r);
    }
}

/* A compute set with worker vertices and a supervisor vertex on one tile: the supervisor
 * codelet loads AMP weights (ldcw), which faults while a worker runs, so the lowering must
 * join the workers before calling it. */
static void test_supervisor_vertex(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 1);
    gr_codelet_src(r.gr, "supld",
                   "# supld: a SUPERVISOR codelet\n"
                   "# State:\n"
                   "#   +0  w   region\n"
                   "supld:  ld32    r2, [r1+0]\n"
                   "        ldcw    0, r2\n"
                   "        ret\n");
    uint32_t shape[1] = {8};
    gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, shape);
    gr_map_region(r.gr, a, 0, 0, 0, 8);
    gr_cs cs = gr_cs_new(r.gr, "mixed");
    gr_field f0[2] = {gr_region(a, 0, 4), gr_u32(4)}, f1[2] = {gr_region(a, 4, 8), gr_u32(4)};
    gr_vertex(r.gr, cs, "addone", 0, 0, 0, f0, 2);
    gr_vertex(r.gr, cs, "addone", 0, 0, 0, f1, 2);
    gr_field fs[1] = {gr_region(a, 0, 4)};
    gr_vertex(r.gr, cs, "supld", 1, 0, 0, fs, 1);
    gr_exe *x = compile_ok(r.gr, gr_execute(r.gr, cs));
    load_ok(x, r.g);
    run_ok(r.g);
    gr_exe_free(x);
    rig_free(&r);
}

/* ---- Copy programs of several pieces (gr_copy_many) ---- */

/* A kept 1-D I32 tensor of n elements, whole on one tile of IPU `ipu`. */
static gr_tensor i32_on(graph *g, const char *name, uint32_t n, uint32_t ipu, uint32_t tile)
{
    uint32_t shape[1] = {n};
    gr_tensor t = gr_tensor_new(g, name, GR_I32, 1, shape);
    gr_keep(g, t);
    gr_map_region(g, t, ipu, tile, 0, n);
    return t;
}

/* A broadcast: a (8 words on tile 0) into b0, b1, b2 on tiles 1..3. As one gr_copy_many it
 * is one exchange phase: one sync released (the program is the copy alone), three streams of
 * 32 bytes; as three gr_copy, three. */
static void test_copy_broadcast(void **state)
{
    (void)state;
    for (int many = 1; many >= 0; many--) {
        rig r;
        rig_new(&r, 16);
        gr_tensor a = i32_on(r.gr, "a", 8, 0, 0), b[3];
        gr_xfer x[3];
        gr_prog p[3];
        for (uint32_t k = 0; k < 3; k++) {
            char name[8];
            snprintf(name, sizeof name, "b%u", k);
            b[k] = i32_on(r.gr, name, 8, 0, k + 1);
            x[k] = (gr_xfer){a, 0, b[k], 0, 8};
            p[k] = many ? 0 : gr_copy(r.gr, a, b[k]);
        }
        gr_prog main = many ? gr_copy_many(r.gr, x, 3) : gr_seq(r.gr, p, 3);
        gr_exe *xe = compile_ok(r.gr, main);
        assert_int_equal(gr_exe_summary(xe)->exchanges, many ? 1 : 3);
        assert_int_equal(gr_exe_summary(xe)->exchange_bytes, 96);
        gr_step steps[4]; /* one step per Copy: named after its (first) destination */
        assert_int_equal(gr_exe_steps(xe, 0, steps, 4), many ? 1 : 3);
        assert_string_equal(steps[0].what, "copy");
        assert_string_equal(steps[many ? 0 : 2].name, many ? "b0" : "b2");
        load_ok(xe, r.g);
        int32_t in[8], out[8];
        for (int i = 0; i < 8; i++)
            in[i] = 1000 + 17 * i;
        gr_write(xe, r.g, a, 0, in, 8);
        run_ok(r.g);
        for (uint32_t k = 0; k < 3; k++) {
            memset(out, 0, sizeof out);
            gr_read(xe, r.g, b[k], 0, out, 8);
            assert_memory_equal(out, in, sizeof in);
        }
        eng_stats st;
        eng_get_stats(r.g, &st);
        assert_int_equal(st.supersteps, many ? 1 : 3);
        eng_ipu_stats ist;
        eng_get_ipu_stats(r.g, 0, &ist);
        assert_int_equal(ist.xchg_streams, 3);
        assert_int_equal(ist.xchg_bytes, 96);
        gr_exe_free(xe);
        rig_free(&r);
    }
}

/* A gather with reshaping: rows of a [4][6] tensor, row r on tile r, into a [2][12] tensor on
 * tile 5 in reverse order: row r to elements [6 (3 - r), 6 (3 - r) + 6). */
static void test_copy_gather(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 8);
    uint32_t s46[2] = {4, 6}, s212[2] = {2, 12};
    gr_tensor rows = gr_tensor_new(r.gr, "rows", GR_I32, 2, s46);
    gr_tensor g = gr_tensor_new(r.gr, "g", GR_I32, 2, s212);
    gr_keep(r.gr, rows);
    gr_keep(r.gr, g);
    gr_xfer x[4];
    for (uint32_t k = 0; k < 4; k++) {
        gr_map_region(r.gr, rows, 0, k, 6 * k, 6 * k + 6);
        x[k] = (gr_xfer){rows, 6 * k, g, 6 * (3 - k), 6};
    }
    gr_map_region(r.gr, g, 0, 5, 0, 24);
    gr_exe *xe = compile_ok(r.gr, gr_copy_many(r.gr, x, 4));
    load_ok(xe, r.g);
    int32_t in[24], out[24];
    for (int i = 0; i < 24; i++)
        in[i] = -5 * i + 3;
    gr_write(xe, r.g, rows, 0, in, 24);
    run_ok(r.g);
    gr_read(xe, r.g, g, 0, out, 24);
    for (int row = 0; row < 4; row++)
        for (int j = 0; j < 6; j++)
            assert_int_equal(out[6 * (3 - row) + j], in[6 * row + j]);
    eng_stats st;
    eng_get_stats(r.g, &st);
    assert_int_equal(st.supersteps, 1);
    gr_exe_free(xe);
    rig_free(&r);
}

/* Pieces crossing region boundaries on both sides. s (24 words): [0, 7) on tile 0, [7, 15) on
 * tile 1, [15, 24) on tile 0; d (20 words): [0, 9) on tile 3, [9, 20) on tile 2. Piece 0,
 * s[3, 17) -> d[2, 16), splits at its elements 4 (s 7), 7 (d 9) and 12 (s 15): four streams;
 * piece 1, s[20, 23) -> d[17, 20), one: five streams, 68 bytes. d[0, 2) and d[16] keep what
 * the host wrote. */
static void test_copy_boundaries(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 8);
    uint32_t s24[1] = {24}, s20[1] = {20};
    gr_tensor s = gr_tensor_new(r.gr, "s", GR_I32, 1, s24);
    gr_tensor d = gr_tensor_new(r.gr, "d", GR_I32, 1, s20);
    gr_keep(r.gr, s);
    gr_keep(r.gr, d);
    gr_map_region(r.gr, s, 0, 0, 0, 7);
    gr_map_region(r.gr, s, 0, 1, 7, 15);
    gr_map_region(r.gr, s, 0, 0, 15, 24);
    gr_map_region(r.gr, d, 0, 3, 0, 9);
    gr_map_region(r.gr, d, 0, 2, 9, 20);
    gr_xfer x[2] = {{s, 3, d, 2, 14}, {s, 20, d, 17, 3}};
    gr_exe *xe = compile_ok(r.gr, gr_copy_many(r.gr, x, 2));
    load_ok(xe, r.g);
    int32_t in[24], want[20], out[20];
    for (int i = 0; i < 24; i++)
        in[i] = 100 + i;
    for (int i = 0; i < 20; i++)
        want[i] = -1 - i;
    gr_write(xe, r.g, s, 0, in, 24);
    gr_write(xe, r.g, d, 0, want, 20);
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < x[k].n; i++)
            want[x[k].dst_at + i] = in[x[k].src_at + i];
    run_ok(r.g);
    gr_read(xe, r.g, d, 0, out, 20);
    assert_memory_equal(out, want, sizeof want);
    eng_ipu_stats ist;
    eng_get_ipu_stats(r.g, 0, &ist);
    assert_int_equal(ist.xchg_streams, 5);
    assert_int_equal(ist.xchg_bytes, 68);
    gr_exe_free(xe);
    rig_free(&r);
}

/* Pieces that stay on one tile: t's halves swapped into u, both on tile 0; the tile sends to
 * itself, in the one exchange phase. */
static void test_copy_same_tile(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 4);
    gr_tensor t = i32_on(r.gr, "t", 8, 0, 0), u = i32_on(r.gr, "u", 8, 0, 0);
    gr_xfer x[2] = {{t, 0, u, 4, 4}, {t, 4, u, 0, 4}};
    gr_exe *xe = compile_ok(r.gr, gr_copy_many(r.gr, x, 2));
    load_ok(xe, r.g);
    int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8], want[8] = {5, 6, 7, 8, 1, 2, 3, 4};
    gr_write(xe, r.g, t, 0, in, 8);
    run_ok(r.g);
    gr_read(xe, r.g, u, 0, out, 8);
    assert_memory_equal(out, want, sizeof want);
    eng_stats st;
    eng_get_stats(r.g, &st);
    assert_int_equal(st.supersteps, 1);
    gr_exe_free(xe);
    rig_free(&r);
}

/* One Copy on two IPUs of 4 tiles: a (8 words, IPU 0 tile 0) to b on IPU 0 tile 1 (on chip)
 * and to c on IPU 1 tile 2 (two gsends from one tile to one tile: two rounds). */
static void test_copy_mixed_ipus(void **state)
{
    (void)state;
    sys_cfg cfg;
    sys *sy = sys_of(&cfg, 2, 4, 2, NULL);
    eng *g = sys_engine(sy);
    graph *gr = gr_new(&cfg.m, 2);
    gr_tensor a = i32_on(gr, "a", 8, 0, 0), b = i32_on(gr, "b", 8, 0, 1),
              c = i32_on(gr, "c", 8, 1, 2);
    gr_xfer x[3] = {{a, 0, b, 4, 4}, {a, 4, c, 0, 4}, {a, 0, c, 4, 4}};
    gr_exe *xe = compile_ok(gr, gr_copy_many(gr, x, 3));
    load_ok(xe, g);
    int32_t in[8] = {11, 12, 13, 14, 15, 16, 17, 18}, out[8];
    gr_write(xe, g, a, 0, in, 8);
    run_ok(g);
    gr_read(xe, g, b, 4, out, 4);
    assert_memory_equal(out, in, 4 * sizeof *in);
    gr_read(xe, g, c, 0, out, 8);
    assert_memory_equal(out, in + 4, 4 * sizeof *in);
    assert_memory_equal(out + 4, in, 4 * sizeof *in);
    eng_ipu_stats i0, i1;
    eng_get_ipu_stats(g, 0, &i0);
    eng_get_ipu_stats(g, 1, &i1);
    assert_int_equal(i0.xchg_bytes, 16);
    assert_int_equal(i1.xchg_bytes, 0);
    assert_int_equal(i0.global_tx_bytes, 32);
    assert_int_equal(i1.global_rx_bytes, 32);
    gr_exe_free(xe);
    gr_free(gr);
    sys_free(sy);
}

/* A tensor whose first use inside a loop is a remote read is not carried from one pass to
 * the next (graph_mem.c): on tile 0, a (8 floats) lives from its read to its write back, then
 * c likewise, so the two share 32 B (tile 0's data is 32 B, not 64). Three passes of
 * {read a, a += 1, write a, read c, c += 1 twice, write c} from zeroed remote buffers leave
 * 3 in buffer 0 and 6 in buffer 1, read back after the loop into kept tensors on tile 1.
 * With `a += 1` before a's read in the pass (carried = 1), a is live over the whole loop
 * and the two take 64 B. */
static void remote_loop(int carried)
{
    hio_cfg hc = {.in = host_cfg_default(), .out = host_cfg_default(), .fill = fill};
    hc.in.bytes_per_buffer = 4;
    hc.out.bytes_per_buffer = 4;
    sys_cfg cfg;
    sys *s = sys_of(&cfg, 1, 2, 2, &hc);
    graph *gr = gr_new(&cfg.m, 1);
    gr_codelet_src(gr, "addone", addone_src);
    uint32_t shape[1] = {8};
    gr_tensor a = gr_tensor_new(gr, "a", GR_F32, 1, shape);
    gr_tensor c = gr_tensor_new(gr, "c", GR_F32, 1, shape);
    gr_tensor ka = gr_tensor_new(gr, "ka", GR_F32, 1, shape);
    gr_tensor kc = gr_tensor_new(gr, "kc", GR_F32, 1, shape);
    gr_map_region(gr, a, 0, 0, 0, 8);
    gr_map_region(gr, c, 0, 0, 0, 8);
    gr_map_region(gr, ka, 0, 1, 0, 8);
    gr_map_region(gr, kc, 0, 1, 0, 8);
    gr_keep(gr, ka);
    gr_keep(gr, kc);
    gr_prog inc_a = gr_execute(gr, addone_cs(gr, a, 0, 1, 8));
    gr_prog inc_c = gr_execute(gr, addone_cs(gr, c, 0, 1, 8));
    gr_prog body[8], top[3];
    size_t n = 0;
    if (carried)
        body[n++] = inc_a;
    body[n++] = gr_remote_read(gr, a, 0, 0);
    if (!carried)
        body[n++] = inc_a;
    body[n++] = gr_remote_write(gr, a, 0, 0);
    body[n++] = gr_remote_read(gr, c, 1, 0);
    body[n++] = inc_c;
    body[n++] = inc_c;
    body[n++] = gr_remote_write(gr, c, 1, 0);
    top[0] = gr_repeat(gr, 3, gr_seq(gr, body, n));
    top[1] = gr_remote_read(gr, ka, 0, 0);
    top[2] = gr_remote_read(gr, kc, 1, 0);
    gr_exe *x = compile_ok(gr, gr_seq(gr, top, 3));
    assert_int_equal(gr_exe_tile(x, 0, 0)->data, carried ? 64 : 32);
    if (!carried) {
        load_ok(x, sys_engine(s));
        run_ok(sys_engine(s));
        float out[2][8];
        gr_read(x, sys_engine(s), ka, 0, out[0], 8);
        gr_read(x, sys_engine(s), kc, 0, out[1], 8);
        for (int i = 0; i < 8; i++) {
            assert_true(out[0][i] == 3.0f);
            assert_true(out[1][i] == 6.0f);
        }
    }
    gr_exe_free(x);
    gr_free(gr);
    sys_free(s);
}

static void test_remote_liveness(void **state)
{
    (void)state;
    remote_loop(0);
    remote_loop(1);
}

/* Liveness counts every piece of a copy: t and u (8 floats each, not kept) on tile 0, addone
 * on t (step 0) and on u (step 1), then one Copy of u to w[0, 8) and t to w[8, 16) (step 2,
 * w kept on tile 1). t is live over steps 0-2 and u over 1-2, so they cannot share: tile 0's
 * pool is 64 bytes, and w = u + 1, t + 1. */
static void test_copy_liveness(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 2);
    uint32_t s8[1] = {8}, s16[1] = {16};
    gr_tensor t = gr_tensor_new(r.gr, "t", GR_F32, 1, s8);
    gr_tensor u = gr_tensor_new(r.gr, "u", GR_F32, 1, s8);
    gr_tensor w = gr_tensor_new(r.gr, "w", GR_F32, 1, s16);
    gr_keep(r.gr, w);
    gr_map_region(r.gr, t, 0, 0, 0, 8);
    gr_map_region(r.gr, u, 0, 0, 0, 8);
    gr_map_region(r.gr, w, 0, 1, 0, 16);
    gr_xfer x[2] = {{u, 0, w, 0, 8}, {t, 0, w, 8, 8}};
    gr_prog p[3] = {gr_execute(r.gr, addone_cs(r.gr, t, 0, 1, 8)),
                    gr_execute(r.gr, addone_cs(r.gr, u, 0, 1, 8)), gr_copy_many(r.gr, x, 2)};
    gr_exe *xe = compile_ok(r.gr, gr_seq(r.gr, p, 3));
    assert_int_equal(gr_exe_tile(xe, 0, 0)->data, 64);
    load_ok(xe, r.g);
    float in[16], out[16];
    for (int i = 0; i < 16; i++)
        in[i] = 0.25f * (float)i - 2.0f;
    gr_write(xe, r.g, u, 0, in, 8);
    gr_write(xe, r.g, t, 0, in + 8, 8);
    run_ok(r.g);
    gr_read(xe, r.g, w, 0, out, 16);
    for (int i = 0; i < 16; i++) {
        float want = in[i] + 1.0f;
        assert_memory_equal(&out[i], &want, 4);
    }
    gr_exe_free(xe);
    rig_free(&r);
}

/* A Copy that is refused: its message, from gr_status when the building calls can tell, else
 * from gr_compile (what depends on the mapping, which may come after the Copy). */
typedef struct bad_copy {
    int at_compile;
    size_t npieces;
    gr_xfer x[2]; /* tensors 0 a, 1 b, 2 c (f32, 8 each), 3 n (i32, 8), 4 v, 5 w (u8, 8) */
    const char *msg;
} bad_copy;

static const bad_copy bad_copies[] = {
    {0,
     1,
     {{0, 4, 1, 0, 8}},
     "copy a -> b: piece 0, elements [4, 12) -> [0, 8), is outside "
     "the tensors (8 and 8 elements)"},
    {0, 1, {{0, 0, 3, 0, 4}}, "copy a -> n: piece 0: types differ (f32, i32)"},
    {0, 1, {{0, 0, 1, 0, 0}}, "copy a -> b: piece 0 moves no elements"},
    {0, 1, {{0, 0, 9, 0, 4}}, "copy: piece 0: tensor id 9 does not exist"},
    {0,
     2,
     {{0, 0, 2, 0, 4}, {1, 0, 2, 2, 4}},
     "copy a -> c and b -> c: pieces 0 and 1 both write elements [2, 4) of c"},
    {0,
     2,
     {{0, 0, 1, 0, 4}, {1, 4, 0, 2, 4}},
     "copy a -> b and b -> a: piece 0 reads elements [2, 4) of a, which piece 1 writes"},
    {0, 0, {{0}}, "copy: no pieces"},
    {1,
     1,
     {{0, 0, 2, 0, 8}},
     "copy a -> c: piece 0, elements [0, 8) -> [0, 8): element 6 of c "
     "is not mapped to a tile"},
    {1,
     1,
     {{4, 1, 5, 1, 4}},
     "copy v -> w: elements [1, 5) -> [1, 5) are not whole 32-bit words "
     "on both sides"},
};

static void test_copy_errors(void **state)
{
    (void)state;
    static const char *const names[] = {"a", "b", "c", "n", "v", "w"};
    static const gr_type types[] = {GR_F32, GR_F32, GR_F32, GR_I32, GR_U8, GR_U8};
    for (size_t q = 0; q < sizeof bad_copies / sizeof *bad_copies; q++) {
        const bad_copy *bc = &bad_copies[q];
        rig r;
        rig_new(&r, 4);
        uint32_t s8[1] = {8};
        for (uint32_t k = 0; k < 6; k++) {
            gr_tensor t = gr_tensor_new(r.gr, names[k], types[k], 1, s8);
            gr_map_region(r.gr, t, 0, k % 4, 0, k == 2 ? 6 : 8); /* c: [6, 8) unmapped */
        }
        gr_prog p = gr_copy_many(r.gr, bc->x, bc->npieces);
        err e;
        err_clear(&e);
        assert_int_equal(gr_status(r.gr, &e), bc->at_compile ? ERR_OK : ERR_INPUT);
        err_clear(&e);
        if (bc->at_compile)
            assert_null(gr_compile(r.gr, p, eng_pool(r.g), &e));
        else
            gr_status(r.gr, &e);
        assert_string_equal(e.msg, bc->msg);
        rig_free(&r);
    }
}

/* The images are assembled in parallel, and the error reported is still the first tile's:
 * tiles 1 to 3 each run a codelet of their own, and those of tiles 1 and 3 (or only 3) do
 * not assemble, or tile 1's does not exist (a text that fails before any assembly). */
static void test_first_tile_error(void **state)
{
    (void)state;
    static const struct {
        const char *one, *want;
    } cases[] = {
        {"bad1", "graph tile 1:"},
        {"good", "graph tile 3:"},
        {"none", "codelet none: no such codelet"},
    };
    for (size_t q = 0; q < sizeof cases / sizeof *cases; q++)
        for (unsigned threads = 1; threads <= 3; threads += 2) {
            rig r;
            rig_new(&r, 4);
            gr_codelet_src(r.gr, "bad1", "# State\nbad1:\n        addi    r1, r1\n        exit\n");
            gr_codelet_src(r.gr, "good", "# State\ngood:\n        exit\n");
            gr_codelet_src(r.gr, "bad3", "# State\nbad3:\n        frob    r1\n        exit\n");
            gr_cs cs = gr_cs_new(r.gr, "cs");
            gr_vertex(r.gr, cs, cases[q].one, 0, 0, 1, NULL, 0);
            gr_vertex(r.gr, cs, "good", 0, 0, 2, NULL, 0);
            gr_vertex(r.gr, cs, "bad3", 0, 0, 3, NULL, 0);
            err e;
            err_clear(&e);
            pool *p = pool_new(threads);
            assert_null(gr_compile(r.gr, gr_execute(r.gr, cs), p, &e));
            pool_free(p);
            if (!strstr(e.msg, cases[q].want))
                fail_msg("case %zu, %u threads: %s", q, threads, e.msg);
            rig_free(&r);
        }
}

/* gr_exe_layer_tiles counts the distinct tiles holding a vertex of compute set `layer` or
 * `layer.<anything>`: "conv" has vertices on tiles 0, 1 (twice: one tile) and, in "conv.dw",
 * tile 3, so 3 tiles; "conv2" (tile 2) and "convx" (tile 4) are other layers; "dw" matches
 * nothing ("conv.dw" is conv's). */
static void test_layer_tiles(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 8);
    gr_codelet_src(r.gr, "good", "# State\ngood:\n        exit\n");
    static const struct {
        const char *cs;
        uint32_t tile;
    } v[] = {{"conv", 0}, {"conv", 1}, {"conv.dw", 1}, {"conv.dw", 3}, {"conv2", 2}, {"convx", 4}};
    gr_prog p[6];
    for (size_t k = 0; k < 6; k++) {
        gr_cs cs = gr_cs_new(r.gr, v[k].cs);
        gr_vertex(r.gr, cs, "good", 0, 0, v[k].tile, NULL, 0);
        p[k] = gr_execute(r.gr, cs);
    }
    err e;
    err_clear(&e);
    gr_exe *x = gr_compile(r.gr, gr_seq(r.gr, p, 6), NULL, &e);
    if (!x)
        fail_msg("%s", e.msg);
    assert_int_equal(gr_exe_layer_tiles(x, "conv", 0), 3);
    assert_int_equal(gr_exe_layer_tiles(x, "conv2", 0), 1);
    assert_int_equal(gr_exe_layer_tiles(x, "convx", 0), 1);
    assert_int_equal(gr_exe_layer_tiles(x, "dw", 0), 0);
    /* the union: conv's 0, 1, 3 and convx's 4; conv2's 2 with convx's 4; none */
    static const char *const two[] = {"conv", "convx"}, *const other[] = {"conv2", "convx"};
    assert_int_equal(gr_exe_layers_tiles(x, two, 2, 0), 4);
    assert_int_equal(gr_exe_layers_tiles(x, other, 2, 0), 2);
    assert_int_equal(gr_exe_layers_tiles(x, two, 0, 0), 0);
    gr_exe_free(x);
    rig_free(&r);
}

/* gr_copy keeps its own checks: tensors of different element counts. */
static void test_copy_whole_counts(void **state)
{
    (void)state;
    rig r;
    rig_new(&r, 2);
    uint32_t s8[1] = {8}, s4[1] = {4};
    gr_tensor a = gr_tensor_new(r.gr, "a", GR_F32, 1, s8);
    gr_tensor b = gr_tensor_new(r.gr, "b", GR_F32, 1, s4);
    assert_int_equal(gr_copy(r.gr, a, b), GR_NONE);
    err e;
    err_clear(&e);
    assert_int_equal(gr_status(r.gr, &e), ERR_INPUT);
    assert_string_equal(e.msg, "copy a -> b: types or element counts differ (8, 4)");
    rig_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* clang-format off */
        cmocka_unit_test(test_repeat_exact),
        cmocka_unit_test(test_repeat_deep),
        cmocka_unit_test(test_called_seq),
        cmocka_unit_test(test_seven_workers),
        cmocka_unit_test(test_copy_values),
        cmocka_unit_test(test_too_big),
        cmocka_unit_test(test_code_too_big),
        cmocka_unit_test(test_field_at_region_start),
        cmocka_unit_test(test_far_too_big),
        cmocka_unit_test(test_field_off_tile),
        cmocka_unit_test(test_stream_in),
        cmocka_unit_test(test_liveness), cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_copy_between_ipus),
        cmocka_unit_test(test_per_ipu_programs),
        cmocka_unit_test(test_all_reduce),
        cmocka_unit_test(test_io_tiles),
        cmocka_unit_test(test_remote),
        cmocka_unit_test(test_supervisor_vertex),
        cmocka_unit_test(test_copy_broadcast),
        cmocka_unit_test(test_copy_gather),
        cmocka_unit_test(test_copy_boundaries),
        cmocka_unit_test(test_copy_same_tile),
        cmocka_unit_test(test_copy_mixed_ipus),
        cmocka_unit_test(test_copy_liveness),
        cmocka_unit_test(test_remote_liveness),
        cmocka_unit_test(test_copy_errors),
        cmocka_unit_test(test_first_tile_error),
        cmocka_unit_test(test_layer_tiles),
        cmocka_unit_test(test_vertex_fields_checked), cmocka_unit_test(test_library_states),
        cmocka_unit_test(test_copy_whole_counts),
        /* clang-format on */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
