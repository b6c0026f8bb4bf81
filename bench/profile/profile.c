/* profile: a run's profile as PopVision shows one, in files free tools open; this part
 * checks the options, records what the engine settles, gathers the ranks' records, keeps
 * the window and names the steps (the files: profile_out.c).
 *
 * Models nothing: it records what the engine settles (hw/engine.h, eng_watch.settled) and
 * writes it out. The trace has one process per IPU; its tracks are the program steps (one
 * slice per whole-IPU superstep, named after the step), one per PopVision category (the
 * superstep's spans, each named after its step) and, on request, one per context of chosen
 * tiles. Timestamps are simulated time in microseconds at the tile clock (picosecond
 * resolution); every slice carries its cycles. Left out: what happens inside a superstep
 * between the tiles (a step's tiles are counted, not drawn), a sync group's own supersteps
 * (I/O tiles: they show inside the IPU-wide superstep they overlap), and a worker's several
 * runs in one superstep (its track shows one slice as long as their issue cycles, ending
 * where it last exited). Under MPI ranks each rank records the supersteps of its own IPUs
 * and the records are gathered after the run, then kept in time order (each IPU's in its own
 * order), the order one process's records are sorted into too. */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/rank.h"
#include "base/text.h"
#include "bench/profile/profile_int.h"

const prof_bytes prof_bytes_tab[PROF_NB] = {
    {"do_exchange_bytes", "DoExchange rx", offsetof(eng_ipu_stats, xchg_bytes), ENG_CAT_EXCHANGE},
    {"global_exchange_tx_bytes", "GlobalExchange tx", offsetof(eng_ipu_stats, global_tx_bytes),
     ENG_CAT_GLOBAL},
    {"global_exchange_rx_bytes", "GlobalExchange rx", offsetof(eng_ipu_stats, global_rx_bytes),
     ENG_CAT_GLOBAL},
    {"stream_copy_rx_bytes", "StreamCopy rx", offsetof(eng_ipu_stats, host_in_bytes), ENG_CAT_MID},
    {"stream_copy_tx_bytes", "StreamCopy tx", offsetof(eng_ipu_stats, host_out_bytes), ENG_CAT_MID},
    {"remote_buffer_bytes", "remote buffers", offsetof(eng_ipu_stats, remote_bytes),
     ENG_CAT_REMOTE},
};

const prof_unit prof_units[PROFILE_NUNITS] = {{"calls", "host call"},
                                              {"iterations", "device iteration"}};

/* ---- options ---- */

void profile_opts_init(profile_opts *o)
{
    *o = (profile_opts){"profile", "calls:0,1,-1", 0, NULL, 64};
}

/* One item of a list: N or A..B (negative allowed when `neg`). 0, or -1. */
static int parse_item(const char *s, const char **end, int neg, prof_range *r)
{
    char *e;
    errno = 0;
    r->lo = strtol(s, &e, 10);
    if (e == s || errno || (!neg && r->lo < 0) || (*s == '+'))
        return -1;
    r->hi = r->lo;
    if (e[0] == '.' && e[1] == '.') {
        const char *t = e + 2;
        r->hi = strtol(t, &e, 10);
        if (e == t || errno || (!neg && r->hi < 0) || *t == '+')
            return -1;
        if ((r->lo < 0) == (r->hi < 0) && r->hi < r->lo)
            return -1;
    }
    *end = e;
    return 0;
}

/* A comma-separated list of items into r[0..max): their number, or -1. */
static long parse_list(const char *s, int neg, prof_range *r, size_t max)
{
    size_t n = 0;
    while (*s) {
        if (n == max || parse_item(s, &s, neg, &r[n++]) != 0)
            return -1;
        if (*s == ',' && s[1])
            s++;
        else if (*s)
            return -1;
    }
    return (long)n;
}

static int parse_window(profile *p, err *e)
{
    const char *s = p->o.window;
    p->unit = PROFILE_CALL;
    for (int u = 0; u < PROFILE_NUNITS; u++) {
        size_t n = strlen(prof_units[u].key);
        if (strncmp(s, prof_units[u].key, n) == 0 && s[n] == ':') {
            p->unit = u;
            s += n + 1;
        }
    }
    long n = strcmp(s, "all") == 0 ? 0 : parse_list(s, 1, p->win, PROF_MAX_RANGES);
    p->all = strcmp(s, "all") == 0;
    if (n < 0 || (n == 0 && !p->all))
        return err_set(e, ERR_INPUT,
                       "--profile-window: '%s' is not [calls:|iterations:] and a list of indices "
                       "and ranges A..B (at most %d), or all",
                       p->o.window, PROF_MAX_RANGES);
    p->nwin = (size_t)n;
    return 0;
}

static int parse_tiles(profile *p, const mach *m, err *e)
{
    if (!p->o.tiles)
        return 0;
    long n = parse_list(p->o.tiles, 0, p->tiles, PROF_MAX_TILES);
    if (n <= 0)
        return err_set(e, ERR_INPUT,
                       "--profile-tiles: '%s' is not a list of tiles and ranges A..B (at most %d)",
                       p->o.tiles, PROF_MAX_TILES);
    size_t count = 0;
    for (long k = 0; k < n; k++)
        count += (size_t)(p->tiles[k].hi - p->tiles[k].lo + 1);
    if (count > PROF_MAX_TILES)
        return err_set(e, ERR_INPUT, "--profile-tiles: '%s' names %zu tiles, at most %d",
                       p->o.tiles, count, PROF_MAX_TILES);
    p->ntiles = (size_t)n;
    for (long k = 0; k < n; k++) /* the list is in any order: its largest tile */
        if (p->tiles[k].hi >= (long)m->tiles_per_ipu)
            return err_set(e, ERR_INPUT,
                           "--profile-tiles %s: tile %ld does not exist (the run's %s IPUs have "
                           "tiles 0..%u)",
                           p->o.tiles, p->tiles[k].hi, m->name, m->tiles_per_ipu - 1);
    return 0;
}

/* What a profile directory may hold: the set profile_write writes and the pictures `ipusim
 * profile DIR --plot` adds (plots/profile.sh). */
static int profile_name(const char *name)
{
    static const char *const own[] = {"trace.json",      "summary.json",    "summary.txt",
                                      "timeline.csv",    "proportions.csv", "tile_memory.csv",
                                      "timeline.png",    "timeline.svg",    "proportions.png",
                                      "proportions.svg", "tile-memory.png", "tile-memory.svg"};
    for (size_t k = 0; k < sizeof own / sizeof own[0]; k++)
        if (strcmp(name, own[k]) == 0)
            return 1;
    return 0;
}

/* An existing directory holds only a profile's files. 0, or ERR_INPUT. */
static int only_profile_files(const char *dir, err *e)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    int rc = 0;
    while (rc == 0 && d && (ent = readdir(d)) != NULL)
        if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..") && !profile_name(ent->d_name))
            rc = err_set(e, ERR_INPUT,
                         "--profile-dir %s: holds '%s', which is not a profile's file: give a new "
                         "or empty directory, or a profile's",
                         dir, ent->d_name);
    if (d)
        closedir(d);
    return rc;
}

/* The directory is checked before the run: nothing is made until the set is written whole
 * (profile_write), which replaces an existing profile directory in one step. So an existing
 * DIR must be a profile's (only its files: replacing it loses nothing else), and a new one's
 * parent must take a directory. */
static int prepare_dir(const char *dir, err *e)
{
    struct stat st;
    if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
        return err_set(e, ERR_INPUT,
                       "--profile-dir %s: is a symbolic link: a profile is written whole in its "
                       "place, give the directory itself",
                       dir);
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return err_set(e, ERR_INPUT, "--profile-dir %s: is not a directory", dir);
        if (only_profile_files(dir, e))
            return e->status;
    }
    char *stage = file_dir_stage(dir, e); /* the parent takes a directory: try it */
    if (!stage) {
        char *why = xstrdup(e->msg);
        err_set(e, ERR_INPUT, "--profile-dir %s: %s", dir, why);
        free(why);
        return ERR_INPUT;
    }
    file_remove_tree(stage);
    free(stage);
    return 0;
}

int profile_new(const profile_opts *o, const mach *m, profile **out, err *e)
{
    *out = NULL;
    profile *p = xcalloc(1, sizeof *p);
    p->o = *o;
    int rc = parse_window(p, e);
    if (!rc)
        rc = parse_tiles(p, m, e);
    if (!rc && rank_launched_id() == 0) /* under mpirun, rank 0 writes the files */
        rc = prepare_dir(o->dir, e);
    if (rc) {
        profile_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void profile_free(profile *p)
{
    if (!p)
        return;
    free(p->r);
    free(p->spans);
    free(p->tspans);
    for (int u = 0; u < PROFILE_NUNITS; u++)
        free(p->marks[u]);
    free(p->last_bytes);
    free(p->busy);
    free(p->cbusy);
    txt *t[] = {&p->trace, &p->summary, &p->json, &p->timeline, &p->props, &p->tilemem};
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++)
        txt_free(t[k]);
    free(p);
}

/* ---- recording ---- */

void profile_mark(profile *p, int unit, uint64_t cycle)
{
    p->marks[unit] = xgrow(p->marks[unit], &p->mcap[unit], p->nmarks[unit] + 1, sizeof(uint64_t));
    p->marks[unit][p->nmarks[unit]++] = cycle;
}

/* The k-th chosen tile (ids in list prof_order), or UINT32_MAX past the last. */
uint32_t prof_chosen(const profile *p, size_t k)
{
    for (size_t r = 0; r < p->ntiles; r++) {
        size_t n = (size_t)(p->tiles[r].hi - p->tiles[r].lo + 1);
        if (k < n)
            return (uint32_t)(p->tiles[r].lo + (long)k);
        k -= n;
    }
    return UINT32_MAX;
}

static uint64_t tile_busy(const tile *x)
{
    uint64_t b = x->sup.busy;
    for (unsigned k = 0; k < ISA_NWORKERS; k++)
        b += x->wk[k].busy;
    return b;
}

/* The tiles of the IPU that issued since its last superstep. */
static uint32_t active_tiles(profile *p, const eng *g, uint32_t ipu)
{
    uint32_t n = 0;
    uint64_t *snap = p->busy + (size_t)ipu * p->ntile;
    for (uint32_t t = 0; t < p->ntile; t++) {
        const tile *x = eng_tile(g, ipu, t);
        if (!x->code)
            continue;
        uint64_t b = tile_busy(x);
        n += b != snap[t];
        snap[t] = b;
    }
    return n;
}

static void add_tspan(profile *p, prof_tspan s)
{
    p->tspans = xgrow(p->tspans, &p->tcap, p->ntspans + 1, sizeof *p->tspans);
    p->tspans[p->ntspans++] = s;
}

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The chosen tiles' contexts in this superstep: the supervisor from the release to its
 * arrival, each worker that issued as long as its issue cycles, ending at its last exit. */
static void tile_spans(profile *p, const eng *g, const eng_settled *s)
{
    for (size_t k = 0; prof_chosen(p, k) != UINT32_MAX; k++) {
        const tile *x = eng_tile(g, s->ipu, prof_chosen(p, k));
        if (!x || !x->code)
            continue;
        uint64_t *snap = p->cbusy[(size_t)s->ipu * PROF_MAX_TILES + k];
        uint64_t a = clamp(x->step_start, s->start, s->end), b = clamp(x->at, a, s->end);
        if (x->sup.busy != snap[0] && b > a)
            add_tspan(p, (prof_tspan){x->id, 0, a, b, x->sup.busy - snap[0]});
        snap[0] = x->sup.busy;
        for (unsigned w = 0; w < ISA_NWORKERS; w++) {
            uint64_t d = x->wk[w].busy - snap[1 + w];
            snap[1 + w] = x->wk[w].busy;
            uint64_t end = clamp(x->wk[w].t, s->start, s->end);
            uint64_t start = end - s->start > d ? end - d : s->start;
            if (d && end > start)
                add_tspan(p, (prof_tspan){x->id, (uint8_t)(1 + w), start, end, d});
        }
    }
}

static void first_seen(profile *p, const eng *g)
{
    p->nipus = eng_nipus(g);
    p->ntile = eng_ntiles(g);
    p->last_bytes = xcalloc(p->nipus, sizeof *p->last_bytes);
    p->busy = xcalloc((size_t)p->nipus * p->ntile, sizeof *p->busy);
    p->cbusy = xcalloc((size_t)p->nipus * PROF_MAX_TILES, sizeof *p->cbusy);
}

static void on_settled(void *ctx, const eng *g, const eng_settled *s)
{
    profile *p = ctx;
    if (!p->last_bytes)
        first_seen(p, g);
    p->r = xgrow(p->r, &p->rcap, p->nr + 1, sizeof *p->r);
    prof_rec *r = &p->r[p->nr++];
    *r = (prof_rec){.ipu = s->ipu,
                    .last = (uint32_t)s->last,
                    .index = s->index,
                    .start = s->start,
                    .end = s->end,
                    .span0 = p->nspans,
                    .nspans = s->nspans,
                    .tile0 = p->ntspans};
    p->spans = xgrow(p->spans, &p->scap, p->nspans + s->nspans, sizeof *p->spans);
    memcpy(p->spans + p->nspans, s->span, s->nspans * sizeof *s->span);
    p->nspans += s->nspans;
    eng_ipu_stats st;
    eng_get_ipu_stats(g, s->ipu, &st);
    for (int b = 0; b < PROF_NB; b++) {
        uint64_t v;
        memcpy(&v, (const char *)&st + prof_bytes_tab[b].off, sizeof v);
        r->bytes[b] = v - p->last_bytes[s->ipu][b];
        p->last_bytes[s->ipu][b] = v;
    }
    r->tiles = active_tiles(p, g, s->ipu);
    if (p->ntiles)
        tile_spans(p, g, s);
    r->ntile = p->ntspans - r->tile0;
}

void profile_attach(profile *p, eng_watch *w)
{
    if (!p)
        return;
    w->settled = on_settled;
    w->settled_ctx = p;
}

/* ---- several ranks: the records of every IPU from its owner ---- */

/* One record as it travels: the record, then its spans and its tile spans. */
static size_t rec_bytes(const profile *p, const prof_rec *r)
{
    (void)p;
    return sizeof *r + r->nspans * sizeof(eng_span) + r->ntile * sizeof(prof_tspan);
}

/* n bytes from src at q (none: src may be NULL); returns q + n. */
static uint8_t *put(uint8_t *q, const void *src, size_t n)
{
    if (n)
        memcpy(q, src, n);
    return q + n;
}

/* This rank's records of its own IPUs (another rank settles them too at an external sync,
 * without their tiles: those are dropped), packed. */
static uint8_t *pack_own(const profile *p, const eng *g, size_t *n)
{
    uint32_t lo, hi;
    eng_owned(g, &lo, &hi);
    *n = 0;
    for (size_t k = 0; k < p->nr; k++)
        *n += p->r[k].ipu >= lo && p->r[k].ipu < hi ? rec_bytes(p, &p->r[k]) : 0;
    uint8_t *buf = xmalloc(*n ? *n : 1), *q = buf;
    for (size_t k = 0; k < p->nr; k++) {
        const prof_rec *r = &p->r[k];
        if (r->ipu < lo || r->ipu >= hi)
            continue;
        q = put(q, r, sizeof *r);
        q = put(q, p->spans + r->span0, r->nspans * sizeof(eng_span));
        q = put(q, p->tspans + r->tile0, r->ntile * sizeof(prof_tspan));
    }
    return buf;
}

/* Every rank's own records, in rank order, in place of this rank's (a collective). */
static void gather(profile *p, const eng *g)
{
    size_t n, *counts = xmalloc(rank_size(p->ranks) * sizeof *counts);
    uint8_t *mine = pack_own(p, g, &n);
    uint8_t *all = rank_allgatherv(p->ranks, mine, n, counts), *q = all;
    free(mine);
    size_t total = 0;
    for (unsigned r = 0; r < rank_size(p->ranks); r++)
        total += counts[r];
    p->nr = p->nspans = p->ntspans = 0;
    for (const uint8_t *end = all + total; q < end;) {
        prof_rec r;
        memcpy(&r, q, sizeof r);
        q += sizeof r;
        r.span0 = p->nspans;
        r.tile0 = p->ntspans;
        p->spans = xgrow(p->spans, &p->scap, p->nspans + r.nspans + 1, sizeof *p->spans);
        memcpy(p->spans + p->nspans, q, r.nspans * sizeof(eng_span));
        p->nspans += r.nspans;
        q += r.nspans * sizeof(eng_span);
        p->tspans = xgrow(p->tspans, &p->tcap, p->ntspans + r.ntile + 1, sizeof *p->tspans);
        memcpy(p->tspans + p->ntspans, q, r.ntile * sizeof(prof_tspan));
        p->ntspans += r.ntile;
        q += r.ntile * sizeof(prof_tspan);
        p->r = xgrow(p->r, &p->rcap, p->nr + 1, sizeof *p->r);
        p->r[p->nr++] = r;
    }
    free(all);
    free(counts);
}

int prof_by_time(const void *a, const void *b)
{
    const prof_order *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->ipu != y->ipu)
        return x->ipu < y->ipu ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

/* The records in time order over every IPU, each IPU's in its own order: an order that does
 * not depend on how the IPUs' settling interleaved (one process, or the ranks gathered). */
static void sort_recs(profile *p)
{
    prof_order *o = xmalloc((p->nr ? p->nr : 1) * sizeof *o);
    for (size_t k = 0; k < p->nr; k++)
        o[k] = (prof_order){p->r[k].start, p->r[k].ipu, k};
    qsort(o, p->nr, sizeof *o, prof_by_time);
    prof_rec *r = xmalloc((p->nr ? p->nr : 1) * sizeof *r);
    for (size_t k = 0; k < p->nr; k++)
        r[k] = p->r[o[k].k];
    free(p->r);
    p->r = r;
    p->rcap = p->nr ? p->nr : 1;
    free(o);
}

/* Once, after the run (every rank, in the same prof_order): the records of every IPU, sorted. */
static void settle_recs(profile *p, const eng *g)
{
    if (p->gathered)
        return;
    p->gathered = 1;
    p->ranks = eng_ranks(g);
    if (rank_size(p->ranks) > 1)
        gather(p, g);
    sort_recs(p);
}

/* The whole-IPU supersteps recorded of IPU ipu. */
static size_t steps_of(const profile *p, uint32_t ipu)
{
    size_t n = 0;
    for (size_t k = 0; k < p->nr; k++)
        n += p->r[k].ipu == ipu && !p->r[k].last;
    return n;
}

size_t profile_steps(profile *p, const eng *g, uint32_t ipu)
{
    settle_recs(p, g);
    return steps_of(p, ipu);
}

uint64_t profile_step_start(profile *p, const eng *g, uint32_t ipu, size_t k)
{
    settle_recs(p, g);
    for (size_t x = 0; x < p->nr; x++)
        if (p->r[x].ipu == ipu && p->r[x].index == k)
            return p->r[x].start;
    return 0;
}

/* ---- the window ---- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The period of a superstep starting at `start`: the boundaries at or before it. */
static size_t period_of(const profile *p, int unit, uint64_t start)
{
    size_t lo = 0, hi = p->nmarks[unit];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->marks[unit][mid] <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t prof_nperiods(const profile *p, int unit)
{
    return p->nmarks[unit] + 1;
}

int prof_in_window(const profile *p, size_t period)
{
    if (p->all)
        return 1;
    long n = (long)prof_nperiods(p, p->unit);
    for (size_t k = 0; k < p->nwin; k++) {
        long lo = p->win[k].lo < 0 ? n + p->win[k].lo : p->win[k].lo;
        long hi = p->win[k].hi < 0 ? n + p->win[k].hi : p->win[k].hi;
        if ((long)period >= lo && (long)period <= hi)
            return 1;
    }
    return 0;
}

int prof_rec_in_window(const profile *p, const prof_rec *r)
{
    return prof_in_window(p, period_of(p, p->unit, r->start));
}

/* ---- naming the steps ---- */

static void names_build(prof_names *nm, const profile *p, const gr_exe *x)
{
    nm->n = xcalloc(p->nipus ? p->nipus : 1, sizeof *nm->n);
    nm->at = xcalloc(p->nipus ? p->nipus : 1, sizeof *nm->at);
    size_t total = 0;
    for (uint32_t i = 0; i < p->nipus; i++)
        total += steps_of(p, i);
    nm->st = xmalloc((total ? total : 1) * sizeof *nm->st);
    size_t off = 0;
    for (uint32_t i = 0; x && i < p->nipus; i++) {
        nm->at[i] = off;
        nm->n[i] = gr_exe_steps(x, i, nm->st + off, steps_of(p, i));
        off += nm->n[i];
    }
}

static void names_free(prof_names *nm)
{
    free(nm->st);
    free(nm->n);
    free(nm->at);
}

const char *prof_step_name(const prof_names *nm, const prof_rec *r, char *buf, size_t len)
{
    if (r->last)
        snprintf(buf, len, "end");
    else if (r->index >= nm->n[r->ipu])
        snprintf(buf, len, "superstep %llu", (unsigned long long)r->index);
    else
        gr_step_label(&nm->st[nm->at[r->ipu] + r->index], buf, len);
    return buf;
}

/* ---- the end of the run ---- */

void profile_finish(profile *p, const eng *g, const gr_exe *x, const char *what)
{
    if (p->finished)
        return;
    p->finished = 1;
    if (!p->last_bytes)
        first_seen(p, g);
    settle_recs(p, g);
    for (int u = 0; u < PROFILE_NUNITS; u++)
        if (p->nmarks[u])
            qsort(p->marks[u], p->nmarks[u], sizeof(uint64_t), cmp_u64);
    prof_names nm;
    names_build(&nm, p, x);
    prof_build_trace(p, g, &nm, what);
    prof_build_summary(p, g, x, &nm, what);
    prof_build_csv(p, g, x, &nm);
    names_free(&nm);
}

struct rank_comm *profile_ranks(const profile *p)
{
    return p->ranks;
}
