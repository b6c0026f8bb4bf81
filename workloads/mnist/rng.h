/* mrng: the one seeded generator of the MNIST workload (splitmix64).
 *
 * Everything random in the reference trainer and in the simulated run (weight initialisation,
 * the order of the training images each epoch) comes from here, so a run is a pure function
 * of its seed. The algorithm is small enough to re-implement in Python or JavaScript for
 * comparisons (docs/mnist.md; workloads/mnist/digits2idx.js uses the same one for the split):
 *
 *   state  = seed + stream * 0xD1B54A32D192ED03                      (mod 2^64)
 *   next() : state += 0x9E3779B97F4A7C15; z = state;
 *            z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9; z = (z ^ z >> 27) * 0x94D049BB133111EB;
 *            return z ^ z >> 31
 *   uniform(lo, hi) = lo + (hi - lo) * u,  u = (next() >> 40) * 2^-24   (fp32, u in [0, 1))
 *   shuffle(a[0..n-1]): for i = n-1 down to 1: j = next() % (i + 1); swap a[i], a[j]
 */
#ifndef IPUSIM_MNIST_RNG_H
#define IPUSIM_MNIST_RNG_H

#include <stddef.h>
#include <stdint.h>

/* Independent streams drawn from one user seed. */
enum { MRNG_STREAM_INIT = 0, MRNG_STREAM_DATA = 1 };

typedef struct mrng {
    uint64_t state;
} mrng;

void mrng_seed(mrng *r, uint64_t seed, uint64_t stream);
uint64_t mrng_next(mrng *r);
/* lo + (hi - lo) * u with u a multiple of 2^-24 in [0, 1), computed in fp32. */
float mrng_uniform(mrng *r, float lo, float hi);
/* Fisher-Yates, from the end, j = next() % (i + 1). */
void mrng_shuffle(mrng *r, uint32_t *a, size_t n);

#endif
