/* cmd_mnist.h: what `ipusim mnist`'s files share, internal to cli/. Calls run one way:
 * cmd_mnist.c (the command, the datasets, the reference run) -> cmd_mnist_sim.c (the run on
 * simulated IPUs) -> cmd_mnist_opts.c (the option table, and what both runs print and write
 * from the options: the progress lines, the plan line, the JSON document). */
#ifndef IPUSIM_CLI_CMD_MNIST_H
#define IPUSIM_CLI_CMD_MNIST_H

#include <stdint.h>

#include "base/text.h"
#include "cli/cli.h"
#include "bench/profile/profile.h"
#include "host/strm.h"
#include "workloads/mnist/balance.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/mnet.h"
#include "workloads/mnist/mref.h"
#include "workloads/mnist/spec.h"

#define MNIST_CMD "mnist"

/* The runs an option belongs to (cli_opt.modes), the one rule the checks after parsing apply
 * (and the help states): MNIST_SIM, the simulated run only (refused with --reference);
 * MNIST_TRAIN, training only (refused with --epochs 0, which trains nothing); MNIST_PIPE, a
 * pipeline over several IPUs only (refused with --strategy sharded or --ipus 1);
 * MNIST_SIM_ECHO, echoed in the simulated run's JSON only; MNIST_PLAN, a planned mapping only
 * (refused with the tutorial's network mapped a sample a tile). */
enum { MNIST_SIM = 1, MNIST_TRAIN = 2, MNIST_PIPE = 4, MNIST_SIM_ECHO = 8, MNIST_PLAN = 16 };
/* cli_ctx.first's index of each */
enum { MNIST_FIRST_SIM, MNIST_FIRST_TRAIN, MNIST_FIRST_PIPE, MNIST_FIRST_PLAN = 4 };

/* The command line, parsed: the options write straight into the workload's configuration c
 * (c.run is the reference trainer's), the shared ones into the run context x, and the few
 * that are the command's own here. */
typedef struct mnist_opts {
    mnet_cfg c;    /* as the options set it; the simulated run derives its own (mnist_sim_cfg) */
    cli_ctx x;     /* the machine, the profile, --json, the watch's options, the ranks */
    int reference; /* --reference */
    const char *dataset; /* --dataset NAME|DIR */
    const char *save;    /* --save-weights DIR, or NULL */
    const char *load;    /* --load-weights DIR, or NULL */
    const char *stages;  /* --stages as given, or NULL (resolved into c.stage_ipu) */
    int ipus;            /* --ipus: a replica's IPUs (0 until resolved) */
    int sharded;         /* --strategy sharded (else pipelined) */
    int max_calls;       /* --max-calls: train on the first N host calls' images (0: all) */
    int test_images;     /* --test-images: test on the first N test images (0: all) */
    int plan;            /* --plan: the planned operations' estimates against the run */
    int balance;         /* --balance: print the search of placements, run nothing more */
    int auto_stages;     /* --stages auto: the search's fastest placement */
} mnist_opts;

/* The defaults of the option table (cmd_mnist_opts.c: cli_mnist_opts). */
void mnist_opts_init(cli_ctx *x, void *cfg);

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
/* The outfeed mode as --output-mode takes it: all, final, sum, every:N. */
const char *mnist_mode_name(const mnet_cfg *c, char *buf, size_t len);

/* What a run measured, for its JSON document. */
typedef struct mnist_result {
    const char *mode; /* "reference" or "simulated" */
    double test_acc, train_s, test_s;
    long trained;
    json *extra;   /* further members of the document (an object), or NULL */
    const mach *m; /* the machine simulated, or NULL (the reference run) */
} mnist_result;
/* Write the JSON document to --json whole (0) or not at all (2, after one line), its config's
 * options from the table (the simulated run's with a machine); res->extra is freed. */
int mnist_json(const mnist_opts *o, const char *dir, const mdata *d, const mnist_run *r,
               const mnist_result *res);

/* The simulated run's configuration from the options, checked (the outfeed mode, the
 * pipeline's rules): 0, or the err's status with e set. */
int mnist_sim_cfg(const mnist_opts *o, mnet_cfg *c, err *e);

/* The search of pipeline placements (cmd_mnist_bal.c): what it measured and found. */
typedef struct mnist_bal {
    mbal_counts counts;
    char m_name[32];
    mbal_cal cal;
    size_t nest;
    mbal_est est[MBAL_MAX_RUNS]; /* fastest first */
    mbal_est hand;               /* the default --stages of --ipus (its step 0 when the
                                  * calibration cannot estimate it: hand_why says why) */
    char hand_why[256];
} mnist_bal;
/* Calibrate and search the placements of c's network over at most --ipus IPUs (training
 * images train, initial weights params), printing the calibration's runs and the search's
 * table; c takes the fastest placement (its stage_ipu and IPUs). 0, or the err's status. */
int mnist_balance(const mnist_opts *o, mnet_cfg *c, const mdata_split *train, const float *params,
                  mnist_bal *b, err *e);
/* The report's line: the chosen placement's estimated main step beside the simulated one (m)
 * and the hand placement's estimate; its JSON object. */
void mnist_balance_report(const mnist_bal *b, const mnet_pipe_steps *m);
json *mnist_balance_json(const mnist_bal *b, const mnet_pipe_steps *m);

/* The simulated run on the loaded dataset: train, test, report; the exit status. */
int cli_mnist_sim(mnist_opts *o, const char *dir, const mdata *d);

#endif
