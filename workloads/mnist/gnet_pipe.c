/* gnet_pipe: a network built from its layer table, pipelined over the IPUs of its blocks
 * (docs/pipelining.md; gnet.h). Each IPU holding layers is one stage: its layers' forward,
 * planned over its tiles (gnet.c), and their backward (gnet_train.c), cut out of the whole
 * network's programs at the layers' marks. As the tutorial's pipeline (mnet_graph.c), a stage
 * but the last stashes its input each forward pass (stash_ring, PopART's Stash) and, before
 * its backward, restores the input of the micro-batch whose backward it is and runs its
 * forward again (recomputation, PopTorch's default); the last stage's fused pass runs the
 * forward, the loss, the outfeed and the backward of one micro-batch. Every crossing of the
 * pipeline is one Copy after the step's passes (mnet_pipe_run): the activation up from a copy
 * the forward leaves at its end (the recompute overwrites the activation itself before the
 * step's Copy reads it), the labels up with it (a middle stage copies what it received into
 * what it sends on, as the copy that sends them may not read what it delivers), the gradient
 * down as the backward left it. Left out: stashing every activation instead of recomputing
 * (--recompute off), the outfeed modes other than all and final. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/mnist/gnet_int.h"
#include "workloads/mnist/mnet_int.h"

/* Programs [a, z) of q in one sequence (GR_NONE for none). */
static gr_prog part(graph *g, const gnet_progs *q, size_t a, size_t z)
{
    return z > a ? gr_seq(g, q->p + a, z - a) : GR_NONE;
}

/* One stage: its layers [l0, l1] on IPU s; the labels it receives (lin) and sends on (labs,
 * at element lab_at). */
typedef struct stg {
    int l0, l1;
    uint32_t s;
    gr_tensor lin, labs;
    size_t lab_at;
} stg;

/* The stage's input as parts on tiles: the images a sample a tile (the first stage), or the
 * regions of the tensor the crossing into it lands in. */
static size_t input_pieces(const gnet_pipe_in *in, const stg *sg, gr_tensor *t, mnet_piece **p)
{
    mnet_b *mb = in->mb;
    if (sg->s == 0) {
        *t = mb->xin;
        *p = xmalloc(mb->B * sizeof **p);
        for (uint32_t k = 0; k < mb->B; k++)
            (*p)[k] = (mnet_piece){in->b->net->ipu[0] * mb->T + k, (size_t)k * mb->px, mb->px};
        return mb->B;
    }
    *t = in->b->up[sg->l0].to.t;
    return mnet_pieces(mb, *t, p);
}

/* The stage's stash of D slots of its input: the stash's compute set (the forward's first
 * step) into *cs_s, the restore's into *cs_r. */
static void stash(const gnet_pipe_in *in, const stg *sg, uint32_t D, gr_cs *cs_s, gr_cs *cs_r)
{
    mnet_b *mb = in->mb;
    graph *g = in->b->g;
    gr_tensor t;
    mnet_piece *p;
    size_t np = input_pieces(in, sg, &t, &p);
    const char *name = in->b->net->n->s->layer[sg->l0].name;
    char nm[80];
    snprintf(nm, sizeof nm, "%s.stash", name);
    *cs_s = gr_cs_new(g, nm);
    snprintf(nm, sizeof nm, "%s.restore", name);
    *cs_r = gr_cs_new(g, nm);
    snprintf(nm, sizeof nm, "%s.x", name);
    mb->pipe.stash_bytes[sg->s] += mnet_ring(mb, nm, t, t, GR_F32, p, np, D, *cs_s, *cs_r);
    free(p);
}

/* The stage's forward (stash first, then its layers and its crossing's send copy; the last
 * stage's with the loss) and its backward (restore and recompute, then its layers' backward). */
static void passes(const gnet_pipe_in *in, const stg *sg, uint32_t D, int last, gnet_progs *f,
                   gnet_progs *r)
{
    gnet_bld *b = in->b;
    mnet_b *mb = in->mb;
    graph *g = b->g;
    if (sg->s == 0)
        gnet_add(f, gr_stream_in(g, mb->xin));
    if (mb->train && sg->labs != GR_NONE && sg->lin != GR_NONE)
        gnet_add(f, gr_copy(g, sg->lin, sg->labs));
    gr_prog layers = part(g, &b->run, b->run_at[sg->l0], b->run_end[sg->l1]);
    if (D) {
        gr_cs cs_s, cs_r;
        stash(in, sg, D, &cs_s, &cs_r);
        gnet_add(f, gr_execute(g, cs_s));
        gnet_add(r, gr_execute(g, cs_r));
        gnet_add(r, layers);
    }
    gnet_add(f, layers);
    if (!last) /* the crossing's send copy, made after the layer's programs */
        gnet_add(f, part(g, &b->run, b->run_end[sg->l1], b->run_at[sg->l1 + 1]));
    if (last)
        gnet_add(f, in->loss);
    if (last && !mb->train)
        gnet_add(f, gr_stream_out(g, mb->res));
    if (mb->train)
        gnet_add(
            r, part(g, in->bwd, in->bwd_at[sg->l1], sg->l0 ? in->bwd_at[sg->l0 - 1] : in->bwd->n));
}

/* The crossings from stage sg (not the last) to the next: the activation and (training) the
 * labels up, the gradient down. */
static void crossings(const gnet_pipe_in *in, const stg *sg, const stg *next, mnet_stage *st)
{
    const gnet_xing *u = &in->b->up[sg->l1 + 1], *d = &in->down[sg->l1];
    int train = in->mb->train;
    st->nup = u->n + (train ? 1 : 0);
    st->up = xmalloc(st->nup * sizeof *st->up);
    memcpy(st->up, u->x, u->n * sizeof *st->up);
    if (train)
        st->up[u->n] = (gr_xfer){sg->labs, sg->lab_at, next->lin, 0, in->mb->B};
    st->ndown = train ? d->n : 0;
    st->down = xmalloc((st->ndown ? st->ndown : 1) * sizeof *st->down);
    if (st->ndown)
        memcpy(st->down, d->x, st->ndown * sizeof *st->down);
}

/* Stage sg's passes and crossings into st. */
static void stage(const gnet_pipe_in *in, const pipe_cfg *pc, const stg *sg, const stg *next,
                  mnet_stage *st)
{
    mnet_b *mb = in->mb;
    graph *g = in->b->g;
    int last = next == NULL;
    mb->pipe.in_flight[sg->s] = pipe_in_flight(pc, sg->s);
    uint32_t D = mb->train && mb->pipe.in_flight[sg->s] > 1 ? mb->pipe.in_flight[sg->s] : 0;
    mb->pipe.slots[sg->s] = D;
    gnet_progs f = {0}, r = {0};
    passes(in, sg, D, last, &f, &r);
    st->fwd = gnet_seq(g, &f);
    st->bwd = mb->train ? gnet_seq(g, &r) : GR_NONE;
    free(r.p);
    if (last && mb->train) { /* with and without the outfeed copy; all: always with */
        st->fwd_out = gr_seq(g, (gr_prog[]){st->fwd, gr_stream_out(g, mb->res)}, 2);
        if (in->c->out_mode == STRM_ALL)
            st->fwd = st->fwd_out;
        st->fused = gr_seq(g, (gr_prog[]){st->fwd, st->bwd}, 2);
        st->fused_out = gr_seq(g, (gr_prog[]){st->fwd_out, st->bwd}, 2);
    }
    if (!last)
        crossings(in, sg, next, st);
}

/* Each IPU's layers, and the labels each stage receives and sends on: the first sends the
 * infeed's (after the images), a middle one a copy of what it received, the last reads them
 * where they land (in->lin, on its loss tile). Returns the stages. */
static uint32_t stages(const gnet_pipe_in *in, stg *sg)
{
    gnet_bld *b = in->b;
    mnet_b *mb = in->mb;
    int L = b->net->n->s->nlayers;
    uint32_t N = b->net->ipu[L - 1] + 1;
    for (uint32_t s = 0; s < N; s++)
        sg[s] = (stg){L, -1, s, GR_NONE, GR_NONE, 0};
    for (int l = 0; l < L; l++) {
        stg *x = &sg[b->net->ipu[l]];
        x->l0 = l < x->l0 ? l : x->l0;
        x->l1 = l;
    }
    for (uint32_t s = 0; mb->train && s < N; s++) {
        char nm[32];
        if (s == 0) {
            sg[s].labs = mb->xin;
            sg[s].lab_at = (size_t)mb->B * mb->px;
            continue;
        }
        if (s == N - 1) {
            sg[s].lin = in->lin;
            continue;
        }
        for (int k = 0; k < 2; k++) {
            snprintf(nm, sizeof nm, k ? "labels.%u" : "labels.in.%u", s);
            gr_tensor t = gr_tensor_new(b->g, nm, GR_F32, 1, (uint32_t[]){mb->B});
            gr_map_region(b->g, t, s, in->lt, 0, mb->B);
            *(k ? &sg[s].labs : &sg[s].lin) = t;
        }
    }
    return N;
}

/* Training: a call's updates, each one pipeline run of G micro-batches and the update, the
 * outfeed in the last stage's passes (all) or once a call (final); the test pass: runs of
 * test_iters micro-batches, the last one shorter (N at least). */
static void schedule(const gnet_pipe_in *in, pipe_cfg *pc, const mnet_stage *st, gnet_progs *top)
{
    mnet_b *mb = in->mb;
    graph *g = in->b->g;
    uint32_t N = pc->N;
    if (mb->train) {
        gr_prog one = gr_seq(g, (gr_prog[]){mnet_pipe_run(g, pc, st, NULL), in->upd}, 2);
        if (in->c->out_mode != STRM_FINAL) {
            gnet_add(top, mnet_host_calls(g, in->updates / in->per_call, in->per_call, one));
            return;
        }
        gr_prog call =
            gr_seq(g, (gr_prog[]){gr_repeat(g, in->per_call, one), gr_stream_out(g, mb->res)}, 2);
        gnet_add(top, mnet_host_calls(g, in->updates / in->per_call, 1, call));
        return;
    }
    uint32_t K = in->c->test_iters, full = in->updates / K, rem = in->updates % K;
    if (full)
        gnet_add(top, gr_repeat(g, full, mnet_pipe_run(g, pc, st, NULL)));
    if (rem) {
        pc->G = rem < N ? N : rem;
        gnet_add(top, mnet_pipe_run(g, pc, st, NULL));
    }
}

void gnet_pipe_main(const gnet_pipe_in *in, gnet_progs *top)
{
    mnet_b *mb = in->mb;
    stg sg[GNET_IPUS];
    uint32_t N = stages(in, sg);
    pipe_cfg pc = {in->c->schedule, N, mb->train ? mb->G : in->c->test_iters, mb->train};
    mb->pipe.stages = N;
    mb->pipe.micro = pc.G;
    mb->pipe.schedule = in->c->schedule;
    mnet_stage st[GNET_IPUS];
    memset(st, 0, sizeof st);
    for (uint32_t s = 0; s < N; s++)
        stage(in, &pc, &sg[s], s + 1 < N ? &sg[s + 1] : NULL, &st[s]);
    schedule(in, &pc, st, top);
    for (uint32_t s = 0; s < N; s++) {
        free(st[s].up);
        free(st[s].down);
    }
}
