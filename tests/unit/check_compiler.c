/* check_compiler.c - bytecode of small functions (disassembly), scopes
 * and frame layout, locations, and the compile-time errors. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"
#include "compiler.h"
#include "error.h"

static struct source *src_of(const char *text)
{
	struct source *src = source_from_string("t.tj", text, strlen(text));
	ck_assert_ptr_nonnull(src);
	return src;
}

/* The disassembly of text's module and its functions, or "error
 * line:col: message". */
static char *dis(const char *text)
{
	struct source *src = src_of(text);
	struct src_loc loc;
	char *msg = NULL;
	struct code *c = compile_source(src, &loc, &msg);
	struct strbuf out = STRBUF_INIT;
	if (c) {
		code_disassemble(c, &out);
		code_free(c);
	} else {
		ck_assert_ptr_nonnull(msg);
		sb_printf(&out, "error %d:%d: %s", loc.line, loc.col, msg);
		free(msg);
	}
	source_free(src);
	return sb_detach(&out);
}

/* Compiles text, which must compile; the caller frees the code and src. */
static struct code *compile_ok(const char *text, struct source **srcp)
{
	*srcp = src_of(text);
	struct src_loc loc;
	char *msg = NULL;
	struct code *c = compile_source(*srcp, &loc, &msg);
	ck_assert_msg(c != NULL, "%d:%d: %s", loc.line, loc.col, msg ? msg : "?");
	return c;
}

/* The first inner code object of c (a function defined in it). */
static struct code *inner_code(const struct code *c, int nth)
{
	for (int i = 0; i < c->nconsts; i++)
		if (c->consts[i].tag == VAL_CODE && nth-- == 0)
			return val_code(c->consts[i]);
	ck_abort_msg("no inner code object");
	return NULL;
}

#define ck_dis(text, expected)                      \
	do {                                        \
		char *got_ = dis(text);             \
		ck_assert_str_eq(got_, expected);   \
		free(got_);                         \
	} while (0)

#define ck_compile_error(text, expected)                    \
	do {                                                \
		char *got_ = dis(text);                     \
		ck_assert_str_eq(got_, "error " expected);  \
		free(got_);                                 \
	} while (0)

/* ---- disassembly ---- */

START_TEST(test_dis_function)
{
	ck_dis("def f(a, b=2):\n    return a + b * 2\n",
	       "code <module> at t.tj:1, params 0, stack 2\n"
	       "     0     1:12   LOAD_CONST             0  (2)\n"
	       "     1     1:1    BUILD_TUPLE            1\n"
	       "     2     1:1    LOAD_CONST             1  (<code f>)\n"
	       "     3     1:1    MAKE_FUNCTION          1  (defaults)\n"
	       "     4     1:1    STORE_GLOBAL           0  (f)\n"
	       "     5     1:1    LOAD_CONST             2  (None)\n"
	       "     6     1:1    RETURN_VALUE\n"
	       "\n"
	       "code f at t.tj:1, params 2, locals [a, b], stack 3\n"
	       "     0     2:12   LOAD_FAST              0  (a)\n"
	       "     1     2:16   LOAD_FAST              1  (b)\n"
	       "     2     2:20   LOAD_CONST             0  (2)\n"
	       "     3     2:16   BINARY_OP              2  (*)\n"
	       "     4     2:12   BINARY_OP              0  (+)\n"
	       "     5     2:5    RETURN_VALUE\n");
}
END_TEST

START_TEST(test_dis_loops)
{
	ck_dis("def f(xs):\n"
	       "    for x in xs:\n"
	       "        if x < 0:\n"
	       "            break\n"
	       "        if x == 0:\n"
	       "            continue\n"
	       "        xs[0] += x\n"
	       "    return 0 < x <= 10\n",
	       "code <module> at t.tj:1, params 0, stack 1\n"
	       "     0     1:1    LOAD_CONST             0  (<code f>)\n"
	       "     1     1:1    MAKE_FUNCTION          0\n"
	       "     2     1:1    STORE_GLOBAL           0  (f)\n"
	       "     3     1:1    LOAD_CONST             1  (None)\n"
	       "     4     1:1    RETURN_VALUE\n"
	       "\n"
	       "code f at t.tj:1, params 1, locals [xs, x], stack 5\n"
	       "     0     2:14   LOAD_FAST              0  (xs)\n"
	       "     1     2:14   GET_ITER\n"
	       "     2     2:5    FOR_ITER              24  (to 24)\n"
	       "     3     2:5    STORE_FAST             1  (x)\n"
	       "     4     3:12   LOAD_FAST              1  (x)\n"
	       "     5     3:16   LOAD_CONST             0  (0)\n"
	       "     6     3:12   COMPARE_OP             0  (<)\n"
	       "     7     3:12   POP_JUMP_IF_FALSE     10  (to 10)\n"
	       "     8     4:13   POP_TOP\n"
	       "     9     4:13   JUMP                  24  (to 24)\n"
	       "    10     5:12   LOAD_FAST              1  (x)\n"
	       "    11     5:17   LOAD_CONST             0  (0)\n"
	       "    12     5:12   COMPARE_OP             4  (==)\n"
	       "    13     5:12   POP_JUMP_IF_FALSE     15  (to 15)\n"
	       "    14     6:13   JUMP                   2  (to 2)\n"
	       "    15     7:9    LOAD_FAST              0  (xs)\n"
	       "    16     7:12   LOAD_CONST             0  (0)\n"
	       "    17     7:9    DUP_TOP_TWO\n"
	       "    18     7:9    BINARY_SUBSCR\n"
	       "    19     7:18   LOAD_FAST              1  (x)\n"
	       "    20     7:9    BINARY_OP              0  (+)\n"
	       "    21     7:9    ROT_THREE\n"
	       "    22     7:9    STORE_SUBSCR\n"
	       "    23     2:5    JUMP                   2  (to 2)\n"
	       "    24     8:12   LOAD_CONST             0  (0)\n"
	       "    25     8:16   LOAD_FAST              1  (x)\n"
	       "    26     8:12   DUP_TOP\n"
	       "    27     8:12   ROT_THREE\n"
	       "    28     8:12   COMPARE_OP             0  (<)\n"
	       "    29     8:12   JUMP_IF_FALSE_OR_POP  33  (to 33)\n"
	       "    30     8:21   LOAD_CONST             1  (10)\n"
	       "    31     8:16   COMPARE_OP             1  (<=)\n"
	       "    32     8:12   JUMP                  35  (to 35)\n"
	       "    33     8:12   ROT_TWO\n"
	       "    34     8:12   POP_TOP\n"
	       "    35     8:5    RETURN_VALUE\n");
}
END_TEST

START_TEST(test_dis_while_else)
{
	/* break skips the else branch; -2.5 is one constant */
	ck_dis("def f(n):\n"
	       "    while n > 0:\n"
	       "        n -= 1\n"
	       "        if n is not None: break\n"
	       "    else:\n"
	       "        return -2.5\n"
	       "    return n not in (1,)\n",
	       "code <module> at t.tj:1, params 0, stack 1\n"
	       "     0     1:1    LOAD_CONST             0  (<code f>)\n"
	       "     1     1:1    MAKE_FUNCTION          0\n"
	       "     2     1:1    STORE_GLOBAL           0  (f)\n"
	       "     3     1:1    LOAD_CONST             1  (None)\n"
	       "     4     1:1    RETURN_VALUE\n"
	       "\n"
	       "code f at t.tj:1, params 1, locals [n], stack 2\n"
	       "     0     2:11   LOAD_FAST              0  (n)\n"
	       "     1     2:15   LOAD_CONST             0  (0)\n"
	       "     2     2:11   COMPARE_OP             2  (>)\n"
	       "     3     2:11   POP_JUMP_IF_FALSE     14  (to 14)\n"
	       "     4     3:9    LOAD_FAST              0  (n)\n"
	       "     5     3:14   LOAD_CONST             1  (1)\n"
	       "     6     3:9    BINARY_OP              1  (-)\n"
	       "     7     3:9    STORE_FAST             0  (n)\n"
	       "     8     4:12   LOAD_FAST              0  (n)\n"
	       "     9     4:21   LOAD_CONST             2  (None)\n"
	       "    10     4:12   COMPARE_OP             7  (is not)\n"
	       "    11     4:12   POP_JUMP_IF_FALSE     13  (to 13)\n"
	       "    12     4:27   JUMP                  16  (to 16)\n"
	       "    13     2:5    JUMP                   0  (to 0)\n"
	       "    14     6:16   LOAD_CONST             3  (-2.5)\n"
	       "    15     6:9    RETURN_VALUE\n"
	       "    16     7:12   LOAD_FAST              0  (n)\n"
	       "    17     7:22   LOAD_CONST             1  (1)\n"
	       "    18     7:21   BUILD_TUPLE            1\n"
	       "    19     7:12   COMPARE_OP             9  (not in)\n"
	       "    20     7:5    RETURN_VALUE\n");
}
END_TEST

START_TEST(test_dis_closure)
{
	ck_dis("def counter():\n"
	       "    n = 0\n"
	       "    def inc(k=1):\n"
	       "        global total\n"
	       "        total = n + k\n"
	       "        return total\n"
	       "    return inc\n",
	       "code <module> at t.tj:1, params 0, stack 1\n"
	       "     0     1:1    LOAD_CONST             0  (<code counter>)\n"
	       "     1     1:1    MAKE_FUNCTION          0\n"
	       "     2     1:1    STORE_GLOBAL           0  (counter)\n"
	       "     3     1:1    LOAD_CONST             1  (None)\n"
	       "     4     1:1    RETURN_VALUE\n"
	       "\n"
	       "code counter at t.tj:1, params 0, locals [inc], cells [n], stack 3\n"
	       "     0     2:9    LOAD_CONST             0  (0)\n"
	       "     1     2:5    STORE_DEREF            0  (n)\n"
	       "     2     3:5    LOAD_CLOSURE           0  (n)\n"
	       "     3     3:5    BUILD_TUPLE            1\n"
	       "     4     3:15   LOAD_CONST             1  (1)\n"
	       "     5     3:5    BUILD_TUPLE            1\n"
	       "     6     3:5    LOAD_CONST             2  (<code inc>)\n"
	       "     7     3:5    MAKE_FUNCTION          3  (defaults, closure)\n"
	       "     8     3:5    STORE_FAST             0  (inc)\n"
	       "     9     7:12   LOAD_FAST              0  (inc)\n"
	       "    10     7:5    RETURN_VALUE\n"
	       "\n"
	       "code inc at t.tj:3, params 1, locals [k], free [n], stack 2\n"
	       "     0     5:17   LOAD_DEREF             0  (n, free)\n"
	       "     1     5:21   LOAD_FAST              0  (k)\n"
	       "     2     5:17   BINARY_OP              0  (+)\n"
	       "     3     5:9    STORE_GLOBAL           0  (total)\n"
	       "     4     6:16   LOAD_GLOBAL            0  (total)\n"
	       "     5     6:9    RETURN_VALUE\n");
}
END_TEST

START_TEST(test_dis_expressions)
{
	ck_dis("x = a and b or not c\ny = p if q else r\nz = f(1, k=2, j=3)\nw = t.sum(dim=1)\n",
	       "code <module> at t.tj:1, params 0, stack 5\n"
	       "     0     1:5    LOAD_GLOBAL            0  (a)\n"
	       "     1     1:5    JUMP_IF_FALSE_OR_POP   3  (to 3)\n"
	       "     2     1:11   LOAD_GLOBAL            1  (b)\n"
	       "     3     1:5    JUMP_IF_TRUE_OR_POP    6  (to 6)\n"
	       "     4     1:20   LOAD_GLOBAL            2  (c)\n"
	       "     5     1:16   UNARY_NOT\n"
	       "     6     1:1    STORE_GLOBAL           3  (x)\n"
	       "     7     2:10   LOAD_GLOBAL            4  (q)\n"
	       "     8     2:10   POP_JUMP_IF_FALSE     11  (to 11)\n"
	       "     9     2:5    LOAD_GLOBAL            5  (p)\n"
	       "    10     2:5    JUMP                  12  (to 12)\n"
	       "    11     2:17   LOAD_GLOBAL            6  (r)\n"
	       "    12     2:1    STORE_GLOBAL           7  (y)\n"
	       "    13     3:5    LOAD_GLOBAL            8  (f)\n"
	       "    14     3:7    LOAD_CONST             0  (1)\n"
	       "    15     3:12   LOAD_CONST             1  (2)\n"
	       "    16     3:17   LOAD_CONST             2  (3)\n"
	       "    17     3:5    LOAD_CONST             3  (('k', 'j'))\n"
	       "    18     3:5    CALL_KW                3\n"
	       "    19     3:1    STORE_GLOBAL           9  (z)\n"
	       "    20     4:5    LOAD_GLOBAL           10  (t)\n"
	       "    21     4:5    LOAD_ATTR             11  (sum)\n"
	       "    22     4:15   LOAD_CONST             0  (1)\n"
	       "    23     4:5    LOAD_CONST             4  (('dim',))\n"
	       "    24     4:5    CALL_KW                1\n"
	       "    25     4:1    STORE_GLOBAL          12  (w)\n"
	       "    26     4:1    LOAD_CONST             5  (None)\n"
	       "    27     4:1    RETURN_VALUE\n");
}
END_TEST

START_TEST(test_dis_assignments)
{
	ck_dis("a = b = -1\nx, (y, z) = t\nxs[i] = [1, 2.5]\nq = x[1:2, ::3]\n",
	       "code <module> at t.tj:1, params 0, stack 5\n"
	       "     0     1:9    LOAD_CONST             0  (-1)\n"
	       "     1     1:1    DUP_TOP\n"
	       "     2     1:1    STORE_GLOBAL           0  (a)\n"
	       "     3     1:1    STORE_GLOBAL           1  (b)\n"
	       "     4     2:13   LOAD_GLOBAL            2  (t)\n"
	       "     5     2:1    UNPACK_SEQUENCE        2\n"
	       "     6     2:1    STORE_GLOBAL           3  (x)\n"
	       "     7     2:1    UNPACK_SEQUENCE        2\n"
	       "     8     2:1    STORE_GLOBAL           4  (y)\n"
	       "     9     2:1    STORE_GLOBAL           5  (z)\n"
	       "    10     3:10   LOAD_CONST             1  (1)\n"
	       "    11     3:13   LOAD_CONST             2  (2.5)\n"
	       "    12     3:9    BUILD_LIST             2\n"
	       "    13     3:1    LOAD_GLOBAL            6  (xs)\n"
	       "    14     3:4    LOAD_GLOBAL            7  (i)\n"
	       "    15     3:1    STORE_SUBSCR\n"
	       "    16     4:5    LOAD_GLOBAL            3  (x)\n"
	       "    17     4:7    LOAD_CONST             1  (1)\n"
	       "    18     4:9    LOAD_CONST             3  (2)\n"
	       "    19     4:7    BUILD_SLICE            2\n"
	       "    20     4:12   LOAD_CONST             4  (None)\n"
	       "    21     4:12   LOAD_CONST             4  (None)\n"
	       "    22     4:14   LOAD_CONST             5  (3)\n"
	       "    23     4:12   BUILD_SLICE            3\n"
	       "    24     4:7    BUILD_TUPLE            2\n"
	       "    25     4:5    BINARY_SUBSCR\n"
	       "    26     4:1    STORE_GLOBAL           8  (q)\n"
	       "    27     4:1    LOAD_CONST             4  (None)\n"
	       "    28     4:1    RETURN_VALUE\n");
}
END_TEST

START_TEST(test_dis_decorators)
{
	/* decorators are evaluated top to bottom and applied bottom up */
	ck_dis("@compile(backend='eager')\n@disable\ndef g(x):\n    pass\n",
	       "code <module> at t.tj:1, params 0, stack 3\n"
	       "     0     1:2    LOAD_GLOBAL            0  (compile)\n"
	       "     1     1:18   LOAD_CONST             0  ('eager')\n"
	       "     2     1:2    LOAD_CONST             1  (('backend',))\n"
	       "     3     1:2    CALL_KW                1\n"
	       "     4     2:2    LOAD_GLOBAL            1  (disable)\n"
	       "     5     3:1    LOAD_CONST             2  (<code g>)\n"
	       "     6     3:1    MAKE_FUNCTION          0\n"
	       "     7     2:2    CALL                   1\n"
	       "     8     1:2    CALL                   1\n"
	       "     9     3:1    STORE_GLOBAL           2  (g)\n"
	       "    10     3:1    LOAD_CONST             3  (None)\n"
	       "    11     3:1    RETURN_VALUE\n"
	       "\n"
	       "code g at t.tj:3, params 1, locals [x], stack 1\n"
	       "     0     4:5    LOAD_CONST             0  (None)\n"
	       "     1     4:5    RETURN_VALUE\n");
}
END_TEST

/* ---- code objects ---- */

START_TEST(test_module_fields)
{
	struct source *src;
	struct code *c = compile_ok("x = 1\ny = 'a'\nz = 1\nw = 'a'\nv = 1.0\nu = True\n", &src);
	ck_assert_str_eq(c->name, "<module>");
	ck_assert(c->is_module);
	ck_assert_ptr_eq(c->src, src);
	ck_assert_int_eq(c->firstline, 1);
	ck_assert_int_eq(c->nparams, 0);
	ck_assert_int_eq(c->nlocals, 0);
	ck_assert_int_eq(c->hdr.rc, 1);
	/* constants are shared: 1, 'a', 1.0, True, None (1 and 1.0 and True differ) */
	ck_assert_int_eq(c->nconsts, 5);
	ck_assert_int_eq(c->nnames, 6);
	ck_assert_int_eq(c->max_stack, 1);
	for (int i = 0; i < c->nnames; i++)
		ck_assert_int_eq(c->names[i].tag, VAL_STR);
	code_free(c);
	source_free(src);
}
END_TEST

START_TEST(test_scopes)
{
	struct source *src;
	struct code *m = compile_ok("def f(a, b, c=1):\n"
				    "    d = a\n"
				    "    for i, e in b:\n"
				    "        pass\n"
				    "    def g():\n"
				    "        return b + d + h\n"
				    "    return g\n",
				    &src);
	struct code *f = inner_code(m, 0);
	ck_assert_str_eq(f->name, "f");
	ck_assert(!f->is_module);
	ck_assert_int_eq(f->nparams, 3);
	/* parameters first, then the locals that are not cells */
	ck_assert_int_eq(f->nlocals, 6);
	const char *locals[] = {"a", "b", "c", "i", "e", "g"};
	for (int i = 0; i < 6; i++)
		ck_assert_str_eq(f->local_names[i], locals[i]);
	ck_assert_int_eq(f->ncellvars, 2);
	ck_assert_str_eq(f->cellvar_names[0], "b");
	ck_assert_int_eq(f->cellvar_param[0], 1);
	ck_assert_str_eq(f->cellvar_names[1], "d");
	ck_assert_int_eq(f->cellvar_param[1], -1);
	ck_assert_int_eq(f->nfreevars, 0);

	struct code *g = inner_code(f, 0);
	ck_assert_int_eq(g->firstline, 5);
	ck_assert_int_eq(g->nfreevars, 2);
	ck_assert_str_eq(g->freevar_names[0], "b");
	ck_assert_str_eq(g->freevar_names[1], "d");
	ck_assert_int_eq(g->nlocals, 0);
	/* h is global: g loads it by name */
	ck_assert_int_eq(INSN_OP(g->insns[2]), OP_BINARY_OP);
	ck_assert_int_eq(INSN_OP(g->insns[3]), OP_LOAD_GLOBAL);
	code_free(m);
	source_free(src);
}
END_TEST

START_TEST(test_free_pass_through)
{
	/* mid does not use x, but inner does: mid passes it on */
	struct source *src;
	struct code *m = compile_ok("def outer():\n"
				    "    x = 1\n"
				    "    def mid():\n"
				    "        def inner():\n"
				    "            return x\n"
				    "        return inner\n"
				    "    return mid\n",
				    &src);
	struct code *outer = inner_code(m, 0), *mid = inner_code(outer, 0), *inner = inner_code(mid, 0);
	ck_assert_int_eq(outer->ncellvars, 1);
	ck_assert_int_eq(mid->ncellvars, 0);
	ck_assert_int_eq(mid->nfreevars, 1);
	ck_assert_int_eq(inner->nfreevars, 1);
	ck_assert_int_eq(INSN_OP(mid->insns[0]), OP_LOAD_CLOSURE);
	ck_assert_int_eq(INSN_A(mid->insns[0]), 0); /* mid's free variable 0 */
	ck_assert_int_eq(INSN_OP(inner->insns[0]), OP_LOAD_DEREF);
	code_free(m);
	source_free(src);
}
END_TEST

START_TEST(test_global_declarations)
{
	struct source *src;
	struct code *m = compile_ok("def f():\n"
				    "    global n\n"
				    "    n = n + 1\n"
				    "    def g():\n"
				    "        return n\n"
				    "    return g\n",
				    &src);
	struct code *f = inner_code(m, 0), *g = inner_code(f, 0);
	ck_assert_int_eq(f->nlocals, 1); /* g only */
	ck_assert_int_eq(f->ncellvars, 0);
	ck_assert_int_eq(INSN_OP(f->insns[0]), OP_LOAD_GLOBAL);
	ck_assert_int_eq(INSN_OP(f->insns[3]), OP_STORE_GLOBAL);
	ck_assert_int_eq(g->nfreevars, 0);
	ck_assert_int_eq(INSN_OP(g->insns[0]), OP_LOAD_GLOBAL);
	code_free(m);
	source_free(src);
}
END_TEST

START_TEST(test_error_locations)
{
	/* runtime errors point at the instruction's loc: y = a + b at a */
	struct source *src;
	struct code *m = compile_ok("def f(a, b):\n    y = a + b\n    return y\n", &src);
	struct code *f = inner_code(m, 0);
	ck_assert_int_eq(INSN_OP(f->insns[2]), OP_BINARY_OP);
	ck_assert_int_eq(f->locs[2].line, 2);
	ck_assert_int_eq(f->locs[2].col, 9);
	ck_assert_int_eq(INSN_OP(f->insns[3]), OP_STORE_FAST);
	ck_assert_int_eq(f->locs[3].col, 5);
	code_free(m);
	source_free(src);
}
END_TEST

START_TEST(test_programs_compile)
{
	/* every construct together; compute_max_stack checks that the paths
	 * agree on the stack depth */
	static const char *ok[] = {
		"for i in range(3):\n    for j in range(i):\n        if j: break\n    else:\n        continue\n",
		"while a < b < c:\n    x = y if a and not b or c else -y\nelse:\n    pass\n",
		"def f(x, y=[1, (2,)], z=None):\n    global q\n    q = x[1:, None, ::-1]\n    return\n",
		"def f():\n    a, [b, c] = d = 1, (2, 3)\n    a += b\n    d[0] **= 2\n    return a, b\n",
		"x = ()\ny = (1,)\nz = f(a)(b)[c].d\nprint('%d' % 3, end='')\n",
		"def f(n):\n    if n <= 1:\n        return 1\n    elif n > 100:\n        return -1\n    return n * f(n - 1)\n",
		"",
		"# only a comment\n",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		struct source *src;
		struct code *c = compile_ok(ok[i], &src);
		code_free(c);
		source_free(src);
	}
}
END_TEST

/* ---- errors ---- */

START_TEST(test_scope_errors)
{
	ck_compile_error("return 1\n", "1:1: 'return' outside function");
	ck_compile_error("x = 1\nif x:\n    break\n", "3:5: 'break' outside loop");
	ck_compile_error("while x:\n    def f():\n        continue\n", "3:9: 'continue' not properly in loop");
	ck_compile_error("for x in y:\n    pass\nelse:\n    break\n", "4:5: 'break' outside loop");
	ck_compile_error("def f():\n    x = 1\n    global x\n",
			 "3:5: name 'x' is assigned to before global declaration");
	ck_compile_error("def f():\n    for x in y: pass\n    global x\n",
			 "3:5: name 'x' is assigned to before global declaration");
	ck_compile_error("def f():\n    print(x)\n    global x\n", "3:5: name 'x' is used prior to global declaration");
	ck_compile_error("def f(x):\n    global x\n", "2:5: name 'x' is parameter and global");
	ck_compile_error("x = 1\nglobal x\n", "2:1: name 'x' is assigned to before global declaration");
	/* syntax errors come back the same way */
	ck_compile_error("x = (1,\n", "1:5: '(' was never closed");
	ck_compile_error("if x:\n\tpass\n", "2:1: tab in indentation (use spaces)");
}
END_TEST

static Suite *compiler_suite(void)
{
	Suite *s = suite_create("compiler");
	TCase *tc = tcase_create("disassembly");
	tcase_add_test(tc, test_dis_function);
	tcase_add_test(tc, test_dis_loops);
	tcase_add_test(tc, test_dis_while_else);
	tcase_add_test(tc, test_dis_closure);
	tcase_add_test(tc, test_dis_expressions);
	tcase_add_test(tc, test_dis_assignments);
	tcase_add_test(tc, test_dis_decorators);
	suite_add_tcase(s, tc);
	tc = tcase_create("code");
	tcase_add_test(tc, test_module_fields);
	tcase_add_test(tc, test_scopes);
	tcase_add_test(tc, test_free_pass_through);
	tcase_add_test(tc, test_global_declarations);
	tcase_add_test(tc, test_error_locations);
	tcase_add_test(tc, test_programs_compile);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_scope_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(compiler_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
