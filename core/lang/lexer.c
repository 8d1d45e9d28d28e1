/* lexer.c - tj source text to tokens.
 *
 * A hand-written scanner over the whole source held in memory. Tokens are
 * made on demand, so that the parser reports whichever error comes first
 * in the text, a syntax error or a lexical one. Columns are 1-based byte
 * offsets within the line.
 */
#define _GNU_SOURCE
#include "lexer.h"

#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const token_names[TOK_COUNT] = {
#define LEXER_NAME(name, spelling) [TOK_##name] = spelling,
	LEXER_TOKENS(LEXER_NAME)
#undef LEXER_NAME
};

static const char *const token_ids[TOK_COUNT] = {
#define LEXER_ID(name, spelling) [TOK_##name] = "TOK_" #name,
	LEXER_TOKENS(LEXER_ID)
#undef LEXER_ID
};

const char *lexer_token_name(enum token_kind kind)
{
	return kind < TOK_COUNT ? token_names[kind] : "?";
}

const char *lexer_token_id(enum token_kind kind)
{
	return kind < TOK_COUNT ? token_ids[kind] : "?";
}

void lexer_init(struct lexer *lx, const struct source *src)
{
	memset(lx, 0, sizeof *lx);
	lx->src = src;
	lx->text = src->text;
	lx->len = src->len;
	lx->line = 1;
	lx->at_line_start = true;
}

void lexer_release(struct lexer *lx)
{
	for (int i = 0; i < lx->nstrings; i++)
		free(lx->strings[i]);
	free(lx->strings);
	free(lx->indents);
	free(lx->brackets);
	free(lx->err_msg);
	memset(lx, 0, sizeof *lx);
}

/* ---- helpers ---- */

static struct src_loc loc_at(const struct lexer *lx, size_t pos)
{
	return (struct src_loc){lx->line, (int)(pos - lx->line_pos) + 1};
}

/* The byte at pos is a '\n': the next line starts after it. */
static void newline(struct lexer *lx, size_t pos)
{
	lx->line++;
	lx->line_pos = pos + 1;
}

static int peek(const struct lexer *lx, size_t pos)
{
	return pos < lx->len ? (unsigned char)lx->text[pos] : -1;
}

static enum token_kind lex_error(struct lexer *lx, struct token *tok, struct src_loc loc,
				 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum token_kind lex_error(struct lexer *lx, struct token *tok, struct src_loc loc,
				 const char *fmt, ...)
{
	if (!lx->failed) {
		va_list ap;
		va_start(ap, fmt);
		if (vasprintf(&lx->err_msg, fmt, ap) < 0)
			lx->err_msg = NULL; /* the parser reports "out of memory" */
		va_end(ap);
		lx->failed = true;
		lx->err_loc = loc;
	}
	tok->kind = TOK_ERROR;
	tok->loc = lx->err_loc;
	return TOK_ERROR;
}

static enum token_kind make_token(struct token *tok, enum token_kind kind, struct src_loc loc,
				  const char *start, size_t len)
{
	tok->kind = kind;
	tok->loc = loc;
	tok->start = start;
	tok->len = len;
	return kind;
}

/* Decodes the UTF-8 sequence at s (n bytes available). Returns its length
 * and the code point, or 0 with *bad = the offset of the offending byte: a
 * continuation byte that cannot continue the sequence, else the lead byte
 * (a bad lead byte, or a sequence cut short by ASCII or the end). */
static int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp, size_t *bad)
{
	unsigned c = s[0];
	int len;
	unsigned lo = 0x80, hi = 0xbf; /* the valid range of the second byte */
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		*cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		*cp = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		*cp = c & 0x07;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		*bad = 0;
		return 0;
	}
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n || s[i] < 0x80) {
			*bad = 0;
			return 0;
		}
		if (s[i] > 0xbf || (i == 1 && (s[i] < lo || s[i] > hi))) {
			*bad = (size_t)i;
			return 0;
		}
		*cp = (*cp << 6) | (s[i] & 0x3f);
	}
	return len;
}

/* Checks the byte at pos inside a comment or a string literal: NUL bytes
 * and invalid UTF-8 are errors. Returns the length of the character, or 0
 * after an error. */
static int check_char(struct lexer *lx, struct token *tok, size_t pos)
{
	unsigned char c = (unsigned char)lx->text[pos];
	if (c == 0) {
		lex_error(lx, tok, loc_at(lx, pos), "source code cannot contain null bytes");
		return 0;
	}
	if (c < 0x80)
		return 1;
	uint32_t cp;
	size_t bad;
	int n = utf8_decode((const unsigned char *)lx->text + pos, lx->len - pos, &cp, &bad);
	if (n == 0)
		lex_error(lx, tok, loc_at(lx, pos + bad), "invalid UTF-8 byte 0x%02x",
			  (unsigned char)lx->text[pos + bad]);
	return n;
}

/* Skips a comment from its '#' to the end of the line (the '\n' stays). */
static bool skip_comment(struct lexer *lx, struct token *tok, size_t *pos)
{
	size_t p = *pos;
	while (p < lx->len && lx->text[p] != '\n') {
		int n = check_char(lx, tok, p);
		if (n == 0)
			return false;
		p += (size_t)n;
	}
	*pos = p;
	return true;
}

/* ---- indentation ---- */

/* At the start of a line outside brackets: skips blank and comment-only
 * lines, then compares the indentation of the next line with tokens with
 * the stack of enclosing levels. Returns INDENT, DEDENT or ERROR, or
 * TOK_COUNT when nothing changes (or at the end of the text). */
static enum token_kind lex_indentation(struct lexer *lx, struct token *tok)
{
	const char *t = lx->text;
	for (;;) {
		size_t p = lx->pos, tab = (size_t)-1;
		int width = 0;
		while (p < lx->len && (t[p] == ' ' || t[p] == '\t' || t[p] == '\f')) {
			if (t[p] == '\t' && tab == (size_t)-1)
				tab = p;
			width = t[p] == ' ' ? width + 1 : width;
			p++;
		}
		if (p + 1 < lx->len && t[p] == '\r' && t[p + 1] == '\n')
			p++;
		if (p < lx->len && t[p] == '#' && !skip_comment(lx, tok, &p))
			return TOK_ERROR;
		if (p < lx->len && t[p] == '\n') { /* a blank line */
			newline(lx, p);
			lx->pos = p + 1;
			continue;
		}
		lx->pos = p;
		if (p >= lx->len)
			return TOK_COUNT; /* the end: DEDENTs come with EOF */
		lx->at_line_start = false;
		if (tab != (size_t)-1)
			return lex_error(lx, tok, loc_at(lx, tab), "tab in indentation (use spaces)");

		struct src_loc loc = loc_at(lx, p);
		int top = lx->indents[lx->nindents - 1];
		if (width > top) {
			if (lx->nindents > LEXER_MAX_INDENT)
				return lex_error(lx, tok, loc, "too many levels of indentation");
			if (!grow_array((void **)&lx->indents, &lx->indents_cap, lx->nindents + 1, sizeof(int), 8))
				return lex_error(lx, tok, loc, "out of memory");
			lx->indents[lx->nindents++] = width;
			return make_token(tok, TOK_INDENT, loc, t + p, 0);
		}
		if (width < top) {
			int count = 0;
			while (lx->nindents > 1 && lx->indents[lx->nindents - 1] > width) {
				lx->nindents--;
				count++;
			}
			if (lx->indents[lx->nindents - 1] != width)
				return lex_error(lx, tok, loc,
						 "unindent does not match any outer indentation level");
			lx->pending_dedents = count - 1;
			lx->dedent_loc = loc;
			return make_token(tok, TOK_DEDENT, loc, t + p, 0);
		}
		return TOK_COUNT;
	}
}

/* ---- names and keywords ---- */

static bool is_name_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_name_char(int c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static enum token_kind lex_string(struct lexer *lx, struct token *tok, size_t start, size_t quote,
				  bool raw);

static enum token_kind lex_name(struct lexer *lx, struct token *tok, size_t start)
{
	size_t p = start;
	while (p < lx->len && is_name_char((unsigned char)lx->text[p]))
		p++;
	const char *s = lx->text + start;
	size_t n = p - start;

	/* a string prefix: r'' and u'' are Python's, the others are not tj's */
	int q = peek(lx, p);
	if ((q == '\'' || q == '"') && n <= 2) {
		bool raw = false, other = false;
		for (size_t i = 0; i < n; i++) {
			char c = s[i] | 0x20;
			raw |= c == 'r';
			other |= c == 'f' || c == 'b';
			if (c != 'r' && c != 'u' && c != 'f' && c != 'b')
				goto plain;
		}
		if (other)
			return lex_error(lx, tok, loc_at(lx, start), "string prefix '%.*s' is not supported",
					 (int)n, s);
		if (n == 1 || raw)
			return lex_string(lx, tok, start, p, raw);
	}
plain:
	lx->pos = p;
	for (int k = TOK_FIRST_KEYWORD; k <= TOK_LAST_KEYWORD; k++)
		if (strlen(token_names[k]) == n && memcmp(token_names[k], s, n) == 0)
			return make_token(tok, k, loc_at(lx, start), s, n);
	return make_token(tok, TOK_NAME, loc_at(lx, start), s, n);
}

/* ---- numbers ---- */

static int digit_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
		return (c | 0x20) - 'a' + 10;
	return 99;
}

/* Scans digits of base with single '_' between them; returns the end, or
 * 0 with *bad_underscore set when a '_' is misplaced. */
static size_t scan_digits(const struct lexer *lx, size_t p, int base, bool *bad_underscore)
{
	while (p < lx->len) {
		int c = (unsigned char)lx->text[p];
		if (c == '_') {
			if (digit_value(peek(lx, p + 1)) >= base) {
				*bad_underscore = true;
				return p;
			}
			p++;
			continue;
		}
		if (digit_value(c) >= base)
			break;
		p++;
	}
	return p;
}

static enum token_kind lex_number(struct lexer *lx, struct token *tok, size_t start)
{
	const char *t = lx->text;
	struct src_loc loc = loc_at(lx, start);
	size_t p = start;
	bool bad = false, is_float = false;
	int base = 10;

	int c = peek(lx, p + 1) | 0x20; /* -1 stays -1 */
	if (t[p] == '0' && (c == 'x' || c == 'o' || c == 'b')) {
		base = c == 'x' ? 16 : c == 'o' ? 8 : 2;
		const char *what = c == 'x' ? "hexadecimal" : c == 'o' ? "octal" : "binary";
		p += 2;
		if (peek(lx, p) == '_')
			p++;
		size_t digits = p;
		p = scan_digits(lx, p, base, &bad);
		if (bad || p == digits || is_name_char(peek(lx, p)))
			return lex_error(lx, tok, loc, "invalid %s literal", what);
	} else {
		p = scan_digits(lx, p, 10, &bad);
		if (peek(lx, p) == '.') {
			is_float = true;
			p = scan_digits(lx, p + 1, 10, &bad);
		}
		if ((peek(lx, p) | 0x20) == 'e') {
			is_float = true;
			p++;
			if (peek(lx, p) == '+' || peek(lx, p) == '-')
				p++;
			size_t digits = p;
			p = scan_digits(lx, p, 10, &bad);
			if (p == digits)
				bad = true;
		}
		if (bad || is_name_char(peek(lx, p)))
			return lex_error(lx, tok, loc, "invalid decimal literal");
	}

	size_t end = p;
	lx->pos = end;
	make_token(tok, is_float ? TOK_FLOAT : TOK_INT, loc, t + start, end - start);

	if (is_float) {
		/* strtod without the underscores, in the C locale whatever the
		 * program's locale is (the TUI sets one) */
		char *clean = malloc(end - start + 1);
		if (!clean)
			return lex_error(lx, tok, loc, "out of memory");
		size_t n = 0;
		for (size_t i = start; i < end; i++)
			if (t[i] != '_')
				clean[n++] = t[i];
		clean[n] = '\0';
		locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
		tok->fval = c_locale ? strtod_l(clean, NULL, c_locale) : strtod(clean, NULL);
		if (c_locale)
			freelocale(c_locale);
		free(clean);
		return TOK_FLOAT;
	}

	size_t first = base == 10 ? start : start + 2;
	if (base == 10 && t[start] == '0') {
		for (size_t i = start; i < end; i++)
			if (t[i] != '0' && t[i] != '_')
				return lex_error(lx, tok, loc,
						 "leading zeros in decimal integer literals are not "
						 "permitted; use an 0o prefix for octal integers");
	}
	uint64_t v = 0;
	for (size_t i = first; i < end; i++) {
		if (t[i] == '_')
			continue;
		uint64_t d = (uint64_t)digit_value((unsigned char)t[i]);
		if (v > (INT64_MAX - d) / (uint64_t)base)
			return lex_error(lx, tok, loc, "integer literal too large");
		v = v * (uint64_t)base + d;
	}
	tok->ival = (int64_t)v;
	return TOK_INT;
}

/* ---- strings ---- */

struct buf {
	char *p;
	size_t len, cap;
};

static bool buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 32;
		while (b->len + n + 1 > cap)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return false;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return true;
}

static bool buf_add_utf8(struct buf *b, uint32_t cp)
{
	char s[4];
	size_t n;
	if (cp < 0x80) {
		s[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		s[0] = (char)(0xc0 | (cp >> 6));
		s[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		s[0] = (char)(0xe0 | (cp >> 12));
		s[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		s[0] = (char)(0xf0 | (cp >> 18));
		s[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		s[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		s[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return buf_add(b, s, n);
}

/* Reads exactly n hex digits at p into *cp; false when there are fewer. */
static bool read_hex(const struct lexer *lx, size_t p, int n, uint32_t *cp)
{
	*cp = 0;
	for (int i = 0; i < n; i++) {
		int d = digit_value(peek(lx, p + (size_t)i));
		if (d >= 16)
			return false;
		*cp = *cp * 16 + (uint32_t)d;
	}
	return true;
}

/* Decodes the escape sequence whose backslash is at *pos (not raw). */
static bool lex_escape(struct lexer *lx, struct token *tok, struct buf *b, size_t *pos)
{
	size_t p = *pos;
	int e = peek(lx, p + 1);
	static const char simple_from[] = "\\'\"abfnrtv";
	static const char simple_to[] = "\\'\"\a\b\f\n\r\t\v";
	const char *s = e > 0 ? strchr(simple_from, e) : NULL;
	uint32_t cp;
	bool ok = true;

	if (s) {
		ok = buf_add(b, &simple_to[s - simple_from], 1);
		p += 2;
	} else if (e == '\n') { /* a backslash-newline continues the string */
		newline(lx, p + 1);
		p += 2;
	} else if (e == '\r' && peek(lx, p + 2) == '\n') {
		newline(lx, p + 2);
		p += 3;
	} else if (e >= '0' && e <= '7') {
		cp = 0;
		int n = 0;
		for (p++; n < 3 && peek(lx, p) >= '0' && peek(lx, p) <= '7'; n++, p++)
			cp = cp * 8 + (uint32_t)(peek(lx, p) - '0');
		ok = buf_add_utf8(b, cp);
	} else if (e == 'x' || e == 'u' || e == 'U') {
		int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
		if (!read_hex(lx, p + 2, n, &cp)) {
			lex_error(lx, tok, loc_at(lx, p), "truncated \\%c%.*s escape", e, n,
				  e == 'x' ? "XX" : "XXXXXXXX");
			return false;
		}
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
			lex_error(lx, tok, loc_at(lx, p), "illegal Unicode character");
			return false;
		}
		ok = buf_add_utf8(b, cp);
		p += 2 + (size_t)n;
	} else {
		/* an unknown escape keeps its backslash, as in Python */
		ok = buf_add(b, "\\", 1);
		p += 1;
	}
	if (!ok) {
		lex_error(lx, tok, loc_at(lx, *pos), "out of memory");
		return false;
	}
	*pos = p;
	return true;
}

/* A string literal: start is its first byte (the prefix, if any), quote
 * the opening quote. */
static enum token_kind lex_string(struct lexer *lx, struct token *tok, size_t start, size_t quote,
				  bool raw)
{
	const char *t = lx->text;
	struct src_loc open = loc_at(lx, start);
	char q = t[quote];
	bool triple = peek(lx, quote + 1) == q && peek(lx, quote + 2) == q;
	size_t p = quote + (triple ? 3 : 1);
	struct buf b = {NULL, 0, 0};

	for (;;) {
		if (p >= lx->len) {
			free(b.p);
			if (triple)
				return lex_error(lx, tok, open,
						 "unterminated triple-quoted string literal (detected at line %d)",
						 lx->line);
			return lex_error(lx, tok, open, "unterminated string literal");
		}
		char c = t[p];
		if (c == q && (!triple || (peek(lx, p + 1) == q && peek(lx, p + 2) == q))) {
			p += triple ? 3 : 1;
			break;
		}
		if (c == '\n' || (c == '\r' && peek(lx, p + 1) == '\n')) {
			if (!triple) {
				free(b.p);
				return lex_error(lx, tok, open, "unterminated string literal");
			}
			if (c == '\r')
				p++;
			newline(lx, p);
			p++;
			if (!buf_add(&b, "\n", 1))
				goto oom;
			continue;
		}
		if (c == '\\' && !raw) {
			if (p + 1 >= lx->len) {
				p++;
				continue; /* unterminated */
			}
			if (!lex_escape(lx, tok, &b, &p)) {
				free(b.p);
				return TOK_ERROR;
			}
			continue;
		}
		if (c == '\\' && raw) {
			/* a raw string keeps the backslash, and the quote or
			 * backslash after it does not end the string */
			int e = peek(lx, p + 1);
			if (e == q || e == '\\') {
				if (!buf_add(&b, t + p, 2))
					goto oom;
				p += 2;
				continue;
			}
			if (!buf_add(&b, "\\", 1))
				goto oom;
			p++;
			continue;
		}
		int n = check_char(lx, tok, p);
		if (n == 0) {
			free(b.p);
			return TOK_ERROR;
		}
		if (!buf_add(&b, t + p, (size_t)n))
			goto oom;
		p += (size_t)n;
	}

	if (!b.p && !buf_add(&b, "", 0))
		goto oom;
	if (!grow_array((void **)&lx->strings, &lx->strings_cap, lx->nstrings + 1, sizeof(char *), 8))
		goto oom;
	lx->strings[lx->nstrings++] = b.p;
	lx->pos = p;
	make_token(tok, TOK_STRING, open, t + start, p - start);
	tok->str = b.p;
	tok->str_len = b.len;
	return TOK_STRING;
oom:
	free(b.p);
	return lex_error(lx, tok, open, "out of memory");
}

/* ---- operators and brackets ---- */

static enum token_kind lex_operator(struct lexer *lx, struct token *tok, size_t start)
{
	const char *s = lx->text + start;
	size_t avail = lx->len - start;
	enum token_kind best = TOK_COUNT;
	size_t best_len = 0;
	for (int k = TOK_FIRST_OP; k <= TOK_LAST_OP; k++) {
		size_t n = strlen(token_names[k]);
		if (n > best_len && n <= avail && memcmp(token_names[k], s, n) == 0) {
			best = k;
			best_len = n;
		}
	}
	struct src_loc loc = loc_at(lx, start);
	if (best == TOK_COUNT)
		return TOK_COUNT;

	if (best == TOK_LPAREN || best == TOK_LBRACKET) {
		if (lx->nbrackets >= LEXER_MAX_BRACKETS)
			return lex_error(lx, tok, loc, "too many nested parentheses");
		if (!grow_array((void **)&lx->brackets, &lx->brackets_cap, lx->nbrackets + 1,
				sizeof *lx->brackets, 8))
			return lex_error(lx, tok, loc, "out of memory");
		lx->brackets[lx->nbrackets++] = (struct lexer_bracket){*s, loc};
	} else if (best == TOK_RPAREN || best == TOK_RBRACKET) {
		if (lx->nbrackets == 0)
			return lex_error(lx, tok, loc, "unmatched '%c'", *s);
		struct lexer_bracket open = lx->brackets[lx->nbrackets - 1];
		char want = open.ch == '(' ? ')' : ']';
		if (*s != want) {
			if (open.loc.line != loc.line)
				return lex_error(lx, tok, loc,
						 "closing parenthesis '%c' does not match opening "
						 "parenthesis '%c' on line %d",
						 *s, open.ch, open.loc.line);
			return lex_error(lx, tok, loc,
					 "closing parenthesis '%c' does not match opening parenthesis '%c'",
					 *s, open.ch);
		}
		lx->nbrackets--;
	}
	lx->pos = start + best_len;
	return make_token(tok, best, loc, s, best_len);
}

/* A byte that starts no token. */
static enum token_kind lex_bad_char(struct lexer *lx, struct token *tok, size_t pos)
{
	unsigned char c = (unsigned char)lx->text[pos];
	struct src_loc loc = loc_at(lx, pos);
	if (c >= 0x80) {
		int n = check_char(lx, tok, pos);
		if (n == 0)
			return TOK_ERROR;
		uint32_t cp;
		size_t bad;
		utf8_decode((const unsigned char *)lx->text + pos, lx->len - pos, &cp, &bad);
		return lex_error(lx, tok, loc, "invalid character '%.*s' (U+%04X)", n,
				 lx->text + pos, (unsigned)cp);
	}
	if (c == 0)
		return lex_error(lx, tok, loc, "source code cannot contain null bytes");
	if (c < 0x20 || c == 0x7f)
		return lex_error(lx, tok, loc, "invalid non-printable character U+%04X", c);
	if (c == '{' || c == '}')
		return lex_error(lx, tok, loc, "dicts and sets are not supported in tj");
	return lex_error(lx, tok, loc, "invalid syntax");
}

/* ---- the token stream ---- */

/* At the end of the text: close the last logical line, then the blocks. */
static enum token_kind lex_end(struct lexer *lx, struct token *tok)
{
	struct src_loc loc = loc_at(lx, lx->len);
	const char *end = lx->text + lx->len;
	if (lx->nbrackets > 0) {
		struct lexer_bracket open = lx->brackets[lx->nbrackets - 1];
		return lex_error(lx, tok, open.loc, "'%c' was never closed", open.ch);
	}
	if (lx->line_has_tokens) {
		lx->line_has_tokens = false;
		return make_token(tok, TOK_NEWLINE, loc, end, 0);
	}
	if (lx->nindents > 1) {
		lx->pending_dedents = lx->nindents - 2;
		lx->dedent_loc = loc;
		lx->nindents = 1;
		return make_token(tok, TOK_DEDENT, loc, end, 0);
	}
	return make_token(tok, TOK_EOF, loc, end, 0);
}

enum token_kind lexer_next(struct lexer *lx, struct token *tok)
{
	memset(tok, 0, sizeof *tok);
	if (lx->failed) {
		tok->kind = TOK_ERROR;
		tok->loc = lx->err_loc;
		return TOK_ERROR;
	}
	if (!lx->indents) {
		if (!grow_array((void **)&lx->indents, &lx->indents_cap, 1, sizeof(int), 8))
			return lex_error(lx, tok, loc_at(lx, 0), "out of memory");
		lx->indents[lx->nindents++] = 0;
	}
	if (lx->pending_dedents > 0) {
		lx->pending_dedents--;
		return make_token(tok, TOK_DEDENT, lx->dedent_loc, lx->text + lx->pos, 0);
	}

	const char *t = lx->text;
	for (;;) {
		if (lx->at_line_start && lx->nbrackets == 0) {
			enum token_kind k = lex_indentation(lx, tok);
			if (k != TOK_COUNT)
				return k;
		}
		size_t p = lx->pos;
		/* whitespace, comments, continuation lines, bracketed newlines */
		while (p < lx->len) {
			char c = t[p];
			if (c == ' ' || c == '\t' || c == '\f' || (c == '\r' && peek(lx, p + 1) == '\n')) {
				p++;
			} else if (c == '#') {
				if (!skip_comment(lx, tok, &p))
					return TOK_ERROR;
			} else if (c == '\\') {
				/* a continuation line: backslash, newline */
				struct src_loc at = loc_at(lx, p);
				size_t nl = p + 1;
				if (peek(lx, nl) == '\r' && peek(lx, nl + 1) == '\n')
					nl++;
				if (peek(lx, nl) < 0)
					return lex_error(lx, tok, at, "unexpected EOF while parsing");
				if (peek(lx, nl) != '\n')
					return lex_error(lx, tok, loc_at(lx, p + 1),
							 "unexpected character after line continuation character");
				newline(lx, nl);
				p = nl + 1;
				if (p >= lx->len) /* the line that it continues never comes */
					return lex_error(lx, tok, at, "unexpected EOF while parsing");
			} else if (c == '\n' && lx->nbrackets > 0) {
				newline(lx, p);
				p++;
			} else {
				break;
			}
		}
		lx->pos = p;
		if (p >= lx->len)
			return lex_end(lx, tok);
		if (t[p] != '\n')
			break;
		/* the end of a logical line */
		struct src_loc loc = loc_at(lx, p);
		newline(lx, p);
		lx->pos = p + 1;
		lx->at_line_start = true;
		if (lx->line_has_tokens) {
			lx->line_has_tokens = false;
			return make_token(tok, TOK_NEWLINE, loc, t + p, 1);
		}
		/* a line that only held a continuation: no NEWLINE */
	}

	size_t start = lx->pos;
	int c = (unsigned char)t[start];
	enum token_kind k;
	lx->line_has_tokens = true;
	if (is_name_start(c))
		k = lex_name(lx, tok, start);
	else if ((c >= '0' && c <= '9') || (c == '.' && peek(lx, start + 1) >= '0' && peek(lx, start + 1) <= '9'))
		k = lex_number(lx, tok, start);
	else if (c == '\'' || c == '"')
		k = lex_string(lx, tok, start, start, false);
	else if ((k = lex_operator(lx, tok, start)) == TOK_COUNT)
		k = lex_bad_char(lx, tok, start);
	return k;
}
