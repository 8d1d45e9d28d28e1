/* ast.h - the abstract syntax tree of a tj module.
 *
 * The parser builds it, the compiler reads it. Every node and string lives
 * in one arena per compile, freed in one call. Each node keeps the (line,
 * col) of its first token: for a binary operation or a call, the start of
 * its left operand or callee, which is where runtime errors point.
 */
#ifndef TJ_AST_H
#define TJ_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "code.h"
#include "error.h"
#include "value.h"

/* One row per node kind: X(NAME, dump name, what "cannot assign to ..."
 * calls it; NULL when it is a valid assignment target). */
#define AST_KINDS(X)                                                    \
	/* expressions */                                               \
	X(NAME, "name", NULL)                                           \
	X(INT, "int", "literal")                                        \
	X(FLOAT, "float", "literal")                                    \
	X(STR, "str", "literal")                                        \
	X(NONE, "None", "None")                                         \
	X(TRUE, "True", "True")                                         \
	X(FALSE, "False", "False")                                      \
	X(UNARY, "unary", "expression")                                 \
	X(BINARY, "binary", "expression")                               \
	X(BOOLOP, "boolop", "expression")                               \
	X(COMPARE, "cmp", "comparison")                                 \
	X(IFEXP, "ifexp", "conditional expression")                     \
	X(CALL, "call", "function call")                                \
	X(KEYWORD, "keyword", "keyword argument")                       \
	X(ATTR, "attr", "attribute")                                    \
	X(SUBSCRIPT, "sub", NULL)                                       \
	X(SLICE, "slice", "slice")                                      \
	X(LIST, "list", NULL)                                           \
	X(TUPLE, "tuple", NULL)                                         \
	/* statements */                                                \
	X(EXPR_STMT, "expr", NULL)                                      \
	X(ASSIGN, "assign", NULL)                                       \
	X(AUG_ASSIGN, "augassign", NULL)                                \
	X(IF, "if", NULL)                                               \
	X(WHILE, "while", NULL)                                         \
	X(FOR, "for", NULL)                                             \
	X(BREAK, "break", NULL)                                         \
	X(CONTINUE, "continue", NULL)                                   \
	X(PASS, "pass", NULL)                                           \
	X(RETURN, "return", NULL)                                       \
	X(GLOBAL, "global", NULL)                                       \
	X(DEF, "def", NULL)                                             \
	X(MODULE, "module", NULL)

enum ast_kind {
#define AST_ENUM(name, dump, what) AST_##name,
	AST_KINDS(AST_ENUM)
#undef AST_ENUM
	AST_KIND_COUNT
};

enum ast_unop { AST_NEG, AST_POS, AST_NOT };

struct ast;

/* A growable array of nodes in the arena. */
struct ast_list {
	struct ast **items;
	int len, cap;
};

/* One link of a comparison chain: a < b <= c has two. */
struct ast_cmp {
	enum vm_cmpop op;
	struct ast *right;
};

struct ast {
	enum ast_kind kind;
	struct src_loc loc;
	int height; /* of the tree below this node: bounds recursion in later passes */
	union {
		const char *name;                          /* NAME */
		int64_t ival;                              /* INT */
		double fval;                               /* FLOAT */
		struct { const char *s; size_t len; } str; /* STR (may hold NUL bytes) */
		struct { enum ast_unop op; struct ast *operand; } unary;
		struct { enum vm_binop op; struct ast *left, *right; } binary;
		struct { bool is_and; struct ast_list values; } boolop;  /* two or more */
		struct { struct ast *left; struct ast_cmp *links; int n; } compare;
		struct { struct ast *test, *body, *orelse; } ifexp;     /* body if test else orelse */
		struct { struct ast *func; struct ast_list args, keywords; } call;
		struct { const char *name; struct ast *value; } keyword; /* in call.keywords */
		struct { struct ast *value; const char *name; } attr;
		struct { struct ast *value, *index; } subscript;
		struct { struct ast *lower, *upper, *step; } slice;      /* each may be NULL */
		struct ast_list elts;                                    /* LIST, TUPLE */
		struct ast *value;                                       /* EXPR_STMT; RETURN (NULL: bare) */
		struct { struct ast_list targets; struct ast *value; } assign; /* t1 = t2 = value */
		struct { struct ast *target; enum vm_binop op; struct ast *value; } aug;
		struct { struct ast *test; struct ast_list body, orelse; } cond; /* IF, WHILE */
		struct { struct ast *target, *iter; struct ast_list body, orelse; } loop; /* FOR */
		struct ast_list names;                                   /* GLOBAL: NAME nodes */
		struct {
			const char *name;
			struct ast_list params;     /* NAME nodes */
			struct ast_list defaults;   /* for the last defaults.len params */
			struct ast_list decorators; /* top to bottom */
			struct ast_list body;
		} def;
		struct ast_list body;                                    /* MODULE */
	};
};

/* ---- the arena ---- */
struct ast_arena_block;
struct ast_arena {
	struct ast_arena_block *head;
};
void ast_arena_init(struct ast_arena *a);
void ast_arena_release(struct ast_arena *a);
void *ast_alloc(struct ast_arena *a, size_t size);     /* zeroed; NULL when out of memory */
char *ast_strndup(struct ast_arena *a, const char *s, size_t n); /* NUL-terminated copy */
bool ast_list_push(struct ast_arena *a, struct ast_list *l, struct ast *n); /* false: out of memory */

/* ---- inspection ---- */
const char *ast_kind_name(enum ast_kind kind);     /* the dump name: "binary", "def", ... */
/* What "cannot assign to ..." calls an expression: "literal", "function
 * call", ...; NULL for names, subscripts, lists and tuples. */
const char *ast_describe(const struct ast *n);
bool ast_is_expr(const struct ast *n);

/* A readable dump, for tests and TJIT_LOGS: expressions as
 * s-expressions, e.g. (+ a (call f x k=1)), statements one a line,
 * indented by block:
 *   module
 *     def f (a b=1.0)
 *       return (+ a b)
 * With AST_DUMP_LOCS every node carries its @line:col. */
#define AST_DUMP_LOCS 1u
void ast_dump(const struct ast *n, struct strbuf *out, unsigned flags);

#endif
