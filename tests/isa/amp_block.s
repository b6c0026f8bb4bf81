; AMP: acc[4i+j] += a[i] * b[j] over two k steps, then ampst.
; a(k=0) = 1 2 3 4, b(k=0) = 1 0 0 1; a(k=1) = 1 1 1 1, b(k=1) = 0.5 0.5 0.5 0.5
; C[i][j] = a0[i] b0[j] + 0.5: row 2 = 3.5 0.5 0.5 3.5
; expect: mem32[0x200] = 1.5f
; expect: mem32[0x20c] = 1.5f
; expect: mem32[0x220] = 3.5f
; expect: mem32[0x224] = 0.5f
; expect: mem32[0x23c] = 4.5f
; expect: w0.r1 = 0x80
; (text is 12 instructions = 0x60 bytes; apan sits at 0x60 and r1 advances 16 per amp)
main:   run     w, r0
        join
        halt
w:      li      r1, apan
        li      r2, bpan
        li      r3, 0x200
        li      r4, 2
        ampz
        rpt     r4, e
        amp     r1, r2
e:      ampst   r3
        exit
        .data
        .align  16
apan:   .float  1, 2, 3, 4, 1, 1, 1, 1
bpan:   .float  1, 0, 0, 1, 0.5, 0.5, 0.5, 0.5
