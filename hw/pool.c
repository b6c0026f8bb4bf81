/* pool: a fixed set of pthreads; one meeting per pool_run, spinning briefly before sleeping.
 *
 * A job's items are cut into one contiguous lane per thread; a thread takes its own lane's
 * items in chunks (about 16 a lane) and then steals chunks from the other lanes, so a thread
 * that drew heavy items takes fewer and the threads finish together whatever the items
 * cost, while a job like the last one (the engine's rounds over the same tiles) gives each
 * thread the items it ran last time, whose state is still in its caches (measured, 1472
 * busy tiles a round on 2 threads: 1.97x over one thread, against 1.71x when every chunk
 * came from one shared counter). A thread joins a job when it comes to it; once the caller
 * has run out of items it closes the job and waits only for the threads that joined, so a
 * thread slow to wake (a sleeping one on a busy host: a millisecond) holds up no job
 * whose items the others took. On a host with more than one NUMA node the split is instead
 * static and interleaved (thread k takes items k, k + T, ...), so a tile always runs on the
 * node its memory was placed on, and the caller waits for every thread to join. Which
 * thread runs an item never changes a result: the items of one job are independent.
 * Threads wait for the next job, and the caller for the threads, spinning for up to
 * POOL_SPIN_NS of host time before sleeping on a condition variable (a job that follows
 * within that time starts without a system call). Thread k is bound to NUMA node k mod
 * nodes with numa_run_on_node() when libnuma reports more than one node; memory is placed
 * with numa_tonode_memory(). On a machine without NUMA (numa_available() < 0) or with one
 * node, binding is skipped and first-touch placement is what the OS does anyway. Left out:
 * stealing between NUMA nodes. */
#include "hw/pool.h"

#include <numa.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"

/* How long a thread spins for the next job, or the caller for the threads, before sleeping
 * (long enough to cover the engine's serial work between two rounds, delivery included:
 * 1472 busy tiles sending each superstep ran 1.64x faster on 2 threads than on one with
 * 50 us, 1.80x with 200 us; short enough that on a host shared with other work a spinning
 * thread soon gives its core back), and how many chunks a lane is cut into. */
enum { POOL_SPIN_NS = 200000, POOL_CHUNKS_PER_THREAD = 16 };

struct worker_arg {
    pool *p;
    unsigned k;
};

/* pool.job: the job's number above JOB_SHIFT, the closed flag, the threads that joined. */
#define JOB_SHIFT 16
#define JOB_CLOSED (1ull << 15)
#define JOB_JOINED (JOB_CLOSED - 1)

/* A thread's part of a job, items [next, end) not yet taken (a line of its own: stealing
 * touches another thread's lane only at its end). */
struct lane {
    _Alignas(64) atomic_size_t next;
    size_t end;
};

struct pool {
    unsigned n;
    pthread_t *th;
    struct worker_arg *args;
    int *node;
    int nodes;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    /* the current job: its number << JOB_SHIFT, JOB_CLOSED once the caller has closed it,
     * and how many threads joined it before (job_join) */
    atomic_ullong job;
    atomic_uint finished;     /* threads that joined the current job and are done with it */
    struct lane *lane;        /* per thread: its part of the current job */
    unsigned sleeping;        /* threads asleep on `go` (under mu) */
    atomic_int caller_asleep; /* the caller sleeps on `done` (set under mu) */
    atomic_int quit;
    /* the current job */
    size_t items, chunk;
    pool_fn fn;
    void *ctx;
};

static uint64_t host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Run the chunks of lane l that are left. */
static void run_lane(pool *p, struct lane *l)
{
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&l->next, p->chunk, memory_order_relaxed);
        if (i >= l->end)
            return;
        size_t end = i + p->chunk < l->end ? i + p->chunk : l->end;
        for (; i < end; i++)
            p->fn(p->ctx, i);
    }
}

/* Thread k's part of the job: its lane, then what is left of the others', or (NUMA) its
 * interleave. */
static void run_share(pool *p, unsigned k)
{
    size_t items = p->items;
    if (p->nodes > 1) {
        for (size_t i = k; i < items; i += p->n)
            p->fn(p->ctx, i);
        return;
    }
    for (unsigned j = 0; j < p->n; j++)
        run_lane(p, &p->lane[(k + j) % p->n]);
}

static unsigned long long job_number(const pool *p)
{
    return atomic_load_explicit(&p->job, memory_order_acquire) >> JOB_SHIFT;
}

/* Wait for a job after number `seen`; returns its number, or 0 when the pool quits. */
static unsigned long long next_job(pool *p, unsigned long long seen)
{
    uint64_t until = host_ns() + POOL_SPIN_NS;
    for (unsigned spins = 0;; spins++) {
        unsigned long long g = job_number(p);
        if (g != seen || atomic_load(&p->quit))
            return atomic_load(&p->quit) ? 0 : g;
        if ((spins & 63) == 63 && host_ns() > until)
            break;
    }
    pthread_mutex_lock(&p->mu);
    p->sleeping++;
    while (job_number(p) == seen && !atomic_load(&p->quit))
        pthread_cond_wait(&p->go, &p->mu);
    p->sleeping--;
    pthread_mutex_unlock(&p->mu);
    return atomic_load(&p->quit) ? 0 : job_number(p);
}

/* Join job g unless the caller has closed it (every item taken before this thread came) or
 * a later one has begun: 1 when joined (the caller then waits for this thread). */
static int job_join(pool *p, unsigned long long g)
{
    unsigned long long s = atomic_load_explicit(&p->job, memory_order_acquire);
    while (s >> JOB_SHIFT == g && !(s & JOB_CLOSED))
        if (atomic_compare_exchange_weak_explicit(&p->job, &s, s + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return 1;
    return 0;
}

/* Wake the caller if it sleeps waiting for the threads (it checks again what it waits for). */
static void wake_caller(pool *p)
{
    if (!atomic_load_explicit(&p->caller_asleep, memory_order_seq_cst))
        return;
    pthread_mutex_lock(&p->mu);
    pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
}

static void *thread_main(void *arg)
{
    struct worker_arg *wa = arg;
    pool *p = wa->p;
    unsigned k = wa->k;
    if (p->node[k] >= 0)
        numa_run_on_node(p->node[k]);
    unsigned long long seen = 0;
    while ((seen = next_job(p, seen)) != 0) {
        if (!job_join(p, seen))
            continue;   /* closed, or a later one: wait for what comes after it */
        wake_caller(p); /* it may wait for every thread to join (NUMA) */
        run_share(p, k);
        atomic_fetch_add_explicit(&p->finished, 1, memory_order_seq_cst);
        wake_caller(p);
    }
    return NULL;
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
    p->lane = xcalloc_aligned(threads, sizeof *p->lane, 64);
    p->nodes = numa_available() >= 0 ? numa_num_configured_nodes() : 0;
    for (unsigned k = 0; k < threads; k++)
        p->node[k] = p->nodes > 1 ? (int)(k % (unsigned)p->nodes) : -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->job, 0);
    atomic_init(&p->finished, 0);
    atomic_init(&p->caller_asleep, 0);
    atomic_init(&p->quit, 0);
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
    atomic_store(&p->quit, 1);
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
    free(p->lane);
    free(p);
}

unsigned pool_threads(const pool *p)
{
    return p->n;
}

/* Whether `cond` holds for p, spinning up to POOL_SPIN_NS, then sleeping on `done`. */
static void wait_until(pool *p, int (*cond)(pool *))
{
    uint64_t until = host_ns() + POOL_SPIN_NS;
    for (unsigned spins = 0; !cond(p); spins++)
        if ((spins & 63) == 63 && host_ns() > until)
            break;
    if (cond(p))
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->caller_asleep, 1, memory_order_seq_cst);
    while (!cond(p))
        pthread_cond_wait(&p->done, &p->mu);
    atomic_store_explicit(&p->caller_asleep, 0, memory_order_seq_cst);
    pthread_mutex_unlock(&p->mu);
}

/* Every other thread has joined the job (the static NUMA split needs each one's part). */
static int all_joined(pool *p)
{
    return (atomic_load_explicit(&p->job, memory_order_seq_cst) & JOB_JOINED) == p->n - 1;
}

/* Every thread that joined the closed job is done with it. */
static int joined_done(pool *p)
{
    unsigned long long joined = atomic_load_explicit(&p->job, memory_order_seq_cst) & JOB_JOINED;
    return atomic_load_explicit(&p->finished, memory_order_seq_cst) == joined;
}

void pool_run(pool *p, size_t n, pool_fn fn, void *ctx)
{
    if (p->n == 1 || n < 2) {
        for (size_t i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    size_t chunk = n / ((size_t)p->n * POOL_CHUNKS_PER_THREAD);
    p->items = n;
    p->chunk = chunk ? chunk : 1;
    p->fn = fn;
    p->ctx = ctx;
    for (unsigned k = 0; k < p->n; k++) {
        atomic_store_explicit(&p->lane[k].next, n * k / p->n, memory_order_relaxed);
        p->lane[k].end = n * (k + 1) / p->n;
    }
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->job, (job_number(p) + 1) << JOB_SHIFT, memory_order_release);
    if (p->sleeping)
        pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);

    run_share(p, 0);
    if (p->nodes > 1) /* each thread's interleave is its own: wait for every thread */
        wait_until(p, all_joined);
    /* a thread that comes after this finds every item taken: the job is not waited for it */
    atomic_fetch_or_explicit(&p->job, JOB_CLOSED, memory_order_seq_cst);
    wait_until(p, joined_done);
}

int pool_awake(pool *p)
{
    pthread_mutex_lock(&p->mu);
    int awake = p->sleeping == 0;
    pthread_mutex_unlock(&p->mu);
    return awake;
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
