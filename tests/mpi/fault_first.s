; An MPI fault program (tests/test_mpi.sh), on 4 IPUs of 2 tiles: IPUs 0 and 1 spin (IPU 1
; less) and load from outside tile memory in their first superstep; IPUs 2 and 3 pass an
; internal sync first and fault sooner, at lower cycles, in their second. One process finds
; the first superstep's faults first and names IPU 1's; with two ranks, rank 1 (IPUs 2 and 3)
; runs on to its own faults before the ranks meet, and the report must still name IPU 1's.
main:   get     r1, $ipu
        cmplti  r2, r1, 2
        brnz    r2, late
        sync    internal
        li      r5, 0x7ffff0
        ld32    r6, [r5+0]
        halt
late:   li      r3, 60
        muli    r4, r1, 20
        sub     r3, r3, r4
spin:   brnzdec r3, spin
        li      r5, 0x7ffff0
        ld32    r6, [r5+0]
        halt
