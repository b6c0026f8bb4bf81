/* pool: the host threads that run tiles in parallel, bound with libnuma where it exists.
 *
 * Threads meet once per call to pool_run (once per compute round), never per cycle. Each
 * thread takes chunks of its own contiguous lane of the items, then what is left of the
 * others' lanes, so threads that drew heavy items take fewer and all finish together, and a
 * job over the same items as the last runs each where it ran before; on a NUMA host it is
 * split statically and interleaved instead (thread k of T takes items k, k + T, ...), so an
 * item always runs on the node its memory was placed on. Which thread runs an item never changes a result (the items of one job are
 * independent). */
#ifndef IPUSIM_POOL_H
#define IPUSIM_POOL_H

#include <stddef.h>

typedef struct pool pool;
typedef void (*pool_fn)(void *ctx, size_t item);

/* Start `threads` threads in all (the caller counts as thread 0); fewer when the system
 * refuses more threads. Never NULL. */
pool *pool_new(unsigned threads);
void pool_free(pool *p);
unsigned pool_threads(const pool *p);

/* Run fn(ctx, i) for i in [0, n) across the threads; returns when all are done. */
void pool_run(pool *p, size_t n, pool_fn fn, void *ctx);

/* Whether every thread is still spinning for the next job (none has gone to sleep since the
 * last one), so that a job now starts without waking any: a hint for whether a small job
 * is worth sharing. 1 with one thread. */
int pool_awake(pool *p);

/* NUMA facts for reports: nodes seen by libnuma (0 when NUMA is unavailable). */
int pool_numa_nodes(const pool *p);

/* Place [addr, addr+len) on the node of thread k (no-op without NUMA): on a NUMA host item
 * i of a job of n >= T items runs on thread i mod T. */
void pool_place(const pool *p, unsigned k, void *addr, size_t len);

/* Number of online CPUs (the default for --threads). */
unsigned pool_online_cpus(void);

#endif
