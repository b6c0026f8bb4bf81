# relu_fwd: y[i] = x[i] > 0 ? x[i] : +0 for i < n (mlayer_relu_fwd, bit for bit for every
# input: -0 and NaN give +0). In place (y = x) or out of place.
#
# State (3 words; runall relu_fwd.all uses six of them, 12 bytes apart):
#   +0  x   region  n floats, 16-byte aligned
#   +4  y   region  n floats, 8-byte aligned; y = x or disjoint from x
#   +8  n   u32     0 or more
#
# Four floats a step: ld128pi, v2max with +0, v2add +0, two st64pi (the store port's 8 bytes
# a slot). fmaxf may return -0 for max(-0, +0); adding +0 makes it +0, and changes no other
# value. A scalar step for the n mod 4 left over.
#
# Cycles (docs/timing.md: one issue per worker slot, 6 tile cycles each; rpt costs its one
# slot and its body runs with no overhead): with g = floor(n / 4), t = n mod 4,
#   S = 8 + 7g + 4t worker slots (6 x S tile cycles from the first issue to the exit's
#   issue + 6): 6 before the first rpt, 7 per group, 1 rpt, 4 per tail element, exit.
# relu_fwd.all (runall; worker w takes the state at r0 + 12w) adds 3 slots.
# r6:r7 stay zero (a worker starts with every register but r0 zero).

        .text
relu_fwd.all:
        get     r1, $wid
        muli    r1, r1, 12
        add     r0, r0, r1
relu_fwd:
        ld32    r1, [r0+0]          # x
        ld32    r2, [r0+4]          # y
        ld32    r3, [r0+8]          # n
        shri    r4, r3, 2           # g
        andi    r3, r3, 3           # t
        rpt     r4, relu_fwd.g_end
        ld128pi r8, [r1]+=16
        v2max   r8, r8, r6
        v2max   r10, r10, r6
        v2add   r8, r8, r6
        v2add   r10, r10, r6
        st64pi  r8, [r2]+=8
        st64pi  r10, [r2]+=8
relu_fwd.g_end:
        rpt     r3, relu_fwd.t_end
        ld32pi  r8, [r1]+=4
        fmax    r8, r8, r6
        fadd    r8, r8, r6
        st32pi  r8, [r2]+=4
relu_fwd.t_end:
        exit
