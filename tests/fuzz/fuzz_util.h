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

/* the environment's number name, or dflt when unset or empty */
static inline long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : dflt;
}

#endif
