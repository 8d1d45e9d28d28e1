/* cg_schedule.c - the instructions of each loop body in the order that an
 * out-of-order core with a small window runs best: the longest chain of
 * latencies first, every instruction as late as the chain allows.
 *
 * A kernel of a few transcendentals is a chain of 60 to 80 cycles of
 * latency an iteration, and much of the rest waits on it. The core
 * overlaps iterations only as far as its scheduler holds the waiting
 * instructions (about 130 in flight on Zen 3: a loop of one 32-FMA
 * chain an iteration runs at 30 cycles, where its FMAs need 16), and
 * it takes them in program order. LLVM's code generation keeps the IR's
 * order nearly as it is, and that order is the emitter's: the operands of
 * a product one after the other, a tanh whole before the sigmoid that is
 * the longer of the two. Here each instruction's height (the longest
 * path of latencies from it to the end of the block) decides: the block
 * is sorted by height, highest first, which is its as-late-as-possible
 * schedule. The chain that bounds the iteration then starts first, and
 * the work beside it enters the window near when it can run; doc/codegen.md
 * gives the measurements.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cg_emit.h"

/* a block of more is left as it is (no kernel comes near) */
#define SCHED_MAX 4096

/* the intrinsics a reordered block may call: they neither read nor
 * write memory, nor call out (a libm call keeps its block's order) */
static const struct {
	const char *prefix;
	int latency;
} pure_calls[] = {
	{"llvm.fmuladd.", 4},  {"llvm.fma.", 4},	{"llvm.fabs.", 1},     {"llvm.copysign.", 1},
	{"llvm.roundeven.", 3}, {"llvm.floor.", 3},	{"llvm.ceil.", 3},     {"llvm.trunc.", 3},
	{"llvm.rint.", 3},     {"llvm.nearbyint.", 3}, {"llvm.sqrt.", 14},    {"llvm.minnum.", 2},
	{"llvm.maxnum.", 2},   {"llvm.minimum.", 3},	{"llvm.maximum.", 3},  {"llvm.smin.", 1},
	{"llvm.smax.", 1},     {"llvm.umin.", 1},	{"llvm.umax.", 1},     {"llvm.abs.", 1},
	{"llvm.vector.reduce.", 6},
};

/* the latency of a pure intrinsic call, or -1 for any other call */
static int call_latency(LLVMValueRef in)
{
	for (size_t i = 0; i < sizeof pure_calls / sizeof *pure_calls; i++)
		if (cg_calls(in, pure_calls[i].prefix))
			return pure_calls[i].latency;
	return -1;
}

/* an x86 core's latency of the instruction in cycles (Zen 3 and Skylake
 * are alike: what matters is the ordering of chains, not the cycle),
 * or -1 when the block must keep its order (a call out, an atomic) */
static int latency(LLVMValueRef in)
{
	switch (LLVMGetInstructionOpcode(in)) {
	case LLVMFAdd:
	case LLVMFSub:
	case LLVMFMul:
	case LLVMMul: return 3;
	case LLVMFDiv: return 11;
	case LLVMFRem:
	case LLVMSDiv:
	case LLVMUDiv:
	case LLVMSRem:
	case LLVMURem: return 20;
	case LLVMFPToSI:
	case LLVMFPToUI:
	case LLVMSIToFP:
	case LLVMUIToFP:
	case LLVMFPExt:
	case LLVMFPTrunc: return 4;
	case LLVMBitCast: return 0;
	case LLVMExtractElement:
	case LLVMInsertElement:
	case LLVMShuffleVector: return 2;
	case LLVMLoad:
	case LLVMStore:
		if (LLVMGetVolatile(in) || LLVMGetOrdering(in) != LLVMAtomicOrderingNotAtomic)
			return -1;
		return LLVMGetInstructionOpcode(in) == LLVMLoad ? 5 : 1;
	case LLVMCall: return call_latency(in);
	case LLVMFence:
	case LLVMAtomicCmpXchg:
	case LLVMAtomicRMW:
	case LLVMInvoke:
	case LLVMVAArg: return -1;
	default: return 1;
	}
}

/* a load of a global that nothing writes (cg_math_unwritten_global):
 * the coefficients and the copies of constants, free to move past stores */
static bool reads_constant(LLVMValueRef in)
{
	return LLVMGetInstructionOpcode(in) == LLVMLoad && cg_math_unwritten_global(LLVMGetOperand(in, 0));
}

static bool is_memory(LLVMValueRef in)
{
	LLVMOpcode op = LLVMGetInstructionOpcode(in);
	return (op == LLVMLoad && !reads_constant(in)) || op == LLVMStore;
}

struct sched {
	LLVMValueRef *ins; /* the block's instructions between its phis and terminator */
	int n;
	int *lat, *height;
	bool *mem; /* is_memory, of each */
	struct slot {
		LLVMValueRef v;
		int i;
	} *by_ptr; /* ins sorted by address, to find an operand's index */
};

static int slot_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct slot *)a)->v, y = (uintptr_t)((const struct slot *)b)->v;
	return (x > y) - (x < y);
}

/* the index in the block of operand v, or -1 */
static int index_of(const struct sched *s, LLVMValueRef v)
{
	struct slot key = {v, 0}, *hit = bsearch(&key, s->by_ptr, (size_t)s->n, sizeof key, slot_cmp);
	return hit ? hit->i : -1;
}

/* the height of each instruction: its latency plus the greatest height
 * of what depends on it in the block, through its value or through
 * memory (a store stays after the loads and stores before it, a load
 * after the store before it). Linear: a load looks at the store before
 * it alone, a store back to that store */
static void heights(struct sched *s)
{
	int *below = calloc((size_t)s->n, sizeof *below); /* greatest height of a dependent */
	int *prev_store = malloc((size_t)s->n * sizeof *prev_store);
	if (!below || !prev_store) {
		for (int i = 0; i < s->n; i++)
			s->height[i] = s->n - i; /* the order as it is */
		free(below);
		free(prev_store);
		return;
	}
	for (int i = 0, last = -1; i < s->n; i++) {
		prev_store[i] = last;
		if (s->mem[i] && LLVMGetInstructionOpcode(s->ins[i]) == LLVMStore)
			last = i;
	}
	for (int i = s->n - 1; i >= 0; i--) {
		LLVMValueRef in = s->ins[i];
		int h = s->height[i] = s->lat[i] + below[i];
		int nops = LLVMGetNumOperands(in);
		for (int k = 0; k < nops; k++) {
			int j = index_of(s, LLVMGetOperand(in, k));
			if (j >= 0 && below[j] < h)
				below[j] = h;
		}
		if (!s->mem[i])
			continue;
		bool store = LLVMGetInstructionOpcode(in) == LLVMStore;
		for (int j = store ? i - 1 : prev_store[i]; j >= 0 && j >= prev_store[i]; j--)
			if (s->mem[j] && below[j] < h)
				below[j] = h;
	}
	free(below);
	free(prev_store);
}

/* highest first; of equal heights, in the block's order (an operand of
 * latency 0, a bitcast, has its user's height and stays before it) */
struct rank {
	int height, i;
};

static int by_height(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;
	if (x->height != y->height)
		return y->height - x->height;
	return x->i - y->i;
}

/* in to the builder's position under its own name (the builder would
 * give it the one it is passed) */
static void move_to(LLVMBuilderRef b, LLVMValueRef in)
{
	size_t len;
	const char *name = LLVMGetValueName2(in, &len);
	char small[64], *copy = len < sizeof small ? small : malloc(len + 1);
	if (!copy) {
		copy = small;
		len = 0;
	}
	memcpy(copy, name, len);
	copy[len] = 0;
	LLVMInstructionRemoveFromParent(in);
	LLVMInsertIntoBuilderWithName(b, in, copy);
	if (copy != small)
		free(copy);
}

/* a block that branches back to itself: a loop of one block, as the
 * vectorizer's vector body and the kernels' innermost loops are */
static bool is_loop_block(LLVMBasicBlockRef bb)
{
	LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
	if (!t || LLVMGetInstructionOpcode(t) != LLVMBr)
		return false;
	unsigned n = LLVMGetNumSuccessors(t);
	for (unsigned i = 0; i < n; i++)
		if (LLVMGetSuccessor(t, i) == bb)
			return true;
	return false;
}

/* 0 when scheduled or left as it is, -1 when out of memory */
static int schedule_block(LLVMBuilderRef b, LLVMBasicBlockRef bb)
{
	LLVMValueRef term = LLVMGetBasicBlockTerminator(bb), first = LLVMGetFirstInstruction(bb);
	while (first && LLVMIsAPHINode(first))
		first = LLVMGetNextInstruction(first);
	int n = 0;
	for (LLVMValueRef in = first; in && in != term; in = LLVMGetNextInstruction(in))
		if (++n > SCHED_MAX)
			return 0;
	if (n < 3)
		return 0;
	struct sched s = {.n = n};
	s.ins = malloc((size_t)n * sizeof *s.ins);
	s.lat = malloc((size_t)n * sizeof *s.lat);
	s.height = malloc((size_t)n * sizeof *s.height);
	s.by_ptr = malloc((size_t)n * sizeof *s.by_ptr);
	s.mem = malloc((size_t)n * sizeof *s.mem);
	struct rank *order = malloc((size_t)n * sizeof *order);
	int rc = s.ins && s.lat && s.height && s.by_ptr && s.mem && order ? 0 : -1;
	bool keep = rc < 0;
	n = 0;
	for (LLVMValueRef in = first; !keep && in != term; in = LLVMGetNextInstruction(in), n++) {
		s.ins[n] = in;
		s.by_ptr[n] = (struct slot){in, n};
		keep = (s.lat[n] = latency(in)) < 0;
		s.mem[n] = !keep && is_memory(in);
	}
	if (!keep) {
		qsort(s.by_ptr, (size_t)s.n, sizeof *s.by_ptr, slot_cmp);
		heights(&s);
		for (int i = 0; i < s.n; i++)
			order[i] = (struct rank){s.height[i], i};
		qsort(order, (size_t)s.n, sizeof *order, by_height);
		/* each in turn to just before the terminator */
		LLVMPositionBuilderBefore(b, term);
		LLVMSetCurrentDebugLocation2(b, NULL); /* else each moved one takes the branch's line */
		for (int i = 0; i < s.n; i++)
			move_to(b, s.ins[order[i].i]);
	}
	free(s.ins);
	free(s.lat);
	free(s.height);
	free(s.by_ptr);
	free(s.mem);
	free(order);
	return rc;
}

int cg_schedule_loops(LLVMModuleRef mod)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
	int rc = 0;
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f && rc == 0; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb && rc == 0; bb = LLVMGetNextBasicBlock(bb))
			if (is_loop_block(bb))
				rc = schedule_block(b, bb);
	LLVMDisposeBuilder(b);
	return rc;
}
