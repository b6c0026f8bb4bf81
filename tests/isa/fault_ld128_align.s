; ld128pi needs 16-byte alignment: 0x108 faults (worker: li 6, ld128pi at 12, pc 0x20).
; expect-fault: ipu 0 tile 0 ctx 1 pc 0x20 cycle 12: misaligned memory access at 0x108
main:   run     w, r0
        join
        halt
w:      li      r1, 0x108
        ld128pi r4, [r1]+=16
        exit
