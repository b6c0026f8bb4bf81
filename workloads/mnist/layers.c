/* mlayer: convolution (unfolding + small matrix products), 2x2 max-pool fused with ReLU, linear
 * layers and softmax cross-entropy, forward and backward, in C with GCC/Clang vector types (no
 * intrinsics, no -ffast-math, no -march). Two matrix-product kernels do nearly all the work:
 * 4 x 8 tiles of C summed in registers over K (mm_acc), and eight-lane dot products (mm_nt)
 * where the contraction is long and contiguous. Summation order is fixed, so results are
 * bit-identical run to run, though not to PyTorch's (oneDNN sums in other orders). One thread
 * on purpose: it is the numerics oracle and the native speed baseline. Convolutions take a
 * stride and zero padding (the unfolding reads zeros outside the input); leaves out dilation,
 * groups and any pooling but 2x2. */
#include "workloads/mnist/layers.h"

#include <math.h>
#include <string.h>

/* Four floats in a register (GCC/Clang vector extension, no ISA intrinsics; it compiles to
 * SSE on x86-64 and NEON on arm64). aligned(4): loads and stores may be unaligned. */
typedef float v4f __attribute__((vector_size(16), aligned(4)));

static inline v4f ld4(const float *p)
{
    return *(const v4f *)p;
}
static inline void st4(float *p, v4f v)
{
    *(v4f *)p = v;
}
static inline v4f bc4(float x)
{
    return (v4f){x, x, x, x};
}

/* C[M][N] += A B[K][N], where A's element (i, k) is A[i*sai + k*sak] (so one kernel serves
 * A and A^T). A 4 x 8 tile of C is summed in registers over all of K, then added to C. */
static void mm_acc(int M, int N, int K, const float *restrict A, int sai, int sak,
                   const float *restrict B, int ldb, float *restrict C, int ldc)
{
    int i = 0;
    for (; i + 4 <= M; i += 4) {
        const float *a0 = A + (size_t)i * sai, *a1 = a0 + sai, *a2 = a1 + sai, *a3 = a2 + sai;
        int j = 0;
        for (; j + 8 <= N; j += 8) {
            v4f c00 = bc4(0), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
                c31 = c00;
            const float *b = B + j;
            for (int k = 0; k < K; k++, b += ldb) {
                const size_t ak = (size_t)k * sak;
                const v4f b0 = ld4(b), b1 = ld4(b + 4);
                v4f x = bc4(a0[ak]);
                c00 += x * b0;
                c01 += x * b1;
                x = bc4(a1[ak]);
                c10 += x * b0;
                c11 += x * b1;
                x = bc4(a2[ak]);
                c20 += x * b0;
                c21 += x * b1;
                x = bc4(a3[ak]);
                c30 += x * b0;
                c31 += x * b1;
            }
            float *c = C + (size_t)i * ldc + j;
            st4(c, ld4(c) + c00);
            st4(c + 4, ld4(c + 4) + c01);
            c += ldc;
            st4(c, ld4(c) + c10);
            st4(c + 4, ld4(c + 4) + c11);
            c += ldc;
            st4(c, ld4(c) + c20);
            st4(c + 4, ld4(c + 4) + c21);
            c += ldc;
            st4(c, ld4(c) + c30);
            st4(c + 4, ld4(c + 4) + c31);
        }
        for (; j < N; j++) {
            float c0 = 0, c1 = 0, c2 = 0, c3 = 0;
            for (int k = 0; k < K; k++) {
                const float bj = B[(size_t)k * ldb + j];
                const size_t ak = (size_t)k * sak;
                c0 += a0[ak] * bj;
                c1 += a1[ak] * bj;
                c2 += a2[ak] * bj;
                c3 += a3[ak] * bj;
            }
            C[(size_t)i * ldc + j] += c0;
            C[(size_t)(i + 1) * ldc + j] += c1;
            C[(size_t)(i + 2) * ldc + j] += c2;
            C[(size_t)(i + 3) * ldc + j] += c3;
        }
    }
    for (; i < M; i++) {
        const float *a = A + (size_t)i * sai;
        int j = 0;
        for (; j + 8 <= N; j += 8) {
            v4f c0 = bc4(0), c1 = c0;
            const float *b = B + j;
            for (int k = 0; k < K; k++, b += ldb) {
                const v4f x = bc4(a[(size_t)k * sak]);
                c0 += x * ld4(b);
                c1 += x * ld4(b + 4);
            }
            float *c = C + (size_t)i * ldc + j;
            st4(c, ld4(c) + c0);
            st4(c + 4, ld4(c + 4) + c1);
        }
        for (; j < N; j++) {
            float c0 = 0;
            for (int k = 0; k < K; k++)
                c0 += a[(size_t)k * sak] * B[(size_t)k * ldb + j];
            C[(size_t)i * ldc + j] += c0;
        }
    }
}

/* C[M][N] += A[M][K] B[K][N] */
static inline void mm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                         float *C, int ldc)
{
    mm_acc(M, N, K, A, lda, 1, B, ldb, C, ldc);
}

/* C[M][N] += A[K][M]^T B[K][N] */
static inline void mm_tn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                         float *C, int ldc)
{
    mm_acc(M, N, K, A, 1, lda, B, ldb, C, ldc);
}

/* The eight partial sums of a dot product (lanes 0-3 in lo, 4-7 in hi) reduced in a fixed
 * pairwise order, plus a tail of up to seven terms added lane by lane. */
static inline float dot_finish(v4f lo, v4f hi, const float *a, const float *b, int k, int K)
{
    float s[8];
    st4(s, lo);
    st4(s + 4, hi);
    for (int l = 0; k < K; k++, l++)
        s[l] += a[k] * b[k];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

/* C[M][N] += A[M][K] B[N][K]^T: dot products over K in eight lanes, four rows of B at a time
 * sharing each load of A. */
static void mm_nt(int M, int N, int K, const float *restrict A, int lda, const float *restrict B,
                  int ldb, float *restrict C, int ldc)
{
    const int K8 = K & ~7;
    for (int i = 0; i < M; i++) {
        const float *a = A + (size_t)i * lda;
        float *c = C + (size_t)i * ldc;
        int j = 0;
        for (; j + 4 <= N; j += 4) {
            const float *b0 = B + (size_t)j * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            v4f s00 = bc4(0), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00,
                s31 = s00;
            for (int k = 0; k < K8; k += 8) {
                const v4f x0 = ld4(a + k), x1 = ld4(a + k + 4);
                s00 += x0 * ld4(b0 + k);
                s01 += x1 * ld4(b0 + k + 4);
                s10 += x0 * ld4(b1 + k);
                s11 += x1 * ld4(b1 + k + 4);
                s20 += x0 * ld4(b2 + k);
                s21 += x1 * ld4(b2 + k + 4);
                s30 += x0 * ld4(b3 + k);
                s31 += x1 * ld4(b3 + k + 4);
            }
            c[j] += dot_finish(s00, s01, a, b0, K8, K);
            c[j + 1] += dot_finish(s10, s11, a, b1, K8, K);
            c[j + 2] += dot_finish(s20, s21, a, b2, K8, K);
            c[j + 3] += dot_finish(s30, s31, a, b3, K8, K);
        }
        for (; j < N; j++) {
            const float *b0 = B + (size_t)j * ldb;
            v4f s00 = bc4(0), s01 = s00;
            for (int k = 0; k < K8; k += 8) {
                s00 += ld4(a + k) * ld4(b0 + k);
                s01 += ld4(a + k + 4) * ld4(b0 + k + 4);
            }
            c[j] += dot_finish(s00, s01, a, b0, K8, K);
        }
    }
}

/* Sum of n floats in eight lanes, reduced as dot_finish. */
static inline float sum8(const float *restrict a, int n)
{
    v4f lo = bc4(0), hi = lo;
    int k = 0;
    for (; k + 8 <= n; k += 8) {
        lo += ld4(a + k);
        hi += ld4(a + k + 4);
    }
    float s[8];
    st4(s, lo);
    st4(s + 4, hi);
    for (int l = 0; k < n; k++, l++)
        s[l] += a[k];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

size_t mlayer_conv_col_floats(const mlayer_conv *c)
{
    return (size_t)c->cin * c->k * c->k * (size_t)mlayer_conv_ho(c) * mlayer_conv_wo(c);
}

/* GCC turns short copy loops into a memmove call per row, which costs more than the copy. */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_LIBCALL
#endif

/* Copy n floats four at a time. */
NO_LIBCALL static inline void copy_floats(float *restrict d, const float *restrict s, int n)
{
    int i = 0;
    for (; i + 4 <= n; i += 4)
        st4(d + i, ld4(s + i));
    if (i < n)
        d[i] = s[i];
    if (i + 1 < n)
        d[i + 1] = s[i + 1];
    if (i + 2 < n)
        d[i + 2] = s[i + 2];
}

/* Input element (ci, y, x) of the padded input, 0 outside the input. */
static inline float at_padded(const mlayer_conv *c, const float *x, int ci, int y, int xx)
{
    if (y < 0 || y >= c->h || xx < 0 || xx >= c->w)
        return 0.0f;
    return x[((size_t)ci * c->h + y) * c->w + xx];
}

static inline int plain(const mlayer_conv *c)
{
    return c->pad == 0 && mlayer_conv_stride(c) == 1;
}

/* col[(ci*k + ky)*k + kx][oy*wo + ox] = x[ci][oy s + ky - pad][ox s + kx - pad] (0 outside) */
NO_LIBCALL static void im2col(const mlayer_conv *c, const float *restrict x, float *restrict col)
{
    const int k = c->k, ho = mlayer_conv_ho(c), wo = mlayer_conv_wo(c), s = mlayer_conv_stride(c);
    for (int ci = 0; ci < c->cin; ci++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                if (plain(c)) {
                    const float *src = x + ((size_t)ci * c->h + ky) * c->w + kx;
                    for (int oy = 0; oy < ho; oy++, src += c->w, col += wo)
                        copy_floats(col, src, wo);
                    continue;
                }
                for (int oy = 0; oy < ho; oy++, col += wo)
                    for (int ox = 0; ox < wo; ox++)
                        col[ox] = at_padded(c, x, ci, oy * s + ky - c->pad, ox * s + kx - c->pad);
            }
}

/* The same unfolding transposed: row[oy*wo + ox][(ci*k + ky)*k + kx] (one patch per row). */
NO_LIBCALL static void im2row(const mlayer_conv *c, const float *restrict x, float *restrict row)
{
    const int k = c->k, ho = mlayer_conv_ho(c), wo = mlayer_conv_wo(c), s = mlayer_conv_stride(c);
    for (int oy = 0; oy < ho; oy++)
        for (int ox = 0; ox < wo; ox++)
            for (int ci = 0; ci < c->cin; ci++)
                for (int ky = 0; ky < k; ky++) {
                    if (plain(c))
                        copy_floats(row, x + ((size_t)ci * c->h + oy + ky) * c->w + ox, k);
                    else
                        for (int kx = 0; kx < k; kx++)
                            row[kx] =
                                at_padded(c, x, ci, oy * s + ky - c->pad, ox * s + kx - c->pad);
                    row += k;
                }
}

/* dx[ci][oy s + ky - pad][ox s + kx - pad] += dcol[...][...] (the padding's terms dropped),
 * rows in order, so the sum order is fixed. */
static void col2im(const mlayer_conv *c, const float *dcol, float *dx)
{
    const int k = c->k, ho = mlayer_conv_ho(c), wo = mlayer_conv_wo(c), s = mlayer_conv_stride(c);
    const size_t p = (size_t)ho * wo;
    memset(dx, 0, sizeof(float) * c->cin * c->h * c->w);
    for (int ci = 0; ci < c->cin; ci++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                const float *src = dcol + ((size_t)(ci * k + ky) * k + kx) * p;
                float *dst = dx + (size_t)ci * c->h * c->w;
                for (int oy = 0; oy < ho; oy++) {
                    const int y = oy * s + ky - c->pad;
                    if (y < 0 || y >= c->h)
                        continue;
                    for (int ox = 0; ox < wo; ox++) {
                        const int xx = ox * s + kx - c->pad;
                        if (xx >= 0 && xx < c->w)
                            dst[(size_t)y * c->w + xx] += src[(size_t)oy * wo + ox];
                    }
                }
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
        if (p > kk) { /* long dots over output positions (conv1: 576 vs 25) */
            im2col(c, xn, col);
            mm_nt(c->cout, kk, p, dyn, p, col, p, dw, kk);
        } else { /* many weights, short dots (conv2: 64 vs 250): register tiles */
            im2row(c, xn, col);
            mm_acc(c->cout, kk, p, dyn, p, 1, col, kk, dw, kk);
        }
        for (int co = 0; co < c->cout; co++)
            db[co] += sum8(dyn + (size_t)co * p, p);
        if (dx) {
            memset(dcol, 0, sizeof(float) * (size_t)kk * p);
            mm_tn(kk, p, c->cout, w, kk, dyn, p, dcol, p);
            col2im(c, dcol, dx + (size_t)n * c->cin * c->h * c->w);
        }
    }
}

void mlayer_pool_relu_fwd(int planes, int h, int w, const float *y, float *out, unsigned char *arg)
{
    const int ho = h / 2, wo = w / 2;
    for (int pl = 0; pl < planes; pl++) {
        const float *yp = y + (size_t)pl * h * w;
        float *op = out + (size_t)pl * ho * wo;
        unsigned char *ap = arg + (size_t)pl * ho * wo;
        for (int oy = 0; oy < ho; oy++) {
            const float *r0 = yp + (size_t)(2 * oy) * w, *r1 = r0 + w;
            for (int ox = 0; ox < wo; ox++) {
                /* a tournament of strict '>' keeps the first of equal maxima */
                const float v0 = r0[2 * ox], v1 = r0[2 * ox + 1];
                const float v2 = r1[2 * ox], v3 = r1[2 * ox + 1];
                const float top = v1 > v0 ? v1 : v0, bot = v3 > v2 ? v3 : v2;
                const unsigned char at = v1 > v0, ab = 2 + (v3 > v2);
                const float m = bot > top ? bot : top;
                const unsigned char a = bot > top ? ab : at;
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

void mlayer_linear_fwd(int batch, int in, int out, const float *x, const float *w, const float *b,
                       float *y)
{
    for (int n = 0; n < batch; n++)
        memcpy(y + (size_t)n * out, b, sizeof(float) * out);
    mm_nt(batch, out, in, x, in, w, in, y, out);
}

void mlayer_linear_bwd(int batch, int in, int out, const float *x, const float *w, const float *dy,
                       float *dw, float *db, float *dx)
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

int mlayer_argmax(const float *z, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (z[j] > z[best])
            best = j;
    return best;
}

float mlayer_xent(int batch, int classes, const float *z, const int *labels, float *dz,
                  int *correct)
{
    float total = 0.0f;
    const float scale = 1.0f / (float)batch;
    for (int n = 0; n < batch; n++) {
        const float *zn = z + (size_t)n * classes;
        const int best = mlayer_argmax(zn, classes);
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
