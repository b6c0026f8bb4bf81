; A GS1 sync with the host adds the host's part (sync_host = 1000 cycles on mk2, an
; assumption in the preset): arrival 6, release 6 + 130 + 1000 = 1136, halt finishes 1137.
; config: tiles=2 ipus=2
; expect-cycles: 1137
main:   sync    external_host
        halt
