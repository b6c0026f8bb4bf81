; Supervisor load-use stall (6 cycles, docs/sources.md, Chip): li 0, ld32 1 (r2 usable from 8),
; addi would issue at 2 but waits to 8; halt at 9 finishes at 10.
; expect: r3 = 1235
; expect-cycles: 10
main:   li      r1, value
        ld32    r2, [r1+0]
        addi    r3, r2, 1
        halt
        .data
value:  .word   1234
