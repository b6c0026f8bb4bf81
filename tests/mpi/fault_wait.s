; An MPI fault program (tests/test_mpi.sh), on 4 IPUs of 2 tiles: IPUs 0 and 1 meet at an
; internal sync and then wait at an external one; IPUs 2 and 3 pass one internal sync, then
; spin (IPU 3 less than IPU 2) and load from outside tile memory. With two ranks the faults
; are all on rank 1 and rank 0 waits at the external sync: the report must name IPU 3's
; fault (the earlier cycle) as one process does, and every rank must exit with status 3.
main:   get     r1, $ipu
        sync    internal
        cmplti  r2, r1, 2
        brnz    r2, wait
        li      r3, 50
        muli    r4, r1, 10
        sub     r3, r3, r4
spin:   brnzdec r3, spin
        li      r5, 0x7ffff0
        ld32    r6, [r5+0]
        halt
wait:   sync    external
        halt
