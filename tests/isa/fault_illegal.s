; An illegal opcode (0xff) placed in the text with .word; executed at cycle 1, pc 0x8.
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x8 cycle 1: illegal instruction
main:   nop
        .word   0, 0xff000000
        halt
