/* mlayer: convolution (im2col + small matrix products), 2x2 max-pool fused with ReLU, linear
 * layers and softmax cross-entropy, forward and backward, in plain C. The matrix products are
 * blocked four rows at a time with unit-stride inner loops (axpy form) or eight-lane partial
 * sums (dot form) that compilers vectorise without -ffast-math; summation order is fixed, so
 * results are deterministic, though not bit-equal to PyTorch's (oneDNN sums in another order).
 * Single-threaded on purpose: it is the numerics oracle and the native speed baseline. */
#include "workloads/mnist/layers.h"

#include <math.h>
#include <string.h>

/* C[M][N] += A[M][K] B[K][N] */
static void mm_nn(int M, int N, int K, const float *restrict A, int lda, const float *restrict B,
                  int ldb, float *restrict C, int ldc)
{
    int i = 0;
    for (; i + 4 <= M; i += 4) {
        float *restrict c0 = C + (size_t)i * ldc;
        float *restrict c1 = c0 + ldc;
        float *restrict c2 = c1 + ldc;
        float *restrict c3 = c2 + ldc;
        const float *a = A + (size_t)i * lda;
        for (int k = 0; k < K; k++) {
            const float a0 = a[k], a1 = a[lda + k], a2 = a[2 * lda + k], a3 = a[3 * lda + k];
            const float *restrict b = B + (size_t)k * ldb;
            for (int j = 0; j < N; j++) {
                const float bj = b[j];
                c0[j] += a0 * bj;
                c1[j] += a1 * bj;
                c2[j] += a2 * bj;
                c3[j] += a3 * bj;
            }
        }
    }
    for (; i < M; i++) {
        float *restrict c = C + (size_t)i * ldc;
        for (int k = 0; k < K; k++) {
            const float a0 = A[(size_t)i * lda + k];
            const float *restrict b = B + (size_t)k * ldb;
            for (int j = 0; j < N; j++)
                c[j] += a0 * b[j];
        }
    }
}

/* C[M][N] += A[K][M]^T B[K][N] */
static void mm_tn(int M, int N, int K, const float *restrict A, int lda, const float *restrict B,
                  int ldb, float *restrict C, int ldc)
{
    int i = 0;
    for (; i + 4 <= M; i += 4) {
        float *restrict c0 = C + (size_t)i * ldc;
        float *restrict c1 = c0 + ldc;
        float *restrict c2 = c1 + ldc;
        float *restrict c3 = c2 + ldc;
        for (int k = 0; k < K; k++) {
            const float *a = A + (size_t)k * lda + i;
            const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
            const float *restrict b = B + (size_t)k * ldb;
            for (int j = 0; j < N; j++) {
                const float bj = b[j];
                c0[j] += a0 * bj;
                c1[j] += a1 * bj;
                c2[j] += a2 * bj;
                c3[j] += a3 * bj;
            }
        }
    }
    for (; i < M; i++) {
        float *restrict c = C + (size_t)i * ldc;
        for (int k = 0; k < K; k++) {
            const float a0 = A[(size_t)k * lda + i];
            const float *restrict b = B + (size_t)k * ldb;
            for (int j = 0; j < N; j++)
                c[j] += a0 * b[j];
        }
    }
}

/* Sum of a[k] b[k] in eight interleaved partial sums, then a fixed pairwise tree. */
static inline float dot8(const float *restrict a, const float *restrict b, int K)
{
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int k = 0;
    for (; k + 8 <= K; k += 8)
        for (int l = 0; l < 8; l++)
            s[l] += a[k + l] * b[k + l];
    for (int l = 0; k < K; k++, l++)
        s[l] += a[k] * b[k];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

/* C[M][N] += A[M][K] B[N][K]^T */
static void mm_nt(int M, int N, int K, const float *restrict A, int lda, const float *restrict B,
                  int ldb, float *restrict C, int ldc)
{
    for (int i = 0; i < M; i++) {
        const float *a = A + (size_t)i * lda;
        float *c = C + (size_t)i * ldc;
        for (int j = 0; j < N; j++)
            c[j] += dot8(a, B + (size_t)j * ldb, K);
    }
}

/* Sum of n floats, eight partial sums. */
static inline float sum8(const float *restrict a, int n)
{
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int k = 0;
    for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; l++)
            s[l] += a[k + l];
    for (int l = 0; k < n; k++, l++)
        s[l] += a[k];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

size_t mlayer_conv_col_floats(const mlayer_conv *c)
{
    return (size_t)c->cin * c->k * c->k * (size_t)mlayer_conv_ho(c) * mlayer_conv_wo(c);
}

/* col[(ci*k + ky)*k + kx][oy*wo + ox] = x[ci][oy + ky][ox + kx] */
static void im2col(const mlayer_conv *c, const float *x, float *col)
{
    const int k = c->k, ho = mlayer_conv_ho(c), wo = mlayer_conv_wo(c);
    const size_t p = (size_t)ho * wo;
    for (int ci = 0; ci < c->cin; ci++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                float *dst = col + ((size_t)(ci * k + ky) * k + kx) * p;
                const float *src = x + ((size_t)ci * c->h + ky) * c->w + kx;
                for (int oy = 0; oy < ho; oy++)
                    memcpy(dst + (size_t)oy * wo, src + (size_t)oy * c->w, sizeof(float) * wo);
            }
}

/* dx[ci][oy + ky][ox + kx] += dcol[...][...], rows in order, so the sum order is fixed. */
static void col2im(const mlayer_conv *c, const float *dcol, float *dx)
{
    const int k = c->k, ho = mlayer_conv_ho(c), wo = mlayer_conv_wo(c);
    const size_t p = (size_t)ho * wo;
    memset(dx, 0, sizeof(float) * c->cin * c->h * c->w);
    for (int ci = 0; ci < c->cin; ci++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                const float *src = dcol + ((size_t)(ci * k + ky) * k + kx) * p;
                float *dst = dx + ((size_t)ci * c->h + ky) * c->w + kx;
                for (int oy = 0; oy < ho; oy++)
                    for (int ox = 0; ox < wo; ox++)
                        dst[(size_t)oy * c->w + ox] += src[(size_t)oy * wo + ox];
            }
}

void mlayer_conv_fwd(const mlayer_conv *c, int batch, const float *x, const float *w,
                     const float *b, float *y, float *col)
{
    const int kk = c->cin * c->k * c->k, p = mlayer_conv_ho(c) * mlayer_conv_wo(c);
    for (int n = 0; n < batch; n++) {
        const float *xn = x + (size_t)n * c->cin * c->h * c->w;
        float *yn = y + (size_t)n * c->cout * p;
        im2col(c, xn, col);
        for (int co = 0; co < c->cout; co++)
            for (int j = 0; j < p; j++)
                yn[(size_t)co * p + j] = b[co];
        mm_nn(c->cout, p, kk, w, kk, col, p, yn, p);
    }
}

void mlayer_conv_bwd(const mlayer_conv *c, int batch, const float *x, const float *w,
                     const float *dy, float *dw, float *db, float *dx, float *col, float *dcol)
{
    const int kk = c->cin * c->k * c->k, p = mlayer_conv_ho(c) * mlayer_conv_wo(c);
    for (int n = 0; n < batch; n++) {
        const float *xn = x + (size_t)n * c->cin * c->h * c->w;
        const float *dyn = dy + (size_t)n * c->cout * p;
        im2col(c, xn, col);
        mm_nt(c->cout, kk, p, dyn, p, col, p, dw, kk);
        for (int co = 0; co < c->cout; co++)
            db[co] += sum8(dyn + (size_t)co * p, p);
        if (dx) {
            memset(dcol, 0, sizeof(float) * (size_t)kk * p);
            mm_tn(kk, p, c->cout, w, kk, dyn, p, dcol, p);
            col2im(c, dcol, dx + (size_t)n * c->cin * c->h * c->w);
        }
    }
}

void mlayer_pool_relu_fwd(int planes, int h, int w, const float *y, float *out,
                          unsigned char *arg)
{
    const int ho = h / 2, wo = w / 2;
    for (int pl = 0; pl < planes; pl++) {
        const float *yp = y + (size_t)pl * h * w;
        float *op = out + (size_t)pl * ho * wo;
        unsigned char *ap = arg + (size_t)pl * ho * wo;
        for (int oy = 0; oy < ho; oy++) {
            const float *r0 = yp + (size_t)(2 * oy) * w, *r1 = r0 + w;
            for (int ox = 0; ox < wo; ox++) {
                float m = r0[2 * ox];
                unsigned char a = 0;
                if (r0[2 * ox + 1] > m) {
                    m = r0[2 * ox + 1];
                    a = 1;
                }
                if (r1[2 * ox] > m) {
                    m = r1[2 * ox];
                    a = 2;
                }
                if (r1[2 * ox + 1] > m) {
                    m = r1[2 * ox + 1];
                    a = 3;
                }
                op[oy * wo + ox] = m > 0.0f ? m : 0.0f;
                ap[oy * wo + ox] = a;
            }
        }
    }
}

void mlayer_pool_relu_bwd(int planes, int h, int w, const float *dout, const float *out,
                          const unsigned char *arg, float *dy)
{
    const int ho = h / 2, wo = w / 2;
    memset(dy, 0, sizeof(float) * (size_t)planes * h * w);
    for (int pl = 0; pl < planes; pl++) {
        float *dp = dy + (size_t)pl * h * w;
        const size_t o = (size_t)pl * ho * wo;
        for (int oy = 0; oy < ho; oy++)
            for (int ox = 0; ox < wo; ox++) {
                const size_t i = o + (size_t)oy * wo + ox;
                if (out[i] > 0.0f) {
                    const int a = arg[i];
                    dp[(size_t)(2 * oy + (a >> 1)) * w + 2 * ox + (a & 1)] = dout[i];
                }
            }
    }
}

void mlayer_linear_fwd(int batch, int in, int out, const float *x, const float *w,
                       const float *b, float *y)
{
    for (int n = 0; n < batch; n++)
        memcpy(y + (size_t)n * out, b, sizeof(float) * out);
    mm_nt(batch, out, in, x, in, w, in, y, out);
}

void mlayer_linear_bwd(int batch, int in, int out, const float *x, const float *w,
                       const float *dy, float *dw, float *db, float *dx)
{
    mm_tn(out, in, batch, dy, out, x, in, dw, in);
    for (int n = 0; n < batch; n++) {
        const float *d = dy + (size_t)n * out;
        for (int o = 0; o < out; o++)
            db[o] += d[o];
    }
    if (dx) {
        memset(dx, 0, sizeof(float) * (size_t)batch * in);
        mm_nn(batch, in, out, dy, out, w, in, dx, in);
    }
}

void mlayer_relu_fwd(size_t n, float *x)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void mlayer_relu_bwd(size_t n, const float *out, float *dx)
{
    for (size_t i = 0; i < n; i++)
        dx[i] = out[i] > 0.0f ? dx[i] : 0.0f;
}

float mlayer_xent(int batch, int classes, const float *z, const int *labels, float *dz,
                  int *correct)
{
    float total = 0.0f;
    const float scale = 1.0f / (float)batch;
    for (int n = 0; n < batch; n++) {
        const float *zn = z + (size_t)n * classes;
        int best = 0;
        for (int j = 1; j < classes; j++)
            if (zn[j] > zn[best])
                best = j;
        const float m = zn[best];
        float s = 0.0f;
        for (int j = 0; j < classes; j++)
            s += expf(zn[j] - m);
        const float lse = logf(s);
        total += lse - (zn[labels[n]] - m);
        if (correct && best == labels[n])
            (*correct)++;
        if (dz) {
            float *d = dz + (size_t)n * classes;
            for (int j = 0; j < classes; j++) {
                const float p = expf(zn[j] - m) / s;
                d[j] = (p - (j == labels[n] ? 1.0f : 0.0f)) * scale;
            }
        }
    }
    return total / (float)batch;
}
