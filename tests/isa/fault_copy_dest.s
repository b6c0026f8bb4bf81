; A send whose destination range runs past the receiving tile's memory: li at 0..3, the send
; at 4 (pc 0x20) faults.
; config: tiles=2
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x20 cycle 4: send of 8 bytes to 0x9bffc (up to 0x9c004) runs past the destination tile's 638976 bytes of memory
main:   li      r1, 0
        li      r2, 8
        li      r3, 1
        li      r4, 0x9bffc
        send    r1, r2, r3, r4
        halt
