; Running past the cycle limit (--max-cycles): an endless supervisor loop (br costs 6) with max-cycles 100;
; issues at 0, 6, ..., 96; the next would be at 102.
; config: max-cycles=100
; expect-fault: ipu 0 tile 0 ctx 0 pc 0x0 cycle 102: run exceeds --max-cycles 100
main:   br      main
