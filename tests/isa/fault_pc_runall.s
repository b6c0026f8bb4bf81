; runall to 0x7: the first worker's entry is not on an instruction. runall issues at 0; worker
; 0's first issue at 6 faults at pc 0x7.
; expect-fault: ipu 0 tile 0 ctx 1 pc 0x7 cycle 6: misaligned pc 0x7
main:   runall  0x7, r0
        join
        halt
        exit
