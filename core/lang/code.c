/* code.c - code objects: names of opcodes and operators, freeing, and the
 * disassembler. */
#include "code.h"

#include <stdlib.h>
#include <string.h>

const char *const opcode_names[OP_COUNT] = {
#define OPCODE(name, effect, doc) [OP_##name] = #name,
#include "opcodes.def"
#undef OPCODE
};

static const char *const binop_symbols[VB_COUNT] = {
	[VB_ADD] = "+", [VB_SUB] = "-", [VB_MUL] = "*", [VB_TRUEDIV] = "/",
	[VB_FLOORDIV] = "//", [VB_MOD] = "%", [VB_POW] = "**", [VB_MATMUL] = "@",
};

static const char *const cmpop_symbols[VC_COUNT] = {
	[VC_LT] = "<", [VC_LE] = "<=", [VC_GT] = ">", [VC_GE] = ">=", [VC_EQ] = "==",
	[VC_NE] = "!=", [VC_IS] = "is", [VC_IS_NOT] = "is not", [VC_IN] = "in",
	[VC_NOT_IN] = "not in",
};

const char *code_binop_symbol(enum vm_binop op)
{
	return (unsigned)op < VB_COUNT ? binop_symbols[op] : "?";
}

const char *code_cmpop_symbol(enum vm_cmpop op)
{
	return (unsigned)op < VC_COUNT ? cmpop_symbols[op] : "?";
}

static void free_names(char **names, int n)
{
	if (!names)
		return;
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

void code_free(struct code *c)
{
	if (!c)
		return;
	free(c->name);
	free_names(c->local_names, c->nlocals);
	free_names(c->cellvar_names, c->ncellvars);
	free(c->cellvar_param);
	free_names(c->freevar_names, c->nfreevars);
	for (int i = 0; i < c->nconsts; i++)
		val_decref(c->consts[i]);
	free(c->consts);
	for (int i = 0; i < c->nnames; i++)
		val_decref(c->names[i]);
	free(c->names);
	free(c->insns);
	free(c->locs);
	free(c);
}

/* ---- the disassembler ---- */

/* What the operand of an opcode means, for the annotation after it. */
enum operand_kind { OPND_NONE, OPND_COUNT, OPND_CONST, OPND_LOCAL, OPND_NAME, OPND_CELL,
		    OPND_JUMP, OPND_BINOP, OPND_CMPOP, OPND_FLAGS };

static enum operand_kind operand_kind(opcode op)
{
	switch (op) {
	case OP_LOAD_CONST:
		return OPND_CONST;
	case OP_LOAD_FAST:
	case OP_STORE_FAST:
		return OPND_LOCAL;
	case OP_LOAD_GLOBAL:
	case OP_STORE_GLOBAL:
	case OP_LOAD_ATTR:
		return OPND_NAME;
	case OP_LOAD_DEREF:
	case OP_STORE_DEREF:
	case OP_LOAD_CLOSURE:
		return OPND_CELL;
	case OP_JUMP:
	case OP_POP_JUMP_IF_FALSE:
	case OP_POP_JUMP_IF_TRUE:
	case OP_JUMP_IF_FALSE_OR_POP:
	case OP_JUMP_IF_TRUE_OR_POP:
	case OP_FOR_ITER:
		return OPND_JUMP;
	case OP_BINARY_OP:
		return OPND_BINOP;
	case OP_COMPARE_OP:
		return OPND_CMPOP;
	case OP_MAKE_FUNCTION:
		return OPND_FLAGS;
	case OP_BUILD_SLICE:
	case OP_BUILD_LIST:
	case OP_BUILD_TUPLE:
	case OP_UNPACK_SEQUENCE:
	case OP_CALL:
	case OP_CALL_KW:
		return OPND_COUNT;
	default:
		return OPND_NONE;
	}
}

/* "  (what the operand means)", when there is something to say */
static void annotate(const struct code *c, opcode op, uint32_t a, struct strbuf *out)
{
	switch (operand_kind(op)) {
	case OPND_CONST:
		if (a >= (uint32_t)c->nconsts) {
			sb_puts(out, "  (?)");
		} else if (c->consts[a].tag == VAL_CODE) {
			sb_printf(out, "  (<code %s>)", val_code(c->consts[a])->name);
		} else {
			sb_puts(out, "  (");
			val_repr(c->consts[a], out);
			sb_putc(out, ')');
		}
		break;
	case OPND_LOCAL:
		sb_printf(out, "  (%s)", a < (uint32_t)c->nlocals ? c->local_names[a] : "?");
		break;
	case OPND_NAME:
		sb_printf(out, "  (%s)", a < (uint32_t)c->nnames ? val_str(c->names[a])->data : "?");
		break;
	case OPND_CELL:
		if (a < (uint32_t)c->ncellvars)
			sb_printf(out, "  (%s)", c->cellvar_names[a]);
		else if (a - (uint32_t)c->ncellvars < (uint32_t)c->nfreevars)
			sb_printf(out, "  (%s, free)", c->freevar_names[a - (uint32_t)c->ncellvars]);
		else
			sb_puts(out, "  (?)");
		break;
	case OPND_JUMP:
		sb_printf(out, "  (to %u)", a);
		break;
	case OPND_BINOP:
		sb_printf(out, "  (%s)", code_binop_symbol(a));
		break;
	case OPND_CMPOP:
		sb_printf(out, "  (%s)", code_cmpop_symbol(a));
		break;
	case OPND_FLAGS:
		if (a & 3)
			sb_printf(out, "  (%s%s%s)", a & 1 ? "defaults" : "", (a & 3) == 3 ? ", " : "",
				  a & 2 ? "closure" : "");
		break;
	default:
		break;
	}
}

static void list_names(const char *label, char **names, int n, struct strbuf *out)
{
	if (n == 0)
		return;
	sb_printf(out, ", %s [", label);
	for (int i = 0; i < n; i++)
		sb_printf(out, "%s%s", i ? ", " : "", names[i]);
	sb_putc(out, ']');
}

void code_disassemble(const struct code *c, struct strbuf *out)
{
	sb_printf(out, "code %s at %s:%d, params %d", c->name, c->src && c->src->path ? c->src->path : "?",
		  c->firstline, c->nparams);
	list_names("locals", c->local_names, c->nlocals, out);
	list_names("cells", c->cellvar_names, c->ncellvars, out);
	list_names("free", c->freevar_names, c->nfreevars, out);
	sb_printf(out, ", stack %d\n", c->max_stack);

	for (int pc = 0; pc < c->ninsns; pc++) {
		uint32_t w = c->insns[pc];
		opcode op = INSN_OP(w);
		uint32_t a = INSN_A(w);
		const char *name = op < OP_COUNT ? opcode_names[op] : "?";
		sb_printf(out, "  %4d  %4d:%-4d ", pc, c->locs[pc].line, c->locs[pc].col);
		if (op < OP_COUNT && operand_kind(op) == OPND_NONE) {
			sb_printf(out, "%s\n", name);
			continue;
		}
		sb_printf(out, "%-20s %3u", name, a);
		annotate(c, op, a, out);
		sb_putc(out, '\n');
	}
	for (int i = 0; i < c->nconsts; i++)
		if (c->consts[i].tag == VAL_CODE) {
			sb_putc(out, '\n');
			code_disassemble(val_code(c->consts[i]), out);
		}
}
