/* ast.c - the AST arena and the AST dump. */
#include "ast.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- the arena: bump allocation in blocks, freed in one call ---- */

struct ast_arena_block {
	struct ast_arena_block *next;
	size_t used, size;
	_Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK_SIZE (64 * 1024)

void ast_arena_init(struct ast_arena *a)
{
	a->head = NULL;
}

void ast_arena_release(struct ast_arena *a)
{
	struct ast_arena_block *b = a->head;
	while (b) {
		struct ast_arena_block *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
}

void *ast_alloc(struct ast_arena *a, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	struct ast_arena_block *b = a->head;
	if (!b || b->size - b->used < size) {
		size_t bsize = size > ARENA_BLOCK_SIZE ? size : ARENA_BLOCK_SIZE;
		b = malloc(sizeof *b + bsize);
		if (!b)
			return NULL;
		b->used = 0;
		b->size = bsize;
		b->next = a->head;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += size;
	memset(p, 0, size);
	return p;
}

char *ast_strndup(struct ast_arena *a, const char *s, size_t n)
{
	char *p = ast_alloc(a, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

bool ast_list_push(struct ast_arena *a, struct ast_list *l, struct ast *n)
{
	if (l->len == l->cap) {
		/* the old array stays in the arena: at most as much again */
		int cap = l->cap ? l->cap * 2 : 4;
		struct ast **items = ast_alloc(a, (size_t)cap * sizeof *items);
		if (!items)
			return false;
		if (l->len)
			memcpy(items, l->items, (size_t)l->len * sizeof *items);
		l->items = items;
		l->cap = cap;
	}
	l->items[l->len++] = n;
	return true;
}

/* ---- inspection ---- */

static const char *const kind_names[AST_KIND_COUNT] = {
#define AST_NAME(name, dump, what) [AST_##name] = dump,
	AST_KINDS(AST_NAME)
#undef AST_NAME
};

static const char *const kind_whats[AST_KIND_COUNT] = {
#define AST_WHAT(name, dump, what) [AST_##name] = what,
	AST_KINDS(AST_WHAT)
#undef AST_WHAT
};

const char *ast_kind_name(enum ast_kind kind)
{
	return kind < AST_KIND_COUNT ? kind_names[kind] : "?";
}

const char *ast_describe(const struct ast *n)
{
	return kind_whats[n->kind];
}

bool ast_is_expr(const struct ast *n)
{
	return n->kind < AST_EXPR_STMT;
}

/* ---- the dump ---- */

static void dump_loc(const struct ast *n, struct strbuf *out, unsigned flags)
{
	if (flags & AST_DUMP_LOCS)
		sb_printf(out, "@%d:%d", n->loc.line, n->loc.col);
}

/* A string as Python's repr writes it, always in single quotes. */
static void dump_str(const char *s, size_t len, struct strbuf *out)
{
	sb_putc(out, '\'');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '\\': sb_puts(out, "\\\\"); break;
		case '\'': sb_puts(out, "\\'"); break;
		case '\n': sb_puts(out, "\\n"); break;
		case '\t': sb_puts(out, "\\t"); break;
		case '\r': sb_puts(out, "\\r"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				sb_printf(out, "\\x%02x", c);
			else
				sb_putc(out, (char)c);
		}
	}
	sb_putc(out, '\'');
}

static void dump_expr(const struct ast *n, struct strbuf *out, unsigned flags);

/* "(head@loc" for a compound expression */
static void open_form(const char *head, const struct ast *n, struct strbuf *out, unsigned flags)
{
	sb_putc(out, '(');
	sb_puts(out, head);
	dump_loc(n, out, flags);
}

static void dump_list(const struct ast_list *l, struct strbuf *out, unsigned flags)
{
	for (int i = 0; i < l->len; i++) {
		sb_putc(out, ' ');
		dump_expr(l->items[i], out, flags);
	}
}

static void dump_opt(const struct ast *n, struct strbuf *out, unsigned flags)
{
	sb_putc(out, ' ');
	if (n)
		dump_expr(n, out, flags);
	else
		sb_putc(out, '_');
}

static void dump_expr(const struct ast *n, struct strbuf *out, unsigned flags)
{
	static const char *const unops[] = {[AST_NEG] = "neg", [AST_POS] = "pos", [AST_NOT] = "not"};
	switch (n->kind) {
	case AST_NAME:
		sb_puts(out, n->name);
		break;
	case AST_INT:
		sb_printf(out, "%" PRId64, n->ival);
		break;
	case AST_FLOAT:
		float_repr(n->fval, out);
		break;
	case AST_STR:
		dump_str(n->str.s, n->str.len, out);
		break;
	case AST_NONE:
	case AST_TRUE:
	case AST_FALSE:
		sb_puts(out, kind_names[n->kind]);
		break;
	case AST_UNARY:
		open_form(unops[n->unary.op], n, out, flags);
		dump_opt(n->unary.operand, out, flags);
		sb_putc(out, ')');
		return;
	case AST_BINARY:
		open_form(code_binop_symbol(n->binary.op), n, out, flags);
		dump_opt(n->binary.left, out, flags);
		dump_opt(n->binary.right, out, flags);
		sb_putc(out, ')');
		return;
	case AST_BOOLOP:
		open_form(n->boolop.is_and ? "and" : "or", n, out, flags);
		dump_list(&n->boolop.values, out, flags);
		sb_putc(out, ')');
		return;
	case AST_COMPARE:
		open_form("cmp", n, out, flags);
		dump_opt(n->compare.left, out, flags);
		for (int i = 0; i < n->compare.n; i++) {
			sb_printf(out, " %s", code_cmpop_symbol(n->compare.links[i].op));
			dump_opt(n->compare.links[i].right, out, flags);
		}
		sb_putc(out, ')');
		return;
	case AST_IFEXP:
		open_form("ifexp", n, out, flags);
		dump_opt(n->ifexp.test, out, flags);
		dump_opt(n->ifexp.body, out, flags);
		dump_opt(n->ifexp.orelse, out, flags);
		sb_putc(out, ')');
		return;
	case AST_CALL:
		open_form("call", n, out, flags);
		dump_opt(n->call.func, out, flags);
		dump_list(&n->call.args, out, flags);
		dump_list(&n->call.keywords, out, flags);
		sb_putc(out, ')');
		return;
	case AST_KEYWORD:
		sb_puts(out, n->keyword.name);
		dump_loc(n, out, flags);
		sb_putc(out, '=');
		dump_expr(n->keyword.value, out, flags);
		return;
	case AST_ATTR:
		open_form(".", n, out, flags);
		dump_opt(n->attr.value, out, flags);
		sb_printf(out, " %s)", n->attr.name);
		return;
	case AST_SUBSCRIPT:
		open_form("sub", n, out, flags);
		dump_opt(n->subscript.value, out, flags);
		dump_opt(n->subscript.index, out, flags);
		sb_putc(out, ')');
		return;
	case AST_SLICE:
		open_form("slice", n, out, flags);
		dump_opt(n->slice.lower, out, flags);
		dump_opt(n->slice.upper, out, flags);
		dump_opt(n->slice.step, out, flags);
		sb_putc(out, ')');
		return;
	case AST_LIST:
	case AST_TUPLE:
		open_form(kind_names[n->kind], n, out, flags);
		dump_list(&n->elts, out, flags);
		sb_putc(out, ')');
		return;
	default:
		sb_printf(out, "<%s>", kind_names[n->kind]);
		return;
	}
	dump_loc(n, out, flags);
}

static void dump_stmt(const struct ast *n, struct strbuf *out, unsigned flags, int indent);

static void dump_block(const struct ast_list *body, struct strbuf *out, unsigned flags, int indent)
{
	for (int i = 0; i < body->len; i++)
		dump_stmt(body->items[i], out, flags, indent);
}

static void dump_head(const char *word, const struct ast *n, struct strbuf *out, unsigned flags,
		      int indent)
{
	sb_printf(out, "%*s%s", indent * 2, "", word);
	dump_loc(n, out, flags);
}

static void dump_else(const struct ast_list *orelse, struct strbuf *out, unsigned flags, int indent)
{
	if (orelse->len == 0)
		return;
	sb_printf(out, "%*selse\n", indent * 2, "");
	dump_block(orelse, out, flags, indent + 1);
}

static void dump_stmt(const struct ast *n, struct strbuf *out, unsigned flags, int indent)
{
	if (ast_is_expr(n)) { /* a bare expression: dump_stmt is the entry point too */
		sb_printf(out, "%*s", indent * 2, "");
		dump_expr(n, out, flags);
		sb_putc(out, '\n');
		return;
	}
	if (n->kind == AST_DEF)
		for (int i = 0; i < n->def.decorators.len; i++) {
			sb_printf(out, "%*s@", indent * 2, "");
			dump_expr(n->def.decorators.items[i], out, flags);
			sb_putc(out, '\n');
		}
	dump_head(kind_names[n->kind], n, out, flags, indent);
	switch (n->kind) {
	case AST_EXPR_STMT:
		dump_opt(n->value, out, flags);
		break;
	case AST_RETURN:
		if (n->value)
			dump_opt(n->value, out, flags);
		break;
	case AST_ASSIGN:
		for (int i = 0; i < n->assign.targets.len; i++) {
			dump_opt(n->assign.targets.items[i], out, flags);
			sb_puts(out, " =");
		}
		dump_opt(n->assign.value, out, flags);
		break;
	case AST_AUG_ASSIGN:
		dump_opt(n->aug.target, out, flags);
		sb_printf(out, " %s=", code_binop_symbol(n->aug.op));
		dump_opt(n->aug.value, out, flags);
		break;
	case AST_GLOBAL:
		dump_list(&n->names, out, flags);
		break;
	case AST_IF:
	case AST_WHILE:
		dump_opt(n->cond.test, out, flags);
		sb_putc(out, '\n');
		dump_block(&n->cond.body, out, flags, indent + 1);
		dump_else(&n->cond.orelse, out, flags, indent);
		return;
	case AST_FOR:
		dump_opt(n->loop.target, out, flags);
		sb_puts(out, " in");
		dump_opt(n->loop.iter, out, flags);
		sb_putc(out, '\n');
		dump_block(&n->loop.body, out, flags, indent + 1);
		dump_else(&n->loop.orelse, out, flags, indent);
		return;
	case AST_DEF: {
		sb_printf(out, " %s (", n->def.name);
		int first_default = n->def.params.len - n->def.defaults.len;
		for (int i = 0; i < n->def.params.len; i++) {
			if (i)
				sb_putc(out, ' ');
			dump_expr(n->def.params.items[i], out, flags);
			if (i >= first_default) {
				sb_putc(out, '=');
				dump_expr(n->def.defaults.items[i - first_default], out, flags);
			}
		}
		sb_puts(out, ")\n");
		dump_block(&n->def.body, out, flags, indent + 1);
		return;
	}
	case AST_MODULE:
		sb_putc(out, '\n');
		dump_block(&n->body, out, flags, indent + 1);
		return;
	default: /* break, continue, pass */
		break;
	}
	sb_putc(out, '\n');
}

void ast_dump(const struct ast *n, struct strbuf *out, unsigned flags)
{
	if (ast_is_expr(n))
		dump_expr(n, out, flags);
	else
		dump_stmt(n, out, flags, 0);
}
