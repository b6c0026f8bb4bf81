/* cmd_mnist_opts: `ipusim mnist`'s option table, and what both of its runs (the reference
 * and the simulated) print and write from the options: the tutorial's progress lines, the
 * plan line, the JSON document with its config. Models nothing. The lowest of mnist's files
 * (cli/cmd_mnist.h): it calls neither of the others. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/text.h"
#include "cli/cli.h"
#include "cli/cmd_mnist.h"
#include "host/host.h"
#include "workloads/graph/pipe.h"

#define CMD MNIST_CMD

/* ---- progress ---- */

void mnist_epoch(mnist_run *r, int epoch, int epochs)
{
    printf("Epoch %d/%d\n", epoch, epochs);
    fflush(stdout);
    r->t_epoch = cli_now();
    r->ep_loss = r->ep_acc = 0.0;
    r->ep_calls = 0;
}

void mnist_call(mnist_run *r, const mref_progress *p)
{
    printf("Loss:%0.4f | Accuracy:%0.2f%%: %d/%d\n", p->loss, p->accuracy, p->call, p->calls);
    fflush(stdout);
    if (!r->calls) {
        r->calls = json_arr();
        r->epochs = json_arr();
    }
    json *c = json_put(r->calls, NULL, json_obj());
    json_put_u64(c, "epoch", (uint64_t)p->epoch);
    json_put_u64(c, "call", (uint64_t)p->call);
    json_put_u64(c, "images", (uint64_t)p->images);
    json_put_num(c, "loss", p->loss);
    json_put_num(c, "accuracy", p->accuracy);
    r->ep_loss += p->loss;
    r->ep_acc += p->accuracy;
    r->ep_calls++;
    if (p->call != p->calls)
        return;
    json *e = json_put(r->epochs, NULL, json_obj());
    json_put_u64(e, "epoch", (uint64_t)p->epoch);
    json_put_u64(e, "calls", (uint64_t)p->calls);
    json_put_num(e, "last_loss", p->loss);
    json_put_num(e, "last_accuracy", p->accuracy);
    json_put_num(e, "mean_loss", r->ep_loss / r->ep_calls);
    json_put_num(e, "mean_accuracy", r->ep_acc / r->ep_calls);
    json_put_num(e, "seconds", cli_now() - r->t_epoch);
}

void mnist_run_free(mnist_run *r)
{
    json_object_put(r->calls);
    json_object_put(r->epochs);
    r->calls = r->epochs = NULL;
}

long mnist_per_call(const mnist_opts *o)
{
    const mref_cfg *c = &o->c.run;
    return (long)c->batch * c->grad_accum * c->device_iters * (long)o->c.replicas;
}

long mnist_trained(const mnist_opts *o, const mdata_split *train)
{
    long per_call = mnist_per_call(o);
    return (long)o->c.run.epochs * ((long)train->n / per_call) * per_call;
}

void mnist_print_plan(const mnist_opts *o, const mdata_split *train, const char *more)
{
    const mref_cfg *c = &o->c.run;
    long per_call = mnist_per_call(o);
    char reps[32] = "";
    if (o->c.replicas > 1)
        snprintf(reps, sizeof reps, " x replicas %u", o->c.replicas);
    printf("batch %d x gradient accumulation %d x device iterations %d%s = %ld images per host "
           "call, %ld call%s per epoch; AdamW lr %g; seed %llu%s%s%s\n",
           c->batch, c->grad_accum, c->device_iters, reps, per_call, (long)train->n / per_call,
           (long)train->n / per_call == 1 ? "" : "s", c->opt.lr, (unsigned long long)c->seed,
           o->load ? "; weights from " : "", o->load ? o->load : "", more);
}

const char *mnist_mode_name(const mnet_cfg *c, char *buf, size_t len)
{
    return strm_mode_format(c->out_mode, c->out_n, buf, len);
}

/* ---- the options ---- */

/* --network NAME: one of mspec's tables. */
static int take_network(const char *cmd, const char *opt, const char *v, void *dst)
{
    (void)opt;
    if ((*(const mspec **)dst = mspec_find(v)) != NULL)
        return 0;
    txt names = {0};
    for (int i = 0; mspec_at(i); i++)
        txt_printf(&names, "%s%s", i ? ", " : "", mspec_at(i)->name);
    fprintf(stderr, "ipusim %s: --network %s: expected %s\n", cmd, v, txt_str(&names));
    txt_free(&names);
    return 2;
}

/* --schedule S: a pipe_kind. */
static int take_schedule(const char *cmd, const char *opt, const char *v, void *dst)
{
    err e;
    err_clear(&e);
    if (pipe_kind_parse(v, dst, &e) == ERR_OK)
        return 0;
    fprintf(stderr, "ipusim %s: %s: %s\n", cmd, opt, e.msg);
    return 2;
}

/* --output-mode M into the configuration's out_mode and out_n. */
static int take_output_mode(const char *cmd, const char *opt, const char *v, void *dst)
{
    mnet_cfg *c = dst;
    err e;
    err_clear(&e);
    if (strm_mode_parse(v, &c->out_mode, &c->out_n, &e) == ERR_OK)
        return 0;
    fprintf(stderr, "ipusim %s: %s: %s\n", cmd, opt, e.msg);
    return 2;
}

/* --host-dist D into the host's distribution. */
static int take_dist(const char *cmd, const char *opt, const char *v, void *dst)
{
    err e;
    err_clear(&e);
    (void)opt;
    return host_dist_parse(dst, v, &e) == ERR_OK ? 0 : cli_report_err(cmd, &e);
}

/* --plan: the estimates printed, which the planned mapping has. */
static int take_plan(const char *cmd, int argc, char **argv, int *i, void *dst)
{
    mnist_opts *o = dst;
    (void)cmd, (void)argc, (void)argv, (void)i;
    o->plan = 1;
    o->c.mapping = MNET_MAP_PLANNED;
    return 0;
}

/* --help, -h (a sweep hands them to the command): the help, and -1 (status 0). */
static int take_help(const char *cmd, int argc, char **argv, int *i, void *dst)
{
    (void)argc, (void)argv, (void)i, (void)dst;
    const cli_cmd *c = cli_find(cmd);
    if (c)
        cli_usage(c, stdout);
    return -1;
}

/* ---- the echo of what the options hold besides their kind's text ---- */

static json *echo_int(const cli_ctx *x, const void *dst)
{
    (void)x;
    return json_u64((uint64_t) * (const int *)dst);
}

static json *echo_plan(const cli_ctx *x, const void *dst)
{
    (void)x;
    return json_u64((uint64_t)((const mnist_opts *)dst)->plan);
}

static json *echo_betas(const cli_ctx *x, const void *dst)
{
    const adamw_cfg *a = dst;
    json *b = json_arr();
    (void)x;
    json_put_num(b, NULL, a->beta1);
    json_put_num(b, NULL, a->beta2);
    return b;
}

static json *echo_strategy(const cli_ctx *x, const void *dst)
{
    const mnist_opts *o = dst;
    (void)x;
    return json_str(o->ipus < 2 ? "one-ipu" : o->sharded ? "sharded" : "pipelined");
}

static json *echo_schedule(const cli_ctx *x, const void *dst)
{
    (void)x;
    return json_str(pipe_kind_name(*(const pipe_kind *)dst));
}

static json *echo_network(const cli_ctx *x, const void *dst)
{
    (void)x;
    return json_str((*(const mspec *const *)dst)->name);
}

/* The IPU of each of the network's blocks (dst: the stage_ipu of an mnet_cfg, whose net says
 * how many blocks it has). */
static json *echo_stages(const cli_ctx *x, const void *dst)
{
    const uint32_t *st = dst;
    const mnet_cfg *c = (const mnet_cfg *)((const char *)dst - offsetof(mnet_cfg, stage_ipu));
    json *a = json_arr();
    (void)x;
    for (int k = 0; k < mspec_blocks(c->net ? c->net : mspec_tutorial()); k++)
        json_put_u64(a, NULL, st[k]);
    return a;
}

static json *echo_output_mode(const cli_ctx *x, const void *dst)
{
    char mode[32];
    (void)x;
    return json_str(mnist_mode_name(dst, mode, sizeof mode));
}

static json *echo_dist(const cli_ctx *x, const void *dst)
{
    char dist[64];
    (void)x;
    return json_str(host_dist_format(dst, dist, sizeof dist));
}

/* ---- the table ---- */

#define SIM MNIST_SIM
#define TRAIN MNIST_TRAIN
#define PIPE MNIST_PIPE
#define PLAN MNIST_PLAN
#define ECHO MNIST_SIM_ECHO
#define AT(F) offsetof(mnist_opts, F)
#define INT(NAME, F, MIN, MAX, ARG, MODES, KEY, MEANS, POS, HELP)                                  \
    {                                                                                              \
        .name = NAME, .kind = CLI_INT, .off = AT(F), .min = MIN, .max = MAX, .arg = ARG,           \
        .modes = MODES, .key = KEY, .unit = "", .means = MEANS, .pos = POS, .help = HELP           \
    }
static const char *const dtypes[] = {"fp32", "fp16", "u8", NULL};
static const int dtype_vals[] = {MNET_FP32, MNET_FP16, MNET_U8};
static const char *const strategies[] = {"pipelined", "sharded", NULL};
static const char *const on_off[] = {"on", "off", NULL};
static const int on_off_vals[] = {1, 0};
static const char *const mappings[] = {"sample", "planned", NULL};
static const int mapping_vals[] = {MNET_MAP_SAMPLE, MNET_MAP_PLANNED};

/* clang-format off */
static const cli_opt rows[] = {
    {.name = "--reference", .kind = CLI_FLAG, .off = AT(reference),
     .help = "train natively on the host"},
    {.name = "--dataset", .kind = CLI_STR, .off = AT(dataset), .arg = "NAME|DIR",
     .key = "dataset.name", .unit = "text", .means = "the data set (--dataset)", .pos = -1,
     .help = "mnist-digits (default; 8,000/2,000 real digits, 'make data'),\n"
             "fashion-mnist (60,000/10,000; 'make data'), or a\n"
             "directory with the four MNIST IDX files (raw or .gz)"},
    {.name = "--network", .kind = CLI_VAL, .off = AT(c.net), .val = take_network, .arg = "NAME",
     .key = "network", .unit = "text", .means = "the layer table trained (--network)", .pos = -2,
     .echo = echo_network,
     .help = "the layer table trained: tutorial (default), wide (conv\n"
             "1->16 k5 padding 2, pool, conv 16->32 k3 padding 1,\n"
             "pool, linear 1568->128, linear 128->10) or deep (eight\n"
             "blocks: two conv and pool, six linear); simulated, a\n"
             "table other than the tutorial's runs on one IPU (or\n"
             "pipelined or sharded over several, up to one a block)\n"
             "with every layer planned (docs/mnist.md)"},
    INT("--epochs", c.run.epochs, 0, 100000, "N", 0, "epochs",
        "passes over the training set (--epochs)", 1,
        "passes over the training set (default {}; 0: test only)"),
    INT("--batch-size", c.run.batch, 1, 65536, "N", TRAIN, "batch_size",
        "the micro-batch (--batch-size)", 2,
        "micro-batch (default {})"),
    INT("--gradient-accumulation", c.run.grad_accum, 1, 65536, "N", TRAIN,
        "gradient_accumulation", "micro-batches a weight update (--gradient-accumulation)", 3, "micro-batches per weight update (default {})"),
    INT("--device-iterations", c.run.device_iters, 1, 65536, "N", TRAIN,
        "device_iterations", "weight updates a host call (--device-iterations)", 4,
        "weight updates per host call (default {})"),
    INT("--test-batch-size", c.run.test_batch, 1, 65536, "N", 0, "test_batch_size",
        "the test pass's batch (--test-batch-size)", 5,
        "batch of the test pass (default {})"),
    {.name = "--learning-rate", .kind = CLI_DBL, .off = AT(c.run.opt.lr), .dmin = 0.0,
     .dmax = 1000.0, .arg = "X", .modes = TRAIN, .key = "learning_rate", .pos = 6,
     .unit = "", .means = "AdamW's learning rate (--learning-rate)",
     .help = "AdamW learning rate (default {})"},
    {.off = AT(c.run.opt), .key = "betas.N", .unit = "",
     .means = "AdamW's beta1 (N = 0) and beta2 (N = 1)", .pos = 7, .echo = echo_betas},
    {.kind = CLI_DBL, .off = AT(c.run.opt.eps), .key = "eps", .unit = "",
     .means = "AdamW's epsilon", .pos = 8},
    {.kind = CLI_DBL, .off = AT(c.run.opt.weight_decay), .key = "weight_decay",
     .unit = "", .means = "AdamW's weight decay", .pos = 9},
    {.name = "--seed", .kind = CLI_U64, .off = AT(c.run.seed), .max = UINT64_MAX, .arg = "N",
     .key = "seed", .unit = "", .means = "the seed of initialisation and shuffling (--seed)",
     .pos = 10, .help = "seed of initialisation and shuffling (default {})"},
    {.name = "--save-weights", .kind = CLI_STR, .off = AT(save), .arg = "DIR",
     .key = "save_weights", .unit = "text", .pos = 11,
     .means = "the directory the weights were saved to (--save-weights; null: none)",
     .help = "write one .npy per PyTorch state_dict key once the run\n"
             "(training and test pass) is over"},
    {.name = "--load-weights", .kind = CLI_STR, .off = AT(load), .arg = "DIR",
     .key = "load_weights", .unit = "text", .pos = 12,
     .means = "the directory the weights were loaded from (--load-weights; null: none)",
     .help = "start from such .npy files instead of the seeded initialisation"},
    CLI_ROW_JSON("also write per-call losses/accuracies, test accuracy, timings\n"
                 "and the config (version, command line, machine, options)"),
    CLI_ROW_OUT("\n(and the simulated run's report)"),
    INT("--max-calls", max_calls, 0, INT_MAX, "N", TRAIN | ECHO, "max_calls",
        "host calls' worth of images trained (--max-calls; 0: all)", 26,
        "train on the first N host calls' worth of images only\n"
        "(shuffled among themselves; 0: all), for quick sweeps"),
    INT("--test-images", test_images, 0, INT_MAX, "N", ECHO, "test_images",
        "test images used (--test-images; 0: all)", 27,
        "test on the first N test images only (0: all)"),
    {.kind = CLI_TEXT, .help = "The simulated run only:\n"},
    INT("--ipus", ipus, 1, 64, "N", SIM, "ipus", "IPUs a replica (--ipus)", 13,
        "IPUs, 1 to the network's blocks (the tutorial's 4; default\n"
        "4, 1 for a network other than the tutorial's; 1: the\n"
        "whole network on one IPU)"),
    {.name = "--strategy", .kind = CLI_ENUM, .off = AT(sharded), .names = strategies,
     .arg = "S", .modes = SIM,
     .help = "pipelined (default: each IPU a pipeline stage, micro-batches\n"
             "in flight) or sharded (one micro-batch at a time)"},
    {.off = 0, .modes = ECHO, .key = "strategy", .unit = "text",
     .means = "pipelined, sharded or one-ipu (--strategy)", .pos = 15, .echo = echo_strategy},
    {.name = "--stages", .kind = CLI_STR, .off = AT(stages), .arg = "a,b,c,d", .modes = SIM,
     .help = "the IPU of blocks B1 (conv1), B2 (conv2), B3 (layer3), B4\n"
             "(layer4, loss); default (or hand) block k of K on IPU\n"
             "floor(k N / K); auto: the placement over at most --ipus\n"
             "IPUs with the shortest main pipeline step, simulated or\n"
             "estimated from calibration runs (docs/pipelining.md,\n"
             "Balancing)"},
    {.name = "--balance", .kind = CLI_FLAG, .off = AT(balance), .modes = SIM, .key = "balance",
     .unit = "bool", .pos = 39, .means = "1: the search of placements printed alone (--balance)",
     .help = "run --stages auto's calibration and print its search of\n"
             "placements over at most --ipus IPUs, then stop"},
    {.off = AT(c.stage_ipu), .modes = ECHO, .key = "stages.N", .unit = "",
     .means = "the IPU of block N + 1 (--stages)", .pos = 18, .echo = echo_stages},
    {.name = "--schedule", .kind = CLI_VAL, .off = AT(c.schedule), .val = take_schedule,
     .arg = "S", .modes = SIM | PIPE, .key = "schedule", .pos = 16,
     .unit = "text", .means = "the pipeline's schedule (--schedule)", .echo = echo_schedule,
     .help = "pipelined: grouped (default), interleaved or sequential"},
    INT("--io-tiles", c.io_tiles, 0, 1024, "N", SIM, "io_tiles", "I/O tiles (--io-tiles)", 19,
        "N I/O tiles on the IPU taking the images: each micro-batch\n"
        "lands there while the others compute, then is handed over\n"
        "(fewer than the IPU's tiles: one at least computes)"),
    INT("--replicas", c.replicas, 1, 64, "R", SIM, "replicas", "copies of the model (--replicas)", 14,
        "R copies of the model on R x --ipus IPUs, each its share of\n"
        "the data, gradients all-reduced over the IPU-Links before\n"
        "the update (a host call: batch x G x iterations x R images)"),
    {.name = "--recompute", .kind = CLI_ENUM, .off = AT(c.recompute), .names = on_off,
     .vals = on_off_vals, .arg = "on|off", .modes = SIM | PIPE | TRAIN, .key = "recompute",
     .unit = "bool", .means = "1: recompute on (--recompute)", .pos = 17, .echo = echo_int,
     .help = "pipelined training: stash only each stage's input and\n"
             "recompute its forward before the backward (on, the default,\n"
             "as PopTorch), or stash every activation the backward reads"},
    {.name = "--offload-optimiser", .kind = CLI_FLAG, .off = AT(c.offload), .modes = SIM | TRAIN,
     .key = "offload_optimiser", .unit = "bool", .pos = 23,
     .means = "1: AdamW's state in remote buffers (--offload-optimiser)",
     .help = "keep AdamW's state (m, v) in remote buffers (Streaming\n"
             "Memory), read in before each weight update, written back after"},
    {.name = "--mapping", .kind = CLI_ENUM, .off = AT(c.mapping), .names = mappings,
     .vals = mapping_vals, .arg = "sample|planned", .modes = SIM, .key = "mapping", .pos = 24,
     .unit = "text", .means = "sample or planned (--mapping)",
     .help = "the convolutions a sample a tile (default), or they and\n"
             "the linear layers (forward and gradients) planned over the\n"
             "whole IPU, pooling and the loss a sample a tile\n"
             "(docs/planning.md)"},
    {.name = "--available-memory-proportion", .kind = CLI_DBL, .off = AT(c.mem_prop),
     .dmin = 0.01, .dmax = 1.0, .arg = "X", .modes = SIM | PLAN, .key = "available_memory_proportion",
     .pos = 38, .unit = "",
     .means = "the share of a tile's SRAM a plan may take as working memory "
              "(--available-memory-proportion)",
     .help = "planned: the share of each tile's SRAM a convolution's or\n"
             "matrix product's plan may take as working memory, 0.01 to 1\n"
             "(default {}, PopLibs' availableMemoryProportion)"},
    INT("--steps", c.log_steps, 0, 100000, "N", SIM | TRAIN, "steps",
        "program steps listed (--steps; 0: none)", 35,
        "list the first N program steps of training with their cycles"),
    {.name = "--dtype", .kind = CLI_ENUM, .off = AT(c.dtype), .names = dtypes,
     .vals = dtype_vals, .arg = "fp32|fp16|u8", .modes = SIM, .key = "dtype", .pos = 20,
     .unit = "text", .means = "the infeed's element type (--dtype)",
     .help = "the infeed's images: normalised fp32 (default); normalised\n"
             "and rounded to fp16, widened on the device (f16_to_f32), half\n"
             "the bytes; or their bytes, normalised on the device (norm_u8),\n"
             "a quarter"},
    INT("--threads", c.threads, 1, 1024, "N", SIM, "threads",
        "host threads (--threads; 0: the online CPUs)", 25,
        "host threads (default: the online CPUs)"),
    INT("--depth", c.depth, 1, HOST_MAX_DEPTH, "N", SIM, "depth",
        "infeed and outfeed buffering depth (--depth)", 21,
        "infeed and outfeed buffering depth, 1..255 (default {})"),
    {.name = "--loaders", .kind = CLI_U32, .off = AT(c.host.loaders), .min = 1, .max = 4096,
     .arg = "N", .modes = SIM, .key = "host.loaders", .pos = 28,
     .unit = "", .means = "host data-loader workers (--loaders)",
     .help = "the infeed's host data-loader workers (default {})"},
    {.name = "--prep-us", .kind = CLI_US, .off = AT(c.host.prep_ps), .arg = "X", .modes = SIM,
     .key = "host.prep_us", .pos = 29, .unit = "us",
     .means = "their mean time to prepare an image (--prep-us)",
     .help = "their mean time to prepare one image, us (default {})"},
    {.name = "--host-dist", .kind = CLI_VAL, .off = AT(c.host.dist), .val = take_dist,
     .arg = "D", .modes = SIM, .key = "host.dist", .pos = 30,
     .unit = "text", .means = "the distribution of that time (--host-dist)", .echo = echo_dist,
     .help = "fixed | uniform:S | exp | bursty:P:K[:LEN] (default {};\ndocs/host.md)"},
    {.kind = CLI_U64, .off = AT(c.host.seed), .modes = ECHO, .key = "host.seed", .pos = 31,
     .unit = "", .means = "the seed of that distribution's draws"},
    {.name = "--callback-us", .kind = CLI_US, .off = AT(c.host.callback_ps), .arg = "X",
     .modes = SIM, .key = "host.callback_us", .pos = 32, .unit = "us",
     .means = "the IPU asks for a buffer -> the host fills it (--callback-us)",
     .help = "the IPU asks for a buffer -> the host fills it, us (default {})"},
    {.name = "--drain-us", .kind = CLI_US, .off = AT(c.drain_ps), .arg = "X", .modes = SIM,
     .key = "host.drain_us", .pos = 33, .unit = "us",
     .means = "host time to consume an outfeed buffer (--drain-us)",
     .help = "host time to consume an outfeed buffer, us (default {})"},
    {.name = "--output-mode", .kind = CLI_VAL, .off = AT(c), .val = take_output_mode,
     .arg = "M", .modes = SIM, .key = "output_mode", .pos = 22,
     .unit = "text", .means = "the outfeed's mode (--output-mode)", .echo = echo_output_mode,
     .help = "the outfeed: every micro-batch's loss and predictions (all,\n"
             "the default, as the tutorial), each host call's last (final),\n"
             "every N-th (every:N) or their sum over a call (sum)"},
    CLI_ROW_RANK_STATS(.modes = SIM, .pos = 37),
    {.kind = CLI_TEXT,
     .help = "The training run's profile (docs/profiling.md; a window counts host calls or device\n"
             "iterations):\n"},
    CLI_ROW_PROFILE,
    CLI_ROW_MAX_STEP(.modes = SIM, .pos = 34),
    CLI_ROW_PROGRESS(.modes = SIM),
    CLI_ROW_MACHINE,
    {.name = "--plan", .kind = CLI_TAKE, .off = 0, .take = take_plan, .modes = SIM, .key = "plan",
     .unit = "bool", .means = "1: the plans' estimates printed (--plan)", .pos = 36, .echo = echo_plan},
    {.name = "--help", .kind = CLI_TAKE, .take = take_help},
    {.name = "-h", .kind = CLI_TAKE, .take = take_help},
};
/* clang-format on */

void mnist_opts_init(cli_ctx *x, void *cfg)
{
    mnist_opts *o = cfg;
    err e;
    (void)x;
    memset(o, 0, sizeof *o);
    mnet_defaults(&o->c, &e); /* the preset mk2 is built in: no error */
    o->c.net = mspec_tutorial();
    o->c.recompute = 1;
    o->dataset = "mnist-digits";
}

const cli_table cli_mnist_opts = {
    .cmd = CMD,
    CLI_ROWS(rows),
    .file = __FILE__,
    .col = 26,
    .profile = 1,
    .machine_modes = SIM,
    .profile_modes = SIM | TRAIN,
    .common_modes = SIM,
    .cfg_size = sizeof(mnist_opts),
    .init = mnist_opts_init,
    .head =
        "usage: ipusim mnist [--reference] [options]\n"
        "\n"
        "Trains the PopTorch tutorial's MNIST network (conv 1->10 k5, max-pool, ReLU; conv 10->20 "
        "k5,\n"
        "max-pool, ReLU; linear 320->256, ReLU; linear 256->10; cross-entropy; AdamW) and tests "
        "it,\n"
        "printing the tutorial's progress lines. By default as the tutorial: pipelined over four\n"
        "simulated Mk2 IPUs (docs/pipelining.md), tested with pipelined inference, then a report "
        "of\n"
        "the simulated run (docs/mnist.md, Report); --reference trains natively on the host in "
        "fp32\n"
        "(the numerics oracle and speed baseline). The initial weights are the same in both.\n"
        "\n",
    .tail =
        "\n"
        "Which run takes which option, one rule refused in one line naming both: the options\n"
        "under 'The simulated run only' (with --machine, --set, the profile's and the "
        "heartbeat's)\n"
        "not with --reference; training's (--batch-size, --gradient-accumulation,\n"
        "--device-iterations, --learning-rate, --max-calls, --steps, --recompute,\n"
        "--offload-optimiser, --profile) not with --epochs 0, which only tests; a pipeline's\n"
        "(--schedule, --recompute) not with --strategy sharded or --ipus 1. --strategy on one\n"
        "IPU is moot (the JSON says one-ipu), kept so that sweeps cross it with --ipus.\n"
        "\n"
        "Ctrl-C or SIGTERM stops the run, in training or in the test pass (the simulated one\n"
        "within a round, the reference before the next host call or after its test pass), with\n"
        "one line; no weights, no JSON and no --out are written. With --progress the test pass's\n"
        "heartbeat says so: 'ipusim mnist: test pass: cycle N, ...'.\n"
        "\n"
        "Under 'mpirun -np R ipusim mnist ...' the simulated run's IPUs are shared out among the\n"
        "R processes in whole host-link groups (a box of 4 Mk2 IPUs: a replica each with\n"
        "--replicas); the lines, report, weights and JSON are one process's, written by rank 0\n"
        "(docs/scale-out.md). --reference runs as one process only.\n"
        "\n"
        "Exit status: 0 ok, 2 bad options, files or data, 3 a simulated fault or stopped\n"
        "(Ctrl-C, SIGTERM).\n",
};

/* ---- the JSON document ---- */

/* The CRC-32 (zlib's) of the images and labels a run used, training then test: tells two
 * copies of a data set apart. */
static unsigned long data_crc(const mdata *d)
{
    unsigned long c = crc32(0L, Z_NULL, 0);
    const mdata_split *sp[2] = {&d->train, &d->test};
    for (int k = 0; k < 2; k++) {
        c = crc32_z(c, sp[k]->images, sp[k]->n * MDATA_PIXELS);
        c = crc32_z(c, sp[k]->labels, sp[k]->n);
    }
    return c;
}

/* The config's "options": the network, the data set (its name, directory, sizes and
 * digest), then the table's echo (the simulated run's options only in a simulated run). */
static json *mnist_options(const mnist_opts *o, const char *dir, const mdata *d)
{
    json *x = json_obj();
    char crc[16];
    snprintf(crc, sizeof crc, "%08lx", data_crc(d));
    cli_echo(&cli_mnist_opts, &o->x, o, x, o->reference ? MNIST_SIM | MNIST_SIM_ECHO : 0);
    json *ds = json_at(x, "dataset"); /* network and dataset.name first */
    json_put_str(ds, "dir", dir);
    json_put_u64(ds, "train_images", d->train.n);
    json_put_u64(ds, "test_images", d->test.n);
    json_put_str(ds, "crc32", crc);
    return x;
}

int mnist_json(const mnist_opts *o, const char *dir, const mdata *d, const mnist_run *r,
               const mnist_result *res)
{
    json *doc = json_obj();
    json_put_str(doc, "command", "mnist");
    json_put_str(doc, "mode", res->mode);
    json_put(doc, "calls", r->calls ? json_object_get(r->calls) : json_arr());
    json_put(doc, "epochs", r->epochs ? json_object_get(r->epochs) : json_arr());
    json_put_num(doc, "test_accuracy", res->test_acc);
    json_put_u64(doc, "images_trained", (uint64_t)res->trained);
    json_put_num(doc, "train_seconds", res->train_s);
    json_put_num(doc, "train_images_per_second",
                 res->train_s > 0 ? (double)res->trained / res->train_s : 0.0);
    json_put_num(doc, "test_seconds", res->test_s);
    json_append(doc, res->extra);
    json_put(doc, "config", cli_json_config(&o->x.inv, res->m, mnist_options(o, dir, d)));
    return cli_write_json(CMD, o->x.json, doc);
}
