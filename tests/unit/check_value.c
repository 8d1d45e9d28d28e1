/* check_value.c - values: float repr, str repr, containers, equality,
 * slices, ranges, interning. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "value.h"

static char *repr_of(value v)
{
	struct strbuf sb = STRBUF_INIT;
	val_repr(v, &sb);
	return sb_detach(&sb);
}

static char *str_of(value v)
{
	struct strbuf sb = STRBUF_INIT;
	val_str_into(v, &sb);
	return sb_detach(&sb);
}

#define ck_repr(v, expected)                                  \
	do {                                                  \
		char *s_ = repr_of(v);                        \
		ck_assert_str_eq(s_, expected);               \
		free(s_);                                     \
	} while (0)

static value S(const char *s) { return str_from_cstr(s); }

START_TEST(test_float_repr)
{
	static const struct {
		double d;
		const char *s;
	} cases[] = {
		{0.1, "0.1"},
		{2.0, "2.0"},
		{1e-05, "1e-05"},
		{0.0001, "0.0001"},
		{1e16, "1e+16"},
		{1234567890123456.0, "1234567890123456.0"},
		{123456789012345678.0, "1.2345678901234568e+17"},
		{0.0, "0.0"},
		{-0.0, "-0.0"},
		{-2.5, "-2.5"},
		{1.5e-7, "1.5e-07"},
		{1e100, "1e+100"},
		{1e22, "1e+22"},
		{0.3, "0.3"},
		{0.1 + 0.2, "0.30000000000000004"},
		{1.0 / 3.0, "0.3333333333333333"},
		{100.0, "100.0"},
		{123.456, "123.456"},
		{5e-324, "5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{9007199254740993.0, "9007199254740992.0"},
		{INFINITY, "inf"},
		{-INFINITY, "-inf"},
		{NAN, "nan"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strbuf sb = STRBUF_INIT;
		float_repr(cases[i].d, &sb);
		ck_assert_msg(strcmp(sb.buf, cases[i].s) == 0, "float %d: got %s, want %s", (int)i, sb.buf, cases[i].s);
		sb_release(&sb);
	}
}
END_TEST

START_TEST(test_scalar_repr)
{
	ck_repr(val_none(), "None");
	ck_repr(val_bool(true), "True");
	ck_repr(val_bool(false), "False");
	ck_repr(val_int(-42), "-42");
	ck_repr(val_int(INT64_MIN), "-9223372036854775808");
	ck_repr(val_dtype(2), "float32");
	ck_repr(val_dtype(3), "float64");
	ck_repr(val_type(VAL_INT), "<class 'int'>");
	ck_repr(val_type(VAL_NONE), "<class 'NoneType'>");
	ck_repr(val_type(VAL_TENSOR), "<class 'Tensor'>");
}
END_TEST

START_TEST(test_str_repr)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"abc", "'abc'"},
		{"", "''"},
		{"it's", "\"it's\""},
		{"a\"b", "'a\"b'"},
		{"a'b\"", "'a\\'b\"'"},
		{"x\ny\tz\\", "'x\\ny\\tz\\\\'"},
		{"\x01\x7f", "'\\x01\\x7f'"},
		{"h\xc3\xa9", "'h\xc3\xa9'"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		value v = S(cases[i].in);
		ck_repr(v, cases[i].out);
		char *s = str_of(v);
		ck_assert_str_eq(s, cases[i].in);
		free(s);
		val_decref(v);
	}
}
END_TEST

START_TEST(test_containers)
{
	value l = list_new(0);
	list_append(val_list(l), val_int(1));
	list_append(val_list(l), S("a"));
	value one = val_int(2);
	value t1 = tuple_pack(1, &one);
	list_append(val_list(l), t1);
	ck_repr(l, "[1, 'a', (2,)]");
	value empty = tuple_new(0);
	ck_repr(empty, "()");
	val_decref(empty);
	value t2 = tuple_new(2);
	val_tuple(t2)->items[0] = val_float(0.5);
	val_tuple(t2)->items[1] = val_none();
	ck_repr(t2, "(0.5, None)");
	char *s = str_of(l);
	ck_assert_str_eq(s, "[1, 'a', (2,)]");
	free(s);
	/* a list that holds itself prints [...] */
	val_incref(l);
	list_append(val_list(l), l);
	ck_repr(l, "[1, 'a', (2,), [...]]");
	val_list(l)->len--;
	val_decref(l);
	val_decref(l);
	val_decref(t2);
	empty = list_new(0);
	ck_repr(empty, "[]");
	val_decref(empty);
}
END_TEST

START_TEST(test_range_slice_repr)
{
	value r = range_new(0, 3, 1);
	ck_repr(r, "range(0, 3)");
	ck_assert_int_eq(val_range(r)->len, 3);
	val_decref(r);
	r = range_new(10, 0, -3);
	ck_repr(r, "range(10, 0, -3)");
	ck_assert_int_eq(val_range(r)->len, 4);
	val_decref(r);
	r = range_new(5, 1, 1);
	ck_assert_int_eq(val_range(r)->len, 0);
	val_decref(r);
	value s = slice_new(val_int(1), val_none(), val_int(-1));
	ck_repr(s, "slice(1, None, -1)");
	val_decref(s);
}
END_TEST

START_TEST(test_slice_indices)
{
	int64_t start, stop, step, count;
	value s = slice_new(val_none(), val_none(), val_int(-1));
	ck_assert_int_eq(slice_indices(val_slice(s), 5, &start, &stop, &step, &count), 0);
	ck_assert_int_eq(start, 4);
	ck_assert_int_eq(stop, -1);
	ck_assert_int_eq(count, 5);
	val_decref(s);
	s = slice_new(val_int(-10), val_int(10), val_none());
	ck_assert_int_eq(slice_indices(val_slice(s), 3, &start, &stop, &step, &count), 0);
	ck_assert_int_eq(start, 0);
	ck_assert_int_eq(stop, 3);
	ck_assert_int_eq(count, 3);
	val_decref(s);
	s = slice_new(val_int(1), val_int(2), val_int(0));
	ck_assert_int_eq(slice_indices(val_slice(s), 3, &start, &stop, &step, &count), -1);
	char *msg = tj_error_take();
	ck_assert_str_eq(msg, "slice step cannot be zero");
	free(msg);
	val_decref(s);
	s = slice_new(val_int(-1), val_int(-4), val_int(-2));
	ck_assert_int_eq(slice_indices(val_slice(s), 6, &start, &stop, &step, &count), 0);
	ck_assert_int_eq(start, 5);
	ck_assert_int_eq(count, 2);
	val_decref(s);
}
END_TEST

START_TEST(test_equal)
{
	ck_assert(val_equal(val_int(1), val_float(1.0)));
	ck_assert(val_equal(val_int(1), val_bool(true)));
	ck_assert(val_equal(val_bool(true), val_float(1.0)));
	ck_assert(!val_equal(val_int(1), val_float(1.5)));
	ck_assert(!val_equal(val_float(NAN), val_float(NAN)));
	/* exact: 2**53 + 1 is not the float 2**53 */
	ck_assert(!val_equal(val_int(9007199254740993LL), val_float(9007199254740992.0)));
	ck_assert(val_equal(val_int(9007199254740992LL), val_float(9007199254740992.0)));
	ck_assert(!val_equal(val_int(INT64_MAX), val_float(9223372036854775808.0)));
	ck_assert(val_equal(val_none(), val_none()));
	ck_assert(!val_equal(val_none(), val_int(0)));
	value a = S("abc"), b = S("abc"), c = S("abd");
	ck_assert(val_equal(a, b));
	ck_assert(!val_equal(a, c));
	ck_assert(!val_equal(a, val_int(1)));
	value l1 = list_new(0), l2 = list_new(0);
	list_append(val_list(l1), val_int(1));
	list_append(val_list(l2), val_float(1.0));
	ck_assert(val_equal(l1, l2));
	value t1 = tuple_pack(1, &val_list(l1)->items[0]);
	ck_assert(!val_equal(l1, t1)); /* a list is never equal to a tuple */
	list_append(val_list(l2), val_int(2));
	ck_assert(!val_equal(l1, l2));
	value r1 = range_new(0, 0, 1), r2 = range_new(5, 2, 1);
	ck_assert(val_equal(r1, r2)); /* both empty */
	val_decref(r1);
	val_decref(r2);
	ck_assert(val_equal(val_dtype(2), val_dtype(2)));
	ck_assert(!val_equal(val_dtype(2), val_dtype(3)));
	ck_assert(val_equal(val_type(VAL_INT), val_type(VAL_INT)));
	val_decref(a);
	val_decref(b);
	val_decref(c);
	val_decref(l1);
	val_decref(l2);
	val_decref(t1);
}
END_TEST

START_TEST(test_strings)
{
	value a = str_intern("name", 4), b = str_intern("name", 4);
	ck_assert_ptr_eq(a.o, b.o);
	value c = S("name");
	ck_assert(str_eq(val_str(a), val_str(c)));
	ck_assert(str_eq_cstr(val_str(c), "name"));
	ck_assert_uint_eq(val_str(a)->hash, val_str(c)->hash);
	val_decref(a);
	val_decref(b);
	val_decref(c);
	value u = S("h\xc3\xa9llo");
	ck_assert_uint_eq(val_str(u)->len, 6);
	ck_assert_uint_eq(str_char_count(val_str(u)), 5);
	ck_assert(!(val_str(u)->hdr.flags & STR_ASCII));
	val_decref(u);
	ck_assert_str_eq(val_type_name(val_float(1)), "float");
	ck_assert_str_eq(val_type_name(val_none()), "NoneType");
}
END_TEST

START_TEST(test_strbuf)
{
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < 1000; i++)
		sb_printf(&sb, "%d,", i);
	ck_assert_uint_eq(sb.len, strlen(sb.buf));
	sb_printf(&sb, "%s", "a very long string that is longer than the small buffer used by sb_printf for the "
			   "first attempt at formatting, which is 128 bytes, so this takes the slow path");
	ck_assert(strstr(sb.buf, "slow path") != NULL);
	char *s = sb_detach(&sb);
	ck_assert_ptr_null(sb.buf);
	free(s);
}
END_TEST

static Suite *value_suite(void)
{
	Suite *s = suite_create("value");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_float_repr);
	tcase_add_test(tc, test_scalar_repr);
	tcase_add_test(tc, test_str_repr);
	tcase_add_test(tc, test_containers);
	tcase_add_test(tc, test_range_slice_repr);
	tcase_add_test(tc, test_slice_indices);
	tcase_add_test(tc, test_equal);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_strbuf);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(value_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
