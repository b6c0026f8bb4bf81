; One worker running k = 5 instructions. run at 0 gives slot 0 to the worker: it issues at
; 6, 12, 18, 24 and exits at 30 (start + 6 x (k - 1)); slot 0 is free again from 31.
; The supervisor's next issue after run (cost 6) is at cycle 6, but slot 0 is the worker's,
; so join issues at 7 and completes at max(7 + 6, 31) = 31; halt at 31 finishes at 32.
; expect: w0.r1 = 4
; expect-cycles: 32
; expect-insns: 8
main:   run     w, r0
        join
        halt
w:      li      r1, 1
        addi    r1, r1, 1
        addi    r1, r1, 1
        addi    r1, r1, 1
        exit
