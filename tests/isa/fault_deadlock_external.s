; IPU 0 waits at an external sync, IPU 1 at an external sync with the host, IPUs 2 and 3 halt:
; the report names the waiting and the missing IPUs and their tiles' states.
; A supervisor branch takes 6 cycles, taken or not. IPU 0: get 0, brz 1, sync at 7 arrives at
; 13. IPU 1: get 0, brz 1, cmpeqi 7, brnz 8, sync at 14 arrives at 20; the report's cycle is
; the later arrival.
; config: tiles=2 ipus=4
; expect-fault: ipu 1 cycle 20: sync deadlock: waiting at external sync: 1 IPUs (ipu 0 (at external 0-1)); waiting at external_host sync: 1 IPUs (ipu 1 (at external_host 0-1)); missing (all tiles halted): 2 IPUs (ipu 2 (halted 0-1), ipu 3 (halted 0-1)); the IPUs wait at different external zones
main:   get     r1, $ipu
        brz     r1, a
        cmpeqi  r2, r1, 1
        brnz    r2, b
        halt
a:      sync    external
        halt
b:      sync    external_host
        halt
