/* parallel.c - the thread pool (parallel.h). One job at a time: its ranges
 * are numbered chunks that the workers and the caller take in turn under
 * the pool's lock (a chunk is much more work than taking the lock). A
 * second caller while a job runs, or fn calling parallel_for, runs inline. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	pthread_mutex_t busy; /* held by the caller of the running job */
	int nthreads;         /* 0 until decided; the caller's thread counts */
	int started;          /* workers running */
	parallel_fn fn;
	void *ctx;
	int64_t n, chunk, nchunks;
	int64_t next, left; /* the next chunk to take; the chunks not finished */
} pool = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
	.busy = PTHREAD_MUTEX_INITIALIZER,
};

static int threads_wanted(void)
{
	const char *env = getenv("TJIT_NUM_THREADS");
	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);
		if (*end == '\0' && v >= 1 && v <= 1024)
			return (int)v;
	}
	/* the cores this process may run on (a container or taskset may
	 * allow fewer than are online) */
	cpu_set_t set;
	long cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
								: sysconf(_SC_NPROCESSORS_ONLN);
	return cores >= 1 ? (int)(cores > 1024 ? 1024 : cores) : 1;
}

int parallel_threads(void)
{
	pthread_mutex_lock(&pool.lock);
	if (!pool.nthreads)
		pool.nthreads = threads_wanted();
	int n = pool.nthreads;
	pthread_mutex_unlock(&pool.lock);
	return n;
}

int parallel_set_threads(int n)
{
	if (n < 1)
		return -1;
	pthread_mutex_lock(&pool.lock);
	int ok = !pool.started || pool.nthreads == n;
	if (ok)
		pool.nthreads = n;
	pthread_mutex_unlock(&pool.lock);
	return ok ? 0 : -1;
}

/* takes chunks of the current job until none is left; called and returns
 * with the lock held */
static void run_chunks(void)
{
	while (pool.next < pool.nchunks) {
		int64_t c = pool.next++;
		parallel_fn fn = pool.fn;
		void *ctx = pool.ctx;
		int64_t begin = c * pool.chunk;
		int64_t end = begin + pool.chunk < pool.n ? begin + pool.chunk : pool.n;
		pthread_mutex_unlock(&pool.lock);
		fn(ctx, begin, end);
		pthread_mutex_lock(&pool.lock);
		if (--pool.left == 0)
			pthread_cond_signal(&pool.done);
	}
}

static void *worker(void *arg)
{
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		while (pool.next >= pool.nchunks)
			pthread_cond_wait(&pool.work, &pool.lock);
		run_chunks();
	}
	return NULL;
}

/* starts the workers once; with the lock held. How many threads a job has */
static int pool_start(void)
{
	if (!pool.nthreads)
		pool.nthreads = threads_wanted();
	if (pool.started)
		return pool.started + 1;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (int i = 1; i < pool.nthreads; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, worker, NULL) != 0)
			break; /* fewer workers; the job still runs */
		pool.started++;
	}
	pthread_attr_destroy(&attr);
	return pool.started + 1;
}

void parallel_for(int64_t n, parallel_fn fn, void *ctx, int64_t grain)
{
	if (n <= 0)
		return;
	if (grain < 1)
		grain = 1;
	if (n <= grain || parallel_threads() == 1 || pthread_mutex_trylock(&pool.busy) != 0) {
		fn(ctx, 0, n);
		return;
	}
	pthread_mutex_lock(&pool.lock);
	int threads = pool_start();
	/* up to 4 chunks a thread: a thread slowed by another process (two
	 * cores shared) does not hold up the others for long */
	int64_t nchunks = (n + grain - 1) / grain;
	if (nchunks > 4 * (int64_t)threads)
		nchunks = 4 * (int64_t)threads;
	if (threads == 1 || nchunks == 1) {
		pthread_mutex_unlock(&pool.lock);
		pthread_mutex_unlock(&pool.busy);
		fn(ctx, 0, n);
		return;
	}
	pool.fn = fn;
	pool.ctx = ctx;
	pool.n = n;
	pool.chunk = (n + nchunks - 1) / nchunks;
	pool.nchunks = (n + pool.chunk - 1) / pool.chunk;
	pool.next = 0;
	pool.left = pool.nchunks;
	pthread_cond_broadcast(&pool.work);
	run_chunks();
	while (pool.left > 0)
		pthread_cond_wait(&pool.done, &pool.lock);
	pool.nchunks = pool.next = 0; /* no job: the workers sleep */
	pthread_mutex_unlock(&pool.lock);
	pthread_mutex_unlock(&pool.busy);
}
