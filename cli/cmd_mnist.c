/* cmd_mnist: `ipusim mnist`, the PopTorch tutorial's MNIST training. With --reference it
 * trains the network natively on the host (workloads/mnist/mref.h), the numerics oracle and
 * speed baseline for the simulated run; it prints the tutorial's progress lines and can write
 * JSON and .npy weights. The simulated (pipelined, multi-IPU) run is a later issue: without
 * --reference the command says so and exits 2. It also resolves dataset names to directories;
 * it installs nothing: a missing dataset is one line naming the file and `make data`, exit 2. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "cli/cli.h"
#include "base/text.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/mref.h"

#define CMD "mnist"

/* A JSON string literal (paths may hold quotes or backslashes). */
static void sb_jstr(txt *b, const char *s)
{
    txt_printf(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            txt_printf(b, "\\%c", c);
        else if (c < 0x20)
            txt_printf(b, "\\u%04x", c);
        else
            txt_printf(b, "%c", c);
    }
    txt_printf(b, "\"");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- progress ---- */

typedef struct run {
    txt calls; /* JSON array items */
    txt epochs;
    double t_epoch;
    double ep_loss, ep_acc;
    int ep_calls;
} run;

static void on_epoch(void *ctx, int epoch, int epochs)
{
    run *r = ctx;
    printf("Epoch %d/%d\n", epoch, epochs);
    fflush(stdout);
    r->t_epoch = now_s();
    r->ep_loss = r->ep_acc = 0.0;
    r->ep_calls = 0;
}

static void on_call(void *ctx, const mref_progress *p)
{
    run *r = ctx;
    printf("Loss:%0.4f | Accuracy:%0.2f%%: %d/%d\n", p->loss, p->accuracy, p->call, p->calls);
    fflush(stdout);
    txt_printf(&r->calls,
               "%s\n    {\"epoch\": %d, \"call\": %d, \"images\": %ld, \"loss\": %.6f, "
               "\"accuracy\": %.4f}",
               r->calls.len ? "," : "", p->epoch, p->call, p->images, p->loss, p->accuracy);
    r->ep_loss += p->loss;
    r->ep_acc += p->accuracy;
    r->ep_calls++;
    if (p->call == p->calls)
        txt_printf(&r->epochs,
                   "%s\n    {\"epoch\": %d, \"calls\": %d, \"last_loss\": %.6f, "
                   "\"last_accuracy\": %.4f, \"mean_loss\": %.6f, \"mean_accuracy\": %.4f, "
                   "\"seconds\": %.3f}",
                   r->epochs.len ? "," : "", p->epoch, p->calls, p->loss, p->accuracy,
                   r->ep_loss / r->ep_calls, r->ep_acc / r->ep_calls, now_s() - r->t_epoch);
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

/* ---- the command ---- */

/* A stop asked for when the trainer could not see it: one line, exit status 3. */
static int stopped_here(const char *where)
{
    if (!cli_stopped())
        return 0;
    fprintf(stderr, "ipusim %s: stopped %s\n", CMD, where);
    return 3;
}

static int write_json(const char *path, const char *dataset, const char *dir, const mdata *d,
                      const mref_cfg *cfg, run *r, double test_acc, double train_s, long trained,
                      double test_s)
{
    txt b = {0};
    txt_printf(&b, "{\n  \"command\": \"mnist\",\n  \"mode\": \"reference\",\n  \"dataset\": ");
    sb_jstr(&b, dataset);
    txt_printf(&b, ",\n  \"dataset_dir\": ");
    sb_jstr(&b, dir);
    txt_printf(&b,
               ",\n  \"dataset_train_images\": %zu,\n  \"dataset_test_images\": %zu,\n"
               "  \"config\": {\"epochs\": %d, \"batch_size\": %d, \"gradient_accumulation\": %d, "
               "\"device_iterations\": %d, \"test_batch_size\": %d, \"learning_rate\": %.9g, "
               "\"betas\": [%.9g, %.9g], \"eps\": %.9g, \"weight_decay\": %.9g, \"seed\": %llu},\n",
               d->train.n, d->test.n, cfg->epochs, cfg->batch, cfg->grad_accum, cfg->device_iters,
               cfg->test_batch, cfg->opt.lr, cfg->opt.beta1, cfg->opt.beta2, cfg->opt.eps,
               cfg->opt.weight_decay, (unsigned long long)cfg->seed);
    txt_printf(&b, "  \"calls\": [%s\n  ],\n", r->calls.p ? r->calls.p : "");
    txt_printf(&b, "  \"epochs\": [%s\n  ],\n", r->epochs.p ? r->epochs.p : "");
    txt_printf(&b,
               "  \"test_accuracy\": %.4f,\n  \"images_trained\": %ld,\n  \"train_seconds\": "
               "%.4f,\n  \"train_images_per_second\": %.1f,\n  \"test_seconds\": %.4f\n}\n",
               test_acc, trained, train_s, train_s > 0 ? (double)trained / train_s : 0.0, test_s);
    int rc = cli_write_file(CMD, path, b.p, b.len);
    free(b.p);
    return rc;
}

int cli_cmd_mnist(int argc, char **argv)
{
    mref_cfg cfg = mref_defaults();
    int reference = 0;
    const char *dataset = "mnist-digits", *save = NULL, *load = NULL, *json = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int rc = 0;
        double lr;
        if (strcmp(a, "--reference") == 0) {
            reference = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            const cli_cmd *c = cli_find(CMD);
            if (c && c->usage)
                fputs(c->usage, stdout);
            return 0;
        }
        static const char *const with_value[] = {"--dataset",
                                                 "--epochs",
                                                 "--batch-size",
                                                 "--gradient-accumulation",
                                                 "--device-iterations",
                                                 "--test-batch-size",
                                                 "--learning-rate",
                                                 "--seed",
                                                 "--save-weights",
                                                 "--load-weights",
                                                 "--json"};
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            known |= strcmp(a, with_value[k]) == 0;
        if (!known)
            return cli_unknown(CMD, a);
        if ((rc = cli_value(CMD, argc, argv, &i, &v)))
            return rc;
        if (strcmp(a, "--dataset") == 0)
            dataset = v;
        else if (strcmp(a, "--epochs") == 0)
            rc = cli_int(CMD, a, v, 0, 100000, &cfg.epochs);
        else if (strcmp(a, "--batch-size") == 0)
            rc = cli_int(CMD, a, v, 1, 65536, &cfg.batch);
        else if (strcmp(a, "--gradient-accumulation") == 0)
            rc = cli_int(CMD, a, v, 1, 65536, &cfg.grad_accum);
        else if (strcmp(a, "--device-iterations") == 0)
            rc = cli_int(CMD, a, v, 1, 65536, &cfg.device_iters);
        else if (strcmp(a, "--test-batch-size") == 0)
            rc = cli_int(CMD, a, v, 1, 65536, &cfg.test_batch);
        else if (strcmp(a, "--learning-rate") == 0) {
            if (!(rc = cli_double(CMD, a, v, 0.0, 1000.0, &lr)))
                cfg.opt.lr = lr;
        } else if (strcmp(a, "--seed") == 0)
            rc = cli_u64(CMD, a, v, 0, UINT64_MAX, &cfg.seed);
        else if (strcmp(a, "--save-weights") == 0)
            save = v;
        else if (strcmp(a, "--load-weights") == 0)
            load = v;
        else
            json = v;
        if (rc)
            return rc;
    }
    if (!reference) {
        fprintf(stderr,
                "ipusim %s: the simulated IPU run is not available yet (a later issue); "
                "use --reference for the native reference trainer\n",
                CMD);
        return 2;
    }
    if ((long)cfg.batch * cfg.grad_accum * cfg.device_iters > 100000000L) {
        fprintf(stderr,
                "ipusim %s: batch-size x gradient-accumulation x device-iterations is "
                "too large\n",
                CMD);
        return 2;
    }

    char *dir = NULL;
    int found = 0;
    if (strcmp(dataset, "mnist-digits") == 0)
        found = find_digits(&dir);
    else if (strcmp(dataset, "fashion-mnist") == 0)
        found = find_fashion(&dir);
    else
        dir = cat3(dataset, "", "");
    if (found)
        return found;

    err *e = xcalloc(1, sizeof *e);
    mdata *d = xcalloc(1, sizeof *d);
    int max_batch = cfg.batch > cfg.test_batch ? cfg.batch : cfg.test_batch;
    mref_net *net = NULL;
    run r = {0};
    int rc = 0;
    if (mdata_load(d, dir, e) || !(net = mref_create(max_batch, e))) {
        rc = cli_report_err(CMD, e);
        goto out;
    }
    if (load) {
        if (mref_load(net, load, e)) {
            rc = cli_report_err(CMD, e);
            goto out;
        }
    } else {
        mref_init(net, cfg.seed);
    }
    const long per_call = (long)cfg.batch * cfg.grad_accum * cfg.device_iters;
    if (cfg.epochs > 0 && (long)d->train.n < per_call) {
        fprintf(stderr,
                "ipusim %s: %s has %zu training images, fewer than one host call of "
                "batch-size %d x gradient-accumulation %d x device-iterations %d = %ld\n",
                CMD, dataset, d->train.n, cfg.batch, cfg.grad_accum, cfg.device_iters, per_call);
        rc = 2;
        goto out;
    }
    if (save && mref_prepare_save(save, e)) {
        rc = cli_report_err(CMD, e);
        goto out;
    }
    printf("Reference (native host) training on %s (%s): %zu training, %zu test images\n", dataset,
           dir, d->train.n, d->test.n);
    printf("batch %d x gradient accumulation %d x device iterations %d = %ld images per host "
           "call, %ld calls per epoch; AdamW lr %g; seed %llu%s%s\n",
           cfg.batch, cfg.grad_accum, cfg.device_iters, per_call, (long)d->train.n / per_call,
           cfg.opt.lr, (unsigned long long)cfg.seed, load ? "; weights from " : "",
           load ? load : "");
    fflush(stdout);

    mref_hooks hooks = {on_epoch, on_call, &r};
    cli_stop_install(); /* Ctrl-C, SIGTERM: stop before the next host call, write nothing */
    cfg.stop = cli_stop_flag();
    double t0 = now_s();
    if (mref_train(net, &cfg, &d->train, &hooks, e)) {
        rc = cli_report_err(CMD, e);
        goto out;
    }
    if ((rc = stopped_here("after training")) != 0)
        goto out;
    double train_s = now_s() - t0;
    long trained = (long)cfg.epochs * ((long)d->train.n / per_call) * per_call;
    if (cfg.epochs > 0)
        printf("Trained %ld images in %.2f s (%.0f images/s)\n", trained, train_s,
               train_s > 0 ? (double)trained / train_s : 0.0);
    if (save && mref_save(net, save, e)) {
        rc = cli_report_err(CMD, e);
        goto out;
    }
    double acc = 0.0;
    t0 = now_s();
    if (mref_test(net, cfg.test_batch, &d->test, &acc, e)) {
        rc = cli_report_err(CMD, e);
        goto out;
    }
    double test_s = now_s() - t0;
    if ((rc = stopped_here("during the test pass")) != 0)
        goto out;
    printf("Accuracy on test set: %0.2f%%\n", acc);
    fflush(stdout);
    if (json)
        rc = write_json(json, dataset, dir, d, &cfg, &r, acc, train_s, trained, test_s);
out:
    free(r.calls.p);
    free(r.epochs.p);
    mref_destroy(net);
    if (d)
        mdata_free(d);
    free(d);
    free(e);
    free(dir);
    return rc;
}
