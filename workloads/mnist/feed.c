/* mfeed: the reference trainer's order of micro-batches, as infeed buffers (feed.h).
 *
 * The shuffle of epoch e depends on the generator's state after epochs 1..e-1, so the feed
 * keeps the generator and the current epoch's permutation and moves forward; a request for an
 * earlier epoch starts again from the seed. The current buffer is kept whole, so the host's
 * per-slice fills (offset, bytes) cost one gather per buffer. Left out: the test set (the
 * test pass reads it in order, as mref_test). */
#include "workloads/mnist/feed.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "workloads/mnist/rng.h"

struct mfeed {
    const mdata_split *train;
    uint64_t seed;
    int epochs, batch;
    uint64_t per_epoch; /* micro-batches an epoch gives */
    mrng rng;
    uint32_t *perm;
    int epoch; /* the epoch perm holds (0: none yet) */
    float lut[256];
    uint16_t half[256]; /* lut's values as binary16 (MFEED_F16) */
    uint8_t *buf;       /* buffer `cur`, whole */
    uint64_t cur;
    int have;
    mfeed_fmt fmt; /* how the images are served */
};

mfeed *mfeed_new(const mdata_split *train, uint64_t seed, int epochs, int batch, int per_call)
{
    mfeed *f = xcalloc(1, sizeof *f);
    f->train = train;
    f->seed = seed;
    f->epochs = epochs;
    f->batch = batch;
    uint64_t calls = train->n / ((uint64_t)batch * (uint64_t)per_call);
    f->per_epoch = calls * (uint64_t)per_call;
    f->perm = xmalloc((train->n ? train->n : 1) * sizeof *f->perm);
    mdata_norm_table(f->lut);
    mdata_half_table(f->lut, f->half);
    f->buf = xmalloc(mfeed_bytes(f));
    return f;
}

void mfeed_free(mfeed *f)
{
    if (!f)
        return;
    free(f->perm);
    free(f->buf);
    free(f);
}

uint64_t mfeed_buffers(const mfeed *f)
{
    return f->per_epoch * (uint64_t)f->epochs;
}

uint32_t mfeed_bytes(const mfeed *f)
{
    static const uint32_t px_bytes[] = {[MFEED_F32] = 4, [MFEED_U8] = 1, [MFEED_F16] = 2};
    return (uint32_t)f->batch * (MDATA_PIXELS * px_bytes[f->fmt] + 4);
}

void mfeed_format(mfeed *f, mfeed_fmt fmt)
{
    f->fmt = fmt;
    f->have = 0;
    free(f->buf);
    f->buf = xmalloc(mfeed_bytes(f));
}

/* Shuffle up to epoch e (1-based), from the seed again if e is behind. */
static void to_epoch(mfeed *f, int e)
{
    if (e < f->epoch || f->epoch == 0) {
        mrng_seed(&f->rng, f->seed, MRNG_STREAM_DATA);
        f->epoch = 0;
    }
    while (f->epoch < e) {
        for (size_t i = 0; i < f->train->n; i++)
            f->perm[i] = (uint32_t)i;
        mrng_shuffle(&f->rng, f->perm, f->train->n);
        f->epoch++;
    }
}

/* Make buffer k whole in f->buf. */
static void make(mfeed *f, uint64_t k)
{
    uint32_t bytes = mfeed_bytes(f);
    memset(f->buf, 0, bytes);
    if (k < mfeed_buffers(f)) {
        to_epoch(f, (int)(k / f->per_epoch) + 1);
        const uint32_t *index = f->perm + (k % f->per_epoch) * (uint64_t)f->batch;
        size_t img = mfeed_bytes(f) - 4 * (size_t)f->batch;
        int *labels = xmalloc((size_t)f->batch * sizeof *labels);
        if (f->fmt == MFEED_U8) /* the dataset's bytes, as a DataLoader without the transforms */
            for (int i = 0; i < f->batch; i++) {
                memcpy(f->buf + (size_t)i * MDATA_PIXELS,
                       f->train->images + (size_t)index[i] * MDATA_PIXELS, MDATA_PIXELS);
                labels[i] = f->train->labels[index[i]];
            }
        else if (f->fmt == MFEED_F16)
            mdata_gather_f16(f->train, index, (size_t)f->batch, f->half, f->buf, labels);
        else
            mdata_gather(f->train, index, (size_t)f->batch, f->lut, (float *)(void *)f->buf,
                         labels);
        for (int i = 0; i < f->batch; i++) {
            int32_t l = labels[i];
            memcpy(f->buf + img + 4 * (size_t)i, &l, 4);
        }
        free(labels);
    }
    f->cur = k;
    f->have = 1;
}

void mfeed_fill(mfeed *f, uint64_t k, uint64_t offset, uint8_t *dst, uint32_t bytes)
{
    if (!f->have || f->cur != k)
        make(f, k);
    uint32_t total = mfeed_bytes(f);
    uint32_t have =
        offset < total ? (uint32_t)(total - offset < bytes ? total - offset : bytes) : 0;
    memcpy(dst, f->buf + (have ? offset : 0), have);
    memset(dst + have, 0, bytes - have); /* past the buffer's end: zeros */
}
