/* speed: how fast the simulator runs, not what it simulates.
 *
 *   (a) an integer/branch loop on every worker of every tile of one Mk2 IPU (1472 x 6);
 *   (b) the GEMM workload (1536 x 1472 x 512) on one Mk2 IPU;
 * each with 1 and 2 host threads, median of 9 runs of eng_run() only (loading and checking
 * are outside the timed part; the runs with 1 and with 2 threads taken in turn, so that a
 * drift in the host's speed slows both alike). Prints simulated instructions per host second, tile-cycles
 * per host second (simulated cycles x tiles / host seconds) and the 1 -> 2 thread speed-up.
 * Then the cost of a superstep on one Mk2 IPU (1472 tiles), 10,000 of them (the cheap
 * ones more: (c) and (d) 100,000, (c2) 50,000):
 *   (c) every tile only syncs (`sync internal` in a loop: sync, then brnzdec);
 *   (c2) every tile only syncs, `sync internal` in a row (what a compiled control
 *       program gives a tile with nothing to do in a step: the engine does not step it);
 *   (d) tile 0 runs six workers of 30 instructions each superstep, the others only sync;
 *   (e) every tile runs six workers of 30 instructions each superstep;
 *   (f) as (c), every even tile sending 8 bytes to the next tile each superstep;
 *   (g) as (d), and (h) as (e), with the sends of (f);
 * host microseconds a superstep, 1 and 2 threads, median of 9 (of 5 for (e) and (h), whose
 * runs take seconds). `make bench-speed` then runs
 * bench/mnist.sh for the simulated MNIST epoch (one IPU, and pipelined over four) against
 * the native reference trainer, with 1 and 2 threads. `speed superstep K [STEPS] [THREADS]`
 * runs only bench K (c..h, or i for c2) once, for a profiler.
 * Targets (bench, not tests): >= 400 M instructions/s per host thread on (a); >= 1.7x;
 * (c) <= 10 us a superstep; 2 threads never slower than 1; MNIST within 5x the reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/system.h"
#include "isa/asm.h"
#include "workloads/gemm/gemm.h"

/* runs of each benchmark with each number of threads: the median; FEW_RUNS for the slow ones
 * (seconds a run) */
#define RUNS 9
#define FEW_RUNS 5

static const char loop_src[] = "main:   runall  w, r0\n"
                               "        join\n"
                               "        halt\n"
                               "w:      li      r1, 20000\n"
                               "        li      r2, 0\n"
                               "loop:   addi    r2, r2, 1\n"
                               "        xor     r3, r2, r1\n"
                               "        brnzdec r1, loop\n"
                               "        exit\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct result {
    double seconds; /* median */
    eng_stats st;
} result;

/* One run of `prog` on every tile of one Mk2 IPU: eng_run()'s host seconds into *t. */
static int run_prog(const isa_prog *prog, unsigned threads, double *t, eng_stats *st)
{
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = threads, .max_cycles = UINT64_MAX / 4};
    mach_builtin(&cfg.m, "mk2", &e);
    sys *sy = sys_new(&cfg, &e);
    eng *g = sy ? sys_engine(sy) : NULL;
    int rc = g && eng_load(g, prog, &e) == ERR_OK ? ERR_OK : 1;
    double t0 = now();
    if (rc == ERR_OK && eng_run(g, &e) != ERR_OK)
        rc = 1;
    *t = now() - t0;
    if (rc == ERR_OK)
        eng_get_stats(g, st);
    else
        fprintf(stderr, "%s\n", e.msg);
    sys_free(sy);
    return rc;
}

/* One run of the GEMM: its host seconds into *t. */
static int run_gemm(unsigned threads, double *t, eng_stats *st)
{
    err e;
    err_clear(&e);
    mach m;
    mach_builtin(&m, "mk2", &e);
    wl_gemm_cfg cfg = {1536, 1472, 512, 1, 0, threads, UINT64_MAX / 4};
    wl_gemm_result res;
    sys *sy = NULL;
    if (wl_gemm_run(&m, &cfg, &res, &sy, &e) != ERR_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    *t = res.host_seconds;
    eng_get_stats(sys_engine(sy), st);
    sys_free(sy);
    return 0;
}

/* `runs` runs (at most RUNS) with 1 host thread and with 2, taken in turn (1, 2, 1, 2, ...:
 * a VM whose speed drifts between minutes then slows both alike): the medians into r[0]
 * and r[1]. `src` the program, or NULL for the GEMM. */
static int bench_pair(const char *src, int runs, result r[2])
{
    err e;
    err_clear(&e);
    isa_prog prog = {0};
    if (src && asm_assemble("speed.s", src, strlen(src), &prog, &e) != ERR_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double t[2][RUNS];
    int rc = 0;
    for (int i = 0; i < runs && rc == 0; i++)
        for (unsigned k = 0; k < 2 && rc == 0; k++)
            rc = src ? run_prog(&prog, k + 1, &t[k][i], &r[k].st)
                     : run_gemm(k + 1, &t[k][i], &r[k].st);
    for (unsigned k = 0; k < 2 && rc == 0; k++) {
        qsort(t[k], (size_t)runs, sizeof t[k][0], cmp_double);
        r[k].seconds = t[k][runs / 2];
    }
    isa_prog_free(&prog);
    return rc;
}

static uint64_t insns(const eng_stats *st)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < TILE_NCTX; c++)
        n += st->ninsn[c];
    return n;
}

enum { STEPS = 10000 };

/* A superstep program (c)-(h): `busy` 0 none, 1 tile 0, 2 every tile runs six workers of 30
 * instructions; `send`: every even tile sends 8 bytes to the next; busy 3: (c2), `steps`
 * syncs in a row. */
static char *superstep_src(int busy, int send, int steps)
{
    if (busy == 3) {
        static const char sync_line[] = "        sync    internal\n", halt[] = "        halt\n";
        size_t line = sizeof sync_line - 1, n = (size_t)steps * line;
        char *row = malloc(n + sizeof halt);
        if (!row)
            return NULL;
        for (int i = 0; i < steps; i++)
            memcpy(row + (size_t)i * line, sync_line, line);
        memcpy(row + n, halt, sizeof halt);
        return row;
    }
    char *buf = malloc(4096);
    if (!buf)
        return NULL;
    const size_t cap = 4096;
    size_t k = 0;
    k += (size_t)snprintf(buf + k, cap - k, "main:   get     r6, $tile\n        li      r7, %d\n",
                          steps - 1);
    k += (size_t)snprintf(buf + k, cap - k, "loop:\n");
    if (busy)
        k += (size_t)snprintf(buf + k, cap - k, "%s        runall  w, r0\n        join\nquiet:\n",
                              busy == 1 ? "        brnz    r6, quiet\n" : "");
    if (send)
        k += (size_t)snprintf(buf + k, cap - k,
                              "        andi    r5, r6, 1\n        brnz    r5, nosend\n"
                              "        li      r1, src\n        li      r2, 8\n"
                              "        addi    r3, r6, 1\n        li      r4, dst\n"
                              "        send    r1, r2, r3, r4\nnosend:\n");
    k += (size_t)snprintf(buf + k, cap - k,
                          "        sync    internal\n        brnzdec r7, loop\n        halt\n");
    k += (size_t)snprintf(buf + k, cap - k, "w:\n");
    for (int i = 0; i < 29; i++)
        k += (size_t)snprintf(buf + k, cap - k, "        addi    r3, r3, 1\n");
    snprintf(buf + k, cap - k,
             "        exit\n        .data\n        .align  8\nsrc:    .word   1, 2\ndst:    .space "
             " 8\n");
    return buf;
}

static int supersteps(void)
{
    /* the cheap ones run 10x the supersteps: a run's fixed costs (its first round wakes the
     * threads) would otherwise show in a superstep of a tenth of a microsecond */
    static const struct {
        const char *name;
        int busy, send, steps, runs;
    } b[] = {{"(c) sync only", 0, 0, 10 * STEPS, RUNS},
             {"(c2) sync only, in a row", 3, 0, 5 * STEPS, RUNS}, /* 8 bytes a sync: 400 KB */
             {"(d) tile 0 busy", 1, 0, 10 * STEPS, RUNS},
             {"(e) every tile busy", 2, 0, STEPS, FEW_RUNS},
             {"(f) sync + on-chip sends", 0, 1, STEPS, RUNS},
             {"(g) tile 0 busy + sends", 1, 1, STEPS, RUNS},
             {"(h) every tile busy + sends", 2, 1, STEPS, FEW_RUNS}};
    printf("\n%-26s %8s %12s %16s %9s\n", "superstep (1472 tiles)", "threads", "median s",
           "us per superstep", "speed-up");
    for (size_t k = 0; k < sizeof b / sizeof b[0]; k++) {
        result r[2];
        char *src = superstep_src(b[k].busy, b[k].send, b[k].steps);
        int bad = !src || bench_pair(src, b[k].runs, r) != 0;
        free(src);
        if (bad)
            return 1;
        for (unsigned t = 0; t < 2; t++) {
            printf("%-26s %8u %12.4f %16.2f", b[k].name, t + 1, r[t].seconds,
                   r[t].seconds / b[k].steps * 1e6);
            if (t == 1)
                printf(" %8.2fx", r[0].seconds / r[1].seconds);
            printf("\n");
        }
    }
    printf("targets: (c) <= 10 us a superstep; 2 threads never slower than 1\n");
    return 0;
}

/* `speed superstep K [STEPS] [THREADS]`: only superstep bench K (c..h), STEPS supersteps
 * (default 10,000), once, for a profiler (valgrind --tool=callgrind). */
static int one_superstep(int argc, char **argv)
{
    static const int busy[] = {0, 1, 2, 0, 1, 2, 3}, send[] = {0, 0, 0, 1, 1, 1, 0};
    int k = argv[2][0] - 'c';
    if (k < 0 || k > 6) {
        fprintf(stderr, "speed superstep: no bench (%s)\n", argv[2]);
        return 2;
    }
    int steps = argc > 3 ? atoi(argv[3]) : STEPS;
    unsigned threads = argc > 4 ? (unsigned)atoi(argv[4]) : 1;
    char *src = superstep_src(busy[k], send[k], steps);
    err e;
    err_clear(&e);
    isa_prog prog = {0};
    int bad = !src || asm_assemble("speed.s", src, strlen(src), &prog, &e) != ERR_OK;
    double t = 0;
    eng_stats st;
    if (bad)
        fprintf(stderr, "%s\n", src ? e.msg : "out of memory");
    else
        bad = run_prog(&prog, threads, &t, &st) != 0;
    free(src);
    isa_prog_free(&prog);
    if (bad)
        return 1;
    printf("%d supersteps: %.4f s, %.2f us each\n", steps, t, t / steps * 1e6);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "superstep") == 0)
        return one_superstep(argc, argv);
    printf("%-26s %8s %12s %14s %16s %9s\n", "benchmark", "threads", "median s", "M instr/s",
           "M tile-cycles/s", "speed-up");
    const char *names[2] = {"(a) int/branch loop", "(b) gemm 1536x1472x512"};
    for (int b = 0; b < 2; b++) {
        result r[2];
        if (bench_pair(b == 0 ? loop_src : NULL, RUNS, r) != 0)
            return 1;
        result *rs[2] = {&r[0], &r[1]};
        for (int k = 0; k < 2; k++) {
            double mi = (double)insns(&rs[k]->st) / rs[k]->seconds / 1e6;
            double mtc = (double)rs[k]->st.cycles * (double)rs[k]->st.tiles / rs[k]->seconds / 1e6;
            printf("%-26s %8d %12.4f %14.1f %16.1f", names[b], k + 1, rs[k]->seconds, mi, mtc);
            if (k == 1)
                printf(" %8.2fx", r[0].seconds / r[1].seconds);
            printf("\n");
        }
    }
    printf("targets: >= 400 M instr/s per host thread on (a); >= 1.7x from 1 to 2 threads\n");
    return supersteps();
}
