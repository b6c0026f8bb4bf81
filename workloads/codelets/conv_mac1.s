# conv_mac1.s: WORKER codelet. Forward convolution of ONE input channel with a 5 x 5 kernel,
# stride 1, no padding, on the workers' f32v2 MACs (the tutorial's conv1, Conv2d(1, 10, 5)
# on 28 x 28, where one input channel leaves the AMP's 8 inputs mostly idle; poplibs takes
# vector/HMAC vertices for such layers). One vertex: one output channel, a range of output
# rows, every column:
#   y[oy][ox] = sum over ky, kx (in that order) of x[oy + ky][ox + kx] * w[ky][kx]
# each product rounded, then added, the first to 0: bit for bit mlayer_conv_fwd with cin = 1
# and a zero bias (which adds no term), up to the sign of a zero sum.
# Two adjacent outputs share a register pair; the odd-offset input pairs are built from the
# aligned 8-byte loads with two movs. A layer splits over workers and tiles by (sample,
# channel, range of output rows). conv_amp does the same layer on the AMP ~8x faster
# (tests/test_codelets_conv.c, test_tutorial_figures).
#
# Layouts: x is one plane [H][W] (8-aligned, W even, W >= 6); w is the channel's 25 weights
# duplicated into pairs [25][2] (conv_pack with C = 2, sc = 0; 8-aligned); y is [Ho][Wo],
# Ho = H - 4, Wo = W - 4 (8-aligned).
#
# State (5 words; runall conv_mac1.all uses six of them, 20 bytes apart):
#   +0  x       region  &x[oy0][0]
#   +4  w       region  &wpairs[co][0][0]
#   +8  y       region  &y[co][oy0][0]
#   +12 rows    u32     output rows
#   +16 W       u32     input width
#
# Cycles (docs/timing.md): 6 S tile cycles for S = 9 + rows (5 + 59 Wo) (S = 8 when rows = 0):
# per pair of outputs 118 slots, 50 MACs (25 ld64 weight pairs, 25 v2mul, 24 v2add, 15 ld64
# input pairs, 20 mov, 4 row steps, st64, 4 to step back, brnzdec). conv_mac1.all adds 3.
        .text
conv_mac1.all:
        get     r1, $wid
        muli    r1, r1, 20
        add     r0, r0, r1
conv_mac1:
        ld32    r1, [r0+0]          # x
        ld32    r14, [r0+4]         # weight pairs
        ld32    r10, [r0+8]         # y
        ld32    r15, [r0+16]        # W
        ld32    r0, [r0+12]         # rows
        shli    r15, r15, 2         # bytes per input row
        brz     r0, conv_mac1.done
        addi    r0, r0, -1
conv_mac1.row:
        addi    r11, r15, -16       # Wo x 4 bytes
        shri    r11, r11, 3         # Wo / 2 pairs
        addi    r11, r11, -1
conv_mac1.pair:
        # ky = 0: r12:r13 = the pair's sums
        ld64    r4, [r1+0]          # x0 x1
        ld64    r6, [r1+8]          # x2 x3
        ld64    r2, [r14+0]
        v2mul   r12, r2, r4
        mov     r8, r5
        mov     r9, r6              # x1 x2
        ld64    r2, [r14+8]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+16]
        v2mul   r2, r2, r6
        v2add   r12, r12, r2
        ld64    r4, [r1+16]         # x4 x5
        mov     r8, r7
        mov     r9, r4              # x3 x4
        ld64    r2, [r14+24]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+32]
        v2mul   r2, r2, r4
        v2add   r12, r12, r2
        add     r1, r1, r15
        # ky = 1
        ld64    r4, [r1+0]
        ld64    r6, [r1+8]
        ld64    r2, [r14+40]
        v2mul   r2, r2, r4
        v2add   r12, r12, r2
        mov     r8, r5
        mov     r9, r6
        ld64    r2, [r14+48]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+56]
        v2mul   r2, r2, r6
        v2add   r12, r12, r2
        ld64    r4, [r1+16]
        mov     r8, r7
        mov     r9, r4
        ld64    r2, [r14+64]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+72]
        v2mul   r2, r2, r4
        v2add   r12, r12, r2
        add     r1, r1, r15
        # ky = 2
        ld64    r4, [r1+0]
        ld64    r6, [r1+8]
        ld64    r2, [r14+80]
        v2mul   r2, r2, r4
        v2add   r12, r12, r2
        mov     r8, r5
        mov     r9, r6
        ld64    r2, [r14+88]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+96]
        v2mul   r2, r2, r6
        v2add   r12, r12, r2
        ld64    r4, [r1+16]
        mov     r8, r7
        mov     r9, r4
        ld64    r2, [r14+104]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+112]
        v2mul   r2, r2, r4
        v2add   r12, r12, r2
        add     r1, r1, r15
        # ky = 3
        ld64    r4, [r1+0]
        ld64    r6, [r1+8]
        ld64    r2, [r14+120]
        v2mul   r2, r2, r4
        v2add   r12, r12, r2
        mov     r8, r5
        mov     r9, r6
        ld64    r2, [r14+128]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+136]
        v2mul   r2, r2, r6
        v2add   r12, r12, r2
        ld64    r4, [r1+16]
        mov     r8, r7
        mov     r9, r4
        ld64    r2, [r14+144]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+152]
        v2mul   r2, r2, r4
        v2add   r12, r12, r2
        add     r1, r1, r15
        # ky = 4
        ld64    r4, [r1+0]
        ld64    r6, [r1+8]
        ld64    r2, [r14+160]
        v2mul   r2, r2, r4
        v2add   r12, r12, r2
        mov     r8, r5
        mov     r9, r6
        ld64    r2, [r14+168]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+176]
        v2mul   r2, r2, r6
        v2add   r12, r12, r2
        ld64    r4, [r1+16]
        mov     r8, r7
        mov     r9, r4
        ld64    r2, [r14+184]
        v2mul   r2, r2, r8
        v2add   r12, r12, r2
        ld64    r2, [r14+192]
        v2mul   r2, r2, r4
        v2add   r12, r12, r2
        st64pi  r12, [r10]+=8       # y[oy][ox], y[oy][ox + 1]
        muli    r12, r15, 4
        addi    r12, r12, -8
        sub     r1, r1, r12         # back 4 rows, on 2 columns
        brnzdec r11, conv_mac1.pair
        addi    r1, r1, 16          # the next row starts K - 1 = 4 columns on
        brnzdec r0, conv_mac1.row
conv_mac1.done:
        exit
