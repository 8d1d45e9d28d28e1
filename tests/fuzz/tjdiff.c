/* tjdiff.c - differential fuzzing of the compiled stages: "a compiled
 * function prints what the eager one prints" (doc/language.md), checked
 * on generated programs that call compile.
 *
 * Program i (from the seed and i alone) is a function f(x, y) of 3 to 14
 * random tensor ops that keep track of their shapes (pointwise math,
 * broadcasting, reductions with and without keepdim, permutes, reshapes,
 * slices, matmul, softmax, cat, stack, where, expand), compiled and called
 * twice; a third of them take a gradient through it, half of the others
 * are called again with larger sizes (a recompile, then automatic dynamic
 * shapes), and half of those once more in float64 (a recompile on the
 * dtype). Two in five also take Python values, n (an int that unrolls a
 * loop with a continue and picks a branch), s (a float), ws (a list), read
 * a global K, call a function h (inlined, or with a print inside: a
 * break in an inlined call) and a closure from a global, and are called
 * again after each of n, s, ws, K and the closure changes, then with the
 * first values again: guards and recompiles on Python values, and a
 * global that the branch taken does not read (no guard, no recompile). Besides
 * pointwise math and shapes, the body uses the rest of
 * the language's ops (step_more) and breaks its graph: a branch on a
 * tensor, a print, .item(), an extension function. Inside, each result
 * is compared with the eager call's (within 1e-3 of the largest value,
 * NaN equal to NaN) and printed as True or False. tjdiff runs every program with `tjit run --backend eager`, then
 * with each other backend (aot_eager, inductor), and fails a program when
 * a backend's output or exit status differs from eager's (both failing
 * alike is fine), a comparison printed False, a backend warned (a graph
 * it could not compile: it fell back), a run died by a signal, ran past
 * the time limit, or a sanitizer reported. Failing programs are kept in
 * fuzz-failures/ (in the current folder).
 *
 * Usage: tjdiff [-n COUNT] [-s SEED] [-t SECONDS] [--print I] [TJIT]
 * Defaults from the environment (`make check` runs a short seeded slice,
 * `make fuzz FUZZ_SECONDS=N` a long one from a new seed): TJIT (./tjit),
 * TJ_DIFF_COUNT (40), TJ_DIFF_SEED (1), TJ_DIFF_SECONDS (0: no time
 * budget; with one, programs run until it is spent or COUNT is reached,
 * COUNT 0 meaning no limit). --print I writes program I to stdout and runs
 * nothing: `tjdiff -s SEED --print I` gives back a failing program.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_util.h"

#define RUN_TIMEOUT_S 60
#define MAX_VALS 40

/* ---- the generator ---- */

static uint64_t rng;

static uint64_t next64(void) { return rng_next(&rng); }

static int below(int n) { return (int)(next64() % (uint64_t)n); }
static bool chance(int percent) { return below(100) < percent; }

struct val {
	char name[16];
	int nd;
	int shape[4];
};

struct gen {
	struct val v[MAX_VALS];
	int n;
	char body[8192];
	size_t len;
};

static void out(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(g->body + g->len, sizeof g->body - g->len, fmt, ap);
	va_end(ap);
	if (w > 0 && g->len + (size_t)w < sizeof g->body)
		g->len += (size_t)w;
}

static bool same_shape(const struct val *a, const struct val *b)
{
	return a->nd == b->nd && memcmp(a->shape, b->shape, sizeof(int) * (size_t)a->nd) == 0;
}

static int numel(const struct val *a)
{
	int n = 1;
	for (int d = 0; d < a->nd; d++)
		n *= a->shape[d];
	return n;
}

/* a random value of g with the shape of a (a itself when none other) */
static const struct val *like(struct gen *g, const struct val *a)
{
	int cand[MAX_VALS], nc = 0;
	for (int i = 0; i < g->n; i++)
		if (same_shape(&g->v[i], a))
			cand[nc++] = i;
	return nc ? &g->v[cand[below(nc)]] : a;
}

/* a new value: its expression is the printf format, its shape nd dims */
static void add(struct gen *g, int nd, const int *shape, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add(struct gen *g, int nd, const int *shape, const char *fmt, ...)
{
	struct val *v = &g->v[g->n];
	snprintf(v->name, sizeof v->name, "v%d", g->n - 1);
	v->nd = nd;
	memcpy(v->shape, shape, sizeof(int) * (size_t)nd);
	char expr[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(expr, sizeof expr, fmt, ap);
	va_end(ap);
	out(g, "    %s = %s\n", v->name, expr);
	g->n++;
}

static const char *const unary[] = {"relu", "tanh", "sigmoid", "sin", "cos", "gelu", "silu"};

/* a new value made by a statement of several lines (stmt: a printf
 * format whose first %s is the new value's name) */
static void add_stmt(struct gen *g, int nd, const int *shape, const char *stmt, const char *a, const char *b)
{
	struct val *v = &g->v[g->n];
	snprintf(v->name, sizeof v->name, "v%d", g->n - 1);
	v->nd = nd;
	memcpy(v->shape, shape, sizeof(int) * (size_t)nd);
	out(g, stmt, v->name, a, b);
	g->n++;
}

/* the shape s (of nd dims) reduced over dim d: d dropped, or kept as 1;
 * the new number of dims */
static int reduced_shape(const int *s, int nd, int d, bool keep, int *ns)
{
	int nn = 0;
	for (int i = 0; i < nd; i++)
		if (i != d)
			ns[nn++] = s[i];
		else if (keep)
			ns[nn++] = 1;
	return nn;
}

static const char *const unary2[] = {"neg", "abs", "reciprocal", "minimum"};

/* the rest of the language's ops, and graph breaks: ops whose result
 * jumps (floor, //, %, argmax) read the inputs x and y only, which eager
 * and compiled code hold bit for bit, so that a rounding difference of a
 * transcendental upstream cannot flip them; the breaks keep the values
 * (a branch on a tensor that is always taken, a print, .item(), an
 * extension function the tracer cannot see) */
static bool step_more(struct gen *g, const struct val *a, int k)
{
	const char *x = a->name;
	const struct val *in = &g->v[below(2)];
	int nd = a->nd, s[4];
	memcpy(s, a->shape, sizeof s);
	switch (k) {
	case 0: {
		const char *op = unary2[below(4)];
		if (strcmp(op, "minimum") == 0)
			add(g, nd, s, "minimum(%s, %s)", x, like(g, a)->name);
		else if (strcmp(op, "reciprocal") == 0)
			add(g, nd, s, "reciprocal(%s.abs() + 1)", x);
		else
			add(g, nd, s, "%s(%s)", op, x);
		return true;
	}
	case 1: add(g, nd, s, "rsqrt(%s.abs() + 1)", x); return true;
	case 2: {
		static const char *const jump[] = {"floor(%s * 4)", "ceil(%s * 4)", "round(%s * 4)", "%s // 0.5",
						   "%s %% 0.5"};
		char e[64];
		snprintf(e, sizeof e, jump[below(5)], in->name);
		add(g, in->nd, in->shape, "%s", e);
		return true;
	}
	case 3:
		if (in->nd >= 1) {
			int ns[4], d = below(in->nd), nn = reduced_shape(in->shape, in->nd, d, false, ns);
			add(g, nn, ns, "%s.argmax(%d).float()", in->name, d);
			return true;
		}
		return false;
	case 4:
		if (nd >= 1) {
			int d = below(nd), ns[4], nn = reduced_shape(s, nd, d, false, ns);
			add(g, nn, ns, "%s.clamp(0.5, 1.5).prod(%d)", x, d);
			return true;
		}
		return false;
	case 5:
		if (nd >= 2) {
			bool keep = chance(50);
			int ns[4], nn = 0;
			for (int i = 0; i < nd; i++)
				if (i >= 2)
					ns[nn++] = s[i];
				else if (keep)
					ns[nn++] = 1;
			add(g, nn, ns, "%s.sum((0, 1), keepdim=%s)", x, keep ? "True" : "False");
			return true;
		}
		return false;
	case 6:
		for (int d = 0; d < nd; d++)
			if (s[d] == 1) {
				int ns[4], nn = reduced_shape(s, nd, d, false, ns);
				add(g, nn, ns, "%s.squeeze(%d)", x, d);
				return true;
			}
		return false;
	case 7:
		if (nd == 2) {
			int ns[2] = {s[1], s[0]};
			add(g, 2, ns, "%s.T", x);
			return true;
		}
		return false;
	case 8:
		if (nd == 2)
			for (int i = 0; i < g->n; i++) {
				const struct val *b = &g->v[i];
				if (b->nd == 2 && b->shape[1] == s[1]) {
					int ns[2] = {s[0], b->shape[0]};
					add(g, 2, ns, "linear(%s, %s)", x, b->name);
					return true;
				}
			}
		return false;
	case 9: add(g, nd, s, "(%s.to(float64) * 3).float()", x); return true;
	case 10:
		if (nd >= 1) {
			add(g, nd, s, "ext_clip(%s, -1.0, 1.0)", x);
			return true;
		}
		return false;
	case 11: out(g, "    print(%s.shape)\n", x); return true;
	case 12:
		add_stmt(g, nd, s, "    %s = %s * 2\n    if %s.abs().sum() >= 0:\n", x, x);
		out(g, "        %s = %s + 1\n", g->v[g->n - 1].name, g->v[g->n - 1].name);
		return true;
	case 13: add(g, nd, s, "%s + %s.abs().max().item() * 0", x, x); return true;
	case 14: /* a view with the same elements at the same indexes */
		if (nd >= 2 && chance(50))
			add(g, nd, s, "%s.transpose(0, 1).transpose(0, 1)", x);
		else if (nd >= 1)
			add(g, nd, s, chance(50) ? "%s[:]" : "%s.unsqueeze(0).squeeze(0)", x);
		else
			return false;
		return true;
	}
	return false;
}

static void step(struct gen *g)
{
	const struct val *a = &g->v[below(g->n)];
	const char *x = a->name;
	int nd = a->nd, s[4], k = below(39);
	memcpy(s, a->shape, sizeof s);
	if (k >= 24 && step_more(g, a, k - 24))
		return;
	switch (k) {
	case 0: {
		static const char ops[] = "+-*";
		add(g, nd, s, "%s %c %s", x, ops[below(3)], like(g, a)->name);
		return;
	}
	case 1: add(g, nd, s, "%s / (%s.abs() + 1)", x, x); return;
	case 2: add(g, nd, s, "%s(%s)", unary[below(7)], x); return;
	case 3: add(g, nd, s, "exp(%s.clamp(-5.0, 5.0))", x); return;
	case 4: add(g, nd, s, "log(%s.abs() + 0.5)", x); return;
	case 5:
		if (nd >= 1) {
			static const char *const red[] = {"sum", "mean", "max", "min"};
			int d = below(nd), r = below(4);
			bool keep = chance(50);
			int ns[4], nn = reduced_shape(s, nd, d, keep, ns);
			add(g, nn, ns, "%s.%s(%d, keepdim=%s)%s", x, red[r], d, keep ? "True" : "False", r >= 2 ? "[0]" : "");
			return;
		}
		break;
	case 6:
		if (nd >= 2) {
			int p[4] = {0, 1, 2, 3}, ns[4];
			for (int i = nd - 1; i > 0; i--) {
				int j = below(i + 1), t = p[i];
				p[i] = p[j];
				p[j] = t;
			}
			for (int i = 0; i < nd; i++)
				ns[i] = s[p[i]];
			if (nd == 2)
				add(g, nd, ns, "%s.permute(%d, %d)", x, p[0], p[1]);
			else
				add(g, nd, ns, "%s.permute(%d, %d, %d)", x, p[0], p[1], p[2]);
			return;
		}
		break;
	case 7: {
		int n = numel(a);
		add(g, 1, &n, "%s.reshape(%d)", x, n);
		return;
	}
	case 8:
		if (nd < 3) {
			int d = below(nd + 1), ns[4];
			for (int i = 0, j = 0; i <= nd; i++)
				ns[i] = i == d ? 1 : s[j++];
			add(g, nd + 1, ns, "%s.unsqueeze(%d)", x, d);
			return;
		}
		break;
	case 9:
		if (nd == 2)
			for (int i = 0; i < g->n; i++) {
				const struct val *b = &g->v[i];
				if (b->nd == 2 && b->shape[0] == s[1]) {
					int ns[2] = {s[0], b->shape[1]};
					add(g, 2, ns, "%s @ %s", x, b->name);
					return;
				}
				if (b->nd == 2 && b->shape[1] == s[1]) {
					int ns[2] = {s[0], b->shape[0]};
					add(g, 2, ns, "%s @ %s.permute(1, 0)", x, b->name);
					return;
				}
			}
		break;
	case 10:
		if (nd >= 1 && s[nd - 1] > 1) {
			add(g, nd, s, "%s(%s, -1)", chance(50) ? "softmax" : "log_softmax", x);
			return;
		}
		break;
	case 11:
		if (nd >= 1 && s[0] > 2) {
			int lo = below(s[0] - 1);
			if (chance(30)) {
				s[0] = (s[0] + 1) / 2;
				add(g, nd, s, "%s[::2]", x);
			} else {
				s[0] -= lo;
				add(g, nd, s, "%s[%d:]", x, lo);
			}
			return;
		}
		break;
	case 12: add(g, nd, s, "where(%s > 0, %s, %s * 0.5)", x, x, like(g, a)->name); return;
	case 13: add(g, nd, s, "%s.clamp(-1.0, 1.0)", x); return;
	case 14: add(g, nd, s, "%s ** 2", x); return;
	case 15:
		if (nd >= 1)
			for (int i = 0; i < g->n; i++) {
				const struct val *b = &g->v[i];
				if (b->nd == nd && memcmp(b->shape + 1, s + 1, sizeof(int) * (size_t)(nd - 1)) == 0) {
					s[0] += b->shape[0];
					add(g, nd, s, "cat([%s, %s], 0)", x, b->name);
					return;
				}
			}
		break;
	case 16:
		if (nd >= 1) {
			add(g, nd, s, "%s - %s.mean(%d, keepdim=True)", x, x, nd - 1);
			return;
		}
		break;
	case 17:
		if (nd == 2) {
			add(g, 1, s, "%s.var(-1)", x);
			return;
		}
		break;
	case 18:
		if (nd >= 2) {
			int t = s[0];
			s[0] = s[1];
			s[1] = t;
			add(g, nd, s, "%s.transpose(0, 1)", x);
			return;
		}
		break;
	case 19:
		if (nd >= 1 && nd < 3) {
			int ns[4] = {2};
			memcpy(ns + 1, s, sizeof(int) * (size_t)nd);
			char shp[64];
			if (nd == 1)
				snprintf(shp, sizeof shp, "(2, %d)", s[0]);
			else
				snprintf(shp, sizeof shp, "(2, %d, %d)", s[0], s[1]);
			add(g, nd + 1, ns, "%s.expand%s", x, shp);
			return;
		}
		break;
	case 20: add(g, nd, s, "(%s > 0).float() * %s", x, x); return;
	case 21: add(g, nd, s, "maximum(%s, %s * 0.5)", x, x); return;
	case 22: add(g, nd, s, "stack([%s, %s], 0).sum(0)", x, like(g, a)->name); return;
	case 23: add(g, nd, s, "sqrt(%s.abs() + 1) * sign(%s)", x, x); return;
	}
	add(g, nd, s, "%s * 3 + 1", x);
}

static void shape_str(char *buf, size_t n, int nd, const int *s, int plus)
{
	size_t len = (size_t)snprintf(buf, n, "(");
	for (int d = 0; d < nd; d++)
		len += (size_t)snprintf(buf + len, n - len, "%s%d", d ? ", " : "", s[d] > 1 ? s[d] + plus : s[d]);
	snprintf(buf + len, n - len, nd == 1 ? ",)" : ")");
}

/* program i of seed, malloc'd */
static char *program(uint64_t seed, long i)
{
	static const int dims[] = {1, 2, 3, 5, 8, 17, 33, 130};
	rng = rng_stream(seed, (uint64_t)i);
	struct gen *g = calloc(1, sizeof *g);
	struct val *x = &g->v[0], *y = &g->v[1];
	strcpy(x->name, "x");
	strcpy(y->name, "y");
	x->nd = 1 + below(3);
	for (int d = 0; d < x->nd; d++)
		x->shape[d] = dims[below(8)];
	*y = *x;
	strcpy(y->name, "y");
	if (chance(40)) {
		y->nd = 1 + below(2);
		for (int d = 0; d < y->nd; d++)
			y->shape[d] = dims[below(5)];
	}
	g->n = 2;
	for (int k = 3 + below(12); k > 0; k--)
		step(g);
	const struct val *res = &g->v[g->n - 1], *other = g->n > 3 && chance(40) ? &g->v[2 + below(g->n - 3)] : NULL;
	bool grad = chance(30), again = !grad && chance(50);
	/* Python values (from a stream of their own, so the tensor body is
	 * the same as without them): an int that unrolls a loop and picks a
	 * branch, a float, a list and a global, each changed between calls:
	 * every change must fail a guard, and the first values must find the
	 * first entry again */
	uint64_t tensor_rng = rng;
	rng = rng_stream(seed ^ 0x9e3779b97f4a7c15ull, (uint64_t)i);
	bool scalars = chance(40), helper_break = chance(50);
	int order[5] = {0, 1, 2, 3, 4};
	for (int k = 4; k > 0; k--) {
		int j = below(k + 1), t = order[k];
		order[k] = order[j];
		order[j] = t;
	}
	rng = tensor_rng;
	const char *params = scalars ? ", n, s, ws" : "";
	char xs[64], ys[64], xs3[64], ys3[64];
	shape_str(xs, sizeof xs, x->nd, x->shape, 0);
	shape_str(ys, sizeof ys, y->nd, y->shape, 0);
	shape_str(xs3, sizeof xs3, x->nd, x->shape, 3);
	shape_str(ys3, sizeof ys3, y->nd, y->shape, 3);
	char *text = NULL;
	size_t tn = 0;
	FILE *f = open_memstream(&text, &tn);
	fprintf(f, "# tjdiff program %ld of seed %llu\n", i, (unsigned long long)seed);
	if (scalars) /* an inlined call (with a graph break inside: the caller
		      * breaks at the call, h is a frame of its own) and a closure */
		fprintf(f, "def h(a, c):\n"
			   "    t = a * c + 1\n"
			   "%s"
			   "    return t\n"
			   "def mk(k):\n"
			   "    def inner(v):\n"
			   "        return v - k\n"
			   "    return inner\n"
			   "inner = mk(0.5)\n",
			helper_break ? "    print(\"in h\")\n" : "");
	fprintf(f, "def f(x, y%s):\n%s", params, g->body);
	if (scalars)
		fprintf(f, "    r = h(%s, s)\n"
			   "    for i in range(n):\n"
			   "        if i == 1:\n"
			   "            continue\n"
			   "        r = r * s + i\n"
			   "    if n > 2:\n"
			   "        r = r + K\n"
			   "    r = inner(r * ws[0] + ws[1])\n",
			res->name);
	fprintf(f, "    return %s,%s%s\n", scalars ? "r" : res->name, other ? " " : "", other ? other->name : "");
	fprintf(f, "g = compile(f)\n"
		   "def check(a, b):\n"
		   "    for p, q in zip(a, b):\n"
		   "        tol = 1e-3 * (1 + where(q == q, q.abs(), 0).max().item()) if q.numel() else 0\n"
		   "        same = ((p - q).abs() <= tol).float() + (p != p).float() * (q != q).float() + (p == q).float() > 0\n"
		   "        print(p.shape, p.dtype, same.float().sum().item() == p.numel())\n"
		   "x = randn%s\ny = randn%s\n", xs, ys);
	if (scalars)
		fprintf(f, "n = 2\ns = 0.5\nws = [1.5, -1.0]\nK = 0.25\n");
	if (grad)
		fprintf(f, "x = x.requires_grad_()\na = g(x, y%s)\n(a[0].sum() + x.sum()).backward()\n"
			   "x2 = x.detach().requires_grad_()\nb = f(x2, y%s)\n(b[0].sum() + x2.sum()).backward()\n"
			   "check(a, b)\ncheck((x.grad,), (x2.grad,))\n", params, params);
	else
		fprintf(f, "check(g(x, y%s), f(x, y%s))\ncheck(g(x, y%s), f(x, y%s))\n", params, params, params, params);
	static const char *const changes[5] = {"n = 3", "s = -2.0", "ws[1] = 4.0", "K = -3.0", "inner = mk(-1.0)"};
	for (int k = 0; scalars && k < 5; k++)
		fprintf(f, "%s\ncheck(g(x, y%s), f(x, y%s))\n", changes[order[k]], params, params);
	if (scalars) /* the first entry again */
		fprintf(f, "n = 2\ns = 0.5\nws[1] = -1.0\nK = 0.25\ninner = mk(0.5)\ncheck(g(x, y%s), f(x, y%s))\n",
			params, params);
	if (again)
		fprintf(f, "x = randn%s\ny = randn%s\ncheck(g(x, y%s), f(x, y%s))\n", xs3, ys3, params, params);
	if (again && !scalars && chance(50)) /* another dtype: a guard fails, a recompile */
		fprintf(f, "x = x.to(float64)\ny = y.to(float64)\ncheck(g(x, y), f(x, y))\n");
	fclose(f);
	free(g);
	return text;
}

/* ---- running ---- */

struct run {
	int status;     /* exit status, or 128 + signal, or -1: timed out */
	char *output;   /* stdout and stderr */
};

/* LeakSanitizer's own tracer can die at exit ("LeakSanitizer has
 * encountered a fatal error", a known fault of the runtime, not a report
 * of a leak; make check-asan reruns a test that shows it): such a run is
 * made again without leak detection, its other checks kept */
#define LSAN_FAULT "LeakSanitizer has encountered a fatal error"

static struct run run_tjit_once(const char *tjit, const char *backend, const char *file, const char *dir,
				bool no_leaks)
{
	struct run r = {-1, NULL};
	char outpath[512];
	snprintf(outpath, sizeof outpath, "%s/out.txt", dir);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			_exit(99);
		dup2(fd, 1);
		dup2(fd, 2);
		char db[512];
		snprintf(db, sizeof db, "%s/log.db", dir);
		alarm(RUN_TIMEOUT_S);
		if (no_leaks) {
			const char *o = getenv("ASAN_OPTIONS");
			char opts[1024];
			snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", o ? o : "", o && *o ? ":" : "");
			setenv("ASAN_OPTIONS", opts, 1);
		}
		execl(tjit, tjit, "run", "--backend", backend, "--db", db, file, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return r;
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st) == SIGALRM ? -1 : 128 + WTERMSIG(st);
	FILE *f = fopen(outpath, "r");
	size_t cap = 0, len = 0;
	char buf[4096];
	size_t n;
	while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) {
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			r.output = realloc(r.output, cap);
		}
		memcpy(r.output + len, buf, n);
		len += n;
	}
	if (f)
		fclose(f);
	if (!r.output)
		r.output = calloc(1, 1);
	else
		r.output[len] = '\0';
	return r;
}

static struct run run_tjit(const char *tjit, const char *backend, const char *file, const char *dir)
{
	struct run r = run_tjit_once(tjit, backend, file, dir, false);
	if (r.output && strstr(r.output, LSAN_FAULT)) {
		free(r.output);
		r = run_tjit_once(tjit, backend, file, dir, true);
	}
	return r;
}

static const char *why_bad(const struct run *eager, const struct run *r)
{
	if (r->status == -1)
		return "timed out";
	if (r->status >= 128)
		return "died by a signal";
	if (strstr(r->output, "Sanitizer") || strstr(r->output, "runtime error:"))
		return "a sanitizer report";
	if (r->status != eager->status || strcmp(r->output, eager->output) != 0)
		return strstr(r->output, "warning: ") ? "it warned (a graph it could not compile)"
						     : "its output differs from eager's";
	if (strstr(r->output, " False"))
		return "a compiled result differs from the eager one";
	return NULL;
}

static void keep_failure(const char *text, long i, const char *backend, const char *why, const struct run *eager,
			 const struct run *r)
{
	mkdir("fuzz-failures", 0755);
	char path[256];
	snprintf(path, sizeof path, "fuzz-failures/diff-%ld-%s.tj", i, backend);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	printf("FAIL: program %ld under %s: %s (kept as %s)\n", i, backend, why, path);
	printf("  eager (status %d):\n%s\n  %s (status %d):\n%s\n", eager->status, eager->output, backend, r->status,
	       r->output);
}


int main(int argc, char **argv)
{
	long count = env_long("TJ_DIFF_COUNT", 40), seconds = env_long("TJ_DIFF_SECONDS", 0), print = -1;
	uint64_t seed = (uint64_t)env_long("TJ_DIFF_SEED", 1);
	const char *tjit = getenv("TJIT") && *getenv("TJIT") ? getenv("TJIT") : "./tjit";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			count = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			seed = (uint64_t)strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
			seconds = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--print") == 0 && i + 1 < argc)
			print = strtol(argv[++i], NULL, 10);
		else if (argv[i][0] != '-')
			tjit = argv[i];
		else {
			fprintf(stderr, "usage: tjdiff [-n COUNT] [-s SEED] [-t SECONDS] [--print I] [TJIT]\n");
			return 2;
		}
	}
	if (print >= 0) {
		char *text = program(seed, print);
		fputs(text, stdout);
		free(text);
		return 0;
	}
	if (access(tjit, X_OK) != 0) {
		fprintf(stderr, "tjdiff: no tjit at %s (set TJIT)\n", tjit);
		return 99;
	}
	char dir[] = "/tmp/tjdiff.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("tjdiff: a scratch folder");
		return 99;
	}
	/* the kernel cache in the scratch folder: no program leaves kernels behind */
	char cache[600];
	snprintf(cache, sizeof cache, "%s/kernels", dir);
	setenv("TJIT_CACHE_DIR", cache, 1);
	unsetenv("TJIT_LOGS");
	static const char *const backends[] = {"aot_eager", "inductor"};
	time_t start = time(NULL);
	long ran = 0, failed = 0;
	for (long i = 0; (count <= 0 || i < count) && (seconds <= 0 || time(NULL) - start < seconds); i++) {
		if (count <= 0 && seconds <= 0)
			break;
		char *text = program(seed, i);
		char file[600];
		snprintf(file, sizeof file, "%s/p.tj", dir);
		FILE *f = fopen(file, "w");
		if (!f) {
			perror("tjdiff");
			return 99;
		}
		fputs(text, f);
		fclose(f);
		struct run eager = run_tjit(tjit, "eager", file, dir);
		for (int b = 0; b < 2; b++) {
			struct run r = run_tjit(tjit, backends[b], file, dir);
			const char *why = why_bad(&eager, &r);
			if (why) {
				keep_failure(text, i, backends[b], why, &eager, &r);
				failed++;
			}
			free(r.output);
		}
		free(eager.output);
		free(text);
		ran++;
	}
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "tjdiff: could not remove %s\n", dir);
	printf("tjdiff: %ld programs of seed %llu under aot_eager and inductor against eager, %ld failures, %lds\n", ran,
	       (unsigned long long)seed, failed, (long)(time(NULL) - start));
	return failed ? 1 : 0;
}
