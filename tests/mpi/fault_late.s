; An MPI fault program (tests/test_mpi.sh), on 8 IPUs (2 boxes) of 2 tiles. Every IPU passes
; two internal syncs with no work between, so all are released together at the same cycles;
; then IPU 0 loads from outside tile memory, while the others send a word from each tile to
; the other tile (send, delivered at the next sync) and then count 30 supersteps, storing
; the count at 0x3000. One process finds IPU 0's fault after the compute round of that
; third superstep, before it settles anything: no IPU's send lands and no count is stored.
; With two ranks, rank 1 (IPUs 4-7) runs on past the fault before the ranks meet; the
; dumps and statistics must still be one process's.
main:   get     r1, $ipu
        sync    internal
        sync    internal
        brnz    r1, send
        li      r5, 0x7ffff0
        ld32    r6, [r5+0]
        halt
send:   get     r2, $tile
        xori    r2, r2, 1
        li      r8, 0x2000
        st32    r1, [r8+0]
        li      r9, 0x2100
        li      r7, 4
        send    r8, r7, r2, r9
        sync    internal
        li      r7, 0x3000
        li      r3, 0
count:  addi    r3, r3, 1
        st32    r3, [r7+0]
        li      r4, 20
spin:   brnzdec r4, spin
        sync    internal
        cmplti  r2, r3, 30
        brnz    r2, count
        halt
