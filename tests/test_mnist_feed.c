/* test_mnist_feed: the infeed's micro-batches are the reference trainer's, in its order.
 *
 * On a synthetic training set of 250 images (batch 5, 4 micro-batches a host call: 12 calls
 * an epoch, 10 images left over), buffer k of a 2-epoch run must hold the images
 * perm_e[(k mod 48) x 5 + i] normalised as ((byte / 255) - 0.1307) / 0.3081 in fp32, then
 * their labels as int32, where perm_e is epoch e's Fisher-Yates shuffle of 0..249 from the
 * data stream of the seed (recomputed here with the generator, independently of the feed's
 * bookkeeping); read in slices of odd sizes as the host's loaders do, in order and out of
 * order (going back an epoch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "workloads/mnist/feed.h"
#include "workloads/mnist/rng.h"

enum { N = 250, B = 5, PER_CALL = 4, EPOCHS = 2, PER_EPOCH = 48 };

static void expect_buffer(const mdata_split *s, uint64_t seed, uint64_t k, const uint8_t *got)
{
    uint32_t perm[N];
    mrng r;
    mrng_seed(&r, seed, MRNG_STREAM_DATA);
    for (uint64_t e = 0; e <= k / PER_EPOCH; e++) {
        for (uint32_t i = 0; i < N; i++)
            perm[i] = i;
        mrng_shuffle(&r, perm, N);
    }
    for (int i = 0; i < B; i++) {
        uint32_t img = perm[(k % PER_EPOCH) * B + (uint64_t)i];
        for (int p = 0; p < MDATA_PIXELS; p++) {
            float want =
                ((float)s->images[(size_t)img * MDATA_PIXELS + p] / 255.0f - 0.1307f) / 0.3081f;
            assert_memory_equal(got + ((size_t)i * MDATA_PIXELS + p) * 4, &want, 4);
        }
        int32_t lab = s->labels[img];
        assert_memory_equal(got + (size_t)B * MDATA_PIXELS * 4 + 4 * (size_t)i, &lab, 4);
    }
}

static void test_order(void **state)
{
    (void)state;
    static unsigned char images[N * MDATA_PIXELS], labels[N];
    uint64_t z = 12345;
    for (size_t i = 0; i < sizeof images; i++) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        images[i] = (unsigned char)(z >> 56);
    }
    for (int i = 0; i < N; i++)
        labels[i] = (unsigned char)(i * 7 % 10);
    mdata_split s = {N, images, labels};
    mfeed *f = mfeed_new(&s, 7, EPOCHS, B, PER_CALL);
    assert_int_equal(mfeed_buffers(f), EPOCHS * PER_EPOCH);
    uint32_t bytes = mfeed_bytes(f);
    assert_int_equal(bytes, B * (784 * 4 + 4));
    uint8_t *buf = malloc(bytes);
    static const uint64_t order[] = {0, 1, 47, 48, 95, 3, 60};
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++) {
        for (uint32_t at = 0; at < bytes;) { /* slices of 1001 bytes */
            uint32_t n = bytes - at < 1001 ? bytes - at : 1001;
            mfeed_fill(f, order[o], at, buf + at, n);
            at += n;
        }
        expect_buffer(&s, 7, order[o], buf);
    }
    uint8_t tail[16]; /* a piece over the end of buffer 60 (in buf, checked): its last bytes,
                         then zeros */
    memset(tail, 0xa5, sizeof tail);
    mfeed_fill(f, 60, bytes - 8, tail, 16);
    assert_memory_equal(tail, buf + bytes - 8, 8);
    for (int i = 8; i < 16; i++)
        assert_int_equal(tail[i], 0);
    memset(tail, 0xa5, sizeof tail);
    mfeed_fill(f, 60, bytes + 100, tail, 16); /* wholly past it */
    for (int i = 0; i < 16; i++)
        assert_int_equal(tail[i], 0);
    mfeed_fill(f, 96, 0, buf, bytes); /* past the run: zeros */
    for (uint32_t i = 0; i < bytes; i++)
        assert_int_equal(buf[i], 0);
    free(buf);
    mfeed_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_order)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
