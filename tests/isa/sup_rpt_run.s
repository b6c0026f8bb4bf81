; An rpt body that ends with `run`: the body runs r14 = 3 times, starting three workers.
; li at 0; rpt at 1 (6); pass 1: addi at 7, run at 8 gives slot 2 to worker 0, whose exit
; issues at 14 and frees the slot from 15, so the supervisor's next slot is 3 at 15; pass 2:
; addi at 15, run at 16 (slot 4, exit at 22, free from 23); pass 3: addi at 23, run at 24
; (slot 0, exit at 30, free from 31). join: slot 1 at 31, completes at max(31 + 6, 31) = 37;
; halt at 37 finishes at 38. Instructions: li, rpt, 3 x (addi, run), join, halt, 3 exits = 13.
; expect: r1 = 3
; expect-cycles: 38
; expect-insns: 13
main:   li      r14, 3
        rpt     r14, e
        addi    r1, r1, 1
        run     w, r0
e:      join
        halt
w:      exit
