/* parallel.h - a pool of threads for kernels that split their outer loop:
 * parallel_for(n, fn, ctx, grain) calls fn(ctx, begin, end) on disjoint
 * ranges that cover [0, n), on the pool's threads and the caller's, and
 * returns when all are done. The threads start on the first call that
 * needs them, one per core ($TJIT_NUM_THREADS overrides), and live until
 * the process exits. */
#ifndef TJ_PARALLEL_H
#define TJ_PARALLEL_H

#include <stdint.h>

typedef void (*parallel_fn)(void *ctx, int64_t begin, int64_t end);

/* Runs fn inline, as fn(ctx, 0, n), when n <= grain, with one thread, when
 * called from inside another parallel_for (fn's ranges never nest), or
 * when threads cannot start. Ranges hold at least grain iterations
 * (grain < 1 counts as 1) but the last. Never fails. */
void parallel_for(int64_t n, parallel_fn fn, void *ctx, int64_t grain);

/* how many threads run a parallel_for (the caller's included) */
int parallel_threads(void);

/* before the pool's first use: how many threads it will have (n >= 1);
 * -1 when it has already started with another count */
int parallel_set_threads(int n);

#endif
