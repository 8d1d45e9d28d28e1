/* lexer.h - tj source text to tokens, one token at a time.
 *
 * Blocks come out as INDENT / DEDENT tokens and logical lines end with
 * NEWLINE, as in Python: blank and comment-only lines make no tokens, and
 * newlines inside () and [] or after a trailing backslash are ignored. The
 * first error (bad indentation, unterminated string, invalid UTF-8, ...)
 * produces TOK_ERROR with lexer->err_msg and err_loc set; every later call
 * returns TOK_ERROR again.
 */
#ifndef TJ_LEXER_H
#define TJ_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* One row per token kind: X(NAME, spelling). Keywords and operators are
 * found by their spelling, so each range must stay contiguous. */
#define LEXER_TOKENS(X)                                                      \
	X(EOF, "end of file")                                                \
	X(NEWLINE, "newline")                                                \
	X(INDENT, "indent")                                                  \
	X(DEDENT, "dedent")                                                  \
	X(NAME, "name")                                                      \
	X(INT, "integer")                                                    \
	X(FLOAT, "float")                                                    \
	X(STRING, "string")                                                  \
	X(ERROR, "error")                                                    \
	/* keywords: TOK_FIRST_KEYWORD .. TOK_LAST_KEYWORD */                 \
	X(AND, "and") X(BREAK, "break") X(CONTINUE, "continue") X(DEF, "def") \
	X(ELIF, "elif") X(ELSE, "else") X(FALSE, "False") X(FOR, "for")      \
	X(GLOBAL, "global") X(IF, "if") X(IN, "in") X(IS, "is")              \
	X(NONE, "None") X(NOT, "not") X(OR, "or") X(PASS, "pass")            \
	X(RETURN, "return") X(TRUE, "True") X(WHILE, "while")                \
	/* operators: TOK_FIRST_OP .. TOK_LAST_OP (longest spelling wins) */  \
	X(PLUS, "+") X(MINUS, "-") X(STAR, "*") X(SLASH, "/")                \
	X(SLASHSLASH, "//") X(PERCENT, "%") X(STARSTAR, "**") X(AT, "@")     \
	X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=") X(EQEQ, "==")          \
	X(NE, "!=") X(EQ, "=") X(PLUSEQ, "+=") X(MINUSEQ, "-=")              \
	X(STAREQ, "*=") X(SLASHEQ, "/=") X(SLASHSLASHEQ, "//=")              \
	X(PERCENTEQ, "%=") X(STARSTAREQ, "**=") X(ATEQ, "@=")                \
	X(LPAREN, "(") X(RPAREN, ")") X(LBRACKET, "[") X(RBRACKET, "]")      \
	X(COMMA, ",") X(COLON, ":") X(DOT, ".") X(SEMICOLON, ";")

enum token_kind {
#define LEXER_ENUM(name, spelling) TOK_##name,
	LEXER_TOKENS(LEXER_ENUM)
#undef LEXER_ENUM
	TOK_COUNT,
	TOK_FIRST_KEYWORD = TOK_AND,
	TOK_LAST_KEYWORD = TOK_WHILE,
	TOK_FIRST_OP = TOK_PLUS,
	TOK_LAST_OP = TOK_SEMICOLON,
};

struct token {
	enum token_kind kind;
	struct src_loc loc;   /* of the first byte; INDENT/DEDENT: of the line's first token */
	const char *start;    /* the token's text in the source */
	size_t len;
	int64_t ival;         /* TOK_INT */
	double fval;          /* TOK_FLOAT */
	const char *str;      /* TOK_STRING: the decoded bytes (owned by the lexer) */
	size_t str_len;
};

struct lexer_bracket {
	char ch;
	struct src_loc loc;
};

struct lexer {
	const struct source *src;
	const char *text;
	size_t len, pos;
	int line;
	size_t line_pos;          /* offset of the current line's first byte */
	bool at_line_start;       /* measure indentation before the next token */
	bool line_has_tokens;     /* a NEWLINE is owed before the next line or EOF */
	int *indents;             /* stack of indentation widths; [0] == 0 */
	int nindents, indents_cap;
	int pending_dedents;
	struct src_loc dedent_loc;
	struct lexer_bracket *brackets;
	int nbrackets, brackets_cap;
	char **strings;           /* decoded string literals, freed with the lexer */
	int nstrings, strings_cap;
	bool failed;
	struct src_loc err_loc;
	char *err_msg;
};

#define LEXER_MAX_INDENT 100   /* Python's limit on nested blocks */
#define LEXER_MAX_BRACKETS 200 /* Python's limit on nested brackets */

void lexer_init(struct lexer *lx, const struct source *src);
void lexer_release(struct lexer *lx);
/* Fills tok with the next token; returns its kind (TOK_ERROR on an error). */
enum token_kind lexer_next(struct lexer *lx, struct token *tok);
/* "def", "+", "name", "end of file", ... */
const char *lexer_token_name(enum token_kind kind);
/* "TOK_DEF": for token dumps in tests and logs */
const char *lexer_token_id(enum token_kind kind);

#endif
