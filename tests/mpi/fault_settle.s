; An MPI fault program (tests/test_mpi.sh), on 8 IPUs (2 boxes) of 4 tiles: an error found
; while settling. Every IPU passes two internal syncs with no work between, so all are
; released together; then each tile of every IPU but IPU 4 sends a word to its neighbour
; (tile t ^ 1, at 0x2100), while on IPU 4 tiles 1 and 2 both send to tile 0 at once: an
; exchange conflict, found when IPU 4's sync is settled. Then every IPU counts 30 supersteps
; at 0x3000. One process settles IPUs 0-3 first (their words land, their next sync is
; scheduled), meets the conflict at IPU 4 and stops: IPUs 5-7's words do not land and no
; count is stored. With two ranks, rank 0 (IPUs 0-3) runs on through its count before the
; ranks meet; the dumps and statistics must still be one process's.
main:   get     r1, $ipu
        get     r2, $tile
        sync    internal
        sync    internal
        li      r8, 0x2000
        st32    r1, [r8+0]
        li      r9, 0x2100
        li      r7, 4
        cmpeqi  r6, r1, 4
        brz     r6, pair
        brz     r2, wait
        cmplti  r6, r2, 3
        brz     r6, wait
        li      r5, 0
        send    r8, r7, r5, r9
        br      wait
pair:   xori    r5, r2, 1
        send    r8, r7, r5, r9
wait:   sync    internal
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
