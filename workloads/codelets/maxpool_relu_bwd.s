# maxpool_relu_bwd: the gradient of maxpool_relu_fwd (mlayer_pool_relu_bwd, bit for bit for
# every input). For each output row r < R and column j < w / 2, with g = out[r][j] > 0 ?
# dout[r][j] : +0 and a = arg[r][j] (0..3), the window's four floats of din are written:
#   din[2r + (a >> 1)][2j + (a & 1)] = g, the other three +0.
# Every float of the R x 2 rows is written (no separate zeroing). The selects are integer:
# fcmplt gives 1 or 0, and a float's bits x 1 or 0 are the float or +0.
#
# State (6 words; runall maxpool_relu_bwd.all uses six of them, 24 bytes apart):
#   +0  dout  region  R x w/2 floats
#   +4  out   region  R x w/2 floats (the forward output)
#   +8  arg   region  R x w/2 words, as maxpool_relu_fwd writes them
#   +12 din   region  R x 2 rows of w floats, 8-byte aligned
#   +16 R     u32     output rows, 1 or more
#   +20 w     u32     input row length, even, 2 or more
# w mod 4 = 0: dout, out and arg 8-byte aligned (two windows a step: three ld64pi, 20 for the
# selects, four st64pi); w mod 4 = 2: 4-byte aligned (one window a step: three ld32pi, 10,
# two st64pi).
#
# Cycles (docs/timing.md: 6 tile cycles a worker slot; rpt costs one slot, its body no
# overhead; taken or not, a worker's branch is one slot):
#   w mod 4 = 0: S = 12 + R (8 + 27 w/4)   (27 slots per two windows)
#   w mod 4 = 2: S = 12 + R (8 + 15 w/2)   (15 slots per window)
# worker slots (6 x S tile cycles): 11 to set up and choose, per row 8 (ld32, shri, rpt, ld32,
# shli, two add, brnzdec) + the windows, exit.
# maxpool_relu_bwd.all (runall; worker w takes the state at r0 + 24w) adds 3 slots.
# r15 stays zero.

        .text
maxpool_relu_bwd.all:
        get     r1, $wid
        muli    r1, r1, 24
        add     r0, r0, r1
maxpool_relu_bwd:
        ld32    r12, [r0+0]         # dout
        ld32    r3, [r0+4]          # out
        ld32    r13, [r0+8]         # arg
        ld32    r1, [r0+12]         # din row 2r
        ld32    r14, [r0+16]        # R
        ld32    r4, [r0+20]         # w
        shli    r5, r4, 2
        add     r2, r1, r5          # din row 2r + 1
        addi    r14, r14, -1
        andi    r6, r4, 2
        brnz    r6, maxpool_relu_bwd.one
maxpool_relu_bwd.row2:
        ld32    r4, [r0+20]
        shri    r4, r4, 2           # w / 4 pairs of windows
        rpt     r4, maxpool_relu_bwd.body2_end
        ld64pi  r4, [r3]+=8         # out (a, b)
        fcmplt  r4, r15, r4
        fcmplt  r5, r15, r5
        ld64pi  r6, [r12]+=8        # dout (a, b)
        mul     r6, r6, r4          # g (a)
        mul     r7, r7, r5          # g (b)
        ld64pi  r8, [r13]+=8        # arg (a, b)
        shri    r10, r8, 1
        mul     r11, r6, r10        # bottom row's g
        sub     r6, r6, r11         # top row's g
        andi    r8, r8, 1
        mul     r5, r6, r8
        sub     r4, r6, r5
        st64pi  r4, [r1]+=8
        mul     r5, r11, r8
        sub     r4, r11, r5
        st64pi  r4, [r2]+=8
        shri    r10, r9, 1
        mul     r11, r7, r10
        sub     r7, r7, r11
        andi    r9, r9, 1
        mul     r5, r7, r9
        sub     r4, r7, r5
        st64pi  r4, [r1]+=8
        mul     r5, r11, r9
        sub     r4, r11, r5
        st64pi  r4, [r2]+=8
maxpool_relu_bwd.body2_end:
        ld32    r4, [r0+20]
        shli    r4, r4, 2
        add     r1, r1, r4          # skip the row the other pointer wrote
        add     r2, r2, r4
        brnzdec r14, maxpool_relu_bwd.row2
        exit
maxpool_relu_bwd.one:
        ld32    r4, [r0+20]
        shri    r4, r4, 1           # w / 2 windows
        rpt     r4, maxpool_relu_bwd.body1_end
        ld32pi  r4, [r3]+=4         # out
        fcmplt  r4, r15, r4
        ld32pi  r6, [r12]+=4        # dout
        mul     r6, r6, r4          # g
        ld32pi  r8, [r13]+=4        # arg
        shri    r10, r8, 1
        mul     r11, r6, r10
        sub     r6, r6, r11
        andi    r8, r8, 1
        mul     r5, r6, r8
        sub     r4, r6, r5
        st64pi  r4, [r1]+=8
        mul     r5, r11, r8
        sub     r4, r11, r5
        st64pi  r4, [r2]+=8
maxpool_relu_bwd.body1_end:
        ld32    r4, [r0+20]
        shli    r4, r4, 2
        add     r1, r1, r4
        add     r2, r2, r4
        brnzdec r14, maxpool_relu_bwd.one
        exit
