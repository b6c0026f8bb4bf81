# maxpool_relu_fwd: 2 x 2 max-pool with stride 2, then ReLU (mlayer_pool_relu_fwd). For each
# output row r < R and column j < w / 2, with v0, v1 = in[2r][2j], in[2r][2j + 1] and v2, v3
# = in[2r + 1][2j], in[2r + 1][2j + 1]:
#   top = max(v0, v1), bot = max(v2, v3), m = max(top, bot), out[r][j] = m > 0 ? m : +0,
#   arg[r][j] = bot > top ? 2 + (v3 > v2) : (v1 > v0)   (0..3, row-major; ties keep the first)
# as one unsigned 32-bit word per output. The planes of [planes][h][w] follow one another,
# so R = planes x h / 2 rows cover them all (a worker takes any run of output rows).
# Bit for bit the same as mlayer_pool_relu_fwd for every input without NaN (the maxima are
# fmax, so a NaN is skipped where the C tournament would keep it).
#
# State (5 words; runall maxpool_relu_fwd.all uses six of them, 20 bytes apart):
#   +0  in   region  R x 2 rows of w floats
#   +4  out  region  R x w/2 floats
#   +8  arg  region  R x w/2 words
#   +12 R    u32     output rows, 1 or more
#   +16 w    u32     input row length, even, 2 or more
# w mod 4 = 0: in 16-byte aligned, out and arg 8-byte aligned (two windows a step: two
# ld128pi, 20 for the maxima and args, two li and v2max, v2add for the ReLU, two st64pi).
# w mod 4 = 2: in 8-byte aligned, out and arg 4-byte aligned (one window a step: two ld64pi,
# 10 for the maximum and arg, fmax, fadd for the ReLU, two st32pi).
# The arg: c1 = v1 > v0, c2 = v3 > v2, c3 = bot > top (fcmplt), arg = c1 + c3 (2 + c2 - c1).
# The ReLU: max(m, +0) + 0 (fmaxf may give -0 for max(-0, +0); adding +0 makes it +0).
#
# Cycles (docs/timing.md: 6 tile cycles a worker slot; rpt costs one slot, its body no
# overhead; taken or not, a worker's branch is one slot):
#   w mod 4 = 0: S = 11 + R (8 + 7w)     (28 slots per two windows)
#   w mod 4 = 2: S = 11 + R (8 + 8w)     (16 slots per window)
# worker slots (6 x S tile cycles): 10 to set up and choose, per row 8 (ld32, shri, rpt, ld32,
# shli, two add, brnzdec) + the windows, exit.
# maxpool_relu_fwd.all (runall; worker w takes the state at r0 + 20w) adds 3 slots.

        .text
maxpool_relu_fwd.all:
        get     r1, $wid
        muli    r1, r1, 20
        add     r0, r0, r1
maxpool_relu_fwd:
        ld32    r1, [r0+0]          # in row 2r
        ld32    r3, [r0+4]          # out
        ld32    r14, [r0+8]         # arg
        ld32    r15, [r0+12]        # R
        ld32    r4, [r0+16]         # w
        shli    r5, r4, 2
        add     r2, r1, r5          # in row 2r + 1
        addi    r15, r15, -1
        andi    r6, r4, 2
        brnz    r6, maxpool_relu_fwd.one
maxpool_relu_fwd.row2:
        ld32    r4, [r0+16]
        shri    r4, r4, 2           # w / 4 pairs of windows
        rpt     r4, maxpool_relu_fwd.body2_end
        ld128pi r4, [r1]+=16        # a0 a1 b0 b1
        ld128pi r8, [r2]+=16        # a2 a3 b2 b3
        fcmplt  r12, r4, r5         # c1 (a)
        fmax    r4, r4, r5          # top
        fcmplt  r5, r8, r9          # c2
        fmax    r8, r8, r9          # bot
        fcmplt  r9, r4, r8          # c3
        fmax    r8, r4, r8          # m (a)
        sub     r5, r5, r12
        addi    r5, r5, 2
        mul     r5, r5, r9
        add     r12, r12, r5        # arg (a)
        fcmplt  r13, r6, r7         # c1 (b)
        fmax    r6, r6, r7
        fcmplt  r7, r10, r11        # c2
        fmax    r10, r10, r11
        fcmplt  r11, r6, r10        # c3
        fmax    r9, r6, r10         # m (b)
        sub     r7, r7, r13
        addi    r7, r7, 2
        mul     r7, r7, r11
        add     r13, r13, r7        # arg (b)
        li      r4, 0
        li      r5, 0
        v2max   r8, r8, r4
        v2add   r8, r8, r4
        st64pi  r8, [r3]+=8
        st64pi  r12, [r14]+=8
maxpool_relu_fwd.body2_end:
        ld32    r4, [r0+16]
        shli    r4, r4, 2
        add     r1, r1, r4          # skip the row the other pointer read
        add     r2, r2, r4
        brnzdec r15, maxpool_relu_fwd.row2
        exit
maxpool_relu_fwd.one:               # r10:r11 stay zero
        ld32    r4, [r0+16]
        shri    r4, r4, 1           # w / 2 windows
        rpt     r4, maxpool_relu_fwd.body1_end
        ld64pi  r4, [r1]+=8         # v0 v1
        ld64pi  r6, [r2]+=8         # v2 v3
        fcmplt  r8, r4, r5          # c1
        fmax    r4, r4, r5          # top
        fcmplt  r9, r6, r7          # c2
        fmax    r6, r6, r7          # bot
        fcmplt  r5, r4, r6          # c3
        fmax    r4, r4, r6          # m
        sub     r9, r9, r8
        addi    r9, r9, 2
        mul     r9, r9, r5
        add     r8, r8, r9          # arg
        fmax    r4, r4, r10
        fadd    r4, r4, r10
        st32pi  r4, [r3]+=4
        st32pi  r8, [r14]+=4
maxpool_relu_fwd.body1_end:
        ld32    r4, [r0+16]
        shli    r4, r4, 2
        add     r1, r1, r4
        add     r2, r2, r4
        brnzdec r15, maxpool_relu_fwd.one
        exit
