/* parser.c - tokens to an AST.
 *
 * Statements by recursive descent, expressions by a Pratt table with one
 * row per token. The first error is recorded and turns the lookahead into
 * EOF for good, so every loop ends and the callers need no error checks;
 * whatever is built after it is thrown away with the arena.
 */
#define _GNU_SOURCE
#include "parser.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lexer.h"

struct parser {
	struct lexer lx;
	struct ast_arena *arena;
	struct token tok;   /* the lookahead: the next token, not consumed yet */
	struct token prev;  /* the token consumed last */
	int depth;          /* nesting of parse_prec */
	bool failed;
	bool generic;       /* the error is "invalid syntax" (maybe with a hint): a
			     * tokenizer error further on replaces it */
	struct src_loc err_loc;
	char *err_msg;
	struct ast dummy;   /* stands in for a node that could not be allocated */
};

/* ---- errors ---- */

static void error_at(struct parser *p, struct src_loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void error_at(struct parser *p, struct src_loc loc, const char *fmt, ...)
{
	if (p->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&p->err_msg, fmt, ap) < 0)
		p->err_msg = NULL;
	va_end(ap);
	p->failed = true;
	p->generic = false;
	p->err_loc = loc;
	p->tok.kind = TOK_EOF; /* stops every loop */
}

/* Python's words that tj does not have: they lex as names, so that a
 * program may use them as such, and explain an error right after them. */
static const char *const python_only[] = {
	"import", "from", "class", "try", "except", "finally", "with", "raise", "assert",
	"lambda", "del", "yield", "nonlocal", "async", "await", NULL,
};

static bool is_python_only(const struct token *t)
{
	if (t->kind != TOK_NAME)
		return false;
	for (int i = 0; python_only[i]; i++)
		if (strlen(python_only[i]) == t->len && memcmp(python_only[i], t->start, t->len) == 0)
			return true;
	return false;
}

/* The token t cannot be here. */
static void error_unexpected(struct parser *p, const struct token *t)
{
	if (t == &p->tok && is_python_only(&p->prev))
		error_at(p, p->prev.loc, "'%.*s' is not supported in tj", (int)p->prev.len,
			 p->prev.start);
	else if (t->kind == TOK_EOF)
		error_at(p, t->loc, "unexpected EOF while parsing");
	else if (t->kind == TOK_INDENT)
		error_at(p, t->loc, "unexpected indent");
	else if (t->kind == TOK_DEDENT)
		error_at(p, t->loc, "unexpected unindent");
	else if (!p->failed) {
		error_at(p, t->loc, "invalid syntax");
		p->generic = true;
	}
}

/* ---- tokens ---- */

static void advance(struct parser *p)
{
	p->prev = p->tok;
	if (p->failed) {
		p->tok.kind = TOK_EOF;
		return;
	}
	if (lexer_next(&p->lx, &p->tok) == TOK_ERROR)
		error_at(p, p->lx.err_loc, "%s", p->lx.err_msg ? p->lx.err_msg : "out of memory");
}

static bool check(const struct parser *p, enum token_kind kind)
{
	return p->tok.kind == kind;
}

static bool accept(struct parser *p, enum token_kind kind)
{
	if (!check(p, kind))
		return false;
	advance(p);
	return true;
}

static void expect(struct parser *p, enum token_kind kind)
{
	if (!accept(p, kind))
		error_unexpected(p, &p->tok);
}

/* The ':' of a compound statement. Python insists on it after 'def' and
 * 'else'; after a condition it says so only at the end of the line. */
static void expect_colon(struct parser *p, bool insist)
{
	if (accept(p, TOK_COLON))
		return;
	if (insist || check(p, TOK_NEWLINE))
		error_at(p, p->tok.loc, "expected ':'");
	else
		error_unexpected(p, &p->tok);
}

/* After an element of a display or an argument: Python would go on with
 * a comprehension. */
static void reject_comprehension(struct parser *p)
{
	if (check(p, TOK_FOR))
		error_at(p, p->tok.loc, "comprehensions are not supported in tj");
}

/* ---- nodes ---- */

static struct ast *new_node(struct parser *p, enum ast_kind kind, struct src_loc loc)
{
	struct ast *n = ast_alloc(p->arena, sizeof *n);
	if (!n) {
		error_at(p, loc, "out of memory");
		/* a None constant for whoever reads it; writes to it are
		 * harmless as the result is discarded */
		memset(&p->dummy, 0, sizeof p->dummy);
		p->dummy.kind = AST_NONE;
		p->dummy.loc = loc;
		return &p->dummy;
	}
	n->kind = kind;
	n->loc = loc;
	return n;
}

static void push(struct parser *p, struct ast_list *l, struct ast *n)
{
	if (!ast_list_push(p->arena, l, n))
		error_at(p, n->loc, "out of memory");
}

static const char *copy_text(struct parser *p, const char *s, size_t len)
{
	char *c = ast_strndup(p->arena, s, len);
	if (!c) {
		error_at(p, p->tok.loc, "out of memory");
		return "";
	}
	return c;
}

/* n has child: keeps n's height and bounds it, so that the passes that
 * recurse over expressions cannot run out of stack. */
static void add_child(struct parser *p, struct ast *n, const struct ast *child)
{
	if (child && child->height + 1 > n->height)
		n->height = child->height + 1;
	if (n->height > AST_MAX_HEIGHT)
		error_at(p, n->loc, "expression too deeply nested");
}

/* ---- expressions: the Pratt table ---- */

enum prec {
	PREC_NONE,
	PREC_TERNARY, /* a if c else b */
	PREC_OR,
	PREC_AND,
	PREC_NOT,     /* prefix not */
	PREC_CMP,     /* < <= > >= == != is in, chained */
	PREC_SUM,     /* + - */
	PREC_PRODUCT, /* * / // % @ */
	PREC_UNARY,   /* prefix - + */
	PREC_POWER,   /* ** (right associative) */
	PREC_POSTFIX, /* calls, subscripts, attributes */
};

typedef struct ast *(*prefix_fn)(struct parser *p);
/* start: where the left operand's text begins (a parenthesis, maybe) */
typedef struct ast *(*infix_fn)(struct parser *p, struct ast *left, struct src_loc start);

struct parse_rule {
	prefix_fn prefix;
	infix_fn infix;
	enum prec prec; /* of the infix use */
	int op;         /* enum vm_binop or vm_cmpop of the operator */
	bool augassign; /* +=, -=, ...: op is the binop */
};

static const struct parse_rule rules[TOK_COUNT];

static struct ast *parse_prec(struct parser *p, enum prec min);

static struct ast *parse_expr(struct parser *p)
{
	return parse_prec(p, PREC_TERNARY);
}

static bool can_start_expr(const struct parser *p)
{
	return rules[p->tok.kind].prefix != NULL;
}

/* After an element inside brackets, another expression: Python 3.11's
 * "Perhaps you forgot a comma?", at the start of the element (not after a
 * name followed by a string, as Python). */
static void check_missing_comma(struct parser *p, const struct ast *e)
{
	if (p->failed || !e || !can_start_expr(p))
		return;
	while (e->kind == AST_IFEXP && e->ifexp.orelse)
		e = e->ifexp.orelse; /* Python's element is a disjunction */
	if (e->kind == AST_NAME && p->tok.kind == TOK_STRING)
		return;
	error_at(p, e->loc, "invalid syntax. Perhaps you forgot a comma?");
	p->generic = true; /* a tokenizer error further on wins, as in Python */
}

/* expr_list: expr (',' expr)* [','] -- a tuple when there is a comma.
 * Operands are parsed at min (targets of 'for' stop before 'in'). */
static struct ast *parse_expr_list(struct parser *p, enum prec min)
{
	struct src_loc start = p->tok.loc;
	struct ast *first = parse_prec(p, min);
	if (!check(p, TOK_COMMA))
		return first;
	struct ast *t = new_node(p, AST_TUPLE, start);
	push(p, &t->elts, first);
	add_child(p, t, first);
	while (accept(p, TOK_COMMA) && can_start_expr(p)) {
		struct ast *e = parse_prec(p, min);
		push(p, &t->elts, e);
		add_child(p, t, e);
	}
	return t;
}

/* atom: NAME */
static struct ast *parse_name(struct parser *p)
{
	struct ast *n = new_node(p, AST_NAME, p->tok.loc);
	n->name = copy_text(p, p->tok.start, p->tok.len);
	advance(p);
	return n;
}

/* atom: INT | FLOAT */
static struct ast *parse_number(struct parser *p)
{
	struct ast *n = new_node(p, check(p, TOK_INT) ? AST_INT : AST_FLOAT, p->tok.loc);
	if (check(p, TOK_INT))
		n->ival = p->tok.ival;
	else
		n->fval = p->tok.fval;
	advance(p);
	return n;
}

/* atom: STRING+ (adjacent literals are concatenated) */
static struct ast *parse_string(struct parser *p)
{
	struct ast *n = new_node(p, AST_STR, p->tok.loc);
	char *s = NULL;
	size_t len = 0;
	while (check(p, TOK_STRING)) {
		char *more = realloc(s, len + p->tok.str_len + 1);
		if (!more) {
			error_at(p, p->tok.loc, "out of memory");
			break;
		}
		s = more;
		memcpy(s + len, p->tok.str, p->tok.str_len);
		len += p->tok.str_len;
		advance(p);
	}
	n->str.s = copy_text(p, s ? s : "", len);
	n->str.len = len;
	free(s);
	return n;
}

/* atom: None | True | False */
static struct ast *parse_constant(struct parser *p)
{
	enum ast_kind kind = check(p, TOK_NONE) ? AST_NONE : check(p, TOK_TRUE) ? AST_TRUE : AST_FALSE;
	struct ast *n = new_node(p, kind, p->tok.loc);
	advance(p);
	return n;
}

/* unary: ('-' | '+') unary | power */
static struct ast *parse_unary(struct parser *p)
{
	struct ast *n = new_node(p, AST_UNARY, p->tok.loc);
	n->unary.op = check(p, TOK_MINUS) ? AST_NEG : AST_POS;
	advance(p);
	n->unary.operand = parse_prec(p, PREC_UNARY);
	add_child(p, n, n->unary.operand);
	return n;
}

/* not_test: 'not' not_test | comparison */
static struct ast *parse_not(struct parser *p)
{
	struct ast *n = new_node(p, AST_UNARY, p->tok.loc);
	n->unary.op = AST_NOT;
	advance(p);
	n->unary.operand = parse_prec(p, PREC_NOT);
	add_child(p, n, n->unary.operand);
	return n;
}

/* group: '(' ')' | '(' expr ')' | '(' expr ',' [expr (',' expr)* [',']] ')' */
static struct ast *parse_group(struct parser *p)
{
	struct src_loc start = p->tok.loc;
	advance(p);
	if (accept(p, TOK_RPAREN))
		return new_node(p, AST_TUPLE, start);
	struct ast *first = parse_expr(p);
	reject_comprehension(p);
	check_missing_comma(p, first);
	if (accept(p, TOK_RPAREN))
		return first;
	if (!check(p, TOK_COMMA)) {
		error_unexpected(p, &p->tok);
		return first;
	}
	struct ast *t = new_node(p, AST_TUPLE, start);
	push(p, &t->elts, first);
	add_child(p, t, first);
	while (accept(p, TOK_COMMA) && !check(p, TOK_RPAREN)) {
		struct ast *e = parse_expr(p);
		check_missing_comma(p, e);
		push(p, &t->elts, e);
		add_child(p, t, e);
	}
	expect(p, TOK_RPAREN);
	return t;
}

/* list: '[' [expr (',' expr)* [',']] ']' */
static struct ast *parse_list(struct parser *p)
{
	struct ast *n = new_node(p, AST_LIST, p->tok.loc);
	advance(p);
	while (!check(p, TOK_RBRACKET) && !check(p, TOK_EOF)) {
		struct ast *e = parse_expr(p);
		reject_comprehension(p);
		check_missing_comma(p, e);
		push(p, &n->elts, e);
		add_child(p, n, e);
		if (!accept(p, TOK_COMMA))
			break;
	}
	expect(p, TOK_RBRACKET);
	return n;
}

/* binary: left op right, left associative */
static struct ast *parse_binary(struct parser *p, struct ast *left, struct src_loc start)
{
	const struct parse_rule *r = &rules[p->tok.kind];
	struct ast *n = new_node(p, AST_BINARY, start);
	n->binary.op = r->op;
	advance(p);
	n->binary.left = left;
	/* power: primary '**' unary -- right associative, and -2**2 == -(2**2) */
	n->binary.right = parse_prec(p, r->prec == PREC_POWER ? PREC_UNARY : r->prec + 1);
	add_child(p, n, left);
	add_child(p, n, n->binary.right);
	return n;
}

/* or_test: and_test ('or' and_test)*; and_test likewise: one node per chain */
static struct ast *parse_boolop(struct parser *p, struct ast *left, struct src_loc start)
{
	bool is_and = check(p, TOK_AND);
	enum prec prec = rules[p->tok.kind].prec;
	advance(p);
	struct ast *right = parse_prec(p, prec + 1);
	struct ast *n = left;
	if (left->kind != AST_BOOLOP || left->boolop.is_and != is_and) {
		n = new_node(p, AST_BOOLOP, start);
		n->boolop.is_and = is_and;
		push(p, &n->boolop.values, left);
		add_child(p, n, left);
	}
	push(p, &n->boolop.values, right);
	add_child(p, n, right);
	return n;
}

/* comparison: sum (comp_op sum)*, comp_op: < <= > >= == != in 'not' 'in' 'is' ['not'] */
static struct ast *parse_compare(struct parser *p, struct ast *left, struct src_loc start)
{
	struct ast *n = new_node(p, AST_COMPARE, start);
	n->compare.left = left;
	add_child(p, n, left);
	int cap = 0;
	while (rules[p->tok.kind].infix == parse_compare) {
		enum vm_cmpop op = rules[p->tok.kind].op;
		bool is_not = check(p, TOK_NOT), is_is = check(p, TOK_IS);
		advance(p);
		if (is_not)
			expect(p, TOK_IN);
		else if (is_is && accept(p, TOK_NOT))
			op = VC_IS_NOT;
		if (n->compare.n == cap) {
			cap = cap ? cap * 2 : 2;
			struct ast_cmp *links = ast_alloc(p->arena, (size_t)cap * sizeof *links);
			if (!links) {
				error_at(p, p->tok.loc, "out of memory");
				return n;
			}
			if (n->compare.n)
				memcpy(links, n->compare.links, (size_t)n->compare.n * sizeof *links);
			n->compare.links = links;
		}
		struct ast *right = parse_prec(p, PREC_CMP + 1);
		n->compare.links[n->compare.n++] = (struct ast_cmp){op, right};
		add_child(p, n, right);
	}
	return n;
}

/* conditional: or_test 'if' or_test 'else' expr */
static struct ast *parse_ifexp(struct parser *p, struct ast *body, struct src_loc start)
{
	struct ast *n = new_node(p, AST_IFEXP, start);
	advance(p);
	n->ifexp.body = body;
	n->ifexp.test = parse_prec(p, PREC_OR);
	if (!accept(p, TOK_ELSE))
		error_at(p, p->tok.loc, "expected 'else' after 'if' expression");
	n->ifexp.orelse = parse_prec(p, PREC_TERNARY);
	add_child(p, n, body);
	add_child(p, n, n->ifexp.test);
	add_child(p, n, n->ifexp.orelse);
	return n;
}

/* call: primary '(' [arg (',' arg)* [',']] ')', arg: expr | NAME '=' expr */
static struct ast *parse_call(struct parser *p, struct ast *func, struct src_loc start)
{
	struct ast *n = new_node(p, AST_CALL, start);
	n->call.func = func;
	add_child(p, n, func);
	advance(p);
	while (!check(p, TOK_RPAREN) && !check(p, TOK_EOF)) {
		if (check(p, TOK_STAR) || check(p, TOK_STARSTAR)) {
			error_at(p, p->tok.loc, "'%s' arguments are not supported in tj",
				 lexer_token_name(p->tok.kind));
			break;
		}
		struct ast *e = parse_expr(p);
		reject_comprehension(p);
		if (check(p, TOK_EQ)) {
			if (e->kind != AST_NAME) {
				error_at(p, e->loc,
					 "expression cannot contain assignment, perhaps you meant \"==\"?");
				break;
			}
			for (int i = 0; i < n->call.keywords.len; i++)
				if (strcmp(n->call.keywords.items[i]->keyword.name, e->name) == 0)
					error_at(p, e->loc, "keyword argument repeated: %s", e->name);
			advance(p);
			struct ast *kw = new_node(p, AST_KEYWORD, e->loc);
			kw->keyword.name = e->name;
			kw->keyword.value = parse_expr(p);
			check_missing_comma(p, kw->keyword.value);
			add_child(p, kw, kw->keyword.value);
			push(p, &n->call.keywords, kw);
			add_child(p, n, kw);
		} else {
			check_missing_comma(p, e);
			if (n->call.keywords.len > 0)
				error_at(p, e->loc, "positional argument follows keyword argument");
			push(p, &n->call.args, e);
			add_child(p, n, e);
		}
		if (!accept(p, TOK_COMMA))
			break;
	}
	expect(p, TOK_RPAREN);
	return n;
}

/* slice_item: expr | [expr] ':' [expr] [':' [expr]] */
static struct ast *parse_slice_item(struct parser *p)
{
	struct src_loc start = p->tok.loc;
	struct ast *lower = NULL;
	if (!check(p, TOK_COLON)) {
		lower = parse_expr(p);
		if (!check(p, TOK_COLON))
			return lower;
	}
	struct ast *n = new_node(p, AST_SLICE, start);
	advance(p);
	n->slice.lower = lower;
	if (can_start_expr(p))
		n->slice.upper = parse_expr(p);
	if (accept(p, TOK_COLON) && can_start_expr(p))
		n->slice.step = parse_expr(p);
	add_child(p, n, lower);
	add_child(p, n, n->slice.upper);
	add_child(p, n, n->slice.step);
	return n;
}

/* subscript: primary '[' slice_item (',' slice_item)* [','] ']' -- a tuple
 * of items when there is a comma: x[:, 0] */
static struct ast *parse_subscript(struct parser *p, struct ast *obj, struct src_loc start)
{
	struct ast *n = new_node(p, AST_SUBSCRIPT, start);
	advance(p);
	n->subscript.value = obj;
	struct src_loc index_start = p->tok.loc;
	struct ast *index = parse_slice_item(p);
	if (check(p, TOK_COMMA)) {
		struct ast *t = new_node(p, AST_TUPLE, index_start);
		push(p, &t->elts, index);
		add_child(p, t, index);
		while (accept(p, TOK_COMMA) && !check(p, TOK_RBRACKET)) {
			struct ast *e = parse_slice_item(p);
			push(p, &t->elts, e);
			add_child(p, t, e);
		}
		index = t;
	}
	n->subscript.index = index;
	add_child(p, n, obj);
	add_child(p, n, index);
	expect(p, TOK_RBRACKET);
	return n;
}

/* attribute: primary '.' NAME */
static struct ast *parse_attr(struct parser *p, struct ast *obj, struct src_loc start)
{
	struct ast *n = new_node(p, AST_ATTR, start);
	advance(p);
	n->attr.value = obj;
	add_child(p, n, obj);
	if (!check(p, TOK_NAME)) {
		error_unexpected(p, &p->tok);
		n->attr.name = "";
		return n;
	}
	n->attr.name = copy_text(p, p->tok.start, p->tok.len);
	advance(p);
	return n;
}

static const struct parse_rule rules[TOK_COUNT] = {
	[TOK_NAME] = {parse_name, NULL, PREC_NONE, 0, false},
	[TOK_INT] = {parse_number, NULL, PREC_NONE, 0, false},
	[TOK_FLOAT] = {parse_number, NULL, PREC_NONE, 0, false},
	[TOK_STRING] = {parse_string, NULL, PREC_NONE, 0, false},
	[TOK_NONE] = {parse_constant, NULL, PREC_NONE, 0, false},
	[TOK_TRUE] = {parse_constant, NULL, PREC_NONE, 0, false},
	[TOK_FALSE] = {parse_constant, NULL, PREC_NONE, 0, false},
	[TOK_LPAREN] = {parse_group, parse_call, PREC_POSTFIX, 0, false},
	[TOK_LBRACKET] = {parse_list, parse_subscript, PREC_POSTFIX, 0, false},
	[TOK_DOT] = {NULL, parse_attr, PREC_POSTFIX, 0, false},
	[TOK_STARSTAR] = {NULL, parse_binary, PREC_POWER, VB_POW, false},
	[TOK_STAR] = {NULL, parse_binary, PREC_PRODUCT, VB_MUL, false},
	[TOK_SLASH] = {NULL, parse_binary, PREC_PRODUCT, VB_TRUEDIV, false},
	[TOK_SLASHSLASH] = {NULL, parse_binary, PREC_PRODUCT, VB_FLOORDIV, false},
	[TOK_PERCENT] = {NULL, parse_binary, PREC_PRODUCT, VB_MOD, false},
	[TOK_AT] = {NULL, parse_binary, PREC_PRODUCT, VB_MATMUL, false},
	[TOK_PLUS] = {parse_unary, parse_binary, PREC_SUM, VB_ADD, false},
	[TOK_MINUS] = {parse_unary, parse_binary, PREC_SUM, VB_SUB, false},
	[TOK_LT] = {NULL, parse_compare, PREC_CMP, VC_LT, false},
	[TOK_LE] = {NULL, parse_compare, PREC_CMP, VC_LE, false},
	[TOK_GT] = {NULL, parse_compare, PREC_CMP, VC_GT, false},
	[TOK_GE] = {NULL, parse_compare, PREC_CMP, VC_GE, false},
	[TOK_EQEQ] = {NULL, parse_compare, PREC_CMP, VC_EQ, false},
	[TOK_NE] = {NULL, parse_compare, PREC_CMP, VC_NE, false},
	[TOK_IS] = {NULL, parse_compare, PREC_CMP, VC_IS, false},
	[TOK_IN] = {NULL, parse_compare, PREC_CMP, VC_IN, false},
	[TOK_NOT] = {parse_not, parse_compare, PREC_CMP, VC_NOT_IN, false},
	[TOK_AND] = {NULL, parse_boolop, PREC_AND, 0, false},
	[TOK_OR] = {NULL, parse_boolop, PREC_OR, 0, false},
	[TOK_IF] = {NULL, parse_ifexp, PREC_TERNARY, 0, false},
	[TOK_PLUSEQ] = {NULL, NULL, PREC_NONE, VB_ADD, true},
	[TOK_MINUSEQ] = {NULL, NULL, PREC_NONE, VB_SUB, true},
	[TOK_STAREQ] = {NULL, NULL, PREC_NONE, VB_MUL, true},
	[TOK_SLASHEQ] = {NULL, NULL, PREC_NONE, VB_TRUEDIV, true},
	[TOK_SLASHSLASHEQ] = {NULL, NULL, PREC_NONE, VB_FLOORDIV, true},
	[TOK_PERCENTEQ] = {NULL, NULL, PREC_NONE, VB_MOD, true},
	[TOK_STARSTAREQ] = {NULL, NULL, PREC_NONE, VB_POW, true},
	[TOK_ATEQ] = {NULL, NULL, PREC_NONE, VB_MATMUL, true},
};

/* The Pratt loop: a prefix rule, then infix rules while they bind at
 * least as tightly as min. */
static struct ast *parse_prec(struct parser *p, enum prec min)
{
	struct src_loc start = p->tok.loc;
	const struct parse_rule *r = &rules[p->tok.kind];
	struct ast *left;
	if (++p->depth > PARSER_MAX_DEPTH) {
		error_at(p, start, "expression too deeply nested");
		left = new_node(p, AST_NONE, start);
	} else if (!r->prefix || (check(p, TOK_NOT) && min > PREC_NOT)) {
		/* 'not' binds looser than what is asked for: a == not b */
		error_unexpected(p, &p->tok);
		left = new_node(p, AST_NONE, start);
	} else {
		left = r->prefix(p);
	}
	while (rules[p->tok.kind].infix && rules[p->tok.kind].prec >= min)
		left = rules[p->tok.kind].infix(p, left, start);
	p->depth--;
	return left;
}

/* ---- statements ---- */

static void parse_statement(struct parser *p, struct ast_list *out);

/* A valid target of '=' or 'for': a name, a subscript, or a tuple or list
 * of targets. */
static void check_target(struct parser *p, const struct ast *e)
{
	switch (e->kind) {
	case AST_NAME:
	case AST_SUBSCRIPT:
		return;
	case AST_TUPLE:
	case AST_LIST:
		for (int i = 0; i < e->elts.len; i++)
			check_target(p, e->elts.items[i]);
		return;
	default:
		error_at(p, e->loc, "cannot assign to %s", ast_describe(e));
	}
}

static void check_aug_target(struct parser *p, const struct ast *e)
{
	if (e->kind == AST_NAME || e->kind == AST_SUBSCRIPT)
		return;
	const char *what = ast_describe(e);
	error_at(p, e->loc, "'%s' is an illegal expression for augmented assignment",
		 what ? what : ast_kind_name(e->kind));
}

/* expr_stmt: expr_list ('=' expr_list)* | expr_list augop expr_list */
static struct ast *parse_expr_stmt(struct parser *p)
{
	struct src_loc start = p->tok.loc;
	struct ast *e = parse_expr_list(p, PREC_TERNARY);
	if (check(p, TOK_EQ)) {
		struct ast *n = new_node(p, AST_ASSIGN, start);
		while (accept(p, TOK_EQ)) {
			check_target(p, e);
			push(p, &n->assign.targets, e);
			e = parse_expr_list(p, PREC_TERNARY);
		}
		n->assign.value = e;
		return n;
	}
	if (rules[p->tok.kind].augassign) {
		check_aug_target(p, e);
		struct ast *n = new_node(p, AST_AUG_ASSIGN, start);
		n->aug.op = rules[p->tok.kind].op;
		advance(p);
		n->aug.target = e;
		n->aug.value = parse_expr_list(p, PREC_TERNARY);
		return n;
	}
	struct ast *n = new_node(p, AST_EXPR_STMT, start);
	n->value = e;
	return n;
}

/* simple_stmt: 'pass' | 'break' | 'continue' | 'return' [expr_list]
 *            | 'global' NAME (',' NAME)* | expr_stmt */
static struct ast *parse_simple(struct parser *p)
{
	struct src_loc start = p->tok.loc;
	struct ast *n;
	switch (p->tok.kind) {
	case TOK_PASS:
	case TOK_BREAK:
	case TOK_CONTINUE:
		n = new_node(p, check(p, TOK_PASS) ? AST_PASS : check(p, TOK_BREAK) ? AST_BREAK : AST_CONTINUE,
			     start);
		advance(p);
		return n;
	case TOK_RETURN:
		n = new_node(p, AST_RETURN, start);
		advance(p);
		if (can_start_expr(p))
			n->value = parse_expr_list(p, PREC_TERNARY);
		return n;
	case TOK_GLOBAL:
		n = new_node(p, AST_GLOBAL, start);
		advance(p);
		do {
			if (!check(p, TOK_NAME)) {
				error_unexpected(p, &p->tok);
				break;
			}
			push(p, &n->names, parse_name(p));
		} while (accept(p, TOK_COMMA));
		return n;
	default:
		return parse_expr_stmt(p);
	}
}

/* simple_stmts: simple_stmt (';' simple_stmt)* [';'] NEWLINE */
static void parse_simple_stmts(struct parser *p, struct ast_list *out)
{
	do {
		if (check(p, TOK_NEWLINE))
			break; /* after a trailing ';' */
		push(p, out, parse_simple(p));
	} while (accept(p, TOK_SEMICOLON));
	expect(p, TOK_NEWLINE);
}

/* block: NEWLINE INDENT statement+ DEDENT | simple_stmts
 * what and line name the header for "expected an indented block". */
static void parse_block(struct parser *p, struct ast_list *out, const char *what, int line)
{
	if (!accept(p, TOK_NEWLINE)) {
		parse_simple_stmts(p, out);
		return;
	}
	if (!accept(p, TOK_INDENT)) {
		error_at(p, p->tok.loc, "expected an indented block after %s on line %d", what, line);
		return;
	}
	while (!check(p, TOK_DEDENT) && !check(p, TOK_EOF))
		parse_statement(p, out);
	accept(p, TOK_DEDENT);
}

/* else_block: 'else' ':' block */
static void parse_else(struct parser *p, struct ast_list *out)
{
	int line = p->tok.loc.line;
	advance(p);
	expect_colon(p, true);
	parse_block(p, out, "'else' statement", line);
}

/* if_stmt: 'if' expr ':' block ('elif' expr ':' block)* [else_block]
 * (an elif is an if in the else branch, so it counts as nesting) */
static struct ast *parse_if(struct parser *p)
{
	bool is_elif = check(p, TOK_ELIF);
	struct ast *n = new_node(p, AST_IF, p->tok.loc);
	advance(p);
	n->cond.test = parse_expr(p);
	expect_colon(p, false);
	parse_block(p, &n->cond.body, is_elif ? "'elif' statement" : "'if' statement", n->loc.line);
	if (check(p, TOK_ELIF)) {
		if (++p->depth > PARSER_MAX_DEPTH)
			error_at(p, p->tok.loc, "too many nested blocks");
		push(p, &n->cond.orelse, parse_if(p));
		p->depth--;
	} else if (check(p, TOK_ELSE)) {
		parse_else(p, &n->cond.orelse);
	}
	return n;
}

/* while_stmt: 'while' expr ':' block [else_block] */
static struct ast *parse_while(struct parser *p)
{
	struct ast *n = new_node(p, AST_WHILE, p->tok.loc);
	advance(p);
	n->cond.test = parse_expr(p);
	expect_colon(p, false);
	parse_block(p, &n->cond.body, "'while' statement", n->loc.line);
	if (check(p, TOK_ELSE))
		parse_else(p, &n->cond.orelse);
	return n;
}

/* for_stmt: 'for' targets 'in' expr_list ':' block [else_block]
 * (targets are parsed above comparisons, so that 'in' ends them) */
static struct ast *parse_for(struct parser *p)
{
	struct ast *n = new_node(p, AST_FOR, p->tok.loc);
	advance(p);
	n->loop.target = parse_expr_list(p, PREC_SUM);
	check_target(p, n->loop.target);
	expect(p, TOK_IN);
	n->loop.iter = parse_expr_list(p, PREC_TERNARY);
	expect_colon(p, false);
	parse_block(p, &n->loop.body, "'for' statement", n->loc.line);
	if (check(p, TOK_ELSE))
		parse_else(p, &n->loop.orelse);
	return n;
}

/* funcdef: 'def' NAME '(' [param (',' param)* [',']] ')' ':' block,
 * param: NAME ['=' expr] */
static struct ast *parse_def(struct parser *p, struct ast_list decorators)
{
	struct ast *n = new_node(p, AST_DEF, p->tok.loc);
	n->def.decorators = decorators;
	n->def.name = "";
	advance(p);
	if (!check(p, TOK_NAME)) {
		error_unexpected(p, &p->tok);
		return n;
	}
	n->def.name = copy_text(p, p->tok.start, p->tok.len);
	advance(p);
	if (!accept(p, TOK_LPAREN))
		error_at(p, p->tok.loc, "expected '('");
	while (!check(p, TOK_RPAREN) && !check(p, TOK_EOF)) {
		if (check(p, TOK_STAR) || check(p, TOK_STARSTAR)) {
			error_at(p, p->tok.loc, "'%s' parameters are not supported in tj",
				 lexer_token_name(p->tok.kind));
			break;
		}
		if (!check(p, TOK_NAME)) {
			error_unexpected(p, &p->tok);
			break;
		}
		struct ast *param = parse_name(p);
		for (int i = 0; i < n->def.params.len; i++)
			if (strcmp(n->def.params.items[i]->name, param->name) == 0)
				error_at(p, param->loc, "duplicate argument '%s' in function definition",
					 param->name);
		if (accept(p, TOK_EQ))
			push(p, &n->def.defaults, parse_expr(p));
		else if (n->def.defaults.len > 0)
			error_at(p, param->loc, "non-default argument follows default argument");
		push(p, &n->def.params, param);
		if (!accept(p, TOK_COMMA))
			break;
	}
	expect(p, TOK_RPAREN);
	expect_colon(p, true);
	parse_block(p, &n->def.body, "function definition", n->loc.line);
	return n;
}

/* decorated: ('@' expr NEWLINE)+ funcdef */
static struct ast *parse_decorated(struct parser *p)
{
	struct ast_list decorators = {NULL, 0, 0};
	while (accept(p, TOK_AT)) {
		push(p, &decorators, parse_expr(p));
		expect(p, TOK_NEWLINE);
	}
	if (!check(p, TOK_DEF))
		error_unexpected(p, &p->tok);
	return parse_def(p, decorators);
}

/* statement: if_stmt | while_stmt | for_stmt | funcdef | decorated | simple_stmts */
static void parse_statement(struct parser *p, struct ast_list *out)
{
	struct ast_list none = {NULL, 0, 0};
	if (++p->depth > PARSER_MAX_DEPTH)
		error_at(p, p->tok.loc, "too many nested blocks");
	switch (p->tok.kind) {
	case TOK_IF:
		push(p, out, parse_if(p));
		break;
	case TOK_WHILE:
		push(p, out, parse_while(p));
		break;
	case TOK_FOR:
		push(p, out, parse_for(p));
		break;
	case TOK_DEF:
		push(p, out, parse_def(p, none));
		break;
	case TOK_AT:
		push(p, out, parse_decorated(p));
		break;
	case TOK_INDENT:
	case TOK_DEDENT:
	case TOK_NEWLINE:
		error_unexpected(p, &p->tok);
		break;
	default:
		parse_simple_stmts(p, out);
	}
	p->depth--;
}

/* file: statement* EOF */
struct ast *parser_parse(const struct source *src, struct ast_arena *arena, struct src_loc *err_loc,
			 char **err_msg)
{
	struct parser *p = calloc(1, sizeof *p);
	if (!p) {
		*err_loc = (struct src_loc){0, 0};
		*err_msg = strdup("out of memory");
		return NULL;
	}
	lexer_init(&p->lx, src);
	p->arena = arena;
	struct ast *module = new_node(p, AST_MODULE, (struct src_loc){1, 1});
	advance(p);
	while (!check(p, TOK_EOF))
		parse_statement(p, &module->body);

	if (p->failed && p->generic) {
		/* As CPython: an error of the tokenizer further on explains a
		 * bare "invalid syntax" better (a bracket never closed, say). */
		struct token t;
		enum token_kind k;
		while ((k = lexer_next(&p->lx, &t)) != TOK_EOF && k != TOK_ERROR)
			;
		if (k == TOK_ERROR) {
			free(p->err_msg);
			p->err_msg = p->lx.err_msg ? strdup(p->lx.err_msg) : NULL;
			p->err_loc = p->lx.err_loc;
		}
	}
	if (p->failed) {
		*err_loc = p->err_loc;
		*err_msg = p->err_msg ? p->err_msg : strdup("out of memory");
		module = NULL;
	}
	lexer_release(&p->lx);
	free(p);
	return module;
}
