/* rng.h: supkit's own seeded random numbers (the model's init: docs/model.md).
 *
 * xoshiro256** seeded through splitmix64 from a 64-bit seed; uniforms in
 * [0,1) with 53 bits; normals by Box-Muller (both values used, in order).
 * The sequence for a seed is part of the checkpoint contract: the same seed
 * gives the same initial weights on every machine. Not for cryptography.
 */
#ifndef SUPKIT_RNG_H
#define SUPKIT_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
	double spare;      /* second Box-Muller value */
	int has_spare;
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_u64(struct rng *r);
double rng_uniform(struct rng *r);                 /* [0, 1) */
double rng_normal(struct rng *r);                  /* N(0, 1) */
uint64_t rng_below(struct rng *r, uint64_t n);     /* uniform in [0, n), n > 0 */

#endif
