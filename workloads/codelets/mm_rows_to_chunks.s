# mm_rows_to_chunks: rows of a row-major matrix to mm_amp's input layout (WORKER codelet,
# docs/codelets.md).
#
# Moves rows m0 .. m0 + rows - 1 of A[.][K] (row-major fp32) to the chunked layout of
# mm_amp.s: dst[c][m][j] = A[m][8c + j] for c < kc = ceil(K / 8), j < 8, and 0 where
# 8c + j >= K (the K padding). Used for the forward pass's x and the input gradient's dy.
# Split a matrix over workers by rows: each vertex gets its rows' src and dst.
#
# State (words):
#   +0  src    region  &A[m0][0] (8-byte aligned)
#   +4  dst    region  &dst[0][m0][0] (8-byte aligned)
#   +8  rows   u32     rows to move
#   +12 K      u32     values per row, even
#   +16 M      u32     rows per chunk in dst (chunk c starts M x 32 bytes after chunk c - 1)
#
# Cycles: 6 x slots, from the first issue to the slot's release (docs/timing.md: a worker
# instruction is one slot of 6 cycles; none of these moves more than 8 bytes):
#   rows = 0: 15 slots; else 16 + rows x (6 + 9 f + 2 t + z), with f = K / 8 (full chunks:
#   4 ld64pi, 4 st64, add), t = (K mod 8) / 2 value pairs and z = ((8 - K mod 8) mod 8) / 2
#   zero pairs in the last chunk.
#   (prologue: 5 ld32, 8 ALU, brz, addi; a row: mov, 3 rpt, addi, brnzdec; exit)

        .text
mm_rows_to_chunks:
        ld32    r1, [r0+0]          # src
        ld32    r2, [r0+4]          # dst: this row's place in chunk 0
        ld32    r3, [r0+8]          # rows
        ld32    r4, [r0+12]         # K
        ld32    r5, [r0+16]         # M
        shri    r6, r4, 3           # full chunks
        andi    r7, r4, 7           # values in the last chunk, if partial
        li      r11, 8
        sub     r11, r11, r7
        andi    r11, r11, 7
        shri    r11, r11, 1         # zero pairs after them
        shri    r7, r7, 1           # value pairs
        shli    r5, r5, 5           # chunk stride: M x 32
        brz     r3, mm_rows_to_chunks.end
        addi    r3, r3, -1
mm_rows_to_chunks.row:
        mov     r10, r2
        rpt     r6, mm_rows_to_chunks.fend
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+0]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+8]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+16]
        ld64pi  r12, [r1]+=8
        st64    r12, [r10+24]
        add     r10, r10, r5
mm_rows_to_chunks.fend:
        rpt     r7, mm_rows_to_chunks.tend
        ld64pi  r12, [r1]+=8
        st64pi  r12, [r10]+=8
mm_rows_to_chunks.tend:
        rpt     r11, mm_rows_to_chunks.zend
        st64pi  r14, [r10]+=8       # r14:r15 = 0 (a worker starts with them zero)
mm_rows_to_chunks.zend:
        addi    r2, r2, 32
        brnzdec r3, mm_rows_to_chunks.row
mm_rows_to_chunks.end:
        exit
