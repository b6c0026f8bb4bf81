; The MPI equivalence program (tests/test_mpi.sh): run on 4 or 8 IPUs, it must give the same
; report, JSON and memory under `mpirun -np R` as in one process. Three passes of: IPU i
; spins 10 i + 5 brnzdec (the IPUs reach their syncs at different cycles) and passes an
; internal sync; then tile t of IPU i sends a word (pass << 24 | ipu << 16 | tile) to tile t
; of IPU i + 1 (gsend) and everything meets at an external sync; then every tile forwards
; what it got to tile t + 1 of its own IPU (send) over an internal sync, and the supervisor adds
; the two words it now holds into 0x4000 + 4 x pass.
main:   li      r11, 0
pass:   get     r2, $ipu
        muli    r4, r2, 10
        addi    r4, r4, 5
spin:   brnzdec r4, spin
        sync    internal
        get     r1, $tile
        get     r2, $ipu
        get     r3, $nipus
        li      r10, 0x1000
        shli    r4, r11, 24
        shli    r5, r2, 16
        or      r4, r4, r5
        or      r4, r4, r1
        st32    r4, [r10+0]
        addi    r5, r2, 1
        cmpeq   r6, r5, r3
        brz     r6, nowrap
        li      r5, 0
nowrap: shli    r5, r5, 16
        or      r5, r5, r1
        li      r7, 4
        li      r8, 0x2000
        gsend   r10, r7, r5, r8
        sync    external
        get     r3, $ntiles
        addi    r5, r1, 1
        cmpeq   r6, r5, r3
        brz     r6, nw2
        li      r5, 0
nw2:    li      r8, 0x2000
        li      r9, 0x3000
        li      r7, 4
        send    r8, r7, r5, r9
        sync    internal
        ld32    r4, [r8+0]
        ld32    r5, [r9+0]
        add     r4, r4, r5
        shli    r6, r11, 2
        li      r7, 0x4000
        add     r7, r7, r6
        st32    r4, [r7+0]
        addi    r11, r11, 1
        cmpeqi  r6, r11, 3
        brz     r6, pass
        halt
