# f16_to_f32: out[i] = the fp32 of the IEEE binary16 in[i] for i < n, exactly (f16tof: every
# half, subnormals, infinities and NaNs included, is a float). The halves come two to a word,
# half 2k in the low 16 bits of word k (little-endian memory: in order). For an infeed of
# images the host normalised and rounded to fp16 (ipusim mnist --dtype fp16): half the fp32
# transfer. Left out: fp16 arithmetic on the device (the network runs in fp32).
#
# State (3 words; one vertex per range of pixels):
#   +0  in    region  n halves (n / 2 words), 8-byte aligned
#   +4  out   region  n floats, 8-byte aligned
#   +8  n     u32     a multiple of 4 (0 allowed)
#
# Four halves a step: ld64pi of their two words into r6, r7; per word: f16tof of its low
# half, shri of its high half, f16tof, one st64pi of the two floats.
#
# Cycles (docs/timing.md: 6 tile cycles a worker slot; rpt costs one slot, its body no
# overhead; ld64pi's 8 bytes and st64pi's 8 bytes fit the Mk2's 16 load and 8 store bytes a
# cycle): with g = n / 4,
#   S = 6 + 9 g worker slots (6 x S tile cycles): 5 before the rpt body (3 ld32, shri, rpt),
#   per step 9 (ld64pi 1; per word f16tof, shri, f16tof, st64pi = 4), exit.

        .text
f16_to_f32:
        ld32    r1, [r0+0]          # in
        ld32    r2, [r0+4]          # out
        ld32    r3, [r0+8]          # n
        shri    r3, r3, 2
        rpt     r3, f16_to_f32.end
        ld64pi  r6, [r1]+=8
        f16tof  r8, r6
        shri    r9, r6, 16
        f16tof  r9, r9
        st64pi  r8, [r2]+=8
        f16tof  r10, r7
        shri    r11, r7, 16
        f16tof  r11, r11
        st64pi  r10, [r2]+=8
f16_to_f32.end:
        exit
