; Supervisor loop with a counted branch: branches cost 6 cycles (docs/sources.md, Chip).
; li 0, li 1; body = addi (1) + brnzdec (6) = 7 cycles, run 6 times (r1 = 5..0);
; last brnzdec issues at 2 + 5*7 + 1 = 38, halt at 44, finish 45.
; expect: r1 = 0
; expect: r2 = 18
; expect-cycles: 45
; expect-insns: 15
main:   li      r1, 5
        li      r2, 0
loop:   addi    r2, r2, 3
        brnzdec r1, loop
        halt
