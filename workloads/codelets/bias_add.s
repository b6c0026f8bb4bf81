# bias_add: y[n][c][i] = y[n][c][i] + b[c] for n < B, c < C, i < P (fp32, one rounding, as
# C's y += b): a convolution's bias over B images of C channels of P positions.
#
# State (7 words; runall bias_add.all uses six of them, 28 bytes apart):
#   +0  y        region  the first row, y[0][0]; row (n, c) starts at y + 4 (n istride + c cstride)
#   +4  b        region  C floats
#   +8  C        u32     channels, 1 or more
#   +12 P        u32     positions per row, 0 or more
#   +16 B        u32     images, 1 or more
#   +20 cstride  u32     floats from one channel's row to the next (P or more)
#   +24 istride  u32     floats from one image to the next
# Every row start must be 16-byte aligned (y 16-byte aligned; cstride and istride multiples of
# 4 where they are used).
#
# Four floats a step: ld128pi (the pointer stays; the two st64pi step it), two v2add with
# b[c] in both lanes of r6:r7, two st64pi; a scalar step for the P mod 4 left over.
#
# Cycles (docs/timing.md: 6 tile cycles a worker slot; rpt costs one slot, its body no
# overhead): with g = floor(P / 4), t = P mod 4,
#   S = 16 + B (4 + C (6 + 5g + 3t)) worker slots (6 x S tile cycles): 15 to set up; per
#   image 4 (ld32, mov, add, brnzdec); per row 6 (ld32pi, mov, two rpt, add, brnzdec) + 5 per
#   group + 3 per tail element; exit.
# bias_add.all (runall; worker w takes the state at r0 + 28w) adds 3 slots.

        .text
bias_add.all:
        get     r1, $wid
        muli    r1, r1, 28
        add     r0, r0, r1
bias_add:
        ld32    r1, [r0+0]          # y
        ld32    r5, [r0+12]         # P
        ld32    r9, [r0+20]         # cstride
        ld32    r3, [r0+8]          # C
        ld32    r10, [r0+24]        # istride
        ld32    r4, [r0+16]         # B
        shri    r11, r5, 2          # g
        andi    r8, r5, 3           # t
        mul     r12, r3, r9
        sub     r10, r10, r12
        shli    r10, r10, 2         # 4 (istride - C cstride): last row's end to the next image
        sub     r9, r9, r5
        shli    r9, r9, 2           # 4 (cstride - P): a row's end to the next row
        addi    r5, r3, -1          # C - 1
        addi    r4, r4, -1          # B - 1
bias_add.img:
        ld32    r2, [r0+4]          # b
        mov     r3, r5
bias_add.row:
        ld32pi  r6, [r2]+=4
        mov     r7, r6
        rpt     r11, bias_add.g_end
        ld128pi r12, [r1]+=0
        v2add   r12, r12, r6
        v2add   r14, r14, r6
        st64pi  r12, [r1]+=8
        st64pi  r14, [r1]+=8
bias_add.g_end:
        rpt     r8, bias_add.t_end
        ld32pi  r12, [r1]+=0
        fadd    r12, r12, r6
        st32pi  r12, [r1]+=4
bias_add.t_end:
        add     r1, r1, r9
        brnzdec r3, bias_add.row
        add     r1, r1, r10
        brnzdec r4, bias_add.img
        exit
