; A supervisor store past the end of the 624 KiB Mk2 tile memory (0x9c000 bytes).
; li 0, st32 at 1 (pc 0x8) faults.
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x8 cycle 1: memory access out of range at 0x9c000
main:   li      r1, 0x9c000
        st32    r1, [r1+0]
        halt
