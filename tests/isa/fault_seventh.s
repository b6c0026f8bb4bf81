; Starting a seventh worker: run at 0 occupies context 0 until its exit at 6 + 6 x 10 = 66;
; runall at 7 (slot 0 is the worker's at 6) needs six free contexts.
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x8 cycle 7: too many workers
main:   run     w, r0
        runall  w, r0
        join
        halt
w:      li      r1, 8
l:      brnzdec r1, l
        exit
