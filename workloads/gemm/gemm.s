# gemm.s: a tile's part of C = A x B on the stationary-weight AMP (docs/timing.md, "The
# GEMM codelet").
#
# The tile owns rows of C and one or more 16-column blocks of it. A pass takes one 8 x 16
# block of B (8 values of k, the block's 16 columns) as the AMP's weights and streams the
# tile's rows of A through it: each row's 8 inputs are 8 f32amp steps, which add the row's
# 8 products to its 16 partials of C. There is one pass per block of columns and chunk of
# 8 k; the supervisor loads each pass's weights (32 x ldcw, 16 bytes a cycle) while no
# worker runs, and the six workers share the rows.
#
# The loader (workloads/gemm/gemm.c) fills `params` and the tile memory after the image:
#   params+0  passes
#   params+4  the weights: 512 bytes per pass, in pass order
#   params+8  the pass descriptors: per pass, per worker (16 bytes each)
#               +0 its first row of A for the pass's chunk (rows of 8 fp32, 32 bytes)
#               +4 its first row of C partials for the pass's block (16 fp32, 64 bytes)
#               +8 AMP steps: rows x 8
#               +12 8-byte stores that zero its partials first: rows x 8 on a block's first
#                   pass, 0 after
# A worker starts with every register but r0 zero (docs/isa.md), so r8:r9 is a zero pair.

        .text
        .global main
main:
        li      r1, params
        ld32    r2, [r1+0]          # passes
        ld32    r3, [r1+4]          # weights
        ld32    r4, [r1+8]          # descriptors
        brz     r2, done
        addi    r2, r2, -1          # brnzdec runs the body passes times
pass:
        ldcw    0, r3
        ldcw    1, r3
        ldcw    2, r3
        ldcw    3, r3
        ldcw    4, r3
        ldcw    5, r3
        ldcw    6, r3
        ldcw    7, r3
        ldcw    8, r3
        ldcw    9, r3
        ldcw    10, r3
        ldcw    11, r3
        ldcw    12, r3
        ldcw    13, r3
        ldcw    14, r3
        ldcw    15, r3
        ldcw    16, r3
        ldcw    17, r3
        ldcw    18, r3
        ldcw    19, r3
        ldcw    20, r3
        ldcw    21, r3
        ldcw    22, r3
        ldcw    23, r3
        ldcw    24, r3
        ldcw    25, r3
        ldcw    26, r3
        ldcw    27, r3
        ldcw    28, r3
        ldcw    29, r3
        ldcw    30, r3
        ldcw    31, r3
        runall  worker, r4          # six workers, r0 = this pass's descriptors
        join
        addi    r4, r4, 96          # 6 descriptors of 16 bytes
        brnzdec r2, pass
done:
        halt

worker:
        get     r1, $wid
        shli    r1, r1, 4
        add     r0, r0, r1          # r0 = my descriptor
        ld32    r2, [r0+0]          # A rows
        ld32    r3, [r0+4]          # C partials
        ld32    r4, [r0+8]          # AMP steps
        ld32    r5, [r0+12]         # zeroing stores
        mov     r6, r3
        rpt     r5, zend
        st64pi  r8, [r6]+=8         # partials = 0 on the block's first pass
zend:
        rpt     r4, aend
        f32amp  r3, r2              # one input of a row against 16 columns of weights
aend:
        ampst                       # the last row leaves the pipeline
        exit

        .data
        .align  8
params:
        .space  12
