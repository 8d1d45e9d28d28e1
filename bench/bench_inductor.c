/* bench_inductor.c - what stage 3 (backend="inductor") buys, measured side
 * by side in one run, medians of repeated runs, each figure a ratio with
 * its target (issue 12, "Performance"):
 *
 *   1. the 8-op chain relu(tanh(x*2+1)*sigmoid(x)-x/3) on 16M float32:
 *      inductor against eager tjit (target >= 8x); inductor on one thread
 *      against the memory bandwidth of a plain C copy loop (the kernel
 *      reads 4 bytes and writes 4 an element, as the copy does; target
 *      >= 0.7 of the copy's); inductor on both cores against the same
 *      formula fused by hand in C with tanhf and expf, compiled with this
 *      file's flags (target: faster). The one-thread figure runs in a
 *      child process, which sets the thread pool to one thread before it
 *      starts, while this process waits.
 *   2. row softmax of a 4096x4096 float32 tensor against eager (>= 3x).
 *   3. forward + backward of a 3-layer MLP step (linear + gelu, batch
 *      256, widths 512-512-512-10, loss = the output's sum) against eager
 *      autograd (>= 1.5x).
 *   (and, no target: a matmul whose gelu runs as its epilogue, against
 *   eager and against the same when the product is kept whole)
 *   4. compile latency, from the kernels and phases the compile log
 *      records: a kernel cold (lowered, LLVM O2, object code; <= 20 ms),
 *      from the in-memory and from the disk cache (< 1 ms), and the whole
 *      compile of a 50-op graph cold (trace + compile + first call after
 *      frame_eval_reset, as bench_aot times it; < 100 ms).
 *
 * The kernel cache is a new temporary folder (TJIT_CACHE_DIR), removed at
 * the end. A compile that does not end "ok" or falls back to another
 * backend is reported, since its ratio would then measure that backend.
 * Usage: bench_inductor [runs]   (default 7). Exits 1 when a target is
 * missed, 2 on an error. TJIT_CODEGEN_LIB as for tjit.
 */
#define _GNU_SOURCE /* setenv, mkdtemp */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_VM "bench_inductor"
#include "bench_util.h"
#include "codegen_load.h"
#include "compile_log.h"
#include "error.h"
#include "inductor_compile.h"
#include "parallel.h"
#include "tensor.h"

#define CHAIN_NUMEL (16 << 20)
#define SOFTMAX_ROWS 4096
#define GRAPH_OPS 50

/* ---- the C loops the chain is measured against ---- */

/* keep the copy a loop: gcc and clang would otherwise call memcpy, whose
 * non-temporal stores are not what a loop (or a kernel) does */
#if defined(__clang__)
#define PLAIN_LOOP __attribute__((noinline, no_builtin("memcpy")))
#elif defined(__GNUC__)
#define PLAIN_LOOP __attribute__((noinline, optimize("no-tree-loop-distribute-patterns")))
#else
#define PLAIN_LOOP
#endif

PLAIN_LOOP static void copy_loop(float *restrict out, const float *restrict in, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		out[i] = in[i];
}

/* the chain as a user fuses it by hand */
__attribute__((noinline)) static void hand_fused(float *restrict out, const float *restrict in, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float x = in[i];
		float y = tanhf(x * 2 + 1) * (1 / (1 + expf(-x))) - x / 3;
		out[i] = y > 0 ? y : 0;
	}
}

/* ---- the programs ---- */

static const char chain_prog[] =
	"def chain(x):\n"
	"    return relu(tanh(x * 2 + 1) * sigmoid(x) - x / 3)\n"
	"chain_ind = compile(chain, backend=\"inductor\")\n"
	"def plus0(x):\n"
	"    return x + 0\n"
	"plus0_ind = compile(plus0, backend=\"inductor\")\n"
	"def chain_l3(x):\n"
	"    return relu(tanh(x * 2 + 1) * sigmoid(x) - x / 3)\n"
	"chain_l3_ind = compile(chain_l3, backend=\"inductor\")\n"
	"x = randn(16777216)\n"
	"xl3 = randn(1048576)\n";

static const char other_progs[] =
	"def sm(x):\n"
	"    return softmax(x, -1)\n"
	"sm_ind = compile(sm, backend=\"inductor\")\n"
	"xs = randn(4096, 4096)\n"
	"def mlp(x, w1, b1, w2, b2, w3, b3):\n"
	"    h = gelu(linear(x, w1, b1))\n"
	"    h = gelu(linear(h, w2, b2))\n"
	"    return linear(h, w3, b3).sum()\n"
	"mlp_ind = compile(mlp, backend=\"inductor\")\n"
	"xm = randn(256, 512)\n"
	"w1 = (randn(512, 512) * 0.04).requires_grad_()\n"
	"b1 = zeros(512).requires_grad_()\n"
	"w2 = (randn(512, 512) * 0.04).requires_grad_()\n"
	"b2 = zeros(512).requires_grad_()\n"
	"w3 = (randn(10, 512) * 0.04).requires_grad_()\n"
	"b3 = zeros(10).requires_grad_()\n"
	"def step(fn):\n"
	"    loss = fn(xm, w1, b1, w2, b2, w3, b3)\n"
	"    loss.backward()\n"
	"def mm_gelu(x, w, b):\n"
	"    return gelu(x @ w + b)\n"
	"def mm_gelu_kept(x, w, b):\n"
	"    m = x @ w\n"
	"    return gelu(m + b), m\n"
	"mm_gelu_ind = compile(mm_gelu, backend=\"inductor\")\n"
	"mm_gelu_kept_ind = compile(mm_gelu_kept, backend=\"inductor\")\n"
	"def epi(fn):\n"
	"    return fn(xe, we, be)\n"
	"xe = randn(4096, 32)\n"
	"we = randn(32, 4096) * 0.2\n"
	"be = randn(4096)\n";

/* two 50-op graphs, one line an op (some composites that decompose):
 * graph50 of pointwise lines and a matmul every tenth line (kernels of
 * about ten ops between extern calls), norm50 with a row normalization
 * instead of the matmul (its reductions fuse into one kernel) */
static void emit_graphs(struct strbuf *sb)
{
	static const char *const lines[] = {
		"x = x * w", "x = x + b", "x = sigmoid(x)", "x = x * 0.5", "x = tanh(x)",
		"x = x - 0.25", "x = silu(x)", "x = x.clamp(-2.0, 2.0)", "x = exp(x)",
	};
	enum { NLINES = sizeof lines / sizeof *lines };
	for (int g = 0; g < 2; g++) {
		sb_printf(sb, "def %s(x, w):\n", g ? "norm50" : "graph50");
		for (int i = 0; i < GRAPH_OPS; i++) {
			int line = i % (NLINES + 1), block = i / (NLINES + 1);
			if (line == 1) /* a constant of its own: each block another kernel */
				sb_printf(sb, "    x = x + %d\n", block + 1);
			else
				sb_printf(sb, "    %s\n", line < NLINES ? lines[line]
					  : g ? "x = x / x.sum(-1, keepdim=True)" : "x = x @ m");
		}
		sb_puts(sb, "    return x\n");
	}
	sb_puts(sb, "graph50_ind = compile(graph50, backend=\"inductor\")\n"
		    "norm50_ind = compile(norm50, backend=\"inductor\")\n"
		    "xg = randn(64, 256)\nwg = rand(256) + 0.5\nm = randn(256, 256) * 0.06\n");
}

/* ---- what the compile log says ---- */

static int nnot_ok;
static char last_error[256];
/* the kernels of the compiles since the last watch_clear */
static double kern_ms[256];
static bool kern_hit[256];
static int nkern;

static void watch_compile(struct compile_listener *l, const struct compile_record *r)
{
	(void)l;
	if ((r->outcome && strcmp(r->outcome, "ok") != 0) || r->fallback) {
		nnot_ok++;
		snprintf(last_error, sizeof last_error, "%s%s%s: %s", r->outcome ? r->outcome : "?",
			 r->fallback ? ", ran on " : "", r->fallback ? r->fallback : "",
			 r->error ? r->error : "no message");
	}
	for (int k = 0; k < r->nkernels && nkern < 256; k++) {
		kern_ms[nkern] = r->kernels[k].codegen_ms;
		kern_hit[nkern++] = r->kernels[k].cache_hit;
	}
}

static void watch_clear(void)
{
	nkern = 0;
}

/* the kernels seen since watch_clear that came from the cache (hit) or
 * not, appended to v */
static int kernels_into(double *v, int n, int cap, bool hit)
{
	for (int k = 0; k < nkern && n < cap; k++)
		if (kern_hit[k] == hit)
			v[n++] = kern_ms[k];
	return n;
}

/* ---- helpers ---- */

static int nmissed;

static const char *target(int met)
{
	if (!met)
		nmissed++;
	return met ? "" : ", target missed";
}

static value call(struct vm *vm, value fn, value *args, int nargs, const char *what)
{
	value r = vm_call(vm, fn, args, nargs, val_none());
	if (val_is_err(r))
		die(vm, what);
	return r;
}

/* seconds of one call of fn(arg); its result dropped */
static double time_call(struct vm *vm, value fn, value arg, const char *what)
{
	double t0 = now();
	value r = call(vm, fn, &arg, 1, what);
	double dt = now() - t0;
	val_decref(r);
	return dt;
}

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double *seconds(int n)
{
	double *v = calloc((size_t)n, sizeof(double));
	if (!v)
		die(NULL, "out of memory");
	return v;
}

static float *floats(int64_t n)
{
	float *p = malloc((size_t)n * sizeof(float));
	if (!p)
		die(NULL, "out of memory");
	memset(p, 0, (size_t)n * sizeof(float)); /* its pages touched before any timing */
	return p;
}

/* ---- 1. the chain ---- */

struct one_thread {
	double inductor, copy, plus0;
	double in_l3; /* the chain on 16 slices of 1M elements, each 4+4 MB, in the L3 cache */
};

/* L3_SLICES calls of the chain on CHAIN_NUMEL / L3_SLICES elements (xl3)
 * whose input and output stay in the L3 cache: the kernel's time without
 * memory's, for CHAIN_NUMEL elements in all */
#define L3_SLICES 16

/* in a child: the pool at one thread, the chain under inductor and the
 * copy loop, alternating; the medians written to fd */
static void chain_one_thread_child(int fd, int runs)
{
	if (parallel_set_threads(1) != 0)
		_exit(2);
	struct bench_prog bp = bench_load(chain_prog);
	struct compile_listener cl = {watch_compile, NULL};
	compile_log_listen(bp.rt->log, &cl);
	value fn = global(bp.vm, "chain_ind"), x = global(bp.vm, "x");
	const float *in = val_as_tensor(x)->data;
	float *out = floats(CHAIN_NUMEL);
	value p0 = global(bp.vm, "plus0_ind");
	value l3 = global(bp.vm, "chain_l3_ind"), xl3 = global(bp.vm, "xl3");
	double *ti = seconds(runs), *tc = seconds(runs), *tp = seconds(runs), *tl = seconds(runs);
	time_call(bp.vm, fn, x, "chain_ind"); /* compiles */
	time_call(bp.vm, p0, x, "plus0_ind");
	time_call(bp.vm, l3, xl3, "chain_l3_ind");
	copy_loop(out, in, CHAIN_NUMEL);
	for (int r = 0; r < runs; r++) {
		ti[r] = time_call(bp.vm, fn, x, "chain_ind");
		double t0 = now();
		copy_loop(out, in, CHAIN_NUMEL);
		tc[r] = now() - t0;
		tp[r] = time_call(bp.vm, p0, x, "plus0_ind");
		tl[r] = 0;
		for (int k = 0; k < L3_SLICES; k++)
			tl[r] += time_call(bp.vm, l3, xl3, "chain_l3_ind");
	}
	struct one_thread res = {median(ti, runs), median(tc, runs), median(tp, runs), median(tl, runs)};
	if (out[CHAIN_NUMEL / 2] != in[CHAIN_NUMEL / 2] || write(fd, &res, sizeof res) != (ssize_t)sizeof res)
		_exit(2);
	_exit(nnot_ok ? 3 : 0);
}

static struct one_thread chain_one_thread(int runs)
{
	int fds[2];
	if (pipe(fds) < 0)
		die(NULL, "pipe");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die(NULL, "fork");
	if (pid == 0) {
		close(fds[0]);
		chain_one_thread_child(fds[1], runs);
	}
	close(fds[1]);
	struct one_thread res = {0, 0, 0, 0};
	ssize_t got = read(fds[0], &res, sizeof res);
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	if (got != (ssize_t)sizeof res || !WIFEXITED(status) || WEXITSTATUS(status) == 2) {
		fprintf(stderr, "bench_inductor: the one-thread measurement failed\n");
		exit(2);
	}
	if (WEXITSTATUS(status) == 3) {
		nnot_ok++;
		snprintf(last_error, sizeof last_error, "the one-thread chain did not compile ok");
	}
	return res;
}

static void bench_chain(int runs)
{
	struct one_thread one = chain_one_thread(runs);

	struct bench_prog bp = bench_load(chain_prog);
	struct vm *vm = bp.vm;
	struct compile_listener cl = {watch_compile, NULL};
	compile_log_listen(bp.rt->log, &cl);
	value eager = global(vm, "chain"), ind = global(vm, "chain_ind"), x = global(vm, "x");
	const float *in = val_as_tensor(x)->data;
	float *out = floats(CHAIN_NUMEL);
	double *te = seconds(runs), *ti = seconds(runs), *th = seconds(runs);

	/* warm-up (compiles), and the hand-fused loop's result against inductor's */
	value y = call(vm, ind, &x, 1, "chain_ind");
	hand_fused(out, in, CHAIN_NUMEL);
	const float *yi = val_as_tensor(y)->data;
	double maxdiff = 0;
	for (int64_t i = 0; i < CHAIN_NUMEL; i++)
		maxdiff = fmax(maxdiff, fabs((double)yi[i] - out[i]));
	val_decref(y);
	time_call(vm, eager, x, "chain");
	double cpu = 0, wall = 0; /* the process's CPU time in the inductor runs: the cores they had */
	for (int r = 0; r < runs; r++) {
		te[r] = time_call(vm, eager, x, "chain");
		double c0 = cpu_seconds();
		ti[r] = time_call(vm, ind, x, "chain_ind");
		cpu += cpu_seconds() - c0;
		wall += ti[r];
		double t0 = now();
		hand_fused(out, in, CHAIN_NUMEL);
		th[r] = now() - t0;
	}
	double me = median(te, runs), mi = median(ti, runs), mh = median(th, runs);
	double bytes = 2.0 * CHAIN_NUMEL * sizeof(float);
	printf("inductor: the 8-op chain relu(tanh(x*2+1)*sigmoid(x)-x/3), %d float32 (medians of %d)\n",
	       CHAIN_NUMEL, runs);
	printf("  eager %.1f ms, inductor (%d threads) %.2f ms: %.1fx eager's speed (target >= 8%s)\n", me * 1e3,
	       parallel_threads(), mi * 1e3, me / mi, target(me / mi >= 8));
	printf("  one thread: inductor %.2f ms (%.2f GB/s), C copy loop %.2f ms (%.2f GB/s): %.2f of the copy's "
	       "bandwidth (target >= 0.70%s)\n",
	       one.inductor * 1e3, bytes / one.inductor / 1e9, one.copy * 1e3, bytes / one.copy / 1e9,
	       one.copy / one.inductor, target(one.copy / one.inductor >= 0.7));
	printf("  (for reference, one thread: inductor's kernel of x + 0 %.2f ms, %.2f of the copy's bandwidth; "
	       "the chain's kernel on %d slices that stay in the L3 cache %.2f ms, %.2f of the copy's: what bounds "
	       "it is %s)\n",
	       one.plus0 * 1e3, one.copy / one.plus0, L3_SLICES, one.in_l3 * 1e3, one.copy / one.in_l3,
	       one.in_l3 > 0.8 * one.inductor ? "its arithmetic, not memory" : "memory");
	printf("  all cores: inductor %.2f ms (it had %.1f cores: the CPU time of its runs over their time), "
	       "hand-fused C loop (tanhf, expf; one thread) %.2f ms: %.2fx the C loop's speed (target > 1%s); "
	       "results differ by at most %.2g\n",
	       mi * 1e3, cpu / wall, mh * 1e3, mh / mi, target(mh > mi), maxdiff);
	free(te);
	free(ti);
	free(th);
	free(out);
	compile_log_unlisten(bp.rt->log, &cl);
	bench_unload(&bp);
}

/* ---- 2. softmax, 3. the MLP step ---- */

static void bench_softmax(struct vm *vm, int runs)
{
	value eager = global(vm, "sm"), ind = global(vm, "sm_ind"), x = global(vm, "xs");
	double *te = seconds(runs), *ti = seconds(runs);
	time_call(vm, ind, x, "sm_ind");
	time_call(vm, eager, x, "sm");
	for (int r = 0; r < runs; r++) {
		te[r] = time_call(vm, eager, x, "sm");
		ti[r] = time_call(vm, ind, x, "sm_ind");
	}
	double me = median(te, runs), mi = median(ti, runs);
	printf("inductor: softmax(x, -1) of %dx%d float32: eager %.2f ms, inductor %.2f ms: %.1fx eager's speed "
	       "(target >= 3%s)\n",
	       SOFTMAX_ROWS, SOFTMAX_ROWS, me * 1e3, mi * 1e3, me / mi, target(me / mi >= 3));
	free(te);
	free(ti);
}

static void bench_mlp(struct vm *vm, int runs)
{
	value step = global(vm, "step"), eager = global(vm, "mlp"), ind = global(vm, "mlp_ind");
	double *te = seconds(runs), *ti = seconds(runs);
	time_call(vm, step, ind, "step(mlp_ind)"); /* compiles the forward and the backward */
	time_call(vm, step, eager, "step(mlp)");
	for (int r = 0; r < runs; r++) { /* which goes first alternates */
		if (r % 2) {
			ti[r] = time_call(vm, step, ind, "step(mlp_ind)");
			te[r] = time_call(vm, step, eager, "step(mlp)");
		} else {
			te[r] = time_call(vm, step, eager, "step(mlp)");
			ti[r] = time_call(vm, step, ind, "step(mlp_ind)");
		}
	}
	double me = median(te, runs), mi = median(ti, runs);
	printf("inductor: forward+backward of a 3-layer MLP (linear + gelu, 256x512, 512-512-512-10, loss = sum): "
	       "eager autograd %.2f ms, inductor %.2f ms: %.2fx eager's speed (target >= 1.5%s)\n",
	       me * 1e3, mi * 1e3, me / mi, target(me / mi >= 1.5));
	free(te);
	free(ti);
}

/* a matmul whose product (4096 x 4096 float32, 64 MB) only a gelu reads:
 * its epilogue runs on each block of rows as BLAS makes it, in a buffer
 * of one block; against eager, and against inductor when the product is
 * also returned (kept whole: written to memory, read back) */
static void bench_epilogue(struct vm *vm, int runs)
{
	static const char *const names[] = {"mm_gelu", "mm_gelu_ind", "mm_gelu_kept_ind"};
	value epi = global(vm, "epi");
	double *t[3];
	for (int f = 0; f < 3; f++) {
		t[f] = seconds(runs);
		time_call(vm, epi, global(vm, names[f]), names[f]);
	}
	for (int r = 0; r < runs; r++)
		for (int f = 0; f < 3; f++)
			t[f][r] = time_call(vm, epi, global(vm, names[f]), names[f]);
	double me = median(t[0], runs), mi = median(t[1], runs), mk = median(t[2], runs);
	printf("inductor: gelu(x @ w + b), 4096x32 @ 32x4096 float32, the gelu as the matmul's epilogue: eager %.2f ms, "
	       "inductor %.2f ms (%.2fx eager's speed); with the product also returned (kept whole) %.2f ms: "
	       "the epilogue's blocks %s %.0f%%\n",
	       me * 1e3, mi * 1e3, me / mi, mk * 1e3, mi <= mk ? "save" : "cost", 100 * fabs(1 - mi / mk));
	for (int f = 0; f < 3; f++)
		free(t[f]);
}

/* ---- 4. compile latency ---- */

/* trace + compile + first call of fn(xg, wg) after a frame_eval_reset */
static double compile_once(struct vm *vm, struct runtime *rt, const char *fn_name)
{
	value fn = global(vm, fn_name);
	value args[2] = {global(vm, "xg"), global(vm, "wg")};
	frame_eval_reset(rt);
	double t0 = now();
	value r = call(vm, fn, args, 2, fn_name);
	double dt = now() - t0;
	val_decref(r);
	return dt;
}

/* norm50 cold: the whole compile and its largest kernel */
static void latency_norm50(struct vm *vm, struct runtime *rt, int runs)
{
	double *whole = seconds(runs), largest = 0;
	int per_graph = 0;
	for (int r = 0; r < runs; r++) {
		ind_set_kernel_cache(false);
		watch_clear();
		whole[r] = compile_once(vm, rt, "norm50_ind");
		per_graph = nkern;
		for (int k = 0; k < nkern; k++)
			largest = fmax(largest, kern_ms[k]);
	}
	double w = median(whole, runs);
	printf("  the whole compile of %s cold (%d kernel%s, the longest %.1f ms) %.2f ms (target < 100%s)\n",
	       "norm50, a row normalization every tenth line", per_graph, per_graph == 1 ? "" : "s", largest, w * 1e3,
	       target(w < 0.1));
	free(whole);
}

static void bench_latency(struct vm *vm, struct runtime *rt, int runs)
{
	enum { CAP = 1024 };
	double *whole = seconds(runs), cold[CAP], mem[CAP], disk[CAP];
	int ncold = 0, nmem = 0, ndisk = 0, per_graph = 0;
	for (int r = 0; r < runs; r++) {
		ind_set_kernel_cache(false); /* a new, empty cache: every kernel compiles */
		watch_clear();
		whole[r] = compile_once(vm, rt, "graph50_ind");
		per_graph = nkern;
		ncold = kernels_into(cold, ncold, CAP, false);
	}
	ind_set_kernel_cache(true); /* the temporary folder */
	compile_once(vm, rt, "graph50_ind"); /* compiles, and writes the files */
	for (int r = 0; r < runs; r++) {
		watch_clear();
		compile_once(vm, rt, "graph50_ind"); /* the process's cache still holds them */
		nmem = kernels_into(mem, nmem, CAP, true);
		ind_set_kernel_cache(true); /* a new cache object: it reads the files */
		watch_clear();
		compile_once(vm, rt, "graph50_ind");
		ndisk = kernels_into(disk, ndisk, CAP, true);
	}
	if (!ncold || !nmem || !ndisk) {
		printf("inductor: compile latency: no kernels recorded (cold %d, memory %d, disk %d)\n", ncold, nmem,
		       ndisk);
		nmissed++;
		free(whole);
		return;
	}
	double c = median(cold, ncold), m = median(mem, nmem), d = median(disk, ndisk), w = median(whole, runs);
	printf("inductor: compile latency (medians of %d compiles; kernels of graph50: pointwise lines, a matmul "
	       "every tenth, %d kernels)\n",
	       runs, per_graph);
	printf("  a kernel cold (LLVM IR, O2, object, JIT)     %7.2f ms (target <= 20%s)\n", c, target(c <= 20));
	printf("  a kernel from the in-memory cache           %7.3f ms (target < 1%s)\n", m, target(m < 1));
	printf("  a kernel from the disk cache                %7.3f ms (target < 1%s)\n", d, target(d < 1));
	printf("  the whole compile of graph50 cold            %7.2f ms (target < 100%s)\n", w * 1e3,
	       target(w < 0.1));
	free(whole);
	latency_norm50(vm, rt, runs);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 7;
	if (runs < 1)
		runs = 1;
	/* run from the build tree: the code generator is ../core/codegen/ */
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 64);
	char *slash = len > 0 ? memrchr(exe, '/', (size_t)len) : NULL;
	if (slash && !getenv("TJIT_CODEGEN_LIB")) {
		strcpy(slash, "/../core/codegen/libtjcodegen.so");
		if (access(exe, R_OK) == 0)
			setenv("TJIT_CODEGEN_LIB", exe, 1);
	}
	if (!codegen_load()) {
		fprintf(stderr, "bench_inductor: %s\n", tj_error_peek());
		return 2;
	}
	char dir[] = "/tmp/bench_inductor.XXXXXX";
	if (!mkdtemp(dir) || setenv("TJIT_CACHE_DIR", dir, 1) < 0)
		die(NULL, "a temporary cache folder");

	bench_chain(runs); /* first: its child sets the pool's threads before it starts */

	struct strbuf prog = STRBUF_INIT;
	sb_puts(&prog, other_progs);
	emit_graphs(&prog);
	struct bench_prog bp = bench_load(prog.buf);
	struct compile_listener cl = {watch_compile, NULL};
	compile_log_listen(bp.rt->log, &cl);
	bench_softmax(bp.vm, runs);
	bench_mlp(bp.vm, runs * 3);
	bench_epilogue(bp.vm, runs);
	bench_latency(bp.vm, bp.rt, runs);
	if (nnot_ok)
		printf("note: %d compile(s) did not end ok or ran on another backend (last %s)\n", nnot_ok,
		       last_error);
	compile_log_unlisten(bp.rt->log, &cl);
	bench_unload(&bp);
	sb_release(&prog);

	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 2;
	return nmissed ? 1 : 0;
}
