; Six workers together. runall at 0 starts worker k in slot k, first issue at 6 + k; each
; runs 3 instructions and exits at 18 + k, freeing slot k from 19 + k. The supervisor has
; no slot until then: its first free slot is slot 0 at cycle 24, where join issues; join
; completes at max(24 + 6, 19 + 5) = 30; halt at 30 finishes at 31.
; expect: w0.r1 = 10
; expect: w3.r1 = 13
; expect: w5.r1 = 15
; expect: w5.r0 = 0
; expect-cycles: 31
; expect-insns: 21
main:   runall  w, r0
        join
        halt
w:      get     r1, $wid
        addi    r1, r1, 10
        exit
