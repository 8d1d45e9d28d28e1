/* check_arena.c - the bump allocator: zeroed, aligned blocks that stay
 * put while the arena grows, big blocks, copies, and one call that frees
 * it all (make check-asan sees any leak). */
#include <check.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

START_TEST(test_alloc_zeroed_aligned)
{
	struct arena a = ARENA_INIT;
	char *prev = NULL;
	for (size_t n = 0; n < 300; n++) {
		unsigned char *p = arena_alloc(&a, n);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % alignof(max_align_t), 0);
		for (size_t i = 0; i < n; i++)
			ck_assert_uint_eq(p[i], 0);
		memset(p, 0xab, n);
		ck_assert_ptr_ne(p, prev);
		prev = (char *)p;
	}
	arena_free(&a);
	ck_assert_ptr_null(a.head);
}
END_TEST

/* what was handed out stays valid and untouched as the arena grows */
START_TEST(test_blocks_stay_put)
{
	struct arena a = ARENA_INIT;
	int *blocks[2000];
	for (int i = 0; i < 2000; i++) {
		/* now and then a block bigger than a chunk */
		size_t n = i % 97 == 0 ? 100000 : sizeof(int) * (size_t)(1 + i % 13);
		blocks[i] = arena_alloc(&a, n);
		ck_assert_ptr_nonnull(blocks[i]);
		blocks[i][0] = i;
	}
	for (int i = 0; i < 2000; i++)
		ck_assert_int_eq(blocks[i][0], i);
	arena_free(&a);
	/* usable again after arena_free */
	ck_assert_ptr_nonnull(arena_alloc(&a, 10));
	arena_free(&a);
}
END_TEST

START_TEST(test_copies)
{
	struct arena a = ARENA_INIT;
	char src[] = "L['x']";
	char *s = arena_strdup(&a, src);
	ck_assert_ptr_ne(s, src);
	ck_assert_str_eq(s, "L['x']");
	ck_assert_ptr_null(arena_strdup(&a, NULL));
	int v[3] = {1, 2, 3};
	int *c = arena_memdup(&a, v, sizeof v);
	ck_assert_int_eq(c[2], 3);
	ck_assert_ptr_nonnull(arena_memdup(&a, NULL, 0));
	/* a size that cannot be is refused, not wrapped around */
	ck_assert_ptr_null(arena_alloc(&a, SIZE_MAX));
	arena_free(&a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("arena");
	TCase *tc = tcase_create("arena");
	tcase_add_test(tc, test_alloc_zeroed_aligned);
	tcase_add_test(tc, test_blocks_stay_put);
	tcase_add_test(tc, test_copies);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
