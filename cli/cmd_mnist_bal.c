/* cmd_mnist_bal: `ipusim mnist --balance` and `--stages auto` (docs/pipelining.md,
 * "Balancing from measurements"): the calibration runs simulated and the search's table
 * printed (workloads/mnist/balance.h), then, with --stages auto, the fastest placement taken
 * for the run, and after it the search's estimate of its main pipeline step beside the
 * simulated one and the hand placement's (the default --stages of --ipus). */
#include <stdio.h>
#include <string.h>

#include "cli/cmd_mnist.h"

#define CMD MNIST_CMD

/* "B2 conv2 pool2". */
static const char *block_text(const mspec *net, int b, char *buf, size_t len)
{
    int at = snprintf(buf, len, "B%d", b);
    for (int l = 0; l < net->nlayers && at > 0 && (size_t)at < len; l++)
        if (net->layer[l].block == b)
            at += snprintf(buf + at, len - (size_t)at, " %s", net->layer[l].name);
    return buf;
}

static void on_run(void *ctx, const mbal_cal *cal, const mbal_run *r, mbal_cuts p)
{
    (void)ctx;
    char on[64];
    printf("  calibration %-9zu  %-16s ", cal->nruns + cal->nunfit,
           mbal_text(p, cal->B, on, sizeof on));
    if (!r) {
        printf("does not fit: %s\n", cal->why[cal->nunfit - 1]);
        fflush(stdout);
        return;
    }
    const mnet_pipe_steps *m = &r->m;
    printf("main step %llu cycles: the passes", (unsigned long long)m->main);
    for (uint32_t i = 0; i < m->N; i++)
        printf("%s %llu", i ? "," : "", (unsigned long long)m->work[i]);
    printf(", the Copy %llu\n", (unsigned long long)m->copy);
    fflush(stdout);
}

/* "Balance: 4 blocks over 4 IPUs at most, as 2 or 4 stages (not 3: ...)". */
static void print_counts(const mnist_bal *b, const mspec *net, int B, uint32_t most)
{
    char ok[64] = "", no[64] = "";
    for (uint32_t s = 2, a = 0, n = 0; s <= most && s <= (uint32_t)B; s++) {
        char *t = b->counts.ok[s] ? ok : no;
        uint32_t *k = b->counts.ok[s] ? &a : &n;
        snprintf(t + strlen(t), sizeof ok - strlen(t), "%s%u", (*k)++ ? ", " : "", s);
    }
    printf("Balance: network %s, %d blocks over at most %u IPUs, as %s stages", net->name, B, most,
           ok);
    if (no[0])
        printf(" (not %s: no %s system has that many IPUs)", no, b->m_name);
    printf("\n");
}

static void print_blocks(const mnist_bal *b, const mspec *net)
{
    char name[128];
    printf("  %-22s cycles of a block's steps in a main step, by where it sits\n", "measured");
    for (int k = 1; k <= b->cal.B; k++) {
        printf("    %-24s", block_text(net, k, name, sizeof name));
        for (int key = 0; key < MBAL_KEYS; key++)
            if (b->cal.seen[k - 1][key])
                printf(" %s %llu;", mbal_key_name((mbal_key)key),
                       (unsigned long long)b->cal.work[k - 1][key]);
        printf("\n");
    }
    char on[64];
    printf("    %-24s", "the Copy of a cut alone");
    for (int c = 1; c < b->cal.B; c++) {
        uint64_t v;
        size_t run;
        if (!mbal_cut_copy(&b->cal, c, &v, &run))
            printf(" after B%d unknown", c);
        else if (run == SIZE_MAX)
            printf(" after B%d %llu", c, (unsigned long long)v);
        else
            printf(" after B%d %llu (%s's less its other cuts')", c, (unsigned long long)v,
                   mbal_text(b->cal.run[run].p, b->cal.B, on, sizeof on));
        printf("%s", c + 1 < b->cal.B ? ";" : "\n");
    }
}

/* The hand placement's estimated main step, or why there is none. */
static const char *hand_step(const mnist_bal *b, char *buf, size_t len)
{
    if (b->hand.step)
        snprintf(buf, len, "%llu", (unsigned long long)b->hand.step);
    else
        snprintf(buf, len, "none (%s)", b->hand_why);
    return buf;
}

static void print_est(const mnist_bal *b, const mbal_est *x, const char *tag)
{
    char on[64];
    printf("    %-16s %u stages: %llu = stage %d's %llu + the Copy %llu%s",
           mbal_text(x->p, b->cal.B, on, sizeof on), x->stages, (unsigned long long)x->step,
           x->slowest + 1, (unsigned long long)x->work[x->slowest], (unsigned long long)x->copy,
           tag);
    if (x->run)
        printf(" (calibration run: %llu, %+.1f%%)", (unsigned long long)x->run->m.main,
               100.0 * ((double)x->step - (double)x->run->m.main) / (double)x->run->m.main);
    printf("\n");
}

enum { SHOWN = 12 }; /* placements listed, fastest first (and the hand one) */

/* "conv1 pool1 | conv2 pool2 layer3 relu3 | layer4": each stage's layers. */
static const char *stage_text(const mspec *net, mbal_cuts p, char *buf, size_t len)
{
    uint32_t ipu[MSPEC_MAX_BLOCKS];
    mbal_to_ipus(p, mspec_blocks(net), ipu);
    int at = 0;
    buf[0] = '\0';
    for (int l = 0; l < net->nlayers && (size_t)at < len; l++) {
        int next = l && ipu[net->layer[l].block - 1] != ipu[net->layer[l - 1].block - 1];
        at += snprintf(buf + at, len - (size_t)at, "%s%s", l ? (next ? " | " : " ") : "",
                       net->layer[l].name);
    }
    return buf;
}

static void print_search(const mnist_bal *b, const mspec *net)
{
    printf("  %-22s the main pipeline step estimated: the slowest stage's passes + the Copy; "
           "fastest first (a calibration run by its simulated step)\n",
           "placements");
    for (size_t k = 0; k < b->nest; k++)
        if (k < SHOWN || b->est[k].p == b->hand.p)
            print_est(b, &b->est[k],
                      b->est[k].p == b->hand.p ? "  <- hand"
                      : k == 0                 ? "  <- chosen"
                                               : "");
    if (b->nest > SHOWN)
        printf("    (%zu more, slower)\n", b->nest - SHOWN);
    for (size_t k = 0; k < b->cal.nunfit; k++)
        printf("    %-16s does not fit\n", mbal_text(b->cal.unfit[k], b->cal.B, (char[64]){0}, 64));
    char on[64], st[256], hs[300];
    printf("  %-22s %s (estimated main step %llu; stages %s); the hand placement %s: %s\n",
           "chosen", mbal_text(b->est[0].p, b->cal.B, on, sizeof on),
           (unsigned long long)b->est[0].step, stage_text(net, b->est[0].p, st, sizeof st),
           mbal_text(b->hand.p, b->cal.B, (char[64]){0}, 64), hand_step(b, hs, sizeof hs));
}

int mnist_balance(const mnist_opts *o, mnet_cfg *c, const mdata_split *train, const float *params,
                  mnist_bal *b, err *e)
{
    const mspec *net = c->net ? c->net : mspec_tutorial();
    int B = mspec_blocks(net);
    memset(b, 0, sizeof *b);
    snprintf(b->m_name, sizeof b->m_name, "%s", c->m.name);
    b->counts = mbal_counts_of(&c->m, B, (uint32_t)o->ipus);
    print_counts(b, net, B, (uint32_t)o->ipus);
    if (mbal_calibrate(c, &b->counts, train, params, &b->cal, on_run, b, e))
        return e->status;
    print_blocks(b, net);
    b->nest = mbal_search(&b->cal, &b->counts, b->est);
    uint32_t hand[MSPEC_MAX_BLOCKS];
    for (int k = 0; k < B; k++) /* the default --stages: block k on IPU floor(k N / K) */
        hand[k] = (uint32_t)(k * o->ipus / B);
    if (!b->nest)
        return err_set(e, ERR_INPUT, "balance: no placement of %d blocks to search", B);
    err he;
    err_clear(&he);
    if (mbal_estimate(&b->cal, mbal_from_ipus(hand, B), &b->hand, &he) != ERR_OK) {
        b->hand = (mbal_est){.p = mbal_from_ipus(hand, B)};
        snprintf(b->hand_why, sizeof b->hand_why, "%.*s", (int)sizeof b->hand_why - 1, he.msg);
    }
    print_search(b, net);
    mbal_to_ipus(b->est[0].p, B, c->stage_ipu);
    c->m.nipus = b->est[0].stages * c->replicas; /* each replica its IPUs */
    fflush(stdout);
    return 0;
}

void mnist_balance_report(const mnist_bal *b, const mnet_pipe_steps *m)
{
    if (!b->nest || !m->main_step)
        return;
    char on[64], hand[64];
    const mbal_est *x = &b->est[0];
    char hs[300];
    printf("  %-22s %s: main step estimated %llu, simulated %llu (%+.1f%%); the hand placement "
           "%s: estimated %s\n",
           "balanced placement", mbal_text(x->p, b->cal.B, on, sizeof on),
           (unsigned long long)x->step, (unsigned long long)m->main,
           100.0 * ((double)x->step - (double)m->main) / (double)m->main,
           mbal_text(b->hand.p, b->cal.B, hand, sizeof hand), hand_step(b, hs, sizeof hs));
}

json *mnist_balance_json(const mnist_bal *b, const mnet_pipe_steps *m)
{
    char on[64];
    json *o = json_obj();
    json_put_str(o, "placement", mbal_text(b->est[0].p, b->cal.B, on, sizeof on));
    json_put_u64(o, "estimated_main_step", b->est[0].step);
    json_put_u64(o, "simulated_main_step", m->main_step ? m->main : 0);
    json_put_str(o, "hand_placement", mbal_text(b->hand.p, b->cal.B, on, sizeof on));
    json_put_u64(o, "hand_estimated_main_step", b->hand.step);
    json_put_u64(o, "calibration_runs", b->cal.nruns);
    json_put_u64(o, "placements_searched", b->nest);
    return o;
}
