# mm_cols_to_blocks: the rows of a row-major matrix to the columns of mm_amp's weight
# blocks, i.e. its transpose as blocks (WORKER codelet, docs/codelets.md).
#
# Moves rows n0 .. n0 + cols - 1 of A[N][K] (row-major fp32) into columns n0 .. of the 8 x 16
# weight blocks of mm_amp.s, then writes zcols columns of zeros after them (the N padding:
# the vertex with A's last rows passes 16 nq - N): block (q, c) element [k][n mod 16] =
# A[n][8c + k], with zeros for k >= K (the K padding). Element (k, n) lies at
# dst + (n / 16) x kc x 512 + k x 64 + (n mod 16) x 4. Used for the forward pass's w^T
# (A = w[out][in]: N = out, K = in). Split over workers by columns.
#
# State (words):
#   +0  src    region  &A[n0][0] (8-byte aligned)
#   +4  dst    region  the blocks: block (0, 0) (4-byte aligned)
#   +8  n0     u32     the first column
#   +12 cols   u32     rows of A to move (columns of the blocks)
#   +16 zcols  u32     columns of zeros after them
#   +20 K      u32     A's row length, even
#
# Cycles: 6 x slots (docs/timing.md): 15 + [cols > 0] (1 + cols x (10 + 3K/2 + 8kc - K))
#   + [zcols > 0] (1 + zcols x (9 + 8kc)), kc = ceil(K / 8): per column 6 slots of
#   address, 2 rpt, addi, brnzdec; 3 slots a pair of values (ld64pi, st32, st32pi); one st32pi
#   a zero. (prologue: 6 ld32, 6 ALU; brz, brz, exit)

        .text
mm_cols_to_blocks:
        ld32    r1, [r0+0]          # src: row n0
        ld32    r2, [r0+4]          # dst: block (0, 0)
        ld32    r3, [r0+8]          # n0
        ld32    r4, [r0+12]         # cols
        ld32    r5, [r0+16]         # zcols
        ld32    r6, [r0+20]         # K
        addi    r7, r6, 7
        shri    r7, r7, 3           # kc
        shli    r8, r7, 9           # block column stride: kc x 512
        shli    r7, r7, 3           # 8 kc: a column's length
        sub     r9, r7, r6          # zeros after a column's K values
        shri    r6, r6, 1           # pairs of values a column
        brz     r4, mm_cols_to_blocks.zcols
        addi    r4, r4, -1
mm_cols_to_blocks.col:
        shri    r10, r3, 4
        mul     r10, r10, r8
        andi    r11, r3, 15
        shli    r11, r11, 2
        add     r10, r10, r11
        add     r10, r10, r2        # element (0, n)
        rpt     r6, mm_cols_to_blocks.cend
        ld64pi  r12, [r1]+=8
        st32    r13, [r10+64]       # k + 1
        st32pi  r12, [r10]+=128     # k
mm_cols_to_blocks.cend:
        rpt     r9, mm_cols_to_blocks.zend
        st32pi  r14, [r10]+=64      # r14 = 0 (a worker starts with it zero)
mm_cols_to_blocks.zend:
        addi    r3, r3, 1
        brnzdec r4, mm_cols_to_blocks.col
mm_cols_to_blocks.zcols:
        brz     r5, mm_cols_to_blocks.end
        addi    r5, r5, -1
mm_cols_to_blocks.zcol:
        shri    r10, r3, 4
        mul     r10, r10, r8
        andi    r11, r3, 15
        shli    r11, r11, 2
        add     r10, r10, r11
        add     r10, r10, r2
        rpt     r7, mm_cols_to_blocks.zcend
        st32pi  r14, [r10]+=64
mm_cols_to_blocks.zcend:
        addi    r3, r3, 1
        brnzdec r5, mm_cols_to_blocks.zcol
mm_cols_to_blocks.end:
        exit
