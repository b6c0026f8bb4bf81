/* test_micro: every microbenchmark row against a figure this file derives by hand from the
 * preset's parameters and the timing rules of docs/timing.md and docs/fabric.md (never from
 * the code's formulas in workloads/micro/micro.c): exact where the program's cycles are
 * deterministic, within a stated tolerance where they are not; the figures follow a changed
 * parameter; results do not depend on host threads; the CSV is written whole (through the
 * built ipusim, $(BUILD)/ipusim).
 *
 * IPUSIM_SLOW_TESTS=0 (the sanitizer builds in CI) runs the whole-IPU benchmarks on a
 * 128-tile IPU: the derivations below take the tile count as a parameter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workloads/micro/micro.h"

static char bin[4096];
static char tmpdir[64];

static void load(mach *m, const char *name)
{
    err e;
    err_clear(&e);
    assert_int_equal(mach_builtin(m, name, &e), ERR_OK);
    if (!tu_slow_tests())
        m->tiles_per_ipu = 128;
}

static void run_ok(const mach *m, const char *name, unsigned threads, wl_micro_table *t)
{
    err *e = malloc(sizeof *e);
    assert_non_null(e);
    err_clear(e);
    wl_micro_cfg cfg = {.threads = threads};
    memset(t, 0, sizeof *t);
    int rc = wl_micro_run(m, name, &cfg, t, e);
    if (rc != ERR_OK)
        fail_msg("micro %s on %s: %s", name ? name : "all", m->name, e->msg);
    free(e);
}

/* ---- the expected figures ----
 *
 * What the derivations take from the presets. Both Mk2 and Mk1 lay tiles out in columns of 64
 * with supertiles of 4 (tile t: column t / 64, supertile (t mod 64) / 4), xchg_base 8,
 * xchg_per_supertile 1, xchg_per_column 6, xchg_turn 4, 4 bytes per port cycle, sync_internal
 * 90, 15 ns per sync hop, 100 ns per IPU-Link hop; check_facts() holds the presets to them, so
 * a changed preset fails there first. What differs is in the table below. */

typedef struct facts {
    const char *name;
    double f;           /* clock, Hz */
    double sync_ext[4]; /* external sync of 2, 4, 8, 16 IPUs, cycles */
    double link_lat;    /* IPU-Link latency to the first word, cycles */
    double link_one;    /* one physical IPU-Link, one direction, B/s */
    double link_all;    /* every link of the benchmark's IPU, B/s */
    double ring_hop;    /* the slowest hop of the 4-IPU all-reduce ring, B/s */
    double amp_slots;   /* issue slots per f32amp: 16 AMP units / amp_macs_per_issue */
} facts;

/* External sync: 90 + ceil(15 ns x f x hops x 2), hops = 1 + (n / 2) / 2 (integer division)
 * = 1, 2, 3, 5 for n = 2, 4, 8, 16:
 *   mk2 (1.325 GHz): 39.75 -> 40, 79.5 -> 80, 119.25 -> 120, 198.75 -> 199: 130, 170, 210, 289
 *   mk1 (1.6 GHz):   48, 96, 144, 240:                                      138, 186, 234, 330
 * IPU-Link latency: tile to link port (8), the hop rounded up to a cycle, port to tile (8):
 *   mk2: 16 + ceil(132.5) = 149; mk1: 16 + 160 = 176.
 * Links (docs/fabric.md, "IPU-Links"): mk2 32 GB/s a link, 10 wired at IPU 0 of a 2x2 torus of
 * boxes: 320 GB/s; the ring of one box goes over 2 links per hop: 64 GB/s. mk1 13.6 GB/s a link;
 * the benchmark's IPU 2 of the 16-IPU ladder has its rung (4 links) and two rails (3 each):
 * 136 GB/s; the ring 0, 2, 3, 1 of two cards alternates rails (3 x 13.6 = 40.8 GB/s) and rungs
 * (4 x 13.6 = 54.4 GB/s), so its slowest hop is a rail. */
static const facts presets[] = {
    {"mk2", 1.325e9, {130, 170, 210, 289}, 149, 32e9, 320e9, 64e9, 1},
    {"mk1", 1.6e9, {138, 186, 234, 330}, 176, 13.6e9, 136e9, 40.8e9, 2},
};

static const facts *facts_of(const mach *m)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, m->name) == 0)
            return &presets[i];
    fail_msg("no hand derivation for machine %s", m->name);
    return NULL;
}

static void check_facts(const mach *m, const facts *x)
{
    assert_int_equal(m->tiles_per_column, 64);
    assert_int_equal(m->tiles_per_supertile, 4);
    assert_int_equal(m->tiles_per_ipu % 64, 0);
    assert_int_equal(m->xchg_base, 8);
    assert_int_equal(m->xchg_per_supertile, 1);
    assert_int_equal(m->xchg_per_column, 6);
    assert_int_equal(m->xchg_turn, 4);
    assert_int_equal(m->xchg_bytes_per_cycle, 4);
    assert_int_equal(m->sync_internal, 90);
    assert_int_equal(m->sync_hop_ps, 15000);
    assert_int_equal(m->link_latency_ns, 100);
    assert_true((double)m->clock_hz == x->f);
    assert_true((double)m->link_bytes_per_s == x->link_one);
    assert_true(16.0 / m->amp_macs_per_issue == x->amp_slots);
}

/* A row's figure must lie in [lo, hi] (lo == hi: exactly, to rounding of the division); its
 * implied column must equal `ideal`, the figure without the program's fixed costs. */
typedef struct want {
    double lo, hi, ideal;
    const char *why; /* the tolerance's reason, or "exact" */
} want;

static want exact(double v, double ideal)
{
    return (want){v, v, ideal, "exact"};
}

static want within(double v, double rel, double ideal, const char *why)
{
    return (want){v * (1 - rel), v * (1 + rel), ideal, why};
}

/* On-chip latency (the ping-pong of micro_pp.c measures the latency to the first word):
 *   tile 0 <-> 1: one supertile, 8
 *   tile 0 <-> 63: column 0, supertiles 0 and 15: 8 + 15 x 1 = 23
 *   tile 0 <-> n-1: the last tile of column n/64 - 1, supertile 15: 8 + 15 + 6 (n/64 - 1) + 4
 *   (mk2 159, mk1 135, a 128-tile IPU 33). */
static size_t want_xchg_latency(const mach *m, want *w)
{
    double n = m->tiles_per_ipu;
    w[0] = exact(8, 8);
    w[1] = exact(8 + 15, 8 + 15);
    w[2] = exact(8 + 15 + 6 * (n / 64 - 1) + 4, 8 + 15 + 6 * (n / 64 - 1) + 4);
    return 3;
}

/* One tile streams 64 KiB to tile n-1: 16384 port cycles, the last word lands 16384 + L(0,n-1)
 * cycles after the send; B/cycle = 65536 / that (ideal: the port's 4 B/cycle). All-to-all: 3 rounds, every tile sends 24000 B
 * (6000 port cycles) per round; a round's exchange lasts from its first send to its last word,
 * at least 6000 + 8 (every stream pays the shortest latency) and at most 6000 + L(0,n-1) (the
 * exchange compiler starts every send of a round in its first cycle when no receiver is shared;
 * the longest route of the chip) — the plan itself is not derived here. */
static size_t want_xchg_bandwidth(const mach *m, const facts *x, want *w)
{
    double n = m->tiles_per_ipu, far = 8 + 15 + 6 * (n / 64 - 1) + 4;
    w[0] = exact(65536.0 / (16384 + far), 4);
    double bytes = 3 * n * 24000, tbs = x->f / 1e12;
    w[1] = (want){bytes / (3 * (6000 + far)) * tbs, bytes / (3 * (6000 + 8)) * tbs, 4 * n * tbs,
                  "each round between its port time + 8 and + the chip's longest latency"};
    return 2;
}

/* 32 unrolled syncs, each 6 (the instruction) + the zone's latency: the row subtracts 6. */
static size_t want_sync(const facts *x, want *w)
{
    w[0] = exact(90, 90);
    for (int k = 0; k < 4; k++)
        w[1 + k] = exact(x->sync_ext[k], x->sync_ext[k]);
    return 5;
}

/* Bandwidth rows: each connection is given bytes that drain in D = 32768 cycles (the
 * benchmark's design); the trace's span is D + the latency to the first word (the flows start
 * together and share the connection evenly), so the figure is rate x D / (D + link_lat). Each
 * tile's block is rounded down to whole words (at most 4 bytes a tile, under 3 cycles of D on
 * either preset) and the link's end up to a cycle: within 0.02%. Latency: the ping-pong. */
static size_t want_link(const facts *x, want *w)
{
    double d = 32768, share = d / (d + x->link_lat);
    const char *why = "blocks rounded to words, link end rounded to a cycle";
    w[0] = within(x->link_one * share / 1e9, 2e-4, x->link_one / 1e9, why);
    w[1] = exact(x->link_lat, x->link_lat);
    w[2] = within(x->link_all * share / 1e9, 2e-4, x->link_all / 1e9, why);
    return 3;
}

/* Memory: get r10 at c; li; runall at c + 2; worker k first issues at c + 8 + k, then 4
 * instructions (get, muli, add, li), rpt, 1024 loads or stores and exit, one every 6 cycles:
 * worker 0 exits at c + 8 + 6 x 1029; join issues in its freed slot 6 cycles later and ends 6
 * after that (worker 5 exits 5 cycles after worker 0): get r11 at c + 6194. Every tile runs the
 * same, so the IPU's span is 6194 too. AMP: the supervisor's 32 ldcw come before get r10.
 * Then 6 issues before the loop (get, muli, add, li r3, li r2, rpt), 1024 f32amp steps of
 * amp_slots issues, ampst (64 bytes at 8 B/cycle: 8 issues), exit: worker 0 exits at
 * c + 8 + 6 (14 + 1024 amp_slots), get r11 12 cycles later: c + 104 + 6144 amp_slots. */
static size_t want_tile(const mach *m, const facts *x, want *w)
{
    double n = m->tiles_per_ipu, span = 50 + 6 * 1024, tbs = x->f / 1e12;
    double load = 6 * 1024 * 16 / span, store = 6 * 1024 * 8 / span;
    w[0] = exact(load, 16);
    w[1] = exact(load * n * tbs, 16 * n * tbs);
    w[2] = exact(store, 8);
    w[3] = exact(store * n * tbs, 8 * n * tbs);
    double amp = 104 + 6144 * x->amp_slots, flop = 2.0 * 16 * 1024 * 6 * n;
    w[4] = exact(flop / amp * tbs, 2 * 16 / x->amp_slots * n * tbs);
    return 5;
}

static double ceil_eps(double v)
{
    return ceil(v - 1e-9);
}

/* Cycles of micro_coll.c's program for one message, R = 4 (docs/timing.md's barrel rules):
 * K = min(1024, the tiles as a power of two, bytes / 64) tiles per IPU, chunk C = bytes / 4K,
 * q = C / 16 quads of the addition.
 * A step: gsend at g; the K streams of a ring hop start together and share it, the slowest hop
 * (rate H) decides: the last word lands at g + E,
 *   E = 8 + 8 + max(ceil(f (100 ns + K C / H)), ceil(f 100 ns) + C / 4)
 * (tile to link port, the link's latency and the hop's share, port to tile; or, when the K
 * ports are slower than the hop, the first word's latency + the port's C/4 cycles); the
 * sync, reached earlier, releases at g + E + S, S the external sync of 4 IPUs.
 * An addition: runall at c; worker k starts at c + 6 + k and issues 7 + rpt + 6 n_k + exit,
 * one every 6 cycles (n_k = q/6 + (k < q mod 6)), so it exits at c + 54 + k + 36 n_k; join
 * issues in the first freed slot, 6 after the first exit, and ends at max(that + 6, last exit
 * + 1): A = 66 + 36n when q = 6n; A = 90 + r + 36n when q = 6n + r, r > 0.
 * T = get + 3 (li + A) + 6 (li + E + S), every li and get 1 cycle. Bus bandwidth = 6/4 bytes
 * / (T / f). The link model ends a transfer on a whole picosecond (rounded up) and then on the
 * first cycle edge from an absolute time (docs/fabric.md): that is the ceiling above unless
 * f (100 ns + K C / H) lies within a picosecond of a whole cycle; then, and only then, each
 * of the 6 steps may land a cycle either way, and the test allows 6 cycles on T.
 * Ideal (alpha-beta, communication only): T = 6 (alpha + bytes / (4 beta)), alpha = (S + 16)
 * / f + 100 ns, beta = the slowest hop's rate or the K tiles' ports (4 B/cycle each), if less. */
static want want_allreduce_one(const facts *x, double bytes, uint32_t K)
{
    double C = bytes / (4.0 * K), q = C / 16, n6 = floor(q / 6), r = q - 6 * n6;
    double A = r == 0 ? 66 + 36 * n6 : 90 + r + 36 * n6;
    double link = x->f * (100e-9 + K * C / x->ring_hop), port = ceil_eps(x->f * 100e-9) + C / 4;
    double E = 16 + fmax(ceil_eps(link), port), S = x->sync_ext[1];
    double T = 1 + 3 * (1 + A) + 6 * (1 + E + S), bus = 1.5 * bytes * x->f / 1e9;
    double beta = fmin(x->ring_hop, 4.0 * K * x->f), alpha = (S + 16) / x->f + 100e-9;
    double ideal = 1.5 * bytes / (6 * (alpha + bytes / (4 * beta))) / 1e9;
    if (fabs(link - nearbyint(link)) < 2e-12 * x->f && ceil_eps(link) + 1 >= port)
        return (want){bus / (T + 6), bus / (T - 6), ideal, "the link ends near a cycle edge"};
    return exact(bus / T, ideal);
}

/* The sizes 1 KiB .. 16 MiB; K as the program chooses it (checked against the row's text). */
static size_t want_allreduce(const mach *m, const facts *x, const wl_micro_table *t, size_t at,
                             want *w)
{
    uint32_t most = 1;
    while (most * 2 <= m->tiles_per_ipu && most * 2 <= 1024)
        most *= 2;
    size_t k = 0;
    for (double bytes = 1024; bytes <= 16 << 20; bytes *= 4, k++) {
        uint32_t K = bytes / 64 < most ? (uint32_t)(bytes / 64) : most, got = 0;
        assert_true(at + k < t->n);
        const char *tiles = strstr(t->rows[at + k].what, " x ");
        assert_non_null(tiles);
        assert_int_equal(sscanf(tiles, " x %u tiles", &got), 1);
        assert_int_equal(got, K);
        w[k] = want_allreduce_one(x, bytes, K);
    }
    return k;
}

enum { NROWS = 26 };

/* The expected figure of every row of `micro all`, in table order. */
static void want_all(const mach *m, const wl_micro_table *t, want *w)
{
    const facts *x = facts_of(m);
    check_facts(m, x);
    size_t n = 0;
    n += want_xchg_latency(m, w + n);
    n += want_xchg_bandwidth(m, x, w + n);
    n += want_sync(x, w + n);
    n += want_link(x, w + n);
    n += want_tile(m, x, w + n);
    n += want_allreduce(m, x, t, n, w + n);
    assert_int_equal(n, NROWS);
}

static int in_range(double v, want w)
{
    double slack = 1e-9 * fmax(1, fabs(w.hi));
    return v >= w.lo - slack && v <= w.hi + slack;
}

/* The implied column (micro.c's formulas) against the ideal derived here. */
static void check_implied(const wl_micro_row *r, want w)
{
    if (fabs(r->implied - w.ideal) > 1e-9 * fmax(1, fabs(w.ideal)))
        fail_msg("%s: implied %.9g, derived %.9g", r->what, r->implied, w.ideal);
}

static void check_table(const mach *m, const wl_micro_table *t)
{
    assert_int_equal(t->n, NROWS);
    want w[NROWS];
    want_all(m, t, w);
    for (size_t i = 0; i < t->n; i++) {
        const wl_micro_row *r = &t->rows[i];
        print_message("%s %-58s %12.4f in [%.4f, %.4f] (%s)\n", m->name, r->what, r->sim, w[i].lo,
                      w[i].hi, w[i].why);
        if (!in_range(r->sim, w[i]))
            fail_msg("%s: %s: simulated %.6f, derived [%.6f, %.6f] (%s)", m->name, r->what, r->sim,
                     w[i].lo, w[i].hi, w[i].why);
        check_implied(r, w[i]);
        assert_true(r->what[0] != '\0');
        assert_non_null(r->bench);
        assert_non_null(r->unit);
    }
}

static void test_mk2_derived(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk2");
    wl_micro_table t;
    run_ok(&m, NULL, 2, &t);
    check_table(&m, &t);
    /* published figures exist for mk2 where docs/sources.md gives one */
    size_t npub = 0;
    for (size_t i = 0; i < t.n; i++)
        npub += !isnan(t.rows[i].published);
    assert_int_equal(npub, 7);
    wl_micro_table_free(&t);
}

static void test_mk1_derived(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk1");
    wl_micro_table t;
    run_ok(&m, "all", 2, &t);
    check_table(&m, &t);
    wl_micro_table_free(&t);
}

/* The figures come from the run: change a parameter and the measurement moves with it. */
static void test_follows_parameters(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk2");
    m.sync_internal = 123;
    m.link_bytes_per_s = 20000000000ull;
    m.link_latency_ns = 250;
    m.xchg_base = 11;
    strcpy(m.name, "custom");
    wl_micro_table t;
    run_ok(&m, "sync", 1, &t);
    assert_int_equal(t.n, 5);
    assert_true(fabs(t.rows[0].sim - 123) < 1e-9);
    assert_true(isnan(t.rows[0].published)); /* an unknown chip has no published figures */
    wl_micro_table_free(&t);
    run_ok(&m, "link", 1, &t);
    assert_int_equal(t.n, 3);
    /* latency 2 x 11 + ceil(250 ns x 1.325 GHz = 331.25) = 22 + 332 = 354 cycles; one link
     * 20 GB/s x 32768 / (32768 + 354) (want_link) */
    assert_true(fabs(wl_micro_diff_pct(t.rows[0].sim, 20.0 * 32768 / (32768 + 354))) < 0.02);
    assert_true(fabs(t.rows[1].sim - 354) < 1e-9);
    wl_micro_table_free(&t);
    /* on chip, with xchg_base 11: 11; 11 + 15; 11 + 15 + 6 (n/64 - 1) + 4 */
    run_ok(&m, "xchg-latency", 1, &t);
    assert_int_equal(t.n, 3);
    assert_true(fabs(t.rows[0].sim - 11) < 1e-9);
    assert_true(fabs(t.rows[1].sim - 26) < 1e-9);
    assert_true(fabs(t.rows[2].sim - (30 + 6.0 * (m.tiles_per_ipu / 64 - 1))) < 1e-9);
    wl_micro_table_free(&t);
}

static void test_threads_identical(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk2");
    m.tiles_per_ipu = 128;
    wl_micro_table a, b;
    const char *which[] = {"xchg-bandwidth", "allreduce"};
    for (int k = 0; k < 2; k++) {
        run_ok(&m, which[k], 1, &a);
        run_ok(&m, which[k], 2, &b);
        assert_int_equal(a.n, b.n);
        for (size_t i = 0; i < a.n; i++)
            assert_true(a.rows[i].sim == b.rows[i].sim);
        wl_micro_table_free(&a);
        wl_micro_table_free(&b);
    }
}

static void test_unknown_name(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk2");
    err *e = malloc(sizeof *e);
    err_clear(e);
    wl_micro_table t = {0};
    wl_micro_cfg cfg = {.threads = 1};
    assert_int_equal(wl_micro_run(&m, "nosuch", &cfg, &t, e), ERR_INPUT);
    assert_non_null(strstr(e->msg, "unknown microbenchmark 'nosuch'"));
    assert_non_null(strstr(e->msg, "allreduce"));
    assert_int_equal(t.n, 0);
    free(e);
    for (size_t i = 0; i < wl_micro_count(); i++) {
        assert_non_null(wl_micro_name(i));
        assert_non_null(wl_micro_summary(i));
    }
    assert_null(wl_micro_name(wl_micro_count()));
}

static int run_cli(char *out, size_t len, const char *args)
{
    return tu_run(bin, out, len, args);
}

static void test_csv_whole(void **state)
{
    (void)state;
    /* the text itself */
    wl_micro_table t = {0};
    mach m;
    load(&m, "mk1");
    run_ok(&m, "sync", 1, &t);
    char *csv = wl_micro_csv(&t);
    assert_non_null(csv);
    assert_int_equal(tu_count_lines(csv), 1 + (int)t.n);
    assert_non_null(strstr(csv, "bench,what,unit,simulated,implied,published,"));
    char line[128];
    snprintf(line, sizeof line, "sync,\"internal sync, %u tiles\",cycles,90,90,90,0,0\n",
             m.tiles_per_ipu);
    assert_non_null(strstr(csv, line));
    free(csv);
    wl_micro_table_free(&t);

    /* through the command: written whole, no temporary left; a bad path writes nothing */
    if (access(bin, X_OK) != 0)
        skip();
    char out[1 << 15], args[512], path[128];
    snprintf(path, sizeof path, "%s/m.csv", tmpdir);
    snprintf(args, sizeof args, "micro sync --machine mk1 --threads 1 --csv %s", path);
    assert_int_equal(run_cli(out, sizeof out, args), 0);
    assert_non_null(strstr(out, "external sync, 16 IPUs"));
    char *text = tu_read_file(path);
    assert_non_null(text);
    assert_int_equal(tu_count_lines(text), 1 + 5);
    assert_non_null(strstr(text, "external sync, 16 IPUs"));
    free(text);
    snprintf(args, sizeof args, "ls %s | wc -l", tmpdir);
    FILE *p = popen(args, "r");
    int files = -1;
    assert_int_equal(fscanf(p, "%d", &files), 1);
    pclose(p);
    assert_int_equal(files, 1);
    snprintf(args, sizeof args, "micro sync --machine mk1 --csv %s/no/such/dir/m.csv", tmpdir);
    assert_int_equal(run_cli(out, sizeof out, args), 2);
    assert_non_null(strstr(out, "cannot write"));
    assert_int_equal(run_cli(out, sizeof out, "micro nosuch"), 2);
    assert_non_null(strstr(out, "unknown microbenchmark 'nosuch'"));
    assert_int_equal(run_cli(out, sizeof out, "micro sync --bogus"), 2);
}

/* A link so slow (1000 B/s) that one word takes longer than the drain the benchmark sizes its
 * blocks for still runs (one word per tile) instead of refusing with "0 streams delivered":
 * the one-link figure is bytes over time, within 1% of 1000 B/s (the latency is negligible
 * against 4 ms a word). */
static void test_slow_link(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk2");
    m.link_bytes_per_s = 1000;
    wl_micro_table t;
    run_ok(&m, "link", 1, &t);
    assert_true(t.n >= 1);
    double got = t.rows[0].sim * 1e9; /* GB/s -> B/s */
    if (!(fabs(got - 1000.0) < 10.0))
        fail_msg("one link at 1000 B/s measured %g B/s", got);
    wl_micro_table_free(&t);
}

int main(int argc, char **argv)
{
    (void)argc;
    tu_bin_path(argv[0], bin, sizeof bin);
    if (tu_mkdtemp(tmpdir, sizeof tmpdir, "micro") != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mk2_derived),        cmocka_unit_test(test_mk1_derived),
        cmocka_unit_test(test_follows_parameters), cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_unknown_name),       cmocka_unit_test(test_csv_whole),
        cmocka_unit_test(test_slow_link),
    };
    int rc = cmocka_run_group_tests_name("micro", tests, NULL, NULL);
    if (tu_rmdir(tmpdir) != 0)
        rc = rc ? rc : 1;
    return rc;
}
