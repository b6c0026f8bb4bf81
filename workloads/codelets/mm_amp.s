# mm_amp: a matrix product on the stationary-weight AMP (SUPERVISOR codelet, docs/codelets.md;
# the AMP and its costs: docs/timing.md, "The AMP").
#
# Computes, on one tile, out[M][16 nq] = in[M][8 kc] x W[8 kc][16 nq] (zero = 1: the partials
# are zeroed first) or out += in x W (zero = 0: accumulate into them). Each element is the C
# loop `s = out (or 0); for k in order: s = s + in[m][k] * W[k][n]`, each product rounded to
# fp32 and then each sum: the AMP's arithmetic, bit for bit.
#
# Layouts (fp32):
#   in   by chunks of 8 k (as workloads/gemm/gemm.s): chunk c is M rows of 8 values,
#        in[c][m][j] = A[m][8c + j] at in + (c M + m) x 32.
#   W    8 x 16 weight blocks (512 bytes, the ldcw layout): block (q, c) at
#        w + (q kc + c) x 512, its [k][n] = W[8c + k][16q + n] at + (16k + n) x 4; a block
#        column's kc blocks are consecutive (the order they are loaded in).
#   out  partials as rows of 16: block q is M rows of 16, out[q][m][n] = C[m][16q + n] at
#        out + (q M + m) x 64.
# Padding: K is padded to 8 kc, N to 16 nq, with zeros (the layout codelets write them). The
# K padding must be zero in `in` or in W (a finite value times 0 is +-0, which leaves a sum as
# it was; zero in both is the rule). The N padding of W should be zero: its columns of out
# then stay 0 (zeroed first) or unchanged; the caller drops them (mm_partials_to_rows).
#
# The three products of a linear layer y[B][out] = x[B][in] w[out][in]^T + b
# (mlayer_linear_fwd / mlayer_linear_bwd, workloads/mnist/layers.h):
#   forward      y = x w^T      M = B,   K = in,  N = out: in = x (mm_rows_to_chunks),
#                               W = w^T (mm_cols_to_blocks of w), zero = 1; the bias after
#                               (or the partials start as bias rows with zero = 0).
#   input grad   dx = dy w      M = B,   K = out, N = in:  in = dy (mm_rows_to_chunks),
#                               W = w (mm_rows_to_blocks of w), zero = 1.
#   weight grad  dw += dy^T x   M = out, K = B,   N = in:  in = dy^T (mm_cols_to_chunks of
#                               dy), W = x (mm_rows_to_blocks of x), zero = 1 on the first
#                               micro-batch, 0 to accumulate the next ones. Its partials
#                               [nq][out][16] are w's rows in blocks of 16 columns.
# mm_partials_to_rows turns partials back into rows. dx, and dw from zero, equal
# mlayer_linear_bwd's bit for bit (it sums k in order from 0 too); y differs from
# mlayer_linear_fwd's only in the summation order (it sums in eight lanes).
#
# State (words):
#   +0  in     region  chunk 0, row 0 (4-byte aligned)
#   +4  w      region  block (0, 0) (16-byte aligned: ldcw)
#   +8  out    region  block 0, row 0 of the partials (8-byte aligned)
#   +12 M      u32     rows, 0 .. 16383 (the split divides by 6 with a multiply)
#   +16 kc     u32     chunks of 8 k, >= 1
#   +20 nq     u32     blocks of 16 columns, >= 1
#   +24 zero   u32     1: zero the partials first; 0: accumulate into them
#
# How: the supervisor writes the split into mm_amp.tab (worker w takes rows [f(w), f(w+1)),
# f(w) = floor(M w / 6)); then, for each block q and chunk c (nq x kc passes), it loads
# block (q, c) into the weights (32 ldcw), starts six workers with r0 = chunk c's inputs
# (runall) and joins them. A worker streams its rows (8 f32amp steps a row), zeroing its
# partials first on a block's first pass when asked, and drains its pipeline (ampst). Uses
# r0..r11 (keeps r12..r14), returns with ret; mm_amp.tab and mm_amp.pass (104 bytes of the
# codelet's data) are its scratch.
#
# Cycles (docs/timing.md; tests/test_codelets_mm.c derives them again and asserts them), the
# codelet's first instruction at t:
#   prologue, 1 cycle each: 7 ld32, 2 li, 6 x 9 for the split, 6 more; st32, st32, mov, rpt
#   (6), 32 ldcw (1 each): the first runall at t + 110.
#   A pass, runall at c: worker w with R rows takes S = 22 + z + 8aR slots (z = 8R zeroing
#   stores on a block's first pass when zero = 1, else 0; a = f32amp's slots: 1 on Mk2, 2 on
#   Mk1) and exits at e_w = c + w + 6 S_w; join issues at min_w(e_w + 6) and completes at
#   j = max(that + 6, max_w e_w + 1). The next pass's runall is at j + 34 (st32, add, 32
#   ldcw: rpt has no per-pass branch), or j + 51 after a block's last pass (add, add,
#   brnzdec (6), st32, st32, mov, rpt (6), 32 ldcw); after the last pass ret issues at
#   j + 10 and the caller goes on at j + 16.
#   In short, a pass takes 6 max_w S_w + 35 to 40 cycles (the busiest worker's slot).
#   Tutorial layer3 forward (M = 40: workers of 6, 7, 7, 6, 7, 7 rows; kc = 40, nq = 16):
#   474 + 34 = 508 cycles a pass (810 + 34 on a block's first, which zeroes), 330,843 from
#   the first instruction to the caller's next; the AMP's ideal is 40 x 320 x 256 / 16 =
#   204,800 (62%).

        .text
mm_amp:
        ld32    r5, [r1+12]         # M
        ld32    r2, [r1+0]          # in
        ld32    r3, [r1+4]          # weights
        ld32    r4, [r1+8]          # partials
        ld32    r6, [r1+16]         # kc
        ld32    r7, [r1+20]         # nq
        ld32    r8, [r1+24]         # zero
        li      r10, mm_amp.tab
        li      r0, 0               # f(0)
        # worker w: f(w + 1) = (M (w + 1) 43691) >> 18 = floor(M (w + 1) / 6) for M < 16384;
        # its entry: first row x 32, first row x 64, AMP steps (rows x 8)
        muli    r9, r5, 43691
        shri    r9, r9, 18
        sub     r11, r9, r0
        shli    r11, r11, 3
        st32    r11, [r10+8]
        shli    r11, r0, 5
        st32    r11, [r10+0]
        shli    r11, r0, 6
        st32    r11, [r10+4]
        muli    r0, r5, 87382
        shri    r0, r0, 18
        sub     r11, r0, r9
        shli    r11, r11, 3
        st32    r11, [r10+24]
        shli    r11, r9, 5
        st32    r11, [r10+16]
        shli    r11, r9, 6
        st32    r11, [r10+20]
        muli    r9, r5, 131073
        shri    r9, r9, 18
        sub     r11, r9, r0
        shli    r11, r11, 3
        st32    r11, [r10+40]
        shli    r11, r0, 5
        st32    r11, [r10+32]
        shli    r11, r0, 6
        st32    r11, [r10+36]
        muli    r0, r5, 174764
        shri    r0, r0, 18
        sub     r11, r0, r9
        shli    r11, r11, 3
        st32    r11, [r10+56]
        shli    r11, r9, 5
        st32    r11, [r10+48]
        shli    r11, r9, 6
        st32    r11, [r10+52]
        muli    r9, r5, 218455
        shri    r9, r9, 18
        sub     r11, r9, r0
        shli    r11, r11, 3
        st32    r11, [r10+72]
        shli    r11, r0, 5
        st32    r11, [r10+64]
        shli    r11, r0, 6
        st32    r11, [r10+68]
        muli    r0, r5, 262146
        shri    r0, r0, 18
        sub     r11, r0, r9
        shli    r11, r11, 3
        st32    r11, [r10+88]
        shli    r11, r9, 5
        st32    r11, [r10+80]
        shli    r11, r9, 6
        st32    r11, [r10+84]
        cmpeqi  r8, r8, 0
        addi    r8, r8, -1          # zero mask: all ones when zeroing first, else 0
        shli    r5, r5, 5           # M x 32: one chunk of inputs
        li      r10, mm_amp.pass
        li      r11, 0
        addi    r7, r7, -1          # brnzdec runs the block loop nq times
mm_amp.block:
        st32    r4, [r10+0]         # this block's partials
        st32    r8, [r10+4]         # zeroed on its first pass if asked
        mov     r0, r2              # chunk 0
        rpt     r6, mm_amp.pend     # kc passes
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
        runall  mm_amp.worker, r0   # six workers on chunk c's rows
        join
        st32    r11, [r10+4]        # the block's later passes accumulate
        add     r0, r0, r5          # the next chunk
mm_amp.pend:
        add     r4, r4, r5
        add     r4, r4, r5          # the next block's partials: M x 64 on
        brnzdec r7, mm_amp.block
        ret

# A worker: r0 = this pass's chunk of inputs (row 0); every other register starts at 0, so
# r8:r9 is a zero pair and [r8+label] an absolute address.
mm_amp.worker:
        get     r1, $wid
        shli    r1, r1, 4
        ld32    r2, [r1+mm_amp.tab]         # first row x 32
        ld32    r3, [r1+mm_amp.tab+4]       # first row x 64
        ld32    r4, [r1+mm_amp.tab+8]       # AMP steps: rows x 8
        ld32    r5, [r8+mm_amp.pass]        # this block's partials
        ld32    r6, [r8+mm_amp.pass+4]      # zero mask
        add     r2, r2, r0                  # my rows' inputs
        add     r3, r3, r5                  # my rows' partials
        and     r5, r4, r6                  # zeroing stores: 8 a row, or none
        mov     r6, r3
        rpt     r5, mm_amp.zend
        st64pi  r8, [r6]+=8
mm_amp.zend:
        rpt     r4, mm_amp.aend
        f32amp  r3, r2                      # one input against a row of the weights
mm_amp.aend:
        ampst                               # the last row leaves the pipeline
        exit

        .data
        .align  16
mm_amp.tab:                                 # per worker: first x 32, first x 64, steps, -
        .space  96
mm_amp.pass:                                # this block's partials, zero mask
        .space  8
        .text
