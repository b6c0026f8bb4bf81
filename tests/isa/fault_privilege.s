; fp32 arithmetic is the workers' (the supervisor has no FPU in this model).
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x0 cycle 0: worker-only instruction in the supervisor
main:   fadd    r1, r2, r3
        halt
