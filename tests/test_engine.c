/* test_engine: the parallel BSP engine — determinism across host threads, supersteps over
 * every tile of two IPUs, external sync, deadlock reports, and the GEMM against its reference.
 * This suite also runs under ThreadSanitizer in .ci/run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/system.h"
#include "hw/sim.h"
#include "isa/asm.h"
#include "workloads/gemm/gemm.h"

/* Every tile: three supersteps of unequal work (depends on the tile id), six workers that
 * write tile- and cycle-dependent values, an external sync across IPUs, then the cycle
 * counter stored to memory. Any dependence on thread timing would show in memory or cycles. */
static const char prog_src[] = "main:   get     r1, $tile\n"
                               "        get     r2, $ipu\n"
                               "        li      r3, 2\n"
                               "outer:  andi    r4, r1, 7\n"
                               "        add     r4, r4, r3\n"
                               "spin:   brnzdec r4, spin\n"
                               "        runall  work, r1\n"
                               "        join\n"
                               "        sync    internal\n"
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

/* Two IPUs: IPU 0's tiles wait at an external sync while IPU 1's tiles halt. */
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
    assert_non_null(strstr(e.msg, "external sync"));
    sys_free(sy);
    isa_prog_free(&prog);
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

/* GEMM over a whole IPU equals the plain C reference within the stated fp32 bound, and the
 * cycle count follows the codelet's model: each worker's blocks cost K + 14 issue slots. */
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
    assert_true(r.worst_ratio <= 1.0);
    sys_free(sy);

    /* the same with a deliberately wrong tolerance would fail: the bound is not vacuous */
    assert_true(wl_gemm_bound(64, 1.0) < 1e-5);
}

/* A large GEMM reaches at least 80% of the fp32 peak in simulated time. */
static void test_gemm_peak(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mach m;
    mach_builtin(&m, "mk2", &e);
    wl_gemm_cfg cfg = {768, 736, 256, 3, 0, 2, 100000000};
    wl_gemm_result r;
    sys *sy = NULL;
    if (wl_gemm_run(&m, &cfg, &r, &sy, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_true(r.pct_peak >= 80.0);
    sys_free(sy);
}

/* Exact cycles of the GEMM codelet on one tile, from its model (workloads/gemm/gemm.s):
 * M = N = 8 gives 4 blocks of 4x4; workers 0-3 take one block each, 4 and 5 none. A worker
 * issues 6 prologue slots, K + 14 per block (ampst takes 4) and 3 to leave: 39 for K = 16,
 * 9 with no block. li at 0, runall at 1: worker w first issues at 7 + w, exits at
 * 7 + w + 6 x (slots - 1): w3 at 238 (done 239); w4 at 59, w5 at 60 (slots 5 and 0 free from
 * 60 and 61). The supervisor's first free slot after 7 is slot 5 at 65: join issues there and
 * completes at max(65 + 6, 239) = 239; halt at 239 finishes at 240. */
static void test_gemm_one_tile_cycles(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    mach m;
    mach_builtin(&m, "mk2", &e);
    m.tiles_per_ipu = 1;
    wl_gemm_cfg cfg = {8, 8, 16, 5, 1, 1, 100000};
    wl_gemm_result r;
    sys *sy = NULL;
    if (wl_gemm_run(&m, &cfg, &r, &sy, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(r.mismatches, 0);
    assert_int_equal(r.cycles, 240);
    sys_free(sy);
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
        cmocka_unit_test(test_external_deadlock),
        cmocka_unit_test(test_external_latency_formula),
        cmocka_unit_test(test_gemm_reference),
        cmocka_unit_test(test_gemm_peak),
        cmocka_unit_test(test_gemm_one_tile_cycles),
    };
    return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
