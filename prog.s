; prog.s: the README's sample program. On every tile the supervisor starts six workers with
; the tile's id; worker w stores tile x 6 + w at 0x100 + 4 w, then the tiles meet at an
; internal sync and halt. ./ipusim run prog.s --tiles 16 --dump-mem 0:3:0x100:24
main:   get     r1, $tile
        runall  work, r1        ; six workers, r0 = tile id
        join
        sync    internal
        halt
work:   get     r2, $wid
        muli    r3, r0, 6       ; tile x 6
        add     r3, r3, r2      ;   + worker id
        shli    r4, r2, 2       ; 4 w
        st32    r3, [r4+0x100]
        exit
