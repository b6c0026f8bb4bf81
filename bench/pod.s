; pod.s: the program `make bench-mpi` runs on a POD (bench/mpi.sh): on every tile of every
; IPU a GEMM part, then a ring all-reduce over the IPUs, as data-parallel training ends a step.
;
; Memory (fixed addresses above the image, so loading copies only the code): weights 0x10000
; (512 B), acc 0x10200 (1 KiB), recv 0x10600 (16 B), rows of A 0x11000 (6 KiB), partials
; 0x13000 (12 KiB).
;
; GEMM part: 4 passes; each loads the AMP's weights (32 x ldcw) and runs the six workers,
; each streaming 32 rows of 8 fp32 inputs (its 1 KiB of A) through the AMP into 16 partials a
; row (its 2 KiB of partials): 256 f32amp a worker a pass, as the GEMM codelet's inner loop
; (workloads/gemm/gemm.s). The inputs are what the memory holds: a benchmark of the
; simulator's speed, not of the product.
;
; All-reduce: acc holds n = nipus chunks of 16 bytes (4 words; n <= 64), word k starting as
; (ipu + 1)(k + 1) + tile. A reduce-scatter of n - 1 steps (step s: tile t of IPU i gsends
; chunk (i - s) mod n to recv of tile t of IPU i + 1 mod n; an external sync; the tile adds
; what it got into its chunk (i - s - 1) mod n), then an all-gather of n - 1 steps (step s:
; it gsends chunk (i + 1 - s) mod n into the same chunk of the next IPU; an external sync).
; Afterwards every tile's word k is the sum over the IPUs: (k + 1) n (n + 1) / 2 + n tile.
        .text
main:   li      r1, 3               ; passes - 1 (brnzdec runs the body 4 times)
        li      r3, 0x10000
pass:   ldcw    0, r3
        ldcw    1, r3
        ldcw    2, r3
        ldcw    3, r3
        ldcw    4, r3
        ldcw    5, r3
        ldcw    6, r3
        ldcw    7, r3
        ldcw    8, r3
        ldcw    9, r3
        ldcw    10, r3
        ldcw    11, r3
        ldcw    12, r3
        ldcw    13, r3
        ldcw    14, r3
        ldcw    15, r3
        ldcw    16, r3
        ldcw    17, r3
        ldcw    18, r3
        ldcw    19, r3
        ldcw    20, r3
        ldcw    21, r3
        ldcw    22, r3
        ldcw    23, r3
        ldcw    24, r3
        ldcw    25, r3
        ldcw    26, r3
        ldcw    27, r3
        ldcw    28, r3
        ldcw    29, r3
        ldcw    30, r3
        ldcw    31, r3
        runall  gemm, r0
        join
        brnzdec r1, pass
        sync    internal
        ; acc word k = (ipu + 1)(k + 1) + tile, k < 4 n
        get     r1, $tile
        get     r2, $ipu
        get     r3, $nipus
        li      r12, 0
        shli    r4, r3, 2
        addi    r5, r2, 1
        li      r6, 0x10200
        mov     r7, r5
fill:   add     r8, r7, r1
        st32    r8, [r6+0]
        addi    r6, r6, 4
        add     r7, r7, r5
        addi    r4, r4, -1
        brnz    r4, fill
        ; r4: the same tile of the next IPU (gsend's destination); r5: steps n - 1
        addi    r4, r2, 1
        cmpeq   r6, r4, r3
        brz     r6, nowrap
        li      r4, 0
nowrap: shli    r4, r4, 16
        or      r4, r4, r1
        addi    r5, r3, -1
        brz     r5, done
        li      r13, 16
        li      r9, 0
rs:     sub     r6, r2, r9          ; chunk (i - s) mod n
        cmplt   r7, r6, r12
        brz     r7, rs1
        add     r6, r6, r3
rs1:    shli    r6, r6, 4
        addi    r6, r6, 0x10200
        li      r8, 0x10600
        gsend   r6, r13, r4, r8
        sync    external
        sub     r6, r2, r9          ; chunk (i - s - 1) mod n += recv
        addi    r6, r6, -1
        cmplt   r7, r6, r12
        brz     r7, rs2
        add     r6, r6, r3
rs2:    shli    r6, r6, 4
        addi    r6, r6, 0x10200
        li      r14, 3              ; 4 words
add4:   ld32    r10, [r8+0]
        ld32    r11, [r6+0]
        add     r10, r10, r11
        st32    r10, [r6+0]
        addi    r8, r8, 4
        addi    r6, r6, 4
        brnzdec r14, add4
        addi    r9, r9, 1
        cmpeq   r7, r9, r5
        brz     r7, rs
        li      r9, 0
ag:     addi    r6, r2, 1           ; chunk (i + 1 - s) mod n, into the same chunk next door
        sub     r6, r6, r9
        cmplt   r7, r6, r3
        brnz    r7, ag1
        sub     r6, r6, r3
ag1:    shli    r6, r6, 4
        addi    r6, r6, 0x10200
        gsend   r6, r13, r4, r6
        sync    external
        addi    r9, r9, 1
        cmpeq   r7, r9, r5
        brz     r7, ag
done:   halt

gemm:   get     r1, $wid
        muli    r2, r1, 1024        ; my rows of A: 32 x 32 bytes
        addi    r2, r2, 0x11000
        muli    r4, r1, 2048        ; my partials: 32 x 64 bytes
        addi    r4, r4, 0x13000
        li      r6, 256             ; 32 rows x 8 steps
        rpt     r6, gend
        f32amp  r4, r2
gend:   ampst
        exit

