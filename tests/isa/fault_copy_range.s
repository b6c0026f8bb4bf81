; A send whose length runs past the 624 KiB Mk2 tile memory (638976 bytes): li at 0..3, the
; send at 4 (pc 0x20) faults; the message names the length and the range it would cover.
; config: tiles=2
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x20 cycle 4: send of 4294967280 bytes from 0x0 (up to 0xfffffff0) runs past the tile's 638976 bytes of memory
main:   li      r1, 0
        li      r2, 0xfffffff0
        li      r3, 1
        li      r4, 0
        send    r1, r2, r3, r4
        halt
