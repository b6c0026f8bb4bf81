# reduce_add.s: out[i] = k * (((parts[0][i] + parts[1][i]) + parts[2][i]) + ... +
# parts[P-1][i]) for i < n: the sum of P partial vectors (partial sums of several tiles,
# gathered on this one by an exchange), p in order, then scaled once: a worker codelet
# (docs/codelets.md). k = 1.0f gives the plain sum bit for bit (x * 1 = x); with P = 1 it is
# k * parts[0]. The sum starts from parts[0][i], not from 0 (0 + -0 would be +0). In C:
#   for (i = 0; i < n; i++) { float s = parts[0][i];
#       for (p = 1; p < P; p++) s += parts[p][i];  out[i] = k * s; }
#
# How: blocks of 4 outputs (two f32v2 pairs) accumulate in registers while an rpt walks the
# P - 1 other parts (add the stride, two ld64, two v2add); then one pair if n mod 4 >= 2, and
# one float if n is odd, each with its own rpt.
#
# State (32-bit words at r0):
#   +0   out     region  n fp32 (written), 8-byte aligned
#   +4   parts   region  parts[0]; parts[p] is at parts + p x stride; 8-byte aligned
#   +8   n       u32     outputs (0 allowed)
#   +12  P       u32     parts (>= 1)
#   +16  stride  u32     bytes from one part to the next, a multiple of 8 (pad odd n)
#   +20  k       f32     fp32 scale
# out may be parts[0] (each block is read before it is written), no other overlap.
#
# Cycles (docs/timing.md: one issue per 6 tile cycles, every instruction here 1 slot), from
# the first issue to the slot after the exit, with B = floor(n / 4), h = 1 if n mod 4 >= 2,
# o = n mod 2, [B > 0] = 1 if B > 0:
#   6 x (15 + [B > 0] + B (5 + 5P) + h (3 + 3P) + o (2 + 3P))
#   prologue 10 (6 ld32, mov, addi, shri, brz) + 1 (addi) when B > 0; a block 10 + 5 (P - 1)
#   (mov, 2 ld64, rpt, P - 1 x (add, 2 ld64, 2 v2add), 2 v2mul, 2 st64pi, addi, brnzdec);
#   the pair test 2 (andi, brz), the pair 6 + 3 (P - 1) (mov, ld64, rpt, P - 1 x (add, ld64,
#   v2add), v2mul, st64pi, addi); the odd test 2, the float 5 + 3 (P - 1) (mov, ld32, rpt,
#   P - 1 x (add, ld32, fadd), fmul, st32); exit 1.
# E.g. n = 10 of P = 4 parts: 6 x (15 + 1 + 2 x 25 + 15) = 486 cycles.

        .text
reduce_add:
        ld32    r14, [r0+0]             # out
        ld32    r13, [r0+4]             # parts[0] at the current block
        ld32    r12, [r0+8]             # n
        ld32    r11, [r0+12]            # P
        ld32    r10, [r0+16]            # stride
        ld32    r8, [r0+20]             # k
        mov     r9, r8                  # r8:r9 = (k, k)
        addi    r11, r11, -1            # the parts after the first
        shri    r1, r12, 2              # blocks of 4
        brz     r1, reduce_add.pair
        addi    r1, r1, -1              # brnzdec runs the block B times
reduce_add.block:
        mov     r15, r13
        ld64    r2, [r15+0]
        ld64    r4, [r15+8]
        rpt     r11, reduce_add.block_end
        add     r15, r15, r10
        ld64    r6, [r15+0]
        v2add   r2, r2, r6
        ld64    r6, [r15+8]
        v2add   r4, r4, r6
reduce_add.block_end:
        v2mul   r2, r2, r8
        v2mul   r4, r4, r8
        st64pi  r2, [r14]+=8
        st64pi  r4, [r14]+=8
        addi    r13, r13, 16
        brnzdec r1, reduce_add.block
reduce_add.pair:
        andi    r1, r12, 2
        brz     r1, reduce_add.one
        mov     r15, r13
        ld64    r2, [r15+0]
        rpt     r11, reduce_add.pair_end
        add     r15, r15, r10
        ld64    r6, [r15+0]
        v2add   r2, r2, r6
reduce_add.pair_end:
        v2mul   r2, r2, r8
        st64pi  r2, [r14]+=8
        addi    r13, r13, 8
reduce_add.one:
        andi    r1, r12, 1
        brz     r1, reduce_add.done
        mov     r15, r13
        ld32    r2, [r15+0]
        rpt     r11, reduce_add.one_end
        add     r15, r15, r10
        ld32    r6, [r15+0]
        fadd    r2, r2, r6
reduce_add.one_end:
        fmul    r2, r2, r8
        st32    r2, [r14+0]
reduce_add.done:
        exit
