/* host: the host link and remote buffers of a machine, and their statistics.
 *
 * Models the bandwidth and latency of the path between the host (or the remote memory) and
 * each IPU: per IPU an attachment (PCIe) with one capacity per direction, per group of
 * host_link_ipus IPUs a host link (full duplex: one capacity per direction) and a remote
 * memory (one capacity for reads and writes). A call's transfers are fluid flows along their
 * paths sharing max-min fairly what earlier calls left (fabric/flow.c, the one fluid solver,
 * over the bookings of prof.c),
 * each arriving one path latency after its last byte left.
 *
 * Leaves out: fairness between calls (an earlier call keeps its rates; a later one takes
 * what is left), packets, DMA set-up per descriptor, host memory copies, the latency growth
 * of a loaded link, and the receiving tiles (the engine passes their bound as
 * max_bytes_per_s). */
#include "host/host.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"
#include "fabric/flow.h"
#include "host/prof.h"

_Static_assert(HOST_LINK_IN_COPIES == HOST_LINK_IN_BYTES + 2 &&
                   HOST_LINK_IN_PS == HOST_LINK_IN_BYTES + 4 &&
                   HOST_REMOTE_IN_COPIES == HOST_REMOTE_IN_BYTES + 2 &&
                   HOST_REMOTE_IN_PS == HOST_REMOTE_IN_BYTES + 4,
               "transfer() indexes the statistics as base + 2 x kind + dir");

/* Resources: per IPU a port per direction; per group a link per direction and a memory. */
struct host {
    mach m;
    uint32_t nipus, ngroups;
    host_prof *port; /* [ipu * 2 + dir] */
    host_prof *link; /* [group * 2 + dir] */
    host_prof *mem;  /* [group] */
    flow_res *res;   /* the solver's view of all of them: ports, then links, then memories */
    uint64_t *stat;  /* [ipu * HOST_NSTAT + id] */
};

/* flow_res hooks over a profile: the capacity its bookings leave, and booking. */
static uint64_t prof_left(void *p, sim_time t, sim_time *next)
{
    return host_prof_left(p, t, next);
}

static void prof_book(void *p, sim_time a, sim_time b, uint64_t rate)
{
    host_prof_book(p, a, b, rate);
}

static size_t nres(const host *h)
{
    return (size_t)h->nipus * 2 + (size_t)h->ngroups * 3;
}

host *host_new(const mach *m, err *e)
{
    if (mach_check(m, e) != ERR_OK)
        return NULL;
    host *h = xcalloc(1, sizeof *h);
    h->m = *m;
    h->nipus = m->nipus;
    h->ngroups = (m->nipus + m->host_link_ipus - 1) / m->host_link_ipus;
    h->port = xcalloc((size_t)h->nipus * 2, sizeof *h->port);
    h->link = xcalloc((size_t)h->ngroups * 2, sizeof *h->link);
    h->mem = xcalloc(h->ngroups, sizeof *h->mem);
    h->stat = xcalloc((size_t)h->nipus * HOST_NSTAT, sizeof *h->stat);
    h->res = xcalloc(nres(h), sizeof *h->res);
    for (uint32_t i = 0; i < h->nipus * 2; i++)
        host_prof_init(&h->port[i], m->host_ipu_bytes_per_s);
    for (uint32_t g = 0; g < h->ngroups; g++) {
        host_prof_init(&h->link[g * 2 + HOST_IN], m->host_link_bytes_per_s);
        host_prof_init(&h->link[g * 2 + HOST_OUT], m->host_link_bytes_per_s);
        host_prof_init(&h->mem[g], m->remote_bytes_per_s);
    }
    for (size_t i = 0; i < nres(h); i++) {
        size_t np = (size_t)h->nipus * 2, nl = (size_t)h->ngroups * 2;
        host_prof *p = i < np ? &h->port[i] : i < np + nl ? &h->link[i - np] : &h->mem[i - np - nl];
        h->res[i] = (flow_res){.left = prof_left, .book = prof_book, .ctx = p};
    }
    return h;
}

void host_free(host *h)
{
    if (!h)
        return;
    for (uint32_t i = 0; i < h->nipus * 2; i++)
        host_prof_free(&h->port[i]);
    for (uint32_t g = 0; g < h->ngroups; g++) {
        host_prof_free(&h->link[g * 2]);
        host_prof_free(&h->link[g * 2 + 1]);
        host_prof_free(&h->mem[g]);
    }
    free(h->port);
    free(h->link);
    free(h->mem);
    free(h->stat);
    free(h->res);
    free(h);
}

uint32_t host_ngroups(const host *h)
{
    return h->ngroups;
}

uint32_t host_group(const host *h, uint32_t ipu)
{
    assert(ipu < h->nipus);
    return ipu / h->m.host_link_ipus;
}

static int remote_via_link(const host *h)
{
    return strcmp(h->m.remote_at, "host") == 0;
}

/* The resources a transfer crosses, as indices into h->res; returns how many (at most 3). */
static uint32_t path(const host *h, uint32_t ipu, host_dir dir, int remote, uint32_t *res)
{
    uint32_t g = host_group(h, ipu), np = h->nipus * 2, nl = h->ngroups * 2;
    uint32_t n = 0;
    res[n++] = ipu * 2 + dir;
    if (!remote || remote_via_link(h))
        res[n++] = np + g * 2 + dir;
    if (remote)
        res[n++] = np + nl + g;
    return n;
}

static sim_time latency(const host *h, int remote)
{
    return (sim_time)(remote ? h->m.remote_latency_ns : h->m.host_latency_ns) * SIM_NS;
}

void host_transfer_batch(host *h, host_xfer *x, size_t n)
{
    flow_xfer one, *f = n == 1 ? &one : xcalloc(n, sizeof *f);
    uint32_t one_res[3], *res = n == 1 ? one_res : xcalloc(3 * n, sizeof *res);
    for (size_t i = 0; i < n; i++) {
        assert(x[i].ipu < h->nipus && (x[i].dir == HOST_IN || x[i].dir == HOST_OUT));
        f[i] = (flow_xfer){.start = x[i].start,
                           .bytes = x[i].bytes,
                           .cap = x[i].max_bytes_per_s,
                           .res = res + 3 * i};
        f[i].nres = path(h, x[i].ipu, x[i].dir, x[i].remote != 0, res + 3 * i);
        for (uint32_t k = 0; k < f[i].nres; k++)
            assert(f[i].start >= host_prof_horizon(h->res[res[3 * i + k]].ctx) &&
                   "host: a transfer starts before the retire horizon");
    }
    flow_solve(f, n, h->res, nres(h));
    for (size_t i = 0; i < n; i++) {
        int remote = x[i].remote != 0;
        x[i].end = f[i].end + latency(h, remote);
        uint64_t *st = &h->stat[(size_t)x[i].ipu * HOST_NSTAT];
        int base = remote ? HOST_REMOTE_IN_BYTES : HOST_LINK_IN_BYTES; /* see _Static_assert */
        st[base + x[i].dir] += x[i].bytes;
        st[base + 2 + x[i].dir] += 1;
        st[base + 4 + x[i].dir] += x[i].end - x[i].start;
    }
    if (f != &one) {
        free(f);
        free(res);
    }
}

static sim_time transfer(host *h, uint32_t ipu, host_dir dir, int remote, uint64_t bytes,
                         sim_time start, uint64_t max_bytes_per_s)
{
    host_xfer x = {.ipu = ipu,
                   .dir = dir,
                   .remote = remote,
                   .bytes = bytes,
                   .start = start,
                   .max_bytes_per_s = max_bytes_per_s};
    host_transfer_batch(h, &x, 1);
    return x.end;
}

sim_time host_link_transfer(host *h, uint32_t ipu, host_dir dir, uint64_t bytes, sim_time start,
                            uint64_t max_bytes_per_s)
{
    return transfer(h, ipu, dir, 0, bytes, start, max_bytes_per_s);
}

sim_time host_remote_transfer(host *h, uint32_t ipu, host_dir dir, uint64_t bytes, sim_time start,
                              uint64_t max_bytes_per_s)
{
    return transfer(h, ipu, dir, 1, bytes, start, max_bytes_per_s);
}

sim_time host_alone_time(const host *h, int remote, uint64_t bytes, uint64_t max_bytes_per_s)
{
    const mach *m = &h->m;
    uint64_t rate =
        min_u64(m->host_ipu_bytes_per_s, max_bytes_per_s ? max_bytes_per_s : UINT64_MAX);
    if (!remote || remote_via_link(h))
        rate = min_u64(rate, m->host_link_bytes_per_s);
    if (remote)
        rate = min_u64(rate, m->remote_bytes_per_s);
    unsigned __int128 work = (unsigned __int128)bytes * SIM_S;
    return latency(h, remote) + (sim_time)((work + rate - 1) / rate);
}

void host_retire(host *h, sim_time t)
{
    for (uint32_t i = 0; i < h->nipus * 2; i++)
        host_prof_retire(&h->port[i], t);
    for (uint32_t g = 0; g < h->ngroups; g++) {
        host_prof_retire(&h->link[g * 2], t);
        host_prof_retire(&h->link[g * 2 + 1], t);
        host_prof_retire(&h->mem[g], t);
    }
}

/* ---- statistics ---- */

static const host_stat_info stat_table[HOST_NSTAT] = {
    [HOST_LINK_IN_BYTES] = {"link_in_bytes", "B", "stream bytes host -> IPU"},
    [HOST_LINK_OUT_BYTES] = {"link_out_bytes", "B", "stream bytes IPU -> host"},
    [HOST_LINK_IN_COPIES] = {"link_in_copies", "copies", "stream copies host -> IPU"},
    [HOST_LINK_OUT_COPIES] = {"link_out_copies", "copies", "stream copies IPU -> host"},
    [HOST_LINK_IN_PS] = {"link_in_ps", "ps",
                         "host -> IPU stream copies, start to end (latency included), summed"},
    [HOST_LINK_OUT_PS] = {"link_out_ps", "ps",
                          "IPU -> host stream copies, start to end (latency included), summed"},
    [HOST_REMOTE_IN_BYTES] = {"remote_in_bytes", "B", "bytes read from remote buffers"},
    [HOST_REMOTE_OUT_BYTES] = {"remote_out_bytes", "B", "bytes written to remote buffers"},
    [HOST_REMOTE_IN_COPIES] = {"remote_in_copies", "copies", "remote-buffer reads"},
    [HOST_REMOTE_OUT_COPIES] = {"remote_out_copies", "copies", "remote-buffer writes"},
    [HOST_REMOTE_IN_PS] = {"remote_in_ps", "ps",
                           "remote-buffer reads, start to end (latency included), summed"},
    [HOST_REMOTE_OUT_PS] = {"remote_out_ps", "ps",
                            "remote-buffer writes, start to end (latency included), summed"},
    [HOST_PORT_IN_BUSY_PS] = {"port_in_busy_ps", "ps",
                              "time the IPU's own link carried data towards it"},
    [HOST_PORT_OUT_BUSY_PS] = {"port_out_busy_ps", "ps",
                               "time the IPU's own link carried data away from it"},
};

const host_stat_info *host_stat_table(void)
{
    return stat_table;
}

uint64_t host_stat(const host *h, uint32_t ipu, host_stat_id id)
{
    assert(ipu < h->nipus && id < HOST_NSTAT);
    if (id == HOST_PORT_IN_BUSY_PS || id == HOST_PORT_OUT_BUSY_PS)
        return h->port[ipu * 2 + (id == HOST_PORT_OUT_BUSY_PS)].busy;
    return h->stat[(size_t)ipu * HOST_NSTAT + id];
}

sim_time host_link_busy(const host *h, uint32_t group, host_dir dir)
{
    assert(group < h->ngroups);
    return h->link[group * 2 + dir].busy;
}

sim_time host_remote_busy(const host *h, uint32_t group)
{
    assert(group < h->ngroups);
    return h->mem[group].busy;
}

void host_stats_reset(host *h)
{
    memset(h->stat, 0, (size_t)h->nipus * HOST_NSTAT * sizeof *h->stat);
    for (uint32_t i = 0; i < h->nipus * 2; i++)
        h->port[i].busy = 0;
    for (uint32_t g = 0; g < h->ngroups; g++) {
        h->link[g * 2].busy = h->link[g * 2 + 1].busy = 0;
        h->mem[g].busy = 0;
    }
}
