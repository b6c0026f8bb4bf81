/* coll: ring all-reduce, reduce-scatter and all-gather over the IPU-Link model.
 *
 * Models the standard bandwidth-optimal ring algorithm as Poplar's replicated collectives use
 * it: R-1 reduce-scatter steps then R-1 all-gather steps, every position sending one chunk to
 * its ring successor per step, the steps separated by a sync. The data really moves (sums in a
 * fixed order, see coll.h) and each step's transfers go through link_transfers, so shared links
 * and multi-hop ring edges cost what the link model says. The schedule (coll_step_chunk) and
 * the alpha-beta inputs are also what the simulated all-reduces are built from: the lowered
 * all-reduce of a replicated graph (workloads/graph/graph_coll.c) and the all-reduce
 * microbenchmark (workloads/micro/micro_coll.c) emit tile programs that follow it.
 *
 * Left out: bidirectional or multiple concurrent rings (which would use more of an IPU's ten
 * links), pipelining of chunks within a step, the compute time of the additions on the tiles,
 * and the on-chip exchange that gathers a replica's data to its link ports. */
#include "fabric/coll.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

const char *coll_op_name(coll_op op)
{
    switch (op) {
    case COLL_ALLREDUCE: return "allreduce";
    case COLL_REDUCE_SCATTER: return "reduce_scatter";
    case COLL_ALL_GATHER: return "all_gather";
    }
    return "?";
}

uint32_t coll_steps(coll_op op, uint32_t R)
{
    if (R < 2)
        return 0;
    return op == COLL_ALLREDUCE ? 2 * (R - 1) : R - 1;
}

size_t coll_chunk_begin(size_t count, uint32_t R, uint32_t c)
{
    return (size_t)((unsigned __int128)count * c / R);
}

static int check_ring(const link_net *net, const uint32_t *ring, uint32_t R, err *e)
{
    if (R == 0)
        return err_set(e, ERR_INPUT, "a collective needs at least one IPU in its ring");
    for (uint32_t p = 0; p < R; p++) {
        if (ring[p] >= link_nipus(net))
            return err_set(e, ERR_INPUT, "ring position %u: IPU %u, but the system has %u IPUs", p,
                           ring[p], link_nipus(net));
        for (uint32_t q = 0; q < p; q++)
            if (ring[q] == ring[p])
                return err_set(e, ERR_INPUT,
                               "IPU %u appears twice in the ring (positions %u "
                               "and %u)",
                               ring[p], q, p);
    }
    return ERR_OK;
}

uint32_t coll_step_chunk(coll_op op, uint32_t R, uint32_t s, uint32_t p, int *add)
{
    int rs = op == COLL_REDUCE_SCATTER || (op == COLL_ALLREDUCE && s < R - 1);
    if (op == COLL_ALLREDUCE && !rs)
        s -= R - 1;
    if (add)
        *add = rs;
    /* reduce-scatter: (p - s - 1) mod R; all-gather: (p - s) mod R */
    return (uint32_t)((p + 2 * (uint64_t)R - s - (rs ? 1 : 0)) % R);
}

int coll_run(link_net *net, const sim *k, coll_op op, const uint32_t *ring, uint32_t R,
             float **bufs, size_t count, sim_time step_sync, coll_result *res, err *e)
{
    int rc = check_ring(net, ring, R, e);
    if (rc != ERR_OK)
        return rc;
    uint32_t steps = coll_steps(op, R);
    *res = (coll_result){.start = sim_now(k), .end = sim_now(k), .steps = steps};
    link_xfer *x = xcalloc(R, sizeof *x);
    sim_time t = sim_now(k);
    for (uint32_t s = 0; s < steps; s++) {
        t += step_sync;
        for (uint32_t p = 0; p < R; p++) {
            int add;
            uint32_t c = coll_step_chunk(op, R, s, p, &add);
            size_t n = coll_chunk_begin(count, R, c + 1) - coll_chunk_begin(count, R, c);
            x[p] = (link_xfer){ring[p], ring[(p + 1) % R], (uint64_t)n * sizeof(float), t, 0};
            res->bytes += x[p].bytes;
        }
        rc = link_transfers(net, x, R, e);
        if (rc != ERR_OK)
            break;
        for (uint32_t p = 0; p < R; p++)
            if (x[p].end > t)
                t = x[p].end;
        /* The data: every send of this step reads a chunk no receive of this step writes
         * (position p sends chunk c and receives chunk c-1), so in place is safe. */
        for (uint32_t p = 0; bufs && p < R; p++) {
            int add;
            uint32_t c = coll_step_chunk(op, R, s, p, &add);
            size_t lo = coll_chunk_begin(count, R, c), hi = coll_chunk_begin(count, R, c + 1);
            const float *src = bufs[p];
            float *dst = bufs[(p + 1) % R];
            if (add)
                for (size_t i = lo; i < hi; i++)
                    dst[i] = src[i] + dst[i];
            else
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float));
        }
    }
    free(x);
    res->end = t;
    return rc;
}

int coll_allreduce(link_net *net, const sim *k, const uint32_t *ring, uint32_t R, float **bufs,
                   size_t count, sim_time step_sync, coll_result *res, err *e)
{
    return coll_run(net, k, COLL_ALLREDUCE, ring, R, bufs, count, step_sync, res, e);
}

int coll_reduce_scatter(link_net *net, const sim *k, const uint32_t *ring, uint32_t R, float **bufs,
                        size_t count, sim_time step_sync, coll_result *res, err *e)
{
    return coll_run(net, k, COLL_REDUCE_SCATTER, ring, R, bufs, count, step_sync, res, e);
}

int coll_all_gather(link_net *net, const sim *k, const uint32_t *ring, uint32_t R, float **bufs,
                    size_t count, sim_time step_sync, coll_result *res, err *e)
{
    return coll_run(net, k, COLL_ALL_GATHER, ring, R, bufs, count, step_sync, res, e);
}

int coll_alpha_beta(const link_net *net, coll_op op, const uint32_t *ring, uint32_t R,
                    uint64_t bytes, sim_time step_sync, coll_ab *out, err *e)
{
    int rc = check_ring(net, ring, R, e);
    if (rc != ERR_OK)
        return rc;
    sim_time lat = 0;
    uint64_t bw = UINT64_MAX;
    for (uint32_t p = 0; p < R && R > 1; p++) {
        uint32_t a = ring[p], b = ring[(p + 1) % R];
        sim_time l = link_route_latency(net, a, b);
        uint64_t w = link_route_bandwidth(net, a, b);
        if (l > lat)
            lat = l;
        if (w < bw)
            bw = w;
    }
    out->alpha_ps = (double)(step_sync + lat);
    out->beta = (double)bw;
    out->t_ps = coll_steps(op, R) * (out->alpha_ps + (double)bytes / R / out->beta * 1e12);
    return ERR_OK;
}
