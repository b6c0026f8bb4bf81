; run/join overhead with an empty worker (exit only). run at 0: the worker's exit issues at
; 6 (slot 0), freeing slot 0 and the context from 7. Supervisor: next issue after run is 6,
; slot 0 is busy at 6, so join issues at 7 and completes at max(13, 7) = 13. A second run
; at 13 (slot 1): exit at 19, free from 20; join at 20 (cycle 19 is slot 1, the worker's;
; 20 is slot 2) completes at 26; halt at 26 finishes at 27.
; expect-cycles: 27
; expect-insns: 7
main:   run     w, r0
        join
        run     w, r0
        join
        halt
w:      exit
