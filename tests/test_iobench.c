/* test_iobench: io-bench against its model — prefetch hides a fast host, the bursty host's
 * depth curve, I/O tiles overlapping the transfer with compute, the data the I/O tiles hand
 * over (every compute tile gets exactly its slice), determinism across threads, and bad
 * configurations. Small IPUs (--tiles) keep it quick; every expectation is derived
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
#include "tests/testutil.h"
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
    assert_true(fabs(step - model) / model < 0.001); /* docs/host.md: 0.1% */
    /* The copy hides under the compute: the compute tiles never wait for it, so none of it is
     * charged to the IPU (docs/host.md, "I/O tiles"), though the I/O tiles copied meanwhile. */
    for (unsigned k = ENG_CAT_BEGIN; k <= ENG_CAT_END; k++)
        assert_int_equal(b.cat[k] - a.cat[k], 0);
}

/* I/O tiles with a host slower than everything else, unbuffered (D = 1): the copy sets the
 * step, and the host's waits are in it. Per step the I/O tiles' group sync releases them
 * after (docs/host.md, "Infeed" and "I/O tiles"; mk2: 1.325 GHz, sync_host 1000 cycles)
 *   Begin = callback + H            the host starts filling only when the device asks:
 *                                   5 us + ceil(8 / 1) x 20 us = 165 us = 218,625 cycles
 *   Mid   = 3 us + 25,088 B / 13.39 GB/s = 4.873637 us -> 6,458 cycles (rounded up)
 *   End   = callback = 5 us = 6,625 cycles (D = 1: the host hands the buffer back)
 * plus the group sync's sync_host (1000), then the hand-over and the two internal syncs:
 *   step = Begin + Mid + End + 1000 + handover + 6 + 2 x (90 + 6)
 * The compute (3k MAC/sample on 112 tiles, some 14k cycles) runs under the copy. */
static void test_io_tiles_slow_host(void **state)
{
    (void)state;
    mach m = small(128);
    wl_iobench_cfg c = wl_iobench_defaults();
    c.batch = 8;
    c.work_macs = 3000000;
    c.host.loaders = 1;
    c.host.prep_ps = 20 * 1000000ull; /* 20 us a sample */
    c.host.callback_ps = 5 * 1000000ull;
    c.host.depth = 1;
    c.out_mode = STRM_FINAL;
    c.io_tiles = 16;
    c.steps = 4;
    wl_iobench_result a = run(&m, &c);
    c.steps = 8;
    wl_iobench_result b = run(&m, &c);
    double step = (double)(b.cycles - a.cycles) / 4.0;
    double begin = 218625, mid = 6458, end = 6625;
    double model = begin + mid + end + 1000 + (double)a.handover_cycles + 6 + 2 * (90 + 6);
    print_message("step %.1f cycles, model %.1f (hand-over %llu; io begin %llu)\n", step, model,
                  (unsigned long long)a.handover_cycles,
                  (unsigned long long)(b.cat[ENG_CAT_BEGIN] - a.cat[ENG_CAT_BEGIN]));
    assert_true(fabs(step - model) / model < 0.001);
    /* the copy is longer than the compute, so the other tiles wait for all of it: Begin */
    assert_int_equal(b.cat[ENG_CAT_BEGIN] - a.cat[ENG_CAT_BEGIN], 4 * 218625);
}

/* An unbuffered outfeed (D = 1) with a slow host drain: the device waits while the host
 * consumes the single buffer (docs/host.md "Outfeed": with D = 1 transfer and drain do not
 * overlap; host/hio: the wait is StreamCopyEnd). No I/O tiles, mk2 at 1.325 GHz, so whole
 * microseconds are whole cycles (1 us = 1325 cycles). Per step:
 *   infeed  End = callback        = 5 us = 6,625 cycles
 *   outfeed End = drain_ps        = 7 us = 9,275 cycles
 *   outfeed Begin = 0: the next outfeed copy comes after the next infeed, which itself waits
 *   callback + fill >= 5 us after the drain began, so drained_{k-1} = end + callback + drain
 *   is past. Hence End over 4 steps = 4 x (6,625 + 9,275) = 63,600 cycles, and each step
 *   is exactly 9,275 cycles longer than with drain 0. */
static void test_outfeed_slow_drain(void **state)
{
    (void)state;
    mach m = small(64);
    wl_iobench_cfg c = wl_iobench_defaults();
    c.work_macs = 20000;
    c.host.loaders = 8;
    c.host.prep_ps = 1000000; /* 1 us a sample */
    c.host.callback_ps = 5 * 1000000ull;
    c.host.depth = 1;
    c.out_mode = STRM_ALL;
    uint64_t step[2];
    for (int v = 0; v < 2; v++) {
        c.drain_ps = v ? 7 * 1000000ull : 0;
        c.steps = 4;
        wl_iobench_result a = run(&m, &c);
        c.steps = 8;
        wl_iobench_result b = run(&m, &c);
        assert_int_equal(b.cat[ENG_CAT_END] - a.cat[ENG_CAT_END], 4 * (6625 + (v ? 9275 : 0)));
        step[v] = b.cycles - a.cycles;
    }
    assert_int_equal(step[1] - step[0], 4 * 9275);
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

/* ---- the hand-over's data ----
 *
 * The host fills micro-batch k of IPU i with synthetic images (workloads/iobench/iobench.c,
 * pixel() and fill()): pixel px of sample s is the top byte of a splitmix-style hash of
 * (i << 48) ^ (s << 20) ^ px, sample s = k x batch + (index in the batch); the buffer holds
 * the batch's pixels in order, as normalised fp32 ((v / 255 - 0.1307) / 0.3081) or raw int8,
 * zero-padded to whole words. Its W words are split evenly over the compute tiles: compute
 * tile t gets words [W t / C, W (t + 1) / C) at its input buffer (the hand-over from the I/O
 * tiles, which hold [W j / N, W (j + 1) / N) each). Step k hands over micro-batch k, so after
 * the run every tile holds the last one's slice. Neither conversion writes in place (fp32 is
 * used as it arrived, int8 is converted into a separate fp32 output), so the input buffers are
 * checkable whole; for int8 the converted pixels of the last step are checked too. */
static uint8_t want_pixel(uint32_t ipu, uint64_t sample, uint32_t px)
{
    uint64_t z = ((uint64_t)ipu << 48) ^ (sample << 20) ^ px;
    z = (z ^ (z >> 31)) * 0x7fb5d329728ea185ull;
    z = (z ^ (z >> 27)) * 0x81dadef4bc2dd44dull;
    return (uint8_t)(z >> 56);
}

/* Pixel px of micro-batch k of IPU ipu (0 past the batch's end: padding). */
static uint8_t batch_pixel(const wl_iobench_cfg *c, uint32_t ipu, uint64_t k, uint64_t px)
{
    if (px >= (uint64_t)c->batch * c->sample_px)
        return 0;
    return want_pixel(ipu, k * c->batch + px / c->sample_px, (uint32_t)(px % c->sample_px));
}

static float normalised(uint8_t v)
{
    return ((float)v / 255.0f - 0.1307f) / 0.3081f;
}

/* Word w of micro-batch k of IPU ipu, as the link carries it (fp32 or int8). */
static uint32_t batch_word(const wl_iobench_cfg *c, uint32_t ipu, uint64_t k, uint64_t w)
{
    uint32_t v = 0;
    if (c->dtype == IOB_FP32) {
        float f = normalised(batch_pixel(c, ipu, k, w));
        memcpy(&v, &f, 4);
    } else {
        for (uint32_t b = 0; b < 4; b++)
            v |= (uint32_t)batch_pixel(c, ipu, k, 4 * w + b) << (8 * b);
    }
    return v;
}

/* Tiles [first, first + n) of IPU ipu must hold words [W t / n, W (t + 1) / n) of the last
 * micro-batch at `base`; and, for int8 on compute tiles, their fp32 conversion at `out`. */
static void check_slices(eng *g, const wl_iobench_cfg *c, uint32_t ipu, uint32_t first, uint32_t n,
                         uint64_t W, uint32_t base, uint32_t out)
{
    for (uint32_t t = 0; t < n; t++) {
        const uint8_t *mem = eng_tile_mem(g, ipu, first + t);
        uint64_t a = W * t / n, b = W * (t + 1) / n;
        for (uint64_t w = a; w < b; w++) {
            uint32_t want = batch_word(c, ipu, c->steps - 1, w);
            uint32_t got = tu_get32(mem, base + (uint32_t)(w - a) * 4);
            if (got != want)
                fail_msg("ipu %u tile %u: word %llu of the micro-batch is %08x, want %08x", ipu,
                         first + t, (unsigned long long)w, got, want);
            for (uint32_t p = 0; out && p < 4; p++) {
                float f;
                memcpy(&f, mem + out + (uint32_t)(w - a) * 16 + 4 * p, 4);
                assert_float_equal(f, normalised(batch_pixel(c, ipu, c->steps - 1, 4 * w + p)),
                                   2e-6);
            }
        }
    }
}

/* A run with 8 I/O tiles of 64 on two IPUs, then the device side: every compute tile (and
 * every I/O tile) holds exactly its slice of the last micro-batch. The program keeps the
 * address of a compute tile's parameter block in r10 (iobench.s: +0 its words, +4 its input,
 * +8 its fp32 output); the words it states are checked against the split first. */
static void check_handover_data(int dtype)
{
    mach m = small(64);
    m.nipus = 2;
    wl_iobench_cfg c = wl_iobench_defaults();
    c.dtype = dtype;
    c.batch = 3;
    c.sample_px = 100; /* fp32: 300 words, int8: 75, split unevenly over 56 compute tiles */
    c.work_macs = 1000;
    c.steps = 3;
    c.io_tiles = 8;
    c.threads = 2;
    err e;
    err_clear(&e);
    wl_iobench_result r;
    sys *sy = NULL;
    if (wl_iobench_run(&m, &c, &r, &sy, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    eng *g = sys_engine(sy);
    const uint32_t C = 64 - c.io_tiles;
    const uint64_t W = dtype == IOB_FP32 ? 300 : 75;
    assert_int_equal(r.compute_tiles, C);
    assert_int_equal(r.batch_bytes, W * 4);
    for (uint32_t i = 0; i < m.nipus; i++) {
        uint32_t params = eng_tile(g, i, 0)->sup.r[10];
        uint32_t base = tu_get32(eng_tile_mem(g, i, 0), params + 4);
        for (uint32_t t = 0; t < C; t++) {
            const uint8_t *mem = eng_tile_mem(g, i, t);
            assert_int_equal(eng_tile(g, i, t)->sup.r[10], params);
            assert_int_equal(tu_get32(mem, params + 0), W * (t + 1) / C - W * t / C);
            assert_int_equal(tu_get32(mem, params + 4), base);
        }
        uint32_t out = dtype == IOB_INT8 ? tu_get32(eng_tile_mem(g, i, 0), params + 8) : 0;
        check_slices(g, &c, i, 0, C, W, base, out);
        check_slices(g, &c, i, C, c.io_tiles, W, base, 0);
    }
    sys_free(sy);
}

static void test_handover_data(void **state)
{
    (void)state;
    check_handover_data(IOB_FP32);
    check_handover_data(IOB_INT8);
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

/* A system of `tiles` small tiles with a host (its remote buffers), src loaded on every tile. */
static sys *remote_sys(const char *src, uint32_t tiles, isa_prog *prog)
{
    err e;
    err_clear(&e);
    assert_int_equal(asm_assemble("rb.s", src, strlen(src), prog, &e), ERR_OK);
    hio_cfg hc = {.in = host_cfg_default(), .out = host_cfg_default()};
    sys_cfg sc = {.m = small(tiles), .threads = 1, .max_cycles = 10000000, .host = &hc};
    sys *sy = sys_new(&sc, &e);
    assert_non_null(sy);
    assert_int_equal(eng_load(sys_engine(sy), prog, &e), ERR_OK);
    return sy;
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
    sys *sy = remote_sys(src, 1, &prog);
    eng *g = sys_engine(sy);
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

/* One sync's remote copies of several tiles are one transfer (host/hio.c): two tiles each
 * write two 2 KiB regions to remote buffer 7 (8 KiB, the tiles counted once each), then read
 * them back. Each direction: remote_latency (2 us) + 8192 B at the two tiles' 2 x 4 B/cycle
 * = 10.6 GB/s (below the IPU port's 13.39 and Streaming Memory's 40.96 GB/s): 772,830.2 ->
 * 772,831 ps, with the latency 2,772,831 ps = 3674.001 -> 3675 cycles, as one tile's 4 KiB
 * above. (Four copies one after another would pay the latency four times.) */
static void test_remote_batched(void **state)
{
    (void)state;
    const char *src = "main:   li      r2, 2048\n"
                      "        li      r3, 7\n"
                      "        li      r1, 0x1000\n"
                      "        li      r4, 0\n"
                      "        rbout   r1, r2, r3, r4\n"
                      "        li      r1, 0x1800\n"
                      "        li      r4, 2048\n"
                      "        rbout   r1, r2, r3, r4\n"
                      "        sync    internal_host\n"
                      "        li      r1, 0x3000\n"
                      "        li      r4, 0\n"
                      "        rbin    r1, r2, r3, r4\n"
                      "        li      r1, 0x3800\n"
                      "        li      r4, 2048\n"
                      "        rbin    r1, r2, r3, r4\n"
                      "        sync    internal_host\n"
                      "        halt\n";
    err e;
    err_clear(&e);
    isa_prog prog;
    sys *sy = remote_sys(src, 2, &prog);
    eng *g = sys_engine(sy);
    for (uint32_t t = 0; t < 2; t++) {
        uint8_t *mem = eng_tile_mem(g, 0, t);
        for (int i = 0; i < 4096; i++)
            mem[0x1000 + i] = (uint8_t)(i * 13 + 5);
    }
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    for (uint32_t t = 0; t < 2; t++)
        assert_memory_equal(eng_tile_mem(g, 0, t) + 0x3000, eng_tile_mem(g, 0, t) + 0x1000, 4096);
    eng_ipu_stats st;
    eng_get_ipu_stats(g, 0, &st);
    assert_int_equal(st.remote_bytes, 2 * 8192);
    assert_int_equal(st.cat[ENG_CAT_REMOTE], 2 * 3675);
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
    /* a compute tile that cannot hold its program says --steps grew it, not the samples */
    c = wl_iobench_defaults();
    c.steps = 1u << 20;
    assert_int_equal(wl_iobench_run(&m, &c, &r, &sy, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "(it grows with --steps)"));
    assert_non_null(strstr(e.msg, ": use fewer --steps"));
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
        cmocka_unit_test(test_io_tiles_step_time), cmocka_unit_test(test_io_tiles_slow_host),
        cmocka_unit_test(test_outfeed_slow_drain), cmocka_unit_test(test_io_tiles_optimum),
        cmocka_unit_test(test_handover_data),      cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_remote_buffer),      cmocka_unit_test(test_remote_batched),
        cmocka_unit_test(test_bad_configs),
    };
    return cmocka_run_group_tests_name("iobench", tests, NULL, NULL);
}
