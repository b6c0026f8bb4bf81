; On-chip exchange between two tiles of one column (mk2 layout: 64 tiles per column, 4 per
; supertile). Tile 0 sends 8 bytes to tile 5 (rows 0 -> 1: latency 8 + 1 = 9).
; tile 0: get 0, brnz 1 (not taken, 6 cycles), li 7..10, send 11:
; words leave 11, 12; land 20, 21; end 22. Tile 0 syncs at 12, arrives max(18, port 13) = 18.
; Others: get 0, brnz 1 -> sync at 7, arrive 13. Release max(18, 22) + 90 = 112.
; Then every tile loads its word: get 112, li 113, ld32 114, halt 115 (no use of r3): 116.
; config: tiles=8
; expect: t5.r3 = 0x1234
; expect: t5.mem32[0x204] = 0x5678
; expect-cycles: 116
main:   get     r1, $tile
        brnz    r1, wait
        li      r1, src
        li      r2, 8
        li      r3, 5
        li      r4, 0x200
        send    r1, r2, r3, r4
wait:   sync    internal
        get     r1, $tile
        li      r2, 0x200
        ld32    r3, [r2+0]
        halt
        .data
        .align  8
src:    .word   0x1234, 0x5678
