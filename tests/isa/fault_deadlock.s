; Tile 0 halts while tile 1 waits at an internal sync: reported, never a hang.
; config: tiles=2
; expect-fault: sync deadlock: waiting at internal sync: 1 tiles (1); waiting at external sync: 0 tiles (none); missing (halted): 1 tiles (0)
main:   get     r1, $tile
        brz     r1, out
        sync    internal
out:    halt
