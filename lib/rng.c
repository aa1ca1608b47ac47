/* rng.c: xoshiro256** + splitmix64 seeding + Box-Muller (see rng.h).
 * Reference: Blackman and Vigna, "Scrambled linear pseudorandom number generators". */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
	r->has_spare = 0;
	r->spare = 0;
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_u64(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double rng_uniform(struct rng *r)
{
	return (double)(rng_u64(r) >> 11) * 0x1.0p-53;
}

double rng_normal(struct rng *r)
{
	if (r->has_spare) {
		r->has_spare = 0;
		return r->spare;
	}
	double u1, u2;
	do
		u1 = rng_uniform(r);
	while (u1 <= 0.0);
	u2 = rng_uniform(r);
	double rad = sqrt(-2.0 * log(u1));
	double th = 2.0 * 3.14159265358979323846 * u2;
	r->spare = rad * sin(th);
	r->has_spare = 1;
	return rad * cos(th);
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	uint64_t lim = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;
	do
		x = rng_u64(r);
	while (x >= lim);
	return x % n;
}
