; A supervisor branch to 0x4, inside the text but not on an instruction: li at 0, bri at 1
; (pc 0x8) faults.
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x8 cycle 1: misaligned pc 0x4
main:   li      r1, 4
        bri     r1
        halt
