# conv_pack.s: WORKER codelet. Strided gather into dense R x C blocks with zero fill: the
# layout transforms the convolution layers need (planned by workloads/graph/conv_plan.h):
#   - AMP weight blocks f32[8][16] from w[Cout][Cin][K][K] (forward: block (ob, ci, ky),
#     row k = kx, column n = output channel; input gradient: block (ky, kx, chunk), row k =
#     output channel, column n = input channel);
#   - dy[C][P] to the channel-grouped [Cg][P][16] the AMP streams and loads (one block of
#     R = P rows and 16 columns per group of 16 channels);
#   - w[Cout][K K] to duplicated pairs [Cout][K K][2] for conv_mac1 (C = 2, column stride 0).
# For block b (descriptor src offset s, valid rows rv <= R, valid columns cv <= C):
#   dst[b][r][c] = src[s + r sr + c sc] (bytes) for r < rv and c < cv, else 0;
# blocks are written one after another from dst.
#
# State (8 words; runall conv_pack.all uses six of them, 32 bytes apart):
#   +0  dst      region  output (4-aligned; 16-aligned for AMP weights)
#   +4  src      region  input base (4-aligned)
#   +8  nblocks u32
#   +12 list     region  per block 3 words: src offset (bytes), rv, cv
#   +16 R        u32     rows per block
#   +20 C        u32     columns per block
#   +24 sr       u32     bytes between source rows
#   +28 sc       u32     bytes between source columns
#
# Cycles (docs/timing.md): 6 S tile cycles for
#   S = 11 + sum over blocks of (11 + rv (5 + 3 cv + C - cv) + (R - rv) C)
# (a block with rv = 0 costs 10 + R C; S = 10 with no blocks): 3 slots per gathered element
# (ld32, add, st32pi: the strides are not immediates), 1 per zero. conv_pack.all adds 3.
        .text
conv_pack.all:
        get     r1, $wid
        muli    r1, r1, 32
        add     r0, r0, r1
conv_pack:
        ld32    r1, [r0+0]          # dst
        ld32    r2, [r0+4]          # src
        ld32    r3, [r0+8]          # blocks
        ld32    r4, [r0+12]         # block list
        ld32    r5, [r0+16]         # R
        ld32    r6, [r0+20]         # C
        ld32    r7, [r0+24]         # sr
        ld32    r8, [r0+28]         # sc
        brz     r3, conv_pack.done
        addi    r3, r3, -1
conv_pack.block:
        ld32pi  r9, [r4]+=4         # source offset
        ld32pi  r10, [r4]+=4        # rv
        ld32pi  r11, [r4]+=4        # cv
        add     r9, r9, r2          # this block's first source row
        sub     r12, r6, r11        # zeros after each valid row
        sub     r13, r5, r10
        mul     r13, r13, r6        # zeros of the rows past rv
        brz     r10, conv_pack.zrows
        addi    r10, r10, -1
conv_pack.row:
        mov     r14, r9
        rpt     r11, conv_pack.cend
        ld32    r0, [r14+0]
        add     r14, r14, r8
        st32pi  r0, [r1]+=4
conv_pack.cend:
        rpt     r12, conv_pack.pend
        st32pi  r15, [r1]+=4        # r15 is zero (never written)
conv_pack.pend:
        add     r9, r9, r7
        brnzdec r10, conv_pack.row
conv_pack.zrows:
        rpt     r13, conv_pack.zend
        st32pi  r15, [r1]+=4
conv_pack.zend:
        brnzdec r3, conv_pack.block
conv_pack.done:
        exit
