# mm_partials_to_rows: mm_amp's partials back to a row-major matrix (WORKER codelet,
# docs/codelets.md).
#
# Moves rows m0 .. m0 + rows - 1 of the partials P[nq][M][16] (mm_amp.s's out layout) to
# C[.][N] (row-major fp32): C[m][n] = P[n / 16][m][n mod 16] for n < N; the N padding
# (columns N .. 16 nq - 1) is dropped. Used for the forward pass's y and the input gradient's
# dx (and dw, when the weights are kept in rows).
#
# State (words):
#   +0  src    region  &P[0][m0][0] (16-byte aligned: ld128pi)
#   +4  dst    region  &C[m0][0] (8-byte aligned)
#   +8  rows   u32     rows to move
#   +12 N      u32     columns, even
#   +16 M      u32     rows per block in src (block q starts M x 64 bytes after block q - 1)
#
# Cycles: 6 x slots (docs/timing.md; ld128pi loads 16 bytes, st64pi stores 8: one slot each):
#   rows = 0: 12 slots; else 13 + rows x (5 + 13 f + 2 t), with f = N / 16 (full blocks:
#   4 x (ld128pi, st64pi, st64pi), add) and t = (N mod 16) / 2 pairs of the last block.
#   (prologue: 5 ld32, 5 ALU, brz, addi; a row: mov, 2 rpt, addi, brnzdec; exit)

        .text
mm_partials_to_rows:
        ld32    r1, [r0+0]          # src: this row's partials in block 0
        ld32    r2, [r0+4]          # dst
        ld32    r3, [r0+8]          # rows
        ld32    r4, [r0+12]         # N
        ld32    r5, [r0+16]         # M
        shri    r6, r4, 4           # full blocks
        andi    r7, r4, 15
        shri    r7, r7, 1           # pairs in the last block, if partial
        shli    r5, r5, 6
        addi    r5, r5, -64         # from the end of a row's 16 to the same row of the next block
        brz     r3, mm_partials_to_rows.end
        addi    r3, r3, -1
mm_partials_to_rows.row:
        mov     r10, r1
        rpt     r6, mm_partials_to_rows.fend
        ld128pi r12, [r10]+=16
        st64pi  r12, [r2]+=8
        st64pi  r14, [r2]+=8
        ld128pi r12, [r10]+=16
        st64pi  r12, [r2]+=8
        st64pi  r14, [r2]+=8
        ld128pi r12, [r10]+=16
        st64pi  r12, [r2]+=8
        st64pi  r14, [r2]+=8
        ld128pi r12, [r10]+=16
        st64pi  r12, [r2]+=8
        st64pi  r14, [r2]+=8
        add     r10, r10, r5
mm_partials_to_rows.fend:
        rpt     r7, mm_partials_to_rows.tend
        ld64pi  r12, [r10]+=8
        st64pi  r12, [r2]+=8
mm_partials_to_rows.tend:
        addi    r1, r1, 64
        brnzdec r3, mm_partials_to_rows.row
mm_partials_to_rows.end:
        exit
