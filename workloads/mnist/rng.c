/* mrng: the MNIST workload's streams over base/rng's splitmix64 (Steele, Lea and Flood; the
 * seeding generator of xoshiro), with fp32 uniforms and a Fisher-Yates shuffle. It models
 * nothing; it is the workload's fixed, documented source of randomness, kept as a thin layer
 * because its stream layout, uniform and shuffle are documented for the Python and JavaScript
 * re-implementations (docs/mnist.md, digits2idx.js). It does not reproduce PyTorch's Mersenne
 * Twister stream, so the same seed gives different numbers from torch.manual_seed: compare
 * through saved weights instead. */
#include "workloads/mnist/rng.h"

#include "base/rng.h"

void mrng_seed(mrng *r, uint64_t seed, uint64_t stream)
{
    r->state = seed + stream * UINT64_C(0xD1B54A32D192ED03);
}

uint64_t mrng_next(mrng *r)
{
    return rng_splitmix64(&r->state);
}

float mrng_uniform(mrng *r, float lo, float hi)
{
    float u = (float)(mrng_next(r) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

void mrng_shuffle(mrng *r, uint32_t *a, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(mrng_next(r) % (uint64_t)i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}
