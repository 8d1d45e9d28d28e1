/* check_parser.c - AST dumps of representative programs, node locations,
 * and each syntax error's message and line:col. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "error.h"
#include "parser.h"

/* The dump of text's module, or "error line:col: message". */
static char *parse(const char *text, unsigned flags)
{
	struct source *src = source_from_string("t.tj", text, strlen(text));
	ck_assert_ptr_nonnull(src);
	struct ast_arena arena;
	ast_arena_init(&arena);
	struct src_loc loc;
	char *msg = NULL;
	struct ast *m = parser_parse(src, &arena, &loc, &msg);
	struct strbuf out = STRBUF_INIT;
	if (m) {
		ast_dump(m, &out, flags);
	} else {
		ck_assert_ptr_nonnull(msg);
		sb_printf(&out, "error %d:%d: %s", loc.line, loc.col, msg);
		free(msg);
	}
	ast_arena_release(&arena);
	source_free(src);
	return sb_detach(&out);
}

/* The dump of a one-line expression statement: "(+ a b)". */
static char *parse_expr(const char *text, unsigned flags)
{
	char *dump = parse(text, flags);
	const char *prefix = flags ? "module@1:1\n  expr@1:1 " : "module\n  expr ";
	if (strncmp(dump, prefix, strlen(prefix)) != 0)
		return dump;
	char *e = strdup(dump + strlen(prefix));
	e[strcspn(e, "\n")] = '\0';
	free(dump);
	return e;
}

#define ck_expr(text, expected)                             \
	do {                                                \
		char *got_ = parse_expr(text, 0);           \
		ck_assert_str_eq(got_, expected);           \
		free(got_);                                 \
	} while (0)

#define ck_expr_locs(text, expected)                        \
	do {                                                \
		char *got_ = parse_expr(text, AST_DUMP_LOCS); \
		ck_assert_str_eq(got_, expected);           \
		free(got_);                                 \
	} while (0)

#define ck_parse(text, expected)                            \
	do {                                                \
		char *got_ = parse(text, 0);                \
		ck_assert_str_eq(got_, expected);           \
		free(got_);                                 \
	} while (0)

#define ck_error(text, expected)                            \
	do {                                                \
		char *got_ = parse(text, 0);                \
		ck_assert_str_eq(got_, "error " expected);  \
		free(got_);                                 \
	} while (0)

/* ---- expressions ---- */

START_TEST(test_arithmetic_precedence)
{
	ck_expr("a + b * c", "(+ a (* b c))");
	ck_expr("a - b - c", "(- (- a b) c)");
	ck_expr("a * b / c // d % e @ f", "(@ (% (// (/ (* a b) c) d) e) f)");
	ck_expr("(a + b) * c", "(* (+ a b) c)");
	ck_expr("-2**2", "(neg (** 2 2))");
	ck_expr("2**-1", "(** 2 (neg 1))");
	ck_expr("2**3**2", "(** 2 (** 3 2))");
	ck_expr("-a * +b", "(* (neg a) (pos b))");
	ck_expr("- - a", "(neg (neg a))");
	ck_expr("-x.y**2", "(neg (** (. x y) 2))");
}
END_TEST

START_TEST(test_logic_precedence)
{
	ck_expr("a or b and c", "(or a (and b c))");
	ck_expr("a or b or c", "(or a b c)");
	ck_expr("a and b and c or d", "(or (and a b c) d)");
	ck_expr("not a == b", "(not (cmp a == b))");
	ck_expr("not not a", "(not (not a))");
	ck_expr("not a and b", "(and (not a) b)");
	ck_expr("a < b < c", "(cmp a < b < c)");
	ck_expr("a + 1 <= b * 2", "(cmp (+ a 1) <= (* b 2))");
	ck_expr("a is not None", "(cmp a is not None)");
	ck_expr("a is b", "(cmp a is b)");
	ck_expr("a not in b in c", "(cmp a not in b in c)");
	ck_expr("a == b != c > d >= e", "(cmp a == b != c > d >= e)");
	ck_expr("(a < b) < c", "(cmp (cmp a < b) < c)");
	ck_expr("a if b else c", "(ifexp b a c)");
	ck_expr("a if b else c if d else e", "(ifexp b a (ifexp d c e))");
	ck_expr("a or b if c and d else e", "(ifexp (and c d) (or a b) e)");
}
END_TEST

START_TEST(test_postfix)
{
	ck_expr("x.y(z)[0]", "(sub (call (. x y) z) 0)");
	ck_expr("f(a, b, k=1, j=c + 1)", "(call f a b k=1 j=(+ c 1))");
	ck_expr("f()", "(call f)");
	ck_expr("f(a,)", "(call f a)");
	ck_expr("f(x)(y)", "(call (call f x) y)");
	ck_expr("x[1:3]", "(sub x (slice 1 3 _))");
	ck_expr("x[::2]", "(sub x (slice _ _ 2))");
	ck_expr("x[:]", "(sub x (slice _ _ _))");
	ck_expr("x[1:]", "(sub x (slice 1 _ _))");
	ck_expr("x[:-1]", "(sub x (slice _ (neg 1) _))");
	ck_expr("x[:, 0]", "(sub x (tuple (slice _ _ _) 0))");
	ck_expr("x[1, 2]", "(sub x (tuple 1 2))");
	ck_expr("x[0,]", "(sub x (tuple 0))");
	ck_expr("x[None]", "(sub x None)");
	ck_expr("x[i][j]", "(sub (sub x i) j)");
	ck_expr("x.T.shape[0]", "(sub (. (. x T) shape) 0)");
}
END_TEST

START_TEST(test_atoms)
{
	ck_expr("[a, b]", "(list a b)");
	ck_expr("[]", "(list)");
	ck_expr("[1, 2,]", "(list 1 2)");
	ck_expr("(a, b)", "(tuple a b)");
	ck_expr("(a,)", "(tuple a)");
	ck_expr("()", "(tuple)");
	ck_expr("(a)", "a");
	ck_expr("((a, b), [c])", "(tuple (tuple a b) (list c))");
	ck_expr("1.5", "1.5");
	ck_expr("1e-3", "0.001");
	ck_expr("'it' \"'s\"", "'it\\'s'");
	ck_expr("'a\\nb'", "'a\\nb'");
	ck_expr("None, True, False", "(tuple None True False)");
	ck_expr("f(\n  a,\n  b\n)", "(call f a b)");
}
END_TEST

START_TEST(test_locations)
{
	/* a binary operation starts at its left operand: where errors point */
	ck_expr_locs("a + b", "(+@1:1 a@1:1 b@1:5)");
	ck_expr_locs("(a + b) * c", "(*@1:1 (+@1:2 a@1:2 b@1:6) c@1:11)");
	ck_expr_locs("x.sum(dim=1)", "(call@1:1 (.@1:1 x@1:1 sum) dim@1:7=1@1:11)");
	ck_expr_locs("-x[1:2]", "(neg@1:1 (sub@1:2 x@1:2 (slice@1:4 1@1:4 2@1:6 _)))");
	ck_expr_locs("a < b < c", "(cmp@1:1 a@1:1 < b@1:5 < c@1:9)");
	char *s = parse("def f(a):\n    y = a + b\n", AST_DUMP_LOCS);
	ck_assert_str_eq(s, "module@1:1\n"
			    "  def@1:1 f (a@1:7)\n"
			    "    assign@2:5 y@2:5 = (+@2:9 a@2:9 b@2:13)\n");
	free(s);
	s = parse("@dec\n@dec2(1)\ndef f():\n    pass\n", AST_DUMP_LOCS);
	ck_assert_str_eq(s, "module@1:1\n"
			    "  @dec@1:2\n"
			    "  @(call@2:2 dec2@2:2 1@2:7)\n"
			    "  def@3:1 f ()\n"
			    "    pass@4:5\n");
	free(s);
}
END_TEST

/* ---- statements ---- */

START_TEST(test_assignments)
{
	ck_parse("x = 1\na = b = 0\na, b = b, a\n(a, [b, c]) = e\nxs[i] = v\nx = 1, 2\n",
		 "module\n"
		 "  assign x = 1\n"
		 "  assign a = b = 0\n"
		 "  assign (tuple a b) = (tuple b a)\n"
		 "  assign (tuple a (list b c)) = e\n"
		 "  assign (sub xs i) = v\n"
		 "  assign x = (tuple 1 2)\n");
	ck_parse("x += 1\nxs[i] -= 2\nx *= y\nx /= 2\nx //= 2\nx **= 2\n",
		 "module\n"
		 "  augassign x += 1\n"
		 "  augassign (sub xs i) -= 2\n"
		 "  augassign x *= y\n"
		 "  augassign x /= 2\n"
		 "  augassign x //= 2\n"
		 "  augassign x **= 2\n");
	ck_parse("f(x)\nx = 1; y = 2;\n",
		 "module\n"
		 "  expr (call f x)\n"
		 "  assign x = 1\n"
		 "  assign y = 2\n");
}
END_TEST

START_TEST(test_control_flow)
{
	ck_parse("if a:\n    x\nelif b:\n    y\nelif c:\n    z\nelse:\n    w\n",
		 "module\n"
		 "  if a\n"
		 "    expr x\n"
		 "  else\n"
		 "    if b\n"
		 "      expr y\n"
		 "    else\n"
		 "      if c\n"
		 "        expr z\n"
		 "      else\n"
		 "        expr w\n");
	ck_parse("while x < 10:\n    x += 1\n    if x: break\n    continue\nelse:\n    pass\n",
		 "module\n"
		 "  while (cmp x < 10)\n"
		 "    augassign x += 1\n"
		 "    if x\n"
		 "      break\n"
		 "    continue\n"
		 "  else\n"
		 "    pass\n");
	ck_parse("for i, x in enumerate(xs):\n    print(i, x)\nfor (a, b), c in z: pass\nfor x in 1, 2:\n  pass\n",
		 "module\n"
		 "  for (tuple i x) in (call enumerate xs)\n"
		 "    expr (call print i x)\n"
		 "  for (tuple (tuple a b) c) in z\n"
		 "    pass\n"
		 "  for x in (tuple 1 2)\n"
		 "    pass\n");
}
END_TEST

START_TEST(test_functions)
{
	ck_parse("def f(a, b=1.0, c=None,):\n"
		 "    global g, h\n"
		 "    def inner(x):\n"
		 "        return x * a\n"
		 "    return inner, b\n"
		 "def g():\n"
		 "    return\n",
		 "module\n"
		 "  def f (a b=1.0 c=None)\n"
		 "    global g h\n"
		 "    def inner (x)\n"
		 "      return (* x a)\n"
		 "    return (tuple inner b)\n"
		 "  def g ()\n"
		 "    return\n");
	ck_parse("@compile\n@compile(backend=\"eager\")\n@tj.disable\ndef f(x): return x\n",
		 "module\n"
		 "  @compile\n"
		 "  @(call compile backend='eager')\n"
		 "  @(. tj disable)\n"
		 "  def f (x)\n"
		 "    return x\n");
}
END_TEST

START_TEST(test_whole_program)
{
	ck_parse("# toy.tj\n"
		 "def toy_example(a, b):\n"
		 "    x = a / (abs(a) + 1)\n"
		 "    if b.sum() < 0:\n"
		 "        b = b * -1\n"
		 "    return x * b\n"
		 "\n"
		 "f = compile(toy_example, backend=\"inductor\")\n"
		 "for _ in range(100):\n"
		 "    f(randn(10), randn(10))\n",
		 "module\n"
		 "  def toy_example (a b)\n"
		 "    assign x = (/ a (+ (call abs a) 1))\n"
		 "    if (cmp (call (. b sum)) < 0)\n"
		 "      assign b = (* b (neg 1))\n"
		 "    return (* x b)\n"
		 "  assign f = (call compile toy_example backend='inductor')\n"
		 "  for _ in (call range 100)\n"
		 "    expr (call f (call randn 10) (call randn 10))\n");
}
END_TEST

/* ---- syntax errors: the first one, Python's words, the right token ---- */

START_TEST(test_errors_blocks)
{
	ck_error("if x\n    pass\n", "1:5: expected ':'");
	ck_error("while x\n    pass\n", "1:8: expected ':'");
	ck_error("for x in y\n    pass\n", "1:11: expected ':'");
	ck_error("def f(x) return x\n", "1:10: expected ':'");
	ck_error("if x:\n    pass\nelse\n    pass\n", "3:5: expected ':'");
	ck_error("def f:\n    pass\n", "1:6: expected '('");
	ck_error("if x:\npass\n", "2:1: expected an indented block after 'if' statement on line 1");
	ck_error("def f():\nreturn\n", "2:1: expected an indented block after function definition on line 1");
	ck_error("for x in y:\n\nz\n", "3:1: expected an indented block after 'for' statement on line 1");
	ck_error("if x:\n    y\nelse:\nz\n", "4:1: expected an indented block after 'else' statement on line 3");
	ck_error("while x:\n", "2:1: expected an indented block after 'while' statement on line 1");
	ck_error("  x = 1\n", "1:3: unexpected indent");
	ck_error("x = 1\n    y = 2\n", "2:5: unexpected indent");
	ck_error("if x:\n\tpass\n", "2:1: tab in indentation (use spaces)");
	ck_error("if x:\n        a\n    b\n", "3:5: unindent does not match any outer indentation level");
	ck_error("else:\n    pass\n", "1:1: invalid syntax");
	ck_error("@dec\nx = 1\n", "2:1: invalid syntax");
}
END_TEST

START_TEST(test_errors_expressions)
{
	ck_error("x = = 1\n", "1:5: invalid syntax");
	ck_error("x = 1 +\n", "1:8: invalid syntax");
	ck_error("if x y:\n    pass\n", "1:6: invalid syntax");
	ck_error("x = a == not b\n", "1:10: invalid syntax");
	ck_error("x = a if b\n", "1:11: expected 'else' after 'if' expression");
	ck_error("x[]\n", "1:3: invalid syntax");
	ck_error("x.1\n", "1:2: invalid syntax");
}
END_TEST

START_TEST(test_errors_brackets_and_tokens)
{
	ck_error("x = (1,\ny = 2\n", "1:5: '(' was never closed");
	ck_error("print(\"a\"\nx = 1\n", "1:6: '(' was never closed");
	ck_error("f(a\n", "1:2: '(' was never closed");
	ck_error("def f(:\n    pass\n", "1:6: '(' was never closed");
	ck_error("f(a + b c)\n", "1:3: invalid syntax. Perhaps you forgot a comma?");
	ck_error("x = [1 if 2 else 3 4]\n", "1:18: invalid syntax. Perhaps you forgot a comma?");
	ck_error("f(x 'a')\n", "1:5: invalid syntax");
	ck_error("print(1 2\nx = 1\n", "1:6: '(' was never closed");
	ck_error("x = 1)\n", "1:6: unmatched ')'");
	ck_error("x = [1, 2)\n", "1:10: closing parenthesis ')' does not match opening parenthesis '['");
	ck_error("x = 'abc\n", "1:5: unterminated string literal");
	ck_error("x = 1\ny = \xff\n", "2:5: invalid UTF-8 byte 0xff");
	ck_error("x = 99999999999999999999\n", "1:5: integer literal too large");
	ck_error("x = 1 + \\\n", "1:9: unexpected EOF while parsing");
	/* the first error wins, in the order of the text */
	ck_error("x = 1 +\ny = 'abc\n", "2:5: unterminated string literal");
	ck_error("x = (1 +\ny = 'abc\n", "2:5: unterminated string literal");
	ck_error("x ==\ny = 'abc\n", "2:5: unterminated string literal");
	ck_error("1 = 2\ny = 'abc\n", "1:1: cannot assign to literal");
}
END_TEST

START_TEST(test_errors_targets)
{
	ck_error("1 = x\n", "1:1: cannot assign to literal");
	ck_error("'a' = x\n", "1:1: cannot assign to literal");
	ck_error("f() = 1\n", "1:1: cannot assign to function call");
	ck_error("a + b = 1\n", "1:1: cannot assign to expression");
	ck_error("-a = 1\n", "1:1: cannot assign to expression");
	ck_error("a < b = 1\n", "1:1: cannot assign to comparison");
	ck_error("a if b else c = 1\n", "1:1: cannot assign to conditional expression");
	ck_error("None = 1\n", "1:1: cannot assign to None");
	ck_error("x, True = 1, 2\n", "1:4: cannot assign to True");
	ck_error("a, (b, f(c)) = e\n", "1:8: cannot assign to function call");
	ck_error("x = y = 1 = z\n", "1:9: cannot assign to literal");
	ck_error("x.y = 1\n", "1:1: cannot assign to attribute");
	ck_error("for f() in y:\n    pass\n", "1:5: cannot assign to function call");
	ck_error("(a, b) += 1\n", "1:1: 'tuple' is an illegal expression for augmented assignment");
	ck_error("[a] += 1\n", "1:1: 'list' is an illegal expression for augmented assignment");
	ck_error("f() += 1\n", "1:1: 'function call' is an illegal expression for augmented assignment");
	ck_error("1 += 1\n", "1:1: 'literal' is an illegal expression for augmented assignment");
}
END_TEST

START_TEST(test_errors_calls_and_defs)
{
	ck_error("f(a=1, 2)\n", "1:8: positional argument follows keyword argument");
	ck_error("f(a=1, a=2)\n", "1:8: keyword argument repeated: a");
	ck_error("f(a.b=1)\n", "1:3: expression cannot contain assignment, perhaps you meant \"==\"?");
	ck_error("def f(a=1, b):\n    pass\n", "1:12: non-default argument follows default argument");
	ck_error("def f(a, b, a):\n    pass\n", "1:13: duplicate argument 'a' in function definition");
	ck_error("def f(1):\n    pass\n", "1:7: invalid syntax");
	ck_error("def (x):\n    pass\n", "1:5: invalid syntax");
}
END_TEST

START_TEST(test_errors_python_only)
{
	/* what Python has and tj has not, said plainly */
	ck_error("import torch\n", "1:1: 'import' is not supported in tj");
	ck_error("f = lambda x: x\n", "1:5: 'lambda' is not supported in tj");
	ck_error("class A:\n    pass\n", "1:1: 'class' is not supported in tj");
	ck_error("x = [i for i in y]\n", "1:8: comprehensions are not supported in tj");
	ck_error("s = sum(i for i in y)\n", "1:11: comprehensions are not supported in tj");
	ck_error("f(*args)\n", "1:3: '*' arguments are not supported in tj");
	ck_error("def f(a, **kw):\n    pass\n", "1:10: '**' parameters are not supported in tj");
	ck_error("d = {}\n", "1:5: dicts and sets are not supported in tj");
	/* they stay ordinary names */
	ck_parse("import = 1\n", "module\n  assign import = 1\n");
}
END_TEST

START_TEST(test_errors_limits)
{
	/* no deep recursion: long operator chains and deep unary nesting */
	size_t n = 5000;
	char *s = malloc(4 * n + 16);
	strcpy(s, "x = a");
	for (size_t i = 0; i < n; i++)
		strcat(s, " + a");
	char *got = parse(s, 0);
	ck_assert_str_eq(got, "error 1:5: expression too deeply nested");
	free(got);
	strcpy(s, "x = ");
	for (size_t i = 0; i < n; i++)
		strcat(s, "-");
	strcat(s, "a");
	got = parse(s, 0);
	ck_assert_str_eq(got, "error 1:404: expression too deeply nested");
	free(got);
	free(s);
}
END_TEST

static Suite *parser_suite(void)
{
	Suite *s = suite_create("parser");
	TCase *tc = tcase_create("expressions");
	tcase_add_test(tc, test_arithmetic_precedence);
	tcase_add_test(tc, test_logic_precedence);
	tcase_add_test(tc, test_postfix);
	tcase_add_test(tc, test_atoms);
	tcase_add_test(tc, test_locations);
	suite_add_tcase(s, tc);
	tc = tcase_create("statements");
	tcase_add_test(tc, test_assignments);
	tcase_add_test(tc, test_control_flow);
	tcase_add_test(tc, test_functions);
	tcase_add_test(tc, test_whole_program);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_errors_blocks);
	tcase_add_test(tc, test_errors_expressions);
	tcase_add_test(tc, test_errors_brackets_and_tokens);
	tcase_add_test(tc, test_errors_targets);
	tcase_add_test(tc, test_errors_calls_and_defs);
	tcase_add_test(tc, test_errors_python_only);
	tcase_add_test(tc, test_errors_limits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(parser_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
