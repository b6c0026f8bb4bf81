# bias_grad: db[c] = db[c] + s(n, c) for n = 0, 1, ..., B - 1 in turn, c < C, where s(n, c)
# sums the P floats of row (n, c) in mlayer_conv_bwd's order (layers.c, sum8): eight lanes,
# lane l adding positions 8j + l from +0, the P mod 8 left over added to lanes 0, 1, ..., then
# ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 + s7)). So with C = cout, P = ho wo and the
# rows of one batch, db comes out bit for bit as mlayer_conv_bwd's (which adds image by image
# too).
#
# State (7 words; runall bias_grad.all uses six of them, 28 bytes apart):
#   +0  dy       region  the first row, dy[0][0]; row (n, c) starts at dy + 4 (n istride +
#                        c cstride)
#   +4  db       region  C floats
#   +8  C        u32     channels, 1 or more
#   +12 P        u32     positions per row, 0 or more
#   +16 B        u32     images, 1 or more
#   +20 cstride  u32     floats from one channel's row to the next
#   +24 istride  u32     floats from one image to the next
# Every row start must be 16-byte aligned (dy 16-byte aligned; cstride and istride multiples
# of 4 where they are used).
#
# Per row: the lanes r4..r11 start from 16 zero bytes (bias_grad.zeros, the codelet's only
# .data), eight floats a step (two ld128pi, four v2add), then the tail: a jump into a run of
# (ld32, fadd) pairs for lanes 6..0, entered so that only the first P mod 8 lanes run, then
# the sum and db[c] += it. The channels loop outside, the images inside, so db[c] gets its B
# sums in image order.
#
# Cycles (docs/timing.md: 6 tile cycles a worker slot; rpt costs one slot, its body no
# overhead; taken or not, a worker's branch is one slot): with q = floor(P / 8), k = P mod 8,
#   S = 3 + C (16 + B (26 + 6q + 2k)) worker slots (6 x S tile cycles): 2 to set up; per
#   channel 16 (2 to count the images, 14 to step to the next channel and test for the last);
#   per row 26 (3 zero the lanes, 3 start the rpt, 10 find the tail and the next row, 1 add,
#   5 sum the lanes, 3 add to db, brnzdec) + 6 per step of 8 + 2 per tail float; exit.
# bias_grad.all (runall; worker w takes the state at r0 + 28w) adds 3 slots.

        .text
bias_grad.all:
        get     r1, $wid
        muli    r1, r1, 28
        add     r0, r0, r1
bias_grad:
        ld32    r1, [r0+0]          # dy
        ld32    r2, [r0+4]          # db
bias_grad.chan:
        ld32    r3, [r0+16]         # B
        addi    r3, r3, -1
bias_grad.img:
        li      r12, bias_grad.zeros
        ld128pi r4, [r12]+=0
        ld128pi r8, [r12]+=0
        ld32    r12, [r0+12]        # P
        shri    r13, r12, 3         # q
        rpt     r13, bias_grad.bulk_end
        ld128pi r12, [r1]+=16
        v2add   r4, r4, r12
        v2add   r6, r6, r14
        ld128pi r12, [r1]+=16
        v2add   r8, r8, r12
        v2add   r10, r10, r14
bias_grad.bulk_end:
        ld32    r12, [r0+12]        # P
        andi    r13, r12, 7         # k
        shli    r13, r13, 4         # 16k: k (ld32, fadd) pairs before tail_end
        li      r14, bias_grad.tail_end
        sub     r14, r14, r13
        andi    r12, r12, -8        # 8q
        ld32    r13, [r0+24]        # istride
        sub     r13, r13, r12
        shli    r13, r13, 2         # 4 (istride - 8q): to this channel's row of the next image
        bri     r14
        ld32    r12, [r1+24]
        fadd    r10, r10, r12
        ld32    r12, [r1+20]
        fadd    r9, r9, r12
        ld32    r12, [r1+16]
        fadd    r8, r8, r12
        ld32    r12, [r1+12]
        fadd    r7, r7, r12
        ld32    r12, [r1+8]
        fadd    r6, r6, r12
        ld32    r12, [r1+4]
        fadd    r5, r5, r12
        ld32    r12, [r1+0]
        fadd    r4, r4, r12
bias_grad.tail_end:
        add     r1, r1, r13
        v2add   r4, r4, r8          # s0 + s4, s1 + s5
        v2add   r6, r6, r10         # s2 + s6, s3 + s7
        fadd    r4, r4, r5
        fadd    r6, r6, r7
        fadd    r4, r4, r6
        ld32    r12, [r2+0]
        fadd    r12, r12, r4
        st32    r12, [r2+0]
        brnzdec r3, bias_grad.img
        ld32    r12, [r0+20]        # cstride
        ld32    r13, [r0+16]        # B
        ld32    r14, [r0+24]        # istride
        mul     r13, r13, r14
        sub     r12, r12, r13
        shli    r12, r12, 2
        add     r1, r1, r12         # image 0 of the next channel
        addi    r2, r2, 4
        ld32    r12, [r0+4]
        ld32    r13, [r0+8]         # C
        shli    r13, r13, 2
        add     r12, r12, r13       # db + 4C
        cmpne   r12, r12, r2
        brnz    r12, bias_grad.chan
        exit

        .data
        .align  16
bias_grad.zeros:
        .word   0, 0, 0, 0
