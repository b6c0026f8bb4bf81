/* Tests of base/: allocation (growth, the out-of-memory line and abort), the whole-file
 * reader (size limit, missing file, FIFO and directory refused without blocking), the atomic
 * writer (old content whole after a failed write, no temporary file left) and the seeded
 * generator (first outputs against values computed independently). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/file.h"
#include "base/json.h"
#include "base/num.h"
#include "base/rng.h"
#include "base/text.h"
#include "testutil.h"

/* ---- alloc ------------------------------------------------------------------------------ */

/* Under AddressSanitizer (make SAN=address,...) a huge malloc must fail as in libc, returning
 * NULL, instead of ASan's own report; the weak hook is ignored without ASan. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static void test_grow(void **state)
{
    (void)state;
    int *a = NULL;
    size_t cap = 0;
    a = xgrow(a, &cap, 1, sizeof *a);
    assert_int_equal(cap, 16);
    for (int i = 0; i < 16; i++)
        a[i] = i;
    int *same = xgrow(a, &cap, 16, sizeof *a);
    assert_ptr_equal(same, a);
    a = xgrow(a, &cap, 17, sizeof *a);
    assert_int_equal(cap, 32);
    a = xgrow(a, &cap, 100, sizeof *a);
    assert_int_equal(cap, 128);
    for (int i = 0; i < 16; i++)
        assert_int_equal(a[i], i);
    a[127] = 7; /* the whole capacity is usable (ASan would catch an overrun) */
    free(a);

    unsigned char *z = xcalloc(1000, 3);
    for (int i = 0; i < 3000; i++)
        assert_int_equal(z[i], 0);
    free(z);
    char *s = xstrdup("tile");
    assert_string_equal(s, "tile");
    free(s);
    assert_int_equal(min_u64(3, 5), 3);
    assert_int_equal(max_u64(3, 5), 5);
}

/* In a child: f() runs with stderr on a pipe; returns what it wrote, *sig the killing signal. */
static void run_child(void (*f)(void), char *out, size_t len, int *sig)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 2);
        signal(SIGABRT, SIG_DFL);
        f();
        _exit(0);
    }
    close(p[1]);
    size_t used = 0; /* read to the end: under ASan the child writes a warning first */
    for (ssize_t n; used + 1 < len && (n = read(p[0], out + used, len - 1 - used)) > 0;)
        used += (size_t)n;
    out[used] = '\0';
    close(p[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static void huge_malloc(void)
{
    volatile size_t n = SIZE_MAX / 2;
    free(xmalloc(n));
}

static void huge_calloc(void)
{
    free(xcalloc(SIZE_MAX / 4, 8)); /* n * size overflows */
}

/* stderr is exactly the line want; under ASan it ends with it (ASan warns first). */
static void assert_oom_line(const char *out, const char *want)
{
#ifdef __SANITIZE_ADDRESS__
    size_t lo = strlen(out), lw = strlen(want);
    if (lo < lw || strcmp(out + lo - lw, want) != 0)
        fail_msg("stderr was '%s', expected it to end with '%s'", out, want);
#else
    assert_string_equal(out, want);
#endif
}

static void test_out_of_memory(void **state)
{
    (void)state;
    char out[256], want[128];
    int sig;
    run_child(huge_malloc, out, sizeof out, &sig);
    snprintf(want, sizeof want, "ipusim: out of memory allocating %zu bytes\n", SIZE_MAX / 2);
    assert_oom_line(out, want);
    assert_int_equal(sig, SIGABRT);
    run_child(huge_calloc, out, sizeof out, &sig);
    snprintf(want, sizeof want, "ipusim: out of memory allocating %zu bytes\n", SIZE_MAX);
    assert_oom_line(out, want);
    assert_int_equal(sig, SIGABRT);
}

/* ---- file reading ----------------------------------------------------------------------- */

static void test_read(void **state)
{
    (void)state;
    char dir[64], path[128];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "base"), 0);
    snprintf(path, sizeof path, "%s/a.txt", dir);
    tu_write_file(path, "hello\n");
    err e;
    size_t n = 99;
    char *s = file_read(path, 6, &n, &e);
    assert_non_null(s);
    assert_int_equal(n, 6);
    assert_memory_equal(s, "hello\n", 7); /* with the NUL */
    free(s);
    /* text: a lone CR (old Mac) is a line end, made an LF in place; CRLF stays as it is */
    tu_write_file(path, "a\rb\r\nc\r\rd\r");
    s = file_read_text(path, 100, &n, &e);
    assert_non_null(s);
    assert_int_equal(n, 10);
    assert_memory_equal(s, "a\nb\r\nc\n\nd\n", 11);
    free(s);
    tu_write_file(path, "hello\n");

    char want[256];
    assert_null(file_read(path, 5, &n, &e));
    assert_int_equal(e.status, ERR_INPUT);
    snprintf(want, sizeof want, "%s: larger than 5 bytes", path);
    assert_string_equal(e.msg, want);

    /* bigger than the first buffer: grows, and the limit still holds at the boundary */
    char *big = xmalloc(10001);
    memset(big, 'x', 10000);
    big[10000] = '\0';
    tu_write_file(path, big);
    s = file_read(path, 10000, &n, &e);
    assert_non_null(s);
    assert_int_equal(n, 10000);
    assert_memory_equal(s, big, 10001);
    free(s);
    assert_null(file_read(path, 9999, &n, &e));
    free(big);

    snprintf(path, sizeof path, "%s/missing", dir);
    assert_null(file_read(path, 100, &n, &e));
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    assert_string_equal(e.msg, want);

    assert_null(file_read(dir, 100, &n, &e));
    snprintf(want, sizeof want, "%s: is a directory", dir);
    assert_string_equal(e.msg, want);

    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(10); /* a blocking open of a FIFO with no writer would hang: fail instead */
    assert_null(file_read(path, 100, &n, &e));
    alarm(0);
    snprintf(want, sizeof want, "%s: is not a regular file", path);
    assert_string_equal(e.msg, want);
    assert_int_equal(tu_rmdir(dir), 0);
}

/* ---- atomic writing --------------------------------------------------------------------- */

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Past RLIMIT_FSIZE a write fails with EFBIG (SIGXFSZ ignored): the failure comes mid-write. */
static void write_past_limit(const char *path)
{
    struct rlimit rl = {4096, 4096};
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        _exit(2);
    static char buf[65536];
    memset(buf, 'n', sizeof buf);
    err e;
    _exit(file_write_atomic(path, buf, sizeof buf, &e) == ERR_INPUT &&
                  strstr(e.msg, "cannot write: File too large")
              ? 0
              : 1);
}

/* In a child: a write of 16 bytes into path limited to 10 goes on after the short write,
 * and fails with the next write's reason (EFBIG); exits 0 when it does. */
static void write_short(const char *path)
{
    struct rlimit rl = {10, 10};
    signal(SIGXFSZ, SIG_IGN);
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0 || setrlimit(RLIMIT_FSIZE, &rl) != 0)
        _exit(2);
    errno = 0;
    _exit(file_write_all(fd, "0123456789abcdef", 16) == -1 && errno == EFBIG ? 0 : 1);
}

/* Child pid exited, with status 0. */
static void child_ok(pid_t pid)
{
    int wst;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    assert_true(WIFEXITED(wst));
    assert_int_equal(WEXITSTATUS(wst), 0);
}

static void test_write(void **state)
{
    (void)state;
    char dir[64], path[128], want[256];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "base"), 0);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    err e;
    assert_int_equal(file_write_atomic(path, "old content\n", 12, &e), ERR_OK);
    char *s = tu_read_file(path);
    assert_string_equal(s, "old content\n");
    free(s);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(count_entries(dir), 1);

    /* a write that fails half-way leaves the old file whole and no temporary file */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        write_past_limit(path);
    child_ok(pid);
    s = tu_read_file(path);
    assert_string_equal(s, "old content\n");
    free(s);
    assert_int_equal(count_entries(dir), 1);

    /* /dev/full takes nothing: the reason is ENOSPC, named as strerror words it */
    int full = open("/dev/full", O_WRONLY);
    if (full >= 0) {
        errno = 0;
        assert_int_equal(file_write_all(full, "x", 1), -1);
        assert_int_equal(errno, ENOSPC);
        close(full);
        assert_int_equal(file_write_atomic("/dev/full", "x", 1, &e), ERR_INPUT);
        assert_string_equal(e.msg, "/dev/full: cannot write: No space left on device");
    }
    /* a short write goes on, and the next write's failure is the reason */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        write_short(path);
    child_ok(pid);
    s = tu_read_file(path);
    assert_string_equal(s, "0123456789"); /* the 10 bytes the limit let through */
    free(s);
    assert_int_equal(file_write_atomic(path, "old content\n", 12, &e), ERR_OK);

    /* into a missing directory */
    char bad[160];
    snprintf(bad, sizeof bad, "%s/nodir/out.txt", dir);
    assert_int_equal(file_write_atomic(bad, "x", 1, &e), ERR_INPUT);
    snprintf(want, sizeof want, "%s: cannot write: No such file or directory", bad);
    assert_string_equal(e.msg, want);

    /* into a read-only directory (root may write there anyway: then only the content counts) */
    assert_int_equal(chmod(dir, 0555), 0);
    int rc = file_write_atomic(path, "new", 3, &e);
    assert_int_equal(chmod(dir, 0755), 0);
    s = tu_read_file(path);
    if (getuid() != 0) {
        assert_int_equal(rc, ERR_INPUT);
        assert_string_equal(s, "old content\n");
    } else {
        assert_string_equal(s, rc == ERR_OK ? "new" : "old content\n");
    }
    free(s);
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(tu_rmdir(dir), 0);
}

/* What an output is pointed at is kept: a symbolic link stays one (the file it names is
 * replaced), a dangling one is refused, a FIFO is written into (never replaced by a file), and
 * a FIFO nobody reads is refused at once rather than waited for. */
static void test_write_targets(void **state)
{
    (void)state;
    char dir[64], path[128], link[128], fifo[128], want[300];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "base"), 0);
    snprintf(path, sizeof path, "%s/real.json", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    err e;
    assert_int_equal(file_write_atomic(path, "old", 3, &e), ERR_OK);
    assert_int_equal(symlink("real.json", link), 0);
    assert_int_equal(file_write_atomic(link, "new", 3, &e), ERR_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    char *s = tu_read_file(path);
    assert_string_equal(s, "new");
    free(s);
    assert_int_equal(count_entries(dir), 2);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(file_write_atomic(link, "x", 1, &e), ERR_INPUT);
    snprintf(want, sizeof want, "%s: a symbolic link to nothing; nothing written", link);
    assert_string_equal(e.msg, want);
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_int_equal(file_write_atomic(fifo, "x", 1, &e), ERR_INPUT);
    snprintf(want, sizeof want, "%s: cannot write: a FIFO that nobody reads", fifo);
    assert_string_equal(e.msg, want);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    assert_int_equal(file_write_atomic(fifo, "through", 7, &e), ERR_OK);
    char got[16] = "";
    assert_int_equal(read(rd, got, sizeof got), 7);
    assert_memory_equal(got, "through", 7);
    close(rd);
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    /* a set of files onto a link to a directory: refused, the link and what it names kept */
    char target[160], set[160], keep[200];
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(set, sizeof set, "%s/set", dir);
    snprintf(keep, sizeof keep, "%s/keep.txt", target);
    assert_int_equal(mkdir(target, 0755), 0);
    tu_write_file(keep, "kept");
    assert_int_equal(symlink("target", set), 0);
    char *tmp = file_dir_stage(set, &e);
    assert_non_null(tmp);
    assert_int_equal(file_dir_commit(tmp, set, &e), ERR_INPUT);
    snprintf(want, sizeof want, "'%s' is a symbolic link: give the directory it names", set);
    assert_string_equal(e.msg, want);
    free(tmp);
    assert_int_equal(lstat(set, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    s = tu_read_file(keep);
    assert_string_equal(s, "kept");
    free(s);
    assert_int_equal(count_entries(dir), 4); /* link.json, fifo, target, set: no staged one */
    assert_int_equal(tu_rmdir(dir), 0);
}

/* A name of 255 bytes (NAME_MAX, legal) is written, as a file and as a set of files: the
 * temporary names beside it are cut to fit (the whole name plus ".XXXXXX" or ".tmp-XXXXXX"
 * would be 262 or 266 bytes). 256 bytes, or a path of PATH_MAX, is refused by the check the
 * commands make before they start. */
static void test_long_names(void **state)
{
    (void)state;
    char dir[64], name[256], path[400], set[400], inside[420];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "base"), 0);
    memset(name, 'n', 255);
    name[255] = '\0';
    snprintf(path, sizeof path, "%s/%s", dir, name);
    err e;
    assert_int_equal(file_name_check(path, &e), ERR_OK);
    assert_int_equal(file_write_atomic(path, "file", 4, &e), ERR_OK);
    char *s = tu_read_file(path);
    assert_string_equal(s, "file");
    free(s);
    assert_int_equal(unlink(path), 0);
    name[254] = '\0'; /* and "DIR/" with its slash */
    snprintf(set, sizeof set, "%s/%s/", dir, name);
    char *tmp = file_dir_stage(set, &e);
    if (!tmp)
        fail_msg("%s", e.msg);
    snprintf(inside, sizeof inside, "%s/w.npy", tmp);
    tu_write_file(inside, "set");
    assert_int_equal(file_dir_commit(tmp, set, &e), ERR_OK);
    free(tmp);
    snprintf(inside, sizeof inside, "%sw.npy", set);
    s = tu_read_file(inside);
    assert_string_equal(s, "set");
    free(s);
    assert_int_equal(count_entries(dir), 1); /* the set, nothing staged left */

    /* 256 bytes: the name is refused, and what is too long is said */
    memset(name, 'n', 255);
    snprintf(path, sizeof path, "%s/%sx/out.json", dir, name);
    assert_int_equal(file_name_check(path, &e), ERR_INPUT);
    assert_string_equal(e.msg, "a name in it ('nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...') is 256 "
                               "bytes, more than a file name may have (255)");
    /* a path of PATH_MAX - 11 bytes ("a/a/.../a", short names) leaves no room for the
     * temporary suffix ".tmp-XXXXXX" and the NUL (12 bytes) within PATH_MAX; one byte less
     * does */
    char *longp = xmalloc(PATH_MAX);
    for (int i = 0; i < PATH_MAX - 11; i++)
        longp[i] = i % 2 ? '/' : 'a';
    longp[PATH_MAX - 11] = '\0';
    assert_int_equal(file_name_check(longp, &e), ERR_INPUT);
    char want[100];
    snprintf(want, sizeof want, "%d bytes long, more than a path may be (%d)", PATH_MAX - 11,
             PATH_MAX - 12);
    assert_string_equal(e.msg, want);
    longp[PATH_MAX - 12] = '\0';
    assert_int_equal(file_name_check(longp, &e), ERR_OK);
    free(longp);
    assert_int_equal(tu_rmdir(dir), 0);
}

/* ---- the generator ---------------------------------------------------------------------- */

/* Expected values from a direct Python transcription of Vigna's reference C code
 * (splitmix64.c and xoshiro256starstar.c at prng.di.unimi.it), run once:
 *   M = 2**64 - 1
 *   def sm(x): x = (x + 0x9E3779B97F4A7C15) & M; z = x
 *              z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
 *              z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M; return x, z ^ (z >> 31)
 *   s = four successive sm outputs from x = seed; then for each output:
 *   r = rotl(s1 * 5, 7) * 9; t = s1 << 17; s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t;
 *   s3 = rotl(s3, 45)
 * The first splitmix64 output from 0, 0xe220a8397b1dcdaf, is also the published one. */
static void test_rng(void **state)
{
    (void)state;
    uint64_t x = 0;
    static const uint64_t sm0[4] = {0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull,
                                    0x06c45d188009454full, 0xf88bb8a8724c81ecull};
    for (int i = 0; i < 4; i++)
        assert_int_equal(rng_splitmix64(&x), sm0[i]);

    static const struct {
        uint64_t seed, out[5];
    } cases[] = {
        {0,
         {0x99ec5f36cb75f2b4ull, 0xbf6e1f784956452aull, 0x1a5f849d4933e6e0ull,
          0x6aa594f1262d2d2cull, 0xbba5ad4a1f842e59ull}},
        {12345,
         {0xbe6a36374160d49bull, 0x214aaa0637a688c6ull, 0xf69d16de9954d388ull,
          0x0c60048c4e96e033ull, 0x8e2076aeed51c648ull}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rng r;
        rng_seed(&r, cases[c].seed);
        for (int i = 0; i < 5; i++)
            assert_int_equal(rng_next(&r), cases[c].out[i]);
    }
    rng r;
    rng_seed(&r, 0);
    double u = rng_unit(&r);
    assert_true(u == (double)(0x99ec5f36cb75f2b4ull >> 11) * 0x1.0p-53);
}

/* Numbers in their shortest exact form: known cases, and on random doubles (every bit pattern
 * class: tiny, huge, whole) the text reads back as the number and one digit fewer does not. */
static void test_text_num(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *want;
    } cases[] = {{0.1, "0.1"},
                 {8567.510188, "8567.510188"},
                 {1.0 / 3, "0.3333333333333333"},
                 {3, "3"},
                 {-0.0, "-0"},
                 {1e21, "1e+21"},
                 {123456789012, "123456789012"},
                 {5e-324, "5e-324"},
                 {730, "730"},
                 {1e15, "1000000000000000"},
                 {1e17, "1e+17"}};
    char buf[TEXT_NUM];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        assert_string_equal(text_num(cases[k].v, buf), cases[k].want);
    assert_string_equal(text_num(0.0 / 0.0, buf), "null");
    assert_string_equal(text_num(1.0 / 0.0, buf), "null");
    rng r;
    rng_seed(&r, 7);
    for (int i = 0; i < 20000; i++) {
        uint64_t bits = rng_next(&r);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (v != v || v - v != 0)
            continue;
        text_num(v, buf);
        assert_true(strtod(buf, NULL) == v);
        int digits = 0, lead = 1; /* significant digits: from the first that is not 0 */
        for (const char *p = buf; *p && *p != 'e'; p++) {
            lead &= *p == '-' || *p == '0' || *p == '.';
            digits += !lead && *p >= '0' && *p <= '9';
        }
        char shorter[400];
        snprintf(shorter, sizeof shorter, "%.*g", digits - 1 > 0 ? digits - 1 : 1, v);
        if (digits > 1 && strpbrk(buf, ".e")) /* whole numbers keep every digit */
            assert_true(strtod(shorter, NULL) != v);
    }
}

/* ---- json (base/json.h) ---- */

/* Numbers as text_num prints them (the expected texts written by hand), a count with all its
 * digits, strings escaped as JSON wants and '/' left alone, the project's layout; and the text
 * reads back as the same values and prints the same, but for -0: json-c reads it as the whole
 * number 0 and keeps no text for whole numbers. */
static void test_json_write(void **state)
{
    (void)state;
    json *o = json_obj();
    json_put_num(o, "a", 0.1);
    json_put_num(o, "b", 8567.510188);
    json_put_num(o, "c", 1e300);
    json_put_num(o, "d", 9007199254740994.0); /* 2^53 + 2 */
    json_put_num(o, "e", -0.0);
    json_put_num(o, "f", 1.0 / 3);
    json_put_u64(o, "max", UINT64_MAX);
    json_put_str(o, "s", "a\"b\\c\n/");
    json_put_num(o, "nan", 0.0 / 0.0);
    json *arr = json_put(o, "arr", json_arr());
    json_put_num(arr, NULL, 1);
    json_put(arr, NULL, json_boolean(1));
    json *more = json_obj();
    json_put_str(more, "x", "y");
    json_put(more, "z", NULL);
    json_append(o, more);
    const char *want = "{\n"
                       "  \"a\": 0.1,\n"
                       "  \"b\": 8567.510188,\n"
                       "  \"c\": 1e+300,\n"
                       "  \"d\": 9007199254740994,\n"
                       "  \"e\": -0,\n"
                       "  \"f\": 0.3333333333333333,\n"
                       "  \"max\": 18446744073709551615,\n"
                       "  \"s\": \"a\\\"b\\\\c\\n/\",\n"
                       "  \"nan\": null,\n"
                       "  \"arr\": [\n"
                       "    1,\n"
                       "    true\n"
                       "  ],\n"
                       "  \"x\": \"y\",\n"
                       "  \"z\": null\n"
                       "}\n";
    char *text = json_text(o);
    assert_string_equal(text, want);
    err e;
    err_clear(&e);
    json *back = json_parse("t.json", text, strlen(text), &e);
    assert_non_null(back);
    assert_true(json_object_get_double(json_at(back, "b")) == 8567.510188);
    assert_true(json_object_get_uint64(json_at(back, "max")) == UINT64_MAX);
    assert_string_equal(json_object_get_string(json_at(back, "s")), "a\"b\\c\n/");
    char *again = json_text(back), *minus = strstr(text, "\"e\": -0,");
    assert_non_null(minus);
    memmove(minus + 5, minus + 6, strlen(minus + 6) + 1); /* "e": -0 -> "e": 0 */
    assert_string_equal(again, text);
    free(again);
    free(text);
    json_object_put(back);
    json_object_put(o);
}

/* Each error is one "NAME:LINE:COL: error: ..." line at the first byte that cannot be JSON
 * (columns by hand), and nothing is returned. */
static void test_json_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *at;
    } bad[] = {
        /* a bad token on line 3: two spaces, "b", ':', a space, then the '@' at column 8 */
        {"{\n  \"a\": 1,\n  \"b\": @ }\n", "x.json:3:8: error: "},
        /* truncated: the text's 11 bytes end inside the array, "column 12" is its end */
        {"{\"a\": [1, 2", "x.json:1:12: error: the JSON text ends before its value does"},
        {"", "x.json:1:1: error: the JSON text ends before its value does"},
        /* text after the value: a second value, and a NUL byte, at column 5 */
        {"[1] [2]", "x.json:1:5: error: "},
        {"[1] \0", "x.json:1:5: error: text after the JSON value"},
        /* strict JSON: a trailing comma, a name without quotes, a leading zero (json-c names
         * the byte after the number) */
        {"[1, ]", "x.json:1:5: error: "},
        {"{a: 1}", "x.json:1:2: error: "},
        {"[01]", "x.json:1:4: error: "},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        err e;
        err_clear(&e);
        size_t len = strlen(bad[k].text) + (k == 4); /* the NUL byte is part of the text */
        json *o = json_parse("x.json", bad[k].text, len, &e);
        if (o || strncmp(e.msg, bad[k].at, strlen(bad[k].at)) != 0 || strchr(e.msg, '\n') ||
            e.status != ERR_INPUT)
            fail_msg("case %zu: '%s', want '%s...'", k, e.msg, bad[k].at);
    }
    char deep[70];
    memset(deep, '[', sizeof deep);
    err e;
    err_clear(&e);
    assert_null(json_parse("x.json", deep, sizeof deep, &e));
    assert_string_equal(e.msg, "x.json:1:65: error: nesting too deep"); /* 64 levels */
}

/* Lookups by dotted path through objects and arrays; a missing key, an index out of range or
 * not a number, and a step into a number are NULL. */
static void test_json_at(void **state)
{
    (void)state;
    const char *text = "{\"a\": {\"b\": [10, {\"c\": \"x\"}], \"d.e\": 1}, \"n\": 5}";
    err e;
    err_clear(&e);
    json *o = json_parse("t.json", text, strlen(text), &e);
    assert_non_null(o);
    assert_ptr_equal(json_at(o, ""), o);
    assert_int_equal(json_object_get_int(json_at(o, "a.b.0")), 10);
    assert_string_equal(json_object_get_string(json_at(o, "a.b.1.c")), "x");
    assert_int_equal(json_object_array_length(json_at(o, "a.b")), 2);
    static const char *const none[] = {"z", "a.z", "a.b.2", "a.b.x", "a.b.-1", "n.0", "a.d.e"};
    for (size_t k = 0; k < sizeof none / sizeof none[0]; k++)
        if (json_at(o, none[k]))
            fail_msg("json_at '%s' is not NULL", none[k]);
    json_object_put(o);
}

typedef struct leaves_got {
    char text[512];
} leaves_got;

static void add_leaf(void *ctx, const char *path, const char *value, json_type type)
{
    leaves_got *g = ctx;
    size_t n = strlen(g->text);
    snprintf(g->text + n, sizeof g->text - n, "%s=%s(%s) ", path, value, json_type_to_name(type));
}

/* Every leaf in member order with its path and text: numbers as the text read, strings
 * unquoted, booleans and null by name; empty containers have none. */
static void test_json_leaves(void **state)
{
    (void)state;
    const char *text = "{\"a\": 1.50, \"b\": [true, null, \"s t\"], \"c\": {}, \"d\": {\"e\": -2, "
                       "\"f\": []}, \"g\": 18446744073709551615, \"h\": 2E+3}";
    err e;
    err_clear(&e);
    json *o = json_parse("t.json", text, strlen(text), &e);
    assert_non_null(o);
    leaves_got g = {""};
    json_leaves(o, NULL, add_leaf, &g);
    assert_string_equal(g.text, "a=1.50(double) b.0=true(boolean) b.1=null(null) b.2=s t(string) "
                                "d.e=-2(int) g=18446744073709551615(int) h=2E+3(double) ");
    g.text[0] = '\0';
    json_leaves(json_at(o, "d"), "p", add_leaf, &g);
    assert_string_equal(g.text, "p.e=-2(int) ");
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow),          cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_read),          cmocka_unit_test(test_write),
        cmocka_unit_test(test_write_targets), cmocka_unit_test(test_rng),
        cmocka_unit_test(test_text_num),      cmocka_unit_test(test_long_names),
        cmocka_unit_test(test_json_write),    cmocka_unit_test(test_json_errors),
        cmocka_unit_test(test_json_at),       cmocka_unit_test(test_json_leaves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
