/* pool: a fixed set of pthreads with a generation counter; one barrier per pool_run.
 *
 * Thread k is bound to NUMA node k mod nodes with numa_run_on_node() when libnuma reports
 * more than one node; memory is placed with numa_tonode_memory(). On a machine without NUMA
 * (numa_available() < 0) or with one node, binding is skipped and first-touch placement is
 * what the OS does anyway. Left out: work stealing (a static, interleaved split keeps placement
 * stable). */
#include "hw/pool.h"

#include <numa.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/alloc.h"

struct worker_arg {
    pool *p;
    unsigned k;
};

struct pool {
    unsigned n;
    pthread_t *th;
    struct worker_arg *args;
    int *node;
    int nodes;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned long gen;
    unsigned pending;
    int quit;
    /* the current job */
    size_t items;
    pool_fn fn;
    void *ctx;
};

static void run_share(pool *p, unsigned k, size_t items, pool_fn fn, void *ctx)
{
    for (size_t i = k; i < items; i += p->n)
        fn(ctx, i);
}

static void *thread_main(void *arg)
{
    struct worker_arg *wa = arg;
    pool *p = wa->p;
    unsigned k = wa->k;
    if (p->node[k] >= 0)
        numa_run_on_node(p->node[k]);
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->gen == seen && !p->quit)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->gen;
        size_t items = p->items;
        pool_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);

        run_share(p, k, items, fn, ctx);

        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
}

pool *pool_new(unsigned threads)
{
    if (threads == 0)
        threads = 1;
    pool *p = xcalloc(1, sizeof *p);
    p->n = threads;
    p->th = xcalloc(threads, sizeof *p->th);
    p->args = xcalloc(threads, sizeof *p->args);
    p->node = xcalloc(threads, sizeof *p->node);
    p->nodes = numa_available() >= 0 ? numa_num_configured_nodes() : 0;
    for (unsigned k = 0; k < threads; k++)
        p->node[k] = p->nodes > 1 ? (int)(k % (unsigned)p->nodes) : -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    if (p->node[0] >= 0)
        numa_run_on_node(p->node[0]);
    for (unsigned k = 1; k < threads; k++) {
        p->args[k].p = p;
        p->args[k].k = k;
        if (pthread_create(&p->th[k], NULL, thread_main, &p->args[k]) != 0) {
            p->n = k; /* run with the threads we have; pool_free joins them */
            break;
        }
    }
    return p;
}

void pool_free(pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (unsigned k = 1; k < p->n; k++)
        pthread_join(p->th[k], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    free(p->th);
    free(p->args);
    free(p->node);
    free(p);
}

unsigned pool_threads(const pool *p)
{
    return p->n;
}

void pool_run(pool *p, size_t n, pool_fn fn, void *ctx)
{
    if (p->n == 1 || n < 2) {
        for (size_t i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->items = n;
    p->fn = fn;
    p->ctx = ctx;
    p->pending = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);

    run_share(p, 0, n, fn, ctx);

    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

int pool_numa_nodes(const pool *p)
{
    return p->nodes;
}

void pool_place(const pool *p, unsigned k, void *addr, size_t len)
{
    if (k < p->n && p->node[k] >= 0 && len > 0)
        numa_tonode_memory(addr, len, p->node[k]);
}

unsigned pool_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}
