/* conv_plan: the convolution codelets' tables and state words (conv_plan.h). The layouts are
 * those of the codelets' headers (workloads/codelets/conv_*.s); the plans' orders (passes,
 * rows, blocks) are what makes each flow's sums run in the C layers' order. */
#include "workloads/graph/conv_plan.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"

static uint32_t min32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static uint32_t up16(uint32_t a)
{
    return (a + 15) & ~15u;
}

static void put32(uint8_t *b, uint32_t v)
{
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)(v >> 16);
    b[3] = (uint8_t)(v >> 24);
}

static void put_words(uint8_t *b, const uint32_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put32(b + 4 * i, v[i]);
}

/* ---- conv_pack ---- */

void cplan_pack_init(cplan_pack *p, uint32_t R, uint32_t C, uint32_t sr, uint32_t sc)
{
    memset(p, 0, sizeof *p);
    p->R = R;
    p->C = C;
    p->sr = sr;
    p->sc = sc;
}

void cplan_pack_block(cplan_pack *p, uint32_t src_off, uint32_t rv, uint32_t cv)
{
    p->list = xgrow(p->list, &p->cap, 3 * ((size_t)p->nblocks + 1), sizeof *p->list);
    uint32_t *b = p->list + 3 * (size_t)p->nblocks++;
    b[0] = src_off;
    b[1] = rv;
    b[2] = cv;
}

void cplan_pack_free(cplan_pack *p)
{
    free(p->list);
    memset(p, 0, sizeof *p);
}

void cplan_pack_group(cplan_pack *p, uint32_t C, uint32_t P, uint32_t B)
{
    uint32_t G = ceil_div_u32(C, 16);
    cplan_pack_init(p, P, 16, 4, P * 4);
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t g = 0; g < G; g++)
            cplan_pack_block(p, (b * C + 16 * g) * P * 4, P, min32(C - 16 * g, 16));
}

void cplan_pack_pairs(cplan_pack *p, uint32_t cout, uint32_t kk)
{
    cplan_pack_init(p, cout * kk, 2, 4, 0);
    cplan_pack_block(p, 0, cout * kk, 2);
}

void cplan_pack_state(const cplan_pack *p, uint32_t v, uint32_t nv, uint32_t dst, uint32_t src,
                      uint32_t list, uint32_t st[CPLAN_PACK_WORDS])
{
    uint32_t b0 = (uint32_t)((uint64_t)p->nblocks * v / nv);
    uint32_t b1 = (uint32_t)((uint64_t)p->nblocks * (v + 1) / nv);
    uint32_t w[CPLAN_PACK_WORDS] = {
        dst + b0 * p->R * p->C * 4, src, b1 - b0, list + 12 * b0, p->R, p->C, p->sr, p->sc};
    memcpy(st, w, sizeof w);
}

/* ---- conv_amp ---- */

static void amp_init(cplan_amp *p, int32_t radj)
{
    memset(p, 0, sizeof *p);
    p->radj = radj;
}

static void amp_pass(cplan_amp *p, uint32_t in_off, uint32_t out_off, int zero)
{
    p->ptab = xgrow(p->ptab, &p->cap_p, 3 * ((size_t)p->npasses + 1), sizeof *p->ptab);
    uint32_t *e = p->ptab + 3 * (size_t)p->npasses++;
    e[0] = in_off;
    e[1] = out_off;
    e[2] = zero ? 8 : 0;
}

static void amp_run(cplan_amp *p, uint32_t out, uint32_t rows, uint32_t in)
{
    p->runs = xgrow(p->runs, &p->cap_r, (size_t)p->nruns + 1, sizeof *p->runs);
    p->runs[p->nruns++] = (cplan_run){out, rows, in};
}

/* Worker w takes rows [R w / 6, R (w + 1) / 6) of the runs in order, a run split where a
 * share ends (its second part starts rows x 64 bytes on in the partials and rows x (32 +
 * radj) in the inputs). */
static void amp_split(cplan_amp *p)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->nruns; i++)
        total += p->runs[i].rows;
    uint64_t at = 0; /* rows before run i */
    uint32_t i = 0;
    for (unsigned w = 0; w < CPLAN_WORKERS; w++) {
        uint64_t r0 = total * w / CPLAN_WORKERS, r1 = total * (w + 1) / CPLAN_WORKERS;
        free(p->wr[w]);
        p->wr[w] = xcalloc((size_t)p->nruns + 1, sizeof(cplan_run));
        p->wn[w] = 0;
        while (i < p->nruns && at + p->runs[i].rows <= r0) {
            at += p->runs[i].rows;
            i++;
        }
        for (uint64_t j = i, a = at; j < p->nruns && a < r1; a += p->runs[j].rows, j++) {
            uint64_t lo = r0 > a ? r0 - a : 0;
            uint64_t hi = r1 < a + p->runs[j].rows ? r1 - a : p->runs[j].rows;
            if (hi > lo)
                p->wr[w][p->wn[w]++] =
                    (cplan_run){(uint32_t)(p->runs[j].out + 64 * lo), (uint32_t)(hi - lo),
                                (uint32_t)((int64_t)p->runs[j].in + (int64_t)lo * (32 + p->radj))};
        }
    }
}

void cplan_amp_free(cplan_amp *p)
{
    free(p->ptab);
    free(p->runs);
    for (unsigned w = 0; w < CPLAN_WORKERS; w++)
        free(p->wr[w]);
    memset(p, 0, sizeof *p);
}

uint32_t cplan_amp_wl_words(const cplan_amp *p)
{
    uint32_t n = CPLAN_WORKERS;
    for (unsigned w = 0; w < CPLAN_WORKERS; w++)
        n += 1 + 3 * p->wn[w];
    return n;
}

void cplan_amp_worklists(const cplan_amp *p, uint32_t *wl)
{
    uint32_t at = CPLAN_WORKERS;
    for (unsigned w = 0; w < CPLAN_WORKERS; w++) {
        wl[w] = 4 * at;
        wl[at++] = p->wn[w];
        for (uint32_t i = 0; i < p->wn[w]; i++) {
            wl[at++] = p->wr[w][i].out;
            wl[at++] = p->wr[w][i].rows;
            wl[at++] = p->wr[w][i].in;
        }
    }
}

void cplan_amp_state(const cplan_amp *p, uint32_t in, uint32_t out, uint32_t wts, uint32_t wl,
                     uint32_t ptab, uint32_t st[CPLAN_AMP_WORDS])
{
    uint32_t w[CPLAN_AMP_WORDS] = {in,         out,  wts,     wl, (uint32_t)p->radj,
                                   p->npasses, ptab, p->zall, 0};
    memcpy(st, w, sizeof w);
}

/* ---- conv_ungroup, conv_mac1 ---- */

void cplan_ungroup_state(uint32_t out, uint32_t in, uint32_t C, uint32_t P, int acc, uint32_t v,
                         uint32_t nv, uint32_t st[CPLAN_UNG_WORDS])
{
    uint32_t c0 = (uint32_t)((uint64_t)C * v / nv), c1 = (uint32_t)((uint64_t)C * (v + 1) / nv);
    uint32_t w[CPLAN_UNG_WORDS] = {out + 4 * c0 * P, in, c0, c1 - c0, P, acc ? 1u : 0u};
    memcpy(st, w, sizeof w);
}

void cplan_mac1_state(const cplan_shape *s, uint32_t x, uint32_t pairs, uint32_t y, uint32_t co,
                      uint32_t r0, uint32_t r1, uint32_t st[CPLAN_MAC1_WORDS])
{
    uint32_t wo = s->w - s->k + 1, P = (s->h - s->k + 1) * wo;
    uint32_t w[CPLAN_MAC1_WORDS] = {x + r0 * s->w * 4, pairs + co * s->k * s->k * 8,
                                    y + (co * P + r0 * wo) * 4, r1 - r0, s->w};
    memcpy(st, w, sizeof w);
}

/* ---- the layer plans ---- */

/* Checks the shape (kernels of up to maxk) and that every byte size and offset the plan forms
 * fits in 32 bits: the largest is a region's size, here bounded by `bytes` (computed in 64
 * bits by the caller). */
static int check_k(const cplan_shape *s, uint32_t B, uint64_t bytes, uint32_t maxk,
                   const char *what, err *e)
{
    if (!s->cin || !s->h || !s->w || !s->cout || !s->k || !B)
        return err_set(e, ERR_INPUT, "%s: zero size (cin %u, h %u, w %u, cout %u, k %u, B %u)",
                       what, s->cin, s->h, s->w, s->cout, s->k, B);
    if ((s->kh ? s->kh : s->k) > s->h || s->k > s->w || s->k > maxk)
        return err_set(e, ERR_INPUT, "%s: kernel %u on %u x %u (K <= %u, K <= H, W)", what, s->k,
                       s->h, s->w, maxk);
    if (bytes > UINT32_MAX)
        return err_set(e, ERR_INPUT, "%s: %llu bytes in one region do not fit 32-bit addresses",
                       what, (unsigned long long)bytes);
    return ERR_OK;
}

/* check_k of the plans whose kernel row is one AMP row (K <= 8). */
static int check(const cplan_shape *s, uint32_t B, uint64_t bytes, const char *what, err *e)
{
    return check_k(s, B, bytes, CPLAN_MAX_K, what, e);
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static void conv_begin(cplan_conv *c, cplan_kind kind, const cplan_shape *s, uint32_t B)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->s = *s;
    c->B = B;
}

int cplan_fwd(cplan_conv *c, const cplan_shape *s, uint32_t B, err *e)
{
    return cplan_fwd_strided(c, s, B, 1, e);
}

int cplan_fwd_strided(cplan_conv *c, const cplan_shape *s, uint32_t B, uint32_t stride, err *e)
{
    conv_begin(c, CPLAN_FWD, s, B);
    uint32_t K = s->k, KH = s->kh ? s->kh : K, H = s->h, W = s->w, Ci = s->cin, Co = s->cout;
    uint32_t st = stride ? stride : 1;
    uint64_t ho = H >= KH ? (H - KH) / st + 1 : 0, wo = W >= K ? (W - K) / st + 1 : 0;
    uint64_t G = ceil_div_u32(Co, 16), nk = ceil_div_u32(K, 8);
    uint64_t big = max64((uint64_t)B * Ci * H * W * 4 + 32, B * G * ho * wo * 64);
    big = max64(big, max64((uint64_t)B * Co * ho * wo * 4, G * Ci * KH * nk * 512));
    int rc = check_k(s, B, max64(big, (uint64_t)Co * Ci * KH * K * 4), UINT32_MAX, "cplan_fwd", e);
    if (rc != ERR_OK)
        return rc;
    uint32_t P = (uint32_t)(ho * wo);
    amp_init(&c->amp, 4 * (int32_t)st - 32);
    cplan_pack_init(&c->wpack, 8, 16, 4, Ci * KH * K * 4);
    for (uint32_t g = 0; g < G; g++)
        for (uint32_t ci = 0; ci < Ci; ci++)
            for (uint32_t ky = 0; ky < KH; ky++)
                for (uint32_t kc = 0; kc < nk; kc++) { /* a kernel row, 8 columns a pass */
                    amp_pass(&c->amp, ((ci * H + ky) * W + 8 * kc) * 4, g * P * 64,
                             ci == 0 && ky == 0 && kc == 0);
                    cplan_pack_block(&c->wpack, (((16 * g * Ci + ci) * KH + ky) * K + 8 * kc) * 4,
                                     min32(K - 8 * kc, 8), min32(Co - 16 * g, 16));
                }
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t oy = 0; oy < ho; oy++)
            amp_run(&c->amp, (uint32_t)((b * G * P + oy * wo) * 64), (uint32_t)wo,
                    (uint32_t)((b * Ci * H + oy * st) * W * 4));
    amp_split(&c->amp);
    c->in_bytes = B * Ci * H * W * 4 + 32;
    c->out_bytes = (uint32_t)(B * G * P * 64);
    c->wts_bytes = 512 * c->wpack.nblocks;
    c->ung_c = Co;
    c->ung_p = P;
    c->ung_acc = 0;
    c->ung_in_stride = (uint32_t)(G * P * 64);
    c->ung_out_stride = Co * P * 4;
    return ERR_OK;
}

int cplan_dx(cplan_conv *c, const cplan_shape *s, uint32_t B, err *e)
{
    conv_begin(c, CPLAN_DX, s, B);
    uint32_t K = s->k, H = s->h, W = s->w, Ci = s->cin, Co = s->cout;
    uint64_t ho = H >= K ? H - K + 1 : 0, wo = W >= K ? W - K + 1 : 0;
    uint64_t Gi = ceil_div_u32(Ci, 16), Q = ceil_div_u32(Co, 8), G = ceil_div_u32(Co, 16);
    uint64_t big = max64((uint64_t)B * G * ho * wo * 64, B * Gi * H * W * 64 + 48);
    big = max64(big, max64((uint64_t)B * Ci * H * W * 4, Gi * K * K * Q * 512));
    int rc = check(s, B, max64(big, (uint64_t)Co * Ci * K * K * 4), "cplan_dx", e);
    if (rc != ERR_OK)
        return rc;
    uint32_t P = (uint32_t)(ho * wo);
    amp_init(&c->amp, 32);
    cplan_pack_init(&c->wpack, 8, 16, Ci * K * K * 4, K * K * 4);
    for (uint32_t gi = 0; gi < Gi; gi++)
        for (uint32_t ky = 0; ky < K; ky++)
            for (uint32_t kx = 0; kx < K; kx++)
                for (uint32_t q = 0; q < Q; q++) {
                    amp_pass(&c->amp, q / 2 * P * 64 + q % 2 * 32, (gi * H * W + ky * W + kx) * 64,
                             0);
                    cplan_pack_block(&c->wpack, (((8 * q * Ci + 16 * gi) * K + ky) * K + kx) * 4,
                                     min32(Co - 8 * q, 8), min32(Ci - 16 * gi, 16));
                }
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t oy = 0; oy < ho; oy++)
            amp_run(&c->amp, (uint32_t)((b * Gi * H + oy) * W * 64), (uint32_t)wo,
                    (uint32_t)((b * G * P + oy * wo) * 64));
    c->amp.zall = (uint32_t)ceil_div_u32((uint32_t)(B * Gi * H * W * 8), 6);
    amp_split(&c->amp);
    cplan_pack_group(&c->dypack, Co, P, B);
    c->in_bytes = (uint32_t)(B * G * P * 64);
    c->out_bytes = 48 * c->amp.zall;
    c->wts_bytes = 512 * c->wpack.nblocks;
    c->ung_c = Ci;
    c->ung_p = H * W;
    c->ung_acc = 0;
    c->ung_in_stride = (uint32_t)(Gi * H * W * 64);
    c->ung_out_stride = Ci * H * W * 4;
    return ERR_OK;
}

int cplan_wgrad(cplan_conv *c, const cplan_shape *s, err *e)
{
    conv_begin(c, CPLAN_WGRAD, s, 1);
    uint32_t K = s->k, H = s->h, W = s->w, Ci = s->cin, Co = s->cout;
    uint64_t ho = H >= K ? H - K + 1 : 0, wo = W >= K ? W - K + 1 : 0, G = ceil_div_u32(Co, 16);
    uint64_t KK = (uint64_t)Ci * K * K;
    uint64_t big = max64((uint64_t)Ci * H * W * 4, G * ho * wo * 64);
    big = max64(big, max64(G * KK * 64, Co * KK * 4));
    int rc = check(s, 1, max64(big, (uint64_t)Co * ho * wo * 4), "cplan_wgrad", e);
    if (rc != ERR_OK)
        return rc;
    if (wo % 8 != 0)
        return err_set(e, ERR_INPUT, "cplan_wgrad: output width %llu is not a multiple of 8",
                       (unsigned long long)wo);
    uint32_t P = (uint32_t)(ho * wo);
    amp_init(&c->amp, -28);
    for (uint32_t g = 0; g < G; g++)
        for (uint32_t q = 0; q < P / 8; q++)
            amp_pass(&c->amp, (uint32_t)((8 * q / wo * W + 8 * q % wo) * 4),
                     (uint32_t)(g * KK * 64), q == 0);
    for (uint32_t ci = 0; ci < Ci; ci++)
        for (uint32_t ky = 0; ky < K; ky++)
            amp_run(&c->amp, (ci * K + ky) * K * 64, K, (ci * H + ky) * W * 4);
    amp_split(&c->amp);
    cplan_pack_group(&c->dypack, Co, P, 1);
    c->in_bytes = Ci * H * W * 4;
    c->out_bytes = (uint32_t)(G * KK * 64);
    c->wts_bytes = (uint32_t)(G * P * 64);
    c->ung_c = Co;
    c->ung_p = (uint32_t)KK;
    c->ung_acc = 1;
    c->ung_in_stride = (uint32_t)(G * KK * 64);
    c->ung_out_stride = (uint32_t)(Co * KK * 4);
    return ERR_OK;
}

void cplan_free(cplan_conv *c)
{
    cplan_amp_free(&c->amp);
    cplan_pack_free(&c->wpack);
    cplan_pack_free(&c->dypack);
}

/* ---- byte images ---- */

uint32_t cplan_amp_bytes(const cplan_amp *p)
{
    uint32_t ptab = up16(4 * cplan_amp_wl_words(p));
    return up16(ptab + 12 * (p->npasses ? p->npasses : 1)) + 4 * CPLAN_AMP_WORDS;
}

static int check_base(uint32_t base, uint32_t bytes, const char *what, err *e)
{
    if (base % 4 != 0)
        return err_set(e, ERR_INPUT, "%s: base 0x%x is not 4-aligned", what, base);
    if ((uint64_t)base + bytes > (uint64_t)UINT32_MAX + 1)
        return err_set(e, ERR_INPUT, "%s: %u bytes at 0x%x pass 32-bit addresses", what, bytes,
                       base);
    return ERR_OK;
}

int cplan_amp_write(const cplan_amp *p, uint32_t in, uint32_t out, uint32_t wts, uint32_t base,
                    uint8_t *buf, cplan_amp_at *at, err *e)
{
    uint32_t bytes = cplan_amp_bytes(p), nwl = cplan_amp_wl_words(p);
    int rc = check_base(base, bytes, "cplan_amp_write", e);
    if (rc != ERR_OK)
        return rc;
    uint32_t o_ptab = up16(4 * nwl);
    uint32_t o_state = up16(o_ptab + 12 * (p->npasses ? p->npasses : 1));
    memset(buf, 0, bytes);
    uint32_t *wl = xcalloc(nwl, 4);
    cplan_amp_worklists(p, wl);
    put_words(buf, wl, nwl);
    free(wl);
    put_words(buf + o_ptab, p->ptab, 3 * (size_t)p->npasses);
    uint32_t st[CPLAN_AMP_WORDS];
    cplan_amp_state(p, in, out, wts, base, base + o_ptab, st);
    put_words(buf + o_state, st, CPLAN_AMP_WORDS);
    if (at)
        *at = (cplan_amp_at){base, base + o_ptab, base + o_state};
    return ERR_OK;
}

static uint32_t pack_list_bytes(const cplan_pack *p)
{
    return up16(12 * (p->nblocks ? p->nblocks : 1));
}

uint32_t cplan_pack_bytes(const cplan_pack *p, uint32_t nv)
{
    return pack_list_bytes(p) + 4 * CPLAN_PACK_WORDS * nv;
}

int cplan_pack_write(const cplan_pack *p, uint32_t nv, uint32_t dst, uint32_t src, uint32_t base,
                     uint8_t *buf, cplan_pack_at *at, err *e)
{
    uint32_t bytes = cplan_pack_bytes(p, nv), o_st = pack_list_bytes(p);
    int rc = check_base(base, bytes, "cplan_pack_write", e);
    if (rc != ERR_OK)
        return rc;
    memset(buf, 0, bytes);
    put_words(buf, p->list, 3 * (size_t)p->nblocks);
    for (uint32_t v = 0; v < nv; v++) {
        uint32_t st[CPLAN_PACK_WORDS];
        cplan_pack_state(p, v, nv, dst, src, base, st);
        put_words(buf + o_st + 4 * CPLAN_PACK_WORDS * v, st, CPLAN_PACK_WORDS);
    }
    if (at)
        *at = (cplan_pack_at){base, base + o_st};
    return ERR_OK;
}
