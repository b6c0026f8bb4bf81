/* pipe: pipeline schedules, as PopART and TensorFlow define them (docs/pipelining.md).
 *
 * A model cut into N stages, stage i on IPU i, runs G micro-batches through the pipeline in
 * steps: in each step every IPU runs the passes the schedule gives it (at most a forward and
 * a backward), then the activations and gradients cross to the neighbouring IPUs, then all
 * IPUs sync. Training has 2N-1 pipeline stages: forward stages on IPUs 0..N-1 and backward
 * stages back down on IPUs N-2..0; the last forward stage is fused with its backward.
 *   grouped      step t: IPU i runs forward(t - i), then backward(t - (2N-2-i)); the last IPU
 *                runs fused(t - (N-1)): the forward, the loss and the backward of one
 *                micro-batch. G + 2N - 2 steps: fill 2N-2, main G-2N+2, flush 2N-2.
 *   interleaved  each step an IPU runs one pass: forward(m) at step 2m + i, backward(m) at
 *                2m + 2N-1-i (the last IPU's forward with the loss, then its backward in the
 *                next step). 2G + 2N - 2 steps.
 *   sequential   one micro-batch at a time, as sharding runs it: forward(m) on IPU i at step
 *                (2N-1) m + i, fused on the last, backward at (2N-1) m + 2N-2-i.
 *                (2N-1) G steps.
 * Inference has forward passes only: forward(m) on IPU i at step m + i (grouped and
 * interleaved: K + N - 1 steps for K micro-batches), or N m + i (sequential: N K steps).
 * Pure functions; nothing here knows what a stage computes. */
#ifndef IPUSIM_GRAPH_PIPE_H
#define IPUSIM_GRAPH_PIPE_H

#include <stdint.h>

#include "base/err.h"

typedef enum { PIPE_GROUPED, PIPE_INTERLEAVED, PIPE_SEQUENTIAL } pipe_kind;

/* A pass of one stage over one micro-batch. */
typedef enum {
    PIPE_FWD,  /* the stage's forward (on the last IPU in training: with the loss) */
    PIPE_BWD,  /* its backward */
    PIPE_FUSED /* the last IPU's forward, loss and backward in one step (grouped, sequential) */
} pipe_pass;

typedef struct pipe_run {
    pipe_pass pass;
    uint32_t mb; /* the micro-batch, 0..G-1 */
} pipe_run;

typedef struct pipe_cfg {
    pipe_kind kind;
    uint32_t N; /* stages (IPUs) */
    uint32_t G; /* micro-batches: the gradient accumulation (training), or the micro-batches
                 * of one pipeline run (inference: the device iterations) */
    int train;
} pipe_cfg;

const char *pipe_kind_name(pipe_kind k);
/* ERR_OK and *k, or ERR_INPUT with a message listing the schedules. */
int pipe_kind_parse(const char *s, pipe_kind *k, err *e);

/* Steps of one pipeline run. */
uint32_t pipe_steps(const pipe_cfg *c);
/* The passes IPU i runs in step t, in order, into out; returns how many (0..2). */
unsigned pipe_at(const pipe_cfg *c, uint32_t t, uint32_t i, pipe_run out[2]);
/* The step in which IPU i runs `pass` of micro-batch mb. */
uint32_t pipe_step_of(const pipe_cfg *c, pipe_pass pass, uint32_t mb, uint32_t i);
/* IPU i's micro-batches in flight in training: the most whose forward has run and whose
 * backward has not, just after a forward (counting that one): grouped 2N-1-2i, interleaved
 * N-i, sequential 1, the last IPU 1. What the IPU keeps of them (the stash) is this many
 * micro-batches' activations. Inference: 1. */
uint32_t pipe_in_flight(const pipe_cfg *c, uint32_t i);
/* The rules, each a one-line ERR_INPUT naming it: N >= 2; training needs G >= 2N-1 (every
 * pipeline stage must get a micro-batch before the flush); grouped with I/O tiles
 * (io_tiles > 0) needs G >= 2N+2 (TensorFlow's rule); inference needs G >= N. */
int pipe_check(const pipe_cfg *c, uint32_t io_tiles, err *e);

#endif
