/* Tests of the offloaded optimiser (mnet_cfg.offload, `ipusim mnist --offload-optimiser`):
 * AdamW's m and v live in remote buffers, read in before each step and written back after.
 * Weight updates of 400 images of mnist-digits (batch 40 x G 10) from the seeded weights,
 * with and without offload: two on one IPU (so that the second step reads what the first
 * wrote back), one pipelined over 4 IPUs (B1..B4 on IPUs 0..3):
 *
 * - the weights after the updates are bit for bit those without offload (the same codelets
 *   on the same values; only where m and v wait between updates changes, and the remote
 *   buffers start zeroed as write_inputs zeroes the tiles' m and v);
 * - each IPU's remote-buffer bytes an update are 2 tensors x 2 directions x 4 bytes x the
 *   parameters whose homes are on it (mnet_graph.c, param_homes): conv1's 260 on B1's IPU, conv2's
 *   10 x 502 = 5,020 on B2's, layer3's 256 x 320 + 256 = 82,176 on B3's, layer4's
 *   10 x 256 + 10 = 2,570 on B4's. Pipelined: 16 x 260 = 4,160, 16 x 5,020 = 80,320,
 *   16 x 82,176 = 1,314,816, 16 x 2,570 = 41,120 B; one IPU: 16 x (260 + 5,020 + 82,176 +
 *   2,570) = 16 x 90,026 = 1,440,416 B an update. Without offload: none;
 * - each IPU's always-live tile bytes (gr_tile_mem.always, summed over its tiles) are m's and
 *   v's there, 2 x 4 B x its parameters, fewer with offload (they live from their remote read
 *   to their write back);
 * - StreamCopyMidRemoteBuffer cycles > 0 on every IPU exactly when offloading, and at least
 *   the bytes' time through the IPU's own host attachment (every remote byte crosses it:
 *   host/host.c, path) plus one remote latency for each of the four copies (read m, read v,
 *   write m, write v, an update; hio runs an IPU's copies one after another), in tile
 *   cycles: bytes x clock / host_ipu_bytes_per_s + 4 x updates x remote_latency_ns x clock
 *   / 1e9. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/testutil.h"

#include "workloads/mnist/data.h"
#include "workloads/mnist/mnet.h"
#include "workloads/mnist/mref.h"

static mdata digits;

static int setup(void **state)
{
    (void)state;
    return tu_load_digits(&digits, "test_mnist_offload");
}

static int teardown(void **state)
{
    (void)state;
    mdata_free(&digits);
    return 0;
}

/* A training run's IPUs' statistics, the peak tile image and each IPU's always-live bytes
 * (over its tiles). */
typedef struct ipus {
    uint32_t n;
    eng_ipu_stats st[4];
    uint32_t peak;
    uint64_t always[4];
} ipus;

static void on_done(void *ctx, int test, eng *g, const gr_exe *x, const mnet_pipe_info *p)
{
    (void)p;
    ipus *r = ctx;
    if (test)
        return;
    r->n = eng_nipus(g);
    for (uint32_t i = 0; i < r->n && i < 4; i++) {
        eng_get_ipu_stats(g, i, &r->st[i]);
        for (uint32_t t = 0; t < eng_ntiles(g); t++)
            r->always[i] += gr_exe_tile(x, i, t)->always;
    }
    r->peak = gr_exe_summary(x)->max_bytes;
}

/* The reference's initial weights for seed 0 (malloc'd). */
static float *seeded(void)
{
    err e;
    err_clear(&e);
    mref_net *n = mref_create(1, &e);
    assert_non_null(n);
    mref_init(n, 0);
    float *w = malloc(sizeof(float) * MREF_NPARAMS);
    memcpy(w, mref_params(n), sizeof(float) * MREF_NPARAMS);
    mref_destroy(n);
    return w;
}

/* `updates` updates of 10 micro-batches of 40 from the seeded weights; the weights into *w. */
static void train(const uint32_t map[4], int pipelined, int offload, uint32_t updates, float **w,
                  ipus *r)
{
    mnet_cfg c;
    err e;
    err_clear(&e);
    assert_int_equal(mnet_defaults(&c, &e), ERR_OK);
    c.run.epochs = 1;
    c.run.device_iters = 1;
    c.threads = 2;
    memcpy(c.stage_ipu, map, 4 * sizeof *map);
    c.pipelined = pipelined;
    c.offload = offload;
    mdata_split set = digits.train;
    set.n = 400 * updates;
    *w = seeded();
    memset(r, 0, sizeof *r);
    mnet_hooks h = {.finished = on_done, .ctx = r};
    if (mnet_train(&c, &set, *w, &h, &e) != ERR_OK)
        fail_msg("%s", e.msg);
}

static void check(const uint32_t map[4], int pipelined, uint32_t updates,
                  const uint64_t *want_bytes)
{
    float *w[2];
    ipus r[2];
    for (int off = 0; off < 2; off++)
        train(map, pipelined, off, updates, &w[off], &r[off]);
    assert_memory_equal(w[1], w[0], sizeof(float) * MREF_NPARAMS);
    uint32_t nipus = map[3] + 1;
    mach m;
    err e;
    err_clear(&e);
    assert_int_equal(mach_builtin(&m, "mk2", &e), ERR_OK);
    for (int off = 0; off < 2; off++) {
        assert_int_equal(r[off].n, nipus);
        for (uint32_t i = 0; i < nipus; i++) {
            const eng_ipu_stats *s = &r[off].st[i];
            assert_int_equal(s->remote_bytes, off ? updates * want_bytes[i] : 0);
            assert_int_equal(s->cat[ENG_CAT_REMOTE] > 0, off);
            double bound =
                (double)s->remote_bytes * (double)m.clock_hz / (double)m.host_ipu_bytes_per_s +
                (off ? 4.0 * updates * m.remote_latency_ns * (double)m.clock_hz / 1e9 : 0.0);
            if ((double)s->cat[ENG_CAT_REMOTE] < bound)
                fail_msg("ipu %u: %llu remote cycles for %llu B, below %.0f", i,
                         (unsigned long long)s->cat[ENG_CAT_REMOTE],
                         (unsigned long long)s->remote_bytes, bound);
        }
    }
    /* offloaded, m and v are live on the tiles only from their remote read to their write
     * back, no longer always: each IPU's always-live bytes drop by m's and v's there, 2 x 4 B
     * x its parameters, i.e. want_bytes / 2 (want_bytes is 2 x 2 x 4 B x the parameters) */
    for (uint32_t i = 0; i < nipus; i++)
        if (r[0].always[i] - r[1].always[i] != want_bytes[i] / 2)
            fail_msg("ipu %u: always-live %llu B without offload, %llu B with; want %llu B less", i,
                     (unsigned long long)r[0].always[i], (unsigned long long)r[1].always[i],
                     (unsigned long long)(want_bytes[i] / 2));
    printf("peak tile image %u B without offload, %u B with\n", r[0].peak, r[1].peak);
    free(w[0]);
    free(w[1]);
}

static void test_one_ipu(void **state)
{
    (void)state;
    static const uint32_t map[4] = {0, 0, 0, 0};
    static const uint64_t bytes[1] = {16ull * (260 + 5020 + 82176 + 2570)};
    check(map, 0, 2, bytes);
}

static void test_pipelined(void **state)
{
    (void)state;
    static const uint32_t map[4] = {0, 1, 2, 3};
    static const uint64_t bytes[4] = {16ull * 260, 16ull * 5020, 16ull * 82176, 16ull * 2570};
    check(map, 1, 1, bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_ipu),
        cmocka_unit_test(test_pipelined),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
