/* profile: a run's profile as PopVision shows one, in files free tools open.
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
#include "cli/profile.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/rank.h"
#include "base/text.h"
#include "cli/cli.h"
#include "hw/stats.h"
#include "hw/tile.h"

/* The bytes a superstep moved, from the engine's per-IPU counters (hw/stats.h). */
static const struct {
    const char *key; /* the slice's arg, the summary's key */
    const char *label;
    size_t off;   /* in eng_ipu_stats */
    unsigned cat; /* the category whose span moves them (its first in a step carries them) */
} bytes_tab[] = {
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
enum { NB = sizeof bytes_tab / sizeof bytes_tab[0] };

/* The window's units: as --profile-window names them, and in words. */
static const struct {
    const char *key, *text;
} units[PROFILE_NUNITS] = {{"calls", "host call"}, {"iterations", "device iteration"}};

enum { MAX_RANGES = 32, MAX_TILES = 64, TOP_TILES = 5, TID_TILES = 100 };

typedef struct rec { /* one settled superstep */
    uint32_t ipu, tiles, last;
    uint64_t index, start, end;
    size_t span0, nspans; /* into profile.spans */
    size_t tile0, ntile;  /* into profile.tspans */
    uint64_t bytes[NB];
} rec;

typedef struct tspan { /* a context of a chosen tile in one superstep */
    uint32_t tile;
    uint8_t ctx; /* 0 supervisor, 1..6 workers */
    uint64_t start, end, busy;
} tspan;

typedef struct range {
    long lo, hi;
} range;

struct profile {
    profile_opts o;
    int unit, all; /* the window: its unit, and every period */
    range win[MAX_RANGES];
    size_t nwin;
    range tiles[MAX_TILES];
    size_t ntiles;
    /* recorded */
    rec *r;
    size_t nr, rcap;
    eng_span *spans;
    size_t nspans, scap;
    tspan *tspans;
    size_t ntspans, tcap;
    uint64_t *marks[PROFILE_NUNITS];
    size_t nmarks[PROFILE_NUNITS], mcap[PROFILE_NUNITS];
    uint32_t nipus, ntile; /* of the engine, once seen */
    uint64_t (*last_bytes)[NB];
    uint64_t *busy;               /* per IPU and tile: its issue cycles so far */
    uint64_t (*cbusy)[TILE_NCTX]; /* per IPU and chosen tile: each context's */
    struct rank_comm *ranks;      /* the engine's (several ranks: gathered at the end) */
    int gathered;
    /* built by profile_finish */
    txt trace, summary, json, timeline, props, tilemem;
    size_t events;
    int truncated, finished;
};

/* ---- options ---- */

void profile_opts_init(profile_opts *o)
{
    *o = (profile_opts){0, "profile", "calls:0,1,-1", 0, NULL, 64, NULL};
}

int profile_opt(const char *cmd, int argc, char **argv, int *i, profile_opts *o)
{
    const char *a = argv[*i];
    if (strcmp(a, "--profile") == 0) {
        o->on = 1;
        return 0;
    }
    if (strncmp(a, "--profile-", 10) == 0 && !o->shaping)
        o->shaping = a;
    if (strcmp(a, "--profile-dir") == 0)
        return cli_value(cmd, argc, argv, i, &o->dir);
    if (strcmp(a, "--profile-window") == 0) {
        o->window_given = 1;
        return cli_value(cmd, argc, argv, i, &o->window);
    }
    if (strcmp(a, "--profile-tiles") == 0)
        return cli_value(cmd, argc, argv, i, &o->tiles);
    if (strcmp(a, "--profile-max-mb") == 0)
        return cli_opt_u64(cmd, argc, argv, i, 1, 1u << 20, &o->max_mb);
    return -1;
}

/* One item of a list: N or A..B (negative allowed when `neg`). 0, or -1. */
static int parse_item(const char *s, const char **end, int neg, range *r)
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
static long parse_list(const char *s, int neg, range *r, size_t max)
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

static int parse_window(const char *cmd, profile *p)
{
    const char *s = p->o.window;
    p->unit = PROFILE_CALL;
    for (int u = 0; u < PROFILE_NUNITS; u++) {
        size_t n = strlen(units[u].key);
        if (strncmp(s, units[u].key, n) == 0 && s[n] == ':') {
            p->unit = u;
            s += n + 1;
        }
    }
    long n = strcmp(s, "all") == 0 ? 0 : parse_list(s, 1, p->win, MAX_RANGES);
    p->all = strcmp(s, "all") == 0;
    if (n < 0 || (n == 0 && !p->all)) {
        fprintf(stderr,
                "ipusim %s: --profile-window: '%s' is not [calls:|iterations:] and a list of "
                "indices and ranges A..B (at most %d), or all\n",
                cmd, p->o.window, MAX_RANGES);
        return 2;
    }
    p->nwin = (size_t)n;
    return 0;
}

static int parse_tiles(const char *cmd, profile *p, const mach *m)
{
    if (!p->o.tiles)
        return 0;
    long n = parse_list(p->o.tiles, 0, p->tiles, MAX_TILES);
    if (n <= 0) {
        fprintf(stderr,
                "ipusim %s: --profile-tiles: '%s' is not a list of tiles and ranges A..B (at "
                "most %d)\n",
                cmd, p->o.tiles, MAX_TILES);
        return 2;
    }
    size_t count = 0;
    for (long k = 0; k < n; k++)
        count += (size_t)(p->tiles[k].hi - p->tiles[k].lo + 1);
    if (count > MAX_TILES) {
        fprintf(stderr, "ipusim %s: --profile-tiles: '%s' names %zu tiles, at most %d\n", cmd,
                p->o.tiles, count, MAX_TILES);
        return 2;
    }
    p->ntiles = (size_t)n;
    for (long k = 0; k < n; k++) /* the list is in any order: its largest tile */
        if (p->tiles[k].hi >= (long)m->tiles_per_ipu) {
            fprintf(stderr,
                    "ipusim %s: --profile-tiles %s: tile %ld does not exist (the run's %s IPUs "
                    "have tiles 0..%u)\n",
                    cmd, p->o.tiles, p->tiles[k].hi, m->name, m->tiles_per_ipu - 1);
            return 2;
        }
    return 0;
}

/* What a profile directory may hold: the set profile_done writes and the pictures `ipusim
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

/* --profile-dir is checked before the run: nothing is made until the set is written whole
 * (profile_done), which replaces an existing profile directory in one step. So an existing
 * DIR must be a profile's (only its files: replacing it loses nothing else), and a new one's
 * parent must take a directory. */
static int prepare_dir(const char *cmd, const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)) {
        fprintf(stderr,
                "ipusim %s: --profile-dir %s: is a symbolic link: a profile is written "
                "whole in its place, give the directory itself\n",
                cmd, dir);
        return 2;
    }
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "ipusim %s: --profile-dir %s: is not a directory\n", cmd, dir);
            return 2;
        }
        DIR *d = opendir(dir);
        struct dirent *ent;
        while (d && (ent = readdir(d)) != NULL)
            if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..") &&
                !profile_name(ent->d_name)) {
                fprintf(stderr,
                        "ipusim %s: --profile-dir %s: holds '%s', which is not a profile's file: "
                        "give a new or empty directory, or a profile's\n",
                        cmd, dir, ent->d_name);
                closedir(d);
                return 2;
            }
        if (d)
            closedir(d);
    }
    err e;
    err_clear(&e);
    char *stage = file_dir_stage(dir, &e); /* the parent takes a directory: try it */
    if (!stage) {
        fprintf(stderr, "ipusim %s: --profile-dir %s: %s\n", cmd, dir, e.msg);
        return 2;
    }
    file_remove_tree(stage);
    free(stage);
    return 0;
}

int profile_new(const char *cmd, const profile_opts *o, const mach *m, profile **out)
{
    *out = NULL;
    if (!o->on && o->shaping) {
        fprintf(stderr, "ipusim %s: %s shapes a profile: give --profile too\n", cmd, o->shaping);
        return 2;
    }
    if (!o->on)
        return 0;
    profile *p = xcalloc(1, sizeof *p);
    p->o = *o;
    int rc = parse_window(cmd, p);
    if (!rc)
        rc = parse_tiles(cmd, p, m);
    if (!rc && rank_launched_id() == 0) /* under mpirun, rank 0 writes the files */
        rc = prepare_dir(cmd, o->dir);
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

/* The k-th chosen tile (ids in list order), or UINT32_MAX past the last. */
static uint32_t chosen(const profile *p, size_t k)
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

static void add_tspan(profile *p, tspan s)
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
    for (size_t k = 0; chosen(p, k) != UINT32_MAX; k++) {
        const tile *x = eng_tile(g, s->ipu, chosen(p, k));
        if (!x || !x->code)
            continue;
        uint64_t *snap = p->cbusy[(size_t)s->ipu * MAX_TILES + k];
        uint64_t a = clamp(x->step_start, s->start, s->end), b = clamp(x->at, a, s->end);
        if (x->sup.busy != snap[0] && b > a)
            add_tspan(p, (tspan){x->id, 0, a, b, x->sup.busy - snap[0]});
        snap[0] = x->sup.busy;
        for (unsigned w = 0; w < ISA_NWORKERS; w++) {
            uint64_t d = x->wk[w].busy - snap[1 + w];
            snap[1 + w] = x->wk[w].busy;
            uint64_t end = clamp(x->wk[w].t, s->start, s->end);
            uint64_t start = end - s->start > d ? end - d : s->start;
            if (d && end > start)
                add_tspan(p, (tspan){x->id, (uint8_t)(1 + w), start, end, d});
        }
    }
}

static void first_seen(profile *p, const eng *g)
{
    p->nipus = eng_nipus(g);
    p->ntile = eng_ntiles(g);
    p->last_bytes = xcalloc(p->nipus, sizeof *p->last_bytes);
    p->busy = xcalloc((size_t)p->nipus * p->ntile, sizeof *p->busy);
    p->cbusy = xcalloc((size_t)p->nipus * MAX_TILES, sizeof *p->cbusy);
}

static void on_settled(void *ctx, const eng *g, const eng_settled *s)
{
    profile *p = ctx;
    if (!p->last_bytes)
        first_seen(p, g);
    p->r = xgrow(p->r, &p->rcap, p->nr + 1, sizeof *p->r);
    rec *r = &p->r[p->nr++];
    *r = (rec){.ipu = s->ipu,
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
    for (int b = 0; b < NB; b++) {
        uint64_t v;
        memcpy(&v, (const char *)&st + bytes_tab[b].off, sizeof v);
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
static size_t rec_bytes(const profile *p, const rec *r)
{
    (void)p;
    return sizeof *r + r->nspans * sizeof(eng_span) + r->ntile * sizeof(tspan);
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
        const rec *r = &p->r[k];
        if (r->ipu < lo || r->ipu >= hi)
            continue;
        q = put(q, r, sizeof *r);
        q = put(q, p->spans + r->span0, r->nspans * sizeof(eng_span));
        q = put(q, p->tspans + r->tile0, r->ntile * sizeof(tspan));
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
        rec r;
        memcpy(&r, q, sizeof r);
        q += sizeof r;
        r.span0 = p->nspans;
        r.tile0 = p->ntspans;
        p->spans = xgrow(p->spans, &p->scap, p->nspans + r.nspans + 1, sizeof *p->spans);
        memcpy(p->spans + p->nspans, q, r.nspans * sizeof(eng_span));
        p->nspans += r.nspans;
        q += r.nspans * sizeof(eng_span);
        p->tspans = xgrow(p->tspans, &p->tcap, p->ntspans + r.ntile + 1, sizeof *p->tspans);
        memcpy(p->tspans + p->ntspans, q, r.ntile * sizeof(tspan));
        p->ntspans += r.ntile;
        q += r.ntile * sizeof(tspan);
        p->r = xgrow(p->r, &p->rcap, p->nr + 1, sizeof *p->r);
        p->r[p->nr++] = r;
    }
    free(all);
    free(counts);
}

typedef struct order {
    uint64_t start;
    uint32_t ipu;
    size_t k; /* the record */
} order;

static int by_time(const void *a, const void *b)
{
    const order *x = a, *y = b;
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
    order *o = xmalloc((p->nr ? p->nr : 1) * sizeof *o);
    for (size_t k = 0; k < p->nr; k++)
        o[k] = (order){p->r[k].start, p->r[k].ipu, k};
    qsort(o, p->nr, sizeof *o, by_time);
    rec *r = xmalloc((p->nr ? p->nr : 1) * sizeof *r);
    for (size_t k = 0; k < p->nr; k++)
        r[k] = p->r[o[k].k];
    free(p->r);
    p->r = r;
    p->rcap = p->nr ? p->nr : 1;
    free(o);
}

/* Once, after the run (every rank, in the same order): the records of every IPU, sorted. */
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

static size_t nperiods(const profile *p, int unit)
{
    return p->nmarks[unit] + 1;
}

static int in_window(const profile *p, size_t period)
{
    if (p->all)
        return 1;
    long n = (long)nperiods(p, p->unit);
    for (size_t k = 0; k < p->nwin; k++) {
        long lo = p->win[k].lo < 0 ? n + p->win[k].lo : p->win[k].lo;
        long hi = p->win[k].hi < 0 ? n + p->win[k].hi : p->win[k].hi;
        if ((long)period >= lo && (long)period <= hi)
            return 1;
    }
    return 0;
}

static int rec_in_window(const profile *p, const rec *r)
{
    return in_window(p, period_of(p, p->unit, r->start));
}

/* ---- naming the steps ---- */

typedef struct names {
    gr_step *st; /* per IPU, the steps */
    size_t *n;   /* per IPU, how many */
    size_t *at;  /* per IPU, where its steps begin in st */
} names;

static void names_build(names *nm, const profile *p, const gr_exe *x)
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

static void names_free(names *nm)
{
    free(nm->st);
    free(nm->n);
    free(nm->at);
}

/* The step's name: the compute set of an execute, else what it does and to what. */
static const char *step_name(const names *nm, const rec *r, char *buf, size_t len)
{
    if (r->last) {
        snprintf(buf, len, "end");
    } else if (r->index >= nm->n[r->ipu]) {
        snprintf(buf, len, "superstep %llu", (unsigned long long)r->index);
    } else {
        const gr_step *s = &nm->st[nm->at[r->ipu] + r->index];
        if (strcmp(s->what, "execute") == 0)
            snprintf(buf, len, "%s", s->name);
        else if (s->round)
            snprintf(buf, len, "%s %s (round %u/%u)", s->what, s->name, s->round, s->rounds);
        else
            snprintf(buf, len, "%s %s", s->what, s->name);
    }
    return buf;
}

/* ---- the trace ---- */

/* A JSON string's inside. */
static void jstr(txt *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            txt_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            txt_printf(b, "\\u%04x", (unsigned)(unsigned char)*s);
        else
            txt_printf(b, "%c", *s);
    }
}

/* Picoseconds as microseconds with six decimals (integer arithmetic: exact). */
static void us(txt *b, uint64_t ps)
{
    txt_printf(b, "%llu.%06llu", (unsigned long long)(ps / 1000000),
               (unsigned long long)(ps % 1000000));
}

typedef struct tracer {
    profile *p;
    const mach *m;
    uint64_t limit; /* bytes */
} tracer;

/* A complete event ("X") [a, b) in cycles on (pid, tid); args (without braces) follow the
 * cycles. Returns 0, or -1 when the size bound is reached (nothing written). */
static int slice(tracer *t, uint32_t pid, uint32_t tid, const char *name, const char *cat,
                 uint64_t a, uint64_t b, const char *args)
{
    profile *p = t->p;
    if (p->trace.len > t->limit) {
        p->truncated = 1;
        return -1;
    }
    uint64_t pa = mach_cycles_to_ps(t->m, a), pb = mach_cycles_to_ps(t->m, b);
    txt_printf(&p->trace, ",\n{\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"name\":\"", pid, tid);
    jstr(&p->trace, name);
    txt_printf(&p->trace, "\",\"cat\":\"%s\",\"ts\":", cat);
    us(&p->trace, pa);
    txt_printf(&p->trace, ",\"dur\":");
    us(&p->trace, pb - pa);
    txt_printf(&p->trace, ",\"args\":{\"cycles\":%llu,\"start_cycle\":%llu%s%s}}",
               (unsigned long long)(b - a), (unsigned long long)a, *args ? "," : "", args);
    p->events++;
    return 0;
}

static void meta(txt *b, const char *what, uint32_t pid, long tid, const char *name, long sort)
{
    if (tid < 0) {
        txt_printf(b, "%s\n{", pid ? "," : "");
        txt_printf(b,
                   "\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"name\":\"%s_name\",\"args\":{\"name\":\"",
                   pid, what);
        jstr(b, name);
        txt_printf(b,
                   "\"}},\n{\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"name\":\"%s_sort_index\",\"args\":"
                   "{\"sort_index\":%ld}}",
                   pid, what, sort);
        return;
    }
    txt_printf(b,
               ",\n{\"ph\":\"M\",\"pid\":%u,\"tid\":%ld,\"name\":\"%s_name\",\"args\":{\"name\":\"",
               pid, tid, what);
    jstr(b, name);
    txt_printf(b,
               "\"}},\n{\"ph\":\"M\",\"pid\":%u,\"tid\":%ld,\"name\":\"%s_sort_index\",\"args\":"
               "{\"sort_index\":%ld}}",
               pid, tid, what, sort);
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
    for (size_t k = 0; chosen(p, k) != UINT32_MAX; k++)
        for (unsigned c = 0; c < TILE_NCTX; c++) {
            if (c)
                snprintf(name, sizeof name, "tile %u worker %u", chosen(p, k), c - 1);
            else
                snprintf(name, sizeof name, "tile %u supervisor", chosen(p, k));
            long tid = TID_TILES + (long)(k * TILE_NCTX + c);
            meta(b, "thread", i, tid, name, tid);
        }
}

/* The tid of a chosen tile's context. */
static uint32_t tile_tid(const profile *p, uint32_t tile, unsigned ctx)
{
    size_t k = 0;
    while (chosen(p, k) != tile)
        k++;
    return TID_TILES + (uint32_t)(k * TILE_NCTX + ctx);
}

/* ",KEY":N for the bytes the superstep moved (of category cat's, or all: ENG_NCAT), each
 * after a comma unless first in a. */
static void step_bytes(txt *a, const rec *r, unsigned cat)
{
    for (int k = 0; k < NB; k++)
        if (r->bytes[k] && (cat == ENG_NCAT || bytes_tab[k].cat == cat))
            txt_printf(a, "%s\"%s\":%llu", a->len ? "," : "", bytes_tab[k].key,
                       (unsigned long long)r->bytes[k]);
}

/* One superstep: its step slice, its spans (the first of a category with the figures of that
 * category: tiles active for OnTileExecute, the bytes it moves), its tiles' contexts. */
static int trace_rec(tracer *t, const rec *r, const char *name)
{
    profile *p = t->p;
    const eng_stat *cats = eng_cat_table();
    txt a = {0};
    txt_printf(&a, "\"step\":%llu,\"tiles_active\":%u", (unsigned long long)r->index, r->tiles);
    step_bytes(&a, r, ENG_NCAT);
    int rc = slice(t, r->ipu, 0, name, "step", r->start, r->end, txt_str(&a));
    unsigned seen = 0; /* the categories whose first span is out */
    for (size_t k = 0; rc == 0 && k < r->nspans; k++) {
        const eng_span *s = &p->spans[r->span0 + k];
        txt_free(&a);
        if (!(seen & 1u << s->cat)) {
            if (s->cat == ENG_CAT_COMPUTE)
                txt_printf(&a, "\"tiles_active\":%u", r->tiles);
            step_bytes(&a, r, s->cat);
        }
        seen |= 1u << s->cat;
        rc = slice(t, r->ipu, 1 + s->cat, name, cats[s->cat].key, s->start, s->end,
                   a.len ? txt_str(&a) : "");
    }
    txt_free(&a);
    for (size_t k = 0; rc == 0 && k < r->ntile; k++) {
        const tspan *s = &p->tspans[r->tile0 + k];
        char args[48];
        snprintf(args, sizeof args, "\"issue_cycles\":%llu", (unsigned long long)s->busy);
        rc = slice(t, r->ipu, tile_tid(p, s->tile, s->ctx), name, s->ctx ? "worker" : "supervisor",
                   s->start, s->end, args);
    }
    return rc;
}

/* The boundaries of the window's unit, as instant events on IPU 0's step track. */
static void trace_marks(tracer *t)
{
    profile *p = t->p;
    for (int u = 0; u < PROFILE_NUNITS; u++)
        for (size_t k = 0; k < p->nmarks[u]; k++) {
            txt_printf(&p->trace,
                       ",\n{\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"name\":\"%s "
                       "%zu ends\",\"ts\":",
                       units[u].text, k);
            us(&p->trace, mach_cycles_to_ps(t->m, p->marks[u][k]));
            txt_printf(&p->trace, "}");
            p->events++;
        }
}

static void build_trace(profile *p, const eng *g, const names *nm, const char *what)
{
    tracer t = {p, eng_machine(g), p->o.max_mb << 20};
    eng_stats st;
    eng_get_stats(g, &st);
    txt_printf(&p->trace, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"run\":\"");
    jstr(&p->trace, what);
    txt_printf(&p->trace, "\",\"clock_hz\":%llu,\"total_cycles\":%llu,\"window\":\"",
               (unsigned long long)t.m->clock_hz, (unsigned long long)st.cycles);
    jstr(&p->trace, p->o.window);
    txt_printf(&p->trace, "\"},\"traceEvents\":[");
    for (uint32_t i = 0; i < p->nipus; i++)
        tracks(p, &p->trace, i);
    trace_marks(&t);
    /* the supersteps in time order over every IPU (each IPU's in its own order), so a trace
     * cut at the size bound stops at about the same cycle on every IPU */
    size_t n = 0;
    order *o = xmalloc((p->nr ? p->nr : 1) * sizeof *o);
    for (size_t k = 0; k < p->nr; k++)
        if (rec_in_window(p, &p->r[k]))
            o[n++] = (order){p->r[k].start, p->r[k].ipu, k};
    qsort(o, n, sizeof *o, by_time);
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        char name[160];
        const rec *r = &p->r[o[k].k];
        rc = trace_rec(&t, r, step_name(nm, r, name, sizeof name));
    }
    free(o);
    for (uint32_t i = 0; i < p->nipus && rc == 0; i++) {
        uint64_t finish = 0;
        for (size_t k = 0; k < p->nr; k++)
            finish = p->r[k].ipu == i ? p->r[k].end : finish;
        if (finish < st.cycles && in_window(p, nperiods(p, p->unit) - 1))
            rc = slice(&t, i, 1 + ENG_CAT_IDLE, "idle", "Idle", finish, st.cycles, "");
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
    memcpy(&v, (const char *)&is + bytes_tab[k].off, sizeof v);
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

static void exec_summary(profile *p, const eng *g, const eng_stats *st)
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
    row_label(b, "Tile Balance");
    for (uint32_t i = 0; i < p->nipus; i++)
        txt_printf(b, " %14.2f%%", cli_tile_balance(g, i, 0).percent);
    txt_printf(b, "\n");
    for (int k = 0; k < NB; k++) {
        if (!any_bytes(g, k))
            continue;
        char label[48];
        snprintf(label, sizeof label, "%s (B)", bytes_tab[k].label);
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
    uint32_t v[TOP_TILES];
    for (uint32_t i = 0; i < eng_nipus(g); i++)
        for (uint32_t t = 0; t < eng_ntiles(g); t++) {
            uint32_t b = tile_mem(g, x, i, t).total;
            size_t pos = 0;
            while (pos < n && v[pos] >= b)
                pos++;
            if (b == 0 || pos == TOP_TILES)
                continue;
            n += n < TOP_TILES;
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

static void mem_summary(profile *p, const eng *g, const gr_exe *x)
{
    txt *b = &p->summary;
    ipu_mem *m = xcalloc(p->nipus, sizeof *m);
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
    txt_printf(b, "\n  most loaded tiles (of %u B):\n", eng_machine(g)->sram_bytes);
    uint32_t ti[TOP_TILES], tt[TOP_TILES];
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
    free(m);
}

/* summary.json: the same figures. */
static void json_summary(profile *p, const eng *g, const gr_exe *x, const eng_stats *st,
                         const char *what)
{
    txt *b = &p->json;
    const eng_stat *cats = eng_cat_table();
    txt_printf(b, "{\n  \"run\": \"");
    jstr(b, what);
    txt_printf(b,
               "\",\n  \"machine\": \"%s\",\n  \"clock_hz\": %llu,\n  \"nipus\": %u,\n"
               "  \"tiles_per_ipu\": %u,\n  \"sram_bytes\": %u,\n  \"total_cycles\": %llu,\n"
               "  \"ipus\": [",
               eng_machine(g)->name, (unsigned long long)eng_machine(g)->clock_hz, p->nipus,
               p->ntile, eng_machine(g)->sram_bytes, (unsigned long long)st->cycles);
    for (uint32_t i = 0; i < p->nipus; i++) {
        eng_ipu_stats is;
        eng_get_ipu_stats(g, i, &is);
        txt_printf(b, "%s\n    {\"ipu\": %u, \"total_cycles\": %llu, \"cycles\": {", i ? "," : "",
                   i, (unsigned long long)st->cycles);
        for (unsigned c = 0; c < ENG_NCAT; c++)
            txt_printf(b, "%s\"%s\": %llu", c ? ", " : "", cats[c].key,
                       (unsigned long long)is.cat[c]);
        txt_printf(b, "},\n     \"tile_balance_percent\": %.4f", cli_tile_balance(g, i, 0).percent);
        for (int k = 0; k < NB; k++)
            txt_printf(b, ", \"%s\": %llu", bytes_tab[k].key,
                       (unsigned long long)ipu_bytes(g, i, k));
        ipu_mem m;
        ipu_memory(g, x, i, &m);
        txt_printf(b, ",\n     \"memory\": {");
        for (size_t k = 0; k < NMEM; k++)
            txt_printf(b, "\"%s\": %llu, ", mem_tab[k].key, (unsigned long long)mem_get(&m, k));
        txt_printf(b, "\"peak_tile\": %u, \"peak_tile_bytes\": %u}}", m.peak_tile, m.peak);
    }
    txt_printf(b,
               "\n  ],\n  \"trace\": {\"events\": %zu, \"bytes\": %zu, \"truncated\": %s, "
               "\"window\": \"",
               p->events, p->trace.len, p->truncated ? "true" : "false");
    jstr(b, p->o.window);
    txt_printf(b, "\", \"periods\": %zu, \"unit\": \"%s\"}\n}\n", nperiods(p, p->unit),
               units[p->unit].key);
}

/* ---- the plots' data ---- */

/* The cycles the timeline shows: the second device iteration (the first when there is one
 * only), else the window's first period; spans that cross its ends are cut there. */
static void plot_range(const profile *p, uint64_t *a, uint64_t *b)
{
    int u = p->nmarks[PROFILE_ITER] ? PROFILE_ITER : p->unit;
    size_t n = p->nmarks[u], k = 0;
    if (u == PROFILE_ITER)
        k = n >= 2 ? 1 : 0;
    else
        while (k < n && !in_window(p, k))
            k++;
    *a = k ? p->marks[u][k - 1] : 0;
    *b = k < n ? p->marks[u][k] : UINT64_MAX;
}

static void build_csv(profile *p, const eng *g, const gr_exe *x, const names *nm,
                      const eng_stats *st)
{
    const eng_stat *cats = eng_cat_table();
    uint64_t a, b;
    plot_range(p, &a, &b);
    txt_printf(&p->timeline, "ipu,category,cat,start,end,step\n");
    for (size_t k = 0; k < p->nr; k++) {
        const rec *r = &p->r[k];
        if (r->end <= a || r->start >= b)
            continue;
        char name[160];
        step_name(nm, r, name, sizeof name);
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
    txt_printf(&p->tilemem,
               "ipu,tile,x,code,vertex_state,always_live,not_always_live,total,data\n");
    uint64_t col = 0; /* each IPU's tiles up to its last one in use, one after another */
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
    eng_stats st;
    eng_get_stats(g, &st);
    names nm;
    names_build(&nm, p, x);
    build_trace(p, g, &nm, what);
    exec_summary(p, g, &st);
    mem_summary(p, g, x);
    json_summary(p, g, x, &st, what);
    build_csv(p, g, x, &nm, &st);
    names_free(&nm);
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

/* The set, whole: into a directory staged beside --profile-dir, then put in its place in one
 * step (base/file.h), so the directory holds the old profile or the new one, never a mix. */
static int write_files(const profile *p, const char *cmd)
{
    err e;
    err_clear(&e);
    char *stage = file_dir_stage(p->o.dir, &e);
    if (!stage)
        return cli_report_err(cmd, &e);
    int rc = 0;
    for (size_t k = 0; k < sizeof files / sizeof files[0] && rc == 0; k++) {
        const txt *t = (const txt *)((const char *)p + files[k].off);
        char *path = xmalloc(strlen(stage) + strlen(files[k].file) + 2);
        sprintf(path, "%s/%s", stage, files[k].file);
        rc = cli_write_file(cmd, path, t->len ? txt_str(t) : "", t->len);
        free(path);
    }
    if (rc == 0 && file_dir_commit(stage, p->o.dir, &e) != ERR_OK)
        rc = cli_report_err(cmd, &e);
    if (rc)
        file_remove_tree(stage);
    free(stage);
    return rc;
}

/* A window given that names periods the run did not have: one line, 2 (every rank finds the
 * same: the marks are the run's). */
static int window_past_run(const profile *p, const char *cmd)
{
    if (!p->o.window_given || p->all)
        return 0;
    long n = (long)nperiods(p, p->unit);
    const char *what = units[p->unit].text;
    for (size_t k = 0; k < p->nwin; k++) {
        const range *w = &p->win[k];
        long lo = w->lo < 0 ? n + w->lo : w->lo, hi = w->hi < 0 ? n + w->hi : w->hi;
        if (hi >= 0 && lo < n && lo <= hi)
            continue;
        char item[64];
        if (w->lo == w->hi)
            snprintf(item, sizeof item, "%ld", w->lo);
        else
            snprintf(item, sizeof item, "%ld..%ld", w->lo, w->hi);
        if (!p->nmarks[p->unit])
            fprintf(stderr,
                    "ipusim %s: --profile-window %s: %s names no period of the run, which marks "
                    "no %s: it is one period, 0 (or -1); no profile written\n",
                    cmd, p->o.window, item, what);
        else
            fprintf(stderr,
                    "ipusim %s: --profile-window %s: %s names none of the run's %ld %ss (0..%ld, "
                    "or -%ld..-1 from the end); no profile written\n",
                    cmd, p->o.window, item, n, what, n - 1, n);
        return 2;
    }
    return 0;
}

int profile_done(profile *p, const char *cmd, FILE *f)
{
    if (!p || !p->finished)
        return 0;
    if (window_past_run(p, cmd))
        return 2;
    int rc = rank_id(p->ranks) == 0 ? write_files(p, cmd) : 0;
    if (rank_size(p->ranks) > 1) /* rank 0 wrote them: every rank stops if it failed */
        rc = cli_ranks_agree(p->ranks, cmd, rc);
    if (rc)
        return rc;
    fputs(txt_str(&p->summary), f);
    double kib = (double)p->trace.len / 1024;
    fprintf(f, "  profile: %s/trace.json (%.1f %s, %zu events, ", p->o.dir,
            kib >= 1024 ? kib / 1024 : kib, kib >= 1024 ? "MiB" : "KiB", p->events);
    if (p->nmarks[p->unit])
        fprintf(f, "window %s of %zu %ss", p->o.window, nperiods(p, p->unit), units[p->unit].text);
    else
        fprintf(f, "the whole run");
    fprintf(f, "%s), summary.json, summary.txt; pictures: ipusim profile %s --plot\n",
            p->truncated ? ", cut at --profile-max-mb" : "", p->o.dir);
    return 0;
}
