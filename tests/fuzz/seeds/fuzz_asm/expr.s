a: li r1, (1 + 2) * 3 - ~4 / 2 % 5 << 1 | 8 ^ 3 & 0xf0
   addi r2, r2, -(b - a) >> 2
   muli r3, r3, 0b1011 + 'a'
b: brnzdec r1, a
   call 0x40
   ret
