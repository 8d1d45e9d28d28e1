/* check_codegen.c - the code generator's shared object through
 * codegen_load: a hand-written LLVM IR kernel parsed, verified, optimized
 * (vectorized), emitted, loaded into the JIT, looked up and called, its
 * numbers checked; libm and libc resolved from the process; the object through the
 * kernel cache's file into a fresh process's JIT; bad IR and a verifier
 * failure as errors, never an abort; loading twice, garbage, missing
 * symbols; finding the object and checking its ABI. Each test runs in a
 * process of its own (Check forks), so each opens the object afresh. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen_load.h"
#include "error.h"
#include "kernel_cache.h"

/* out[i] = in[i] * 2 + 1 for i in [0, n) */
static const char affine_ir[] =
	"define void @k_affine(ptr noalias %out, ptr noalias %in, i64 %n) {\n"
	"entry:\n"
	"  %any = icmp sgt i64 %n, 0\n"
	"  br i1 %any, label %loop, label %done\n"
	"loop:\n"
	"  %i = phi i64 [ 0, %entry ], [ %next, %loop ]\n"
	"  %pin = getelementptr float, ptr %in, i64 %i\n"
	"  %x = load float, ptr %pin\n"
	"  %x2 = fmul float %x, 2.0\n"
	"  %y = fadd float %x2, 1.0\n"
	"  %pout = getelementptr float, ptr %out, i64 %i\n"
	"  store float %y, ptr %pout\n"
	"  %next = add i64 %i, 1\n"
	"  %end = icmp eq i64 %next, %n\n"
	"  br i1 %end, label %done, label %loop\n"
	"done:\n"
	"  ret void\n"
	"}\n";

/* out[0] = expf(x): a call into libm, resolved from the process */
static const char exp_ir[] =
	"declare float @expf(float)\n"
	"define void @k_exp(ptr %out, float %x) {\n"
	"  %e = call float @expf(float %x)\n"
	"  store float %e, ptr %out\n"
	"  ret void\n"
	"}\n";

/* memset(out, 7, n): llvm.memset of an unknown length is a call to libc */
static const char memset_ir[] =
	"declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)\n"
	"define void @k_fill(ptr %out, i64 %n) {\n"
	"  call void @llvm.memset.p0.i64(ptr %out, i8 7, i64 %n, i1 false)\n"
	"  ret void\n"
	"}\n";

typedef void affine_fn(float *out, const float *in, int64_t n);

static const struct codegen_api *load(void)
{
	setenv("TJIT_CODEGEN_LIB", TJ_CODEGEN_BUILT, 1);
	const struct codegen_api *api = codegen_load();
	ck_assert_msg(api != NULL, "%s", tj_error_peek());
	ck_assert_str_eq(codegen_load_path(), TJ_CODEGEN_BUILT);
	return api;
}

/* parse, verify, optimize at O2, emit: the object (malloc'd) */
static void *compile(const struct codegen_api *api, const char *ir, const char *name, size_t *len,
	char **ir_after)
{
	char *err = NULL;
	struct cg_module *m = api->parse_ir(ir, name, &err);
	ck_assert_msg(m != NULL, "%s", err);
	ck_assert_msg(api->verify(m, &err) == 0, "%s", err);
	ck_assert_msg(api->optimize(m, 2, &err) == 0, "%s", err);
	if (ir_after)
		*ir_after = api->module_ir(m);
	void *obj = NULL;
	ck_assert_msg(api->emit_object(m, &obj, len, &err) == 0, "%s", err);
	ck_assert_uint_gt(*len, 0);
	ck_assert_mem_eq(obj, "\177ELF", 4);
	api->module_free(m);
	return obj;
}

/* runs the affine kernel on n floats and checks each */
static void check_affine(affine_fn *k, int64_t n)
{
	float *in = malloc((n + 1) * sizeof *in), *out = malloc((n + 1) * sizeof *out);
	for (int64_t i = 0; i <= n; i++) {
		in[i] = (float)i - 7.5f;
		out[i] = -42.0f;
	}
	k(out, in, n);
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(out[i] == in[i] * 2 + 1, "out[%lld] = %g", (long long)i, out[i]);
	ck_assert_float_eq(out[n], -42.0f); /* not one past */
	free(in);
	free(out);
}

START_TEST(test_table)
{
	const struct codegen_api *api = load();
	ck_assert_int_eq(api->abi, CODEGEN_ABI);
	ck_assert_int_eq(strncmp(api->llvm_version, "19.", 3), 0);
	/* triple;cpu;features;build-id */
	int parts = 1;
	for (const char *c = api->target_id; *c; c++)
		parts += *c == ';';
	ck_assert_int_eq(parts, 4);
	/* the build id of libtjcodegen.so: a kernel cached by another build
	 * of the code generator gets another key (linked with
	 * --build-id=sha1: 20 bytes) */
	const char *id = strrchr(api->target_id, ';') + 1;
	ck_assert_msg(strlen(id) == 40 && strspn(id, "0123456789abcdef") == 40, "build id '%s'", id);
	ck_assert_int_ge(api->ncores, 1);
	/* a second load: the same table */
	ck_assert_ptr_eq(codegen_load(), api);
}
END_TEST

START_TEST(test_compile_load_call)
{
	const struct codegen_api *api = load();
	size_t len;
	char *ir_after = NULL;
	void *obj = compile(api, affine_ir, "k_affine", &len, &ir_after);
#if defined(__x86_64__)
	/* the loop vectorized (SSE2 at least on any x86-64) */
	ck_assert_msg(strstr(ir_after, " x float>") != NULL, "not vectorized:\n%s", ir_after);
#endif
	free(ir_after);
	char *err = NULL;
	ck_assert_msg(api->load_object(obj, len, &err) == 0, "%s", err);
	affine_fn *k = (affine_fn *)api->lookup("k_affine", &err);
	ck_assert_msg(k != NULL, "%s", err);
	/* sizes around the vector widths, and none */
	int64_t sizes[] = { 0, 1, 3, 7, 8, 9, 16, 17, 37, 64, 1000, 4099 };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		check_affine(k, sizes[i]);
	/* loaded again (same symbol): skipped, not an error; still callable */
	ck_assert_int_eq(api->load_object(obj, len, &err), 1);
	ck_assert_ptr_eq(api->lookup("k_affine", &err), (void *)k);
	free(obj);
}
END_TEST

/* an error that LLVM diagnoses while it emits code (a call of a function
 * marked dontcall-error), which its own handler answers with exit(1):
 * emit_object fails with LLVM's message, and the next module of the same
 * thread compiles */
static const char dontcall_ir[] =
	"declare void @forbidden() #0\n"
	"define void @k_calls() {\n"
	"  call void @forbidden()\n"
	"  ret void\n"
	"}\n"
	"attributes #0 = { \"dontcall-error\"=\"not this one\" }\n";

START_TEST(test_llvm_diagnosed_error)
{
	const struct codegen_api *api = load();
	char *err = NULL;
	struct cg_module *m = api->parse_ir(dontcall_ir, "k_calls", &err);
	ck_assert_msg(m != NULL, "%s", err);
	ck_assert_msg(api->optimize(m, 2, &err) == 0, "%s", err);
	void *obj = NULL;
	size_t len = 0;
	ck_assert_int_eq(api->emit_object(m, &obj, &len, &err), -1);
	ck_assert_ptr_null(obj);
	ck_assert_msg(err && strstr(err, "emit object: ") == err && strstr(err, "not this one"), "%s",
		      err ? err : "(no message)");
	free(err);
	api->module_free(m);
	obj = compile(api, affine_ir, "k_affine_after", &len, NULL);
	free(obj);
}
END_TEST

START_TEST(test_libc_libm_from_process)
{
	const struct codegen_api *api = load();
	size_t len;
	void *obj = compile(api, exp_ir, "k_exp", &len, NULL);
	char *err = NULL;
	ck_assert_msg(api->load_object(obj, len, &err) == 0, "%s", err);
	void (*k)(float *, float) = (void (*)(float *, float))api->lookup("k_exp", &err);
	ck_assert_msg(k != NULL, "%s", err);
	float out = 0;
	k(&out, 1.0f);
	ck_assert_float_eq_tol(out, expf(1.0f), 1e-6f);
	free(obj);

	obj = compile(api, memset_ir, "k_fill", &len, NULL);
	ck_assert_msg(api->load_object(obj, len, &err) == 0, "%s", err);
	void (*fill)(unsigned char *, int64_t) = (void (*)(unsigned char *, int64_t))api->lookup("k_fill", &err);
	ck_assert_msg(fill != NULL, "%s", err);
	unsigned char buf[300];
	memset(buf, 1, sizeof buf);
	fill(buf, 299);
	ck_assert_uint_eq(buf[0], 7);
	ck_assert_uint_eq(buf[298], 7);
	ck_assert_uint_eq(buf[299], 1);
	free(obj);
}
END_TEST

START_TEST(test_cache_file_to_fresh_process)
{
	const struct codegen_api *api = load();
	char dir[64];
	snprintf(dir, sizeof dir, "%s/kcache.XXXXXX", P_tmpdir);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct kc_key key = kernel_cache_key(affine_ir, api->target_id, api->llvm_version, CODEGEN_ABI);
	size_t len;
	/* compiled here (no JIT made in this process), put on disk */
	void *obj = compile(api, affine_ir, "k_affine", &len, NULL);
	struct kernel_cache *kc = kernel_cache_new(dir, true);
	ck_assert_int_eq(kernel_cache_put(kc, key, obj, len), 0);
	kernel_cache_free(kc);
	free(obj);

	/* a fresh process reads the file, loads it into its new JIT, runs it */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct kernel_cache *c = kernel_cache_new(dir, true);
		const void *o;
		size_t n;
		char *why, *err = NULL;
		if (kernel_cache_get(c, key, &o, &n, &why) != KC_DISK || n != len)
			_exit(2);
		if (api->load_object(o, n, &err) != 0)
			_exit(3);
		affine_fn *k = (affine_fn *)api->lookup("k_affine", &err);
		if (!k)
			_exit(4);
		float in[5] = { 1, 2, 3, 4, 5 }, out[5];
		k(out, in, 5);
		_exit(out[0] == 3 && out[4] == 11 ? 0 : 5);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* IR text may name globals as the emitter names its coefficients
 * (tjc.*) without being its: a declared one, one of another type. The
 * pass after optimizing (cg_math_coefficients_in_memory) leaves them
 * alone; a splat of a real one is loaded at its use and computes the
 * same. */
static const char tjc_ir[] =
	"@tjc.f32.int = internal global i32 1065353216\n" /* 1.0's bits */
	"@tjc.f32.40000000 = internal global float 2.0\n"
	"define void @k_tjc(ptr noalias %out, ptr noalias %in, i64 %n) {\n"
	"entry:\n"
	"  %go = icmp sgt i64 %n, 0\n"
	"  br i1 %go, label %loop, label %done\n"
	"loop:\n"
	"  %j = phi i64 [ 0, %entry ], [ %j1, %loop ]\n"
	"  %two = load float, ptr @tjc.f32.40000000\n"
	"  %one = load float, ptr @tjc.f32.int\n"
	"  %p = getelementptr inbounds float, ptr %in, i64 %j\n"
	"  %x = load float, ptr %p\n"
	"  %y = call float @llvm.fmuladd.f32(float %x, float %two, float %one)\n"
	"  %y2 = fmul float %y, 3.0\n"
	"  %q = getelementptr inbounds float, ptr %out, i64 %j\n"
	"  store float %y2, ptr %q\n"
	"  %j1 = add i64 %j, 1\n"
	"  %more = icmp slt i64 %j1, %n\n"
	"  br i1 %more, label %loop, label %done\n"
	"done:\n"
	"  ret void\n"
	"}\n"
	"declare float @llvm.fmuladd.f32(float, float, float)\n";

/* a declared tjc global: it has no value to copy (compiled, not run) */
static const char tjc_decl_ir[] =
	"@tjc.f32.ext = external global float\n"
	"define void @k_tjc_decl(ptr noalias %out, ptr noalias %in, i64 %n) {\n"
	"entry:\n"
	"  %go = icmp sgt i64 %n, 0\n"
	"  br i1 %go, label %loop, label %done\n"
	"loop:\n"
	"  %j = phi i64 [ 0, %entry ], [ %j1, %loop ]\n"
	"  %e = load float, ptr @tjc.f32.ext\n"
	"  %p = getelementptr inbounds float, ptr %in, i64 %j\n"
	"  %x = load float, ptr %p\n"
	"  %y = fmul float %x, %e\n"
	"  %q = getelementptr inbounds float, ptr %out, i64 %j\n"
	"  store float %y, ptr %q\n"
	"  %j1 = add i64 %j, 1\n"
	"  %more = icmp slt i64 %j1, %n\n"
	"  br i1 %more, label %loop, label %done\n"
	"done:\n"
	"  ret void\n"
	"}\n";

START_TEST(test_tjc_globals_from_text)
{
	const struct codegen_api *api = load();
	size_t len;
	char *ir_after = NULL;
	free(compile(api, tjc_decl_ir, "k_tjc_decl", &len, NULL));
	void *obj = compile(api, tjc_ir, "k_tjc", &len, &ir_after);
	char *err = NULL;
	ck_assert_msg(api->load_object(obj, len, &err) == 0, "%s", err);
	void (*k)(float *, const float *, int64_t) =
		(void (*)(float *, const float *, int64_t))api->lookup("k_tjc", &err);
	ck_assert_msg(k != NULL, "%s", err);
	float in[37], out[37];
	for (int i = 0; i < 37; i++)
		in[i] = (float)i * 0.25f - 3.0f;
	k(out, in, 37);
	for (int i = 0; i < 37; i++)
		ck_assert_msg(out[i] == fmaf(in[i], 2.0f, 1.0f) * 3.0f, "out[%d] = %a\n%s", i, out[i], ir_after);
	free(ir_after);
	free(obj);
}
END_TEST

START_TEST(test_bad_ir)
{
	const struct codegen_api *api = load();
	char *err = NULL;
	ck_assert_ptr_null(api->parse_ir("define i32 @f() {\n  ret i64 0\n}\n", "k_bad", &err));
	ck_assert_msg(strstr(err, "k_bad: bad LLVM IR") && strstr(err, "doesn't match function result type"),
		"%s", err);
	free(err);
	err = NULL;
	ck_assert_ptr_null(api->parse_ir(NULL, "k_none", &err));
	ck_assert_ptr_nonnull(err);
	free(err);
}
END_TEST

START_TEST(test_verifier_failure)
{
	/* parses, but an instruction uses a value before it is defined */
	const struct codegen_api *api = load();
	char *err = NULL;
	struct cg_module *m = api->parse_ir("define i32 @k_cycle() {\nentry:\n"
		"  %x = add i32 %y, 1\n  %y = add i32 %x, 1\n  ret i32 %x\n}\n", "k_cycle", &err);
	ck_assert_msg(m != NULL, "%s", err);
	ck_assert_int_eq(api->verify(m, &err), -1);
	ck_assert_msg(strstr(err, "k_cycle: LLVM IR does not verify: Instruction does not dominate all uses"),
		"%s", err);
	free(err);
	err = NULL;
	ck_assert_int_eq(api->optimize(m, 7, &err), -1);
	ck_assert_str_eq(err, "optimization level 7: not 0 to 3");
	free(err);
	api->module_free(m);
}
END_TEST

START_TEST(test_bad_objects_and_symbols)
{
	const struct codegen_api *api = load();
	char *err = NULL;
	ck_assert_int_eq(api->load_object("not an object", 13, &err), -1);
	ck_assert_msg(strstr(err, "load object: ") != NULL, "%s", err);
	free(err);
	err = NULL;
	ck_assert_int_eq(api->load_object(NULL, 0, &err), -1);
	free(err);
	err = NULL;
	ck_assert_ptr_null(api->lookup("k_nowhere", &err));
	ck_assert_msg(strstr(err, "lookup k_nowhere: ") && strstr(err, "k_nowhere"), "%s", err);
	free(err);
}
END_TEST

START_TEST(test_not_found)
{
	setenv("TJIT_CODEGEN_LIB", "/nonexistent/libtjcodegen.so", 1);
	ck_assert_ptr_null(codegen_load());
	char *msg = tj_error_take();
	ck_assert_msg(strstr(msg, "cannot load the code generator: /nonexistent/libtjcodegen.so"), "%s", msg);
	free(msg);
	/* tried once: the same error, without a second dlopen */
	setenv("TJIT_CODEGEN_LIB", TJ_CODEGEN_BUILT, 1);
	ck_assert_ptr_null(codegen_load());
	msg = tj_error_take();
	ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/libtjcodegen.so"));
	free(msg);
	ck_assert_ptr_null(codegen_load_path());
}
END_TEST

START_TEST(test_not_a_code_generator)
{
	setenv("TJIT_CODEGEN_LIB", "libm.so.6", 1);
	ck_assert_ptr_null(codegen_load());
	char *msg = tj_error_take();
	ck_assert_str_eq(msg, "libm.so.6: not tjit's code generator (no tjit_codegen_api)");
	free(msg);
}
END_TEST

START_TEST(test_search_without_env)
{
	/* a test program is in tests/unit/: not beside the object, which is
	 * then found only where it is installed */
	unsetenv("TJIT_CODEGEN_LIB");
	const struct codegen_api *api = codegen_load();
	if (api) {
		const char *p = codegen_load_path();
		ck_assert_str_eq(p + strlen(p) - strlen("/" CODEGEN_LIB_NAME), "/" CODEGEN_LIB_NAME);
	} else {
		char *msg = tj_error_take();
		ck_assert_msg(strstr(msg, "cannot find the code generator libtjcodegen.so") &&
			strstr(msg, "set TJIT_CODEGEN_LIB"), "%s", msg);
		free(msg);
	}
}
END_TEST

START_TEST(test_abi_check)
{
	struct codegen_api fake = *load();
	ck_assert_int_eq(codegen_check_api(&fake, "x.so"), 0);
	fake.abi = CODEGEN_ABI + 98;
	ck_assert_int_eq(codegen_check_api(&fake, "x.so"), -1);
	char *msg = tj_error_take(), want[128];
	snprintf(want, sizeof want, "x.so: code generator of ABI %d, this tjit needs ABI %d",
		CODEGEN_ABI + 98, CODEGEN_ABI);
	ck_assert_msg(strstr(msg, want) != NULL, "%s", msg);
	free(msg);
	fake.abi = CODEGEN_ABI;
	fake.lookup = NULL;
	ck_assert_int_eq(codegen_check_api(&fake, "x.so"), -1);
	msg = tj_error_take();
	ck_assert_str_eq(msg, "x.so: code generator's table is incomplete");
	free(msg);
	ck_assert_int_eq(codegen_check_api(NULL, "x.so"), -1);
	free(tj_error_take());
}
END_TEST

int main(void)
{
	Suite *s = suite_create("codegen");
	TCase *tc = tcase_create("codegen");
	tcase_set_timeout(tc, 60); /* libLLVM's load, and ASan's */
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_compile_load_call);
	tcase_add_test(tc, test_llvm_diagnosed_error);
	tcase_add_test(tc, test_libc_libm_from_process);
	tcase_add_test(tc, test_tjc_globals_from_text);
	tcase_add_test(tc, test_cache_file_to_fresh_process);
	tcase_add_test(tc, test_bad_ir);
	tcase_add_test(tc, test_verifier_failure);
	tcase_add_test(tc, test_bad_objects_and_symbols);
	tcase_add_test(tc, test_not_found);
	tcase_add_test(tc, test_not_a_code_generator);
	tcase_add_test(tc, test_search_without_env);
	tcase_add_test(tc, test_abi_check);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
