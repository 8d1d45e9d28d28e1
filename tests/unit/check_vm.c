/* check_vm.c - the VM: Python semantics of the operators, calls and their
 * binding errors, closures, the recursion limit, slicing, builtins,
 * tracebacks, and the frame API that the tracer will use. Programs go
 * through compile_source(). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler.h"
#include "prelude.h"
#include "vm.h"

static struct vm *vm;
static struct source *src;
static struct code *code;

static void setup(void)
{
	vm = prelude_vm_new();
	src = NULL;
	code = NULL;
}

static void release_program(void)
{
	if (code)
		val_decref(val_obj(VAL_CODE, code));
	code = NULL;
	source_free(src);
	src = NULL;
}

static void teardown(void)
{
	vm_free(vm);
	vm = NULL;
	release_program();
}

/* Compiles and runs text in the fixture's VM; 0 or -1 (error pending). */
static int run(const char *text)
{
	release_program();
	src = source_from_string("prog.tj", text, strlen(text));
	ck_assert_ptr_nonnull(src);
	struct src_loc loc;
	char *msg = NULL;
	code = compile_source(src, &loc, &msg);
	ck_assert_msg(code != NULL, "compile error at %d:%d: %s\n%s", loc.line, loc.col, msg, text);
	free(msg);
	value r = vm_run_module(vm, code);
	return val_is_err(r) ? -1 : 0;
}

static char *repr_of(value v)
{
	struct strbuf sb = STRBUF_INIT;
	val_repr(v, &sb);
	return sb_detach(&sb);
}

/* the repr of global name after running text */
static char *global_repr(const char *text, const char *name)
{
	int rc = run(text);
	ck_assert_msg(rc == 0, "%s: unexpected error: %s", text, vm_error_message(vm));
	value v = vm_get_global(vm, name);
	ck_assert_msg(!val_is_err(v), "%s is not set", name);
	return repr_of(v);
}

struct expr_case {
	const char *expr, *repr;
};

static void check_exprs(const struct expr_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct strbuf prog = STRBUF_INIT;
		sb_printf(&prog, "r = %s\n", cases[i].expr);
		char *got = global_repr(prog.buf, "r");
		ck_assert_msg(strcmp(got, cases[i].repr) == 0, "%s: got %s, want %s", cases[i].expr, got,
			      cases[i].repr);
		free(got);
		sb_release(&prog);
	}
}

struct error_case {
	const char *prog, *message;
	int line;
};

static void check_errors(const struct error_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(run(cases[i].prog) < 0, "%s: no error", cases[i].prog);
		const char *msg = vm_error_message(vm);
		ck_assert_msg(msg && strcmp(msg, cases[i].message) == 0, "%s: got '%s', want '%s'", cases[i].prog, msg,
			      cases[i].message);
		if (cases[i].line) {
			const struct source *s;
			struct src_loc loc;
			ck_assert(vm_error_location(vm, &s, &loc));
			ck_assert_msg(loc.line == cases[i].line, "%s: line %d, want %d", cases[i].prog, loc.line,
				      cases[i].line);
		}
		vm_error_clear(vm);
	}
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

START_TEST(test_arithmetic)
{
	static const struct expr_case cases[] = {
		{"1 + 2 * 3", "7"},
		{"7 // 2", "3"},
		{"-7 // 2", "-4"},
		{"7 // -2", "-4"},
		{"-7 % 2", "1"},
		{"7 % -2", "-1"},
		{"7.5 % -2", "-0.5"},
		{"-7.5 // 2", "-4.0"},
		{"10 / 4", "2.5"},
		{"10 / 5", "2.0"},
		{"2 ** 10", "1024"},
		{"2 ** -1", "0.5"},
		{"2 ** 0.5", "1.4142135623730951"},
		{"(-2) ** 3", "-8"},
		{"True + True", "2"},
		{"True * 2.5", "2.5"},
		{"-True", "-1"},
		{"0.1 + 0.2", "0.30000000000000004"},
		{"1e16", "1e+16"},
		{"1 / 3", "0.3333333333333333"},
		{"1e300 * 1e10", "inf"},
		{"9223372036854775807", "9223372036854775807"},
		{"-9223372036854775807 - 1", "-9223372036854775808"},
		{"3 - 5", "-2"},
		{"not 0", "True"},
		{"1 and 2", "2"},
		{"0 or 'x'", "'x'"},
		{"None or 0", "0"},
		{"1 if 0 else 2", "2"},
		{"+4", "4"},
		{"1 + 0.5", "1.5"},
		{"2.5 - 1", "1.5"},
		{"3 / 2.0", "1.5"},
		{"2 * 0.25", "0.5"},
		{"[1 + 0.5, 2 * 2.5, 7 // 2.0]", "[1.5, 5.0, 3.0]"},
	};
	check_exprs(cases, N(cases));
	/* the same inside a function, where results go straight to locals */
	char *got = global_repr("def f(a, b):\n"
				"    c = a + b\n"
				"    d = a * b\n"
				"    e = a / b\n"
				"    g = a - b\n"
				"    return [c, d, e, g, a + b, a // b, a % b]\n"
				"r = [f(3, 2), f(3, 0.5), f(0.5, 2), f(-7, 2)]\n",
				"r");
	ck_assert_str_eq(got, "[[5, 6, 1.5, 1, 5, 1, 1], [3.5, 1.5, 6.0, 2.5, 3.5, 6.0, 0.0], "
			      "[2.5, 1.0, 0.25, -1.5, 2.5, 0.0, 0.5], [-5, -14, -3.5, -9, -5, -4, 1]]");
	free(got);
}
END_TEST

START_TEST(test_comparisons)
{
	static const struct expr_case cases[] = {
		{"1 == 1.0", "True"},
		{"1 == True", "True"},
		{"1 < 2 < 3", "True"},
		{"3 > 2 > 2", "False"},
		{"'a' < 'b'", "True"},
		{"'ab' < 'b'", "True"},
		{"[1, 2] < [1, 3]", "True"},
		{"(1, 2) < (1, 2, 3)", "True"},
		{"[1, [2]] == [1, [2.0]]", "True"},
		{"[1] == (1,)", "False"},
		{"1 == 'a'", "False"},
		{"1 != 'a'", "True"},
		{"None is None", "True"},
		{"1 is not None", "True"},
		{"2 in [1, 2]", "True"},
		{"3 not in (1, 2)", "True"},
		{"'ab' in 'xaby'", "True"},
		{"4 in range(0, 10, 2)", "True"},
		{"5 in range(0, 10, 2)", "False"},
		{"0.5 < 1", "True"},
		{"9007199254740993 == 9007199254740992.0", "False"},
	};
	check_exprs(cases, N(cases));
}
END_TEST

START_TEST(test_sequences)
{
	static const struct expr_case cases[] = {
		{"[1, 2] + [3]", "[1, 2, 3]"},
		{"(1,) * 3", "(1, 1, 1)"},
		{"3 * 'ab'", "'ababab'"},
		{"[0] * -1", "[]"},
		{"'x' + 'y'", "'xy'"},
		{"'abcdef'[1:4]", "'bcd'"},
		{"'abcdef'[::-1]", "'fedcba'"},
		{"'abcdef'[-2:]", "'ef'"},
		{"'abc'[-10:10]", "'abc'"},
		{"[1, 2, 3, 4][::2]", "[1, 3]"},
		{"[1, 2, 3][::-2]", "[3, 1]"},
		{"[1, 2, 3, 4, 5][-1:-4:-2]", "[5, 3]"},
		{"(1, 2, 3)[-1]", "3"},
		{"(1, 2, 3)[1:]", "(2, 3)"},
		{"range(10)[::-2]", "range(9, -1, -2)"},
		{"range(0, 10, 3)[1:]", "range(3, 12, 3)"},
		{"range(5)[-1]", "4"},
		{"'h\xc3\xa9llo'[1]", "'\xc3\xa9'"},
		{"len('h\xc3\xa9llo')", "5"},
		{"'h\xc3\xa9llo'[::-1]", "'oll\xc3\xa9h'"},
		{"[[]]", "[[]]"},
		{"((),)", "((),)"},
	};
	check_exprs(cases, N(cases));
	char *got = global_repr("xs = [1, 2, 3]\nxs[0] = 10\nxs[-1] = 30\nxs[1:2] = [7, 8]\n", "xs");
	ck_assert_str_eq(got, "[10, 7, 8, 30]");
	free(got);
	got = global_repr("a, b = 1, 2\na, b = b, a\nr = (a, b)\n", "r");
	ck_assert_str_eq(got, "(2, 1)");
	free(got);
	got = global_repr("a, b, c = 'xyz'\nr = [c, b, a]\n", "r");
	ck_assert_str_eq(got, "['z', 'y', 'x']");
	free(got);
}
END_TEST

START_TEST(test_runtime_errors)
{
	static const struct error_case cases[] = {
		{"x = 1\nprint(1 / 0)", "division by zero", 2},
		{"print(1.0 / 0)", "float division by zero", 1},
		{"print(1 // 0)", "integer division or modulo by zero", 1},
		{"print(1 % 0)", "integer modulo by zero", 1},
		{"print(1.0 // 0.0)", "float floor division by zero", 1},
		{"print(0 ** -1)", "0.0 cannot be raised to a negative power", 1},
		{"print(9223372036854775807 + 1)", "integer overflow", 1},
		{"print(3037000500 * 3037000500)", "integer overflow", 1},
		{"print(2 ** 64)", "integer overflow", 1},
		{"print(1 + 'a')", "unsupported operand type(s) for +: 'int' and 'str'", 1},
		{"print('a' + 1)", "can only concatenate str (not \"int\") to str", 1},
		{"print(-'a')", "bad operand type for unary -: 'str'", 1},
		{"print(1 < 'a')", "'<' not supported between instances of 'int' and 'str'", 1},
		{"x = 1\nx()", "'int' object is not callable", 2},
		{"x = 1\nx[0]", "'int' object is not subscriptable", 2},
		{"print([1][5])", "list index out of range", 1},
		{"print((1,)[5])", "tuple index out of range", 1},
		{"print('a'[5])", "string index out of range", 1},
		{"print([1]['x'])", "list indices must be integers or slices, not str", 1},
		{"print([1, 2][1:2:0])", "slice step cannot be zero", 1},
		{"print(y)", "name 'y' is not defined", 1},
		{"def f():\n    print(z)\n    z = 1\nf()",
		 "cannot access local variable 'z' where it is not associated with a value", 2},
		{"a, b = [1, 2, 3]", "too many values to unpack (expected 2)", 1},
		{"a, b, c = [1, 2]", "not enough values to unpack (expected 3, got 2)", 1},
		{"a, b = 1", "cannot unpack non-iterable int object", 1},
		{"t = (1, 2)\nt[0] = 1", "'tuple' object does not support item assignment", 2},
		{"t = ones(2)\nt[0] = 1", "'Tensor' object does not support item assignment", 2},
		{"x = 1\nx.foo", "'int' object has no attribute 'foo'", 2},
		{"for x in 1:\n    pass", "'int' object is not iterable", 1},
		{"print('a' in 1)", "argument of type 'int' is not iterable", 1},
		{"print(len(1))", "object of type 'int' has no len()", 1},
		{"print(int('x'))", "invalid literal for int() with base 10: 'x'", 1},
		{"print([].pop())", "pop from empty list", 1},
		{"print(min([]))", "min() arg is an empty sequence", 1},
		{"if ones(2):\n    pass", "Boolean value of Tensor with more than one value is ambiguous", 1},
	};
	check_errors(cases, N(cases));
}
END_TEST

/* exit(n): an error that unwinds the program, with its status kept */
START_TEST(test_exit)
{
	ck_assert_int_eq(vm_exit_status(vm), -1);
	ck_assert_int_eq(run("x = 1\n"), 0);
	ck_assert_int_eq(vm_exit_status(vm), -1);
	ck_assert_int_eq(run("def f(n):\n    exit(n)\n    return 1\nx = 2\nf(7)\nx = 3\n"), -1);
	ck_assert_int_eq(vm_exit_status(vm), 7);
	char *x = repr_of(vm_get_global(vm, "x"));
	ck_assert_str_eq(x, "2");
	free(x);
	vm_error_clear(vm);
	ck_assert_int_eq(run("exit()\n"), -1);
	ck_assert_int_eq(vm_exit_status(vm), 0);
	vm_error_clear(vm);
}
END_TEST

START_TEST(test_calls)
{
	char *got = global_repr("def add(a, b=10):\n    return a + b\n"
				"r = [add(1), add(1, 2), add(b=3, a=4), add(5, b=6)]\n",
				"r");
	ck_assert_str_eq(got, "[11, 3, 7, 11]");
	free(got);
	static const struct error_case cases[] = {
		{"def f(a, b):\n    pass\nf(1)", "f() missing 1 required positional argument: 'b'", 3},
		{"def f(a, b):\n    pass\nf()", "f() missing 2 required positional arguments: 'a' and 'b'", 3},
		{"def f(a, b, c):\n    pass\nf()", "f() missing 3 required positional arguments: 'a', 'b', and 'c'", 3},
		{"def f(a, b):\n    pass\nf(1, 2, 3)", "f() takes 2 positional arguments but 3 were given", 3},
		{"def f(a):\n    pass\nf(1, 2)", "f() takes 1 positional argument but 2 were given", 3},
		{"def f():\n    pass\nf(1)", "f() takes 0 positional arguments but 1 was given", 3},
		{"def f(a, b=1):\n    pass\nf(1, 2, 3)", "f() takes from 1 to 2 positional arguments but 3 were given", 3},
		{"def f(a, b):\n    pass\nf(1, 2, c=3)", "f() got an unexpected keyword argument 'c'", 3},
		{"def f(a, b):\n    pass\nf(1, a=3)", "f() got multiple values for argument 'a'", 3},
		{"print(1, foo=2)", "'foo' is an invalid keyword argument for print()", 1},
		{"print(len())", "len() takes exactly one argument (0 given)", 1},
	};
	check_errors(cases, N(cases));
	/* bound methods, types and builtins as values */
	got = global_repr("xs = []\nap = xs.append\nap(1)\nap(2)\nr = (xs, int('7'), float(2), str(1.5), bool([]), "
			  "list('ab'), tuple([1]))\n",
			  "r");
	ck_assert_str_eq(got, "([1, 2], 7, 2.0, '1.5', False, ['a', 'b'], (1,))");
	free(got);
}
END_TEST

START_TEST(test_closures)
{
	char *got = global_repr("def outer(x):\n"
				"    def inner(y):\n"
				"        return x + y\n"
				"    return inner\n"
				"add5 = outer(5)\n"
				"add7 = outer(7)\n"
				"r = (add5(1), add7(1), add5(10))\n",
				"r");
	ck_assert_str_eq(got, "(6, 8, 15)");
	free(got);
	/* a cell assigned after the inner function is made */
	got = global_repr("def f():\n"
			  "    n = 1\n"
			  "    def g():\n"
			  "        return n * 10\n"
			  "    n = 4\n"
			  "    return g\n"
			  "r = f()()\n",
			  "r");
	ck_assert_str_eq(got, "40");
	free(got);
	/* three levels */
	got = global_repr("def a(x):\n"
			  "    def b(y):\n"
			  "        def c(z):\n"
			  "            return x + y + z\n"
			  "        return c\n"
			  "    return b\n"
			  "r = a(1)(2)(3)\n",
			  "r");
	ck_assert_str_eq(got, "6");
	free(got);
	/* a recursive inner function: a cycle through its cell, freed by
	 * func_collect_cycles at vm_free (ASan builds would report a leak) */
	got = global_repr("def outer(k):\n"
			  "    def rec(n):\n"
			  "        if n == 0:\n"
			  "            return k\n"
			  "        return rec(n - 1)\n"
			  "    return rec\n"
			  "r = outer(5)(3)\n",
			  "r");
	ck_assert_str_eq(got, "5");
	free(got);
	static const struct error_case cases[] = {
		{"def f():\n    def g():\n        return q\n    g()\n    q = 1\nf()",
		 "cannot access free variable 'q' where it is not associated with a value in enclosing scope", 3},
	};
	check_errors(cases, N(cases));
}
END_TEST

START_TEST(test_recursion)
{
	char *got = global_repr("def fib(n):\n"
				"    if n < 2:\n"
				"        return n\n"
				"    return fib(n - 1) + fib(n - 2)\n"
				"def depth(n):\n"
				"    if n == 0:\n"
				"        return 0\n"
				"    return 1 + depth(n - 1)\n"
				"r = (fib(20), depth(900))\n",
				"r");
	ck_assert_str_eq(got, "(6765, 900)");
	free(got);
	ck_assert_int_lt(run("def f(n):\n    return f(n + 1)\nf(0)\n"), 0);
	ck_assert_str_eq(vm_error_message(vm), "maximum recursion depth exceeded");
	ck_assert_int_eq(vm_frame_count(vm), 0);
	FILE *out = tmpfile();
	vm_print_traceback(vm, out);
	rewind(out);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, out);
	buf[n] = '\0';
	fclose(out);
	ck_assert_msg(strstr(buf, "  [Previous line repeated 996 more times]\n") != NULL, "%s", buf);
	vm_error_clear(vm);
}
END_TEST

START_TEST(test_traceback)
{
	ck_assert_int_lt(run("def inner(x):\n"
			     "    return x / 0\n"
			     "\n"
			     "def outer(y):\n"
			     "    z = inner(y) + 1\n"
			     "    return z\n"
			     "\n"
			     "outer(3)\n"),
			 0);
	FILE *out = tmpfile();
	vm_print_traceback(vm, out);
	rewind(out);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, out);
	buf[n] = '\0';
	fclose(out);
	ck_assert_str_eq(buf, "Traceback (most recent call last):\n"
			      "  File \"prog.tj\", line 8, in <module>\n"
			      "    outer(3)\n"
			      "  File \"prog.tj\", line 5, in outer\n"
			      "    z = inner(y) + 1\n"
			      "  File \"prog.tj\", line 2, in inner\n"
			      "    return x / 0\n"
			      "prog.tj:2:12: error: division by zero\n"
			      "    return x / 0\n"
			      "           ^\n");
	vm_error_clear(vm);
}
END_TEST

START_TEST(test_loops_and_builtins)
{
	static const struct expr_case cases[] = {
		{"list(enumerate('ab', 1))", "[(1, 'a'), (2, 'b')]"},
		{"list(zip([1, 2, 3], 'ab'))", "[(1, 'a'), (2, 'b')]"},
		{"(round(2.5), round(3.5), round(-0.5), round(2.675, 2), round(1234, -2), round(1.5, 0))",
		 "(2, 4, 0, 2.67, 1200, 2.0)"},
		{"(min(3, 1, 2), max([4, 9, 2]), sum([1, 2, 3]), abs(-3), abs(-2.5))", "(1, 9, 6, 3, 2.5)"},
		{"(isinstance(True, int), isinstance(1.0, (int, str)), type(1), type(None))",
		 "(True, False, <class 'int'>, <class 'NoneType'>)"},
		{"(int(3.9), int(-3.9), int(' 12 '), float('1.5'), float('-inf'), bool(0))",
		 "(3, -3, 12, 1.5, -inf, False)"},
		{"(' '.join(['a', 'b']), 'a,b,c'.split(','), ' x '.strip(), 'Hi'.upper(), 'Hi'.lower())",
		 "('a b', ['a', 'b', 'c'], 'x', 'HI', 'hi')"},
		{"('hello'.startswith('he'), 'hello'.endswith('lo'), 'hello'.replace('l', 'L'))",
		 "(True, True, 'heLLo')"},
		{"(range(3), list(range(5, 0, -2)), repr('a'), str(None))", "(range(0, 3), [5, 3, 1], \"'a'\", 'None')"},
		{"(float32, float64, int64, bool, print, len)",
		 "(float32, float64, int64, <class 'bool'>, <built-in function print>, <built-in function len>)"},
		{"sorted([3, 1, 2], reverse=True)", "[3, 2, 1]"},
		{"max([1, 5, 3], key=None)", "5"},
		{"max(['bb', 'a', 'ccc'], key=len)", "'ccc'"},
		{"__name__", "'__main__'"},
	};
	check_exprs(cases, N(cases));
	char *got = global_repr("s = 0\n"
				"for i in range(10):\n"
				"    if i == 3:\n"
				"        continue\n"
				"    if i == 8:\n"
				"        break\n"
				"    s += i\n"
				"w = 0\n"
				"while w < 5:\n"
				"    w = w + 1\n"
				"r = (s, w)\n",
				"r");
	ck_assert_str_eq(got, "(25, 5)");
	free(got);
	got = global_repr("xs = [3, 1, 2]\nxs.append(4)\np = xs.pop()\nxs.insert(0, 9)\nxs.extend((5, 6))\n"
			  "xs.reverse()\nr = (xs, p, xs.index(1), xs.count(2))\n",
			  "r");
	ck_assert_str_eq(got, "([6, 5, 2, 1, 3, 9], 4, 3, 1)");
	free(got);
}
END_TEST

START_TEST(test_tensors)
{
	static const struct expr_case cases[] = {
		{"tensor([1.0, 2.0]) + 1", "tensor([2.0000, 3.0000])"},
		{"-tensor([1.0, -2.0])", "tensor([-1.0000, 2.0000])"},
		{"tensor([1.0, 2.0]) @ tensor([3.0, 4.0])", "tensor(11.0000)"},
		{"tensor([1.0, 2.0]) > 1", "tensor([False, True])"},
		{"tensor([[1, 2], [3, 4]])[:, 0]", "tensor([1, 3])"},
		{"ones(2, 3).shape", "(2, 3)"},
		{"(len(ones(4)), float(tensor(2.5)), int(tensor(3.7)), bool(tensor(1)))", "(4, 2.5, 3, True)"},
		{"(max(tensor([1, 5, 2])), sum(tensor([1, 2])), abs(tensor([-1])))", "(tensor(5), tensor(3), tensor([1]))"},
		{"list(tensor([1, 2]))", "[tensor(1), tensor(2)]"},
	};
	check_exprs(cases, N(cases));
	char *got = global_repr("out = []\nfor row in tensor([[1, 2], [3, 4]]):\n    out.append(row)\nr = out\n", "r");
	ck_assert_str_eq(got, "[tensor([1, 2]), tensor([3, 4])]");
	free(got);
}
END_TEST

/* ---- the API the frame evaluator and the tracer use ---- */

static int hook_calls;

static value counting_hook(struct vm *v, struct frame *f, void *ctx)
{
	(void)ctx;
	hook_calls++;
	ck_assert_ptr_eq(vm_top_frame(v), f);
	ck_assert_int_eq(f->pc, 0);
	return vm_eval_frame_default(v, f, NULL);
}

START_TEST(test_eval_frame_hook)
{
	ck_assert_int_eq(run("def f(a, b=2):\n    return a * b\n"), 0);
	value f = vm_get_global(vm, "f");
	ck_assert_int_eq(f.tag, VAL_FUNC);
	hook_calls = 0;
	vm_set_eval_frame(vm, counting_hook, NULL);
	/* from C, with a keyword */
	value args[2] = {val_int(21), val_int(3)};
	value kw = str_from_cstr("b");
	value kwnames = tuple_pack(1, &kw);
	value r = vm_call(vm, f, args, 2, kwnames);
	ck_assert_int_eq(r.tag, VAL_INT);
	ck_assert_int_eq(r.i, 63);
	ck_assert_int_eq(hook_calls, 1);
	val_decref(kwnames);
	val_decref(kw);
	/* from bytecode: every user call goes through the hook */
	ck_assert_int_eq(run("def g(n):\n    if n == 0:\n        return 0\n    return g(n - 1)\nr = g(5)\n"), 0);
	ck_assert_int_eq(hook_calls, 7);
	/* with a hook every call nests on the C stack: the recursion limit
	 * still stops it cleanly */
	ck_assert_int_eq(run("def d(n):\n    if n == 0:\n        return 0\n    return 1 + d(n - 1)\nr = d(990)\n"), 0);
	ck_assert_int_lt(run("def inf(n):\n    return inf(n + 1)\ninf(0)\n"), 0);
	ck_assert_str_eq(vm_error_message(vm), "maximum recursion depth exceeded");
	vm_error_clear(vm);
	vm_set_eval_frame(vm, NULL, NULL);
	/* a binding error from C leaves no frame behind */
	r = vm_call(vm, f, NULL, 0, val_none());
	ck_assert(val_is_err(r));
	char *msg = tj_error_take();
	ck_assert_str_eq(msg, "f() missing 1 required positional argument: 'a'");
	free(msg);
	ck_assert_int_eq(vm_frame_count(vm), 0);
}
END_TEST

START_TEST(test_run_frame_at_pc)
{
	/* f's code: find the BINARY_OP, then resume there with a stack we build */
	ck_assert_int_eq(run("def f(a, b):\n    c = 100\n    return a - b + c\n"), 0);
	value fv = vm_get_global(vm, "f");
	struct func *fn = val_func(fv);
	struct code *c = fn->code;
	int pc = -1;
	for (int i = 0; i < c->ninsns; i++) {
		if (INSN_OP(c->insns[i]) == OP_BINARY_OP && INSN_A(c->insns[i]) == VB_SUB) {
			pc = i;
			break;
		}
	}
	ck_assert_int_ge(pc, 0);
	struct frame *f = vm_push_frame(vm, c, fn);
	ck_assert_ptr_nonnull(f);
	f->locals[2] = val_int(1000); /* c */
	*f->sp++ = val_int(50);       /* a */
	*f->sp++ = val_int(8);        /* b */
	f->pc = (uint32_t)pc;
	value r = vm_run_frame(vm, f);
	ck_assert_int_eq(r.tag, VAL_INT);
	ck_assert_int_eq(r.i, 1042);
	ck_assert_int_eq(vm_frame_count(vm), 0);
	/* an error in a resumed frame unwinds it */
	f = vm_push_frame(vm, c, fn);
	*f->sp++ = val_int(1);
	value s = str_from_cstr("x");
	*f->sp++ = s;
	f->pc = (uint32_t)pc;
	r = vm_run_frame(vm, f);
	ck_assert(val_is_err(r));
	ck_assert_str_eq(vm_error_message(vm), "unsupported operand type(s) for -: 'int' and 'str'");
	ck_assert_int_eq(vm_frame_count(vm), 0);
	vm_error_clear(vm);
}
END_TEST

START_TEST(test_step)
{
	ck_assert_int_eq(run("def g(x):\n    return x * 10\n"
			     "def f(a):\n    b = a + 1\n    c = g(b)\n    return c + 2\n"),
			 0);
	value fv = vm_get_global(vm, "f");
	value arg = val_int(4);
	struct frame *f = vm_push_call_frame(vm, val_func(fv), &arg, 1, val_none());
	ck_assert_ptr_nonnull(f);
	struct code *c = f->code;
	value r = val_none();
	int steps = 0, rc;
	uint32_t last_pc = 0;
	while ((rc = vm_step(vm, f, &r)) == 0) {
		/* one instruction at a time: straight-line code advances by one */
		ck_assert_uint_eq(f->pc, last_pc + 1);
		last_pc = f->pc;
		ck_assert_ptr_eq(vm_top_frame(vm), f);
		steps++;
	}
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(r.tag, VAL_INT);
	ck_assert_int_eq(r.i, 52);
	ck_assert_int_eq(steps + 1, c->ninsns);
	ck_assert_int_eq(vm_frame_count(vm), 0);
	/* an error while stepping pops the frame */
	value s = str_from_cstr("x");
	f = vm_push_call_frame(vm, val_func(fv), &s, 1, val_none());
	val_decref(s);
	while ((rc = vm_step(vm, f, &r)) == 0)
		;
	ck_assert_int_eq(rc, -1);
	ck_assert_str_eq(vm_error_message(vm), "can only concatenate str (not \"int\") to str");
	ck_assert_int_eq(vm_frame_count(vm), 0);
	vm_error_clear(vm);
}
END_TEST

/* a builtin that calls back into the VM: errors inside keep their frames */
static value call_twice(struct vm *v, const value *args, int nargs, value kwnames)
{
	(void)kwnames;
	ck_assert_int_eq(nargs, 2);
	value a = vm_call(v, args[0], &args[1], 1, val_none());
	if (val_is_err(a))
		return a;
	value b = vm_call(v, args[0], &a, 1, val_none());
	val_decref(a);
	return b;
}

START_TEST(test_reentrant_builtin)
{
	value b = builtin_new("call_twice", call_twice);
	vm_set_builtin(vm, "call_twice", b);
	val_decref(b);
	char *got = global_repr("def inc(x):\n    return x + 1\nr = call_twice(inc, 1)\n", "r");
	ck_assert_str_eq(got, "3");
	free(got);
	ck_assert_int_lt(run("def bad(x):\n    return x / 0\n\ncall_twice(bad, 1)\n"), 0);
	ck_assert_str_eq(vm_error_message(vm), "division by zero");
	const struct source *s;
	struct src_loc loc;
	ck_assert(vm_error_location(vm, &s, &loc));
	ck_assert_int_eq(loc.line, 2);
	vm_error_clear(vm);
}
END_TEST

/* vm_new gives the language's names only; each layer above adds its own
 * (prelude_install), so the fixture's VM has them all */
START_TEST(test_layers_install_their_names)
{
	struct vm *full = vm;
	vm = vm_new();
	char *got = global_repr("r = (len([1, 2]), float32, int('3'))\n", "r");
	ck_assert_str_eq(got, "(2, float32, 3)");
	free(got);
	ck_assert_int_lt(run("zeros(2)\n"), 0);
	ck_assert_str_eq(vm_error_message(vm), "name 'zeros' is not defined");
	vm_error_clear(vm);
	ck_assert_int_lt(run("compile\n"), 0);
	ck_assert_str_eq(vm_error_message(vm), "name 'compile' is not defined");
	vm_error_clear(vm);
	prelude_install(vm);
	got = global_repr("r = (zeros(2), type(compile))\n", "r");
	ck_assert_str_eq(got, "(tensor([0.0000, 0.0000]), <class 'builtin_function_or_method'>)");
	free(got);
	vm_free(vm);
	vm = full;
	ck_assert(!val_is_err(vm_get_global(vm, "__name__")));
	ck_assert_int_eq(run("r = zeros(1)\ncompile\n"), 0);
}
END_TEST

static Suite *vm_suite(void)
{
	Suite *s = suite_create("vm");
	TCase *tc = tcase_create("semantics");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_arithmetic);
	tcase_add_test(tc, test_comparisons);
	tcase_add_test(tc, test_sequences);
	tcase_add_test(tc, test_runtime_errors);
	tcase_add_test(tc, test_calls);
	tcase_add_test(tc, test_closures);
	tcase_add_test(tc, test_recursion);
	tcase_add_test(tc, test_traceback);
	tcase_add_test(tc, test_loops_and_builtins);
	tcase_add_test(tc, test_tensors);
	suite_add_tcase(s, tc);
	tc = tcase_create("api");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_eval_frame_hook);
	tcase_add_test(tc, test_run_frame_at_pc);
	tcase_add_test(tc, test_step);
	tcase_add_test(tc, test_exit);
	tcase_add_test(tc, test_reentrant_builtin);
	tcase_add_test(tc, test_layers_install_their_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vm_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
