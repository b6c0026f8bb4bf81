# adamw_hyper.s: picks the AdamW step's record for this step of a device loop: a worker
# codelet (docs/codelets.md). adamw_step.s reads the two scalars that change from step to step
# (bc2_sqrt and neg_step, computed on the host) from a 16-byte record its state points to; on
# a device loop of many weight updates the host writes one record per step into a table, and
# this codelet, run once per step before the update, copies
#   rec = table[*cursor]          (16 bytes)
#   *cursor = *cursor + 1
# One vertex per tile, in a compute set of its own before the tile's adamw_step compute set
# (the vertices of one compute set run concurrently, so the update must not share its compute
# set with the copy that feeds it). The cursor starts at 0 (the table's first record is step
# 1's) and is not checked against the table's length: the graph makes the table as long as
# the loop.
#
# State (32-bit words at r0):
#   +0   rec     region  the 16-byte record adamw_step's `hyper` points to, written, 8-byte aligned
#   +4   table   region  records of 16 bytes, one per step, read only, 8-byte aligned
#   +8   cursor  region  address of a u32: the index of the record to copy, read and incremented
#
# Cycles (docs/timing.md: one issue per 6 tile cycles, every instruction here 1 slot), from
# the first issue to the slot after the exit:
#   6 x 13 = 78
#   3 ld32 (cursor, the index, table), shli, add, ld32 (rec), 2 ld64, 2 st64, addi, st32,
#   exit.

        .text
adamw_hyper:
        ld32    r1, [r0+8]              # cursor
        ld32    r2, [r1+0]              # the step's index
        ld32    r3, [r0+4]              # table
        shli    r4, r2, 4
        add     r3, r3, r4              # table + 16 x index
        ld32    r8, [r0+0]              # rec
        ld64    r4, [r3+0]
        ld64    r6, [r3+8]
        st64    r4, [r8+0]
        st64    r6, [r8+8]
        addi    r2, r2, 1
        st32    r2, [r1+0]
        exit
