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

/* FNV-1a, 128 bits: the kernel cache's keys (kernel_cache.h), whose
 * files live across runs and versions, so that two kernels never share
 * one by chance. Fed in pieces: h = hash_fnv1a128(HASH_FNV1A128_INIT, ...) */
typedef unsigned __int128 hash128_t;
#define HASH_FNV1A128_INIT (((hash128_t)0x6c62272e07bb0142ull << 64) | 0x62b821756295c58dull)
#define HASH_FNV1A128_PRIME (((hash128_t)0x0000000001000000ull << 64) | 0x000000000000013bull)

static inline hash128_t hash_fnv1a128(hash128_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * HASH_FNV1A128_PRIME;
	return h;
}

#endif
