# stash_ring.s: copies a working buffer into the current slot of a ring of D slots (stash),
# or the current slot back into the working buffer (restore), then advances the ring's cursor:
# a worker codelet (docs/codelets.md). Pipelined training keeps the activations of several
# micro-batches in flight: a stage's forward pass stashes them, the backward pass of an older
# micro-batch restores them (PopART's Stash and Restore ops: a dynamic update slice or slice
# at a counter). Vertex states are fixed when the graph is loaded, so the slot is chosen at
# run time through a cursor word in tile memory, as adamw_hyper.s picks its record. In C:
#   uint32_t s = *cursor;  uint8_t *slot = ring + s * stride;
#   if (dir) memcpy(work, slot, bytes); else memcpy(slot, work, bytes);
#   *cursor = s + 1 == D ? 0 : s + 1;
# The wrap is a compare and a multiply (no division): *cursor = (s + 1) x (s + 1 != D). The
# cursor is not checked: it must be in [0, D) (the graph starts it at 0 and only this
# codelet moves it). Each worker of a tile runs its own vertex (its own part of the buffer,
# its own cursor word), so the codelet does not split work; there is no stash_ring.all (the
# state, 28 bytes, is read in 8-byte pairs, so six of them end to end would not all be
# 8-byte aligned).
#
# State (32-bit words at r0, 8-byte aligned: the codelet loads it in pairs):
#   +0   work    region  `bytes` bytes, the working buffer, 8-byte aligned
#   +4   ring    region  slot 0, 8-byte aligned; slot s is at ring + s x stride
#   +8   bytes   u32     bytes to copy, a multiple of 8 (0 allowed: only the cursor moves)
#   +12  stride  u32     bytes from one slot to the next, a multiple of 8 (>= bytes)
#   +16  depth   u32     D >= 1 slots
#   +20  cursor  region  address of a u32: the current slot, in [0, D); read and advanced
#   +24  dir     u32     0: stash (slot = work), 1: restore (work = slot)
# work and the ring's slots must not overlap.
#
# How: four loads read the state (three ld64 pairs and dir); the slot's address is ring +
# s x stride (mul); the cursor is written before the copy, so both copy paths end in exit;
# one brnz picks the direction, and an rpt copies n = bytes / 8 pairs, each an ld64pi and an
# st64pi (2 slots per 8 bytes: every instruction is one worker slot).
#
# Cycles (docs/timing.md: one issue per 6 tile cycles, every instruction here 1 slot), from
# the first issue to the slot after the exit, with n = bytes / 8:
#   6 x (15 + 2n)
#   prologue 8 (ld64 depth and cursor, ld32 s, ld64 bytes and stride, mul, ld64 work and ring,
#   add, ld32 dir, shri); the cursor 4 (addi, cmpne, mul, st32); brnz 1; rpt 1; n x (ld64pi,
#   st64pi); exit 1. Stash and restore cost the same; the data and the slot do not matter.
# E.g. 1448 floats (bytes = 5792, n = 724): 6 x (15 + 1448) = 8778 cycles; bytes = 0: 90.

        .text
stash_ring:
        ld64    r2, [r0+16]             # r2 = depth D, r3 = cursor address
        ld32    r8, [r3+0]              # s, the current slot
        ld64    r4, [r0+8]              # r4 = bytes, r5 = stride
        mul     r5, r8, r5              # s x stride
        ld64    r6, [r0+0]              # r6 = work, r7 = ring
        add     r7, r7, r5              # the slot
        ld32    r1, [r0+24]             # dir
        shri    r4, r4, 3               # n, the 8-byte pairs
        addi    r8, r8, 1
        cmpne   r9, r8, r2              # 0 where s + 1 == D
        mul     r8, r8, r9              # s + 1, or 0 at the wrap
        st32    r8, [r3+0]
        brnz    r1, stash_ring.restore
        rpt     r4, stash_ring.stash_end
        ld64pi  r10, [r6]+=8
        st64pi  r10, [r7]+=8
stash_ring.stash_end:
        exit
stash_ring.restore:
        rpt     r4, stash_ring.restore_end
        ld64pi  r10, [r7]+=8
        st64pi  r10, [r6]+=8
stash_ring.restore_end:
        exit
