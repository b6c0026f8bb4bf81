/* xcomp: the exchange compiler — conflict-free send times for an on-chip exchange, and the
 * tile code that keeps them.
 *
 * Poplar compiles each exchange into code whose timing is known to the cycle; so does this.
 * Input: transfers within one IPU (a source tile, a range of destination tiles, bytes and
 * addresses). xcomp_schedule() gives each a start cycle; its plan guarantees, by the fabric's
 * timing (fabric/xchg.h), that no tile sends two streams at once, that no tile receives two
 * at once, and that each tile's code can issue its sends on time (XCOMP_PROLOGUE cycles of
 * dispatch, XCOMP_SETUP `li` cycles per send). It is a list scheduler: repeatedly, the sender
 * that can start a stream soonest starts its pending transfer that can start soonest (ties:
 * lower tile, then the caller's order). A transfer from tile s starts at the first cycle t at
 * which s's code can have issued its set-up, s's outgoing port is free, and every receiver d
 * is free over [t + latency(s, d), t + latency + words). A heap of senders keyed by a lower
 * bound of their next start keeps it fast (lazy re-evaluation: start times only grow as
 * timelines fill). xcomp_emit() writes the supervisor code that issues each send at exactly
 * its cycle, padding with `nop`s and `brnzdec` delay loops (cost 1 + 6 (n + 1) for n,
 * the branch cost of docs/sources.md, Chip), so the last word lands at exactly plan.cycles.
 *
 * Left out: optimal ordering (a hard problem). The greedy plan stays within 1.1x of the
 * lower bound for one all-to-all or random transfers, but given several shift rounds as one
 * set it can land a whole block late: 1.34-1.36x the bound (docs/fabric.md, "Microbenchmarks"),
 * so callers compile one round per superstep. Also left out: splitting long transfers,
 * exchange between IPUs (gsend over the IPU-Links is not planned here), and sharing code:
 * the emitted code holds every tile's sends, and every tile loads all of it. */
#include <stdlib.h>
#include <string.h>

#include "workloads/xcomp.h"

#include "base/alloc.h"
#include "base/text.h"
#include "fabric/xchg.h"

typedef struct busy {
    uint64_t a, b; /* [a, b) */
} busy;

typedef struct timeline {
    busy *v;
    size_t n, cap;
} timeline;

/* First x >= from such that [x, x + w) overlaps no interval of tl. */
static uint64_t fit(const timeline *tl, uint64_t from, uint64_t w)
{
    /* binary search: first interval with b > from */
    size_t lo = 0, hi = tl->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tl->v[mid].b <= from)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t x = from;
    for (size_t k = lo; k < tl->n; k++) {
        if (tl->v[k].a >= x + w)
            break;
        if (tl->v[k].b > x)
            x = tl->v[k].b;
    }
    return x;
}

/* Add [a, b) (it overlaps no interval of tl), merged with the intervals it touches, so that a
 * receiver busy back to back keeps one interval and fit stays short. */
static void insert(timeline *tl, uint64_t a, uint64_t b)
{
    size_t k = tl->n;
    while (k > 0 && tl->v[k - 1].a > a)
        k--;
    int prev = k > 0 && tl->v[k - 1].b == a, next = k < tl->n && tl->v[k].a == b;
    if (prev && next) { /* it fills the gap between two: one interval */
        tl->v[k - 1].b = tl->v[k].b;
        memmove(&tl->v[k], &tl->v[k + 1], (tl->n - k - 1) * sizeof *tl->v);
        tl->n--;
    } else if (prev) {
        tl->v[k - 1].b = b;
    } else if (next) {
        tl->v[k].a = a;
    } else {
        tl->v = xgrow(tl->v, &tl->cap, tl->n + 1, sizeof *tl->v);
        memmove(&tl->v[k + 1], &tl->v[k], (tl->n - k) * sizeof *tl->v);
        tl->v[k] = (busy){a, b};
        tl->n++;
    }
}

/* Earliest start of transfer f from its sender's cursor, given the receivers' timelines
 * (pos: each tile's place in the layout). */
static uint64_t earliest(const mach *m, const xchg_pos *pos, const timeline *rx,
                         const xcomp_xfer *f, uint64_t from)
{
    uint64_t w = xchg_words(m, f->bytes), t = from;
    for (int moved = 1; moved;) {
        moved = 0;
        for (uint32_t d = f->dst_first; d < f->dst_first + f->dst_count; d++) {
            uint64_t lat = xchg_latency_pos(m, pos[f->src], pos[d]);
            uint64_t at = fit(&rx[d], t + lat, w ? w : 1);
            if (at > t + lat) {
                t = at - lat;
                moved = 1;
            }
        }
    }
    return t;
}

typedef struct hent {
    uint64_t key;
    uint32_t src;
} hent;

static int hless(hent a, hent b)
{
    return a.key < b.key || (a.key == b.key && a.src < b.src);
}

static void hpush(hent *h, size_t *n, hent v)
{
    size_t i = (*n)++;
    while (i > 0 && hless(v, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static hent hpop(hent *h, size_t *n)
{
    hent top = h[0], v = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && hless(h[c + 1], h[c]))
            c++;
        if (!hless(h[c], v))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = v;
    return top;
}

typedef struct sched {
    const mach *m;
    uint32_t ntiles;
    xcomp_xfer *x;
    size_t n;
    xchg_pos *pos;           /* per tile: its place in the layout */
    timeline *rx;            /* per receiver: when it is busy */
    uint64_t *cursor, *port; /* per sender: earliest set-up issue; outgoing port free */
    size_t **pend;           /* per sender: pending transfer indices, in the caller's order */
    size_t *npend;
    uint64_t *bound;       /* per transfer: its last earliest start, a lower bound of the next
                              * (cursors, ports and timelines only move on) */
    uint64_t *sent, *recv; /* per tile: cycles sending, receiving */
    hent *heap;            /* senders with pending transfers, by a bound of their next start */
    size_t nh;
} sched;

static uint64_t sender_from(const sched *S, uint32_t src)
{
    uint64_t set_up = S->cursor[src] + XCOMP_SETUP;
    return set_up > S->port[src] ? set_up : S->port[src];
}

/* The sender's best pending transfer (earliest start; ties to the caller's order). */
static size_t best_of(sched *S, uint32_t src, uint64_t *start)
{
    size_t best = 0;
    uint64_t from = sender_from(S, src);
    *start = UINT64_MAX;
    for (size_t j = 0; j < S->npend[src]; j++) {
        size_t k = S->pend[src][j];
        if (S->bound[k] >= *start) /* cannot start sooner than the best so far (ties: first) */
            continue;
        uint64_t t = earliest(S->m, S->pos, S->rx, &S->x[k], from);
        S->bound[k] = t;
        if (t < *start) {
            *start = t;
            best = j;
            if (t == from)
                break;
        }
    }
    return best;
}

/* ERR_INPUT unless every transfer's tiles lie in [0, ntiles) and its bytes and addresses
 * are multiples of 4. */
static int check_xfers(uint32_t ntiles, const xcomp_xfer *x, size_t n, err *e)
{
    for (size_t k = 0; k < n; k++) {
        const xcomp_xfer *f = &x[k];
        if (f->src >= ntiles || f->dst_count == 0 || f->dst_first >= ntiles ||
            f->dst_count > ntiles - f->dst_first || (f->bytes | f->src_addr | f->dst_addr) % 4)
            return err_set(e, ERR_INPUT, "exchange transfer %zu: bad tiles or unaligned bytes", k);
    }
    return ERR_OK;
}

static void sched_free(sched *S)
{
    for (uint32_t t = 0; t < S->ntiles; t++) {
        if (S->rx)
            free(S->rx[t].v);
        if (S->pend)
            free(S->pend[t]);
    }
    free(S->rx);
    free(S->pos);
    free(S->cursor);
    free(S->port);
    free(S->pend);
    free(S->npend);
    free(S->sent);
    free(S->recv);
    free(S->heap);
    free(S->bound);
}

/* Allocate the tables, list each sender's transfers in the caller's order and queue the
 * senders. */
static void sched_init(sched *S)
{
    uint32_t nt = S->ntiles;
    S->rx = xcalloc(nt, sizeof *S->rx);
    S->pos = xchg_pos_table(S->m, nt);
    S->cursor = xmalloc(nt * sizeof *S->cursor);
    S->port = xcalloc(nt, sizeof *S->port);
    S->pend = xcalloc(nt, sizeof *S->pend);
    S->npend = xcalloc(nt, sizeof *S->npend);
    S->sent = xcalloc(nt, sizeof *S->sent);
    S->recv = xcalloc(nt, sizeof *S->recv);
    S->heap = xmalloc(nt * sizeof *S->heap);
    S->bound = xcalloc(S->n ? S->n : 1, sizeof *S->bound);
    for (size_t k = 0; k < S->n; k++)
        S->npend[S->x[k].src]++;
    for (uint32_t t = 0; t < nt; t++) {
        S->cursor[t] = XCOMP_PROLOGUE;
        if (S->npend[t])
            S->pend[t] = xmalloc(S->npend[t] * sizeof **S->pend);
        S->npend[t] = 0;
    }
    for (size_t k = 0; k < S->n; k++)
        S->pend[S->x[k].src][S->npend[S->x[k].src]++] = k;
    for (uint32_t t = 0; t < nt; t++)
        if (S->npend[t])
            hpush(S->heap, &S->nh, (hent){sender_from(S, t), t});
}

/* Start the sender's pending transfer j at cycle t: its code and port move on, the receivers'
 * timelines fill, plan->cycles grows to the last landing. */
static void place(sched *S, uint32_t src, size_t j, uint64_t t, xcomp_plan *plan)
{
    xcomp_xfer *f = &S->x[S->pend[src][j]];
    memmove(&S->pend[src][j], &S->pend[src][j + 1], (S->npend[src] - j - 1) * sizeof **S->pend);
    S->npend[src]--;
    uint64_t w = xchg_words(S->m, f->bytes);
    f->start = t;
    S->cursor[src] = t + 1;
    S->port[src] = t + w;
    S->sent[src] += w;
    for (uint32_t d = f->dst_first; d < f->dst_first + f->dst_count; d++) {
        uint64_t lat = xchg_latency_pos(S->m, S->pos[src], S->pos[d]);
        if (w)
            insert(&S->rx[d], t + lat, t + lat + w);
        S->recv[d] += w;
        if (t + lat + w > plan->cycles)
            plan->cycles = t + lat + w;
    }
}

int xcomp_schedule(const mach *m, uint32_t ntiles, xcomp_xfer *x, size_t n, xcomp_plan *plan,
                   err *e)
{
    int rc = check_xfers(ntiles, x, n, e);
    if (rc != ERR_OK)
        return rc;
    sched S = {.m = m, .ntiles = ntiles, .x = x, .n = n};
    sched_init(&S);
    plan->cycles = 0;
    while (S.nh) {
        hent h = hpop(S.heap, &S.nh);
        uint64_t t;
        size_t j = best_of(&S, h.src, &t);
        if (t > h.key) { /* its candidates moved on: requeue at the true time */
            hpush(S.heap, &S.nh, (hent){t, h.src});
            continue;
        }
        place(&S, h.src, j, t, plan);
        if (S.npend[h.src])
            hpush(S.heap, &S.nh, (hent){sender_from(&S, h.src), h.src});
    }
    plan->lower_bound = 0;
    for (uint32_t t = 0; t < ntiles; t++) {
        uint64_t b = S.sent[t] > S.recv[t] ? S.sent[t] : S.recv[t];
        if (b > plan->lower_bound)
            plan->lower_bound = b;
    }
    sched_free(&S);
    return ERR_OK;
}

/* ---- code generation ---- */

/* The send code is written tight (one blank to indent, one between fields): a planned MNIST
 * tile's text is mostly these lines, and every byte is printed, copied and read again. */

/* Exactly d cycles of supervisor time (no workers running). */
static void delay(txt *b, const char *label, uint64_t d, unsigned *uniq)
{
    if (d >= 7) {
        uint64_t loops = (d - 7) / 6;
        txt_printf(b, " li r5, %llu\n%s_d%u: brnzdec r5, %s_d%u\n", (unsigned long long)loops,
                   label, *uniq, label, *uniq);
        (*uniq)++;
        d = (d - 7) % 6;
    }
    while (d--)
        txt_put(b, " nop\n");
}

static int cmp_by_src_start(const void *a, const void *b)
{
    const xcomp_xfer *x = *(const xcomp_xfer *const *)a, *y = *(const xcomp_xfer *const *)b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/* The code of the tile whose sends are ord[*k..] (sorted by start, up to the next tile's):
 * each send issued at its start cycle. Moves *k past them. */
static int emit_tile(txt *b, const char *label, const xcomp_xfer *x, const xcomp_xfer **ord,
                     size_t n, size_t *k, unsigned *uniq, uint64_t t, err *e)
{
    uint32_t src = ord[*k]->src; /* t: the cycle the tile's next instruction issues */
    for (; *k < n && ord[*k]->src == src; (*k)++) {
        const xcomp_xfer *f = ord[*k];
        if (f->start < t + XCOMP_SETUP)
            return err_set(e, ERR_INPUT,
                           "exchange transfer %zu: tile %u cannot send it at cycle "
                           "%llu, its code can at %llu at the earliest (plan it with "
                           "xcomp_schedule)",
                           (size_t)(f - x), src, (unsigned long long)f->start,
                           (unsigned long long)(t + XCOMP_SETUP));
        delay(b, label, f->start - XCOMP_SETUP - t, uniq);
        txt_printf(b, " li r1, %u\n li r2, %u\n li r3, %u\n li r4, %u\n send r1, r2, r3, r4\n",
                   f->src_addr, f->bytes, f->dst_first | ((f->dst_count - 1) << 16), f->dst_addr);
        t = f->start + 1;
    }
    txt_put(b, " ret\n");
    return ERR_OK;
}

/* The entry: dispatch on the tile id through the table (get 0, li 1, shli 2, add 3, ld32 4
 * (usable at 11), bri 11 (6) -> the tile's code at XCOMP_PROLOGUE = 17); tiles that send
 * nothing return at once. */
static void emit_dispatch(txt *b, const char *label)
{
    txt_printf(b, "# exchange code generated by xcomp_emit: call %s after a sync\n", label);
    txt_printf(b, "        .text\n%s:\n", label);
    txt_printf(b, "        get     r1, $tile\n        li      r2, %s_tab\n", label);
    txt_printf(b, "        shli    r3, r1, 2\n        add     r2, r2, r3\n");
    txt_printf(b, "        ld32    r4, [r2+0]\n        bri     r4\n");
    txt_printf(b, "%s_none:\n        ret\n", label);
}

char *xcomp_emit(uint32_t ntiles, const xcomp_xfer *x, size_t n, const char *label, err *e)
{
    if (check_xfers(ntiles, x, n, e) != ERR_OK)
        return NULL;
    const xcomp_xfer **ord = xmalloc(n * sizeof *ord);
    uint8_t *has = xcalloc(ntiles, 1);
    for (size_t k = 0; k < n; k++)
        ord[k] = &x[k];
    qsort(ord, n, sizeof *ord, cmp_by_src_start);
    txt b = {0};
    emit_dispatch(&b, label);
    int rc = ERR_OK;
    unsigned uniq = 0;
    for (size_t k = 0; k < n && rc == ERR_OK;) {
        has[ord[k]->src] = 1;
        txt_printf(&b, "%s_t%u:\n", label, ord[k]->src);
        rc = emit_tile(&b, label, x, ord, n, &k, &uniq, XCOMP_PROLOGUE, e);
    }
    txt_printf(&b, "        .data\n        .align  4\n%s_tab:\n", label);
    for (uint32_t t = 0; t < ntiles; t++) {
        if (has[t])
            txt_printf(&b, "        .word   %s_t%u\n", label, t);
        else
            txt_printf(&b, "        .word   %s_none\n", label);
    }
    free(ord);
    free(has);
    char *text = txt_take(&b);
    if (rc != ERR_OK) {
        free(text);
        return NULL;
    }
    return text;
}

char *xcomp_emit_tile(uint32_t ntiles, uint32_t tile, const xcomp_xfer *x, size_t n,
                      const char *label, err *e)
{
    if (check_xfers(ntiles, x, n, e) != ERR_OK)
        return NULL;
    size_t m = 0;
    const xcomp_xfer **ord = xmalloc((n ? n : 1) * sizeof *ord);
    for (size_t k = 0; k < n; k++)
        if (x[k].src == tile)
            ord[m++] = &x[k];
    qsort(ord, m, sizeof *ord, cmp_by_src_start);
    txt b = {0};
    txt_printf(&b, "%s:\n", label);
    int rc = ERR_OK;
    unsigned uniq = 0;
    size_t k = 0;
    if (m)
        rc = emit_tile(&b, label, x, ord, m, &k, &uniq, 0, e);
    else
        txt_printf(&b, "        ret\n");
    free(ord);
    char *text = txt_take(&b);
    if (rc != ERR_OK) {
        free(text);
        return NULL;
    }
    return text;
}
