/* cmd_mnist.h: what `ipusim mnist`'s two halves share, internal to cli/: cmd_mnist.c (the
 * options, the datasets, the reference run) and cmd_mnist_sim.c (the run on a simulated IPU).
 * Both print the tutorial's progress lines through mnist_epoch and mnist_call, and write the
 * same JSON document through mnist_json, the simulated run adding its members. */
#ifndef IPUSIM_CLI_CMD_MNIST_H
#define IPUSIM_CLI_CMD_MNIST_H

#include <stdint.h>

#include "base/text.h"
#include "cli/cli.h"
#include "bench/profile/profile.h"
#include "host/strm.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/mnet.h"
#include "workloads/mnist/mref.h"
#include "workloads/mnist/spec.h"

#define MNIST_CMD "mnist"

/* The command line, parsed. */
typedef struct mnist_opts {
    mref_cfg cfg;
    int reference;
    const char *dataset, *save, *load, *json;
    const mspec *net; /* --network: the layer table trained (the simulated run: the tutorial's) */
    /* the simulated run only */
    cli_machine mo;
    mach m;                /* --machine and --set, resolved */
    int threads;           /* host threads; 0: the online CPUs */
    int depth;             /* infeed and outfeed buffering */
    host_cfg host;         /* the infeed's host: --loaders, --prep-us, --host-dist, --callback-us */
    sim_time drain_ps;     /* the outfeed's host: --drain-us */
    strm_mode out_mode;    /* --output-mode */
    uint32_t out_n;        /* its N (every:N), else 1 */
    int steps;             /* --steps: list the first N program steps of training */
    int ipus;              /* --ipus */
    int progress;          /* --progress */
    mnet_dtype dtype;      /* --dtype */
    uint64_t max_step;     /* --max-superstep-cycles */
    int sharded;           /* --strategy sharded (else pipelined) */
    int schedule;          /* --schedule: a pipe_kind */
    const char *pipe_only; /* the first of --schedule, --recompute given: only a pipeline
                            * over several IPUs takes them */
    int recompute;         /* --recompute on|off (default on, as PopTorch pipelines) */
    int replicas;          /* --replicas R */
    int io_tiles;          /* --io-tiles N */
    int offload;           /* --offload-optimiser: AdamW's m and v in remote buffers */
    int mapping;           /* --mapping: mnet_mapping (sample, planned) */
    int plan;              /* --plan: the planned operations' estimates against the run */
    const char *stages;    /* --stages: the IPU of each block, or NULL */
    uint32_t stage_ipu[4]; /* resolved */
    int max_calls;         /* --max-calls: train on the first N host calls' images (0: all) */
    int test_images;       /* --test-images: test on the first N test images (0: all) */
    cli_profile prof;      /* --profile and its options: the training run's profile */
    const char *sim_only;  /* the first option given that only the simulated run takes, or NULL */
    const char *train_only;  /* the first option given that only training takes, or NULL: with
                             * --epochs 0 it would shape nothing (cmd_mnist.c, the table) */
    struct rank_comm *ranks; /* the run's MPI ranks (base/rank.h): the simulated run spreads */
    int rank_stats;          /* --rank-stats */
    cli_inv inv;             /* the command as given, for the reports' config */
} mnist_opts;

/* The progress of a training run: the JSON items of its calls and epochs (arrays, NULL before
 * the first call). */
typedef struct mnist_run {
    json *calls, *epochs;
    double t_epoch;
    double ep_loss, ep_acc;
    int ep_calls;
} mnist_run;

/* Print "Epoch e/E" and start the epoch's summary. */
void mnist_epoch(mnist_run *r, int epoch, int epochs);
/* Print the call's "Loss:... | Accuracy:...: c/C" line and record it: the last item of
 * r->calls, and on an epoch's last call of r->epochs (the simulated run adds its members to
 * both). */
void mnist_call(mnist_run *r, const mref_progress *p);
/* Free the items. */
void mnist_run_free(mnist_run *r);
/* Images in one host call: batch x gradient accumulation x device iterations x replicas. */
long mnist_per_call(const mnist_opts *o);
/* Images a run trains on: every epoch's whole host calls. */
long mnist_trained(const mnist_opts *o, const mdata_split *train);
/* The run's plan, the line after the dataset's: batch, calls, AdamW, seed, weights; `more`
 * ends the line ("" or "; ..."). */
void mnist_print_plan(const mnist_opts *o, const mdata_split *train, const char *more);

/* What a run measured, for its JSON document. */
typedef struct mnist_result {
    const char *mode; /* "reference" or "simulated" */
    double test_acc, train_s, test_s;
    long trained;
    json *extra;   /* further members of the document (an object), or NULL */
    const mach *m; /* the machine simulated, or NULL (the reference run) */
    json *options; /* the simulated run's resolved options (an object), or NULL */
} mnist_result;
/* Write the JSON document to o->json whole (0) or not at all (2, after one line); res->extra
 * and res->options are freed. */
int mnist_json(const mnist_opts *o, const char *dir, const mdata *d, const mnist_run *r,
               const mnist_result *res);

/* The simulated run's configuration from the options, checked (the outfeed mode, the
 * pipeline's rules): 0, or the err's status with e set. */
int mnist_sim_cfg(const mnist_opts *o, mnet_cfg *c, err *e);

/* The simulated run on the loaded dataset: train, test, report; the exit status. */
int cli_mnist_sim(const mnist_opts *o, const char *dir, const mdata *d);

#endif
