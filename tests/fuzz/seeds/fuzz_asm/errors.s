main:
  add r1, r2
  li r1, undefined
  bogus
main:
  li r2, 1/0
  v2add r1, r2, r4
  get r1, $nope
  sync middle
.data
  .word 1, , 2
  .frob
  .float 1e99
