; Four IPUs whose internal supersteps take different times (IPU i spins 10 i more), then meet
; at an external sync. IPU i: get 0, muli 1, li 2, mov 3, spin 4.. (10 i + 1 brnzdec, 6 each),
; sync at 10 + 60 i, arrives 16 + 60 i, released R1 = 106 + 60 i. Each further pass (brnzdec
; r3 6, mov 1, spin, sync 6, latency 90) adds 109 + 60 i; brnzdec r3 = 3 runs the body 4
; times: R4 = 433 + 240 i. Then brnzdec (not taken, 6), sync external at R4 + 6, arriving
; R4 + 12. IPU 3 is last: 1165; the 4-IPU external sync takes 90 + 80 = 170: release 1335,
; halt finishes 1336. Every IPU counts 4 internal + 1 external supersteps.
; config: tiles=2 ipus=4
; expect-cycles: 1336
; expect-supersteps: 20
main:   get     r1, $ipu
        muli    r2, r1, 10
        li      r3, 3
outer:  mov     r4, r2
spin:   brnzdec r4, spin
        sync    internal
        brnzdec r3, outer
        sync    external
        halt
