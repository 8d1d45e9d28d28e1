/* check_tensor_io.c - tensor_io_save and tensor_io_load: every dtype and
 * rank back as written, the bytes of the format, and each bad file an
 * error naming it (never a crash). */
#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>

#include "tensor_io.h"
#include "tensor_test_util.h"

static char path[64];

static void scratch(void)
{
	snprintf(path, sizeof path, "check_tensor_io.%ld.tjt", (long)getpid());
}

static void drop(void)
{
	unlink(path);
}

static void write_bytes(const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(b, 1, n, f), n);
	fclose(f);
}

/* path must not load, with exactly msg (%s: the path) */
static void expect_load_error(const char *fmt_msg)
{
	tensor **ts = (tensor **)1;
	int n = -1;
	ck_assert_int_eq(tensor_io_load(path, &ts, &n), -1);
	ck_assert_ptr_null(ts);
	ck_assert_int_eq(n, 0);
	char want[256];
	snprintf(want, sizeof want, fmt_msg, path);
	char *e = tj_error_take();
	ck_assert_msg(e && strcmp(e, want) == 0, "error '%s', expected '%s'", e ? e : "(none)", want);
	free(e);
}

START_TEST(test_round_trip)
{
	scratch();
	tensor *in[5] = {
		TN(DT_FLOAT32, SHAPE(2, 3), 1, -2.5, 3, 1e-30, -0.0, 7),
		T1(DT_INT64, -5, 1234567890123, 0),
		tensor_scalar(DT_FLOAT64, 0.1),
		T1(DT_BOOL, 1, 0, 1),
		tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 4)),
	};
	ck_assert_int_eq(tensor_io_save(path, in, 5), 0);
	tensor **out;
	int n;
	ck_assert_int_eq(tensor_io_load(path, &out, &n), 0);
	ck_assert_int_eq(n, 5);
	/* bit for bit: 0.1 as float64, -0.0 keeps its sign */
	ck_assert(tensor_get_double(out[2], 0) == 0.1);
	ck_assert(signbit(tensor_get_double(out[0], 4)));
	EXPECT(out[0], DT_FLOAT32, SHAPE(2, 3), 1, -2.5, 3, 1e-30, 0, 7);
	EXPECT(out[1], DT_INT64, SHAPE(3), -5, 1234567890123, 0);
	EXPECT0(out[2], DT_FLOAT64, 0.1);
	EXPECT(out[3], DT_BOOL, SHAPE(3), 1, 0, 1);
	ck_assert_int_eq(out[4]->ndim, 2);
	ck_assert_int_eq(out[4]->shape[0], 0);
	ck_assert_int_eq(out[4]->shape[1], 4);
	tensor_decref(out[4]);
	free(out);
	for (int i = 0; i < 5; i++)
		tensor_decref(in[i]);
	/* no tensor at all */
	ck_assert_int_eq(tensor_io_save(path, NULL, 0), 0);
	ck_assert_int_eq(tensor_io_load(path, &out, &n), 0);
	ck_assert_int_eq(n, 0);
	free(out);
	drop();
}
END_TEST

/* the bytes: header, count, dtype, rank, sizes, data, little-endian */
START_TEST(test_format)
{
	scratch();
	tensor *t = T1(DT_INT64, 258);
	ck_assert_int_eq(tensor_io_save(path, &t, 1), 0);
	tensor_decref(t);
	static const unsigned char want[] = {'t', 'j', 't', '1', 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
					     1, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0};
	unsigned char got[64];
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(got, 1, sizeof got, f);
	fclose(f);
	ck_assert_uint_eq(n, sizeof want);
	ck_assert(memcmp(got, want, sizeof want) == 0);
	drop();
}
END_TEST

START_TEST(test_bad_files)
{
	scratch();
	drop();
	expect_load_error("cannot read '%s': No such file or directory");
	write_bytes("tjt", 3);
	expect_load_error("'%s' is truncated: 3 bytes where its header needs 8");
	write_bytes("tjt2\0\0\0\0", 8);
	expect_load_error("'%s' is not a tensor file (no 'tjt1' header)");
	/* a count beyond what the bytes can hold */
	write_bytes("tjt1\xff\xff\xff\xff", 8);
	expect_load_error("'%s' is truncated: it says 4294967295 tensors in 0 bytes");
	static const unsigned char bad_dtype[] = {'t', 'j', 't', '1', 1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0};
	write_bytes(bad_dtype, sizeof bad_dtype);
	expect_load_error("'%s': tensor 0 has a bad dtype 9 (0 to 3)");
	static const unsigned char bad_rank[] = {'t', 'j', 't', '1', 1, 0, 0, 0, 2, 0, 0, 0, 9, 0, 0, 0};
	write_bytes(bad_rank, sizeof bad_rank);
	expect_load_error("'%s': tensor 0 has rank 9 (at most 8)");
	/* two sizes whose product overflows, then a huge size alone */
	static const unsigned char overflow[] = {'t', 'j', 't', '1', 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0,
						 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
	write_bytes(overflow, sizeof overflow);
	expect_load_error("'%s': the sizes of tensor 0 overflow");
	static const unsigned char negative[] = {'t', 'j', 't', '1', 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
						 0, 0, 0, 0, 0, 0, 0, 0x80};
	write_bytes(negative, sizeof negative);
	expect_load_error("'%s': the sizes of tensor 0 overflow");
	/* sizes that need more data than the file has */
	static const unsigned char short_data[] = {'t', 'j', 't', '1', 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
						   3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3f};
	write_bytes(short_data, sizeof short_data);
	expect_load_error("'%s' is truncated in tensor 0: 4 bytes of data where its sizes need 12");
	static const unsigned char bad_bool[] = {'t', 'j', 't', '1', 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
						 2, 0, 0, 0, 0, 0, 0, 0, 1, 7};
	write_bytes(bad_bool, sizeof bad_bool);
	expect_load_error("'%s': tensor 0 has a bool element 7 (0 or 1)");
	/* a file cut in the middle of the sizes, and one with bytes after */
	write_bytes(short_data, 18);
	expect_load_error("'%s' is truncated in tensor 0");
	tensor *t = T1(DT_FLOAT32, 1);
	ck_assert_int_eq(tensor_io_save(path, &t, 1), 0);
	tensor_decref(t);
	FILE *f = fopen(path, "ab");
	fputs("xy", f);
	fclose(f);
	expect_load_error("'%s' has 2 bytes after its 1 tensors");
	drop();
	/* a folder, and a folder that does not exist */
	tensor **none = NULL;
	int nnone = 0;
	ck_assert_int_eq(tensor_io_load(".", &none, &nnone), -1);
	char *ed = tj_error_take();
	ck_assert_ptr_nonnull(ed);
	ck_assert_msg(strncmp(ed, "cannot read '.'", 15) == 0, "%s", ed);
	free(ed);
	t = T1(DT_FLOAT32, 1);
	ck_assert_int_eq(tensor_io_save("no/such/dir/x.tjt", &t, 1), -1);
	char *e = tj_error_take();
	ck_assert_str_eq(e, "cannot write 'no/such/dir/x.tjt': No such file or directory");
	free(e);
	tensor_decref(t);
}
END_TEST

static Suite *io_suite(void)
{
	Suite *s = suite_create("tensor_io");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_bad_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(io_suite());
}
