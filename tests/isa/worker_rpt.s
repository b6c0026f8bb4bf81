; Zero-overhead rpt: the body (2 instructions) runs 4 times with no loop cost.
; worker: li 6, li 12, rpt 18, body issues 24..66 (8 issues), exit 72, free from 73.
; supervisor: run 0, join 7 completes at max(13, 73) = 73, halt 73 finishes 74.
; expect: w0.r2 = 12
; expect-cycles: 74
; expect-insns: 15
main:   run     w, r0
        join
        halt
w:      li      r1, 4
        li      r2, 0
        rpt     r1, end
        addi    r2, r2, 1
        addi    r2, r2, 2
end:    exit
