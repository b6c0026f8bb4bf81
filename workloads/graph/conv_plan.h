/* conv_plan: the host-side plans of the convolution codelets (workloads/codelets/conv_amp.s,
 * conv_pack.s, conv_ungroup.s, conv_mac1.s) for one layer of stride 1 and no padding on one
 * tile: conv_amp's pass table and per-worker worklists, conv_pack's block lists, and the
 * state words of those codelets, of conv_ungroup and of conv_mac1, as their headers lay them
 * out. Three plans per layer shape (the flows of tests/test_codelets_conv.c):
 *   cplan_fwd    y = conv(x): pack w -> blocks (ob, ci, ky, 8 columns of kx); conv_amp;
 *                ungroup
 *   cplan_dx     dx: pack dy -> [B][Go][P][16]; pack w -> blocks (ky, kx, chunk of 8);
 *                conv_amp (zeroing phase, then passes); ungroup
 *   cplan_wgrad  dw += one sample's gradient: pack dy -> [Go][P][16] (the AMP's weights);
 *                conv_amp into dw^T [Go][Cin K K][16]; ungroup adding into dw
 * and the pieces of conv1's forward on the workers (cplan_pack_pairs, cplan_mac1_state).
 * A plan holds offsets and sizes only; the caller places it: as tensors and vertex fields of
 * a graph (the tables' words, cplan_*_state with the regions' addresses), or in a byte image
 * at a base address (cplan_amp_write, cplan_pack_write). All words are little-endian u32.
 * Left out: the codelets' cycle models (tests/test_codelets_conv.c derives them from the
 * codelets' headers, independently of these plans), splitting a layer over tiles (a tile's
 * plan covers its samples and all output blocks), padding, and K > 8 except in cplan_fwd. */
#ifndef IPUSIM_CONV_PLAN_H
#define IPUSIM_CONV_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define CPLAN_WORKERS 6    /* a tile's workers: conv_amp splits a pass's rows over them */
#define CPLAN_AMP_WORDS 9  /* conv_amp's state (the last word: its scratch, written 0) */
#define CPLAN_PACK_WORDS 8 /* conv_pack's state */
#define CPLAN_UNG_WORDS 6  /* conv_ungroup's state */
#define CPLAN_MAC1_WORDS 5 /* conv_mac1's state */
#define CPLAN_MAX_K 8      /* the AMP's 8 inputs a row */

/* A convolution layer (as mlayer_conv): x [cin][h][w], w [cout][cin][k][k], stride 1, no
 * padding, y [cout][h - k + 1][w - k + 1]. */
typedef struct cplan_shape {
    uint32_t cin, h, w, cout, k;
    uint32_t kh; /* cplan_fwd: the kernel's rows, 0: k (a tile's share of a kernel split by
                  * rows, w [cout][cin][kh][k]) */
} cplan_shape;

/* ---- conv_pack: dst[b][r][c] = src[s_b + r sr + c sc] for r < rv_b, c < cv_b, else 0 ---- */

typedef struct cplan_pack {
    uint32_t nblocks, R, C, sr, sc; /* R x C floats a block; strides in bytes */
    uint32_t *list;                 /* 3 words a block: src offset (bytes), rv, cv */
    size_t cap;                     /* blocks the list holds */
} cplan_pack;

/* An empty list of R x C blocks read with row stride sr and column stride sc (bytes). */
void cplan_pack_init(cplan_pack *p, uint32_t R, uint32_t C, uint32_t sr, uint32_t sc);
/* Append a block from byte src_off with rv <= R valid rows and cv <= C valid columns. */
void cplan_pack_block(cplan_pack *p, uint32_t src_off, uint32_t rv, uint32_t cv);
void cplan_pack_free(cplan_pack *p);
/* dy [B][C][P] -> [B][ceil(C / 16)][P][16], channels past C zero. */
void cplan_pack_group(cplan_pack *p, uint32_t C, uint32_t P, uint32_t B);
/* w [cout][kk] -> duplicated pairs [cout][kk][2] (conv_mac1's weights). */
void cplan_pack_pairs(cplan_pack *p, uint32_t cout, uint32_t kk);
/* State of vertex v of nv, which packs blocks [nblocks v / nv, nblocks (v + 1) / nv) into
 * dst (the blocks from the first on, back to back) from src; list: the address of the list. */
void cplan_pack_state(const cplan_pack *p, uint32_t v, uint32_t nv, uint32_t dst, uint32_t src,
                      uint32_t list, uint32_t st[CPLAN_PACK_WORDS]);

/* ---- conv_amp ---- */

typedef struct cplan_run {
    uint32_t out, rows, in; /* partials and inputs: byte offsets of the first row */
} cplan_run;

typedef struct cplan_amp {
    uint32_t npasses;
    uint32_t *ptab;  /* 3 words a pass: in offset, out offset (bytes), zero stores a row (8, 0) */
    int32_t radj;    /* bytes added to the input pointer after a row */
    uint32_t zall;   /* 8-byte zero stores per worker before the passes (0: none) */
    cplan_run *runs; /* every pass's rows, in order */
    uint32_t nruns;
    cplan_run *wr[CPLAN_WORKERS]; /* worker w's share: rows [R w / 6, R (w + 1) / 6) of runs */
    uint32_t wn[CPLAN_WORKERS];
    size_t cap_p, cap_r;
} cplan_amp;

void cplan_amp_free(cplan_amp *p);
/* Words of the worklists: six byte offsets (from the worklists' start), then per worker its
 * number of runs and 3 words a run (out offset, rows, in offset). */
uint32_t cplan_amp_wl_words(const cplan_amp *p);
void cplan_amp_worklists(const cplan_amp *p, uint32_t *wl);
/* State: in, out, wts (the regions), wl, ptab (where the tables are). */
void cplan_amp_state(const cplan_amp *p, uint32_t in, uint32_t out, uint32_t wts, uint32_t wl,
                     uint32_t ptab, uint32_t st[CPLAN_AMP_WORDS]);

/* ---- conv_ungroup and conv_mac1 states ---- */

/* Vertex v of nv over channels [C v / nv, C (v + 1) / nv): out[c][p] (+)= in[c/16][p][c%16];
 * out, in: the bases of [C][P] and [G][P][16]. */
void cplan_ungroup_state(uint32_t out, uint32_t in, uint32_t C, uint32_t P, int acc, uint32_t v,
                         uint32_t nv, uint32_t st[CPLAN_UNG_WORDS]);
/* conv_mac1 (cin = 1, k = 5) for output channel co, output rows [r0, r1): x [h][w], pairs
 * (cplan_pack_pairs' output), y [cout][ho][wo]. */
void cplan_mac1_state(const cplan_shape *s, uint32_t x, uint32_t pairs, uint32_t y, uint32_t co,
                      uint32_t r0, uint32_t r1, uint32_t st[CPLAN_MAC1_WORDS]);

/* ---- a layer's plans ---- */

typedef enum cplan_kind { CPLAN_FWD, CPLAN_DX, CPLAN_WGRAD } cplan_kind;

typedef struct cplan_conv {
    cplan_kind kind;
    cplan_shape s;
    uint32_t B; /* samples a conv_amp call (1 for the weight gradient) */
    cplan_amp amp;
    cplan_pack wpack;  /* w [Cout][Cin][K][K] -> the AMP's blocks (fwd, dx; none for wgrad) */
    cplan_pack dypack; /* dy [B][Cout][P] -> [B][Go][P][16] (dx, wgrad; none for fwd) */
    /* conv_amp's regions, in bytes: in (fwd: x [B][Cin][H][W] and 8 zero floats after it;
     * dx: dy grouped; wgrad: x), out (the grouped partials), wts (fwd, dx: the packed
     * blocks; wgrad: dy grouped) */
    uint32_t in_bytes, out_bytes, wts_bytes;
    /* conv_ungroup per sample: ung_c channels of ung_p positions, ung_acc (wgrad: add into
     * dw); the partials and the result of sample b at b x the strides (bytes) */
    uint32_t ung_c, ung_p, ung_acc, ung_in_stride, ung_out_stride;
} cplan_conv;

/* Forward of B samples in one conv_amp call: passes (ob, ci, ky, kc), each block's first
 * zeroing; a row = one output pixel streaming x[ci][oy + ky][ox + 8 kc .. ox + 8 kc + 7] (8
 * columns of the kernel row folded into the 8 inputs, weights 0 for kx >= K): a kernel wider
 * than 8 takes ceil(K / 8) passes a row, as poplibs splits a kernel wider than the AMP. */
int cplan_fwd(cplan_conv *c, const cplan_shape *s, uint32_t B, err *e);
/* The same with stride `stride` (1: cplan_fwd): output pixel (oy, ox) of [(H - K) / stride + 1]
 * [(W - K) / stride + 1] streams x[ci][oy stride + ky][ox stride .. ox stride + 7]; the input
 * pointer moves 4 stride bytes a row (radj = 4 stride - 32). */
int cplan_fwd_strided(cplan_conv *c, const cplan_shape *s, uint32_t B, uint32_t stride, err *e);
/* Input gradient of B samples: passes (gi, ky, kx, chunk of 8 output channels); a row = one
 * dy pixel adding into dx's partial row at (oy + ky, ox + kx); zeroed first (zall). */
int cplan_dx(cplan_conv *c, const cplan_shape *s, uint32_t B, err *e);
/* Weight gradient of one sample (needs Wo % 8 == 0): passes (og, chunk of 8 pixels), the
 * weights dy grouped itself; a row = one tap (ci, ky, kx); partials dw^T [Go][Cin K K][16]. */
int cplan_wgrad(cplan_conv *c, const cplan_shape *s, err *e);
/* Frees a plan (also one whose build failed: the builders clear it first). */
void cplan_free(cplan_conv *c);

/* ---- placing the tables in a byte image ---- */

/* Where cplan_amp_write put conv_amp's worklists, pass table and state (addresses). */
typedef struct cplan_amp_at {
    uint32_t wl, ptab, state;
} cplan_amp_at;
/* Where cplan_pack_write put the block list and the nv states (32 bytes apart: state v at
 * states + 32 v, so six of them are conv_pack.all's). */
typedef struct cplan_pack_at {
    uint32_t list, states;
} cplan_pack_at;

/* Bytes cplan_amp_write writes: the worklists, the pass table and the state, each from a
 * 16-byte boundary (relative to the base). */
uint32_t cplan_amp_bytes(const cplan_amp *p);
/* Write them into buf, which the tile sees at address base (4-aligned; 16-aligned keeps the
 * tables 16-aligned); in, out, wts as in cplan_amp_state. */
int cplan_amp_write(const cplan_amp *p, uint32_t in, uint32_t out, uint32_t wts, uint32_t base,
                    uint8_t *buf, cplan_amp_at *at, err *e);
/* The same for a pack run as nv vertices: the list, then the nv states. */
uint32_t cplan_pack_bytes(const cplan_pack *p, uint32_t nv);
int cplan_pack_write(const cplan_pack *p, uint32_t nv, uint32_t dst, uint32_t src, uint32_t base,
                     uint8_t *buf, cplan_pack_at *at, err *e);

#endif
