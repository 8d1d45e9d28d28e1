/* code.h - code objects: what the bytecode compiler produces, the VM runs,
 * and the tracer reads.
 *
 * One code object per function body, plus one for the module. Its locals
 * are the parameters (first, in order) and then every other local name. A
 * local captured by an inner function lives in a cell instead: cell
 * variables come first in the frame's cell array, then the free variables
 * taken from the function's closure.
 */
#ifndef TJ_CODE_H
#define TJ_CODE_H

#include <stdint.h>

#include "error.h"
#include "value.h"

typedef enum opcode {
#define OPCODE(name, effect, doc) OP_##name,
#include "opcodes.def"
#undef OPCODE
	OP_COUNT
} opcode;

extern const char *const opcode_names[OP_COUNT];

#define INSN(op, a) ((uint32_t)(op) | ((uint32_t)(a) << 8))
#define INSN_OP(w) ((opcode)((w)&0xff))
#define INSN_A(w) ((w) >> 8)
#define INSN_A_MAX 0xffffff

enum vm_binop { VB_ADD, VB_SUB, VB_MUL, VB_TRUEDIV, VB_FLOORDIV, VB_MOD, VB_POW, VB_MATMUL, VB_COUNT };
enum vm_cmpop { VC_LT, VC_LE, VC_GT, VC_GE, VC_EQ, VC_NE, VC_IS, VC_IS_NOT, VC_IN, VC_NOT_IN, VC_COUNT };
/* Added by the front end: the source spelling of an operator, "+", "//",
 * "is not", ... (for dumps, the disassembler and error messages). */
const char *code_binop_symbol(enum vm_binop op);
const char *code_cmpop_symbol(enum vm_cmpop op);

struct code {
	struct obj hdr;
	char *name;              /* function name, or "<module>" */
	struct source *src;      /* borrowed: sources live for the whole run */
	int firstline;           /* line of the def (1 for the module) */
	int nparams;             /* positional parameters, all of them (defaults are in the function) */
	int nlocals;             /* parameters + other locals */
	char **local_names;      /* nlocals names */
	int ncellvars;           /* locals that live in cells */
	char **cellvar_names;
	int *cellvar_param;      /* per cell variable: the parameter index it starts from, or -1 */
	int nfreevars;           /* free variables, filled from the closure */
	char **freevar_names;
	value *consts;           /* owned references; code objects of inner functions are VAL_CODE consts */
	int nconsts;
	value *names;            /* VAL_STR: globals and attribute names */
	int nnames;
	uint32_t *insns;
	struct src_loc *locs;    /* one per instruction */
	int ninsns;
	int max_stack;           /* computed by the compiler */
	bool is_module;
};

static inline struct code *val_code(value v) { return (struct code *)v.o; }
void code_free(struct code *c);
/* Prints a disassembly, one instruction a line with its line:col (for tests and --dis). */
void code_disassemble(const struct code *c, struct strbuf *out);

#endif
