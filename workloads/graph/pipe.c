/* pipe: which pass of which micro-batch each IPU runs in each step of a pipeline schedule
 * (pipe.h gives the three schedules' formulas; docs/pipelining.md draws them), how many
 * micro-batches each IPU holds in flight, and the rules a schedule's configuration must
 * meet. It models the order of the passes only: how long a step takes is the engine's
 * business (the longest IPU's passes, then the copies between IPUs and the sync). */
#include "workloads/graph/pipe.h"

#include <string.h>

static const char *const names[] = {[PIPE_GROUPED] = "grouped",
                                    [PIPE_INTERLEAVED] = "interleaved",
                                    [PIPE_SEQUENTIAL] = "sequential"};

const char *pipe_kind_name(pipe_kind k)
{
    return k <= PIPE_SEQUENTIAL ? names[k] : "?";
}

int pipe_kind_parse(const char *s, pipe_kind *k, err *e)
{
    for (int i = 0; i <= PIPE_SEQUENTIAL; i++)
        if (strcmp(s, names[i]) == 0) {
            *k = (pipe_kind)i;
            return ERR_OK;
        }
    return err_set(e, ERR_INPUT, "schedule '%s': one of grouped, interleaved, sequential", s);
}

uint32_t pipe_steps(const pipe_cfg *c)
{
    uint32_t N = c->N, G = c->G;
    if (!c->train)
        return c->kind == PIPE_SEQUENTIAL ? N * G : G + N - 1;
    switch (c->kind) {
    case PIPE_GROUPED: return G + 2 * N - 2;
    case PIPE_INTERLEAVED: return 2 * G + 2 * N - 2;
    case PIPE_SEQUENTIAL: return (2 * N - 1) * G;
    }
    return 0;
}

uint32_t pipe_step_of(const pipe_cfg *c, pipe_pass pass, uint32_t mb, uint32_t i)
{
    uint32_t N = c->N;
    int bwd = pass == PIPE_BWD;
    if (!c->train)
        return c->kind == PIPE_SEQUENTIAL ? N * mb + i : mb + i;
    switch (c->kind) {
    case PIPE_GROUPED: return bwd ? mb + 2 * N - 2 - i : mb + i;
    case PIPE_INTERLEAVED: return bwd ? 2 * mb + 2 * N - 1 - i : 2 * mb + i;
    case PIPE_SEQUENTIAL: return (2 * N - 1) * mb + (bwd ? 2 * N - 2 - i : i);
    }
    return 0;
}

/* Appends `pass` of micro-batch m to out[n] when m is one of the run's (0 <= m < G). */
static unsigned put(const pipe_cfg *c, pipe_run *out, unsigned n, pipe_pass pass, int64_t m)
{
    if (m < 0 || m >= c->G)
        return n;
    out[n] = (pipe_run){pass, (uint32_t)m};
    return n + 1;
}

unsigned pipe_at(const pipe_cfg *c, uint32_t t, uint32_t i, pipe_run out[2])
{
    int64_t T = t, I = i, N = c->N, last = i == c->N - 1;
    if (!c->train) {
        if (c->kind != PIPE_SEQUENTIAL)
            return put(c, out, 0, PIPE_FWD, T - I);
        return T % N == I ? put(c, out, 0, PIPE_FWD, T / N) : 0;
    }
    switch (c->kind) {
    case PIPE_GROUPED:
        if (last)
            return put(c, out, 0, PIPE_FUSED, T - I);
        return put(c, out, put(c, out, 0, PIPE_FWD, T - I), PIPE_BWD, T - (2 * N - 2 - I));
    case PIPE_INTERLEAVED:
        if ((T - I) % 2 == 0)
            return put(c, out, 0, PIPE_FWD, (T - I) / 2);
        return T >= 2 * N - 1 - I ? put(c, out, 0, PIPE_BWD, (T - (2 * N - 1 - I)) / 2) : 0;
    case PIPE_SEQUENTIAL: {
        int64_t m = T / (2 * N - 1), r = T % (2 * N - 1);
        if (r == I)
            return put(c, out, 0, last ? PIPE_FUSED : PIPE_FWD, m);
        return r == 2 * N - 2 - I && !last ? put(c, out, 0, PIPE_BWD, m) : 0;
    }
    }
    return 0;
}

uint32_t pipe_in_flight(const pipe_cfg *c, uint32_t i)
{
    if (!c->train)
        return 1;
    uint32_t fwd = 0, bwd = 0, most = 0;
    for (uint32_t t = 0; t < pipe_steps(c); t++) {
        pipe_run r[2];
        unsigned n = pipe_at(c, t, i, r);
        for (unsigned k = 0; k < n; k++) {
            if (r[k].pass != PIPE_BWD)
                fwd++;
            if (fwd - bwd > most)
                most = fwd - bwd;
            if (r[k].pass != PIPE_FWD)
                bwd++;
        }
    }
    return most;
}

int pipe_check(const pipe_cfg *c, uint32_t io_tiles, err *e)
{
    uint32_t N = c->N, G = c->G;
    if (N < 2)
        return err_set(e, ERR_INPUT, "pipelining needs at least 2 IPUs (a stage on each); %u given",
                       N);
    if (c->train && G < 2 * N - 1)
        return err_set(e, ERR_INPUT,
                       "pipelined training over %u IPUs needs gradient accumulation >= 2N-1 = %u "
                       "(each of the 2N-1 pipeline stages a micro-batch); got %u",
                       N, 2 * N - 1, G);
    if (c->train && c->kind == PIPE_GROUPED && io_tiles && G < 2 * N + 2)
        return err_set(e, ERR_INPUT,
                       "grouped pipelining with I/O tiles over %u IPUs needs gradient "
                       "accumulation >= 2N+2 = %u; got %u",
                       N, 2 * N + 2, G);
    if (!c->train && G < N)
        return err_set(e, ERR_INPUT,
                       "pipelined inference over %u IPUs needs device iterations >= N = %u; got %u",
                       N, N, G);
    return ERR_OK;
}
