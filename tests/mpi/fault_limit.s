; An MPI fault program (tests/test_mpi.sh): every tile of every IPU loops for ever, so with
; --max-superstep-cycles every tile passes the limit in the first superstep. One process
; names the first (ipu 0 tile 0) and then the others past it, IPU by IPU over the whole
; system (eight IPUs named, then how many more); with several ranks the others come from
; every rank, and the message must be one process's.
main:   get     r1, $ipu
        get     r2, $tile
        muli    r3, r1, 4
        add     r3, r3, r2
loop:   addi    r3, r3, 1
        br      loop
