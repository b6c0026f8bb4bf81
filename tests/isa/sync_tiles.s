; An internal sync over 4 tiles: release = latest arrival + 90 (the Mk2 internal sync).
; tile 0: get 0, brz 1 (taken, 6), sync 7 -> arrives 13.
; tiles 1-3: get 0, brz 1 (not taken, still 6), muli 7, sync 8 -> arrive 14.
; release 14 + 90 = 104; halt at 104 finishes 105.
; config: tiles=4
; expect: t3.r2 = 30
; expect: t0.r2 = 0
; expect-cycles: 105
; expect-supersteps: 1
; expect-insns: 19
main:   get     r1, $tile
        brz     r1, skip
        muli    r2, r1, 10
skip:   sync    internal
        halt
