; GS2 spans every IPU like GS1 and has the same latency: 2 IPUs: 90 + ceil(39.75) = 130.
; sync at 0 arrives at 6; release 136; halt 136 finishes 137.
; config: tiles=2 ipus=2
; expect-cycles: 137
; expect-supersteps: 2
main:   sync    gs2
        halt
