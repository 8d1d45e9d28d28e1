/* random.c - the counter-based random generator (Philox4x32-10).
 *
 * State is (seed, offset); at start-up seed = 0 and offset = 0, and
 * manual_seed(s) sets seed = s, offset = 0. Philox4x32-10 maps a 128-bit
 * counter and a 64-bit key to four 32-bit words; here
 *   key     = (seed & 0xffffffff, seed >> 32)
 *   counter = (c & 0xffffffff, c >> 32, 0, 0)   with c = offset + k
 * for draw k of a call. One draw gives 4 words, and element i of a tensor
 * of n elements (in row-major order) comes from lane i % 4 of draw i / 4,
 * so a call uses ceil(n / 4) draws and advances offset by that much.
 *
 *   rand  float32:  (w >> 8) * 2^-24                 in [0, 1)
 *   rand  float64:  w * 2^-32                        in [0, 1)
 *   randn: lanes (0, 1) and (2, 3) of a draw are a Box-Muller pair, in
 *          double:  u1 = (w0 + 0.5) * 2^-32, u2 = w1 * 2^-32,
 *                   r = sqrt(-2 ln u1),
 *                   lane 0 = r cos(2 pi u2), lane 1 = r sin(2 pi u2)
 *          (likewise 2, 3), then rounded to float32 for float32; so the
 *          float64 stream is the float32 one at full precision.
 * int64 and bool are errors, as in PyTorch.
 * A compiled kernel that knows (seed, offset) reproduces these numbers
 * with rng_philox() and the formulas above.
 */
#include <math.h>

#include "tensor_impl.h"

static uint64_t rng_seed, rng_offset;

void rng_manual_seed(uint64_t seed)
{
	rng_seed = seed;
	rng_offset = 0;
}

void rng_get_state(uint64_t *seed, uint64_t *offset)
{
	*seed = rng_seed;
	*offset = rng_offset;
}

void rng_set_state(uint64_t seed, uint64_t offset)
{
	rng_seed = seed;
	rng_offset = offset;
}

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

/* the full Philox block for an explicit 128-bit counter and 64-bit key,
 * for the known-answer tests */
void rng_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
	for (int round = 0; round < 10; round++) {
		uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
		uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
		uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

void rng_philox(uint64_t seed, uint64_t counter, uint32_t out[4])
{
	const uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0};
	const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
	rng_philox4x32_10(ctr, key, out);
}

#define TWO_M32 (1.0 / 4294967296.0)
#define TWO_M24 (1.0 / 16777216.0)

static void normal4(const uint32_t w[4], double z[4])
{
	for (int p = 0; p < 4; p += 2) {
		double u1 = ((double)w[p] + 0.5) * TWO_M32, u2 = (double)w[p + 1] * TWO_M32;
		double r = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
		z[p] = r * cos(th);
		z[p + 1] = r * sin(th);
	}
}

static tensor *random_tensor(dtype dt, int ndim, const int64_t *shape, bool normal)
{
	if (!dtype_is_float(dt)) {
		tj_error_set("%s() supports only floating point dtypes, got %s", normal ? "randn" : "rand",
			     dtype_name(dt));
		return NULL;
	}
	tensor *t = tensor_empty(dt, ndim, shape);
	if (!t)
		return NULL;
	int64_t n = t->numel;
	uint64_t draws = (uint64_t)(n + 3) / 4;
	for (uint64_t k = 0; k < draws; k++) {
		uint32_t w[4];
		double v[4];
		rng_philox(rng_seed, rng_offset + k, w);
		if (normal)
			normal4(w, v);
		int64_t i0 = (int64_t)k * 4;
		for (int l = 0; l < 4 && i0 + l < n; l++) {
			int64_t i = i0 + l;
			if (dt == DT_FLOAT32)
				((float *)t->data)[i] = normal ? (float)v[l] : (float)((double)(w[l] >> 8) * TWO_M24);
			else
				((double *)t->data)[i] = normal ? v[l] : (double)w[l] * TWO_M32;
		}
	}
	rng_offset += draws;
	return t;
}

tensor *tensor_randn(dtype dt, int ndim, const int64_t *shape) { return random_tensor(dt, ndim, shape, true); }
tensor *tensor_rand(dtype dt, int ndim, const int64_t *shape) { return random_tensor(dt, ndim, shape, false); }
