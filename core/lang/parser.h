/* parser.h - tokens to an AST: the grammar of LANGUAGE.md §1.
 *
 * A recursive-descent parser for statements and a Pratt parser (one table
 * row per token) for expressions, with Python's precedence. It stops at
 * the first error, as Python does, with Python's message.
 */
#ifndef TJ_PARSER_H
#define TJ_PARSER_H

#include "ast.h"
#include "error.h"

#define PARSER_MAX_DEPTH 400   /* nested expressions (recursion of the parser) */
#define AST_MAX_HEIGHT 1000    /* height of an expression tree (recursion of later passes) */

/* Parses a whole module into nodes allocated in arena. Returns the
 * AST_MODULE node, or NULL with *err_loc and *err_msg (malloc'd, the
 * caller frees it; NULL only when even that allocation failed) set to the
 * first syntax error. */
struct ast *parser_parse(const struct source *src, struct ast_arena *arena, struct src_loc *err_loc,
			 char **err_msg);

#endif
