/* test_xchg: the exchange fabric's timing — latency model, delivery at sync, conflicts,
 * multicast, global exchange around a ring of four IPUs, identical for 1 and 2 host
 * threads, and delivery order: of two streams that write one word, the later landing wins
 * for 1, 2 and 4 threads. The exchange compiler that plans against it is tested in
 * test_xcomp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/xchg.h"
#include "host/system.h"
#include "isa/asm.h"

typedef struct trace_acc {
    uint64_t max_end, n, bytes;
    uint64_t send[4], end[4]; /* per sending IPU (of the first four): its gsends */
    uint64_t gbad, nglobal, gsend_min, gsend_max, garrive_min, garrive_max, gend_max; /* gsend */
} trace_acc;

static void on_trace(void *ctx, const eng_stream *s, int global)
{
    trace_acc *a = ctx;
    if (global) {
        /* the link model (docs/fabric.md, mk2 at 1.325 GHz, 754.717 ps a cycle): the first
         * word lands 2 x xchg_base + ceil(100 ns link latency) = 16 + 133 cycles after the
         * send; the link part starts xchg_base after the send, the pair's 2 links (64 GB/s)
         * carry the 32 tiles' 4 B fairly, so all end 128 B / 64 GB/s = 2 ns + 100 ns later,
         * rounded up to a cycle, then xchg_base to the tile */
        uint64_t start_ps = (s->send + 8) * 1000000000000ull / 1325000000ull;
        uint64_t last = ((start_ps + 102000) * 1325000000ull + 999999999999ull) / 1000000000000ull;
        if (s->src_ipu < 4) {
            a->send[s->src_ipu] = s->send;
            a->end[s->src_ipu] = s->end > a->end[s->src_ipu] ? s->end : a->end[s->src_ipu];
        }
        a->gbad += s->arrive != s->send + 149 || s->end != last + 8;
        a->gsend_min = a->nglobal && a->gsend_min < s->send ? a->gsend_min : s->send;
        a->gsend_max = s->send > a->gsend_max ? s->send : a->gsend_max;
        a->garrive_min = a->nglobal && a->garrive_min < s->arrive ? a->garrive_min : s->arrive;
        a->garrive_max = s->arrive > a->garrive_max ? s->arrive : a->garrive_max;
        a->gend_max = s->end > a->gend_max ? s->end : a->gend_max;
        a->nglobal++;
    }
    if (s->end > a->max_end)
        a->max_end = s->end;
    a->n++;
    a->bytes += s->bytes;
}

typedef struct run_out {
    int rc;
    char msg[ERR_MSG_MAX];
    eng_stats st;
    trace_acc tr;
    uint64_t mem_hash;
    eng_ipu_stats ipu[4]; /* the first four IPUs' statistics */
    uint32_t ring_bad;    /* tiles whose 0x2000/0x3000 words differ from the ring's (below) */
} run_out;

static uint32_t ring_check(eng *g, uint32_t nipus, uint32_t ntiles);

/* Assemble src, run it on nipus x ntiles of mk2 with the fabric attached. Optional setup
 * callback may fill tile memory. */
static void run_prog(const char *src, uint32_t nipus, uint32_t ntiles, unsigned threads,
                     void (*setup)(eng *), run_out *out)
{
    err e;
    err_clear(&e);
    isa_prog prog;
    tu_assemble("x.s", src, &prog);
    sys *sy = tu_system(nipus, ntiles, threads, 100000000, &prog);
    eng *g = sys_engine(sy);
    memset(out, 0, sizeof *out);
    xchg_set_trace(sys_fabric(sy), on_trace, &out->tr);
    if (setup)
        setup(g);
    out->rc = eng_run(g, &e);
    snprintf(out->msg, sizeof out->msg, "%s", e.msg);
    eng_get_stats(g, &out->st);
    for (uint32_t i = 0; i < nipus && i < 4; i++)
        eng_get_ipu_stats(g, i, &out->ipu[i]);
    out->ring_bad = ring_check(g, nipus, ntiles);
    out->mem_hash = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < nipus; i++)
        for (uint32_t t = 0; t < ntiles; t++)
            out->mem_hash = tu_fnv(out->mem_hash, eng_tile_mem(g, i, t), 0x10000);
    sys_free(sy);
    isa_prog_free(&prog);
}

static void test_latency_model(void **state)
{
    (void)state;
    err e;
    mach m;
    mach_builtin(&m, "mk2", &e);
    /* mk2: base 8, 1 per supertile (4 tiles), 6 per column (64 tiles), turn 4 */
    assert_int_equal(xchg_latency(&m, 0, 1), 8);          /* same supertile */
    assert_int_equal(xchg_latency(&m, 0, 4), 9);          /* next supertile */
    assert_int_equal(xchg_latency(&m, 0, 63), 8 + 15);    /* far end of the column */
    assert_int_equal(xchg_latency(&m, 0, 64), 8 + 6 + 4); /* next column, same row */
    assert_int_equal(xchg_latency(&m, 1471, 0), 8 + 15 + 22 * 6 + 4);
    assert_int_equal(xchg_latency(&m, 70, 5), xchg_latency(&m, 5, 70));
    assert_int_equal(xchg_words(&m, 10), 3);
}

/* Tile 0 sends 64 bytes to tile 65 at cycle 2 (li 0, li 1 ... see below). */
static const char one_send[] = "main:   get     r1, $tile\n"      /* 0 */
                               "        brnz    r1, wait\n"       /* 1, 6 cycles */
                               "        li      r1, 0x1000\n"     /* 7 */
                               "        li      r2, 64\n"         /* 8 */
                               "        li      r3, 65\n"         /* 9 */
                               "        li      r4, 0x2000\n"     /* 10 */
                               "        send    r1, r2, r3, r4\n" /* 11: words leave 11..26 */
                               "wait:   sync    internal\n"
                               "        halt\n";

static void fill_src(eng *g)
{
    uint8_t *m = eng_tile_mem(g, 0, 0);
    for (int i = 0; i < 64; i++)
        m[0x1000 + i] = (uint8_t)(i * 7 + 1);
}

static void test_single_send(void **state)
{
    (void)state;
    run_out o;
    run_prog(one_send, 1, 128, 1, fill_src, &o);
    assert_int_equal(o.rc, ERR_OK);
    assert_int_equal(o.tr.n, 1);
    /* latency 0 -> 65: next column (6 + turn 4), row 0 -> 0: 18; lands 29..44, end 45.
       tile 0 syncs at 12 -> arrives max(18, port free 27) = 27; others arrive at 7.
       release = max(27, 45) + 90 = 135; halt at 135 finishes 136. */
    assert_int_equal(o.tr.max_end, 11 + 18 + 16);
    assert_int_equal(o.st.cycles, 136);
}

static void test_conflict_reported(void **state)
{
    (void)state;
    /* tiles 0 and 1 (same supertile: equal latency) send to tile 2 at the same cycle */
    const char *src = "main: get r1, $tile\n"
                      "      cmplti r2, r1, 2\n"
                      "      brz r2, w\n"
                      "      li r3, 2\n"
                      "      li r4, 16\n"
                      "      li r5, 0x100\n"
                      "      send r5, r4, r3, r5\n"
                      "w:    sync internal\n"
                      "      halt\n";
    run_out o;
    run_prog(src, 1, 8, 2, NULL, &o);
    assert_int_equal(o.rc, ERR_FAULT);
    assert_non_null(strstr(o.msg, "ipu 0 tile 2 cycle"));
    assert_non_null(strstr(o.msg, "exchange conflict"));
    assert_non_null(strstr(o.msg, "ipu 0 tile 0"));
    assert_non_null(strstr(o.msg, "ipu 0 tile 1"));
}

static void test_multicast(void **state)
{
    (void)state;
    const char *src = "main: get r1, $tile\n"
                      "      brnz r1, w\n"
                      "      li r2, 0x1000\n"
                      "      li r3, 64\n"
                      "      li r4, 8 | (4 << 16)\n" /* tiles 8..12 */
                      "      send r2, r3, r4, r2\n"
                      "w:    sync internal\n"
                      "      halt\n";
    run_out o;
    run_prog(src, 1, 16, 2, fill_src, &o);
    assert_int_equal(o.rc, ERR_OK);
    assert_int_equal(o.tr.n, 5);
    assert_int_equal(o.tr.bytes, 5 * 64);
}

/* A ring across four IPUs: tile t of IPU i sends to tile t of IPU i+1 (gsend), then every
 * tile passes what it got to tile t+1 on its own IPU (send) — same memory and cycles for
 * 1 and 2 host threads, every receiver holds the words (ring_check), and every gsend's timing,
 * the GlobalExchange and Sync cycles follow the link and sync models (on_trace, the test). */
static const char ring_src[] = "main:   get     r1, $tile\n"
                               "        get     r2, $ipu\n"
                               "        get     r3, $nipus\n"
                               "        li      r10, 0x1000\n"
                               "        shli    r4, r2, 16\n"
                               "        or      r4, r4, r1\n"
                               "        st32    r4, [r10+0]\n" /* word = ipu << 16 | tile */
                               "        addi    r5, r2, 1\n"
                               "        cmpeq   r6, r5, r3\n"
                               "        brz     r6, nowrap\n"
                               "        li      r5, 0\n"
                               "nowrap: shli    r5, r5, 16\n"
                               "        or      r5, r5, r1\n" /* destination: next IPU, same tile */
                               "        li      r7, 4\n"
                               "        li      r8, 0x2000\n"
                               "        gsend   r10, r7, r5, r8\n"
                               "        sync    external\n"
                               "        get     r1, $tile\n"
                               "        get     r3, $ntiles\n"
                               "        addi    r5, r1, 1\n"
                               "        cmpeq   r6, r5, r3\n"
                               "        brz     r6, nw2\n"
                               "        li      r5, 0\n"
                               "nw2:    li      r8, 0x2000\n"
                               "        li      r9, 0x3000\n"
                               "        li      r7, 4\n"
                               "        send    r8, r7, r5, r9\n"
                               "        sync    internal\n"
                               "        halt\n";

/* The ring's words: tile t of IPU i got (i - 1) << 16 | t at 0x2000 from IPU i - 1 (gsend),
 * then (i - 1) << 16 | (t - 1) at 0x3000 from tile t - 1 of its own IPU (send), mod nipus
 * and ntiles. Counts the tiles that hold anything else. */
static uint32_t ring_check(eng *g, uint32_t nipus, uint32_t ntiles)
{
    uint32_t bad = 0;
    for (uint32_t i = 0; i < nipus; i++)
        for (uint32_t t = 0; t < ntiles; t++) {
            const uint8_t *mem = eng_tile_mem(g, i, t);
            uint32_t a, b, prev = (i + nipus - 1) % nipus;
            memcpy(&a, mem + 0x2000, 4);
            memcpy(&b, mem + 0x3000, 4);
            bad += a != (prev << 16 | t) || b != (prev << 16 | (t + ntiles - 1) % ntiles);
        }
    return bad;
}

static void test_ring_four_ipus(void **state)
{
    (void)state;
    run_out a, b;
    run_prog(ring_src, 4, 32, 1, NULL, &a);
    run_prog(ring_src, 4, 32, 2, NULL, &b);
    if (a.rc != ERR_OK)
        fail_msg("%s", a.msg);
    assert_int_equal(b.rc, ERR_OK);
    assert_int_equal(a.st.cycles, b.st.cycles);
    assert_int_equal(a.mem_hash, b.mem_hash);
    assert_int_equal(a.tr.n, 4 * 32 * 2);
    assert_int_equal(a.ring_bad, 0);
    assert_int_equal(a.tr.nglobal, 4 * 32);
    assert_int_equal(a.tr.gbad, 0);
    /* per IPU, over the streams it sends (to i + 1) and receives (from i - 1): last arrival
     * - first send; the superstep's work ends when the last stream of the system landed
     * (GlobalExchange), then the external sync of 4 IPUs, 90 + ceil(15 ns x 1.325 x hops x 2)
     * with hops = 1 + (4 / 2) / 2 = 2: 90 + 80 = 170, and the internal sync after the
     * on-chip send, 90. The categories sum to the run's cycles. */
    for (int i = 0; i < 4; i++) {
        int p = (i + 3) % 4;
        uint64_t first = a.tr.send[i] < a.tr.send[p] ? a.tr.send[i] : a.tr.send[p];
        uint64_t last = a.tr.end[i] > a.tr.end[p] ? a.tr.end[i] : a.tr.end[p];
        assert_int_equal(a.ipu[i].global_cycles, last - first);
        assert_int_equal(a.ipu[i].cat[ENG_CAT_GLOBAL], a.tr.gend_max);
        assert_int_equal(a.ipu[i].cat[ENG_CAT_SYNC], 170 + 90);
        assert_int_equal(a.st.cycles, a.tr.gend_max + 170 + 90 + a.ipu[i].cat[ENG_CAT_COMPUTE] +
                                          a.ipu[i].cat[ENG_CAT_EXCHANGE]);
    }
}

/* One superstep that moves data both ways: tile t of IPU i sends its word to tile t of IPU
 * i + 1 (gsend, to 0x2000) and to tile t + 1 of its own IPU (send, to 0x3000), then the four
 * IPUs meet at the external sync. A superstep that moved global data is GlobalExchange,
 * whatever else it moved (docs/host.md, the time split's categories): every IPU's
 * GlobalExchange runs from 0 to the last stream's end (the global streams land last: 149
 * cycles after their send, on_trace; an on-chip word lands at most 8 + 7 after its send, 32
 * tiles being 8 supertiles of one column), there is no
 * DoExchange, and the sync is the external one of 4 IPUs, 170 (test_ring_four_ipus). */
static const char mixed_src[] = "main:   get     r1, $tile\n"
                                "        get     r2, $ipu\n"
                                "        get     r3, $nipus\n"
                                "        li      r10, 0x1000\n"
                                "        shli    r4, r2, 16\n"
                                "        or      r4, r4, r1\n"
                                "        st32    r4, [r10+0]\n"
                                "        addi    r5, r2, 1\n"
                                "        cmpeq   r6, r5, r3\n"
                                "        brz     r6, nowrap\n"
                                "        li      r5, 0\n"
                                "nowrap: shli    r5, r5, 16\n"
                                "        or      r5, r5, r1\n"
                                "        li      r7, 4\n"
                                "        li      r8, 0x2000\n"
                                "        gsend   r10, r7, r5, r8\n"
                                "        get     r3, $ntiles\n"
                                "        addi    r5, r1, 1\n"
                                "        cmpeq   r6, r5, r3\n"
                                "        brz     r6, nw2\n"
                                "        li      r5, 0\n"
                                "nw2:    li      r9, 0x3000\n"
                                "        send    r10, r7, r5, r9\n"
                                "        sync    external\n"
                                "        halt\n";

static void test_mixed_superstep(void **state)
{
    (void)state;
    run_out a;
    run_prog(mixed_src, 4, 32, 2, NULL, &a);
    if (a.rc != ERR_OK)
        fail_msg("%s", a.msg);
    assert_int_equal(a.tr.n, 4 * 32 * 2);
    assert_int_equal(a.tr.nglobal, 4 * 32);
    assert_int_equal(a.tr.gbad, 0);
    assert_int_equal(a.tr.max_end, a.tr.gend_max);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(a.ipu[i].cat[ENG_CAT_GLOBAL], a.tr.gend_max);
        assert_int_equal(a.ipu[i].cat[ENG_CAT_EXCHANGE], 0);
        assert_int_equal(a.ipu[i].cat[ENG_CAT_SYNC], 170);
        assert_int_equal(a.st.cycles, a.tr.gend_max + 170 + a.ipu[i].cat[ENG_CAT_COMPUTE]);
    }
}

/* ---- delivery order: two streams that write the same word of one receiver ----
 *
 * In every column of 64 tiles (mk2: 16 supertiles of 4, rows 0..15), for j < k:
 *   far sender  j      (row 0)  sends 8 bytes from 0x1000 to 0x2000 of receiver 60 + j (row 15),
 *   near sender 56 + j (row 14) sends 8 bytes from 0x1000 to 0x2000 of the same receiver.
 * Supervisor cycles (docs/timing.md: ALU 1, branches 6 taken or not, send 1):
 *   0 get, 1 andi, 2..4 li, 5 cmplti, 6 brnz (6 cycles)
 *   far:  12 addi, 13 send
 *   near: 12 addi, 13 li, 14 cmpltu, 15 brz (6 cycles), 21 addi, 22 send
 * Landing (docs/fabric.md: L = 8 + 1 x |Δrow| in one column; 8 bytes = 2 words):
 *   far:  L = 8 + 15 = 23, lands over [13 + 23, + 2) = [36, 38)
 *   near: L = 8 + 1  = 9,  lands over [22 + 9,  + 2) = [31, 33)
 * The windows do not overlap (legal), and the far stream, sent first and gathered first (lower
 * tile), lands LAST: its bytes must be what the receiver holds, for any host thread count. */
static const char same_word_src[] = "main:   get     r1, $tile\n"
                                    "        andi    r2, r1, 63\n"
                                    "        li      r3, 0x1000\n"
                                    "        li      r4, 8\n"
                                    "        li      r5, 0x2000\n"
                                    "        cmplti  r6, r2, %u\n"
                                    "        brnz    r6, far\n"
                                    "        addi    r6, r2, -56\n"
                                    "        li      r8, %u\n"
                                    "        cmpltu  r6, r6, r8\n"
                                    "        brz     r6, idle\n"
                                    "        addi    r7, r1, 4\n"
                                    "        send    r3, r4, r7, r5\n"
                                    "        br      idle\n"
                                    "far:    addi    r7, r1, 60\n"
                                    "        send    r3, r4, r7, r5\n"
                                    "idle:   sync    internal\n"
                                    "        halt\n";

/* Sender t's 8 bytes: different for every sender of one receiver. */
static uint8_t sender_byte(uint32_t t, uint32_t i)
{
    return (uint8_t)(t * 37 + i * 3 + 1);
}

typedef struct stream_log {
    eng_stream s[512];
    size_t n;
} stream_log;

static void on_stream(void *ctx, const eng_stream *s, int global)
{
    (void)global;
    stream_log *l = ctx;
    assert_true(l->n < sizeof l->s / sizeof l->s[0]);
    l->s[l->n++] = *s;
}

/* Assemble src, run it on one IPU of ntiles tiles with every tile's 8 bytes at 0x1000 its
 * sender_byte's, logging every stream into log; the system, run (the caller frees it and
 * prog). */
static sys *run_logged(const char *name, const char *src, uint32_t ntiles, unsigned threads,
                       isa_prog *prog, stream_log *log)
{
    tu_assemble(name, src, prog);
    sys *sy = tu_system(1, ntiles, threads, 100000, prog);
    eng *g = sys_engine(sy);
    xchg_set_trace(sys_fabric(sy), on_stream, log);
    for (uint32_t t = 0; t < ntiles; t++)
        for (uint32_t i = 0; i < 8; i++)
            eng_tile_mem(g, 0, t)[0x1000 + i] = sender_byte(t, i);
    err e;
    err_clear(&e);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    return sy;
}

/* Run same_word_src with k receivers per column on ntiles tiles and `threads` host threads;
 * check every stream's timing against the derivation above and every receiver's bytes. */
static void run_same_word(uint32_t ntiles, uint32_t k, unsigned threads)
{
    char src[sizeof same_word_src + 16];
    snprintf(src, sizeof src, same_word_src, k, k);
    isa_prog prog;
    stream_log log = {.n = 0};
    sys *sy = run_logged("same_word.s", src, ntiles, threads, &prog, &log);
    eng *g = sys_engine(sy);
    uint32_t ncols = ntiles / 64;
    assert_int_equal(log.n, 2 * k * ncols);
    for (size_t x = 0; x < log.n; x++) {
        const eng_stream *s = &log.s[x];
        int far = s->src_tile % 64 < k;
        assert_int_equal(s->dst_tile, s->src_tile + (far ? 60 : 4));
        assert_int_equal(s->send, far ? 13 : 22);
        assert_int_equal(s->arrive, far ? 36 : 31);
        assert_int_equal(s->end, far ? 38 : 33);
    }
    for (uint32_t c = 0; c < ncols; c++) {
        for (uint32_t j = 0; j < k; j++) {
            const uint8_t *mem = eng_tile_mem(g, 0, 64 * c + 60 + j);
            uint8_t want[12] = {0};
            for (uint32_t i = 0; i < 8; i++)
                want[i] = sender_byte(64 * c + j, i); /* the far sender's bytes */
            assert_memory_equal(mem + 0x2000, want, sizeof want);
        }
    }
    sys_free(sy);
    isa_prog_free(&prog);
}

/* One receiver (tile 60 of a 64-tile IPU), then eight (four per column of a 128-tile IPU) so
 * the copy runs on several host threads at once. */
static void test_later_landing_wins(void **state)
{
    (void)state;
    const unsigned threads[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        run_same_word(64, 1, threads[i]);
        run_same_word(128, 4, threads[i]);
    }
}

/* Many streams into one receiver: tiles 1..N of an IPU each send the same 8 bytes' place
 * (0x2000 of tile 0), tile t after a wait of 20 (N + 1 - t) brnzdec passes (6 cycles each: 120
 * cycles a tile), so the higher tiles, gathered last, send first, and the arrivals (the
 * latency varies with distance by less than 120) come in the reverse of the gather order,
 * spread over 120 N cycles. The last to land, tile 1's, must be what tile 0 holds; a delivery
 * in gather order would leave tile N's. Each of delivery's sorts of one receiver's streams
 * (fabric/xchg.c, sort_keys): N = 5 by insertion alone; 13 and 100, runs of 8 sorted by
 * insertion then merged (a last run short); 300, by radix (two passes). */
static const char many_fmt[] = "main:   get     r1, $tile\n"
                               "        li      r3, 0x1000\n"
                               "        li      r4, 8\n"
                               "        li      r5, 0x2000\n"
                               "        brz     r1, idle\n"
                               "        cmplti  r6, r1, %u\n"
                               "        brz     r6, idle\n"
                               "        li      r8, %u\n"
                               "        sub     r9, r8, r1\n"
                               "        muli    r9, r9, 20\n"
                               "wait:   brnzdec r9, wait\n"
                               "        li      r7, 0\n"
                               "        send    r3, r4, r7, r5\n"
                               "idle:   sync    internal\n"
                               "        halt\n";

static void run_many(unsigned nsend, uint32_t ntiles, unsigned threads)
{
    char src[sizeof many_fmt + 16];
    snprintf(src, sizeof src, many_fmt, nsend + 1, nsend + 1);
    isa_prog prog;
    stream_log log = {.n = 0};
    sys *sy = run_logged("many.s", src, ntiles, threads, &prog, &log);
    eng *g = sys_engine(sy);
    assert_int_equal(log.n, nsend);
    /* the premise: each sender's stream lands after every higher tile's has ended */
    for (size_t x = 0; x < log.n; x++)
        for (size_t y = 0; y < log.n; y++)
            if (log.s[x].src_tile < log.s[y].src_tile)
                assert_true(log.s[x].arrive >= log.s[y].end);
    uint8_t want[8];
    for (uint32_t i = 0; i < 8; i++)
        want[i] = sender_byte(1, i);
    assert_memory_equal(eng_tile_mem(g, 0, 0) + 0x2000, want, sizeof want);
    sys_free(sy);
    isa_prog_free(&prog);
}

static void test_many_streams_one_receiver(void **state)
{
    (void)state;
    static const struct {
        unsigned n;
        uint32_t tiles;
    } cases[] = {{5, 128}, {13, 128}, {100, 128}, {300, 512}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        run_many(cases[c].n, cases[c].tiles, 1);
        run_many(cases[c].n, cases[c].tiles, 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latency_model),      cmocka_unit_test(test_single_send),
        cmocka_unit_test(test_conflict_reported),  cmocka_unit_test(test_multicast),
        cmocka_unit_test(test_ring_four_ipus),     cmocka_unit_test(test_mixed_superstep),
        cmocka_unit_test(test_later_landing_wins), cmocka_unit_test(test_many_streams_one_receiver),
    };
    return cmocka_run_group_tests_name("xchg", tests, NULL, NULL);
}
