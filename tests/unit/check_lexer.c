/* check_lexer.c - the token stream: kinds, values, positions, indentation
 * and every lexical error with its message and location. */
#define _GNU_SOURCE
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "lexer.h"

/* Lexes text to the end; returns the tokens as "KIND" or "KIND:text"
 * separated by blanks, with positions as "@line:col" when with_locs;
 * on an error, the tokens so far then "ERROR line:col: message". */
static char *lex_n(const char *text, size_t n, bool with_locs)
{
	struct source *src = source_from_string("t.tj", text, n);
	ck_assert_ptr_nonnull(src);
	struct lexer lx;
	lexer_init(&lx, src);
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	struct token t;
	const char *sep = "";
	for (;;) {
		enum token_kind k = lexer_next(&lx, &t);
		if (k == TOK_ERROR) {
			fprintf(f, "%sERROR %d:%d: %s", sep, lx.err_loc.line, lx.err_loc.col, lx.err_msg);
			break;
		}
		fprintf(f, "%s%s", sep, lexer_token_id(k) + 4);
		switch (k) {
		case TOK_NAME:
			fprintf(f, ":%.*s", (int)t.len, t.start);
			break;
		case TOK_INT:
			fprintf(f, ":%lld", (long long)t.ival);
			break;
		case TOK_FLOAT:
			fprintf(f, ":%g", t.fval);
			break;
		case TOK_STRING:
			fputc(':', f);
			for (size_t i = 0; i < t.str_len; i++) {
				unsigned char c = (unsigned char)t.str[i];
				if (c < 0x20 || c == '\\')
					fprintf(f, "\\x%02x", c);
				else
					fputc(c, f);
			}
			break;
		default:
			break;
		}
		if (with_locs)
			fprintf(f, "@%d:%d", t.loc.line, t.loc.col);
		sep = " ";
		if (k == TOK_EOF)
			break;
	}
	fclose(f);
	lexer_release(&lx);
	source_free(src);
	return out;
}

static char *lex(const char *text, bool with_locs)
{
	return lex_n(text, strlen(text), with_locs);
}

#define ck_lex(text, expected)                              \
	do {                                                \
		char *got_ = lex(text, false);              \
		ck_assert_str_eq(got_, expected);           \
		free(got_);                                 \
	} while (0)

#define ck_lex_locs(text, expected)                         \
	do {                                                \
		char *got_ = lex(text, true);               \
		ck_assert_str_eq(got_, expected);           \
		free(got_);                                 \
	} while (0)

/* the error at the end of the stream */
#define ck_lex_error(text, expected)                                  \
	do {                                                          \
		char *got_ = lex(text, false);                        \
		char *err_ = strstr(got_, "ERROR ");                  \
		ck_assert_msg(err_ != NULL, "no error in: %s", got_); \
		ck_assert_str_eq(err_ + 6, expected);                 \
		free(got_);                                           \
	} while (0)

START_TEST(test_simple_statement)
{
	ck_lex("x = a + 1\n", "NAME:x EQ NAME:a PLUS INT:1 NEWLINE EOF");
	ck_lex("x = a + 1", "NAME:x EQ NAME:a PLUS INT:1 NEWLINE EOF");
	ck_lex("", "EOF");
	ck_lex("\n\n  # only a comment\n\n", "EOF");
}
END_TEST

START_TEST(test_positions)
{
	ck_lex_locs("y = a + b\n",
		    "NAME:y@1:1 EQ@1:3 NAME:a@1:5 PLUS@1:7 NAME:b@1:9 NEWLINE@1:10 EOF@2:1");
	/* an indented first line makes an INDENT: the parser's "unexpected indent" */
	ck_lex_locs("# c\n\n  f(x)",
		    "INDENT@3:3 NAME:f@3:3 LPAREN@3:4 NAME:x@3:5 RPAREN@3:6 NEWLINE@3:7 DEDENT@3:7 EOF@3:7");
}
END_TEST

START_TEST(test_indentation)
{
	ck_lex_locs("if x:\n    y\n    if z:\n        w\nv\n",
		    "IF@1:1 NAME:x@1:4 COLON@1:5 NEWLINE@1:6 "
		    "INDENT@2:5 NAME:y@2:5 NEWLINE@2:6 "
		    "IF@3:5 NAME:z@3:8 COLON@3:9 NEWLINE@3:10 "
		    "INDENT@4:9 NAME:w@4:9 NEWLINE@4:10 "
		    "DEDENT@5:1 DEDENT@5:1 NAME:v@5:1 NEWLINE@5:2 EOF@6:1");
	/* blocks still open at the end close there */
	ck_lex("def f():\n  return 1", "DEF NAME:f LPAREN RPAREN COLON NEWLINE INDENT RETURN INT:1 NEWLINE DEDENT EOF");
	/* blank lines and comments in a block change nothing */
	ck_lex("if x:\n\n    # note\n    y\n  \n    z\n",
	       "IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE NAME:z NEWLINE DEDENT EOF");
	/* tabs on a blank line are no indentation */
	ck_lex("if x:\n\t\n    y\n", "IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE DEDENT EOF");
}
END_TEST

START_TEST(test_brackets_join_lines)
{
	ck_lex("f(a,\n  b)\nx = [1,\n# c\n 2]\n",
	       "NAME:f LPAREN NAME:a COMMA NAME:b RPAREN NEWLINE "
	       "NAME:x EQ LBRACKET INT:1 COMMA INT:2 RBRACKET NEWLINE EOF");
	ck_lex("x = 1 + \\\n    2\n", "NAME:x EQ INT:1 PLUS INT:2 NEWLINE EOF");
	ck_lex("x = 1 + \\\r\n    2\r\n", "NAME:x EQ INT:1 PLUS INT:2 NEWLINE EOF");
}
END_TEST

START_TEST(test_numbers)
{
	ck_lex("0 7 1_000 0x1F 0o17 0b101 9223372036854775807",
	       "INT:0 INT:7 INT:1000 INT:31 INT:15 INT:5 INT:9223372036854775807 NEWLINE EOF");
	ck_lex("1.5 1e-3 .5 5. 1E+3 1_0.2_5", "FLOAT:1.5 FLOAT:0.001 FLOAT:0.5 FLOAT:5 FLOAT:1000 FLOAT:10.25 NEWLINE EOF");
	ck_lex("x[1:.5]", "NAME:x LBRACKET INT:1 COLON FLOAT:0.5 RBRACKET NEWLINE EOF");
	ck_lex("00 0_0", "INT:0 INT:0 NEWLINE EOF");
}
END_TEST

START_TEST(test_strings)
{
	ck_lex("'a' \"b\" ''", "STRING:a STRING:b STRING: NEWLINE EOF");
	ck_lex("'\\n\\t\\\\\\\"\\'\\r\\0'", "STRING:\\x0a\\x09\\x5c\"'\\x0d\\x00 NEWLINE EOF");
	/* an unknown escape keeps its backslash */
	ck_lex("'\\d'", "STRING:\\x5cd NEWLINE EOF");
	ck_lex("'\\x41\\u00e9'", "STRING:A\xc3\xa9 NEWLINE EOF");
	ck_lex("'caf\xc3\xa9'", "STRING:caf\xc3\xa9 NEWLINE EOF");
	ck_lex("r'\\d\\''", "STRING:\\x5cd\\x5c' NEWLINE EOF");
	ck_lex("'''a\nb''' + 1", "STRING:a\\x0ab PLUS INT:1 NEWLINE EOF");
	ck_lex_locs("x = '''a\nb'''\ny", "NAME:x@1:1 EQ@1:3 STRING:a\\x0ab@1:5 NEWLINE@2:5 NAME:y@3:1 NEWLINE@3:2 EOF@3:2");
	ck_lex("'a\\\nb'", "STRING:ab NEWLINE EOF");
}
END_TEST

START_TEST(test_keywords_and_operators)
{
	ck_lex("def return if elif else for in while break continue pass and or not is global True False None",
	       "DEF RETURN IF ELIF ELSE FOR IN WHILE BREAK CONTINUE PASS AND OR NOT IS GLOBAL TRUE FALSE NONE NEWLINE EOF");
	ck_lex("+ - * / // % ** @ < <= > >= == != = += -= *= /= //= ( ) [ ] , : . ;",
	       "PLUS MINUS STAR SLASH SLASHSLASH PERCENT STARSTAR AT LT LE GT GE EQEQ NE EQ "
	       "PLUSEQ MINUSEQ STAREQ SLASHEQ SLASHSLASHEQ LPAREN RPAREN LBRACKET RBRACKET "
	       "COMMA COLON DOT SEMICOLON NEWLINE EOF");
	ck_lex("a**-b<=c", "NAME:a STARSTAR MINUS NAME:b LE NAME:c NEWLINE EOF");
	ck_lex("@compile\n", "AT NAME:compile NEWLINE EOF");
	ck_lex("iffy _x x1", "NAME:iffy NAME:_x NAME:x1 NEWLINE EOF");
}
END_TEST

START_TEST(test_indentation_errors)
{
	ck_lex_error("if x:\n\tpass\n", "2:1: tab in indentation (use spaces)");
	ck_lex_error("if x:\n  \tpass\n", "2:3: tab in indentation (use spaces)");
	ck_lex_error("if x:\n        a\n    b\n", "3:5: unindent does not match any outer indentation level");
}
END_TEST

START_TEST(test_string_errors)
{
	ck_lex_error("x = 'abc\ny = 1\n", "1:5: unterminated string literal");
	ck_lex_error("x = \"abc", "1:5: unterminated string literal");
	ck_lex_error("x = 'abc\\'\n", "1:5: unterminated string literal");
	ck_lex_error("x = 1\ns = '''abc\n\n", "2:5: unterminated triple-quoted string literal (detected at line 4)");
	ck_lex_error("'\\x4'", "1:2: truncated \\xXX escape");
	ck_lex_error("x = f'a'", "1:5: string prefix 'f' is not supported");
}
END_TEST

START_TEST(test_encoding_errors)
{
	ck_lex_error("x = 1\n\xff = 2\n", "2:1: invalid UTF-8 byte 0xff");
	ck_lex_error("s = 'a\xc3('", "1:7: invalid UTF-8 byte 0xc3");
	ck_lex_error("s = 'a\xe0\x80\x80'", "1:8: invalid UTF-8 byte 0x80");  /* overlong */
	ck_lex_error("# \xed\xa0\x80\n", "1:4: invalid UTF-8 byte 0xa0");      /* a surrogate */
	ck_lex_error("x = 1 \xe2\x86\x92 2", "1:7: invalid character '\xe2\x86\x92' (U+2192)");
	ck_lex_error("x = 1\x01", "1:6: invalid non-printable character U+0001");
	char *got = lex_n("x = 'a\0'", 8, false);
	ck_assert_str_eq(got, "NAME:x EQ ERROR 1:7: source code cannot contain null bytes");
	free(got);
}
END_TEST

START_TEST(test_number_errors)
{
	ck_lex_error("x = 99999999999999999999", "1:5: integer literal too large");
	ck_lex_error("x = 9223372036854775808", "1:5: integer literal too large");
	ck_lex_error("x = 0x", "1:5: invalid hexadecimal literal");
	ck_lex_error("x = 1abc", "1:5: invalid decimal literal");
	ck_lex_error("x = 1e", "1:5: invalid decimal literal");
	ck_lex_error("x = 1__0", "1:5: invalid decimal literal");
	ck_lex_error("x = 012",
		     "1:5: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers");
}
END_TEST

START_TEST(test_bracket_errors)
{
	ck_lex_error("x = 1)\n", "1:6: unmatched ')'");
	ck_lex_error("x = [1, 2)\n", "1:10: closing parenthesis ')' does not match opening parenthesis '['");
	ck_lex_error("x = [1,\n2)\n", "2:2: closing parenthesis ')' does not match opening parenthesis '[' on line 1");
	ck_lex_error("f(a,\n  b\n", "1:2: '(' was never closed");
	ck_lex_error("x = 1 $ 2", "1:7: invalid syntax");
	ck_lex_error("x = 1 \\ 2", "1:8: unexpected character after line continuation character");
	ck_lex_error("x = 1 + \\\n", "1:9: unexpected EOF while parsing");
}
END_TEST

START_TEST(test_errors_are_sticky)
{
	struct source *src = source_from_string("t.tj", "x = 'a\n", 7);
	struct lexer lx;
	lexer_init(&lx, src);
	struct token t;
	ck_assert_int_eq(lexer_next(&lx, &t), TOK_NAME);
	ck_assert_int_eq(lexer_next(&lx, &t), TOK_EQ);
	ck_assert_int_eq(lexer_next(&lx, &t), TOK_ERROR);
	ck_assert_int_eq(lexer_next(&lx, &t), TOK_ERROR);
	ck_assert_int_eq(t.loc.line, 1);
	ck_assert_int_eq(t.loc.col, 5);
	lexer_release(&lx);
	source_free(src);
}
END_TEST

START_TEST(test_nesting_limits)
{
	char deep[LEXER_MAX_BRACKETS + 10];
	memset(deep, '(', sizeof deep - 1);
	deep[sizeof deep - 1] = '\0';
	ck_lex_error(deep, "1:201: too many nested parentheses");
}
END_TEST

/* ---- error.c: sources and diagnostics ---- */

static char *diag(const char *text, int line, int col, const char *msg)
{
	struct source *src = source_from_string("toy.tj", text, strlen(text));
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	diag_print(f, src, (struct src_loc){line, col}, "error", "%s", msg);
	fclose(f);
	source_free(src);
	return out;
}

START_TEST(test_diag_print)
{
	char *s = diag("a = 1\n    y = a + b\n", 2, 9, "cannot broadcast shapes (10,) and (3,)");
	ck_assert_str_eq(s, "toy.tj:2:9: error: cannot broadcast shapes (10,) and (3,)\n"
			    "    y = a + b\n"
			    "        ^\n");
	free(s);
	/* an unknown line: the header only */
	s = diag("a = 1\n", 7, 1, "unexpected EOF while parsing");
	ck_assert_str_eq(s, "toy.tj:7:1: error: unexpected EOF while parsing\n");
	free(s);
	/* tabs stay tabs, a multi-byte character takes one column of blanks */
	s = diag("\tx = '\xc3\xa9' + $\n", 1, 14, "invalid syntax");
	ck_assert_str_eq(s, "toy.tj:1:14: error: invalid syntax\n\tx = '\xc3\xa9' + $\n\t           ^\n");
	free(s);
	/* CRLF line endings do not show */
	s = diag("x\r\ny\r\n", 2, 1, "m");
	ck_assert_str_eq(s, "toy.tj:2:1: error: m\ny\n^\n");
	free(s);
}
END_TEST

START_TEST(test_source_lines)
{
	struct source *src = source_from_string("t.tj", "a\n\nbc", 5);
	ck_assert_int_eq(src->nlines, 3);
	size_t len;
	const char *l = source_line(src, 3, &len);
	ck_assert_int_eq(len, 2);
	ck_assert(memcmp(l, "bc", 2) == 0);
	l = source_line(src, 2, &len);
	ck_assert_int_eq(len, 0);
	ck_assert_ptr_null(source_line(src, 4, &len));
	ck_assert_ptr_null(source_line(src, 0, &len));
	source_free(src);
	src = source_from_string("t.tj", "a\n", 2);
	ck_assert_int_eq(src->nlines, 1);
	source_free(src);
	src = source_from_string("t.tj", "", 0);
	ck_assert_int_eq(src->nlines, 0);
	source_free(src);
}
END_TEST

START_TEST(test_source_load_error)
{
	ck_assert_ptr_null(source_load("/nonexistent/dir/x.tj"));
	char *msg = tj_error_take();
	ck_assert_str_eq(msg, "cannot read '/nonexistent/dir/x.tj': No such file or directory");
	free(msg);
	ck_assert_ptr_null(tj_error_peek());
	ck_assert_ptr_null(source_load("/"));
	msg = tj_error_take();
	ck_assert_str_eq(msg, "cannot read '/': Is a directory");
	free(msg);
}
END_TEST

START_TEST(test_source_load)
{
	char path[] = "/tmp/check_lexer_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	for (int i = 0; i < 3000; i++)
		fprintf(f, "x%d = %d\n", i, i);
	fclose(f);
	struct source *src = source_load(path);
	unlink(path);
	ck_assert_ptr_nonnull(src);
	ck_assert_int_eq(src->nlines, 3000);
	size_t len;
	const char *l = source_line(src, 2999, &len);
	ck_assert(len == 12 && memcmp(l, "x2998 = 2998", 12) == 0);
	source_free(src);
}
END_TEST

START_TEST(test_tj_error)
{
	ck_assert_ptr_null(tj_error_peek());
	tj_error_set("bad %s %d", "thing", 42);
	ck_assert_str_eq(tj_error_peek(), "bad thing 42");
	tj_error_set("second");
	char *m = tj_error_take();
	ck_assert_str_eq(m, "second");
	free(m);
	ck_assert_ptr_null(tj_error_take());
	tj_error_set("x");
	tj_error_clear();
	ck_assert_ptr_null(tj_error_peek());
}
END_TEST

static Suite *lexer_suite(void)
{
	Suite *s = suite_create("lexer");
	TCase *tc = tcase_create("tokens");
	tcase_add_test(tc, test_simple_statement);
	tcase_add_test(tc, test_positions);
	tcase_add_test(tc, test_indentation);
	tcase_add_test(tc, test_brackets_join_lines);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_keywords_and_operators);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_indentation_errors);
	tcase_add_test(tc, test_string_errors);
	tcase_add_test(tc, test_encoding_errors);
	tcase_add_test(tc, test_number_errors);
	tcase_add_test(tc, test_bracket_errors);
	tcase_add_test(tc, test_errors_are_sticky);
	tcase_add_test(tc, test_nesting_limits);
	suite_add_tcase(s, tc);
	tc = tcase_create("sources");
	tcase_add_test(tc, test_diag_print);
	tcase_add_test(tc, test_source_lines);
	tcase_add_test(tc, test_source_load_error);
	tcase_add_test(tc, test_source_load);
	tcase_add_test(tc, test_tj_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(lexer_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
