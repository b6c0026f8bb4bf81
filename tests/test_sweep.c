/* test_sweep: the sweep module (bench/sweep/) and `ipusim sweep` (and the heartbeat the points
 * share, cli/watch.c) — the grid (lists, ranges,
 * steps, several parameters: exact point lists), the argv of a point, the JSON reader (good
 * input, malformed input and its position), the CSV (header once, whole rows, quoting, resume runs only the missing points,
 * a torn line, a foreign header), the same rows for any -j, an end-to-end sweep of `gemm`
 * in-process with -j 2, and `make plots` on a small CSV (skipped without gnuplot). Sweeps of
 * a fake command (fake() below) check the runner without simulating anything. Runs from the
 * repository root, as `make test` does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/sweep/sweep.h"
#include "cli/cli.h"

static char tmpdir[64];
static char errtext[8192]; /* what the last quiet() call printed on stderr */

/* ---- helpers ---- */

static void tmp(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
    remove(buf);
}

/* Call fn with stderr going to a file; its text lands in errtext. */
static int quiet_sweep(const sweep_opts *o, int argc, char **argv)
{
    char path[128];
    snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    int rc = o ? sweep_run(o) : cli_cmd_sweep(argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *s = tu_read_file(path);
    snprintf(errtext, sizeof errtext, "%s", s ? s : "");
    free(s);
    return rc;
}

/* Every point's values of a grid built from the specs, as "a=1 b=2;a=1 b=3;..." */
static void points(const char *const *specs, char *out, size_t len)
{
    sweep_grid g = {0};
    char msg[SWEEP_MSG];
    for (; *specs; specs++)
        assert_int_equal(sweep_grid_add(&g, *specs, msg), 0);
    out[0] = '\0';
    for (size_t i = 0; i < g.npoints; i++) {
        char l[256];
        sweep_grid_label(&g, i, l, sizeof l);
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? ";" : "", l);
    }
    sweep_grid_free(&g);
}

#define POINTS(want, ...)                                                                          \
    do {                                                                                           \
        char got_[4096];                                                                           \
        points((const char *const[]){__VA_ARGS__, NULL}, got_, sizeof got_);                       \
        assert_string_equal(got_, want);                                                           \
    } while (0)

/* ---- the grid ---- */

static void test_grid_lists(void **state)
{
    (void)state;
    POINTS("a=x;a=y;a=z", "a=x,y,z");
    POINTS("a=x b=1;a=x b=2;a=y b=1;a=y b=2;a=z b=1;a=z b=2", "a=x,y,z", "b=1,2");
    POINTS("m=../machines/mk2.ini", "m=../machines/mk2.ini");
    /* A value in quotes holds commas (and a doubled quote is one); a quote inside is text. */
    POINTS("s=0,1,2,3;s=x\"y;s=z", "s=\"0,1,2,3\",\"x\"\"y\",z");
    POINTS("s=a\"b;s=1..3", "s=a\"b,\"1..3\"");
    POINTS("dtype=fp32 io=0;dtype=fp32 io=64;dtype=fp16 io=0;dtype=fp16 io=64", "dtype=fp32,fp16",
           "io=0,64");
}

static void test_grid_ranges(void **state)
{
    (void)state;
    POINTS("k=1;k=2;k=3;k=4;k=5", "k=1..5");
    POINTS("k=0;k=3;k=6;k=9", "k=0..10:3");
    POINTS("k=5;k=3;k=1", "k=5..1:2");
    POINTS("k=-2;k=-1;k=0;k=1;k=2", "k=-2..2");
    POINTS("k=7", "k=7..7");
    POINTS("f=0.1;f=0.2;f=0.3;f=0.4;f=0.5", "f=0.1..0.5:0.1");
    POINTS("f=1;f=1.5;f=2", "f=1..2:0.5");
    POINTS("k=64;k=128;k=256;k=512;k=1024", "k=64..1024:x2");
    POINTS("k=1;k=3;k=9", "k=1..10:x3");
    POINTS("f=0.5;f=1;f=2", "f=0.5..2:x2");
    POINTS("d=1 k=64;d=1 k=128;d=2 k=64;d=2 k=128;d=3 k=64;d=3 k=128", "d=1..3", "k=64..128:x2");
    /* the ends of int64: INT64_MIN + (2^63 - 1) = -1, and -1 + (2^63 - 1) = 2^63 - 2 (the next
     * step, 2^63 + ..., would pass B); A + 2 STEP overflows on the way, the points do not */
    POINTS("k=-9223372036854775808;k=-1;k=9223372036854775806",
           "k=-9223372036854775808..9223372036854775807:9223372036854775807");
    POINTS("k=9223372036854775805;k=9223372036854775806;k=9223372036854775807",
           "k=9223372036854775805..9223372036854775807");
    POINTS("k=-9223372036854775806;k=-9223372036854775807;k=-9223372036854775808",
           "k=-9223372036854775806..-9223372036854775808");
    POINTS("k=4611686018427387904", "k=4611686018427387904..9223372036854775807:x2");
    sweep_grid g = {0};
    char msg[SWEEP_MSG];
    assert_int_equal(sweep_grid_add(&g, "a=1..4", msg), 0);
    assert_int_equal(sweep_grid_add(&g, "b=x,y,z", msg), 0);
    assert_int_equal(sweep_grid_add(&g, "c=0..1", msg), 0);
    assert_int_equal(g.npoints, 24);
    assert_string_equal(sweep_grid_value(&g, 0, 0), "1");
    assert_string_equal(sweep_grid_value(&g, 23, 0), "4");
    assert_string_equal(sweep_grid_value(&g, 5, 0), "1"); /* 5 = a=1 b=z c=1 */
    assert_string_equal(sweep_grid_value(&g, 5, 1), "z");
    assert_string_equal(sweep_grid_value(&g, 5, 2), "1");
    assert_string_equal(sweep_grid_value(&g, 6, 0), "2");
    assert_string_equal(sweep_grid_value(&g, 6, 1), "x");
    sweep_grid_free(&g);
}

static void test_grid_errors(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        {"k", "expected NAME=V1,V2"},
        {"=1,2", "expected NAME=V1,V2"},
        {"k=", "expected NAME=V1,V2"},
        {"9k=1", "expected NAME=V1,V2"},
        {"k=1,,2", "has an empty value"},
        {"k=1,2,", "has an empty value"},
        {"k=1,2,1", "value '1' given twice"},
        {"k=1..x", "is not a range"},
        {"k=1...5", "is not a range"},
        {"k=1..5:", "the step must be"},
        {"k=1..5:0", "the step must be"},
        {"k=1..5:-1", "the step must be"},
        {"k=1..64:x1", "the step must be"},
        {"k=0..64:x2", "needs 0 < A <= B"},
        {"k=64..1:x2", "needs 0 < A <= B"},
        {"k=0..1000000", "more than 100000 values"},
        {"k=0..100000", "more than 100000 values"}, /* 100001 */
        /* 2^64 values: span / STEP + 1 wraps to 0 in 64 bits */
        {"k=-9223372036854775808..9223372036854775807",
         "--param k=-9223372036854775808..9223372036854775807: "
         "'-9223372036854775808..9223372036854775807' has more than 100000 values (the most one "
         "--param takes)"},
        {"k=9223372036854775807..-9223372036854775808:2", "more than 100000 values"},
        {"k=0..1e300:1e-300", "more than 100000 values"},
        {"k=-1e308..1e308", "more than 100000 values"},
        {"status=0,1", "the CSV's own column"},
        {"s=\"1,2", "a quote is never closed"},
        {"s=\"1\"x,2", "text after a closing quote"},
        {"s=1,\"\"", "has an empty value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sweep_grid g = {0};
        char msg[SWEEP_MSG] = "";
        assert_int_equal(sweep_grid_add(&g, bad[i].spec, msg), 2);
        if (!strstr(msg, bad[i].msg))
            fail_msg("%s: got '%s', want '%s'", bad[i].spec, msg, bad[i].msg);
        assert_non_null(strstr(msg, "--param "));
        sweep_grid_free(&g);
    }
    sweep_grid g = {0};
    char msg[SWEEP_MSG];
    assert_int_equal(sweep_grid_add(&g, "k=1,2", msg), 0);
    assert_int_equal(sweep_grid_add(&g, "k=3", msg), 2);
    assert_non_null(strstr(msg, "parameter 'k' given twice"));
    assert_int_equal(sweep_grid_add(&g, "a=1..1000", msg), 0);
    assert_int_equal(sweep_grid_add(&g, "b=1..1000", msg), 2); /* 2 000 000 points */
    assert_non_null(strstr(msg, "more than 1000000 points"));
    sweep_grid_free(&g);
    assert_int_equal(sweep_grid_add(&g, "c=0..99999", msg), 0); /* 100000 values: the most */
    assert_int_equal(g.p[0].nvalues, 100000);
    assert_string_equal(g.p[0].values[99999], "99999");
    sweep_grid_free(&g);
}

static void test_argv(void **state)
{
    (void)state;
    sweep_grid g = {0};
    char msg[SWEEP_MSG];
    assert_int_equal(sweep_grid_add(&g, "k=64,128", msg), 0);
    assert_int_equal(sweep_grid_add(&g, "clk=1e9,2e9", msg), 0);
    char *args[] = {"--m", "8", "--set", "clock_hz={clk}", "{x y}"};
    assert_int_equal(sweep_args_check(&g, args, 5, msg), 0);
    int argc = 0;
    char **argv = sweep_argv(&g, 3, "gemm", args, 5, "/t/p.json", &argc);
    assert_non_null(argv);
    const char *want[] = {"gemm",  "--m", "8",   "--set",  "clock_hz=2e9",
                          "{x y}", "--k", "128", "--json", "/t/p.json"};
    assert_int_equal(argc, 10);
    for (int i = 0; i < argc; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[argc]);
    free(argv);
    char *bad1[] = {"--json", "x"}, *bad2[] = {"--m={q}"};
    assert_int_equal(sweep_args_check(&g, bad1, 2, msg), 2);
    assert_non_null(strstr(msg, "--json is the sweep's own"));
    assert_int_equal(sweep_args_check(&g, bad2, 1, msg), 2);
    assert_string_equal(msg, "'{q}' in the command's arguments names no --param");
    sweep_grid_free(&g);
}

/* ---- JSON ---- */

static void test_json_good(void **state)
{
    (void)state;
    const char *text =
        "{\n  \"what\": \"gemm \\\"1\\\"\", \"n\": 12, \"neg\": -0.5e-3, \"big\": 1E+400,\n"
        "  \"stats\": {\"cycles\": 7556, \"util\": [99.8, 0], \"empty\": {}, \"none\": []},\n"
        "  \"flag\": true, \"off\": false, \"nil\": null,\n"
        "  \"caf\\u00e9\": 1, \"\\ud83d\\ude00\": 2, \"a\\/b\": [[1, 2], {\"c\": 3}]\n}\n";
    sweep_metrics m = {0};
    char msg[SWEEP_MSG] = "";
    assert_int_equal(sweep_json_flatten("t.json", text, strlen(text), &m, msg), 0);
    const char *want[][2] = {
        {"n", "12"},
        {"neg", "-0.5e-3"},
        {"big", "1E+400"},
        {"stats.cycles", "7556"},
        {"stats.util.0", "99.8"},
        {"stats.util.1", "0"},
        {"caf\xc3\xa9", "1"},
        {"\xf0\x9f\x98\x80", "2"},
        {"a/b.0.0", "1"},
        {"a/b.0.1", "2"},
        {"a/b.1.c", "3"},
    };
    assert_int_equal(m.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < m.n; i++) {
        assert_string_equal(m.m[i].name, want[i][0]);
        assert_string_equal(m.m[i].text, want[i][1]);
    }
    sweep_metrics_free(&m);
    assert_int_equal(sweep_json_flatten("t.json", " 42 ", 4, &m, msg), 0);
    assert_int_equal(m.n, 1);
    assert_string_equal(m.m[0].name, "value");
    sweep_metrics_free(&m);
    /* a compute sets' table is no column; a member that only ends in the name is */
    const char *sets = "{\"s\": {\"compute_sets\": {\"ipus\": [{\"ipu\": 0, \"sets\": "
                       "[{\"cycles\": 3}]}]}, \"cycles\": 5}, \"no_compute_sets\": {\"x\": 1}}";
    assert_int_equal(sweep_json_flatten("t.json", sets, strlen(sets), &m, msg), 0);
    assert_int_equal(m.n, 2);
    assert_string_equal(m.m[0].name, "s.cycles");
    assert_string_equal(m.m[1].name, "no_compute_sets.x");
    sweep_metrics_free(&m);
    assert_int_equal(sweep_json_flatten("t.json", "[1,[2]]", 7, &m, msg), 0);
    assert_int_equal(m.n, 2);
    assert_string_equal(m.m[1].name, "1.0");
    sweep_metrics_free(&m);
}

/* Malformed text: one "NAME:LINE:COL: error: ..." line (base/json.h), at the first byte that
 * cannot be JSON (columns counted by hand), and no metric. */
static void test_json_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text, *at;
    } bad[] = {
        {"", "p.json:1:1: error: "},
        {"{\"a\": 1,}", "p.json:1:9: error: "},
        {"{\"a\": 1\n \"b\": 2}", "p.json:2:2: error: "},
        {"[1, 2", "p.json:1:6: error: "},
        {"{a: 1}", "p.json:1:2: error: "},
        {"{} {}", "p.json:1:4: error: "},
        {"{\"a\": {\"b\": [1,\n\n   }}", "p.json:3:4: error: "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sweep_metrics m = {0};
        char msg[SWEEP_MSG] = "";
        int rc = sweep_json_flatten("p.json", bad[i].text, strlen(bad[i].text), &m, msg);
        if (rc != 2 || strncmp(msg, bad[i].at, strlen(bad[i].at)) != 0 || strchr(msg, '\n') || m.n)
            fail_msg("'%s': rc %d, '%s', want '%s...'", bad[i].text, rc, msg, bad[i].at);
        sweep_metrics_free(&m);
    }
    /* A NUL byte inside the text is a bad byte, not the end. */
    sweep_metrics m = {0};
    char msg[SWEEP_MSG];
    assert_int_equal(sweep_json_flatten("p.json", "[1]\0", 4, &m, msg), 2);
    assert_string_equal(msg, "p.json:1:4: error: text after the JSON value");
    sweep_metrics_free(&m);
}

/* ---- the runner, on a fake command ---- */

/* fake --a A --b B [--fail-a V] [--fail-no-json V] [--extra-from V] [--bad-json V] --json F:
 * writes {"x":
 * A*B, "nested": {"arr": [A, B]}, "ran": 1, "s": "text"} and exits 0; exits 3 (after writing
 * the report) when A == fail-a; exits 0 without a report when A == fail-no-json; from
 * A == extra-from on, the report has two more numbers (nested.arr.2 = A + B, late = 7), as a
 * run on more IPUs reports more of them; when A == bad-json, a report that is not JSON (its
 * second line lacks a ':') and exits 0. */
static int fake(int argc, char **argv)
{
    long a = 0, b = 1, fail_a = -1, nojson_a = -1, extra = -1, bad = -1;
    const char *json = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--a") == 0)
            a = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--b") == 0)
            b = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--fail-a") == 0)
            fail_a = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--fail-no-json") == 0)
            nojson_a = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--extra-from") == 0)
            extra = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--bad-json") == 0)
            bad = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--json") == 0)
            json = argv[i + 1];
        else
            return 2;
    }
    printf("fake: this goes to /dev/null during a sweep\n");
    if (!json)
        return 2;
    if (a == nojson_a)
        return 0;
    if (a == fail_a && b == 2)
        return 3;
    char buf[256], more[64] = "", late[16] = "";
    if (extra >= 0 && a >= extra) {
        snprintf(more, sizeof more, ", %ld", a + b);
        snprintf(late, sizeof late, ", \"late\": 7");
    }
    snprintf(buf, sizeof buf,
             "{\"x\": %ld, \"nested\": {\"arr\": [%ld, %ld%s]}, \"ran\": 1, \"s\": \"text\"%s}\n",
             a * b, a, b, more, late);
    if (a == bad)
        snprintf(buf, sizeof buf, "{\"x\": 1,\n  \"y\" 2}\n");
    FILE *f = fopen(json, "w");
    if (!f)
        return 2;
    fputs(buf, f);
    fclose(f);
    return a == fail_a ? 3 : 0;
}

/* ctx: NULL, or the read end of a pipe: the point waits for a byte (or the end) on it before
 * it runs, so that a test can hold a sweep in the middle of its run. */
static int run_fake(void *ctx, int argc, char **argv)
{
    char c;
    if (ctx && read(*(int *)ctx, &c, 1) < 0)
        return 2;
    return fake(argc, argv);
}

/* Progress and errors as `ipusim sweep` shows them. */
static void say(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "ipusim sweep: %s\n", line);
}

static int sweep_fake(const char *csv, unsigned jobs, const char *pa, const char *pb, char **args,
                      int nargs)
{
    sweep_grid g = {0};
    char msg[SWEEP_MSG];
    assert_int_equal(sweep_grid_add(&g, pa, msg), 0);
    assert_int_equal(sweep_grid_add(&g, pb, msg), 0);
    sweep_opts o = {.grid = &g,
                    .cmdname = "fake",
                    .run = run_fake,
                    .args = args,
                    .nargs = nargs,
                    .jobs = jobs,
                    .out = csv,
                    .say = say};
    int rc = quiet_sweep(&o, 0, NULL);
    sweep_grid_free(&g);
    return rc;
}

static void test_csv_header_rows(void **state)
{
    (void)state;
    char csv[128];
    tmp(csv, sizeof csv, "rows.csv");
    assert_int_equal(sweep_fake(csv, 1, "a=1..3", "b=1,2", NULL, 0), 0);
    char *s = tu_read_file(csv);
    assert_string_equal(s, "a,b,status,x,nested.arr.0,nested.arr.1,ran\n"
                           "1,1,0,1,1,1,1\n1,2,0,2,1,2,1\n2,1,0,2,2,1,1\n"
                           "2,2,0,4,2,2,1\n3,1,0,3,3,1,1\n3,2,0,6,3,2,1\n");
    free(s);
    /* Again: every point is there, nothing runs, the file is unchanged. */
    assert_int_equal(sweep_fake(csv, 2, "a=1..3", "b=1,2", NULL, 0), 0);
    assert_non_null(strstr(errtext, "all 6 points are already in"));
    s = tu_read_file(csv);
    assert_int_equal(tu_count_lines(s), 7);
    free(s);
    /* Another sweep's parameters: refused, file untouched. */
    assert_int_equal(sweep_fake(csv, 1, "b=1..3", "a=1,2", NULL, 0), 2);
    assert_non_null(strstr(errtext, "its columns do not start with b,a,status"));
    assert_int_equal(tu_count_lines(errtext), 1);
}

static void test_csv_resume(void **state)
{
    (void)state;
    char csv[128];
    tmp(csv, sizeof csv, "resume.csv");
    /* Three points done earlier (ran = 0 marks them), one of them failed. */
    tu_write_file(csv, "a,b,status,x,nested.arr.0,nested.arr.1,ran\n"
                       "1,1,0,1,1,1,0\n"
                       "2,2,3,,,,0\n"
                       "3,1,0,3,3,1,0\n");
    assert_int_equal(sweep_fake(csv, 2, "a=1..3", "b=1,2", NULL, 0), 1);
    assert_non_null(strstr(errtext, "6 points, 3 already in"));
    char *s = tu_read_file(csv);
    assert_int_equal(tu_count_lines(s), 7);
    /* The earlier rows are untouched and first; the missing points ran, once each. */
    const char *pre = "a,b,status,x,nested.arr.0,nested.arr.1,ran\n1,1,0,1,1,1,0\n"
                      "2,2,3,,,,0\n3,1,0,3,3,1,0\n";
    assert_memory_equal(s, pre, strlen(pre));
    const char *ran[] = {"1,2,0,2,1,2,1\n", "2,1,0,2,2,1,1\n", "3,2,0,6,3,2,1\n"};
    for (int i = 0; i < 3; i++) {
        const char *p = strstr(s, ran[i]);
        assert_non_null(p);
        assert_null(strstr(p + 1, ran[i]));
    }
    assert_null(strstr(s + strlen(pre), ",0\n")); /* no new row with ran = 0 */
    free(s);
    /* A torn last line (no newline) is cut off and its point runs again. */
    tu_write_file(csv, "a,b,status,x,nested.arr.0,nested.arr.1,ran\n1,1,0,1,1,1,0\n1,2,0,2,1");
    assert_int_equal(sweep_fake(csv, 1, "a=1", "b=1,2", NULL, 0), 0);
    assert_non_null(strstr(errtext, "cutting off a torn last line"));
    s = tu_read_file(csv);
    assert_string_equal(s, "a,b,status,x,nested.arr.0,nested.arr.1,ran\n1,1,0,1,1,1,0\n"
                           "1,2,0,2,1,2,1\n");
    free(s);
    /* A UTF-8 byte-order mark (a spreadsheet's save) is not part of the first column's name:
     * the point there is done, the other runs, and the mark stays where it was */
    tu_write_file(csv, "\xef\xbb\xbf"
                       "a,b,status,x,nested.arr.0,nested.arr.1,ran\n1,1,0,1,1,1,0\n");
    assert_int_equal(sweep_fake(csv, 1, "a=1", "b=1,2", NULL, 0), 0);
    assert_non_null(strstr(errtext, "2 points, 1 already in"));
    s = tu_read_file(csv);
    assert_string_equal(s, "\xef\xbb\xbf"
                           "a,b,status,x,nested.arr.0,nested.arr.1,ran\n1,1,0,1,1,1,0\n"
                           "1,2,0,2,1,2,1\n");
    free(s);
    /* ... and when the new point's columns make the file be rewritten whole */
    tu_write_file(csv, "\xef\xbb\xbf"
                       "a,b,status,x\n1,1,0,1\n");
    assert_int_equal(sweep_fake(csv, 1, "a=1", "b=1,2", NULL, 0), 0);
    s = tu_read_file(csv);
    assert_string_equal(s, "\xef\xbb\xbf"
                           "a,b,status,x,nested.arr.0,nested.arr.1,ran\n1,1,0,1,,,\n"
                           "1,2,0,2,1,2,1\n");
    free(s);
    /* CR (old Mac) line ends are line ends: the point there is done, the other runs */
    tu_write_file(csv, "a,b,status,x,nested.arr.0,nested.arr.1,ran\r1,1,0,1,1,1,0\r");
    assert_int_equal(sweep_fake(csv, 1, "a=1", "b=1,2", NULL, 0), 0);
    assert_non_null(strstr(errtext, "2 points, 1 already in"));
    s = tu_read_file(csv);
    assert_string_equal(s, "a,b,status,x,nested.arr.0,nested.arr.1,ran\r1,1,0,1,1,1,0\r"
                           "1,2,0,2,1,2,1\n");
    free(s);
    /* A row whose field count is not the header's: refused with its line. */
    tu_write_file(csv, "a,b,status,x\n1,1,0\n");
    assert_int_equal(sweep_fake(csv, 1, "a=1", "b=1,2", NULL, 0), 2);
    assert_non_null(strstr(errtext, "resume.csv:2: 3 fields, the header has 4"));
}

static void test_failed_points(void **state)
{
    (void)state;
    char csv[128];
    tmp(csv, sizeof csv, "fail.csv");
    /* a=1 fails without a report for b=2, with one for b=1; a=2 gives no report at all. */
    char *args[] = {"--fail-a", "1", "--fail-no-json", "2"};
    assert_int_equal(sweep_fake(csv, 1, "a=1..3", "b=2,1", args, 4), 1);
    char *s = tu_read_file(csv);
    /* The first point failed before any report: the header comes from the second. */
    assert_string_equal(s, "a,b,status,x,nested.arr.0,nested.arr.1,ran\n"
                           "1,2,3,,,,\n1,1,3,1,1,1,1\n2,2,2,,,,\n2,1,2,,,,\n"
                           "3,2,0,6,3,2,1\n3,1,0,3,3,1,1\n");
    free(s);
    assert_non_null(strstr(errtext, "a=2 b=2: the command wrote no JSON report"));
    assert_non_null(strstr(errtext, "[1/6] a=1 b=2: status 3"));
    assert_non_null(strstr(errtext, "6 points in"));
    assert_non_null(strstr(errtext, "4 failed"));
    /* A report that is not JSON: the point failed (status 2, no metric), with one line naming
     * the report's file and the place: line 2, column 7 (two spaces, "y", a space, then the
     * 2 where the ':' belongs). */
    tmp(csv, sizeof csv, "badjson.csv");
    char *args3[] = {"--bad-json", "2"};
    assert_int_equal(sweep_fake(csv, 1, "a=1..2", "b=1", args3, 2), 1);
    s = tu_read_file(csv);
    assert_string_equal(s,
                        "a,b,status,x,nested.arr.0,nested.arr.1,ran\n1,1,0,1,1,1,1\n2,1,2,,,,\n");
    free(s);
    const char *bad = strstr(errtext, "ipusim sweep: a=2 b=1: JSON report: ");
    assert_non_null(bad);
    assert_non_null(strstr(bad, "/.point-1.json:2:7: error: "));
    assert_int_equal(tu_count_lines(bad), 3); /* its line, the point's, the summary's */
    /* Every point failed without a report: parameters and status only... */
    tmp(csv, sizeof csv, "allfail.csv");
    char *args2[] = {"--fail-no-json", "1"};
    assert_int_equal(sweep_fake(csv, 2, "a=1", "b=1,2", args2, 2), 1);
    s = tu_read_file(csv);
    assert_true(strcmp(s, "a,b,status\n1,1,2\n1,2,2\n") == 0 ||
                strcmp(s, "a,b,status\n1,2,2\n1,1,2\n") == 0);
    free(s);
    /* ... and a re-run starts that file again, since it holds no metric. */
    assert_int_equal(sweep_fake(csv, 2, "a=1", "b=1,2", NULL, 0), 0);
    assert_non_null(strstr(errtext, "has no metric columns"));
    s = tu_read_file(csv);
    assert_int_equal(tu_count_lines(s), 3);
    assert_non_null(strstr(s, "a,b,status,x,"));
    free(s);
}

/* Sorted lines of a file, for comparing sets of rows. */
static int cmp_line(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static void sorted_rows(const char *path, char *out, size_t len)
{
    char *s = tu_read_file(path), *lines[256], *save = NULL;
    size_t n = 0;
    assert_non_null(s);
    for (char *t = strtok_r(s, "\n", &save); t && n < 256; t = strtok_r(NULL, "\n", &save))
        lines[n++] = t;
    qsort(lines + 1, n - 1, sizeof *lines, cmp_line);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s\n", lines[i]);
    free(s);
}

static void test_same_rows_any_jobs(void **state)
{
    (void)state;
    char c1[128], c4[128], r1[8192], r4[8192];
    tmp(c1, sizeof c1, "j1.csv");
    tmp(c4, sizeof c4, "j4.csv");
    assert_int_equal(sweep_fake(c1, 1, "a=1..8", "b=1..5", NULL, 0), 0);
    assert_int_equal(sweep_fake(c4, 4, "a=1..8", "b=1..5", NULL, 0), 0);
    sorted_rows(c1, r1, sizeof r1);
    sorted_rows(c4, r4, sizeof r4);
    assert_int_equal(tu_count_lines(r1), 41);
    assert_string_equal(r1, r4);
}

static void test_csv_quoting(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sweep_csv_field(f, "plain", 1);
    sweep_csv_field(f, "a,b", 0);
    sweep_csv_field(f, "say \"hi\"", 0);
    sweep_csv_field(f, "two\nlines", 0);
    sweep_csv_field(f, "", 0);
    fclose(f);
    assert_string_equal(buf, "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",");
    free(buf);
    /* The reader takes quoted fields back: a point with a quote in its value is found. */
    char csv[128];
    tmp(csv, sizeof csv, "quoted.csv");
    tu_write_file(csv, "a,b,status,x,nested.arr.0,nested.arr.1,ran\n\"1\",\"x\"\"y\",0,1,1,1,0\n");
    sweep_grid g = {0};
    char msg[SWEEP_MSG];
    assert_int_equal(sweep_grid_add(&g, "a=1", msg), 0);
    assert_int_equal(sweep_grid_add(&g, "b=x\"y,z", msg), 0);
    sweep_csv c;
    assert_int_equal(sweep_csv_load(csv, &g, &c, msg), 0);
    assert_int_equal(c.ndone, 1);
    assert_true(sweep_csv_done(&c, &g, 0));
    assert_false(sweep_csv_done(&c, &g, 1));
    sweep_csv_free(&c);
    tu_write_file(csv, "a,b,status\n1,x\"y,0\n");
    assert_int_equal(sweep_csv_load(csv, &g, &c, msg), 2);
    assert_string_equal(strstr(msg, "quoted.csv"), "quoted.csv:2: malformed CSV line");
    sweep_grid_free(&g);
}

/* A point that reports numbers the header lacks adds their columns, each after the one before
 * it in its report, and the earlier rows get empty fields there: nothing is left out, and the
 * file is the same for any -j. */
static void test_csv_union(void **state)
{
    (void)state;
    char csv[128], c3[128], r1[4096], r3[4096];
    tmp(csv, sizeof csv, "union.csv");
    char *args[] = {"--extra-from", "2"};
    assert_int_equal(sweep_fake(csv, 1, "a=1..3", "b=1,2", args, 2), 0);
    char *s = tu_read_file(csv);
    assert_string_equal(s, "a,b,status,x,nested.arr.0,nested.arr.1,nested.arr.2,ran,late\n"
                           "1,1,0,1,1,1,,1,\n1,2,0,2,1,2,,1,\n2,1,0,2,2,1,3,1,7\n"
                           "2,2,0,4,2,2,4,1,7\n3,1,0,3,3,1,4,1,7\n3,2,0,6,3,2,5,1,7\n");
    free(s);
    assert_null(strstr(errtext, "left out"));
    tmp(c3, sizeof c3, "union3.csv");
    assert_int_equal(sweep_fake(c3, 3, "a=1..3", "b=1,2", args, 2), 0);
    sorted_rows(csv, r1, sizeof r1);
    sorted_rows(c3, r3, sizeof r3);
    assert_string_equal(r1, r3);
    /* Resuming a CSV with fewer columns: its rows keep their values, in their columns' new
     * places (a quoted field comes back plain), and the new points fill every column. */
    tu_write_file(csv, "a,b,status,x,ran\n1,1,0,1,0\n\"1\",2,0,2,0\n");
    assert_int_equal(sweep_fake(csv, 1, "a=1..2", "b=1,2", args, 2), 0);
    s = tu_read_file(csv);
    assert_string_equal(s, "a,b,status,x,nested.arr.0,nested.arr.1,nested.arr.2,ran,late\n"
                           "1,1,0,1,,,,0,\n1,2,0,2,,,,0,\n"
                           "2,1,0,2,2,1,3,1,7\n2,2,0,4,2,2,4,1,7\n");
    free(s);
}

/* Each point's JSON report is kept in FILE.points/, named by its values (a comma in a value
 * as %2C); a point without a report has none there, and no temporary file is left. */
static void test_point_reports(void **state)
{
    (void)state;
    char csv[128], path[256];
    tmp(csv, sizeof csv, "kept.csv");
    char *args[] = {"--fail-no-json", "2"};
    assert_int_equal(sweep_fake(csv, 2, "a=1,2", "b=\"1,5\",2", args, 2), 1);
    char *s = tu_read_file(csv);
    assert_non_null(strstr(s, "\n1,\"1,5\",0,1,1,1,1\n")); /* atol("1,5") = 1 */
    free(s);
    snprintf(path, sizeof path, "%s/kept.points/a=1,b=1%%2C5.json", tmpdir);
    s = tu_read_file(path);
    assert_non_null(s);
    assert_string_equal(s, "{\"x\": 1, \"nested\": {\"arr\": [1, 1]}, \"ran\": 1, \"s\": "
                           "\"text\"}\n");
    free(s);
    snprintf(path, sizeof path, "%s/kept.points/a=1,b=2.json", tmpdir);
    s = tu_read_file(path);
    assert_non_null(strstr(s, "\"x\": 2,"));
    free(s);
    snprintf(path, sizeof path, "%s/kept.points/a=2,b=2.json", tmpdir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "ls -A %s/kept.points | wc -l > %s/n.txt", tmpdir, tmpdir);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof path, "%s/n.txt", tmpdir);
    s = tu_read_file(path);
    assert_string_equal(s, "2\n");
    free(s);
    /* Resume finds the quoted value's row. */
    assert_int_equal(sweep_fake(csv, 1, "a=1,2", "b=\"1,5\",2", args, 2), 1);
    assert_non_null(strstr(errtext, "all 4 points are already in"));
}

static void say_nothing(void *ctx, const char *line)
{
    (void)ctx;
    (void)line;
}

typedef struct held_sweep {
    const char *csv;
    int fd; /* the points wait on it */
    int rc;
} held_sweep;

static void *sweep_held(void *arg)
{
    held_sweep *h = arg;
    sweep_grid g = {0};
    char msg[SWEEP_MSG];
    sweep_grid_add(&g, "a=1,2", msg);
    sweep_opts o = {.grid = &g,
                    .cmdname = "fake",
                    .run = run_fake,
                    .ctx = &h->fd,
                    .jobs = 1,
                    .out = h->csv,
                    .say = say_nothing}; /* the test reads the other's lines */
    h->rc = sweep_run(&o);
    sweep_grid_free(&g);
    return NULL;
}

/* Two sweeps on one CSV: the second is refused at once, and the first's rows are whole and
 * once each. */
static void test_two_sweeps_one_csv(void **state)
{
    (void)state;
    char csv[128];
    tmp(csv, sizeof csv, "busy.csv");
    int p[2];
    assert_int_equal(pipe(p), 0);
    held_sweep h = {.csv = csv, .fd = p[0]};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sweep_held, &h), 0);
    char points[128];
    snprintf(points, sizeof points, "%s/busy.points", tmpdir);
    for (int i = 0; i < 2000 && access(points, F_OK) != 0; i++)
        usleep(1000);
    usleep(20000); /* the first sweep has its lock and waits in its first point */
    assert_int_equal(sweep_fake(csv, 1, "a=1,2", "b=1", NULL, 0), 2);
    assert_non_null(strstr(errtext, "is being written by another sweep"));
    assert_int_equal(tu_count_lines(errtext), 1);
    assert_int_equal(write(p[1], "gg", 2), 2);
    close(p[1]);
    pthread_join(th, NULL);
    close(p[0]);
    assert_int_equal(h.rc, 0);
    char *s = tu_read_file(csv);
    assert_string_equal(s, "a,status,x,nested.arr.0,nested.arr.1,ran\n1,0,1,1,1,1\n2,0,2,2,1,1\n");
    free(s);
}

/* The heartbeat (cli/watch.c, which the sweeps' points use too): the share done and the time
 * left once the command expects a number of cycles, nothing of the kind before; a redrawn
 * line erased before the command prints its own. */
static void test_heartbeat(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/beat.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    cli_watch w;
    cli_watch_begin(&w, "x", 1);
    eng_watch x = cli_watch_eng(&w);
    x.progress(x.progress_ctx, 250, 10);
    w.expect = 1000;
    x.progress(x.progress_ctx, 250, 10);
    w.mode = CLI_BEAT_REDRAW;
    x.progress(x.progress_ctx, 500, 20);
    cli_watch_clear(&w);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *t = tu_read_file(path);
    const char *a = strstr(t, "ipusim x: cycle 250, 10 supersteps, ");
    assert_non_null(a);
    char first[160];
    snprintf(first, sizeof first, "%.*s", (int)(strchr(a, '\n') - a), a);
    assert_null(strstr(first, "done")); /* no expectation yet */
    const char *b = strstr(a + 1, "ipusim x: cycle 250, 10 supersteps, ");
    assert_non_null(b);
    assert_non_null(strstr(b, "; 25% done, about "));
    assert_non_null(strstr(b, " s left\n\ripusim x: cycle 500, 20 supersteps, "));
    assert_non_null(strstr(b, "; 50% done, about "));
    assert_int_equal(t[strlen(t) - 1], '\r'); /* erased: the next line starts clean */
    free(t);
}

/* ---- the command, end to end ---- */

static int sweep_argv_run(const char *line)
{
    char buf[1024], *argv[64], *save = NULL;
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok_r(buf, " ", &save); t && argc < 63; t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    return quiet_sweep(NULL, argc, argv);
}

static void test_gemm_end_to_end(void **state)
{
    (void)state;
    char csv[128], line[512];
    tmp(csv, sizeof csv, "gemm.csv");
    snprintf(line, sizeof line,
             "sweep --param m=64,128 -j 2 --out %s -- gemm --n 64 --k 64 "
             "--tiles 4 --threads 1",
             csv);
    struct stat before, after;
    fflush(stdout);
    assert_int_equal(fstat(1, &before), 0);
    assert_int_equal(sweep_argv_run(line), 0);
    assert_int_equal(fstat(1, &after), 0); /* stdout is ours again */
    assert_true(before.st_dev == after.st_dev && before.st_ino == after.st_ino);
    char *s = tu_read_file(csv);
    assert_non_null(s);
    assert_int_equal(tu_count_lines(s), 3);
    assert_memory_equal(s, "m,status,ipus,tiles_per_ipu,clock_hz,stats.cycles,", 49);
    assert_non_null(strstr(s, ",gemm.m,gemm.n,gemm.k,"));
    assert_non_null(strstr(s, ",gemm.pct_peak,"));
    assert_non_null(strstr(s, ",config.machine.params.tiles_per_ipu,")); /* how it was run */
    assert_null(strstr(s, "what"));                                      /* strings are left out */
    assert_null(strstr(s, "gemm.checked"));
    /* Each row: the parameter, status 0, and gemm.m equal to it. */
    char *save = NULL, *hdr = strtok_r(s, "\n", &save);
    int col = 0, mcol = -1;
    for (const char *p = hdr; p; p = strchr(p, ','), p = p ? p + 1 : NULL, col++)
        if (strncmp(p, "gemm.m,", 7) == 0)
            mcol = col;
    assert_true(mcol > 0);
    int seen = 0;
    for (char *row = strtok_r(NULL, "\n", &save); row; row = strtok_r(NULL, "\n", &save)) {
        char *f[128], *fs = NULL;
        int n = 0;
        for (char *t = strtok_r(row, ",", &fs); t && n < 128; t = strtok_r(NULL, ",", &fs))
            f[n++] = t;
        assert_true(n > mcol);
        assert_string_equal(f[1], "0");
        assert_string_equal(f[0], f[mcol]);
        seen |= strcmp(f[0], "64") == 0 ? 1 : strcmp(f[0], "128") == 0 ? 2 : 4;
    }
    assert_int_equal(seen, 3);
    free(s);
}

static void test_command_errors(void **state)
{
    (void)state;
    static const struct {
        const char *line, *msg;
    } bad[] = {
        {"sweep --param k=1,2 -- gemm", "no --out FILE.csv given"},
        {"sweep --out x.csv -- gemm", "no --param given"},
        {"sweep --param k --out x.csv -- gemm", "--param k: expected NAME=V1,V2"},
        {"sweep --param k=1 --out x.csv -- nosuch", "unknown command 'nosuch'"},
        {"sweep --param k=1 --out x.csv", "no command given"},
        {"sweep --param k=1 --out x.csv --", "no command given"},
        {"sweep --param k=1 --out x.csv gemm", "'gemm': the command to sweep comes after '--'"},
        {"sweep --param k=1 --out x.csv -- sweep", "a sweep cannot run a sweep"},
        {"sweep --param k=1 -j 0 --out x.csv -- gemm", "-j: 0 is out of range"},
        {"sweep --param k=1 --bogus --out x.csv -- gemm", "unknown option '--bogus'"},
        {"sweep --param k=1 --out x.csv -- gemm --json y", "--json is the sweep's own"},
        {"sweep --param k=1 --out /nonexistent-dir/x.csv -- gemm", "cannot make a directory"},
        {"sweep --param", "--param needs a value"},
        /* 2^64 points, which wrapped to 0 ("all 0 points are already in 'x.csv'", exit 0) */
        {"sweep --param k=-9223372036854775808..9223372036854775807 --out x.csv -- gemm",
         "'-9223372036854775808..9223372036854775807' has more than 100000 values"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = sweep_argv_run(bad[i].line);
        if (rc != 2 || !strstr(errtext, bad[i].msg) || tu_count_lines(errtext) != 1)
            fail_msg("'%s': rc %d, '%s', want '%s'", bad[i].line, rc, errtext, bad[i].msg);
        assert_memory_equal(errtext, "ipusim sweep: ", 14);
    }
    assert_int_equal(access("x.csv", F_OK), -1); /* nothing was created */
    assert_int_equal(access("x.points", F_OK), -1);
}

/* ---- make plots ---- */

/* The sweep file and CSV of sweep NAME into tmpdir, and in cmd the `make plots` that renders it
 * there (its output in tmpdir/make.log). */
static char plot_cmd[1024];
static void plot_setup(const char *name, const char *sweep, const char *csv)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s.sweep", tmpdir, name);
    tu_write_file(path, sweep);
    snprintf(path, sizeof path, "%s/%s.csv", tmpdir, name);
    tu_write_file(path, csv);
    snprintf(plot_cmd, sizeof plot_cmd,
             "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory plots "
             "SWEEP_DIR=%s PLOT_OUT=%s SWEEPS=%s >%s/make.log 2>&1",
             tmpdir, tmpdir, name, tmpdir);
}

/* Whether `make plots` can run here (gnuplot installed, run from the repository root); else
 * why not, under the test's name. */
static int plots_can_run(const char *test)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        print_message("%s: skipped, gnuplot is not installed (make deps)\n", test);
        return 0;
    }
    if (access("plots/plots.mk", F_OK) != 0) {
        print_message("%s: skipped, not run from the repository root\n", test);
        return 0;
    }
    return 1;
}

/* Run plot_cmd (it must succeed) and read the SVG of plot NAME it made. */
static char *plot_svg(const char *name)
{
    char path[160];
    assert_int_equal(system(plot_cmd), 0);
    snprintf(path, sizeof path, "%s/%s.svg", tmpdir, name);
    char *svg = tu_read_file(path);
    assert_non_null(svg);
    return svg;
}

static void test_make_plots(void **state)
{
    (void)state;
    if (!plots_can_run("test_make_plots"))
        return;
    char path[128];
    plot_setup("t",
               "# a test plot\nMACHINE=mk2\nSWEEP=\"--param k=64,128 -- gemm\"\nPLOT=line\n"
               "TITLE=\"test: x against k\"\nFIXED=\"n = 64\"\nX=k\nXLABEL=\"k (elements)\"\n"
               "Y=\"x y\"\nYTITLES=\"x's|y\"\nYLABEL=\"x (cycles)\"\nSERIES=m\nLOGX=2\n",
               "k,m,status,x,y\n128,1,0,20,5\n64,1,0,10,4\n64,2,0,15,3\n128,2,0,30,2\n"
               "256,2,3,,\n");
    int rc = system(plot_cmd);
    snprintf(path, sizeof path, "%s/make.log", tmpdir);
    char *log = tu_read_file(path);
    if (rc != 0)
        fail_msg("make plots failed: %s", log ? log : "");
    free(log);
    struct stat st;
    snprintf(path, sizeof path, "%s/t.png", tmpdir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 1000);
    char *png = tu_read_file(path);
    assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
    free(png);
    snprintf(path, sizeof path, "%s/t.svg", tmpdir);
    char *svg = tu_read_file(path);
    assert_non_null(svg);
    assert_non_null(strstr(svg, "<svg"));
    assert_non_null(strstr(svg, "test: x against k"));
    assert_non_null(strstr(svg, "machine mk2; n = 64"));
    assert_non_null(strstr(svg, "x (cycles)"));
    free(svg);
    /* The same sweep file saved with CR (old Mac) line ends: read as the LF one (as a shell
     * sources it, the whole file would be one comment line and nothing would be plotted) */
    plot_setup("c",
               "# a test plot\rMACHINE=mk2\rSWEEP=\"--param k=64,128 -- gemm\"\rPLOT=line\r"
               "TITLE=\"test: CR\"\rX=k\rY=x\rSERIES=m\r",
               "k,m,status,x,y\n128,1,0,20,5\n64,1,0,10,4\n");
    svg = plot_svg("c");
    assert_non_null(strstr(svg, "test: CR"));
    free(svg);
    /* A statistic with no YLABEL or YTITLES: its title and unit from the engine's tables. */
    plot_setup("u",
               "SWEEP=\"--param k=64,128 -- gemm\"\nPLOT=line\nTITLE=\"u\"\nX=k\n"
               "Y=stats.time_us\n",
               "k,status,stats.time_us\n64,0,1.5\n128,0,2.5\n");
    svg = plot_svg("u");
    assert_non_null(strstr(svg, "simulated time (us)"));
    free(svg);
    /* Quoted values with commas: one bar each, labelled with ; for their commas (and ' for a
     * quote). */
    plot_setup("v", "SWEEP=\"--param s=x -- gemm\"\nPLOT=stacked\nTITLE=\"v\"\nY=\"a b\"\n",
               "s,status,a,b\n\"0,1\",0,1,2\n\"2,\"\"3\",0,3,4\n");
    svg = plot_svg("v");
    assert_non_null(strstr(svg, "s=0;1"));
    assert_non_null(strstr(svg, "s=2;'3"));
    free(svg);
}

/* YREL: each curve in % of series s = 0 at the same x (50 -> 75 is 150%, 40 -> 20 is 50%: the
 * y axis spans them), its default y label; a YREL no row has fails. */
static void test_plot_yrel(void **state)
{
    (void)state;
    if (!plots_can_run("test_plot_yrel"))
        return;
    char path[128];
    char *svg;
    plot_setup("r",
               "SWEEP=\"--param s=0 -- gemm\"\nPLOT=line\nTITLE=\"r\"\nX=x\nY=y\n"
               "SERIES=s\nYREL=0\n",
               "s,x,status,y\n0,1,0,50\n0,2,0,40\n1,1,0,75\n1,2,0,20\n");
    svg = plot_svg("r");
    assert_non_null(strstr(svg, "% of s = 0"));
    assert_non_null(strstr(svg, "> 160<")); /* the ticks: 40 to 160 */
    assert_non_null(strstr(svg, "> 40<"));
    assert_null(strstr(svg, "> 200<"));
    free(svg);
    snprintf(path, sizeof path, "%s/r.sweep", tmpdir);
    tu_write_file(path, "SWEEP=\"--param s=0 -- gemm\"\nPLOT=line\nTITLE=\"r\"\nX=x\nY=y\n"
                        "SERIES=s\nYREL=9\n");
    assert_int_not_equal(system(plot_cmd), 0);
    snprintf(path, sizeof path, "%s/make.log", tmpdir);
    char *mlog = tu_read_file(path);
    assert_non_null(strstr(mlog, "YREL=9: no row with s = 9"));
    free(mlog);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_sweep.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A CSV that stops taking rows: a child whose files may not grow past 120 bytes (the header
 * and a few rows) runs a 12-point sweep with its stderr on a pipe. The sweep stops with status
 * 2; every point reported "ok" has its row on disk, and the point whose row failed is named
 * ("not recorded"). */
static void test_csv_write_fails(void **state)
{
    (void)state;
    char csv[128];
    tmp(csv, sizeof csv, "full.csv");
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        struct rlimit rl = {120, 120};
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &rl);
        sweep_grid g = {0};
        char msg[SWEEP_MSG];
        sweep_grid_add(&g, "a=1..6", msg);
        sweep_grid_add(&g, "b=1,2", msg);
        sweep_opts o = {
            .grid = &g, .cmdname = "fake", .run = run_fake, .jobs = 1, .out = csv, .say = say};
        _exit(sweep_run(&o));
    }
    close(fd[1]);
    static char text[16384];
    size_t n = 0;
    for (ssize_t k; (k = read(fd[0], text + n, sizeof text - 1 - n)) > 0;)
        n += (size_t)k;
    text[n] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    /* the 43-byte header and five 14-byte rows fit in 120 bytes; the sixth row's write is
     * cut short at 7 bytes, and the write of the rest says why (not "short write") */
    char want[300];
    snprintf(want, sizeof want, "cannot write '%s': File too large; stopping\n", csv);
    assert_non_null(strstr(text, want));
    assert_null(strstr(text, "short write"));
    assert_non_null(strstr(text, "not recorded: its row could not be written to"));
    int ok = 0;
    for (const char *p = text; (p = strstr(p, ": ok, ")) != NULL; p++)
        ok++;
    char *s = tu_read_file(csv);
    assert_int_equal(tu_count_lines(s) - 1, ok); /* the header, then one row per "ok" */
    assert_int_equal(ok, 5);
    assert_int_equal(strlen(s), 120); /* and the torn sixth row, cut off on resume */
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_lists),         cmocka_unit_test(test_grid_ranges),
        cmocka_unit_test(test_grid_errors),        cmocka_unit_test(test_argv),
        cmocka_unit_test(test_json_good),          cmocka_unit_test(test_json_malformed),
        cmocka_unit_test(test_csv_header_rows),    cmocka_unit_test(test_csv_resume),
        cmocka_unit_test(test_csv_write_fails),    cmocka_unit_test(test_failed_points),
        cmocka_unit_test(test_same_rows_any_jobs), cmocka_unit_test(test_csv_quoting),
        cmocka_unit_test(test_gemm_end_to_end),    cmocka_unit_test(test_command_errors),
        cmocka_unit_test(test_make_plots),         cmocka_unit_test(test_plot_yrel),
        cmocka_unit_test(test_csv_union),          cmocka_unit_test(test_point_reports),
        cmocka_unit_test(test_two_sweeps_one_csv), cmocka_unit_test(test_heartbeat),
    };
    return cmocka_run_group_tests_name("sweep", tests, setup, teardown);
}
