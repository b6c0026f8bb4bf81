nop
.word 0x1, 0xff000000
.byte 1, 2, 3, 4
main: .byte 5, 6, 7, 8
.data
.align 64
.byte 9
