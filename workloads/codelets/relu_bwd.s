# relu_bwd: dx[i] = out[i] > 0 ? dy[i] : +0 for i < n (mlayer_relu_bwd with dy the incoming
# gradient, bit for bit for every input). dx = dy (in place) or disjoint.
#
# State (4 words; runall relu_bwd.all uses six of them, 16 bytes apart):
#   +0  out  region  n floats, the forward output, 16-byte aligned
#   +4  dy   region  n floats, 16-byte aligned
#   +8  dx   region  n floats, 8-byte aligned; dx = dy or disjoint from both
#   +12 n    u32     0 or more
#
# The select is integer: c = fcmplt(0, out) is 1 or 0, and dy's bits x c are dy or +0. Four
# floats a step: two ld128pi, four fcmplt, four mul, two st64pi.
#
# Cycles (docs/timing.md: 6 tile cycles a worker slot; rpt costs one slot, its body no
# overhead): with g = floor(n / 4), t = n mod 4,
#   S = 9 + 12g + 5t worker slots (6 x S tile cycles): 7 before the first rpt, 12 per group,
#   1 rpt, 5 per tail element, exit.
# relu_bwd.all (runall; worker w takes the state at r0 + 16w) adds 3 slots.
# r13 stays zero.

        .text
relu_bwd.all:
        get     r1, $wid
        muli    r1, r1, 16
        add     r0, r0, r1
relu_bwd:
        ld32    r1, [r0+0]          # out
        ld32    r2, [r0+4]          # dy
        ld32    r3, [r0+8]          # dx
        ld32    r0, [r0+12]         # n
        shri    r14, r0, 2          # g
        andi    r0, r0, 3           # t
        rpt     r14, relu_bwd.g_end
        ld128pi r4, [r1]+=16
        ld128pi r8, [r2]+=16
        fcmplt  r4, r13, r4
        fcmplt  r5, r13, r5
        fcmplt  r6, r13, r6
        fcmplt  r7, r13, r7
        mul     r8, r8, r4
        mul     r9, r9, r5
        mul     r10, r10, r6
        mul     r11, r11, r7
        st64pi  r8, [r3]+=8
        st64pi  r10, [r3]+=8
relu_bwd.g_end:
        rpt     r0, relu_bwd.t_end
        ld32pi  r4, [r1]+=4
        ld32pi  r8, [r2]+=4
        fcmplt  r4, r13, r4
        mul     r8, r8, r4
        st32pi  r8, [r3]+=4
relu_bwd.t_end:
        exit
