/* compiler.h - an AST to code objects (code.h, opcodes.def).
 *
 * Two passes: a symbol table per function (Python's scope rules: a name
 * bound anywhere in a function is local unless declared global; a local
 * that an inner function uses lives in a cell), then code generation.
 * Every instruction carries the (line, col) of the node it came from;
 * stores carry their statement's.
 *
 * Frame layout (for the VM and the tracer): local_names holds every
 * parameter, in order, then the other locals that are not cells. A
 * parameter that is also a cell keeps its local slot, where the argument
 * arrives; cellvar_param says which slot the cell starts from. A loop's
 * iterator stays on the stack while its body runs, so RETURN_VALUE inside
 * a for loop leaves it below the result (the frame drops it).
 */
#ifndef TJ_COMPILER_H
#define TJ_COMPILER_H

#include "ast.h"
#include "code.h"
#include "error.h"

/* Parses and compiles a module. Returns its code object (name
 * "<module>", one reference), or NULL with *err_loc and *err_msg
 * (malloc'd; the caller frees it; NULL only when out of memory) set to the
 * first syntax error; the caller prints it with diag_print(). src must
 * outlive the code. */
struct code *compile_source(struct source *src, struct src_loc *err_loc, char **err_msg);

/* The second half of compile_source, for an AST made by parser_parse. */
struct code *compile_ast(struct source *src, const struct ast *module, struct src_loc *err_loc,
			 char **err_msg);

#endif
