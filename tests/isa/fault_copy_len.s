; An infeed copy whose length is not a multiple of 4: li at 0..2, hin at 3 (pc 0x18) faults.
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x18 cycle 3: hin length 0x7fffffff is not a multiple of 4
main:   li      r1, 0
        li      r2, 0x7fffffff
        li      r3, 0
        hin     r1, r2, r3
        halt
