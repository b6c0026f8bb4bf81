/* test_machine: the machine presets — mk2 and mk1 load and hold the numbers docs/sources.md
 * lists, every parameter has a value and a source comment in both files, every kind of
 * bad input gives its exact "file:line: error:" message, --set style overrides, a user's own
 * INI file, and docs/machines.md lists every key as the descriptor table says. Runs from the
 * repository root (make test). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/machine.h"
#include "tests/testutil.h"

/* ---- helpers ---- */

static err *new_err(void)
{
    err *e = malloc(sizeof *e);
    assert_non_null(e);
    err_clear(e);
    return e;
}

/* 1-based line of the first line of text that starts with `prefix`. */
static int line_of(const char *text, const char *prefix)
{
    int line = 1;
    for (const char *s = text; *s; line++) {
        if (strncmp(s, prefix, strlen(prefix)) == 0)
            return line;
        s += strcspn(s, "\n");
        s += *s == '\n';
    }
    fail_msg("no line starts with '%s'", prefix);
    return 0;
}

/* A copy of the mk2 preset with the line starting with `prefix` replaced by `with` (with
 * may hold several lines, or be "" to drop the line). Caller frees. */
static char *mk2_with(const char *prefix, const char *with)
{
    const char *t = mach_preset_text("mk2");
    assert_non_null(t);
    const char *at = strstr(t, prefix);
    while (at && at != t && at[-1] != '\n')
        at = strstr(at + 1, prefix);
    assert_non_null(at);
    const char *end = at + strcspn(at, "\n");
    end += *end == '\n';
    size_t n = strlen(t) + strlen(with) + 2;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*s%s%s%s", (int)(at - t), t, with, *with ? "\n" : "", end);
    return out;
}

/* Parse text as "t.ini"; expect ERR_INPUT and exactly "t.ini:LINE: error: MSG". */
static void expect_error(const char *text, int line, const char *msg)
{
    err *e = new_err();
    mach m;
    memset(&m, 0x5a, sizeof m);
    mach before = m;
    assert_int_equal(mach_parse(&m, NULL, "t", "t.ini", text, e), ERR_INPUT);
    char want[512];
    snprintf(want, sizeof want, "t.ini:%d: error: %s", line, msg);
    assert_string_equal(e->msg, want);
    assert_memory_equal(&m, &before, sizeof m); /* untouched on error */
    free(e);
}

/* ---- the presets hold the published numbers ---- */

static void test_mk2_values(void **state)
{
    (void)state;
    err *e = new_err();
    mach m;
    assert_int_equal(mach_builtin(&m, "mk2", e), ERR_OK);
    assert_string_equal(m.name, "mk2");
    assert_int_equal(m.tiles_per_ipu, 1472);      /* FACTS 1: [GC]; [SEED] 004 */
    assert_int_equal(m.sram_bytes, 624 * 1024);   /* 624 KiB */
    assert_int_equal(m.clock_hz, 1325000000);     /* [D] 249.6 TFLOPS / (1472 x 128) */
    assert_int_equal(m.amp_macs_per_issue, 16);   /* 16 fp32 MAC per tile cycle */
    assert_int_equal(m.load_bytes_per_cycle, 16); /* [PAPER] */
    assert_int_equal(m.store_bytes_per_cycle, 8); /* [PAPER] */
    assert_int_equal(m.xchg_bytes_per_cycle, 4);  /* [GC] */
    assert_int_equal(m.xchg_per_column, 6);       /* [3P] */
    assert_int_equal(m.sync_internal, 90);        /* [GC] heuristic */
    assert_int_equal(m.sync_hop_ps, 15000);       /* [GC] IPU Model 15 ns */
    assert_int_equal(m.nipus, 1);
    assert_string_equal(m.topology, "m2000");
    assert_int_equal(m.ipus_per_box, 4);                                     /* [PRESS] */
    assert_int_equal(m.links_per_ipu, 10);                                   /* [PRESS] */
    assert_int_equal(m.link_bytes_per_s * m.links_per_ipu, 320000000000ull); /* 320 GB/s */
    /* the published aggregates, from the parameters */
    double peak = mach_fp32_peak_flops(&m);
    assert_true(peak > 62.5e12 * 0.99 && peak < 62.5e12 * 1.01); /* 62.5 TFLOPS */
    double xchg = (double)m.tiles_per_ipu * m.xchg_bytes_per_cycle * (double)m.clock_hz;
    assert_true(xchg > 7.8e12 * 0.99 && xchg < 8.0e12 * 1.01); /* 7.8-8 TB/s */
    assert_int_equal((uint64_t)m.tiles_per_ipu * m.sram_bytes / (1024 * 1024), 897); /* MiB */
    assert_int_equal(mach_sync_external(&m), 90 + 40); /* ceil(15 ns x 1.325 GHz x 1 x 2) */
    free(e);
}

static void test_mk1_values(void **state)
{
    (void)state;
    err *e = new_err();
    mach m;
    assert_int_equal(mach_builtin(&m, "mk1", e), ERR_OK);
    assert_string_equal(m.name, "mk1");
    assert_int_equal(m.tiles_per_ipu, 1216);    /* FACTS 1: [GC] */
    assert_int_equal(m.sram_bytes, 256 * 1024); /* 256 KiB */
    assert_int_equal(m.clock_hz, 1600000000);   /* [GC] 1.6 GHz */
    assert_int_equal(m.xchg_bytes_per_cycle, 4);
    assert_int_equal(m.sync_internal, 90);
    assert_string_equal(m.topology, "ladder"); /* [GC] ladder on Mk1 cards */
    assert_int_equal(m.ipus_per_box, 2);
    assert_int_equal(m.link_bytes_per_s, 13600000000ull); /* 128 Gbit/s x 85% */
    double xchg = (double)m.tiles_per_ipu * m.xchg_bytes_per_cycle * (double)m.clock_hz;
    assert_true(xchg > 7.7e12 && xchg < 7.9e12); /* ~7.8 TB/s */
    free(e);
}

/* mach_builtin and mach_load give the same machine; a file copy of a preset loads the same. */
static void test_builtin_equals_file(void **state)
{
    (void)state;
    err *e = new_err();
    const char *names[] = {"mk2", "mk1"};
    for (int k = 0; k < 2; k++) {
        mach a, b, c;
        memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&c, 0, sizeof c);
        assert_int_equal(mach_builtin(&a, names[k], e), ERR_OK);
        assert_int_equal(mach_load(&b, NULL, names[k], e), ERR_OK);
        char path[64];
        snprintf(path, sizeof path, "machines/%s.ini", names[k]);
        assert_int_equal(mach_load(&c, NULL, path, e), ERR_OK); /* the source file itself */
        assert_memory_equal(&a, &b, sizeof a);
        assert_memory_equal(&a, &c, sizeof a);
        assert_int_equal(mach_check(&a, e), ERR_OK);
    }
    /* the same preset saved with CR (old Mac) or CRLF line ends: the same machine, and an
     * error in such a file names its line as an LF file would */
    char dir[64];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "mach"), 0);
    char *lf = tu_read_file("machines/mk2.ini");
    assert_non_null(lf);
    for (int k = 0; k < 2; k++) {
        char path[128];
        snprintf(path, sizeof path, "%s/mk2.ini", dir);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        for (const char *p = lf; *p; p++)
            fputs(*p != '\n' ? (char[]){*p, 0} : k ? "\r\n" : "\r", f);
        fclose(f);
        mach a, c;
        memset(&a, 0, sizeof a), memset(&c, 0, sizeof c);
        assert_int_equal(mach_builtin(&a, "mk2", e), ERR_OK);
        if (mach_load(&c, NULL, path, e) != ERR_OK)
            fail_msg("%s line ends: %s", k ? "CRLF" : "CR", e->msg);
        assert_memory_equal(&a, &c, sizeof a);
        snprintf(path, sizeof path, "%s/bad.ini", dir);
        tu_write_file(path, k ? "[chip]\r\ntiles_per_ipu = 4\r\nbogus = 1\r\n"
                              : "[chip]\rtiles_per_ipu = 4\rbogus = 1\r");
        assert_int_equal(mach_load(&c, NULL, path, e), ERR_INPUT);
        char want[160];
        snprintf(want, sizeof want, "%s:3: error: ", path);
        if (strncmp(e->msg, want, strlen(want)) != 0)
            fail_msg("%s line ends: '%s', want '%s...'", k ? "CRLF" : "CR", e->msg, want);
    }
    free(lf);
    assert_int_equal(tu_rmdir(dir), 0);
    assert_null(mach_preset_text("mk9"));
    assert_int_equal(mach_builtin(&(mach){0}, "mk9", e), ERR_INPUT);
    assert_non_null(strstr(e->msg, "unknown machine 'mk9' (known: mk1, mk2"));
    free(e);
}

/* ---- the descriptor table and the sources ---- */

static void test_table_sane(void **state)
{
    (void)state;
    const mach_param *ps = mach_params();
    for (size_t i = 0; i < MACH_NPARAMS; i++) {
        const mach_param *p = &ps[i];
        assert_ptr_equal(mach_param_find(p->key), p);
        assert_true(p->section && p->unit && p->meaning && *p->meaning);
        if (p->type == MACH_ENUM)
            assert_non_null(p->choices);
        else
            assert_true(p->min <= p->max && p->size == (p->type == MACH_U32 ? 4u : 8u));
        assert_true(p->offset + p->size <= sizeof(mach));
        for (size_t j = 0; j < i; j++)
            assert_true(ps[j].offset + ps[j].size <= p->offset ||
                        p->offset + p->size <= ps[j].offset); /* no two share a field */
    }
    assert_null(mach_param_find("name"));
}

static int has_source(const char *c)
{
    const char *tags[] = {"[GC]", "[PAPER]", "[3P]", "[PRESS]", "[D]", "[SEED]", "assumption"};
    for (size_t k = 0; k < sizeof tags / sizeof tags[0]; k++)
        if (strstr(c, tags[k]))
            return 1;
    return 0;
}

static void test_every_field_sourced(void **state)
{
    (void)state;
    err *e = new_err();
    mach_src *src = malloc(sizeof *src);
    assert_non_null(src);
    const char *names[] = {"mk2", "mk1"};
    for (int k = 0; k < 2; k++) {
        mach m;
        assert_int_equal(mach_load(&m, src, names[k], e), ERR_OK);
        char file[64];
        snprintf(file, sizeof file, "machines/%s.ini", names[k]);
        assert_string_equal(src->file, file);
        for (size_t i = 0; i < MACH_NPARAMS; i++) {
            const char *key = mach_params()[i].key;
            if (src->line[i] <= 0 || !has_source(src->comment[i]))
                fail_msg("%s: '%s' (line %d) has no source comment: '%s'", file, key, src->line[i],
                         src->comment[i]);
        }
    }
    /* the comment is the block right above the key plus the one after its value */
    mach m;
    assert_int_equal(mach_load(&m, src, "mk2", e), ERR_OK);
    size_t ti = (size_t)(mach_param_find("tiles_per_ipu") - mach_params());
    assert_string_equal(
        src->comment[ti],
        "[GC] compile reports; [SEED] 004: a GC200 has 1472 tiles (docs/sources.md, "
        "Chip).");
    assert_int_equal(src->line[ti], line_of(mach_preset_text("mk2"), "tiles_per_ipu"));
    char *t = mk2_with("tiles_per_ipu", "tiles_per_ipu = 8   ; after the value [D]\r");
    assert_int_equal(mach_parse(&m, src, "t", "t.ini", t, e), ERR_OK);
    assert_int_equal(m.tiles_per_ipu, 8);
    assert_string_equal(src->comment[ti], "[GC] compile reports; [SEED] 004: a GC200 has 1472 "
                                          "tiles (docs/sources.md, Chip). after the value [D]");
    free(t);
    free(src);
    free(e);
}

/* ---- errors: exact messages ---- */

static void test_bad_values(void **state)
{
    (void)state;
    const char *mk2 = mach_preset_text("mk2");
    int tl = line_of(mk2, "tiles_per_ipu"), cl = line_of(mk2, "clock_hz");
    char *t;

    t = mk2_with("tiles_per_ipu", "tiles_per_ipu = 14x2");
    expect_error(t, tl, "tiles_per_ipu: '14x2' is not a whole number");
    free(t);
    t = mk2_with("tiles_per_ipu", "tiles_per_ipu = 0x10"); /* decimal only */
    expect_error(t, tl, "tiles_per_ipu: '0x10' is not a whole number");
    free(t);
    t = mk2_with("tiles_per_ipu", "tiles_per_ipu =");
    expect_error(t, tl, "tiles_per_ipu has no value (1 to 65536 tiles)");
    free(t);
    t = mk2_with("clock_hz", "clock_hz = -5");
    expect_error(t, cl, "clock_hz: -5 is negative (1000000 to 100000000000 Hz)");
    free(t);
    t = mk2_with("tiles_per_ipu", "tiles_per_ipu = 70000");
    expect_error(t, tl, "tiles_per_ipu: 70000 is out of range (1 to 65536 tiles)");
    free(t);
    t = mk2_with("tiles_per_ipu", "tiles_per_ipu = 0");
    expect_error(t, tl, "tiles_per_ipu: 0 is out of range (1 to 65536 tiles)");
    free(t);
    t = mk2_with("clock_hz", "clock_hz = 99999999999999999999999");
    expect_error(t, cl,
                 "clock_hz: 99999999999999999999999 is out of range (1000000 to "
                 "100000000000 Hz)");
    free(t);
    t = mk2_with("topology", "topology = ring");
    expect_error(t, line_of(mk2, "topology"), "topology: 'ring' is not m2000 or ladder");
    free(t);
}

static void test_bad_structure(void **state)
{
    (void)state;
    const char *mk2 = mach_preset_text("mk2");
    int tl = line_of(mk2, "tiles_per_ipu"), sl = line_of(mk2, "[sync]");
    char *t;

    t = mk2_with("tiles_per_ipu", "tiles_per_ipu = 1472\nfoo = 1");
    expect_error(t, tl + 1, "unknown machine parameter 'foo'");
    free(t);
    t = mk2_with("sync_host", "");
    expect_error(t, sl,
                 "missing key 'sync_host' in [sync] (every parameter is required; see "
                 "docs/machines.md)");
    free(t);
    t = mk2_with("[sync]", "[sink]");
    expect_error(t, sl,
                 "unknown section [sink] (known: chip, exchange, sync, system, links, "
                 "host)");
    free(t);
    t = mk2_with("tiles_per_ipu", "tiles_per_ipu = 1472\nnipus = 2");
    expect_error(t, tl + 1, "'nipus' belongs in [system], not [chip]");
    free(t);
    char msg[128];
    snprintf(msg, sizeof msg, "'tiles_per_ipu' is set twice (first on line %d)", tl);
    t = mk2_with("sram_bytes", "sram_bytes = 4096\ntiles_per_ipu = 2");
    expect_error(t, line_of(mk2, "sram_bytes") + 1, msg);
    free(t);
    snprintf(msg, sizeof msg,
             "an indented line continues the value of 'tiles_per_ipu' from "
             "line %d (remove the indentation)",
             tl);
    t = mk2_with("tiles_per_ipu", "tiles_per_ipu = 1472\n  sram_bytes = 4096");
    expect_error(t, tl + 1, msg);
    free(t);
    t = mk2_with("tiles_per_ipu", "tiles_per_ipu 1472");
    expect_error(t, tl, "expected 'key = value', '[section]' or a ';' comment");
    free(t);
    char longline[300];
    snprintf(longline, sizeof longline, "tiles_per_ipu = 1472 ; %0250d", 0);
    t = mk2_with("tiles_per_ipu", longline);
    expect_error(t, tl, "line is longer than 197 characters");
    free(t);
    expect_error("tiles_per_ipu = 4\n", 1,
                 "'tiles_per_ipu' is outside a section (it belongs "
                 "in [chip])");
    expect_error("", 1,
                 "missing key 'tiles_per_ipu' in [chip] (every parameter is required; "
                 "see docs/machines.md)");
    /* the first error by line wins, whatever found it */
    t = mk2_with("tiles_per_ipu", "tiles_per_ipu = x\n[bad");
    expect_error(t, tl, "tiles_per_ipu: 'x' is not a whole number");
    free(t);
}

static void test_files(void **state)
{
    (void)state;
    err *e = new_err();
    mach m;
    assert_int_equal(mach_load(&m, NULL, "/nonexistent/dir/my.ini", e), ERR_INPUT);
    assert_string_equal(e->msg, "/nonexistent/dir/my.ini: error: cannot open: No "
                                "such file or directory");
    assert_int_equal(mach_load(&m, NULL, "nosuch.ini", e), ERR_INPUT); /* .ini: a file */
    assert_string_equal(e->msg, "nosuch.ini: error: cannot open: No such file or "
                                "directory");

    /* a user's preset in a temp dir: named after the file, errors name its path */
    char dir[] = "/tmp/ipusim-mach-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/my-pod.ini", dir);
    char *t = mk2_with("nipus", "nipus = 16");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(t, f);
    fclose(f);
    mach_src *src = malloc(sizeof *src);
    assert_non_null(src);
    assert_int_equal(mach_load(&m, src, path, e), ERR_OK);
    assert_string_equal(m.name, "my-pod");
    assert_int_equal(m.nipus, 16);
    assert_int_equal(m.tiles_per_ipu, 1472);
    assert_string_equal(src->file, path);
    free(t);

    t = mk2_with("nipus", "nipus = many");
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(t, f);
    fclose(f);
    assert_int_equal(mach_load(&m, NULL, path, e), ERR_INPUT);
    char want[256];
    snprintf(want, sizeof want, "%s:%d: error: nipus: 'many' is not a whole number", path,
             line_of(t, "nipus"));
    assert_string_equal(e->msg, want);
    free(t);
    /* an embedded preset's errors name machines/NAME.ini: checked through mach_parse above;
     * a NUL byte in a file is refused with its line */
    f = fopen(path, "wb");
    assert_non_null(f);
    fwrite("[chip]\n\0x\n", 1, 10, f);
    fclose(f);
    assert_int_equal(mach_load(&m, NULL, path, e), ERR_INPUT);
    snprintf(want, sizeof want, "%s:2: error: contains a NUL byte; not a machine preset", path);
    assert_string_equal(e->msg, want);
    remove(path);
    rmdir(dir);
    free(src);
    free(e);
}

/* ---- overrides (--set) ---- */

static void test_set(void **state)
{
    (void)state;
    err *e = new_err();
    mach_src *src = malloc(sizeof *src);
    assert_non_null(src);
    mach m;
    assert_int_equal(mach_load(&m, src, "mk2", e), ERR_OK);
    assert_int_equal(mach_set(&m, src, "tiles_per_ipu", "64", e), ERR_OK);
    assert_int_equal(m.tiles_per_ipu, 64);
    assert_int_equal(mach_set(&m, src, "nipus", "4", e), ERR_OK);
    assert_int_equal(m.nipus, 4);
    assert_int_equal(mach_set(&m, src, "topology", "ladder", e), ERR_OK);
    assert_string_equal(m.topology, "ladder");
    assert_int_equal(mach_set(&m, src, "link_bytes_per_s", "1000000000000", e), ERR_OK);
    assert_int_equal(m.link_bytes_per_s, 1000000000000ull);
    size_t ti = (size_t)(mach_param_find("tiles_per_ipu") - mach_params());
    assert_int_equal(src->line[ti], 0);
    assert_non_null(strstr(src->comment[ti], "override (the preset had 1472: [GC]"));
    assert_int_equal(mach_set(&m, src, "tiles_per_ipu", "32", e), ERR_OK); /* again */
    assert_non_null(strstr(src->comment[ti], "the preset had 1472"));

    mach before = m;
    assert_int_equal(mach_set(&m, src, "foo", "1", e), ERR_INPUT);
    assert_string_equal(e->msg, "unknown machine parameter 'foo'");
    assert_int_equal(mach_set(&m, NULL, "nipus", "two", e), ERR_INPUT);
    assert_string_equal(e->msg, "nipus: 'two' is not a whole number");
    assert_int_equal(mach_set(&m, NULL, "nipus", "-1", e), ERR_INPUT);
    assert_string_equal(e->msg, "nipus: -1 is negative (1 to 1024 IPUs)");
    assert_int_equal(mach_set(&m, NULL, "nipus", "0", e), ERR_INPUT);
    assert_string_equal(e->msg, "nipus: 0 is out of range (1 to 1024 IPUs)");
    assert_int_equal(mach_set(&m, NULL, "topology", "torus", e), ERR_INPUT);
    assert_string_equal(e->msg, "topology: 'torus' is not m2000 or ladder");
    assert_int_equal(mach_set(&m, NULL, "name", "x", e), ERR_INPUT);
    assert_memory_equal(&m, &before, sizeof m);

    /* mach_check catches what code changed by hand */
    assert_int_equal(mach_check(&m, e), ERR_OK);
    m.tiles_per_ipu = 0;
    assert_int_equal(mach_check(&m, e), ERR_INPUT);
    assert_string_equal(e->msg, "tiles_per_ipu: 0 is out of range (1 to 65536 tiles)");
    m = before;
    strcpy(m.topology, "mesh");
    assert_int_equal(mach_check(&m, e), ERR_INPUT);
    assert_string_equal(e->msg, "topology is not m2000 or ladder");
    free(src);
    free(e);
}

/* ---- docs/machines.md lists every key as the table says ---- */

static void test_doc_matches_table(void **state)
{
    (void)state;
    FILE *f = fopen("docs/machines.md", "r");
    assert_non_null(f);
    static char doc[65536];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);
    for (size_t i = 0; i < MACH_NPARAMS; i++) {
        const mach_param *p = &mach_params()[i];
        char row[512], range[128];
        snprintf(row, sizeof row, "| `%s` | %s | %s | %s | %s |\n", p->key, p->section, p->unit,
                 mach_param_range(p, range, sizeof range), p->meaning);
        if (!strstr(doc, row))
            fail_msg("docs/machines.md lacks the row (regenerate with 'ipusim machine keys'):"
                     "\n%s",
                     row);
    }
    /* and no other rows in its "## Keys" section */
    const char *keys = strstr(doc, "\n## Keys\n");
    assert_non_null(keys);
    const char *next = strstr(keys + 1, "\n## ");
    int rows = 0;
    for (const char *s = keys; (s = strstr(s, "\n| `")) != NULL && (!next || s < next); s++)
        rows++;
    assert_int_equal(rows, MACH_NPARAMS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mk2_values),
        cmocka_unit_test(test_mk1_values),
        cmocka_unit_test(test_builtin_equals_file),
        cmocka_unit_test(test_table_sane),
        cmocka_unit_test(test_every_field_sourced),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_bad_structure),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_doc_matches_table),
    };
    return cmocka_run_group_tests_name("machine", tests, NULL, NULL);
}
