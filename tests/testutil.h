/* testutil: small helpers the cmocka suites share (header only; every function is static
 * inline, so a suite that does not use one gets no warning). Include after <cmocka.h>. */
#ifndef IPUSIM_TESTUTIL_H
#define IPUSIM_TESTUTIL_H

#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/alloc.h"
#include "base/file.h"
#include "host/system.h"
#include "hw/tile.h"
#include "isa/asm.h"
#include "workloads/codelets.h"
#include "workloads/mnist/data.h"
#include "workloads/mnist/idx.h"

/* The Euclidean norm of v[0..n), summed in double. */
static inline double tu_norm(const float *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)v[i] * v[i];
    return sqrt(s);
}

/* 0 when IPUSIM_SLOW_TESTS=0 (the sanitizer passes of .ci/run): a suite then leaves out its
 * slowest cases; 1 otherwise. */
static inline int tu_slow_tests(void)
{
    const char *s = getenv("IPUSIM_SLOW_TESTS");
    return !(s && strcmp(s, "0") == 0);
}

/* The mnist-digits dataset ($IPUSIM_DATA/mnist-digits, else data/mnist-digits) into d: 0, or
 * -1 after one line on stderr naming `who` and `make data` (make test runs it first). */
static inline int tu_load_digits(mdata *d, const char *who)
{
    const char *root = getenv("IPUSIM_DATA");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/mnist-digits", root && *root ? root : "data");
    err e;
    err_clear(&e);
    if (mdata_load(d, dir, &e) == 0)
        return 0;
    fprintf(stderr, "%s: %s (run 'make data'; make test does it first)\n", who, e.msg);
    return -1;
}

/* A small dataset in IDX files in dir: n images of prefix (train or t10k), image i of digit
 * i % 10 a bright 7x7 block at a place of its own. */
static inline void tu_write_digits(const char *dir, const char *prefix, uint32_t n)
{
    err e;
    char p[512];
    unsigned char *img = calloc((size_t)n, 784), *lab = malloc(n);
    assert_true(img && lab);
    for (uint32_t i = 0; i < n; i++) {
        lab[i] = (unsigned char)(i % 10);
        for (int r = 0; r < 7; r++)
            for (int c = 0; c < 7; c++)
                img[(size_t)i * 784 + (size_t)(lab[i] / 4 * 7 + 3 + r) * 28 +
                    (size_t)(lab[i] % 4 * 7 + c)] = (unsigned char)(200 + i % 50);
    }
    snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte", dir, prefix);
    assert_int_equal(idx_write(p, IDX_U8, 3, (uint32_t[]){n, 28, 28}, img, 0, &e), 0);
    snprintf(p, sizeof p, "%s/%s-labels-idx1-ubyte", dir, prefix);
    assert_int_equal(idx_write(p, IDX_U8, 1, (uint32_t[]){n}, lab, 0, &e), 0);
    free(img);
    free(lab);
}

/* FNV-1a over n bytes, continuing from h (start with 0xcbf29ce484222325). */
static inline uint64_t tu_fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* A fresh directory /tmp/ipusim-NAME-XXXXXX in buf; 0 or -1. */
static inline int tu_mkdtemp(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "/tmp/ipusim-%s-XXXXXX", name);
    return mkdtemp(buf) ? 0 : -1;
}

/* Remove a directory made by tu_mkdtemp, with its contents; 0 or -1. */
static inline int tu_rmdir(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The ipusim binary next to a test binary: BUILD/tests/test_x -> BUILD/ipusim. */
static inline void tu_bin_path(const char *argv0, char *out, size_t len)
{
    char self[4096];
    snprintf(self, sizeof self, "%s", argv0);
    snprintf(out, len, "%s/../ipusim", dirname(self));
}

/* Write text to path (the test fails if it cannot). */
static inline void tu_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A whole file as a NUL-terminated malloc'd string, or NULL. */
static inline char *tu_read_file(const char *path)
{
    size_t n;
    return file_read(path, (size_t)1 << 30, &n, NULL);
}

/* Run "BIN ARGS" with stderr joined to stdout; its output goes to out (cut to len - 1 bytes).
 * Returns the exit status, or -1 when it did not exit normally. */
static inline int tu_run(const char *bin, char *out, size_t len, const char *args)
{
    char cmd[2 * 4096 + 64]; /* a binary's path and arguments of 4 KiB each */
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* tu_run with ARGS formatted from fmt (at most 4 KiB). */
static inline int tu_runf(const char *bin, char *out, size_t len, const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return tu_run(bin, out, len, args);
}

static inline int tu_count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Assemble src as `name` into *prog, failing the test with the assembler's message. */
static inline void tu_assemble(const char *name, const char *src, isa_prog *prog)
{
    err e;
    err_clear(&e);
    if (asm_assemble(name, src, strlen(src), prog, &e) != ERR_OK)
        fail_msg("%s", e.msg);
}

/* A system of nipus Mk2 IPUs of ntiles tiles (0: the preset's) without a host, built with the
 * one constructor, its program loaded; fails the test on any error. */
/* The cycle limits named as the CLI names them (sys_ctl.limit_names), as the tests of fault
 * messages expect. */
#define TU_LIMIT_NAMES ((tile_limit_names){"--max-cycles", "--max-superstep-cycles"})

static inline sys *tu_system(uint32_t nipus, uint32_t ntiles, unsigned threads, uint64_t max_cycles,
                             const isa_prog *prog)
{
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = threads, .max_cycles = max_cycles, .ctl.limit_names = TU_LIMIT_NAMES};
    if (mach_builtin(&cfg.m, "mk2", &e) != ERR_OK)
        fail_msg("%s", e.msg);
    cfg.m.nipus = nipus;
    if (ntiles)
        cfg.m.tiles_per_ipu = ntiles;
    sys *s = sys_new(&cfg, &e);
    if (!s || eng_load(sys_engine(s), prog, &e) != ERR_OK)
        fail_msg("%s", e.msg);
    return s;
}

/* 32-bit words of tile memory by byte address (unaligned-safe). */
static inline void tu_put32(uint8_t *mem, uint32_t at, uint32_t v)
{
    memcpy(mem + at, &v, 4);
}

static inline uint32_t tu_get32(const uint8_t *mem, uint32_t at)
{
    uint32_t v;
    memcpy(&v, mem + at, 4);
    return v;
}

/* A one-tile codelet harness (the codelet suites): a program of the supervisor text
 * `main_text` (after "main:") and the sources of the codelets `names`, loaded on a one-tile
 * system; mem is the tile's memory. */
typedef struct tu_harness {
    isa_prog prog;
    sys *s;
    uint8_t *mem;
} tu_harness;

static inline void tu_h_prog(tu_harness *h, const char *main_text, const char *const *names, int nn)
{
    size_t len = strlen(main_text) + 64;
    for (int i = 0; i < nn; i++) {
        if (!wl_codelet(names[i]))
            fail_msg("no codelet %s", names[i]);
        len += strlen(wl_codelet(names[i]));
    }
    char *text = xmalloc(len);
    size_t k = (size_t)snprintf(text, len, "        .text\nmain:\n%s", main_text);
    for (int i = 0; i < nn; i++)
        k += (size_t)snprintf(text + k, len - k, "%s", wl_codelet(names[i]));
    tu_assemble(names[0], text, &h->prog);
    free(text);
    h->s = tu_system(1, 1, 1, 100000000, &h->prog);
    h->mem = eng_tile_mem(sys_engine(h->s), 0, 0);
}

/* Run; the cycle the tile halted at. */
static inline uint64_t tu_h_run(tu_harness *h)
{
    err e;
    err_clear(&e);
    if (eng_run(sys_engine(h->s), &e) != ERR_OK)
        fail_msg("%s", e.msg);
    const tile *t = eng_tile(sys_engine(h->s), 0, 0);
    if (t->state != TILE_HALTED)
        fail_msg("the tile did not halt");
    return t->at;
}

static inline void tu_h_free(tu_harness *h)
{
    sys_free(h->s);
    isa_prog_free(&h->prog);
}

/* ---- fp32 and fp16 by value, for references (written with double arithmetic, not the
 * simulator's bit shuffling) ---- */

static inline uint32_t tu_fb(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float tu_bf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Product rounded to fp32 on its own (a volatile store forces the rounding). */
static inline float tu_rmul(float a, float b)
{
    volatile float p = a * b;
    return p;
}

/* fp16 bits -> fp32 bits: subnormals m x 2^-24, normals (1024 + m) x 2^(e - 25). */
static inline uint32_t tu_f16_to_f32(uint32_t a)
{
    unsigned s = (a >> 15) & 1, e = (a >> 10) & 31, m = a & 1023;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, (int)e - 25);
    return tu_fb((float)(s ? -v : v));
}

/* fp32 bits -> fp16 bits, nearest even: the binade's quantum q = 2^(e - 10) (e >= -14: below
 * that the subnormal quantum 2^-24), n = rint(|x| / q) (exact division, rint is nearest
 * even), bits = (e + 15) << 10 plus n - 1024 (a carry of n into 2048 moves to the next binade
 * by itself; in the subnormal binade that sum is just n). 65520 and up round to inf. */
static inline uint32_t tu_f32_to_f16(uint32_t a)
{
    float f = tu_bf(a);
    uint32_t s = (a >> 16) & 0x8000u;
    double x = fabs((double)f);
    if (isnan(f))
        return s | 0x7e00u;
    if (x >= 65520.0)
        return s | 0x7c00u;
    if (x == 0)
        return s;
    int e;
    frexp(x, &e); /* x = f x 2^e, f in [0.5, 1): the binade's exponent is e - 1 */
    e = e - 1 < -14 ? -14 : e - 1;
    double n = rint(ldexp(x, 10 - e));
    return s | (uint32_t)(((e + 15) << 10) + (long)n - 1024);
}

#endif
