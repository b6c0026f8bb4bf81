; ld128pi: four registers from a 16-byte-aligned address in one worker issue, post-increment.
; worker: li 6, ld128pi 12, ld128pi 18, exit 24 (free from 25); join at 7 completes at 25;
; halt at 25 finishes at 26.
; expect: w0.r4 = 11
; expect: w0.r7 = 44
; expect: w0.r8 = 55
; expect: w0.r11 = 88
; expect: w0.r1 = 0x60
; (7 instructions = 56 bytes of text; data starts at 0x40; vals + 32 = 0x60)
; expect-cycles: 26
; expect-insns: 7
main:   run     w, r0
        join
        halt
w:      li      r1, vals
        ld128pi r4, [r1]+=16
        ld128pi r8, [r1]+=16
        exit
        .data
        .align  16
vals:   .word   11, 22, 33, 44, 55, 66, 77, 88
