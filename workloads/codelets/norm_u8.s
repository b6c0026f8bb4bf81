# norm_u8: out[i] = ((float)in[i] / k255 - mean) / std for i < n: 8-bit images to the
# network's fp32 inputs on the device, ToTensor then Normalize (mdata_norm_table in
# workloads/mnist/data.c, the same fp32 operations in the same order: itof is exact for
# 0..255, fdiv is correctly rounded), so bit for bit the host's normalisation. For an infeed
# of raw bytes (ipusim mnist --dtype u8): a quarter of the fp32 transfer.
#
# State (6 words; one vertex per range of pixels):
#   +0  in    region  n bytes, 4-byte aligned
#   +4  out   region  n floats, 4-byte aligned
#   +8  n     u32     a multiple of 4 (0 allowed)
#   +12 k255  f32     255.0f
#   +16 mean  f32     fp32 (0.1307f)
#   +20 std   f32     fp32 (0.3081f)
#
# Four pixels a step: ld32pi of their bytes, then per byte: its bits (andi; shri first for
# bytes 1 to 3, and no andi for byte 3), itof, fdiv, fsub, fdiv, st32pi.
#
# Cycles (docs/timing.md: 6 tile cycles a worker slot; fdiv takes 3 slots; rpt costs one slot,
# its body no overhead): with g = n / 4,
#   S = 9 + 43 g worker slots (6 x S tile cycles): 8 before the rpt (6 ld32, shri, rpt), per
#   step 43 (ld32pi 1; byte 0: andi, itof, fdiv 3, fsub, fdiv 3, st32pi = 10; bytes 1 and 2:
#   shri and the same 10 = 11 each; byte 3: shri, itof, fdiv 3, fsub, fdiv 3, st32pi = 10),
#   exit.

        .text
norm_u8:
        ld32    r1, [r0+0]          # in
        ld32    r2, [r0+4]          # out
        ld32    r3, [r0+8]          # n
        ld32    r4, [r0+12]         # 255.0f
        ld32    r5, [r0+16]         # mean
        ld32    r6, [r0+20]         # std
        shri    r3, r3, 2
        rpt     r3, norm_u8.end
        ld32pi  r7, [r1]+=4
        andi    r8, r7, 255
        itof    r8, r8
        fdiv    r8, r8, r4
        fsub    r8, r8, r5
        fdiv    r8, r8, r6
        st32pi  r8, [r2]+=4
        shri    r8, r7, 8
        andi    r8, r8, 255
        itof    r8, r8
        fdiv    r8, r8, r4
        fsub    r8, r8, r5
        fdiv    r8, r8, r6
        st32pi  r8, [r2]+=4
        shri    r8, r7, 16
        andi    r8, r8, 255
        itof    r8, r8
        fdiv    r8, r8, r4
        fsub    r8, r8, r5
        fdiv    r8, r8, r6
        st32pi  r8, [r2]+=4
        shri    r8, r7, 24
        itof    r8, r8
        fdiv    r8, r8, r4
        fsub    r8, r8, r5
        fdiv    r8, r8, r6
        st32pi  r8, [r2]+=4
norm_u8.end:
        exit
