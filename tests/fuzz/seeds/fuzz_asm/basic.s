.global main
main:
    li r1, 10
    li r2, table
    ld32 r3, [r2+4]
    st32 r3, [r2-4]
    ld64pi r4, [r2]+=8
    rpt r1, end
    add r5, r5, r3
end:
    get r8, $tile
    put $scratch, r8
    sync internal
    run worker, r1
    join
    halt
worker:
    fma r0, r1, r2, r3
    v2add r4, r6, r8
    exit
.data
table: .word 1, 2, table, . + 4
    .float 1.5, -inf, nan
    .byte 1, 'x'
    .align 32
    .space 5
