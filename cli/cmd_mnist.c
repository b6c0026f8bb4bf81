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

static void ref_epoch(void *ctx, int epoch, int epochs)
{
    mnist_epoch(ctx, epoch, epochs);
}

static void ref_call(void *ctx, const mref_progress *p)
{
    mnist_call(ctx, p);
}

long mnist_per_call(const mnist_opts *o)
{
    const mref_cfg *c = &o->cfg;
    return (long)c->batch * c->grad_accum * c->device_iters * o->replicas;
}

long mnist_trained(const mnist_opts *o, const mdata_split *train)
{
    long per_call = mnist_per_call(o);
    return (long)o->cfg.epochs * ((long)train->n / per_call) * per_call;
}

void mnist_print_plan(const mnist_opts *o, const mdata_split *train, const char *more)
{
    const mref_cfg *c = &o->cfg;
    long per_call = mnist_per_call(o);
    char reps[32] = "";
    if (o->replicas > 1)
        snprintf(reps, sizeof reps, " x replicas %d", o->replicas);
    printf("batch %d x gradient accumulation %d x device iterations %d%s = %ld images per host "
           "call, %ld call%s per epoch; AdamW lr %g; seed %llu%s%s%s\n",
           c->batch, c->grad_accum, c->device_iters, reps, per_call, (long)train->n / per_call,
           (long)train->n / per_call == 1 ? "" : "s", c->opt.lr, (unsigned long long)c->seed,
           o->load ? "; weights from " : "", o->load ? o->load : "", more);
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
 * digest), the training's settings, then the simulated run's (res->options). */
static json *mnist_options(const mnist_opts *o, const char *dir, const mdata *d,
                           const mnist_result *res)
{
    const mref_cfg *cfg = &o->cfg;
    json *x = json_obj(), *ds = json_obj();
    char crc[16];
    snprintf(crc, sizeof crc, "%08lx", data_crc(d));
    json_put_str(x, "network", o->net->name);
    json_put_str(ds, "name", o->dataset);
    json_put_str(ds, "dir", dir);
    json_put_u64(ds, "train_images", d->train.n);
    json_put_u64(ds, "test_images", d->test.n);
    json_put_str(ds, "crc32", crc);
    json_put(x, "dataset", ds);
    const struct {
        const char *key;
        int v;
    } ints[] = {{"epochs", cfg->epochs},
                {"batch_size", cfg->batch},
                {"gradient_accumulation", cfg->grad_accum},
                {"device_iterations", cfg->device_iters},
                {"test_batch_size", cfg->test_batch}};
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        json_put_u64(x, ints[k].key, (uint64_t)ints[k].v);
    json_put_num(x, "learning_rate", cfg->opt.lr);
    json *betas = json_put(x, "betas", json_arr());
    json_put_num(betas, NULL, cfg->opt.beta1);
    json_put_num(betas, NULL, cfg->opt.beta2);
    json_put_num(x, "eps", cfg->opt.eps);
    json_put_num(x, "weight_decay", cfg->opt.weight_decay);
    json_put_u64(x, "seed", cfg->seed);
    json_put_str(x, "save_weights", o->save);
    json_put_str(x, "load_weights", o->load);
    json_append(x, res->options);
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
    json_put(doc, "config", cli_json_config(&o->inv, res->m, mnist_options(o, dir, d, res)));
    return cli_write_json(CMD, o->json, doc);
}

/* ---- the options ---- */

/* --network NAME: one of mspec's tables. */
static int parse_network(const char *v, const mspec **net)
{
    if ((*net = mspec_find(v)) != NULL)
        return 0;
    txt names = {0};
    for (int i = 0; mspec_at(i); i++)
        txt_printf(&names, "%s%s", i ? ", " : "", mspec_at(i)->name);
    fprintf(stderr, "ipusim %s: --network %s: expected %s\n", CMD, v, txt_str(&names));
    txt_free(&names);
    return 2;
}

/* --strategy pipelined|sharded */
static int parse_strategy(const char *opt, const char *v, int *sharded)
{
    if (strcmp(v, "pipelined") == 0 || strcmp(v, "sharded") == 0) {
        *sharded = v[0] == 's';
        return 0;
    }
    fprintf(stderr, "ipusim %s: %s %s: expected pipelined or sharded\n", CMD, opt, v);
    return 2;
}

/* --stages a,b,c,d: the IPU of each of the four blocks, each below --ipus. */
static int resolve_stages(mnist_opts *o)
{
    if (!o->stages) {
        if (o->ipus > 4) {
            fprintf(stderr,
                    "ipusim %s: --ipus %d: the network has 4 blocks, one IPU each at most\n", CMD,
                    o->ipus);
            return 2;
        }
        for (int k = 0; k < 4; k++)
            o->stage_ipu[k] = (uint32_t)(k * o->ipus / 4); /* 2 IPUs: B1, B2 | B3, B4 */
        return 0;
    }
    const char *p = o->stages;
    for (int k = 0; k < 4; k++) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= o->ipus || (k < 3 ? *end != ',' : *end != '\0')) {
            fprintf(stderr,
                    "ipusim %s: --stages %s: expected four IPU numbers below --ipus %d, one per "
                    "block (B1 conv1, B2 conv2, B3 layer3, B4 layer4), e.g. 0,0,1,1\n",
                    CMD, o->stages, o->ipus);
            return 2;
        }
        o->stage_ipu[k] = (uint32_t)v;
        p = end + 1;
    }
    return 0;
}

static int parse_output_mode(const char *opt, const char *v, strm_mode *mode, uint32_t *n)
{
    err e;
    err_clear(&e);
    if (strm_mode_parse(v, mode, n, &e) == ERR_OK)
        return 0;
    fprintf(stderr, "ipusim %s: %s: %s\n", CMD, opt, e.msg);
    return 2;
}

/* One option that takes a value (not --machine or --set): parse v into o. */
static int parse_value(mnist_opts *o, const char *a, const char *v)
{
    mref_cfg *c = &o->cfg;
    const struct {
        const char *name;
        long min, max;
        int *dst;
    } ints[] = {
        {"--epochs", 0, 100000, &c->epochs},
        {"--batch-size", 1, 65536, &c->batch},
        {"--gradient-accumulation", 1, 65536, &c->grad_accum},
        {"--device-iterations", 1, 65536, &c->device_iters},
        {"--test-batch-size", 1, 65536, &c->test_batch},
        {"--threads", 1, 1024, &o->threads},
        {"--depth", 1, HOST_MAX_DEPTH, &o->depth},
        {"--steps", 0, 100000, &o->steps},
        {"--ipus", 1, 64, &o->ipus},
        {"--replicas", 1, 64, &o->replicas},
        {"--io-tiles", 0, 1024, &o->io_tiles},
        {"--max-calls", 0, INT_MAX, &o->max_calls},
        {"--test-images", 0, INT_MAX, &o->test_images},
    };
    const struct {
        const char *name;
        sim_time *dst;
    } times[] = {
        {"--prep-us", &o->host.prep_ps},
        {"--callback-us", &o->host.callback_ps},
        {"--drain-us", &o->drain_ps},
    };
    for (size_t k = 0; k < sizeof times / sizeof times[0]; k++)
        if (strcmp(a, times[k].name) == 0)
            return cli_us(CMD, a, v, times[k].dst);
    if (strcmp(a, "--loaders") == 0) {
        uint64_t n;
        int rc = cli_u64(CMD, a, v, 1, 4096, &n);
        o->host.loaders = (uint32_t)n;
        return rc;
    }
    if (strcmp(a, "--host-dist") == 0) {
        err e;
        err_clear(&e);
        return host_dist_parse(&o->host.dist, v, &e) == ERR_OK ? 0 : cli_report_err(CMD, &e);
    }
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (strcmp(a, ints[k].name) == 0)
            return cli_int(CMD, a, v, ints[k].min, ints[k].max, ints[k].dst);
    if (strcmp(a, "--learning-rate") == 0)
        return cli_double(CMD, a, v, 0.0, 1000.0, &c->opt.lr);
    if (strcmp(a, "--seed") == 0)
        return cli_u64(CMD, a, v, 0, UINT64_MAX, &c->seed);
    if (strcmp(a, "--max-superstep-cycles") == 0)
        return cli_u64(CMD, a, v, 0, UINT64_MAX / 2, &o->max_step);
    if (strcmp(a, "--dtype") == 0) {
        static const mnet_dtype ds[] = {MNET_FP32, MNET_FP16, MNET_U8};
        for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++)
            if (strcmp(v, mnet_dtype_name(ds[k])) == 0) {
                o->dtype = ds[k];
                return 0;
            }
        fprintf(stderr, "ipusim %s: --dtype %s: expected fp32, fp16 or u8\n", CMD, v);
        return 2;
    }
    if (strcmp(a, "--strategy") == 0)
        return parse_strategy(a, v, &o->sharded);
    if (strcmp(a, "--schedule") == 0) {
        err e;
        err_clear(&e);
        pipe_kind k;
        if (pipe_kind_parse(v, &k, &e) != ERR_OK) {
            fprintf(stderr, "ipusim %s: --schedule: %s\n", CMD, e.msg);
            return 2;
        }
        o->schedule = (int)k;
        return 0;
    }
    if (strcmp(a, "--mapping") == 0) {
        if (strcmp(v, "sample") != 0 && strcmp(v, "planned") != 0) {
            fprintf(stderr, "ipusim %s: --mapping %s: expected sample or planned\n", CMD, v);
            return 2;
        }
        o->mapping = v[0] == 'p' ? MNET_MAP_PLANNED : MNET_MAP_SAMPLE;
        return 0;
    }
    if (strcmp(a, "--recompute") == 0) {
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
            fprintf(stderr, "ipusim %s: --recompute %s: expected on or off\n", CMD, v);
            return 2;
        }
        o->recompute = v[1] == 'n';
        return 0;
    }
    if (strcmp(a, "--output-mode") == 0)
        return parse_output_mode(a, v, &o->out_mode, &o->out_n);
    if (strcmp(a, "--network") == 0)
        return parse_network(v, &o->net);
    const char **dst = strcmp(a, "--stages") == 0         ? &o->stages
                       : strcmp(a, "--dataset") == 0      ? &o->dataset
                       : strcmp(a, "--save-weights") == 0 ? &o->save
                       : strcmp(a, "--load-weights") == 0 ? &o->load
                                                          : &o->json;
    *dst = v;
    return 0;
}

/* Which run an option belongs to, the one rule the checks after parsing apply (and the help
 * states): SIM, the simulated run only (refused with --reference); TRAIN, training only
 * (refused with --epochs 0, which trains nothing); PIPE, a pipeline over several IPUs only
 * (refused with --strategy sharded or --ipus 1). VALUE: the option takes a value. */
enum { SIM = 1, TRAIN = 2, PIPE = 4, VALUE = 8 };
static const struct {
    const char *name;
    unsigned modes;
} options[] = {
    {"--reference", 0},
    {"--dataset", VALUE},
    {"--network", VALUE},
    {"--epochs", VALUE},
    {"--batch-size", VALUE | TRAIN},
    {"--gradient-accumulation", VALUE | TRAIN},
    {"--device-iterations", VALUE | TRAIN},
    {"--test-batch-size", VALUE},
    {"--learning-rate", VALUE | TRAIN},
    {"--seed", VALUE},
    {"--save-weights", VALUE},
    {"--load-weights", VALUE},
    {"--json", VALUE},
    {"--max-calls", VALUE | TRAIN},
    {"--test-images", VALUE},
    {"--ipus", VALUE | SIM},
    {"--threads", VALUE | SIM},
    {"--depth", VALUE | SIM},
    {"--output-mode", VALUE | SIM},
    {"--steps", VALUE | SIM | TRAIN},
    {"--strategy", VALUE | SIM},
    {"--schedule", VALUE | SIM | PIPE},
    {"--recompute", VALUE | SIM | PIPE | TRAIN},
    {"--replicas", VALUE | SIM},
    {"--io-tiles", VALUE | SIM},
    {"--stages", VALUE | SIM},
    {"--max-superstep-cycles", VALUE | SIM},
    {"--dtype", VALUE | SIM},
    {"--mapping", VALUE | SIM},
    {"--loaders", VALUE | SIM},
    {"--prep-us", VALUE | SIM},
    {"--host-dist", VALUE | SIM},
    {"--callback-us", VALUE | SIM},
    {"--drain-us", VALUE | SIM},
    {"--progress", SIM},
    {"--rank-stats", SIM},
    {"--plan", SIM},
    {"--offload-optimiser", SIM | TRAIN},
    {"--profile", SIM | TRAIN}, /* and --profile-*: the training run's profile */
    {"--machine", VALUE | SIM},
    {"--set", VALUE | SIM},
};
enum { NOPTIONS = sizeof options / sizeof options[0] };

/* The table's modes of option a (--profile-* as --profile), or 0 for one it lacks. */
static unsigned modes_of(const char *a)
{
    if (strncmp(a, "--profile-", 10) == 0)
        a = "--profile";
    for (size_t k = 0; k < NOPTIONS; k++)
        if (strcmp(a, options[k].name) == 0)
            return options[k].modes;
    return 0;
}

/* Note the first option given of each restricted kind, for the checks after parsing. */
static void note_modes(mnist_opts *o, const char *a)
{
    unsigned m = modes_of(a);
    if ((m & SIM) && !o->sim_only)
        o->sim_only = a;
    if ((m & TRAIN) && !o->train_only)
        o->train_only = a;
    if ((m & PIPE) && !o->pipe_only)
        o->pipe_only = a;
}

/* One argument at argv[*i] (and its value): 0, 2 after one error line, or -1 for --help. */
static int parse_arg(mnist_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v = NULL;
    int rc;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
        return -1;
    note_modes(o, a);
    if (strcmp(a, "--reference") == 0) {
        o->reference = 1;
        return 0;
    }
    if (strcmp(a, "--progress") == 0) {
        o->progress = 1;
        return 0;
    }
    if (strcmp(a, "--rank-stats") == 0) {
        o->rank_stats = 1;
        return 0;
    }
    if (strcmp(a, "--plan") == 0) {
        o->plan = 1;
        o->mapping = MNET_MAP_PLANNED;
        return 0;
    }
    if (strcmp(a, "--offload-optimiser") == 0) {
        o->offload = 1;
        return 0;
    }
    if ((rc = cli_machine_opt(CMD, argc, argv, i, &o->mo)) >= 0)
        return rc;
    if ((rc = cli_profile_opt(CMD, argc, argv, i, &o->prof)) >= 0)
        return rc;
    if (!(modes_of(a) & VALUE))
        return cli_unknown(CMD, a);
    if ((rc = cli_value(CMD, argc, argv, i, &v)))
        return rc;
    return parse_value(o, a, v);
}

/* Parse the command line into o: 0, 2 after one error line, or -1 after printing the help. */
static int parse_opts(int argc, char **argv, mnist_opts *o)
{
    *o = (mnist_opts){.cfg = mref_defaults(),
                      .dataset = "mnist-digits",
                      .net = mspec_tutorial(),
                      .depth = 3,
                      .host = mnet_host_default(),
                      .out_mode = STRM_ALL,
                      .out_n = 1,
                      .recompute = 1,
                      .replicas = 1,
                      .max_step = CLI_MAX_SUPERSTEP_CYCLES};
    cli_profile_init(&o->prof);
    for (int i = 1; i < argc; i++) {
        int rc = parse_arg(o, argc, argv, &i);
        if (rc == -1) {
            const cli_cmd *c = cli_find(CMD);
            if (c)
                cli_usage(c, stdout);
        }
        if (rc)
            return rc;
    }
    if (!o->ipus) /* the tutorial's four blocks, one an IPU; another table on one IPU */
        o->ipus = o->net == mspec_tutorial() ? 4 : 1;
    if (o->pipe_only && (o->sharded || o->ipus == 1) && !o->reference) {
        fprintf(stderr, "ipusim %s: %s shapes a pipeline over several IPUs; %s runs none\n", CMD,
                o->pipe_only, o->sharded ? "--strategy sharded" : "--ipus 1");
        return 2;
    }
    if (o->reference && o->sim_only) {
        fprintf(stderr,
                "ipusim %s: %s is an option of the simulated run; --reference does not "
                "take it\n",
                CMD, o->sim_only);
        return 2;
    }
    if (o->cfg.epochs == 0 && o->train_only) {
        fprintf(stderr, "ipusim %s: %s shapes training; --epochs 0 trains nothing\n", CMD,
                o->train_only);
        return 2;
    }
    if (!o->reference &&
        (cli_machine_resolve(CMD, &o->mo, &o->m) ||
         cli_ipus(CMD, 0, &o->mo, "the run's IPUs are --ipus x --replicas", &o->m) ||
         resolve_stages(o)))
        return 2;
    if (!o->reference) { /* the simulated run's rules, before any data is read */
        err e;
        err_clear(&e);
        mnet_cfg c;
        if (mnist_sim_cfg(o, &c, &e))
            return cli_report_err(CMD, &e);
    }
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
    const mref_cfg *cfg = &o->cfg;
    err *e = xcalloc(1, sizeof *e);
    int max_batch = cfg->batch > cfg->test_batch ? cfg->batch : cfg->test_batch;
    mnist_run r = {0};
    mnist_result res = {.mode = "reference", .trained = mnist_trained(o, &d->train)};
    mref_net *net = mref_create_net(o->net, max_batch, e);
    int rc = !net || (o->load ? mref_load(net, o->load, e) : (mref_init(net, cfg->seed), 0)) ||
             (o->save && mref_prepare_save(net, o->save, e));
    if (rc)
        goto out;
    printf("Reference (native host) training on %s (%s): %zu training, %zu test images\n",
           o->dataset, dir, d->train.n, d->test.n);
    if (o->net != mspec_tutorial())
        printf("network %s: %s; %zu parameters\n", o->net->name, o->net->about, mref_nparams(net));
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
    rc = rc ? cli_report_err(CMD, e) : o->json ? mnist_json(o, dir, d, &r, &res) : 0;
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
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc == -1 ? 0 : rc;
    o.ranks = ranks;
    o.inv = (cli_inv){CMD, argc, argv, &o.mo};
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
    if (o.cfg.epochs > 0 && (long)d->train.n < per_call) {
        fprintf(stderr,
                "ipusim %s: %s has %zu training images, fewer than one host call of "
                "batch-size %d x gradient-accumulation %d x device-iterations %d = %ld\n",
                CMD, o.dataset, d->train.n, o.cfg.batch, o.cfg.grad_accum, o.cfg.device_iters,
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
