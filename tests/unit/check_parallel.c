/* check_parallel.c - the thread pool: every index of [0, n) visited once,
 * ranges of at least the grain, work really spread over threads, inline
 * runs (small n, one thread, a nested call), and TJIT_NUM_THREADS. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parallel.h"

struct visit {
	int64_t n, grain;
	_Atomic int *hits;
	atomic_int calls, short_ranges;
	pthread_t caller;
	atomic_int other_thread;
};

static void visit_fn(void *ctx, int64_t begin, int64_t end)
{
	struct visit *v = ctx;
	ck_assert_int_le(0, begin);
	ck_assert_int_lt(begin, end);
	ck_assert_int_le(end, v->n);
	if (end - begin < v->grain && end != v->n)
		atomic_fetch_add(&v->short_ranges, 1);
	for (int64_t i = begin; i < end; i++)
		atomic_fetch_add(&v->hits[i], 1);
	atomic_fetch_add(&v->calls, 1);
	if (!pthread_equal(pthread_self(), v->caller)) {
		atomic_store(&v->other_thread, 1);
	}
	usleep(2000); /* long enough that the other threads take chunks too */
}

/* runs parallel_for over n and checks each index was visited once */
static void run_visit(struct visit *v, int64_t n, int64_t grain)
{
	memset(v, 0, sizeof *v);
	v->n = n;
	v->grain = grain < 1 ? 1 : grain;
	v->hits = calloc(n ? n : 1, sizeof *v->hits);
	v->caller = pthread_self();
	parallel_for(n, visit_fn, v, grain);
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(v->hits[i] == 1, "index %lld visited %d times", (long long)i, v->hits[i]);
	ck_assert_int_eq(v->short_ranges, 0);
	free(v->hits);
}

START_TEST(test_covers_once_on_threads)
{
	ck_assert_int_eq(parallel_set_threads(3), 0);
	ck_assert_int_eq(parallel_threads(), 3);
	struct visit v;
	int64_t sizes[] = { 1, 2, 7, 100, 1001, 100000 };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		run_visit(&v, sizes[i], 10);
	/* (the last ones): 12 chunks of a 100000 over 3 threads */
	ck_assert_int_eq(v.calls, 12);
	ck_assert_int_eq(v.other_thread, 1);
	/* started with 3: another count is refused, the same one taken */
	ck_assert_int_eq(parallel_set_threads(2), -1);
	ck_assert_int_eq(parallel_set_threads(3), 0);
	ck_assert_int_eq(parallel_set_threads(0), -1);
}
END_TEST

START_TEST(test_inline_when_small_or_one_thread)
{
	struct visit v;
	ck_assert_int_eq(parallel_set_threads(2), 0);
	run_visit(&v, 64, 64); /* n <= grain */
	ck_assert_int_eq(v.calls, 1);
	ck_assert_int_eq(v.other_thread, 0);
	run_visit(&v, 0, 1); /* nothing to do: no call */
	ck_assert_int_eq(v.calls, 0);
}
END_TEST

START_TEST(test_one_thread)
{
	struct visit v;
	ck_assert_int_eq(parallel_set_threads(1), 0);
	run_visit(&v, 1000, 1);
	ck_assert_int_eq(v.calls, 1);
	ck_assert_int_eq(v.other_thread, 0);
}
END_TEST

static void nested_fn(void *ctx, int64_t begin, int64_t end)
{
	struct visit *inner = ctx;
	(void)begin;
	(void)end;
	/* from inside a job: runs inline, in this thread */
	struct visit v;
	run_visit(&v, 50, 5);
	ck_assert_int_eq(v.calls, 1);
	atomic_fetch_add(&inner->calls, 1);
}

START_TEST(test_nested_runs_inline)
{
	ck_assert_int_eq(parallel_set_threads(2), 0);
	struct visit outer = { 0 };
	parallel_for(8, nested_fn, &outer, 1);
	ck_assert_int_eq(outer.calls, 8);
}
END_TEST

START_TEST(test_env_threads)
{
	setenv("TJIT_NUM_THREADS", "5", 1);
	ck_assert_int_eq(parallel_threads(), 5);
}
END_TEST

START_TEST(test_env_threads_bad)
{
	/* not a count: the cores this process may use */
	setenv("TJIT_NUM_THREADS", "lots", 1);
	cpu_set_t set;
	ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
	ck_assert_int_eq(parallel_threads(), CPU_COUNT(&set));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("parallel");
	/* each test in a process of its own (Check's default): the pool is
	 * the process's */
	TCase *tc = tcase_create("parallel");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_covers_once_on_threads);
	tcase_add_test(tc, test_inline_when_small_or_one_thread);
	tcase_add_test(tc, test_one_thread);
	tcase_add_test(tc, test_nested_runs_inline);
	tcase_add_test(tc, test_env_threads);
	tcase_add_test(tc, test_env_threads_bad);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
