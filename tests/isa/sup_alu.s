; Supervisor ALU: one issue per cycle (docs/sources.md, Chip: simple ALU 1 cycle).
; li at 0, addi at 1, li at 2, halt at 3; halt finishes one cycle after it issues: 4.
; expect: r1 = 42
; expect: r2 = -8
; expect: r2 = 0xfffffff8
; expect-cycles: 4
; expect-insns: 4
        .text
main:   li      r1, 40
        addi    r1, r1, 2
        li      r2, (1 << 3) * -1
        halt
