# gemm.s: C = A x B on one tile, its 4x4 blocks shared among the six workers.
#
# The loader (workloads/gemm/gemm.c) fills `params` and the tile memory after the image:
#   params+0  number of 4x4 blocks of C this tile computes
#   params+4  K
#   params+8  address of the block table: per block {A panel, B panel, C block} (12 bytes)
# An A panel holds A[m0..m0+3][k] as K groups of 4 floats (k-major); a B panel holds
# B[k][n0..n0+3] the same way; a C block is 16 floats, row-major.
# Worker w computes blocks w, w+6, w+12, ...: per block, one `amp` per k inside a
# zero-overhead `rpt`, so a block costs K + 14 issue slots.

        .text
        .global main
main:
        li      r1, params
        runall  worker, r1          # six workers, r0 = params
        join
        halt

worker:
        get     r1, $wid            # r1 = block index
        ld32    r2, [r0+0]          # r2 = blocks on this tile
        ld32    r3, [r0+4]          # r3 = K
        ld32    r4, [r0+8]          # r4 = block table
        muli    r5, r1, 12
        add     r4, r4, r5          # r4 = &table[wid]
next:
        cmplt   r6, r1, r2
        brz     r6, done
        ld32    r7, [r4+0]          # A panel
        ld32    r8, [r4+4]          # B panel
        ld32    r9, [r4+8]          # C block
        ampz
        rpt     r3, kend
        amp     r7, r8              # acc += A[:,k] (outer) B[k,:]
kend:
        ampst   r9
        addi    r1, r1, 6
        addi    r4, r4, 72          # 6 blocks of 12 bytes
        br      next
done:
        exit

        .data
        .align  8
params:
        .space  12
