/* graph_lower: a graph to one program image per tile.
 *
 * Each tile that holds anything (a tensor region, a vertex, an exchange) gets an image of its
 * own: supervisor code that walks the control program — the same control flow on every tile,
 * so their syncs match — its exchange subroutines, the codelets its vertices use, then its
 * tensor regions and vertex states as data. Each IPU has its own control program, as Poplar
 * compiles one per IPU: a step that has nothing on an IPU is left out of that IPU's program
 * (its tiles do not sync for it), so IPUs with different work run side by side until a step
 * that spans them (a copy between IPUs). Lowering, per program:
 *   Execute(cs)  on an IPU with vertices of cs: the tile's worker vertices in waves of six
 *                (`run` each with r1 = its state, then `join`), its supervisor vertices by
 *                `call`, then `sync internal`;
 *   Copy         the transfers of its pieces between the tensors' regions (graph_copy.c):
 *                on-chip ones planned together per IPU by the exchange compiler, each sending
 *                tile `call`ing its own send code, then one `sync internal` (on the IPUs that
 *                have on-chip transfers); between IPUs, rounds of `gsend` each ending in `sync
 *                external` on every IPU;
 *   Sync(z)      `sync z` on every IPU;
 *   StreamIn/Out on an IPU holding regions of the tensor: `hin`/`hout` of the tile's regions,
 *                then `sync internal_host`;
 *   Remote r/w   `rbin`/`rbout` likewise, at the region's place in the buffer;
 *   Repeat(n, p) a counted loop in r12, r13 or r14, not unrolled; nested deeper, its count
 *                in a word of tile memory;
 *   Seq          in order.
 * A sequence or copy the control program names in two places or more (a pipeline's passes
 * and its Copy, in every step that runs them) is written once a tile as a subroutine and
 * `call`ed from each, as Poplar's Call program: the tile's code grows with the distinct
 * programs, not with the steps. The subroutine keeps
 * lr in a word of tile memory while it runs (the codelets and exchange code it calls overwrite
 * lr), and runs its loops in the registers past those of its deepest caller.
 * Tensor regions lie in the tile's data pool POOL at offsets from graph_mem.c (tensors never
 * live together share memory). Labels are local to a tile (POOL, vertex states V<j>), so tiles
 * with the same work get the same text, assembled and decoded once. Addresses come from the
 * assembler: a first assembly with the exchange code's addresses left 0 fixes the layout (an
 * `li` is one instruction whatever its value), the second has the real ones.
 * Left out: programs chosen at run time. */
#include "workloads/graph/graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/text.h"
#include "hw/pool.h"
#include "isa/asm.h"
#include "workloads/codelets.h"

enum { LOOP_REGS = 3 }; /* r12, r13, r14 */

/* What one tile holds while its text is built. */
typedef struct tbuild {
    txt code, sub, data;
    txt xdata; /* data rebuilt with the code: the replica's (the all-reduce's buffers and
                * states), the counters of loops nested past the registers */
    int used;
    const char **codelets; /* distinct codelet names */
    size_t ncl, ccl;
    uint32_t *vtx; /* its vertices (graph indices), in order */
    size_t nv, cv;
    uint32_t state, bytes; /* vertex state and tensor bytes */
    unsigned inst;         /* labels emitted so far (repeat and copy instances) */
    gr_subs subs;          /* the exchange subroutines its text holds */
    gr_prog *called;       /* the called programs its text holds (F<id>) */
    size_t ncalled, ccalled;
} tbuild;

struct gr_exe {
    const graph *g;
    uint32_t nipus, ntiles; /* of one replica */
    uint32_t replicas;
    isa_prog *progs;
    size_t nprogs;
    int32_t *which;  /* per tile of every replica: its image in progs, or -1 (idle) */
    uint32_t **addr; /* per tensor, per region: its address on its tile */
    gr_tile_mem *mem;
    gr_summary sum;
    gr_prog main;
    uint32_t *syncs;  /* per program, IPU and tile class ((p x nipus + ipu) x 2 + class): the
                       * syncs its tiles have for it, loops counted once (0: they leave it out) */
    uint8_t *part;    /* per leaf program and IPU: the tile classes it involves (PART_*) */
    uint32_t *rounds; /* per program: a copy's rounds between IPUs */
};

/* A codelet's text as each tile's pastes it: its source without comments (asm_strip, once a
 * compile: the same program in under half the bytes that every tile's text carries); NULL
 * when the codelet does not exist. */
typedef struct clsrc {
    const char *name;
    char *text;
} clsrc;

typedef struct lower {
    graph *g;
    uint32_t ntiles, total;
    tbuild *tb;
    gr_placement pl;  /* per region: its offset in the tile's pool POOL */
    gr_copy_plan *cp; /* per program (only copies filled) */
    int real;         /* 1: exchange code with real addresses (second pass) */
    uint32_t rep;     /* the replica whose text is being emitted */
    uint32_t *refs;   /* per program: the places in reachable sequences and loops naming it */
    uint32_t *deep;   /* per program: the deepest loop nesting it runs at */
    clsrc *src;       /* the codelets the tiles use, as their texts paste them */
    size_t nsrc, csrc;
    gr_exe *x;
    err *e;
} lower;

static tbuild *tile_of(lower *L, uint32_t ipu, uint32_t tile)
{
    return &L->tb[(size_t)ipu * L->ntiles + tile];
}

static void use_codelet(tbuild *b, const char *name)
{
    for (size_t k = 0; k < b->ncl; k++)
        if (strcmp(b->codelets[k], name) == 0)
            return;
    b->codelets = xgrow(b->codelets, &b->ccl, b->ncl + 1, sizeof *b->codelets);
    b->codelets[b->ncl++] = name;
}

/* ---- data: tensor regions and vertex states ---- */

static void place_tensors(lower *L, gr_prog main)
{
    gr_plan_memory(L->g, main, L->ntiles, &L->pl);
    for (uint32_t x = 0; x < L->total; x++)
        if (L->pl.pool[x]) {
            tbuild *b = &L->tb[x];
            txt_printf(&b->data, "        .align  16\nPOOL:   .space  %u\n", L->pl.pool[x]);
            b->bytes = L->pl.pool[x];
            b->used = 1;
        }
}

/* The address of elements [begin, end) of tensor `id` on (ipu, tile), as a label expression
 * (POOL+offset), in the region gr_vertex found them in (a region that ends where the next
 * begins is not the one). */
static void region_ref(lower *L, txt *out, gr_tensor id, uint32_t ipu, uint32_t tile, size_t begin,
                       size_t end)
{
    const gr_tensor_s *t = &L->g->t[id];
    const gr_region_s *r = gr_region_of(t, ipu, tile, begin, end);
    if (r)
        txt_printf(out, "POOL+%zu",
                   L->pl.off[id][r - t->r] + (begin - r->begin) * gr_type_size(t->type));
}

static void place_vertices(lower *L)
{
    graph *g = L->g;
    for (size_t i = 0; i < g->nv; i++) {
        const gr_vertex_s *v = &g->v[i];
        tbuild *b = tile_of(L, v->ipu, v->tile);
        txt_printf(&b->data, "        .align  8\nV%zu:", b->nv);
        for (size_t k = 0; k < v->nf; k++) {
            const gr_field *f = &v->f[k];
            txt_printf(&b->data, k ? ", " : "   .word   ");
            if (f->kind == GR_F_REGION)
                region_ref(L, &b->data, f->t, v->ipu, v->tile, f->begin, f->end);
            else if (f->kind == GR_F_U32)
                txt_printf(&b->data, "%u", f->u);
            else {
                uint32_t u;
                memcpy(&u, &f->f, 4);
                txt_printf(&b->data, "0x%08x", u);
            }
        }
        txt_printf(&b->data, "%s\n", v->nf ? "" : "   .word   0");
        b->state += 4 * (uint32_t)(v->nf ? v->nf : 1);
        b->vtx = xgrow(b->vtx, &b->cv, b->nv + 1, sizeof *b->vtx);
        b->vtx[b->nv++] = (uint32_t)i;
        use_codelet(b, v->codelet);
        b->used = 1;
    }
}

/* ---- copies (graph_copy.c): plan each once, mark the tiles they touch ---- */

/* Plan copy i (a pool job's item: each plan and error is its own; the graph is only read). */
typedef struct plan_job {
    lower *L;
    err *errs;
} plan_job;

static void plan_one(void *ctx, size_t i)
{
    plan_job *j = ctx;
    graph *g = j->L->g;
    err_clear(&j->errs[i]);
    if (g->p[i].kind == GR_P_COPY && gr_copy_plan_make(g, &g->p[i], &j->L->cp[i], &j->errs[i]))
        j->errs[i].status = ERR_INPUT;
}

/* Every copy planned on the threads of `threads` (NULL: this one); the error reported is the
 * first copy's in program order. */
static int plan_copies(lower *L, pool *threads)
{
    size_t np = L->g->np;
    plan_job j = {L, xcalloc(np ? np : 1, sizeof *j.errs)};
    if (threads)
        pool_run(threads, np, plan_one, &j);
    else
        for (size_t i = 0; i < np; i++)
            plan_one(&j, i);
    int rc = ERR_OK;
    for (size_t i = 0; i < np && rc == ERR_OK; i++) {
        if (j.errs[i].status != ERR_OK) {
            if (L->e)
                *L->e = j.errs[i];
            rc = ERR_INPUT;
        }
        for (size_t k = 0; rc == ERR_OK && L->g->p[i].kind == GR_P_COPY && k < L->cp[i].n; k++) {
            const gr_copy_xfer *x = &L->cp[i].x[k];
            tile_of(L, x->src_ipu, x->src_tile)->used = 1;
            tile_of(L, x->dst_ipu, x->dst_tile)->used = 1;
        }
    }
    free(j.errs);
    return rc;
}

/* ---- the control program ---- */

enum { PART_COMPUTE = 1, PART_IO = 2, PART_ALL = 3 }; /* an IPU's tile classes */

static uint8_t class_bit(const graph *g, uint32_t ipu, uint32_t tile)
{
    return gr_is_io(g, ipu, tile) ? PART_IO : PART_COMPUTE;
}

/* x->part: per leaf program and IPU, the tile classes it involves there apart from rounds
 * between IPUs (an Execute's vertices' tiles, a copy's on-chip transfers' ends, a stream's
 * regions' tiles; a Sync and an all-reduce: every tile). */
static void find_parts(lower *L)
{
    const graph *g = L->g;
    uint32_t n = g->nipus;
    uint8_t *cs_part = xcalloc(g->ncs * n + 1, 1), *pt = L->x->part = xcalloc(g->np * n + 1, 1);
    for (size_t i = 0; i < g->nv; i++)
        cs_part[(size_t)g->v[i].cs * n + g->v[i].ipu] |= class_bit(g, g->v[i].ipu, g->v[i].tile);
    for (size_t i = 0; i < g->np; i++) {
        const gr_prog_s *p = &g->p[i];
        uint8_t *q = pt + i * n;
        if (p->kind == GR_P_EXEC)
            memcpy(q, cs_part + (size_t)p->a * n, n);
        else if (p->kind == GR_P_SYNC || p->kind == GR_P_ALL_REDUCE)
            memset(q, PART_ALL, n);
        for (size_t k = 0; p->kind == GR_P_COPY && k < L->cp[i].n; k++) {
            const gr_copy_xfer *x = &L->cp[i].x[k];
            if (!x->global)
                q[x->src_ipu] |=
                    class_bit(g, x->src_ipu, x->src_tile) | class_bit(g, x->dst_ipu, x->dst_tile);
        }
        if (p->kind >= GR_P_STREAM_IN && p->kind <= GR_P_REMOTE_WRITE)
            for (size_t k = 0; k < g->t[p->a].nr; k++) {
                const gr_region_s *r = &g->t[p->a].r[k];
                q[r->ipu] |= class_bit(g, r->ipu, r->tile);
            }
    }
    free(cs_part);
}

/* x->syncs: per program, IPU and tile class (compute 0, I/O 1), the syncs the class's tiles
 * have for it there (a Repeat's body counted once): the compute tiles take part in what
 * involves them, the I/O tiles in everything on their IPU (they join its whole-IPU syncs),
 * their own stream copies alone. A program's parts are made before it
 * (gr_seq and gr_repeat take existing programs), so one pass in order sees every part
 * counted. */
static void count_syncs(lower *L)
{
    const graph *g = L->g;
    uint32_t n = g->nipus;
    find_parts(L);
    uint32_t *s = L->x->syncs = xcalloc(2 * g->np * n + 1, sizeof *L->x->syncs);
    L->x->rounds = xcalloc(g->np + 1, sizeof *L->x->rounds);
    for (size_t i = 0; i < g->np; i++)
        for (uint32_t ipu = 0; ipu < n; ipu++)
            for (int cl = 0; cl < 2; cl++) {
                const gr_prog_s *p = &g->p[i];
                uint32_t *c = &s[(i * n + ipu) * 2 + (size_t)cl];
                uint8_t pt = L->x->part[i * n + ipu];
                uint32_t in = cl ? pt != 0 : (pt & PART_COMPUTE) != 0; /* I/O tiles join all */
                switch (p->kind) {
                case GR_P_EXEC:
                case GR_P_SYNC:
                case GR_P_STREAM_IN:
                case GR_P_STREAM_OUT:
                case GR_P_REMOTE_READ:
                case GR_P_REMOTE_WRITE: *c = in; break;
                case GR_P_COPY:
                    *c = in + L->cp[i].rounds;
                    L->x->rounds[i] = L->cp[i].rounds;
                    break;
                case GR_P_ALL_REDUCE: *c = gr_all_reduce_syncs(g, p); break;
                case GR_P_REPEAT:
                    *c = p->a ? s[((size_t)p->b * n + ipu) * 2 + (size_t)cl] : 0;
                    break;
                case GR_P_SEQ:
                    for (size_t k = 0; k < p->nkids; k++)
                        *c += s[((size_t)p->kids[k] * n + ipu) * 2 + (size_t)cl];
                    break;
                }
            }
    for (size_t i = 0; g->replicas > 1 && i < g->np; i++) /* the all-reduce's adds */
        if (g->p[i].kind == GR_P_ALL_REDUCE)
            for (size_t k = 0; k < g->t[g->p[i].a].nr; k++) {
                const gr_region_s *r = &g->t[g->p[i].a].r[k];
                use_codelet(tile_of(L, r->ipu, r->tile), "reduce_add");
            }
}

/* The zone that ends a step of program id on the IPU: its sync group's when it involves the
 * I/O tiles alone (their stream copies, overlapping the other tiles' superstep), else the
 * whole IPU's. */
static const char *zone_of(const gr_exe *x, gr_prog id, uint32_t ipu, int host)
{
    int group = x->part[(size_t)id * x->g->nipus + ipu] == PART_IO;
    return group ? (host ? "group_host" : "group") : (host ? "internal_host" : "internal");
}

static int emit_prog(lower *L, tbuild *b, uint32_t ipu, uint32_t tile, gr_prog id, int depth);

static void emit_exec(lower *L, tbuild *b, gr_cs cs, const char *zone)
{
    const graph *g = L->g;
    unsigned wave = 0;
    for (size_t k = 0; k < b->nv; k++) {
        const gr_vertex_s *v = &g->v[b->vtx[k]];
        if (v->cs != cs)
            continue;
        if (v->super) { /* it loads the AMP's weights or starts workers: join ours first */
            txt_printf(&b->code, "%s        li      r1, V%zu\n        call    %s\n",
                       wave ? "        join\n" : "", k, v->codelet);
            wave = 0;
            continue;
        }
        txt_printf(&b->code, "        li      r1, V%zu\n        run     %s, r1\n", k, v->codelet);
        if (++wave == ISA_NWORKERS) {
            txt_printf(&b->code, "        join\n");
            wave = 0;
        }
    }
    txt_printf(&b->code, "%s        sync    %s\n", wave ? "        join\n" : "", zone);
}

static int emit_copy(lower *L, tbuild *b, uint32_t ipu, uint32_t tile, gr_prog id)
{
    uint8_t pt = L->x->part[(size_t)id * L->g->nipus + ipu];
    int in = gr_is_io(L->g, ipu, tile) ? pt != 0 : (pt & PART_COMPUTE) != 0;
    return gr_copy_emit(L->g, &L->cp[id], L->real ? L->x->addr : NULL, &b->subs, ipu, tile,
                        L->rep * L->g->nipus, in ? zone_of(L->x, id, ipu, 0) : NULL, &b->code,
                        &b->sub, &b->inst, L->e);
}

/* A loop nested deeper than the registers go: its count in a word of tile memory (C<at>),
 * read, tested, decremented and written back after each pass through r1 and r2 (free
 * between steps: the codelets the supervisor calls clobber r0..r11). */
static int emit_repeat_mem(lower *L, tbuild *b, uint32_t ipu, uint32_t tile, const gr_prog_s *p,
                           int depth)
{
    unsigned at = b->inst++;
    txt_printf(&b->xdata, "        .align  4\nC%u:     .word   0\n", at);
    txt_printf(&b->code,
               "        li      r1, %u\n        li      r2, C%u\n        st32    r1, [r2+0]\n"
               "R%u:\n",
               p->a - 1, at, at);
    int rc = emit_prog(L, b, ipu, tile, p->b, depth + 1);
    txt_printf(&b->code,
               "        li      r2, C%u\n        ld32    r1, [r2+0]\n        brz     r1, E%u\n"
               "        addi    r1, r1, -1\n        st32    r1, [r2+0]\n        br      R%u\n"
               "E%u:\n",
               at, at, at, at);
    return rc;
}

static int emit_repeat(lower *L, tbuild *b, uint32_t ipu, uint32_t tile, const gr_prog_s *p,
                       int depth)
{
    if (p->a == 0)
        return ERR_OK;
    if (depth >= LOOP_REGS)
        return emit_repeat_mem(L, b, ipu, tile, p, depth);
    unsigned at = b->inst++;
    txt_printf(&b->code, "        li      r%d, %u\nR%u:\n", 12 + depth, p->a - 1, at);
    int rc = emit_prog(L, b, ipu, tile, p->b, depth + 1);
    txt_printf(&b->code, "        brnzdec r%d, R%u\n", 12 + depth, at);
    return rc;
}

/* A host copy of each of the tile's regions of the tensor (hin, hout, rbin, rbout), then the
 * host sync. */
static void emit_host(lower *L, tbuild *b, uint32_t ipu, uint32_t tile, gr_prog id)
{
    const gr_prog_s *p = &L->g->p[id];
    static const char *const op[] = {[GR_P_STREAM_IN] = "hin",
                                     [GR_P_STREAM_OUT] = "hout",
                                     [GR_P_REMOTE_READ] = "rbin",
                                     [GR_P_REMOTE_WRITE] = "rbout"};
    const gr_tensor_s *t = &L->g->t[p->a];
    int remote = p->kind == GR_P_REMOTE_READ || p->kind == GR_P_REMOTE_WRITE;
    for (size_t k = 0; k < t->nr; k++) {
        const gr_region_s *r = &t->r[k];
        if (r->ipu != ipu || r->tile != tile)
            continue;
        size_t es = gr_type_size(t->type);
        txt_printf(&b->code, "        li      r1, POOL+%u\n        li      r2, %zu\n",
                   L->pl.off[p->a][k], (r->end - r->begin) * es);
        if (remote) {
            txt_printf(&b->code, "        li      r3, %u\n        li      r4, %llu\n",
                       L->rep * GR_REMOTE_BUFFERS + p->b, /* each replica its own buffers */
                       (unsigned long long)(p->off + r->begin * es));
            txt_printf(&b->code, "        %s    r1, r2, r3, r4\n", op[p->kind]);
        } else {
            txt_printf(&b->code, "        li      r3, %d\n        %s    r1, r2, r3\n",
                       p->kind == GR_P_STREAM_IN ? 0 : 1, op[p->kind]);
        }
    }
    txt_printf(&b->code, "        sync    %s\n", zone_of(L->x, id, ipu, 1));
}

static int emit_seq(lower *L, tbuild *b, uint32_t ipu, uint32_t tile, const gr_prog_s *p, int depth)
{
    for (size_t k = 0; k < p->nkids; k++)
        if (emit_prog(L, b, ipu, tile, p->kids[k], depth) != ERR_OK)
            return ERR_INPUT;
    return ERR_OK;
}

/* A call of sequence or copy id, its subroutine F<id> written into the tile's subroutines the
 * first time (a sequence's body at the deepest nesting any caller has, so that its loops'
 * registers are free). */
static int emit_call(lower *L, tbuild *b, uint32_t ipu, uint32_t tile, gr_prog id)
{
    int have = 0;
    for (size_t k = 0; k < b->ncalled && !have; k++)
        have = b->called[k] == id;
    if (!have) {
        b->called = xgrow(b->called, &b->ccalled, b->ncalled + 1, sizeof *b->called);
        b->called[b->ncalled++] = id;
        txt outer = b->code;
        b->code = (txt){0};
        int rc = L->g->p[id].kind == GR_P_COPY
                     ? emit_copy(L, b, ipu, tile, id)
                     : emit_seq(L, b, ipu, tile, &L->g->p[id], (int)L->deep[id]);
        txt body = b->code;
        b->code = outer;
        if (rc == ERR_OK) {
            txt_printf(&b->sub, "F%u:\n        li      r1, FL%u\n        st32    lr, [r1+0]\n", id,
                       id);
            txt_put(&b->sub, txt_str(&body));
            txt_printf(&b->sub,
                       "        li      r1, FL%u\n        ld32    lr, [r1+0]\n        ret\n", id);
            txt_printf(&b->xdata, "        .align  4\nFL%u:    .word   0\n", id);
        }
        txt_free(&body);
        if (rc != ERR_OK)
            return rc;
    }
    txt_printf(&b->code, "        call    F%u\n", id);
    return ERR_OK;
}

static int emit_prog(lower *L, tbuild *b, uint32_t ipu, uint32_t tile, gr_prog id, int depth)
{
    const gr_prog_s *p = &L->g->p[id];
    if (!L->x->syncs[((size_t)id * L->g->nipus + ipu) * 2 + (size_t)gr_is_io(L->g, ipu, tile)])
        return ERR_OK; /* nothing of it for this tile's class on this IPU */
    switch (p->kind) {
    case GR_P_STREAM_IN:
    case GR_P_STREAM_OUT:
    case GR_P_REMOTE_READ:
    case GR_P_REMOTE_WRITE: emit_host(L, b, ipu, tile, id); return ERR_OK;
    case GR_P_EXEC: emit_exec(L, b, p->a, zone_of(L->x, id, ipu, 0)); return ERR_OK;
    case GR_P_COPY:
        return L->refs[id] > 1 ? emit_call(L, b, ipu, tile, id) : emit_copy(L, b, ipu, tile, id);
    case GR_P_SYNC:
        txt_printf(&b->code, "        sync    %s\n", isa_zone_name(p->a));
        return ERR_OK;
    case GR_P_ALL_REDUCE:
        gr_all_reduce_emit(L->g, p, L->pl.off[p->a], ipu, tile, L->rep, &b->code, &b->xdata,
                           &b->inst);
        return ERR_OK;
    case GR_P_REPEAT: return emit_repeat(L, b, ipu, tile, p, depth);
    case GR_P_SEQ:
        return L->refs[id] > 1 ? emit_call(L, b, ipu, tile, id)
                               : emit_seq(L, b, ipu, tile, p, depth);
    }
    return ERR_OK;
}

/* ---- assembling ---- */

/* The entry of codelet `name` in L->src, or NULL. */
static const clsrc *codelet_entry(const lower *L, const char *name)
{
    for (size_t i = 0; i < L->nsrc; i++)
        if (strcmp(L->src[i].name, name) == 0)
            return &L->src[i];
    return NULL;
}

/* Each codelet the tiles use, stripped once (before the texts, which the threads make). */
static void strip_codelets(lower *L)
{
    for (uint32_t x = 0; x < L->total; x++)
        for (size_t k = 0; k < L->tb[x].ncl; k++) {
            const char *name = L->tb[x].codelets[k], *text;
            if (codelet_entry(L, name))
                continue;
            size_t len;
            text = gr_codelet_text(L->g, name);
            L->src = xgrow(L->src, &L->csrc, L->nsrc + 1, sizeof *L->src);
            L->src[L->nsrc++] = (clsrc){name, text ? asm_strip(text, strlen(text), &len) : NULL};
        }
}

/* The whole text of tile x (pass L->real), or NULL with L->e set. */
static char *tile_text(lower *L, uint32_t x, gr_prog main)
{
    tbuild *b = &L->tb[x];
    txt_free(&b->code);
    txt_free(&b->sub);
    txt_free(&b->xdata);
    gr_subs_free(&b->subs);
    b->inst = 0;
    b->ncalled = 0;
    if (emit_prog(L, b, x / L->ntiles, x % L->ntiles, main, 0) != ERR_OK)
        return NULL;
    txt t = {0};
    txt_printf(&t, "        .text\n        .global main\nmain:\n%s",
               gr_is_io(L->g, x / L->ntiles, x % L->ntiles)
                   ? "        li      r1, 1\n        put     $group, r1\n"
                   : "");
    txt_put(&t, txt_str(&b->code));
    txt_put(&t, "        halt\n");
    txt_put(&t, txt_str(&b->sub));
    char *xdata = txt_take(&b->xdata);
    txt_free(&b->code); /* the tile's pieces, now in t (their space serves the next tile) */
    txt_free(&b->sub);
    for (size_t k = 0; k < b->ncl; k++) {
        const clsrc *c = codelet_entry(L, b->codelets[k]);
        const char *src = c ? c->text : NULL;
        if (!src) {
            txt_free(&t);
            free(xdata);
            err_set(L->e, ERR_INPUT, "codelet %s: no such codelet (workloads/codelets/%s.s)",
                    b->codelets[k], b->codelets[k]);
            return NULL;
        }
        txt_put(&t, "        .text\n");
        txt_put(&t, src);
        txt_put(&t, "\n");
    }
    txt_put(&t, "        .data\n");
    txt_put(&t, txt_str(&b->data));
    txt_put(&t, xdata);
    free(xdata);
    return txt_take(&t);
}

/* Distinct texts, each assembled once: a table of (text, length, image) found by the text's
 * key (an open-addressed index over the entries), with the tile each was first seen on (for
 * the assembler's messages) and its assembly's error. */
typedef struct ptab {
    char **text;
    size_t *len;
    uint64_t *key;
    int32_t *slot; /* nslot (a power of two, at least twice n) entries or -1 */
    size_t nslot, ckey;
    isa_prog *prog;
    uint32_t *first;
    err *errs;
    uint32_t *pool; /* the first pass's: each entry's POOL address, only laid out (no image) */
    int layout_only;
    size_t n, cap, ctext, clen, cfirst, cerrs, cpool;
} ptab;

/* A text's key: its 8-byte words mixed in turn (equal texts, equal keys). */
static uint64_t text_key(const char *s, size_t len)
{
    uint64_t h = len, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15u;
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x9e3779b97f4a7c15u;
    return h;
}

/* The index at twice the size, the entries placed again by their keys. */
static void grow_slots(ptab *P)
{
    free(P->slot);
    P->nslot = P->nslot ? 2 * P->nslot : 1024;
    P->slot = xmalloc(P->nslot * sizeof *P->slot);
    memset(P->slot, 0xff, P->nslot * sizeof *P->slot);
    for (size_t k = 0; k < P->n; k++) {
        size_t at = P->key[k] & (P->nslot - 1);
        while (P->slot[at] >= 0)
            at = (at + 1) & (P->nslot - 1);
        P->slot[at] = (int32_t)k;
    }
}

/* The index of `text` (whose key is `key`) in the table, a new entry when it is new (takes ownership of text);
 * tile x (replica x / total, x % total) first seen with it. Assembled later (assemble_all). */
static int32_t intern(ptab *P, char *text, uint64_t key, uint32_t x)
{
    size_t len = strlen(text);
    if (2 * (P->n + 1) > P->nslot)
        grow_slots(P);
    size_t at = key & (P->nslot - 1);
    for (; P->slot[at] >= 0; at = (at + 1) & (P->nslot - 1)) {
        int32_t k = P->slot[at];
        if (P->key[k] == key && P->len[k] == len && memcmp(P->text[k], text, len) == 0) {
            free(text);
            return k;
        }
    }
    P->slot[at] = (int32_t)P->n;
    P->key = xgrow(P->key, &P->ckey, P->n + 1, sizeof *P->key);
    P->key[P->n] = key;
    P->prog = xgrow(P->prog, &P->cap, P->n + 1, sizeof *P->prog);
    P->text = xgrow(P->text, &P->ctext, P->n + 1, sizeof *P->text);
    P->len = xgrow(P->len, &P->clen, P->n + 1, sizeof *P->len);
    P->first = xgrow(P->first, &P->cfirst, P->n + 1, sizeof *P->first);
    P->errs = xgrow(P->errs, &P->cerrs, P->n + 1, sizeof *P->errs);
    P->pool = xgrow(P->pool, &P->cpool, P->n + 1, sizeof *P->pool);
    memset(&P->prog[P->n], 0, sizeof *P->prog);
    P->text[P->n] = text;
    P->len[P->n] = len;
    P->first[P->n] = x;
    return (int32_t)P->n++;
}

/* Assemble entry k (a pool job's item: the entries are independent). */
static void assemble_one(void *ctx, size_t k)
{
    ptab *P = ctx;
    char name[48];
    snprintf(name, sizeof name, "graph tile %u", P->first[k]);
    err_clear(&P->errs[k]);
    if (P->layout_only)
        asm_symbol_address(name, P->text[k], P->len[k], "POOL", &P->pool[k], &P->errs[k]);
    else if (asm_assemble(name, P->text[k], P->len[k], &P->prog[k], &P->errs[k]) == ERR_OK)
        isa_prog_drop_code(&P->prog[k]); /* checked; the engine decodes it as it loads it */
}

static void ptab_drop(ptab *P, int keep_progs)
{
    for (size_t k = 0; k < P->n; k++) {
        free(P->text[k]);
        if (!keep_progs)
            isa_prog_free(&P->prog[k]);
    }
    free(P->text);
    free(P->len);
    free(P->key);
    free(P->slot);
    free(P->first);
    free(P->errs);
    free(P->pool);
    if (!keep_progs)
        free(P->prog);
    memset(P, 0, sizeof *P);
}

/* One tile's text (a pool job's item: each tile's text is its own; a copy of the lowering
 * state with an error of the tile's own, so that threads share nothing they write). */
typedef struct text_job {
    const lower *L;
    gr_prog main;
    char **text;
    uint64_t *key;
    err *errs;
} text_job;

static void text_one(void *ctx, size_t x)
{
    text_job *j = ctx;
    lower Lx = *j->L;
    Lx.e = &j->errs[x];
    j->text[x] = Lx.tb[x].used ? tile_text(&Lx, (uint32_t)x, j->main) : NULL;
    if (j->text[x])
        j->key[x] = text_key(j->text[x], strlen(j->text[x]));
}

/* Every used tile's text, made on the threads of `threads` (NULL: this one), then
 * deduplicated into P in tile order (x->which filled): ERR_OK, or the error of the first tile
 * in tile order whose text fails (in L->e), with the texts before it in P. */
static int texts_all(lower *L, gr_prog main, ptab *P, pool *threads)
{
    char **text = xcalloc(L->total, sizeof *text);
    uint64_t *key = xcalloc(L->total, sizeof *key);
    err *errs = xcalloc(L->total, sizeof *errs);
    int rc = ERR_OK;
    for (L->rep = 0; L->rep < L->g->replicas && rc == ERR_OK; L->rep++) {
        text_job j = {L, main, text, key, errs};
        if (threads)
            pool_run(threads, L->total, text_one, &j);
        else
            for (uint32_t x = 0; x < L->total; x++)
                text_one(&j, x);
        for (uint32_t x = 0; x < L->total; x++) {
            int32_t *w = &L->x->which[(size_t)L->rep * L->total + x];
            *w = -1;
            if (!L->tb[x].used)
                continue;
            if (rc == ERR_OK && !text[x]) {
                if (L->e)
                    *L->e = errs[x];
                rc = ERR_INPUT;
            }
            if (rc != ERR_OK) {
                free(text[x]);
                continue;
            }
            *w = intern(P, text[x], key[x], L->rep * L->total + x);
        }
    }
    L->rep = 0;
    free(text);
    free(key);
    free(errs);
    return rc;
}

/* One pass: the texts (texts_all), then the distinct ones assembled on the threads of
 * `threads` (NULL: this one). The error reported is the first tile's in tile order, as one
 * thread assembling each text as it comes would meet it: an assembly's, or the text's of a
 * tile after every assembled one. */
static int assemble_all(lower *L, gr_prog main, ptab *P, pool *threads)
{
    int rc = texts_all(L, main, P, threads);
    if (threads)
        pool_run(threads, P->n, assemble_one, P);
    else
        for (size_t k = 0; k < P->n; k++)
            assemble_one(P, k);
    for (size_t k = 0; k < P->n; k++)
        if (P->errs[k].status != ERR_OK) {
            if (L->e)
                *L->e = P->errs[k];
            return ERR_INPUT;
        }
    return rc;
}

/* Every region's address on its tile, from the first pass's symbols. */
static void find_addresses(lower *L, const ptab *P)
{
    graph *g = L->g;
    L->x->addr = xcalloc(g->nt ? g->nt : 1, sizeof *L->x->addr);
    for (size_t i = 0; i < g->nt; i++) {
        const gr_tensor_s *t = &g->t[i];
        L->x->addr[i] = xcalloc(t->nr ? t->nr : 1, sizeof **L->x->addr);
        for (size_t k = 0; k < t->nr; k++) {
            int32_t w = L->x->which[(size_t)t->r[k].ipu * L->ntiles + t->r[k].tile];
            L->x->addr[i][k] = P->pool[w] + L->pl.off[i][k];
        }
    }
}

/* The one-line error for a tile whose image does not fit: its code (when assembled; 0: not
 * yet) and its largest tensors. */
static int too_big(lower *L, uint32_t x, uint32_t need, uint32_t code)
{
    graph *g = L->g;
    uint32_t ipu = x / L->ntiles, tile = x % L->ntiles;
    size_t top[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
    size_t bytes[3] = {0, 0, 0};
    for (size_t i = 0; i < g->nt; i++) {
        size_t b = 0;
        for (size_t k = 0; k < g->t[i].nr; k++)
            if (g->t[i].r[k].ipu == ipu && g->t[i].r[k].tile == tile)
                b += (g->t[i].r[k].end - g->t[i].r[k].begin) * gr_type_size(g->t[i].type);
        for (int s = 0; s < 3 && b; s++)
            if (b > bytes[s]) {
                for (int q = 2; q > s; q--) {
                    bytes[q] = bytes[q - 1];
                    top[q] = top[q - 1];
                }
                bytes[s] = b;
                top[s] = i;
                break;
            }
    }
    txt t = {0};
    for (int s = 0; s < 3 && top[s] != SIZE_MAX; s++)
        txt_printf(&t, "%s%s %zu B", s ? ", " : "", g->t[top[s]].name, bytes[s]);
    char *list = txt_take(&t), what[32] = "";
    if (code)
        snprintf(what, sizeof what, "code %u B; ", code);
    err_set(L->e, ERR_INPUT,
            "graph does not fit: ipu %u tile %u needs %u bytes of its %u (%slargest tensors: %s)",
            ipu, tile, need, g->m.sram_bytes, what, *list ? list : "none");
    free(list);
    return ERR_INPUT;
}

/* Per-tile memory and the summary, from the final images. */
static int account(lower *L, const ptab *P)
{
    gr_exe *x = L->x;
    gr_summary *s = &x->sum;
    uint64_t sum = 0;
    for (uint32_t t = 0; t < L->total; t++) {
        if (x->which[t] < 0)
            continue;
        const isa_prog *p = &P->prog[x->which[t]];
        if (p->size > L->g->m.sram_bytes)
            return too_big(L, t, p->size, p->text_size);
        x->mem[t] = (gr_tile_mem){.code = p->text_size,
                                  .state = L->tb[t].state,
                                  .always = L->pl.always[t],
                                  .other = L->pl.other[t],
                                  .data = L->tb[t].bytes,
                                  .total = p->size};
        s->tiles_used++;
        sum += p->size;
        if (p->size > s->max_bytes) {
            s->max_bytes = p->size;
            s->max_tile = t;
        }
    }
    s->mean_bytes = s->tiles_used ? (double)sum / s->tiles_used : 0;
    s->programs = (uint32_t)P->n;
    s->compute_sets = (uint32_t)L->g->ncs;
    s->vertices = (uint32_t)L->g->nv;
    for (size_t i = 0; i < L->g->np; i++)
        if (L->g->p[i].kind == GR_P_COPY) {
            s->exchanges++;
            s->exchange_bytes += L->cp[i].bytes;
        }
    return ERR_OK;
}

static void lower_free(lower *L)
{
    for (uint32_t x = 0; L->tb && x < L->total; x++) {
        txt_free(&L->tb[x].code);
        txt_free(&L->tb[x].sub);
        txt_free(&L->tb[x].data);
        txt_free(&L->tb[x].xdata);
        free(L->tb[x].codelets);
        free(L->tb[x].vtx);
        free(L->tb[x].called);
        gr_subs_free(&L->tb[x].subs);
    }
    gr_placement_free(&L->pl, L->g->nt);
    for (size_t i = 0; L->cp && i < L->g->np; i++) {
        gr_copy_plan_free(&L->cp[i]);
    }
    for (size_t i = 0; i < L->nsrc; i++)
        free(L->src[i].text);
    free(L->src);
    free(L->tb);
    free(L->cp);
    free(L->refs);
    free(L->deep);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A tile whose data and vertex states alone exceed its SRAM: the one-line error before any
 * assembly (whose .space would fail first, with a less useful message). */
static int early_fit(lower *L)
{
    for (uint32_t x = 0; x < L->total; x++) {
        uint64_t need = (uint64_t)L->pl.pool[x] + L->tb[x].state;
        if (need > L->g->m.sram_bytes)
            return too_big(L, x, need > UINT32_MAX ? UINT32_MAX : (uint32_t)need, 0);
    }
    return ERR_OK;
}

/* Place data, plan copies, lay every text out (the addresses of its data), then assemble the
 * texts that hold those addresses, account. */
/* L->refs: each reachable sequence's and loop's kids counted once per parent. */
static void count_refs(lower *L, gr_prog id, uint8_t *seen)
{
    const gr_prog_s *p = &L->g->p[id];
    if (seen[id]++)
        return;
    for (size_t k = 0; p->kind == GR_P_SEQ && k < p->nkids; k++) {
        L->refs[p->kids[k]]++;
        count_refs(L, p->kids[k], seen);
    }
    if (p->kind == GR_P_REPEAT) {
        L->refs[p->b]++;
        count_refs(L, p->b, seen);
    }
}

/* L->deep: the deepest loop nesting each program is reached at (a program is walked again only
 * when reached deeper than before). */
static void find_depths(lower *L, gr_prog id, uint32_t depth)
{
    const gr_prog_s *p = &L->g->p[id];
    if (L->deep[id] != UINT32_MAX && L->deep[id] >= depth)
        return;
    L->deep[id] = depth;
    for (size_t k = 0; p->kind == GR_P_SEQ && k < p->nkids; k++)
        find_depths(L, p->kids[k], depth);
    if (p->kind == GR_P_REPEAT)
        find_depths(L, p->b, depth + 1);
}

static void find_calls(lower *L, gr_prog main)
{
    uint8_t *seen = xcalloc(L->g->np, 1);
    L->refs = xcalloc(L->g->np, sizeof *L->refs);
    L->deep = xmalloc(L->g->np * sizeof *L->deep);
    memset(L->deep, 0xff, L->g->np * sizeof *L->deep);
    count_refs(L, main, seen);
    find_depths(L, main, 0);
    free(seen);
}

static int lower_all(lower *L, gr_prog main, ptab *P, pool *threads)
{
    find_calls(L, main);
    place_tensors(L, main);
    place_vertices(L);
    if (early_fit(L) != ERR_OK || plan_copies(L, threads) != ERR_OK)
        return ERR_INPUT;
    count_syncs(L);
    strip_codelets(L);
    ptab first = {.layout_only = 1}; /* the text's size is all the first pass needs */
    err laid, *e = L->e;
    L->e = &laid;
    int rc = assemble_all(L, main, &first, threads);
    L->e = e;
    if (rc == ERR_OK)
        find_addresses(L, &first);
    ptab_drop(&first, 0);
    /* Laying out reads no operands: when a text fails it, the texts are assembled as they are
     * (addresses 0) so that the error reported is the first tile's, whatever its kind. */
    L->real = rc == ERR_OK;
    int rc2 = assemble_all(L, main, P, threads);
    if (rc != ERR_OK) {
        if (rc2 == ERR_OK && L->e)
            *L->e = laid;
        return ERR_INPUT;
    }
    return rc2 == ERR_OK ? account(L, P) : rc2;
}

gr_exe *gr_compile(graph *g, gr_prog main, pool *threads, err *e)
{
    double t0 = now_s();
    if (gr_status(g, e) != ERR_OK)
        return NULL;
    if (main >= g->np) {
        err_set(e, ERR_INPUT, "compile: program %u does not exist", main);
        return NULL;
    }
    gr_exe *x = xcalloc(1, sizeof *x);
    x->g = g;
    x->nipus = g->nipus;
    x->replicas = g->replicas;
    x->ntiles = g->m.tiles_per_ipu;
    lower L = {.g = g, .ntiles = x->ntiles, .total = x->nipus * x->ntiles, .x = x, .e = e};
    L.tb = xcalloc(L.total, sizeof *L.tb);
    L.cp = xcalloc(g->np ? g->np : 1, sizeof *L.cp);
    x->which = xmalloc((size_t)g->replicas * L.total * sizeof *x->which);
    x->mem = xcalloc(L.total, sizeof *x->mem);
    ptab P = {0};
    int rc = lower_all(&L, main, &P, threads);
    x->main = main;
    x->progs = P.prog;
    x->nprogs = P.n;
    ptab_drop(&P, 1);
    lower_free(&L);
    if (rc != ERR_OK) {
        gr_exe_free(x);
        return NULL;
    }
    x->sum.compile_seconds = now_s() - t0;
    return x;
}

void gr_exe_free(gr_exe *x)
{
    if (!x)
        return;
    for (size_t k = 0; k < x->nprogs; k++)
        isa_prog_free(&x->progs[k]);
    for (size_t i = 0; x->addr && i < x->g->nt; i++)
        free(x->addr[i]);
    free(x->addr);
    free(x->progs);
    free(x->which);
    free(x->mem);
    free(x->syncs);
    free(x->part);
    free(x->rounds);
    free(x);
}

const gr_summary *gr_exe_summary(const gr_exe *x)
{
    return &x->sum;
}

const gr_tile_mem *gr_exe_tile(const gr_exe *x, uint32_t ipu, uint32_t tile)
{
    return &x->mem[(size_t)(ipu % x->nipus) * x->ntiles + tile]; /* every replica alike */
}

/* Whether compute set name `cs` is `layer` or `layer.` then anything. */
static int of_layer(const char *cs, const char *layer)
{
    size_t n = strlen(layer);
    return strncmp(cs, layer, n) == 0 && (cs[n] == '\0' || cs[n] == '.');
}

/* Whether `cs` is one of the n layers' compute sets. */
static int of_layers(const char *cs, const char *const *layers, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (of_layer(cs, layers[k]))
            return 1;
    return 0;
}

uint32_t gr_exe_layers_tiles(const gr_exe *x, const char *const *layers, size_t nl, uint32_t ipu)
{
    const graph *g = x->g;
    ipu %= x->nipus;
    uint8_t *used = xcalloc(x->ntiles, 1);
    uint32_t n = 0;
    for (size_t k = 0; k < g->nv; k++) {
        const gr_vertex_s *v = &g->v[k];
        if (v->ipu == ipu && !used[v->tile] && of_layers(g->cs[v->cs].name, layers, nl)) {
            used[v->tile] = 1;
            n++;
        }
    }
    free(used);
    return n;
}

uint32_t gr_exe_layer_tiles(const gr_exe *x, const char *layer, uint32_t ipu)
{
    return gr_exe_layers_tiles(x, &layer, 1, ipu);
}

/* IPU ipu's steps, loops unrolled (*n of them; the caller frees). */
static gr_step *all_steps(const gr_exe *x, uint32_t ipu, size_t *n)
{
    size_t cap = 1024;
    gr_step *st = NULL;
    for (;; cap *= 2) {
        st = xrealloc(st, cap * sizeof *st);
        if ((*n = gr_exe_steps(x, ipu, st, cap)) < cap)
            return st;
    }
}

/* The class of step s: the index of its label among names[0..*n), added when new. */
static uint32_t class_of(const gr_step *s, char ***names, uint32_t *n, size_t *cap)
{
    char label[160];
    gr_step_label(s, label, sizeof label);
    for (uint32_t k = 0; k < *n; k++)
        if (strcmp((*names)[k], label) == 0)
            return k;
    *names = xgrow(*names, cap, (size_t)*n + 1, sizeof **names);
    (*names)[*n] = xstrdup(label);
    return (*n)++;
}

/* The engine's compute sets' tally (eng_class_steps): each IPU's supersteps by the name of
 * their program step. A step whose fields (static strings and names the graph keeps) equal
 * one of the 8 before it has its class (a loop's steps repeat): only the others are named
 * and looked up among the names. */
static void load_classes(const gr_exe *x, eng *g)
{
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        size_t n, cap = 0;
        gr_step *st = all_steps(x, i, &n);
        uint32_t *of = xmalloc((n ? n : 1) * sizeof *of), nclass = 0;
        char **names = NULL;
        for (size_t k = 0; k < n; k++) {
            size_t j = k;
            while (j > 0 && j + 8 > k &&
                   !(st[j - 1].what == st[k].what && st[j - 1].name == st[k].name &&
                     st[j - 1].round == st[k].round && st[j - 1].rounds == st[k].rounds))
                j--;
            of[k] = j > 0 && j + 8 > k ? of[j - 1] : class_of(&st[k], &names, &nclass, &cap);
        }
        eng_class_steps(g, i, of, n, (const char *const *)names, nclass);
        for (uint32_t k = 0; k < nclass; k++)
            free(names[k]);
        free(names);
        free(of);
        free(st);
    }
}

int gr_load(const gr_exe *x, eng *g, err *e)
{
    load_classes(x, g);
    size_t total = (size_t)x->replicas * x->nipus * x->ntiles;
    const isa_prog **p = xmalloc(total * sizeof *p);
    for (size_t t = 0; t < total; t++)
        p[t] = x->which[t] < 0 ? NULL : &x->progs[x->which[t]];
    int rc = eng_load_tiles(g, p, e);
    free(p);
    for (size_t i = 0; rc == ERR_OK && i < x->g->ninit; i++) {
        const gr_init_s *d = &x->g->init[i];
        gr_write(x, g, d->t, d->at, d->data, d->n);
    }
    return rc;
}

int gr_exe_where(const gr_exe *x, gr_tensor id, size_t elem, uint32_t *ipu, uint32_t *tile,
                 uint32_t *addr)
{
    if (id >= x->g->nt)
        return -1;
    const gr_tensor_s *t = &x->g->t[id];
    for (size_t k = 0; k < t->nr; k++)
        if (t->r[k].begin <= elem && elem < t->r[k].end) {
            *ipu = t->r[k].ipu;
            *tile = t->r[k].tile;
            *addr = x->addr[id][k] + (uint32_t)((elem - t->r[k].begin) * gr_type_size(t->type));
            return 0;
        }
    return -1;
}

/* Move n elements between host memory and a loaded tensor on replica rep, region by region. */
static void move(const gr_exe *x, eng *g, gr_tensor id, size_t at, void *host, size_t n, int in,
                 uint32_t rep)
{
    const gr_tensor_s *t = &x->g->t[id];
    size_t es = gr_type_size(t->type);
    for (size_t done = 0; done < n;) {
        uint32_t ipu, tile, addr;
        if (gr_exe_where(x, id, at + done, &ipu, &tile, &addr) != 0)
            return;
        size_t run = 1; /* elements contiguous on this tile from here */
        for (size_t k = 0; k < t->nr; k++)
            if (t->r[k].begin <= at + done && at + done < t->r[k].end)
                run = t->r[k].end - (at + done);
        if (run > n - done)
            run = n - done;
        if (!in) /* several ranks: the region as its owner holds it (a collective) */
            eng_share_mem(g, rep * x->nipus + ipu, tile, addr, (uint32_t)(run * es));
        uint8_t *m = eng_tile_mem(g, rep * x->nipus + ipu, tile) + addr;
        uint8_t *h = (uint8_t *)host + done * es;
        if (in)
            memcpy(m, h, run * es);
        else
            memcpy(h, m, run * es);
        done += run;
    }
}

void gr_write(const gr_exe *x, eng *g, gr_tensor t, size_t at, const void *src, size_t n)
{
    for (uint32_t r = 0; r < x->replicas; r++)
        move(x, g, t, at, (void *)src, n, 1, r);
}

void gr_read(const gr_exe *x, eng *g, gr_tensor t, size_t at, void *dst, size_t n)
{
    move(x, g, t, at, dst, n, 0, 0);
}

/* ---- the program's steps in run order ---- */

typedef struct steps {
    const gr_exe *x;
    uint32_t ipu;
    gr_step *out;
    size_t n, cap;
} steps;

static void step_add(steps *w, const char *what, const char *name, uint32_t round, uint32_t rounds)
{
    if (w->n < w->cap)
        w->out[w->n] = (gr_step){what, name, round, rounds};
    w->n++;
}

/* Each step that ends with a whole-IPU sync, loops unrolled, until cap are listed. */
static void step_walk(steps *w, gr_prog id)
{
    static const char *const what[] = {[GR_P_STREAM_IN] = "stream in",
                                       [GR_P_STREAM_OUT] = "stream out",
                                       [GR_P_REMOTE_READ] = "remote read",
                                       [GR_P_REMOTE_WRITE] = "remote write"};
    const graph *g = w->x->g;
    const gr_prog_s *p = &g->p[id];
    uint32_t syncs = w->x->syncs[((size_t)id * g->nipus + w->ipu) * 2];
    if (!syncs)
        return;
    int local = p->kind != GR_P_REPEAT && p->kind != GR_P_SEQ && p->kind != GR_P_ALL_REDUCE &&
                p->kind != GR_P_SYNC;
    if (local && strcmp(zone_of(w->x, id, w->ipu, 0), "internal") != 0) {
        if (p->kind == GR_P_COPY) /* only its rounds end with syncs of the whole IPU */
            for (uint32_t k = 0; k < w->x->rounds[id]; k++)
                step_add(w, "copy", g->t[p->xf[0].dst].name, k + 1, w->x->rounds[id]);
        return;
    }
    switch (p->kind) {
    case GR_P_EXEC: step_add(w, "execute", g->cs[p->a].name, 0, 0); return;
    case GR_P_COPY: { /* the on-chip phase, then the rounds */
        uint32_t r = w->x->rounds[id], first = syncs - r;
        for (uint32_t k = 0; k < syncs; k++)
            step_add(w, "copy", g->t[p->xf[0].dst].name, k < first ? 0 : k - first + 1,
                     k < first ? 0 : r);
        return;
    }
    case GR_P_SYNC: step_add(w, "sync", isa_zone_name(p->a), 0, 0); return;
    case GR_P_ALL_REDUCE: { /* per region slot: R - 1 x (a round, the add), R - 1 rounds */
        uint32_t R = g->replicas, n = 2 * (R - 1);
        for (uint32_t j = 0; j < syncs / (3 * (R - 1)); j++) {
            for (uint32_t k = 0; k + 1 < R; k++) {
                step_add(w, "all-reduce", g->t[p->a].name, k + 1, n);
                step_add(w, "all-reduce", g->t[p->a].name, 0, 0);
            }
            for (uint32_t k = R - 1; k < n; k++)
                step_add(w, "all-reduce", g->t[p->a].name, k + 1, n);
        }
        return;
    }
    case GR_P_STREAM_IN:
    case GR_P_STREAM_OUT:
    case GR_P_REMOTE_READ:
    case GR_P_REMOTE_WRITE: step_add(w, what[p->kind], g->t[p->a].name, 0, 0); return;
    case GR_P_REPEAT:
        for (uint32_t k = 0; k < p->a && w->n < w->cap; k++)
            step_walk(w, p->b);
        return;
    case GR_P_SEQ:
        for (size_t k = 0; k < p->nkids && w->n < w->cap; k++)
            step_walk(w, p->kids[k]);
        return;
    }
}

size_t gr_exe_steps(const gr_exe *x, uint32_t ipu, gr_step *out, size_t cap)
{
    steps w = {x, ipu % x->nipus, out, 0, cap}; /* every replica's IPU runs the same steps */
    step_walk(&w, x->main);
    return w.n < cap ? w.n : cap;
}

void gr_step_label(const gr_step *s, char *buf, size_t len)
{
    if (strcmp(s->what, "execute") == 0)
        snprintf(buf, len, "%s", s->name);
    else if (s->round)
        snprintf(buf, len, "%s %s (round %u/%u)", s->what, s->name, s->round, s->rounds);
    else
        snprintf(buf, len, "%s %s", s->what, s->name);
}
