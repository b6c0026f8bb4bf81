/* micro_coll: ring all-reduce bus bandwidth against message size.
 *
 * The fabric's ring all-reduce (fabric/coll.h) runs over R IPUs of the preset's topology (a
 * box of 4 on Mk2; two Mk1 cards, R = 4, on the ladder), ring order from link_ring, every step
 * opened by an external sync of the R IPUs. Its transfers go through the link model (shared
 * bandwidth, events on a simulation kernel); the time is the collective's simulated span.
 * Bus bandwidth = 2(R-1)/R x bytes / time, the figure NCCL-style tables quote: it approaches
 * the slowest ring hop's bandwidth for large messages and is latency-bound for small ones.
 * Messages up to 1 MiB carry real data (buffer p holds p + 1 everywhere) and the sum is
 * checked; larger ones are timed only (same time, no host memory).
 *
 * Left out: the on-chip gather of a replica's tensor to its link ports and the additions'
 * compute time (coll.h leaves them out too), and bidirectional rings. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fabric/coll.h"
#include "workloads/micro/micro_int.h"

enum { RMAX = 64, DATA_MAX = 1 << 20 };

static int check_sum(float **bufs, uint32_t R, size_t count, err *e)
{
    float want = (float)R * (R + 1) / 2;
    for (uint32_t p = 0; p < R; p++)
        for (size_t i = 0; i < count; i++)
            if (bufs[p][i] != want)
                return err_set(e, ERR_INPUT,
                               "allreduce: position %u element %zu is %g, "
                               "expected %g",
                               p, i, (double)bufs[p][i], (double)want);
    return ERR_OK;
}

static int one_size(link_net *net, sim *k, const uint32_t *ring, uint32_t R, uint64_t bytes,
                    sim_time step_sync, double *seconds, err *e)
{
    size_t count = bytes / sizeof(float);
    float *bufs[RMAX] = {0};
    int data = bytes <= DATA_MAX, rc = ERR_OK;
    for (uint32_t p = 0; data && p < R; p++) {
        bufs[p] = xmalloc(bytes);
        for (size_t i = 0; i < count; i++)
            bufs[p][i] = (float)(p + 1);
    }
    coll_result res;
    if (rc == ERR_OK)
        rc = coll_allreduce(net, k, ring, R, data ? bufs : NULL, count, step_sync, &res, e);
    if (rc == ERR_OK && data)
        rc = check_sum(bufs, R, count, e);
    if (rc == ERR_OK)
        *seconds = (double)(res.end - res.start) * 1e-12;
    for (uint32_t p = 0; p < R; p++)
        free(bufs[p]);
    return rc;
}

int micro_allreduce(const mach *m, const wl_micro_cfg *cfg, wl_micro_table *t, err *e)
{
    (void)cfg;
    mach mr = *m;
    uint32_t R = m->ipus_per_box >= 4 ? m->ipus_per_box : 4;
    if (R > RMAX)
        return err_set(e, ERR_INPUT, "allreduce: at most %d IPUs in a ring", RMAX);
    mr.nipus = R;
    link_net *net = link_net_new(&mr, e);
    if (!net)
        return e->status;
    sim *k = sim_new();
    uint32_t ring[RMAX];
    link_ring(net, ring);
    sim_time step_sync = mach_cycles_to_ps(&mr, mach_sync_external(&mr));
    /* alpha-beta inputs from the ring's hops: the slowest hop's latency and bandwidth */
    double lat = 0, beta = INFINITY;
    for (uint32_t p = 0; p < R; p++) {
        uint32_t a = ring[p], b = ring[(p + 1) % R];
        double l = (double)link_route_latency(net, a, b),
               w = (double)link_route_bandwidth(net, a, b);
        lat = l > lat ? l : lat;
        beta = w < beta ? w : beta;
    }
    double alpha = ((double)step_sync + lat) * 1e-12;
    int rc = ERR_OK;
    for (uint64_t bytes = 1024; bytes <= 64ull << 20 && rc == ERR_OK; bytes *= 4) {
        double s = 0;
        rc = one_size(net, k, ring, R, bytes, step_sync, &s, e);
        if (rc != ERR_OK)
            break;
        double bus = 2.0 * (R - 1) / R * (double)bytes / s;
        int mib = bytes >= (1u << 20);
        micro_add(t, "allreduce", "GB/s", bus / 1e9,
                  micro_implied_allreduce(R, (double)bytes, alpha, beta) / 1e9, NAN,
                  "ring all-reduce bus bw, %u IPUs, %llu %s", R,
                  (unsigned long long)(bytes >> (mib ? 20 : 10)), mib ? "MiB" : "KiB");
    }
    sim_free(k);
    link_net_free(net);
    return rc;
}
