/* check_base.c - the base library (core/libtjbase.a), linked alone: the
 * FNV-1a hash on the published test vectors (sources.hash keys in the
 * database depend on it), util_dup_or_empty, util_now_ms, util_finish_stdout
 * on a full disk, and the graph-break table's bounds. (The string buffer
 * has its test in check_value.c.) */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "breaks.h"
#include "hash.h"
#include "strbuf.h"
#include "util.h"

START_TEST(test_fnv1a_vectors)
{
	ck_assert_uint_eq(hash_fnv1a("", 0), 0xcbf29ce484222325ull);
	ck_assert_uint_eq(hash_fnv1a("a", 1), 0xaf63dc4c8601ec8cull);
	ck_assert_uint_eq(hash_fnv1a("foobar", 6), 0x85944171f73967e8ull);
	ck_assert_uint_eq(hash_fnv1a_str("foobar"), 0x85944171f73967e8ull);
	/* the bytes, not the C string: an embedded NUL counts */
	ck_assert_uint_ne(hash_fnv1a("a\0b", 3), hash_fnv1a_str("a"));
	/* bytes above 0x7f are unsigned */
	ck_assert_uint_eq(hash_fnv1a_str("\xc3\xa9"), hash_fnv1a("\xc3\xa9", 2));
}
END_TEST

START_TEST(test_dup_or_empty)
{
	char *a = util_dup_or_empty(NULL), *b = util_dup_or_empty("x y");
	char *c = xdup_or_empty(NULL);
	ck_assert_str_eq(a, "");
	ck_assert_str_eq(b, "x y");
	ck_assert_str_eq(c, "");
	free(a);
	free(b);
	free(c);
}
END_TEST

/* what reaches a terminal: control characters, C1 controls and bytes that
 * are not UTF-8 escaped, the rest (UTF-8 text, quotes) kept */
START_TEST(test_shown)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain 'text' \"q\" \\", "plain 'text' \"q\" \\"},
		{"\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07"},
		{"a\tb\rc\nd\x7f", "a b\\x0dc\\x0ad\\x7f"},
		{"é ✓ 😀", "é ✓ 😀"},
		{"\xc2\x9b" "31m \xc2\xa0", "\\u009b31m \xc2\xa0"},           /* CSI as C1; NBSP kept */
		{"\x9b\xff\xc3 \xe2\x9c", "\\x9b\\xff\\xc3 \\xe2\\x9c"}, /* stray, cut off */
		{"\xc0\xaf \xed\xa0\x80", "\\xc0\\xaf \\xed\\xa0\\x80"},   /* overlong, surrogate */
		{"", ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = shown_dup(cases[i].in);
		ck_assert_str_eq(got, cases[i].out);
		free(got);
	}
	struct strbuf sb = STRBUF_INIT;
	sb_add_shown(&sb, "a\0b", 3); /* a NUL inside the length */
	ck_assert_str_eq(sb_str(&sb), "a\\x00b");
	sb_reset(&sb);
	sb_add_shown_lines(&sb, "x\x1b\ny\r\n\n", 7); /* line ends kept, the rest escaped */
	ck_assert_str_eq(sb_str(&sb), "x\\x1b\ny\\x0d\n\n");
	sb_release(&sb);

	/* a message line: the arguments escaped, the line end at its end kept */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	fprintf_shown(f, "t: no database at '%s'\n", "x\x1b[2J\n.db");
	fprintf_shown(f, "%s %d", "no\tend", 7);
	fclose(f);
	ck_assert_str_eq(buf, "t: no database at 'x\\x1b[2J\\x0a.db'\nno end 7");
	free(buf);
}
END_TEST

/* a name among "a, b, c": whole names only */
START_TEST(test_in_names)
{
	ck_assert(util_in_names("mul, add_1, tanh", "add_1"));
	ck_assert(util_in_names("mul, add_1, tanh", "mul"));
	ck_assert(util_in_names("mul, add_1, tanh", "tanh"));
	ck_assert(!util_in_names("mul, add_1, tanh", "add"));
	ck_assert(!util_in_names("mul, add_1, tanh", "tan"));
	ck_assert(!util_in_names("", "mul"));
	ck_assert(util_in_names("relu", "relu"));
}
END_TEST

START_TEST(test_now_ms)
{
	double t0 = util_now_ms();
	usleep(20000);
	double t1 = util_now_ms();
	ck_assert(t1 - t0 >= 19.0);
	ck_assert(t1 - t0 < 10000.0);
}
END_TEST

/* stdout on /dev/full: the write error is reported and the status 0
 * becomes 1; a failure status stays (the descriptors are restored after,
 * so that the test also runs with CK_FORK=no) */
START_TEST(test_finish_stdout_full)
{
	FILE *err = tmpfile();
	int full = open("/dev/full", O_WRONLY);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(full >= 0, "no /dev/full");
	fflush(stdout);
	fflush(stderr);
	int out1 = dup(1), err2 = dup(2);
	dup2(full, 1);
	dup2(fileno(err), 2);
	printf("lost\n");
	int st = util_finish_stdout("tool", 0);
	clearerr(stdout);
	printf("lost again\n");
	int st2 = util_finish_stdout("tool", 2);
	clearerr(stdout);
	fflush(stderr);
	dup2(out1, 1);
	dup2(err2, 2);
	close(out1);
	close(err2);
	close(full);
	ck_assert_int_eq(st, 1);
	ck_assert_int_eq(st2, 2);
	char line[256] = "";
	rewind(err);
	ck_assert_ptr_nonnull(fgets(line, sizeof line, err));
	fclose(err);
	ck_assert_str_eq(line, "tool: error writing to stdout: No space left on device\n");
}
END_TEST

START_TEST(test_finish_stdout_ok)
{
	ck_assert_int_eq(util_finish_stdout("tool", 0), 0);
	ck_assert_int_eq(util_finish_stdout("tool", 1), 1);
}
END_TEST

START_TEST(test_breaks_table)
{
	int n = breaks_count();
	ck_assert_int_gt(n, 0);
	ck_assert_str_eq(breaks_info(0)->code, "TJB001");
	ck_assert_str_eq(breaks_info(0)->name, "PRINT");
	ck_assert_ptr_nonnull(breaks_info(n - 1));
	ck_assert_ptr_null(breaks_info(n));
	ck_assert_ptr_null(breaks_info(-1));
	struct strbuf doc = STRBUF_INIT;
	breaks_doc(&doc);
	ck_assert(strstr(doc.buf, "## TJB001\n") != NULL);
	sb_release(&doc);
}
END_TEST

static Suite *base_suite(void)
{
	Suite *s = suite_create("base");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_fnv1a_vectors);
	tcase_add_test(tc, test_in_names);
	tcase_add_test(tc, test_dup_or_empty);
	tcase_add_test(tc, test_shown);
	tcase_add_test(tc, test_now_ms);
	tcase_add_test(tc, test_finish_stdout_full);
	tcase_add_test(tc, test_finish_stdout_ok);
	tcase_add_test(tc, test_breaks_table);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(base_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
