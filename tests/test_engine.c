/* test_engine: the parallel BSP engine — determinism across host threads, supersteps over
 * every tile of two IPUs, external sync, deadlock reports, and the GEMM against its reference.
 * This suite also runs under ThreadSanitizer in .ci/run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/system.h"
#include "hw/pool.h"
#include "hw/sim.h"
#include "hw/tile.h"
#include "isa/asm.h"
#include "workloads/gemm/gemm.h"

/* Every tile: three supersteps of unequal work (depends on the tile id), six workers that
 * write tile- and cycle-dependent values, each even tile sending worker 0's to the next tile
 * (736 receivers an IPU: delivered by the threads together), an external sync across IPUs,
 * then the cycle counter stored to memory. Any dependence on thread timing would show in
 * memory or cycles. */
static const char prog_src[] = "main:   get     r1, $tile\n"
                               "        get     r2, $ipu\n"
                               "        li      r3, 2\n"
                               "outer:  andi    r4, r1, 7\n"
                               "        add     r4, r4, r3\n"
                               "spin:   brnzdec r4, spin\n"
                               "        runall  work, r1\n"
                               "        join\n"
                               "        andi    r7, r1, 1\n"
                               "        brnz    r7, nosend\n"
                               "        li      r7, 0x4000\n"
                               "        li      r8, 8\n"
                               "        addi    r9, r1, 1\n"
                               "        li      r10, 0x6000\n"
                               "        send    r7, r8, r9, r10\n"
                               "nosend: sync    internal\n"
                               "        brnzdec r3, outer\n"
                               "        sync    external\n"
                               "        get     r5, $ccount\n"
                               "        li      r6, 0x8000\n"
                               "        st32    r5, [r6+0]\n"
                               "        st32    r2, [r6+4]\n"
                               "        halt\n"
                               "work:   get     r1, $wid\n"
                               "        get     r2, $ccount\n"
                               "        muli    r3, r1, 64\n"
                               "        addi    r3, r3, 0x4000\n"
                               "        ld32    r4, [r3+0]\n"
                               "        add     r4, r4, r2\n"
                               "        mul     r5, r0, r1\n"
                               "        add     r4, r4, r5\n"
                               "        andi    r6, r0, 15\n"
                               "        addi    r6, r6, 1\n"
                               "loop:   addi    r4, r4, 3\n"
                               "        brnzdec r6, loop\n"
                               "        st32    r4, [r3+0]\n"
                               "        itof    r7, r4\n"
                               "        st32    r7, [r3+4]\n"
                               "        exit\n";

typedef struct snapshot {
    eng_stats st;
    uint64_t mem_hash;
    uint64_t reg_hash;
} snapshot;

static void run_with(unsigned threads, uint32_t nipus, uint32_t ntiles, snapshot *out)
{
    err e;
    err_clear(&e);
    isa_prog prog;
    if (asm_assemble("det.s", prog_src, strlen(prog_src), &prog, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    sys_cfg cfg = {.threads = threads, .max_cycles = 100000000};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.nipus = nipus;
    if (ntiles)
        cfg.m.tiles_per_ipu = ntiles;
    sys *sy = sys_new(&cfg, &e);
    assert_non_null(sy);
    eng *g = sys_engine(sy);
    assert_int_equal(eng_threads(g), threads);
    assert_int_equal(eng_load(g, &prog, &e), ERR_OK);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    memset(out, 0, sizeof *out);
    eng_get_stats(g, &out->st);
    out->st.rounds = 0; /* host-side bookkeeping, not a simulated result */
    out->mem_hash = out->reg_hash = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < eng_nipus(g); i++)
        for (uint32_t t = 0; t < eng_ntiles(g); t++) {
            out->mem_hash = tu_fnv(out->mem_hash, eng_tile_mem(g, i, t), 0x9000);
            const tile *x = eng_tile(g, i, t);
            out->reg_hash = tu_fnv(out->reg_hash, x->sup.r, sizeof x->sup.r);
            for (unsigned k = 0; k < ISA_NWORKERS; k++)
                out->reg_hash = tu_fnv(out->reg_hash, x->wk[k].r, sizeof x->wk[k].r);
            uint32_t ipu_word;
            memcpy(&ipu_word, eng_tile_mem(g, i, t) + 0x8004, 4);
            assert_int_equal(ipu_word, i);
        }
    sys_free(sy);
    isa_prog_free(&prog);
}

static void test_threads_identical(void **state)
{
    (void)state;
    /* every tile of two Mk2 IPUs */
    snapshot s1, s2, s4;
    run_with(1, 2, 0, &s1);
    run_with(2, 2, 0, &s2);
    run_with(4, 2, 0, &s4);
    assert_int_equal(s1.st.tiles, 2 * 1472);
    assert_int_equal(s1.st.supersteps, 2 * 4); /* three internal + one external, per IPU */
    assert_memory_equal(&s1.st, &s2.st, sizeof s1.st);
    assert_memory_equal(&s1.st, &s4.st, sizeof s1.st);
    assert_int_equal(s1.mem_hash, s2.mem_hash);
    assert_int_equal(s1.mem_hash, s4.mem_hash);
    assert_int_equal(s1.reg_hash, s2.reg_hash);
    assert_int_equal(s1.reg_hash, s4.reg_hash);
    assert_int_equal(s1.st.workers_started, 2 * 1472 * 6 * 3);
}

/* The pool runs every item of every job exactly once, whichever threads come: 20,000 jobs
 * of 1 to 64 items back to back on 4 threads (the caller usually takes a small job's items
 * before the others wake and closes it without them; a busy item makes the others steal
 * from its lane), each item adding one to its own counter; then every counter holds the
 * number of jobs that had that item. Run under ThreadSanitizer by .ci/run. */
typedef struct pool_count {
    uint32_t hits[64];
    uint32_t slow; /* an item that spins: the one the others must steal around */
} pool_count;

static void count_item(void *ctx, size_t i)
{
    pool_count *c = ctx;
    c->hits[i]++;
    if (i == c->slow)
        for (volatile unsigned k = 0; k < 2000; k++)
            ;
}

static void test_pool_every_item_once(void **state)
{
    (void)state;
    pool *p = pool_new(4);
    pool_count c = {.slow = 0};
    uint32_t want[64] = {0};
    for (unsigned job = 0; job < 20000; job++) {
        size_t n = 1 + job % 64;
        c.slow = job % 7 == 0 ? (uint32_t)(job % n) : UINT32_MAX;
        pool_run(p, n, count_item, &c);
        for (size_t i = 0; i < n; i++)
            want[i]++;
    }
    assert_memory_equal(c.hits, want, sizeof want);
    pool_free(p);
}

/* A program where tile 3 never reaches the sync the others wait at: the report names who
 * waits and who is missing, and the run ends (no hang). */
static void test_deadlock_report(void **state)
{
    (void)state;
    const char *src = "main: get r1, $tile\n"
                      "      cmpeqi r2, r1, 3\n"
                      "      brnz r2, out\n"
                      "      sync internal\n"
                      "out:  halt\n";
    err e;
    err_clear(&e);
    isa_prog prog;
    tu_assemble("dl.s", src, &prog);
    sys *sy = tu_system(1, 8, 2, 100000, &prog);
    assert_int_equal(eng_run(sys_engine(sy), &e), ERR_FAULT);
    assert_non_null(strstr(e.msg, "sync deadlock"));
    assert_non_null(strstr(e.msg, "internal sync: 7 tiles (0-2,4-7)"));
    assert_non_null(strstr(e.msg, "missing (halted): 1 tiles (3)"));
    sys_free(sy);
    isa_prog_free(&prog);
}

/* A run on one IPU of four tiles: its status and error, statistics, and the machine's
 * internal sync latency L. */
typedef struct run4 {
    int rc;
    err e;
    eng_stats st;
    uint64_t lat;
} run4;

/* Run prog on one IPU of four tiles with `threads` host threads and --max-cycles `max`.
 * With `keep`, the system is left there for the caller to read its tiles (and free). */
static run4 run_four(const isa_prog *prog, unsigned threads, uint64_t max, sys **keep)
{
    sys *sy = tu_system(1, 4, threads, max, prog);
    eng *g = sys_engine(sy);
    run4 r = {.lat = eng_machine(g)->sync_internal};
    err_clear(&r.e);
    r.rc = eng_run(g, &r.e);
    eng_get_stats(g, &r.st);
    if (keep)
        *keep = sy;
    else
        sys_free(sy);
    return r;
}

/* r ran to its end with these counts: cycles + S x L over S supersteps, and the supervisors'
 * instructions and issue cycles, all tiles. */
static void assert_counts(const run4 *r, uint64_t cycles, uint64_t supersteps, uint64_t ninsn,
                          uint64_t busy)
{
    assert_int_equal(r->rc, ERR_OK);
    assert_int_equal(r->st.cycles, cycles + supersteps * r->lat);
    assert_int_equal(r->st.supersteps, supersteps);
    assert_int_equal(r->st.ninsn[0], ninsn);
    assert_int_equal(r->st.busy[0], busy);
}

/* Tiles whose next instruction after a release is a sync arrive at once (the engine does
 * not step them: tile_sync_at_once), with the same time and counts as stepped. Tile 0 spins
 * (get 0, brnz 1 not taken, li 7, brnzdec x 51 at 8 + 6k, the last at 308) and syncs at 314,
 * arriving at 320; tiles 1-3 skip the spin (get, brnz taken) and sync at 7. Each release is
 * the last arrival + L (the machine's sync_internal); the second and third syncs of every
 * tile issue at the release and arrive 6 later; halt at R3 finishes at R3 + 1: finish = 320
 * + 3 L + 2 x 6 + 1. Supervisor instructions: 58 on tile 0, 6 on each other tile (76); issue
 * cycles (get 1, li 1, brnz 6, brnzdec 6, sync 6, halt 1): 333 and 26 each (411). */
static void test_sync_only_tiles(void **state)
{
    (void)state;
    const char *src = "main:   get     r1, $tile\n"
                      "        brnz    r1, idle\n"
                      "        li      r2, 50\n"
                      "spin:   brnzdec r2, spin\n"
                      "idle:   sync    internal\n"
                      "        sync    internal\n"
                      "        sync    internal\n"
                      "        halt\n";
    isa_prog prog;
    tu_assemble("so.s", src, &prog);
    for (unsigned threads = 1; threads <= 2; threads++) {
        run4 r = run_four(&prog, threads, 100000, NULL);
        assert_counts(&r, 320 + 13, 3, 76, 411);
    }
    isa_prog_free(&prog);
}

/* The run's fault is tile 0's supervisor's on IPU 0: its message begins "ipu 0 tile 0 ctx 0
 * pc PC cycle CYCLE:" and then `then`. */
static void assert_fault(const err *e, unsigned pc, uint64_t cycle, const char *then)
{
    char want[128];
    snprintf(want, sizeof want, "ipu 0 tile 0 ctx 0 pc 0x%x cycle %llu:%s", pc,
             (unsigned long long)cycle, then);
    if (strncmp(e->msg, want, strlen(want)) != 0)
        fail_msg("'%s' does not begin '%s'", e->msg, want);
}

/* With --max-cycles max, prog's run on four tiles ends in tile 0's fault (assert_fault). */
static void assert_limit(const isa_prog *prog, unsigned threads, uint64_t max, unsigned pc,
                         uint64_t cycle, const char *then)
{
    run4 r = run_four(prog, threads, max, NULL);
    assert_int_equal(r.rc, ERR_FAULT);
    assert_fault(&r.e, pc, cycle, then);
}

/* A counted loop of syncs (sync; brnzdec): after each release the brnzdec and the sync are
 * carried out at once (tile_sync_at_once), with the same time and counts as stepped. Tile 0
 * spins (get 0, li 1, brnz 2 not taken, li 8, brnzdec x 51 at 9 + 6k, the last at 309) and
 * syncs at 315, arriving at 321; tiles 1-3 (get, li, brnz taken) sync at 8. R1 = 321 + L;
 * then three times a taken brnzdec at the release and the sync 6 later, arriving 12 after
 * the release: R(n+1) = Rn + 12 + L; after R4 the brnzdec falls through (r2 = 0) at R4 and
 * halt issues at R4 + 6, finishing at R4 + 7: cycles = 321 + L + 3 (12 + L) + 7 = 364 + 4 L.
 * Supervisor instructions: tile 0 4 + 51 + 4 syncs + 4 brnzdec + halt = 64, the others 3 +
 * 4 + 4 + 1 = 12 each (100); issue cycles (get 1, li 1, brnz 6, brnzdec 6, sync 6, halt 1):
 * tile 0 9 + 306 + 24 + 24 + 1 = 364, the others 8 + 24 + 24 + 1 = 57 each (535). With
 * --max-cycles at R1 + 5 the loop's first brnzdec issues (R1) and its sync (R1 + 6) would
 * not: the limit fault names the sync's pc (0x28) and cycle R1 + 6, as stepping does. */
static void test_sync_loop_tiles(void **state)
{
    (void)state;
    const char *src = "main:   get     r1, $tile\n"
                      "        li      r2, 3\n"
                      "        brnz    r1, loop\n"
                      "        li      r3, 50\n"
                      "spin:   brnzdec r3, spin\n"
                      "loop:   sync    internal\n"
                      "        brnzdec r2, loop\n"
                      "        halt\n";
    isa_prog prog;
    tu_assemble("sl.s", src, &prog);
    for (unsigned threads = 1; threads <= 2; threads++) {
        sys *sy;
        run4 r = run_four(&prog, threads, 100000, &sy);
        assert_counts(&r, 364, 4, 100, 535);
        for (uint32_t t = 0; t < 4; t++)
            assert_int_equal(eng_tile(sys_engine(sy), 0, t)->sup.r[2], 0);
        sys_free(sy);
        assert_limit(&prog, threads, 321 + r.lat + 5, 0x28, 321 + r.lat + 6, "");
    }
    isa_prog_free(&prog);
}

/* The superstep limit holds in a loop of syncs: with --max-superstep-cycles 5, tile 0 (li 0,
 * sync 1, arriving at 7) is released at R = 7 + L; the loop's brnzdec issues at R (0 into
 * the superstep) and its sync would at R + 6, past the limit: the fault names the sync (pc
 * 0x8) at cycle R + 6, as stepping does. */
static void test_sync_loop_limit(void **state)
{
    (void)state;
    const char *src = "main:   li      r2, 3\n"
                      "loop:   sync    internal\n"
                      "        brnzdec r2, loop\n"
                      "        halt\n";
    err e;
    err_clear(&e);
    isa_prog prog;
    tu_assemble("sll.s", src, &prog);
    sys_cfg cfg = {.threads = 1,
                   .max_cycles = 100000,
                   .ctl = {.max_superstep_cycles = 5, .limit_names = TU_LIMIT_NAMES}};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.nipus = 1;
    cfg.m.tiles_per_ipu = 2;
    sys *sy = sys_new(&cfg, &e);
    assert_non_null(sy);
    assert_int_equal(eng_load(sys_engine(sy), &prog, &e), ERR_OK);
    assert_int_equal(eng_run(sys_engine(sy), &e), ERR_FAULT);
    assert_fault(&e, 0x8, 7 + eng_machine(sys_engine(sy))->sync_internal + 6, " superstep exceeds");
    sys_free(sy);
    isa_prog_free(&prog);
}

/* Parked tiles (chip.h): a counted loop of syncs that falls through into a run of two
 * syncs. li issues at 0, the sync at 1, arriving at A1 = 7; Rk = Ak + L. The loop's brnzdec
 * is taken four times (r2 = 4), each pass arriving 12 after its release (brnzdec 6, sync
 * 6): A2..A5 = R1..R4 + 12; at R5 it falls through and the run's first sync arrives at
 * A6 = R5 + 12; the second issues at the release: A7 = R6 + 6 (a tile parked at R5 for the
 * run arrives 6 after each release, not 12 as at its own); halt issues at R7, finishing at
 * R7 + 1: cycles 7 + 5 x 12 + 6 + 1 + 7 L = 74 + 7 L. Per tile 14 instructions (li, 7
 * syncs, 5 brnzdec, halt) and 74 issue cycles (1 + 42 + 30 + 1). With --max-cycles R3 + 5
 * the parked tiles cannot pass R3 (their brnzdec would issue at R3, their sync at R3 + 6,
 * past the limit): the fault names the sync (pc 0x8) at R3 + 6, R3 = A3 + L = 31 + 3 L.
 * Each tile parks at its first arrival (r2 = 4: R1..R4 move it on) and again for the run at
 * A6 (R6 does): 5 passes a tile made parked. */
static void test_parked_loop_then_run(void **state)
{
    (void)state;
    const char *src = "main:   li      r2, 4\n"
                      "loop:   sync    internal\n"
                      "        brnzdec r2, loop\n"
                      "        sync    internal\n"
                      "        sync    internal\n"
                      "        halt\n";
    isa_prog prog;
    tu_assemble("pk.s", src, &prog);
    for (unsigned threads = 1; threads <= 2; threads++) {
        run4 r = run_four(&prog, threads, 100000, NULL);
        assert_counts(&r, 74, 7, 4 * 14, 4 * 74);
        assert_int_equal(r.st.parked, 4 * 5);
        uint64_t r3 = 31 + 3 * r.lat;
        char then[64]; /* the limit it ran past, by the option that sets it */
        snprintf(then, sizeof then, " run exceeds --max-cycles %llu", (unsigned long long)(r3 + 5));
        assert_limit(&prog, threads, r3 + 5, 0x8, r3 + 6, then);
    }
    isa_prog_free(&prog);
}

/* Parked loops with more than a brnzdec (isa_sync_pass). Two counters and a branch on a
 * register the loop leaves alone: get, andi, li, li issue at 0-3, the sync at 4, arriving
 * at A1 = 10. A pass: brz (6; even tiles, r6 = 0, jump over the nop (1) the odd ones
 * issue), brnzdec r3 (6, to the next instruction), brnzdec r2 (6), the sync (6): 24 cycles
 * on even tiles, 25 on odd ones, so A(k+1) = Rk + 25, Rk = Ak + L, for k = 1..3 (r2 = 3);
 * at R4 r2 is 0 and halt issues 18 (19) after it, finishing at R4 + 20: 10 + 3 x 25 + 20 +
 * 4 L = 105 + 4 L. Instructions: even 4 + 4 syncs + 3 x 3 + 4 = 21, odd 21 + 4 nops = 25
 * (92); issue cycles: even 4 + 24 + 3 x 18 + 19 = 101, odd 105 (412); r3 ends at 5 - 4.
 * Every tile parks at its first arrival, for 3 passes (R1..R3).
 * Then a branch on the counter after its brnzdec: the pass is not the same each time (the
 * third halts: brnzdec leaves r2 at 0 and brz jumps out), so li at 0, the sync at 1, A1 =
 * 7; passes brnzdec, brz, br, sync (24): A2 = R1 + 24, A3 = R2 + 24; at R3 halt issues at
 * R3 + 12, finishing at R3 + 13 = 68 + 3 L after 3 supersteps (never parked); 13
 * instructions a tile (li, 3 syncs, 2 x 3, brnzdec, brz, halt), 68 issue cycles (1 + 18 +
 * 2 x 18 + 13). */
static void test_parked_branches(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        uint64_t cycles, supersteps, ninsn, busy;
        unsigned r3;
        uint64_t parked;
    } c[2] = {
        {"main:   get     r1, $tile\n"
         "        andi    r6, r1, 1\n"
         "        li      r2, 3\n"
         "        li      r3, 5\n"
         "loop:   sync    internal\n"
         "        brz     r6, even\n"
         "        nop\n"
         "even:   brnzdec r3, next\n"
         "next:   brnzdec r2, loop\n"
         "        halt\n",
         105, 4, 92, 412, 1, 4 * 3},
        {"main:   li      r2, 3\n"
         "loop:   sync    internal\n"
         "        brnzdec r2, x\n"
         "x:      brz     r2, out\n"
         "        br      loop\n"
         "out:    halt\n",
         68, 3, 4 * 13, 4 * 68, 0, 0},
    };
    for (unsigned k = 0; k < 2; k++)
        for (unsigned threads = 1; threads <= 2; threads++) {
            isa_prog prog;
            tu_assemble("pkb.s", c[k].src, &prog);
            sys *sy;
            run4 r = run_four(&prog, threads, 100000, &sy);
            assert_counts(&r, c[k].cycles, c[k].supersteps, c[k].ninsn, c[k].busy);
            assert_int_equal(r.st.parked, c[k].parked);
            for (uint32_t t = 0; t < 4; t++)
                assert_int_equal(eng_tile(sys_engine(sy), 0, t)->sup.r[3], c[k].r3);
            sys_free(sy);
            isa_prog_free(&prog);
        }
}

/* Tiles 1-3 of pkd.s (below), parked in their loop when the run ends for another tile:
 * brought up to date (r2 = 4 - 2, 8 instructions: get, li, brnz, 3 syncs, 2 brnzdec; 38
 * issue cycles: 1 + 1 + 6 + 3 x 6 + 2 x 6), at their brnzdec (pc 0x28), arrived at `at`
 * in the superstep released at `rel`. */
static void assert_parked_waiting(eng *g, uint64_t rel, uint64_t at)
{
    for (uint32_t t = 1; t < 4; t++) {
        const tile *x = eng_tile(g, 0, t);
        assert_int_equal(x->sup.r[2], 2);
        assert_int_equal(x->sup.ninsn, 8);
        assert_int_equal(x->sup.busy, 38);
        assert_int_equal(x->sup.pc, 0x28);
        assert_int_equal(x->sup.t, at);
        assert_int_equal(x->step_start, rel);
    }
}

/* A run that ends while tiles are parked: tile 0 syncs twice and then halts (a deadlock)
 * or faults (a load far outside its memory), tiles 1-3 loop five times. get 0, li 1, brnz
 * 2 (6 cycles): tiles 1-3 sync at 8, arriving at 14; tile 0 (li at 8) syncs at 9,
 * arriving at 15 = A1; R1 = 15 + L. At R1 every tile's brnzdec is taken and its sync
 * arrives at R1 + 12; R2 = 27 + 2 L. At R2 tile 0's brnzdec falls through (6 cycles) and
 * its next instruction issues at R2 + 6; the others arrive at R2 + 12 = 39 + 2 L. */
static void test_parked_left_waiting(void **state)
{
    (void)state;
    static const char *const last[2] = {"halt", "ld32 r3, [r2+0x7ffffff0]"};
    for (unsigned k = 0; k < 2; k++) {
        char src[512];
        snprintf(src, sizeof src,
                 "main:   get     r1, $tile\n"
                 "        li      r2, 4\n"
                 "        brnz    r1, loop\n"
                 "        li      r2, 1\n"
                 "loop:   sync    internal\n"
                 "        brnzdec r2, loop\n"
                 "        %s\n",
                 last[k]);
        isa_prog prog;
        tu_assemble("pkd.s", src, &prog);
        sys *sy;
        run4 r = run_four(&prog, 1 + k, 100000, &sy);
        uint64_t rel = 27 + 2 * r.lat, at = rel + 12;
        assert_int_equal(r.rc, ERR_FAULT);
        char want[256];
        snprintf(want, sizeof want,
                 "ipu 0 cycle %llu: sync deadlock: waiting at internal sync: 3 tiles (1-3); "
                 "waiting at external sync: 0 tiles (none); missing (halted): 1 tiles (0)",
                 (unsigned long long)at);
        if (k == 0 && strcmp(r.e.msg, want) != 0)
            fail_msg("'%s' is not '%s'", r.e.msg, want);
        if (k == 1)
            assert_fault(&r.e, 0x30, rel + 6, "");
        assert_parked_waiting(sys_engine(sy), rel, at);
        sys_free(sy);
        isa_prog_free(&prog);
    }
}

/* Two IPUs: IPU 0's tiles wait at an external sync while IPU 1's tiles halt: the report
 * names the waiting and the missing IPUs and their tiles' states. get 0, brnz 1 (not taken:
 * 6 cycles), sync at 7 arrives at 13. */
static void test_external_deadlock(void **state)
{
    (void)state;
    const char *src = "main: get r1, $ipu\n"
                      "      brnz r1, out\n"
                      "      sync external\n"
                      "out:  halt\n";
    err e;
    err_clear(&e);
    isa_prog prog;
    tu_assemble("dl2.s", src, &prog);
    sys *sy = tu_system(2, 4, 2, 100000, &prog);
    assert_int_equal(eng_run(sys_engine(sy), &e), ERR_FAULT);
    const char *want = "ipu 0 cycle 13: sync deadlock: waiting at external sync: 1 IPUs (ipu 0 "
                       "(at external 0-3)); missing (all tiles halted): 1 IPUs (ipu 1 (halted "
                       "0-3))";
    if (strcmp(e.msg, want) != 0)
        fail_msg("'%s' is not '%s'", e.msg, want);
    sys_free(sy);
    isa_prog_free(&prog);
}

/* An image entry that is not on an instruction faults at once, named as misaligned; an
 * aligned entry past the text is outside the text segment. */
static void test_misaligned_entry(void **state)
{
    (void)state;
    static const uint32_t entries[2] = {3, 0x100};
    static const char *const want[2] = {
        "ipu 0 tile 0 ctx 0 pc 0x3 cycle 0: misaligned pc 0x3",
        "ipu 0 tile 0 ctx 0 pc 0x100 cycle 0: pc outside the text segment"};
    for (unsigned k = 0; k < 2; k++) {
        isa_prog prog;
        tu_assemble("entry.s", "main: nop\n      halt\n", &prog);
        prog.entry = entries[k];
        err e;
        err_clear(&e);
        sys *sy = tu_system(1, 1, 1, 100000, &prog);
        assert_int_equal(eng_run(sys_engine(sy), &e), ERR_FAULT);
        if (!strstr(e.msg, want[k]))
            fail_msg("'%s' does not contain '%s'", e.msg, want[k]);
        sys_free(sy);
        isa_prog_free(&prog);
    }
}

/* The external sync latency: internal + ceil(15 ns x f x hops x 2), hops = 1 + (n/2)/2. */
static void test_external_latency_formula(void **state)
{
    (void)state;
    err e;
    mach m;
    mach_builtin(&m, "mk2", &e);
    m.nipus = 4; /* hops 2: 15e-9 * 1.325e9 * 2 * 2 = 79.5 -> 80 */
    assert_int_equal(mach_sync_external(&m), 90 + 80);
    m.nipus = 16; /* hops 5: 198.75 -> 199 */
    assert_int_equal(mach_sync_external(&m), 90 + 199);
    mach_builtin(&m, "mk1", &e);
    m.nipus = 2; /* hops 1: 15e-9 * 1.6e9 * 2 = 48 exactly */
    assert_int_equal(mach_sync_external(&m), 90 + 48);
}

/* GEMM over a whole IPU equals, bit for bit, the fp32 loop c = c + a*b in k order (what the
 * AMP computes), and the double-precision reference within the stated fp32 bound. */
static void test_gemm_reference(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mach m;
    mach_builtin(&m, "mk2", &e);
    wl_gemm_cfg cfg = {130, 97, 64, 7, 1, 2, 100000000};
    wl_gemm_result r;
    sys *sy = NULL;
    if (wl_gemm_run(&m, &cfg, &r, &sy, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_true(r.checked);
    assert_int_equal(r.mismatches, 0);
    assert_int_equal(r.inexact, 0);
    assert_true(r.worst_ratio <= 1.0);
    sys_free(sy);

    /* the same with a deliberately wrong tolerance would fail: the bound is not vacuous */
    assert_true(wl_gemm_bound(64, 1.0) < 1e-5);
}

/* The GEMM codelet's cycles on one tile, from workloads/gemm/gemm.s and docs/timing.md,
 * written out here pass by pass (not taken from gemm.c):
 * - supervisor prologue: li at 0, ld32 at 1, 2, 3; brz reads r2 (loaded at 1) so it waits
 *   for 1 + 7 = 8 and costs 6; addi at 14; 32 ldcw at 15..46 (16 bytes at 16 B/cycle: 1
 *   each); the first runall at c = 47.
 * - worker w of a pass: get, shli, add, 4 x ld32, mov, rpt (9 slots); z zeroing st64pi
 *   (8 bytes each: 1 slot); rpt (1); 8 f32amp steps per row (a slots each: 1 on Mk2, 2 on
 *   Mk1); ampst (64 bytes at 8 B/cycle: 8 slots); exit (1): S = 19 + z + 8 a R slots for R
 *   rows, z = 8 R on a block's first pass (R x 64 bytes of partials, 8 a store), else 0.
 * - runall at c: worker w issues first at c + 6 + w, exits at c + 6 + w + 6 (S - 1), frees
 *   slot (c + w) mod 6 from d = c + 6 S + 1 + w; the supervisor sees that slot again at
 *   c + w + 6 S + 6. join issues at the earliest of those, completes at max(that + 6,
 *   latest d). Then addi (1), brnzdec (6), 32 ldcw: the next runall 39 cycles after; after
 *   the last pass brnzdec falls through to halt at +7, which finishes at +8.
 * Rows: worker w of a tile with ma rows takes ma(w+1)/6 - ma w/6 (integer division). */
static uint64_t gemm_model(uint32_t ma, uint32_t nq, uint32_t kc, uint32_t a)
{
    uint64_t c = 47, end = 0;
    for (uint32_t p = 0; p < nq * kc; p++) {
        uint64_t join_at = UINT64_MAX, last_done = 0;
        for (uint32_t w = 0; w < 6; w++) {
            uint64_t R = ma * (w + 1) / 6 - ma * w / 6;
            uint64_t S = 19 + (p % kc == 0 ? 8 * R : 0) + 8 * a * R;
            uint64_t sees = c + w + 6 * S + 6, d = c + 6 * S + 1 + w;
            join_at = sees < join_at ? sees : join_at;
            last_done = d > last_done ? d : last_done;
        }
        uint64_t jd = join_at + 6 > last_done ? join_at + 6 : last_done;
        c = jd + 39;
        end = jd + 8;
    }
    return end;
}

/* Exact cycles of the GEMM codelet on one tile: M = 13 rows (workers take 2, 2, 2, 2, 2, 3),
 * N = 20 (2 blocks of 16, the second padded), K = 20 (3 chunks of 8, the last padded): 6
 * passes. The result is checked bit for bit against the fp32 loop too. */
static void test_gemm_one_tile_cycles(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mach m;
    mach_builtin(&m, "mk2", &e);
    m.tiles_per_ipu = 1;
    wl_gemm_cfg cfg = {13, 20, 20, 5, 1, 1, 1000000};
    wl_gemm_result r;
    sys *sy = NULL;
    if (wl_gemm_run(&m, &cfg, &r, &sy, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(r.mismatches, 0);
    assert_int_equal(r.inexact, 0);
    assert_int_equal(r.grid_m * r.grid_n, 1);
    assert_int_equal(r.cycles, gemm_model(13, 2, 3, 1));
    sys_free(sy);
}

/* The headline: 1536 x 1472 x 512 over a whole Mk2 IPU. The grid is 16 x 92: every tile
 * has 96 rows (16 per worker) and one block, so every tile takes gemm_model(96, 1, 64, 1)
 * = 60,496 cycles; the AMP's ideal is 1536 x 1472 x 512 / (16 x 1472) = 49,152, so 81.25%
 * of the fp32 peak. On Mk1 (1216 tiles, f32amp 2 slots) the grid is 26 x 46: the busiest
 * tiles have 60 rows (10 per worker) and 2 blocks. */
static void test_gemm_peak(void **state)
{
    (void)state;
    static const struct {
        const char *machine;
        uint32_t ma, nq, a;
    } want[] = {{"mk2", 96, 1, 1}, {"mk1", 60, 2, 2}};
    assert_int_equal(gemm_model(96, 1, 64, 1), 60496); /* the figure docs/timing.md quotes */
    for (unsigned i = 0; i < 2; i++) {
        err e;
        err_clear(&e);
        mach m;
        mach_builtin(&m, want[i].machine, &e);
        wl_gemm_cfg cfg = {1536, 1472, 512, 3, 0, 2, 100000000};
        wl_gemm_result r;
        sys *sy = NULL;
        if (wl_gemm_run(&m, &cfg, &r, &sy, &e) != ERR_OK)
            fail_msg("%s", e.msg);
        assert_int_equal(r.cycles, gemm_model(want[i].ma, want[i].nq, 64, want[i].a));
        if (i == 0)
            assert_true(fabs(r.pct_peak - 100.0 * 49152 / 60496) < 1e-9);
        sys_free(sy);
    }
}

/* Per-tile programs: tiles 0 and 3 run A, tile 1 runs B, tile 2 holds nothing. Cycles by hand
 * (docs/timing.md): A's li, li, st32 issue at 0, 1, 2 and its sync at 3 arrives at 3 + 6 = 9.
 * B's three li issue at 0, 1, 2; brnzdec at 3 loops 20 times and falls through once, 6 cycles
 * each: st32 at 3 + 21 x 6 = 129, sync at 130 arrives at 136. The idle tile counts as arrived,
 * so the internal sync releases at 136 + 90 = 226, where both read $ccount; st32 at 227, halt
 * at 228 finishes at 229. Each tile's memory in use is its own image; the idle tile's is 0 and
 * its memory stays zero. The same with every tile idle finishes at cycle 0. */
static void test_per_tile_programs(void **state)
{
    (void)state;
    static const char a_src[] = "main:   li      r1, 0x111\n"
                                "        li      r2, 0x800\n"
                                "        st32    r1, [r2+0]\n"
                                "        sync    internal\n"
                                "        get     r3, $ccount\n"
                                "        st32    r3, [r2+4]\n"
                                "        halt\n"
                                "        .data\n"
                                "        .word   1, 2, 3, 4, 5, 6, 7, 8\n";
    static const char b_src[] = "main:   li      r2, 0x800\n"
                                "        li      r1, 0x222\n"
                                "        li      r4, 20\n"
                                "loop:   brnzdec r4, loop\n"
                                "        st32    r1, [r2+0]\n"
                                "        sync    internal\n"
                                "        get     r3, $ccount\n"
                                "        st32    r3, [r2+4]\n"
                                "        halt\n";
    isa_prog a, b;
    tu_assemble("a.s", a_src, &a);
    tu_assemble("b.s", b_src, &b);
    assert_int_not_equal(a.size, b.size);
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 2};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.tiles_per_ipu = 4;
    sys *s = sys_new(&cfg, &e);
    assert_non_null(s);
    eng *g = sys_engine(s);
    const isa_prog *progs[4] = {&a, &b, NULL, &a};
    assert_int_equal(eng_load_tiles(g, progs, &e), ERR_OK);
    isa_prog_free(&a); /* the engine keeps its own decoded copies */
    isa_prog_free(&b);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    eng_stats st;
    eng_get_stats(g, &st);
    assert_int_equal(st.cycles, 229);
    static const uint32_t want[4][2] = {{0x111, 226}, {0x222, 226}, {0, 0}, {0x111, 226}};
    for (uint32_t t = 0; t < 4; t++) {
        uint32_t v[2];
        memcpy(v, eng_tile_mem(g, 0, t) + 0x800, sizeof v);
        assert_int_equal(v[0], want[t][0]);
        assert_int_equal(v[1], want[t][1]);
    }
    isa_prog a2, b2;
    tu_assemble("a.s", a_src, &a2);
    tu_assemble("b.s", b_src, &b2);
    assert_int_equal(eng_tile_image(g, 0, 0), a2.size);
    assert_int_equal(eng_tile_image(g, 0, 1), b2.size);
    assert_int_equal(eng_tile_image(g, 0, 2), 0);
    assert_int_equal(eng_tile_image(g, 0, 3), a2.size);
    isa_prog_free(&a2);
    isa_prog_free(&b2);

    const isa_prog *none[4] = {NULL, NULL, NULL, NULL};
    assert_int_equal(eng_load_tiles(g, none, &e), ERR_OK);
    assert_int_equal(eng_run(g, &e), ERR_OK);
    eng_get_stats(g, &st);
    assert_int_equal(st.cycles, 0);
    sys_free(s);
}

/* A system far beyond this host is refused before anything is allocated, with the estimate
 * and the machine's memory: 1024 IPUs of 65,536 tiles need over 100 GiB for the tiles' state
 * alone (each tile's contexts, AMP state and weights are over 1.5 KiB). */
static void test_host_memory_estimate(void **state)
{
    (void)state;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if ((double)pages * (double)psize >= 1024.0 * 65536.0 * (double)sizeof(tile))
        skip(); /* a host this big could hold it: nothing to refuse */
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 1};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.tiles_per_ipu = 65536;
    cfg.m.nipus = 1024;
    sys *s = sys_new(&cfg, &e);
    assert_null(s);
    assert_non_null(strstr(e.msg, "a system of 1024 IPUs x 65536 tiles needs about"));
    assert_non_null(strstr(e.msg, "KiB a tile), more than the "));
    assert_non_null(strstr(e.msg, "GiB this machine has available"));
}

/* This process's resident memory and page tables, in bytes (from /proc/self/status). */
static uint64_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    unsigned long long kib, sum = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %llu kB", &kib) == 1 || sscanf(line, "VmPTE: %llu kB", &kib) == 1)
            sum += kib;
    if (f)
        fclose(f);
    return sum * 1024;
}

/* The estimate eng_new checks is what a system takes: 4 IPUs x 8192 mk2 tiles, every tile
 * loaded with a one-instruction program, grow this process's resident memory and page tables
 * by the estimate within 20% (measured on x86-64 Linux: 9.4 KiB a tile, the estimate 9.35). */
static void test_host_memory_measured(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    skip(); /* a sanitizer's shadow memory and red zones are not the simulator's */
#endif
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 1};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.tiles_per_ipu = 8192;
    cfg.m.nipus = 4;
    isa_prog prog;
    tu_assemble("halt.s", "main: halt\n", &prog);
    uint64_t before = resident_bytes();
    sys *s = sys_new(&cfg, &e);
    if (!s || eng_load(sys_engine(s), &prog, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    double used = (double)(resident_bytes() - before), est = (double)eng_host_bytes(&cfg.m);
    if (used < 0.8 * est || used > 1.2 * est)
        fail_msg("the system took %.0f bytes, the estimate is %.0f", used, est);
    sys_free(s);
    isa_prog_free(&prog);
}

/* A GEMM no tile can hold says what to shrink: its share of C (65536 x 65536 x 16), or the
 * rows of A and blocks of B, which grow with K (1536 x 1472 x 40000). */
static void test_gemm_too_big_advice(void **state)
{
    (void)state;
    static const struct {
        uint32_t m, n, k;
        const char *advice;
    } cases[] = {{65536, 65536, 16, "use smaller --m or --n"},
                 {1536, 1472, 40000, "use a smaller --k"}};
    for (unsigned i = 0; i < 2; i++) {
        err e;
        err_clear(&e);
        mach m;
        mach_builtin(&m, "mk2", &e);
        wl_gemm_cfg cfg = {cases[i].m, cases[i].n, cases[i].k, 1, 0, 1, 1000};
        wl_gemm_result r;
        sys *sy = NULL;
        assert_int_equal(wl_gemm_run(&m, &cfg, &r, &sy, &e), ERR_INPUT);
        assert_null(sy);
        if (!strstr(e.msg, cases[i].advice))
            fail_msg("'%s' lacks '%s'", e.msg, cases[i].advice);
    }
}

/* The engine meets the fabric and the host only through its ports: an engine whose fabric
 * port nobody bound does not run, and says which port; the host port may stay unbound. */
static void test_ports(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    isa_prog prog;
    assert_int_equal(asm_assemble("p.s", "main: halt\n", 11, &prog, &e), ERR_OK);
    eng_cfg cfg = {.threads = 1, .max_cycles = 1000};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.tiles_per_ipu = 2;
    sim *k = sim_new();
    eng *g = eng_new(k, sim_module_new(k, NULL, "top"), &cfg, &e);
    assert_non_null(g);
    assert_int_equal(eng_load(g, &prog, &e), ERR_OK);
    assert_int_equal(eng_run(g, &e), ERR_INPUT);
    assert_string_equal(e.msg, "port top.eng.fabric is not bound");
    eng_free(g);
    sim_free(k);
    isa_prog_free(&prog);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ports),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_deadlock_report),
        cmocka_unit_test(test_sync_only_tiles),
        cmocka_unit_test(test_sync_loop_tiles),
        cmocka_unit_test(test_sync_loop_limit),
        cmocka_unit_test(test_parked_loop_then_run),
        cmocka_unit_test(test_parked_left_waiting),
        cmocka_unit_test(test_parked_branches),
        cmocka_unit_test(test_pool_every_item_once),
        cmocka_unit_test(test_external_deadlock),
        cmocka_unit_test(test_misaligned_entry),
        cmocka_unit_test(test_external_latency_formula),
        cmocka_unit_test(test_gemm_reference),
        cmocka_unit_test(test_gemm_peak),
        cmocka_unit_test(test_gemm_one_tile_cycles),
        cmocka_unit_test(test_per_tile_programs),
        cmocka_unit_test(test_host_memory_estimate),
        cmocka_unit_test(test_host_memory_measured),
        cmocka_unit_test(test_gemm_too_big_advice),
    };
    return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
