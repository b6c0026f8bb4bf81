; fp32 arithmetic and conversions in a worker (values checked against IEEE by hand).
; expect: w0.r3 = 3.5f
; expect: w0.r4 = -1.5f
; expect: w0.r5 = 7
; expect: w0.r6 = 0x3e00
; expect: w0.r7 = 1.5f
; expect: w0.r8 = -128.0f
; expect: w0.r9 = 2147483647
; expect: w0.r10 = 5.5f
; expect: w0.r12 = 4.0f
; expect: w0.r11 = -2.0f
; expect: w0.r13 = 2.25f
; expect: w0.r14 = 6.0f
main:   run     w, r0
        join
        halt
w:      li      r1, 0x40000000      ; 2.0f
        li      r2, 0x3fc00000      ; 1.5f
        fadd    r3, r1, r2          ; 3.5
        fsub    r11, r2, r3         ; 1.5 - 3.5 = -2.0 (3.5 - 1.5 = +2.0 if the order slips)
        fneg    r4, r2              ; -1.5
        li      r5, 0x40e00000      ; 7.0f
        ftoi    r5, r5              ; 7
        ftof16  r6, r2              ; fp16 1.5 = 0x3e00
        f16tof  r7, r6              ; 1.5f
        li      r8, 0x80
        i8tof   r8, r8              ; (int8)0x80 = -128
        li      r9, 0x7f800000      ; +inf
        ftoi    r9, r9              ; saturates
        fma     r10, r1, r1, r2     ; 2*2 + 1.5 = 5.5
        mov     r12, r1
        mov     r13, r2
        v2mul   r12, r12, r12       ; (4.0, 2.25) in r12, r13
        li      r14, 0x40c00000     ; 6.0f
        exit
