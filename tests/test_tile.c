/* test_tile: exact cycle counts of the barrel, against an independent reference.
 *
 * The engine interprets each worker to its exit as soon as `run` starts it (issue = start +
 * 6 x slots so far) and moves the supervisor to the next free slot. The reference here never
 * calls the interpreter: it executes an abstract program (items: ops, brnzdec loops, rpt
 * loops, run/runall/join/sync/send/halt) with the rules of docs/timing.md and docs/fabric.md
 * written out, one tile cycle at a time: cycle c belongs to slot c mod 6; a worker issues in
 * its slot once its previous instruction's slots have passed; the supervisor issues in a slot
 * no worker owns once its previous instruction's cost has elapsed and the registers it reads
 * are loaded (load-use stall); sends occupy the tile's port; sync and halt wait for workers
 * and port; a sync releases every tile at the latest arrival or landing + 90.
 *
 * The generator writes each random abstract program as assembly too: workers of ALU, fp and
 * f32v2 ops, brnzdec loops, rpt loops, AMP rows (f32amp, f16amp), ampz, ampst and $ccount
 * records; a supervisor of ALU ops,
 * loads and uses, br, brnzdec loops (counts that may grow with $tile), rpt loops, run,
 * runall, join, send (to itself or the next tile), sync internal and $ccount records, on 1 to
 * 6 tiles. Engine and reference must agree on the total cycles and on every $ccount the
 * program stores (`get r6, $ccount; st32pi r6, [r2]+=4`), on Mk2 and Mk1.
 *
 * Costs come from one table keyed by mnemonic (`rows`: the numbers of docs/timing.md); a
 * row's issue slots are max(wcycles, MACs / the machine's MAC rate, load and store bytes /
 * the machine's bandwidth), so a new or renamed op is one row. Plus closed-form checks for
 * k-instruction workers and supervisor branches, on both the engine and the reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/system.h"
#include "tests/testutil.h"
#include "isa/asm.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- the machines (docs/timing.md, docs/fabric.md) ---- */

typedef struct machine {
    const char *preset;
    unsigned macs_per_issue; /* fp32 MAC per tile cycle: an op of M MACs takes M / this slots */
    unsigned load_bpc;       /* bandwidth rule: an op loading L bytes takes >= L / this slots */
    unsigned store_bpc;      /* ... storing S bytes >= S / this (0: the rule is not in force) */
} machine;

/* The presets' AMP units and load/store bytes per cycle (docs/timing.md, "Memory bandwidth"). */
static const machine machines[] = {
    {"mk2", 16, 16, 8},
    {"mk1", 8, 16, 8},
};

/* docs/timing.md and docs/fabric.md; the exchange and sync numbers are those of both presets */
enum {
    BARREL = 6,
    NWORKERS = 6,
    LOAD_USE = 7, /* a supervisor register loaded at t is usable from t + 7 */
    XCHG_BPC = 4,
    XCHG_BASE = 8,
    XCHG_PER_SUPERTILE = 1,
    XCHG_PER_COLUMN = 6,
    XCHG_TURN = 4,
    TILES_PER_SUPERTILE = 4,
    TILES_PER_COLUMN = 64,
    SYNC_INTERNAL = 90,
};

/* ---- the costs: one row per mnemonic ---- */

/* What the generator may pick a row as: a worker op, a supervisor op, a worker memory op
 * that walks the pointers r3 (stores, 64 B a time at most) or r4, r5 (loads, 16 B). */
enum { P_W = 1, P_S = 2, P_WMEM = 4 };

typedef struct oprow {
    const char *name;
    uint8_t wcycles; /* worker issue slots */
    uint8_t scycles; /* supervisor cycles before its next issue */
    uint8_t macs;    /* AMP units it needs (fp32 MACs per cycle: f32amp 16, f16amp 8) */
    uint8_t ld, st;  /* bytes it loads and stores (the bandwidth rule) */
    uint8_t pick;    /* P_*: the generator may pick it, as `text` */
    const char *text;
} oprow;

/* The rows the program structure uses (the generator writes their operands). */
enum {
    R_LI,
    R_GET,
    R_ADDI,
    R_ADD,
    R_LD32,
    R_ST32,
    R_ST32PI,
    R_BR,
    R_BRNZDEC,
    R_RPT,
    R_RUN,
    R_RUNALL,
    R_JOIN,
    R_SYNC,
    R_HALT,
    R_SEND,
    R_EXIT,
};

/* Registers. Both: r1 scratch, r2 record pointer, r6 $ccount, r7/r8 loop counters (depth
 * 0/1), r14 rpt count. Workers: r0 region, r3 ampst pointer, r4/r5 amp pointers, r9..r13
 * scratch (r10, r12 pairs). Supervisor: r3 worker region, r5 data, r9/r10 loaded, r11 use,
 * r12 send length, r13 send destination, r0 send address. */
/* clang-format off */
static const oprow rows[] = {
    /*            name       w  s  MAC ld  st  pick       text */
    [R_LI] =     {"li",      1, 1, 0,  0,  0,  P_W | P_S, "li r1, 77"},
    [R_GET] =    {"get",     1, 1, 0,  0,  0,  P_W | P_S, "get r1, $tile"},
    [R_ADDI] =   {"addi",    1, 1, 0,  0,  0,  P_W | P_S, "addi r1, r1, 1"},
    [R_ADD] =    {"add",     1, 1, 0,  0,  0,  P_W | P_S, "add r1, r1, r2"},
    [R_LD32] =   {"ld32",    1, 1, 0,  4,  0,  P_W,       "ld32 r9, [r0+4]"},
    [R_ST32] =   {"st32",    1, 1, 0,  0,  4,  P_W | P_S, "st32 r1, [r5+768]"},
    [R_ST32PI] = {"st32pi",  1, 1, 0,  0,  4,  0,         NULL},
    [R_BR] =     {"br",      1, 6, 0,  0,  0,  0,         NULL},
    [R_BRNZDEC] ={"brnzdec", 1, 6, 0,  0,  0,  0,         NULL},
    [R_RPT] =    {"rpt",     1, 6, 0,  0,  0,  0,         NULL},
    [R_RUN] =    {"run",     1, 6, 0,  0,  0,  0,         NULL},
    [R_RUNALL] = {"runall",  1, 6, 0,  0,  0,  0,         NULL},
    [R_JOIN] =   {"join",    1, 6, 0,  0,  0,  0,         NULL},
    [R_SYNC] =   {"sync",    1, 6, 0,  0,  0,  0,         NULL},
    [R_HALT] =   {"halt",    1, 1, 0,  0,  0,  0,         NULL},
    [R_SEND] =   {"send",    1, 1, 0,  0,  0,  0,         NULL},
    [R_EXIT] =   {"exit",    1, 1, 0,  0,  0,  0,         NULL},
                 {"nop",     1, 1, 0,  0,  0,  P_W | P_S, "nop"},
                 {"mov",     1, 1, 0,  0,  0,  P_W | P_S, "mov r1, r7"},
                 {"mul",     1, 1, 0,  0,  0,  P_W | P_S, "mul r1, r1, r1"},
                 {"xor",     1, 1, 0,  0,  0,  P_W | P_S, "xor r1, r1, r2"},
                 {"cmplti",  1, 1, 0,  0,  0,  P_W | P_S, "cmplti r1, r1, 5"},
                 {"muli",    1, 1, 0,  0,  0,  P_W | P_S, "muli r1, r1, 3"},
                 {"cmplt",   1, 1, 0,  0,  0,  P_W | P_S, "cmplt r1, r1, r2"},
                 {"put",     1, 1, 0,  0,  0,  P_S,       "put $scratch, r1"},
                 {"ld64",    1, 1, 0,  8,  0,  P_W,       "ld64 r10, [r0+8]"},
                 {"fadd",    1, 1, 0,  0,  0,  P_W,       "fadd r9, r10, r11"},
                 {"fmul",    1, 1, 0,  0,  0,  P_W,       "fmul r9, r9, r10"},
                 {"fma",     1, 1, 0,  0,  0,  P_W,       "fma r9, r9, r10, r11"},
                 {"v2add",   1, 1, 0,  0,  0,  P_W,       "v2add r10, r10, r12"},
                 {"v2fma",   1, 1, 0,  0,  0,  P_W,       "v2fma r12, r10, r12, r10"},
                 {"itof",    1, 1, 0,  0,  0,  P_W,       "itof r9, r1"},
                 {"ampz",    1, 1, 0,  0,  0,  P_W,       "ampz"},
                 {"f32amp",  1, 1, 16, 12, 8,  0,         "f32amp r4, r5"},
                 {"f16amp",  1, 1, 8,  16, 8,  0,         "f16amp r4, r5"},
                 {"ampst",   1, 1, 0,  0,  64, P_WMEM,    "ampst"},
};
/* clang-format on */
enum { NROWS = sizeof rows / sizeof rows[0] };

static unsigned ceil_div(unsigned a, unsigned b)
{
    return b ? (a + b - 1) / b : 0;
}

static unsigned max_u(unsigned a, unsigned b)
{
    return a > b ? a : b;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* Issue slots a worker spends on row r: max(wcycles, MACs / MAC rate, bandwidth). */
static unsigned wslots(int r, const machine *m)
{
    const oprow *o = &rows[r];
    unsigned s = max_u(o->wcycles, ceil_div(o->macs, m->macs_per_issue));
    s = max_u(s, ceil_div(o->ld, m->load_bpc));
    return max_u(s, ceil_div(o->st, m->store_bpc));
}

static int row_of(const char *name)
{
    for (int r = 0; r < (int)NROWS; r++)
        if (strcmp(rows[r].name, name) == 0)
            return r;
    fail_msg("no cost row for `%s`", name);
    return -1;
}

/* ---- the abstract program ---- */

enum {
    I_OP,     /* rows[row]: `text`, or the row's own text */
    I_CCOUNT, /* get r6, $ccount; st32pi r6, [r2]+=4: a counter the test compares */
    I_LOAD,   /* supervisor: ld32 r<reg>, [r5+n] */
    I_USE,    /* supervisor: reads r<reg> (n = 0: add, 1: st32) */
    I_BR,     /* br to the next instruction */
    I_LOOP,   /* counter r<reg> = n - 1 (+ $tile when tile); body; brnzdec: n (+ tile) passes */
    I_RPT,    /* li r14, n; rpt r14, end; body (no branches): n passes */
    I_END,    /* closes the innermost I_LOOP or I_RPT */
    I_RUN,    /* run w<n>, r3 */
    I_RUNALL, /* runall w<n>, r3 */
    I_JOIN,
    I_SYNC, /* sync internal */
    I_SEND, /* li r12, n; send r5, r12, r13, r0 */
    I_HALT,
    I_EXIT,
};

typedef struct item {
    uint8_t kind, reg, tile;
    uint16_t n;
    int16_t row;      /* I_OP */
    const char *text; /* I_OP: NULL for the row's text */
} item;

/* The memory layout (macros: the assembly text spells them too). */
#define MEM_BASE 0x10000       /* above the program image */
#define WSTRIDE 2048           /* one worker's region: records, then its ampst area */
#define STRIDE (6 * WSTRIDE)   /* one run or runall's regions, one per worker context */
#define INBOX (MEM_BASE + 512) /* where sends land */

enum {
    MAXITEMS = 512,
    NPROGS = 3,
    MAXTILES = 6,
    WREC_MAX = 32,     /* records per worker (the ampst area starts at 128) */
    WMEM_MAX = 16,     /* P_WMEM ops per worker: 16 x 64 B from 128 stays in the region */
    SREC_MAX = 64,     /* supervisor records, at MEM_BASE */
    RUNS_MAX = 12,     /* run/runall per tile: 0x10000 + 13 x 12 KiB < Mk1's 256 KiB */
    WTRACE_MAX = 400,  /* worker instructions per run */
    STRACE_MAX = 4000, /* supervisor instructions per tile */
};

typedef struct prog {
    item sup[MAXITEMS];
    int nsup;
    item wk[NPROGS][MAXITEMS];
    int nwk[NPROGS];
    int ntiles;
    int neighbour; /* sends go to the next tile (else to the sender) */
} prog;

static void add_item(item *it, int *n, item x)
{
    if (*n >= MAXITEMS)
        fail_msg("program too long");
    it[(*n)++] = x;
}

static void add_op(item *it, int *n, const char *text)
{
    char name[16];
    sscanf(text, "%15s", name);
    add_item(it, n, (item){.kind = I_OP, .row = (int16_t)row_of(name), .text = text});
}

static void add_kind(item *it, int *n, int kind, int nn)
{
    add_item(it, n, (item){.kind = (uint8_t)kind, .n = (uint16_t)nn});
}

/* ---- the dynamic instruction stream of an abstract program ---- */

enum { D_OP, D_CCOUNT, D_LOAD, D_USE, D_RUN, D_RUNALL, D_JOIN, D_SYNC, D_SEND, D_HALT, D_EXIT };

typedef struct dop {
    uint8_t kind, reg;
    uint16_t arg; /* D_RUN/D_RUNALL: the worker program; D_SEND: bytes */
    int16_t row;
} dop;

typedef struct trace {
    dop *d;
    int n, cap;
} trace;

static void push(trace *t, int kind, int row, int reg, int arg)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->d = realloc(t->d, (size_t)t->cap * sizeof *t->d);
        assert_non_null(t->d);
    }
    t->d[t->n++] = (dop){(uint8_t)kind, (uint8_t)reg, (uint16_t)arg, (int16_t)row};
}

/* The I_END closing the block whose body starts at i. */
static int block_end(const item *it, int i)
{
    for (int depth = 0;; i++) {
        if (it[i].kind == I_LOOP || it[i].kind == I_RPT)
            depth++;
        else if (it[i].kind == I_END && depth-- == 0)
            return i;
    }
}

static void flatten(const item *it, int lo, int hi, int tile, trace *t);

static int flatten_block(const item *it, int i, int tile, trace *t)
{
    const item *x = &it[i];
    int e = block_end(it, i + 1);
    int n = x->n + (x->tile ? tile : 0);
    if (x->kind == I_RPT) {
        push(t, D_OP, R_LI, 0, 0);
        push(t, D_OP, R_RPT, 0, 0);
    } else if (x->tile) {
        push(t, D_OP, R_GET, 0, 0);
        push(t, D_OP, R_ADDI, 0, 0);
    } else {
        push(t, D_OP, R_LI, 0, 0);
    }
    for (int k = 0; k < n; k++) {
        flatten(it, i + 1, e, tile, t);
        if (x->kind == I_LOOP)
            push(t, D_OP, R_BRNZDEC, 0, 0);
    }
    return e;
}

static void flatten(const item *it, int lo, int hi, int tile, trace *t)
{
    for (int i = lo; i < hi; i++) {
        const item *x = &it[i];
        switch (x->kind) {
        case I_OP: push(t, D_OP, x->row, 0, 0); break;
        case I_CCOUNT:
            push(t, D_CCOUNT, R_GET, 0, 0);
            push(t, D_OP, R_ST32PI, 0, 0);
            break;
        case I_LOAD: push(t, D_LOAD, R_LD32, x->reg, 0); break;
        case I_USE: push(t, D_USE, x->n ? R_ST32 : R_ADD, x->reg, 0); break;
        case I_BR: push(t, D_OP, R_BR, 0, 0); break;
        case I_LOOP:
        case I_RPT: i = flatten_block(it, i, tile, t); break;
        case I_RUN: push(t, D_RUN, R_RUN, 0, x->n); break;
        case I_RUNALL: push(t, D_RUNALL, R_RUNALL, 0, x->n); break;
        case I_JOIN: push(t, D_JOIN, R_JOIN, 0, 0); break;
        case I_SYNC: push(t, D_SYNC, R_SYNC, 0, 0); break;
        case I_SEND:
            push(t, D_OP, R_LI, 0, 0);
            push(t, D_SEND, R_SEND, 0, x->n);
            break;
        case I_HALT: push(t, D_HALT, R_HALT, 0, 0); break;
        case I_EXIT: push(t, D_EXIT, R_EXIT, 0, 0); break;
        }
    }
}

/* ---- the reference: one tile cycle at a time ---- */

typedef struct rec {
    uint32_t tile, addr, cycle;
} rec;

typedef struct recs {
    rec *r;
    size_t n, cap;
} recs;

static void expect(recs *x, uint32_t tile, uint32_t addr, uint64_t cycle)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 256;
        x->r = realloc(x->r, x->cap * sizeof *x->r);
        assert_non_null(x->r);
    }
    x->r[x->n++] = (rec){tile, addr, (uint32_t)cycle};
}

typedef struct wctx {
    const trace *tr; /* NULL: the context is free */
    int pc;
    uint64_t next; /* its next issue */
    uint32_t rec;  /* where its next record goes */
} wctx;

typedef struct rtile {
    uint32_t id, dst; /* the tile, and where its sends go */
    trace sup;
    int pc;
    uint64_t ready, ld_ready[16];
    wctx w[NWORKERS];
    int owner[BARREL]; /* the worker context owning slot s, or -1 */
    uint64_t last_exit, port_free, land_end;
    uint32_t runs, srec;
    int wait; /* D_JOIN, D_SYNC or D_HALT issued at wait_at, waiting for the workers */
    uint64_t wait_at;
} rtile;

typedef struct ref {
    const machine *m;
    const trace *wk; /* [NPROGS] */
    recs *out;
} ref;

/* docs/fabric.md: L(a, b) = base + per_supertile |drow| + per_column |dcol| + turn */
static uint64_t latency(uint32_t a, uint32_t b)
{
    uint32_t ca = a / TILES_PER_COLUMN, cb = b / TILES_PER_COLUMN;
    uint32_t ra = a % TILES_PER_COLUMN / TILES_PER_SUPERTILE;
    uint32_t rb = b % TILES_PER_COLUMN / TILES_PER_SUPERTILE;
    uint32_t dc = ca > cb ? ca - cb : cb - ca, dr = ra > rb ? ra - rb : rb - ra;
    return XCHG_BASE + XCHG_PER_SUPERTILE * dr + XCHG_PER_COLUMN * dc + (dc ? XCHG_TURN : 0);
}

/* The worker owning slot c mod 6, if any, issues when its turn has come. Returns 1 when a
 * worker owns the slot (the supervisor cannot use it this cycle). */
static int worker_turn(const ref *R, rtile *t, uint64_t c)
{
    int k = t->owner[c % BARREL];
    if (k < 0)
        return 0;
    wctx *w = &t->w[k];
    if (c < w->next)
        return 1;
    const dop *d = &w->tr->d[w->pc++];
    if (d->kind == D_CCOUNT) {
        expect(R->out, t->id, w->rec, c);
        w->rec += 4;
    }
    if (d->kind == D_EXIT) { /* frees the slot and the context from c + 1 */
        w->tr = NULL;
        t->owner[c % BARREL] = -1;
        t->last_exit = max64(t->last_exit, c + 1);
        return 1;
    }
    w->next = c + BARREL * (uint64_t)wslots(d->row, R->m);
    return 1;
}

static void start_worker(const ref *R, rtile *t, int k, int p, uint64_t first, uint32_t base)
{
    t->w[k] = (wctx){&R->wk[p], 0, first, base + (uint32_t)k * WSTRIDE};
    t->owner[first % BARREL] = k;
}

static int workers_busy(const rtile *t)
{
    for (int k = 0; k < NWORKERS; k++)
        if (t->w[k].tr)
            return 1;
    return 0;
}

static void sup_issue(const ref *R, rtile *t, uint64_t c, const dop *d)
{
    t->pc++;
    t->ready = c + rows[d->row].scycles;
    uint32_t base = MEM_BASE + (t->runs + 1) * STRIDE;
    switch (d->kind) {
    case D_CCOUNT: expect(R->out, t->id, MEM_BASE + 4 * t->srec++, c); break;
    case D_LOAD: t->ld_ready[d->reg] = c + LOAD_USE; break;
    case D_RUN: {
        int k = 0;
        while (t->w[k].tr)
            k++; /* the lowest free context */
        start_worker(R, t, k, d->arg, c + BARREL, base);
        t->runs++;
        break;
    }
    case D_RUNALL:
        for (int k = 0; k < NWORKERS; k++)
            start_worker(R, t, k, d->arg, c + BARREL + (uint64_t)k, base);
        t->runs++;
        break;
    case D_SEND: {
        uint64_t s = max64(c, t->port_free), words = ceil_div(d->arg, XCHG_BPC);
        t->port_free = s + words;
        t->land_end = max64(t->land_end, s + latency(t->id, t->dst) + words);
        break;
    }
    case D_JOIN:
    case D_SYNC:
    case D_HALT:
        t->wait = d->kind;
        t->wait_at = c;
        break;
    }
}

/* Step tile t from cycle c (its supervisor ready) until it arrives at a sync or halts;
 * returns the arrival (or the finish). */
static uint64_t ref_superstep(const ref *R, rtile *t, uint64_t c)
{
    t->ready = c;
    for (;; c++) {
        int owned = worker_turn(R, t, c);
        if (t->wait) {
            if (workers_busy(t))
                continue;
            uint64_t done = max64(t->wait_at + rows[t->sup.d[t->pc - 1].row].scycles, t->last_exit);
            if (t->wait != D_JOIN) {
                t->wait = 0;
                return max64(done, t->port_free);
            }
            t->wait = 0;
            t->ready = done;
        }
        const dop *d = &t->sup.d[t->pc];
        if (owned || c < t->ready || (d->kind == D_USE && c < t->ld_ready[d->reg]))
            continue;
        sup_issue(R, t, c, d);
    }
}

/* Total cycles of program p on machine m; the records the program stores go to out. */
static uint64_t reference(const prog *p, const machine *m, recs *out)
{
    trace wk[NPROGS] = {{0}};
    for (int k = 0; k < NPROGS; k++)
        flatten(p->wk[k], 0, p->nwk[k], 0, &wk[k]);
    ref R = {m, wk, out};
    rtile *t = calloc((size_t)p->ntiles, sizeof *t);
    for (int i = 0; i < p->ntiles; i++) {
        t[i].id = (uint32_t)i;
        t[i].dst = (uint32_t)(p->neighbour ? (i + 1) % p->ntiles : i);
        memset(t[i].owner, -1, sizeof t[i].owner);
        flatten(p->sup, 0, p->nsup, i, &t[i].sup);
    }
    uint64_t at = 0, total = 0;
    for (;;) {
        uint64_t last = 0;
        for (int i = 0; i < p->ntiles; i++) {
            last = max64(last, ref_superstep(&R, &t[i], at));
            last = max64(last, t[i].land_end);
            t[i].land_end = 0;
        }
        if (t[0].sup.d[t[0].pc - 1].kind == D_HALT) {
            total = last;
            break;
        }
        at = last + SYNC_INTERNAL; /* every tile resumes at the release */
    }
    for (int i = 0; i < p->ntiles; i++)
        free(t[i].sup.d);
    for (int k = 0; k < NPROGS; k++)
        free(wk[k].d);
    free(t);
    return total;
}

/* ---- the same program as assembly ---- */

typedef struct sbuf {
    char *s;
    size_t n, cap;
    int label;
} sbuf;

static void emit(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        b->cap = 2 * b->cap + (size_t)k + 256;
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
}

static void emit_open(sbuf *b, const item *x, int id)
{
    if (x->kind == I_RPT)
        emit(b, "  li r14, %d\n  rpt r14, L%d\n", x->n, id);
    else if (x->tile)
        emit(b, "  get r%d, $tile\n  addi r%d, r%d, %d\nL%d:\n", x->reg, x->reg, x->reg, x->n - 1,
             id);
    else
        emit(b, "  li r%d, %d\nL%d:\n", x->reg, x->n - 1, id);
}

static void emit_items(sbuf *b, const item *it, int n)
{
    int stack[16], ids[16], sp = 0;
    for (int i = 0; i < n; i++) {
        const item *x = &it[i];
        switch (x->kind) {
        case I_OP: emit(b, "  %s\n", x->text ? x->text : rows[x->row].text); break;
        case I_CCOUNT: emit(b, "  get r6, $ccount\n  st32pi r6, [r2]+=4\n"); break;
        case I_LOAD: emit(b, "  ld32 r%d, [r5+%d]\n", x->reg, x->n); break;
        case I_USE:
            if (x->n)
                emit(b, "  st32 r%d, [r5+772]\n", x->reg);
            else
                emit(b, "  add r11, r%d, r1\n", x->reg);
            break;
        case I_BR:
            emit(b, "  br L%d\nL%d:\n", b->label, b->label);
            b->label++;
            break;
        case I_LOOP:
        case I_RPT:
            stack[sp] = i, ids[sp++] = b->label;
            emit_open(b, x, b->label++);
            break;
        case I_END: {
            const item *o = &it[stack[--sp]];
            if (o->kind == I_RPT)
                emit(b, "L%d:\n", ids[sp]);
            else
                emit(b, "  brnzdec r%d, L%d\n", o->reg, ids[sp]);
            break;
        }
        case I_RUN: emit(b, "  run w%d, r3\n", x->n); break;
        case I_RUNALL: emit(b, "  runall w%d, r3\n", x->n); break;
        case I_JOIN: emit(b, "  join\n"); break;
        case I_SYNC: emit(b, "  sync internal\n"); break;
        case I_SEND: emit(b, "  li r12, %d\n  send r5, r12, r13, r0\n", x->n); break;
        case I_HALT: emit(b, "  halt\n"); break;
        case I_EXIT: emit(b, "  exit\n"); break;
        }
    }
}

static char *to_asm(const prog *p)
{
    sbuf b = {0};
    emit(&b, "main:\n");
    emit_items(&b, p->sup, p->nsup);
    for (int k = 0; k < NPROGS; k++) {
        emit(&b, "w%d:\n", k);
        emit_items(&b, p->wk[k], p->nwk[k]);
    }
    return b.s;
}

/* ---- the engine ---- */

typedef struct outcome {
    uint64_t cycles;
    char why[256]; /* the first record that differs, or "" */
} outcome;

static sys *machine_system(const machine *m, uint32_t ntiles, const isa_prog *prog)
{
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 1, .max_cycles = 1000000};
    if (mach_builtin(&cfg.m, m->preset, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    if (cfg.m.amp_macs_per_issue != m->macs_per_issue)
        fail_msg("%s: the preset says %u MAC per issue, docs/timing.md %u", m->preset,
                 cfg.m.amp_macs_per_issue, m->macs_per_issue);
    if ((m->load_bpc && m->load_bpc != cfg.m.load_bytes_per_cycle) ||
        (m->store_bpc && m->store_bpc != cfg.m.store_bytes_per_cycle))
        fail_msg("%s: the preset's load/store bytes per cycle differ from the test's", m->preset);
    cfg.m.nipus = 1;
    cfg.m.tiles_per_ipu = ntiles;
    sys *s = sys_new(&cfg, &e);
    if (!s || eng_load(sys_engine(s), prog, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    return s;
}

static void check_records(eng *g, const recs *want, outcome *o)
{
    for (size_t i = 0; i < want->n && !o->why[0]; i++) {
        const rec *r = &want->r[i];
        uint32_t v;
        memcpy(&v, eng_tile_mem(g, 0, r->tile) + r->addr, 4);
        if (v != r->cycle)
            snprintf(o->why, sizeof o->why, "record %zu (tile %u, 0x%x): engine %u, reference %u",
                     i, r->tile, r->addr, v, r->cycle);
    }
}

static outcome engine_run(const char *src, const machine *m, int ntiles, const recs *want)
{
    err e;
    err_clear(&e);
    isa_prog prog;
    tu_assemble("gen.s", src, &prog);
    if (prog.size > MEM_BASE)
        fail_msg("program image of %u bytes reaches the data", prog.size);
    sys *sy = machine_system(m, (uint32_t)ntiles, &prog);
    eng *g = sys_engine(sy);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s\n%.3000s", e.msg, src);
    eng_stats st;
    eng_get_stats(g, &st);
    outcome o = {st.cycles, ""};
    if (want)
        check_records(g, want, &o);
    sys_free(sy);
    isa_prog_free(&prog);
    return o;
}

/* ---- the generator ---- */

typedef struct gen {
    uint64_t s;
    prog *p;
    item *it;
    int *n;
    int running; /* workers started since the last join or sync (at most six) */
    int runs;    /* run/runall items so far */
} gen;

static unsigned rnd(gen *g, unsigned n)
{
    g->s = g->s * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((g->s >> 33) % n);
}

static void add_pick(gen *g, unsigned pick)
{
    int r;
    do
        r = (int)rnd(g, NROWS);
    while (!(rows[r].pick & pick));
    add_item(g->it, g->n, (item){.kind = I_OP, .row = (int16_t)r});
}

static void gen_wbody(gen *g, int depth, int in_rpt);

static void gen_block(gen *g, int kind, int depth, void (*body)(gen *, int, int))
{
    item x = {.kind = (uint8_t)kind, .reg = (uint8_t)(7 + depth)};
    x.n = (uint16_t)(kind == I_RPT ? rnd(g, 5) : 1 + rnd(g, 4));
    add_item(g->it, g->n, x);
    body(g, depth + 1, kind == I_RPT);
    add_kind(g->it, g->n, I_END, 0);
}

/* An AMP item: ampst, or a whole row: 8 f32amp steps, or ampz, 4 f16amp steps, ampz (so an
 * f16 row never meets a waiting f32 row). Each row first points r4 (partials) at the worker's
 * AMP area and r5 (inputs) at its region, so memory stays in the region however often loops
 * repeat the row (its finished row is stored back to the same place). */
static void gen_amp(gen *g)
{
    unsigned k = rnd(g, 3);
    if (k == 0) {
        add_pick(g, P_WMEM);
        return;
    }
    if (k == 2)
        add_op(g->it, g->n, "ampz");
    add_op(g->it, g->n, "mov r4, r3");
    add_op(g->it, g->n, "mov r5, r0");
    for (int s = 0; s < (k == 1 ? 8 : 4); s++)
        add_op(g->it, g->n, k == 1 ? "f32amp r4, r5" : "f16amp r4, r5");
    if (k == 2)
        add_op(g->it, g->n, "ampz");
}

static void gen_witem(gen *g, int depth, int in_rpt)
{
    unsigned r = rnd(g, 100);
    if (r < 40 || (r >= 72 && (in_rpt || depth >= 2)))
        add_pick(g, P_W);
    else if (r < 55)
        add_kind(g->it, g->n, I_CCOUNT, 0);
    else if (r < 72)
        gen_amp(g);
    else
        gen_block(g, r < 86 ? I_LOOP : I_RPT, depth, gen_wbody);
}

static void gen_wbody(gen *g, int depth, int in_rpt)
{
    int k = 1 + (int)rnd(g, in_rpt ? 3 : 5);
    for (int j = 0; j < k; j++)
        gen_witem(g, depth, in_rpt);
}

/* A worker: its region is r0 + $wid x WSTRIDE; records from there, ampst from +128. */
static void gen_worker(gen *g, item *it, int *n)
{
    static const char *const setup[] = {
        "get r1, $wid", "muli r1, r1, " STR(WSTRIDE), "add r0, r0, r1",
        "mov r2, r0",   "addi r3, r0, 128",           "mov r4, r0",
        "mov r5, r0",
    };
    *n = 0;
    g->it = it, g->n = n;
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++)
        add_op(it, n, setup[i]);
    gen_wbody(g, 0, 0);
    add_kind(it, n, I_EXIT, 0);
}

static void gen_sbody(gen *g, int depth, int in_rpt);

static void gen_run(gen *g, int all)
{
    add_op(g->it, g->n, "addi r3, r3, " STR(STRIDE));
    add_kind(g->it, g->n, all ? I_RUNALL : I_RUN, (int)rnd(g, NPROGS));
    g->running = all ? NWORKERS : g->running + 1;
    g->runs++;
}

/* A counted loop or rpt in the supervisor: a body that starts workers joins them at its
 * end (so every pass starts with contexts free). An rpt body may end in run, runall, join or
 * send (the engine once ran such a body only once: tests/isa/sup_rpt_run.s). */
static void gen_sblock(gen *g, int kind, int depth)
{
    item x = {.kind = (uint8_t)kind, .reg = (uint8_t)(7 + depth)};
    x.n = (uint16_t)(kind == I_RPT ? rnd(g, 5) : 1 + rnd(g, 3));
    x.tile = (uint8_t)(kind == I_LOOP && rnd(g, 2)); /* n + $tile passes */
    add_item(g->it, g->n, x);
    int runs = g->runs, running = g->running;
    gen_sbody(g, depth + 1, kind == I_RPT);
    if (g->runs != runs) {
        add_kind(g->it, g->n, I_JOIN, 0);
        g->running = 0;
    }
    if (x.n == 0) /* rpt 0 skips its body, its joins too */
        g->running = running;
    add_kind(g->it, g->n, I_END, 0);
}

static void gen_sitem(gen *g, int depth, int in_rpt)
{
    unsigned r = rnd(g, 100);
    item *it = g->it;
    int *n = g->n;
    if (r < 10)
        add_item(it, n,
                 (item){.kind = I_LOAD,
                        .reg = (uint8_t)(9 + rnd(g, 2)),
                        .n = (uint16_t)(4 * rnd(g, 16))});
    else if (r < 20)
        add_item(it, n,
                 (item){.kind = I_USE, .reg = (uint8_t)(9 + rnd(g, 2)), .n = (uint16_t)rnd(g, 2)});
    else if (r < 26)
        add_kind(it, n, I_CCOUNT, 0);
    else if (r < 31 && !in_rpt)
        add_kind(it, n, I_BR, 0);
    else if (r < 39 && g->running < NWORKERS)
        gen_run(g, 0);
    else if (r < 43 && g->running == 0)
        gen_run(g, 1);
    else if (r < 49)
        add_kind(it, n, I_JOIN, 0), g->running = 0;
    else if (r < 55)
        add_kind(it, n, I_SEND, 4 * (1 + (int)rnd(g, 64)));
    else if (r < 62 && depth < 2 && !in_rpt)
        gen_sblock(g, I_LOOP, depth);
    else if (r < 67 && depth < 2 && !in_rpt)
        gen_sblock(g, I_RPT, depth);
    else if (r < 72 && depth == 0)
        add_kind(it, n, I_SYNC, 0), g->running = 0;
    else
        add_pick(g, P_S);
}

static void gen_sbody(gen *g, int depth, int in_rpt)
{
    int k = depth ? 1 + (int)rnd(g, 4) : 4 + (int)rnd(g, 14);
    for (int j = 0; j < k; j++)
        gen_sitem(g, depth, in_rpt);
}

/* The supervisor: records at MEM_BASE (r2), worker regions from MEM_BASE + STRIDE (r3),
 * loads and sends from MEM_BASE (r5), sends land at INBOX (r0) of this tile or the next. */
static void gen_super(gen *g)
{
    static const char *const setup[] = {
        "li r2, " STR(MEM_BASE), "li r3, " STR(MEM_BASE), "li r5, " STR(MEM_BASE),
        "li r0, " STR(INBOX),    "get r13, $tile",
    };
    static const char *const next_tile[] = {
        "get r1, $ntiles",
        "addi r13, r13, 1",
        "cmplt r1, r13, r1",
        "mul r13, r13, r1",
    };
    prog *p = g->p;
    p->nsup = 0;
    g->it = p->sup, g->n = &p->nsup, g->running = 0, g->runs = 0;
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++)
        add_op(p->sup, &p->nsup, setup[i]);
    for (size_t i = 0; p->neighbour && i < sizeof next_tile / sizeof next_tile[0]; i++)
        add_op(p->sup, &p->nsup, next_tile[i]);
    gen_sbody(g, 0, 0);
    add_kind(p->sup, &p->nsup, I_HALT, 0);
}

static int count(const trace *t, int kind, unsigned pick)
{
    int c = 0;
    for (int i = 0; i < t->n; i++)
        c += pick ? (rows[t->d[i].row].pick & pick) != 0 : t->d[i].kind == kind;
    return c;
}

/* Within the memory layout and the time budget? */
static int worker_fits(const item *it, int n)
{
    trace t = {0};
    flatten(it, 0, n, 0, &t);
    int ok =
        t.n <= WTRACE_MAX && count(&t, D_CCOUNT, 0) <= WREC_MAX && count(&t, 0, P_WMEM) <= WMEM_MAX;
    free(t.d);
    return ok;
}

static int super_fits(const prog *p)
{
    trace t = {0};
    flatten(p->sup, 0, p->nsup, p->ntiles - 1, &t); /* the last tile loops most */
    int ok = t.n <= STRACE_MAX && count(&t, D_CCOUNT, 0) <= SREC_MAX &&
             count(&t, D_RUN, 0) + count(&t, D_RUNALL, 0) <= RUNS_MAX;
    free(t.d);
    return ok;
}

static void gen_prog(gen *g, prog *p)
{
    static const int tiles[] = {1, 1, 2, 3, 6};
    g->p = p;
    p->ntiles = tiles[rnd(g, sizeof tiles / sizeof tiles[0])];
    for (int k = 0; k < NPROGS; k++) {
        do
            gen_worker(g, p->wk[k], &p->nwk[k]);
        while (!worker_fits(p->wk[k], p->nwk[k]));
    }
    p->neighbour = (int)rnd(g, 2);
    do
        gen_super(g);
    while (!super_fits(p));
}

/* ---- the tests ---- */

static const machine *mk2 = &machines[0];

/* A one-tile program: supervisor items, worker w0 of k - 1 addi then exit. */
static void simple_prog(prog *p, const int *kinds, int nk, int k)
{
    memset(p, 0, sizeof *p);
    p->ntiles = 1;
    for (int i = 0; i < nk; i++)
        add_kind(p->sup, &p->nsup, kinds[i], 0);
    for (int i = 1; i < k; i++)
        add_op(p->wk[0], &p->nwk[0], "addi r1, r1, 1");
    add_kind(p->wk[0], &p->nwk[0], I_EXIT, 0);
    for (int w = 1; w < NPROGS; w++)
        add_kind(p->wk[w], &p->nwk[w], I_EXIT, 0);
}

/* Engine and reference both give `want`. */
static void check_both(const prog *p, uint64_t want)
{
    char *src = to_asm(p);
    recs r = {0};
    assert_int_equal(engine_run(src, mk2, p->ntiles, NULL).cycles, want);
    assert_int_equal(reference(p, mk2, &r), want);
    free(r.r);
    free(src);
}

/* One worker of k instructions: exit at 6 + 6(k-1); join at 7 (slot 0 is the worker's at 6)
 * completes at max(13, exit + 1); halt there finishes one cycle later. */
static void test_one_worker_k(void **state)
{
    (void)state;
    static const int kinds[] = {I_RUN, I_JOIN, I_HALT};
    prog *p = malloc(sizeof *p);
    for (int k = 1; k <= 40; k++) {
        simple_prog(p, kinds, 3, k);
        uint64_t exit_at = 6 + 6 * (uint64_t)(k - 1);
        check_both(p, max64(exit_at + 1, 13) + 1);
    }
    free(p);
}

/* Six workers of k instructions: worker j exits at 6 + j + 6(k-1). The supervisor has no slot
 * until slot 0 frees (at exit_0 + 6 = 12 + 6(k-1)), where join issues; it completes at
 * max(join + 6, exit_5 + 1) and halt finishes one cycle later. */
static void test_six_workers_k(void **state)
{
    (void)state;
    static const int kinds[] = {I_RUNALL, I_JOIN, I_HALT};
    prog *p = malloc(sizeof *p);
    for (int k = 1; k <= 40; k++) {
        simple_prog(p, kinds, 3, k);
        uint64_t join_at = 12 + 6 * (uint64_t)(k - 1);
        uint64_t exit5 = 6 + 5 + 6 * (uint64_t)(k - 1);
        check_both(p, max64(join_at + 6, exit5 + 1) + 1);
    }
    free(p);
}

/* A supervisor of n ALU + br pairs: 7 cycles each, then halt. */
static void test_supervisor_branches(void **state)
{
    (void)state;
    prog *p = malloc(sizeof *p);
    for (int n = 0; n <= 20; n++) {
        simple_prog(p, NULL, 0, 1);
        for (int i = 0; i < n; i++) {
            add_op(p->sup, &p->nsup, "addi r1, r1, 1");
            add_kind(p->sup, &p->nsup, I_BR, 0);
        }
        add_kind(p->sup, &p->nsup, I_HALT, 0);
        check_both(p, 7 * (uint64_t)n + 1);
    }
    free(p);
}

enum { TRIALS = 1000 };

/* The cost table is keyed by mnemonic: one row each. */
static void test_rows_unique(void **state)
{
    (void)state;
    for (int r = 0; r < (int)NROWS; r++)
        assert_int_equal(row_of(rows[r].name), r);
}

/* Random programs on Mk2 and Mk1: engine == cycle-stepped reference, in total cycles and in
 * every stored $ccount. */
static void test_random_against_reference(void **state)
{
    (void)state;
    prog *p = malloc(sizeof *p);
    gen g = {.s = 12345};
    for (int trial = 0; trial < TRIALS; trial++) {
        gen_prog(&g, p);
        char *src = to_asm(p);
        for (size_t mi = 0; mi < sizeof machines / sizeof machines[0]; mi++) {
            const machine *m = &machines[mi];
            recs r = {0};
            uint64_t want = reference(p, m, &r);
            outcome got = engine_run(src, m, p->ntiles, &r);
            if (got.cycles != want || got.why[0])
                fail_msg("trial %d on %s (%d tiles): engine %llu cycles, reference %llu; %s\n"
                         "program:\n%.4000s",
                         trial, m->preset, p->ntiles, (unsigned long long)got.cycles,
                         (unsigned long long)want, got.why, src);
            free(r.r);
        }
        free(src);
    }
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_worker_k),
        cmocka_unit_test(test_six_workers_k),
        cmocka_unit_test(test_supervisor_branches),
        cmocka_unit_test(test_rows_unique),
        cmocka_unit_test(test_random_against_reference),
    };
    return cmocka_run_group_tests_name("tile", tests, NULL, NULL);
}
