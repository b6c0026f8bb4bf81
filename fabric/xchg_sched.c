/* xchg_sched: the exchange compiler — conflict-free send times, and the code that keeps them.
 *
 * Poplar compiles each exchange into code whose timing is known to the cycle; so does this.
 * xchg_schedule() is a list scheduler: repeatedly, the sender that can start a stream soonest
 * starts its pending transfer that can start soonest (ties: lower tile, then the caller's
 * order). A transfer from tile s starts at the first cycle t at which s's supervisor can have
 * issued its set-up (4 `li` after its previous send, 1 cycle each), s's outgoing port is free,
 * and every receiver d is free over [t + latency(s, d), t + latency + words). A heap of
 * senders keyed by a lower bound of their next start keeps it fast (lazy re-evaluation: start
 * times only grow as timelines fill). xchg_emit() writes
 * the supervisor code that issues each send at exactly its cycle, padding with `nop`s and
 * `brnzdec` delay loops (cost 1 + 6 (n + 1) for n, FACTS.md branch cost). Left out:
 * optimal ordering (a hard problem; the greedy stays within 1.3x of the bound in the tests)
 * and splitting long transfers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/xchg.h"
#include "base/text.h"

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

static int insert(timeline *tl, uint64_t a, uint64_t b)
{
    if (tl->n == tl->cap) {
        size_t cap = tl->cap ? 2 * tl->cap : 8;
        busy *v = realloc(tl->v, cap * sizeof *v);
        if (!v)
            return -1;
        tl->v = v;
        tl->cap = cap;
    }
    size_t k = tl->n;
    while (k > 0 && tl->v[k - 1].a > a) {
        tl->v[k] = tl->v[k - 1];
        k--;
    }
    tl->v[k] = (busy){a, b};
    tl->n++;
    return 0;
}

/* Earliest start of transfer f from its sender's cursor, given the receivers' timelines. */
static uint64_t earliest(const mach *m, const timeline *rx, const xchg_xfer *f, uint64_t from)
{
    uint64_t w = xchg_words(m, f->bytes), t = from;
    for (int moved = 1; moved;) {
        moved = 0;
        for (uint32_t d = f->dst_first; d < f->dst_first + f->dst_count; d++) {
            uint64_t lat = xchg_latency(m, f->src, d);
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
    xchg_xfer *x;
    timeline *rx;
    uint64_t *cursor, *port; /* per sender: earliest set-up issue; outgoing port free */
    size_t **pend;           /* per sender: pending transfer indices, in the caller's order */
    size_t *npend;
} sched;

static uint64_t sender_from(const sched *S, uint32_t src)
{
    return S->cursor[src] + 4 > S->port[src] ? S->cursor[src] + 4 : S->port[src];
}

/* The sender's best pending transfer (earliest start; ties to the caller's order). */
static size_t best_of(const sched *S, uint32_t src, uint64_t *start)
{
    size_t best = 0;
    uint64_t from = sender_from(S, src);
    *start = UINT64_MAX;
    for (size_t j = 0; j < S->npend[src]; j++) {
        uint64_t t = earliest(S->m, S->rx, &S->x[S->pend[src][j]], from);
        if (t < *start) {
            *start = t;
            best = j;
            if (t == from)
                break;
        }
    }
    return best;
}

int xchg_schedule(const mach *m, uint32_t ntiles, xchg_xfer *x, size_t n, xchg_plan *plan,
                  err *e)
{
    sched S = {m, x, calloc(ntiles, sizeof *S.rx), malloc(ntiles * sizeof *S.cursor),
               calloc(ntiles, sizeof *S.port), calloc(ntiles, sizeof *S.pend),
               calloc(ntiles, sizeof *S.npend)};
    uint64_t *sent = calloc(ntiles, sizeof *sent), *recv = calloc(ntiles, sizeof *recv);
    hent *heap = malloc(ntiles * sizeof *heap);
    size_t nh = 0;
    int rc = ERR_OK;
    if (!S.rx || !S.cursor || !S.port || !S.pend || !S.npend || !sent || !recv || !heap)
        goto oom;
    for (size_t k = 0; k < n; k++) {
        const xchg_xfer *f = &x[k];
        if (f->src >= ntiles || f->dst_count == 0 || f->dst_first + f->dst_count > ntiles ||
            (f->bytes | f->src_addr | f->dst_addr) % 4) {
            rc = err_set(e, ERR_INPUT, "exchange transfer %zu: bad tiles or unaligned bytes", k);
            goto out;
        }
        S.npend[f->src]++;
    }
    for (uint32_t t = 0; t < ntiles; t++) {
        S.cursor[t] = XCHG_PROLOGUE;
        if (S.npend[t] && !(S.pend[t] = malloc(S.npend[t] * sizeof **S.pend)))
            goto oom;
        S.npend[t] = 0;
    }
    for (size_t k = 0; k < n; k++)
        S.pend[x[k].src][S.npend[x[k].src]++] = k;
    for (uint32_t t = 0; t < ntiles; t++)
        if (S.npend[t])
            hpush(heap, &nh, (hent){sender_from(&S, t), t});

    plan->cycles = 0;
    while (nh) {
        hent h = hpop(heap, &nh);
        uint32_t src = h.src;
        uint64_t t;
        size_t j = best_of(&S, src, &t);
        if (t > h.key) { /* its candidates moved on: requeue at the true time */
            hpush(heap, &nh, (hent){t, src});
            continue;
        }
        xchg_xfer *f = &x[S.pend[src][j]];
        memmove(&S.pend[src][j], &S.pend[src][j + 1], (S.npend[src] - j - 1) * sizeof **S.pend);
        S.npend[src]--;
        uint64_t w = xchg_words(m, f->bytes);
        f->start = t;
        S.cursor[src] = t + 1;
        S.port[src] = t + w;
        sent[src] += w;
        for (uint32_t d = f->dst_first; d < f->dst_first + f->dst_count; d++) {
            uint64_t lat = xchg_latency(m, src, d);
            if (w && insert(&S.rx[d], t + lat, t + lat + w) != 0)
                goto oom;
            recv[d] += w;
            if (t + lat + w > plan->cycles)
                plan->cycles = t + lat + w;
        }
        if (S.npend[src])
            hpush(heap, &nh, (hent){sender_from(&S, src), src});
    }
    plan->lower_bound = 0;
    for (uint32_t t = 0; t < ntiles; t++) {
        uint64_t b = sent[t] > recv[t] ? sent[t] : recv[t];
        if (b > plan->lower_bound)
            plan->lower_bound = b;
    }
    goto out;
oom:
    rc = err_set(e, ERR_INPUT, "out of host memory for the exchange schedule");
out:
    for (uint32_t t = 0; t < ntiles; t++) {
        if (S.rx)
            free(S.rx[t].v);
        if (S.pend)
            free(S.pend[t]);
    }
    free(S.rx);
    free(S.cursor);
    free(S.port);
    free(S.pend);
    free(S.npend);
    free(sent);
    free(recv);
    free(heap);
    return rc;
}

/* ---- code generation ---- */

/* Exactly d cycles of supervisor time (no workers running). */
static void delay(txt *b, const char *label, uint64_t d, unsigned *uniq)
{
    if (d >= 7) {
        uint64_t loops = (d - 7) / 6;
        txt_printf(b, "        li      r5, %llu\n", (unsigned long long)loops);
        txt_printf(b, "%s_d%u:  brnzdec r5, %s_d%u\n", label, *uniq, label, *uniq);
        (*uniq)++;
        d = (d - 7) % 6;
    }
    while (d--)
        txt_printf(b, "        nop\n");
}

static int cmp_by_src_start(const void *a, const void *b)
{
    const xchg_xfer *x = *(const xchg_xfer *const *)a, *y = *(const xchg_xfer *const *)b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

char *xchg_emit(const mach *m, uint32_t ntiles, const xchg_xfer *x, size_t n, const char *label)
{
    (void)m;
    const xchg_xfer **ord = malloc((n ? n : 1) * sizeof *ord);
    uint8_t *has = calloc(ntiles, 1);
    txt b = {0};
    if (!ord || !has) {
        free(ord);
        free(has);
        return NULL;
    }
    for (size_t k = 0; k < n; k++)
        ord[k] = &x[k];
    qsort(ord, n, sizeof *ord, cmp_by_src_start);

    /* dispatch: get 0, li 1, shli 2, add 3, ld32 4 (usable at 11), bri 11 (6) -> 17 */
    txt_printf(&b, "# exchange code generated by xchg_emit: call %s after a sync\n", label);
    txt_printf(&b, "        .text\n%s:\n", label);
    txt_printf(&b, "        get     r1, $tile\n        li      r2, %s_tab\n", label);
    txt_printf(&b, "        shli    r3, r1, 2\n        add     r2, r2, r3\n");
    txt_printf(&b, "        ld32    r4, [r2+0]\n        bri     r4\n");
    txt_printf(&b, "%s_none:\n        ret\n", label);
    unsigned uniq = 0;
    for (size_t k = 0; k < n;) {
        uint32_t src = ord[k]->src;
        has[src] = 1;
        txt_printf(&b, "%s_t%u:\n", label, src);
        uint64_t t = XCHG_PROLOGUE;
        for (; k < n && ord[k]->src == src; k++) {
            const xchg_xfer *f = ord[k];
            delay(&b, label, f->start - 4 - t, &uniq);
            txt_printf(&b, "        li      r1, %u\n        li      r2, %u\n", f->src_addr, f->bytes);
            txt_printf(&b, "        li      r3, %u\n        li      r4, %u\n",
                f->dst_first | ((f->dst_count - 1) << 16), f->dst_addr);
            txt_printf(&b, "        send    r1, r2, r3, r4\n");
            t = f->start + 1;
        }
        txt_printf(&b, "        ret\n");
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
    return txt_take(&b);
}
