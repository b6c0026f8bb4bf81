/* rank: the processes of one run (MPI ranks under mpirun, or this process alone).
 *
 * A run started by `mpirun -np R ipusim ...` is R processes; each is one rank, numbered
 * 0..R-1. This module is the only place that knows about MPI: the engine and the fabric see
 * a rank_comm and a few collective calls. Built without MPI, or started without mpirun, it
 * is one rank whose collectives are plain copies: the same interface, one process. Every
 * collective must be called by every rank, in the same order, with the same sizes where the
 * call says so. */
#ifndef IPUSIM_RANK_H
#define IPUSIM_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct rank_comm rank_comm;

/* Whether this process was started by mpirun as one of several ranks (read from the
 * launcher's environment, before any MPI call). */
int rank_launched(void);

/* This process's rank as the launcher numbered it (0 when not launched by one): who speaks
 * when MPI cannot be started. */
unsigned rank_launched_id(void);

/* Whether this build can run as several ranks (it was compiled against MPI). */
int rank_mpi_built(void);

/* Join the run's ranks: MPI when launched by mpirun with more than one rank, else one
 * rank. NULL and e set when launched as several ranks by a build without MPI. */
rank_comm *rank_open(int *argc, char ***argv, err *e);
/* Leave (MPI_Finalize where MPI was started); NULL is ignored. */
void rank_close(rank_comm *c);

/* This rank's number and the number of ranks; a NULL comm is one rank, number 0. */
unsigned rank_id(const rank_comm *c);
unsigned rank_size(const rank_comm *c);

/* Host time this rank has spent inside collectives since rank_open (waiting for the others
 * and moving the bytes), in nanoseconds, and how many it called. */
void rank_waited(const rank_comm *c, uint64_t *ns, uint64_t *calls);

/* Every rank gives `n` bytes (the same n everywhere); `all` receives size x n bytes, rank
 * r's at r x n. */
void rank_allgather(rank_comm *c, const void *mine, size_t n, void *all);

/* Every rank gives `n` bytes (n may differ); returns a buffer (free it) holding every
 * rank's bytes in rank order, with counts[r] (size entries) their lengths. */
void *rank_allgatherv(rank_comm *c, const void *mine, size_t n, size_t *counts);

#endif
