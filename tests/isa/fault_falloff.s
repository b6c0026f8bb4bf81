; A program without halt runs off the end of the text (pc 0x10 after two instructions).
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x10 cycle 2: pc outside the text segment
main:   nop
        nop
