; AMP: two rows of f32amp against stationary weights, then ampst (docs/timing.md, "The AMP").
; Weights W[k][n] (8 inputs x 16 outputs): 1 where n == k, 0.5 in lane 15, 0 elsewhere.
; Row 0: inputs 1..8, partials 0 but p[15] = 100: out[n] = n + 1 for n < 8, 0 for 8..14,
;        out[15] = 100 + 0.5 x (1 + ... + 8) = 118.
; Row 1: inputs all 1, partials 0: out[n] = 1 for n < 8, out[15] = 0.5 x 8 = 4.
; Row 0 is stored during row 1's steps, row 1 by ampst; both where their partials were.
; expect: mem32[0x800] = 1.0f
; expect: mem32[0x81c] = 8.0f
; expect: mem32[0x820] = 0
; expect: mem32[0x83c] = 118.0f
; expect: mem32[0x840] = 1.0f
; expect: mem32[0x85c] = 1.0f
; expect: mem32[0x87c] = 4.0f
; (45 instructions = 0x168 bytes: wts at 0x170, xin at 0x370; 16 steps move r1 by 64,
;  r2 by 128)
; expect: w0.r1 = 0x3b0
; expect: w0.r2 = 0x880
main:   li      r1, wts
        ldcw    0, r1
        ldcw    1, r1
        ldcw    2, r1
        ldcw    3, r1
        ldcw    4, r1
        ldcw    5, r1
        ldcw    6, r1
        ldcw    7, r1
        ldcw    8, r1
        ldcw    9, r1
        ldcw    10, r1
        ldcw    11, r1
        ldcw    12, r1
        ldcw    13, r1
        ldcw    14, r1
        ldcw    15, r1
        ldcw    16, r1
        ldcw    17, r1
        ldcw    18, r1
        ldcw    19, r1
        ldcw    20, r1
        ldcw    21, r1
        ldcw    22, r1
        ldcw    23, r1
        ldcw    24, r1
        ldcw    25, r1
        ldcw    26, r1
        ldcw    27, r1
        ldcw    28, r1
        ldcw    29, r1
        ldcw    30, r1
        ldcw    31, r1
        run     w, r0
        join
        halt
w:      li      r1, xin
        li      r2, 0x800
        li      r3, 0x42c80000      ; 100.0f
        st32    r3, [r2+60]         ; row 0's partial 15
        li      r4, 16
        rpt     r4, e
        f32amp  r2, r1
e:      ampst
        exit
        .data
        .align  16
wts:    .float  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5
        .float  0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5
        .float  0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5
        .float  0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5
        .float  0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5
        .float  0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5
        .float  0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0.5
        .float  0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0.5
xin:    .float  1, 2, 3, 4, 5, 6, 7, 8
        .float  1, 1, 1, 1, 1, 1, 1, 1
