/* check_kernel_cache.c - the kernel cache: keys that change with each of
 * their parts, bytes put and got back from memory and from a file (a new
 * cache on the same folder, as a later run sees it), and every damaged
 * file (a flipped byte, truncated, another kernel's, not a cache file)
 * reported as bad, never returned; the default folder from the
 * environment; memory only when the disk is off; processes racing to
 * write one entry while another reads it. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "hash.h"
#include "kernel_cache.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "%s/kcache.XXXXXX", P_tmpdir);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static const unsigned char object[] = "\177ELF pretend object code, 40 bytes long..";

static struct kc_key key_a(void)
{
	return kernel_cache_key("kernel k(x): y[i] = x[i] * 2", "x86_64;znver4;+avx2", "19.1.7", 1);
}

START_TEST(test_fnv128_vectors)
{
	hash128_t h = hash_fnv1a128(HASH_FNV1A128_INIT, "a", 1);
	ck_assert_uint_eq((uint64_t)(h >> 64), 0xd228cb696f1a8cafull);
	ck_assert_uint_eq((uint64_t)h, 0x78912b704e4a8964ull);
	h = hash_fnv1a128(HASH_FNV1A128_INIT, "foobar", 6);
	ck_assert_uint_eq((uint64_t)(h >> 64), 0x343e1662793c64bfull);
	ck_assert_uint_eq((uint64_t)h, 0x6f0d3597ba446f18ull);
}
END_TEST

START_TEST(test_key_parts)
{
	struct kc_key k = key_a();
	char hex[33];
	kernel_cache_key_hex(k, hex);
	ck_assert_uint_eq(strlen(hex), 32);
	ck_assert(kernel_cache_key_eq(k, key_a()));
	/* each part counts */
	ck_assert(!kernel_cache_key_eq(k, kernel_cache_key("kernel k(x): y[i] = x[i] * 3",
		"x86_64;znver4;+avx2", "19.1.7", 1)));
	ck_assert(!kernel_cache_key_eq(k, kernel_cache_key("kernel k(x): y[i] = x[i] * 2",
		"x86_64;skylake;+avx2", "19.1.7", 1)));
	ck_assert(!kernel_cache_key_eq(k, kernel_cache_key("kernel k(x): y[i] = x[i] * 2",
		"x86_64;znver4;+avx2", "19.1.6", 1)));
	ck_assert(!kernel_cache_key_eq(k, kernel_cache_key("kernel k(x): y[i] = x[i] * 2",
		"x86_64;znver4;+avx2", "19.1.7", 2)));
	/* the parts are separated: moving text from one to the next changes it */
	ck_assert(!kernel_cache_key_eq(kernel_cache_key("ab", "c", "v", 1),
		kernel_cache_key("a", "bc", "v", 1)));
}
END_TEST

START_TEST(test_memory_only)
{
	struct kernel_cache *kc = kernel_cache_new(NULL, false);
	ck_assert_ptr_null(kernel_cache_dir(kc));
	const void *obj;
	size_t len;
	char *why;
	ck_assert_int_eq(kernel_cache_get(kc, key_a(), &obj, &len, &why), KC_MISS);
	ck_assert_ptr_null(obj);
	ck_assert_int_eq(kernel_cache_put(kc, key_a(), object, sizeof object), 0);
	ck_assert_int_eq(kernel_cache_get(kc, key_a(), &obj, &len, &why), KC_MEMORY);
	ck_assert_uint_eq(len, sizeof object);
	ck_assert_mem_eq(obj, object, sizeof object);
	ck_assert_ptr_ne(obj, object); /* a copy */
	kernel_cache_free(kc);
}
END_TEST

START_TEST(test_many_keys)
{
	struct kernel_cache *kc = kernel_cache_new(NULL, false);
	char text[32];
	for (int i = 0; i < 200; i++) {
		snprintf(text, sizeof text, "k%d", i);
		ck_assert_int_eq(kernel_cache_put(kc, kernel_cache_key(text, "t", "v", 1), &i, sizeof i), 0);
	}
	for (int i = 0; i < 200; i++) {
		const void *obj;
		size_t len;
		char *why;
		snprintf(text, sizeof text, "k%d", i);
		ck_assert_int_eq(kernel_cache_get(kc, kernel_cache_key(text, "t", "v", 1), &obj, &len, &why),
			KC_MEMORY);
		ck_assert_int_eq(*(const int *)obj, i);
	}
	kernel_cache_free(kc);
}
END_TEST

START_TEST(test_disk_round_trip)
{
	make_dir();
	char sub[128];
	snprintf(sub, sizeof sub, "%s/a/b", dir); /* made on the first put */
	struct kernel_cache *kc = kernel_cache_new(sub, true);
	ck_assert_str_eq(kernel_cache_dir(kc), sub);
	const void *obj;
	size_t len;
	char *why;
	ck_assert_int_eq(kernel_cache_get(kc, key_a(), &obj, &len, &why), KC_MISS);
	ck_assert_int_eq(kernel_cache_put(kc, key_a(), object, sizeof object), 0);
	char *path = kernel_cache_path(kc, key_a());
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 48 + sizeof object);
	kernel_cache_free(kc);

	/* a later run: a new cache reads the file */
	kc = kernel_cache_new(sub, true);
	ck_assert_int_eq(kernel_cache_get(kc, key_a(), &obj, &len, &why), KC_DISK);
	ck_assert_ptr_null(why);
	ck_assert_uint_eq(len, sizeof object);
	ck_assert_mem_eq(obj, object, sizeof object);
	/* then from memory */
	ck_assert_int_eq(kernel_cache_get(kc, key_a(), &obj, &len, &why), KC_MEMORY);
	kernel_cache_free(kc);
	free(path);
	remove_dir();
}
END_TEST

/* puts the entry, damages its file with damage(path), and expects a new
 * cache to report it as bad with a message containing want */
static void check_damaged(void (*damage)(const char *path), const char *want)
{
	make_dir();
	struct kernel_cache *kc = kernel_cache_new(dir, true);
	ck_assert_int_eq(kernel_cache_put(kc, key_a(), object, sizeof object), 0);
	char *path = kernel_cache_path(kc, key_a());
	kernel_cache_free(kc);
	damage(path);

	kc = kernel_cache_new(dir, true);
	const void *obj = object;
	size_t len = 1;
	char *why = NULL;
	ck_assert_int_eq(kernel_cache_get(kc, key_a(), &obj, &len, &why), KC_BAD);
	ck_assert_ptr_null(obj);
	ck_assert_uint_eq(len, 0);
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(strstr(why, want) != NULL, "'%s' lacks '%s'", why, want);
	ck_assert_msg(strstr(why, path) != NULL, "'%s' lacks the path", why);
	free(why);
	/* recompiled and put again: good from then on */
	ck_assert_int_eq(kernel_cache_put(kc, key_a(), object, sizeof object), 0);
	kernel_cache_free(kc);
	kc = kernel_cache_new(dir, true);
	ck_assert_int_eq(kernel_cache_get(kc, key_a(), &obj, &len, &why), KC_DISK);
	ck_assert_mem_eq(obj, object, sizeof object);
	kernel_cache_free(kc);
	free(path);
	remove_dir();
}

static void flip_byte(const char *path, long at)
{
	FILE *f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, at, SEEK_SET), 0);
	int c = fgetc(f);
	ck_assert_int_eq(fseek(f, at, SEEK_SET), 0);
	fputc(c ^ 0x20, f);
	fclose(f);
}

static void flip_payload(const char *path) { flip_byte(path, 48 + 10); }
static void flip_magic(const char *path) { flip_byte(path, 0); }
static void flip_key(const char *path) { flip_byte(path, 20); }
static void flip_version(const char *path) { flip_byte(path, 8); }
static void cut_payload(const char *path) { ck_assert_int_eq(truncate(path, 48 + 5), 0); }
static void cut_header(const char *path) { ck_assert_int_eq(truncate(path, 20), 0); }
static void empty(const char *path) { ck_assert_int_eq(truncate(path, 0), 0); }

/* bytes after the object code: a file that grew (or two writes run together) */
static void append_bytes(const char *path)
{
	FILE *f = fopen(path, "ab");
	ck_assert_ptr_nonnull(f);
	fputs("trailing", f);
	fclose(f);
}

/* the version before this one, as an older tjit wrote it */
static void older_version(const char *path)
{
	FILE *f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 8, SEEK_SET), 0);
	unsigned char v[4] = {(unsigned char)(KERNEL_CACHE_VERSION - 1), 0, 0, 0};
	ck_assert_uint_eq(fwrite(v, 1, 4, f), 4);
	fclose(f);
}

static void other_kernel(const char *path)
{
	/* another key's file renamed to this key's name */
	struct kernel_cache *kc = kernel_cache_new(dir, true);
	struct kc_key other = kernel_cache_key("another kernel", "t", "v", 1);
	ck_assert_int_eq(kernel_cache_put(kc, other, object, sizeof object), 0);
	char *p = kernel_cache_path(kc, other);
	ck_assert_int_eq(rename(p, path), 0);
	free(p);
	kernel_cache_free(kc);
}

START_TEST(test_corrupt_byte) { check_damaged(flip_payload, "corrupt (checksum mismatch)"); }
END_TEST
START_TEST(test_truncated) { check_damaged(cut_payload, "truncated"); }
END_TEST
START_TEST(test_truncated_header) { check_damaged(cut_header, "truncated"); }
END_TEST
START_TEST(test_empty_file) { check_damaged(empty, "truncated"); }
END_TEST
START_TEST(test_foreign_magic) { check_damaged(flip_magic, "not a kernel cache file"); }
END_TEST
START_TEST(test_wrong_key) { check_damaged(flip_key, "another kernel's entry"); }
END_TEST
START_TEST(test_renamed_entry) { check_damaged(other_kernel, "another kernel's entry"); }
END_TEST
START_TEST(test_other_version) { check_damaged(flip_version, "cache format version"); }
END_TEST
START_TEST(test_older_version) { check_damaged(older_version, "cache format version"); }
END_TEST
START_TEST(test_trailing_bytes) { check_damaged(append_bytes, "truncated or corrupt"); }
END_TEST

START_TEST(test_unwritable_dir)
{
	/* a file where the folder should be: put fails with a message, and the
	 * entry is still in memory */
	make_dir();
	char file[128];
	snprintf(file, sizeof file, "%s/f", dir);
	FILE *f = fopen(file, "w");
	fclose(f);
	char sub[160];
	snprintf(sub, sizeof sub, "%s/sub", file);
	struct kernel_cache *kc = kernel_cache_new(sub, true);
	ck_assert_int_eq(kernel_cache_put(kc, key_a(), object, sizeof object), -1);
	char *msg = tj_error_take();
	ck_assert_ptr_nonnull(strstr(msg, "kernel cache: cannot make"));
	free(msg);
	const void *obj;
	size_t len;
	char *why;
	ck_assert_int_eq(kernel_cache_get(kc, key_a(), &obj, &len, &why), KC_MEMORY);
	kernel_cache_free(kc);
	remove_dir();
}
END_TEST

/* two processes write the same entry over and over while a third reads
 * it: the reader sees no file or a whole one, never a part */
START_TEST(test_racing_writers)
{
	make_dir();
	unsigned char big[64 * 1024];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (unsigned char)(i * 31 + 7);
	pid_t writers[2];
	for (int w = 0; w < 2; w++) {
		writers[w] = fork();
		ck_assert_int_ge(writers[w], 0);
		if (writers[w] == 0) {
			for (int i = 0; i < 100; i++) {
				struct kernel_cache *kc = kernel_cache_new(dir, true);
				if (!kc || kernel_cache_put(kc, key_a(), big, sizeof big) != 0)
					_exit(1);
				kernel_cache_free(kc);
			}
			_exit(0);
		}
	}
	for (int i = 0; i < 300; i++) {
		struct kernel_cache *kc = kernel_cache_new(dir, true);
		const void *obj;
		size_t len;
		char *why;
		enum kc_result r = kernel_cache_get(kc, key_a(), &obj, &len, &why);
		ck_assert_msg(r == KC_MISS || r == KC_DISK, "read %d: %s", i, why ? why : "?");
		if (r == KC_DISK) {
			ck_assert_uint_eq(len, sizeof big);
			ck_assert_mem_eq(obj, big, sizeof big);
		}
		kernel_cache_free(kc);
	}
	for (int w = 0; w < 2; w++) {
		int status;
		ck_assert_int_eq(waitpid(writers[w], &status, 0), writers[w]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* the last read, after both: the entry */
	struct kernel_cache *kc = kernel_cache_new(dir, true);
	const void *obj;
	size_t len;
	char *why;
	ck_assert_int_eq(kernel_cache_get(kc, key_a(), &obj, &len, &why), KC_DISK);
	kernel_cache_free(kc);
	/* no temporary file left behind */
	char cmd[160];
	snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s' | wc -l)\" -eq 1", dir);
	ck_assert_int_eq(system(cmd), 0);
	remove_dir();
}
END_TEST

START_TEST(test_default_dir)
{
	setenv("TJIT_CACHE_DIR", "/x/tjc", 1);
	char *d = kernel_cache_default_dir();
	ck_assert_str_eq(d, "/x/tjc");
	free(d);
	unsetenv("TJIT_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "/x/xdg", 1);
	d = kernel_cache_default_dir();
	ck_assert_str_eq(d, "/x/xdg/tjit");
	free(d);
	setenv("XDG_CACHE_HOME", "relative", 1); /* ignored, as XDG says */
	setenv("HOME", "/x/home", 1);
	d = kernel_cache_default_dir();
	ck_assert_str_eq(d, "/x/home/.cache/tjit");
	free(d);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	ck_assert_ptr_null(kernel_cache_default_dir());
	/* no folder to be found: memory only */
	struct kernel_cache *kc = kernel_cache_new(NULL, true);
	ck_assert_ptr_null(kernel_cache_dir(kc));
	kernel_cache_free(kc);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kernel_cache");
	TCase *tc = tcase_create("kernel_cache");
	tcase_add_test(tc, test_fnv128_vectors);
	tcase_add_test(tc, test_key_parts);
	tcase_add_test(tc, test_memory_only);
	tcase_add_test(tc, test_many_keys);
	tcase_add_test(tc, test_disk_round_trip);
	tcase_add_test(tc, test_corrupt_byte);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_truncated_header);
	tcase_add_test(tc, test_empty_file);
	tcase_add_test(tc, test_foreign_magic);
	tcase_add_test(tc, test_wrong_key);
	tcase_add_test(tc, test_renamed_entry);
	tcase_add_test(tc, test_other_version);
	tcase_add_test(tc, test_older_version);
	tcase_add_test(tc, test_trailing_bytes);
	tcase_add_test(tc, test_unwritable_dir);
	tcase_add_test(tc, test_racing_writers);
	tcase_add_test(tc, test_default_dir);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
