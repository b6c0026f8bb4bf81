/* mnet: the simulated MNIST run (mnet.h): one system of the run's IPUs (one, or the blocks'
 * IPUs pipelined or sharded, times the replicas) with a host, the network's graph
 * (mnet_graph.c) compiled and loaded, the host's data loaders serving the reference
 * trainer's micro-batches through the infeed, and the outfeed's logits and losses turned
 * into the tutorial's per-call loss and accuracy as they reach the host.
 *
 * The AdamW step's two per-step scalars (PyTorch computes them on the host in Python floats)
 * are tabulated for every step of the run and written with the initial weights; the device
 * walks the table. The calls run in one device program, each ended by a sync of every IPU with
 * the host (mnet_int.h, mnet_loop): as PopTorch's run, a call is over when its program has
 * ended on every IPU (the pipeline's flush, the last update and outfeed included, whatever the
 * output mode), and the next starts after it. Left out: the host's own time between calls
 * (PopTorch returns to Python after each; here the next call starts at the sync's release),
 * and uploading the weights (written before the run, outside the timeline). */
#include "workloads/mnist/mnet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/rank.h"
#include "host/system.h"
#include "workloads/mnist/feed.h"
#include "workloads/mnist/gnet.h"
#include "workloads/mnist/layers.h"
#include "workloads/mnist/mnet_int.h"

host_cfg mnet_host_default(void)
{
    host_cfg h = host_cfg_default();
    h.prep_ps = 1000000; /* 1 us a sample: a normalised 28 x 28 image from host memory */
    return h;
}

int mnet_defaults(mnet_cfg *c, err *e)
{
    memset(c, 0, sizeof *c);
    c->run = mref_defaults();
    c->depth = 3;
    c->out_mode = STRM_ALL;
    c->out_n = 1;
    c->host = mnet_host_default();
    c->test_iters = 100;
    c->replicas = 1;
    c->mem_prop = OP_AVAIL_DEFAULT;
    return mach_builtin(&c->m, "mk2", e);
}

void mnet_as_sharded(mnet_cfg *c)
{
    c->pipelined = 0;
    c->run.batch *= c->run.grad_accum;
    c->run.grad_accum = 1;
}

const char *mnet_dtype_name(mnet_dtype d)
{
    return d == MNET_U8 ? "u8" : d == MNET_FP16 ? "fp16" : "fp32";
}

/* ---- what the host does during a run ---- */

typedef struct host_side {
    const mnet_cfg *c;
    const mnet_hooks *h;
    const mnet_b *b;
    mfeed *feed, *labels;   /* training: images; the labels again for the outfeed's check */
    const mdata_split *set; /* test: the set, in order */
    float lut[256];
    uint16_t half[256]; /* lut as binary16 (MNET_FP16) */
    uint32_t *index;
    int *lab;
    uint8_t *res;  /* the outfeed buffer being drained */
    uint8_t *tbuf; /* test pass: the infeed buffer tk - 1 (tk 0: none yet) */
    uint64_t tk;
    /* training calls */
    int calls_per_epoch, calls;
    uint32_t per_call_mb; /* micro-batches in a call, of one replica */
    uint32_t R, N;        /* replicas, and the IPUs of one */
    uint32_t G;           /* micro-batches an update, of one replica */
    /* per host call (the replicas' outfeeds arrive in any order): sums (loss_sum per call
     * and replica), counts, end cycle */
    double *loss_sum;
    long *correct, *images, *outs;
    uint64_t *end, ncall; /* end: the call's end (hs_meet); ncall: calls in the run */
    uint64_t met;         /* calls whose end has come */
    uint64_t reported;    /* calls reported so far, in order */
    /* test */
    long test_correct;
    int failed;
} host_side;

/* Test pass: micro-batch k of the set in order into hs->tbuf (images, fp32 normalised, their
 * bytes or fp16 normalised, then int32 labels; zeros past the set's end), made once for all
 * its copies. */
static void make_test(host_side *hs, uint64_t k)
{
    uint32_t B = hs->b->B;
    size_t first = (size_t)k * B, n = first < hs->set->n ? hs->set->n - first : 0;
    if (n > B)
        n = B;
    size_t img_bytes = (size_t)B * hs->b->px * 4;
    memset(hs->tbuf, 0, img_bytes + (size_t)B * 4);
    for (size_t i = 0; i < n; i++) {
        hs->index[i] = (uint32_t)(first + i);
        int32_t l = hs->set->labels[first + i];
        memcpy(hs->tbuf + img_bytes + 4 * i, &l, 4);
    }
    if (hs->b->dtype == MNET_FP32)
        mdata_gather(hs->set, hs->index, n, hs->lut, (float *)(void *)hs->tbuf, hs->lab);
    else if (hs->b->dtype == MNET_FP16)
        mdata_gather_f16(hs->set, hs->index, n, hs->half, hs->tbuf, hs->lab);
    else
        memcpy(hs->tbuf, hs->set->images + MDATA_PIXELS * first, MDATA_PIXELS * n);
    hs->tk = k + 1;
}

/* Infeed, test pass: bytes of micro-batch k's buffer. */
static void fill_test(host_side *hs, uint64_t k, uint64_t offset, uint8_t *dst, uint32_t bytes)
{
    size_t total = (size_t)hs->b->B * (hs->b->px * 4 + 4);
    if (hs->tk != k + 1)
        make_test(hs, k);
    for (uint32_t i = 0; i < bytes; i++)
        dst[i] = offset + i < total ? hs->tbuf[offset + i] : 0;
}

/* Replica r's micro-batch k as the run's: training, micro-batch j of update u is the
 * update's rG + j; the test pass deals them round the replicas. */
static uint64_t global_mb(const host_side *hs, uint32_t r, uint64_t k)
{
    if (!hs->feed)
        return k * hs->R + r;
    return k / hs->G * hs->G * hs->R + (uint64_t)r * hs->G + k % hs->G;
}

static void fill(void *ctx, uint32_t ipu, uint64_t k, uint64_t offset, uint8_t *dst, uint32_t bytes)
{
    host_side *hs = ctx;
    uint64_t m = global_mb(hs, ipu / hs->N, k);
    if (hs->feed)
        mfeed_fill(hs->feed, m, offset, dst, bytes);
    else
        fill_test(hs, m, offset, dst, bytes);
}

/* Images among the first n rows of logits z whose first largest logit is the label. */
static long right(const float *z, const int32_t *labels, size_t n)
{
    long r = 0;
    for (size_t i = 0; i < n; i++)
        r += mlayer_argmax(z + i * MDATA_CLASSES, MDATA_CLASSES) == labels[i];
    return r;
}

/* The outfeeds of one call that reach the host (per replica, its micro-batches' or their
 * sum's). */
static uint64_t outs_per_call(const host_side *hs)
{
    const mnet_cfg *c = hs->c;
    uint64_t per = hs->per_call_mb;
    uint64_t every = c->out_mode == STRM_FINAL || c->out_mode == STRM_SUM ? per : c->out_n;
    return per / every * hs->R;
}

/* Report, in order, the calls that have ended and whose every outfeed has arrived: the loss
 * is the mean of the
 * replicas' sums taken in replica order (each replica's in its own order), so it is the same
 * whatever order the replicas' outfeeds arrived in. */
static void report_calls(host_side *hs)
{
    const mnet_cfg *c = hs->c;
    uint64_t per = hs->per_call_mb;
    for (uint64_t q = hs->reported;
         q < hs->met && q < hs->ncall && (uint64_t)hs->outs[q] == outs_per_call(hs);
         q = ++hs->reported) {
        int epoch = (int)(q / (uint64_t)hs->calls_per_epoch) + 1;
        int in_epoch = (int)(q % (uint64_t)hs->calls_per_epoch) + 1;
        if (in_epoch == 1 && hs->h && hs->h->epoch_begin)
            hs->h->epoch_begin(hs->h->ctx, epoch, c->run.epochs);
        double loss = 0.0;
        for (uint32_t r = 0; r < hs->R; r++)
            loss += hs->loss_sum[q * hs->R + r];
        mnet_call rep = {.p = {.epoch = epoch,
                               .epochs = c->run.epochs,
                               .call = in_epoch,
                               .calls = hs->calls_per_epoch,
                               .images = (long)per * hs->b->B * hs->R,
                               .loss = loss / (double)hs->outs[q],
                               .accuracy = 100.0 * (double)hs->correct[q] / (double)hs->images[q]},
                         .end_cycle = hs->end[q]};
        if (hs->h && hs->h->call_done)
            hs->h->call_done(hs->h->ctx, &rep);
    }
}

/* Outfeed buffer k of replica r in training: a micro-batch's logits and mean loss (all,
 * final, every:N: the replica's micro-batch (k + 1) N - 1, N = 1 for all, a call's for
 * final), or their sums over a host call (sum: the loss is then the call's mean; the accuracy
 * is the summed logits' against the call's last labels, as the tutorial's accuracy() would
 * compute it on what PopTorch returns, and means little). A call is reported, in order, once
 * every replica's outfeeds of it have arrived: the mean of their losses, the accuracy over
 * their images. */
static void train_out(host_side *hs, uint32_t r, uint64_t k)
{
    const mnet_cfg *c = hs->c;
    uint32_t B = hs->b->B;
    uint64_t per = hs->per_call_mb;
    uint64_t every = c->out_mode == STRM_FINAL || c->out_mode == STRM_SUM ? per : c->out_n;
    uint64_t m = global_mb(hs, r, (k + 1) * every - 1), call = m / (per * hs->R);
    if (call >= hs->ncall)
        return;
    int32_t *labels = xmalloc(4 * (size_t)B);
    mfeed_fill(hs->labels, m, (uint64_t)B * hs->b->px * 4, (uint8_t *)labels, 4 * B);
    float loss;
    memcpy(&loss, hs->res + 40 * (size_t)B, 4);
    hs->loss_sum[call * hs->R + r] += c->out_mode == STRM_SUM ? (double)loss / (double)per : loss;
    hs->correct[call] += right((const float *)hs->res, labels, B);
    hs->images[call] += B;
    hs->outs[call]++;
    free(labels);
    report_calls(hs);
}

/* Outfeed buffer k of the test pass (micro-batch k of the set): its logits against the
 * labels. */
static void test_out(host_side *hs, uint64_t k)
{
    uint32_t B = hs->b->B;
    size_t first = (size_t)k * B, n = first < hs->set->n ? hs->set->n - first : 0;
    if (n > B)
        n = B;
    int32_t *labels = xmalloc(4 * (size_t)B);
    for (size_t i = 0; i < n; i++)
        labels[i] = hs->set->labels[first + i];
    hs->test_correct += right((const float *)hs->res, labels, n);
    free(labels);
}

static void drain(void *ctx, uint32_t ipu, uint64_t k, uint64_t offset, const uint8_t *src,
                  uint32_t bytes, uint64_t cycle)
{
    host_side *hs = ctx;
    (void)cycle; /* a call ends at the host's sync (meet), not at its last outfeed */
    size_t total = 4 * (size_t)mnet_res_words(hs->b);
    if (offset + bytes > total) {
        hs->failed = 1;
        return;
    }
    memcpy(hs->res + offset, src, bytes);
    if (offset + bytes < total)
        return;
    if (hs->feed)
        train_out(hs, ipu / hs->N, k);
    else
        test_out(hs, global_mb(hs, ipu / hs->N, k));
}

/* Every IPU and the host met at the sync that ends a host call (mnet_int.h, mnet_loop), at
 * `cycle`: the call's end, its program over on every IPU. */
static void meet(void *ctx, uint64_t cycle)
{
    host_side *hs = ctx;
    if (!hs->feed || hs->met >= hs->ncall)
        return;
    hs->end[hs->met++] = cycle;
    report_calls(hs);
}

/* ---- several ranks ---- */

/* What one rank drained, per call: the counts and the end cycle (after the loss sums). */
enum { CALL_CORRECT, CALL_IMAGES, CALL_OUTS, CALL_END, CALL_N };

/* After a run over several ranks (every rank calls it): each rank drained the outfeeds of
 * its own IPUs, so every rank takes the sums of all of them (a call and replica's outfeeds
 * all come to the rank that owns the replica's last stage: the others add zeros; the end
 * cycle is the latest), then reports the calls now complete. */
static void merge_ranks(host_side *hs, rank_comm *rk)
{
    size_t nd = (size_t)hs->ncall * hs->R, nc = (size_t)hs->ncall * CALL_N;
    size_t each = (nd + 2) * sizeof(double) + nc * sizeof(int64_t);
    unsigned size = rank_size(rk);
    uint8_t *mine = xmalloc(each), *all = xmalloc(each * size);
    double *d = xcalloc(nd + 2, sizeof *d);
    int64_t *c = xcalloc(nc ? nc : 1, sizeof *c);
    if (nd) /* training: the loss sums (none in the test pass) */
        memcpy(d, hs->loss_sum, nd * sizeof *d);
    d[nd] = hs->failed;
    d[nd + 1] = (double)hs->test_correct;
    for (uint64_t q = 0; q < hs->ncall; q++) {
        int64_t *v = c + q * CALL_N;
        v[CALL_CORRECT] = hs->correct[q];
        v[CALL_IMAGES] = hs->images[q];
        v[CALL_OUTS] = hs->outs[q];
        v[CALL_END] = (int64_t)hs->end[q];
    }
    memcpy(mine, d, (nd + 2) * sizeof *d);
    memcpy(mine + (nd + 2) * sizeof *d, c, nc * sizeof *c);
    rank_allgather(rk, mine, each, all);
    memset(d, 0, (nd + 2) * sizeof *d);
    memset(c, 0, nc * sizeof *c);
    for (unsigned r = 0; r < size; r++) {
        const uint8_t *p = all + r * each;
        for (size_t k = 0; k < nd + 2; k++) {
            double x;
            memcpy(&x, p + k * sizeof x, sizeof x);
            d[k] += x;
        }
        for (size_t k = 0; k < nc; k++) {
            int64_t x;
            memcpy(&x, p + (nd + 2) * sizeof(double) + k * sizeof x, sizeof x);
            c[k] = k % CALL_N == CALL_END ? (x > c[k] ? x : c[k]) : c[k] + x;
        }
    }
    if (nd)
        memcpy(hs->loss_sum, d, nd * sizeof *d);
    hs->failed = d[nd] != 0.0;
    hs->test_correct = (long)d[nd + 1];
    for (uint64_t q = 0; q < hs->ncall; q++) {
        const int64_t *v = c + q * CALL_N;
        hs->correct[q] = (long)v[CALL_CORRECT];
        hs->images[q] = (long)v[CALL_IMAGES];
        hs->outs[q] = (long)v[CALL_OUTS];
        hs->end[q] = (uint64_t)v[CALL_END];
    }
    hs->met = hs->ncall; /* the run is over: every call has ended */
    free(d);
    free(c);
    free(mine);
    free(all);
    report_calls(hs);
}

/* ---- a run ---- */

/* The table of the step's scalars for steps 1..updates, as adamw.c computes them. */
static float *step_table(const adamw_cfg *o, uint32_t updates)
{
    float *t = xcalloc(4 * (size_t)updates + 1, sizeof *t);
    for (uint32_t s = 1; s <= updates; s++) {
        double bc1 = 1.0 - pow(o->beta1, (double)s), bc2 = 1.0 - pow(o->beta2, (double)s);
        float *r = t + 4 * (size_t)(s - 1);
        r[0] = (float)sqrt(bc2);
        r[2] = r[3] = (float)(-(o->lr / bc1));
    }
    return t;
}

/* Host data into the loaded graph: the tables, the weights, zero optimiser state. */
static void write_inputs(const mnet_b *b, const gr_exe *x, eng *g, const float *params)
{
    for (size_t k = 0; k < b->ninit; k++)
        for (uint32_t r = 0; r < b->init[k].reps; r++)
            gr_write(x, g, b->init[k].t, b->init[k].at + r * b->init[k].n, b->init[k].w,
                     b->init[k].n);
    gr_write(x, g, b->params, 0, params, b->nparams);
    if (!b->train)
        return;
    float *zero = xcalloc(b->nparams, sizeof *zero);
    gr_write(x, g, b->grads, 0, zero, b->nparams);
    if (!b->offload) { /* offloaded, the remote buffers start zeroed (hio.h) */
        gr_write(x, g, b->opt_m, 0, zero, b->nparams);
        gr_write(x, g, b->opt_v, 0, zero, b->nparams);
    }
    gr_write(x, g, b->cursor, 0, zero, 2 * (size_t)b->nhyper);
    free(zero);
    float *t = step_table(&b->opt, b->updates);
    for (uint32_t i = 0; i < b->nhyper; i++)
        gr_write(x, g, b->hyper_tab, (size_t)i * 4 * b->updates, t, 4 * (size_t)b->updates);
    free(t);
}

const char *mnet_layer_name(int k)
{
    static const char *const name[MNET_NLAYERS] = {"conv1",  "pool1",  "conv2", "pool2",
                                                   "layer3", "layer4", "loss"};
    return k >= 0 && k < MNET_NLAYERS ? name[k] : NULL;
}

/* The tiles each layer's compute sets use on each IPU, and those the convolutions' and linear
 * layers' use together (net: their names; NULL: the tutorial's), into b->pipe. */
static void count_layer_tiles(mnet_b *b, const gr_exe *x, const mspec *net)
{
    memset(b->pipe.layer_tiles, 0, sizeof b->pipe.layer_tiles);
    memset(b->pipe.mm_tiles, 0, sizeof b->pipe.mm_tiles);
    net = net ? net : mspec_tutorial();
    const char *mm[MSPEC_MAX_LAYERS];
    size_t n = 0;
    for (int l = 0; l < net->nlayers; l++)
        if (net->layer[l].kind == MSPEC_CONV || net->layer[l].kind == MSPEC_LINEAR)
            mm[n++] = net->layer[l].name;
    for (uint32_t i = 0; i < b->nipus && i < MSPEC_MAX_BLOCKS; i++) {
        for (int k = 0; k < MNET_NLAYERS; k++)
            b->pipe.layer_tiles[k][i] = gr_exe_layer_tiles(x, mnet_layer_name(k), i);
        b->pipe.mm_tiles[i] = gr_exe_layers_tiles(x, mm, n, i);
    }
}

/* Build, compile, load and run one graph; params in (and out when training). */
static int run(const mnet_cfg *c, mnet_b *b, host_side *hs, float *params, int test, err *e)
{
    hio_cfg hc = {.in = c->host,
                  .out = host_cfg_default(),
                  .fill = fill,
                  .fill_ctx = hs,
                  .drain = drain,
                  .drain_ctx = hs,
                  .meet = meet,
                  .meet_ctx = hs};
    hc.in.depth = hc.out.depth = c->depth;
    hc.out.drain_ps = c->drain_ps;
    hc.in.samples_per_buffer = b->B;
    hc.in.bytes_per_buffer = (uint64_t)b->B * (b->px * 4 + 4);
    hc.out.bytes_per_buffer = 4 * (uint64_t)mnet_res_words(b);
    sys_cfg sc = {.m = c->m, .threads = c->threads, .ctl = c->ctl, .host = &hc, .ranks = c->ranks};
    sc.m.nipus = b->nipus * b->R;
    sys *s = sys_new(&sc, e);
    if (!s)
        return e->status ? e->status : ERR_INPUT;
    int rc = ERR_INPUT;
    eng *g = sys_engine(s);
    gr_exe *x = gr_compile(b->g, b->main, eng_pool(g), e);
    if (x && gr_load(x, g, e) == ERR_OK) {
        write_inputs(b, x, g, params);
        eng_log_syncs(g, ENG_LOG_ALL, c->log_steps);
        rc = eng_run(g, e);
        if (rc == ERR_OK && rank_size(eng_ranks(g)) > 1)
            merge_ranks(hs, eng_ranks(g));
        if (rc == ERR_OK && hs->failed)
            rc = err_set(e, ERR_FAULT, "mnet: the outfeed delivered more than its buffer");
        if (rc == ERR_OK && !test)
            gr_read(x, g, b->params, 0, params, b->nparams);
        if (rc == ERR_OK && !test && hs->h && hs->h->grads)
            gr_read(x, g, b->grads, 0, hs->h->grads, b->nparams);
        if (rc == ERR_OK && hs->h && hs->h->finished) {
            count_layer_tiles(b, x, c->net);
            hs->h->finished(hs->h->ctx, test, g, x, &b->pipe);
        }
    } else if (x) {
        rc = e->status ? e->status : ERR_INPUT;
    }
    gr_exe_free(x);
    sys_free(s);
    return rc;
}

static void side_init(host_side *hs, const mnet_cfg *c, const mnet_hooks *h, const mnet_b *b)
{
    memset(hs, 0, sizeof *hs);
    hs->c = c;
    hs->h = h;
    hs->b = b;
    mdata_norm_table(hs->lut);
    mdata_half_table(hs->lut, hs->half);
    hs->index = xmalloc(4 * (size_t)b->B);
    hs->lab = xmalloc(sizeof(int) * b->B);
    hs->tbuf = xmalloc((size_t)b->B * (MDATA_PIXELS * 4 + 4));
    hs->res = xcalloc(mnet_res_words(b), 4);
    hs->R = b->R;
    hs->N = b->nipus;
    hs->G = b->G;
}

static void side_free(host_side *hs)
{
    free(hs->loss_sum);
    free(hs->correct);
    free(hs->images);
    free(hs->outs);
    free(hs->end);
    mfeed_free(hs->feed);
    mfeed_free(hs->labels);
    free(hs->index);
    free(hs->lab);
    free(hs->tbuf);
    free(hs->res);
}

/* The run's graph: the tutorial's own (mnet_graph.c), or another table's (gnet_mnet) from n,
 * which it resolves into *sn. */
static int build(mnet_b *b, const mnet_cfg *c, int train, uint32_t updates, uint32_t per_call,
                 mspec_net *sn, err *e)
{
    if (!c->net || c->net == mspec_tutorial())
        return mnet_build(b, c, train, updates, per_call, e);
    memset(b, 0, sizeof *b);
    if (mspec_resolve(c->net, sn, e) != ERR_OK)
        return ERR_INPUT;
    return gnet_mnet(b, c, sn, train, updates, per_call, e);
}

int mnet_check_network(const mnet_cfg *c, int train, err *e)
{
    mspec_net sn;
    if (!c->net || c->net == mspec_tutorial())
        return ERR_OK;
    return mspec_resolve(c->net, &sn, e) != ERR_OK ? ERR_INPUT : gnet_check(c, &sn, train, e);
}

static int check(const mnet_cfg *c, const mdata_split *train, err *e)
{
    const mref_cfg *r = &c->run;
    if ((train && r->epochs < 1) || r->batch < 1 || r->grad_accum < 1 || r->device_iters < 1 ||
        r->test_batch < 1)
        return err_set(e, ERR_INPUT,
                       "mnet: bad configuration (epochs %d, batch %d, gradient accumulation %d, "
                       "device iterations %d, test batch %d)",
                       r->epochs, r->batch, r->grad_accum, r->device_iters, r->test_batch);
    if (c->dtype != MNET_FP32 && c->dtype != MNET_U8 && c->dtype != MNET_FP16)
        return err_set(e, ERR_INPUT, "mnet: bad image dtype %d", (int)c->dtype);
    uint32_t R = c->replicas ? c->replicas : 1;
    long per_call = (long)r->batch * r->grad_accum * r->device_iters * R;
    if (train && (long)train->n < per_call)
        return err_set(e, ERR_INPUT,
                       "the training set has %zu images, fewer than one host call of batch %d x "
                       "gradient accumulation %d x device iterations %d x replicas %u = %ld "
                       "images",
                       train->n, r->batch, r->grad_accum, r->device_iters, R, per_call);
    return ERR_OK;
}

int mnet_train(const mnet_cfg *c, const mdata_split *train, float *params, const mnet_hooks *h,
               err *e)
{
    if (check(c, train, e))
        return ERR_INPUT;
    const mref_cfg *r = &c->run;
    uint32_t R = c->replicas ? c->replicas : 1;
    long per_call = (long)r->batch * r->grad_accum * r->device_iters * R;
    int cpe = (int)((long)train->n / per_call);
    uint64_t calls = (uint64_t)cpe * (uint64_t)r->epochs;
    uint64_t updates = calls * (uint64_t)r->device_iters;
    if (updates > UINT32_MAX / 8)
        return err_set(e, ERR_INPUT, "mnet: %llu weight updates is too many for one run",
                       (unsigned long long)updates);
    mnet_b b;
    mspec_net sn;
    int rc = build(&b, c, 1, (uint32_t)updates, (uint32_t)r->device_iters, &sn, e);
    if (rc != ERR_OK) {
        mnet_b_free(&b);
        return rc;
    }
    host_side hs;
    side_init(&hs, c, h, &b);
    hs.calls_per_epoch = cpe;
    hs.per_call_mb = (uint32_t)(r->grad_accum * r->device_iters);
    hs.ncall = calls;
    hs.loss_sum = xcalloc(calls * R, sizeof *hs.loss_sum);
    hs.correct = xcalloc(calls, sizeof *hs.correct);
    hs.images = xcalloc(calls, sizeof *hs.images);
    hs.outs = xcalloc(calls, sizeof *hs.outs);
    hs.end = xcalloc(calls, sizeof *hs.end);
    hs.feed = mfeed_new(train, r->seed, r->epochs, r->batch, (int)(hs.per_call_mb * R));
    hs.labels = mfeed_new(train, r->seed, r->epochs, r->batch, (int)(hs.per_call_mb * R));
    mfeed_fmt fmt = c->dtype == MNET_U8 ? MFEED_U8 : c->dtype == MNET_FP16 ? MFEED_F16 : MFEED_F32;
    mfeed_format(hs.feed, fmt);
    mfeed_format(hs.labels, fmt);
    rc = run(c, &b, &hs, params, 0, e);
    side_free(&hs);
    mnet_b_free(&b);
    return rc;
}

int mnet_test(const mnet_cfg *c, const mdata_split *set, const float *params, double *accuracy,
              const mnet_hooks *h, err *e)
{
    if (check(c, NULL, e))
        return ERR_INPUT;
    if (set->n == 0)
        return err_set(e, ERR_INPUT, "the test set is empty");
    uint32_t B = (uint32_t)c->run.test_batch, R = c->replicas ? c->replicas : 1;
    uint64_t mbs = (set->n + B - 1) / B, per_rep = (mbs + R - 1) / R; /* dealt round them */
    mnet_b b;
    mspec_net sn;
    int rc = build(&b, c, 0, (uint32_t)per_rep, 1, &sn, e);
    if (rc != ERR_OK) {
        mnet_b_free(&b);
        return rc;
    }
    host_side hs;
    side_init(&hs, c, h, &b);
    hs.set = set;
    float *p = xmalloc(b.nparams * sizeof *p);
    memcpy(p, params, b.nparams * sizeof *p);
    rc = run(c, &b, &hs, p, 1, e);
    if (rc == ERR_OK)
        *accuracy = 100.0 * (double)hs.test_correct / (double)set->n;
    free(p);
    side_free(&hs);
    mnet_b_free(&b);
    return rc;
}
