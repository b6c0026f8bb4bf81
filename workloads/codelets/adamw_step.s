# adamw_step.s: one AdamW update (PyTorch's, decoupled weight decay, bias-corrected, amsgrad
# off) of n fp32 parameters with their gradient and first and second moments: a worker
# codelet (docs/codelets.md). Matches adamw_step in workloads/mnist/adamw.c bit for bit: per
# element, in its fp32 operations and order,
#   p    = param * decay
#   m    = m + w1 * (g - m)
#   v    = v * b2 + (w2 * g) * g
#   den  = sqrt(v) / bc2_sqrt + eps              (fsqrt, fdiv: correctly rounded)
#   param = p + (neg_step * m) / den             (fdiv)
# (products and sums commute exactly, so operand order within one is free).
#
# The step's scalars are computed on the host as adamw.c does (and PyTorch, in Python
# floats): in double, rounded to fp32 once, for step t counted from 1:
#   decay    = 1 - lr * weight_decay             w1 = 1 - beta1
#   b2       = beta2                             w2 = 1 - beta2
#   neg_step = -(lr / (1 - beta1^t))             bc2_sqrt = sqrt(1 - beta2^t)
#   eps      = eps
# Only neg_step and bc2_sqrt change from step to step, so they are not in the state but in a
# step record in memory that the state points to (`hyper`): on a device loop of many steps
# the graph keeps a table of records, one per step, and adamw_hyper.s copies the step's
# record to `hyper` before this codelet runs.
#
# How: pairs of elements with f32v2 arithmetic (fsqrt and fdiv per lane); the constants used
# as pairs are stored twice in the state and reloaded with one ld64 where they are needed
# (there are too few registers to keep them all), eps stays in r10:r11, bc2_sqrt in r1
# (loaded once through `hyper`); neg_step is loaded through `hyper` where it is needed (the
# pointer first, then the pair); an odd last element is done alone.
#
# State (32-bit words at r0, 8-byte aligned; 64 bytes):
#   +0   param   region  n fp32, read and written, 8-byte aligned
#   +4   grad    region  n fp32, 8-byte aligned
#   +8   m       region  n fp32 first moments, read and written, 8-byte aligned
#   +12  v       region  n fp32 second moments, read and written, 8-byte aligned
#   +16  n       u32     elements (0 allowed)
#   +20  hyper   region  address of the step record, 8-byte aligned, read only:
#                        16 bytes {bc2_sqrt, 0, neg_step, neg_step}
#   +24  eps     f32x2   (eps, eps)
#   +32  decay   f32x2   (decay, decay)
#   +40  w1      f32x2   (w1, w1)
#   +48  b2      f32x2   (b2, b2)
#   +56  w2      f32x2   (w2, w2)
#
# Cycles (docs/timing.md: one issue per 6 tile cycles; fsqrt takes 5 slots, fdiv 3, the rest
# 1), from the first issue to the slot after the exit:
#   6 x (14 + 46 floor(n / 2) + 35 (n mod 2))
#   prologue 10 (5 ld32, ld64, 2 ld32 for bc2_sqrt, shri, rpt); a pair 46 (4 ld64 of data,
#   5 ld64 of constants, ld32 of hyper, 11 f32v2 operations, 2 fsqrt 10, 4 fdiv 12, 3
#   st64pi); the odd test 3 (ld32, andi, brz); the last element 35 (4 ld32 of data, 6 ld32 of
#   constants and hyper, 11 fp32 operations, fsqrt 5, 2 fdiv 6, 3 st32); exit 1.
# E.g. n = 1000: 6 x (14 + 23000) = 138,084 cycles.

        .text
adamw_step:
        ld32    r12, [r0+0]             # param
        ld32    r13, [r0+4]             # grad
        ld32    r14, [r0+8]             # m
        ld32    r15, [r0+12]            # v
        ld32    r2, [r0+16]             # n
        ld64    r10, [r0+24]            # (eps, eps)
        ld32    r1, [r0+20]             # hyper
        ld32    r1, [r1+0]              # bc2_sqrt
        shri    r2, r2, 1
        rpt     r2, adamw_step.pairs_end
        ld64pi  r2, [r13]+=8            # g
        ld64    r4, [r14+0]             # m
        ld64    r8, [r0+40]             # w1
        v2sub   r6, r2, r4
        v2mul   r6, r8, r6
        v2add   r4, r4, r6              # m + w1 * (g - m)
        st64pi  r4, [r14]+=8
        ld64    r6, [r15+0]             # v
        ld64    r8, [r0+48]             # b2
        v2mul   r6, r6, r8
        ld64    r8, [r0+56]             # w2
        v2mul   r8, r8, r2
        v2mul   r8, r8, r2
        v2add   r6, r6, r8              # v * b2 + (w2 * g) * g
        st64pi  r6, [r15]+=8
        fsqrt   r2, r6
        fsqrt   r3, r7
        fdiv    r2, r2, r1
        fdiv    r3, r3, r1
        v2add   r2, r2, r10             # den = sqrt(v) / bc2_sqrt + eps
        ld32    r8, [r0+20]             # hyper
        ld64    r8, [r8+8]              # neg_step
        v2mul   r4, r8, r4
        fdiv    r4, r4, r2
        fdiv    r5, r5, r3              # (neg_step * m) / den
        ld64    r6, [r12+0]             # param
        ld64    r8, [r0+32]             # decay
        v2mul   r6, r6, r8
        v2add   r6, r6, r4
        st64pi  r6, [r12]+=8
adamw_step.pairs_end:
        ld32    r2, [r0+16]
        andi    r2, r2, 1
        brz     r2, adamw_step.done
        ld32    r2, [r13+0]             # the last element, alone
        ld32    r4, [r14+0]
        ld32    r8, [r0+40]
        fsub    r6, r2, r4
        fmul    r6, r8, r6
        fadd    r4, r4, r6
        st32    r4, [r14+0]
        ld32    r6, [r15+0]
        ld32    r8, [r0+48]
        fmul    r6, r6, r8
        ld32    r8, [r0+56]
        fmul    r8, r8, r2
        fmul    r8, r8, r2
        fadd    r6, r6, r8
        st32    r6, [r15+0]
        fsqrt   r2, r6
        fdiv    r2, r2, r1
        fadd    r2, r2, r10
        ld32    r8, [r0+20]
        ld32    r8, [r8+8]
        fmul    r4, r8, r4
        fdiv    r4, r4, r2
        ld32    r6, [r12+0]
        ld32    r8, [r0+32]
        fmul    r6, r6, r8
        fadd    r6, r6, r4
        st32    r6, [r12+0]
adamw_step.done:
        exit
