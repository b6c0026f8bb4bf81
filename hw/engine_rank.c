/* engine_rank: the BSP engine spread over several ranks (processes, base/rank.h).
 *
 * Each rank owns a contiguous run of IPUs (whole boxes where the machine has them, so a
 * box's links stay inside one rank; whole host-link groups when a host is attached, so a
 * link's bookings are made by one rank in one process's order) and steps only their tiles;
 * supersteps inside an IPU, its internal syncs, sync groups and host copies stay local. When
 * a rank's own IPUs can go no further alone, its status meets every other rank's in one
 * allgather: per IPU its classification (done, waiting at which external zone, latest
 * arrival), and per rank its first error. Every rank then makes the same decision from the
 * same bytes: an error (the earliest by superstep, cycle, then rank), the end of the run, an
 * external release (with the host: the latest end of any rank's copies), or a deadlock; an
 * error's meeting also records where one process would have stopped (eng_fault_stop), for
 * a second run that stops there (eng_stop_at, carried out by engine.c's loop). At
 * the end every IPU's statistics and sync log travel from its owner to every rank, so any
 * rank can report them. Left out: tile memory and state of the IPUs a rank does not own are
 * still allocated on it (never stepped; a deadlock report brings their tiles' sync states
 * over first), and the host's own state (streams, remote buffers) stays with each rank. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"
#include "base/rank.h"
#include "hw/engine_int.h"

/* Rank r of `size` takes units [ceil(n r / size), ceil(n (r + 1) / size)) of n: as even as
 * they go, the first ranks taking the extra ones (and every unit while n < size). */
static uint32_t first_unit(uint64_t n, unsigned r, unsigned size)
{
    return (uint32_t)((n * r + size - 1) / size);
}

void eng_rank_share(const mach *m, uint32_t nipus, int whole_links, unsigned id, unsigned size,
                    uint32_t *lo, uint32_t *hi)
{
    uint32_t unit = m->ipus_per_box && nipus % m->ipus_per_box == 0 ? m->ipus_per_box : 1;
    uint32_t least = whole_links && m->host_link_ipus ? m->host_link_ipus : 1;
    if (nipus / unit < size || unit % least) /* fewer boxes than ranks: smaller units */
        unit = least;
    uint64_t units = (nipus + unit - 1) / unit; /* the last group may be short */
    *lo = (uint32_t)min_u64((uint64_t)first_unit(units, id, size) * unit, nipus);
    *hi = (uint32_t)min_u64((uint64_t)first_unit(units, id + 1, size) * unit, nipus);
}

void eng_owned(const eng *g, uint32_t *lo, uint32_t *hi)
{
    *lo = g->lo;
    *hi = g->hi;
}

void eng_owned_by(const eng *g, unsigned r, uint32_t *lo, uint32_t *hi)
{
    eng_rank_share(&g->m, g->nipus, g->cfg.whole_host_links, r, rank_size(g->ranks), lo, hi);
}

struct rank_comm *eng_ranks(const eng *g)
{
    return g->ranks;
}

struct pool *eng_pool(const eng *g)
{
    return g->pool;
}

int eng_fault_stop(const eng *g, eng_stop *at)
{
    *at = g->fault;
    return at->cycle != UINT64_MAX;
}

void eng_stop_at(eng *g, const eng_stop *at)
{
    g->stop = *at;
}

/* What one rank brings to a meeting: its first error, then per IPU (its own filled) the
 * classification and whether it is done. */
typedef struct meet_head {
    int32_t rc;
    uint32_t pad;
    /* the error's superstep start (or, found settling, the cycle of the releases whose
     * rounds it followed) and its cycle (UINT64_MAX: not a tile's; both: no superstep's) */
    uint64_t at[2];
    uint32_t first[2]; /* a superstep fault's tile (ipu, tile): the meeting names the others */
    char msg[ERR_MSG_MAX];
} meet_head;

int eng_rank_agree(eng *g, int rc, uint64_t *v, err *e)
{
    unsigned size = rank_size(g->ranks);
    meet_head mine, *all = xmalloc(size * sizeof *all);
    memset(&mine, 0, sizeof mine);
    mine.rc = rc;
    mine.at[0] = *v;
    if (rc != ERR_OK)
        memcpy(mine.msg, e->msg, sizeof mine.msg);
    rank_allgather(g->ranks, &mine, sizeof mine, all);
    rc = ERR_OK;
    for (unsigned r = 0; r < size && rc == ERR_OK; r++) {
        if (all[r].rc != ERR_OK)
            rc = err_set(e, all[r].rc, "%s", all[r].msg);
        *v = max_u64(*v, all[r].at[0]);
    }
    free(all);
    return rc;
}

static size_t meet_bytes(const eng *g)
{
    return sizeof(meet_head) + (size_t)g->nipus * (sizeof(eng_sync) + 1);
}

static void meet_pack(const eng *g, int rc, const uint64_t at[2], const err *e, uint8_t *buf)
{
    meet_head h;
    memset(&h, 0, sizeof h);
    h.rc = rc;
    h.at[0] = at[0];
    h.at[1] = at[1];
    h.first[0] = h.first[1] = UINT32_MAX;
    if (rc != ERR_OK) {
        memcpy(h.msg, e->msg, sizeof h.msg);
        memcpy(h.first, g->past_first, sizeof h.first);
    }
    memcpy(buf, &h, sizeof h);
    uint8_t *s = buf + sizeof h, *d = s + (size_t)g->nipus * sizeof(eng_sync);
    memset(s, 0, (size_t)g->nipus * (sizeof(eng_sync) + 1));
    for (uint32_t i = g->lo; i < g->hi; i++) {
        memcpy(s + (size_t)i * sizeof(eng_sync), &g->sync[i], sizeof(eng_sync));
        d[i] = g->done[i];
    }
}

/* Take every IPU's classification from its owner's part of `all`. */
static void meet_unpack(eng *g, const uint8_t *all, size_t each)
{
    unsigned size = rank_size(g->ranks);
    for (unsigned r = 0; r < size; r++) {
        uint32_t lo, hi;
        eng_owned_by(g, r, &lo, &hi);
        const uint8_t *s = all + r * each + sizeof(meet_head);
        const uint8_t *d = s + (size_t)g->nipus * sizeof(eng_sync);
        for (uint32_t i = lo; i < hi; i++) {
            memcpy(&g->sync[i], s + (size_t)i * sizeof(eng_sync), sizeof(eng_sync));
            g->done[i] = d[i];
        }
    }
}

/* The earliest error of any rank, or -1: by the start of the superstep it happened in (one
 * process finds the faults of the earliest such superstep first and stops there), then by
 * cycle, then rank (the order of their IPUs). */
static int first_error(const uint8_t *all, size_t each, unsigned size, meet_head *h)
{
    int best = -1;
    for (unsigned r = 0; r < size; r++) {
        meet_head x;
        memcpy(&x, all + r * each, offsetof(meet_head, msg));
        if (x.rc != ERR_OK &&
            (best < 0 || x.at[0] < h->at[0] || (x.at[0] == h->at[0] && x.at[1] < h->at[1]))) {
            memcpy(h, all + r * each, sizeof *h);
            best = (int)r;
        }
    }
    return best;
}

/* What the whole system does now that no rank can go on alone. */
static eng_wait decide(eng *g, uint64_t *at)
{
    uint32_t n = 0, other = 0, all_done = 1;
    unsigned zone = 0;
    int mixed = 0;
    *at = 0;
    for (uint32_t i = 0; i < g->nipus; i++) {
        if (g->done[i]) {
            g->sync[i].what = ENG_WAIT_DONE;
            continue;
        }
        all_done = 0;
        const eng_sync *s = &g->sync[i];
        if (s->what != ENG_WAIT_EXTERNAL) {
            other = 1;
            continue;
        }
        mixed |= n && s->zone != zone;
        zone = s->zone;
        *at = max_u64(*at, s->at);
        n++;
    }
    if (all_done)
        return ENG_WAIT_DONE;
    return n == g->nipus && !other && !mixed ? ENG_WAIT_EXTERNAL : ENG_WAIT_NONE;
}

/* A superstep fault's message: the other tiles past the limit, on every rank (one line per
 * IPU from its owner, one allgatherv), named as one process names them. */
static void also_past(eng *g, const uint32_t first[2], err *e)
{
    txt mine = {0}, msg = {0};
    eng_past_lines(g, g->lo, g->hi, first[0], first[1], &mine);
    size_t *counts = xmalloc(rank_size(g->ranks) * sizeof *counts), total = 0;
    char *all = rank_allgatherv(g->ranks, mine.len ? mine.p : "", mine.len, counts);
    for (unsigned r = 0; r < rank_size(g->ranks); r++)
        total += counts[r];
    txt_printf(&msg, "%s", e->msg);
    txt lines = {0};
    txt_printf(&lines, "%.*s", (int)total, all);
    eng_past_text(&msg, txt_str(&lines));
    err_set(e, e->status, "%s", txt_str(&msg));
    txt_free(&lines);
    txt_free(&msg);
    txt_free(&mine);
    free(all);
    free(counts);
}

int eng_rank_meet(eng *g, int rc, const uint64_t fault_at[2], eng_wait *what, uint64_t *at, err *e)
{
    size_t each = meet_bytes(g);
    unsigned size = rank_size(g->ranks);
    uint8_t *mine = xmalloc(each), *all = xmalloc(each * size);
    meet_pack(g, rc, fault_at, e, mine);
    rank_allgather(g->ranks, mine, each, all);
    free(mine);
    meet_head *h = xmalloc(sizeof *h);
    int who = first_error(all, each, size, h);
    if (who >= 0) {
        /* a tile's fault: before settling any IPU; else found settling rank who's IPUs,
         * after the ranks below it had settled theirs */
        g->fault = (eng_stop){h->at[0], h->at[1] != UINT64_MAX ? 0 : (unsigned)who + 1};
        rc = err_set(e, h->rc, "%s", h->msg);
        if (h->first[0] != UINT32_MAX)
            also_past(g, h->first, e);
        free(h);
        free(all);
        return rc;
    }
    free(h);
    meet_unpack(g, all, each);
    free(all);
    *what = decide(g, at);
    return ERR_OK;
}

/* ---- the tiles' sync states, for a deadlock report ---- */

void eng_rank_states(eng *g)
{
    unsigned size = rank_size(g->ranks);
    size_t per = (size_t)g->ntiles * 5, n = (size_t)(g->hi - g->lo) * per;
    uint8_t *mine = xmalloc(n ? n : 1), *p = mine;
    for (uint32_t i = g->lo; i < g->hi; i++)
        for (uint32_t t = 0; t < g->ntiles; t++, p += 5) {
            const tile *x = &g->chips[i].tiles[t];
            p[0] = (uint8_t)x->state;
            memcpy(p + 1, &x->zone, 4);
        }
    size_t *counts = xmalloc(size * sizeof *counts);
    uint8_t *all = rank_allgatherv(g->ranks, mine, n, counts);
    free(mine);
    p = all;
    for (unsigned r = 0; r < size; r++) {
        uint32_t lo, hi;
        eng_owned_by(g, r, &lo, &hi);
        for (uint32_t i = lo; i < hi; i++)
            for (uint32_t t = 0; t < g->ntiles; t++, p += 5)
                if (r != rank_id(g->ranks)) {
                    tile *x = &g->chips[i].tiles[t];
                    x->state = (tile_state)p[0];
                    memcpy(&x->zone, p + 1, 4);
                }
    }
    free(counts);
    free(all);
}

/* ---- the results, from each IPU's owner ---- */

enum { TILE_COUNTERS = 3 + 2 * ISA_NWORKERS };

/* An IPU's results: supersteps and finish, its statistics, its tiles' counters, then its
 * sync log (eng_log_syncs: the count, then sync_cap entries). */
/* The compute sets' rows of an IPU as they travel (eng_class_steps: every rank set the
 * same): each row's supersteps and categories, as many rows as the IPU with the most. */
enum { CLS_WORDS = 1 + ENG_NCAT };
static size_t cls_bytes(const eng *g)
{
    size_t rows = 0;
    for (uint32_t i = 0; g->cls && i < g->nipus; i++)
        rows = g->cls[i].sum && g->cls[i].nclass + 2u > rows ? g->cls[i].nclass + 2u : rows;
    return rows * CLS_WORDS * sizeof(uint64_t);
}

static size_t ipu_bytes(const eng *g)
{
    return 2 * sizeof(uint64_t) + sizeof(eng_ipu_stats) +
           (size_t)g->ntiles * TILE_COUNTERS * sizeof(uint64_t) +
           (g->sync_n ? (1 + g->sync_cap) * sizeof(uint64_t) : 0) + cls_bytes(g);
}

/* IPU i's rows at p (pack: 1) or from p (0). */
static void move_cls(eng *g, uint32_t i, uint8_t *p, int pack)
{
    eng_classes *c = g->cls ? &g->cls[i] : NULL;
    for (uint32_t k = 0; c && c->sum && k < c->nclass + 2; k++, p += CLS_WORDS * sizeof(uint64_t)) {
        uint64_t w[CLS_WORDS];
        if (pack) {
            w[0] = c->sum[k].supersteps;
            memcpy(w + 1, c->sum[k].cat, sizeof c->sum[k].cat);
            memcpy(p, w, sizeof w);
        } else {
            memcpy(w, p, sizeof w);
            c->sum[k].supersteps = w[0];
            memcpy(c->sum[k].cat, w + 1, sizeof c->sum[k].cat);
        }
    }
}

static size_t log_at(const eng *g)
{
    return 2 * sizeof(uint64_t) + sizeof(eng_ipu_stats) +
           (size_t)g->ntiles * TILE_COUNTERS * sizeof(uint64_t);
}

static void pack_log(const eng *g, uint32_t i, uint8_t *p)
{
    if (!g->sync_n)
        return;
    uint64_t n = g->sync_n[i];
    memcpy(p, &n, sizeof n);
    if (n)
        memcpy(p + sizeof n, g->sync_log + (size_t)i * g->sync_cap, n * sizeof(uint64_t));
}

static void unpack_log(eng *g, uint32_t i, const uint8_t *p)
{
    if (!g->sync_n)
        return;
    uint64_t n;
    memcpy(&n, p, sizeof n);
    g->sync_n[i] = (size_t)n;
    if (n)
        memcpy(g->sync_log + (size_t)i * g->sync_cap, p + sizeof n, n * sizeof(uint64_t));
}

static void pack_ipu(const eng *g, uint32_t i, uint8_t *p)
{
    const chip *c = &g->chips[i];
    uint64_t head[2] = {c->supersteps, c->finish};
    memcpy(p, head, sizeof head);
    memcpy(p + sizeof head, &g->ipu[i], sizeof g->ipu[i]);
    uint64_t *v = xmalloc((size_t)g->ntiles * TILE_COUNTERS * sizeof *v), *q = v;
    for (uint32_t t = 0; t < g->ntiles; t++) {
        const tile *x = &c->tiles[t];
        *q++ = x->sup.ninsn;
        *q++ = x->sup.busy;
        *q++ = x->workers_started;
        for (unsigned k = 0; k < ISA_NWORKERS; k++) {
            *q++ = x->wk[k].ninsn;
            *q++ = x->wk[k].busy;
        }
    }
    memcpy(p + sizeof head + sizeof g->ipu[i], v, (size_t)g->ntiles * TILE_COUNTERS * sizeof *v);
    free(v);
    pack_log(g, i, p + log_at(g));
    move_cls((eng *)g, i, p + ipu_bytes(g) - cls_bytes(g), 1);
}

static void unpack_ipu(eng *g, uint32_t i, const uint8_t *p)
{
    chip *c = &g->chips[i];
    uint64_t head[2];
    memcpy(head, p, sizeof head);
    c->supersteps = head[0];
    c->finish = head[1];
    memcpy(&g->ipu[i], p + sizeof head, sizeof g->ipu[i]);
    uint64_t *v = xmalloc((size_t)g->ntiles * TILE_COUNTERS * sizeof *v);
    const uint64_t *q = v;
    memcpy(v, p + sizeof head + sizeof g->ipu[i], (size_t)g->ntiles * TILE_COUNTERS * sizeof *v);
    for (uint32_t t = 0; t < g->ntiles; t++) {
        tile *x = &c->tiles[t];
        x->sup.ninsn = *q++;
        x->sup.busy = *q++;
        x->workers_started = *q++;
        for (unsigned k = 0; k < ISA_NWORKERS; k++) {
            x->wk[k].ninsn = *q++;
            x->wk[k].busy = *q++;
        }
    }
    free(v);
    unpack_log(g, i, p + log_at(g));
    move_cls(g, i, (uint8_t *)p + ipu_bytes(g) - cls_bytes(g), 0);
}

void eng_rank_results(eng *g)
{
    unsigned size = rank_size(g->ranks);
    size_t per = ipu_bytes(g), n = (size_t)(g->hi - g->lo) * per;
    uint8_t *mine = xmalloc(n ? n : 1);
    for (uint32_t i = g->lo; i < g->hi; i++)
        pack_ipu(g, i, mine + (size_t)(i - g->lo) * per);
    size_t *counts = xmalloc(size * sizeof *counts);
    uint8_t *all = rank_allgatherv(g->ranks, mine, n, counts);
    free(mine);
    const uint8_t *p = all;
    for (unsigned r = 0; r < size; r++) {
        uint32_t lo, hi;
        eng_owned_by(g, r, &lo, &hi);
        for (uint32_t i = lo; i < hi; i++, p += per)
            if (r != rank_id(g->ranks))
                unpack_ipu(g, i, p);
    }
    free(counts);
    free(all);
}

void eng_share_mem(eng *g, uint32_t ipu, uint32_t t, uint32_t addr, uint32_t len)
{
    unsigned size = rank_size(g->ranks);
    if (size == 1 || ipu >= g->nipus || t >= g->ntiles || (uint64_t)addr + len > g->m.sram_bytes)
        return;
    int own = ipu >= g->lo && ipu < g->hi;
    uint8_t *mem = chip_tile_mem(&g->chips[ipu], t) + addr;
    size_t *counts = xmalloc(size * sizeof *counts);
    uint8_t *all = rank_allgatherv(g->ranks, mem, own ? len : 0, counts);
    if (!own)
        memcpy(mem, all, len);
    free(counts);
    free(all);
}
