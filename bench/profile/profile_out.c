/* profile_out: a profile's files, built from its records once the run is over (profile.c
 * records): the trace (trace.json), the execution summary and memory report (summary.txt,
 * summary.json, with the compute sets' table), the plots' CSV files; and their writing, the
 * set whole or not at all. Every JSON is built with json-c (base/json.h): the summary as one
 * tree, the trace, which can be tens of MB, one event at a time (each event's tree printed
 * plainly onto the file's text and freed). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/json.h"
#include "base/rank.h"
#include "bench/profile/csets.h"
#include "bench/profile/profile_int.h"

/* ---- the trace ---- */

typedef struct tracer {
    profile *p;
    const mach *m;
    uint64_t limit; /* bytes */
} tracer;

/* Event o (freed) onto the trace: a line of its own, after a comma unless first. */
static void emit(txt *b, json *o)
{
    const char *s =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    txt_printf(b, "%s\n%s", b->len && b->p[b->len - 1] == '[' ? "" : ",", s);
    json_object_put(o);
}

/* Picoseconds as microseconds (exact: at most six decimals, in a double's shortest form). */
static json *us(uint64_t ps)
{
    return json_num((double)ps / 1e6);
}

/* An event's first members: its phase, process, track and name. */
static json *event(const char *ph, uint32_t pid, uint64_t tid, const char *name)
{
    json *o = json_obj();
    json_put_str(o, "ph", ph);
    json_put_u64(o, "pid", pid);
    json_put_u64(o, "tid", tid);
    json_put_str(o, "name", name);
    return o;
}

/* A complete event ("X") [a, b) in cycles on (pid, tid); args (may be NULL; taken) get the
 * cycles first. Returns 0, or -1 when the size bound is reached (nothing written). */
static int slice(tracer *t, uint32_t pid, uint32_t tid, const char *name, const char *cat,
                 uint64_t a, uint64_t b, json *args)
{
    profile *p = t->p;
    if (p->trace.len > t->limit) {
        p->truncated = 1;
        json_object_put(args);
        return -1;
    }
    json *o = event("X", pid, tid, name), *all = json_obj();
    json_put_str(o, "cat", cat);
    uint64_t pa = mach_cycles_to_ps(t->m, a), pb = mach_cycles_to_ps(t->m, b);
    json_put(o, "ts", us(pa));
    json_put(o, "dur", us(pb - pa));
    json_put_u64(all, "cycles", b - a);
    json_put_u64(all, "start_cycle", a);
    if (args) {
        json_object_object_foreach(args, key, val) json_put(all, key, json_object_get(val));
        json_object_put(args);
    }
    json_put(o, "args", all);
    emit(&p->trace, o);
    p->events++;
    return 0;
}

/* A name and a sort index for a process (tid < 0) or a track. */
static void meta(txt *b, const char *what, uint32_t pid, long tid, const char *name, long sort)
{
    char key[32];
    snprintf(key, sizeof key, "%s_name", what);
    json *o = event("M", pid, tid < 0 ? 0 : (uint64_t)tid, key);
    json_put_str(json_put(o, "args", json_obj()), "name", name);
    emit(b, o);
    snprintf(key, sizeof key, "%s_sort_index", what);
    o = event("M", pid, tid < 0 ? 0 : (uint64_t)tid, key);
    json_put(json_put(o, "args", json_obj()), "sort_index", json_object_new_int64(sort));
    emit(b, o);
}

/* The tracks of IPU i: its steps, its categories, its chosen tiles' contexts. */
static void tracks(const profile *p, txt *b, uint32_t i)
{
    char name[64];
    snprintf(name, sizeof name, "IPU %u", i);
    meta(b, "process", i, -1, name, i);
    meta(b, "thread", i, 0, "Program steps", 0);
    const eng_stat *cats = eng_cat_table();
    for (unsigned c = 0; c < ENG_NCAT; c++)
        meta(b, "thread", i, 1 + c, cats[c].key, 1 + c);
    for (size_t k = 0; prof_chosen(p, k) != UINT32_MAX; k++)
        for (unsigned c = 0; c < TILE_NCTX; c++) {
            if (c)
                snprintf(name, sizeof name, "tile %u worker %u", prof_chosen(p, k), c - 1);
            else
                snprintf(name, sizeof name, "tile %u supervisor", prof_chosen(p, k));
            long tid = PROF_TID_TILES + (long)(k * TILE_NCTX + c);
            meta(b, "thread", i, tid, name, tid);
        }
}

/* The tid of a chosen tile's context. */
static uint32_t tile_tid(const profile *p, uint32_t tile, unsigned ctx)
{
    size_t k = 0;
    while (prof_chosen(p, k) != tile)
        k++;
    return PROF_TID_TILES + (uint32_t)(k * TILE_NCTX + ctx);
}

/* The bytes the superstep moved (of category cat's, or all: ENG_NCAT) as members of a. */
static void step_bytes(json *a, const prof_rec *r, unsigned cat)
{
    for (int k = 0; k < PROF_NB; k++)
        if (r->bytes[k] && (cat == ENG_NCAT || prof_bytes_tab[k].cat == cat))
            json_put_u64(a, prof_bytes_tab[k].key, r->bytes[k]);
}

/* The superstep's spans, the first of a category with the figures of that category: tiles
 * active for OnTileExecute, the bytes it moves. */
static int trace_spans(tracer *t, const prof_rec *r, const char *name)
{
    profile *p = t->p;
    const eng_stat *cats = eng_cat_table();
    unsigned seen = 0; /* the categories whose first span is out */
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < r->nspans; k++) {
        const eng_span *s = &p->spans[r->span0 + k];
        json *a = json_obj();
        if (!(seen & 1u << s->cat)) {
            if (s->cat == ENG_CAT_COMPUTE)
                json_put_u64(a, "tiles_active", r->tiles);
            step_bytes(a, r, s->cat);
        }
        seen |= 1u << s->cat;
        rc = slice(t, r->ipu, 1 + s->cat, name, cats[s->cat].key, s->start, s->end, a);
    }
    return rc;
}

/* One superstep: its step slice, its spans, its tiles' contexts. */
static int trace_rec(tracer *t, const prof_rec *r, const char *name)
{
    profile *p = t->p;
    json *a = json_obj();
    json_put_u64(a, "step", r->index);
    json_put_u64(a, "tiles_active", r->tiles);
    step_bytes(a, r, ENG_NCAT);
    int rc = slice(t, r->ipu, 0, name, "step", r->start, r->end, a);
    if (rc == 0)
        rc = trace_spans(t, r, name);
    for (size_t k = 0; rc == 0 && k < r->ntile; k++) {
        const prof_tspan *s = &p->tspans[r->tile0 + k];
        a = json_obj();
        json_put_u64(a, "issue_cycles", s->busy);
        rc = slice(t, r->ipu, tile_tid(p, s->tile, s->ctx), name, s->ctx ? "worker" : "supervisor",
                   s->start, s->end, a);
    }
    return rc;
}

/* The boundaries of the window's unit, as instant events on IPU 0's step track. */
static void trace_marks(tracer *t)
{
    profile *p = t->p;
    for (int u = 0; u < PROFILE_NUNITS; u++)
        for (size_t k = 0; k < p->nmarks[u]; k++) {
            char name[64];
            snprintf(name, sizeof name, "%s %zu ends", prof_units[u].text, k);
            json *o = json_obj();
            json_put_str(o, "ph", "i");
            json_put_str(o, "s", "g");
            json_put_u64(o, "pid", 0);
            json_put_u64(o, "tid", 0);
            json_put_str(o, "name", name);
            json_put(o, "ts", us(mach_cycles_to_ps(t->m, p->marks[u][k])));
            emit(&p->trace, o);
            p->events++;
        }
}

/* The trace's opening, up to the events' array: the run, its clock and length, the window. */
static void trace_head(tracer *t, uint64_t cycles, const char *what)
{
    json *o = json_obj();
    json_put_str(o, "run", what);
    json_put_u64(o, "clock_hz", t->m->clock_hz);
    json_put_u64(o, "total_cycles", cycles);
    json_put_str(o, "window", t->p->o.window);
    txt_printf(
        &t->p->trace, "{\"displayTimeUnit\":\"ns\",\"otherData\":%s,\"traceEvents\":[",
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* The supersteps in the window, in time order over every IPU (each IPU's in its own order),
 * so a trace cut at the size bound stops at about the same cycle on every IPU. */
static int trace_recs(tracer *t, const prof_names *nm)
{
    profile *p = t->p;
    size_t n = 0;
    prof_order *o = xmalloc((p->nr ? p->nr : 1) * sizeof *o);
    for (size_t k = 0; k < p->nr; k++)
        if (prof_rec_in_window(p, &p->r[k]))
            o[n++] = (prof_order){p->r[k].start, p->r[k].ipu, k};
    qsort(o, n, sizeof *o, prof_by_time);
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        char name[160];
        const prof_rec *r = &p->r[o[k].k];
        rc = trace_rec(t, r, prof_step_name(nm, r, name, sizeof name));
    }
    free(o);
    return rc;
}

void prof_build_trace(profile *p, const eng *g, const prof_names *nm, const char *what)
{
    tracer t = {p, eng_machine(g), p->o.max_mb << 20};
    eng_stats st;
    eng_get_stats(g, &st);
    trace_head(&t, st.cycles, what);
    for (uint32_t i = 0; i < p->nipus; i++)
        tracks(p, &p->trace, i);
    trace_marks(&t);
    int rc = trace_recs(&t, nm);
    for (uint32_t i = 0; i < p->nipus && rc == 0; i++) {
        uint64_t finish = 0;
        for (size_t k = 0; k < p->nr; k++)
            finish = p->r[k].ipu == i ? p->r[k].end : finish;
        if (finish < st.cycles && prof_in_window(p, prof_nperiods(p, p->unit) - 1))
            rc = slice(&t, i, 1 + ENG_CAT_IDLE, "idle", "Idle", finish, st.cycles, NULL);
    }
    txt_printf(&p->trace, "\n]}\n");
}

/* ---- the summaries ---- */

typedef struct ipu_mem {
    uint64_t code, state, always, other, data, total;
    uint32_t peak, peak_tile;
} ipu_mem;

/* Tile memory: the compiled graph's split, or the image alone without one. */
static gr_tile_mem tile_mem(const eng *g, const gr_exe *x, uint32_t i, uint32_t t)
{
    if (x)
        return *gr_exe_tile(x, i, t);
    return (gr_tile_mem){.total = eng_tile_image(g, i, t)};
}

static void ipu_memory(const eng *g, const gr_exe *x, uint32_t i, ipu_mem *m)
{
    memset(m, 0, sizeof *m);
    for (uint32_t t = 0; t < eng_ntiles(g); t++) {
        gr_tile_mem tm = tile_mem(g, x, i, t);
        m->code += tm.code;
        m->state += tm.state;
        m->always += tm.always;
        m->other += tm.other;
        m->data += tm.data;
        m->total += tm.total;
        if (tm.total > m->peak) {
            m->peak = tm.total;
            m->peak_tile = t;
        }
    }
}

/* The text table's rows: a label, then a value per IPU. */
static void row_label(txt *b, const char *label)
{
    txt_printf(b, "  %-26s", label);
}

/* An IPU's counter of bytes k. */
static uint64_t ipu_bytes(const eng *g, uint32_t i, int k)
{
    eng_ipu_stats is;
    uint64_t v;
    eng_get_ipu_stats(g, i, &is);
    memcpy(&v, (const char *)&is + prof_bytes_tab[k].off, sizeof v);
    return v;
}

/* Whether some IPU has cycles in category c, or bytes k (the text summary shows only those). */
static int any_cat(const eng *g, unsigned c)
{
    for (uint32_t i = 0; i < eng_nipus(g); i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        if (is.cat[c])
            return 1;
    }
    return 0;
}

static int any_bytes(const eng *g, int k)
{
    for (uint32_t i = 0; i < eng_nipus(g); i++)
        if (ipu_bytes(g, i, k))
            return 1;
    return 0;
}

/* The head row and the time categories' rows, as % of the total cycles. */
static void exec_cats(profile *p, const eng *g, const eng_stats *st)
{
    const eng_stat *cats = eng_cat_table();
    txt *b = &p->summary;
    row_label(b, "Execution summary");
    for (uint32_t i = 0; i < p->nipus; i++)
        txt_printf(b, " %14s%u", "IPU ", i);
    txt_printf(b, "\n");
    row_label(b, "Total Cycles");
    for (uint32_t i = 0; i < p->nipus; i++)
        txt_printf(b, " %15llu", (unsigned long long)st->cycles);
    txt_printf(b, "\n");
    for (unsigned c = 0; c < ENG_NCAT; c++) {
        if (!any_cat(g, c))
            continue;
        row_label(b, cats[c].key);
        for (uint32_t i = 0; i < p->nipus; i++) {
            eng_ipu_stats is;
            eng_get_ipu_stats(g, i, &is);
            txt_printf(b, " %14.2f%%", st->cycles ? 100.0 * (double)is.cat[c] / st->cycles : 0.0);
        }
        txt_printf(b, "\n");
    }
}

static void exec_summary(profile *p, const eng *g, const eng_stats *st)
{
    txt *b = &p->summary;
    exec_cats(p, g, st);
    row_label(b, "Tile Balance");
    for (uint32_t i = 0; i < p->nipus; i++)
        txt_printf(b, " %14.2f%%", eng_tile_balance(g, i, 0).percent);
    txt_printf(b, "\n");
    for (int k = 0; k < PROF_NB; k++) {
        if (!any_bytes(g, k))
            continue;
        char label[48];
        snprintf(label, sizeof label, "%s (B)", prof_bytes_tab[k].label);
        row_label(b, label);
        for (uint32_t i = 0; i < p->nipus; i++)
            txt_printf(b, " %15llu", (unsigned long long)ipu_bytes(g, i, k));
        txt_printf(b, "\n");
    }
}

static const struct {
    const char *label, *key;
    size_t off; /* in ipu_mem */
} mem_tab[] = {
    {"code", "code", offsetof(ipu_mem, code)},
    {"vertex state", "vertex_state", offsetof(ipu_mem, state)},
    {"always-live data", "always_live", offsetof(ipu_mem, always)},
    {"not-always-live data", "not_always_live", offsetof(ipu_mem, other)},
    {"data after sharing", "data", offsetof(ipu_mem, data)},
    {"total", "total", offsetof(ipu_mem, total)},
};
enum { NMEM = sizeof mem_tab / sizeof mem_tab[0] };

static uint64_t mem_get(const ipu_mem *m, size_t k)
{
    uint64_t v;
    memcpy(&v, (const char *)m + mem_tab[k].off, sizeof v);
    return v;
}

/* The most loaded tiles over every IPU, largest first (ties: the first in (IPU, tile) order). */
static size_t top_tiles(const eng *g, const gr_exe *x, uint32_t *ti, uint32_t *tt)
{
    size_t n = 0;
    uint32_t v[PROF_TOP_TILES];
    for (uint32_t i = 0; i < eng_nipus(g); i++)
        for (uint32_t t = 0; t < eng_ntiles(g); t++) {
            uint32_t b = tile_mem(g, x, i, t).total;
            size_t pos = 0;
            while (pos < n && v[pos] >= b)
                pos++;
            if (b == 0 || pos == PROF_TOP_TILES)
                continue;
            n += n < PROF_TOP_TILES;
            for (size_t k = n - 1; k > pos; k--) {
                v[k] = v[k - 1];
                ti[k] = ti[k - 1];
                tt[k] = tt[k - 1];
            }
            v[pos] = b;
            ti[pos] = i;
            tt[pos] = t;
        }
    return n;
}

/* The memory table: a row per part, then each IPU's peak tile. */
static void mem_rows(profile *p, const eng *g, const gr_exe *x)
{
    txt *b = &p->summary;
    ipu_mem *m = xcalloc(p->nipus ? p->nipus : 1, sizeof *m);
    for (uint32_t i = 0; i < p->nipus; i++)
        ipu_memory(g, x, i, &m[i]);
    row_label(b, "Memory (B)");
    for (uint32_t i = 0; i < p->nipus; i++)
        txt_printf(b, " %14s%u", "IPU ", i);
    txt_printf(b, "\n");
    for (size_t k = 0; k < NMEM; k++) {
        if (!x && k + 1 < NMEM)
            continue;
        row_label(b, mem_tab[k].label);
        for (uint32_t i = 0; i < p->nipus; i++)
            txt_printf(b, " %15llu", (unsigned long long)mem_get(&m[i], k));
        txt_printf(b, "\n");
    }
    row_label(b, "peak tile");
    for (uint32_t i = 0; i < p->nipus; i++) {
        char s[40];
        snprintf(s, sizeof s, "%u (tile %u)", m[i].peak, m[i].peak_tile);
        txt_printf(b, " %15s", s);
    }
    free(m);
}

static void mem_summary(profile *p, const eng *g, const gr_exe *x)
{
    txt *b = &p->summary;
    mem_rows(p, g, x);
    txt_printf(b, "\n  most loaded tiles (of %u B):\n", eng_machine(g)->sram_bytes);
    uint32_t ti[PROF_TOP_TILES], tt[PROF_TOP_TILES];
    size_t n = top_tiles(g, x, ti, tt);
    for (size_t k = 0; k < n; k++) {
        gr_tile_mem tm = tile_mem(g, x, ti[k], tt[k]);
        txt_printf(b, "    ipu %u tile %-5u %7u B", ti[k], tt[k], tm.total);
        if (x)
            txt_printf(b,
                       ": code %u, vertex state %u, always-live %u, not-always-live %u "
                       "(live at peak %u)",
                       tm.code, tm.state, tm.always, tm.other, tm.data);
        txt_printf(b, "\n");
    }
}

/* The compute sets of IPU i from the records: each step name's supersteps and spans, and the
 * IPU's Idle cycles (csets.h). */
static void rec_csets(const profile *p, const eng *g, const prof_names *nm, uint32_t i,
                      cset_table *t)
{
    for (size_t k = 0; k < p->nr; k++) {
        const prof_rec *r = &p->r[k];
        if (r->ipu != i)
            continue;
        char name[160];
        cset_row *row = cset_row_of(t, prof_step_name(nm, r, name, sizeof name));
        row->supersteps++;
        for (size_t s = 0; s < r->nspans; s++) {
            const eng_span *sp = &p->spans[r->span0 + s];
            cset_add(row, 0, sp->cat, sp->end - sp->start);
        }
    }
    eng_ipu_stats is;
    eng_get_ipu_stats(g, i, &is);
    cset_add(cset_row_of(t, "idle"), 0, ENG_CAT_IDLE, is.cat[ENG_CAT_IDLE]);
    cset_sort(t);
}

/* summary.json's entry of IPU i. */
static json *json_ipu(const profile *p, const eng *g, const gr_exe *x, const prof_names *nm,
                      uint32_t i, uint64_t cycles)
{
    const eng_stat *cats = eng_cat_table();
    eng_ipu_stats is;
    eng_get_ipu_stats(g, i, &is);
    json *o = json_obj(), *c = json_obj(), *mem = json_obj();
    json_put_u64(o, "ipu", i);
    json_put_u64(o, "total_cycles", cycles);
    for (unsigned k = 0; k < ENG_NCAT; k++)
        json_put_u64(c, cats[k].key, is.cat[k]);
    json_put(o, "cycles", c);
    json_put_num(o, "tile_balance_percent", eng_tile_balance(g, i, 0).percent);
    for (int k = 0; k < PROF_NB; k++)
        json_put_u64(o, prof_bytes_tab[k].key, ipu_bytes(g, i, k));
    ipu_mem m;
    ipu_memory(g, x, i, &m);
    for (size_t k = 0; k < NMEM; k++)
        json_put_u64(mem, mem_tab[k].key, mem_get(&m, k));
    json_put_u64(mem, "peak_tile", m.peak_tile);
    json_put_u64(mem, "peak_tile_bytes", m.peak);
    json_put(o, "memory", mem);
    cset_table t = {0};
    rec_csets(p, g, nm, i, &t);
    json *sets = cset_json_ipu(&t, i);
    json_put(o, "compute_sets", json_object_get(json_at(sets, "sets")));
    json_object_put(sets);
    cset_free(&t);
    return o;
}

/* summary.json: the same figures, and each IPU's compute sets. */
static void json_summary(profile *p, const eng *g, const gr_exe *x, const prof_names *nm,
                         const eng_stats *st, const char *what)
{
    const mach *m = eng_machine(g);
    json *o = json_obj(), *ipus = json_arr(), *tr = json_obj();
    json_put_str(o, "run", what);
    json_put_str(o, "machine", m->name);
    json_put_u64(o, "clock_hz", m->clock_hz);
    json_put_u64(o, "nipus", p->nipus);
    json_put_u64(o, "tiles_per_ipu", p->ntile);
    json_put_u64(o, "sram_bytes", m->sram_bytes);
    json_put_u64(o, "total_cycles", st->cycles);
    for (uint32_t i = 0; i < p->nipus; i++)
        json_put(ipus, NULL, json_ipu(p, g, x, nm, i, st->cycles));
    json_put(o, "ipus", ipus);
    json_put_u64(tr, "events", p->events);
    json_put_u64(tr, "bytes", p->trace.len);
    json_put(tr, "truncated", json_object_new_boolean(p->truncated));
    json_put_str(tr, "window", p->o.window);
    json_put_u64(tr, "periods", prof_nperiods(p, p->unit));
    json_put_str(tr, "unit", prof_units[p->unit].key);
    json_put(o, "trace", tr);
    char *text = json_text(o);
    txt_put(&p->json, text);
    free(text);
    json_object_put(o);
}

void prof_build_summary(profile *p, const eng *g, const gr_exe *x, const prof_names *nm,
                        const char *what)
{
    eng_stats st;
    eng_get_stats(g, &st);
    exec_summary(p, g, &st);
    mem_summary(p, g, x);
    json_summary(p, g, x, nm, &st, what);
}

/* ---- the plots' data ---- */

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The cycles the timeline shows: the second device iteration (the first when there is one
 * only), else the window's first period; spans that cross its ends are cut there. */
static void plot_range(const profile *p, uint64_t *a, uint64_t *b)
{
    int u = p->nmarks[PROFILE_ITER] ? PROFILE_ITER : p->unit;
    size_t n = p->nmarks[u], k = 0;
    if (u == PROFILE_ITER)
        k = n >= 2 ? 1 : 0;
    else
        while (k < n && !prof_in_window(p, k))
            k++;
    *a = k ? p->marks[u][k - 1] : 0;
    *b = k < n ? p->marks[u][k] : UINT64_MAX;
}

/* timeline.csv: the spans of the range plot_range chooses, each with its step's name. */
static void timeline_csv(profile *p, const prof_names *nm)
{
    const eng_stat *cats = eng_cat_table();
    uint64_t a, b;
    plot_range(p, &a, &b);
    txt_printf(&p->timeline, "ipu,category,cat,start,end,step\n");
    for (size_t k = 0; k < p->nr; k++) {
        const prof_rec *r = &p->r[k];
        if (r->end <= a || r->start >= b)
            continue;
        char name[160];
        prof_step_name(nm, r, name, sizeof name);
        for (char *c = name; *c; c++)
            *c = *c == ',' ? ';' : *c;
        for (size_t s = 0; s < r->nspans; s++) {
            const eng_span *sp = &p->spans[r->span0 + s];
            uint64_t lo = clamp(sp->start, a, b), hi = clamp(sp->end, a, b);
            if (hi > lo)
                txt_printf(&p->timeline, "%u,%s,%u,%llu,%llu,%s\n", r->ipu, cats[sp->cat].key,
                           sp->cat, (unsigned long long)(lo - a), (unsigned long long)(hi - a),
                           name);
        }
    }
}

/* proportions.csv: each IPU's time split, % of the total cycles. */
static void props_csv(profile *p, const eng *g, const eng_stats *st)
{
    const eng_stat *cats = eng_cat_table();
    txt_printf(&p->props, "label");
    for (unsigned c = 0; c < ENG_NCAT; c++)
        txt_printf(&p->props, ",%s", cats[c].key);
    for (uint32_t i = 0; i < p->nipus; i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        txt_printf(&p->props, "\nIPU %u", i);
        for (unsigned c = 0; c < ENG_NCAT; c++)
            txt_printf(&p->props, ",%.4f",
                       st->cycles ? 100.0 * (double)is.cat[c] / st->cycles : 0.0);
    }
    txt_printf(&p->props, "\n");
}

/* tile_memory.csv: each IPU's tiles up to its last one in use, one after another. */
static void tilemem_csv(profile *p, const eng *g, const gr_exe *x)
{
    txt_printf(&p->tilemem,
               "ipu,tile,x,code,vertex_state,always_live,not_always_live,total,data\n");
    uint64_t col = 0;
    for (uint32_t i = 0; i < p->nipus; i++) {
        uint32_t used = 1;
        for (uint32_t t = 0; t < p->ntile; t++)
            used = tile_mem(g, x, i, t).total ? t + 1 : used;
        for (uint32_t t = 0; t < used; t++) {
            gr_tile_mem tm = tile_mem(g, x, i, t);
            txt_printf(&p->tilemem, "%u,%u,%llu,%u,%u,%u,%u,%u,%u\n", i, t,
                       (unsigned long long)col++, tm.code, tm.state, tm.always, tm.other, tm.total,
                       tm.data);
        }
    }
}

void prof_build_csv(profile *p, const eng *g, const gr_exe *x, const prof_names *nm)
{
    eng_stats st;
    eng_get_stats(g, &st);
    timeline_csv(p, nm);
    props_csv(p, g, &st);
    tilemem_csv(p, g, x);
}

/* ---- output ---- */

static const struct {
    const char *file;
    size_t off; /* the txt in profile */
} files[] = {
    {"trace.json", offsetof(profile, trace)},      {"summary.json", offsetof(profile, json)},
    {"summary.txt", offsetof(profile, summary)},   {"timeline.csv", offsetof(profile, timeline)},
    {"proportions.csv", offsetof(profile, props)}, {"tile_memory.csv", offsetof(profile, tilemem)},
};

/* The set, whole: into a directory staged beside the profile's, then put in its place in one
 * step (base/file.h), so the directory holds the old profile or the new one, never a mix. */
static int write_files(const profile *p, err *e)
{
    char *stage = file_dir_stage(p->o.dir, e);
    if (!stage)
        return e->status;
    int rc = 0;
    for (size_t k = 0; k < sizeof files / sizeof files[0] && rc == 0; k++) {
        const txt *t = (const txt *)((const char *)p + files[k].off);
        char *path = xmalloc(strlen(stage) + strlen(files[k].file) + 2);
        sprintf(path, "%s/%s", stage, files[k].file);
        rc = file_write_atomic(path, t->len ? txt_str(t) : "", t->len, e);
        free(path);
    }
    if (rc == 0)
        rc = file_dir_commit(stage, p->o.dir, e);
    if (rc)
        file_remove_tree(stage);
    free(stage);
    return rc;
}

/* A window given that names periods the run did not have: one line, ERR_INPUT (every rank
 * finds the same: the marks are the run's). */
static int window_past_run(const profile *p, err *e)
{
    if (!p->o.window_given || p->all)
        return 0;
    long n = (long)prof_nperiods(p, p->unit);
    const char *what = prof_units[p->unit].text;
    for (size_t k = 0; k < p->nwin; k++) {
        const prof_range *w = &p->win[k];
        long lo = w->lo < 0 ? n + w->lo : w->lo, hi = w->hi < 0 ? n + w->hi : w->hi;
        if (hi >= 0 && lo < n && lo <= hi)
            continue;
        char item[64];
        if (w->lo == w->hi)
            snprintf(item, sizeof item, "%ld", w->lo);
        else
            snprintf(item, sizeof item, "%ld..%ld", w->lo, w->hi);
        if (!p->nmarks[p->unit])
            return err_set(e, ERR_INPUT,
                           "--profile-window %s: %s names no period of the run, which marks no "
                           "%s: it is one period, 0 (or -1); no profile written",
                           p->o.window, item, what);
        return err_set(e, ERR_INPUT,
                       "--profile-window %s: %s names none of the run's %ld %ss (0..%ld, or "
                       "-%ld..-1 from the end); no profile written",
                       p->o.window, item, n, what, n - 1, n);
    }
    return 0;
}

int profile_write(profile *p, err *e)
{
    if (!p || !p->finished)
        return 0;
    if (window_past_run(p, e))
        return e->status;
    return rank_id(p->ranks) == 0 ? write_files(p, e) : 0;
}

void profile_report(const profile *p, txt *out)
{
    if (!p->finished)
        return;
    txt_put(out, txt_str(&p->summary));
    double kib = (double)p->trace.len / 1024;
    txt_printf(out, "  profile: %s/trace.json (%.1f %s, %zu events, ", p->o.dir,
               kib >= 1024 ? kib / 1024 : kib, kib >= 1024 ? "MiB" : "KiB", p->events);
    if (p->nmarks[p->unit])
        txt_printf(out, "window %s of %zu %ss", p->o.window, prof_nperiods(p, p->unit),
                   prof_units[p->unit].text);
    else
        txt_printf(out, "the whole run");
    txt_printf(out, "%s), summary.json, summary.txt; pictures: ipusim profile %s --plot\n",
               p->truncated ? ", cut at --profile-max-mb" : "", p->o.dir);
}
