/* coll: ring collectives (all-reduce, reduce-scatter, all-gather) across R IPUs over the link
 * model, on real data.
 *
 * The ring is a list of R distinct IPU ids; ring position p sends to position p+1 (mod R).
 * The message of `count` floats is cut into R chunks, chunk c = floats [c*count/R,
 * (c+1)*count/R). The standard ring algorithm runs in steps; in each step every position sends
 * one chunk to its successor, all at once, as R transfers through link_transfers, and the next
 * step starts when all of them have arrived plus `step_sync` ps (the sync that opens each step,
 * the first one included; 0 for none).
 *
 *   reduce-scatter  R-1 steps. In step s position p sends chunk (p-s-1) mod R, and the
 *                   successor adds it into its own copy. At the end position p holds the sum of
 *                   chunk p; its other chunks hold partial sums.
 *   all-gather      R-1 steps. Position p starts with chunk p; in step s it sends chunk (p-s)
 *                   mod R and the successor copies it. At the end every position holds all.
 *   all-reduce      reduce-scatter, then all-gather: 2(R-1) steps, every buffer holds the sum.
 *
 * Summation order is fixed, so results are bit-identical on every run and equal on every
 * replica: chunk c is accumulated along the ring starting at position c+1,
 *   sum_c = ((b[c+1] + b[c+2]) + ... ) + b[c]      (positions mod R, element by element).
 *
 * bufs[p] is the buffer of ring position p (count floats each). bufs may be NULL for a
 * timing-only run (no data moves; times and bytes are the same). */
#ifndef IPUSIM_COLL_H
#define IPUSIM_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "fabric/link.h"
#include "base/err.h"
#include "hw/sim.h"

typedef enum coll_op {
    COLL_ALLREDUCE = 0,
    COLL_REDUCE_SCATTER = 1,
    COLL_ALL_GATHER = 2,
} coll_op;

/* "allreduce", "reduce_scatter", "all_gather". */
const char *coll_op_name(coll_op op);

/* Steps of the ring algorithm for R positions: 2(R-1) for all-reduce, R-1 otherwise. */
uint32_t coll_steps(coll_op op, uint32_t R);

/* First float of chunk c of a count-float message cut R ways (c = R gives count). */
size_t coll_chunk_begin(size_t count, uint32_t R, uint32_t c);

/* The ring's schedule, the one every ring collective of ipusim follows: coll_run here, the
 * lowered all-reduce of a replicated graph (workloads/graph/graph_coll.c) and the all-reduce
 * microbenchmark (workloads/micro/micro_coll.c). The chunk ring position p sends to its
 * successor in step s of op (as above), and, when add is not NULL, whether the successor adds
 * it into its own copy (*add = 1: a reduce-scatter step) or copies it (0: an all-gather step).
 * What position p receives in step s is what position p - 1 (mod R) sends. */
uint32_t coll_step_chunk(coll_op op, uint32_t R, uint32_t s, uint32_t p, int *add);

typedef struct coll_result {
    sim_time start; /* sim_now(k) when called */
    sim_time end;   /* when the last transfer of the last step arrived (ps) */
    uint64_t bytes; /* payload bytes sent by all positions over all steps */
    uint32_t steps;
} coll_result;

/* Run one collective starting at sim_now(k), computed analytically (k is only read: nothing is
 * posted on it, its time does not move; res->end says when it ends). ERR_INPUT for R == 0, an
 * IPU id out of range or repeated in the ring. R == 1 moves nothing and takes no time. */
int coll_run(link_net *net, const sim *k, coll_op op, const uint32_t *ring, uint32_t R,
             float **bufs, size_t count, sim_time step_sync, coll_result *res, err *e);

/* The same, one name per operation. */
int coll_allreduce(link_net *net, const sim *k, const uint32_t *ring, uint32_t R, float **bufs,
                   size_t count, sim_time step_sync, coll_result *res, err *e);
int coll_reduce_scatter(link_net *net, const sim *k, const uint32_t *ring, uint32_t R, float **bufs,
                        size_t count, sim_time step_sync, coll_result *res, err *e);
int coll_all_gather(link_net *net, const sim *k, const uint32_t *ring, uint32_t R, float **bufs,
                    size_t count, sim_time step_sync, coll_result *res, err *e);

/* The closed-form alpha-beta prediction for a message of `bytes` bytes:
 *   all-reduce                  T = 2(R-1) (alpha + (bytes/R) / beta)
 *   reduce-scatter, all-gather  T =  (R-1) (alpha + (bytes/R) / beta)
 * alpha = step_sync + the largest route latency of a ring hop (ps), beta = the smallest
 * bottleneck bandwidth of a ring hop (B/s). Contention between ring hops that share a link is
 * not in the formula (rings of neighbours have none). */
typedef struct coll_ab {
    double alpha_ps;
    double beta; /* B/s */
    double t_ps; /* predicted time */
} coll_ab;
int coll_alpha_beta(const link_net *net, coll_op op, const uint32_t *ring, uint32_t R,
                    uint64_t bytes, sim_time step_sync, coll_ab *out, err *e);

#endif
