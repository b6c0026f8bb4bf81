/* test_micro: the microbenchmarks reproduce what the presets imply — every simulated figure
 * within 5% of the preset's implied figure on mk2 and mk1 (latencies and syncs exactly), the
 * figures follow a changed parameter, results do not depend on host threads, and the CSV is
 * written whole (through the built ipusim, $(BUILD)/ipusim).
 *
 * IPUSIM_SLOW_TESTS=0 (the sanitizer builds in CI) runs the whole-IPU benchmarks on a
 * 128-tile IPU: the figures are per tile or scale with the tile count, so the checks hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workloads/micro/micro.h"

static char bin[4096];
static char tmpdir[64];

static int slow_tests(void)
{
    const char *s = getenv("IPUSIM_SLOW_TESTS");
    return !(s && strcmp(s, "0") == 0);
}

static void load(mach *m, const char *name)
{
    err e;
    err_clear(&e);
    assert_int_equal(mach_builtin(m, name, &e), ERR_OK);
    if (!slow_tests())
        m->tiles_per_ipu = 128;
}

static void run_ok(const mach *m, const char *name, unsigned threads, wl_micro_table *t)
{
    err *e = malloc(sizeof *e);
    assert_non_null(e);
    err_clear(e);
    wl_micro_cfg cfg = {threads};
    memset(t, 0, sizeof *t);
    int rc = wl_micro_run(m, name, &cfg, t, e);
    if (rc != ERR_OK)
        fail_msg("micro %s on %s: %s", name ? name : "all", m->name, e->msg);
    free(e);
}

/* Every row: within 5% of implied; cycles exactly (latencies and syncs are deterministic
 * sums of preset constants). */
static void check_table(const mach *m, const wl_micro_table *t)
{
    assert_int_equal(t->n, 27);
    for (size_t i = 0; i < t->n; i++) {
        const wl_micro_row *r = &t->rows[i];
        double d = wl_micro_diff_pct(r->sim, r->implied);
        print_message("%s %-58s %12.4f %12.4f %+6.2f%%\n", m->name, r->what, r->sim, r->implied, d);
        if (isnan(d) || fabs(d) > 5.0)
            fail_msg("%s: %s: simulated %g, implied %g (%+.2f%%)", m->name, r->what, r->sim,
                     r->implied, d);
        if (strcmp(r->unit, "cycles") == 0 && fabs(r->sim - r->implied) > 1e-9)
            fail_msg("%s: %s: %g cycles, implied exactly %g", m->name, r->what, r->sim, r->implied);
        assert_true(r->what[0] != '\0');
        assert_non_null(r->bench);
        assert_non_null(r->unit);
    }
}

static void test_mk2_within_5pct(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk2");
    wl_micro_table t;
    run_ok(&m, NULL, 2, &t);
    check_table(&m, &t);
    /* published figures exist for mk2 where FACTS.md gives one */
    size_t npub = 0;
    for (size_t i = 0; i < t.n; i++)
        npub += !isnan(t.rows[i].published);
    assert_int_equal(npub, 7);
    wl_micro_table_free(&t);
}

static void test_mk1_within_5pct(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk1");
    wl_micro_table t;
    run_ok(&m, "all", 2, &t);
    check_table(&m, &t);
    wl_micro_table_free(&t);
}

/* The figures come from the run: change a parameter and the measurement moves with it. */
static void test_follows_parameters(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk2");
    m.sync_internal = 123;
    m.link_bytes_per_s = 20000000000ull;
    m.link_latency_ns = 250;
    m.xchg_base = 11;
    strcpy(m.name, "custom");
    wl_micro_table t;
    run_ok(&m, "sync", 1, &t);
    assert_int_equal(t.n, 5);
    assert_true(fabs(t.rows[0].sim - 123) < 1e-9);
    assert_true(isnan(t.rows[0].published)); /* an unknown chip has no published figures */
    wl_micro_table_free(&t);
    run_ok(&m, "link", 1, &t);
    assert_int_equal(t.n, 3);
    assert_true(fabs(wl_micro_diff_pct(t.rows[0].sim, 20.0)) < 5);          /* GB/s, one link */
    assert_true(fabs(t.rows[1].sim - (2 * 11 + ceil(250 * 1.325))) < 1e-9); /* cycles */
    wl_micro_table_free(&t);
}

static void test_threads_identical(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk2");
    m.tiles_per_ipu = 128;
    wl_micro_table a, b;
    run_ok(&m, "xchg-bandwidth", 1, &a);
    run_ok(&m, "xchg-bandwidth", 2, &b);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++)
        assert_true(a.rows[i].sim == b.rows[i].sim);
    wl_micro_table_free(&a);
    wl_micro_table_free(&b);
}

static void test_unknown_name(void **state)
{
    (void)state;
    mach m;
    load(&m, "mk2");
    err *e = malloc(sizeof *e);
    err_clear(e);
    wl_micro_table t = {0};
    wl_micro_cfg cfg = {1};
    assert_int_equal(wl_micro_run(&m, "nosuch", &cfg, &t, e), ERR_INPUT);
    assert_non_null(strstr(e->msg, "unknown microbenchmark 'nosuch'"));
    assert_non_null(strstr(e->msg, "allreduce"));
    assert_int_equal(t.n, 0);
    free(e);
    for (size_t i = 0; i < wl_micro_count(); i++) {
        assert_non_null(wl_micro_name(i));
        assert_non_null(wl_micro_summary(i));
    }
    assert_null(wl_micro_name(wl_micro_count()));
}

static int run_cli(char *out, size_t len, const char *args)
{
    return tu_run(bin, out, len, args);
}

static void test_csv_whole(void **state)
{
    (void)state;
    /* the text itself */
    wl_micro_table t = {0};
    mach m;
    load(&m, "mk1");
    run_ok(&m, "sync", 1, &t);
    char *csv = wl_micro_csv(&t);
    assert_non_null(csv);
    assert_int_equal(tu_count_lines(csv), 1 + (int)t.n);
    assert_non_null(strstr(csv, "bench,what,unit,simulated,implied,published,"));
    char line[128];
    snprintf(line, sizeof line, "sync,\"internal sync, %u tiles\",cycles,90,90,90,0,0\n",
             m.tiles_per_ipu);
    assert_non_null(strstr(csv, line));
    free(csv);
    wl_micro_table_free(&t);

    /* through the command: written whole, no temporary left; a bad path writes nothing */
    if (access(bin, X_OK) != 0)
        skip();
    char out[1 << 15], args[512], path[128];
    snprintf(path, sizeof path, "%s/m.csv", tmpdir);
    snprintf(args, sizeof args, "micro sync --machine mk1 --threads 1 --csv %s", path);
    assert_int_equal(run_cli(out, sizeof out, args), 0);
    assert_non_null(strstr(out, "external sync, 16 IPUs"));
    char *text = tu_read_file(path);
    assert_non_null(text);
    assert_int_equal(tu_count_lines(text), 1 + 5);
    assert_non_null(strstr(text, "external sync, 16 IPUs"));
    free(text);
    snprintf(args, sizeof args, "ls %s | wc -l", tmpdir);
    FILE *p = popen(args, "r");
    int files = -1;
    assert_int_equal(fscanf(p, "%d", &files), 1);
    pclose(p);
    assert_int_equal(files, 1);
    snprintf(args, sizeof args, "micro sync --machine mk1 --csv %s/no/such/dir/m.csv", tmpdir);
    assert_int_equal(run_cli(out, sizeof out, args), 2);
    assert_non_null(strstr(out, "cannot write"));
    assert_int_equal(run_cli(out, sizeof out, "micro nosuch"), 2);
    assert_non_null(strstr(out, "unknown microbenchmark 'nosuch'"));
    assert_int_equal(run_cli(out, sizeof out, "micro sync --bogus"), 2);
}

int main(int argc, char **argv)
{
    (void)argc;
    tu_bin_path(argv[0], bin, sizeof bin);
    if (tu_mkdtemp(tmpdir, sizeof tmpdir, "micro") != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mk2_within_5pct),    cmocka_unit_test(test_mk1_within_5pct),
        cmocka_unit_test(test_follows_parameters), cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_unknown_name),       cmocka_unit_test(test_csv_whole),
    };
    int rc = cmocka_run_group_tests_name("micro", tests, NULL, NULL);
    if (tu_rmdir(tmpdir) != 0)
        rc = rc ? rc : 1;
    return rc;
}
