/* Tests of the MNIST reference kernels (workloads/mnist/layers.h) and network (mref.h):
 * forward results against naive loops in double precision, and finite-difference gradient
 * checks of every layer (convolution, max-pool + ReLU, linear, ReLU, cross-entropy) and of the
 * whole network, with odd shapes that exercise every remainder path of the blocked kernels.
 *
 * Finite differences: a layer's output is reduced to L = sum(r * out) with fixed random r
 * (computed in double), so backward with dout = r must give dL/dinput; central differences
 * are exact for the (bi)linear layers up to fp32 rounding. Inputs to max-pool and ReLU are
 * spread at least 0.01 apart and away from 0, so no step of h crosses a kink. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/mnist/data.h"
#include "workloads/mnist/layers.h"
#include "workloads/mnist/mref.h"
#include "workloads/mnist/rng.h"

static float *randv(mrng *r, size_t n, float lo, float hi)
{
    float *v = malloc(sizeof(float) * (n ? n : 1));
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = mrng_uniform(r, lo, hi);
    return v;
}

/* Values 0.01 apart in a random order, none within 0.005 of zero. */
static float *spread(mrng *r, size_t n)
{
    uint32_t *perm = malloc(sizeof(uint32_t) * n);
    float *v = malloc(sizeof(float) * n);
    assert_non_null(perm);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    mrng_shuffle(r, perm, n);
    for (size_t i = 0; i < n; i++)
        v[i] = ((float)perm[i] - (float)(n / 2)) * 0.01f + 0.005f;
    free(perm);
    return v;
}

static double dotd(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* |a - b| <= atol + rtol * max(|a|, |b|) */
static void assert_close(double a, double b, double atol, double rtol, const char *what, size_t i)
{
    double tol = atol + rtol * fmax(fabs(a), fabs(b));
    if (!(fabs(a - b) <= tol))
        fail_msg("%s[%zu]: %.8g vs %.8g (tolerance %.3g)", what, i, a, b, tol);
}

/* ---- convolution ---- */

static void conv_naive(const mlayer_conv *c, int batch, const float *x, const float *w,
                       const float *b, double *y)
{
    int ho = mlayer_conv_ho(c), wo = mlayer_conv_wo(c);
    for (int n = 0; n < batch; n++)
        for (int co = 0; co < c->cout; co++)
            for (int oy = 0; oy < ho; oy++)
                for (int ox = 0; ox < wo; ox++) {
                    double s = b[co];
                    const int st = c->stride > 1 ? c->stride : 1;
                    for (int ci = 0; ci < c->cin; ci++)
                        for (int ky = 0; ky < c->k; ky++)
                            for (int kx = 0; kx < c->k; kx++) {
                                /* the padded input: zero outside */
                                int iy = oy * st + ky - c->pad, ix = ox * st + kx - c->pad;
                                if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w)
                                    continue;
                                s += (double)x[((n * c->cin + ci) * c->h + iy) * c->w + ix] *
                                     w[((co * c->cin + ci) * c->k + ky) * c->k + kx];
                            }
                    y[((n * c->cout + co) * ho + oy) * wo + ox] = s;
                }
}

/* L = sum(r * conv(x; w, b)) in double, from the fast forward. */
static double conv_loss(const mlayer_conv *c, int batch, const float *x, const float *w,
                        const float *b, const float *r, float *y, float *col)
{
    mlayer_conv_fwd(c, batch, x, w, b, y, col);
    return dotd(r, y, (size_t)batch * c->cout * mlayer_conv_ho(c) * mlayer_conv_wo(c));
}

/* Checks every stride-th weight and input element (all biases). */
static void check_conv(const mlayer_conv *c, int batch, size_t stride)
{
    mrng rg;
    mrng_seed(&rg, 42, 7);
    const size_t nx = (size_t)batch * c->cin * c->h * c->w;
    const size_t nw = (size_t)c->cout * c->cin * c->k * c->k;
    const size_t ny = (size_t)batch * c->cout * mlayer_conv_ho(c) * mlayer_conv_wo(c);
    float *x = randv(&rg, nx, -1, 1), *w = randv(&rg, nw, -0.5f, 0.5f);
    float *b = randv(&rg, (size_t)c->cout, -0.5f, 0.5f), *r = randv(&rg, ny, -1, 1);
    float *y = malloc(sizeof(float) * ny), *col = malloc(sizeof(float) * mlayer_conv_col_floats(c));
    float *dcol = malloc(sizeof(float) * mlayer_conv_col_floats(c));
    float *dw = calloc(nw, sizeof(float)), *db = calloc((size_t)c->cout, sizeof(float));
    float *dx = malloc(sizeof(float) * nx);
    double *yref = malloc(sizeof(double) * ny);

    /* forward against naive loops */
    mlayer_conv_fwd(c, batch, x, w, b, y, col);
    conv_naive(c, batch, x, w, b, yref);
    for (size_t i = 0; i < ny; i++)
        assert_close(y[i], yref[i], 1e-5, 1e-5, "conv forward", i);

    /* backward: gradients accumulate into dw/db, overwrite dx */
    for (size_t i = 0; i < nx; i++)
        dx[i] = 1234.0f;
    mlayer_conv_bwd(c, batch, x, w, r, dw, db, dx, col, dcol);

    const float h = 1e-2f;
    for (size_t i = 0; i < nw; i += stride) {
        float keep = w[i];
        w[i] = keep + h;
        double lp = conv_loss(c, batch, x, w, b, r, y, col);
        w[i] = keep - h;
        double lm = conv_loss(c, batch, x, w, b, r, y, col);
        w[i] = keep;
        assert_close(dw[i], (lp - lm) / (2.0 * h), 2e-3, 2e-3, "conv dw", i);
    }
    for (int i = 0; i < c->cout; i++) {
        float keep = b[i];
        b[i] = keep + h;
        double lp = conv_loss(c, batch, x, w, b, r, y, col);
        b[i] = keep - h;
        double lm = conv_loss(c, batch, x, w, b, r, y, col);
        b[i] = keep;
        assert_close(db[i], (lp - lm) / (2.0 * h), 2e-3, 2e-3, "conv db", (size_t)i);
    }
    for (size_t i = 0; i < nx; i += stride) {
        float keep = x[i];
        x[i] = keep + h;
        double lp = conv_loss(c, batch, x, w, b, r, y, col);
        x[i] = keep - h;
        double lm = conv_loss(c, batch, x, w, b, r, y, col);
        x[i] = keep;
        assert_close(dx[i], (lp - lm) / (2.0 * h), 2e-3, 2e-3, "conv dx", i);
    }

    /* a second backward adds the same gradients again */
    float *dw1 = malloc(sizeof(float) * nw);
    memcpy(dw1, dw, sizeof(float) * nw);
    mlayer_conv_bwd(c, batch, x, w, r, dw, db, NULL, col, NULL);
    for (size_t i = 0; i < nw; i++)
        assert_close(dw[i], 2.0 * dw1[i], 1e-6, 1e-5, "conv dw accumulated", i);

    free(dw1);
    free(x), free(w), free(b), free(r), free(y), free(col), free(dcol), free(dw), free(db);
    free(dx), free(yref);
}

static void test_conv_odd_shapes(void **state)
{
    (void)state;
    /* cout 5 and 6 leave row remainders of the 4-row tiles; widths leave column remainders */
    check_conv(&(mlayer_conv){2, 7, 9, 5, 3, 1, 0}, 2, 1);
    check_conv(&(mlayer_conv){3, 6, 6, 6, 2, 1, 0}, 3, 1);
    check_conv(&(mlayer_conv){1, 12, 14, 9, 5, 1, 0}, 1, 1);
}

/* Stride and zero padding (the unfolding reads zeros outside the input; the gradient drops
 * the padding's terms): against the naive loops over the padded input and finite
 * differences. Shapes where the last window does not reach the input's edge ((h + 2p - k)
 * not a multiple of the stride) and where windows lie mostly in the padding. */
static void test_conv_stride_pad(void **state)
{
    (void)state;
    check_conv(&(mlayer_conv){2, 9, 9, 3, 3, 2, 1}, 2, 1);  /* -> 5 x 5 */
    check_conv(&(mlayer_conv){1, 8, 10, 4, 5, 1, 2}, 1, 1); /* -> 8 x 10, "same" */
    check_conv(&(mlayer_conv){3, 7, 6, 5, 3, 3, 2}, 2, 1);  /* -> 3 x 3: last rows unread */
    check_conv(&(mlayer_conv){1, 4, 4, 2, 2, 2, 3}, 1, 1);  /* -> 5 x 5, mostly padding */
}

static void test_conv_tutorial_shapes(void **state)
{
    (void)state;
    check_conv(&(mlayer_conv){1, 28, 28, 10, 5, 1, 0}, 1, 3);
    check_conv(&(mlayer_conv){10, 12, 12, 20, 5, 1, 0}, 1, 17);
}

/* ---- max-pool + ReLU ---- */

static void test_pool_relu(void **state)
{
    (void)state;
    mrng rg;
    mrng_seed(&rg, 3, 1);
    const int planes = 3, h = 6, w = 8, n = planes * h * w, no = n / 4;
    float *y = spread(&rg, (size_t)n), *r = randv(&rg, (size_t)no, -1, 1);
    float out[48], out2[48], dy[192];
    unsigned char arg[48];
    mlayer_pool_relu_fwd(planes, h, w, y, out, arg);
    for (int p = 0; p < planes; p++)
        for (int oy = 0; oy < h / 2; oy++)
            for (int ox = 0; ox < w / 2; ox++) {
                const float *q = y + (p * h + 2 * oy) * w + 2 * ox;
                float m = fmaxf(fmaxf(q[0], q[1]), fmaxf(q[w], q[w + 1]));
                int i = (p * (h / 2) + oy) * (w / 2) + ox;
                assert_true(out[i] == fmaxf(m, 0.0f));
                int a = arg[i];
                assert_true(q[(a >> 1) * w + (a & 1)] == m);
            }
    mlayer_pool_relu_bwd(planes, h, w, r, out, arg, dy);
    const float h_ = 1e-3f;
    for (int i = 0; i < n; i++) {
        float keep = y[i];
        y[i] = keep + h_;
        mlayer_pool_relu_fwd(planes, h, w, y, out2, arg);
        double lp = dotd(r, out2, (size_t)no);
        y[i] = keep - h_;
        mlayer_pool_relu_fwd(planes, h, w, y, out2, arg);
        double lm = dotd(r, out2, (size_t)no);
        y[i] = keep;
        assert_close(dy[i], (lp - lm) / (2.0 * h_), 1e-3, 1e-3, "pool dy", (size_t)i);
    }
    /* ties keep the first element of the window, as PyTorch */
    float t[4] = {1, 1, 1, 1}, to[1];
    unsigned char ta[1];
    mlayer_pool_relu_fwd(1, 2, 2, t, to, ta);
    assert_int_equal(ta[0], 0);
    t[0] = 0.5f;
    mlayer_pool_relu_fwd(1, 2, 2, t, to, ta);
    assert_int_equal(ta[0], 1);
    free(y), free(r);
}

/* ---- linear and ReLU ---- */

static void test_linear(void **state)
{
    (void)state;
    mrng rg;
    mrng_seed(&rg, 5, 2);
    const int batch = 3, in = 13, out = 6;
    float *x = randv(&rg, batch * in, -1, 1), *w = randv(&rg, out * in, -1, 1);
    float *b = randv(&rg, out, -1, 1), *r = randv(&rg, batch * out, -1, 1);
    float y[18], dw[78] = {0}, db[6] = {0}, dx[39];
    mlayer_linear_fwd(batch, in, out, x, w, b, y);
    for (int n = 0; n < batch; n++)
        for (int o = 0; o < out; o++) {
            double s = b[o];
            for (int i = 0; i < in; i++)
                s += (double)x[n * in + i] * w[o * in + i];
            assert_close(y[n * out + o], s, 1e-5, 1e-5, "linear forward", (size_t)(n * out + o));
        }
    mlayer_linear_bwd(batch, in, out, x, w, r, dw, db, dx);
    const float h = 1e-2f;
    float *vars[3] = {w, b, x}, *grads[3] = {dw, db, dx};
    const int counts[3] = {out * in, out, batch * in};
    const char *names[3] = {"linear dw", "linear db", "linear dx"};
    for (int v = 0; v < 3; v++)
        for (int i = 0; i < counts[v]; i++) {
            float keep = vars[v][i];
            vars[v][i] = keep + h;
            mlayer_linear_fwd(batch, in, out, x, w, b, y);
            double lp = dotd(r, y, (size_t)batch * out);
            vars[v][i] = keep - h;
            mlayer_linear_fwd(batch, in, out, x, w, b, y);
            double lm = dotd(r, y, (size_t)batch * out);
            vars[v][i] = keep;
            assert_close(grads[v][i], (lp - lm) / (2.0 * h), 1e-3, 1e-3, names[v], (size_t)i);
        }
    free(x), free(w), free(b), free(r);
}

static void test_relu(void **state)
{
    (void)state;
    mrng rg;
    mrng_seed(&rg, 6, 2);
    const int n = 40;
    float *x = spread(&rg, n), *r = randv(&rg, n, -1, 1);
    float y[40], d[40];
    memcpy(y, x, sizeof y);
    mlayer_relu_fwd(n, y);
    memcpy(d, r, sizeof d);
    mlayer_relu_bwd(n, y, d);
    const float h = 1e-3f;
    for (int i = 0; i < n; i++) {
        double fp = fmax(x[i] + h, 0), fm = fmax(x[i] - h, 0);
        assert_true(y[i] == (x[i] > 0 ? x[i] : 0));
        assert_close(d[i], r[i] * (fp - fm) / (2.0 * h), 1e-4, 1e-3, "relu dx", (size_t)i);
    }
    free(x), free(r);
}

/* ---- cross-entropy ---- */

static void test_xent(void **state)
{
    (void)state;
    mrng rg;
    mrng_seed(&rg, 8, 2);
    const int batch = 5, classes = 10;
    float *z = randv(&rg, batch * classes, -3, 3);
    int labels[5] = {0, 9, 3, 3, 7};
    float dz[50];
    int correct = 0;
    float loss = mlayer_xent(batch, classes, z, labels, dz, &correct);
    double ref = 0;
    int ref_correct = 0;
    for (int n = 0; n < batch; n++) {
        double s = 0;
        int best = 0;
        for (int j = 0; j < classes; j++) {
            s += exp((double)z[n * classes + j]);
            if (z[n * classes + j] > z[n * classes + best])
                best = j;
        }
        ref += log(s) - z[n * classes + labels[n]];
        ref_correct += best == labels[n];
    }
    assert_close(loss, ref / batch, 1e-6, 1e-5, "xent loss", 0);
    assert_int_equal(correct, ref_correct);
    const float h = 1e-3f;
    for (int i = 0; i < batch * classes; i++) {
        float keep = z[i];
        z[i] = keep + h;
        double lp = mlayer_xent(batch, classes, z, labels, NULL, NULL);
        z[i] = keep - h;
        double lm = mlayer_xent(batch, classes, z, labels, NULL, NULL);
        z[i] = keep;
        assert_close(dz[i], (lp - lm) / (2.0 * h), 2e-4, 5e-3, "xent dz", (size_t)i);
    }
    /* very large logits stay finite */
    float big[10] = {1000, -1000, 0, 0, 0, 0, 0, 0, 0, 0};
    int lab = 1;
    float l = mlayer_xent(1, 10, big, &lab, dz, NULL);
    assert_true(isfinite(l) && fabsf(l - 2000.0f) < 1e-2f);
    free(z);
}

/* ---- the whole network ---- */

/* The tutorial network written out naively in double precision, from double parameters laid
 * out as mref's flat vector. Returns the mean cross-entropy; logits to z if not NULL. */
static double net_naive(const mref_net *nt, const double *p, const float *x, int batch,
                        const int *labels, double *z)
{
    const double *w1 = p + mref_tensor(nt, MREF_W1)->offset,
                 *b1 = p + mref_tensor(nt, MREF_B1)->offset;
    const double *w2 = p + mref_tensor(nt, MREF_W2)->offset,
                 *b2 = p + mref_tensor(nt, MREF_B2)->offset;
    const double *w3 = p + mref_tensor(nt, MREF_W3)->offset,
                 *b3 = p + mref_tensor(nt, MREF_B3)->offset;
    const double *w4 = p + mref_tensor(nt, MREF_W4)->offset,
                 *b4 = p + mref_tensor(nt, MREF_B4)->offset;
    double loss = 0;
    for (int n = 0; n < batch; n++) {
        const float *xn = x + (size_t)n * 784;
        static double c1[10][24][24], a1[10][12][12], c2[20][8][8], a2[320], h3[256], zz[10];
        for (int co = 0; co < 10; co++)
            for (int y = 0; y < 24; y++)
                for (int xx = 0; xx < 24; xx++) {
                    double s = b1[co];
                    for (int ky = 0; ky < 5; ky++)
                        for (int kx = 0; kx < 5; kx++)
                            s += w1[co * 25 + ky * 5 + kx] * xn[(y + ky) * 28 + xx + kx];
                    c1[co][y][xx] = s;
                }
        for (int c = 0; c < 10; c++)
            for (int y = 0; y < 12; y++)
                for (int xx = 0; xx < 12; xx++) {
                    double m = fmax(fmax(c1[c][2 * y][2 * xx], c1[c][2 * y][2 * xx + 1]),
                                    fmax(c1[c][2 * y + 1][2 * xx], c1[c][2 * y + 1][2 * xx + 1]));
                    a1[c][y][xx] = fmax(m, 0);
                }
        for (int co = 0; co < 20; co++)
            for (int y = 0; y < 8; y++)
                for (int xx = 0; xx < 8; xx++) {
                    double s = b2[co];
                    for (int ci = 0; ci < 10; ci++)
                        for (int ky = 0; ky < 5; ky++)
                            for (int kx = 0; kx < 5; kx++)
                                s += w2[((co * 10 + ci) * 5 + ky) * 5 + kx] *
                                     a1[ci][y + ky][xx + kx];
                    c2[co][y][xx] = s;
                }
        for (int c = 0; c < 20; c++)
            for (int y = 0; y < 4; y++)
                for (int xx = 0; xx < 4; xx++) {
                    double m = fmax(fmax(c2[c][2 * y][2 * xx], c2[c][2 * y][2 * xx + 1]),
                                    fmax(c2[c][2 * y + 1][2 * xx], c2[c][2 * y + 1][2 * xx + 1]));
                    a2[(c * 4 + y) * 4 + xx] = fmax(m, 0);
                }
        for (int o = 0; o < 256; o++) {
            double s = b3[o];
            for (int i = 0; i < 320; i++)
                s += w3[o * 320 + i] * a2[i];
            h3[o] = fmax(s, 0);
        }
        double mx = -INFINITY, se = 0;
        for (int o = 0; o < 10; o++) {
            double s = b4[o];
            for (int i = 0; i < 256; i++)
                s += w4[o * 256 + i] * h3[i];
            zz[o] = s;
            mx = fmax(mx, s);
        }
        for (int o = 0; o < 10; o++)
            se += exp(zz[o] - mx);
        loss += mx + log(se) - zz[labels[n]];
        if (z)
            memcpy(z + n * 10, zz, sizeof zz);
    }
    return loss / batch;
}

static void test_network_gradient(void **state)
{
    (void)state;
    err e;
    err_clear(&e);
    const int batch = 3;
    mref_net *n = mref_create(batch, &e);
    assert_non_null(n);
    mref_init(n, 11);
    /* three real-looking inputs: the normalised values of random bytes, some blank areas */
    mrng rg;
    mrng_seed(&rg, 12, 3);
    float lut[256], *x = malloc(sizeof(float) * batch * MDATA_PIXELS);
    mdata_norm_table(lut);
    for (int i = 0; i < batch * MDATA_PIXELS; i++)
        x[i] = lut[(i % 28) < 6 ? 0 : mrng_next(&rg) & 255];
    int labels[3] = {4, 0, 7};
    mref_zero_grads(n);
    float loss = mref_forward_backward(n, batch, x, labels, NULL);
    const float *g = mref_grads(n), *pf = mref_params(n);
    double *p = malloc(sizeof(double) * MREF_NPARAMS);
    for (int i = 0; i < MREF_NPARAMS; i++)
        p[i] = pf[i];
    double zref[30];
    double lref = net_naive(n, p, x, batch, labels, zref);
    assert_close(loss, lref, 1e-5, 1e-5, "network loss", 0);
    const float *z = mref_forward(n, batch, x);
    for (int i = 0; i < batch * 10; i++)
        assert_close(z[i], zref[i], 1e-5, 1e-4, "network logits", (size_t)i);

    const double h = 1e-6;
    for (int t = 0; t < MREF_NTENSORS; t++) {
        const mref_tensor_info *ti = mref_tensor(n, t);
        /* along the tensor's gradient direction u = g_t / |g_t|: dL/ds = |g_t| */
        double norm = tu_norm(g + ti->offset, ti->count);
        assert_true(norm > 0);
        for (size_t i = 0; i < ti->count; i++)
            p[ti->offset + i] = pf[ti->offset + i] + h * g[ti->offset + i] / norm;
        double lp = net_naive(n, p, x, batch, labels, NULL);
        for (size_t i = 0; i < ti->count; i++)
            p[ti->offset + i] = pf[ti->offset + i] - h * g[ti->offset + i] / norm;
        double lm = net_naive(n, p, x, batch, labels, NULL);
        for (size_t i = 0; i < ti->count; i++)
            p[ti->offset + i] = pf[ti->offset + i];
        assert_close(norm, (lp - lm) / (2 * h), 1e-6, 2e-3, ti->name, 0);
        /* and a few single elements, spread over the tensor */
        for (size_t k = 0; k < 5; k++) {
            size_t i = ti->offset + (k * 7919) % ti->count;
            p[i] = pf[i] + h;
            lp = net_naive(n, p, x, batch, labels, NULL);
            p[i] = pf[i] - h;
            lm = net_naive(n, p, x, batch, labels, NULL);
            p[i] = pf[i];
            assert_close(g[i], (lp - lm) / (2 * h), 1e-6, 2e-3, ti->name, i - ti->offset);
        }
    }
    free(x), free(p);
    mref_destroy(n);
}

/* The tutorial's parameters as PyTorch's state_dict lists them (docs/sources.md, Tutorial):
 * names, shapes, offsets in the flat vector (each the previous ones' counts summed by hand:
 * 250, 10, 5,000, 20, 81,920, 256, 2,560, 10) and fan-ins (in x k x k, or in). */
static void test_tensor_table(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int ndim;
        int64_t shape[4];
        size_t offset;
        int fan_in;
    } want[MREF_NTENSORS] = {
        {"layer1.conv.weight", 4, {10, 1, 5, 5}, 0, 25},
        {"layer1.conv.bias", 1, {10}, 250, 25},
        {"layer2.conv.weight", 4, {20, 10, 5, 5}, 260, 250},
        {"layer2.conv.bias", 1, {20}, 5260, 250},
        {"layer3.weight", 2, {256, 320}, 5280, 320},
        {"layer3.bias", 1, {256}, 87200, 320},
        {"layer4.weight", 2, {10, 256}, 87456, 256},
        {"layer4.bias", 1, {10}, 90016, 256},
    };
    err e;
    mref_net *n = mref_create(1, &e);
    assert_int_equal(mref_ntensors(n), MREF_NTENSORS);
    for (int t = 0; t < MREF_NTENSORS; t++) {
        const mref_tensor_info *ti = mref_tensor(n, t);
        assert_string_equal(ti->name, want[t].name);
        assert_int_equal(ti->ndim, want[t].ndim);
        size_t count = 1;
        for (int i = 0; i < ti->ndim; i++) {
            assert_int_equal(ti->shape[i], want[t].shape[i]);
            count *= (size_t)want[t].shape[i];
        }
        assert_int_equal(ti->count, count);
        assert_int_equal(ti->offset, want[t].offset);
        assert_int_equal(ti->fan_in, want[t].fan_in);
    }
    assert_int_equal(mref_nparams(n), MREF_NPARAMS);
    assert_null(mref_tensor(n, MREF_NTENSORS));
    mref_destroy(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_odd_shapes),
        cmocka_unit_test(test_conv_stride_pad),
        cmocka_unit_test(test_conv_tutorial_shapes),
        cmocka_unit_test(test_pool_relu),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_relu),
        cmocka_unit_test(test_xent),
        cmocka_unit_test(test_network_gradient),
        cmocka_unit_test(test_tensor_table),
    };
    return cmocka_run_group_tests_name("mnist_layers", tests, NULL, NULL);
}
