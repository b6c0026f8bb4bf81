/* mfeed: the training images and labels in the order the reference trainer sees them, as the
 * host's infeed serves them to a simulated IPU: micro-batch k of the run is buffer k.
 *
 * Each epoch shuffles the training set with stream 1 of the seed (mrng_shuffle, as
 * mref_train) and takes host calls of batch x gradient accumulation x device iterations
 * images; the images left over at an epoch's end are skipped, as the reference skips them.
 * A buffer holds the micro-batch's normalised images (batch x 784 fp32, row-major; or as
 * mfeed_format says) then its labels (batch int32). */
#ifndef IPUSIM_MNIST_FEED_H
#define IPUSIM_MNIST_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "workloads/mnist/data.h"

typedef struct mfeed mfeed;

/* A feed over `train` for `epochs` epochs of host calls of batch x per_call micro-batches
 * (per_call = gradient accumulation x device iterations), seeded by `seed`. */
mfeed *mfeed_new(const mdata_split *train, uint64_t seed, int epochs, int batch, int per_call);
void mfeed_free(mfeed *f);
/* Micro-batches in the whole run. */
uint64_t mfeed_buffers(const mfeed *f);
/* How a buffer holds the images: normalised fp32 (the default); their bytes (batch x 784 u8),
 * to be normalised on the device (mnet's --dtype u8); or the normalised fp32 rounded to
 * binary16 (mdata_gather_f16: batch x 784 halves, two to a word; --dtype fp16). */
typedef enum mfeed_fmt { MFEED_F32, MFEED_U8, MFEED_F16 } mfeed_fmt;

/* Serve the images as fmt; call before the first fill. */
void mfeed_format(mfeed *f, mfeed_fmt fmt);
/* Bytes of one buffer: batch x (784 x 4 + 4), batch x (784 + 4) as u8, batch x (784 x 2 + 4)
 * as f16. */
uint32_t mfeed_bytes(const mfeed *f);
/* Write `bytes` bytes of buffer k from byte `offset` (a buffer past the run is zeros). Buffers
 * are made in order; asking for an earlier epoch's buffer again re-shuffles from the start. */
void mfeed_fill(mfeed *f, uint64_t k, uint64_t offset, uint8_t *dst, uint32_t bytes);

#endif
