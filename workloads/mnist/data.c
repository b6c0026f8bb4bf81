/* mdata: loads MNIST-format datasets from IDX files and normalises pixels. It keeps images as
 * bytes (60,000 x 784 B = 47 MB for the full set) and normalises per batch through a 256-entry
 * table computed with the same fp32 operations as torchvision, so the floats equal PyTorch's
 * bit for bit; for an fp16 infeed it rounds those floats to binary16 (the ISA's conversion,
 * nearest even). Leaves out: data augmentation and any image size other than 28x28. */
#include "workloads/mnist/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "isa/interp.h"

static const char *const file_base[4] = {
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
};

int mdata_load_pair(const char *images_path, const char *labels_path, mdata_split *s,
                    idx_array *img, idx_array *lab, err *e)
{
    memset(s, 0, sizeof *s);
    if (idx_read(images_path, img, e))
        return ERR_INPUT;
    if (img->type != IDX_U8 || img->ndim != 3) {
        err_set(e, ERR_INPUT,
                "%s: expected u8 images of N x %d x %d (IDX type 0x08, 3 dimensions) at byte "
                "offset 2, found type 0x%02x with %d dimensions",
                images_path, MDATA_ROWS, MDATA_COLS, img->type, img->ndim);
        idx_free(img);
        return ERR_INPUT;
    }
    if (img->dims[1] != MDATA_ROWS || img->dims[2] != MDATA_COLS) { /* sizes at offsets 8, 12 */
        err_set(e, ERR_INPUT,
                "%s: images of %ux%u pixels at byte offset 8, expected %dx%d (MNIST's size)",
                images_path, img->dims[1], img->dims[2], MDATA_ROWS, MDATA_COLS);
        idx_free(img);
        return ERR_INPUT;
    }
    if (idx_read(labels_path, lab, e)) {
        idx_free(img);
        return ERR_INPUT;
    }
    int rc = 0;
    if (lab->type != IDX_U8 || lab->ndim != 1)
        rc = err_set(e, ERR_INPUT,
                     "%s: expected u8 labels of N (IDX type 0x08, 1 dimension) at byte offset 2, "
                     "found type 0x%02x with %d dimensions",
                     labels_path, lab->type, lab->ndim);
    else if (lab->dims[0] != img->dims[0])
        rc = err_set(e, ERR_INPUT, "%s: %u labels at byte offset 4, but %s has %u images",
                     labels_path, lab->dims[0], images_path, img->dims[0]);
    for (size_t i = 0; rc == 0 && i < lab->count; i++)
        if (lab->data[i] >= MDATA_CLASSES)
            rc = err_set(e, ERR_INPUT, "%s: label %u at byte offset %zu is not in 0..%d",
                         labels_path, lab->data[i], lab->data_offset + i, MDATA_CLASSES - 1);
    if (rc) {
        idx_free(img);
        idx_free(lab);
        return rc;
    }
    s->n = img->dims[0];
    s->images = img->data;
    s->labels = lab->data;
    return 0;
}

/* dir/base, or dir/base.gz when only that exists (malloc'd; no length limit). */
static char *find_file(const char *dir, const char *base)
{
    struct stat st;
    size_t n = strlen(dir) + strlen(base) + 5;
    char *out = xmalloc(n);
    snprintf(out, n, "%s/%s", dir, base);
    if (stat(out, &st) == 0)
        return out;
    snprintf(out, n, "%s/%s.gz", dir, base);
    if (stat(out, &st) == 0)
        return out;
    snprintf(out, n, "%s/%s", dir, base); /* so the error names the plain name */
    return out;
}

int mdata_load(mdata *d, const char *dir, err *e)
{
    memset(d, 0, sizeof *d);
    struct stat st;
    if (stat(dir, &st) != 0 && errno == ENOENT)
        return err_set(e, ERR_INPUT, "dataset directory '%s' does not exist", dir);
    if (stat(dir, &st) != 0)
        return err_set(e, ERR_INPUT, "dataset directory '%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return err_set(e, ERR_INPUT, "dataset '%s' is not a directory", dir);
    char *path[4];
    for (int i = 0; i < 4; i++)
        path[i] = find_file(dir, file_base[i]);
    int rc = 0;
    if (mdata_load_pair(path[0], path[1], &d->train, &d->files[0], &d->files[1], e))
        rc = ERR_INPUT;
    else if (mdata_load_pair(path[2], path[3], &d->test, &d->files[2], &d->files[3], e)) {
        mdata_free(d);
        rc = ERR_INPUT;
    }
    for (int i = 0; i < 4; i++)
        free(path[i]);
    return rc;
}

void mdata_free(mdata *d)
{
    for (int i = 0; i < 4; i++)
        idx_free(&d->files[i]);
    memset(d, 0, sizeof *d);
}

void mdata_norm_table(float lut[256])
{
    for (int v = 0; v < 256; v++) {
        /* ToTensor: byte.float().div(255); Normalize: sub_(mean).div_(std), all fp32. */
        float t = (float)v / 255.0f;
        float c = t - MDATA_MEAN;
        lut[v] = c / MDATA_STD;
    }
}

void mdata_gather(const mdata_split *s, const uint32_t *index, size_t count, const float lut[256],
                  float *x, int *labels)
{
    for (size_t b = 0; b < count; b++) {
        const unsigned char *img = s->images + (size_t)index[b] * MDATA_PIXELS;
        float *o = x + b * MDATA_PIXELS;
        for (int p = 0; p < MDATA_PIXELS; p++)
            o[p] = lut[img[p]];
        labels[b] = s->labels[index[b]];
    }
}

void mdata_half_table(const float lut[256], uint16_t half[256])
{
    for (int v = 0; v < 256; v++) {
        uint32_t bits;
        memcpy(&bits, &lut[v], 4);
        half[v] = (uint16_t)isa_float_bits_to_half(bits);
    }
}

void mdata_gather_f16(const mdata_split *s, const uint32_t *index, size_t count,
                      const uint16_t half[256], uint8_t *x, int *labels)
{
    for (size_t b = 0; b < count; b++) {
        const unsigned char *img = s->images + (size_t)index[b] * MDATA_PIXELS;
        uint8_t *o = x + b * 2 * MDATA_PIXELS;
        for (int p = 0; p < MDATA_PIXELS; p++) {
            o[2 * p] = (uint8_t)(half[img[p]] & 0xffu);
            o[2 * p + 1] = (uint8_t)(half[img[p]] >> 8);
        }
        labels[b] = s->labels[index[b]];
    }
}
