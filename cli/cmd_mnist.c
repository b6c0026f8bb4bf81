/* cmd_mnist: `ipusim mnist`, the PopTorch tutorial's MNIST training: the options, the
 * datasets, the progress lines and the JSON document that both runs share, and the reference
 * run. With --reference it trains the network natively on the host (workloads/mnist/mref.h),
 * the numerics oracle and speed baseline; without, on simulated IPUs (cli/cmd_mnist_sim.c:
 * pipelined over four by default, sharded, or on one). Both
 * print the tutorial's progress lines and can write JSON and .npy weights. It resolves
 * dataset names to directories and installs nothing: a missing dataset is one line naming
 * the file and `make data`, exit 2. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/rank.h"
#include "base/text.h"
#include "cli/cli.h"
#include "cli/cmd_mnist.h"
#include "workloads/graph/pipe.h"
#include "workloads/mnist/mnet.h"
#include "host/host.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/mref.h"

#define CMD MNIST_CMD

/* ---- the reference run's progress ---- */

static void ref_epoch(void *ctx, int epoch, int epochs)
{
    mnist_epoch(ctx, epoch, epochs);
}

static void ref_call(void *ctx, const mref_progress *p)
{
    mnist_call(ctx, p);
}

/* ---- dataset names ---- */

/* a b c joined, malloc'd: no path is cut at a fixed length. */
static char *cat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = xmalloc(la + lb + lc + 1);
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc + 1);
    return s;
}

/* Does dir hold the dataset (its training images, raw or gzipped)? *path gets the raw name
 * (malloc'd). */
static int has_data(const char *dir, char **path)
{
    struct stat st;
    *path = cat3(dir, "/train-images-idx3-ubyte", "");
    char *gz = cat3(*path, ".gz", "");
    int ok = stat(*path, &st) == 0 || stat(gz, &st) == 0;
    free(gz);
    return ok;
}

/* mnist-digits: $IPUSIM_DATA/mnist-digits; else ./data/mnist-digits, then next to the binary
 * (build/ipusim -> ../data/mnist-digits). 0 with *out (malloc'd) when found; otherwise 2
 * after one line naming the file it looked for first and the command that fetches it. */
static int find_digits(char **out)
{
    char *file = NULL, *other = NULL, exe[PATH_MAX];
    const char *env = getenv("IPUSIM_DATA");
    *out = env && *env ? cat3(env, "/mnist-digits", "") : cat3(MDATA_DIGITS_DIR, "", "");
    if (has_data(*out, &file)) {
        free(file);
        return 0;
    }
    ssize_t n = env && *env ? -1 : readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = '\0';
        for (int up = 1; up >= 0; up--) {
            free(*out);
            free(other);
            *out = cat3(exe, up ? "/../" : "/", MDATA_DIGITS_DIR);
            if (has_data(*out, &other)) {
                free(file);
                free(other);
                return 0;
            }
        }
    }
    fprintf(stderr, "ipusim %s: %s not found: run 'make data'\n", CMD, file);
    free(file);
    free(other);
    free(*out);
    *out = NULL;
    return 2;
}

/* fashion-mnist: Debian's dataset-fashion-mnist, which `make data` installs. */
static int find_fashion(char **out)
{
    char *file = NULL;
    *out = cat3(MDATA_FASHION_DIR, "", "");
    int ok = has_data(*out, &file);
    if (!ok) {
        fprintf(stderr,
                "ipusim %s: %s not found: run 'make data' (it installs the Debian package "
                "dataset-fashion-mnist)\n",
                CMD, file);
        free(*out);
        *out = NULL;
    }
    free(file);
    return ok ? 0 : 2;
}

/* ---- the options ---- */

/* --stages a,b,...: the IPU of each of the network's blocks (the tutorial's four), each below
 * --ipus; by default block k of K on IPU floor(k N / K). */
static int resolve_stages(mnist_opts *o)
{
    uint32_t *st = o->c.stage_ipu;
    const mspec *net = o->c.net ? o->c.net : mspec_tutorial();
    int K = mspec_blocks(net);
    if (o->stages && strcmp(o->stages, "auto") == 0) {
        o->auto_stages = 1; /* the hand placement until the search has run */
        o->stages = NULL;
    } else if (o->stages && strcmp(o->stages, "hand") == 0) {
        o->stages = NULL; /* the default, by name (a sweep's series beside auto) */
    }
    if (o->balance || o->auto_stages) {
        if (o->sharded || o->ipus < 2) {
            fprintf(stderr,
                    "ipusim %s: %s searches pipeline placements over --ipus 2 or more; %s runs "
                    "none\n",
                    CMD, o->balance ? "--balance" : "--stages auto",
                    o->sharded ? "--strategy sharded" : "--ipus 1");
            return 2;
        }
        o->auto_stages = 1;
    }
    if (!o->stages) {
        if (o->ipus > K) {
            fprintf(stderr,
                    "ipusim %s: --ipus %d: the network has %d blocks, one IPU each at most\n", CMD,
                    o->ipus, K);
            return 2;
        }
        for (int k = 0; k < K; k++)
            st[k] = (uint32_t)(k * o->ipus / K); /* 2 IPUs: B1, B2 | B3, B4 */
        return 0;
    }
    const char *p = o->stages;
    for (int k = 0; k < K; k++) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= o->ipus || (k < K - 1 ? *end != ',' : *end != '\0')) {
            if (K == 4)
                fprintf(stderr,
                        "ipusim %s: --stages %s: expected four IPU numbers below --ipus %d, one "
                        "per block (B1 conv1, B2 conv2, B3 layer3, B4 layer4), e.g. 0,0,1,1\n",
                        CMD, o->stages, o->ipus);
            else
                fprintf(stderr,
                        "ipusim %s: --stages %s: expected %d IPU numbers below --ipus %d, one per "
                        "block of network %s\n",
                        CMD, o->stages, K, o->ipus, net->name);
            return 2;
        }
        st[k] = (uint32_t)v;
        p = end + 1;
    }
    return 0;
}

/* The rules between the options, once they are all read: the pipeline's, --reference's and
 * --epochs 0's, each refused in one line naming both. 0 or 2. */
static int check_modes(const mnist_opts *o)
{
    const char *const *first = o->x.first;
    if (first[MNIST_FIRST_PIPE] && (o->sharded || o->ipus == 1) && !o->reference) {
        fprintf(stderr, "ipusim %s: %s shapes a pipeline over several IPUs; %s runs none\n", CMD,
                first[MNIST_FIRST_PIPE], o->sharded ? "--strategy sharded" : "--ipus 1");
        return 2;
    }
    if (o->reference && first[MNIST_FIRST_SIM]) {
        fprintf(stderr,
                "ipusim %s: %s is an option of the simulated run; --reference does not "
                "take it\n",
                CMD, first[MNIST_FIRST_SIM]);
        return 2;
    }
    if (first[MNIST_FIRST_PLAN] && o->c.mapping != MNET_MAP_PLANNED &&
        o->c.net == mspec_tutorial()) { /* --reference with it: refused above, as SIM */
        fprintf(stderr,
                "ipusim %s: %s shapes the planned mapping; --mapping sample plans nothing\n", CMD,
                first[MNIST_FIRST_PLAN]);
        return 2;
    }
    if (o->c.run.epochs == 0 && first[MNIST_FIRST_TRAIN]) {
        fprintf(stderr, "ipusim %s: %s shapes training; --epochs 0 trains nothing\n", CMD,
                first[MNIST_FIRST_TRAIN]);
        return 2;
    }
    return 0;
}

/* The simulated run's machine, stages and rules, before any data is read. 0 or the status
 * after one line. */
static int check_sim(mnist_opts *o)
{
    if (cli_ctx_machine(&o->x, "the run's IPUs are --ipus x --replicas") || resolve_stages(o))
        return 2;
    err e;
    err_clear(&e);
    mnet_cfg c;
    return mnist_sim_cfg(o, &c, &e) ? cli_report_err(CMD, &e) : 0;
}

/* Parse the command line into o: 0, 2 after one error line, or -1 after printing the help. */
static int parse_opts(int argc, char **argv, rank_comm *ranks, mnist_opts *o)
{
    int rc = cli_ctx_parse(&o->x, &cli_mnist_opts, o, argc, argv, ranks);
    if (rc)
        return rc;
    int search = o->balance || (o->stages && strcmp(o->stages, "auto") == 0);
    if (!o->ipus) /* the tutorial's four blocks, one an IPU; another table on one IPU, or
                   * searched over up to four */
        o->ipus = o->c.net == mspec_tutorial() || search ? 4 : 1;
    if (o->c.net != mspec_tutorial()) /* built from its table: every layer planned */
        o->c.mapping = MNET_MAP_PLANNED;
    if ((rc = check_modes(o)) != 0 || (!o->reference && (rc = check_sim(o)) != 0))
        return rc;
    if (mnist_per_call(o) > 100000000L) {
        fprintf(stderr,
                "ipusim %s: batch-size x gradient-accumulation x device-iterations is "
                "too large\n",
                CMD);
        return 2;
    }
    return 0;
}

/* ---- the reference run ---- */

/* A stop asked for where the trainer does not look: ERR_STOPPED in e (exit status 3). */
static int stopped(err *e, const char *where)
{
    return cli_stopped() ? err_set(e, ERR_STOPPED, "stopped %s", where) : 0;
}

static int ref_run(const mnist_opts *o, const char *dir, const mdata *d)
{
    const mref_cfg *cfg = &o->c.run;
    err *e = xcalloc(1, sizeof *e);
    int max_batch = cfg->batch > cfg->test_batch ? cfg->batch : cfg->test_batch;
    mnist_run r = {0};
    mnist_result res = {.mode = "reference", .trained = mnist_trained(o, &d->train)};
    mref_net *net = mref_create_net(o->c.net, max_batch, e);
    int rc = !net || (o->load ? mref_load(net, o->load, e) : (mref_init(net, cfg->seed), 0)) ||
             (o->save && mref_prepare_save(net, o->save, e));
    if (rc)
        goto out;
    printf("Reference (native host) training on %s (%s): %zu training, %zu test images\n",
           o->dataset, dir, d->train.n, d->test.n);
    if (o->c.net != mspec_tutorial())
        printf("network %s: %s; %zu parameters\n", o->c.net->name, o->c.net->about,
               mref_nparams(net));
    mnist_print_plan(o, &d->train, "");
    fflush(stdout);
    mref_hooks hooks = {ref_epoch, ref_call, &r};
    mref_cfg rc_cfg = *cfg;
    cli_stop_install(); /* Ctrl-C, SIGTERM: stop before the next host call, write nothing */
    rc_cfg.stop = cli_stop_flag();
    double t0 = cli_now();
    if ((rc = mref_train(net, &rc_cfg, &d->train, &hooks, e)) ||
        (rc = stopped(e, "after training")))
        goto out;
    res.train_s = cli_now() - t0;
    if (cfg->epochs > 0)
        printf("Trained %ld images in %.2f s (%.0f images/s)\n", res.trained, res.train_s,
               res.train_s > 0 ? (double)res.trained / res.train_s : 0.0);
    t0 = cli_now();
    if ((rc = mref_test(net, cfg->test_batch, &d->test, &res.test_acc, e)) ||
        (rc = stopped(e, "during the test pass")))
        goto out;
    res.test_s = cli_now() - t0;
    /* once the whole run is over, so that a stop anywhere in it writes no weights */
    if ((rc = o->save && mref_save(net, o->save, e)))
        goto out;
    printf("Accuracy on test set: %0.2f%%\n", res.test_acc);
    fflush(stdout);
out:
    rc = rc ? cli_report_err(CMD, e) : o->x.json ? mnist_json(o, dir, d, &r, &res) : 0;
    mnist_run_free(&r);
    mref_destroy(net);
    free(e);
    return rc;
}

/* ---- the command ---- */

/* The dataset's directory (malloc'd) in *dir, or an exit status after one line. */
static int find_dataset(const char *dataset, char **dir)
{
    if (strcmp(dataset, "mnist-digits") == 0)
        return find_digits(dir);
    if (strcmp(dataset, "fashion-mnist") == 0)
        return find_fashion(dir);
    *dir = cat3(dataset, "", "");
    return 0;
}

/* Keep the first n images of a split (n = 0: all). */
static void trim(mdata_split *s, long n)
{
    if (n > 0 && (size_t)n < s->n)
        s->n = (size_t)n;
}

static int mnist_cmd(int argc, char **argv, rank_comm *ranks)
{
    mnist_opts o;
    int rc = parse_opts(argc, argv, ranks, &o);
    if (rc)
        return rc == -1 ? 0 : rc;
    if (o.reference && rank_size(ranks) > 1) {
        fprintf(stderr,
                "ipusim %s: --reference trains natively on the host and does not spread over "
                "MPI ranks; run it as one process\n",
                CMD);
        return 2;
    }
    char *dir = NULL;
    if ((rc = find_dataset(o.dataset, &dir)))
        return rc;
    err *e = xcalloc(1, sizeof *e);
    mdata *d = xcalloc(1, sizeof *d);
    const long per_call = mnist_per_call(&o);
    if (mdata_load(d, dir, e)) {
        rc = cli_report_err(CMD, e);
        goto out;
    }
    trim(&d->train, (long)o.max_calls * per_call);
    trim(&d->test, o.test_images);
    if (o.c.run.epochs > 0 && (long)d->train.n < per_call) {
        fprintf(stderr,
                "ipusim %s: %s has %zu training images, fewer than one host call of "
                "batch-size %d x gradient-accumulation %d x device-iterations %d = %ld\n",
                CMD, o.dataset, d->train.n, o.c.run.batch, o.c.run.grad_accum, o.c.run.device_iters,
                per_call);
        rc = 2;
    } else {
        rc = o.reference ? ref_run(&o, dir, d) : cli_mnist_sim(&o, dir, d);
    }
out:
    mdata_free(d);
    free(d);
    free(e);
    free(dir);
    return rc;
}

/* Under mpirun the simulated run's IPUs are shared out among the ranks in whole host-link
 * groups (docs/scale-out.md); every rank runs the host's side for its own IPUs, and rank 0
 * alone prints and writes the weights and the JSON. */
int cli_cmd_mnist(int argc, char **argv)
{
    return cli_spread(CMD, argc, argv, mnist_cmd);
}
