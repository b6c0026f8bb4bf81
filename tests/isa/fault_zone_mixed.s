; Tile 0 waits at an internal sync while tile 1 waits at an external one: a deadlock,
; reported with both lists.
; config: tiles=2
; expect-fault: waiting at internal sync: 1 tiles (0); waiting at external sync: 1 tiles (1)
main:   get     r1, $tile
        brnz    r1, ext
        sync    internal
        halt
ext:    sync    external
        halt
