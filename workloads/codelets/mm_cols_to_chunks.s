# mm_cols_to_chunks: the columns of a row-major matrix to mm_amp's input layout, i.e. its
# transpose by chunks (WORKER codelet, docs/codelets.md).
#
# Moves columns m0 .. m0 + rows - 1 of A[K][L] (row-major fp32) to the chunked layout of
# mm_amp.s as rows: dst[c][m][j] = A[8c + j][m] for c < kc = ceil(K / 8), j < 8, and 0 where
# 8c + j >= K (the K padding). Used for the weight gradient's dy^T (A = dy[B][out]: K = B,
# the rows of dst are the layer's outputs). Split over workers by columns. Rows of dst outside
# the vertices' columns (M larger than L, to pad the rows) are not written: in mm_amp a row of
# inputs only reaches the same row of the partials, which the caller drops.
#
# State (words):
#   +0  src    region  &A[0][m0] (4-byte aligned)
#   +4  dst    region  &dst[0][m0][0] (4-byte aligned)
#   +8  rows   u32     columns of A to move (rows of dst)
#   +12 K      u32     rows of A, >= 1
#   +16 L      u32     A's row length (elements)
#   +20 M      u32     rows per chunk in dst (chunk c starts M x 32 bytes after chunk c - 1)
#
# Cycles: 6 x slots (docs/timing.md): 15 + 92 kc + rows x (K + 8 kc), kc = ceil(K / 8):
#   per chunk mov, li, add, brnzdec; per k (8 a chunk) cmpltu, mul, sub, mov, mov, 2 rpt,
#   addi, addi, add, brnzdec, and 2 slots a value (ld32pi, st32pi) for k < K, 1 (st32pi of
#   0) for a padding k. (prologue: 6 ld32, 4 ALU, brz, addi, 2 li; exit)

        .text
mm_cols_to_chunks:
        ld32    r1, [r0+0]          # src: row k = 0
        ld32    r2, [r0+4]          # dst: chunk 0
        ld32    r3, [r0+8]          # rows
        ld32    r4, [r0+12]         # K
        ld32    r5, [r0+16]         # L
        ld32    r6, [r0+20]         # M
        shli    r5, r5, 2           # src row stride
        shli    r6, r6, 5           # chunk stride: M x 32
        addi    r7, r4, 7
        shri    r7, r7, 3           # kc
        brz     r7, mm_cols_to_chunks.end
        addi    r7, r7, -1
        li      r8, 0               # k
        li      r0, 0
mm_cols_to_chunks.chunk:
        mov     r9, r2              # dst of (c, j = 0)
        li      r10, 7              # j: 8 values of k a chunk
mm_cols_to_chunks.k:
        cmpltu  r11, r8, r4         # a value (k < K) or padding
        mul     r11, r11, r3        # values to copy: rows, or 0
        sub     r12, r3, r11        # zeros to store: 0, or rows
        mov     r13, r1
        mov     r14, r9
        rpt     r11, mm_cols_to_chunks.cend
        ld32pi  r15, [r13]+=4
        st32pi  r15, [r14]+=32
mm_cols_to_chunks.cend:
        rpt     r12, mm_cols_to_chunks.zend
        st32pi  r0, [r14]+=32
mm_cols_to_chunks.zend:
        addi    r9, r9, 4
        addi    r8, r8, 1
        add     r1, r1, r5
        brnzdec r10, mm_cols_to_chunks.k
        add     r2, r2, r6
        brnzdec r7, mm_cols_to_chunks.chunk
mm_cols_to_chunks.end:
        exit
