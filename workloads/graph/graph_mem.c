/* graph_mem: where each tensor region lies in its tile's data, with tensors that are never
 * live at the same time sharing memory.
 *
 * Liveness is by program step: walking the control program in order, each Execute, Copy and
 * stream copy is a step, and a tensor is used at the steps that touch it (a field of a vertex
 * of the executed compute set, either side of any piece of a copy, the streamed tensor). A
 * tensor is live from its first use to its last; if it is used inside a Repeat it is live
 * over the whole loop (a value may be carried from one pass to the next), unless its first
 * use inside the loop is a remote read, which writes every element of the tensor: then no
 * value is carried into a pass (offloaded optimiser state lives from its read to its write
 * back). Stream copies in are not counted as such a definition (they could be; it would move
 * the layouts of existing graphs), nor are vertices' or copies' writes (the graph does not
 * know a field's direction). Tensors kept with
 * gr_keep (the host writes or reads them between runs: weights, optimiser state) and tensors
 * no program uses are always live. Each tile then places its regions first-fit, largest first: a
 * region goes at the lowest 16-byte-aligned offset free of every region whose live range
 * overlaps its own. Left out: liveness finer than a step (a vertex's inputs dying while its
 * outputs are born), and tensors in different tiles' pools being placed alike on purpose. */
#include "workloads/graph/graph_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

typedef struct range {
    uint32_t lo, hi; /* steps [lo, hi]; lo > hi: never used */
} range;

/* One step using a tensor; def: the step writes all of it before anything reads it. */
typedef struct use_at {
    uint32_t step;
    int def;
} use_at;

typedef struct uses {
    use_at *u; /* in step order, one a step */
    size_t n, cap;
} uses;

typedef struct walk {
    const graph *g;
    range *r;     /* per tensor */
    uses *u;      /* per tensor */
    range *loops; /* each Repeat's steps */
    size_t nloops, cloops;
    uint32_t step;
} walk;

static void use(walk *w, gr_tensor t, int def)
{
    uses *u = &w->u[t];
    if (!u->n || u->u[u->n - 1].step != w->step) {
        u->u = xgrow(u->u, &u->cap, u->n + 1, sizeof *u->u);
        u->u[u->n++] = (use_at){w->step, def};
    }
    range *r = &w->r[t];
    if (r->lo > r->hi)
        *r = (range){w->step, w->step};
    else
        r->hi = w->step;
}

static void walk_prog(walk *w, gr_prog id)
{
    const gr_prog_s *p = &w->g->p[id];
    switch (p->kind) {
    case GR_P_EXEC:
        for (size_t v = 0; v < w->g->nv; v++)
            if (w->g->v[v].cs == p->a)
                for (size_t f = 0; f < w->g->v[v].nf; f++)
                    if (w->g->v[v].f[f].kind == GR_F_REGION)
                        use(w, w->g->v[v].f[f].t, 0);
        w->step++;
        return;
    case GR_P_COPY:
        for (size_t k = 0; k < p->nxf; k++) {
            use(w, p->xf[k].src, 0);
            use(w, p->xf[k].dst, 0);
        }
        w->step++;
        return;
    case GR_P_STREAM_IN:
    case GR_P_STREAM_OUT:
    case GR_P_REMOTE_READ:
    case GR_P_REMOTE_WRITE:
    case GR_P_ALL_REDUCE:
        use(w, p->a, p->kind == GR_P_REMOTE_READ);
        w->step++;
        return;
    case GR_P_SYNC: return;
    case GR_P_REPEAT: {
        uint32_t from = w->step;
        if (p->a)
            walk_prog(w, p->b);
        if (w->step > from) {
            w->loops = xgrow(w->loops, &w->cloops, w->nloops + 1, sizeof *w->loops);
            w->loops[w->nloops++] = (range){from, w->step - 1};
        }
        return;
    }
    case GR_P_SEQ:
        for (size_t k = 0; k < p->nkids; k++)
            walk_prog(w, p->kids[k]);
        return;
    }
}

/* Whether t's first use within the loop's steps L defines it. */
static int defined_first(const uses *u, range L)
{
    for (size_t k = 0; k < u->n; k++)
        if (u->u[k].step >= L.lo)
            return u->u[k].step <= L.hi && u->u[k].def;
    return 0;
}

/* Each tensor's live steps; always-live ones get [0, UINT32_MAX]. */
static range *live_ranges(const graph *g, gr_prog main)
{
    walk w = {.g = g};
    w.r = xmalloc((g->nt ? g->nt : 1) * sizeof *w.r);
    w.u = xcalloc(g->nt ? g->nt : 1, sizeof *w.u);
    for (size_t i = 0; i < g->nt; i++)
        w.r[i] = (range){1, 0};
    walk_prog(&w, main);
    for (int changed = 1; changed;) { /* a use inside a loop: live over the loop */
        changed = 0;
        for (size_t i = 0; i < g->nt; i++)
            for (size_t k = 0; k < w.nloops; k++) {
                range *r = &w.r[i], L = w.loops[k];
                if (r->lo <= r->hi && r->lo <= L.hi && L.lo <= r->hi &&
                    (L.lo < r->lo || L.hi > r->hi) && !defined_first(&w.u[i], L)) {
                    r->lo = L.lo < r->lo ? L.lo : r->lo;
                    r->hi = L.hi > r->hi ? L.hi : r->hi;
                    changed = 1;
                }
            }
    }
    for (size_t i = 0; i < g->nt; i++)
        if (g->t[i].keep || w.r[i].lo > w.r[i].hi)
            w.r[i] = (range){0, UINT32_MAX};
    for (size_t i = 0; i < g->nt; i++)
        free(w.u[i].u);
    free(w.u);
    free(w.loops);
    return w.r;
}

/* One region to place on a tile. */
typedef struct item {
    uint32_t t, k, bytes, off;
    range r;
} item;

static int by_size(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->t != y->t ? (x->t < y->t ? -1 : 1) : (x->k > y->k) - (x->k < y->k);
}

/* The lowest aligned offset for it[n] clear of the placed it[0..n) that are live with it. */
static uint32_t first_fit(const item *it, size_t n)
{
    uint32_t off = 0;
    for (int moved = 1; moved;) {
        moved = 0;
        for (size_t q = 0; q < n; q++) {
            const item *o = &it[q];
            int live = o->r.lo <= it[n].r.hi && it[n].r.lo <= o->r.hi;
            if (live && off < o->off + o->bytes && o->off < off + it[n].bytes) {
                off = (o->off + o->bytes + 15u) & ~15u;
                moved = 1;
            }
        }
    }
    return off;
}

void gr_plan_memory(const graph *g, gr_prog main, uint32_t ntiles, gr_placement *pl)
{
    range *live = live_ranges(g, main);
    size_t total = (size_t)g->nipus * ntiles;
    pl->off = xcalloc(g->nt ? g->nt : 1, sizeof *pl->off);
    pl->pool = xcalloc(total, sizeof *pl->pool);
    pl->always = xcalloc(total, sizeof *pl->always);
    pl->other = xcalloc(total, sizeof *pl->other);
    item **per = xcalloc(total, sizeof *per);
    size_t *n = xcalloc(total, sizeof *n), *cap = xcalloc(total, sizeof *cap);
    for (size_t i = 0; i < g->nt; i++) {
        const gr_tensor_s *t = &g->t[i];
        pl->off[i] = xcalloc(t->nr ? t->nr : 1, sizeof **pl->off);
        for (size_t k = 0; k < t->nr; k++) {
            size_t x = (size_t)t->r[k].ipu * ntiles + t->r[k].tile;
            uint32_t round = t->pairs ? 7u : 3u, /* whole words, or pairs */
                bytes = (uint32_t)((t->r[k].end - t->r[k].begin) * gr_type_size(t->type) + round) &
                        ~round;
            per[x] = xgrow(per[x], &cap[x], n[x] + 1, sizeof *per[x]);
            per[x][n[x]++] = (item){(uint32_t)i, (uint32_t)k, bytes, 0, live[i]};
            if (live[i].lo == 0 && live[i].hi == UINT32_MAX)
                pl->always[x] += bytes;
            else
                pl->other[x] += bytes;
        }
    }
    for (size_t x = 0; x < total; x++) {
        if (n[x])
            qsort(per[x], n[x], sizeof *per[x], by_size);
        for (size_t q = 0; q < n[x]; q++) {
            item *it = &per[x][q];
            it->off = first_fit(per[x], q);
            pl->off[it->t][it->k] = it->off;
            if (it->off + it->bytes > pl->pool[x])
                pl->pool[x] = it->off + it->bytes;
        }
        free(per[x]);
    }
    free(per);
    free(n);
    free(cap);
    free(live);
}

void gr_placement_free(gr_placement *pl, size_t ntensors)
{
    for (size_t i = 0; pl->off && i < ntensors; i++)
        free(pl->off[i]);
    free(pl->off);
    free(pl->pool);
    free(pl->always);
    free(pl->other);
    memset(pl, 0, sizeof *pl);
}
