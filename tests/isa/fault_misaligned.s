; A worker's misaligned load: li issues at 6, ld32 at 12 (pc 0x20) faults.
; expect-fault: ipu 0 tile 0 ctx 1 pc 0x20 cycle 12: misaligned memory access at 0x2
main:   run     w, r0
        join
        halt
w:      li      r1, 2
        ld32    r2, [r1+0]
        exit
