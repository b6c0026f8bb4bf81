/* test_cli: the ipusim command as a user meets it — exit statuses, one-line errors, reports,
 * JSON written whole, asm/disasm round trip through files. Runs the built binary next to this
 * test's directory ($(BUILD)/ipusim) from the repository root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <fcntl.h>
#include "base/json.h"
#include "hw/machine.h"
#include "workloads/mnist/idx.h"

#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char bin[4096];
static char tmpdir[64];

/* Run "ipusim ARGS", stdout and stderr into out; the exit status. */
#define run(out, len, ...) tu_runf(bin, out, len, __VA_ARGS__)

/* The JSON file at path (base/json.h), or fail. */
static json *load_json(const char *path)
{
    err e;
    err_clear(&e);
    json *j = json_load(path, (size_t)1 << 26, &e);
    if (!j)
        fail_msg("%s", e.msg);
    return j;
}

/* The number at the dotted path of j, or fail. */
static double num_at(json *j, const char *path)
{
    json *v = json_at(j, path);
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
        fail_msg("the JSON has no number at %s", path);
    return json_object_get_double(v);
}

/* The string at the dotted path of j, or fail. */
static const char *str_at(json *j, const char *path)
{
    json *v = json_at(j, path);
    if (!json_object_is_type(v, json_type_string))
        fail_msg("the JSON has no string at %s", path);
    return json_object_get_string(v);
}

static void test_usage_errors(void **state)
{
    (void)state;
    char out[8192];
    assert_int_equal(run(out, sizeof out, "nosuch"), 2);
    assert_non_null(strstr(out, "unknown command 'nosuch'"));
    assert_int_equal(run(out, sizeof out, "run"), 2);
    assert_non_null(strstr(out, "no program given"));
    assert_int_equal(run(out, sizeof out, "run --bogus tests/isa/sup_alu.s"), 2);
    assert_non_null(strstr(out, "unknown option '--bogus'"));
    assert_int_equal(tu_count_lines(out), 1);
    assert_int_equal(run(out, sizeof out, "run --threads abc tests/isa/sup_alu.s"), 2);
    assert_non_null(strstr(out, "--threads: 'abc' is not a whole number"));
    assert_int_equal(tu_count_lines(out), 1);
    assert_int_equal(run(out, sizeof out, "run --threads 0 tests/isa/sup_alu.s"), 2);
    assert_int_equal(run(out, sizeof out, "run --max-cycles 12x tests/isa/sup_alu.s"), 2);
    assert_int_equal(run(out, sizeof out, "run --ipus"), 2);
    assert_non_null(strstr(out, "--ipus needs a value"));
    assert_int_equal(run(out, sizeof out, "run %s/missing.s", tmpdir), 2);
    assert_non_null(strstr(out, "cannot open"));
    assert_int_equal(run(out, sizeof out, "run --machine mk9 tests/isa/sup_alu.s"), 2);
    assert_non_null(strstr(out, "unknown machine 'mk9'"));
    assert_int_equal(run(out, sizeof out, "run --dump-mem 0:0:zz tests/isa/sup_alu.s"), 2);
    /* a --dump-mem outside the SRAM is refused before the run, with the SRAM's size */
    assert_int_equal(run(out, sizeof out, "run --dump-mem 0:0:0x9c000:4 tests/isa/sup_alu.s"), 2);
    assert_non_null(strstr(out, "--dump-mem 0:0:0x9c000:4: ADDR + LEN is past the end of the "
                                "tile's 638976 bytes of SRAM"));
    assert_null(strstr(out, "total cycles"));
    /* a length past 32 bits, or past 64, is a length too large, not a malformed option */
    assert_int_equal(run(out, sizeof out, "run --dump-mem 0:0:0:99999999999 tests/isa/sup_alu.s"),
                     2);
    assert_non_null(strstr(out, "0:0:0:99999999999: ADDR + LEN is past the end of the tile's"));
    assert_int_equal(
        run(out, sizeof out, "run --dump-mem 0:0:4:99999999999999999999 tests/isa/sup_alu.s"), 2);
    assert_non_null(strstr(out, "ADDR + LEN is past the end of the tile's 638976 bytes"));
    assert_int_equal(run(out, sizeof out, "run --dump-mem 0:1472:0:4 tests/isa/sup_alu.s"), 2);
    assert_non_null(strstr(out, "--dump-mem 0:1472:0:4 is outside the system (1 IPUs of 1472 "
                                "tiles, 638976 bytes of SRAM each)"));
    assert_int_equal(run(out, sizeof out, "gemm --m 0"), 2);
    assert_int_equal(run(out, sizeof out, "--help"), 0);
    assert_non_null(strstr(out, "commands:"));
    assert_int_equal(run(out, sizeof out, "help run"), 0);
    assert_non_null(strstr(out, "--dump-mem"));
}

/* io-bench: bad values give one line and exit status 2. */
static void test_iobench_errors(void **state)
{
    (void)state;
    char out[8192];
    const char *bad[] = {"--depth 0",    "--io-tiles 3",        "--io-tiles 2000",
                         "--dtype int4", "--outfeed sometimes", "--host-dist bursty:2:3",
                         "--batch 0"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int rc = run(out, sizeof out, "io-bench --tiles 16 --steps 1 %s", bad[k]);
        if (rc != 2 || tu_count_lines(out) != 1)
            fail_msg("io-bench %s: exit %d, output:\n%s", bad[k], rc, out);
    }
    /* the rule mnist's --io-tiles follows too: 16 tiles, 16 of them I/O tiles, none left */
    assert_int_equal(run(out, sizeof out, "io-bench --tiles 16 --steps 1 --io-tiles 16"), 2);
    assert_string_equal(out, "ipusim io-bench: --io-tiles 16 leaves no compute tile: an IPU has "
                             "16 tiles (at most 15 can be I/O tiles)\n");
    assert_int_equal(run(out, sizeof out, "io-bench --tiles 16 --steps 2 --depth 2"), 0);
    assert_non_null(strstr(out, "time split (ipu 0)"));
}

static void test_asm_errors_exit_1(void **state)
{
    (void)state;
    char path[256], out[8192];
    snprintf(path, sizeof path, "%s/bad.s", tmpdir);
    tu_write_file(path, "main: addd r1, r2, r3\n      li r99, 1\n      halt\n");
    assert_int_equal(run(out, sizeof out, "run %s", path), 1);
    char want[300];
    snprintf(want, sizeof want, "%s:1:7: error:", path);
    assert_non_null(strstr(out, want));
    snprintf(want, sizeof want, "%s:2:", path);
    assert_non_null(strstr(out, want)); /* every error, not only the first */
    assert_non_null(strstr(out, "^"));
}

/* A program saved with CR (old Mac) line ends reads as the same program with LF ones: it runs,
 * and an error names its line and column as in the LF file. */
static void test_asm_cr_line_ends(void **state)
{
    (void)state;
    char path[256], out[8192], want[400];
    snprintf(path, sizeof path, "%s/cr.s", tmpdir);
    tu_write_file(path, "main: li r1, 40\r      addi r1, r1, 2\r      halt\r");
    assert_int_equal(run(out, sizeof out, "run %s", path), 0);
    assert_non_null(strstr(out, "total cycles           3\n")); /* li 0, addi 1, halt 2 (+1) */
    tu_write_file(path, "main: li r1, 40\r      addi r1, r1, 2\r      bogus\r      halt\r");
    assert_int_equal(run(out, sizeof out, "run %s", path), 1);
    snprintf(want, sizeof want, "%s:3:7: error: unknown mnemonic `bogus`\n      bogus\n      ^\n",
             path);
    assert_string_equal(out, want);
}

static void test_fault_exit_3(void **state)
{
    (void)state;
    char out[8192];
    assert_int_equal(run(out, sizeof out, "run tests/isa/fault_misaligned.s"), 3);
    assert_non_null(
        strstr(out, "ipu 0 tile 0 ctx 1 pc 0x20 cycle 12: misaligned memory access at 0x2"));
    assert_int_equal(run(out, sizeof out, "run tests/isa/fault_limit.s --max-cycles 50"), 3);
    assert_non_null(strstr(out, "cycle 54: run exceeds --max-cycles 50\n"));
    /* io-bench and micro, whose limits were internal, take the option the fault names; no
     * CSV or JSON after a fault */
    char csv[256], jpath[256];
    snprintf(csv, sizeof csv, "%s/limit.csv", tmpdir);
    snprintf(jpath, sizeof jpath, "%s/limit.json", tmpdir);
    assert_int_equal(
        run(out, sizeof out, "io-bench --tiles 16 --steps 1 --max-cycles 1000 --json %s", jpath),
        3);
    assert_non_null(strstr(out, ": run exceeds --max-cycles 1000\n"));
    assert_int_equal(tu_count_lines(out), 1);
    assert_int_equal(access(jpath, F_OK), -1);
    assert_int_equal(run(out, sizeof out, "micro sync --max-cycles 100 --csv %s", csv), 3);
    assert_non_null(strstr(out, ": run exceeds --max-cycles 100\n"));
    assert_int_equal(tu_count_lines(out), 1);
    assert_int_equal(access(csv, F_OK), -1);
    static const char *const with[] = {"run", "gemm", "io-bench", "micro"};
    for (size_t k = 0; k < sizeof with / sizeof with[0]; k++) {
        assert_int_equal(run(out, sizeof out, "help %s", with[k]), 0);
        assert_non_null(strstr(out, "  --max-cycles N "));
    }
}

/* A runaway program (br costs 6: issues at 0, 6, ...) under --max-superstep-cycles 100000:
 * the first issue past it is at 100002, on both tiles; a fault like any other: exit status
 * 3, the fault line (naming the other tile too) and the report. A bad value is one line. */
static void test_superstep_limit(void **state)
{
    (void)state;
    char out[8192], path[256];
    snprintf(path, sizeof path, "%s/spin.s", tmpdir);
    tu_write_file(path, "main: br main\n");
    assert_int_equal(run(out, sizeof out, "run %s --tiles 2 --max-superstep-cycles 100000", path),
                     3);
    assert_non_null(strstr(out, "ipu 0 tile 0 ctx 0 pc 0x0 cycle 100002: superstep exceeds "
                                "--max-superstep-cycles 100000 (started at cycle 0); also past "
                                "it: ipu 0 tile 1 (pc 0x0)\n"));
    assert_non_null(strstr(out, "total cycles"));
    assert_int_equal(run(out, sizeof out, "run %s --max-superstep-cycles 1e9", path), 2);
    assert_string_equal(out, "ipusim run: --max-superstep-cycles: '1e9' is not a whole number\n");
    assert_int_equal(run(out, sizeof out, "run --progress=1 %s", path), 2);
    assert_string_equal(out, "ipusim run: --progress takes no value ('--progress=1')\n");
    assert_int_equal(run(out, sizeof out, "help run"), 0);
    assert_non_null(strstr(out, "after its tile's last sync (default 8388608, 2^23; 0: no limit)"));
    /* the default, 2^23 = 8388608 (docs/timing.md): the first issue past it is 6 x 1398102 */
    assert_int_equal(run(out, sizeof out, "run %s --tiles 2", path), 3);
    assert_non_null(strstr(out, "ipu 0 tile 0 ctx 0 pc 0x0 cycle 8388612: superstep exceeds "
                                "--max-superstep-cycles 8388608 (started at cycle 0)"));
}

/* Read what fd gives into buf (from *len) until `want` appears at the start of a line or EOF,
 * for at most `ms` milliseconds. Returns 1 when it appeared, 0 at EOF, -1 after ms. */
static int read_until(int fd, char *buf, size_t cap, size_t *len, const char *want, int ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        buf[*len] = '\0';
        for (const char *p = buf; want && (p = strstr(p, want)); p++)
            if (p == buf || p[-1] == '\n')
                return 1;
        clock_gettime(CLOCK_MONOTONIC, &t);
        int left = ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, left) <= 0)
            return -1;
        ssize_t n = read(fd, buf + *len, cap - 1 - *len);
        if (n <= 0)
            return 0;
        *len += (size_t)n;
    }
}

/* Start "ipusim ARGV..." with stderr on a pipe and stdout to out_path; wait for a line that
 * starts with `beat` on stderr, send sig, and collect the rest of stderr into err (cap bytes).
 * Returns the exit status (-1: no heartbeat within 30 s, no exit within 30 s of the signal,
 * or not a normal exit). */
static int signal_run(char *const *args, const char *out_path, const char *beat, int sig, char *err,
                      size_t cap)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, STDOUT_FILENO);
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        signal(SIGINT, SIG_DFL); /* as on a terminal, even when the tests run in the background */
        signal(SIGTERM, SIG_DFL);
        execv(bin, args);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    int beaten = read_until(fd[0], err, cap, &len, beat, 30000) == 1;
    kill(pid, beaten ? sig : SIGKILL);
    int ended = read_until(fd[0], err, cap, &len, NULL, 30000) == 0; /* EOF: it has ended */
    if (!ended) /* still running 30 s after the signal: a hang */
        kill(pid, SIGKILL);
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return beaten && ended && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Ctrl-C (and SIGTERM) on `ipusim run --progress` of a runaway program: once a heartbeat
 * line is out, the signal stops the run: exit status 3, the stop report as the one line
 * after the heartbeats, nothing on stdout, no JSON file. */
static void test_signal_stops_run(void **state)
{
    (void)state;
    char path[256], jpath[256], out[256], err[16384];
    snprintf(path, sizeof path, "%s/spin.s", tmpdir);
    snprintf(jpath, sizeof jpath, "%s/stopped.json", tmpdir);
    snprintf(out, sizeof out, "%s/stdout.txt", tmpdir);
    tu_write_file(path, "main: br main\n");
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t k = 0; k < 2; k++) {
        char *args[] = {bin,          "run",     path,
                        "--progress", "--tiles", "16",
                        "--threads",  "1",       "--max-superstep-cycles",
                        "0",          "--json",  jpath,
                        NULL};
        int rc = signal_run(args, out, "ipusim run: cycle ", sigs[k], err, sizeof err);
        if (rc != 3)
            fail_msg("signal %d: exit %d, stderr:\n%s", sigs[k], rc, err);
        const char *stop = strstr(err, "ipusim run: stopped at cycle ");
        assert_non_null(stop);
        assert_true(stop == err || stop[-1] == '\n');
        assert_non_null(strstr(stop, ": ipu 0: tiles 0 (pc 0x0), 1 (pc 0x0), "));
        assert_non_null(strstr(stop, " and 8 more still computing, 0 waiting at syncs\n"));
        assert_int_equal(tu_count_lines(stop), 1);                   /* the last line */
        for (const char *p = err; p < stop; p = strchr(p, '\n') + 1) /* heartbeats before it */
            assert_int_equal(strncmp(p, "ipusim run: cycle ", 18), 0);
        assert_int_equal(access(jpath, F_OK), -1);
        char *o = tu_read_file(out);
        assert_non_null(o);
        assert_string_equal(o, "");
        free(o);
    }
}

/* Ctrl-C on a sweep: the running point stops and gets no row, no further point starts, the
 * sweep says so and exits 3. */
static void test_signal_stops_sweep(void **state)
{
    (void)state;
    char path[256], csv[256], out[256], err[16384];
    snprintf(path, sizeof path, "%s/spin.s", tmpdir);
    snprintf(csv, sizeof csv, "%s/stopped.csv", tmpdir);
    snprintf(out, sizeof out, "%s/stdout.txt", tmpdir);
    tu_write_file(path, "main: br main\n");
    char *args[] = {bin,
                    "sweep",
                    "--param",
                    "tiles=2,4",
                    "--out",
                    csv,
                    "--",
                    "run",
                    path,
                    "--progress",
                    "--threads",
                    "1",
                    "--max-superstep-cycles",
                    "0",
                    NULL};
    int rc = signal_run(args, out, "ipusim run: cycle ", SIGINT, err, sizeof err);
    if (rc != 3)
        fail_msg("exit %d, stderr:\n%s", rc, err);
    assert_non_null(strstr(err, "ipusim sweep: tiles=2: stopped, not recorded\n"));
    assert_non_null(strstr(err, "ipusim sweep: stopped: 0 points in "));
    assert_non_null(strstr(err, "0 failed, 2 not run -> "));
    char *c = tu_read_file(csv);
    assert_true(!c || tu_count_lines(c) == 0); /* no row */
    free(c);
}

/* The config echoes every option as resolved, given or not (README, "Results that describe
 * themselves"): the dumps as typed, --progress, the profile's options (its defaults from
 * PROFILE_HELP: dir profile, window calls:0,1,-1, no tiles, 64 MiB) and the superstep limit's
 * default, 2^23 = 8388608 (docs/timing.md). */
static void test_config_every_option(void **state)
{
    (void)state;
    char out[8192], jpath[256], pdir[256];
    snprintf(jpath, sizeof jpath, "%s/opts.json", tmpdir);
    snprintf(pdir, sizeof pdir, "%s/opts-prof", tmpdir);
    assert_int_equal(run(out, sizeof out,
                         "run tests/isa/worker_six.s --tiles 4 --progress --dump-mem 0:1:0:4 "
                         "--dump-mem 0:2:4:8 --json %s",
                         jpath),
                     0);
    json *j = load_json(jpath);
    assert_true(num_at(j, "config.options.progress") == 1);
    assert_string_equal(str_at(j, "config.options.dump_mem.0"), "0:1:0:4");
    assert_string_equal(str_at(j, "config.options.dump_mem.1"), "0:2:4:8");
    assert_true(num_at(j, "config.options.max_superstep_cycles") == 8388608);
    assert_true(num_at(j, "config.options.rank_stats") == 0);
    assert_true(num_at(j, "config.options.profile.on") == 0);
    assert_string_equal(str_at(j, "config.options.profile.dir"), "profile");
    assert_string_equal(str_at(j, "config.options.profile.window"), "calls:0,1,-1");
    assert_true(json_at(j, "config.options.profile.tiles") == NULL); /* null */
    assert_true(num_at(j, "config.options.profile.max_mb") == 64);
    json_object_put(j);
    assert_int_equal(run(out, sizeof out,
                         "gemm --m 16 --n 16 --k 16 --tiles 2 --profile --profile-dir %s "
                         "--profile-window all --profile-tiles 0..1 --profile-max-mb 2 "
                         "--max-superstep-cycles 0 --json %s",
                         pdir, jpath),
                     0);
    j = load_json(jpath);
    assert_true(num_at(j, "config.options.progress") == 0);
    assert_true(num_at(j, "config.options.profile.on") == 1);
    assert_string_equal(str_at(j, "config.options.profile.dir"), pdir);
    assert_string_equal(str_at(j, "config.options.profile.window"), "all");
    assert_string_equal(str_at(j, "config.options.profile.tiles"), "0..1");
    assert_true(num_at(j, "config.options.profile.max_mb") == 2);
    assert_true(num_at(j, "config.options.max_superstep_cycles") == 0);
    json_object_put(j);
}

static void test_report_and_json(void **state)
{
    (void)state;
    char out[8192], jpath[256];
    snprintf(jpath, sizeof jpath, "%s/r.json", tmpdir);
    assert_int_equal(run(out, sizeof out,
                         "run tests/isa/worker_six.s --tiles 4 --threads 2 "
                         "--json %s --dump-mem 0:3:0:16",
                         jpath),
                     0);
    assert_non_null(strstr(out, "total cycles           31"));
    assert_non_null(strstr(out, "memory of ipu 0 tile 3"));
    json *j = load_json(jpath);
    assert_true(num_at(j, "stats.cycles") == 31);
    assert_true(num_at(j, "stats.workers_started") == 24);
    json_object_put(j);
}

/* mnist: a missing dataset is one line naming the file and the make target that fetches it,
 * exit status 2; the command installs nothing. */
static void test_mnist_missing_data(void **state)
{
    (void)state;
    char out[8192], want[512];
    setenv("IPUSIM_DATA", tmpdir, 1); /* an empty directory */
    int rc = run(out, sizeof out, "mnist --reference --dataset mnist-digits");
    unsetenv("IPUSIM_DATA");
    assert_int_equal(rc, 2);
    snprintf(want, sizeof want,
             "ipusim mnist: %s/mnist-digits/train-images-idx3-ubyte not found: run 'make data'\n",
             tmpdir);
    assert_string_equal(out, want);
    if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", F_OK) != 0 &&
        access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte", F_OK) != 0) {
        assert_int_equal(run(out, sizeof out, "mnist --reference --dataset fashion-mnist"), 2);
        assert_string_equal(out, "ipusim mnist: /usr/share/datasets/fashion-mnist/"
                                 "train-images-idx3-ubyte not found: run 'make data' (it "
                                 "installs the Debian package dataset-fashion-mnist)\n");
    }
}

/* mnist's option errors: the arguments, and the one message they give (exit status 2). */
static const struct {
    const char *args, *want;
} mnist_option_cases[] = {
    {"--gradient-accumulation 6",
     "ipusim mnist: pipelined training over 4 IPUs needs gradient accumulation >= 2N-1 = 7 "
     "(each of the 2N-1 pipeline stages a micro-batch); got 6\n"},
    {"--ipus 2 --stages 0,1,1,0", "ipusim mnist: pipelined: blocks B1..B4 on IPUs 0,1,1,0: "
                                  "each IPU is one stage, so B1 goes on IPU 0 and each next "
                                  "block on the same IPU or the next\n"},
    {"--schedule bad", "ipusim mnist: --schedule: schedule 'bad': one of grouped, "
                       "interleaved, sequential\n"},
    {"--recompute maybe", "ipusim mnist: --recompute maybe: expected on or off\n"},
    {"--stages auto --ipus 1", "ipusim mnist: --stages auto searches pipeline placements over "
                               "--ipus 2 or more; --ipus 1 runs none\n"},
    {"--balance --strategy sharded", "ipusim mnist: --balance searches pipeline placements over "
                                     "--ipus 2 or more; --strategy sharded runs none\n"},
    {"--strategy sharded --schedule interleaved",
     "ipusim mnist: --schedule shapes a pipeline over several IPUs; --strategy sharded runs "
     "none\n"},
    {"--ipus 1 --recompute off", "ipusim mnist: --recompute shapes a pipeline over several "
                                 "IPUs; --ipus 1 runs none\n"},
    {"--output-mode every:3", "ipusim mnist: outfeed mode every:3: N must divide the gradient "
                              "accumulation (10) or be a multiple of it that divides the 100 "
                              "micro-batches of a host call\n"},
    {"--ipus 5", "ipusim mnist: --ipus 5: the network has 4 blocks, one IPU each at most\n"},
    {"--replicas 32", "ipusim mnist: --ipus 4 x --replicas 32 = 128 IPUs: at most 64 (a POD64)\n"},
    {"--ipus 0", "ipusim mnist: --ipus: 0 is out of range [1, 64]\n"},
    {"--ipus 5 --strategy sharded",
     "ipusim mnist: --ipus 5: the network has 4 blocks, one IPU each at most\n"},
    {"--strategy bad", "ipusim mnist: --strategy bad: expected pipelined or sharded\n"},
    {"--dtype f16", "ipusim mnist: --dtype f16: expected fp32, fp16 or u8\n"},
    {"--network lenet", "ipusim mnist: --network lenet: expected tutorial, wide, deep\n"},
    {"--network wide --ipus 2 --recompute off",
     "ipusim mnist: network wide: the simulated run of a network other than the tutorial's is on "
     "one IPU, sharded or pipelined over several, without stashing every activation (--recompute "
     "off)\n"},
    {"--network wide --dtype u8", "ipusim mnist: network wide: the simulated run of a network "
                                  "other than the tutorial's is on one IPU, sharded or pipelined "
                                  "over several, without an infeed other than fp32\n"},
    {"--ipus 2 --strategy sharded --stages 0,1,2,1",
     "ipusim mnist: --stages 0,1,2,1: expected four IPU numbers below --ipus 2, one per block "
     "(B1 conv1, B2 conv2, B3 layer3, B4 layer4), e.g. 0,0,1,1\n"},
    {"--ipus 2 --strategy sharded --stages 0,0,1",
     "ipusim mnist: --stages 0,0,1: expected four IPU numbers below --ipus 2, one per block "
     "(B1 conv1, B2 conv2, B3 layer3, B4 layer4), e.g. 0,0,1,1\n"},
    {"--output-mode bad", "ipusim mnist: --output-mode: outfeed mode 'bad': unknown (all, "
                          "final, sum or every:N)\n"},
    {"--output-mode every:0", "ipusim mnist: --output-mode: outfeed mode 'every:0': N must be "
                              "a whole number from 1 to 4294967295\n"},
    {"--output-mode", "ipusim mnist: --output-mode needs a value\n"},
    {"--depth 0", "ipusim mnist: --depth: 0 is out of range [1, 255]\n"},
    {"--depth 256", "ipusim mnist: --depth: '256' is too large (at most 255)\n"},
    {"--threads 0", "ipusim mnist: --threads: 0 is out of range [1, 1024]\n"},
    {"--reference --depth 2", "ipusim mnist: --depth is an option of the simulated run; "
                              "--reference does not take it\n"},
    {"--machine mk1 --reference", "ipusim mnist: --machine is an option of the simulated "
                                  "run; --reference does not take it\n"},
    {"--reference --offload-optimiser", "ipusim mnist: --offload-optimiser is an option of "
                                        "the simulated run; --reference does not take it\n"},
    {"--set bogus=1", "ipusim mnist: --set bogus=1: unknown machine parameter 'bogus'\n"},
    {"--mapping foo", "ipusim mnist: --mapping foo: expected sample or planned\n"},
    {"--mapping", "ipusim mnist: --mapping needs a value\n"},
    {"--reference --plan", "ipusim mnist: --plan is an option of the simulated run; "
                           "--reference does not take it\n"},
    {"--available-memory-proportion 0.5",
     "ipusim mnist: --available-memory-proportion shapes the planned mapping; --mapping sample "
     "plans nothing\n"},
    {"--available-memory-proportion 0.001",
     "ipusim mnist: --available-memory-proportion: 0.001 is out of range [0.01, 1]\n"},
    /* 64 tiles: I/O tiles 0..63 leave at least one to compute; 64 and 100 leave none */
    {"--io-tiles 100 --set tiles_per_ipu=64",
     "ipusim mnist: --io-tiles 100 leaves no compute tile: an IPU has 64 tiles (at most 63 "
     "can be I/O tiles)\n"},
    {"--io-tiles 64 --set tiles_per_ipu=64 --ipus 1",
     "ipusim mnist: --io-tiles 64 leaves no compute tile: an IPU has 64 tiles (at most 63 "
     "can be I/O tiles)\n"},
    /* training's options with --epochs 0 (the table's TRAIN), in either run */
    {"--epochs 0 --learning-rate 0.1",
     "ipusim mnist: --learning-rate shapes training; --epochs 0 trains nothing\n"},
    {"--reference --batch-size 8 --epochs 0",
     "ipusim mnist: --batch-size shapes training; --epochs 0 trains nothing\n"},
    {"--epochs 0 --offload-optimiser",
     "ipusim mnist: --offload-optimiser shapes training; --epochs 0 trains nothing\n"},
    {"--epochs 0 --profile-window all --profile",
     "ipusim mnist: --profile-window shapes training; --epochs 0 trains nothing\n"},
    {"--epochs 0 --max-calls 1 --steps 3",
     "ipusim mnist: --max-calls shapes training; --epochs 0 trains nothing\n"},
};

/* mnist: the simulated run's option errors are one line and exit status 2, found before any
 * data is read (IPUSIM_DATA names an empty directory). */
static void test_mnist_option_errors(void **state)
{
    (void)state;
    char out[8192];
    setenv("IPUSIM_DATA", tmpdir, 1);
    for (size_t k = 0; k < sizeof mnist_option_cases / sizeof mnist_option_cases[0]; k++) {
        int rc = run(out, sizeof out, "mnist %s", mnist_option_cases[k].args);
        if (rc != 2 || strcmp(out, mnist_option_cases[k].want) != 0) {
            unsetenv("IPUSIM_DATA");
            fail_msg("mnist %s: exit %d, output:\n%s", mnist_option_cases[k].args, rc, out);
        }
    }
    unsetenv("IPUSIM_DATA");
}

/* The next line of *p (without its newline) into line; 0 at the end. */
static int next_line(const char **p, char *line, size_t len)
{
    const char *eol = strchr(*p, '\n');
    if (!eol)
        return 0;
    snprintf(line, len, "%.*s", (int)(eol - *p), *p);
    *p = eol + 1;
    return 1;
}

/* The report after the test accuracy: each line's start, in order (docs/mnist.md, Report). */
static const char *const sim_report[] = {
    "Simulated run on 1 x mk2 IPU (1472 tiles, ",
    "  training               2 host calls, 32 images: ",
    "  per host call          ",
    "  throughput             ",
    "  time split (ipu 0)     OnTileExecute ",
    "  compute sets (ipu 0)   ",
    "  tile balance           ",
    /* the per-sample mapping (docs/mnist.md): the convolutions and pools a sample a tile (a
     * batch of 4), layer3 on its 16 tiles, layer4 and the loss on one */
    "  tiles per layer        conv1 4 on ipu 0; pool1 4 on ipu 0; conv2 4 on ipu 0; pool2 4 on "
    "ipu 0; layer3 16 on ipu 0; layer4 1 on ipu 0; loss 1 on ipu 0",
    /* their union: the 4 sample tiles, layer3's 16, layer4's 1 */
    "  conv and linear tiles  21 of 1472 on ipu 0 (1.4%)",
    "  tile memory            peak ",
    "  compile                ",
    "  test pass              16 images: ",
    "  host time              training ",
};

/* The tutorial's lines as --reference prints them: 2 calls of 16 images, then the test. */
static void check_sim_lines(const char *out, double *loss, double *test_acc)
{
    const char *p = out;
    char line[1024], again[1024];
    assert_true(next_line(&p, line, sizeof line));
    assert_non_null(strstr(line, "Simulated training on 1 x mk2 IPU (1472 tiles, "));
    assert_true(next_line(&p, line, sizeof line));
    assert_non_null(strstr(line, "batch 4 x gradient accumulation 2 x device iterations 2 = 16 "
                                 "images per host call, 2 calls per epoch; "));
    assert_non_null(strstr(line, "; depth 3, output mode all, images as fp32"));
    assert_true(next_line(&p, line, sizeof line));
    assert_string_equal(line, "Epoch 1/1");
    for (int k = 1; k <= 2; k++) {
        double acc;
        int call, calls;
        assert_true(next_line(&p, line, sizeof line));
        assert_int_equal(
            sscanf(line, "Loss:%lf | Accuracy:%lf%%: %d/%d", &loss[k - 1], &acc, &call, &calls), 4);
        snprintf(again, sizeof again, "Loss:%0.4f | Accuracy:%0.2f%%: %d/2", loss[k - 1], acc, k);
        assert_string_equal(line, again);
    }
    assert_true(next_line(&p, line, sizeof line));
    assert_int_equal(sscanf(line, "Accuracy on test set: %lf%%", test_acc), 1);
    snprintf(again, sizeof again, "Accuracy on test set: %0.2f%%", *test_acc);
    assert_string_equal(line, again);
    for (size_t k = 0; k < sizeof sim_report / sizeof sim_report[0]; k++) {
        if (!next_line(&p, line, sizeof line) ||
            strncmp(line, sim_report[k], strlen(sim_report[k])) != 0)
            fail_msg("report line %zu is not '%s...':\n%s", k + 1, sim_report[k], out);
    }
    assert_string_equal(p, "");
}

/* From "Epoch 1/1" to the end of the test accuracy's line: the tutorial's lines. */
static void progress_lines(const char *out, char *buf, size_t len)
{
    const char *a = strstr(out, "Epoch 1/1\n"), *z = a ? strstr(a, "Accuracy on test set: ") : NULL;
    assert_non_null(z);
    z = strchr(z, '\n');
    assert_non_null(z);
    assert_true((size_t)(z - a) < len);
    memcpy(buf, a, (size_t)(z - a));
    buf[z - a] = '\0';
}

/* The JSON document: valid, the run's figures consistent with each other and the lines. */
static void check_sim_json(const char *path, const double *loss, double test_acc)
{
    json *m = load_json(path);
    assert_string_equal(str_at(m, "mode"), "simulated");
    assert_string_equal(str_at(m, "simulated.output_mode"), "all");
    assert_true(fabs(num_at(m, "test_accuracy") - test_acc) < 0.006);
    assert_true(num_at(m, "images_trained") == 32);
    double end = 0;
    for (int k = 0; k < 2; k++) {
        char key[64];
        snprintf(key, sizeof key, "calls.%d.loss", k);
        assert_true(fabs(num_at(m, key) - loss[k]) < 0.00006);
        snprintf(key, sizeof key, "calls.%d.cycles", k);
        end += num_at(m, key);
        assert_true(num_at(m, key) > 0);
        snprintf(key, sizeof key, "calls.%d.end_cycle", k);
        assert_true(num_at(m, key) == end);
    }
    assert_true(num_at(m, "epochs.0.cycles") == end);
    assert_true(num_at(m, "simulated.host_calls") == 2);
    assert_true(num_at(m, "simulated.depth") == 3);
    assert_true(num_at(m, "simulated.call_cycles.mean") == end / 2);
    assert_true(num_at(m, "simulated.train.images") == 32);
    assert_true(num_at(m, "simulated.train.cycles") >= end);
    assert_true(num_at(m, "simulated.train.stats.instructions") > 0);
    assert_true(num_at(m, "simulated.train.split.OnTileExecute") > 0);
    assert_true(num_at(m, "simulated.train.tile_balance.percent") > 0);
    assert_true(num_at(m, "simulated.train.tile_memory.peak_bytes") > 0);
    assert_true(num_at(m, "simulated.train.compile.vertices") > 0);
    assert_true(num_at(m, "simulated.train.compile.seconds") >= 0);
    assert_true(num_at(m, "simulated.test.images") == 16);
    assert_true(num_at(m, "simulated.test.cycles") > 0);
    assert_true(num_at(m, "simulated.test.host_seconds") > 0);
    /* the options as resolved (the defaults included) */
    assert_true(num_at(m, "config.options.ipus") == 1);
    assert_true(num_at(m, "config.options.gradient_accumulation") == 2);
    assert_true(num_at(m, "config.options.depth") == 3);
    assert_true(num_at(m, "config.options.recompute") == 1);
    assert_true(num_at(m, "config.options.io_tiles") == 0);
    assert_string_equal(str_at(m, "config.options.strategy"), "one-ipu");
    assert_string_equal(str_at(m, "config.options.schedule"), "grouped");
    assert_string_equal(str_at(m, "config.options.dtype"), "fp32");
    assert_string_equal(str_at(m, "config.options.output_mode"), "all");
    json_object_put(m);
}

/* mnist on one simulated IPU, on 32 training and 16 test images of a dataset the test writes:
 * the tutorial's lines as --reference prints them, the report, the JSON; the trained weights
 * it saves give the reference the same test accuracy. */
/* The small data set the simulated mnist tests share (32 training, 16 test digits) in dir,
 * made by the first that asks. */
static void sim_digits(char *dir, size_t len)
{
    snprintf(dir, len, "%s/digits", tmpdir);
    if (access(dir, F_OK) == 0)
        return;
    assert_int_equal(mkdir(dir, 0755), 0);
    tu_write_digits(dir, "train", 32);
    tu_write_digits(dir, "t10k", 16);
}

/* One simulated IPU: the progress lines and the JSON agree; its saved weights give the
 * reference trainer the same test accuracy; --plan trains to the same progress lines. */
static void test_mnist_simulated(void **state)
{
    (void)state;
    char dir[256], jpath[256], wdir[256], out[16384], want[256];
    double loss[2], acc;
    sim_digits(dir, sizeof dir);
    snprintf(jpath, sizeof jpath, "%s/sim.json", tmpdir);
    snprintf(wdir, sizeof wdir, "%s/w", tmpdir);
    int rc = run(out, sizeof out,
                 "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 2 "
                 "--device-iterations 2 --test-batch-size 8 --ipus 1 --json %s --save-weights %s",
                 dir, jpath, wdir);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    check_sim_lines(out, loss, &acc);
    check_sim_json(jpath, loss, acc);
    char lines[2048];
    progress_lines(out, lines, sizeof lines);
    assert_int_equal(run(out, sizeof out,
                         "mnist --reference --dataset %s --epochs 0 "
                         "--load-weights %s",
                         dir, wdir),
                     0);
    snprintf(want, sizeof want, "Accuracy on test set: %0.2f%%\n", acc);
    assert_non_null(strstr(out, want));
    /* --plan: the convolutions and linear layers planned over the IPU, the same progress
     * lines as the
     * per-sample mapping (conv1's plan sums as the C loop; conv2's sums differ in the last
     * bits, not at the four decimals printed), a plan per convolution in the report with
     * every compute step's estimate (the AMP's exactly the simulated cycles), and the same
     * in the JSON */
    snprintf(jpath, sizeof jpath, "%s/plan.json", tmpdir);
    assert_int_equal(run(out, sizeof out,
                         "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 2 "
                         "--device-iterations 2 --test-batch-size 8 --ipus 1 --plan --json %s",
                         dir, jpath),
                     0);
    char plines[2048];
    progress_lines(out, plines, sizeof plines);
    assert_string_equal(plines, lines);
    assert_non_null(strstr(out, "; convolutions and linear layers planned over the IPU\n"));
    assert_non_null(strstr(out, " tiles of ipu 0, layer3.dw (weight gradient) on "));
    assert_non_null(strstr(out, "\n  planned                conv1 (forward) on "));
    assert_non_null(strstr(out, " tiles of ipu 0, conv2.dx (input gradient) on "));
    const char *pl = strstr(out, "\n  plans                  step       kind       estimated");
    assert_non_null(pl);
    assert_non_null(
        pl = strstr(pl, "\n    conv1 (forward), ipu 0: x [4][1][28][28], w [10][1][5][5]: "));
    assert_non_null(
        strstr(pl, "\n    conv2 (forward), ipu 0: x [4][10][12][12], w [20][10][5][5]: "));
    const char *amp = strstr(pl, "\n      amp        compute ");
    assert_non_null(amp);
    unsigned long long est = 0, simc = 1;
    assert_int_equal(sscanf(amp, "\n      amp        compute %llu %llu", &est, &simc), 2);
    assert_true(est == simc && est > 0);
    json *doc = load_json(jpath);
    assert_string_equal(str_at(doc, "simulated.train.plans.0.name"), "conv1");
    assert_true(num_at(doc, "simulated.train.plans.0.ipu") == 0);
    assert_true(num_at(doc, "simulated.train.plans.0.tiles") > 0);
    json_object_put(doc);
}

/* The host model on the real workload: 1 loader preparing each image in 100 us must
 * spend 16 x 100 us = 1.6 ms = 2,120,000 cycles at 1.325 GHz on a call's 16 images, so the
 * first call (its infeed starts with it) takes at least that; 4 loaders share the images
 * and the call is shorter; the header and the config name the host. */
static void test_mnist_host_model(void **state)
{
    (void)state;
    if (!tu_slow_tests()) /* not under the sanitizers: the host and I/O tiles' code has
                           * suites of its own */
        skip();
    char dir[256], jpath[256], out[16384], want[256];
    sim_digits(dir, sizeof dir);
    double c1 = 0, c4 = 0;
    for (int loaders = 1; loaders <= 4; loaders += 3) {
        snprintf(jpath, sizeof jpath, "%s/host%d.json", tmpdir, loaders);
        assert_int_equal(run(out, sizeof out,
                             "mnist --dataset %s --epochs 1 --batch-size 4 "
                             "--gradient-accumulation 2 --device-iterations 2 --ipus 1 "
                             "--test-images 8 --prep-us 100 --loaders %d --json %s",
                             dir, loaders, jpath),
                         0);
        snprintf(want, sizeof want, "; host: %d loader%s, 100 us an image (fixed), callback 5 us",
                 loaders, loaders == 1 ? "" : "s");
        assert_non_null(strstr(out, want));
        json *hj = load_json(jpath);
        *(loaders == 1 ? &c1 : &c4) = num_at(hj, "calls.0.cycles");
        assert_true(num_at(hj, "config.options.host.loaders") == loaders);
        assert_true(num_at(hj, "config.options.host.prep_us") == 100);
        json_object_put(hj);
    }
    assert_true(c1 >= 2120000);
    assert_true(c4 < c1);
}

/* I/O tiles take the images while the others compute: the tile balance is over the same
 * compute tiles as without them, the I/O tiles reported apart. */
static void test_mnist_io_tiles(void **state)
{
    (void)state;
    if (!tu_slow_tests()) /* not under the sanitizers: the host and I/O tiles' code has
                           * suites of its own */
        skip();
    char dir[256], jpath[256], out[16384];
    sim_digits(dir, sizeof dir);
    double bal[2];
    for (int io = 0; io < 2; io++) {
        snprintf(jpath, sizeof jpath, "%s/io%d.json", tmpdir, io);
        assert_int_equal(run(out, sizeof out,
                             "mnist --dataset %s --epochs 1 --batch-size 4 "
                             "--gradient-accumulation 2 --device-iterations 2 --ipus 1 "
                             "--test-images 8 --io-tiles %d --json %s",
                             dir, io ? 8 : 0, jpath),
                         0);
        assert_true((strstr(out, "; 8 I/O tiles: their mean ") != NULL) == io);
        json *bj = load_json(jpath);
        bal[io] = num_at(bj, "simulated.train.tile_balance.percent");
        assert_true(num_at(bj, "simulated.train.tile_balance.io_tiles") == (io ? 8 : 0));
        json_object_put(bj);
    }
    assert_true(fabs(bal[1] - bal[0]) < 1.0);
}

/* The ideal utilisation printed is the schedule's own (docs/pipelining.md): grouped
 * G/(G+N-1) = 4/5; sequential, one IPU at a time, 1/N = 1/2. */
static void test_mnist_ideal_utilisation(void **state)
{
    (void)state;
    char dir[256], out[16384];
    sim_digits(dir, sizeof dir);
    static const struct {
        const char *schedule, *ideal;
    } ideal[] = {{"grouped", ", ideal G/(G+N-1) = 80.0%"}, {"sequential", ", ideal 1/N = 50.0%"}};
    for (int k = 0; k < 2 * tu_slow_tests(); k++) { /* not under the sanitizers: CLI only */
        assert_int_equal(run(out, sizeof out,
                             "mnist --dataset %s --epochs 1 --batch-size 4 "
                             "--gradient-accumulation 4 --device-iterations 1 --ipus 2 "
                             "--test-images 8 --schedule %s",
                             dir, ideal[k].schedule),
                         0);
        const char *u = strstr(out, "\n  pipeline utilisation ");
        assert_non_null(u);
        assert_non_null(strstr(u, ideal[k].ideal));
    }
}

/* --steps 4: the program's first steps (mnet_graph.c: the accumulators zeroed, the
 * convolutions' weights broadcast, the layouts, the first infeed), cycles each */
static void test_mnist_steps(void **state)
{
    (void)state;
    char dir[256], out[16384];
    sim_digits(dir, sizeof dir);
    assert_int_equal(run(out, sizeof out,
                         "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 2 "
                         "--device-iterations 2 --ipus 1 --steps 4",
                         dir),
                     0);
    const char *p = strstr(out, "  program steps          step  what       name");
    assert_non_null(p);
    static const char *const steps[] = {
        "\n        0  execute    grads.zero ", "\n        1  copy       conv.params ",
        "\n        2  execute    weights.layouts ", "\n        3  stream in  infeed "};
    for (int k = 0; k < 4; k++)
        assert_non_null(p = strstr(p, steps[k]));
    assert_null(strstr(p, "\n        4  "));
}

/* sharded over two IPUs (B1, B2 on IPU 0; B3, B4 on IPU 1), as PopTorch runs it: one
 * micro-batch of batch x G = 8, gradient accumulation 1, so the progress lines are the
 * reference trainer's with those (the same arithmetic but for the order of its sums:
 * equal at the four decimals printed); a time split per IPU */
static void test_mnist_sharded(void **state)
{
    (void)state;
    if (!tu_slow_tests()) /* not under the sanitizers: the mnist suites run these */
        skip();
    char dir[256], out[16384];
    sim_digits(dir, sizeof dir);
    assert_int_equal(run(out, sizeof out,
                         "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 2 "
                         "--device-iterations 2 --test-batch-size 8 --ipus 2 --strategy sharded",
                         dir),
                     0);
    char lines2[2048];
    progress_lines(out, lines2, sizeof lines2);
    assert_non_null(strstr(out, "; sharded (micro-batch 8, gradient accumulation 1): B1 on IPU 0, "
                                "B2 on 0, B3 on 1, B4 on 1\n"));
    char shout[16384];
    assert_int_equal(run(shout, sizeof shout,
                         "mnist --reference --dataset %s --epochs 1 --batch-size 8 "
                         "--gradient-accumulation 1 --device-iterations 2 --test-batch-size 8",
                         dir),
                     0);
    for (char *l = strtok(lines2, "\n"); l; l = strtok(NULL, "\n")) /* its lines, in order */
        if (!strstr(shout, l))
            fail_msg("sharded: '%s' is not in the reference's output:\n%s", l, shout);
    assert_non_null(strstr(out, "\nSimulated run on 2 x mk2 IPU "));
    assert_non_null(strstr(out, "\n  time split (ipu 1)     OnTileExecute "));
}

/* another layer table for the reference trainer: its line, then the tutorial's progress
 * lines and a test accuracy; its 207,178 parameters (docs/mnist.md, networks as tables) */
static void test_mnist_wide(void **state)
{
    (void)state;
    if (!tu_slow_tests()) /* not under the sanitizers: the mnist suites run these */
        skip();
    char dir[256];
    sim_digits(dir, sizeof dir);
    char wout[8192];
    assert_int_equal(run(wout, sizeof wout,
                         "mnist --reference --network wide --dataset %s --epochs 1 --batch-size 4 "
                         "--gradient-accumulation 2 --device-iterations 2 --max-calls 1 "
                         "--test-images 16",
                         dir),
                     0);
    assert_non_null(strstr(wout, "\nnetwork wide: a wider conv-net: conv 1->16 k5 padding 2, "));
    assert_non_null(strstr(wout, "; 207178 parameters\n"));
    assert_non_null(strstr(wout, ": 1/1\nTrained 16 images in "));
    assert_non_null(strstr(wout, "\nAccuracy on test set: "));
    /* the same simulated (one IPU, every layer planned, from the wide network's own seeded
     * weights): the same progress line and test accuracy */
    char gout[16384], wline[128];
    assert_int_equal(run(gout, sizeof gout,
                         "mnist --network wide --dataset %s --epochs 1 --batch-size 4 "
                         "--gradient-accumulation 2 --device-iterations 2 --max-calls 1 "
                         "--test-images 16 --set tiles_per_ipu=368",
                         dir),
                     0);
    const char *wl = strstr(wout, "\nLoss:");
    assert_non_null(wl);
    snprintf(wline, sizeof wline, "%.*s", (int)strcspn(wl + 1, "\n") + 2, wl);
    if (!strstr(gout, wline) || !strstr(gout, strstr(wout, "\nAccuracy on test set: ")))
        fail_msg("mnist --network wide: not the reference's lines:\n%s\nthe reference's:\n%s", gout,
                 wout);
}

/* pipelined over two IPUs (the default strategy; G = 4 >= 2N - 1): the same progress
 * lines as on one IPU with G = 4, the stages' stashes and the utilisation in the report */
static void test_mnist_pipelined_two(void **state)
{
    (void)state;
    if (!tu_slow_tests()) /* not under the sanitizers: the mnist suites run these */
        skip();
    char dir[256], out[16384], lines[2048], lines2[2048];
    sim_digits(dir, sizeof dir);
    const char *g4 = "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 4 "
                     "--device-iterations 2 --test-batch-size 8 --ipus %d";
    assert_int_equal(run(out, sizeof out, g4, dir, 1), 0);
    progress_lines(out, lines, sizeof lines);
    assert_int_equal(run(out, sizeof out, g4, dir, 2), 0);
    progress_lines(out, lines2, sizeof lines2);
    assert_string_equal(lines2, lines);
    assert_non_null(
        strstr(out, "; pipelined (grouped, recompute): B1 on IPU 0, B2 on 0, B3 on 1, B4 on 1\n"));
    assert_non_null(strstr(out, "\n  ipu 0                  3 micro-batches in flight, stash 3 "
                                "slots "));
    assert_non_null(strstr(out, "\n  ipu 1                  1 micro-batch in flight, stash 0 "
                                "slots 0 B; "));
    assert_non_null(strstr(out, "\n  pipeline utilisation   "));
    assert_non_null(strstr(out, ", ideal G/(G+N-1) = 80.0%")); /* G 4, N 2: 4 / 5 */
    /* the optimiser state in remote buffers: the same progress lines (the same arithmetic),
     * the plan says so, and the remote copies show in the time split */
    char g4o[256];
    snprintf(g4o, sizeof g4o, "%s --offload-optimiser", g4);
    assert_int_equal(run(out, sizeof out, g4o, dir, 2), 0);
    progress_lines(out, lines2, sizeof lines2);
    assert_string_equal(lines2, lines);
    assert_non_null(strstr(out, "B4 on 1; optimiser state in remote buffers\n"));
    assert_non_null(strstr(out, " StreamCopyMidRemoteBuffer "));
}

/* --max-calls 1, --test-images 8: the first host call's 16 images, one test batch */
static void test_mnist_busy_share(void **state)
{
    (void)state;
    char dir[256], jpath[256], out[16384];
    sim_digits(dir, sizeof dir);
    snprintf(jpath, sizeof jpath, "%s/busy.json", tmpdir);
    assert_int_equal(run(out, sizeof out,
                         "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 4 "
                         "--device-iterations 1 --test-batch-size 8 --ipus 2 --max-calls 1 "
                         "--test-images 8 --json %s",
                         dir, jpath),
                     0);
    assert_non_null(strstr(out, "): 16 training, 8 test images\n"));
    assert_non_null(strstr(out, "\nLoss:"));
    assert_non_null(strstr(out, ": 1/1\n"));
    assert_non_null(strstr(out, "\n  test pass              8 images: "));
    /* an IPU's busy share is its OnTileExecute and DoExchange over the training's cycles
     * (docs/mnist.md), from the JSON's own split; the utilisation their mean. The JSON has
     * each number in its shortest exact form, so the shares read back as the very doubles
     * that arithmetic gives (with four decimals, as they once were printed, they did not) */
    {
        json *um = load_json(jpath);
        char key[96], four[32];
        double cycles = num_at(um, "simulated.train.cycles"), sum = 0.0;
        for (int i = 0; i < 2; i++) {
            snprintf(key, sizeof key, "simulated.train.ipus.%d.split.OnTileExecute", i);
            double busy = num_at(um, key);
            snprintf(key, sizeof key, "simulated.train.ipus.%d.split.DoExchange", i);
            assert_true(num_at(um, key) > 0); /* else the sum tells nothing */
            busy += num_at(um, key);
            snprintf(key, sizeof key, "simulated.train.ipus.%d.busy_percent", i);
            double got = num_at(um, key), want = 100.0 * busy / cycles;
            if (got != want)
                fail_msg("ipu %d: busy %.17g%%, OnTileExecute + DoExchange give %.17g%%", i, got,
                         want);
            snprintf(four, sizeof four, "%.4f", want);
            assert_true(strtod(four, NULL) != want);
            sum += got;
        }
        assert_true(num_at(um, "simulated.train.utilisation_percent") == sum / 2);
        json_object_put(um);
    }
}

/* What the two mnist signal tests share: a data set of 32 training and `test_images` test
 * images in TMP/NAME, then `mnist --batch-size 4 --gradient-accumulation 2 --device-iterations 2
 * --ipus 1 --threads THREADS --epochs EPOCHS --progress --json --save-weights` (into TMP/NAME.json
 * and TMP/NAME-w), interrupted with SIGINT once `beat` is on its stderr. Returns the exit
 * status; standard output is in c->out, standard error in c->err. */
typedef struct mnist_sig {
    char dir[256], json[256], wdir[256], out[256], err[16384];
} mnist_sig;

static int mnist_signal(mnist_sig *c, const char *name, int test_images, const char *epochs,
                        const char *threads, const char *beat)
{
    snprintf(c->dir, sizeof c->dir, "%s/%s", tmpdir, name);
    snprintf(c->json, sizeof c->json, "%s/%s.json", tmpdir, name);
    snprintf(c->wdir, sizeof c->wdir, "%s/%s-w", tmpdir, name);
    snprintf(c->out, sizeof c->out, "%s/%s.txt", tmpdir, name);
    assert_int_equal(mkdir(c->dir, 0755), 0);
    tu_write_digits(c->dir, "train", 32);
    tu_write_digits(c->dir, "t10k", test_images);
    char *args[] = {bin,
                    "mnist",
                    "--dataset",
                    c->dir,
                    "--epochs",
                    (char *)epochs,
                    "--batch-size",
                    "4",
                    "--gradient-accumulation",
                    "2",
                    "--device-iterations",
                    "2",
                    "--ipus",
                    "1",
                    "--threads",
                    (char *)threads,
                    "--progress",
                    "--json",
                    c->json,
                    "--save-weights",
                    c->wdir,
                    NULL};
    return signal_run(args, c->out, beat, SIGINT, c->err, sizeof c->err);
}

/* Ctrl-C on the simulated MNIST run: once a heartbeat is on stderr, SIGINT stops the engine
 * within a round; one line "ipusim mnist: stopped at cycle ...", exit status 3, no JSON and no
 * weights written. */
static void test_signal_stops_mnist(void **state)
{
    (void)state;
    mnist_sig c;
    int rc = mnist_signal(&c, "digits-stop", 16, "2000", "2", "ipusim mnist: cycle ");
    if (rc != 3)
        fail_msg("exit %d, stderr:\n%s", rc, c.err);
    const char *stop = strstr(c.err, "ipusim mnist: stopped at cycle ");
    assert_non_null(stop);
    assert_int_equal(tu_count_lines(stop), 1);
    assert_int_equal(access(c.json, F_OK), -1);
    char npy[300];
    snprintf(npy, sizeof npy, "%s/layer1.conv.weight.npy", c.wdir);
    assert_int_equal(access(npy, F_OK), -1);
}

/* Output names at the limits: a 255-byte --save-weights DIR (legal; its staging name beside
 * it, DIR.tmp-XXXXXX, is cut to fit) gets the weights after the run; a 256-byte --json name
 * (or any output option's) is refused before anything runs, and nothing is written. */
static void test_long_output_names(void **state)
{
    (void)state;
    char dir[128], name[300], wdir[400], npy[450], out[16384], want[600];
    snprintf(dir, sizeof dir, "%s/long", tmpdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    tu_write_digits(dir, "train", 32);
    tu_write_digits(dir, "t10k", 16);
    memset(name, 'w', 255);
    name[255] = '\0';
    snprintf(wdir, sizeof wdir, "%s/%s", tmpdir, name);
    int rc = run(out, sizeof out,
                 "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 2 "
                 "--device-iterations 2 --test-batch-size 8 --ipus 1 --save-weights %s",
                 dir, wdir);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    snprintf(npy, sizeof npy, "%s/layer1.conv.weight.npy", wdir);
    assert_int_equal(access(npy, F_OK), 0);
    /* 256 bytes */
    snprintf(wdir, sizeof wdir, "%s/%sj.json", tmpdir, name);
    rc = run(out, sizeof out, "run tests/isa/sup_alu.s --json %s", wdir);
    assert_int_equal(rc, 2);
    snprintf(want, sizeof want,
             "ipusim run: --json %.60s...: a name in it ('wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww...') "
             "is 261 bytes, more than a file name may have (255); nothing run\n",
             wdir);
    assert_string_equal(out, want);
    rc = run(out, sizeof out,
             "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 2 "
             "--device-iterations 2 --ipus 1 --save-weights %s",
             dir, wdir);
    assert_int_equal(rc, 2);
    assert_int_equal(tu_count_lines(out), 1);
    assert_non_null(strstr(out, "ipusim mnist: --save-weights "));
    assert_non_null(strstr(out, "is 261 bytes, more than a file name may have (255); nothing run"));
    snprintf(want, sizeof want, "test -z \"$(ls -A %s | grep j.json)\"", tmpdir);
    assert_int_equal(system(want), 0);
}

/* Ctrl-C in the simulated run's test pass, after the training: the weights are written only
 * once the whole run is over, so none are (the help says a stop writes none), nor the JSON.
 * The test pass's heartbeat names it ("ipusim mnist: test pass: cycle ..."), so the signal
 * lands in it: 8,000 test images take some 6 s, the first beat comes after 1 s. */
static void test_signal_mnist_test_pass(void **state)
{
    (void)state;
    mnist_sig c;
    int rc = mnist_signal(&c, "digits-tstop", 8000, "1", "1", "ipusim mnist: test pass: cycle ");
    if (rc != 3)
        fail_msg("exit %d, stderr:\n%s", rc, c.err);
    const char *stop = strstr(c.err, "ipusim mnist: stopped in the test pass at cycle ");
    assert_non_null(stop);
    assert_int_equal(tu_count_lines(stop), 1);
    assert_int_equal(access(c.json, F_OK), -1);
    assert_int_equal(access(c.wdir, F_OK), -1); /* not even the directory */
    char *o = tu_read_file(c.out);
    assert_non_null(o);
    assert_non_null(strstr(o, "Epoch 1/1\n"));      /* it had trained */
    assert_null(strstr(o, "Accuracy on test set")); /* and not finished testing */
    free(o);
}

/* The report's lines and keys from the statistics tables, on tests/isa/xchg_pair.s with 8
 * tiles (derivation in its comments): tile 0 sends 8 B at cycle 11, the last word lands so the
 * stream ends at 22 (DoExchange 11 cycles), one sync release, halt at 116. Instructions: tile 0
 * 12 (get brnz li x4 send sync get li ld32 halt), the 7 others 7 each (get brnz sync get li
 * ld32 halt): 61. */
static void test_report_tables(void **state)
{
    (void)state;
    char out[8192], jpath[256];
    snprintf(jpath, sizeof jpath, "%s/x.json", tmpdir);
    assert_int_equal(run(out, sizeof out, "run tests/isa/xchg_pair.s --tiles 8 --json %s", jpath),
                     0);
    assert_non_null(strstr(out, "\n  total cycles           116\n  simulated time         0.088 us"
                                "\n  instructions           61\n  supersteps             1\n"));
    assert_non_null(strstr(out, "\n  context utilisation    sup "));
    assert_non_null(strstr(out, "% w5 0.0%\n  ipu 0   finish 116, supersteps 1, DoExchange 8 B in "
                                "11 cycles, GlobalExchange tx 0 B rx 0 B in 0 cycles\n"));
    json *j = load_json(jpath);
    /* the IPU's members in the table's order, then its time split */
    static const struct {
        const char *key;
        double v;
    } ipu[] = {{"ipu", 0},
               {"finish", 116},
               {"supersteps", 1},
               {"do_exchange_bytes", 8},
               {"do_exchange_cycles", 11},
               {"global_exchange_tx_bytes", 0},
               {"global_exchange_rx_bytes", 0},
               {"global_exchange_cycles", 0},
               {"split", -1}};
    size_t k = 0;
    json_object_object_foreach(json_at(j, "per_ipu.0"), key, v)
    {
        assert_true(k < sizeof ipu / sizeof ipu[0]);
        assert_string_equal(key, ipu[k].key);
        if (ipu[k].v >= 0)
            assert_true(json_object_get_double(v) == ipu[k].v);
        k++;
    }
    assert_int_equal(k, sizeof ipu / sizeof ipu[0]);
    /* the IPU's time split: every cycle of its 116 in one category */
    double cats = 0;
    json_object_object_foreach(json_at(j, "per_ipu.0.split"), cat, cycles)
    {
        (void)cat;
        cats += json_object_get_double(cycles);
    }
    assert_true(cats == 116);
    assert_true(num_at(j, "stats.instructions") == 61);
    assert_string_equal(str_at(j, "units.time_us"), "us");
    json_object_put(j);
}

/* Whole numbers in options are decimal (leading zeros too) or 0x hex; too large, negative and
 * malformed values say so on one line; --NAME=VALUE is --NAME VALUE for every long option. */
static void test_option_numbers(void **state)
{
    (void)state;
    char out[8192];
    const char *prog = "tests/isa/sup_alu.s";
    assert_int_equal(run(out, sizeof out, "run --tiles 010 %s", prog), 0);
    assert_non_null(strstr(out, "(10 tiles each"));
    assert_int_equal(run(out, sizeof out, "run --tiles 08 %s", prog), 0);
    assert_non_null(strstr(out, "(8 tiles each"));
    assert_int_equal(run(out, sizeof out, "run --tiles 0x10 %s", prog), 0);
    assert_non_null(strstr(out, "(16 tiles each"));
    assert_int_equal(run(out, sizeof out, "run --tiles=8 %s", prog), 0);
    assert_non_null(strstr(out, "(8 tiles each"));
    assert_int_equal(run(out, sizeof out, "run --tiles 99999999999999999999999 %s", prog), 2);
    assert_string_equal(out, "ipusim run: --tiles: '99999999999999999999999' is too large "
                             "(at most 65536)\n");
    assert_int_equal(run(out, sizeof out, "run --tiles 70000 %s", prog), 2);
    assert_string_equal(out, "ipusim run: --tiles: '70000' is too large (at most 65536)\n");
    /* more tiles than the machine's IPU has: refused (no report calls a made-up IPU "mk2"),
     * naming the way to a larger one; as many is the whole IPU */
    static const struct {
        const char *args, *want;
    } over[] = {
        {"gemm --tiles 2000", "ipusim gemm: --tiles 2000: mk2 has 1472 tiles per IPU; for a "
                              "larger IPU, --set tiles_per_ipu=2000\n"},
        {"gemm --machine mk1 --tiles 1217", "ipusim gemm: --tiles 1217: mk1 has 1216 tiles per "
                                            "IPU; for a larger IPU, --set tiles_per_ipu=1217\n"},
        {"io-bench --tiles 1473", "ipusim io-bench: --tiles 1473: mk2 has 1472 tiles per IPU; "
                                  "for a larger IPU, --set tiles_per_ipu=1473\n"},
        {"run tests/isa/sup_alu.s --set tiles_per_ipu=8 --tiles 9",
         "ipusim run: --tiles 9: mk2 has 8 tiles per IPU; for a larger IPU, --set "
         "tiles_per_ipu=9\n"},
    };
    for (size_t k = 0; k < sizeof over / sizeof over[0]; k++) {
        int rc = run(out, sizeof out, "%s", over[k].args);
        if (rc != 2 || strcmp(out, over[k].want) != 0)
            fail_msg("%s: exit %d, output:\n%s", over[k].args, rc, out);
    }
    assert_int_equal(run(out, sizeof out, "run %s --tiles 1472 --threads 1", prog), 0);
    assert_non_null(strstr(out, "(1472 tiles each"));
    assert_int_equal(run(out, sizeof out, "run --tiles -3 %s", prog), 2);
    assert_string_equal(out, "ipusim run: --tiles: '-3' must not be negative\n");
    assert_int_equal(run(out, sizeof out, "run --tiles 0x %s", prog), 2);
    assert_string_equal(out, "ipusim run: --tiles: '0x' is not a whole number\n");
    assert_int_equal(run(out, sizeof out, "mnist --reference --epochs -1"), 2);
    assert_string_equal(out, "ipusim mnist: --epochs: '-1' must not be negative\n");
    assert_int_equal(run(out, sizeof out, "mnist --reference --epochs=99999999999999999999"), 2);
    assert_string_equal(out, "ipusim mnist: --epochs: '99999999999999999999' is too large "
                             "(at most 100000)\n");
    assert_int_equal(run(out, sizeof out, "gemm --no-check=1"), 2);
    assert_string_equal(out, "ipusim gemm: --no-check takes no value ('--no-check=1')\n");
    assert_int_equal(run(out, sizeof out, "run --dump-mem=0:0:010:08 --tiles=1 %s", prog), 0);
    assert_non_null(strstr(out, "memory of ipu 0 tile 0 from 0xa (8 bytes)"));
}

static void test_asm_disasm_roundtrip(void **state)
{
    (void)state;
    char out[8192], b1[256], s2[256], b2[256];
    snprintf(b1, sizeof b1, "%s/a.bin", tmpdir);
    snprintf(s2, sizeof s2, "%s/a2.s", tmpdir);
    snprintf(b2, sizeof b2, "%s/a2.bin", tmpdir);
    assert_int_equal(run(out, sizeof out, "asm workloads/gemm/gemm.s -o %s", b1), 0);
    assert_int_equal(run(out, sizeof out, "disasm %s -o %s", b1, s2), 0);
    assert_int_equal(run(out, sizeof out, "asm %s -o %s", s2, b2), 0);
    /* the images (text and data) are identical: their listings are */
    char s3[256], cmd[1024];
    snprintf(s3, sizeof s3, "%s/a3.s", tmpdir);
    assert_int_equal(run(out, sizeof out, "disasm %s -o %s", b2, s3), 0);
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", s2, s3);
    assert_int_equal(system(cmd), 0);
    /* the binary runs like the source */
    assert_int_equal(run(out, sizeof out, "run %s --tiles 2", b1), 0);
    /* every program in the tree: asm, disasm, asm again gives the same file, labels and all */
    FILE *ls = popen("ls tests/isa/*.s workloads/codelets/*.s prog.s", "r");
    assert_non_null(ls);
    char src[256];
    int n = 0;
    while (fgets(src, sizeof src, ls)) {
        src[strcspn(src, "\n")] = '\0';
        assert_int_equal(run(out, sizeof out, "asm %s -o %s", src, b1), 0);
        assert_int_equal(run(out, sizeof out, "disasm %s -o %s", b1, s2), 0);
        assert_int_equal(run(out, sizeof out, "asm %s -o %s", s2, b2), 0);
        snprintf(cmd, sizeof cmd, "cmp -s %s %s", b1, b2);
        if (system(cmd) != 0)
            fail_msg("%s: disasm does not re-assemble to the same file", src);
        n++;
    }
    pclose(ls);
    assert_true(n > 40);
}

/* A report cut short (standard output on a full disk) is an error, not exit status 0. */
static void test_stdout_full(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0) {
        print_message("skipped: no /dev/full\n");
        return;
    }
    static const char *const cmds[] = {"run prog.s --tiles 4", "metrics", "disasm prog.s",
                                       "micro sync --threads 1"};
    char cmd[4700], path[256];
    snprintf(path, sizeof path, "%s/full.txt", tmpdir);
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        snprintf(cmd, sizeof cmd, "%s %s > /dev/full 2> %s", bin, cmds[k], path);
        int st = system(cmd);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 2);
        char *err = tu_read_file(path);
        assert_non_null(strstr(err, ": cannot write the report to standard output: "));
        assert_int_equal(tu_count_lines(err), 1);
        free(err);
    }
    /* with --out DIR standard output reaches the terminal through a copier: its failure is
     * the same line, with the reason, and DIR is not made (the run is a failed one) */
    char dir[300];
    snprintf(dir, sizeof dir, "%s/full-out", tmpdir);
    snprintf(cmd, sizeof cmd, "%s run prog.s --tiles 4 --out %s > /dev/full 2> %s", bin, dir, path);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 2);
    char *err = tu_read_file(path);
    assert_string_equal(err, "ipusim run: cannot write the report to standard output: No space "
                             "left on device\n");
    free(err);
    assert_int_equal(access(dir, F_OK), -1);
}

/* The README's sample program is prog.s, and it runs as the README says: worker w of tile 3
 * stores 6 x 3 + w at 0x100 + 4 w. */
static void test_readme_program(void **state)
{
    (void)state;
    char *readme = tu_read_file("README.md"), *prog = tu_read_file("prog.s"), out[8192];
    assert_non_null(readme);
    assert_non_null(prog);
    const char *code = strstr(prog, "\nmain:");
    assert_non_null(code);
    char block[2048];
    snprintf(block, sizeof block, "```\n%s```\n", code + 1);
    assert_non_null(strstr(readme, block));
    free(readme);
    free(prog);
    assert_int_equal(run(out, sizeof out, "run prog.s --tiles 16 --dump-mem 0:3:0x100:24"), 0);
    assert_non_null(strstr(out, "  0x000100: 12000000 13000000 14000000 15000000\n"
                                "  0x000110: 16000000 17000000\n"));
}

/* asm and disasm refuse to write over their input, by name or through another path; so does
 * any command over a file its command line names as an input. */
static void test_asm_output_is_input(void **state)
{
    (void)state;
    char out[8192], src[256], link[256], want[600];
    const char *text = "main: halt\n";
    snprintf(src, sizeof src, "%s/same.s", tmpdir);
    snprintf(link, sizeof link, "%s/same-link.s", tmpdir);
    tu_write_file(src, text);
    assert_int_equal(symlink("same.s", link), 0);
    const char *cmds[] = {"asm", "disasm"};
    for (int c = 0; c < 2; c++) {
        assert_int_equal(run(out, sizeof out, "%s %s -o %s", cmds[c], src, src), 2);
        snprintf(want, sizeof want,
                 "ipusim %s: -o %s: the output is also an input of the command ('%s'); nothing "
                 "written\n",
                 cmds[c], src, src);
        assert_string_equal(out, want);
        assert_int_equal(run(out, sizeof out, "%s %s -o %s/./same.s", cmds[c], src, tmpdir), 2);
        assert_int_equal(run(out, sizeof out, "%s %s -o %s", cmds[c], link, src), 2);
        assert_non_null(strstr(out, "the output is also an input of the command"));
        char *now = tu_read_file(src);
        assert_non_null(now);
        assert_string_equal(now, text);
        free(now);
    }
    assert_int_equal(unlink(link), 0);
    /* any command: an output onto its program, its machine file (untouched) */
    char ini[256], *before = NULL;
    snprintf(ini, sizeof ini, "%s/my.ini", tmpdir);
    tu_write_file(ini, mach_preset_text("mk2"));
    before = tu_read_file(ini);
    assert_int_equal(run(out, sizeof out, "run %s --json %s", src, src), 2);
    assert_non_null(strstr(out, "ipusim run: --json "));
    assert_int_equal(run(out, sizeof out, "micro sync --machine %s --csv %s", ini, ini), 2);
    assert_non_null(strstr(out, "the output is also an input of the command"));
    char *after = tu_read_file(ini);
    assert_string_equal(after, before);
    free(after);
    free(before);
    char *now = tu_read_file(src);
    assert_string_equal(now, text);
    free(now);
    assert_int_equal(unlink(src), 0);
}

/* A directory where a file belongs says "is a directory", a file where a directory belongs
 * "is not a directory"; a path past 4 KiB reaches the message whole. */
static void test_directories(void **state)
{
    (void)state;
    char out[16384], want[9000], file[256];
    snprintf(file, sizeof file, "%s/plain", tmpdir);
    tu_write_file(file, "x\n");
    assert_int_equal(run(out, sizeof out, "run %s", tmpdir), 2);
    snprintf(want, sizeof want, "ipusim run: %s: is a directory\n", tmpdir);
    assert_string_equal(out, want);
    assert_int_equal(run(out, sizeof out, "run tests/isa/sup_alu.s --tiles 1 --json %s", tmpdir),
                     2);
    assert_non_null(strstr(out, want));
    assert_int_equal(run(out, sizeof out, "sweep --param tiles=1 --out %s -- run x.s", tmpdir), 2);
    snprintf(want, sizeof want, "ipusim sweep: %s: is a directory\n", tmpdir);
    assert_non_null(strstr(out, want));
    assert_int_equal(run(out, sizeof out, "mnist --reference --dataset %s", file), 2);
    snprintf(want, sizeof want, "ipusim mnist: dataset '%s' is not a directory\n", file);
    assert_string_equal(out, want);
    char *lng = malloc(4300);
    assert_non_null(lng);
    memset(lng, 'd', 4299);
    lng[4299] = '\0';
    setenv("IPUSIM_DATA", lng, 1);
    int rc = run(out, sizeof out, "mnist --reference");
    unsetenv("IPUSIM_DATA");
    assert_int_equal(rc, 2);
    snprintf(want, sizeof want,
             "ipusim mnist: %s/mnist-digits/train-images-idx3-ubyte not found: run 'make data'\n",
             lng);
    assert_string_equal(out, want);
    free(lng);
    assert_int_equal(unlink(file), 0);
}

/* The whole of a file, or fail. */
static char *must_read(const char *path)
{
    char *s = tu_read_file(path);
    if (!s)
        fail_msg("cannot read %s", path);
    return s;
}

/* CRC-32 (IEEE 802.3, reflected), bit by bit, of the file at path after its first `skip`
 * bytes, continuing from crc (start with 0xffffffff; the result is crc ^ 0xffffffff). */
static uint32_t crc_file(uint32_t crc, const char *path, size_t skip)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, (long)skip, SEEK_SET);
    for (int c; (c = fgetc(f)) != EOF;) {
        crc ^= (uint32_t)c;
        for (int b = 0; b < 8; b++)
            crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
    }
    fclose(f);
    return crc;
}

/* Every report says how it was made: the header names each --set override with the value it
 * took (the last of a key given twice), and the JSON's config holds the program's version as
 * --version prints it, the argv, the machine's overrides and every parameter as simulated
 * (--tiles 4 included), and a command's resolved options. */
static void test_config_in_reports(void **state)
{
    (void)state;
    char out[16384], jpath[256], ver[256], want[512];
    assert_int_equal(run(ver, sizeof ver, "--version"), 0);
    assert_memory_equal(ver, "ipusim 0.", 9);
    ver[strcspn(ver, "\n")] = '\0';
    snprintf(jpath, sizeof jpath, "%s/cfg.json", tmpdir);
    assert_int_equal(run(out, sizeof out,
                         "gemm --m 16 --n 16 --k 16 --tiles 4 --threads 1 --set sync_internal=120 "
                         "--set clock_hz=1000000000 --set sync_internal=100 --json %s",
                         jpath),
                     0);
    assert_non_null(strstr(out, " on 1 x mk2 IPU (4 tiles each, 1.000 GHz; --set "
                                "clock_hz=1000000000 sync_internal=100), 1 host thread\n"));
    json *j = load_json(jpath);
    assert_string_equal(str_at(j, "config.program"), "ipusim");
    assert_string_equal(str_at(j, "config.version"), ver + 7);
    static const char *const argv0[] = {"gemm", "--m", "16", "--n", "16"};
    for (int k = 0; k < 5; k++) {
        snprintf(want, sizeof want, "config.argv.%d", k);
        assert_string_equal(str_at(j, want), argv0[k]);
    }
    assert_string_equal(str_at(j, "config.machine.preset"), "mk2");
    /* the overrides in the order given, each once with the value it took */
    json *over = json_at(j, "config.machine.overrides");
    assert_int_equal(json_object_object_length(over), 2);
    char *text = json_text(over);
    assert_string_equal(text, "{\n  \"clock_hz\": 1000000000,\n  \"sync_internal\": 100\n}\n");
    free(text);
    assert_true(num_at(j, "config.machine.params.sync_internal") == 100);
    assert_true(num_at(j, "config.machine.params.tiles_per_ipu") == 4);
    assert_true(num_at(j, "config.machine.params.sram_bytes") == 638976); /* mk2.ini */
    assert_string_equal(str_at(j, "config.machine.params.topology"), "m2000");
    static const char *const keys[] = {"tiles_per_ipu", "xchg_base", "sync_hop_ps",      "nipus",
                                       "gw_latency_ns", "remote_at", "remote_latency_ns"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        snprintf(want, sizeof want, "config.machine.params.%s", keys[k]);
        assert_non_null(json_at(j, want));
    }
    json_object_put(j);
    /* run: the program that ran, by path, size and CRC-32 */
    assert_int_equal(run(out, sizeof out, "run prog.s --tiles 4 --json %s", jpath), 0);
    j = load_json(jpath);
    assert_string_equal(str_at(j, "config.options.program.path"), "prog.s");
    assert_true(num_at(j, "config.options.program.bytes") > 0);
    snprintf(want, sizeof want, "%08x", crc_file(0xffffffffu, "prog.s", 0) ^ 0xffffffffu);
    assert_string_equal(str_at(j, "config.options.program.crc32"), want);
    json_object_put(j);
    /* Without --set: no override in the header, an empty set in the JSON. */
    assert_int_equal(run(out, sizeof out, "gemm --m 16 --n 16 --k 16 --tiles 4 --json %s", jpath),
                     0);
    assert_null(strstr(out, "--set"));
    j = load_json(jpath);
    assert_true(json_object_is_type(json_at(j, "config.machine.overrides"), json_type_object));
    assert_int_equal(json_object_object_length(json_at(j, "config.machine.overrides")), 0);
    json_object_put(j);
}

/* The reference run: no machine, and the data set it read with the CRC-32 of its images and
 * labels, computed here from the files' payloads (after their IDX headers). */
static void test_config_dataset(void **state)
{
    (void)state;
    char dir[256], jpath[256], out[16384], path[512], want[128];
    snprintf(dir, sizeof dir, "%s/crc", tmpdir);
    snprintf(jpath, sizeof jpath, "%s/crc.json", tmpdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    tu_write_digits(dir, "train", 12);
    tu_write_digits(dir, "t10k", 5);
    assert_int_equal(
        run(out, sizeof out, "mnist --reference --dataset %s --epochs 0 --json %s", dir, jpath), 0);
    static const struct {
        const char *file;
        size_t header;
    } parts[] = {{"train-images-idx3-ubyte", 16},
                 {"train-labels-idx1-ubyte", 8},
                 {"t10k-images-idx3-ubyte", 16},
                 {"t10k-labels-idx1-ubyte", 8}};
    uint32_t crc = 0xffffffffu;
    for (size_t k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, parts[k].file);
        crc = crc_file(crc, path, parts[k].header);
    }
    json *j = load_json(jpath), *machine = j;
    assert_true(json_object_object_get_ex(json_at(j, "config"), "machine", &machine));
    assert_null(machine); /* null: nothing simulated */
    assert_true(num_at(j, "config.options.dataset.train_images") == 12);
    assert_true(num_at(j, "config.options.dataset.test_images") == 5);
    snprintf(want, sizeof want, "%08x", crc ^ 0xffffffffu);
    assert_string_equal(str_at(j, "config.options.dataset.crc32"), want);
    assert_string_equal(str_at(j, "config.options.network"), "tutorial");
    assert_true(num_at(j, "config.options.epochs") == 0);
    assert_true(num_at(j, "config.options.batch_size") == 40);
    json_object_put(j);
}

/* Names in dir, sorted, separated by spaces. */
static void list_dir(const char *dir, char *out, size_t len)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null | tr '\\n' ' '", dir);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    pclose(f);
}

/* --out DIR: the run as a directory of config.json (the command line as typed, --out
 * included), stats.json (the report without its config), report.txt (standard output, as
 * shown) and, with --profile, profile/; written whole: a failed run leaves an earlier run's
 * directory as it was, and no temporary directory behind; a directory that is not a run's and
 * --json beside --out are refused. */
/* --out refuses a directory that is not a run's, and --json or --profile-dir beside it,
 * leaving the runs' directory as it was (dir: a run's; jpath: a --json file). */
static void out_dir_refusals(const char *dir, const char *jpath)
{
    char out[16384], names[1024], path[512], want[512];
    snprintf(path, sizeof path, "%s/runs/other", tmpdir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(want, sizeof want, "%s/runs/other/keep", tmpdir);
    tu_write_file(want, "x");
    assert_int_equal(run(out, sizeof out, "gemm --m 32 --n 32 --k 32 --out %s", path), 2);
    assert_non_null(strstr(out, "a directory that is not a run's (no config.json)"));
    assert_int_equal(run(out, sizeof out, "gemm --out %s --json %s", dir, jpath), 2);
    assert_non_null(strstr(out, "ipusim gemm: --json: --out DIR writes the run's files itself"));
    assert_int_equal(
        run(out, sizeof out, "run tests/isa/worker_six.s --out %s --profile-dir x", dir), 2);
    snprintf(path, sizeof path, "%s/runs", tmpdir);
    list_dir(path, names, sizeof names);
    assert_string_equal(names, "g1 other ");
}

/* micro writes its --out directory too: its table as JSON (the internal sync: Mk2's
 * sync_internal, 90 cycles). */
static void out_dir_micro(void)
{
    char out[16384], names[1024], path[512];
    snprintf(path, sizeof path, "%s/runs/micro", tmpdir);
    assert_int_equal(run(out, sizeof out, "micro sync --threads 1 --out %s", path), 0);
    list_dir(path, names, sizeof names);
    assert_string_equal(names, "config.json report.txt stats.json ");
    char mpath[600];
    snprintf(mpath, sizeof mpath, "%s/stats.json", path);
    json *mj = load_json(mpath);
    assert_true(num_at(mj, "micro.0.simulated") == 90);
    assert_string_equal(str_at(mj, "micro.0.bench"), "sync");
    assert_string_equal(str_at(mj, "micro.0.what"), "internal sync, 1472 tiles");
    json_object_put(mj);
}

static void test_out_dir(void **state)
{
    (void)state;
    char dir[256], out[16384], names[1024], jpath[256];
    snprintf(dir, sizeof dir, "%s/runs/g1", tmpdir);
    snprintf(names, sizeof names, "%s/runs", tmpdir);
    assert_int_equal(mkdir(names, 0755), 0);
    assert_int_equal(run(out, sizeof out,
                         "gemm --m 32 --n 32 --k 32 --tiles 4 --threads 1 --set sync_internal=99 "
                         "--out %s",
                         dir),
                     0);
    list_dir(dir, names, sizeof names);
    assert_string_equal(names, "config.json report.txt stats.json ");
    char path[512];
    snprintf(path, sizeof path, "%s/report.txt", dir);
    char *txt = must_read(path);
    assert_string_equal(txt, out);
    free(txt);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *cfg = must_read(path);
    json *cj = load_json(path);
    assert_true(num_at(cj, "machine.overrides.sync_internal") == 99);
    assert_true(num_at(cj, "machine.params.tiles_per_ipu") == 4);
    /* argv as typed, 15 words: gemm, 5 options and their values, --set sync_internal=99,
     * --out DIR */
    json *argv = json_at(cj, "argv");
    assert_int_equal(json_object_array_length(argv), 15);
    assert_string_equal(str_at(argv, "12"), "sync_internal=99");
    assert_string_equal(str_at(argv, "13"), "--out");
    assert_string_equal(str_at(argv, "14"), dir);
    assert_null(strstr(cfg, "stats.json"));
    snprintf(path, sizeof path, "%s/stats.json", dir);
    char *st = must_read(path);
    json *sj = load_json(path);
    assert_true(num_at(sj, "gemm.m") == 32);
    assert_true(num_at(sj, "stats.cycles") > 0);
    assert_null(json_at(sj, "config"));
    json_object_put(sj);
    /* --json FILE of the same run: the same members, with the config. */
    snprintf(jpath, sizeof jpath, "%s/g1.json", tmpdir);
    assert_int_equal(run(out, sizeof out,
                         "gemm --m 32 --n 32 --k 32 --tiles 4 --threads 1 --set sync_internal=99 "
                         "--json %s",
                         jpath),
                     0);
    char *both = must_read(jpath);
    json *bj = load_json(jpath);
    assert_true(json_object_equal(json_at(bj, "config.machine"), json_at(cj, "machine")));
    assert_true(json_object_equal(json_at(bj, "config.options"), json_at(cj, "options")));
    assert_memory_equal(both, st, (size_t)(strstr(st, "\"host\"") - st));
    json_object_put(bj);
    json_object_put(cj);
    free(both);
    free(st);
    /* A failed run leaves the earlier run whole, and nothing beside it. */
    assert_int_equal(run(out, sizeof out, "gemm --m 32 --n 32 --k 0 --out %s", dir), 2);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *again = must_read(path);
    assert_string_equal(again, cfg);
    free(again);
    free(cfg);
    snprintf(path, sizeof path, "%s/runs", tmpdir);
    list_dir(path, names, sizeof names);
    assert_string_equal(names, "g1 ");
    /* Replaced whole by a new run; a profile goes inside. */
    assert_int_equal(
        run(out, sizeof out, "run tests/isa/worker_six.s --tiles 8 --profile --out %s", dir), 0);
    list_dir(dir, names, sizeof names);
    assert_string_equal(names, "config.json profile report.txt stats.json ");
    snprintf(path, sizeof path, "%s/profile/summary.json", dir);
    assert_int_equal(access(path, F_OK), 0);
    out_dir_refusals(dir, jpath);
    out_dir_micro();
}

/* Every command's help ends with its exit statuses; ipusim --help lists every docs/NAME.md. */
static void test_help_exit_status(void **state)
{
    (void)state;
    char out[16384];
    const char *cmds[] = {"run",   "asm",     "disasm", "gemm",  "isa-doc", "machine",
                          "micro", "metrics", "sweep",  "mnist", "io-bench"};
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        for (int form = 0; form < 2; form++) {
            int rc = form ? run(out, sizeof out, "%s --help", cmds[k])
                          : run(out, sizeof out, "help %s", cmds[k]);
            assert_int_equal(rc, 0);
            const char *p = strstr(out, "\n\nExit status: 0 ");
            if (!p || strstr(p + 2, "\n\n"))
                fail_msg("help %s does not end with its exit statuses:\n%s", cmds[k], out);
        }
    }
    assert_int_equal(run(out, sizeof out, "help help"), 0);
    assert_memory_equal(out, "usage: ipusim COMMAND [OPTIONS]\n", 32);
    assert_int_equal(run(out, sizeof out, "--help"), 0);
    FILE *ls = popen("ls docs/*.md", "r");
    assert_non_null(ls);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, ls)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strstr(out, line + strlen("docs/")))
            fail_msg("ipusim --help does not list %s:\n%s", line, out);
        n++;
    }
    pclose(ls);
    assert_true(n > 5);
}

static void test_machine_presets(void **state)
{
    (void)state;
    char out[65536], path[256], want[512];
    assert_int_equal(run(out, sizeof out, "machine show mk2"), 0);
    const char *l = strstr(out, "\n  tiles_per_ipu ");
    assert_non_null(l);
    const char *eol = strchr(l + 1, '\n');
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)(eol - l - 1), l + 1);
    assert_non_null(strstr(line, " 1472 tiles "));
    assert_non_null(strstr(line, "[GC] compile reports"));
    assert_non_null(strstr(out, "machine mk2 from machines/mk2.ini"));
    assert_int_equal(run(out, sizeof out, "machine show mk1 --set nipus=8"), 0);
    assert_non_null(strstr(out, "override (the preset had 1"));
    /* Mk1: C2 cards of 2 IPUs in a ladder, so 8 IPUs are 4 cards */
    assert_non_null(strstr(out, "IPU-Link topology      ladder: 4 cards of 2 IPUs (nipus = 8)"));
    /* Mk2: 64 IPUs are 16 M2000 boxes of 4, the boxes on a square 4 x 4 torus */
    assert_int_equal(run(out, sizeof out, "machine show mk2 --set nipus=64"), 0);
    assert_non_null(strstr(out, "m2000: 16 boxes of 4 IPUs, 4x4 torus (nipus = 64)"));

    /* a bad --set names the argument, on one line */
    assert_int_equal(run(out, sizeof out, "run --set bogus=1 tests/isa/sup_alu.s"), 2);
    assert_string_equal(out, "ipusim run: --set bogus=1: unknown machine parameter 'bogus'\n");
    assert_int_equal(run(out, sizeof out, "gemm --set clock_hz=fast"), 2);
    assert_string_equal(out, "ipusim gemm: --set clock_hz=fast: clock_hz: 'fast' is not a whole "
                             "number\n");

    /* a bad INI file: file:line: error:, one line, status 2 */
    snprintf(path, sizeof path, "%s/bad.ini", tmpdir);
    tu_write_file(path, "[chip]\n; a comment\ntiles_per_ipu = lots\n");
    assert_int_equal(run(out, sizeof out, "run --machine %s tests/isa/sup_alu.s", path), 2);
    snprintf(want, sizeof want, "%s:3: error: tiles_per_ipu: 'lots' is not a whole number\n", path);
    assert_string_equal(out, want);
    assert_int_equal(run(out, sizeof out, "machine show %s/none.ini", tmpdir), 2);
    assert_non_null(strstr(out, "none.ini: error: cannot open: No such file"));
    assert_int_equal(tu_count_lines(out), 1);
    /* the machine named twice, as the argument and by --machine: refused naming both */
    assert_int_equal(run(out, sizeof out, "machine show mk1 --machine mk2"), 2);
    assert_string_equal(out, "ipusim machine show: 'mk1' and --machine mk2 both name the machine "
                             "to show; give one\n");
    assert_int_equal(run(out, sizeof out, "machine show --machine mk2 mk2"), 2);
    assert_int_equal(tu_count_lines(out), 1);
    assert_int_equal(run(out, sizeof out, "machine show --machine mk1"), 0);
    assert_non_null(strstr(out, "machine mk1 from "));
}

/* A preset file and --set drive a run; --ipus is --set nipus, so the two saying different
 * things is refused naming both (the same number is no contradiction) */
static void test_machine_nipus(void **state)
{
    (void)state;
    char out[65536];
    assert_int_equal(run(out, sizeof out,
                         "run --machine machines/mk1.ini --set nipus=2 "
                         "--tiles 2 tests/isa/sup_alu.s"),
                     0);
    assert_non_null(strstr(out, "on 2 x mk1 IPU"));
    assert_int_equal(run(out, sizeof out,
                         "run --set nipus=2 --ipus 4 --tiles 2 "
                         "tests/isa/sup_alu.s"),
                     2);
    assert_string_equal(out, "ipusim run: --ipus 4 and --set nipus=2 both set the IPUs; give "
                             "one\n");
    assert_int_equal(
        run(out, sizeof out, "run --set nipus=4 --ipus 4 --tiles 2 tests/isa/sup_alu.s"), 0);
    assert_non_null(strstr(out, "on 4 x mk2 IPU"));
    /* io-bench takes the machine's nipus as run does (it used to run one IPU whatever --set
     * said); gemm, micro and mnist choose their IPUs themselves: --set nipus names nothing */
    assert_int_equal(run(out, sizeof out, "io-bench --set nipus=2 --tiles 16 --steps 1"), 0);
    assert_non_null(strstr(out, "on 2 x mk2 IPU"));
    assert_int_equal(run(out, sizeof out, "io-bench --ipus 2 --set nipus=4 --tiles 16"), 2);
    assert_string_equal(out, "ipusim io-bench: --ipus 2 and --set nipus=4 both set the IPUs; "
                             "give one\n");
    static const struct {
        const char *args, *want;
    } fixed[] = {
        {"gemm --set nipus=2", "ipusim gemm: --set nipus=2: gemm runs on one IPU; nipus is not "
                               "set here\n"},
        {"micro sync --set nipus=8", "ipusim micro: --set nipus=8: each benchmark takes the IPUs "
                                     "it needs; nipus is not set here\n"},
        {"mnist --set nipus=2", "ipusim mnist: --set nipus=2: the run's IPUs are --ipus x "
                                "--replicas; nipus is not set here\n"},
    };
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
        int rc = run(out, sizeof out, "%s", fixed[k].args);
        if (rc != 2 || strcmp(out, fixed[k].want) != 0)
            fail_msg("%s: exit %d, output:\n%s", fixed[k].args, rc, out);
    }
    assert_int_equal(run(out, sizeof out, "help gemm"), 0);
    assert_non_null(strstr(out, "--set KEY=VALUE"));
}

int main(int argc, char **argv)
{
    (void)argc;
    tu_bin_path(argv[0], bin, sizeof bin);
    if (tu_mkdtemp(tmpdir, sizeof tmpdir, "cli") != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_iobench_errors),
        cmocka_unit_test(test_asm_errors_exit_1),
        cmocka_unit_test(test_fault_exit_3),
        cmocka_unit_test(test_report_and_json),
        cmocka_unit_test(test_config_every_option),
        cmocka_unit_test(test_report_tables),
        cmocka_unit_test(test_mnist_missing_data),
        cmocka_unit_test(test_mnist_option_errors),
        cmocka_unit_test(test_mnist_simulated),
        cmocka_unit_test(test_mnist_host_model),
        cmocka_unit_test(test_mnist_io_tiles),
        cmocka_unit_test(test_mnist_ideal_utilisation),
        cmocka_unit_test(test_mnist_steps),
        cmocka_unit_test(test_mnist_sharded),
        cmocka_unit_test(test_mnist_wide),
        cmocka_unit_test(test_mnist_pipelined_two),
        cmocka_unit_test(test_mnist_busy_share),
        cmocka_unit_test(test_option_numbers),
        cmocka_unit_test(test_asm_disasm_roundtrip),
        cmocka_unit_test(test_readme_program),
        cmocka_unit_test(test_stdout_full),
        cmocka_unit_test(test_asm_output_is_input),
        cmocka_unit_test(test_directories),
        cmocka_unit_test(test_help_exit_status),
        cmocka_unit_test(test_config_in_reports),
        cmocka_unit_test(test_config_dataset),
        cmocka_unit_test(test_out_dir),
        cmocka_unit_test(test_superstep_limit),
        cmocka_unit_test(test_signal_stops_run),
        cmocka_unit_test(test_signal_stops_sweep),
        cmocka_unit_test(test_signal_stops_mnist),
        cmocka_unit_test(test_signal_mnist_test_pass),
        cmocka_unit_test(test_machine_presets),
        cmocka_unit_test(test_machine_nipus),
        cmocka_unit_test(test_long_output_names),
        cmocka_unit_test(test_asm_cr_line_ends),
    };
    int rc = cmocka_run_group_tests_name("cli", tests, NULL, NULL);
    if (tu_rmdir(tmpdir) != 0)
        rc = rc ? rc : 1;
    return rc;
}
