/* mnet_pipe: the MNIST network's pipeline stages scheduled into a device program
 * (docs/pipelining.md). Each stage (the blocks on one IPU, mnet_graph.c) has a forward pass,
 * a backward pass and, on the last IPU, a fused one; the schedule (workloads/graph/pipe.h)
 * says which pass of which micro-batch each IPU runs in each step. A step is the passes its
 * IPUs run — each IPU's program holds only its own (graph_lower.c), so they run side by side
 * — then one Copy of every crossing of the pipeline (activations up, gradients down in
 * training, each micro-batch's labels along with its activations), between IPUs over the
 * IPU-Links with external syncs: as PopART's implicit pipelining, every stage's copies run in
 * every pipeline cycle, fill and flush included, whether or not the stage feeding them ran
 * (docs/pipelining.md, "What crosses the IPU-Links"). A copy of data no stage uses lands in a
 * buffer no pass reads before the next real copy overwrites it: each pass reads what the
 * step before it delivered. The micro-batch a pass works on is never named: what a stage
 * reads is what the previous step's copy delivered, and stash and restore keep the older
 * micro-batches (stash_ring's cursors). Steps that repeat (the main phase, a sequential
 * schedule's micro-batches) become counted loops, so the program stays small for any G.
 * Left out: running the weight update one IPU after another (PopART's default); here every
 * IPU updates its own parameters at once after the flush. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/mnist/mnet_int.h"

/* What each IPU runs in a step: a bit per pass (1 << pipe_pass), and whether the last
 * stage's pass streams out. */
typedef struct step_sig {
    uint8_t on[MSPEC_MAX_BLOCKS];
    uint8_t out;
} step_sig;

static step_sig sig_of(const pipe_cfg *c, uint32_t t, const uint8_t *out)
{
    step_sig s;
    memset(&s, 0, sizeof s);
    for (uint32_t i = 0; i < c->N; i++) {
        pipe_run r[2];
        unsigned n = pipe_at(c, t, i, r);
        for (unsigned k = 0; k < n; k++) {
            s.on[i] |= (uint8_t)(1u << r[k].pass);
            if (out && i == c->N - 1 && r[k].pass != PIPE_BWD && out[r[k].mb])
                s.out = 1;
        }
    }
    return s;
}

static int sig_eq(const step_sig *a, const step_sig *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* The program of a step: each IPU's passes, then one Copy of every crossing of the pipeline
 * (PopART's copies of each pipeline cycle: up from every stage but the last, and in training
 * down to every stage but the last from the one after it). */
static gr_prog step_prog(graph *g, const pipe_cfg *c, const mnet_stage *st, const step_sig *s,
                         gr_prog copies)
{
    gr_prog p[2 * MSPEC_MAX_BLOCKS + 1];
    size_t np = 0;
    for (uint32_t i = 0; i < c->N; i++) {
        if (s->on[i] & 1u << PIPE_FWD)
            p[np++] = s->out && i == c->N - 1 ? st[i].fwd_out : st[i].fwd;
        if (s->on[i] & 1u << PIPE_FUSED)
            p[np++] = s->out ? st[i].fused_out : st[i].fused;
        if (s->on[i] & 1u << PIPE_BWD)
            p[np++] = st[i].bwd;
    }
    if (copies != GR_NONE)
        p[np++] = copies;
    return gr_seq(g, p, np);
}

/* One Copy of every crossing of the pipeline, the same in every step (so that its exchange
 * code is made once), or GR_NONE. */
static gr_prog crossings(graph *g, const pipe_cfg *c, const mnet_stage *st)
{
    size_t nx = 0, cap = 0;
    gr_xfer *x = NULL;
    for (uint32_t i = 0; i < c->N; i++) {
        const mnet_stage *from[2] = {NULL, NULL};
        if (i + 1 < c->N)
            from[0] = &st[i]; /* up to i + 1 */
        if (i > 0 && c->train)
            from[1] = &st[i - 1]; /* down to i - 1 */
        for (int d = 0; d < 2; d++) {
            if (!from[d])
                continue;
            const gr_xfer *src = d ? from[d]->down : from[d]->up;
            size_t n = d ? from[d]->ndown : from[d]->nup;
            if (!n)
                continue;
            x = xgrow(x, &cap, nx + n, sizeof *x);
            memcpy(x + nx, src, n * sizeof *x);
            nx += n;
        }
    }
    gr_prog p = nx ? gr_copy_many(g, x, nx) : GR_NONE;
    free(x);
    return p;
}

/* Steps [t, t + per) repeat k times from t: the most k (1 when they do not repeat). */
static uint32_t reps(const step_sig *s, uint32_t n, uint32_t t, uint32_t per)
{
    uint32_t k = 1;
    while (t + (k + 1) * per <= n) {
        for (uint32_t q = 0; q < per; q++)
            if (!sig_eq(&s[t + q], &s[t + k * per + q]))
                return k;
        k++;
    }
    return k;
}

gr_prog mnet_pipe_run(graph *g, const pipe_cfg *c, const mnet_stage *st, const uint8_t *out)
{
    uint32_t n = pipe_steps(c), maxper = 2 * c->N;
    step_sig *s = xmalloc(n * sizeof *s);
    gr_prog *p = xmalloc(n * sizeof *p), *body = xmalloc(n * sizeof *body);
    gr_prog copies = crossings(g, c, st);
    for (uint32_t t = 0; t < n; t++) {
        s[t] = sig_of(c, t, out);
        p[t] = GR_NONE;
        for (uint32_t u = 0; u < t && p[t] == GR_NONE; u++)
            if (sig_eq(&s[u], &s[t]))
                p[t] = p[u];
        if (p[t] == GR_NONE)
            p[t] = step_prog(g, c, st, &s[t], copies);
    }
    size_t no = 0;
    for (uint32_t t = 0; t < n;) {
        uint32_t best = 1, bk = 1;
        for (uint32_t per = 1; per <= maxper && t + 2 * per <= n; per++) {
            uint32_t k = reps(s, n, t, per);
            if (k >= 2 && k * per > bk * best) {
                best = per;
                bk = k;
            }
        }
        if (bk < 2) {
            body[no++] = p[t++];
            continue;
        }
        gr_prog once = best == 1 ? p[t] : gr_seq(g, p + t, best);
        body[no++] = gr_repeat(g, bk, once);
        t += bk * best;
    }
    gr_prog run = gr_seq(g, body, no);
    free(s);
    free(p);
    free(body);
    return run;
}

gr_prog mnet_host_calls(graph *g, uint32_t calls, uint32_t n, gr_prog unit)
{
    gr_prog body = n == 1 ? unit : gr_repeat(g, n, unit);
    gr_prog call = gr_seq(g, (gr_prog[]){body, gr_sync(g, ISA_ZONE_EXTERNAL_HOST)}, 2);
    return gr_repeat(g, calls, call);
}

size_t mnet_pieces(const mnet_b *b, gr_tensor t, mnet_piece **p)
{
    size_t m = gr_regions(b->g, t, NULL, 0);
    gr_where *w = xmalloc((m ? m : 1) * sizeof *w);
    gr_regions(b->g, t, w, m);
    *p = xmalloc((m ? m : 1) * sizeof **p);
    for (size_t i = 0; i < m; i++)
        (*p)[i] = (mnet_piece){w[i].ipu * b->T + w[i].tile, w[i].begin, w[i].end - w[i].begin};
    free(w);
    return m;
}

/* n words rounded up to whole 8-byte pairs (stash_ring moves pairs). */
static size_t whole_pairs(size_t n)
{
    return n + (n & 1);
}

uint64_t mnet_ring(mnet_b *b, const char *name, gr_tensor t, gr_tensor to, gr_type ty,
                   const mnet_piece *p, size_t np, uint32_t D, gr_cs cs_s, gr_cs cs_r)
{
    enum { NW = 6 }; /* workers a tile */
    char nm[64];
    size_t total = 0;
    for (size_t i = 0; i < np; i++) {
        total += whole_pairs(p[i].n);
        if (p[i].n & 1) { /* moved whole with its partner word */
            gr_pairs(b->g, t);
            gr_pairs(b->g, to);
        }
    }
    snprintf(nm, sizeof nm, "%s.stash", name);
    gr_tensor r = gr_tensor_new(b->g, nm, ty, 1, (uint32_t[]){(uint32_t)(total * D)});
    snprintf(nm, sizeof nm, "%s.stash.cursors", name);
    gr_tensor cur = gr_tensor_new(b->g, nm, GR_I32, 1, (uint32_t[]){(uint32_t)(12 * np)});
    uint32_t zero[12] = {0};
    for (size_t i = 0, off = 0, n; i < np; off += n, i++) {
        uint32_t ipu = p[i].gt / b->T, tile = p[i].gt % b->T;
        n = whole_pairs(p[i].n); /* words a slot */
        gr_map_region(b->g, r, ipu, tile, D * off, D * (off + n));
        gr_map_region(b->g, cur, ipu, tile, 12 * i, 12 * i + 12);
        mnet_init_words(b, cur, 12 * i, zero, 12, 1);
        for (unsigned w = 0; w < NW; w++) {
            size_t a = op_split(n, w, NW, 2), z = op_split(n, w + 1, NW, 2);
            if (z == a)
                continue;
            for (int dir = 0; dir < 2; dir++) {
                gr_tensor work = dir ? to : t;
                gr_field f[7] = {
                    gr_region(work, p[i].at + a, p[i].at + (z < p[i].n ? z : p[i].n)),
                    gr_region(r, D * off + a, D * off + (D - 1) * n + z),
                    gr_u32((uint32_t)(4 * (z - a))),
                    gr_u32((uint32_t)(4 * n)),
                    gr_u32(D),
                    gr_region(cur, 12 * i + 6 * (size_t)dir + w, 12 * i + 6 * (size_t)dir + w + 1),
                    gr_u32((uint32_t)dir)};
                gr_vertex(b->g, dir ? cs_r : cs_s, "stash_ring", 0, ipu, tile, f, 7);
            }
        }
    }
    gr_keep(b->g, r);
    gr_keep(b->g, cur);
    return 4 * (uint64_t)total * D;
}

/* Walk IPU i's logged steps as pipeline steps: `each` (if any) gets every step that is not a
 * round of a Copy between IPUs, with its pipeline step and cycles; L[t] (if any) sums them
 * per pipeline step (the IPU's own work from the end of the Copy ending step t - 1 to its
 * arrival at the Copy ending step t) and E[t] (if any) is the release of the last round of
 * the Copy ending step t: the steps are counted by the Copies. Returns how many the log
 * holds, at most cap. */
static uint32_t walk(const eng *g, const gr_exe *x, uint32_t i, uint32_t cap, uint64_t *L,
                     uint64_t *E, mnet_step_fn *each, void *ctx)
{
    size_t n;
    const uint64_t *rel = eng_sync_log(g, i, &n);
    gr_step *st = xmalloc((n ? n : 1) * sizeof *st);
    size_t ns = gr_exe_steps(x, i, st, n);
    uint32_t t = 0;
    uint64_t prev = 0, sum = 0;
    for (size_t k = 0; k < ns && t < cap; k++) {
        if (!st[k].round) {
            sum += rel[k] - prev;
            if (each)
                each(ctx, t, &st[k], rel[k] - prev);
        } else if (st[k].round == st[k].rounds) {
            if (L)
                L[t] = sum;
            if (E)
                E[t] = rel[k];
            t++;
            sum = 0;
        }
        prev = rel[k];
    }
    free(st);
    return t;
}

uint32_t mnet_pipe_walk(const eng *g, const gr_exe *x, uint32_t ipu, uint32_t cap,
                        mnet_step_fn *each, void *ctx)
{
    return walk(g, x, ipu, cap, NULL, NULL, each, ctx);
}

/* The passes IPU i runs in step t, a bit each. */
static unsigned passes_at(const pipe_cfg *c, uint32_t t, uint32_t i)
{
    pipe_run r[2];
    unsigned n = pipe_at(c, t, i, r), m = 0;
    for (unsigned q = 0; q < n; q++)
        m |= 1u << r[q].pass;
    return m;
}

/* Each IPU's passes alone, and the main step (m->N, m->steps set; L, E from walk). */
static void passes_alone(const pipe_cfg *c, uint64_t (*L)[MSPEC_MAX_BLOCKS], const uint64_t *E,
                         mnet_pipe_steps *m)
{
    for (uint32_t t = 1; t + 1 < m->steps; t++) {
        int all = 1;
        for (uint32_t i = 0; i < m->N; i++) {
            unsigned p = passes_at(c, t, i);
            unsigned want = i + 1 < m->N && c->train ? 1u << PIPE_FWD | 1u << PIPE_BWD
                            : c->train               ? 1u << PIPE_FUSED
                                                     : 1u << PIPE_FWD;
            all &= p == want;
            uint64_t *slot = p == 1u << PIPE_FWD     ? &m->fwd[i]
                             : p == 1u << PIPE_BWD   ? &m->bwd[i]
                             : p == 1u << PIPE_FUSED ? &m->fused
                                                     : NULL;
            if (slot && !*slot)
                *slot = L[t][i];
        }
        if (all && !m->main_step) {
            m->main_step = t;
            m->main = E[t] - E[t - 1];
            for (uint32_t i = 0; i < m->N; i++)
                m->work[i] = L[t][i];
        }
    }
}

int mnet_pipe_measure(const eng *g, const gr_exe *x, const mnet_pipe_info *p, int train,
                      mnet_pipe_steps *m)
{
    pipe_cfg c = {p->schedule, p->stages, p->micro, train};
    memset(m, 0, sizeof *m);
    m->N = c.N;
    m->steps = pipe_steps(&c);
    uint64_t(*L)[MSPEC_MAX_BLOCKS] = xcalloc(m->steps + 1, sizeof *L);
    uint64_t *E = xcalloc(m->steps + 1, sizeof *E), *Li = xcalloc(m->steps + 1, sizeof *Li);
    uint64_t *Ei = xcalloc(m->steps + 1, sizeof *Ei);
    int rc = ERR_OK;
    for (uint32_t i = 0; i < c.N && rc == ERR_OK; i++) {
        if (walk(g, x, i, m->steps, Li, i ? Ei : E, NULL, NULL) < m->steps)
            rc = ERR_INPUT; /* the log ends before the run does */
        for (uint32_t t = 0; t < m->steps; t++)
            L[t][i] = Li[t];
    }
    if (rc == ERR_OK) {
        passes_alone(&c, L, E, m);
        uint64_t most = 0;
        for (uint32_t i = 0; m->main_step && i < c.N; i++)
            most = m->work[i] > most ? m->work[i] : most;
        m->copy = m->main_step ? m->main - most : 0;
    }
    free(L);
    free(E);
    free(Li);
    free(Ei);
    return rc;
}
