/* test_tile: exact cycle counts of the barrel, against an independent reference.
 *
 * The engine interprets each worker straight-line (issue = start + 6 x index) and moves the
 * supervisor to the next free slot. The reference here steps the barrel one tile cycle at a
 * time, as the hardware does, with the rules of docs/timing.md written out directly: cycle c
 * belongs to slot c mod 6; a worker issues in its slot every turn; the supervisor issues in a
 * slot no worker owns, once its previous instruction's cost has elapsed. Random supervisor
 * programs of ALU ops, branches, run, runall and join (with workers of random lengths) must
 * give the same total cycles in both. Plus closed-form checks for k-instruction workers. */
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

enum { OPK_ALU, OPK_BR, OPK_RUN, OPK_RUNALL, OPK_JOIN, OPK_HALT };

typedef struct sop {
    int kind;
    int len; /* worker length in instructions (exit included) for run/runall */
} sop;

/* ---- the reference: one tile cycle at a time ---- */
static uint64_t reference_cycles(const sop *prog, int n)
{
    (void)n;           /* the program ends with halt */
    int owner[6];      /* worker context owning slot s, or -1 */
    int left[6] = {0}; /* instructions a worker context still has to issue */
    uint64_t start[6] = {0};
    uint64_t last_exit_done = 0;
    for (int s = 0; s < 6; s++)
        owner[s] = -1;
    uint64_t sup_ready = 0;
    int pc = 0;
    int waiting_join = 0;
    uint64_t join_issue = 0;
    for (uint64_t c = 0;; c++) {
        int s = (int)(c % 6);
        if (owner[s] >= 0) {
            int w = owner[s];
            if (c >= start[w]) {
                left[w]--;
                if (left[w] == 0) { /* this was its exit */
                    owner[s] = -1;
                    if (c + 1 > last_exit_done)
                        last_exit_done = c + 1;
                    /* the slot is free from the next cycle on: the supervisor cannot take
                       it this cycle, as the worker used it */
                    continue;
                }
            }
            continue;
        }
        if (waiting_join) {
            int busy = 0;
            for (int k = 0; k < 6; k++)
                busy |= left[k] > 0;
            if (busy)
                continue;
            uint64_t done = join_issue + 6 > last_exit_done ? join_issue + 6 : last_exit_done;
            waiting_join = 0;
            sup_ready = done;
        }
        if (c < sup_ready)
            continue;
        const sop *o = &prog[pc++];
        switch (o->kind) {
        case OPK_ALU: sup_ready = c + 1; break;
        case OPK_BR: sup_ready = c + 6; break;
        case OPK_RUN: {
            int w = 0;
            while (left[w] > 0)
                w++;
            left[w] = o->len;
            start[w] = c + 6;
            owner[s] = w;
            sup_ready = c + 6;
            break;
        }
        case OPK_RUNALL:
            for (int w = 0; w < 6; w++) {
                left[w] = o->len;
                start[w] = c + 6 + (uint64_t)w;
                owner[(s + w) % 6] = w;
            }
            sup_ready = c + 6;
            break;
        case OPK_JOIN:
            waiting_join = 1;
            join_issue = c;
            break;
        case OPK_HALT: {
            /* halt waits for workers too */
            uint64_t end = c + 1;
            for (uint64_t d = c;; d++) {
                int busy = 0;
                for (int k = 0; k < 6; k++)
                    busy |= left[k] > 0;
                if (!busy)
                    break;
                int ss = (int)(d % 6);
                if (owner[ss] >= 0 && d >= start[owner[ss]] && --left[owner[ss]] == 0) {
                    owner[ss] = -1;
                    if (d + 1 > last_exit_done)
                        last_exit_done = d + 1;
                }
            }
            return end > last_exit_done ? end : last_exit_done;
        }
        }
    }
}

/* ---- the same program as assembly ---- */
static char *to_asm(const sop *prog, int n)
{
    size_t cap = 65536, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "main:\n");
    for (int i = 0; i < n; i++) {
        switch (prog[i].kind) {
        case OPK_ALU: len += (size_t)snprintf(s + len, cap - len, "  addi r1, r1, 1\n"); break;
        case OPK_BR: len += (size_t)snprintf(s + len, cap - len, "  br b%d\nb%d:\n", i, i); break;
        case OPK_RUN:
            len += (size_t)snprintf(s + len, cap - len, "  run w%d, r0\n", prog[i].len);
            break;
        case OPK_RUNALL:
            len += (size_t)snprintf(s + len, cap - len, "  runall w%d, r0\n", prog[i].len);
            break;
        case OPK_JOIN: len += (size_t)snprintf(s + len, cap - len, "  join\n"); break;
        case OPK_HALT: len += (size_t)snprintf(s + len, cap - len, "  halt\n"); break;
        }
    }
    /* worker bodies w1..w40: (len - 1) adds then exit */
    for (int l = 1; l <= 40; l++) {
        len += (size_t)snprintf(s + len, cap - len, "w%d:\n", l);
        for (int k = 1; k < l; k++)
            len += (size_t)snprintf(s + len, cap - len, "  addi r2, r2, 1\n");
        len += (size_t)snprintf(s + len, cap - len, "  exit\n");
    }
    return s;
}

static uint64_t engine_cycles(const char *src)
{
    err e;
    err_clear(&e);
    isa_prog prog;
    tu_assemble("gen.s", src, &prog);
    sys *sy = tu_system(1, 1, 1, 1000000, &prog);
    eng *g = sys_engine(sy);
    if (eng_run(g, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    eng_stats st;
    eng_get_stats(g, &st);
    sys_free(sy);
    isa_prog_free(&prog);
    return st.cycles;
}

/* One worker of k instructions: exit at 6 + 6(k-1); join at 7 (slot 0 is the worker's at 6)
 * completes at max(13, exit + 1); halt there finishes one cycle later. */
static void test_one_worker_k(void **state)
{
    (void)state;
    for (int k = 1; k <= 40; k++) {
        sop p[] = {{OPK_RUN, k}, {OPK_JOIN, 0}, {OPK_HALT, 0}};
        char *src = to_asm(p, 3);
        uint64_t exit_at = 6 + 6 * (uint64_t)(k - 1);
        uint64_t join_done = exit_at + 1 > 13 ? exit_at + 1 : 13;
        assert_int_equal(engine_cycles(src), join_done + 1);
        free(src);
    }
}

/* Six workers of k instructions: worker j exits at 6 + j + 6(k-1). The supervisor has no slot
 * until slot 0 frees (at exit_0 + 6 = 12 + 6(k-1)), where join issues; it completes at
 * max(join + 6, exit_5 + 1) and halt finishes one cycle later. */
static void test_six_workers_k(void **state)
{
    (void)state;
    for (int k = 1; k <= 40; k++) {
        sop p[] = {{OPK_RUNALL, k}, {OPK_JOIN, 0}, {OPK_HALT, 0}};
        char *src = to_asm(p, 3);
        uint64_t join_at = 12 + 6 * (uint64_t)(k - 1);
        uint64_t exit5 = 6 + 5 + 6 * (uint64_t)(k - 1);
        uint64_t done = join_at + 6 > exit5 + 1 ? join_at + 6 : exit5 + 1;
        assert_int_equal(engine_cycles(src), done + 1);
        free(src);
    }
}

/* A supervisor loop of n ALU + branch pairs: 7 cycles each, then halt. */
static void test_supervisor_branches(void **state)
{
    (void)state;
    for (int n = 0; n <= 20; n++) {
        sop p[64];
        int m = 0;
        for (int i = 0; i < n; i++) {
            p[m++] = (sop){OPK_ALU, 0};
            p[m++] = (sop){OPK_BR, 0};
        }
        p[m++] = (sop){OPK_HALT, 0};
        char *src = to_asm(p, m);
        assert_int_equal(engine_cycles(src), 7 * (uint64_t)n + 1);
        free(src);
    }
}

/* Random programs: straight-line engine == cycle-stepped reference. */
static void test_random_against_reference(void **state)
{
    (void)state;
    uint64_t seed = 12345;
    for (int trial = 0; trial < 300; trial++) {
        sop p[40];
        int n = 0, running = 0;
        int len = 2 + (int)((seed >> 33) % 30);
        for (int i = 0; i < len && n < 36; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int r = (int)((seed >> 33) % 10);
            int wl = 1 + (int)((seed >> 40) % 40);
            if (r < 3) {
                p[n++] = (sop){OPK_ALU, 0};
            } else if (r < 5) {
                p[n++] = (sop){OPK_BR, 0};
            } else if (r < 7 && running < 5) {
                p[n++] = (sop){OPK_RUN, wl};
                running++;
            } else if (r == 7 && running == 0) {
                p[n++] = (sop){OPK_RUNALL, wl};
                running = 6;
            } else {
                p[n++] = (sop){OPK_JOIN, 0};
                running = 0;
            }
        }
        p[n++] = (sop){OPK_HALT, 0};
        char *src = to_asm(p, n);
        uint64_t want = reference_cycles(p, n);
        uint64_t got = engine_cycles(src);
        if (got != want)
            fail_msg("trial %d: engine %llu, reference %llu, program:\n%.2000s", trial,
                     (unsigned long long)got, (unsigned long long)want, src);
        free(src);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_worker_k),
        cmocka_unit_test(test_six_workers_k),
        cmocka_unit_test(test_supervisor_branches),
        cmocka_unit_test(test_random_against_reference),
    };
    return cmocka_run_group_tests_name("tile", tests, NULL, NULL);
}
