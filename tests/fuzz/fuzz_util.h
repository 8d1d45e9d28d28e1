/* fuzz_util.h - what the two fuzzers (tjfuzz.c, tjdiff.c) share: their
 * random generator, splitmix64, whose stream depends only on its seed
 * (so that item I of a run is the same whatever came before), and their
 * defaults from the environment. Header-only: each fuzzer is one file
 * that links nothing of tjit. */
#ifndef TJ_FUZZ_UTIL_H
#define TJ_FUZZ_UTIL_H

#include <stdint.h>
#include <stdlib.h>

static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* the first state of item i of a run of seed: a hash of both, so that
 * item i + 1 is not item i's stream one draw later (a state of seed +
 * i * the generator's own step would be) */
static inline uint64_t rng_stream(uint64_t seed, uint64_t i)
{
	uint64_t t = seed;
	t = rng_next(&t) ^ (i * 0xd1b54a32d192ed03u);
	return rng_next(&t);
}

/* the environment's number name, or dflt when unset or empty */
static inline long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : dflt;
}

#endif
