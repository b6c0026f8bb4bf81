/* rank: the processes of one run, over MPI (Open MPI) when the build has it, else one rank.
 *
 * Under mpirun each process is one rank of MPI_COMM_WORLD; the collectives are
 * MPI_Allgather and MPI_Allgatherv over bytes (counts above INT_MAX are refused: they would
 * be a simulated system far beyond one collective's reach). Started without mpirun, the
 * process is one rank and MPI is never initialised, so plain `ipusim` needs no MPI daemon.
 * Built without MPI (IPUSIM_MPI undefined), one rank is all there is: a launch as several
 * ranks is refused with a message saying how to get MPI. Left out: communicators other
 * than the world, non-blocking collectives, fault tolerance (a rank that dies makes mpirun
 * stop the others). */
#include "base/rank.h"

#include <assert.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"

#ifdef IPUSIM_MPI
#include <mpi.h>
#endif

struct rank_comm {
    unsigned id, size;
    int mpi;                    /* MPI was initialised here (finalise it at rank_close) */
    uint64_t wait_ns, ncollect; /* host time inside collectives, and their number */
};

#ifdef IPUSIM_MPI
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

/* The first of the launcher's variables `vars` that is set, as a number; 0 when none is. */
static long launcher_var(const char *const *vars, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const char *v = getenv(vars[k]);
        if (v && *v)
            return strtol(v, NULL, 10);
    }
    return 0;
}

/* The launcher's rank count: Open MPI's, else PMIx/PMI's; 0 when not launched by one. */
static long launched_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
    return launcher_var(vars, sizeof vars / sizeof vars[0]);
}

unsigned rank_launched_id(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    return (unsigned)launcher_var(vars, sizeof vars / sizeof vars[0]);
}

int rank_launched(void)
{
    return launched_size() > 1;
}

int rank_mpi_built(void)
{
#ifdef IPUSIM_MPI
    return 1;
#else
    return 0;
#endif
}

rank_comm *rank_open(int *argc, char ***argv, err *e)
{
    rank_comm *c = xcalloc(1, sizeof *c);
    c->size = 1;
    if (!rank_launched())
        return c;
#ifdef IPUSIM_MPI
    (void)e;
    int id, size;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &id);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    c->id = (unsigned)id;
    c->size = (unsigned)size;
    c->mpi = 1;
    return c;
#else
    (void)argc;
    (void)argv;
    free(c);
    err_set(e, ERR_INPUT,
            "started by mpirun as %ld ranks, but this ipusim was built without MPI (install "
            "libopenmpi-dev and openmpi-bin, e.g. with make deps, then rebuild)",
            launched_size());
    return NULL;
#endif
}

void rank_close(rank_comm *c)
{
    if (!c)
        return;
#ifdef IPUSIM_MPI
    if (c->mpi)
        MPI_Finalize();
#endif
    free(c);
}

unsigned rank_id(const rank_comm *c)
{
    return c ? c->id : 0;
}

unsigned rank_size(const rank_comm *c)
{
    return c ? c->size : 1;
}

void rank_allgather(rank_comm *c, const void *mine, size_t n, void *all)
{
    if (rank_size(c) == 1) {
        memmove(all, mine, n);
        return;
    }
#ifdef IPUSIM_MPI
    assert(n <= INT_MAX);
    uint64_t t0 = now_ns();
    MPI_Allgather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, MPI_COMM_WORLD);
    c->wait_ns += now_ns() - t0;
    c->ncollect++;
#endif
}

void rank_waited(const rank_comm *c, uint64_t *ns, uint64_t *calls)
{
    *ns = c ? c->wait_ns : 0;
    *calls = c ? c->ncollect : 0;
}

void *rank_allgatherv(rank_comm *c, const void *mine, size_t n, size_t *counts)
{
    unsigned size = rank_size(c);
    if (size == 1) {
        counts[0] = n;
        void *all = xmalloc(n ? n : 1);
        if (n)
            memcpy(all, mine, n);
        return all;
    }
    uint64_t own = n, *each = xmalloc(size * sizeof *each);
    rank_allgather(c, &own, sizeof own, each);
    size_t total = 0;
    for (unsigned r = 0; r < size; r++) {
        counts[r] = (size_t)each[r];
        total += counts[r];
    }
    free(each);
    void *all = xmalloc(total ? total : 1);
#ifdef IPUSIM_MPI
    assert(total <= INT_MAX);
    int *cnt = xmalloc(size * sizeof *cnt), *off = xmalloc(size * sizeof *off), at = 0;
    for (unsigned r = 0; r < size; r++) {
        cnt[r] = (int)counts[r];
        off[r] = at;
        at += cnt[r];
    }
    uint64_t t0 = now_ns();
    MPI_Allgatherv(mine, (int)n, MPI_BYTE, all, cnt, off, MPI_BYTE, MPI_COMM_WORLD);
    c->wait_ns += now_ns() - t0;
    c->ncollect++;
    free(cnt);
    free(off);
#else
    (void)mine;
#endif
    return all;
}
