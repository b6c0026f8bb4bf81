/* test_stop: long runs — supersteps run in chunks with the same results, a stop request
 * honoured between compute rounds (ERR_STOPPED naming where every tile is), the heartbeat,
 * and the superstep limit (--max-superstep-cycles) as a fault naming the tiles past it.
 *
 * Cycle counts below come from the timing table of docs/timing.md: supervisor ALU and `get`
 * 1 cycle, branches 6, `sync` arrives 6 after its issue and mk2's internal sync releases 90
 * cycles after the last arrival; a worker issues every 6 cycles from 6 after its `run`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/system.h"
#include "hw/stats.h"
#include "hw/tile.h"
#include "workloads/gemm/gemm.h"

/* A system of nipus x ntiles mk2 IPUs running src, with a chunk and controls. */
static sys *make_sys(const char *src, uint32_t nipus, uint32_t ntiles, unsigned threads,
                     uint64_t chunk, const sys_ctl *ctl)
{
    err e;
    err_clear(&e);
    isa_prog prog;
    tu_assemble("stop.s", src, &prog);
    sys_cfg cfg = {.threads = threads, .max_cycles = 100000000, .chunk_cycles = chunk};
    if (ctl)
        cfg.ctl = *ctl;
    cfg.ctl.limit_names = TU_LIMIT_NAMES;
    if (mach_builtin(&cfg.m, "mk2", &e) != ERR_OK)
        fail_msg("%s", e.msg);
    cfg.m.nipus = nipus;
    cfg.m.tiles_per_ipu = ntiles;
    sys *s = sys_new(&cfg, &e);
    if (!s || eng_load(sys_engine(s), &prog, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    isa_prog_free(&prog);
    return s;
}

/* ---- stop requests and the heartbeat ---- */

typedef struct beat_log {
    volatile sig_atomic_t stop;
    unsigned beats, stop_at; /* set the flag at heartbeat number stop_at (from 1) */
    uint64_t cycle[8], steps[8];
} beat_log;

static void on_beat(void *ctx, uint64_t cycle, uint64_t supersteps)
{
    beat_log *b = ctx;
    if (b->beats < 8) {
        b->cycle[b->beats] = cycle;
        b->steps[b->beats] = supersteps;
    }
    if (++b->beats == b->stop_at)
        b->stop = 1;
}

/* Run src with a heartbeat after every round (progress_ns 0) that asks for a stop at beat
 * number stop_at; the run must stop with `want`. */
static void stop_case(const char *src, uint32_t ntiles, uint64_t chunk, beat_log *b,
                      const char *want)
{
    sys_ctl ctl = {.watch = {.stop = &b->stop, .progress = on_beat, .progress_ctx = b}};
    sys *s = make_sys(src, 1, ntiles, 2, chunk, &ctl);
    err e;
    err_clear(&e);
    assert_int_equal(eng_run(sys_engine(s), &e), ERR_STOPPED);
    if (strcmp(e.msg, want) != 0)
        fail_msg("'%s' is not '%s'", e.msg, want);
    assert_int_equal(b->beats, b->stop_at); /* the stop is honoured before the next round */
    sys_free(s);
}

/* Tiles 0 and 1 spin for ever, tiles 2 and 3 wait at a sync. get 0, cmplti 1, brnz 2 (6
 * cycles): the spinners' br issues at 8 + 6k; with a chunk of 1000 the first round ends
 * before the issue at 1004 > 1000 (pc 0x28); the others' sync issues at 8. One heartbeat,
 * after that round, with the latest cycle reached (1004) and no superstep; then the stop. */
static void test_stop_names_tiles(void **state)
{
    (void)state;
    const char *src = "main:   get     r1, $tile\n"
                      "        cmplti  r2, r1, 2\n"
                      "        brnz    r2, spin\n"
                      "        sync    internal\n"
                      "        halt\n"
                      "spin:   br      spin\n";
    beat_log b = {.stop_at = 1};
    stop_case(src, 4, 1000, &b,
              "stopped at cycle 1004: ipu 0: tiles 0 (pc 0x28), 1 (pc 0x28) still computing, 2 "
              "waiting at syncs");
    assert_int_equal(b.cycle[0], 1004);
    assert_int_equal(b.steps[0], 0);
}

/* A runaway worker: run at 0, the worker's br issues at 6 + 6k. Round 1 (chunk 1000 from
 * cycle 0) ends before 1002, round 2 (from 1002) before 2004: the worker goes on where it
 * stopped, and the report names its context. */
static void test_stop_in_worker(void **state)
{
    (void)state;
    const char *src = "main:   run     w, r0\n"
                      "        join\n"
                      "        halt\n"
                      "w:      br      w\n";
    beat_log b = {.stop_at = 2};
    stop_case(src, 1, 1000, &b,
              "stopped at cycle 2004: ipu 0: tile 0 (ctx 1 pc 0x18) still computing, 0 waiting "
              "at syncs");
    assert_int_equal(b.cycle[0], 1002);
    assert_int_equal(b.cycle[1], 2004);
}

/* Tiles parked in a loop of syncs (hw/chip.h) are brought up to date for the heartbeat and
 * the stop report. li at 0, sync at 1: A1 = 7; Rk = Ak + L, each pass arriving 12 after its
 * release: A(k+1) = Rk + 12. The beats follow the first round (7, no superstep), then each
 * release's round (A2 = 19 + L after one superstep, A3 = 31 + 2 L after two); the third
 * asks for a stop, honoured after R3's release: the report gives A4 = 43 + 3 L. */
static void test_stop_parked(void **state)
{
    (void)state;
    const char *src = "main:   li      r2, 4\n"
                      "loop:   sync    internal\n"
                      "        brnzdec r2, loop\n"
                      "        halt\n";
    mach m;
    err e;
    assert_int_equal(mach_builtin(&m, "mk2", &e), ERR_OK);
    uint64_t lat = m.sync_internal;
    char want[128];
    snprintf(want, sizeof want,
             "stopped at cycle %llu: ipu 0: no tile still computing, 4 waiting at syncs",
             (unsigned long long)(43 + 3 * lat));
    beat_log b = {.stop_at = 3};
    stop_case(src, 4, 0, &b, want);
    for (unsigned k = 0; k < 3; k++) {
        assert_int_equal(b.cycle[k], 7 + k * (12 + lat));
        assert_int_equal(b.steps[k], k);
    }
}

/* Twelve spinning tiles: eight are named, then the count of the rest. A flag set before the
 * run stops it before any round. */
static void test_stop_many_and_at_once(void **state)
{
    (void)state;
    beat_log b = {.stop_at = 1};
    stop_case("main: br main\n", 12, 60, &b,
              "stopped at cycle 66: ipu 0: tiles 0 (pc 0x0), 1 (pc 0x0), 2 (pc 0x0), 3 (pc 0x0), "
              "4 (pc 0x0), 5 (pc 0x0), 6 (pc 0x0), 7 (pc 0x0) and 4 more still computing, 0 "
              "waiting at syncs");
    beat_log early = {.stop = 1};
    sys_ctl ctl = {.watch = {.stop = &early.stop}};
    sys *s = make_sys("main: br main\n", 1, 2, 1, 0, &ctl);
    err e;
    err_clear(&e);
    assert_int_equal(eng_run(sys_engine(s), &e), ERR_STOPPED);
    assert_string_equal(e.msg, "stopped at cycle 0: ipu 0: tiles 0 (pc 0x0), 1 (pc 0x0) still "
                               "computing, 0 waiting at syncs");
    eng_stats st;
    eng_get_stats(sys_engine(s), &st);
    assert_int_equal(st.rounds, 0);
    sys_free(s);
}

/* A chunk bounds every context of a runall, not only the one it ran out in: six workers,
 * each 20,001 issues (li, then 10,000 x addi + brnz, then exit; a worker issues every 6
 * cycles) so 120,006 cycles each, 720,036 in all, with a chunk of 1,000. A round runs the
 * context the last one stopped in up to 1,000 cycles past where it stopped and, when it exits,
 * the next worker up to 1,000 cycles past the runall: at most 2,000 cycles of work a round, so
 * at least 720,036 / 2,000 > 360 rounds (a heartbeat each). Counting the later workers' chunk
 * from where the first had got to would run workers 1..5 whole in one round (some 121). */
static void test_chunks_bound_every_worker(void **state)
{
    (void)state;
    const char *src = "main:   runall  w, r0\n"
                      "        join\n"
                      "        halt\n"
                      "w:      li      r1, 10000\n"
                      "l:      addi    r1, r1, -1\n"
                      "        brnz    r1, l\n"
                      "        exit\n";
    beat_log b = {0};
    sys_ctl ctl = {.watch = {.stop = &b.stop, .progress = on_beat, .progress_ctx = &b}};
    sys *s = make_sys(src, 1, 1, 1, 1000, &ctl);
    err e;
    err_clear(&e);
    if (eng_run(sys_engine(s), &e) != ERR_OK)
        fail_msg("%s", e.msg);
    if (b.beats < 360)
        fail_msg("%u rounds: a round ran more than 2,000 cycles of work", b.beats);
    sys_free(s);
}

/* A stop asked for after the simulation, before gemm's reference check (the check takes
 * longer than the run): the check honours it too, ERR_STOPPED naming the check, and no
 * system (so no report). Deterministic: the heartbeat (progress_ns 0) is called after every
 * compute round, the last one too, and the engine reads the flag only before a round; so a
 * stop set at the last beat of an unstopped run reaches the check alone. 13 x 20 x 20 on one
 * tile is one tile's block (test_engine's test_gemm_one_tile_cycles). */
static void test_stop_gemm_check(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mach m;
    assert_int_equal(mach_builtin(&m, "mk2", &e), ERR_OK);
    m.tiles_per_ipu = 1;
    wl_gemm_cfg cfg = {13, 20, 20, 5, 1, 1, 1000000};
    wl_gemm_result r;
    sys *sy = NULL;
    beat_log all = {0}; /* stop_at 0: never */
    sys_ctl ctl = {.watch = {.stop = &all.stop, .progress = on_beat, .progress_ctx = &all}};
    assert_int_equal(wl_gemm_run_ctl(&m, &cfg, &ctl, &r, &sy, &e), ERR_OK);
    assert_true(r.checked && all.beats >= 1);
    uint64_t cycles = r.cycles;
    sys_free(sy);

    beat_log last = {.stop_at = all.beats};
    ctl.watch.stop = &last.stop;
    ctl.watch.progress_ctx = &last;
    sy = (sys *)&last; /* must come back NULL */
    assert_int_equal(wl_gemm_run_ctl(&m, &cfg, &ctl, &r, &sy, &e), ERR_STOPPED);
    assert_null(sy);
    assert_int_equal(last.beats, all.beats); /* the whole run was simulated */
    char want[160];
    snprintf(want, sizeof want,
             "stopped in the reference check of C, after the run's %llu cycles: 0 of 1 tiles "
             "compared",
             (unsigned long long)cycles);
    assert_string_equal(e.msg, want);

    /* without a check there is nothing left to stop: the run is whole */
    beat_log nocheck = {.stop_at = all.beats};
    ctl.watch.stop = &nocheck.stop;
    ctl.watch.progress_ctx = &nocheck;
    cfg.check = 0;
    assert_int_equal(wl_gemm_run_ctl(&m, &cfg, &ctl, &r, &sy, &e), ERR_OK);
    assert_false(r.checked);
    sys_free(sy);
}

/* ---- the superstep limit ---- */

/* Every tile: a first superstep released at 6 + 90 = 96; then li at 96, brnzdec at 97 + 6j
 * for j = 0..1666 (1666 taken, the last at 10093 not), sync at 10099 = S + 10003 (arrives
 * 10105, released 10195), halt at 10195: 10196 cycles. */
static const char spin_src[] = "main:   sync    internal\n"
                               "        li      r1, 1666\n"
                               "loop:   brnzdec r1, loop\n"
                               "        sync    internal\n"
                               "        halt\n";

static int run_limited(uint64_t limit, uint64_t chunk, uint32_t ntiles, err *e, eng_stats *st)
{
    sys_ctl ctl = {.max_superstep_cycles = limit};
    sys *s = make_sys(spin_src, 1, ntiles, 2, chunk, &ctl);
    err_clear(e);
    int rc = eng_run(sys_engine(s), e);
    eng_get_stats(sys_engine(s), st);
    st->rounds = 0;
    sys_free(s);
    return rc;
}

/* A limit of 5,000: the first instruction past S + 5000 = 5096 is the brnzdec at 5101 (j =
 * 834) on every tile; the earliest (tile 0) is named in full, the others after it. The same
 * with chunks of 7 cycles. */
static void test_superstep_fault(void **state)
{
    (void)state;
    const char *want = "ipu 0 tile 0 ctx 0 pc 0x10 cycle 5101: superstep exceeds "
                       "--max-superstep-cycles 5000 (started at cycle 96); also past it: ipu 0 "
                       "tiles 1 (pc 0x10), 2 (pc 0x10)";
    err e;
    eng_stats st;
    for (uint64_t chunk = 0; chunk <= 7; chunk += 7) {
        assert_int_equal(run_limited(5000, chunk, 3, &e, &st), ERR_FAULT);
        if (strcmp(e.msg, want) != 0)
            fail_msg("chunk %llu: '%s' is not '%s'", (unsigned long long)chunk, e.msg, want);
    }
    /* the sync issues 10003 cycles into the superstep: a limit of 10002 stops it there */
    assert_int_equal(run_limited(10002, 0, 1, &e, &st), ERR_FAULT);
    assert_string_equal(e.msg, "ipu 0 tile 0 ctx 0 pc 0x18 cycle 10099: superstep exceeds "
                               "--max-superstep-cycles 10002 (started at cycle 96)");
}

/* Limits of 10,003 and 20,000 let it run as without a limit: 10196 cycles, same statistics. */
static void test_superstep_within_limit(void **state)
{
    (void)state;
    err e;
    eng_stats none, at, above;
    assert_int_equal(run_limited(0, 0, 3, &e, &none), ERR_OK);
    assert_int_equal(none.cycles, 10196);
    assert_int_equal(run_limited(10003, 0, 3, &e, &at), ERR_OK);
    assert_int_equal(run_limited(20000, 0, 3, &e, &above), ERR_OK);
    assert_memory_equal(&none, &at, sizeof none);
    assert_memory_equal(&none, &above, sizeof none);
}

/* A runaway worker under a limit of 1000: its br at 1002 is the fault, in context 1. */
static void test_superstep_worker(void **state)
{
    (void)state;
    sys_ctl ctl = {.max_superstep_cycles = 1000};
    sys *s = make_sys("main: run w, r0\n      join\n      halt\nw:    br w\n", 1, 1, 1, 100, &ctl);
    err e;
    err_clear(&e);
    assert_int_equal(eng_run(sys_engine(s), &e), ERR_FAULT);
    assert_string_equal(e.msg, "ipu 0 tile 0 ctx 1 pc 0x18 cycle 1002: superstep exceeds "
                               "--max-superstep-cycles 1000 (started at cycle 0)");
    sys_free(s);
}

/* ---- chunks change nothing ---- */

/* Every tile of two IPUs: an rpt body ending with `run` (a chunk may end in the worker, and
 * the loop wraps after it), a load-use stall, runall whose workers run rpt and counted loops
 * of tile-dependent length, a send to the partner tile, an internal sync, a tile-dependent
 * spin, runall again, an external sync (the IPUs run ahead of each other), the cycle counter
 * stored. */
static const char chunk_src[] = "main:   get     r1, $tile\n"
                                "        get     r2, $ipu\n"
                                "        li      r14, 3\n"
                                "        rpt     r14, e1\n"
                                "        addi    r3, r3, 1\n"
                                "        run     w1, r1\n"
                                "e1:     join\n"
                                "        li      r5, 0x8000\n"
                                "        ld32    r6, [r5+0]\n"
                                "        add     r6, r6, r1\n"
                                "        st32    r6, [r5+0]\n"
                                "        runall  w2, r1\n"
                                "        join\n"
                                "        xori    r8, r1, 1\n"
                                "        li      r9, 0x4000\n"
                                "        li      r10, 64\n"
                                "        li      r11, 0x9000\n"
                                "        send    r9, r10, r8, r11\n"
                                "        sync    internal\n"
                                "        andi    r4, r1, 3\n"
                                "        add     r4, r4, r2\n"
                                "spin:   brnzdec r4, spin\n"
                                "        runall  w2, r3\n"
                                "        join\n"
                                "        sync    external\n"
                                "        get     r7, $ccount\n"
                                "        st32    r7, [r5+4]\n"
                                "        halt\n"
                                "w1:     andi    r1, r0, 7\n"
                                "        addi    r1, r1, 2\n"
                                "        li      r2, 0\n"
                                "        rpt     r1, w1e\n"
                                "        addi    r2, r2, 3\n"
                                "        addi    r2, r2, 5\n"
                                "w1e:    get     r3, $wid\n"
                                "        muli    r3, r3, 4\n"
                                "        addi    r3, r3, 0x5000\n"
                                "        st32    r2, [r3+0]\n"
                                "        exit\n"
                                "w2:     get     r1, $wid\n"
                                "        get     r2, $ccount\n"
                                "        muli    r3, r1, 64\n"
                                "        addi    r3, r3, 0x4000\n"
                                "        ld32    r4, [r3+0]\n"
                                "        add     r4, r4, r2\n"
                                "        andi    r6, r0, 15\n"
                                "        addi    r6, r6, 1\n"
                                "loop:   addi    r4, r4, 3\n"
                                "        brnzdec r6, loop\n"
                                "        st32    r4, [r3+0]\n"
                                "        exit\n";

typedef struct outcome {
    eng_stats st;
    uint64_t rounds;
    uint64_t ipu_hash, mem_hash, cpu_hash;
} outcome;

static uint64_t hash_cpu(uint64_t h, const isa_cpu *c)
{
    h = tu_fnv(h, c->r, sizeof c->r);
    h = tu_fnv(h, &c->pc, sizeof c->pc);
    h = tu_fnv(h, &c->t, sizeof c->t);
    h = tu_fnv(h, &c->ninsn, sizeof c->ninsn);
    h = tu_fnv(h, &c->busy, sizeof c->busy);
    return tu_fnv(h, &c->amp, sizeof c->amp);
}

static void run_chunked(const char *src, uint32_t nipus, uint32_t ntiles, unsigned threads,
                        uint64_t chunk, outcome *o)
{
    sys *s = make_sys(src, nipus, ntiles, threads, chunk, NULL);
    eng *g = sys_engine(s);
    err e;
    err_clear(&e);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    memset(o, 0, sizeof *o);
    eng_get_stats(g, &o->st);
    o->rounds = o->st.rounds;
    o->st.rounds = 0; /* host bookkeeping: the one thing chunks change */
    o->ipu_hash = o->mem_hash = o->cpu_hash = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < nipus; i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        o->ipu_hash = tu_fnv(o->ipu_hash, &is, sizeof is);
        for (uint32_t t = 0; t < ntiles; t++) {
            const tile *x = eng_tile(g, i, t);
            o->mem_hash = tu_fnv(o->mem_hash, eng_tile_mem(g, i, t), eng_machine(g)->sram_bytes);
            o->cpu_hash = hash_cpu(o->cpu_hash, &x->sup);
            for (unsigned k = 0; k < ISA_NWORKERS; k++)
                o->cpu_hash = hash_cpu(o->cpu_hash, &x->wk[k]);
        }
    }
    sys_free(s);
}

static void assert_same(const outcome *a, const outcome *b)
{
    assert_memory_equal(&a->st, &b->st, sizeof a->st);
    assert_int_equal(a->ipu_hash, b->ipu_hash);
    assert_int_equal(a->mem_hash, b->mem_hash);
    assert_int_equal(a->cpu_hash, b->cpu_hash);
}

/* Chunks of 1, 5 and 64 cycles against the default (no superstep here reaches it), on 1 and
 * 2 host threads: the same cycles, statistics, memory and contexts. The chunked runs take
 * more rounds (the chunks did split the supersteps). */
static void test_chunks_change_nothing(void **state)
{
    (void)state;
    outcome ref, o;
    run_chunked(chunk_src, 2, 8, 1, 0, &ref);
    assert_int_equal(ref.st.supersteps, 2 * 2); /* internal + external, per IPU */
    assert_int_equal(ref.st.workers_started, 2 * 8 * (3 + 6 + 6));
    static const uint64_t chunks[] = {1, 5, 64};
    for (unsigned threads = 1; threads <= 2; threads++)
        for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
            run_chunked(chunk_src, 2, 8, threads, chunks[k], &o);
            assert_same(&ref, &o);
            assert_true(o.rounds > ref.rounds);
        }
}

/* The AMP (its pipeline state lives in the worker across chunks) and a zero-overhead rpt in
 * a worker: tests/isa programs, chunk 1 and 3 against the default. */
static void test_chunks_amp_rpt(void **state)
{
    (void)state;
    static const char *const files[] = {"tests/isa/amp_block.s", "tests/isa/worker_rpt.s",
                                        "tests/isa/sup_rpt_run.s", "tests/isa/sup_loaduse.s"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char *src = tu_read_file(files[f]);
        if (!src)
            fail_msg("cannot read %s (run from the repository root)", files[f]);
        outcome ref, o;
        run_chunked(src, 1, 2, 1, 0, &ref);
        for (uint64_t chunk = 1; chunk <= 3; chunk += 2) {
            run_chunked(src, 1, 2, 2, chunk, &o);
            assert_same(&ref, &o);
        }
        free(src);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_names_tiles), cmocka_unit_test(test_stop_in_worker),
        cmocka_unit_test(test_stop_parked),      cmocka_unit_test(test_stop_many_and_at_once),
        cmocka_unit_test(test_superstep_fault),  cmocka_unit_test(test_superstep_within_limit),
        cmocka_unit_test(test_superstep_worker), cmocka_unit_test(test_chunks_change_nothing),
        cmocka_unit_test(test_chunks_amp_rpt),   cmocka_unit_test(test_chunks_bound_every_worker),
        cmocka_unit_test(test_stop_gemm_check),
    };
    return cmocka_run_group_tests_name("stop", tests, NULL, NULL);
}
