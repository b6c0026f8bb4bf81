/* graph: building a graph — tensors and their tile mapping, compute sets and vertices, and
 * the control program — as Poplar's Graph and Program classes do, in C.
 *
 * Everything is kept as plain tables; nothing is lowered here (graph_lower.c does that).
 * Errors in the calls (an unknown id, a region outside a tensor, a vertex field off its
 * tile, a Copy's pieces writing one element twice) are recorded once in the graph and
 * reported by gr_status and gr_compile, so building code stays free of error checks. Left
 * out: tensor views (slices, reshapes of a tensor as a new tensor: callers address elements
 * of the flattened tensor instead, as a Copy's pieces do), and programs chosen at run time
 * (If, Switch). */
#include "workloads/graph/graph_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/codelets.h"

static const uint32_t type_size[] = {[GR_F32] = 4, [GR_F16] = 2, [GR_I32] = 4, [GR_U8] = 1};
static const char *const type_name[] = {
    [GR_F32] = "f32", [GR_F16] = "f16", [GR_I32] = "i32", [GR_U8] = "u8"};

uint32_t gr_type_size(gr_type t)
{
    return type_size[t];
}

void gr_fail(graph *g, const char *fmt, ...)
{
    if (g->bad)
        return;
    g->bad = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->why, sizeof g->why, fmt, ap);
    va_end(ap);
}

graph *gr_new(const mach *m, uint32_t nipus)
{
    graph *g = xcalloc(1, sizeof *g);
    g->m = *m;
    g->nipus = nipus ? nipus : 1;
    g->replicas = 1;
    return g;
}

void gr_io_tiles(graph *g, uint32_t ipu, uint32_t first, uint32_t n)
{
    if (ipu >= g->nipus || first + (uint64_t)n > g->m.tiles_per_ipu) {
        gr_fail(g, "I/O tiles: ipu %u tiles %u..%u do not exist", ipu, first, first + n);
        return;
    }
    if (!g->io_first) {
        g->io_first = xcalloc(g->nipus, sizeof *g->io_first);
        g->io_n = xcalloc(g->nipus, sizeof *g->io_n);
    }
    g->io_first[ipu] = first;
    g->io_n[ipu] = n;
}

int gr_is_io(const graph *g, uint32_t ipu, uint32_t tile)
{
    return g->io_n && tile >= g->io_first[ipu] && tile < g->io_first[ipu] + g->io_n[ipu];
}

void gr_replicate(graph *g, uint32_t replicas)
{
    if (!replicas || (uint64_t)replicas * g->nipus > 4096) {
        gr_fail(g, "replicate: %u replicas of %u IPUs", replicas, g->nipus);
        return;
    }
    g->replicas = replicas;
}

void gr_free(graph *g)
{
    if (!g)
        return;
    free(g->io_first);
    free(g->io_n);
    for (size_t i = 0; i < g->nt; i++) {
        free(g->t[i].name);
        free(g->t[i].r);
    }
    for (size_t i = 0; i < g->nv; i++) {
        free(g->v[i].codelet);
        free(g->v[i].f);
    }
    for (size_t i = 0; i < g->ncs; i++)
        free(g->cs[i].name);
    for (size_t i = 0; i < g->np; i++) {
        free(g->p[i].kids);
        free(g->p[i].xf);
    }
    for (size_t i = 0; i < g->nsrc; i++) {
        free(g->src[i].name);
        free(g->src[i].text);
    }
    for (size_t i = 0; i < g->nvs; i++) {
        free(g->vs[i].codelet);
        free(g->vs[i].why);
    }
    free(g->vs);
    for (size_t i = 0; i < g->ninit; i++)
        free(g->init[i].data);
    free(g->init);
    free(g->t);
    free(g->v);
    free(g->cs);
    free(g->p);
    free(g->src);
    free(g);
}

int gr_status(const graph *g, err *e)
{
    return g->bad ? err_set(e, ERR_INPUT, "%s", g->why) : ERR_OK;
}

void gr_codelet_src(graph *g, const char *name, const char *src)
{
    g->src = xgrow(g->src, &g->csrc, g->nsrc + 1, sizeof *g->src);
    g->src[g->nsrc++] = (gr_src){xstrdup(name), xstrdup(src)};
}

const char *gr_codelet_text(const graph *g, const char *name)
{
    for (size_t k = 0; k < g->nsrc; k++)
        if (strcmp(g->src[k].name, name) == 0)
            return g->src[k].text;
    return wl_codelet(name);
}

/* ---- tensors ---- */

gr_tensor gr_tensor_new(graph *g, const char *name, gr_type type, unsigned ndim,
                        const uint32_t *shape)
{
    if (ndim == 0 || ndim > GR_MAX_DIMS || (unsigned)type > GR_U8) {
        gr_fail(g, "tensor %s: %u dimensions or type %d not supported", name, ndim, (int)type);
        return GR_NONE;
    }
    g->t = xgrow(g->t, &g->ct, g->nt + 1, sizeof *g->t);
    gr_tensor_s *t = &g->t[g->nt];
    memset(t, 0, sizeof *t);
    t->name = xstrdup(name);
    t->type = type;
    t->ndim = ndim;
    t->elems = 1;
    for (unsigned d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->elems *= shape[d];
    }
    return (gr_tensor)g->nt++;
}

gr_tensor_s *gr_t(graph *g, gr_tensor t)
{
    if (t >= g->nt) {
        gr_fail(g, "tensor id %u does not exist", t);
        return NULL;
    }
    return &g->t[t];
}

size_t gr_tensor_elems(const graph *g, gr_tensor t)
{
    return t < g->nt ? g->t[t].elems : 0;
}

void gr_keep(graph *g, gr_tensor id)
{
    gr_tensor_s *t = gr_t(g, id);
    if (t)
        t->keep = 1;
}

void gr_pairs(graph *g, gr_tensor id)
{
    gr_tensor_s *t = gr_t(g, id);
    if (t)
        t->pairs = 1;
}

void gr_init(graph *g, gr_tensor id, size_t at, const void *data, size_t n)
{
    gr_tensor_s *t = gr_t(g, id);
    if (!t)
        return;
    if (n == 0 || at > t->elems || n > t->elems - at) {
        gr_fail(g, "tensor %s: initial data for elements [%zu, %zu) of %zu", t->name, at, at + n,
                t->elems);
        return;
    }
    t->keep = 1;
    size_t bytes = n * gr_type_size(t->type);
    g->init = xgrow(g->init, &g->cinit, g->ninit + 1, sizeof *g->init);
    g->init[g->ninit] = (gr_init_s){id, at, n, xmalloc(bytes)};
    memcpy(g->init[g->ninit++].data, data, bytes);
}

void gr_map_region(graph *g, gr_tensor id, uint32_t ipu, uint32_t tile, size_t begin, size_t end)
{
    gr_tensor_s *t = gr_t(g, id);
    if (!t)
        return;
    if (begin >= end || end > t->elems || ipu >= g->nipus || tile >= g->m.tiles_per_ipu) {
        gr_fail(g,
                "tensor %s: region [%zu, %zu) on ipu %u tile %u is outside the tensor (%zu "
                "elements) or the system",
                t->name, begin, end, ipu, tile, t->elems);
        return;
    }
    for (size_t k = 0; k < t->nr; k++)
        if (begin < t->r[k].end && t->r[k].begin < end) {
            gr_fail(g, "tensor %s: region [%zu, %zu) overlaps [%zu, %zu), already mapped", t->name,
                    begin, end, t->r[k].begin, t->r[k].end);
            return;
        }
    t->r = xgrow(t->r, &t->cr, t->nr + 1, sizeof *t->r);
    t->r[t->nr++] = (gr_region_s){ipu, tile, begin, end};
}

size_t gr_regions(const graph *g, gr_tensor id, gr_where *out, size_t cap)
{
    if (id >= g->nt)
        return 0;
    const gr_tensor_s *t = &g->t[id];
    for (size_t k = 0; k < t->nr && k < cap; k++)
        out[k] = (gr_where){t->r[k].ipu, t->r[k].tile, t->r[k].begin, t->r[k].end};
    return t->nr;
}

void gr_map_linear(graph *g, gr_tensor id, uint32_t ipu, uint32_t first, uint32_t ntiles,
                   size_t grain)
{
    gr_tensor_s *t = gr_t(g, id);
    if (!t)
        return;
    if (ntiles == 0 || grain == 0) {
        gr_fail(g, "tensor %s: map over %u tiles with grain %zu", t->name, ntiles, grain);
        return;
    }
    size_t grains = (t->elems + grain - 1) / grain;
    for (uint32_t k = 0; k < ntiles; k++) {
        size_t a = grains * k / ntiles * grain, b = grains * (k + 1) / ntiles * grain;
        if (b > t->elems)
            b = t->elems;
        if (a < b)
            gr_map_region(g, id, ipu, first + k, a, b);
    }
}

/* ---- compute sets and vertices ---- */

gr_cs gr_cs_new(graph *g, const char *name)
{
    g->cs = xgrow(g->cs, &g->ccs, g->ncs + 1, sizeof *g->cs);
    g->cs[g->ncs].name = xstrdup(name);
    return (gr_cs)g->ncs++;
}

/* The region of t holding [begin, end) on (ipu, tile), or NULL. */
const gr_region_s *gr_region_of(const gr_tensor_s *t, uint32_t ipu, uint32_t tile, size_t begin,
                                size_t end)
{
    for (size_t k = 0; k < t->nr; k++) {
        const gr_region_s *r = &t->r[k];
        if (r->ipu == ipu && r->tile == tile && r->begin <= begin && end <= r->end)
            return r;
    }
    return NULL;
}

/* ---- vertices, checked against their codelets' headers ---- */

static const char *const kind_names[] = {
    [GR_F_REGION] = "region", [GR_F_U32] = "u32", [GR_F_F32] = "f32"};

/* One State entry, `#   +OFFSET NAME KIND[xN] ...`, into s at word s->nw; 0, or -1 with why. */
static int vspec_entry(gr_vspec *s, const char *l, const char *e, char *why, size_t n)
{
    char name[16] = "", kind[16] = "";
    unsigned off = 0, cnt = 1;
    char buf[128];
    snprintf(buf, sizeof buf, "%.*s", (int)(e - l), l);
    if (sscanf(buf, "#   +%u %15s %15s", &off, name, kind) < 3)
        return snprintf(why, n, "a State entry without NAME KIND: \"%.40s\"", buf), -1;
    char *x = strchr(kind, 'x');
    if (x) {
        *x = 0;
        cnt = (unsigned)strtoul(x + 1, NULL, 10);
    }
    int k = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(kind, kind_names[i]) == 0)
            k = i;
    if (k < 0 || cnt == 0 || off != 4 * s->nw || s->nw + cnt > GR_VSPEC_WORDS)
        return snprintf(why, n,
                        "State entry +%u %s %s: expected +%u and a kind region, u32 or "
                        "f32 (xN for N words)",
                        off, name, kind, 4 * s->nw),
               -1;
    for (unsigned i = 0; i < cnt; i++, s->nw++) {
        s->kind[s->nw] = (gr_field_kind)k;
        snprintf(s->name[s->nw], sizeof s->name[0], "%s", name);
    }
    return 0;
}

/* Read codelet c's vertex from its source text (gr_vspec). */
static void vspec_read(gr_vspec *s, const char *c, const char *src)
{
    char why[160] = "";
    memset(s, 0, sizeof *s);
    s->codelet = xstrdup(c);
    const char *l = src ? strstr(src, "# State") : NULL;
    while (l && l != src && l[-1] != '\n') /* the section starts a line */
        l = strstr(l + 1, "# State");
    if (!src)
        snprintf(why, sizeof why, "no such codelet");
    else if (!l)
        snprintf(why, sizeof why, "its header has no \"# State\" section (docs/codelets.md)");
    else {
        const char *nl = strchr(src, '\n'), *sup = strstr(src, "SUPERVISOR codelet");
        s->super = sup && (!nl || sup < nl); /* named so on the first line */
        for (l = strchr(l, '\n'); l && *++l == '#'; l = strchr(l, '\n')) {
            const char *e = strchr(l, '\n');
            e = e ? e : l + strlen(l);
            if (strncmp(l, "#   +", 5) == 0) {
                if (vspec_entry(s, l, e, why, sizeof why) < 0)
                    break;
            } else if (strncmp(l, "#     ", 6) != 0) /* not a continuation line */
                break;
        }
    }
    s->why = why[0] ? xstrdup(why) : NULL;
}

static const gr_vspec *vspec_of(graph *g, const char *codelet)
{
    for (size_t i = 0; i < g->nvs; i++)
        if (strcmp(g->vs[i].codelet, codelet) == 0)
            return &g->vs[i];
    g->vs = xgrow(g->vs, &g->cvs, g->nvs + 1, sizeof *g->vs);
    vspec_read(&g->vs[g->nvs], codelet, gr_codelet_text(g, codelet));
    return &g->vs[g->nvs++];
}

/* ERR_OK when the vertex's fields are what its codelet's header declares, else the error
 * recorded in g. */
static int vertex_fields(graph *g, const char *c, int super, uint32_t ipu, uint32_t tile,
                         const gr_field *f, size_t nf)
{
    const gr_vspec *s = vspec_of(g, c);
    if (s->why)
        return gr_fail(g, "vertex %s on ipu %u tile %u: codelet %s: %s", c, ipu, tile, c, s->why),
               ERR_INPUT;
    if (s->super != (super != 0))
        return gr_fail(g,
                       "vertex %s on ipu %u tile %u: made as a %s vertex, its codelet is a %s "
                       "codelet",
                       c, ipu, tile, super ? "supervisor" : "worker",
                       s->super ? "supervisor" : "worker"),
               ERR_INPUT;
    if (nf != s->nw)
        return gr_fail(g,
                       "vertex %s on ipu %u tile %u: %zu fields, its codelet's State declares "
                       "%u",
                       c, ipu, tile, nf, s->nw),
               ERR_INPUT;
    for (size_t k = 0; k < nf; k++)
        if (f[k].kind != s->kind[k] && (unsigned)f[k].kind < 3)
            return gr_fail(g,
                           "vertex %s on ipu %u tile %u: field %zu (%s) is a %s, its codelet's "
                           "State declares a %s",
                           c, ipu, tile, k, s->name[k], kind_names[f[k].kind],
                           kind_names[s->kind[k]]),
                   ERR_INPUT;
    return ERR_OK;
}

uint32_t gr_vertex(graph *g, gr_cs cs, const char *codelet, int supervisor, uint32_t ipu,
                   uint32_t tile, const gr_field *f, size_t nf)
{
    if (cs >= g->ncs || ipu >= g->nipus || tile >= g->m.tiles_per_ipu) {
        gr_fail(g, "vertex %s: compute set %u or ipu %u tile %u does not exist", codelet, cs, ipu,
                tile);
        return GR_NONE;
    }
    if (vertex_fields(g, codelet, supervisor, ipu, tile, f, nf) != ERR_OK)
        return GR_NONE;
    for (size_t k = 0; k < nf; k++) {
        if (f[k].kind != GR_F_REGION)
            continue;
        gr_tensor_s *t = gr_t(g, f[k].t);
        if (t && (f[k].begin > f[k].end || !gr_region_of(t, ipu, tile, f[k].begin, f[k].end))) {
            gr_fail(g,
                    "vertex %s on ipu %u tile %u: field %zu, elements [%zu, %zu) of %s, is "
                    "not in one region on that tile",
                    codelet, ipu, tile, k, f[k].begin, f[k].end, t->name);
            return GR_NONE;
        }
    }
    g->v = xgrow(g->v, &g->cv, g->nv + 1, sizeof *g->v);
    gr_vertex_s *v = &g->v[g->nv];
    v->cs = cs;
    v->codelet = xstrdup(codelet);
    v->super = supervisor != 0;
    v->ipu = ipu;
    v->tile = tile;
    v->f = xmalloc((nf ? nf : 1) * sizeof *v->f);
    if (nf) /* f may be NULL when there are no fields */
        memcpy(v->f, f, nf * sizeof *f);
    v->nf = nf;
    return (uint32_t)g->nv++;
}

/* ---- programs ---- */

static gr_prog add_prog(graph *g, gr_prog_s p)
{
    g->p = xgrow(g->p, &g->cp, g->np + 1, sizeof *g->p);
    g->p[g->np] = p;
    return (gr_prog)g->np++;
}

gr_prog gr_execute(graph *g, gr_cs cs)
{
    if (cs >= g->ncs) {
        gr_fail(g, "execute: compute set %u does not exist", cs);
        return GR_NONE;
    }
    return add_prog(g, (gr_prog_s){.kind = GR_P_EXEC, .a = cs});
}

/* 0 when piece k of a Copy names two tensors of one type and slices inside them, else -1
 * with the error recorded. */
static int check_piece(graph *g, const gr_xfer *x, size_t k)
{
    if (x->src >= g->nt || x->dst >= g->nt) {
        gr_fail(g, "copy: piece %zu: tensor id %u does not exist", k,
                x->src >= g->nt ? x->src : x->dst);
        return -1;
    }
    const gr_tensor_s *s = &g->t[x->src], *d = &g->t[x->dst];
    if (s->type != d->type)
        gr_fail(g, "copy %s -> %s: piece %zu: types differ (%s, %s)", s->name, d->name, k,
                type_name[s->type], type_name[d->type]);
    else if (x->n == 0)
        gr_fail(g, "copy %s -> %s: piece %zu moves no elements", s->name, d->name, k);
    else if (x->src_at > s->elems || x->n > s->elems - x->src_at || x->dst_at > d->elems ||
             x->n > d->elems - x->dst_at)
        gr_fail(g,
                "copy %s -> %s: piece %zu, elements [%zu, %zu) -> [%zu, %zu), is outside the "
                "tensors (%zu and %zu elements)",
                s->name, d->name, k, x->src_at, x->src_at + x->n, x->dst_at, x->dst_at + x->n,
                s->elems, d->elems);
    else
        return 0;
    return -1;
}

/* One slice of a Copy's pieces: elements [lo, hi) of tensor t, read or written by piece k. */
typedef struct span {
    gr_tensor t;
    size_t lo, hi, k;
    int write;
} span;

static int by_start(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return (x->write < y->write) - (x->write > y->write); /* writes first: deterministic */
}

/* Record the clash of span b with the earlier span a of its tensor, which it overlaps (one of
 * them is a write). */
static void clash(graph *g, const gr_xfer *x, const span *a, const span *b)
{
    const span *w = a->write ? a : b, *o = a->write ? b : a;
    size_t hi = a->hi < b->hi ? a->hi : b->hi;
    const char *tn = g->t[a->t].name;
    if (o->write) {
        size_t i = a->k < b->k ? a->k : b->k, j = a->k < b->k ? b->k : a->k;
        gr_fail(g,
                "copy %s -> %s and %s -> %s: pieces %zu and %zu both write elements [%zu, %zu) "
                "of %s",
                g->t[x[i].src].name, g->t[x[i].dst].name, g->t[x[j].src].name, g->t[x[j].dst].name,
                i, j, b->lo, hi, tn);
        return;
    }
    gr_fail(g,
            "copy %s -> %s and %s -> %s: piece %zu reads elements [%zu, %zu) of %s, which piece "
            "%zu writes",
            g->t[x[o->k].src].name, g->t[x[o->k].dst].name, g->t[x[w->k].src].name,
            g->t[x[w->k].dst].name, o->k, b->lo, hi, tn, w->k);
}

/* 0 unless two pieces write one element, or a piece reads an element that one writes (then
 * -1, recorded): the slices sorted by start, each checked against the earlier write and read
 * of its tensor that reach furthest. */
static int check_overlaps(graph *g, const gr_xfer *x, size_t n)
{
    span *s = xmalloc(2 * n * sizeof *s);
    for (size_t k = 0; k < n; k++) {
        s[2 * k] = (span){x[k].src, x[k].src_at, x[k].src_at + x[k].n, k, 0};
        s[2 * k + 1] = (span){x[k].dst, x[k].dst_at, x[k].dst_at + x[k].n, k, 1};
    }
    qsort(s, 2 * n, sizeof *s, by_start);
    const span *w = NULL, *r = NULL;
    int rc = 0;
    for (size_t q = 0; q < 2 * n && rc == 0; q++) {
        const span *c = &s[q];
        if (q && c->t != s[q - 1].t)
            w = r = NULL;
        const span *o = w && w->hi > c->lo ? w : c->write && r && r->hi > c->lo ? r : NULL;
        if (o) {
            clash(g, x, o, c);
            rc = -1;
        }
        if (c->write && (!w || c->hi > w->hi))
            w = c;
        if (!c->write && (!r || c->hi > r->hi))
            r = c;
    }
    free(s);
    return rc;
}

gr_prog gr_copy_many(graph *g, const gr_xfer *x, size_t n)
{
    if (n == 0 || !x) {
        gr_fail(g, "copy: no pieces");
        return GR_NONE;
    }
    for (size_t k = 0; k < n; k++)
        if (check_piece(g, &x[k], k) != 0)
            return GR_NONE;
    if (check_overlaps(g, x, n) != 0)
        return GR_NONE;
    gr_prog_s p = {.kind = GR_P_COPY, .nxf = n};
    p.xf = xmalloc(n * sizeof *p.xf);
    memcpy(p.xf, x, n * sizeof *x);
    return add_prog(g, p);
}

gr_prog gr_copy(graph *g, gr_tensor src, gr_tensor dst)
{
    gr_tensor_s *s = gr_t(g, src), *d = gr_t(g, dst);
    if (!s || !d)
        return GR_NONE;
    if (s->type != d->type || s->elems != d->elems) {
        gr_fail(g, "copy %s -> %s: types or element counts differ (%zu, %zu)", s->name, d->name,
                s->elems, d->elems);
        return GR_NONE;
    }
    gr_xfer x = {src, 0, dst, 0, s->elems};
    return gr_copy_many(g, &x, 1);
}

gr_prog gr_sync(graph *g, unsigned zone)
{
    if (zone >= ISA_NZONES) {
        gr_fail(g, "sync: zone %u does not exist", zone);
        return GR_NONE;
    }
    return add_prog(g, (gr_prog_s){.kind = GR_P_SYNC, .a = zone});
}

/* Regions in (ipu, tile, mapping) order, for in_stream_order. */
static int by_tile(const void *a, const void *b, void *ctx)
{
    const gr_region_s *r = ctx;
    const gr_region_s *x = &r[*(const size_t *)a], *y = &r[*(const size_t *)b];
    if (x->ipu != y->ipu)
        return x->ipu < y->ipu ? -1 : 1;
    if (x->tile != y->tile)
        return x->tile < y->tile ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* A stream copy's tiles take consecutive slices of the host's buffer in (IPU, tile) order,
 * each tile its regions in the order they were mapped (hw/engine_host.c): the tensor's
 * regions so visited must run through it one after another. */
static int in_stream_order(graph *g, const gr_tensor_s *s)
{
    size_t *ix = xmalloc((s->nr ? s->nr : 1) * sizeof *ix), next = 0;
    for (size_t k = 0; k < s->nr; k++)
        ix[k] = k;
    qsort_r(ix, s->nr, sizeof *ix, by_tile, s->r);
    int ok = 1;
    for (size_t k = 0; k < s->nr && ok; k++) {
        const gr_region_s *r = &s->r[ix[k]];
        if (r->begin != next) {
            gr_fail(g,
                    "stream copy of %s: region [%zu, %zu) on ipu %u tile %u comes %s in "
                    "(ipu, tile) order; the host fills a stream's tiles one after another",
                    s->name, r->begin, r->end, r->ipu, r->tile,
                    r->begin < next ? "after later elements" : "before earlier elements");
            ok = 0;
        }
        next = r->end;
    }
    free(ix);
    return ok;
}

static gr_prog stream(graph *g, gr_tensor t, gr_pkind kind, uint32_t buf, uint64_t off)
{
    gr_tensor_s *s = gr_t(g, t);
    if (!s)
        return GR_NONE;
    for (size_t k = 0; k < s->nr; k++)
        if (((s->r[k].end - s->r[k].begin) * gr_type_size(s->type)) % 4) {
            gr_fail(g, "host copy of %s: region [%zu, %zu) is not whole words", s->name,
                    s->r[k].begin, s->r[k].end);
            return GR_NONE;
        }
    if ((kind == GR_P_STREAM_IN || kind == GR_P_STREAM_OUT) && !in_stream_order(g, s))
        return GR_NONE;
    return add_prog(g, (gr_prog_s){.kind = kind, .a = t, .b = buf, .off = off});
}

gr_prog gr_stream_in(graph *g, gr_tensor t)
{
    return stream(g, t, GR_P_STREAM_IN, 0, 0);
}

gr_prog gr_stream_out(graph *g, gr_tensor t)
{
    return stream(g, t, GR_P_STREAM_OUT, 0, 0);
}

/* A remote buffer id within GR_REMOTE_BUFFERS, else GR_NONE with the graph failed. */
static int bad_buffer(graph *g, uint32_t buf)
{
    if (buf < GR_REMOTE_BUFFERS)
        return 0;
    gr_fail(g, "remote buffer %u: ids go up to %u", buf, GR_REMOTE_BUFFERS - 1);
    return 1;
}

gr_prog gr_remote_write(graph *g, gr_tensor t, uint32_t buf, uint64_t off)
{
    if (bad_buffer(g, buf))
        return GR_NONE;
    return stream(g, t, GR_P_REMOTE_WRITE, buf, off);
}

gr_prog gr_remote_read(graph *g, gr_tensor t, uint32_t buf, uint64_t off)
{
    if (bad_buffer(g, buf))
        return GR_NONE;
    return stream(g, t, GR_P_REMOTE_READ, buf, off);
}

gr_prog gr_all_reduce(graph *g, gr_tensor t)
{
    gr_tensor_s *s = gr_t(g, t);
    if (!s)
        return GR_NONE;
    if (s->type != GR_F32) {
        gr_fail(g, "all-reduce of %s: fp32 tensors only", s->name);
        return GR_NONE;
    }
    return add_prog(g, (gr_prog_s){.kind = GR_P_ALL_REDUCE, .a = t});
}

gr_prog gr_repeat(graph *g, uint32_t n, gr_prog body)
{
    if (body >= g->np) {
        gr_fail(g, "repeat: program %u does not exist", body);
        return GR_NONE;
    }
    return add_prog(g, (gr_prog_s){.kind = GR_P_REPEAT, .a = n, .b = body});
}

gr_prog gr_seq(graph *g, const gr_prog *p, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (p[k] >= g->np) {
            gr_fail(g, "sequence: program %u does not exist", p[k]);
            return GR_NONE;
        }
    gr_prog_s s = {.kind = GR_P_SEQ, .nkids = n};
    s.kids = xmalloc((n ? n : 1) * sizeof *s.kids);
    memcpy(s.kids, p, n * sizeof *p);
    return add_prog(g, s);
}
