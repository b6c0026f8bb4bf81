/* num: the small integer helpers every layer uses (min, max, rounding up), written once. */
#ifndef IPUSIM_NUM_H
#define IPUSIM_NUM_H

#include <stdint.h>

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}
static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}
/* a / b rounded up (b > 0). */
static inline uint32_t ceil_div_u32(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

#endif
