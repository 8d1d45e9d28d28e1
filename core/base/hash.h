/* hash.h - the one string hash: FNV-1a, 64 bits (the interned strings,
 * the graph's and the profiler's name tables, sources.hash in the
 * database, whose stored keys depend on it never changing). */
#ifndef TJ_HASH_H
#define TJ_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A_INIT 0xcbf29ce484222325ull
#define HASH_FNV1A_PRIME 0x100000001b3ull

/* of the n bytes at p */
static inline uint64_t hash_fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = HASH_FNV1A_INIT;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * HASH_FNV1A_PRIME;
	return h;
}

/* of a NUL-terminated string, without its NUL */
static inline uint64_t hash_fnv1a_str(const char *s)
{
	uint64_t h = HASH_FNV1A_INIT;
	for (const unsigned char *b = (const unsigned char *)s; *b; b++)
		h = (h ^ *b) * HASH_FNV1A_PRIME;
	return h;
}

#endif
