# mm_rows_to_blocks: rows of a row-major matrix to mm_amp's weight blocks (WORKER codelet,
# docs/codelets.md).
#
# Moves rows k0 .. k0 + rows - 1 of B[K][N] (row-major fp32) into the 8 x 16 weight blocks
# of mm_amp.s, then writes zrows rows of zeros after them (the K padding: the vertex with
# B's last rows passes 8 kc - K): block (q, c) row k mod 8 = B[k][16q .. 16q + 15], with
# zeros for columns >= N (the N padding). Row k of block column q lies at
# dst + k x 64 + q x kc x 512. Used for the input gradient's w (B = w[out][in]) and the
# weight gradient's x (B = x[B][in]). Split over workers by rows.
#
# State (words):
#   +0  src    region  &B[k0][0] (8-byte aligned)
#   +4  dst    region  the blocks + k0 x 64 (row k0 of block column 0; 8-byte aligned)
#   +8  rows   u32     rows of B to move
#   +12 zrows  u32     rows of zeros after them
#   +16 N      u32     columns, even
#   +20 kc     u32     blocks per block column (ceil(K / 8))
#
# Cycles: 6 x slots (docs/timing.md): 19 + [rows > 0] (1 + rows x (6 + 17 f + 2 t + z))
#   + [zrows > 0] (1 + zrows x (4 + 9 nq)), f = N / 16 (full blocks: 8 x (ld64pi, st64),
#   add), t = (N mod 16) / 2 value pairs and z = ((16 - N mod 16) mod 16) / 2 zero pairs in
#   the last block, nq = ceil(N / 16) (a zero row: 8 st64 and add a block).
#   (prologue: 6 ld32, 10 ALU; brz, brz, exit; a row: mov, 3 rpt, addi, brnzdec; a zero
#   row: mov, rpt, addi, brnzdec)

        .text
mm_rows_to_blocks:
        ld32    r1, [r0+0]          # src
        ld32    r2, [r0+4]          # dst: row k0 of block column 0
        ld32    r3, [r0+8]          # rows
        ld32    r4, [r0+12]         # zrows
        ld32    r5, [r0+16]         # N
        ld32    r6, [r0+20]         # kc
        shri    r7, r5, 4           # full blocks
        andi    r8, r5, 15          # values in the last block, if partial
        li      r9, 16
        sub     r9, r9, r8
        andi    r9, r9, 15
        shri    r9, r9, 1           # zero pairs after them
        shri    r8, r8, 1           # value pairs
        addi    r11, r5, 15
        shri    r11, r11, 4         # nq
        shli    r6, r6, 9           # block column stride: kc x 512
        brz     r3, mm_rows_to_blocks.zrows
        addi    r3, r3, -1
mm_rows_to_blocks.row:
        mov     r10, r2
        rpt     r7, mm_rows_to_blocks.fend
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+0]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+8]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+16]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+24]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+32]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+40]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+48]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+56]
        add     r10, r10, r6
mm_rows_to_blocks.fend:
        rpt     r8, mm_rows_to_blocks.tend
        ld64pi  r12, [r1]+=8
        st64pi  r12, [r10]+=8
mm_rows_to_blocks.tend:
        rpt     r9, mm_rows_to_blocks.zend
        st64pi  r14, [r10]+=8       # r14:r15 = 0 (a worker starts with them zero)
mm_rows_to_blocks.zend:
        addi    r2, r2, 64
        brnzdec r3, mm_rows_to_blocks.row
mm_rows_to_blocks.zrows:
        brz     r4, mm_rows_to_blocks.end
        addi    r4, r4, -1
mm_rows_to_blocks.zrow:
        mov     r10, r2
        rpt     r11, mm_rows_to_blocks.zbend
        st64    r14, [r10+0]
        st64    r14, [r10+8]
        st64    r14, [r10+16]
        st64    r14, [r10+24]
        st64    r14, [r10+32]
        st64    r14, [r10+40]
        st64    r14, [r10+48]
        st64    r14, [r10+56]
        add     r10, r10, r6
mm_rows_to_blocks.zbend:
        addi    r2, r2, 64
        brnzdec r4, mm_rows_to_blocks.zrow
mm_rows_to_blocks.end:
        exit
