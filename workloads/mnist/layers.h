/* mlayer: the forward and backward kernels of the tutorial network, in fp32 on the host.
 *
 * Tensors are dense and row-major, batch first, PyTorch's layouts: activations [B][C][H][W],
 * conv weights [Cout][Cin][K][K], linear weights [out][in]. Backward kernels ADD into weight
 * and bias gradients (so micro-batches accumulate) and OVERWRITE input gradients. Every sum
 * runs in a fixed order, so results are bit-identical from run to run. */
#ifndef IPUSIM_MNIST_LAYERS_H
#define IPUSIM_MNIST_LAYERS_H

#include <stddef.h>

/* A convolution (nn.Conv2d(cin, cout, k, stride, padding)): zero padding of `pad` rows and
 * columns on every side, the kernel moved `stride` positions a step (0 is read as 1, so that
 * {cin, h, w, cout, k} is nn.Conv2d(cin, cout, k)). */
typedef struct mlayer_conv {
    int cin, h, w;   /* input planes and size */
    int cout, k;     /* output planes, square kernel */
    int stride, pad; /* 0 or 1: stride 1; pad: zeros on each side */
} mlayer_conv;

static inline int mlayer_conv_stride(const mlayer_conv *c)
{
    return c->stride > 1 ? c->stride : 1;
}
static inline int mlayer_conv_ho(const mlayer_conv *c)
{
    return (c->h + 2 * c->pad - c->k) / mlayer_conv_stride(c) + 1;
}
static inline int mlayer_conv_wo(const mlayer_conv *c)
{
    return (c->w + 2 * c->pad - c->k) / mlayer_conv_stride(c) + 1;
}
/* Floats of the per-image unfolded-input scratch buffer (col and dcol each). */
size_t mlayer_conv_col_floats(const mlayer_conv *c);

/* y[B][cout][ho][wo] = conv(x) + b. col: scratch of mlayer_conv_col_floats. */
void mlayer_conv_fwd(const mlayer_conv *c, int batch, const float *x, const float *w,
                     const float *b, float *y, float *col);
/* dw += dL/dw, db += dL/db; dx = dL/dx unless dx is NULL (then dcol may be NULL too). */
void mlayer_conv_bwd(const mlayer_conv *c, int batch, const float *x, const float *w,
                     const float *dy, float *dw, float *db, float *dx, float *col, float *dcol);

/* nn.MaxPool2d(2) then nn.ReLU over `planes` planes of h x w (both even): out[planes][h/2][w/2],
 * arg = position (0..3, row-major in the window) of the max; ties keep the first, as PyTorch. */
void mlayer_pool_relu_fwd(int planes, int h, int w, const float *y, float *out, unsigned char *arg);
/* dy[planes][h][w] = the gradient routed back to each window's max where out > 0. */
void mlayer_pool_relu_bwd(int planes, int h, int w, const float *dout, const float *out,
                          const unsigned char *arg, float *dy);

/* y[B][out] = x[B][in] w[out][in]^T + b. */
void mlayer_linear_fwd(int batch, int in, int out, const float *x, const float *w, const float *b,
                       float *y);
/* dw += dy^T x, db += column sums of dy; dx = dy w unless dx is NULL. */
void mlayer_linear_bwd(int batch, int in, int out, const float *x, const float *w, const float *dy,
                       float *dw, float *db, float *dx);

/* In-place ReLU, and its backward from the output: dx[i] = out[i] > 0 ? dx[i] : 0. */
void mlayer_relu_fwd(size_t n, float *x);
void mlayer_relu_bwd(size_t n, const float *out, float *dx);

/* The index of the first largest of z[0..n) (ties: the first), as argmax is taken for the
 * accuracy (n >= 1). */
int mlayer_argmax(const float *z, int n);

/* nn.CrossEntropyLoss (mean over the batch) on logits z[B][classes]. Returns the mean loss;
 * dz (if not NULL) = (softmax(z) - onehot) / batch; *correct (if not NULL) += the number of
 * rows whose first largest logit is the label. */
float mlayer_xent(int batch, int classes, const float *z, const int *labels, float *dz,
                  int *correct);

#endif
