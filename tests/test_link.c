/* Tests of IPU-Links and collectives (fabric/link, fabric/coll): wiring and link counts of the
 * m2000 and ladder topologies, shortest deterministic routes, transfer times against hand
 * arithmetic (one link, a shared link, max-min sharing behind a bottleneck, all links of an
 * IPU), the analytic model (no kernel, any time origin), the numerics of ring all-reduce /
 * reduce-scatter / all-gather, their times against the alpha-beta model, and determinism. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "fabric/coll.h"
#include "fabric/link.h"

#define GBPS 1000000000ull

/* A machine with the link numbers spelled out here, so the hand arithmetic below does not
 * depend on the presets. Mk2-like: 10 links of 32 GB/s, 100 ns per hop. */
static mach mk(const char *topology, uint32_t nipus)
{
    mach m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "test");
    strcpy(m.topology, topology);
    m.nipus = nipus;
    m.ipus_per_box = strcmp(topology, "ladder") == 0 ? 2 : 4;
    m.links_per_ipu = 10;
    m.link_bytes_per_s = 32 * GBPS;
    m.link_latency_ns = 100;
    m.gw_bytes_per_s = 12500000000ull;
    m.gw_latency_ns = 1000;
    return m;
}

static link_net *net_of(const mach *m)
{
    err e;
    err_clear(&e);
    link_net *net = link_net_new(m, &e);
    if (!net)
        fail_msg("link_net_new: %s", e.msg);
    return net;
}

static uint64_t ceil_div(unsigned __int128 a, uint64_t b)
{
    return (uint64_t)((a + b - 1) / b);
}

/* Drain time in ps of `bytes` at `bw` B/s, rounded up. */
static sim_time drain(uint64_t bytes, uint64_t bw)
{
    return ceil_div((unsigned __int128)bytes * SIM_S, bw);
}

static void assert_near(sim_time got, sim_time want, sim_time tol)
{
    sim_time d = got > want ? got - want : want - got;
    if (d > tol)
        fail_msg("time %llu ps, expected %llu +- %llu", (unsigned long long)got,
                 (unsigned long long)want, (unsigned long long)tol);
}

/* ---- Topology ---------------------------------------------------------------------------- */

/* Sum over IPUs of physical links and directed link count, and per-IPU degree/links. */
static void check_uniform(const link_net *net, uint32_t degree, uint32_t phys, uint64_t bw)
{
    for (uint32_t i = 0; i < link_nipus(net); i++) {
        assert_int_equal(link_degree(net, i), degree);
        assert_int_equal(link_phys(net, i), phys);
        assert_int_equal(link_ipu_bandwidth(net, i), bw);
    }
}

static void test_m2000_counts(void **state)
{
    (void)state;
    static const struct {
        uint32_t n, degree, phys, links;
    } cases[] = {
        {4, 3, 6, 12},    /* one box: 3 peers x 2 links; 4 links per IPU idle */
        {8, 4, 8, 32},    /* 2x1 torus: + counterpart in the other box over 2 links */
        {16, 5, 10, 80},  /* 2x2: + x and y counterparts, 2 links each */
        {64, 7, 10, 448}, /* 4x4: + 4 counterparts, 1 link each */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mach m = mk("m2000", cases[c].n);
        link_net *net = net_of(&m);
        assert_int_equal(link_nipus(net), cases[c].n);
        assert_int_equal(link_nnodes(net), cases[c].n);
        assert_int_equal(link_count(net), cases[c].links);
        check_uniform(net, cases[c].degree, cases[c].phys, cases[c].phys * 32 * GBPS);
        uint32_t total = 0;
        for (uint32_t l = 0; l < link_count(net); l++) {
            const link_info *li = link_get(net, l);
            assert_int_equal(li->kind, LINK_IPU);
            assert_int_equal(li->latency, 100 * SIM_NS);
            assert_int_equal(li->bytes_per_s, li->nphys * 32 * GBPS);
            /* in-box connections are 2 links */
            if (li->src / 4 == li->dst / 4)
                assert_int_equal(li->nphys, 2);
            total += li->nphys;
            /* the reverse direction exists with the same links */
            uint32_t back = link_between(net, li->dst, li->src);
            assert_int_not_equal(back, UINT32_MAX);
            assert_int_equal(link_get(net, back)->nphys, li->nphys);
        }
        assert_int_equal(total, cases[c].n * cases[c].phys);
        link_net_free(net);
    }
    /* 64 IPUs: IPU 0 of box (0,0) reaches IPU 0 of boxes (1,0), (3,0), (0,1), (0,3) */
    mach m = mk("m2000", 64);
    link_net *net = net_of(&m);
    const uint32_t nb[] = {1, 2, 3, 4, 12, 16, 48};
    for (size_t i = 0; i < 7; i++)
        assert_int_not_equal(link_between(net, 0, nb[i]), UINT32_MAX);
    assert_int_equal(link_between(net, 0, 5), UINT32_MAX);
    link_net_free(net);
}

static void test_m2000_partial_and_pods(void **state)
{
    (void)state;
    mach m = mk("m2000", 1);
    link_net *net = net_of(&m);
    assert_int_equal(link_count(net), 0);
    link_net_free(net);
    m = mk("m2000", 2);
    net = net_of(&m);
    assert_int_equal(link_count(net), 2);
    check_uniform(net, 1, 2, 64 * GBPS);
    link_net_free(net);
    /* Two POD64s: 32 gateways after the 128 IPUs, each wired to its 4 IPUs and over a double
     * GW-Link (east and west reach the same POD) to its twin. */
    m = mk("m2000", 128);
    net = net_of(&m);
    assert_int_equal(link_nnodes(net), 160);
    assert_int_equal(link_degree(net, 0), 8);
    assert_int_equal(link_ipu_bandwidth(net, 0), 320 * GBPS);
    for (uint32_t g = 128; g < 160; g++) {
        assert_int_equal(link_degree(net, g), 5);
        assert_int_equal(link_phys(net, g), 6);
    }
    uint32_t gw = link_between(net, 128, 144);
    assert_int_not_equal(gw, UINT32_MAX);
    assert_int_equal(link_get(net, gw)->kind, LINK_GW);
    assert_int_equal(link_get(net, gw)->bytes_per_s, 25 * GBPS);
    /* IPU 0 (POD 0, box 0) to IPU 64 (POD 1, box 0): IPU -> gateway -> gateway -> IPU */
    uint32_t r[8];
    assert_int_equal(link_route(net, 0, 64, r, 8), 3);
    assert_int_equal(link_get(net, r[1])->kind, LINK_GW);
    assert_int_equal(link_route_latency(net, 0, 64), 1000 * SIM_NS);
    link_net_free(net);
}

static void test_m2000_errors(void **state)
{
    (void)state;
    const uint32_t bad[] = {0, 3, 6, 12, 96, 2048};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mach m = mk("m2000", bad[i]);
        err e;
        err_clear(&e);
        assert_null(link_net_new(&m, &e));
        assert_int_equal(e.status, ERR_INPUT);
        assert_non_null(strstr(e.msg, "nipus"));
    }
    mach m = mk("m2000", 16);
    m.links_per_ipu = 6;
    err e;
    err_clear(&e);
    assert_null(link_net_new(&m, &e));
    assert_non_null(strstr(e.msg, "links_per_ipu"));
    m = mk("torus", 16);
    assert_null(link_net_new(&m, &e));
    assert_non_null(strstr(e.msg, "unknown topology"));
    m = mk("ladder", 5);
    assert_null(link_net_new(&m, &e));
    assert_non_null(strstr(e.msg, "even"));
}

static void test_ladder_counts(void **state)
{
    (void)state;
    mach m = mk("ladder", 2);
    link_net *net = net_of(&m);
    assert_int_equal(link_count(net), 2);
    check_uniform(net, 1, 4, 4 * 32 * GBPS);
    link_net_free(net);

    m = mk("ladder", 4); /* 2 rungs, 2 rails */
    net = net_of(&m);
    assert_int_equal(link_count(net), 8);
    check_uniform(net, 2, 7, 4 * 32 * GBPS + 3 * 12500000000ull);
    link_net_free(net);

    m = mk("ladder", 8); /* 4 rungs, 6 rails; the end cards have one rail each */
    net = net_of(&m);
    assert_int_equal(link_count(net), 20);
    for (uint32_t i = 0; i < 8; i++) {
        int end = i < 2 || i >= 6;
        assert_int_equal(link_degree(net, i), end ? 2 : 3);
        assert_int_equal(link_phys(net, i), end ? 7 : 10);
    }
    const link_info *rung = link_get(net, link_between(net, 2, 3));
    const link_info *rail = link_get(net, link_between(net, 2, 4));
    assert_int_equal(rung->nphys, 4);
    assert_int_equal(rung->latency, 100 * SIM_NS);
    assert_int_equal(rail->nphys, 3);
    assert_int_equal(rail->latency, 1000 * SIM_NS);        /* rails are between cards: gw_* */
    assert_int_equal(link_between(net, 0, 6), UINT32_MAX); /* no wrap-around */
    uint32_t ring[8], want[8] = {0, 2, 4, 6, 7, 5, 3, 1};
    link_ring(net, ring);
    assert_memory_equal(ring, want, sizeof want);
    link_net_free(net);
}

/* ---- Routing ----------------------------------------------------------------------------- */

/* Every route is a chain of links from src to dst whose length is the BFS distance (checked
 * against Floyd-Warshall over the adjacency). */
static void check_routes(const link_net *net)
{
    uint32_t V = link_nnodes(net);
    uint32_t *d = malloc((size_t)V * V * sizeof *d);
    for (uint32_t a = 0; a < V; a++)
        for (uint32_t b = 0; b < V; b++)
            d[a * V + b] = a == b ? 0 : link_between(net, a, b) != UINT32_MAX ? 1 : 1000000;
    for (uint32_t c = 0; c < V; c++)
        for (uint32_t a = 0; a < V; a++)
            for (uint32_t b = 0; b < V; b++)
                if (d[a * V + c] + d[c * V + b] < d[a * V + b])
                    d[a * V + b] = d[a * V + c] + d[c * V + b];
    uint32_t r[64];
    for (uint32_t a = 0; a < link_nipus(net); a++)
        for (uint32_t b = 0; b < link_nipus(net); b++) {
            size_t h = link_route(net, a, b, r, 64);
            assert_int_equal(h, d[a * V + b]);
            uint32_t at = a;
            for (size_t i = 0; i < h; i++) {
                assert_int_equal(link_get(net, r[i])->src, at);
                at = link_get(net, r[i])->dst;
            }
            assert_int_equal(at, b);
        }
    free(d);
}

static void test_routes(void **state)
{
    (void)state;
    const uint32_t sizes[] = {4, 8, 16, 64};
    for (size_t i = 0; i < 4; i++) {
        mach m = mk("m2000", sizes[i]);
        link_net *net = net_of(&m);
        check_routes(net);
        link_net_free(net);
    }
    mach m = mk("ladder", 8);
    link_net *net = net_of(&m);
    check_routes(net);
    link_net_free(net);

    /* Tie-break: 0 -> 5 in two boxes can go through 1 or 4; (0 + 5) mod 2 picks the second,
     * 4; 0 -> 6 (through 2 or 4) picks the first, 2. */
    m = mk("m2000", 8);
    net = net_of(&m);
    link_net *again = net_of(&m);
    uint32_t r[4], r2[4];
    assert_int_equal(link_route(net, 0, 5, r, 4), 2);
    assert_int_equal(r[0], link_between(net, 0, 4));
    assert_int_equal(r[1], link_between(net, 4, 5));
    assert_int_equal(link_route(net, 0, 6, r, 4), 2);
    assert_int_equal(r[0], link_between(net, 0, 2));
    assert_int_equal(r[1], link_between(net, 2, 6));
    assert_int_equal(link_route(net, 0, 0, r, 4), 0);
    for (uint32_t a = 0; a < 8; a++)
        for (uint32_t b = 0; b < 8; b++) {
            size_t h = link_route(net, a, b, r, 4);
            assert_int_equal(link_route(again, a, b, r2, 4), h);
            assert_memory_equal(r, r2, h * sizeof *r);
        }
    /* the ring of two boxes: one hop per step, closing back to 0 */
    uint32_t ring[8], want[8] = {0, 1, 2, 3, 7, 6, 5, 4};
    link_ring(net, ring);
    assert_memory_equal(ring, want, sizeof want);
    link_net_free(again);
    link_net_free(net);
    /* the 4x4 torus ring: every step is one hop */
    m = mk("m2000", 64);
    net = net_of(&m);
    uint32_t ring64[64];
    link_ring(net, ring64);
    for (uint32_t p = 0; p < 64; p++)
        assert_int_not_equal(link_between(net, ring64[p], ring64[(p + 1) % 64]), UINT32_MAX);
    link_net_free(net);
}

/* ---- Transfers ---------------------------------------------------------------------------- */

/* Runs the transfers; returns the last arrival. */
static sim_time run1(link_net *net, link_xfer *x, size_t n)
{
    err e;
    err_clear(&e);
    if (link_transfers(net, x, n, &e) != ERR_OK)
        fail_msg("link_transfers: %s", e.msg);
    sim_time last = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i].end > last)
            last = x[i].end;
    return last;
}

static void test_single_transfer(void **state)
{
    (void)state;
    mach m = mk("m2000", 4);
    link_net *net = net_of(&m);
    const uint64_t bw = 64 * GBPS; /* 2 links to a box peer */
    const uint64_t sizes[] = {1, 1000, 1000003, 1 << 20, 123456789};
    for (size_t i = 0; i < 5; i++) {
        link_xfer x = {0, 1, sizes[i], 5 * SIM_NS, 0};
        sim_time now = run1(net, &x, 1);
        assert_near(x.end, 5 * SIM_NS + drain(sizes[i], bw) + 100 * SIM_NS, 1);
        assert_int_equal(now, x.end);
    }
    /* 1 MiB: exactly 16.384 us + 100 ns */
    link_stats_reset(net);
    link_xfer x = {0, 1, 1 << 20, 0, 0};
    run1(net, &x, 1);
    assert_int_equal(x.end, 16384000 + 100000);
    uint32_t l = link_between(net, 0, 1);
    assert_int_equal(link_bytes(net, l), 1 << 20);
    assert_int_equal(link_busy(net, l), 16384000);
    assert_int_equal(link_bytes(net, link_between(net, 1, 0)), 0);
    assert_int_equal(link_ipu_sent(net, 0), 1 << 20);
    assert_int_equal(link_ipu_received(net, 1), 1 << 20);
    assert_int_equal(link_ipu_received(net, 0), 0);
    /* zero bytes: start + latency; to itself: start, no link */
    link_xfer z[2] = {{0, 1, 0, 7, 0}, {2, 2, 4096, 9, 0}};
    run1(net, z, 2);
    assert_int_equal(z[0].end, 7 + 100 * SIM_NS);
    assert_int_equal(z[1].end, 9);
    link_net_free(net);
}

static void test_shared_link(void **state)
{
    (void)state;
    mach m = mk("m2000", 4);
    link_net *net = net_of(&m);
    const uint64_t bw = 64 * GBPS, B = 1 << 20;
    const sim_time T = drain(B, bw), lat = 100 * SIM_NS;
    link_xfer x[2] = {{0, 1, B, 0, 0}, {0, 1, B, 0, 0}};
    run1(net, x, 2);
    assert_near(x[0].end, drain(2 * B, bw) + lat, 1);
    assert_near(x[1].end, drain(2 * B, bw) + lat, 1);
    /* the second joins halfway: the first drains half alone and half at half rate (1.5 T),
     * the second half at half rate and half alone (from T/2 to 2 T) */
    link_xfer y[2] = {{0, 1, B, 0, 0}, {0, 1, B, T / 2, 0}};
    run1(net, y, 2);
    assert_near(y[0].end, 3 * T / 2 + lat, 1);
    assert_near(y[1].end, 2 * T + lat, 1);
    /* opposite directions do not share */
    link_xfer z[2] = {{0, 1, B, 0, 0}, {1, 0, B, 0, 0}};
    run1(net, z, 2);
    assert_near(z[0].end, T + lat, 1);
    assert_near(z[1].end, T + lat, 1);
    link_net_free(net);
}

static void test_bottleneck(void **state)
{
    (void)state;
    /* Ladder of 2 cards: rung 4 x 10 GB/s = 40 GB/s, rails 3 x 1 GB/s = 3 GB/s. Flow A goes
     * 0 -> 2 -> 3 (rail then rung; (0 + 3) mod 2 picks the second of 1 and 2): the rail holds
     * it to 3 GB/s. Flow B uses the rung 2 -> 3 alone: max-min gives it the 37 GB/s that A
     * leaves, not an equal half. */
    mach m = mk("ladder", 4);
    m.link_bytes_per_s = 10 * GBPS;
    m.gw_bytes_per_s = 1 * GBPS;
    m.gw_latency_ns = 300;
    link_net *net = net_of(&m);
    uint32_t r[4];
    assert_int_equal(link_route(net, 0, 3, r, 4), 2);
    assert_int_equal(r[0], link_between(net, 0, 2));
    assert_int_equal(r[1], link_between(net, 2, 3));
    assert_int_equal(link_route_bandwidth(net, 0, 3), 3 * GBPS);
    link_xfer x[2] = {{0, 3, 3000000, 0, 0}, {2, 3, 37000000, 0, 0}};
    run1(net, x, 2);
    assert_near(x[0].end, SIM_MS + 400 * SIM_NS, 1);
    assert_near(x[1].end, SIM_MS + 100 * SIM_NS, 1);
    uint32_t rung = link_between(net, 2, 3);
    assert_int_equal(link_bytes(net, rung), 40000000);
    assert_int_equal(link_busy(net, rung), SIM_MS);
    /* A alone over the two hops: bottleneck bandwidth plus both latencies */
    link_xfer a = {0, 3, 3000000, 0, 0};
    run1(net, &a, 1);
    assert_near(a.end, SIM_MS + 400 * SIM_NS, 1);
    link_net_free(net);
}

static void test_all_links_of_ipu(void **state)
{
    (void)state;
    const uint32_t sizes[] = {16, 64};
    for (size_t s = 0; s < 2; s++) {
        mach m = mk("m2000", sizes[s]);
        link_net *net = net_of(&m);
        assert_int_equal(link_ipu_bandwidth(net, 0), 320 * GBPS);
        /* one transfer per physical link of IPU 0 */
        link_xfer x[16];
        size_t n = 0;
        const uint64_t B = 4 << 20;
        for (uint32_t l = 0; l < link_count(net); l++) {
            const link_info *li = link_get(net, l);
            if (li->src != 0)
                continue;
            for (uint32_t p = 0; p < li->nphys; p++)
                x[n++] = (link_xfer){0, li->dst, B, 0, 0};
        }
        assert_int_equal(n, 10);
        run1(net, x, n);
        sim_time last = 0;
        for (size_t i = 0; i < n; i++) {
            assert_near(x[i].end, drain(B, 32 * GBPS) + 100 * SIM_NS, 1);
            if (x[i].end > last)
                last = x[i].end;
        }
        double rate = (double)(n * B) / ((double)(last - 100 * SIM_NS) * 1e-12);
        assert_true(rate > 0.999 * 320e9 && rate < 1.001 * 320e9);
        assert_int_equal(link_ipu_sent(net, 0), n * B);
        link_net_free(net);
    }
    /* the preset says the same: 10 x 32 GB/s per Mk2 IPU in a POD64 */
    mach m;
    err e;
    err_clear(&e);
    assert_int_equal(mach_builtin(&m, "mk2", &e), ERR_OK);
    m.nipus = 64;
    link_net *net = net_of(&m);
    assert_int_equal(link_ipu_bandwidth(net, 0), 320 * GBPS);
    link_net_free(net);
}

/* The link model is analytic: no kernel, any time origin, the same answer shifted. */
static void test_analytic(void **state)
{
    (void)state;
    mach m = mk("m2000", 4);
    link_net *net = net_of(&m);
    err e;
    err_clear(&e);
    link_xfer x = {0, 1, 1 << 20, 2000, 0};
    assert_int_equal(link_transfers(net, &x, 1, &e), ERR_OK);
    assert_int_equal(x.end, 2000 + 16384000 + 100000);
    x = (link_xfer){0, 1, 1 << 20, 10 * SIM_MS + 2000, 0}; /* later, then earlier again */
    assert_int_equal(link_transfers(net, &x, 1, &e), ERR_OK);
    assert_int_equal(x.end, 10 * SIM_MS + 2000 + 16384000 + 100000);
    x = (link_xfer){0, 1, 1 << 20, 0, 0};
    assert_int_equal(link_transfers(net, &x, 1, &e), ERR_OK);
    assert_int_equal(x.end, 16384000 + 100000);
    /* an IPU out of range: nothing moves */
    link_stats_reset(net);
    link_xfer bad[2] = {{0, 1, 1, 0, 0}, {0, 4, 1, 0, 0}};
    assert_int_equal(link_transfers(net, bad, 2, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "IPU"));
    assert_int_equal(link_ipu_sent(net, 0), 0);
    link_net_free(net);
}

/* Many overlapping transfers with random sizes and starts: two runs agree to the ps. */
static void test_determinism(void **state)
{
    (void)state;
    mach m = mk("m2000", 16);
    enum { N = 200 };
    link_xfer a[N], b[N];
    uint64_t s = 12345;
    for (size_t i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t src = (uint32_t)(s >> 33) % 16, dst = (uint32_t)(s >> 40) % 16;
        a[i] = (link_xfer){src, dst, (s >> 20) % 5000000, (s >> 10) % (20 * SIM_US), 0};
    }
    memcpy(b, a, sizeof a);
    link_net *n1 = net_of(&m), *n2 = net_of(&m);
    run1(n1, a, N);
    run1(n2, b, N);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(a[i].end, b[i].end);
        assert_true(a[i].end >= a[i].start + link_route_latency(n1, a[i].src_ipu, a[i].dst_ipu));
    }
    for (uint32_t l = 0; l < link_count(n1); l++) {
        assert_int_equal(link_bytes(n1, l), link_bytes(n2, l));
        assert_int_equal(link_busy(n1, l), link_busy(n2, l));
    }
    link_net_free(n1);
    link_net_free(n2);
}

/* ---- Collectives ---------------------------------------------------------------------------- */

static float **make_bufs(uint32_t R, size_t count, uint64_t seed, int integers)
{
    float **b = malloc(R * sizeof *b);
    for (uint32_t p = 0; p < R; p++) {
        b[p] = malloc(count * sizeof(float));
        for (size_t i = 0; i < count; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t v = (uint32_t)(seed >> 40);
            b[p][i] = integers ? (float)(v % 1000) - 500.0f : (float)v / 16777216.0f - 0.5f;
        }
    }
    return b;
}

static void free_bufs(float **b, uint32_t R)
{
    for (uint32_t p = 0; p < R; p++)
        free(b[p]);
    free(b);
}

/* The reference sum of chunk c in the documented order: positions c+1, c+2, ..., c. */
static float ref_sum(float *const *in, uint32_t R, size_t count, size_t i)
{
    uint32_t c = 0;
    while (coll_chunk_begin(count, R, c + 1) <= i)
        c++;
    float acc = in[(c + 1) % R][i];
    for (uint32_t j = 2; j <= R; j++)
        acc = acc + in[(c + j) % R][i];
    return acc;
}

static void test_allreduce_numerics(void **state)
{
    (void)state;
    const uint32_t Rs[] = {2, 3, 4, 8};
    const size_t count = 1037; /* not a multiple of R: chunks of unequal size */
    mach m = mk("m2000", 8);
    link_net *net = net_of(&m);
    uint32_t ring[8];
    link_ring(net, ring);
    for (size_t t = 0; t < 4; t++) {
        uint32_t R = Rs[t];
        for (int integers = 0; integers < 2; integers++) {
            float **in = make_bufs(R, count, 99 + R, integers);
            float **b = make_bufs(R, count, 99 + R, integers);
            float **b2 = make_bufs(R, count, 99 + R, integers);
            sim *k = sim_new();
            err e;
            err_clear(&e);
            coll_result res, res2;
            assert_int_equal(coll_allreduce(net, k, ring, R, b, count, 0, &res, &e), ERR_OK);
            assert_int_equal(coll_allreduce(net, k, ring, R, b2, count, 0, &res2, &e), ERR_OK);
            assert_int_equal(res.steps, 2 * (R - 1));
            assert_int_equal(res.bytes, 2ull * (R - 1) * count * sizeof(float));
            assert_int_equal(res2.end - res2.start, res.end - res.start);
            for (size_t i = 0; i < count; i++) {
                float want = ref_sum(in, R, count, i);
                if (integers) { /* exact in any order */
                    float plain = 0;
                    for (uint32_t p = 0; p < R; p++)
                        plain += in[p][i];
                    assert_true(want == plain);
                }
                for (uint32_t p = 0; p < R; p++) {
                    assert_memory_equal(&b[p][i], &want, sizeof want);
                    assert_memory_equal(&b2[p][i], &want, sizeof want);
                }
            }
            sim_free(k);
            free_bufs(in, R);
            free_bufs(b, R);
            free_bufs(b2, R);
        }
    }
    link_net_free(net);
}

static void test_scatter_gather_numerics(void **state)
{
    (void)state;
    const uint32_t R = 4;
    const size_t count = 1001;
    mach m = mk("m2000", 4);
    link_net *net = net_of(&m);
    uint32_t ring[4] = {2, 0, 3, 1}; /* any order of neighbours */
    float **in = make_bufs(R, count, 7, 0), **b = make_bufs(R, count, 7, 0);
    sim *k = sim_new();
    err e;
    err_clear(&e);
    coll_result res;
    assert_int_equal(coll_reduce_scatter(net, k, ring, R, b, count, 0, &res, &e), ERR_OK);
    assert_int_equal(res.steps, R - 1);
    for (uint32_t p = 0; p < R; p++)
        for (size_t i = coll_chunk_begin(count, R, p); i < coll_chunk_begin(count, R, p + 1); i++) {
            float want = ref_sum(in, R, count, i);
            assert_memory_equal(&b[p][i], &want, sizeof want);
        }
    /* all-gather of fresh data: position p contributes chunk p */
    float **g = make_bufs(R, count, 8, 0);
    float **g0 = make_bufs(R, count, 8, 0);
    assert_int_equal(coll_all_gather(net, k, ring, R, g, count, 0, &res, &e), ERR_OK);
    for (uint32_t p = 0; p < R; p++)
        for (uint32_t c = 0; c < R; c++) {
            size_t lo = coll_chunk_begin(count, R, c), hi = coll_chunk_begin(count, R, c + 1);
            assert_memory_equal(g[p] + lo, g0[c] + lo, (hi - lo) * sizeof(float));
        }
    /* errors and the trivial ring */
    uint32_t dup[2] = {1, 1}, far[2] = {0, 9};
    assert_int_equal(coll_allreduce(net, k, dup, 2, NULL, 8, 0, &res, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "twice"));
    assert_int_equal(coll_allreduce(net, k, far, 2, NULL, 8, 0, &res, &e), ERR_INPUT);
    assert_int_equal(coll_allreduce(net, k, ring, 1, b, count, 0, &res, &e), ERR_OK);
    assert_int_equal(res.end, res.start);
    assert_int_equal(res.bytes, 0);
    sim_free(k);
    free_bufs(in, R);
    free_bufs(b, R);
    free_bufs(g, R);
    free_bufs(g0, R);
    link_net_free(net);
}

/* Simulated time over the ring of neighbours against the alpha-beta formula, for messages of
 * 1 KiB to 64 MiB, R = 2, 4, 8, 16, the three operations, with and without a sync cost. */
static void check_alpha_beta(const char *topology, uint32_t R, sim_time sync)
{
    mach m = mk(topology, R);
    link_net *net = net_of(&m);
    uint32_t ring[64];
    link_ring(net, ring);
    for (int op = 0; op < 3; op++)
        for (uint64_t bytes = 1024; bytes <= (64u << 20); bytes *= 4) {
            sim *k = sim_new();
            err e;
            err_clear(&e);
            coll_result res;
            coll_ab ab;
            assert_int_equal(
                coll_run(net, k, (coll_op)op, ring, R, NULL, bytes / 4, sync, &res, &e), ERR_OK);
            assert_int_equal(coll_alpha_beta(net, (coll_op)op, ring, R, bytes, sync, &ab, &e),
                             ERR_OK);
            double t = (double)(res.end - res.start), d = (t - ab.t_ps) / ab.t_ps;
            if (d > 0.10 || d < -0.10)
                fail_msg("%s %s R=%u %llu B: simulated %.0f ps, alpha-beta %.0f ps", topology,
                         coll_op_name((coll_op)op), R, (unsigned long long)bytes, t, ab.t_ps);
            sim_free(k);
        }
    link_net_free(net);
}

static void test_alpha_beta(void **state)
{
    (void)state;
    const uint32_t Rs[] = {2, 4, 8, 16};
    for (size_t i = 0; i < 4; i++) {
        check_alpha_beta("m2000", Rs[i], 0);
        check_alpha_beta("m2000", Rs[i], 500 * SIM_NS);
        check_alpha_beta("ladder", Rs[i], 0);
    }
    check_alpha_beta("m2000", 64, 0);
    /* the formula itself: 4 IPUs in a box, 2 links per hop */
    mach m = mk("m2000", 4);
    link_net *net = net_of(&m);
    uint32_t ring[4] = {0, 1, 2, 3};
    coll_ab ab;
    err e;
    assert_int_equal(coll_alpha_beta(net, COLL_ALLREDUCE, ring, 4, 1 << 20, 0, &ab, &e), ERR_OK);
    assert_true(ab.alpha_ps == 100000.0 && ab.beta == 64e9);
    assert_true(ab.t_ps == 6 * (100000.0 + 262144 / 64e9 * 1e12));
    link_net_free(net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_m2000_counts),
        cmocka_unit_test(test_m2000_partial_and_pods),
        cmocka_unit_test(test_m2000_errors),
        cmocka_unit_test(test_ladder_counts),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_single_transfer),
        cmocka_unit_test(test_shared_link),
        cmocka_unit_test(test_bottleneck),
        cmocka_unit_test(test_all_links_of_ipu),
        cmocka_unit_test(test_analytic),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_allreduce_numerics),
        cmocka_unit_test(test_scatter_gather_numerics),
        cmocka_unit_test(test_alpha_beta),
    };
    return cmocka_run_group_tests_name("link", tests, NULL, NULL);
}
