; External sync across 2 IPUs of 2 tiles. Arrival: sync at 0 + 6 = 6. Latency: internal 90
; plus the IPU Model's ceil(15 ns x 1.325 GHz x hops x 2) with hops = 1 + (2/2)/2 = 1,
; i.e. ceil(39.75) = 40: release at 6 + 130 = 136; get 136, halt 137 finishes at 138.
; Both IPUs count one superstep.
; config: tiles=2 ipus=2
; expect: i1.t1.r1 = 1
; expect-cycles: 138
; expect-supersteps: 2
main:   sync    external
        get     r1, $ipu
        halt
