# conv_ungroup.s: WORKER codelet. From the AMP's channel-grouped partials [G][P][16] back to
# the C layers' [C][P] (workloads/mnist/layers.h), for channels c0 .. c0 + nc - 1:
#   acc = 0: out[c][p] = in[c / 16][p][c % 16]
#   acc = 1: out[c][p] = out[c][p] + in[c / 16][p][c % 16]
# acc = 0 ends the forward pass (y) and the input gradient (dx, G = 1); acc = 1 adds a
# sample's weight gradient dw^T [G][Cin K K][16] into dw[Cout][Cin K K] in the order of
# mlayer_conv_bwd (dw += the sample's sum), so dw is bit-exact. A layer's channels split
# over workers (and tiles) by ranges of c.
#
# State (6 words; runall conv_ungroup.all uses six of them, 24 bytes apart):
#   +0  out     region  &out[c0][0] (4-aligned)
#   +4  in      region  base of the grouped tensor (&in[0][0][0], 4-aligned)
#   +8  c0      u32     first channel
#   +12 nc      u32     channels
#   +16 P       u32     positions per channel
#   +20 acc     u32     0 or 1
#
# Cycles (docs/timing.md): 6 S tile cycles for S = 10 + nc (10 + 2 P) (acc = 0) or
# S = 10 + nc (10 + 4 P) (acc = 1); S = 9 when nc = 0. conv_ungroup.all adds 3.
        .text
conv_ungroup.all:
        get     r1, $wid
        muli    r1, r1, 24
        add     r0, r0, r1
conv_ungroup:
        ld32    r1, [r0+0]          # out
        ld32    r2, [r0+4]          # in
        ld32    r3, [r0+8]          # c
        ld32    r4, [r0+12]         # channels
        ld32    r5, [r0+16]         # P
        ld32    r6, [r0+20]         # acc
        shli    r7, r5, 6           # bytes per group: P x 64
        brz     r4, conv_ungroup.done
        addi    r4, r4, -1
conv_ungroup.chan:
        shri    r8, r3, 4
        mul     r8, r8, r7
        andi    r9, r3, 15
        shli    r9, r9, 2
        add     r8, r8, r9
        add     r8, r8, r2          # &in[c / 16][0][c % 16]
        addi    r3, r3, 1
        brnz    r6, conv_ungroup.acc
        rpt     r5, conv_ungroup.cend
        ld32pi  r10, [r8]+=64
        st32pi  r10, [r1]+=4
conv_ungroup.cend:
        brnzdec r4, conv_ungroup.chan
        exit
conv_ungroup.acc:
        rpt     r5, conv_ungroup.aend
        ld32pi  r10, [r8]+=64
        ld32    r11, [r1+0]
        fadd    r10, r11, r10
        st32pi  r10, [r1]+=4
conv_ungroup.aend:
        brnzdec r4, conv_ungroup.chan
conv_ungroup.done:
        exit
