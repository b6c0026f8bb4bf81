/* Tests of the host model (host/host, host/strm): the [host] preset numbers; host-link and
 * remote-buffer transfer times against hand arithmetic (alone, full duplex, shared by the IPUs
 * of a group, remote traffic on the IPU port or the host link); buffer-ready times of the
 * loader pool with and without prefetch against closed forms, and against loader processes
 * on the simulation kernel; the prefetch-depth curve of a bursty host; outfeed back-pressure;
 * the outfeed modes; determinism; the one-line errors of bad configs; and, through a whole
 * system (host/hio), the outfeed's bytes handed to the host's drain. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/hio.h"
#include "host/host.h"
#include "host/strm.h"
#include "tests/testutil.h"

#define GBPS 1000000000ull

static sim_time ceil_div(unsigned __int128 a, uint64_t b)
{
    return (sim_time)((a + b - 1) / b);
}

/* Drain time in ps of `bytes` at `bw` B/s, rounded up, as the model computes it. */
static sim_time drain(uint64_t bytes, uint64_t bw)
{
    return ceil_div((unsigned __int128)bytes * SIM_S, bw);
}

static mach preset(const char *name)
{
    err e;
    mach m;
    if (mach_builtin(&m, name, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    return m;
}

/* A machine with host numbers spelled out here: groups of 4 IPUs behind a 20 GB/s host link,
 * 10 GB/s per IPU port, 1 us latency; remote memory 15 GB/s at the gateway, 2 us. */
static mach mk(uint32_t nipus)
{
    mach m = preset("mk2");
    m.nipus = nipus;
    m.host_link_ipus = 4;
    m.host_link_bytes_per_s = 20 * GBPS;
    m.host_ipu_bytes_per_s = 10 * GBPS;
    m.host_latency_ns = 1000;
    strcpy(m.remote_at, "gateway");
    m.remote_bytes_per_s = 15 * GBPS;
    m.remote_latency_ns = 2000;
    return m;
}

static host *new_host(const mach *m)
{
    err e;
    host *h = host_new(m, &e);
    if (!h)
        fail_msg("host_new: %s", e.msg);
    return h;
}

static strm *new_strm(const host_cfg *c, strm_kind kind, uint32_t id)
{
    err e;
    strm *s = strm_new(c, kind, id, &e);
    if (!s)
        fail_msg("strm_new: %s", e.msg);
    return s;
}

/* A config with fixed times: `loaders`, prep p, S samples, callback cb, depth d. */
static host_cfg cfg(uint32_t loaders, sim_time p, uint32_t samples, sim_time cb, uint32_t d)
{
    host_cfg c = host_cfg_default();
    c.loaders = loaders;
    c.prep_ps = p;
    c.samples_per_buffer = samples;
    c.callback_ps = cb;
    c.depth = d;
    c.bytes_per_buffer = 40 * 784;
    return c;
}

static int dist_eq(const host_dist *a, const host_dist *b)
{
    return a->kind == b->kind && a->spread == b->spread && a->p == b->p && a->k == b->k &&
           a->len == b->len;
}

/* ---- presets ---- */

static void test_presets(void **state)
{
    (void)state;
    mach m2 = preset("mk2"), m1 = preset("mk1");
    /* Mk2: 2 x 100 GbE x 90% for the box, PCIe Gen4 x8 x 85% per IPU, 4 IPUs per box */
    assert_int_equal(m2.host_link_bytes_per_s, 22500000000ull);
    assert_int_equal(m2.host_ipu_bytes_per_s, 13390000000ull);
    assert_int_equal(m2.host_link_ipus, 4);
    assert_string_equal(m2.remote_at, "gateway");
    /* Mk1: PCIe Gen4 x16 x 85% per C2 card of 2 IPUs; remote buffers in host memory */
    assert_int_equal(m1.host_link_bytes_per_s, 26780000000ull);
    assert_int_equal(m1.host_link_ipus, 2);
    assert_string_equal(m1.remote_at, "host");
    /* [D]: 16 GT/s x lanes x 128/130 / 8 x 0.85, within 0.1% */
    double x8 = 16e9 * 8 * 128 / 130 / 8 * 0.85, x16 = 2 * x8;
    assert_true(fabs((double)m2.host_ipu_bytes_per_s - x8) < x8 * 1e-3);
    assert_true(fabs((double)m1.host_link_bytes_per_s - x16) < x16 * 1e-3);

    m2.nipus = 10; /* 3 groups: 4 + 4 + 2 */
    host *h = new_host(&m2);
    assert_int_equal(host_ngroups(h), 3);
    assert_int_equal(host_group(h, 3), 0);
    assert_int_equal(host_group(h, 4), 1);
    assert_int_equal(host_group(h, 9), 2);
    host_free(h);
    err e;
    m2.host_link_ipus = 0;
    assert_null(host_new(&m2, &e));
    assert_string_equal(e.msg, "host_link_ipus: 0 is out of range (1 to 1024 IPUs)");
}

/* ---- the host link ---- */

static void test_link_alone(void **state)
{
    (void)state;
    const uint64_t B = 1000000;
    mach m2 = preset("mk2"), m1 = preset("mk1");
    host *h = new_host(&m2);
    /* B / min(port 13.39, link 22.5 GB/s) + 3 us */
    sim_time want = 7 * SIM_US + 3 * SIM_US + drain(B, 13390000000ull);
    assert_int_equal(host_link_transfer(h, 0, HOST_IN, B, 7 * SIM_US, 0), want);
    assert_int_equal(host_alone_time(h, 0, B, 0), want - 7 * SIM_US);
    /* a later one on the idle link: the same again */
    assert_int_equal(host_link_transfer(h, 0, HOST_IN, B, SIM_MS, 0), SIM_MS + want - 7 * SIM_US);
    /* the receiving tiles' bound caps the rate */
    sim_time t = host_link_transfer(h, 0, HOST_IN, B, 2 * SIM_MS, 1 * GBPS);
    assert_int_equal(t, 2 * SIM_MS + 3 * SIM_US + drain(B, GBPS));
    assert_int_equal(host_alone_time(h, 0, B, GBPS), t - 2 * SIM_MS);
    /* zero bytes: the latency only */
    assert_int_equal(host_link_transfer(h, 0, HOST_OUT, 0, 5 * SIM_MS, 0), 5 * SIM_MS + 3 * SIM_US);
    assert_int_equal(host_stat(h, 0, HOST_LINK_IN_BYTES), 3 * B);
    assert_int_equal(host_stat(h, 0, HOST_LINK_IN_COPIES), 3);
    assert_int_equal(host_stat(h, 0, HOST_LINK_OUT_COPIES), 1);
    assert_int_equal(host_stat(h, 0, HOST_LINK_OUT_PS), 3 * SIM_US);
    assert_int_equal(host_stat(h, 0, HOST_PORT_IN_BUSY_PS),
                     2 * drain(B, 13390000000ull) + drain(B, GBPS));
    assert_int_equal(host_link_busy(h, 0, HOST_IN), host_stat(h, 0, HOST_PORT_IN_BUSY_PS));
    host_free(h);

    h = new_host(&m1); /* B / 26.78 GB/s + 1 us */
    assert_int_equal(host_link_transfer(h, 0, HOST_IN, B, 0, 0), SIM_US + drain(B, 26780000000ull));
    host_free(h);
}

static void test_link_duplex(void **state)
{
    (void)state;
    const uint64_t B = 50000000;
    mach m = mk(4);
    host *h = new_host(&m);
    sim_time alone = SIM_US + drain(B, 10 * GBPS);
    /* full duplex: in and out at once each take the full rate */
    assert_int_equal(host_link_transfer(h, 0, HOST_IN, B, 0, 0), alone);
    assert_int_equal(host_link_transfer(h, 0, HOST_OUT, B, 0, 0), alone);
    /* the same IPU twice in one direction: its port is shared, first come first served */
    assert_int_equal(host_link_transfer(h, 1, HOST_IN, B, 0, 0), alone);
    assert_int_equal(host_link_transfer(h, 1, HOST_IN, B, 0, 0), SIM_US + 2 * drain(B, 10 * GBPS));
    host_free(h);
}

static void test_link_shared(void **state)
{
    (void)state;
    const uint64_t B = 50000000;
    const sim_time d10 = drain(B, 10 * GBPS); /* 5 ms at one port's 10 GB/s */
    mach m = mk(8);
    host *h = new_host(&m);
    /* two IPUs of a group: 10 + 10 fills the 20 GB/s link, neither slows */
    assert_int_equal(host_link_transfer(h, 0, HOST_IN, B, 0, 0), SIM_US + d10);
    assert_int_equal(host_link_transfer(h, 1, HOST_IN, B, 0, 0), SIM_US + d10);
    /* a third waits for capacity: nothing left until the first two end, then 10 GB/s */
    assert_int_equal(host_link_transfer(h, 2, HOST_IN, B, 0, 0), SIM_US + 2 * d10);
    /* an IPU of the next group is not affected */
    assert_int_equal(host_link_transfer(h, 4, HOST_IN, B, 0, 0), SIM_US + d10);
    /* the group moved 3B in 2 x d10: busy the whole time, 1.5 x 10 GB/s on average */
    assert_int_equal(host_link_busy(h, 0, HOST_IN), 2 * d10);
    assert_int_equal(host_link_busy(h, 1, HOST_IN), d10);
    assert_int_equal(host_link_busy(h, 0, HOST_OUT), 0);

    /* with 15 GB/s ports, a second transfer takes what the first left, then more */
    host_free(h);
    m.host_ipu_bytes_per_s = 15 * GBPS;
    h = new_host(&m);
    sim_time d15 = drain(B, 15 * GBPS);
    assert_int_equal(host_link_transfer(h, 0, HOST_IN, B, 0, 0), SIM_US + d15);
    /* IPU 1 from 0: 5 GB/s until IPU 0 ends, then 15 GB/s for the rest */
    unsigned __int128 left = (unsigned __int128)B * SIM_S - (unsigned __int128)5 * GBPS * d15;
    sim_time want1 = d15 + ceil_div(left, 15 * GBPS);
    assert_int_equal(host_link_transfer(h, 1, HOST_IN, B, 0, 0), SIM_US + want1);
    assert_int_equal(host_link_busy(h, 0, HOST_IN), want1); /* 20 GB/s, then 15 */
    /* Mk2: four IPUs of a box at once move 22.5 GB/s in all */
    host_free(h);
    mach m2 = preset("mk2");
    m2.nipus = 4;
    h = new_host(&m2);
    sim_time last = 0;
    for (uint32_t i = 0; i < 4; i++) {
        sim_time t = host_link_transfer(h, i, HOST_IN, B, 0, 0) - 3 * SIM_US;
        last = t > last ? t : last;
    }
    sim_time fluid = drain(4 * B, 22500000000ull);
    assert_true(last >= fluid && last < fluid + fluid / 5); /* the tail runs at one port's rate */
    host_free(h);
}

/* Transfers given in one batch share max-min fairly; between calls, first come first served. */
static void test_batch_fair(void **state)
{
    (void)state;
    const uint64_t B = 10000000;
    mach m2 = preset("mk2");
    m2.nipus = 4;
    host *h = new_host(&m2);
    host_xfer x[4];
    for (uint32_t i = 0; i < 4; i++)
        x[i] = (host_xfer){.ipu = i, .dir = HOST_IN, .bytes = B};
    host_transfer_batch(h, x, 4); /* 22.5 GB/s / 4 = 5.625 GB/s each, all end together */
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(x[i].end, 3 * SIM_US + drain(B, 5625000000ull));
    for (uint32_t i = 0; i < 4; i++) /* remote: 40.96 GB/s / 4 = 10.24 GB/s < the 13.39 port */
        x[i] = (host_xfer){.ipu = i,
                           .dir = i % 2 ? HOST_OUT : HOST_IN,
                           .remote = 1,
                           .bytes = B,
                           .start = 10 * SIM_MS};
    host_transfer_batch(h, x, 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(x[i].end, 10 * SIM_MS + 2 * SIM_US + drain(B, 10240000000ull));
    assert_int_equal(host_stat(h, 1, HOST_REMOTE_OUT_BYTES), B);
    assert_int_equal(host_stat(h, 2, HOST_LINK_IN_COPIES), 1);
    host_free(h);

    /* a capped flow takes its cap, the others split the rest: (2, 9, 9) of a 20 GB/s link */
    mach m = mk(4);
    h = new_host(&m);
    x[0] = (host_xfer){.ipu = 0, .dir = HOST_IN, .bytes = B, .max_bytes_per_s = 2 * GBPS};
    x[1] = (host_xfer){.ipu = 1, .dir = HOST_IN, .bytes = B};
    x[2] = (host_xfer){.ipu = 2, .dir = HOST_IN, .bytes = B};
    host_transfer_batch(h, x, 3);
    sim_time d9 = drain(B, 9 * GBPS);
    assert_int_equal(x[1].end, SIM_US + d9);
    assert_int_equal(x[2].end, SIM_US + d9);
    assert_int_equal(
        x[0].end,
        SIM_US + d9 +
            ceil_div((unsigned __int128)B * SIM_S - (unsigned __int128)2 * GBPS * d9, 2 * GBPS));
    host_free(h);

    /* staggered starts in a 10 GB/s link: IPU 0 alone for d/2, then 5 + 5, then IPU 1 alone */
    m.host_link_bytes_per_s = 10 * GBPS;
    h = new_host(&m);
    const sim_time d = drain(B, 10 * GBPS); /* 1 ms */
    x[0] = (host_xfer){.ipu = 0, .dir = HOST_OUT, .bytes = B};
    x[1] = (host_xfer){.ipu = 1, .dir = HOST_OUT, .bytes = B, .start = d / 2};
    host_transfer_batch(h, x, 2);
    assert_int_equal(x[0].end, SIM_US + 3 * d / 2);
    assert_int_equal(x[1].end, SIM_US + 2 * d);
    /* a later call waits for what the batch booked: IPUs 2 and 3 get nothing until 2d */
    x[0] = (host_xfer){.ipu = 2, .dir = HOST_OUT, .bytes = B};
    x[1] = (host_xfer){.ipu = 3, .dir = HOST_OUT, .bytes = B};
    host_transfer_batch(h, x, 2);
    assert_int_equal(x[0].end, SIM_US + 4 * d);
    assert_int_equal(x[1].end, SIM_US + 4 * d);
    assert_int_equal(host_link_busy(h, 0, HOST_OUT), 4 * d);
    /* an empty batch and a zero-byte transfer */
    host_transfer_batch(h, x, 0);
    x[0] = (host_xfer){.ipu = 0, .dir = HOST_IN, .bytes = 0, .start = 7};
    host_transfer_batch(h, x, 1);
    assert_int_equal(x[0].end, 7 + SIM_US);
    host_free(h);
}

/* Results do not depend on retiring; retiring drops what lies before. */
static void test_retire(void **state)
{
    (void)state;
    mach m = mk(4);
    host *a = new_host(&m), *b = new_host(&m);
    sim_time t = 0;
    for (int k = 0; k < 2000; k++) {
        uint32_t ipu = (uint32_t)k % 4;
        uint64_t bytes = 1000 + (uint64_t)(k * 7919 % 100000);
        sim_time start = t + (sim_time)(k % 3) * 100 * SIM_NS;
        sim_time ea = host_link_transfer(a, ipu, (host_dir)(k % 2), bytes, start, 0);
        sim_time eb = host_link_transfer(b, ipu, (host_dir)(k % 2), bytes, start, 0);
        assert_int_equal(ea, eb);
        if (k % 4 == 3) {
            t += 2 * SIM_US;
            host_retire(b, t);
        }
    }
    assert_int_equal(host_link_busy(a, 0, HOST_IN), host_link_busy(b, 0, HOST_IN));
    host_free(a);
    host_free(b);
}

/* ---- remote buffers ---- */

static void test_remote(void **state)
{
    (void)state;
    const uint64_t B = 30000000;
    mach m = mk(4);
    host *h = new_host(&m);
    /* alone: B / min(port 10, memory 15) + 2 us */
    sim_time d10 = drain(B, 10 * GBPS);
    assert_int_equal(host_remote_transfer(h, 0, HOST_IN, B, 0, 0), 2 * SIM_US + d10);
    assert_int_equal(host_alone_time(h, 1, B, 0), 2 * SIM_US + d10);
    /* a second IPU at once gets the 5 GB/s left of the memory, then 10 */
    unsigned __int128 left = (unsigned __int128)B * SIM_S - (unsigned __int128)5 * GBPS * d10;
    assert_int_equal(host_remote_transfer(h, 1, HOST_OUT, B, 0, 0),
                     2 * SIM_US + d10 + ceil_div(left, 10 * GBPS));
    /* at the gateway, remote copies leave the host link alone ... */
    assert_int_equal(host_link_busy(h, 0, HOST_IN), 0);
    /* ... but share the IPU's port: a stream copy of IPU 0 waits behind its remote read */
    assert_int_equal(host_link_transfer(h, 0, HOST_IN, B, 0, 0), SIM_US + 2 * d10);
    assert_int_equal(host_stat(h, 0, HOST_REMOTE_IN_BYTES), B);
    assert_int_equal(host_stat(h, 1, HOST_REMOTE_OUT_BYTES), B);
    assert_int_equal(host_stat(h, 0, HOST_REMOTE_IN_PS), 2 * SIM_US + d10);
    assert_int_equal(host_remote_busy(h, 0), host_stat(h, 1, HOST_REMOTE_OUT_PS) - 2 * SIM_US);
    host_free(h);

    /* in host memory (Mk1 style) remote copies cross the host link like stream data */
    strcpy(m.remote_at, "host");
    m.host_ipu_bytes_per_s = 20 * GBPS;
    h = new_host(&m);
    sim_time d20 = drain(B, 20 * GBPS), d15 = drain(B, 15 * GBPS);
    assert_int_equal(host_link_transfer(h, 0, HOST_IN, B, 0, 0), SIM_US + d20);
    assert_int_equal(host_remote_transfer(h, 1, HOST_IN, B, 0, 0), 2 * SIM_US + d20 + d15);
    host_stats_reset(h);
    assert_int_equal(host_link_busy(h, 0, HOST_IN), 0);
    assert_int_equal(host_stat(h, 1, HOST_REMOTE_IN_BYTES), 0);
    host_free(h);
}

/* ---- infeed: the loader pool and prefetch ---- */

/* A device that reaches the copy of buffer k at t, copies it over h, then computes for T. */
typedef struct run {
    sim_time begin[64], ready[64], device_at[64];
    sim_time end; /* when the last step's compute ended */
} run;

static void device_loop(strm *s, host *h, int steps, sim_time T, run *r)
{
    sim_time t = 0;
    for (int k = 0; k < steps; k++) {
        strm_copy c = strm_in_copy(s, h, 0, (uint64_t)k, t, 0);
        if (k < 64)
            r->begin[k] = c.begin, r->ready[k] = c.ready, r->device_at[k] = c.device_at;
        assert_int_equal(c.start, c.ready > t ? c.ready : t);
        t = c.end + T;
    }
    r->end = t;
}

static void test_fill_closed_form(void **state)
{
    (void)state;
    const sim_time p = 3 * SIM_US, cb = 7 * SIM_US, mid = 11 * SIM_US;
    const uint32_t S = 10;
    /* loaders = 1, D = 1: ready = request + callback + S p, request = device_at */
    host_cfg c = cfg(1, p, S, cb, 1);
    strm *s = new_strm(&c, STRM_IN, 0);
    sim_time t = 5 * SIM_US;
    for (uint64_t k = 0; k < 20; k++) {
        sim_time r = strm_in_ready(s, k, t);
        assert_int_equal(r, t + cb + S * p);
        assert_int_equal(strm_in_ready(s, k, t), r); /* asked again */
        strm_buf b;
        assert_true(strm_in_buffer(s, k, &b));
        assert_int_equal(b.request, t);
        assert_int_equal(b.fill, t + cb);
        strm_in_release(s, k, r + mid);
        t = r + mid + 100 * SIM_US;
    }
    assert_int_equal(strm_stat(s, STRM_BEGIN_PS), 20 * (cb + S * p));
    assert_int_equal(strm_stat(s, STRM_MID_PS), 20 * mid);
    assert_int_equal(strm_stat(s, STRM_SAMPLES), 20 * S);
    assert_int_equal(strm_stat(s, STRM_PREP_PS), 20 * S * p);
    assert_int_equal(strm_stat(s, STRM_FILL_PS), 20 * S * p);
    assert_int_equal(strm_stat(s, STRM_WAITS), 20);
    strm_free(s);

    /* 4 loaders: ceil(10 / 4) = 3 rounds of p */
    c = cfg(4, p, S, cb, 1);
    s = new_strm(&c, STRM_IN, 0);
    assert_int_equal(strm_in_ready(s, 0, 0), cb + 3 * p);
    strm_free(s);

    /* D = 3: buffers 0, 1, 2 requested at 0 and filled one after another by the pool; buffer 3
     * requested when buffer 0 is released */
    c = cfg(1, p, S, cb, 3);
    s = new_strm(&c, STRM_IN, 0);
    assert_int_equal(strm_in_ready(s, 0, 0), cb + S * p);
    strm_in_release(s, 0, SIM_MS);
    assert_int_equal(strm_in_ready(s, 1, SIM_MS), cb + 2 * S * p);
    strm_in_release(s, 1, SIM_MS + mid);
    assert_int_equal(strm_in_ready(s, 2, SIM_MS + mid), cb + 3 * S * p);
    strm_in_release(s, 2, SIM_MS + 2 * mid);
    assert_int_equal(strm_in_ready(s, 3, SIM_MS + 2 * mid), SIM_MS + cb + S * p);
    strm_buf b;
    assert_true(strm_in_buffer(s, 3, &b));
    assert_int_equal(b.request, SIM_MS);
    assert_false(strm_in_buffer(s, 0, &b)); /* its place in the ring went to buffer 3 */
    assert_false(strm_in_buffer(s, 4, &b));
    strm_free(s);
}

/* A host faster than the device with D >= 2: only the very first copy waits. With D = 1 every
 * copy waits callback + fill. */
static void test_prefetch_steady(void **state)
{
    (void)state;
    mach m = preset("mk2");
    const sim_time p = 2 * SIM_US, cb = 5 * SIM_US, T = 100 * SIM_US;
    const uint32_t S = 40, W = 4; /* fill = 40 x 2 / 4 = 20 us << T */
    for (uint32_t d = 1; d <= 4; d++) {
        host_cfg c = cfg(W, p, S, cb, d);
        host *h = new_host(&m);
        strm *s = new_strm(&c, STRM_IN, 0);
        run r;
        device_loop(s, h, 200, T, &r);
        sim_time first = cb + S * p / W;
        assert_int_equal(r.begin[0], first);
        for (int k = 1; k < 64; k++)
            assert_int_equal(r.begin[k], d == 1 ? first : 0);
        assert_int_equal(strm_stat(s, STRM_WAITS), d == 1 ? 200 : 1);
        assert_int_equal(strm_stat(s, STRM_BEGIN_PS), (d == 1 ? 200 : 1) * first);
        assert_int_equal(strm_stat(s, STRM_BUFFERS), 200);
        assert_int_equal(strm_stat(s, STRM_BYTES), 200 * c.bytes_per_buffer);
        assert_int_equal(host_stat(h, 0, HOST_LINK_IN_BYTES), 200 * c.bytes_per_buffer);
        assert_int_equal(strm_stat(s, STRM_MID_PS),
                         200 * host_alone_time(h, 0, c.bytes_per_buffer, 0));
        strm_free(s);
        host_free(h);
    }
}

/* Mean Begin wait over a long run for depth d. */
static double mean_begin(const host_cfg *base, uint32_t d, int steps, sim_time T, uint32_t id)
{
    mach m = preset("mk2");
    host_cfg c = *base;
    c.depth = d;
    host *h = new_host(&m);
    strm *s = new_strm(&c, STRM_IN, id);
    sim_time t = 0;
    for (int k = 0; k < steps; k++) {
        strm_copy cp = strm_in_copy(s, h, 0, (uint64_t)k, t, 0);
        t = cp.end + T;
        if (k % 32 == 31)
            host_retire(h, cp.end);
    }
    double mean = (double)strm_stat(s, STRM_BEGIN_PS) / steps;
    strm_free(s);
    host_free(h);
    return mean;
}

/* A host fast on average (busy ~70% of a step) with rare bursts of a buffer's worth of
 * 8x-slow samples: depth 1 waits callback + fill on every copy; depth 2 absorbs most bursts,
 * depth 3 nearly all; beyond that the curve is flat (docs/host.md, "Why depth 3"). */
static void test_bursty_depth_curve(void **state)
{
    (void)state;
    host_cfg c = cfg(4, 7 * SIM_US, 40, 5 * SIM_US, 1);
    err e;
    assert_int_equal(host_dist_parse(&c.dist, "bursty:0.01:8:40", &e), ERR_OK);
    const sim_time T = 100 * SIM_US;
    double w[9];
    for (uint32_t d = 1; d <= 8; d++)
        w[d] = mean_begin(&c, d, 5000, T, 0);
    /* depth 1: about callback + mean fill = 5 + 40 x 7 / 4 = 75 us */
    assert_true(w[1] > 60e6 && w[1] < 90e6);
    assert_true(w[1] > 10 * w[2]);
    assert_true(w[2] > 2 * w[3]);
    for (uint32_t d = 4; d <= 8; d++)
        assert_true(w[d] <= w[d - 1]);
    assert_true(w[3] - w[8] < 0.01 * (w[1] - w[3])); /* flat after 3 */
    /* the same host without bursts (exponential times) needs no more than depth 2 */
    assert_int_equal(host_dist_parse(&c.dist, "exp", &e), ERR_OK);
    assert_true(mean_begin(&c, 2, 2000, T, 0) < 0.01 * mean_begin(&c, 1, 2000, T, 0));
}

static void test_determinism(void **state)
{
    (void)state;
    mach m = preset("mk2");
    host_cfg c = cfg(3, 5 * SIM_US, 16, 2 * SIM_US, 2);
    err e;
    assert_int_equal(host_dist_parse(&c.dist, "exp", &e), ERR_OK);
    run r[4];
    for (int i = 0; i < 4; i++) {
        host_cfg ci = c;
        ci.seed = i == 2 ? 2 : 1; /* runs 0, 1: seed 1; run 2: seed 2; run 3: seed 1, id 1 */
        host *h = new_host(&m);
        strm *s = new_strm(&ci, STRM_IN, i == 3 ? 1 : 0);
        memset(&r[i], 0, sizeof r[i]);
        device_loop(s, h, 64, 20 * SIM_US, &r[i]);
        strm_free(s);
        host_free(h);
    }
    assert_memory_equal(&r[0], &r[1], sizeof r[0]);
    assert_memory_not_equal(r[0].ready, r[2].ready, sizeof r[0].ready);
    assert_memory_not_equal(r[0].ready, r[3].ready, sizeof r[0].ready);
}

/* The draws have the means and shapes their names promise. */
static void test_distributions(void **state)
{
    (void)state;
    const sim_time mean = 10 * SIM_US;
    const char *names[] = {"fixed", "uniform:0.5", "exp", "bursty:0.02:10", "bursty:0.01:5:8"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        host_cfg c = cfg(1, mean, 1, 0, 1);
        err e;
        assert_int_equal(host_dist_parse(&c.dist, names[i], &e), ERR_OK);
        char buf[64];
        host_dist back;
        assert_int_equal(host_dist_parse(&back, host_dist_format(&c.dist, buf, sizeof buf), &e),
                         ERR_OK);
        assert_true(dist_eq(&back, &c.dist));
        host_prep g;
        host_prep_init(&g, &c, 0);
        sim_time base = host_dist_base(&c.dist, mean), lo = SIM_FOREVER, hi = 0;
        double sum = 0;
        uint64_t slow = 0;
        const int n = 400000;
        for (int k = 0; k < n; k++) {
            sim_time x = host_prep_next(&g);
            sum += (double)x;
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
            slow += x > base;
        }
        double avg = sum / n;
        if (fabs(avg - (double)mean) > 0.01 * (double)mean)
            fail_msg("%s: mean %.0f ps, expected %llu", names[i], avg, (unsigned long long)mean);
        if (c.dist.kind == HOST_FIXED)
            assert_true(lo == mean && hi == mean);
        if (c.dist.kind == HOST_UNIFORM)
            assert_true(lo >= mean / 2 && hi <= mean * 3 / 2 && lo < mean * 51 / 100);
        if (c.dist.kind == HOST_EXP)
            assert_true(hi > 8 * mean); /* e^-8 x 400000 ~ 130 draws above 8 x the mean */
        if (c.dist.kind == HOST_BURSTY) {
            double pl = c.dist.p * c.dist.len, f = pl / (1 - c.dist.p + pl);
            assert_true(fabs((double)slow / n - f) < 0.05 * f);
            assert_true(lo == base && hi == (sim_time)llround(c.dist.k * (double)base));
        }
    }
}

/* ---- the loader pool against processes on the simulation kernel ---- */

enum { XB = 40, XS = 7, XW = 3 }; /* buffers, samples per buffer, loaders */

typedef struct xmodel {
    host_prep g;
    sim_event *avail;
    int queue[XB * XS], head, tail; /* sample n belongs to buffer n / XS */
    sim_time ready[XB];
} xmodel;

typedef struct xworker {
    xmodel *m;
    int busy, sample;
} xworker;

typedef struct xarrive {
    xmodel *m;
    int buf;
} xarrive;

static void x_arrive(sim *k, void *arg)
{
    xarrive *a = arg;
    (void)k;
    for (int i = 0; i < XS; i++)
        a->m->queue[a->m->tail++] = a->buf * XS + i;
    sim_event_notify_delta(a->m->avail);
}

/* A loader: when idle and a sample is queued, take it and sleep for its preparation time. */
static void x_worker(sim *k, void *arg)
{
    xworker *w = arg;
    xmodel *m = w->m;
    if (w->busy) {
        int b = w->sample / XS;
        m->ready[b] = sim_now(k) > m->ready[b] ? sim_now(k) : m->ready[b];
        w->busy = 0;
    }
    if (m->head < m->tail) {
        w->sample = m->queue[m->head++];
        w->busy = 1;
        sim_next_trigger_time(k, host_prep_next(&m->g));
    }
}

static void test_loaders_vs_kernel(void **state)
{
    (void)state;
    mach mc = preset("mk2");
    host_cfg c = cfg(XW, 4 * SIM_US, XS, 3 * SIM_US, 2);
    err e;
    assert_int_equal(host_dist_parse(&c.dist, "exp", &e), ERR_OK);
    /* the model under test, on a device that sometimes outruns the host */
    host *h = new_host(&mc);
    strm *s = new_strm(&c, STRM_IN, 5);
    strm_buf b[XB];
    sim_time t = 0;
    for (int k = 0; k < XB; k++) {
        strm_copy cp = strm_in_copy(s, h, 0, (uint64_t)k, t, 0);
        assert_true(strm_in_buffer(s, (uint64_t)k, &b[k]));
        t = cp.end + (k % 5) * 2 * SIM_US;
    }
    /* the same fills as kernel processes: arrivals at F_k, XW loader processes */
    sim *k = sim_new();
    xmodel *m = calloc(1, sizeof *m);
    assert_non_null(m);
    host_prep_init(&m->g, &c, ((uint64_t)STRM_IN << 32) | 5); /* the stream's draws */
    m->avail = sim_event_new(k, NULL, "avail");
    xworker w[XW];
    for (int i = 0; i < XW; i++) {
        w[i] = (xworker){.m = m};
        sim_method(k, NULL, NULL, x_worker, &w[i], &m->avail, 1, 0);
    }
    xarrive a[XB];
    for (int j = 0; j < XB; j++) {
        a[j] = (xarrive){m, j};
        m->ready[j] = b[j].fill;
        sim_schedule_at(k, b[j].fill, x_arrive, &a[j]);
    }
    assert_int_equal(sim_run(k, SIM_FOREVER), SIM_IDLE);
    for (int j = 0; j < XB; j++)
        if (m->ready[j] != b[j].ready)
            fail_msg("buffer %d: kernel %llu ps, strm %llu ps", j, (unsigned long long)m->ready[j],
                     (unsigned long long)b[j].ready);
    assert_true(strm_stat(s, STRM_WAITS) > 1); /* the check covered a loaded host */
    free(m);
    sim_free(k);
    strm_free(s);
    host_free(h);
}

/* ---- outfeed ---- */

static void test_outfeed_backpressure(void **state)
{
    (void)state;
    const sim_time mid = 4 * SIM_US, T = 10 * SIM_US;
    for (uint32_t d = 1; d <= 4; d++) {
        host_cfg c = cfg(1, 0, 1, 0, d);
        /* a host slower than the device (25 us > mid + T per buffer), and one so slow that a
         * buffer is not drained before the device has filled the whole ring (100 us) */
        const sim_time drains[] = {25 * SIM_US, 100 * SIM_US};
        for (int v = 0; v < 2; v++) {
            sim_time drain_ps = drains[v];
            c.drain_ps = drain_ps;
            strm *s = new_strm(&c, STRM_OUT, 0);
            sim_time t = 0, begin[40];
            for (uint64_t k = 0; k < 40; k++) {
                sim_time slot = strm_out_slot(s, k, t);
                assert_int_equal(strm_out_slot(s, k, t), slot); /* asked again */
                begin[k] = slot - t;
                sim_time prev = k ? strm_out_drained(s, k - 1) : 0; /* in the ring if D > 1 */
                strm_out_done(s, k, slot + mid);
                if (d > 1) /* drained = max(end + callback, drained of the last) + drain */
                    assert_int_equal(strm_out_drained(s, k),
                                     (prev > slot + mid ? prev : slot + mid) + drain_ps);
                t = slot + mid + T;
            }
            uint64_t first = 0; /* the first copy that waited */
            while (first < 40 && begin[first] == 0)
                first++;
            assert_true(first >= d); /* D free host buffers, then the ring fills */
            if (v == 1)
                assert_int_equal(first, d); /* a slow host: right after D */
            /* steady state: the device follows the host, one buffer per drain_ps; with one
             * buffer a copy cannot start before the drain of the last, so mid + drain_ps */
            assert_int_equal(begin[39], d == 1 ? drain_ps - T : drain_ps - mid - T);
            assert_int_equal(strm_stat(s, STRM_DRAIN_PS), 40 * drain_ps);
            assert_int_equal(strm_stat(s, STRM_MID_PS), 40 * mid);
            assert_int_equal(strm_stat(s, STRM_WAITS), 40 - first);
            strm_free(s);
        }

        /* a host that drains a buffer within the device's compute never blocks it */
        c.drain_ps = T - SIM_NS;
        strm *s = new_strm(&c, STRM_OUT, 0);
        mach m = preset("mk2");
        host *h = new_host(&m);
        sim_time t = 0;
        for (uint64_t k = 0; k < 40; k++) {
            strm_copy cp = strm_out_copy(s, h, 0, k, t, 0);
            assert_int_equal(cp.begin, 0);
            t = cp.end + T;
        }
        assert_int_equal(strm_stat(s, STRM_WAITS), 0);
        assert_int_equal(host_stat(h, 0, HOST_LINK_OUT_BYTES), 40 * c.bytes_per_buffer);
        strm_free(s);
        host_free(h);
    }
}

static void test_outfeed_modes(void **state)
{
    (void)state;
    err e;
    strm_mode mode;
    uint32_t n;
    const uint64_t bytes = 1000;
    struct {
        const char *text;
        strm_mode mode;
        uint32_t n;
        uint64_t copies_of_10;
    } cases[] = {
        {"all", STRM_ALL, 1, 10},        {"final", STRM_FINAL, 1, 1},
        {"sum", STRM_SUM, 1, 1},         {"every:3", STRM_EVERYN, 3, 3},
        {"every:1", STRM_EVERYN, 1, 10}, {"every:11", STRM_EVERYN, 11, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        assert_int_equal(strm_mode_parse(cases[c].text, &mode, &n, &e), ERR_OK);
        assert_int_equal(mode, cases[c].mode);
        assert_int_equal(n, cases[c].n);
        assert_int_equal(strm_outfeed_count(mode, n, 10), cases[c].copies_of_10);
        for (uint64_t iters = 1; iters <= 12; iters++) {
            uint64_t sum = 0, copies = 0;
            for (uint64_t i = 0; i < iters; i++) {
                uint64_t b = strm_outfeed_copies(mode, n, iters, i, bytes);
                assert_true(b == 0 || b == bytes);
                sum += b;
                copies += b > 0;
                if (mode == STRM_FINAL || mode == STRM_SUM)
                    assert_int_equal(b > 0, i == iters - 1);
                if (mode == STRM_EVERYN)
                    assert_int_equal(b > 0, (i + 1) % n == 0);
            }
            assert_int_equal(copies, strm_outfeed_count(mode, n, iters));
            assert_int_equal(sum, copies * bytes);
        }
    }
    assert_string_equal(strm_mode_name(STRM_SUM), "sum");
    assert_int_equal(strm_mode_parse("last", &mode, &n, &e), ERR_INPUT);
    assert_string_equal(e.msg, "outfeed mode 'last': unknown (all, final, sum or every:N)");
    assert_int_equal(strm_mode_parse("every:0", &mode, &n, &e), ERR_INPUT);
    assert_string_equal(e.msg, "outfeed mode 'every:0': N must be a whole number from 1 to "
                               "4294967295");
    assert_int_equal(strm_mode_parse("every:", &mode, &n, &e), ERR_INPUT);
    assert_int_equal(strm_mode_parse("every:99999999999", &mode, &n, &e), ERR_INPUT);
    assert_int_equal(strm_mode_parse("every:2x", &mode, &n, &e), ERR_INPUT);
}

/* ---- bad configs: one line each ---- */

static void expect_cfg_error(host_cfg c, const char *msg)
{
    err e;
    err_clear(&e);
    assert_int_equal(host_cfg_check(&c, &e), ERR_INPUT);
    assert_string_equal(e.msg, msg);
    assert_null(strchr(e.msg, '\n'));
    assert_null(strm_new(&c, STRM_IN, 0, &e));
    assert_string_equal(e.msg, msg);
}

static void expect_dist_error(const char *text, const char *msg)
{
    err e;
    host_dist d = {.kind = HOST_EXP}, before = d;
    assert_int_equal(host_dist_parse(&d, text, &e), ERR_INPUT);
    assert_string_equal(e.msg, msg);
    assert_true(dist_eq(&d, &before));
}

static void test_bad_config(void **state)
{
    (void)state;
    host_cfg ok = host_cfg_default(), c;
    err e;
    assert_int_equal(host_cfg_check(&ok, &e), ERR_OK);
    assert_int_equal(ok.depth, 1);
    c = ok, c.depth = 0;
    expect_cfg_error(c, "host: depth 0 is out of range (1 to 255)");
    c = ok, c.depth = 256;
    expect_cfg_error(c, "host: depth 256 is out of range (1 to 255)");
    c = ok, c.loaders = 0;
    expect_cfg_error(c, "host: loaders 0 is out of range (1 to 4096)");
    c = ok, c.samples_per_buffer = 0;
    expect_cfg_error(c, "host: samples_per_buffer 0 is out of range (1 to 4294967295)");
    c = ok, c.callback_ps = 2000 * SIM_S;
    expect_cfg_error(c, "host: callback_ps 2000000000000000 is out of range (0 to "
                        "1000000000000000 ps)");
    c = ok, c.dist = (host_dist){.kind = HOST_UNIFORM, .spread = 1.5};
    expect_cfg_error(c, "host dist 'uniform:1.5': SPREAD must be between 0 and 1");
    c = ok, c.dist = (host_dist){.kind = HOST_BURSTY, .p = 1, .k = 2, .len = 1};
    expect_cfg_error(c, "host dist 'bursty:1:2:1': P must be at least 0 and below 1");

    expect_dist_error("gauss", "host dist 'gauss': unknown distribution (fixed, uniform:SPREAD, "
                               "exp or bursty:P:K[:LEN])");
    expect_dist_error("uniform", "host dist 'uniform': wrong number of parameters (fixed, "
                                 "uniform:SPREAD, exp or bursty:P:K[:LEN])");
    expect_dist_error("exp:3", "host dist 'exp:3': wrong number of parameters (fixed, "
                               "uniform:SPREAD, exp or bursty:P:K[:LEN])");
    expect_dist_error("bursty:0.1:2:3:4", "host dist 'bursty:0.1:2:3:4': wrong number of "
                                          "parameters (fixed, uniform:SPREAD, exp or "
                                          "bursty:P:K[:LEN])");
    expect_dist_error("uniform:abc", "host dist 'uniform:abc': 'abc' is not a number");
    expect_dist_error("uniform:nan", "host dist 'uniform:nan': 'nan' is not a number");
    expect_dist_error("uniform:", "host dist 'uniform:': '' is not a number");
    expect_dist_error("bursty:0.5:0.5", "host dist 'bursty:0.5:0.5': K must be between 1 and "
                                        "1000");
    expect_dist_error("bursty:-0.1:2", "host dist 'bursty:-0.1:2': P must be at least 0 and "
                                       "below 1");
    expect_dist_error("bursty:0.1:2:0", "host dist 'bursty:0.1:2:0': LEN must be a whole number "
                                        "from 1 to 1000000000");
    expect_dist_error("bursty:0.1:2:2.5", "host dist 'bursty:0.1:2:2.5': LEN must be a whole "
                                          "number from 1 to 1000000000");
}

/* ---- the statistics tables ---- */

static void test_stat_tables(void **state)
{
    (void)state;
    const host_stat_info *ht = host_stat_table();
    for (int i = 0; i < HOST_NSTAT; i++) {
        assert_true(ht[i].name && ht[i].unit && ht[i].meaning && *ht[i].meaning);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(ht[i].name, ht[j].name);
    }
    const strm_stat_info *st = strm_stat_table();
    for (int i = 0; i < STRM_NSTAT; i++) {
        assert_true(st[i].name && st[i].unit && st[i].meaning && *st[i].meaning);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(st[i].name, st[j].name);
    }
    host_cfg c = cfg(1, SIM_US, 1, 0, 2);
    strm *s = new_strm(&c, STRM_IN, 0);
    strm_add_end(s, 5);
    strm_add_end(s, 7);
    assert_int_equal(strm_stat(s, STRM_END_PS), 12);
    assert_int_equal(strm_kind_of(s), STRM_IN);
    assert_int_equal(strm_cfg(s)->depth, 2);
    strm_free(s);
}

/* ---- the outfeed's bytes to the host (host/hio, through a system) ---- */

/* 4 tiles; at each of two `internal_host` syncs tiles 0, 2 and 3 send (tile + 2) words of
 * their buffer b (b = 0, 1) to the outfeed and tile 1 sends nothing; the first sync also
 * carries an infeed of 8 bytes a tile (ahead of the outfeed: hio's order). Each tile notes
 * $ccount just before each sync (the sync then issues one cycle later and the tile arrives 6
 * after that: docs/timing.md) and just after (at or after the release). */
enum { OF_TILES = 4, OF_IN = 0x800, OF_OUT = 0x1000, OF_TIMES = 0x1200, OF_MAXD = 8 };

static const char of_prog[] = "        .text\n"
                              "main:\n"
                              "        get     r1, $tile\n"
                              "        addi    r2, r1, 2\n"
                              "        shli    r2, r2, 2\n"
                              "        li      r3, 1\n"
                              "        li      r4, 0\n"
                              "        li      r5, 8\n"
                              "        li      r6, 0x800\n"
                              "        hin     r6, r5, r4\n"
                              "        cmpeqi  r7, r1, 1\n"
                              "        li      r6, 0x1000\n"
                              "        brnz    r7, main.quiet0\n"
                              "        hout    r6, r2, r3\n"
                              "main.quiet0:\n"
                              "        get     r8, $ccount\n"
                              "        sync    internal_host\n"
                              "        get     r9, $ccount\n"
                              "        li      r6, 0x1100\n"
                              "        brnz    r7, main.quiet1\n"
                              "        hout    r6, r2, r3\n"
                              "main.quiet1:\n"
                              "        get     r10, $ccount\n"
                              "        sync    internal_host\n"
                              "        get     r11, $ccount\n"
                              "        li      r6, 0x1200\n"
                              "        st32    r8, [r6+0]\n"
                              "        st32    r9, [r6+4]\n"
                              "        st32    r10, [r6+8]\n"
                              "        st32    r11, [r6+12]\n"
                              "        halt\n";

/* Word j of tile t's outfeed buffer b. */
static uint32_t of_word(uint32_t b, uint32_t t, uint32_t j)
{
    return 0xa0000000u | b << 16 | t << 8 | j;
}

typedef struct of_drained {
    uint32_t ipu, bytes;
    uint64_t k, offset, cycle;
    uint8_t data[64];
} of_drained;

typedef struct of_log {
    of_drained d[OF_MAXD];
    int n;
} of_log;

static void of_drain(void *ctx, uint32_t ipu, uint64_t k, uint64_t offset, const uint8_t *src,
                     uint32_t bytes, uint64_t cycle)
{
    of_log *l = ctx;
    assert_true(l->n < OF_MAXD && bytes <= sizeof l->d[0].data);
    of_drained *d = &l->d[l->n++];
    *d = (of_drained){.ipu = ipu, .bytes = bytes, .k = k, .offset = offset, .cycle = cycle};
    memcpy(d->data, src, bytes);
}

/* Run the program with drain `fn` (or none); times[t][0..3]: tile t's $ccount before and
 * after sync 1, before and after sync 2. */
static void of_run(hio_drain_fn fn, of_log *l, uint32_t times[OF_TILES][4], mach *m)
{
    err e;
    err_clear(&e);
    hio_cfg hc = {.in = host_cfg_default(), .out = host_cfg_default()};
    hc.in.bytes_per_buffer = 8 * OF_TILES;
    hc.out.bytes_per_buffer = 4 * (2 + 4 + 5); /* tiles 0, 2, 3 */
    hc.drain = fn;
    hc.drain_ctx = l;
    sys_cfg cfg = {.threads = 1, .host = &hc};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.nipus = 1;
    cfg.m.tiles_per_ipu = OF_TILES;
    *m = cfg.m;
    isa_prog prog;
    tu_assemble("outfeed", of_prog, &prog);
    sys *s = sys_new(&cfg, &e);
    if (!s || eng_load(sys_engine(s), &prog, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    for (uint32_t t = 0; t < OF_TILES; t++) {
        uint8_t *mem = eng_tile_mem(sys_engine(s), 0, t);
        for (uint32_t b = 0; b < 2; b++)
            for (uint32_t j = 0; j < t + 2; j++) {
                const uint32_t w = of_word(b, t, j);
                memcpy(mem + OF_OUT + 0x100 * b + 4 * j, &w, 4);
            }
    }
    if (eng_run(sys_engine(s), &e) != ERR_OK)
        fail_msg("%s", e.msg);
    for (uint32_t t = 0; t < OF_TILES; t++)
        memcpy(times[t], eng_tile_mem(sys_engine(s), 0, t) + OF_TIMES, 16);
    sys_free(s);
    isa_prog_free(&prog);
}

/* Whole tile cycles in `ps` at the machine's clock, rounded down. */
static uint64_t of_cycles(const mach *m, sim_time ps)
{
    return (uint64_t)((unsigned __int128)ps * m->clock_hz / SIM_S);
}

/* The drain gets buffer k = 0, 1 as tiles 0, 2, 3's words at offsets 0, 8, 24 (tile 1's
 * missing copy takes no room), each buffer's pieces with one cycle, non-decreasing, at most
 * the release (every tile's $ccount after the sync) and at least the end of the copy as
 * docs/host.md times it (default host: depth 1, callback 5 us, one sample of 10 us, drain 0;
 * whole cycles rounded down, the transfers' few cycles left out):
 *   k = 0: the sync's arrival A0 (the latest tile's), the infeed's Begin (callback, then the
 *          sample's preparation), Mid (the link latency), End (its callback), then the
 *          outfeed's Mid (the latency): A0 + 2 callback + prep + 2 latency;
 *   k = 1: a ring of one buffer, so the copy starts at max(A1, drained_0), drained_0 = end_0
 *          + callback (end_0 > cycle_0 - 1), and ends a latency later.
 * Without a drain the run is the same, cycle for cycle. */
static void test_outfeed_drain(void **state)
{
    (void)state;
    of_log l = {.n = 0};
    uint32_t times[OF_TILES][4], times0[OF_TILES][4];
    mach m;
    of_run(of_drain, &l, times, &m);
    const host_cfg hc = host_cfg_default();
    const uint64_t lat = of_cycles(&m, (sim_time)m.host_latency_ns * 1000);
    const uint64_t cb = of_cycles(&m, hc.callback_ps), prep = of_cycles(&m, hc.prep_ps);
    assert_int_equal(l.n, 6);
    const uint32_t senders[3] = {0, 2, 3}, offsets[3] = {0, 8, 24};
    for (int i = 0; i < 6; i++) {
        const of_drained *d = &l.d[i];
        const uint32_t b = (uint32_t)i / 3, t = senders[i % 3];
        assert_int_equal(d->ipu, 0);
        assert_int_equal(d->k, b);
        assert_int_equal(d->offset, offsets[i % 3]);
        assert_int_equal(d->bytes, 4 * (t + 2));
        for (uint32_t j = 0; j < t + 2; j++) {
            uint32_t w;
            memcpy(&w, d->data + 4 * j, 4);
            assert_int_equal(w, of_word(b, t, j));
        }
        if (i > 0)
            assert_true(d->cycle >= l.d[i - 1].cycle);
        if (i % 3)
            assert_int_equal(d->cycle, l.d[i - 1].cycle);
        uint64_t arrival = 0;
        for (uint32_t x = 0; x < OF_TILES; x++) {
            arrival = times[x][2 * b] + 7 > arrival ? times[x][2 * b] + 7 : arrival;
            assert_true(d->cycle <= times[x][2 * b + 1]);
        }
        uint64_t start = arrival + (b == 0 ? 2 * cb + prep + lat : 0);
        if (b == 1 && l.d[0].cycle - 1 + cb > start)
            start = l.d[0].cycle - 1 + cb;
        assert_true(d->cycle >= start + lat);
    }
    of_run(NULL, NULL, times0, &m);
    assert_memory_equal(times0, times, sizeof times);
}

/* A sync group's host copy under the other tiles' wait (I/O tiles, docs/host.md "Time
 * split"): tile 1 joins group 1 and takes 8 infeed bytes at its own group_host sync, tile 0
 * goes straight to the whole-IPU sync. Supervisor cycles (docs/timing.md: ALU, get, put and
 * hin 1, branches 6, a sync at c arrives at c + 6):
 *   tile 0: get 0, brz 1 (taken), sync internal 7: arrives 13;
 *   tile 1: get 0, brz 1, li 7, put 8, li 9..11, hin 12, sync group_host 13: arrives 19; the
 *           group's copy (Begin B, Mid M, End E: the engine's io counters) and the zone's
 *           latency, sync_internal + sync_host = 90 + 1000, release it at 19 + B + M + E +
 *           1090; its sync internal there arrives 6 later;
 *   the IPU's sync releases 90 later; halt at that release finishes a cycle later.
 * Tile 0 waited from 13 for all of the copy, so the split charges it whole: Begin B, Mid M,
 * and End E + 1090 (the group's release is part of what it waited for); OnTileExecute the
 * 13 before, the 12 after (19 - 13 + 6) and the halt's 1; Sync 90. */
static void test_group_copy_split(void **state)
{
    (void)state;
    static const char src[] = "main:   get     r1, $tile\n"
                              "        brz     r1, main.wait\n"
                              "        li      r2, 1\n"
                              "        put     $group, r2\n"
                              "        li      r3, 0x800\n"
                              "        li      r4, 8\n"
                              "        li      r5, 0\n"
                              "        hin     r3, r4, r5\n"
                              "        sync    group_host\n"
                              "main.wait:\n"
                              "        sync    internal\n"
                              "        halt\n";
    err e;
    err_clear(&e);
    hio_cfg hc = {.in = host_cfg_default(), .out = host_cfg_default()};
    hc.in.bytes_per_buffer = 8;
    sys_cfg cfg = {.threads = 1, .host = &hc};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.nipus = 1;
    cfg.m.tiles_per_ipu = 2;
    assert_int_equal(cfg.m.sync_internal + cfg.m.sync_host, 1090);
    isa_prog prog;
    tu_assemble("group_copy", src, &prog);
    sys *s = sys_new(&cfg, &e);
    if (!s || eng_load(sys_engine(s), &prog, &e) != ERR_OK || eng_run(sys_engine(s), &e) != ERR_OK)
        fail_msg("%s", e.msg);
    eng_stats st;
    eng_ipu_stats is;
    eng_get_stats(sys_engine(s), &st);
    eng_get_ipu_stats(sys_engine(s), 0, &is);
    const uint64_t B = is.io[0], M = is.io[1], E = is.io[2];
    assert_true(B > 0 && M > 0 && E > 0); /* depth 1: the callback and the fill waited for */
    assert_int_equal(st.cycles, 19 + B + M + E + 1090 + 6 + 90 + 1);
    assert_int_equal(is.cat[ENG_CAT_BEGIN], B);
    assert_int_equal(is.cat[ENG_CAT_MID], M);
    assert_int_equal(is.cat[ENG_CAT_END], E + 1090);
    assert_int_equal(is.cat[ENG_CAT_COMPUTE], 13 + 12 + 1);
    assert_int_equal(is.cat[ENG_CAT_SYNC], 90);
    sys_free(s);
    isa_prog_free(&prog);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_link_alone),
        cmocka_unit_test(test_link_duplex),
        cmocka_unit_test(test_link_shared),
        cmocka_unit_test(test_batch_fair),
        cmocka_unit_test(test_retire),
        cmocka_unit_test(test_remote),
        cmocka_unit_test(test_fill_closed_form),
        cmocka_unit_test(test_prefetch_steady),
        cmocka_unit_test(test_bursty_depth_curve),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_distributions),
        cmocka_unit_test(test_loaders_vs_kernel),
        cmocka_unit_test(test_outfeed_backpressure),
        cmocka_unit_test(test_outfeed_modes),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_stat_tables),
        cmocka_unit_test(test_outfeed_drain),
        cmocka_unit_test(test_group_copy_split),
    };
    return cmocka_run_group_tests_name("host", tests, NULL, NULL);
}
