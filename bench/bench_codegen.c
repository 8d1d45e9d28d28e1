/* bench_codegen.c - the code generator's fixed costs: opening
 * libtjcodegen.so (libLLVM's load and initialization), making the JIT
 * (the first object loaded), compiling a small pointwise kernel from
 * LLVM IR at O2 (parse, optimize, emit), and a kernel from the disk cache
 * into the JIT (read, check, load, look up). Targets (issue 12): at most
 * 20 ms a kernel cold, under 1 ms from the cache. Exits 1 on a missed
 * target. TJIT_CODEGEN_LIB as for tjit. */
#define _GNU_SOURCE /* asprintf */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "codegen_load.h"
#include "error.h"
#include "kernel_cache.h"

#define KERNELS 21

/* out[i] = max((x*2+1) * (x-3) - x/3, 0): a fused pointwise chain */
static char *kernel_ir(int i)
{
	char *s;
	if (asprintf(&s,
		"define void @k_bench%d(ptr noalias %%out, ptr noalias %%in, i64 %%n) {\n"
		"entry:\n  %%any = icmp sgt i64 %%n, 0\n  br i1 %%any, label %%loop, label %%done\n"
		"loop:\n  %%i = phi i64 [ 0, %%entry ], [ %%next, %%loop ]\n"
		"  %%p = getelementptr float, ptr %%in, i64 %%i\n  %%x = load float, ptr %%p\n"
		"  %%a = fmul float %%x, 2.0\n  %%b = fadd float %%a, 1.0\n  %%c = fsub float %%x, 3.0\n"
		"  %%d = fmul float %%b, %%c\n  %%e = fdiv float %%x, 3.0\n  %%f = fsub float %%d, %%e\n"
		"  %%g = fcmp ogt float %%f, 0.0\n  %%y = select i1 %%g, float %%f, float 0.0\n"
		"  %%q = getelementptr float, ptr %%out, i64 %%i\n  store float %%y, ptr %%q\n"
		"  %%next = add i64 %%i, 1\n  %%end = icmp eq i64 %%next, %%n\n"
		"  br i1 %%end, label %%done, label %%loop\n"
		"done:\n  ret void\n}\n", i) < 0)
		exit(2);
	return s;
}

static void die(const char *what, char *err)
{
	fprintf(stderr, "bench_codegen: %s: %s\n", what, err ? err : tj_error_peek());
	exit(2);
}

int main(void)
{
	double t0 = now();
	const struct codegen_api *api = codegen_load();
	double t_open = now() - t0;
	if (!api)
		die("load", NULL);

	char dir[] = "/tmp/bench_codegen.XXXXXX";
	if (!mkdtemp(dir))
		die("mkdtemp", NULL);
	struct kernel_cache *kc = kernel_cache_new(dir, true);
	struct kc_key keys[KERNELS];
	double t_parse[KERNELS], t_opt[KERNELS], t_emit[KERNELS], t_cold[KERNELS];
	char *err = NULL, name[32];
	for (int i = 0; i < KERNELS; i++) {
		char *ir = kernel_ir(i);
		keys[i] = kernel_cache_key(ir, api->target_id, api->llvm_version, CODEGEN_ABI);
		snprintf(name, sizeof name, "k_bench%d", i);
		double a = now();
		struct cg_module *m = api->parse_ir(ir, name, &err);
		if (!m || api->verify(m, &err))
			die("parse", err);
		double b = now();
		if (api->optimize(m, 2, &err))
			die("optimize", err);
		double c = now();
		void *obj;
		size_t len;
		if (api->emit_object(m, &obj, &len, &err))
			die("emit", err);
		double d = now();
		api->module_free(m);
		if (kernel_cache_put(kc, keys[i], obj, len))
			die("cache put", NULL);
		free(obj);
		free(ir);
		t_parse[i] = b - a;
		t_opt[i] = c - b;
		t_emit[i] = d - c;
		t_cold[i] = d - a;
	}
	kernel_cache_free(kc);
	double first_cold = t_cold[0];

	/* from the cache, as a later run: a new cache object reads each file */
	double t_load[KERNELS], t_jit = 0;
	float in[1000], out[1000];
	for (int i = 0; i < 1000; i++)
		in[i] = (float)i / 100;
	for (int i = 0; i < KERNELS; i++) {
		struct kernel_cache *c = kernel_cache_new(dir, true);
		double a = now();
		const void *obj;
		size_t len;
		char *why;
		if (kernel_cache_get(c, keys[i], &obj, &len, &why) != KC_DISK)
			die("cache get", why);
		if (api->load_object(obj, len, &err) != 0)
			die("load_object", err);
		snprintf(name, sizeof name, "k_bench%d", i);
		void (*k)(float *, const float *, int64_t) =
			(void (*)(float *, const float *, int64_t))api->lookup(name, &err);
		if (!k)
			die("lookup", err);
		double b = now();
		k(out, in, 1000);
		kernel_cache_free(c);
		if (i == 0)
			t_jit = b - a; /* makes the JIT */
		t_load[i] = b - a;
	}
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 2;

	double cold = median(t_cold + 1, KERNELS - 1), load = median(t_load + 1, KERNELS - 1);
	printf("codegen: LLVM %s, an 8-op pointwise kernel (medians of %d)\n", api->llvm_version, KERNELS - 1);
	printf("  open libtjcodegen.so (libLLVM)         %7.2f ms\n", t_open * 1e3);
	printf("  first kernel cold (parse+O2+emit)      %7.2f ms\n", first_cold * 1e3);
	printf("  make the JIT + first load from cache   %7.2f ms\n", t_jit * 1e3);
	printf("  parse+verify %.2f ms, optimize O2 %.2f ms, emit %.2f ms\n",
		median(t_parse + 1, KERNELS - 1) * 1e3, median(t_opt + 1, KERNELS - 1) * 1e3,
		median(t_emit + 1, KERNELS - 1) * 1e3);
	printf("  kernel cold (parse+O2+emit)            %7.2f ms   (target <= 20)\n", cold * 1e3);
	printf("  kernel from the disk cache into the JIT %6.3f ms   (target < 1)\n", load * 1e3);
	return cold <= 0.020 && load < 0.001 ? 0 : 1;
}
