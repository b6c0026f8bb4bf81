# conv_amp.s: SUPERVISOR codelet. Convolution partial sums on the stationary-weight AMP
# (docs/timing.md, "The AMP"), in the manner of poplibs' ConvPartialnx1 / ConvPartial1x1Out:
# a list of passes, each loading one 8 x 16 weight block (32 ldcw) and streaming rows of 8
# fp32 inputs through it into rows of 16 fp32 partial sums; the six workers take the rows
# of a pass as runs from static worklists (poplibs' partitions: out offset, count, in offset).
#
# One codelet serves every AMP use of the tutorial's convolutions (stride 1, no padding,
# K <= 8); the caller's tables say which (cplan_fwd, cplan_dx, cplan_wgrad in
# workloads/graph/conv_plan.h build them):
#   forward       y = conv(x) (mlayer_conv_fwd without the bias). x [B][Cin][H][W] as the
#                 C layers keep it (no transform; the 8 - K floats past x are read, times a
#                 zero weight: they must be finite, e.g. a zero pad);
#                 a row = one output pixel, its inputs x[ci][oy + ky][ox .. ox + 7]: the
#                 kernel column kx is folded into the AMP's 8 inputs (weights 0 for kx >= K,
#                 poplibs' "expand dims" transform); passes (out block ob, ci, ky), the
#                 first of each ob zeroing; weights conv_pack'ed from w [Cout][Cin][K][K];
#                 y partials [B][Go][Ho Wo][16], conv_ungroup -> [B][Cout][Ho][Wo].
#                 Sums in (ci, ky, kx) order from 0: bit-exact with mlayer_conv_fwd.
#   input grad    dx = the full correlation of dy with the flipped kernel. dy grouped
#                 [B][Go][Ho Wo][16] (conv_pack); a row = one dy pixel (oy, ox), its
#                 inputs 8 of its channels, its partials dx's row at (oy + ky, ox + kx);
#                 passes (ky, kx, chunk of 8 output channels), the zero padding is simply
#                 never listed; zeroing phase first (zall); dx partials [B][Gi][H W][16],
#                 conv_ungroup -> [B][Cin][H][W].
#   weight grad   roles swapped, as poplibs does: the weights are 8 pixels x 16 channels of
#                 dy grouped (contiguous 512 bytes: no pack), passes (ob, chunk of 8 pixels
#                 of an output row, Wo % 8 == 0); a row = one tap (ci, ky, kx), its inputs x
#                 at the chunk's 8 pixels; partials dw^T [Go][Cin K K][16], zeroed on
#                 the first chunk; conv_ungroup adds them into dw [Cout][Cin][K][K] (one
#                 sample a call: bit-exact where mlayer_conv_bwd sums a sample in pixel order).
# (Go = ceil(Cout / 16), Gi = ceil(Cin / 16): groups of 16 channels, the last zero-padded.)
# A layer splits over tiles by samples (B a call) and by output blocks (a tile's pass table
# lists only its blocks; for the weight gradient each tile then holds a partial dw to be
# reduced); over the six workers by rows (worklists, split evenly, runs cut where needed).
#
# Each pass's sums run row by row in input order, each product rounded then added
# (docs/timing.md): the order of the C loop `s = s + x * w` over the streamed inputs. The
# runs of one pass must name distinct partial rows (a worker stores each row while it
# streams the next). ldcw faults while a worker runs: the graph joins a compute set's
# running worker vertices before it calls a supervisor vertex.
#
# State (words; addresses are bytes):
#   +0  in      region  base of the streamed inputs (fp32, 4-aligned); a row reads 8 consecutive
#                       floats, which must be finite (weights of padding inputs are 0)
#   +4  out     region  base of the partials (rows of 16 fp32, 8-aligned)
#   +8  wts     region  the weight blocks, 512 bytes per pass in pass order (f32[8][16],
#                       16-aligned)
#   +12 wl      region  worklists (u32): wl[0..5] = byte offset from wl of worker w's list; a
#                       list is nruns, then per run: out offset (bytes), rows, in offset (bytes)
#   +16 radj    u32     bytes added to the input pointer after each row (its 8 steps add 32)
#   +20 passes  u32     number of passes (>= 1)
#   +24 ptab    region  the pass table (u32[passes][3]): in offset, out offset (bytes, added to
#                       in and out for every run of the pass), zero stores per row (8: the pass
#                       zeroes its rows' partials first; 0: it accumulates)
#   +28 zall    u32     8-byte zero stores per worker before the passes (worker w zeroes
#                       out + 8 zall w .. out + 8 zall (w + 1)); 0: no zeroing phase
#   +32 scratch u32     the current pass's table entry: the supervisor writes it for its workers
#
# Cycles (docs/timing.md; on Mk2, where f32amp is 1 slot and ampst 8). A worker of a pass
# whose list has runs of r_1 .. r_n rows takes
#   S = 27 + sum_i (10 + (9 + z) r_i) slots (S = 26 with no runs), z = the pass's zero stores;
# the zeroing worker S_z = 8 + zall. The supervisor: 4 ld32 from its entry at t, brz at t + 10
# (load-use) to t + 16; with zall > 0 runall (zeroing) there and join; addi; then per pass
# st32 and 32 ldcw (33 cycles), runall at c, join at min over w of c + w + 6 S_w + 6, done
# at J = max(join + 6, max over w of c + w + 6 S_w + 1); addi, brnzdec: the next pass's st32
# at J + 7; after the last, ret at J + 7 returns to the caller at J + 13.
        .text
conv_amp:
        ld32    r2, [r1+8]          # weights
        ld32    r3, [r1+20]         # passes
        ld32    r4, [r1+24]         # pass table
        ld32    r5, [r1+28]         # zall
        brz     r5, conv_amp.p
        runall  conv_amp.z, r1      # zero the whole output first
        join
conv_amp.p:
        addi    r3, r3, -1          # brnzdec runs the body passes times
conv_amp.pass:
        st32    r4, [r1+32]         # this pass's table entry, for the workers
        ldcw    0, r2
        ldcw    1, r2
        ldcw    2, r2
        ldcw    3, r2
        ldcw    4, r2
        ldcw    5, r2
        ldcw    6, r2
        ldcw    7, r2
        ldcw    8, r2
        ldcw    9, r2
        ldcw    10, r2
        ldcw    11, r2
        ldcw    12, r2
        ldcw    13, r2
        ldcw    14, r2
        ldcw    15, r2
        ldcw    16, r2
        ldcw    17, r2
        ldcw    18, r2
        ldcw    19, r2
        ldcw    20, r2
        ldcw    21, r2
        ldcw    22, r2
        ldcw    23, r2
        ldcw    24, r2
        ldcw    25, r2
        ldcw    26, r2
        ldcw    27, r2
        ldcw    28, r2
        ldcw    29, r2
        ldcw    30, r2
        ldcw    31, r2
        runall  conv_amp.w, r1
        join
        addi    r4, r4, 12          # next table entry
        brnzdec r3, conv_amp.pass
        ret

# The zeroing worker: its share of the output, with the zero pair r12:r13.
conv_amp.z:
        ld32    r1, [r0+4]          # out
        ld32    r2, [r0+28]         # zall
        get     r3, $wid
        mul     r3, r3, r2
        shli    r3, r3, 3
        add     r1, r1, r3
        rpt     r2, conv_amp.zzend
        st64pi  r12, [r1]+=8
conv_amp.zzend:
        exit

# The pass worker: its runs of rows. r12:r13 stay zero (a worker starts with them zero).
conv_amp.w:
        ld32    r1, [r0+32]         # the pass's table entry
        ld32    r2, [r0+0]          # in
        ld32    r3, [r0+4]          # out
        ld32    r4, [r1+0]          # the pass's in offset
        ld32    r5, [r1+4]          # its out offset
        ld32    r6, [r1+8]          # its zero stores per row
        add     r2, r2, r4
        add     r3, r3, r5
        ld32    r4, [r0+12]         # worklists
        ld32    r5, [r0+16]         # row adjust
        get     r7, $wid
        shli    r7, r7, 2
        add     r7, r7, r4
        ld32    r7, [r7+0]
        add     r4, r4, r7          # my list
        ld32pi  r7, [r4]+=4         # runs
        brz     r7, conv_amp.wdone
        addi    r7, r7, -1
conv_amp.run:
        ld32pi  r8, [r4]+=4         # out offset
        ld32pi  r9, [r4]+=4         # rows
        ld32pi  r10, [r4]+=4        # in offset
        add     r8, r8, r3          # partials
        add     r10, r10, r2        # inputs
        mul     r11, r9, r6         # zero stores (0 when the pass accumulates)
        mov     r1, r8
        rpt     r11, conv_amp.zend
        st64pi  r12, [r1]+=8
conv_amp.zend:
        rpt     r9, conv_amp.rend
        f32amp  r8, r10             # a row: 8 inputs against the 8 x 16 weights
        f32amp  r8, r10
        f32amp  r8, r10
        f32amp  r8, r10
        f32amp  r8, r10
        f32amp  r8, r10
        f32amp  r8, r10
        f32amp  r8, r10
        add     r10, r10, r5        # the next row's inputs
conv_amp.rend:
        brnzdec r7, conv_amp.run
conv_amp.wdone:
        ampst                       # the last row leaves the pipeline
        exit
