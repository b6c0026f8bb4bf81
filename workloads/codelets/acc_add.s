# acc_add: dst[i] = dst[i] + src[i] for i < n (fp32, one rounding each, as C's dst[i] +=
# src[i]): gradient accumulation.
#
# State (3 words; runall acc_add.all uses six of them, 12 bytes apart):
#   +0  dst  region  n floats, 16-byte aligned
#   +4  src  region  n floats, 16-byte aligned, disjoint from dst
#   +8  n    u32     0 or more
#
# Four floats a step: ld128pi of dst (the pointer stays; the two st64pi step it), ld128pi of
# src, two v2add, two st64pi.
#
# Cycles (docs/timing.md: 6 tile cycles a worker slot; rpt costs one slot, its body no
# overhead): with g = floor(n / 4), t = n mod 4,
#   S = 8 + 6g + 4t worker slots (6 x S tile cycles): 6 before the first rpt, 6 per group,
#   1 rpt, 4 per tail element, exit.
# acc_add.all (runall; worker w takes the state at r0 + 12w) adds 3 slots.

        .text
acc_add.all:
        get     r1, $wid
        muli    r1, r1, 12
        add     r0, r0, r1
acc_add:
        ld32    r1, [r0+0]          # dst
        ld32    r2, [r0+4]          # src
        ld32    r3, [r0+8]          # n
        shri    r12, r3, 2          # g
        andi    r3, r3, 3           # t
        rpt     r12, acc_add.g_end
        ld128pi r4, [r1]+=0
        ld128pi r8, [r2]+=16
        v2add   r4, r4, r8
        v2add   r6, r6, r10
        st64pi  r4, [r1]+=8
        st64pi  r6, [r1]+=8
acc_add.g_end:
        rpt     r3, acc_add.t_end
        ld32pi  r4, [r1]+=0
        ld32pi  r8, [r2]+=4
        fadd    r4, r4, r8
        st32pi  r4, [r1]+=4
acc_add.t_end:
        exit
