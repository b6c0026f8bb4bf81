/* test_programs: runs every .s file in tests/isa/ and checks the expectations written in it.
 *
 *   ; config: tiles=N ipus=N machine=mk2|mk1 max-cycles=N threads=N   (default 1 tile, 1 IPU)
 *   ; expect: [iI.][tT.][wK.]rN = V      a register (supervisor unless wK: worker context K)
 *   ; expect: [iI.][tT.]mem32[ADDR] = V  a 32-bit word of tile memory
 *   ; expect-cycles: N                  total cycles of the run
 *   ; expect-insns: N                   instructions executed, all contexts and tiles
 *   ; expect-supersteps: N              sync releases summed over IPUs
 *   ; expect-fault: TEXT                the run faults and the message contains TEXT
 * V is an integer (C syntax, may be negative) or a float written with a trailing f (1.5f).
 * The expected numbers are derived by hand in each file from the timing model. Each program
 * also runs with no fused operation (eng_set_fused 0: the base instructions one dispatch at a
 * time, isa/fused.def), and the two runs must agree on everything: the outcome and its
 * message, the statistics, and every tile's state, contexts and memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/system.h"
#include "isa/asm.h"

static uint32_t parse_value(const char *v)
{
    while (*v == ' ')
        v++;
    size_t n = strcspn(v, " \t\r\n");
    if (n > 0 && v[n - 1] == 'f' && strncmp(v, "0x", 2) != 0) {
        float f = strtof(v, NULL);
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    return (uint32_t)strtoll(v, NULL, 0);
}

/* Parse the [iI.][tT.][wK.] prefix; returns the rest. */
static const char *parse_where(const char *p, unsigned *ipu, unsigned *t, int *w)
{
    *ipu = 0;
    *t = 0;
    *w = -1;
    for (;;) {
        char *end;
        if (p[0] == 'i' && p[1] >= '0' && p[1] <= '9') {
            *ipu = (unsigned)strtoul(p + 1, &end, 10);
        } else if (p[0] == 't' && p[1] >= '0' && p[1] <= '9') {
            *t = (unsigned)strtoul(p + 1, &end, 10);
        } else if (p[0] == 'w' && p[1] >= '0' && p[1] <= '9') {
            *w = (int)strtol(p + 1, &end, 10);
        } else {
            return p;
        }
        if (*end != '.')
            return p;
        p = end + 1;
    }
}

/* The program's "; config:" lines into cfg: tiles=, ipus=, max-cycles=, threads=, machine=
 * (a preset, keeping the tiles and IPUs given). */
static void read_config(const char *src, sys_cfg *cfg, err *e)
{
    for (const char *l = strstr(src, "; config:"); l; l = strstr(l + 1, "; config:")) {
        const char *p = l + 9;
        const char *eol = strchr(p, '\n');
        while (p && *p && (!eol || p < eol)) {
            while (*p == ' ')
                p++;
            if (strncmp(p, "tiles=", 6) == 0)
                cfg->m.tiles_per_ipu = (uint32_t)strtoul(p + 6, NULL, 0);
            else if (strncmp(p, "ipus=", 5) == 0)
                cfg->m.nipus = (uint32_t)strtoul(p + 5, NULL, 0);
            else if (strncmp(p, "max-cycles=", 11) == 0)
                cfg->max_cycles = strtoull(p + 11, NULL, 0);
            else if (strncmp(p, "threads=", 8) == 0)
                cfg->threads = (unsigned)strtoul(p + 8, NULL, 0);
            else if (strncmp(p, "machine=", 8) == 0) {
                char name[8] = {0};
                sscanf(p + 8, "%7s", name);
                uint32_t tiles = cfg->m.tiles_per_ipu, ipus = cfg->m.nipus;
                assert_int_equal(mach_builtin(&cfg->m, name, e), ERR_OK);
                cfg->m.tiles_per_ipu = tiles;
                cfg->m.nipus = ipus;
            }
            p = strchr(p, ' ');
        }
    }
}

/* Each "; expect: [iI.][tT.][wK.]WHAT = VALUE" line of src against the run's tiles: WHAT a
 * register (rN, lr) or mem32[ADDR]. */
static void check_expect(const char *path, const char *src, eng *g)
{
    for (const char *l = strstr(src, "; expect:"); l; l = strstr(l + 1, "; expect:")) {
        const char *p = l + 9;
        while (*p == ' ')
            p++;
        unsigned ipu, t;
        int w;
        p = parse_where(p, &ipu, &t, &w);
        const tile *x = eng_tile(g, ipu, t);
        assert_non_null(x);
        const char *eq = strchr(p, '=');
        assert_non_null(eq);
        uint32_t want = parse_value(eq + 1), got;
        if (strncmp(p, "mem32[", 6) == 0) {
            uint32_t addr = (uint32_t)strtoul(p + 6, NULL, 0);
            memcpy(&got, eng_tile_mem(g, ipu, t) + addr, 4);
        } else if (p[0] == 'r' || strncmp(p, "lr", 2) == 0) {
            unsigned r = p[0] == 'r' ? (unsigned)strtoul(p + 1, NULL, 10) : ISA_LR;
            assert_true(r < ISA_NREGS);
            got = w < 0 ? x->sup.r[r] : x->wk[w].r[r];
        } else {
            fail_msg("%s: cannot read expectation '%.40s'", path, l);
        }
        if (got != want)
            fail_msg("%s: %.*s: got %u (0x%x), want %u (0x%x)", path, (int)strcspn(l, "\n"), l, got,
                     got, want, want);
    }
}

/* Load prog on a system of cfg with the fused operations `fused` and run it: the system, and
 * the run's outcome in *rc and e. */
static sys *run_fused(const char *path, const sys_cfg *cfg, const isa_prog *prog, uint32_t fused,
                      int *rc, err *e)
{
    sys *sy = sys_new(cfg, e);
    if (!sy)
        fail_msg("%s: %s", path, e->msg);
    eng *g = sys_engine(sy);
    eng_set_fused(g, fused);
    assert_int_equal(eng_load(g, prog, e), ERR_OK);
    *rc = eng_run(g, e);
    return sy;
}

/* Two contexts agree on what a program can see or the engine reports of them. */
static int same_cpu(const isa_cpu *a, const isa_cpu *b)
{
    return a->pc == b->pc && a->t == b->t && a->ninsn == b->ninsn && a->busy == b->busy &&
           a->rpt_left == b->rpt_left && !memcmp(a->r, b->r, sizeof a->r) && a->fault == b->fault &&
           a->fault_addr == b->fault_addr && a->amp.step == b->amp.step &&
           a->amp.out_lanes == b->amp.out_lanes;
}

/* Run prog again with no fused operation: the same outcome and message (rc, e), statistics,
 * and every tile's state, time, contexts and memory as g's run. */
static void same_as_unfused(const char *path, const sys_cfg *cfg, const isa_prog *prog, eng *g,
                            int rc, const err *e)
{
    int rc0;
    err e0;
    err_clear(&e0);
    sys *sy0 = run_fused(path, cfg, prog, 0, &rc0, &e0);
    eng *g0 = sys_engine(sy0);
    if (rc0 != rc || strcmp(e0.msg, e->msg) != 0)
        fail_msg("%s: %d \"%s\" with fused operations, %d \"%s\" without", path, rc, e->msg, rc0,
                 e0.msg);
    eng_stats a, b;
    eng_get_stats(g, &a);
    eng_get_stats(g0, &b);
    if (memcmp(&a, &b, sizeof a) != 0)
        fail_msg("%s: statistics differ without fused operations (cycles %llu, %llu)", path,
                 (unsigned long long)a.cycles, (unsigned long long)b.cycles);
    for (uint32_t i = 0; i < cfg->m.nipus; i++)
        for (uint32_t t = 0; t < cfg->m.tiles_per_ipu; t++) {
            const tile *x = eng_tile(g, i, t), *y = eng_tile(g0, i, t);
            int same = x->state == y->state && x->at == y->at && same_cpu(&x->sup, &y->sup);
            for (unsigned w = 0; same && w < ISA_NWORKERS; w++)
                same = same_cpu(&x->wk[w], &y->wk[w]);
            if (!same ||
                memcmp(eng_tile_mem(g, i, t), eng_tile_mem(g0, i, t), cfg->m.sram_bytes) != 0)
                fail_msg("%s: ipu %u tile %u differs without fused operations", path, i, t);
        }
    sys_free(sy0);
}

static void run_program(void **state)
{
    const char *path = *state;
    char *src = tu_read_file(path);
    assert_non_null(src);

    sys_cfg cfg = {.threads = 1, .max_cycles = 10000000, .ctl.limit_names = TU_LIMIT_NAMES};
    err e;
    err_clear(&e);
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.tiles_per_ipu = 1;
    read_config(src, &cfg, &e);

    isa_prog prog;
    int rc = asm_assemble(path, src, strlen(src), &prog, &e);
    if (rc != ERR_OK)
        fail_msg("%s: does not assemble:\n%s", path, e.msg);
    sys *sy = run_fused(path, &cfg, &prog, ISA_FUSED_ALL, &rc, &e);
    eng *g = sys_engine(sy);
    same_as_unfused(path, &cfg, &prog, g, rc, &e);

    const char *fault = strstr(src, "; expect-fault:");
    if (fault) {
        char want[200] = {0};
        sscanf(fault + 15, " %199[^\n]", want);
        if (rc != ERR_FAULT)
            fail_msg("%s: expected a fault containing '%s', the run ended normally", path, want);
        if (!strstr(e.msg, want))
            fail_msg("%s: fault '%s' does not contain '%s'", path, e.msg, want);
    } else if (rc != ERR_OK) {
        fail_msg("%s: unexpected failure: %s", path, e.msg);
    }

    eng_stats st;
    eng_get_stats(g, &st);
    const char *l;
    if ((l = strstr(src, "; expect-cycles:")))
        assert_int_equal(st.cycles, strtoull(l + 16, NULL, 0));
    if ((l = strstr(src, "; expect-insns:"))) {
        uint64_t all = 0;
        for (unsigned c = 0; c < TILE_NCTX; c++)
            all += st.ninsn[c];
        assert_int_equal(all, strtoull(l + 15, NULL, 0));
    }
    if ((l = strstr(src, "; expect-supersteps:")))
        assert_int_equal(st.supersteps, strtoull(l + 20, NULL, 0));

    check_expect(path, src, g);
    sys_free(sy);
    isa_prog_free(&prog);
    free(src);
}

int main(void)
{
    glob_t gl;
    if (glob("tests/isa/*.s", 0, NULL, &gl) != 0 || gl.gl_pathc == 0) {
        fprintf(stderr, "test_programs: no tests/isa/*.s (run from the repository root)\n");
        return 1;
    }
    struct CMUnitTest *tests = calloc(gl.gl_pathc, sizeof *tests);
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        tests[i].name = gl.gl_pathv[i];
        tests[i].test_func = run_program;
        tests[i].initial_state = gl.gl_pathv[i];
    }
    int rc = _cmocka_run_group_tests("isa_programs", tests, gl.gl_pathc, NULL, NULL);
    free(tests);
    globfree(&gl);
    return rc;
}
