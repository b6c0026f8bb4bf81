# iobench.s: the worker codelets of io-bench (workloads/iobench). r0 = the tile's parameter
# block, written by the loader:
#   +0  words of input this tile received (4 bytes each)
#   +4  address of the input as it arrived
#   +8  address of the fp32 output (4 pixels per int8 word, 2 per fp16 word)
#   +12 outer loops of work per worker
#   +16 address of this tile's work panel (256 x 16 bytes; the converted pixels)
# Worker w takes input words w, w+6, w+12, ...; normalisation is x * scale + bias with
# scale = 1 / (255 x 0.3081) and bias = -0.1307 / 0.3081 (the tutorial's constants).

        .text
# int8 transfer: raw pixels 0..255, four to a word -> normalised fp32
io_conv_int8:
        get     r1, $wid
        ld32    r2, [r0+0]
        ld32    r3, [r0+4]
        ld32    r4, [r0+8]
        li      r5, 0x3c508a14          # scale = 1 / (255 x 0.3081) = 0.0127287
        li      r6, 0xbed93270          # bias = -0.1307 / 0.3081 = -0.4242129
        shli    r7, r1, 2
        add     r3, r3, r7
        shli    r7, r1, 4
        add     r4, r4, r7
c8:     cmplt   r7, r1, r2
        brz     r7, io_work
        ld32    r8, [r3+0]
        andi    r9, r8, 255
        itof    r9, r9
        fma     r9, r9, r5, r6
        st32    r9, [r4+0]
        shri    r9, r8, 8
        andi    r9, r9, 255
        itof    r9, r9
        fma     r9, r9, r5, r6
        st32    r9, [r4+4]
        shri    r9, r8, 16
        andi    r9, r9, 255
        itof    r9, r9
        fma     r9, r9, r5, r6
        st32    r9, [r4+8]
        shri    r9, r8, 24
        itof    r9, r9
        fma     r9, r9, r5, r6
        st32    r9, [r4+12]
        addi    r3, r3, 24
        addi    r4, r4, 96
        addi    r1, r1, 6
        br      c8

# fp16 transfer: normalised on the host, two halves to a word -> fp32
io_conv_fp16:
        get     r1, $wid
        ld32    r2, [r0+0]
        ld32    r3, [r0+4]
        ld32    r4, [r0+8]
        shli    r7, r1, 2
        add     r3, r3, r7
        shli    r7, r1, 3
        add     r4, r4, r7
c16:    cmplt   r7, r1, r2
        brz     r7, io_work
        ld32    r8, [r3+0]
        f16tof  r9, r8
        st32    r9, [r4+0]
        shri    r9, r8, 16
        f16tof  r9, r9
        st32    r9, [r4+4]
        addi    r3, r3, 24
        addi    r4, r4, 48
        addi    r1, r1, 6
        br      c16

# fp32 transfer: normalised on the host, used as it arrived
io_conv_fp32:

# the work: outer x 256 f32amp steps over the panel (one step = 16 fp32 MACs): inputs from
# panel+0 (4 bytes a step), partials at panel+1024 (8 bytes a step; rows pass out behind)
io_work:
        ld32    r10, [r0+12]
        ld32    r11, [r0+16]
        li      r13, 256
        brz     r10, wdone
        addi    r10, r10, -1            # brnzdec runs the body r10 + 1 times
wl:     mov     r12, r11
        addi    r14, r11, 1024
        rpt     r13, wend
        f32amp  r14, r12
wend:   brnzdec r10, wl
wdone:  exit
