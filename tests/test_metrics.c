/* test_metrics: the statistics' tables (cli/metrics.h) against what the commands write. Runs
 * each command's cheapest real reports with the built binary ($(BUILD)/ipusim), flattens each
 * JSON file to its leaves, and checks both ways: every leaf is a statistic that the tables
 * declare for that command, and every statistic they declare for a command is written by one
 * of its runs. So a writer's new or renamed member and a table's stale row both fail here.
 * Also: the columns the standard sweeps plot (bench/ *.sweep) are statistics, the profile's
 * summary names the time categories of hw/cats.def, and `ipusim metrics` lists them all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <glob.h>
#include <sys/stat.h>

#include "base/json.h"
#include "base/text.h"
#include "cli/cli.h"
#include "cli/metrics.h"
#include "hw/stats.h"

static char bin[4096];
static char tmpdir[64];
static char out[1 << 17];

#define run(...) tu_runf(bin, out, sizeof out, __VA_ARGS__)

/* ---- a command's statistics, and which of them its runs wrote ---- */

typedef struct stats {
    cli_stat *s;
    int *seen;
    size_t n, cap;
} stats;

static void collect(void *ctx, const cli_stat *s)
{
    stats *t = ctx;
    t->s = xgrow(t->s, &t->cap, t->n + 1, sizeof *t->s);
    t->s[t->n++] = *s;
}

static stats stats_of(const char *cmd)
{
    stats t = {0};
    cli_stats_each(cmd, collect, &t);
    t.seen = calloc(t.n ? t.n : 1, sizeof *t.seen);
    assert_non_null(t.seen);
    return t;
}

static void stats_free(stats *t)
{
    free(t->s);
    free(t->seen);
}

/* A leaf of a report: marks the statistics it is; one line into bad when it is none. */
typedef struct check {
    stats *t;
    const char *file;
    txt bad;
} check;

static void leaf(void *ctx, const char *path, const char *value, json_type type)
{
    (void)value, (void)type;
    check *c = ctx;
    int hit = 0;
    for (size_t i = 0; i < c->t->n; i++)
        if (cli_metric_match(c->t->s[i].column, path))
            hit = c->t->seen[i] = 1;
    if (!hit)
        txt_printf(&c->bad, "  %s: %s\n", c->file, path);
}

/* ---- the runs ---- */

/* Each command's reports: its arguments ($D: the test's directory), then the JSON files they
 * write (in $D) with the member each stands for (NULL: the report itself; "config": --out's
 * config.json). Every command sets a machine parameter (the config's overrides); mnist runs
 * on a small data set of its own, pipelined over two IPUs with the planned mapping (the
 * per-IPU lines, the plans), as the reference (no machine) and as a test pass alone. */
static const struct report {
    const char *cmd, *args, *files[2], *prefix[2];
} reports[] = {
    {"run",
     "run tests/isa/sup_alu.s --tiles 4 --set sync_internal=100 --dump-mem 0:1:0:4 --json "
     "$D/run.json",
     {"run.json"},
     {NULL}},
    {"gemm",
     "gemm --m 64 --n 64 --k 64 --tiles 4 --set sync_internal=100 --json $D/gemm.json",
     {"gemm.json"},
     {NULL}},
    {"io-bench",
     "io-bench --tiles 16 --steps 2 --set sync_internal=100 --out $D/io",
     {"io/stats.json", "io/config.json"},
     {NULL, "config"}},
    {"micro", "micro sync --set sync_internal=100 --json $D/micro.json", {"micro.json"}, {NULL}},
    {"mnist",
     "mnist --dataset $D/digits --epochs 1 --max-calls 1 --device-iterations 1 --batch-size 4 "
     "--gradient-accumulation 3 --ipus 2 --stages auto --test-batch-size 4 --mapping planned --set "
     "tiles_per_ipu=128 --threads 1 --json $D/mnist.json",
     {"mnist.json"},
     {NULL}},
    {"mnist",
     "mnist --reference --dataset $D/digits --epochs 1 --max-calls 1 --device-iterations 1 "
     "--batch-size 4 --gradient-accumulation 1 --json $D/ref.json",
     {"ref.json"},
     {NULL}},
    {"mnist",
     "mnist --dataset $D/digits --epochs 0 --ipus 1 --threads 1 --json $D/test.json",
     {"test.json"},
     {NULL}},
};

/* s with every "$D" replaced by the test's directory, into buf. */
static const char *in_tmp(const char *s, char *buf, size_t len)
{
    size_t at = 0;
    for (; *s && at + 1 < len; s++) {
        if (s[0] == '$' && s[1] == 'D') {
            at += (size_t)snprintf(buf + at, len - at, "%s", tmpdir);
            s++;
        } else {
            buf[at++] = *s;
        }
    }
    buf[at < len ? at : len - 1] = '\0';
    return buf;
}

/* Run one report and check its files' leaves against the command's statistics. */
static void check_report(const struct report *r, stats *t, txt *bad)
{
    char args[1024], path[512];
    int rc = run("%s", in_tmp(r->args, args, sizeof args));
    if (rc != 0)
        fail_msg("ipusim %s: exit %d:\n%s", args, rc, out);
    for (int k = 0; k < 2 && r->files[k]; k++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, r->files[k]);
        err e;
        json *root = json_load(path, (size_t)1 << 26, &e);
        if (!root)
            fail_msg("%s", e.msg);
        check c = {t, r->files[k], {0}};
        json_leaves(root, r->prefix[k], leaf, &c);
        json_object_put(root);
        txt_printf(bad, "%s", txt_str(&c.bad));
        txt_free(&c.bad);
    }
}

/* Every leaf of every report is declared for its command; every statistic declared for a
 * command is in one of its reports. */
static void test_reports_match_tables(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/digits", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    tu_write_digits(dir, "train", 24);
    tu_write_digits(dir, "t10k", 8);
    static const char *const cmds[] = {"run", "gemm", "io-bench", "micro", "mnist"};
    txt bad = {0}, unseen = {0};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        stats t = stats_of(cmds[c]);
        assert_true(t.n > 0);
        for (size_t i = 0; i < sizeof reports / sizeof reports[0]; i++)
            if (strcmp(reports[i].cmd, cmds[c]) == 0)
                check_report(&reports[i], &t, &bad);
        for (size_t i = 0; i < t.n; i++)
            if (!t.seen[i])
                txt_printf(&unseen, "  %s: %s (%s)\n", cmds[c], t.s[i].column, t.s[i].table);
        stats_free(&t);
    }
    if (bad.len || unseen.len)
        fail_msg("members no table declares for their command:\n%sstatistics declared for a "
                 "command that none of its reports wrote:\n%s",
                 txt_str(&bad), txt_str(&unseen));
    txt_free(&bad);
    txt_free(&unseen);
}

/* ---- the plots' columns ---- */

/* The sweep file's variables (sourced as plots/render.sh does) into v[0..7): SWEEP, FROM, X,
 * Y, SERIES, LABEL, MARKX, each a malloc'd line. */
enum { V_SWEEP, V_FROM, V_X, V_Y, V_SERIES, V_LABEL, V_MARKX, V_N };
static void sweep_vars(const char *file, char *v[V_N])
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "sh -c '. ./%s; printf \"%%s\\n\" \"$SWEEP\" \"$FROM\" \"$X\" \"$Y\" \"$SERIES\" "
             "\"$LABEL\" \"$MARKX\"'",
             file);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[4096];
    for (int k = 0; k < V_N; k++) {
        if (!fgets(line, sizeof line, p))
            fail_msg("%s: cannot read its variables", file);
        line[strcspn(line, "\n")] = '\0';
        v[k] = xstrdup(line);
    }
    assert_int_equal(pclose(p), 0);
}

/* Is name a --param of the sweep? */
static int is_param(const char *sweep, const char *name)
{
    char want[300];
    snprintf(want, sizeof want, "--param %s=", name);
    return strstr(sweep, want) != NULL;
}

/* Each column a sweep file names that is not one of its parameters is a statistic of its
 * command; one line into bad for each that is not. */
static void check_sweep(const char *file, txt *bad)
{
    char *v[V_N], *from[V_N], path[512];
    sweep_vars(file, v);
    const char *sweep = v[V_SWEEP];
    int has_from = *v[V_FROM] != '\0';
    if (has_from) {
        snprintf(path, sizeof path, "bench/%s.sweep", v[V_FROM]);
        sweep_vars(path, from);
        sweep = from[V_SWEEP];
    }
    const char *dash = strstr(sweep, " -- ");
    if (!dash)
        fail_msg("%s: no ' -- COMMAND' in its SWEEP", file);
    char cmd[32];
    snprintf(cmd, sizeof cmd, "%.*s", (int)strcspn(dash + 4, " "), dash + 4);
    stats t = stats_of(cmd);
    if (!t.n)
        fail_msg("%s: %s writes no statistics", file, cmd);
    static const int named[] = {V_X, V_Y, V_SERIES, V_LABEL, V_MARKX};
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        const char *s = v[named[k]];
        if (named[k] == V_MARKX && *s != '@')
            continue; /* a number */
        for (s += *s == '@'; *s; s += strspn(s, " ")) {
            char col[256];
            snprintf(col, sizeof col, "%.*s", (int)strcspn(s, " "), s);
            s += strcspn(s, " ");
            int ok = is_param(sweep, col) || strcmp(col, "status") == 0;
            for (size_t i = 0; i < t.n && !ok; i++)
                ok = cli_metric_match(t.s[i].column, col);
            if (!ok)
                txt_printf(bad, "  %s: %s is neither a parameter nor a statistic of %s\n", file,
                           col, cmd);
        }
    }
    stats_free(&t);
    for (int k = 0; k < V_N; k++) {
        if (has_from)
            free(from[k]);
        free(v[k]);
    }
}

static void test_plotted_columns_are_statistics(void **state)
{
    (void)state;
    glob_t g;
    assert_int_equal(glob("bench/*.sweep", 0, NULL, &g), 0);
    assert_true(g.gl_pathc >= 10);
    txt bad = {0};
    for (size_t i = 0; i < g.gl_pathc; i++)
        check_sweep(g.gl_pathv[i], &bad);
    globfree(&g);
    if (bad.len)
        fail_msg("columns the plots name:\n%s", txt_str(&bad));
    txt_free(&bad);
}

/* ---- the profile's summary ---- */

/* summary.json names each IPU's cycles by the categories of hw/cats.def, in its order. */
static void test_profile_categories(void **state)
{
    (void)state;
    assert_int_equal(
        run("run tests/isa/sup_alu.s --tiles 4 --profile --profile-dir %s/prof", tmpdir), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/prof/summary.json", tmpdir);
    err e;
    json *root = json_load(path, (size_t)1 << 26, &e);
    if (!root)
        fail_msg("%s", e.msg);
    json *cycles = json_at(root, "ipus.0.cycles");
    assert_non_null(cycles);
    const eng_stat *cat = eng_cat_table();
    unsigned k = 0;
    json_object_object_foreach(cycles, key, val)
    {
        (void)val;
        if (k >= ENG_NCAT || strcmp(key, cat[k].key) != 0)
            fail_msg("summary.json: ipus.0.cycles.%s where hw/cats.def has %s", key,
                     k < ENG_NCAT ? cat[k].key : "no more categories");
        k++;
    }
    assert_int_equal(k, ENG_NCAT);
    json_object_put(root);
}

/* ---- the listing ---- */

/* `ipusim metrics`: a line per statistic, six fields; the time categories' lines (the five
 * splits: run's per IPU, io-bench's, mnist's per pass, per IPU and pass, and per compute set)
 * carry a colour;
 * --command keeps one command's; a COLUMN gives the line that stands for it. */
static void test_listing(void **state)
{
    (void)state;
    assert_int_equal(run("metrics"), 0);
    int lines = tu_count_lines(out), coloured = 0;
    stats all = stats_of(NULL);
    assert_int_equal(lines, (int)all.n);
    stats_free(&all);
    for (const char *l = out; *l; l = strchr(l, '\n') + 1) {
        const char *eol = strchr(l, '\n'), *colour = NULL;
        int tabs = 0;
        for (const char *c = l; c < eol; c++)
            if (*c == '\t' && ++tabs == 4)
                colour = c + 1;
        if (tabs != 5)
            fail_msg("not six fields: %.*s", (int)(eol - l), l);
        coloured += *colour == '#';
    }
    assert_int_equal(coloured, 5 * ENG_NCAT);
    assert_non_null(strstr(out, "stats.cycles\tcycles\ttotal cycles\t"));
    assert_non_null(strstr(out, "\nstats.util_w5\t%\tcontext utilisation w5\t"));
    assert_non_null(strstr(out, "\nper_ipu.N.split.Idle\tcycles\tIdle\t"));
    assert_non_null(strstr(out, "\t#e8e8e8\trun gemm io-bench\n"));
    assert_non_null(strstr(out, "\nconfig.machine.params.sram_bytes\tbytes\t"));
    /* options from the commands' tables: one line for a row that several tables share, its
     * commands in cli/commands.c's order; an array's ".N" */
    assert_non_null(strstr(out, "\nconfig.options.max_cycles\tcycles\tmax cycles\tthe run's cycle "
                                "limit (--max-cycles)\t\trun gemm micro io-bench\n"));
    assert_non_null(strstr(out, "\nconfig.options.stages.N\t\tstages\tthe IPU of block N + 1 "
                                "(--stages)\t\tmnist\n"));
    /* micro's report: 6 members a row and host_seconds; the config: program, version, command,
     * argv, preset, overrides, the 31 machine parameters and 4 options (bench, threads,
     * max_cycles, progress) */
    assert_int_equal(run("metrics --command micro"), 0);
    assert_int_equal(tu_count_lines(out), 7 + 6 + MACH_NPARAMS + 4);
    assert_int_equal(run("metrics per_ipu.3.split.Idle"), 0);
    assert_int_equal(tu_count_lines(out), 1);
    assert_non_null(strstr(out, "per_ipu.N.split.Idle\tcycles\tIdle\t"));
    assert_int_equal(
        run("metrics --command mnist simulated.test.plans.2.steps.weights.x.simulated"), 0);
    static const char plan[] = "simulated.PHASE.plans.N.steps.STEP.simulated\tcycles\t";
    assert_int_equal(strncmp(out, plan, strlen(plan)), 0);
    assert_int_equal(tu_count_lines(out), 1);
    assert_int_equal(run("metrics simulated.bogus"), 2);
    assert_string_equal(out, "ipusim metrics: simulated.bogus: not a statistic of any command's "
                             "report\n");
    assert_int_equal(run("metrics --command gemm simulated.train.cycles"), 2);
    assert_string_equal(
        out, "ipusim metrics: simulated.train.cycles: not a statistic of gemm's report\n");
    assert_int_equal(run("metrics --command sweep"), 2);
    assert_string_equal(out, "ipusim metrics: --command sweep: not a command with a JSON report "
                             "(run gemm io-bench micro mnist)\n");
    assert_int_equal(run("metrics --bogus"), 2);
}

/* Every row of a command's option table with a key (an echoed option) says its unit and
 * meaning, and its option, where it has one, is named in the meaning or the row is echo-only;
 * no two rows of one table echo the same key. */
static void test_option_rows(void **state)
{
    (void)state;
    int keyed = 0;
    for (const cli_cmd *c = cli_commands(); c->name; c++)
        for (size_t k = 0; c->opts && k < c->opts->nrows; k++) {
            const cli_opt *r = &c->opts->rows[k];
            if (!r->key)
                continue;
            keyed++;
            if (!r->unit || !r->means || !r->means[0])
                fail_msg("%s: %s: no unit or meaning", c->name, r->key);
            if (r->name && r->name[1] == '-' && !strstr(r->means, r->name))
                fail_msg("%s: %s: its meaning does not name %s", c->name, r->key, r->name);
            for (size_t j = 0; j < k; j++)
                if (c->opts->rows[j].key && strcmp(c->opts->rows[j].key, r->key) == 0)
                    fail_msg("%s: %s echoed twice", c->name, r->key);
        }
    assert_true(keyed > 50);
}

int main(int argc, char **argv)
{
    (void)argc;
    tu_bin_path(argv[0], bin, sizeof bin);
    if (tu_mkdtemp(tmpdir, sizeof tmpdir, "metrics") != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),
        cmocka_unit_test(test_option_rows),
        cmocka_unit_test(test_reports_match_tables),
        cmocka_unit_test(test_plotted_columns_are_statistics),
        cmocka_unit_test(test_profile_categories),
    };
    int rc = cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
    if (tu_rmdir(tmpdir) != 0)
        rc = rc ? rc : 1;
    return rc;
}
