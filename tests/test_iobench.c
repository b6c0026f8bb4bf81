/* test_iobench: io-bench against its model — prefetch hides a fast host, the bursty host's
 * depth curve, I/O tiles overlapping the transfer with compute, determinism across threads,
 * and bad configurations. Small IPUs (--tiles) keep it quick; every expectation is derived
 * from the model's equations (docs/host.md), not from the code's output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/asm.h"
#include "workloads/iobench/iobench.h"

static mach small(uint32_t tiles)
{
    err e;
    mach m;
    mach_builtin(&m, "mk2", &e);
    m.tiles_per_ipu = tiles;
    return m;
}

static wl_iobench_result run(const mach *m, const wl_iobench_cfg *c)
{
    err e;
    err_clear(&e);
    wl_iobench_result r;
    sys *sy = NULL;
    if (wl_iobench_run(m, c, &r, &sy, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    sys_free(sy);
    return r;
}

/* A host much faster than the device, buffered (D >= 2): after the first buffer, no copy
 * waits for the host (Begin stays what the first copy waited) and End is zero. */
static void test_fast_host_prefetch(void **state)
{
    (void)state;
    mach m = small(64);
    wl_iobench_cfg c = wl_iobench_defaults();
    c.work_macs = 200000;
    c.host.loaders = 8;
    c.host.prep_ps = 50000; /* 0.05 us per sample: 40 samples in 0.25 us on 8 loaders */
    c.host.depth = 2;
    c.steps = 1;
    wl_iobench_result one = run(&m, &c);
    c.steps = 12;
    wl_iobench_result many = run(&m, &c);
    assert_int_equal(many.cat[ENG_CAT_END], 0);
    assert_int_equal(many.cat[ENG_CAT_BEGIN], one.cat[ENG_CAT_BEGIN]);
    /* unbuffered, every copy waits for the request, the callback and the fill: Begin grows */
    c.host.depth = 1;
    wl_iobench_result d1 = run(&m, &c);
    assert_true(d1.cat[ENG_CAT_BEGIN] > 10 * one.cat[ENG_CAT_BEGIN]);
    assert_true(d1.cat[ENG_CAT_END] > 0);
}

/* A bursty host (fast on average): depth 1 -> 3 raises throughput, then it flattens. */
static void test_bursty_depth_curve(void **state)
{
    (void)state;
    const char *slow = getenv("IPUSIM_SLOW_TESTS");
    if (slow && !strcmp(slow, "0")) {
        print_message("skipped: IPUSIM_SLOW_TESTS=0 (a whole IPU for 500 steps)\n");
        return;
    }
    mach m = small(1472); /* bench/iobench-depth.sweep's setting */
    wl_iobench_cfg c = wl_iobench_defaults();
    c.work_macs = 200000;
    c.steps = 100;
    c.host.loaders = 4;
    c.host.prep_ps = 1000000; /* 1 us mean: 10 us a buffer, faster than the device's step */
    c.host.dist = (host_dist){HOST_BURSTY, 0, 0.005, 6, 40};
    double s[6];
    for (uint32_t d = 1; d <= 5; d++) {
        c.host.depth = d;
        s[d] = run(&m, &c).steps_per_s;
    }
    print_message("steps/s by depth: %.0f %.0f %.0f %.0f %.0f\n", s[1], s[2], s[3], s[4], s[5]);
    assert_true(s[2] > s[1] * 1.5);               /* prefetch hides the host's mean */
    assert_true(s[3] > s[2] * 1.02);              /* a deeper ring absorbs the bursts */
    assert_true(fabs(s[5] - s[3]) / s[3] < 0.02); /* and then it flattens */
}

/* I/O tiles with compute longer than the transfer: a step takes the compute on the
 * remaining tiles, plus the hand-over exchange, plus the two internal syncs around it. */
static void test_io_tiles_step_time(void **state)
{
    (void)state;
    mach m = small(128);
    wl_iobench_cfg c = wl_iobench_defaults();
    c.batch = 8; /* 25 KB a step: the copy (latency 3 us + 1.9 us + host sync) < the compute */
    c.work_macs = 3000000;
    c.host.loaders = 8;
    c.host.prep_ps = 50000;
    c.host.depth = 3;
    c.out_mode = STRM_FINAL;
    c.io_tiles = 16;
    c.steps = 6;
    wl_iobench_result a = run(&m, &c);
    c.steps = 12;
    wl_iobench_result b = run(&m, &c);
    double step = (double)(b.cycles - a.cycles) / 6.0;
    /* the compute of one step on 112 tiles, measured without I/O tiles on a 112-tile IPU */
    mach m2 = small(112);
    wl_iobench_cfg c2 = c;
    c2.io_tiles = 0;
    c2.steps = 6;
    wl_iobench_result x = run(&m2, &c2);
    c2.steps = 12;
    wl_iobench_result y = run(&m2, &c2);
    double compute = (double)(y.cat[ENG_CAT_COMPUTE] - x.cat[ENG_CAT_COMPUTE]) / 6.0;
    /* the hand-over: its planned cycles after `call` (6), two internal syncs (90 each, plus
       the sync instructions' 6) */
    double model = compute + (double)a.handover_cycles + 6 + 2 * (90 + 6);
    print_message("step %.1f cycles, model %.1f (compute %.1f, hand-over %llu)\n", step, model,
                  compute, (unsigned long long)a.handover_cycles);
    assert_true(fabs(step - model) / model < 0.02);
}

/* Compute-bound: I/O tiles hide the transfer, so a few beat none; but each is a tile that
 * no longer computes, so many lose again: an optimum inside the range (a small sweep). */
static void test_io_tiles_optimum(void **state)
{
    (void)state;
    mach m = small(256);
    wl_iobench_cfg c = wl_iobench_defaults();
    c.work_macs = 4000000;
    c.steps = 3;
    c.host.loaders = 16;
    c.host.prep_ps = 100000;
    c.host.depth = 3;
    const uint32_t n[] = {0, 16, 128};
    double s[3];
    for (int k = 0; k < 3; k++) {
        c.io_tiles = n[k];
        s[k] = run(&m, &c).samples_per_s;
    }
    print_message("samples/s with 0, 16, 128 I/O tiles: %.0f %.0f %.0f\n", s[0], s[1], s[2]);
    assert_true(s[1] > s[0] * 1.05);
    assert_true(s[1] > s[2] * 1.2);
}

static void test_threads_identical(void **state)
{
    (void)state;
    mach m = small(64);
    wl_iobench_cfg c = wl_iobench_defaults();
    c.io_tiles = 8;
    c.steps = 6;
    c.host.dist = (host_dist){HOST_EXP, 0, 0, 0, 0};
    c.threads = 1;
    wl_iobench_result a = run(&m, &c);
    c.threads = 2;
    wl_iobench_result b = run(&m, &c);
    assert_int_equal(a.cycles, b.cycles);
    assert_memory_equal(a.cat, b.cat, sizeof a.cat);
    assert_memory_equal(a.io, b.io, sizeof a.io);
}

/* Remote buffers: a tile writes 4 KiB to remote buffer 7 and reads it back elsewhere. Each
 * copy takes remote_latency (2 us = 2650 cycles) + 4096 B at the tile's 4 B/cycle (1024
 * cycles; the tile's port is the bottleneck of port, IPU link and Streaming Memory). The host
 * model works in whole picoseconds rounded up (4096 B at 5.3 GB/s = 772,830.2 -> 772,831 ps;
 * with the latency 2,772,831 ps), the engine in whole cycles rounded up (3674.001 -> 3675):
 * 3675 cycles, accounted as StreamCopyMidRemoteBuffer. */
static void test_remote_buffer(void **state)
{
    (void)state;
    const char *src = "main:   li      r1, 0x1000\n"
                      "        li      r2, 4096\n"
                      "        li      r3, 7\n"
                      "        li      r4, 0\n"
                      "        rbout   r1, r2, r3, r4\n"
                      "        sync    internal_host\n"
                      "        li      r1, 0x3000\n"
                      "        rbin    r1, r2, r3, r4\n"
                      "        sync    internal_host\n"
                      "        halt\n";
    err e;
    err_clear(&e);
    isa_prog prog;
    assert_int_equal(asm_assemble("rb.s", src, strlen(src), &prog, &e), ERR_OK);
    mach m = small(1);
    hio_cfg hc = {.in = host_cfg_default(), .out = host_cfg_default()};
    sys_cfg sc = {.m = m, .threads = 1, .max_cycles = 10000000, .host = &hc};
    sys *sy = sys_new(&sc, &e);
    assert_non_null(sy);
    eng *g = sys_engine(sy);
    assert_int_equal(eng_load(g, &prog, &e), ERR_OK);
    uint8_t *mem = eng_tile_mem(g, 0, 0);
    for (int i = 0; i < 4096; i++)
        mem[0x1000 + i] = (uint8_t)(i * 13 + 5);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    assert_memory_equal(mem + 0x3000, mem + 0x1000, 4096);
    eng_ipu_stats st;
    eng_get_ipu_stats(g, 0, &st);
    assert_int_equal(st.cat[ENG_CAT_REMOTE], 2 * 3675);
    assert_int_equal(st.remote_bytes, 2 * 4096);
    sys_free(sy);
    isa_prog_free(&prog);
}

static void test_bad_configs(void **state)
{
    (void)state;
    mach m = small(64);
    err e;
    wl_iobench_result r;
    sys *sy;
    wl_iobench_cfg c = wl_iobench_defaults();
    c.io_tiles = 3;
    assert_int_equal(wl_iobench_run(&m, &c, &r, &sy, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "odd"));
    c.io_tiles = 64;
    assert_int_equal(wl_iobench_run(&m, &c, &r, &sy, &e), ERR_INPUT);
    /* two I/O tiles cannot hold 4,000 images of 784 fp32 pixels: the message gives the rule
       of thumb, 1.05 x 12,544,000 / 624,000 = 21.1 -> 16 (nearest power of two) */
    mach big = small(1472);
    c = wl_iobench_defaults();
    c.batch = 4000;
    c.io_tiles = 2;
    assert_int_equal(wl_iobench_run(&big, &c, &r, &sy, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "rule of thumb for this micro-batch is 16 I/O tiles"));
    assert_int_equal(wl_iobench_rule_of_thumb(12544000), 16);
    assert_int_equal(wl_iobench_rule_of_thumb(125440), 2);
    assert_int_equal(wl_iobench_dtype("int4"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_host_prefetch), cmocka_unit_test(test_bursty_depth_curve),
        cmocka_unit_test(test_io_tiles_step_time), cmocka_unit_test(test_io_tiles_optimum),
        cmocka_unit_test(test_threads_identical),  cmocka_unit_test(test_remote_buffer),
        cmocka_unit_test(test_bad_configs),
    };
    return cmocka_run_group_tests_name("iobench", tests, NULL, NULL);
}
