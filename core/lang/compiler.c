/* compiler.c - an AST to code objects.
 *
 *   compile_ast:  scan_*     one scope per function: what each name is
 *                 resolve    free variables of nested functions -> cells
 *                 gen_*      bytecode, one code object per scope
 *
 * Errors (scope errors, "'return' outside function", out of memory) are
 * sticky: the first is kept, the passes run to their end doing nothing
 * more, and the caller frees whatever was built.
 */
#define _GNU_SOURCE
#include "compiler.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"
#include "util.h"

/* ---- state ---- */

/* An ordered set of names (arrays in the compiler's arena). */
struct name_set {
	const char **items;
	int len, cap;
};

struct scope {
	struct scope *parent;
	const struct ast *def;    /* NULL: the module */
	const struct ast *node;   /* the AST_DEF or the AST_MODULE */
	const struct ast_list *body;
	struct name_set params;
	struct name_set locals;   /* names bound here, parameters first (module: for the checks only) */
	struct name_set globals;  /* declared global */
	struct name_set used;     /* names loaded here */
	struct name_set cells;    /* locals that inner functions use */
	struct name_set frees;    /* names of enclosing functions used here or below */
	struct scope **children;  /* in source order */
	int nchildren, children_cap;
	int loop_depth;           /* while scanning */
};

struct compiler {
	struct source *src;
	struct ast_arena arena;
	bool failed;
	struct src_loc err_loc;
	char *err_msg;
};

struct loop {
	struct loop *outer;
	bool is_for;           /* break pops the iterator */
	int continue_target;
	int *breaks;           /* JUMPs to patch to the end of the loop */
	int nbreaks, cap;
};

/* one code object being generated */
struct unit {
	struct compiler *c;
	struct scope *scope;
	struct code *code;
	struct name_set slots; /* local_names, for lookups */
	int insns_cap, locs_cap, consts_cap, names_cap;
	struct loop *loop;
};

static void error_at(struct compiler *c, struct src_loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void error_at(struct compiler *c, struct src_loc loc, const char *fmt, ...)
{
	if (c->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&c->err_msg, fmt, ap) < 0)
		c->err_msg = NULL;
	va_end(ap);
	c->failed = true;
	c->err_loc = loc;
}

static void out_of_memory(struct compiler *c)
{
	error_at(c, (struct src_loc){0, 0}, "out of memory");
}

/* ---- name sets ---- */

static int set_index(const struct name_set *s, const char *name)
{
	for (int i = 0; i < s->len; i++)
		if (strcmp(s->items[i], name) == 0)
			return i;
	return -1;
}

static bool set_has(const struct name_set *s, const char *name)
{
	return set_index(s, name) >= 0;
}

static void set_add(struct compiler *c, struct name_set *s, const char *name)
{
	if (set_has(s, name))
		return;
	if (s->len == s->cap) {
		int cap = s->cap ? s->cap * 2 : 8;
		const char **items = ast_alloc(&c->arena, (size_t)cap * sizeof *items);
		if (!items) {
			out_of_memory(c);
			return;
		}
		if (s->len)
			memcpy(items, s->items, (size_t)s->len * sizeof *items);
		s->items = items;
		s->cap = cap;
	}
	s->items[s->len++] = name;
}

/* ---- pass 1: scopes ---- */

static struct scope *scope_new(struct compiler *c, struct scope *parent, const struct ast *node)
{
	struct scope *s = ast_alloc(&c->arena, sizeof *s);
	if (!s) {
		out_of_memory(c);
		return NULL;
	}
	s->parent = parent;
	s->node = node;
	s->def = node->kind == AST_DEF ? node : NULL;
	s->body = s->def ? &node->def.body : &node->body;
	if (parent) {
		if (parent->nchildren == parent->children_cap) {
			int cap = parent->children_cap ? parent->children_cap * 2 : 4;
			struct scope **ch = ast_alloc(&c->arena, (size_t)cap * sizeof *ch);
			if (!ch) {
				out_of_memory(c);
				return NULL;
			}
			if (parent->nchildren)
				memcpy(ch, parent->children, (size_t)parent->nchildren * sizeof *ch);
			parent->children = ch;
			parent->children_cap = cap;
		}
		parent->children[parent->nchildren++] = s;
	}
	return s;
}

static void scan_bind(struct compiler *c, struct scope *s, const char *name)
{
	if (!set_has(&s->globals, name))
		set_add(c, &s->locals, name);
}

static void scan_expr(struct compiler *c, struct scope *s, const struct ast *n);

static void scan_exprs(struct compiler *c, struct scope *s, const struct ast_list *l)
{
	for (int i = 0; i < l->len; i++)
		scan_expr(c, s, l->items[i]);
}

static void scan_opt(struct compiler *c, struct scope *s, const struct ast *n)
{
	if (n)
		scan_expr(c, s, n);
}

static void scan_expr(struct compiler *c, struct scope *s, const struct ast *n)
{
	switch (n->kind) {
	case AST_NAME:
		set_add(c, &s->used, n->name);
		break;
	case AST_UNARY:
		scan_expr(c, s, n->unary.operand);
		break;
	case AST_BINARY:
		scan_expr(c, s, n->binary.left);
		scan_expr(c, s, n->binary.right);
		break;
	case AST_BOOLOP:
		scan_exprs(c, s, &n->boolop.values);
		break;
	case AST_COMPARE:
		scan_expr(c, s, n->compare.left);
		for (int i = 0; i < n->compare.n; i++)
			scan_expr(c, s, n->compare.links[i].right);
		break;
	case AST_IFEXP:
		scan_expr(c, s, n->ifexp.test);
		scan_expr(c, s, n->ifexp.body);
		scan_expr(c, s, n->ifexp.orelse);
		break;
	case AST_CALL:
		scan_expr(c, s, n->call.func);
		scan_exprs(c, s, &n->call.args);
		scan_exprs(c, s, &n->call.keywords);
		break;
	case AST_KEYWORD:
		scan_expr(c, s, n->keyword.value);
		break;
	case AST_ATTR:
		scan_expr(c, s, n->attr.value);
		break;
	case AST_SUBSCRIPT:
		scan_expr(c, s, n->subscript.value);
		scan_expr(c, s, n->subscript.index);
		break;
	case AST_SLICE:
		scan_opt(c, s, n->slice.lower);
		scan_opt(c, s, n->slice.upper);
		scan_opt(c, s, n->slice.step);
		break;
	case AST_LIST:
	case AST_TUPLE:
		scan_exprs(c, s, &n->elts);
		break;
	default: /* constants */
		break;
	}
}

static void scan_target(struct compiler *c, struct scope *s, const struct ast *n)
{
	switch (n->kind) {
	case AST_NAME:
		scan_bind(c, s, n->name);
		break;
	case AST_TUPLE:
	case AST_LIST:
		for (int i = 0; i < n->elts.len; i++)
			scan_target(c, s, n->elts.items[i]);
		break;
	default: /* a subscript: its parts are loads */
		scan_expr(c, s, n);
	}
}

static void scan_body(struct compiler *c, struct scope *s, const struct ast_list *body);

static void scan_global(struct compiler *c, struct scope *s, const struct ast *n)
{
	for (int i = 0; i < n->names.len; i++) {
		const struct ast *name = n->names.items[i];
		const char *id = name->name;
		if (set_has(&s->params, id))
			error_at(c, n->loc, "name '%s' is parameter and global", id);
		else if (set_has(&s->locals, id))
			error_at(c, n->loc, "name '%s' is assigned to before global declaration", id);
		else if (set_has(&s->used, id))
			error_at(c, n->loc, "name '%s' is used prior to global declaration", id);
		set_add(c, &s->globals, id);
	}
}

static void scan_def(struct compiler *c, struct scope *s, const struct ast *n)
{
	/* decorators and defaults run in the enclosing scope */
	scan_exprs(c, s, &n->def.decorators);
	scan_exprs(c, s, &n->def.defaults);
	scan_bind(c, s, n->def.name);
	struct scope *child = scope_new(c, s, n);
	if (!child)
		return;
	for (int i = 0; i < n->def.params.len; i++) {
		set_add(c, &child->params, n->def.params.items[i]->name);
		set_add(c, &child->locals, n->def.params.items[i]->name);
	}
	scan_body(c, child, &n->def.body);
}

static void scan_stmt(struct compiler *c, struct scope *s, const struct ast *n)
{
	switch (n->kind) {
	case AST_EXPR_STMT:
		scan_expr(c, s, n->value);
		break;
	case AST_ASSIGN:
		scan_expr(c, s, n->assign.value);
		for (int i = 0; i < n->assign.targets.len; i++)
			scan_target(c, s, n->assign.targets.items[i]);
		break;
	case AST_AUG_ASSIGN:
		scan_expr(c, s, n->aug.target); /* x += 1 reads x */
		scan_expr(c, s, n->aug.value);
		scan_target(c, s, n->aug.target);
		break;
	case AST_IF:
		scan_expr(c, s, n->cond.test);
		scan_body(c, s, &n->cond.body);
		scan_body(c, s, &n->cond.orelse);
		break;
	case AST_WHILE:
		scan_expr(c, s, n->cond.test);
		s->loop_depth++;
		scan_body(c, s, &n->cond.body);
		s->loop_depth--;
		scan_body(c, s, &n->cond.orelse);
		break;
	case AST_FOR:
		scan_expr(c, s, n->loop.iter);
		scan_target(c, s, n->loop.target);
		s->loop_depth++;
		scan_body(c, s, &n->loop.body);
		s->loop_depth--;
		scan_body(c, s, &n->loop.orelse);
		break;
	case AST_BREAK:
		if (s->loop_depth == 0)
			error_at(c, n->loc, "'break' outside loop");
		break;
	case AST_CONTINUE:
		if (s->loop_depth == 0)
			error_at(c, n->loc, "'continue' not properly in loop");
		break;
	case AST_RETURN:
		if (!s->def)
			error_at(c, n->loc, "'return' outside function");
		if (n->value)
			scan_expr(c, s, n->value);
		break;
	case AST_GLOBAL:
		scan_global(c, s, n);
		break;
	case AST_DEF:
		scan_def(c, s, n);
		break;
	default: /* pass */
		break;
	}
}

static void scan_body(struct compiler *c, struct scope *s, const struct ast_list *body)
{
	for (int i = 0; i < body->len && !c->failed; i++)
		scan_stmt(c, s, body->items[i]);
}

/* Is name, used in function s but not bound there, a local of an
 * enclosing function? Then it is a cell there and a free variable of s
 * and of every function in between. */
static void resolve_name(struct compiler *c, struct scope *s, const char *name)
{
	for (struct scope *a = s->parent; a && a->def; a = a->parent) {
		if (set_has(&a->globals, name))
			return;
		if (set_has(&a->locals, name)) {
			set_add(c, &a->cells, name);
			for (struct scope *t = s; t != a; t = t->parent)
				set_add(c, &t->frees, name);
			return;
		}
	}
}

static void resolve(struct compiler *c, struct scope *s)
{
	if (s->def)
		for (int i = 0; i < s->used.len; i++) {
			const char *name = s->used.items[i];
			if (!set_has(&s->locals, name) && !set_has(&s->globals, name))
				resolve_name(c, s, name);
		}
	for (int i = 0; i < s->nchildren; i++)
		resolve(c, s->children[i]);
}

/* ---- pass 2: code generation ---- */

/* Appends an instruction; returns its index (-1 after an error). */
static int emit(struct unit *u, opcode op, int64_t a, struct src_loc loc)
{
	struct code *code = u->code;
	if (u->c->failed)
		return -1;
	if (a < 0 || a > INSN_A_MAX) {
		error_at(u->c, loc, "code too large to compile");
		return -1;
	}
	if (!grow_array((void **)&code->insns, &u->insns_cap, code->ninsns + 1, sizeof *code->insns, 16) ||
	    !grow_array((void **)&code->locs, &u->locs_cap, code->ninsns + 1, sizeof *code->locs, 16)) {
		out_of_memory(u->c);
		return -1;
	}
	code->insns[code->ninsns] = INSN(op, (uint32_t)a);
	code->locs[code->ninsns] = loc;
	return code->ninsns++;
}

static int here(const struct unit *u)
{
	return u->code->ninsns;
}

/* Points the jump at pc to target. */
static void patch(struct unit *u, int pc, int target)
{
	if (pc < 0 || u->c->failed)
		return;
	if (target > INSN_A_MAX) {
		error_at(u->c, u->code->locs[pc], "code too large to compile");
		return;
	}
	u->code->insns[pc] = INSN(INSN_OP(u->code->insns[pc]), (uint32_t)target);
}

static bool same_const(value a, value b)
{
	if (a.tag != b.tag)
		return false;
	switch (a.tag) {
	case VAL_NONE:
		return true;
	case VAL_BOOL:
		return a.b == b.b;
	case VAL_INT:
		return a.i == b.i;
	case VAL_FLOAT: /* bitwise: 0.0 and -0.0 differ */
		return memcmp(&a.f, &b.f, sizeof a.f) == 0;
	case VAL_STR:
		return val_str(a)->len == val_str(b)->len &&
		       memcmp(val_str(a)->data, val_str(b)->data, val_str(a)->len) == 0;
	case VAL_TUPLE:
		if (val_tuple(a)->len != val_tuple(b)->len)
			return false;
		for (size_t i = 0; i < val_tuple(a)->len; i++)
			if (!same_const(val_tuple(a)->items[i], val_tuple(b)->items[i]))
				return false;
		return true;
	default: /* code objects are never shared */
		return false;
	}
}

/* Adds v (stolen) to the constants unless an equal one is there; returns
 * its index, -1 after an error. */
static int add_const(struct unit *u, value v)
{
	struct code *code = u->code;
	if (v.tag == VAL_ERR || (v.tag >= VAL_FIRST_HEAP && !v.o)) {
		out_of_memory(u->c);
		return -1;
	}
	if (u->c->failed) {
		val_decref(v);
		return -1;
	}
	for (int i = 0; i < code->nconsts; i++)
		if (same_const(code->consts[i], v)) {
			val_decref(v);
			return i;
		}
	if (!grow_array((void **)&code->consts, &u->consts_cap, code->nconsts + 1, sizeof *code->consts, 16)) {
		val_decref(v);
		out_of_memory(u->c);
		return -1;
	}
	code->consts[code->nconsts] = v;
	return code->nconsts++;
}

static void emit_const(struct unit *u, value v, struct src_loc loc)
{
	int i = add_const(u, v);
	if (i >= 0)
		emit(u, OP_LOAD_CONST, i, loc);
}

/* The index of name in names[] (VAL_STR, interned), added if new. */
static int add_name(struct unit *u, const char *name)
{
	struct code *code = u->code;
	size_t len = strlen(name);
	if (u->c->failed)
		return -1;
	for (int i = 0; i < code->nnames; i++) {
		const struct str *s = val_str(code->names[i]);
		if (s->len == len && memcmp(s->data, name, len) == 0)
			return i;
	}
	value v = str_intern(name, len);
	if (v.tag != VAL_STR || !v.o) {
		out_of_memory(u->c);
		return -1;
	}
	if (!grow_array((void **)&code->names, &u->names_cap, code->nnames + 1, sizeof *code->names, 16)) {
		val_decref(v);
		out_of_memory(u->c);
		return -1;
	}
	code->names[code->nnames] = v;
	return code->nnames++;
}

/* How a name is reached in this unit: its opcode pair and operand. */
static opcode name_access(struct unit *u, const char *name, bool store, int *arg)
{
	struct scope *s = u->scope;
	int i;
	if (s->def && !set_has(&s->globals, name)) {
		if ((i = set_index(&s->cells, name)) >= 0) {
			*arg = i;
			return store ? OP_STORE_DEREF : OP_LOAD_DEREF;
		}
		if ((i = set_index(&s->frees, name)) >= 0) {
			*arg = s->cells.len + i;
			return store ? OP_STORE_DEREF : OP_LOAD_DEREF;
		}
		if ((i = set_index(&u->slots, name)) >= 0) {
			*arg = i;
			return store ? OP_STORE_FAST : OP_LOAD_FAST;
		}
	}
	*arg = add_name(u, name);
	return store ? OP_STORE_GLOBAL : OP_LOAD_GLOBAL;
}

static void gen_name(struct unit *u, const char *name, bool store, struct src_loc loc)
{
	int arg;
	opcode op = name_access(u, name, store, &arg);
	if (arg >= 0)
		emit(u, op, arg, loc);
}

static void gen_expr(struct unit *u, const struct ast *n);

static void gen_exprs(struct unit *u, const struct ast_list *l)
{
	for (int i = 0; i < l->len; i++)
		gen_expr(u, l->items[i]);
}

static void gen_opt(struct unit *u, const struct ast *n, struct src_loc loc)
{
	if (n)
		gen_expr(u, n);
	else
		emit_const(u, val_none(), loc);
}

/* a and b and c: each value but the last decides whether to go on */
static void gen_boolop(struct unit *u, const struct ast *n)
{
	opcode jump = n->boolop.is_and ? OP_JUMP_IF_FALSE_OR_POP : OP_JUMP_IF_TRUE_OR_POP;
	const struct ast_list *values = &n->boolop.values;
	int *jumps = calloc((size_t)values->len, sizeof *jumps);
	if (!jumps) {
		out_of_memory(u->c);
		return;
	}
	for (int i = 0; i < values->len - 1; i++) {
		gen_expr(u, values->items[i]);
		jumps[i] = emit(u, jump, 0, values->items[i]->loc);
	}
	gen_expr(u, values->items[values->len - 1]);
	for (int i = 0; i < values->len - 1; i++)
		patch(u, jumps[i], here(u));
	free(jumps);
}

/* a < b < c as CPython: b is compared twice but evaluated once, and the
 * first false link ends the chain. Each COMPARE_OP points at its left
 * operand. */
static void gen_compare(struct unit *u, const struct ast *n)
{
	gen_expr(u, n->compare.left);
	int last = n->compare.n - 1;
	if (last == 0) {
		gen_expr(u, n->compare.links[0].right);
		emit(u, OP_COMPARE_OP, n->compare.links[0].op, n->loc);
		return;
	}
	int *cleanup = calloc((size_t)last, sizeof *cleanup);
	if (!cleanup) {
		out_of_memory(u->c);
		return;
	}
	for (int i = 0; i <= last; i++) {
		struct src_loc loc = i == 0 ? n->loc : n->compare.links[i - 1].right->loc;
		gen_expr(u, n->compare.links[i].right);
		if (i < last) {
			emit(u, OP_DUP_TOP, 0, loc);
			emit(u, OP_ROT_THREE, 0, loc);
		}
		emit(u, OP_COMPARE_OP, n->compare.links[i].op, loc);
		if (i < last)
			cleanup[i] = emit(u, OP_JUMP_IF_FALSE_OR_POP, 0, loc);
	}
	int to_end = emit(u, OP_JUMP, 0, n->loc);
	for (int i = 0; i < last; i++)
		patch(u, cleanup[i], here(u));
	emit(u, OP_ROT_TWO, 0, n->loc); /* drop the operand kept for the next link */
	emit(u, OP_POP_TOP, 0, n->loc);
	patch(u, to_end, here(u));
	free(cleanup);
}

/* The tuple of keyword names of a call, a constant. */
static value kwnames_tuple(const struct ast_list *keywords)
{
	value t = tuple_new((size_t)keywords->len);
	if (t.tag != VAL_TUPLE || !t.o)
		return val_err();
	for (int i = 0; i < keywords->len; i++) {
		const char *name = keywords->items[i]->keyword.name;
		value s = str_intern(name, strlen(name));
		if (s.tag != VAL_STR || !s.o) {
			val_decref(t);
			return val_err();
		}
		val_tuple(t)->items[i] = s;
	}
	return t;
}

static void gen_call(struct unit *u, const struct ast *n)
{
	gen_expr(u, n->call.func);
	gen_exprs(u, &n->call.args);
	int nargs = n->call.args.len, nkw = n->call.keywords.len;
	if (nkw == 0) {
		emit(u, OP_CALL, nargs, n->loc);
		return;
	}
	for (int i = 0; i < nkw; i++)
		gen_expr(u, n->call.keywords.items[i]->keyword.value);
	emit_const(u, kwnames_tuple(&n->call.keywords), n->loc);
	emit(u, OP_CALL_KW, nargs + nkw, n->loc);
}

static void gen_expr(struct unit *u, const struct ast *n)
{
	static const opcode unary_ops[] = {[AST_NEG] = OP_UNARY_NEG, [AST_POS] = OP_UNARY_POS,
					   [AST_NOT] = OP_UNARY_NOT};
	if (u->c->failed)
		return;
	switch (n->kind) {
	case AST_NAME:
		gen_name(u, n->name, false, n->loc);
		break;
	case AST_INT:
		emit_const(u, val_int(n->ival), n->loc);
		break;
	case AST_FLOAT:
		emit_const(u, val_float(n->fval), n->loc);
		break;
	case AST_STR:
		emit_const(u, str_new(n->str.s, n->str.len), n->loc);
		break;
	case AST_NONE:
		emit_const(u, val_none(), n->loc);
		break;
	case AST_TRUE:
	case AST_FALSE:
		emit_const(u, val_bool(n->kind == AST_TRUE), n->loc);
		break;
	case AST_UNARY: {
		const struct ast *x = n->unary.operand;
		/* -1 and -1.5 are constants, as in CPython */
		if (n->unary.op == AST_NEG && x->kind == AST_INT) {
			emit_const(u, val_int(-x->ival), n->loc);
		} else if (n->unary.op == AST_NEG && x->kind == AST_FLOAT) {
			emit_const(u, val_float(-x->fval), n->loc);
		} else {
			gen_expr(u, x);
			emit(u, unary_ops[n->unary.op], 0, n->loc);
		}
		break;
	}
	case AST_BINARY:
		gen_expr(u, n->binary.left);
		gen_expr(u, n->binary.right);
		emit(u, OP_BINARY_OP, n->binary.op, n->loc);
		break;
	case AST_BOOLOP:
		gen_boolop(u, n);
		break;
	case AST_COMPARE:
		gen_compare(u, n);
		break;
	case AST_IFEXP: {
		gen_expr(u, n->ifexp.test);
		int to_else = emit(u, OP_POP_JUMP_IF_FALSE, 0, n->ifexp.test->loc);
		gen_expr(u, n->ifexp.body);
		int to_end = emit(u, OP_JUMP, 0, n->loc);
		patch(u, to_else, here(u));
		gen_expr(u, n->ifexp.orelse);
		patch(u, to_end, here(u));
		break;
	}
	case AST_CALL:
		gen_call(u, n);
		break;
	case AST_ATTR: {
		gen_expr(u, n->attr.value);
		int name = add_name(u, n->attr.name);
		if (name >= 0)
			emit(u, OP_LOAD_ATTR, name, n->loc);
		break;
	}
	case AST_SUBSCRIPT:
		gen_expr(u, n->subscript.value);
		gen_expr(u, n->subscript.index);
		emit(u, OP_BINARY_SUBSCR, 0, n->loc);
		break;
	case AST_SLICE:
		gen_opt(u, n->slice.lower, n->loc);
		gen_opt(u, n->slice.upper, n->loc);
		if (n->slice.step)
			gen_expr(u, n->slice.step);
		emit(u, OP_BUILD_SLICE, n->slice.step ? 3 : 2, n->loc);
		break;
	case AST_LIST:
	case AST_TUPLE:
		gen_exprs(u, &n->elts);
		emit(u, n->kind == AST_LIST ? OP_BUILD_LIST : OP_BUILD_TUPLE, n->elts.len, n->loc);
		break;
	default:
		error_at(u->c, n->loc, "internal error: cannot compile a %s node", ast_kind_name(n->kind));
	}
}

/* Stores TOS into target; every instruction that stores carries loc, the
 * statement's location. */
static void gen_store(struct unit *u, const struct ast *target, struct src_loc loc)
{
	switch (target->kind) {
	case AST_NAME:
		gen_name(u, target->name, true, loc);
		break;
	case AST_SUBSCRIPT: /* v; xs; i -> xs[i] = v */
		gen_expr(u, target->subscript.value);
		gen_expr(u, target->subscript.index);
		emit(u, OP_STORE_SUBSCR, 0, loc);
		break;
	case AST_TUPLE:
	case AST_LIST:
		emit(u, OP_UNPACK_SEQUENCE, target->elts.len, loc);
		for (int i = 0; i < target->elts.len; i++)
			gen_store(u, target->elts.items[i], loc);
		break;
	default:
		error_at(u->c, target->loc, "cannot assign to %s", ast_describe(target));
	}
}

/* x += e is x = x + e; xs[i] += e evaluates xs and i once */
static void gen_aug_assign(struct unit *u, const struct ast *n)
{
	const struct ast *t = n->aug.target;
	if (t->kind == AST_NAME) {
		gen_name(u, t->name, false, t->loc);
		gen_expr(u, n->aug.value);
		emit(u, OP_BINARY_OP, n->aug.op, n->loc);
		gen_name(u, t->name, true, n->loc);
		return;
	}
	gen_expr(u, t->subscript.value);
	gen_expr(u, t->subscript.index);
	emit(u, OP_DUP_TOP_TWO, 0, t->loc);
	emit(u, OP_BINARY_SUBSCR, 0, t->loc);
	gen_expr(u, n->aug.value);
	emit(u, OP_BINARY_OP, n->aug.op, n->loc);
	emit(u, OP_ROT_THREE, 0, n->loc);
	emit(u, OP_STORE_SUBSCR, 0, n->loc);
}

static void gen_body(struct unit *u, const struct ast_list *body);

static void loop_add_break(struct unit *u, int pc)
{
	struct loop *l = u->loop;
	if (pc < 0)
		return;
	if (!grow_array((void **)&l->breaks, &l->cap, l->nbreaks + 1, sizeof *l->breaks, 16)) {
		out_of_memory(u->c);
		return;
	}
	l->breaks[l->nbreaks++] = pc;
}

/* Runs body as a loop whose continue goes to continue_target, then the
 * else branch; break jumps past both. */
static void gen_loop_body(struct unit *u, bool is_for, int continue_target, const struct ast_list *body,
			  int exit_jump, const struct ast_list *orelse, struct src_loc loc)
{
	struct loop l = {u->loop, is_for, continue_target, NULL, 0, 0};
	u->loop = &l;
	gen_body(u, body);
	emit(u, OP_JUMP, continue_target, loc);
	u->loop = l.outer;
	patch(u, exit_jump, here(u));
	gen_body(u, orelse);
	for (int i = 0; i < l.nbreaks; i++)
		patch(u, l.breaks[i], here(u));
	free(l.breaks);
}

static struct code *gen_unit(struct compiler *c, struct scope *s);

/* decorators; [closure tuple]; [defaults tuple]; code; MAKE_FUNCTION;
 * CALL 1 per decorator, innermost first; store the name */
static void gen_def(struct unit *u, const struct ast *n)
{
	struct scope *child = NULL;
	for (int i = 0; i < u->scope->nchildren && !child; i++)
		if (u->scope->children[i]->def == n)
			child = u->scope->children[i];
	if (!child) {
		error_at(u->c, n->loc, "internal error: no scope for function '%s'", n->def.name);
		return;
	}
	gen_exprs(u, &n->def.decorators);
	int flags = 0;
	if (child->frees.len > 0) {
		for (int i = 0; i < child->frees.len; i++) {
			const char *name = child->frees.items[i];
			int cell = set_index(&u->scope->cells, name);
			if (cell < 0)
				cell = u->scope->cells.len + set_index(&u->scope->frees, name);
			emit(u, OP_LOAD_CLOSURE, cell, n->loc);
		}
		emit(u, OP_BUILD_TUPLE, child->frees.len, n->loc);
		flags |= 2;
	}
	if (n->def.defaults.len > 0) {
		gen_exprs(u, &n->def.defaults);
		emit(u, OP_BUILD_TUPLE, n->def.defaults.len, n->loc);
		flags |= 1;
	}
	struct code *code = gen_unit(u->c, child);
	if (!code)
		return;
	emit_const(u, val_obj(VAL_CODE, code), n->loc);
	emit(u, OP_MAKE_FUNCTION, flags, n->loc);
	for (int i = n->def.decorators.len - 1; i >= 0; i--)
		emit(u, OP_CALL, 1, n->def.decorators.items[i]->loc);
	gen_name(u, n->def.name, true, n->loc);
}

static void gen_stmt(struct unit *u, const struct ast *n)
{
	if (u->c->failed)
		return;
	switch (n->kind) {
	case AST_EXPR_STMT:
		gen_expr(u, n->value);
		emit(u, OP_POP_TOP, 0, n->loc);
		break;
	case AST_ASSIGN: {
		const struct ast_list *targets = &n->assign.targets;
		gen_expr(u, n->assign.value);
		for (int i = 0; i < targets->len; i++) {
			if (i < targets->len - 1)
				emit(u, OP_DUP_TOP, 0, n->loc);
			gen_store(u, targets->items[i], n->loc);
		}
		break;
	}
	case AST_AUG_ASSIGN:
		gen_aug_assign(u, n);
		break;
	case AST_IF: {
		gen_expr(u, n->cond.test);
		int to_else = emit(u, OP_POP_JUMP_IF_FALSE, 0, n->cond.test->loc);
		gen_body(u, &n->cond.body);
		if (n->cond.orelse.len > 0) {
			int to_end = emit(u, OP_JUMP, 0, n->loc);
			patch(u, to_else, here(u));
			gen_body(u, &n->cond.orelse);
			patch(u, to_end, here(u));
		} else {
			patch(u, to_else, here(u));
		}
		break;
	}
	case AST_WHILE: {
		int top = here(u);
		gen_expr(u, n->cond.test);
		int exit = emit(u, OP_POP_JUMP_IF_FALSE, 0, n->cond.test->loc);
		gen_loop_body(u, false, top, &n->cond.body, exit, &n->cond.orelse, n->loc);
		break;
	}
	case AST_FOR: {
		gen_expr(u, n->loop.iter);
		emit(u, OP_GET_ITER, 0, n->loop.iter->loc);
		int top = emit(u, OP_FOR_ITER, 0, n->loc);
		gen_store(u, n->loop.target, n->loc);
		gen_loop_body(u, true, top, &n->loop.body, top, &n->loop.orelse, n->loc);
		break;
	}
	case AST_BREAK:
		if (!u->loop) { /* the scan rejects it first */
			error_at(u->c, n->loc, "'break' outside loop");
			break;
		}
		if (u->loop->is_for)
			emit(u, OP_POP_TOP, 0, n->loc); /* the iterator */
		loop_add_break(u, emit(u, OP_JUMP, 0, n->loc));
		break;
	case AST_CONTINUE:
		if (!u->loop) {
			error_at(u->c, n->loc, "'continue' not properly in loop");
			break;
		}
		emit(u, OP_JUMP, u->loop->continue_target, n->loc);
		break;
	case AST_RETURN:
		gen_opt(u, n->value, n->loc);
		emit(u, OP_RETURN_VALUE, 0, n->loc);
		break;
	case AST_DEF:
		gen_def(u, n);
		break;
	default: /* pass, global */
		break;
	}
}

static void gen_body(struct unit *u, const struct ast_list *body)
{
	for (int i = 0; i < body->len; i++)
		gen_stmt(u, body->items[i]);
}

/* ---- the stack depth ---- */

#define VAR_EFFECT 100
#define var VAR_EFFECT
static const int fixed_effects[OP_COUNT] = {
#define OPCODE(name, effect, doc) [OP_##name] = (effect),
#include "opcodes.def"
#undef OPCODE
};
#undef var

/* What op does to the stack height, when it jumps or when it falls through. */
static int stack_effect(opcode op, uint32_t a, bool jump)
{
	switch (op) {
	case OP_BUILD_SLICE:
	case OP_BUILD_LIST:
	case OP_BUILD_TUPLE:
		return 1 - (int)a;
	case OP_UNPACK_SEQUENCE:
		return (int)a - 1;
	case OP_JUMP_IF_FALSE_OR_POP:
	case OP_JUMP_IF_TRUE_OR_POP:
		return jump ? 0 : -1;
	case OP_FOR_ITER:
		return jump ? -1 : 1;
	case OP_CALL:
		return -(int)a;
	case OP_CALL_KW:
		return -(int)a - 1;
	case OP_MAKE_FUNCTION:
		return -(int)(a & 1) - (int)((a >> 1) & 1);
	default:
		return fixed_effects[op];
	}
}

static bool is_jump(opcode op)
{
	return op == OP_JUMP || op == OP_POP_JUMP_IF_FALSE || op == OP_POP_JUMP_IF_TRUE ||
	       op == OP_JUMP_IF_FALSE_OR_POP || op == OP_JUMP_IF_TRUE_OR_POP || op == OP_FOR_ITER;
}

/* The deepest the operand stack gets, over every path from pc 0; also
 * checks that paths agree where they meet. */
static int compute_max_stack(struct compiler *c, const struct code *code)
{
	int n = code->ninsns, max = 0, top = 0;
	int *depth = malloc((size_t)(n ? n : 1) * sizeof *depth);
	int *work = malloc((size_t)(n ? n : 1) * sizeof *work);
	if (!depth || !work) {
		free(depth);
		free(work);
		out_of_memory(c);
		return 0;
	}
	for (int i = 0; i < n; i++)
		depth[i] = -1;
	if (n > 0) {
		depth[0] = 0;
		work[top++] = 0;
	}
	while (top > 0 && !c->failed) {
		int pc = work[--top];
		uint32_t w = code->insns[pc];
		opcode op = INSN_OP(w);
		int succ[2], sdepth[2], nsucc = 0;
		if (op != OP_JUMP && op != OP_RETURN_VALUE && pc + 1 < n) {
			succ[nsucc] = pc + 1;
			sdepth[nsucc++] = depth[pc] + stack_effect(op, INSN_A(w), false);
		}
		if (is_jump(op)) {
			succ[nsucc] = (int)INSN_A(w);
			sdepth[nsucc++] = depth[pc] + stack_effect(op, INSN_A(w), true);
		}
		for (int i = 0; i < nsucc; i++) {
			int t = succ[i], d = sdepth[i];
			if (d < 0 || t >= n || (depth[t] >= 0 && depth[t] != d)) {
				error_at(c, code->locs[pc], "internal error: bad stack depth at %d", pc);
				break;
			}
			if (d > max)
				max = d;
			if (depth[t] < 0) {
				depth[t] = d;
				work[top++] = t;
			}
		}
	}
	free(depth);
	free(work);
	return max;
}

/* ---- code objects ---- */

static char **copy_names(struct compiler *c, const struct name_set *s)
{
	char **names = calloc((size_t)(s->len ? s->len : 1), sizeof *names);
	if (!names) {
		out_of_memory(c);
		return NULL;
	}
	for (int i = 0; i < s->len; i++)
		if (!(names[i] = strdup(s->items[i])))
			out_of_memory(c);
	return names;
}

/* The frame layout of s: its code's fields other than the bytecode. */
static void layout_frame(struct unit *u)
{
	struct compiler *c = u->c;
	struct scope *s = u->scope;
	struct code *code = u->code;
	if (s->def) {
		for (int i = 0; i < s->params.len; i++)
			set_add(c, &u->slots, s->params.items[i]);
		for (int i = 0; i < s->locals.len; i++)
			if (!set_has(&s->cells, s->locals.items[i]))
				set_add(c, &u->slots, s->locals.items[i]);
	}
	code->nparams = s->params.len;
	if ((code->local_names = copy_names(c, &u->slots)))
		code->nlocals = u->slots.len;
	if ((code->cellvar_names = copy_names(c, &s->cells)))
		code->ncellvars = s->cells.len;
	code->cellvar_param = malloc((size_t)(s->cells.len ? s->cells.len : 1) * sizeof(int));
	if (!code->cellvar_param)
		out_of_memory(c);
	else
		for (int i = 0; i < s->cells.len; i++)
			code->cellvar_param[i] = set_index(&s->params, s->cells.items[i]);
	if ((code->freevar_names = copy_names(c, &s->frees)))
		code->nfreevars = s->frees.len;
}

/* Generates the code object of scope s; NULL after an error. */
static struct code *gen_unit(struct compiler *c, struct scope *s)
{
	struct code *code = calloc(1, sizeof *code);
	if (!code) {
		out_of_memory(c);
		return NULL;
	}
	code->hdr.rc = 1;
	code->src = c->src;
	code->is_module = s->def == NULL;
	code->firstline = s->def ? s->def->loc.line : 1;
	code->name = strdup(s->def ? s->def->def.name : "<module>");
	if (!code->name)
		out_of_memory(c);

	struct unit u = {.c = c, .scope = s, .code = code};
	layout_frame(&u);
	gen_body(&u, s->body);
	/* falling off the end returns None */
	const struct ast_list *body = s->body;
	if (body->len == 0 || body->items[body->len - 1]->kind != AST_RETURN) {
		struct src_loc loc = body->len ? body->items[body->len - 1]->loc : s->node->loc;
		emit_const(&u, val_none(), loc);
		emit(&u, OP_RETURN_VALUE, 0, loc);
	}
	if (!c->failed)
		code->max_stack = compute_max_stack(c, code);
	if (c->failed) {
		code_free(code);
		return NULL;
	}
	return code;
}

struct code *compile_ast(struct source *src, const struct ast *module, struct src_loc *err_loc,
			 char **err_msg)
{
	struct compiler c = {.src = src};
	ast_arena_init(&c.arena);
	struct code *code = NULL;
	struct scope *root = scope_new(&c, NULL, module);
	if (root) {
		scan_body(&c, root, root->body);
		if (!c.failed)
			resolve(&c, root);
		if (!c.failed)
			code = gen_unit(&c, root);
	}
	ast_arena_release(&c.arena);
	if (c.failed) {
		*err_loc = c.err_loc;
		*err_msg = c.err_msg ? c.err_msg : strdup("out of memory");
		return NULL;
	}
	return code;
}

struct code *compile_source(struct source *src, struct src_loc *err_loc, char **err_msg)
{
	struct ast_arena arena;
	ast_arena_init(&arena);
	struct ast *module = parser_parse(src, &arena, err_loc, err_msg);
	struct code *code = module ? compile_ast(src, module, err_loc, err_msg) : NULL;
	ast_arena_release(&arena);
	return code;
}
