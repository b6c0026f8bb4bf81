/* rng: the one seeded generator (xoshiro256** seeded by splitmix64), and splitmix64 itself.
 *
 * Models nothing: it is the fixed, documented source of randomness of everything that needs
 * one (host preparation times, the GEMM inputs, the MNIST workload's initialisation and
 * shuffles). Both algorithms are Vigna's reference ones (prng.di.unimi.it), so a stream can be
 * reproduced in a few lines of Python:
 *
 *   splitmix64(x): x += 0x9E3779B97F4A7C15; z = x;
 *                  z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9; z = (z ^ z >> 27) * 0x94D049BB133111EB;
 *                  return z ^ z >> 31                                          (mod 2^64)
 *   rng_seed(seed): x = seed; s[0..3] = four successive splitmix64(x)
 *   rng_next: xoshiro256** (result = rotl(s1 * 5, 7) * 9)
 */
#ifndef IPUSIM_RNG_H
#define IPUSIM_RNG_H

#include <stdint.h>

/* Advance the splitmix64 state *x and return its next output. */
uint64_t rng_splitmix64(uint64_t *x);

typedef struct rng {
    uint64_t s[4];
} rng;

/* State from four successive splitmix64 outputs starting at `seed`. */
void rng_seed(rng *r, uint64_t seed);
/* The next xoshiro256** output. */
uint64_t rng_next(rng *r);
/* Uniform on [0, 1): the top 53 bits of rng_next times 2^-53. */
double rng_unit(rng *r);

#endif
