# xent_fwd_bwd.s: softmax cross-entropy over 10 classes, forward and backward, for a range of
# rows (samples) of the batch: a worker codelet (docs/codelets.md).
#
# Matches mlayer_xent (workloads/mnist/layers.c) operation for operation, per row n:
#   m    = z[n][best], best = the first largest logit (ties: the first wins)
#   e[j] = exp(z[n][j] - m)                      (fexp; the max subtraction keeps e <= 1)
#   s    = ((0 + e[0]) + e[1]) + ... + e[9]      (in class order; 0 + e[0] is e[0])
#   loss = log(s) - (z[n][label] - m)            (flog)
#   dz[n][j] = (e[j] / s - (j == label)) * scale, scale = 1.0f / (float)batch
# and, over the range, sum = ((0 + loss[0]) + loss[1]) + ... in row order, and the number of
# rows whose first largest logit is the label. The caller adds the vertices' sums (and
# counts) and divides by batch: with one vertex for the whole batch, sum / (float)batch is
# mlayer_xent's return value, bit for bit when fexp and flog agree with the host's expf and
# logf. They are exp and log in double rounded once (docs/isa.md); glibc 2.36's expf and
# logf are not correctly rounded and differ from them by 1 ulp on 97,052 of the fp32 inputs
# <= 0 and on 124,187 of those in [1, 10] (the only arguments here: s is in [1, 10]), never
# by more. tests/test_codelets_loss.c compares bit for bit with mlayer_xent's code written
# with exp and log in double, and with mlayer_xent itself within the bound that 1 ulp gives.
#
# How: per row, pass 1 loads the logits as pairs and stores the prefix maxima pm[k] = max of
# z[0..k-1] into the row's dz (pm[0] = NaN), ending with m; then correct = (z[label] == m) and
# not (m <= pm[label]): no earlier logit reaches m. That is best == label without an index.
# (fmax and `>` pick the same value; at a tie of -0 and +0 the m's sign may differ, which
# changes no result bit.) Pass 2 reloads the logits, stores e as pairs into dz (scratch) and
# sums s; pass 3 turns e into (e / s) * scale in place, and the label's element is then
# rewritten as (e / s - 1) * scale. NaN logits give NaN results, but not necessarily
# mlayer_xent's count.
#
# State (32-bit words at r0):
#   +0   z       region  logits, rows x 10 fp32, 8-byte aligned
#   +4   labels  region  rows int32 in [0, 10)
#   +8   dz      region  gradient out, rows x 10 fp32, 8-byte aligned (may not overlap z)
#   +12  rows    u32     rows in the range (0 allowed)
#   +16  batch   u32     the whole batch's size (int32 > 0): scale = 1.0f / (float)batch
#   +20  sum     region  address of the fp32 sum of the range's losses (written)
#   +24  correct region  address of the int32 count of correct rows in the range (written)
#
# Cycles (docs/timing.md: a worker issues once per 6 tile cycles; fdiv and fexp take 3
# slots, flog 6, every other instruction here 1), from the first issue to the slot after the
# exit: 6 x (17 + 152 rows):
#   prologue 12 (5 ld32, itof, li, fdiv 3, mov, rpt), epilogue 5 (2 ld32, 2 st32, exit);
#   a row 152: pass 1 26 (li, st32, then 5 ld64, 9 fmax, 10 st32, mov), label 11 (ld32pi,
#   shli, add, ld32, add, ld32, fcmple, fcmpeq, cmplt, add, fsub), pass 2 54 (5 ld64pi,
#   5 v2sub, 10 fexp, 5 st64, 9 fadd), loss 8 (flog, fsub, fadd), label's gradient 7 (ld32,
#   fdiv, li, fsub, fmul) + 1 (st32), pass 3 45 (5 x: ld64, 2 fdiv, v2mul, st64pi).
# The tutorial's batch of 40 on one worker: 6 x 6097 = 36,582 cycles; 7 rows: 6 x 1081 =
# 6,486.

        .text
xent_fwd_bwd:
        ld32    r1, [r0+0]              # z, the current row
        ld32    r12, [r0+4]             # labels
        ld32    r13, [r0+8]             # dz, the current row
        ld32    r2, [r0+12]             # rows
        ld32    r6, [r0+16]             # batch
        itof    r6, r6
        li      r7, 0x3f800000          # 1.0f
        fdiv    r6, r7, r6              # scale = 1.0f / (float)batch
        mov     r7, r6                  # r6:r7 = (scale, scale); r14 = sum, r15 = count: 0
        rpt     r2, xent_fwd_bwd.rows_end
        # pass 1: prefix maxima into dz[0..9], m into r4:r5
        li      r8, 0x7fc00000          # NaN: pm[0], no logit before the first
        st32    r8, [r13+0]
        ld64    r2, [r1+0]
        st32    r2, [r13+4]             # pm[1] = z0
        fmax    r11, r2, r3
        st32    r11, [r13+8]            # pm[2]
        ld64    r2, [r1+8]
        fmax    r11, r11, r2
        st32    r11, [r13+12]
        fmax    r11, r11, r3
        st32    r11, [r13+16]
        ld64    r2, [r1+16]
        fmax    r11, r11, r2
        st32    r11, [r13+20]
        fmax    r11, r11, r3
        st32    r11, [r13+24]
        ld64    r2, [r1+24]
        fmax    r11, r11, r2
        st32    r11, [r13+28]
        fmax    r11, r11, r3
        st32    r11, [r13+32]
        ld64    r2, [r1+32]
        fmax    r11, r11, r2
        st32    r11, [r13+36]           # pm[9]
        fmax    r4, r11, r3             # m
        mov     r5, r4
        # the label: correct, t = z[label] - m, r9 = &dz[label]
        ld32pi  r9, [r12]+=4
        shli    r9, r9, 2
        add     r8, r1, r9
        ld32    r8, [r8+0]              # z[label]
        add     r9, r13, r9
        ld32    r10, [r9+0]             # pm[label]
        fcmple  r10, r4, r10            # an earlier logit reaches m
        fcmpeq  r11, r8, r4             # the label's logit is m
        cmplt   r11, r10, r11           # both: best == label
        add     r15, r15, r11
        fsub    r10, r8, r4             # t
        # pass 2: e = exp(z - m) into dz, s = their sum in class order
        ld64pi  r2, [r1]+=8
        v2sub   r2, r2, r4
        fexp    r2, r2
        fexp    r3, r3
        st64    r2, [r13+0]
        fadd    r8, r2, r3
        ld64pi  r2, [r1]+=8
        v2sub   r2, r2, r4
        fexp    r2, r2
        fexp    r3, r3
        st64    r2, [r13+8]
        fadd    r8, r8, r2
        fadd    r8, r8, r3
        ld64pi  r2, [r1]+=8
        v2sub   r2, r2, r4
        fexp    r2, r2
        fexp    r3, r3
        st64    r2, [r13+16]
        fadd    r8, r8, r2
        fadd    r8, r8, r3
        ld64pi  r2, [r1]+=8
        v2sub   r2, r2, r4
        fexp    r2, r2
        fexp    r3, r3
        st64    r2, [r13+24]
        fadd    r8, r8, r2
        fadd    r8, r8, r3
        ld64pi  r2, [r1]+=8
        v2sub   r2, r2, r4
        fexp    r2, r2
        fexp    r3, r3
        st64    r2, [r13+32]
        fadd    r8, r8, r2
        fadd    r8, r8, r3
        # the loss, and the label's gradient (e[label] / s - 1) * scale
        flog    r11, r8
        fsub    r11, r11, r10           # log(s) - t
        fadd    r14, r14, r11
        ld32    r11, [r9+0]             # e[label]
        fdiv    r11, r11, r8
        li      r10, 0x3f800000
        fsub    r11, r11, r10
        fmul    r11, r11, r6
        # pass 3: dz = (e / s) * scale
        ld64    r2, [r13+0]
        fdiv    r2, r2, r8
        fdiv    r3, r3, r8
        v2mul   r2, r2, r6
        st64pi  r2, [r13]+=8
        ld64    r2, [r13+0]
        fdiv    r2, r2, r8
        fdiv    r3, r3, r8
        v2mul   r2, r2, r6
        st64pi  r2, [r13]+=8
        ld64    r2, [r13+0]
        fdiv    r2, r2, r8
        fdiv    r3, r3, r8
        v2mul   r2, r2, r6
        st64pi  r2, [r13]+=8
        ld64    r2, [r13+0]
        fdiv    r2, r2, r8
        fdiv    r3, r3, r8
        v2mul   r2, r2, r6
        st64pi  r2, [r13]+=8
        ld64    r2, [r13+0]
        fdiv    r2, r2, r8
        fdiv    r3, r3, r8
        v2mul   r2, r2, r6
        st64pi  r2, [r13]+=8
        st32    r11, [r9+0]             # the label's element
xent_fwd_bwd.rows_end:
        ld32    r2, [r0+20]
        st32    r14, [r2+0]
        ld32    r2, [r0+24]
        st32    r15, [r2+0]
        exit
