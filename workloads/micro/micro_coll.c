/* micro_coll: ring all-reduce bus bandwidth against message size, as a tile program timed by
 * its own cycle counter.
 *
 * R IPUs (a box of 4 on Mk2; two Mk1 cards, R = 4, on the ladder) in the ring order of
 * link_ring; each IPU holds the whole message of fp32 values, spread over K of its tiles (K =
 * bytes / (16 R), at most 1024 and at most the IPU's tiles, a power of two). Tile t of every IPU
 * all-reduces its slice with tile t of the others: its slice is R chunks of C = bytes / (R K)
 * bytes. The program, per ring position p (each IPU runs the code of its position):
 *   reduce-scatter, step s = 0 .. R-2: from step 1 on, six workers add the chunk received in
 *     the step before into the tile's own copy (runall, join; 16 bytes per 6-instruction
 *     `rpt` body: two ld128pi, two v2add, two st64pi); then gsend chunk (p - s - 1) mod R to
 *     the same tile of the next IPU's receive buffer; sync external (the data lands at the
 *     release). After the last step the workers add the last received chunk: position p now
 *     holds the sum of chunk p.
 *   all-gather, step s = 0 .. R-2: gsend chunk (p - s) mod R into the same chunk of the next
 *     IPU; sync external.
 * Tile 0 of each IPU reads $ccount after an aligning sync and after the last release; T = the
 * difference, bus bandwidth = 2(R-1)/R x bytes / T, the figure NCCL-style tables quote.
 * Nothing is subtracted: T includes the syncs, the link and exchange latencies, the
 * transfers, the additions and the few instructions between them. Every IPU starts with
 * element i = 8R (i mod 251) + p + 1 (exact in fp32), and the benchmark checks that every
 * element of every tile of every IPU ends as the sum, 8R^2 (i mod 251) + R(R+1)/2.
 *
 * The steps follow the ring's one schedule (coll_step_chunk, fabric/coll.h), and the
 * alpha-beta inputs are the collective library's (coll_alpha_beta); the time is the tile
 * program's, not the library's (timed by the link model alone). Left out: bidirectional rings, overlapping a step's additions with its transfers, and
 * messages over 16 MiB (a 128-tile IPU, the tests' short mode, cannot hold them). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/coll.h"
#include "fabric/link.h"
#include "isa/isa.h"
#include "workloads/micro/micro_int.h"

enum {
    RMAX = 64,
    KMAX = 1024, /* tiles per IPU at most */
    QUAD = 16,   /* bytes one `rpt` iteration adds */
    MAX_BYTES = 16 << 20,
};

/* One message size on the ring. */
typedef struct ar_plan {
    uint32_t R, K, C;             /* IPUs, tiles per IPU, bytes of a chunk */
    const uint32_t *ring;         /* ring[p]: the IPU at position p */
    uint32_t data, rx, wtab, res; /* addresses: R chunks, receive buffer, worker table, counters */
} ar_plan;

static uint32_t pow2_floor(uint32_t v)
{
    uint32_t p = 1;
    while (p <= v / 2)
        p *= 2;
    return p;
}

/* K, C and the addresses for `bytes`; ERR_INPUT when the tile memory cannot hold them. */
static int ar_layout(const mach *m, uint64_t bytes, ar_plan *a, err *e)
{
    uint64_t k = bytes / ((uint64_t)a->R * QUAD);
    uint32_t most = pow2_floor(m->tiles_per_ipu < KMAX ? m->tiles_per_ipu : KMAX);
    a->K = (uint32_t)(k < most ? (k ? k : 1) : most);
    a->C = (uint32_t)(bytes / ((uint64_t)a->R * a->K)) & ~(QUAD - 1u);
    uint64_t need = (uint64_t)a->R * a->C + a->C + 8 * ISA_NWORKERS + 64;
    if (a->C == 0 || need > m->sram_bytes)
        return err_set(e, ERR_INPUT,
                       "allreduce: %llu bytes over %u IPUs x %u tiles do not fit in %u bytes "
                       "of tile memory",
                       (unsigned long long)bytes, a->R, a->K, m->sram_bytes);
    a->res = (m->sram_bytes - 16) & ~15u;
    a->wtab = (a->res - 8 * ISA_NWORKERS) & ~15u;
    a->rx = (a->wtab - a->C) & ~15u;
    a->data = (a->rx - a->R * a->C) & ~15u;
    return ERR_OK;
}

/* The address of the chunk position p sends in step s of the all-reduce (the ring's
 * schedule), or, with `got`, of the one it received in step s (what p - 1 sent). */
static uint32_t chunk(const ar_plan *a, uint32_t p, uint32_t s, int got)
{
    uint32_t from = got ? (p + a->R - 1) % a->R : p;
    return a->data + coll_step_chunk(COLL_ALLREDUCE, a->R, s, from, NULL) * a->C;
}

/* Position p's code: the aligning sync, reduce-scatter, the last addition, all-gather. */
static void ar_position(txt *s, const ar_plan *a, uint32_t p)
{
    uint32_t next = a->ring[(p + 1) % a->R];
    txt_printf(s,
               "p%u:     get     r2, $tile\n        li      r3, %u\n        or      r3, r3, r2\n"
               "        li      r4, %u\n        li      r6, %u\n        sync    external\n"
               "        get     r10, $ccount\n",
               p, next << 16, a->C, a->rx);
    for (uint32_t st = 0; st + 1 < a->R; st++) {
        if (st > 0)
            txt_printf(s, "        li      r7, %u\n        runall  wadd, r7\n        join\n",
                       chunk(a, p, st - 1, 1));
        txt_printf(s,
                   "        li      r5, %u\n        gsend   r5, r4, r3, r6\n"
                   "        sync    external\n",
                   chunk(a, p, st, 0));
    }
    txt_printf(s, "        li      r7, %u\n        runall  wadd, r7\n        join\n",
               chunk(a, p, a->R - 2, 1));
    for (uint32_t st = a->R - 1; st < coll_steps(COLL_ALLREDUCE, a->R); st++)
        txt_printf(s,
                   "        li      r5, %u\n        gsend   r5, r4, r3, r5\n"
                   "        sync    external\n",
                   chunk(a, p, st, 0));
    txt_printf(s,
               "        get     r11, $ccount\n        li      r12, %u\n"
               "        st32    r10, [r12+0]\n        st32    r11, [r12+4]\n        halt\n",
               a->res);
}

/* The workers' addition: worker w adds its share (its byte offset and 16-byte quads in the
 * worker table) of the receive buffer into the chunk at r0. */
static void ar_worker(txt *s, const ar_plan *a)
{
    txt_printf(s,
               "wadd:   get     r1, $wid\n        shli    r1, r1, 3\n"
               "        ld32    r2, [r1+%u]\n        ld32    r3, [r1+%u]\n"
               "        add     r0, r0, r2\n        mov     r12, r0\n        addi    r2, r2, %u\n"
               "        rpt     r3, wadd_end\n"
               "        ld128pi r4, [r0]+=16\n        ld128pi r8, [r2]+=16\n"
               "        v2add   r4, r4, r8\n        v2add   r6, r6, r10\n"
               "        st64pi  r4, [r12]+=8\n        st64pi  r6, [r12]+=8\n"
               "wadd_end: exit\n",
               a->wtab, a->wtab + 4, a->rx);
}

static char *ar_program(const ar_plan *a)
{
    txt s = {0};
    txt_printf(&s, "main:   get     r1, $ipu\n");
    for (uint32_t p = 0; p < a->R; p++)
        txt_printf(&s, "        cmpeqi  r2, r1, %u\n        brnz    r2, p%u\n", a->ring[p], p);
    txt_printf(&s, "        halt\n");
    for (uint32_t p = 0; p < a->R; p++)
        ar_position(&s, a, p);
    ar_worker(&s, a);
    return txt_take(&s);
}

/* Element i of the message at position p, and the sum over the ring. */
static float ar_value(uint32_t R, uint32_t p, uint64_t i)
{
    return (float)(8 * R * (i % 251) + p + 1);
}

static float ar_sum(uint32_t R, uint64_t i)
{
    return (float)(8 * R * R * (i % 251) + R * (R + 1) / 2);
}

/* Every tile: the worker table, and its slice of the message (tile t holds elements
 * [t x R C / 4, (t + 1) x R C / 4)). */
static void ar_setup(eng *g, void *ctx)
{
    const ar_plan *a = ctx;
    uint32_t q = a->C / QUAD, n = a->R * a->C / 4;
    for (uint32_t p = 0; p < a->R; p++)
        for (uint32_t t = 0; t < a->K; t++) {
            uint8_t *mem = eng_tile_mem(g, a->ring[p], t);
            for (uint32_t w = 0, off = 0; w < ISA_NWORKERS; w++) {
                uint32_t nq = q / ISA_NWORKERS + (w < q % ISA_NWORKERS);
                memcpy(mem + a->wtab + 8 * w, &off, 4);
                memcpy(mem + a->wtab + 8 * w + 4, &nq, 4);
                off += nq * QUAD;
            }
            float *d = (float *)(mem + a->data);
            for (uint32_t j = 0; j < n; j++)
                d[j] = ar_value(a->R, p, (uint64_t)t * n + j);
        }
}

static int ar_check(eng *g, const ar_plan *a, err *e)
{
    uint32_t n = a->R * a->C / 4;
    for (uint32_t p = 0; p < a->R; p++)
        for (uint32_t t = 0; t < a->K; t++) {
            eng_share_mem(g, a->ring[p], t, a->data, n * 4); /* from its owner */
            const float *d = (const float *)(eng_tile_mem(g, a->ring[p], t) + a->data);
            for (uint32_t j = 0; j < n; j++) {
                uint64_t i = (uint64_t)t * n + j;
                if (d[j] != ar_sum(a->R, i))
                    return err_set(e, ERR_INPUT,
                                   "allreduce: IPU %u tile %u element %llu is %g, expected %g",
                                   a->ring[p], t, (unsigned long long)i, (double)d[j],
                                   (double)ar_sum(a->R, i));
            }
        }
    return ERR_OK;
}

/* Run one size; *cycles = tile 0's count from the aligning sync to the last release. */
static int ar_run(const mach *m, const micro_cfg *cfg, ar_plan *a, uint64_t bytes, uint64_t *cycles,
                  err *e)
{
    int rc = ar_layout(m, bytes, a, e);
    if (rc != ERR_OK)
        return rc;
    char *text = ar_program(a);
    micro_prog pr = {.src = text,
                     .nipus = a->R,
                     .ntiles = a->K,
                     .reserve = m->sram_bytes - a->data,
                     .setup = ar_setup,
                     .ctx = a};
    micro_run r;
    rc = micro_run_prog(m, &pr, cfg, &r, e);
    free(text);
    if (rc == ERR_OK)
        rc = ar_check(r.g, a, e);
    if (rc == ERR_OK)
        *cycles =
            micro_rd32(r.g, a->ring[0], 0, a->res + 4) - micro_rd32(r.g, a->ring[0], 0, a->res);
    micro_run_free(&r);
    return rc;
}

/* The alpha-beta inputs: alpha = external sync + tile-to-tile latency of the slowest ring hop
 * (2 x xchg_base + the route's link latency: coll_alpha_beta's alpha without a step sync),
 * seconds; beta = the slowest hop's bandwidth. */
static int ar_alpha_beta(const mach *m, const link_net *net, const uint32_t *ring, uint32_t R,
                         double *alpha, double *beta, err *e)
{
    coll_ab ab;
    int rc = coll_alpha_beta(net, COLL_ALLREDUCE, ring, R, 0, 0, &ab, e);
    if (rc != ERR_OK)
        return rc;
    mach mr = *m;
    mr.nipus = R;
    *alpha =
        (mach_sync_external(&mr) + 2.0 * m->xchg_base) / (double)m->clock_hz + ab.alpha_ps * 1e-12;
    *beta = ab.beta;
    return ERR_OK;
}

int micro_allreduce(const mach *m, const micro_cfg *cfg, wl_micro_table *t, err *e)
{
    mach mr = *m;
    uint32_t R = m->ipus_per_box >= 4 ? m->ipus_per_box : 4;
    if (R > RMAX)
        return err_set(e, ERR_INPUT, "allreduce: at most %d IPUs in a ring", RMAX);
    mr.nipus = R;
    link_net *net = link_net_new(&mr, e);
    if (!net)
        return e->status;
    uint32_t ring[RMAX];
    link_ring(net, ring);
    double alpha, beta, f = (double)m->clock_hz;
    int rc = ar_alpha_beta(m, net, ring, R, &alpha, &beta, e);
    link_net_free(net);
    for (uint64_t bytes = 1024; bytes <= MAX_BYTES && rc == ERR_OK; bytes *= 4) {
        ar_plan a = {.R = R, .ring = ring};
        uint64_t T = 0;
        rc = ar_run(m, cfg, &a, bytes, &T, e);
        if (rc != ERR_OK)
            break;
        double moved = (double)a.R * a.K * a.C, bus = 2.0 * (R - 1) / R * moved / ((double)T / f);
        double port = (double)a.K * m->xchg_bytes_per_cycle * f; /* K tiles' ports */
        int mib = bytes >= (1u << 20);
        micro_add(t, "allreduce", "GB/s", bus / 1e9,
                  micro_implied_allreduce(R, moved, alpha, port < beta ? port : beta) / 1e9, NAN,
                  "ring all-reduce bus bw, %u IPUs x %u tiles, %llu %s", R, a.K,
                  (unsigned long long)(bytes >> (mib ? 20 : 10)), mib ? "MiB" : "KiB");
    }
    return rc;
}
