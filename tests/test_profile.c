/* test_profile: --profile (bench/profile/). The trace is valid JSON whose slices nest on their
 * tracks and never go back in time; each IPU's category slices add up to the run's total
 * cycles and, per category, to the engine's split; the bytes of the step slices are those the
 * program sends; the same run gives the same file for any --threads; the window keeps the
 * periods it names; the pipelined MNIST's profile has its device iteration and matches the
 * run's report; a profile directory that cannot be made is one line and no files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/json.h"
#include "bench/sweep/sweep.h"
#include "bench/profile/profile.h"
#include "tests/testutil.h"

#include <unistd.h>

static char bin[1024], tmpdir[128];

/* Two IPUs of 8 tiles. Each IPU's tile 0 sends 8 bytes to its tile 5 (on-chip), every tile
 * syncs internally; then IPU 0's tile 0 sends 16 bytes to IPU 1's tile 1 over the IPU-Links
 * and every tile syncs externally. So IPU 0 receives 8 B on-chip and sends 16 B to IPU 1,
 * IPU 1 receives 8 B on-chip and 16 B from IPU 0. */
static const char xchg_prog[] = "main:   get     r1, $tile\n"
                                "        brnz    r1, wait\n"
                                "        li      r1, src\n"
                                "        li      r2, 8\n"
                                "        li      r3, 5\n"
                                "        li      r4, 0x200\n"
                                "        send    r1, r2, r3, r4\n"
                                "wait:   sync    internal\n"
                                "        get     r1, $tile\n"
                                "        get     r5, $ipu\n"
                                "        or      r1, r1, r5\n"
                                "        brnz    r1, ext\n"
                                "        li      r1, src\n"
                                "        li      r2, 16\n"
                                "        li      r3, 0x10001\n"
                                "        li      r4, 0x300\n"
                                "        gsend   r1, r2, r3, r4\n"
                                "ext:    sync    external\n"
                                "        halt\n"
                                "        .data\n"
                                "        .align  8\n"
                                "src:    .word   1, 2, 3, 4\n";

/* The PopVision categories, in the trace's track order (tid 1..). */
static const char *const cats[] = {"OnTileExecute",
                                   "DoExchange",
                                   "GlobalExchange",
                                   "Sync",
                                   "StreamCopyBegin",
                                   "StreamCopyMid",
                                   "StreamCopyEnd",
                                   "StreamCopyMidRemoteBuffer",
                                   "Idle"};
enum { NCATS = sizeof cats / sizeof cats[0] };

static const char *const byte_keys[] = {"do_exchange_bytes", "global_exchange_tx_bytes",
                                        "global_exchange_rx_bytes", "stream_copy_rx_bytes"};
enum { NKEYS = sizeof byte_keys / sizeof byte_keys[0] };

/* One trace event, from the numbers the JSON holds. */
typedef struct ev {
    int slice; /* has a duration: a complete event */
    long pid, tid;
    double ts, dur;
    uint64_t cycles, start, step;
    uint64_t bytes[NKEYS];
    long tiles; /* tiles_active, or -1 */
} ev;

typedef struct trace {
    ev *e;
    size_t n;
} trace;

/* Run "ipusim ARGS", stdout and stderr into out; the exit status. */
#define run(out, len, ...) tu_runf(bin, out, len, __VA_ARGS__)

/* The numbers of a JSON file (the test fails if it is not valid JSON). */
static sweep_metrics read_json(const char *path)
{
    char *text = tu_read_file(path);
    assert_non_null(text);
    sweep_metrics m = {0};
    char msg[SWEEP_MSG];
    if (sweep_json_flatten(path, text, strlen(text), &m, msg) != 0)
        fail_msg("%s", msg);
    free(text);
    return m;
}

static const char *metric(const sweep_metrics *m, const char *name)
{
    for (size_t k = 0; k < m->n; k++)
        if (strcmp(m->m[k].name, name) == 0)
            return m->m[k].text;
    fail_msg("no %s", name);
    return NULL;
}

static uint64_t metric_u64(const sweep_metrics *m, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return strtoull(metric(m, name), NULL, 10);
}

/* One number "traceEvents.N.FIELD" into event N. */
static void put_field(ev *x, const char *field, const char *text)
{
    uint64_t u = strtoull(text, NULL, 10);
    if (strcmp(field, "pid") == 0)
        x->pid = (long)u;
    else if (strcmp(field, "tid") == 0)
        x->tid = (long)u;
    else if (strcmp(field, "ts") == 0)
        x->ts = strtod(text, NULL);
    else if (strcmp(field, "dur") == 0) {
        x->dur = strtod(text, NULL);
        x->slice = 1;
    } else if (strcmp(field, "args.cycles") == 0)
        x->cycles = u;
    else if (strcmp(field, "args.start_cycle") == 0)
        x->start = u;
    else if (strcmp(field, "args.step") == 0)
        x->step = u;
    else if (strcmp(field, "args.tiles_active") == 0)
        x->tiles = (long)u;
    for (int k = 0; k < NKEYS; k++)
        if (strncmp(field, "args.", 5) == 0 && strcmp(field + 5, byte_keys[k]) == 0)
            x->bytes[k] = u;
}

static trace read_trace(const char *path)
{
    sweep_metrics m = read_json(path);
    trace t = {0};
    size_t cap = 0;
    for (size_t k = 0; k < m.n; k++) {
        const char *name = m.m[k].name;
        if (strncmp(name, "traceEvents.", 12) != 0)
            continue;
        char *dot;
        size_t i = strtoul(name + 12, &dot, 10);
        if (i >= t.n) {
            t.e = xgrow(t.e, &cap, i + 1, sizeof *t.e);
            for (size_t j = t.n; j <= i; j++)
                t.e[j] = (ev){.tiles = -1};
            t.n = i + 1;
        }
        put_field(&t.e[i], dot + 1, m.m[k].text);
    }
    sweep_metrics_free(&m);
    return t;
}

/* Slices on each track in file order: each starts at or after the end of the one before, in
 * cycles and in time; every category and tile slice lies within a step slice of its IPU. */
static void check_tracks(const trace *t)
{
    for (size_t a = 0; a < t->n; a++) {
        const ev *x = &t->e[a];
        if (!x->slice)
            continue;
        assert_true(x->dur >= 0);
        for (size_t b = a + 1; b < t->n; b++) { /* the next slice on the same track */
            const ev *y = &t->e[b];
            if (!y->slice || y->pid != x->pid || y->tid != x->tid)
                continue;
            assert_true(y->start >= x->start + x->cycles);
            assert_true(y->ts >= x->ts);
            break;
        }
        if (x->tid == 0)
            continue;
        int inside = 0;
        for (size_t b = 0; b < t->n && !inside; b++) {
            const ev *s = &t->e[b];
            inside = s->slice && s->pid == x->pid && s->tid == 0 && s->start <= x->start &&
                     x->start + x->cycles <= s->start + s->cycles;
        }
        assert_true(inside);
    }
}

/* Cycles of IPU pid's slices on track tid. */
static uint64_t track_cycles(const trace *t, long pid, long tid)
{
    uint64_t sum = 0;
    for (size_t k = 0; k < t->n; k++)
        if (t->e[k].slice && t->e[k].pid == pid && t->e[k].tid == tid)
            sum += t->e[k].cycles;
    return sum;
}

static void profile_xchg(const char *dir, int threads, const char *report)
{
    char path[256], out[16384];
    snprintf(path, sizeof path, "%s/xchg.s", tmpdir);
    tu_write_file(path, xchg_prog);
    int rc = run(out, sizeof out,
                 "run %s --ipus 2 --tiles 8 --threads %d --profile --profile-dir %s "
                 "--profile-window all --profile-tiles 0,5 --json %s",
                 path, threads, dir, report);
    if (rc != 0)
        fail_msg("%s", out);
    assert_non_null(strstr(out, "Execution summary"));
    assert_non_null(strstr(out, "/trace.json ("));
}

static void test_trace_adds_up(void **state)
{
    (void)state;
    char dir[256], report[256], path[512];
    snprintf(dir, sizeof dir, "%s/xchg", tmpdir);
    snprintf(report, sizeof report, "%s/xchg.json", tmpdir);
    profile_xchg(dir, 2, report);
    snprintf(path, sizeof path, "%s/trace.json", dir);
    trace t = read_trace(path);
    check_tracks(&t);
    sweep_metrics rep = read_json(report);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sweep_metrics sum = read_json(path);
    uint64_t total = metric_u64(&rep, "stats.cycles");
    /* what the program sends (see xchg_prog): on-chip, to IPU 1, from IPU 0 */
    static const uint64_t want[2][3] = {{8, 16, 0}, {8, 0, 16}};
    for (long i = 0; i < 2; i++) {
        uint64_t all = 0;
        for (long c = 0; c < NCATS; c++) {
            uint64_t cyc = track_cycles(&t, i, 1 + c);
            assert_int_equal(cyc, metric_u64(&sum, "ipus.%ld.cycles.%s", i, cats[c]));
            all += cyc;
        }
        assert_int_equal(all, total);
        assert_int_equal(track_cycles(&t, i, 0) + track_cycles(&t, i, 1 + NCATS - 1), total);
        uint64_t bytes[3] = {0, 0, 0};
        for (size_t k = 0; k < t.n; k++)
            for (int b = 0; b < 3; b++)
                bytes[b] +=
                    t.e[k].slice && t.e[k].pid == i && t.e[k].tid == 0 ? t.e[k].bytes[b] : 0;
        /* and on the track of the category that moves them: DoExchange, GlobalExchange */
        uint64_t on_track[3] = {0, 0, 0};
        static const long track[3] = {2, 3, 3};
        for (size_t k = 0; k < t.n; k++)
            for (int b = 0; b < 3; b++)
                on_track[b] +=
                    t.e[k].slice && t.e[k].pid == i && t.e[k].tid == track[b] ? t.e[k].bytes[b] : 0;
        for (int b = 0; b < 3; b++) {
            assert_int_equal(bytes[b], want[i][b]);
            assert_int_equal(on_track[b], want[i][b]);
            assert_int_equal(bytes[b], metric_u64(&sum, "ipus.%ld.%s", i, byte_keys[b]));
        }
        assert_int_equal(bytes[0], metric_u64(&rep, "per_ipu.%ld.do_exchange_bytes", i));
    }
    /* every tile issues before its first sync: step 0 has all 8 active */
    for (size_t k = 0; k < t.n; k++)
        if (t.e[k].slice && t.e[k].tid == 0 && t.e[k].step == 0)
            assert_int_equal(t.e[k].tiles, 8);
    /* the chosen tiles' supervisors have tracks (tile 0: tid 100, tile 5: tid 107) */
    assert_true(track_cycles(&t, 0, 100) > 0);
    assert_true(track_cycles(&t, 1, 107) > 0);
    free(t.e);
    sweep_metrics_free(&rep);
    sweep_metrics_free(&sum);
}

static void test_same_for_any_threads(void **state)
{
    (void)state;
    char d1[256], d2[256], r[256], p1[512], p2[512];
    snprintf(d1, sizeof d1, "%s/t1", tmpdir);
    snprintf(d2, sizeof d2, "%s/t2", tmpdir);
    snprintf(r, sizeof r, "%s/t.json", tmpdir);
    profile_xchg(d1, 1, r);
    profile_xchg(d2, 2, r);
    const char *files[] = {"trace.json", "summary.json", "summary.txt", "timeline.csv"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        snprintf(p1, sizeof p1, "%s/%s", d1, files[k]);
        snprintf(p2, sizeof p2, "%s/%s", d2, files[k]);
        char *a = tu_read_file(p1), *b = tu_read_file(p2);
        assert_non_null(a);
        assert_non_null(b);
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
}

/* A profile directory that cannot be made or is not a directory: one line, status 2, no
 * files. */
static void test_bad_dir(void **state)
{
    (void)state;
    char file[256], out[8192];
    snprintf(file, sizeof file, "%s/plain", tmpdir);
    tu_write_file(file, "x");
    assert_int_equal(run(out, sizeof out,
                         "run tests/isa/sync_tiles.s --tiles 2 --profile --profile-dir %s/sub",
                         file),
                     2);
    assert_int_equal(tu_count_lines(out), 1);
    assert_non_null(strstr(out, "ipusim run: --profile-dir "));
    assert_non_null(strstr(out, "cannot create a directory beside"));
    assert_non_null(strstr(out, "Not a directory"));
    /* a profile's options without --profile would shape nothing: refused, nothing made */
    assert_int_equal(run(out, sizeof out,
                         "run tests/isa/sync_tiles.s --tiles 2 --profile-window all "
                         "--profile-dir %s/never",
                         tmpdir),
                     2);
    assert_string_equal(out, "ipusim run: --profile-window shapes a profile: give --profile too\n");
    char never[300];
    snprintf(never, sizeof never, "%s/never", tmpdir);
    assert_int_equal(access(never, F_OK), -1);
    assert_int_equal(run(out, sizeof out,
                         "gemm --m 64 --n 64 --k 16 --tiles 4 --profile --profile-dir %s", file),
                     2);
    assert_int_equal(tu_count_lines(out), 1);
    assert_non_null(strstr(out, "is not a directory"));
    assert_int_equal(
        run(out, sizeof out, "run tests/isa/sync_tiles.s --profile --profile-window calls:1..x"),
        2);
    assert_int_equal(tu_count_lines(out), 1);
    assert_non_null(strstr(out, "--profile-window: 'calls:1..x' is not"));
    struct stat st;
    char sub[512];
    snprintf(sub, sizeof sub, "%s/sub", file);
    assert_int_not_equal(stat(sub, &st), 0);
    /* tiles the run's IPUs do not have (2 tiles: 0 and 1): refused before the run, no
     * directory made */
    assert_int_equal(run(out, sizeof out,
                         "run tests/isa/sync_tiles.s --tiles 2 --profile --profile-tiles 0,2..3 "
                         "--profile-dir %s/never",
                         tmpdir),
                     2);
    assert_string_equal(out, "ipusim run: --profile-tiles 0,2..3: tile 3 does not exist (the "
                             "run's mk2 IPUs have tiles 0..1)\n");
    assert_int_equal(access(never, F_OK), -1);
    /* a window past a run that marks no host call (run: the whole run is call 0): refused
     * after the run, naming it; the report was printed, no profile file written */
    char past[300], trace_path[400];
    snprintf(past, sizeof past, "%s/past-run", tmpdir);
    assert_int_equal(run(out, sizeof out,
                         "run tests/isa/sync_tiles.s --tiles 2 --profile --profile-window "
                         "calls:1 --profile-dir %s",
                         past),
                     2);
    assert_non_null(strstr(out, "total cycles"));
    assert_non_null(strstr(out, "ipusim run: --profile-window calls:1: 1 names no period of "
                                "the run, which marks no host call: it is one period, 0 (or "
                                "-1); no profile written\n"));
    snprintf(trace_path, sizeof trace_path, "%s/trace.json", past);
    assert_int_equal(access(trace_path, F_OK), -1);
}

/* `ipusim profile DIR` prints the summary again; a directory without one is one line. */
static void test_profile_again(void **state)
{
    (void)state;
    char out[8192], dir[256], again[16384];
    snprintf(dir, sizeof dir, "%s/again", tmpdir);
    assert_int_equal(run(out, sizeof out,
                         "run tests/isa/sync_tiles.s --tiles 2 --profile --profile-dir %s", dir),
                     0);
    assert_int_equal(run(again, sizeof again, "profile %s", dir), 0);
    assert_non_null(strstr(again, "Execution summary"));
    assert_non_null(strstr(out, again)); /* the run printed the same table */
    assert_int_equal(run(out, sizeof out, "profile %s/none", tmpdir), 2);
    assert_int_equal(tu_count_lines(out), 1);
    /* a summary is an input like any other: its control bytes (ESC, a lone CR) are shown as
     * \xNN, never sent to the terminal; a tab and UTF-8 stay, CRLF and CR end lines */
    char sum[300];
    snprintf(sum, sizeof sum, "%s/summary.txt", dir);
    tu_write_file(sum, "name \033[2J\033]0;title\007 \xc3\xa9\tx\r\ny\x7f\x9b\rz");
    assert_int_equal(run(again, sizeof again, "profile %s", dir), 0);
    assert_string_equal(again, "name \\x1b[2J\\x1b]0;title\\x07 \xc3\xa9\tx\ny\\x7f\\x9b\nz");
}

/* Six supersteps on one IPU, cut into three host calls of two steps each by marks at the
 * starts of steps 2 and 4, profiled with `window` in dir (given: as --profile-window, whose
 * items must each name a call). profile_write's status; its error line into msg. */
static int window_run(const char *dir, const char *window, int given, char *msg, size_t cap)
{
    static const char prog[] = "main:   li      r1, 5\n"
                               "loop:   sync    internal\n"
                               "        brnzdec r1, loop\n"
                               "        halt\n";
    err e;
    err_clear(&e);
    sys_cfg cfg = {.threads = 1};
    assert_int_equal(mach_builtin(&cfg.m, "mk2", &e), ERR_OK);
    cfg.m.nipus = 1;
    cfg.m.tiles_per_ipu = 2;
    profile_opts o;
    profile_opts_init(&o);
    o.dir = dir;
    o.window = window;
    o.window_given = given;
    profile *p;
    assert_int_equal(profile_new(&o, &cfg.m, &p, &e), 0);
    isa_prog ip;
    tu_assemble("window.s", prog, &ip);
    profile_attach(p, &cfg.ctl.watch);
    sys *s = sys_new(&cfg, &e);
    assert_non_null(s);
    assert_int_equal(eng_load(sys_engine(s), &ip, &e), ERR_OK);
    assert_int_equal(eng_run(sys_engine(s), &e), ERR_OK);
    assert_int_equal(profile_steps(p, sys_engine(s), 0), 6);
    profile_mark(p, PROFILE_CALL, profile_step_start(p, sys_engine(s), 0, 4)); /* any order */
    profile_mark(p, PROFILE_CALL, profile_step_start(p, sys_engine(s), 0, 2));
    profile_finish(p, sys_engine(s), NULL, "window");
    err_clear(&e);
    int rc = profile_write(p, &e);
    size_t len = strlen(e.msg) < cap ? strlen(e.msg) : cap - 1;
    memcpy(msg, e.msg, len);
    msg[len] = '\0';
    profile_free(p);
    sys_free(s);
    isa_prog_free(&ip);
    return rc;
}

/* The three calls of window_run: "calls:0,-1" keeps the first call (steps 0, 1) and the last
 * (steps 4, 5 and the end, 6), nothing of the second. A window given with an item that names
 * none of the three calls (3, -4, 5..9) is one line naming it and the count, status 2, and
 * no file; 2..9 names the last call, and -3 the first: accepted. */
static void test_window(void **state)
{
    (void)state;
    char dir[256], path[512], err[1024];
    snprintf(dir, sizeof dir, "%s/window", tmpdir);
    assert_int_equal(window_run(dir, "calls:0,-1", 1, err, sizeof err), 0);
    assert_string_equal(err, "");
    snprintf(path, sizeof path, "%s/trace.json", dir);
    trace t = read_trace(path);
    check_tracks(&t);
    int seen[8] = {0};
    for (size_t k = 0; k < t.n; k++)
        if (t.e[k].slice && t.e[k].tid == 0 && t.e[k].step < 8)
            seen[t.e[k].step]++;
    static const int want[8] = {1, 1, 0, 0, 1, 1, 1, 0};
    for (int k = 0; k < 8; k++)
        assert_int_equal(seen[k], want[k]);
    free(t.e);

    static const char *const past[] = {"calls:3", "calls:0,-4", "calls:5..9"};
    static const char *const item[] = {"3", "-4", "5..9"};
    for (int k = 0; k < 3; k++) {
        char d[300], want_line[300];
        snprintf(d, sizeof d, "%s/past%d", tmpdir, k);
        assert_int_equal(mkdir(d, 0755), 0);
        assert_int_equal(window_run(d, past[k], 1, err, sizeof err), 2);
        snprintf(want_line, sizeof want_line,
                 "--profile-window %s: %s names none of the run's 3 host calls (0..2, or -3..-1 "
                 "from the end); no profile written",
                 past[k], item[k]);
        assert_string_equal(err, want_line);
        snprintf(path, sizeof path, "%s/trace.json", d);
        assert_int_equal(access(path, F_OK), -1);
        snprintf(path, sizeof path, "%s/summary.json", d);
        assert_int_equal(access(path, F_OK), -1);
    }
    snprintf(dir, sizeof dir, "%s/window-in", tmpdir);
    assert_int_equal(window_run(dir, "calls:2..9,-3", 1, err, sizeof err), 0);
    /* the default window (calls:0,1,-1) on a run with fewer calls is not the user's: kept */
    snprintf(dir, sizeof dir, "%s/window-default", tmpdir);
    assert_int_equal(window_run(dir, "calls:0,7", 0, err, sizeof err), 0);
}

/* Occurrences of needle in s. */
static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* A count at a dotted path of a JSON tree (the test fails if there is none). */
static uint64_t at_u64(json *root, const char *fmt, ...)
{
    char path[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    json *v = json_at(root, path);
    if (!v)
        fail_msg("no %s", path);
    return json_object_get_uint64(v);
}

/* The mnist run's compute sets (simulated.PHASE.compute_sets.ipus.I.sets, the engine's
 * tally): each IPU's rows add up to the IPU's time split in the same report (the engine's
 * counters: simulated.PHASE.ipus.I.split), in training and in the test pass; and the
 * training's rows are those the profile's summary.json derives from its own records
 * (ipus.I.compute_sets), row for row: name, supersteps, cycles and split. */
static void check_csets(const char *report, const char *summary, int nipus)
{
    err e;
    json *rep = json_load(report, 1u << 26, &e), *sum = json_load(summary, 1u << 26, &e);
    assert_non_null(rep);
    assert_non_null(sum);
    static const char *const phase[] = {"train", "test"};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < nipus; i++) {
            char path[128];
            snprintf(path, sizeof path, "simulated.%s.compute_sets.ipus.%d.sets", phase[k], i);
            json *sets = json_at(rep, path);
            assert_non_null(sets);
            size_t n = json_object_array_length(sets);
            uint64_t all = 0, split = 0;
            for (size_t j = 0; j < n; j++)
                all += at_u64(sets, "%zu.cycles", j);
            snprintf(path, sizeof path, "simulated.%s.ipus.%d.split", phase[k], i);
            json_object_object_foreach(json_at(rep, path), key, val)
            {
                (void)key;
                split += json_object_get_uint64(val);
            }
            assert_true(split > 0);
            assert_int_equal(all, split);
            if (k)
                continue;
            snprintf(path, sizeof path, "ipus.%d.compute_sets", i);
            json *prof = json_at(sum, path);
            assert_non_null(prof);
            assert_int_equal(json_object_array_length(prof), n);
            for (size_t j = 0; j < n; j++) {
                json *a = json_object_array_get_idx(sets, j),
                     *b = json_object_array_get_idx(prof, j);
                assert_string_equal(json_object_to_json_string(a), json_object_to_json_string(b));
            }
        }
    json_object_put(rep);
    json_object_put(sum);
}

/* With I/O tiles the infeed lands on them and a device iteration begins at its hand-over Copy:
 * with G 10 (grouped pipelining with I/O tiles needs G >= 2N + 2), one call of 2 device
 * iterations, the window keeps IPU 0's one weight update (the others' too, IPU 2's first one
 * ending inside the window) and ten hand-overs. */
static void check_io_iteration(const char *data, const char *dir)
{
    char dir2[300], path[512], out[16384], needle[128];
    snprintf(dir2, sizeof dir2, "%s-io", dir);
    int rc = run(out, sizeof out,
                 "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 10 "
                 "--device-iterations 2 --test-batch-size 4 --threads 1 --io-tiles 16 --profile "
                 "--profile-dir %s --profile-window iterations:1",
                 data, dir2);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    assert_non_null(strstr(out, "window iterations:1 of 2 device iterations"));
    snprintf(path, sizeof path, "%s/trace.json", dir2);
    char *text = tu_read_file(path);
    for (int i = 0; i < 4; i++) {
        snprintf(needle, sizeof needle, "{\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"name\":\"adamw\"", i);
        assert_true(count(text, needle) >= 1 && (i || count(text, needle) == 1));
    }
    assert_int_equal(count(text, "{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"name\":\"copy infeed\""), 10);
    free(text);
}

/* The tutorial's network pipelined over four IPUs on 128 images: batch 4, G 8, 2 device
 * iterations a call, so 4 device iterations of 8 micro-batches. The window "iterations:1"
 * keeps one, the last of the first call: it ends at IPU 0's next infeed, after the call's
 * sync with the host, so it holds every IPU's second weight update (adamw) whole; IPU 2's
 * first one (layer3's 82,176 parameters: the longest update) is still running when IPU 0
 * starts the iteration, so IPU 2 shows two. On IPU 0 eight infeed copies of 4 images of 784
 * fp32 pixels and a label each (4 x 3140 B). The whole run's infeed is 128 x 3140 B; the
 * summary's rows are the report's time split. */
static void test_mnist_iteration(void **state)
{
    (void)state;
    char data[256], dir[256], path[512], out[16384], needle[128];
    snprintf(data, sizeof data, "%s/digits", tmpdir);
    snprintf(dir, sizeof dir, "%s/mnist", tmpdir);
    assert_int_equal(mkdir(data, 0755), 0);
    tu_write_digits(data, "train", 128);
    tu_write_digits(data, "t10k", 16);
    int rc = run(out, sizeof out,
                 "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 8 "
                 "--device-iterations 2 --test-batch-size 4 --threads 1 --profile "
                 "--profile-dir %s --profile-window iterations:1 --json %s/mnist.json",
                 data, dir, tmpdir);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    assert_non_null(strstr(out, "window iterations:1 of 4 device iterations"));
    char report[300];
    snprintf(report, sizeof report, "%s/mnist.json", tmpdir);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    check_csets(report, path, 4);
    assert_non_null(strstr(out, "\n  compute sets (ipu 3)   "));
    snprintf(path, sizeof path, "%s/trace.json", dir);
    trace t = read_trace(path);
    check_tracks(&t);
    uint64_t infeed = 0;
    for (size_t k = 0; k < t.n; k++)
        if (t.e[k].slice && t.e[k].pid == 0 && t.e[k].tid == 0)
            infeed += t.e[k].bytes[3];
    assert_int_equal(infeed, 8 * 4 * 3140);
    free(t.e);
    char *text = tu_read_file(path);
    for (int i = 0; i < 4; i++) {
        snprintf(needle, sizeof needle, "{\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"name\":\"adamw\"", i);
        assert_int_equal(count(text, needle), i == 2 ? 2 : 1);
    }
    assert_int_equal(count(text, "{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"name\":\"stream in infeed\""),
                     8);
    free(text);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sweep_metrics sum = read_json(path);
    assert_int_equal(metric_u64(&sum, "ipus.0.stream_copy_rx_bytes"), 128 * 3140);
    uint64_t total = metric_u64(&sum, "total_cycles");
    for (int i = 0; i < 4; i++) { /* "time split (ipu I)     OnTileExecute P%" */
        char *line, want[64];
        snprintf(needle, sizeof needle, "time split (ipu %d)", i);
        assert_non_null(line = strstr(out, needle));
        double pct =
            100.0 * (double)metric_u64(&sum, "ipus.%d.cycles.OnTileExecute", i) / (double)total;
        snprintf(want, sizeof want, "OnTileExecute %.1f%%", pct);
        assert_non_null(strstr(line, want));
        assert_true(strstr(line, want) < strchr(line, '\n'));
    }
    sweep_metrics_free(&sum);

    if (tu_slow_tests()) /* not under the sanitizers: the markers are found the same way */
        check_io_iteration(data, dir);

    /* the whole run (about 2 MiB of trace) under a 1 MiB bound: cut, still valid JSON, and
     * cut in time, so every IPU keeps its first steps */
    rc = run(out, sizeof out,
             "mnist --dataset %s --epochs 1 --batch-size 4 --gradient-accumulation 8 "
             "--device-iterations 2 --test-batch-size 4 --threads 1 --profile --profile-dir %s "
             "--profile-window all --profile-max-mb 1",
             data, dir);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    assert_non_null(strstr(out, "cut at --profile-max-mb"));
    snprintf(path, sizeof path, "%s/trace.json", dir);
    t = read_trace(path);
    check_tracks(&t);
    for (long i = 0; i < 4; i++)
        assert_true(track_cycles(&t, i, 0) > 0);
    free(t.e);
}

/* `ipusim profile DIR --plot`: the timeline and the proportions colour each time category
 * alike, with the colour `ipusim metrics` gives it (hw/cats.def), OnTileExecute and Idle
 * apart. Skipped without gnuplot. */
static void test_plot_palette(void **state)
{
    (void)state;
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        print_message("skipped: gnuplot is not installed (make deps)\n");
        return;
    }
    char dir[256], report[256], out[16384], path[512];
    snprintf(dir, sizeof dir, "%s/plot", tmpdir);
    snprintf(report, sizeof report, "%s/plot.json", tmpdir);
    profile_xchg(dir, 2, report);
    assert_int_equal(run(out, sizeof out, "profile %s --plot", dir), 0);
    static char metrics[65536];
    assert_int_equal(run(metrics, sizeof metrics, "metrics"), 0);
    static const char *const cats[] = {"OnTileExecute", "Sync", "GlobalExchange", "Idle"};
    char rgb[4][32];
    for (int k = 0; k < 4; k++) {
        char key[64];
        snprintf(key, sizeof key, "\niobench.split.%s\t", cats[k]);
        const char *l = strstr(metrics, key), *hash = l ? strchr(l + 1, '#') : NULL;
        assert_non_null(hash);
        unsigned c = (unsigned)strtoul(hash + 1, NULL, 16);
        snprintf(rgb[k], sizeof rgb[k], "rgb(%3u, %3u, %3u)", c >> 16, c >> 8 & 255, c & 255);
        for (int j = 0; j < k; j++)
            assert_string_not_equal(rgb[j], rgb[k]);
    }
    static const char *const pics[] = {"timeline.svg", "proportions.svg"};
    for (int p = 0; p < 2; p++) {
        snprintf(path, sizeof path, "%s/%s", dir, pics[p]);
        char *svg = tu_read_file(path);
        assert_non_null(svg);
        for (int k = 0; k < 4; k++)
            if (!strstr(svg, rgb[k]))
                fail_msg("%s has no %s for %s", pics[p], rgb[k], cats[k]);
        free(svg);
    }
    /* The timeline names a compute step long enough to hold its name (a 3,000-pass loop, some
     * 18,000 cycles), not the one-cycle step after it. */
    char src[512];
    snprintf(src, sizeof src, "%s/spin.s", tmpdir);
    tu_write_file(src, "main: li r2, 3000\nloop: brnzdec r2, loop\n sync internal\n halt\n");
    snprintf(dir, sizeof dir, "%s/spin", tmpdir);
    assert_int_equal(run(out, sizeof out,
                         "run %s --tiles 4 --profile --profile-dir %s --profile-window all", src,
                         dir),
                     0);
    assert_int_equal(run(out, sizeof out, "profile %s --plot", dir), 0);
    snprintf(path, sizeof path, "%s/timeline.svg", dir);
    char *svg = tu_read_file(path);
    assert_non_null(strstr(svg, ">superstep 0<"));
    assert_null(strstr(svg, ">end<"));
    free(svg);
}

int main(int argc, char **argv)
{
    (void)argc;
    tu_bin_path(argv[0], bin, sizeof bin);
    if (tu_mkdtemp(tmpdir, sizeof tmpdir, "profile") != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_adds_up), cmocka_unit_test(test_same_for_any_threads),
        cmocka_unit_test(test_bad_dir),       cmocka_unit_test(test_profile_again),
        cmocka_unit_test(test_window),        cmocka_unit_test(test_mnist_iteration),
        cmocka_unit_test(test_plot_palette),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_rmdir(tmpdir);
    return rc;
}
