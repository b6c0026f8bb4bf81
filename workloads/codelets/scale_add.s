# scale_add: dst[i] = fmaf(k, src[i], dst[i]) for i < n: dst += k x src with ONE rounding
# (fused, v2fma), not C's two-rounding `dst[i] += k * src[i]`; the tests compare with fmaf
# bit for bit.
#
# State (4 words; runall scale_add.all uses six of them, 16 bytes apart):
#   +0  dst  region  n floats, 16-byte aligned
#   +4  src  region  n floats, 16-byte aligned, disjoint from dst
#   +8  n    u32     0 or more
#   +12 k    f32     fp32 bit pattern
#
# Four floats a step: ld128pi of dst (the two st64pi step the pointer), ld128pi of src, two
# v2fma with k in both lanes of r12:r13, two st64pi.
#
# Cycles (docs/timing.md: 6 tile cycles a worker slot; rpt costs one slot, its body no
# overhead): with g = floor(n / 4), t = n mod 4,
#   S = 10 + 6g + 4t worker slots (6 x S tile cycles): 8 before the first rpt, 6 per group,
#   1 rpt, 4 per tail element, exit.
# scale_add.all (runall; worker w takes the state at r0 + 16w) adds 3 slots.

        .text
scale_add.all:
        get     r1, $wid
        muli    r1, r1, 16
        add     r0, r0, r1
scale_add:
        ld32    r1, [r0+0]          # dst
        ld32    r2, [r0+4]          # src
        ld32    r3, [r0+8]          # n
        ld32    r12, [r0+12]        # k
        mov     r13, r12
        shri    r14, r3, 2          # g
        andi    r3, r3, 3           # t
        rpt     r14, scale_add.g_end
        ld128pi r4, [r1]+=0
        ld128pi r8, [r2]+=16
        v2fma   r4, r12, r8, r4
        v2fma   r6, r12, r10, r6
        st64pi  r4, [r1]+=8
        st64pi  r6, [r1]+=8
scale_add.g_end:
        rpt     r3, scale_add.t_end
        ld32pi  r4, [r1]+=0
        ld32pi  r8, [r2]+=4
        fma     r4, r12, r8, r4
        st32pi  r4, [r1]+=4
scale_add.t_end:
        exit
