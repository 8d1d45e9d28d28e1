/* vm.c - the bytecode interpreter.
 *
 * The dispatch loop (run) uses computed goto, keeps pc/sp/locals in
 * registers and has inline fast paths for ints, floats, range loops, list
 * indexing and calls of user functions; everything else goes through the
 * Python-semantics helpers below it (vm_binary, vm_compare, ...), which
 * hand tensors to the table the tensor layer installs (vm_tensor_hooks).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dtype.h"
#include "util.h"
#include "vm.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define VM_STACK_VALUES (1u << 22) /* 64 MiB of address space, touched on use */
#define VM_FRAMES_MAX (1 << 16)
#define CODE_VERIFIED 0x80000000u  /* in code->hdr.flags */

struct gent {
	struct str *key;
	value v;
};

struct gtable {
	struct gent *slots;
	size_t cap, n;
};

struct tb_entry {
	struct code *code; /* a reference */
	uint32_t pc;       /* the instruction running in that frame */
};

struct vm {
	value *stack, *stack_end;
	size_t stack_map_bytes;
	struct frame *frames;
	int nframes;
	int recursion_limit;
	struct gtable globals, builtins;
	vm_eval_frame_fn eval_frame;
	void *eval_ctx;
	struct runtime *runtime;
	/* the pending error */
	bool err_pending;
	char *err_msg;
	struct code *err_code; /* a reference; NULL when no location */
	uint32_t err_pc;
	struct tb_entry *tb;
	int ntb, tb_cap;
	int exit_status;       /* exit(n) was called: n, its error unwinding; else -1 */
};

static inline value unbound(void) { return val_err(); }

value vm_raise(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[256];
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(small)) {
		tj_error_set("%s", small);
	} else if (n >= 0) {
		char *big = malloc((size_t)n + 1);
		if (big) {
			va_start(ap, fmt);
			vsnprintf(big, (size_t)n + 1, fmt, ap);
			va_end(ap);
			tj_error_set("%s", big);
			free(big);
		}
	}
	return val_err();
}

/* ---- the globals table: open addressing on interned-or-not names ---- */

static value *gtable_find(const struct gtable *t, const struct str *name)
{
	if (!t->cap)
		return NULL;
	size_t mask = t->cap - 1;
	for (size_t j = name->hash & mask;; j = (j + 1) & mask) {
		struct gent *e = &t->slots[j];
		if (!e->key)
			return NULL;
		if (str_eq(e->key, name))
			return &e->v;
	}
}

/* stores v (stolen) under name (borrowed) */
static void gtable_set(struct gtable *t, struct str *name, value v)
{
	value *slot = gtable_find(t, name);
	if (slot) {
		value old = *slot;
		*slot = v;
		val_decref(old);
		return;
	}
	if ((t->n + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct gent *ns = xcalloc(ncap, sizeof(*ns));
		for (size_t i = 0; i < t->cap; i++) {
			struct gent *e = &t->slots[i];
			if (!e->key)
				continue;
			size_t j = e->key->hash & (ncap - 1);
			while (ns[j].key)
				j = (j + 1) & (ncap - 1);
			ns[j] = *e;
		}
		free(t->slots);
		t->slots = ns;
		t->cap = ncap;
	}
	size_t j = name->hash & (t->cap - 1);
	while (t->slots[j].key)
		j = (j + 1) & (t->cap - 1);
	name->hdr.rc++;
	t->slots[j].key = name;
	t->slots[j].v = v;
	t->n++;
}

static void gtable_release(struct gtable *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		if (t->slots[i].key) {
			val_decref(val_obj(VAL_STR, t->slots[i].key));
			val_decref(t->slots[i].v);
		}
	}
	free(t->slots);
	t->slots = NULL;
	t->cap = t->n = 0;
}

value vm_get_global(struct vm *vm, const char *name)
{
	value key = str_from_cstr(name);
	value *slot = gtable_find(&vm->globals, val_str(key));
	val_decref(key);
	return slot ? *slot : val_err();
}

void vm_set_global(struct vm *vm, const char *name, value v)
{
	value key = str_intern(name, strlen(name));
	val_incref(v);
	gtable_set(&vm->globals, val_str(key), v);
	val_decref(key);
}

void vm_set_builtin(struct vm *vm, const char *name, value v)
{
	value key = str_intern(name, strlen(name));
	val_incref(v);
	gtable_set(&vm->builtins, val_str(key), v);
	val_decref(key);
}

value vm_lookup_name(struct vm *vm, struct str *name)
{
	value *slot = gtable_find(&vm->globals, name);
	if (!slot)
		slot = gtable_find(&vm->builtins, name);
	return slot ? *slot : val_err();
}

/* ---- life cycle ---- */

struct vm *vm_new(void)
{
	struct vm *vm = xcalloc(1, sizeof(*vm));
	size_t bytes = (size_t)VM_STACK_VALUES * sizeof(value);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		bytes = (size_t)(1u << 18) * sizeof(value);
		p = xcalloc(1, bytes);
		vm->stack_map_bytes = 0;
	} else {
		vm->stack_map_bytes = bytes;
	}
	vm->stack = p;
	vm->stack_end = vm->stack + bytes / sizeof(value);
	vm->frames = xcalloc(VM_FRAMES_MAX, sizeof(struct frame));
	vm->recursion_limit = VM_RECURSION_LIMIT;
	vm->exit_status = -1;
	value main = str_from_cstr("__main__");
	vm_set_global(vm, "__name__", main);
	val_decref(main);
	builtins_install(vm);
	return vm;
}

static void tb_clear(struct vm *vm)
{
	for (int i = 0; i < vm->ntb; i++)
		val_decref(val_obj(VAL_CODE, vm->tb[i].code));
	vm->ntb = 0;
}

void vm_request_exit(struct vm *vm, int status)
{
	vm->exit_status = status;
}

int vm_exit_status(const struct vm *vm)
{
	return vm->exit_status;
}

void vm_error_clear(struct vm *vm)
{
	tb_clear(vm);
	free(vm->err_msg);
	vm->err_msg = NULL;
	if (vm->err_code)
		val_decref(val_obj(VAL_CODE, vm->err_code));
	vm->err_code = NULL;
	vm->err_pending = false;
}

void vm_free(struct vm *vm)
{
	if (!vm)
		return;
	while (vm->nframes > 0)
		vm_pop_frame(vm, &vm->frames[vm->nframes - 1]);
	vm_error_clear(vm);
	free(vm->tb);
	gtable_release(&vm->globals);
	gtable_release(&vm->builtins);
	func_collect_cycles();
	if (vm->stack_map_bytes)
		munmap(vm->stack, vm->stack_map_bytes);
	else
		free(vm->stack);
	free(vm->frames);
	free(vm);
}

void vm_set_eval_frame(struct vm *vm, vm_eval_frame_fn fn, void *ctx)
{
	vm->eval_frame = fn;
	vm->eval_ctx = ctx;
}

vm_eval_frame_fn vm_get_eval_frame(struct vm *vm, void **ctx)
{
	if (ctx)
		*ctx = vm->eval_ctx;
	return vm->eval_frame;
}

void vm_set_recursion_limit(struct vm *vm, int limit)
{
	if (limit < 1)
		limit = 1;
	if (limit > VM_FRAMES_MAX - 8)
		limit = VM_FRAMES_MAX - 8;
	vm->recursion_limit = limit;
}

void vm_set_runtime(struct vm *vm, struct runtime *rt)
{
	vm->runtime = rt;
}

struct runtime *vm_runtime(const struct vm *vm)
{
	return vm->runtime;
}

struct frame *vm_top_frame(struct vm *vm)
{
	return vm->nframes ? &vm->frames[vm->nframes - 1] : NULL;
}

int vm_frame_count(struct vm *vm) { return vm->nframes; }

struct frame *vm_frame_at(struct vm *vm, int i)
{
	return i >= 0 && i < vm->nframes ? &vm->frames[i] : NULL;
}

/* ---- the verifier: run once per code object before its first frame ---- */

#define var 0x7fff
static const int opcode_effect[OP_COUNT] = {
#define OPCODE(name, effect, doc) (effect),
#include "opcodes.def"
#undef OPCODE
};
#undef var

static int verify_fail(const struct code *c, int pc, const char *what)
{
	tj_error_set("invalid bytecode in %s at %d: %s", c->name ? c->name : "?", pc, what);
	return -1;
}

static int verify_merge(const struct code *c, int *depth, int *work, int *nw, int target, int d)
{
	if (target < 0 || target >= c->ninsns)
		return verify_fail(c, target, "jump or fall out of the code");
	if (depth[target] < 0) {
		depth[target] = d;
		work[(*nw)++] = target;
	} else if (depth[target] != d) {
		return verify_fail(c, target, "inconsistent stack depth");
	}
	return 0;
}

static int verify_code(struct code *c)
{
	if (c->hdr.flags & CODE_VERIFIED)
		return 0;
	int n = c->ninsns;
	if (n <= 0 || !c->insns || !c->locs)
		return verify_fail(c, 0, "empty code");
	if (c->nparams < 0 || c->nlocals < c->nparams || c->ncellvars < 0 || c->nfreevars < 0)
		return verify_fail(c, 0, "bad counts");
	for (int i = 0; i < c->nnames; i++)
		if (c->names[i].tag != VAL_STR)
			return verify_fail(c, 0, "a name is not a string");
	int *depth = malloc(sizeof(int) * (size_t)n * 2);
	if (!depth)
		return verify_fail(c, 0, "out of memory");
	int *work = depth + n;
	for (int i = 0; i < n; i++)
		depth[i] = -1;
	int nw = 0, maxd = 0, rc = 0;
	depth[0] = 0;
	work[nw++] = 0;
	int ncells = c->ncellvars + c->nfreevars;
	while (nw && rc == 0) {
		int pc = work[--nw];
		int d = depth[pc];
		uint32_t w = c->insns[pc];
		unsigned op = INSN_OP(w);
		int a = (int)INSN_A(w);
		if (op >= OP_COUNT) {
			rc = verify_fail(c, pc, "unknown opcode");
			break;
		}
		int pops, pushes;
		if (opcode_effect[op] == 0x7fff) {
			pops = pushes = 0;
		} else {
			/* fixed effects: in = max(needed) below */
			pops = opcode_effect[op] < 0 ? -opcode_effect[op] : 0;
			pushes = opcode_effect[op] > 0 ? opcode_effect[op] : 0;
		}
		bool falls = true;
		int jump = -1, jump_depth = 0;
		const char *bad = NULL;
		switch ((opcode)op) {
		case OP_LOAD_CONST: if (a >= c->nconsts) bad = "constant index"; break;
		case OP_LOAD_FAST:
		case OP_STORE_FAST: if (a >= c->nlocals) bad = "local index"; break;
		case OP_LOAD_GLOBAL:
		case OP_STORE_GLOBAL: if (a >= c->nnames) bad = "name index"; break;
		case OP_LOAD_ATTR: if (a >= c->nnames) bad = "name index"; pops = 1; pushes = 1; break;
		case OP_LOAD_DEREF:
		case OP_STORE_DEREF:
		case OP_LOAD_CLOSURE: if (a >= ncells) bad = "cell index"; break;
		case OP_DUP_TOP: pops = 1; pushes = 2; break;
		case OP_DUP_TOP_TWO: pops = 2; pushes = 4; break;
		case OP_ROT_TWO: pops = pushes = 2; break;
		case OP_ROT_THREE: pops = pushes = 3; break;
		case OP_UNARY_NEG:
		case OP_UNARY_POS:
		case OP_UNARY_NOT:
		case OP_GET_ITER: pops = pushes = 1; break;
		case OP_BINARY_OP: if (a >= VB_COUNT) bad = "binary operator"; pops = 2; pushes = 1; break;
		case OP_COMPARE_OP: if (a >= VC_COUNT) bad = "comparison operator"; pops = 2; pushes = 1; break;
		case OP_BINARY_SUBSCR: pops = 2; pushes = 1; break;
		case OP_STORE_SUBSCR: pops = 3; pushes = 0; break;
		case OP_BUILD_SLICE: if (a != 2 && a != 3) bad = "slice arity"; pops = a; pushes = 1; break;
		case OP_BUILD_LIST:
		case OP_BUILD_TUPLE: pops = a; pushes = 1; break;
		case OP_UNPACK_SEQUENCE: pops = 1; pushes = a; break;
		case OP_JUMP: falls = false; jump = a; jump_depth = d; break;
		case OP_POP_JUMP_IF_FALSE:
		case OP_POP_JUMP_IF_TRUE: pops = 1; jump = a; jump_depth = d - 1; break;
		case OP_JUMP_IF_FALSE_OR_POP:
		case OP_JUMP_IF_TRUE_OR_POP: pops = 1; jump = a; jump_depth = d; break;
		case OP_FOR_ITER: pops = 1; pushes = 2; jump = a; jump_depth = d - 1; break;
		case OP_CALL: pops = a + 1; pushes = 1; break;
		case OP_CALL_KW: pops = a + 2; pushes = 1; break;
		case OP_MAKE_FUNCTION: pops = 1 + (a & 1) + ((a & 2) ? 1 : 0); pushes = 1; break;
		case OP_RETURN_VALUE: pops = 1; falls = false; break;
		default: break;
		}
		if (bad) {
			rc = verify_fail(c, pc, bad);
			break;
		}
		if (d < pops || (jump >= 0 && jump_depth < 0)) {
			rc = verify_fail(c, pc, "stack underflow");
			break;
		}
		int after = d - pops + pushes;
		if (after > maxd)
			maxd = after;
		if (d > maxd)
			maxd = d;
		if (jump >= 0 && verify_merge(c, depth, work, &nw, jump, jump_depth) < 0)
			rc = -1;
		else if (falls && verify_merge(c, depth, work, &nw, pc + 1, after) < 0)
			rc = -1;
	}
	free(depth);
	if (rc < 0)
		return -1;
	if (c->max_stack < maxd)
		c->max_stack = maxd;
	c->hdr.flags |= CODE_VERIFIED;
	return 0;
}

/* ---- frames ---- */

static value *stack_top(struct vm *vm)
{
	return vm->nframes ? vm->frames[vm->nframes - 1].sp : vm->stack;
}

static size_t frame_slots(const struct code *c)
{
	return (size_t)c->nlocals + (size_t)c->ncellvars + (size_t)c->nfreevars + (size_t)c->max_stack;
}

static void release_values(value *from, value *to)
{
	for (value *p = from; p < to; p++)
		val_decref(*p);
}

void vm_pop_frame(struct vm *vm, struct frame *f)
{
	release_values(f->locals, f->sp);
	f->sp = f->locals;
	vm->nframes--;
}

static const char *plural(long n, const char *one, const char *many) { return n == 1 ? one : many; }

/* "'a'", "'a' and 'b'", "'a', 'b', and 'c'" */
static void name_list(struct strbuf *sb, char *const *names, const int *idx, int n)
{
	for (int i = 0; i < n; i++) {
		if (i && n > 2)
			sb_puts(sb, ", ");
		if (i == n - 1 && n > 1)
			sb_puts(sb, n > 2 ? "and " : " and ");
		sb_printf(sb, "'%s'", names[idx[i]]);
	}
}

/* Binds nargs owned values at base (args moved in) into a frame for fn.
 * Always consumes the arguments; NULL after tj_error_set(). */
static struct frame *bind_frame(struct vm *vm, struct func *fn, value *base, int nargs, value kwnames)
{
	struct code *c = fn->code;
	int nkw = kwnames.tag == VAL_TUPLE ? (int)val_tuple(kwnames)->len : 0;
	int npos = nargs - nkw;
	int nparams = c->nparams, nlocals = c->nlocals;
	int ncells = c->ncellvars + c->nfreevars;
	const char *fname = c->name;
	if (unlikely(!(c->hdr.flags & CODE_VERIFIED)) && verify_code(c) < 0)
		goto fail_all;
	if (unlikely(vm->nframes >= vm->recursion_limit)) {
		tj_error_set("maximum recursion depth exceeded");
		goto fail_all;
	}
	size_t extent = (size_t)(nargs > nlocals + ncells ? nargs : nlocals + ncells) + (size_t)nkw;
	if (unlikely(base + extent + frame_slots(c) >= vm->stack_end)) {
		tj_error_set("maximum recursion depth exceeded (value stack full)");
		goto fail_all;
	}
	if (likely(nkw == 0 && npos == nparams)) {
		for (int i = nargs; i < nlocals; i++)
			base[i] = unbound();
	} else {
		value *kwv = base + (nargs > nlocals + ncells ? nargs : nlocals + ncells);
		for (int k = 0; k < nkw; k++)
			kwv[k] = base[npos + k];
		for (int i = nparams; i < npos; i++)
			val_decref(base[i]);
		int ncopy = npos < nparams ? npos : nparams;
		for (int i = ncopy; i < nlocals; i++)
			base[i] = unbound();
		struct tuple *kwt = nkw ? val_tuple(kwnames) : NULL;
		for (int k = 0; k < nkw; k++) {
			if (kwt->items[k].tag != VAL_STR) {
				tj_error_set("%s() keywords must be strings", fname);
				release_values(kwv + k, kwv + nkw);
				release_values(base, base + nlocals);
				return NULL;
			}
			struct str *kn = val_str(kwt->items[k]);
			int j;
			for (j = 0; j < nparams; j++)
				if (str_eq_cstr(kn, c->local_names[j]))
					break;
			if (j == nparams || base[j].tag != VAL_ERR) {
				if (j == nparams)
					tj_error_set("%s() got an unexpected keyword argument '%s'", fname, kn->data);
				else
					tj_error_set("%s() got multiple values for argument '%s'", fname, kn->data);
				release_values(kwv + k, kwv + nkw);
				release_values(base, base + nlocals);
				return NULL;
			}
			base[j] = kwv[k];
		}
		int ndef = fn->defaults.tag == VAL_TUPLE ? (int)val_tuple(fn->defaults)->len : 0;
		if (ndef > nparams)
			ndef = nparams;
		if (npos > nparams) {
			if (ndef)
				tj_error_set("%s() takes from %d to %d positional arguments but %d %s given", fname,
					     nparams - ndef, nparams, npos, plural(npos, "was", "were"));
			else
				tj_error_set("%s() takes %d positional %s but %d %s given", fname, nparams,
					     plural(nparams, "argument", "arguments"), npos, plural(npos, "was", "were"));
			release_values(base, base + nlocals);
			return NULL;
		}
		for (int j = nparams - ndef; j < nparams; j++) {
			if (base[j].tag == VAL_ERR) {
				value d = val_tuple(fn->defaults)->items[j - (nparams - ndef)];
				val_incref(d);
				base[j] = d;
			}
		}
		int nmissing = 0;
		for (int j = 0; j < nparams; j++)
			nmissing += base[j].tag == VAL_ERR;
		if (nmissing) {
			int *idx = malloc(sizeof(int) * (size_t)nmissing);
			struct strbuf sb = STRBUF_INIT;
			if (idx) {
				int m = 0;
				for (int j = 0; j < nparams; j++)
					if (base[j].tag == VAL_ERR)
						idx[m++] = j;
				name_list(&sb, c->local_names, idx, m);
				free(idx);
			}
			tj_error_set("%s() missing %d required positional %s: %s", fname, nmissing,
				     plural(nmissing, "argument", "arguments"), sb.buf ? sb.buf : "");
			sb_release(&sb);
			release_values(base, base + nlocals);
			return NULL;
		}
	}
	value *cells = base + nlocals;
	if (unlikely(ncells)) {
		int nfree = c->nfreevars;
		if (nfree && (fn->closure.tag != VAL_TUPLE || (int)val_tuple(fn->closure)->len != nfree)) {
			tj_error_set("%s() has a bad closure", fname);
			release_values(base, base + nlocals);
			return NULL;
		}
		for (int i = 0; i < c->ncellvars; i++) {
			int p = c->cellvar_param ? c->cellvar_param[i] : -1;
			if (p >= 0 && p < nlocals) {
				cells[i] = cell_new(base[p]);
				val_decref(base[p]);
				base[p] = unbound();
			} else {
				cells[i] = cell_new(unbound());
			}
		}
		for (int i = 0; i < nfree; i++) {
			value cv = val_tuple(fn->closure)->items[i];
			val_incref(cv);
			cells[c->ncellvars + i] = cv;
		}
	}
	struct frame *f = &vm->frames[vm->nframes++];
	f->code = c;
	f->func = fn;
	f->locals = base;
	f->cells = cells;
	f->stack = cells + ncells;
	f->sp = f->stack;
	f->pc = 0;
	f->is_entry = false;
	return f;

fail_all:
	release_values(base, base + nargs);
	return NULL;
}

struct frame *vm_push_call_frame(struct vm *vm, struct func *fn, const value *args, int nargs, value kwnames)
{
	value *base = stack_top(vm);
	if (base + nargs >= vm->stack_end) {
		tj_error_set("maximum recursion depth exceeded (value stack full)");
		return NULL;
	}
	for (int i = 0; i < nargs; i++) {
		val_incref(args[i]);
		base[i] = args[i];
	}
	return bind_frame(vm, fn, base, nargs, kwnames);
}

struct frame *vm_push_frame(struct vm *vm, struct code *c, struct func *fn)
{
	if (verify_code(c) < 0)
		return NULL;
	if (vm->nframes >= vm->recursion_limit) {
		tj_error_set("maximum recursion depth exceeded");
		return NULL;
	}
	value *base = stack_top(vm);
	if (base + frame_slots(c) >= vm->stack_end) {
		tj_error_set("maximum recursion depth exceeded (value stack full)");
		return NULL;
	}
	for (int i = 0; i < c->nlocals; i++)
		base[i] = unbound();
	value *cells = base + c->nlocals;
	for (int i = 0; i < c->ncellvars; i++)
		cells[i] = cell_new(unbound());
	for (int i = 0; i < c->nfreevars; i++) {
		value cv;
		if (fn && fn->closure.tag == VAL_TUPLE && i < (int)val_tuple(fn->closure)->len) {
			cv = val_tuple(fn->closure)->items[i];
			val_incref(cv);
		} else {
			cv = cell_new(unbound());
		}
		cells[c->ncellvars + i] = cv;
	}
	struct frame *f = &vm->frames[vm->nframes++];
	f->code = c;
	f->func = fn;
	f->locals = base;
	f->cells = cells;
	f->stack = cells + c->ncellvars + c->nfreevars;
	f->sp = f->stack;
	f->pc = 0;
	f->is_entry = false;
	return f;
}

/* ---- errors and tracebacks ---- */

static void tb_add(struct vm *vm, struct frame *f)
{
	if (vm->ntb == vm->tb_cap) {
		int cap = vm->tb_cap ? vm->tb_cap * 2 : 16;
		struct tb_entry *n = realloc(vm->tb, sizeof(*n) * (size_t)cap);
		if (!n)
			return; /* the error still unwinds, with a shorter traceback */
		vm->tb = n;
		vm->tb_cap = cap;
	}
	f->code->hdr.rc++;
	vm->tb[vm->ntb].code = f->code;
	vm->tb[vm->ntb].pc = f->pc ? f->pc - 1 : 0;
	vm->ntb++;
}

/* Makes the library error pending at frame f's current instruction (unless
 * an error from a deeper frame is already pending). */
static void error_at(struct vm *vm, struct frame *f)
{
	char *msg = tj_error_take();
	if (vm->err_pending) {
		free(msg);
		return;
	}
	vm->err_pending = true;
	vm->err_msg = msg ? msg : strdup("unknown error");
	if (f) {
		f->code->hdr.rc++;
		vm->err_code = f->code;
		vm->err_pc = f->pc ? f->pc - 1 : 0;
	}
}

bool vm_error_pending(struct vm *vm) { return vm->err_pending; }
const char *vm_error_message(struct vm *vm) { return vm->err_pending ? vm->err_msg : NULL; }

void vm_error_at(struct vm *vm, struct code *code, uint32_t pc)
{
	if (!vm->err_pending) {
		char *msg = tj_error_take();
		vm->err_pending = true;
		vm->err_msg = msg ? msg : strdup("unknown error");
		code->hdr.rc++;
		vm->err_code = code;
		vm->err_pc = pc;
	}
	struct frame fake = {.code = code, .pc = pc + 1};
	tb_add(vm, &fake);
}

static bool code_loc(const struct code *c, uint32_t pc, const struct source **src, struct src_loc *loc)
{
	if (!c || !c->locs || (int)pc >= c->ninsns)
		return false;
	*src = c->src;
	*loc = c->locs[pc];
	return c->src != NULL;
}

bool vm_error_location(struct vm *vm, const struct source **src, struct src_loc *loc)
{
	return vm->err_pending && code_loc(vm->err_code, vm->err_pc, src, loc);
}

bool vm_current_location(struct vm *vm, const struct source **src, struct src_loc *loc)
{
	struct frame *f = vm_top_frame(vm);
	return f && code_loc(f->code, f->pc ? f->pc - 1 : 0, src, loc);
}

static void tb_line(FILE *out, struct strbuf *sb, const struct code *c, uint32_t pc)
{
	int line = c->locs && (int)pc < c->ninsns ? c->locs[pc].line : 0;
	const char *path = c->src && c->src->path ? c->src->path : "<unknown>";
	char *shown_path = shown_dup(path);
	if (out)
		fprintf(out, "  File \"%s\", line %d, in %s\n", shown_path, line, c->name);
	if (sb)
		sb_printf(sb, "  File \"%s\", line %d, in %s\n", shown_path, line, c->name);
	free(shown_path);
	size_t len;
	const char *text = c->src && line > 0 ? source_line(c->src, line, &len) : NULL;
	if (!text)
		return;
	while (len && (*text == ' ' || *text == '\t')) {
		text++;
		len--;
	}
	while (len && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\r'))
		len--;
	if (!len)
		return;
	/* as a terminal may show it: a source line never sends an escape */
	struct strbuf shown = STRBUF_INIT;
	sb_add_shown(&shown, text, len);
	if (out)
		fprintf(out, "    %s\n", sb_str(&shown));
	if (sb)
		sb_printf(sb, "    %s\n", sb_str(&shown));
	sb_release(&shown);
}

static bool tb_same(const struct tb_entry *a, const struct tb_entry *b)
{
	if (a->code == b->code && a->pc == b->pc)
		return true;
	return a->code->src == b->code->src && strcmp(a->code->name, b->code->name) == 0 && a->code->locs &&
	       b->code->locs && a->code->locs[a->pc].line == b->code->locs[b->pc].line;
}

void vm_print_traceback(struct vm *vm, FILE *out)
{
	fflush(stdout);
	if (!vm->err_pending)
		return;
	if (vm->ntb) {
		fputs("Traceback (most recent call last):\n", out);
		int repeat = 0;
		for (int i = vm->ntb - 1; i >= 0; i--) {
			if (i < vm->ntb - 1 && tb_same(&vm->tb[i], &vm->tb[i + 1])) {
				if (++repeat >= 3)
					continue;
			} else {
				if (repeat >= 3)
					fprintf(out, "  [Previous line repeated %d more time%s]\n", repeat - 2,
						repeat - 2 == 1 ? "" : "s");
				repeat = 0;
			}
			tb_line(out, NULL, vm->tb[i].code, vm->tb[i].pc);
		}
		if (repeat >= 3)
			fprintf(out, "  [Previous line repeated %d more time%s]\n", repeat - 2,
				repeat - 2 == 1 ? "" : "s");
	}
	const struct source *src;
	struct src_loc loc;
	if (code_loc(vm->err_code, vm->err_pc, &src, &loc))
		diag_print(out, src, loc, "error", "%s", vm->err_msg);
	else
		fprintf(out, "tjit: error: %s\n", vm->err_msg);
	fflush(out);
}

void vm_format_stack(struct vm *vm, struct strbuf *out)
{
	for (int i = 0; i < vm->nframes; i++) {
		struct frame *f = &vm->frames[i];
		tb_line(NULL, out, f->code, f->pc ? f->pc - 1 : 0);
	}
}

/* ---- calls ---- */

static value call_func(struct vm *vm, struct func *fn, const value *args, int nargs, value kwnames)
{
	struct frame *f = vm_push_call_frame(vm, fn, args, nargs, kwnames);
	if (!f)
		return val_err();
	if (vm->eval_frame)
		return vm->eval_frame(vm, f, vm->eval_ctx);
	return vm_run_frame(vm, f);
}

value vm_call(struct vm *vm, value callee, const value *args, int nargs, value kwnames)
{
	switch ((value_tag)callee.tag) {
	case VAL_FUNC:
		return call_func(vm, val_func(callee), args, nargs, kwnames);
	case VAL_BUILTIN:
		return ((struct builtin *)callee.o)->fn(vm, args, nargs, kwnames);
	case VAL_BOUND: {
		struct bound *b = (struct bound *)callee.o;
		value small[8];
		value *tmp = nargs + 1 <= 8 ? small : malloc(sizeof(value) * (size_t)(nargs + 1));
		if (!tmp)
			return vm_raise("out of memory");
		tmp[0] = b->self;
		if (nargs)
			memcpy(tmp + 1, args, sizeof(value) * (size_t)nargs);
		value fnv = b->fn;
		val_incref(callee);
		value r = vm_call(vm, fnv, tmp, nargs + 1, kwnames);
		val_decref(callee);
		if (tmp != small)
			free(tmp);
		return r;
	}
	case VAL_TYPE:
		return builtins_call_type(vm, (value_tag)callee.i, args, nargs, kwnames);
	case VAL_OBJECT: {
		struct object *o = (struct object *)callee.o;
		if (o->type->call)
			return o->type->call(callee.o, vm, args, nargs, kwnames);
		break;
	}
	default:
		break;
	}
	return vm_raise("'%s' object is not callable", val_type_name(callee));
}

value vm_eval_frame_default(struct vm *vm, struct frame *f, void *ctx)
{
	(void)ctx;
	return vm_run_frame(vm, f);
}

/* ---- the interpreter loop ---- */

static value run(struct vm *vm, struct frame *f, bool step);

/* what run() returns in step mode when the frame goes on */
static inline value stepped(void)
{
	value v = val_err();
	v.i = 1;
	return v;
}

value vm_run_frame(struct vm *vm, struct frame *f)
{
	f->is_entry = true;
	return run(vm, f, false);
}

int vm_step(struct vm *vm, struct frame *f, value *result)
{
	f->is_entry = true;
	value r = run(vm, f, true);
	if (r.tag == VAL_ERR)
		return r.i == 1 ? 0 : -1;
	*result = r;
	return 1;
}

value vm_run_module(struct vm *vm, struct code *module)
{
	vm_error_clear(vm);
	struct frame *f = vm_push_frame(vm, module, NULL);
	if (!f) {
		error_at(vm, NULL);
		return val_err();
	}
	value r = vm_run_frame(vm, f);
	if (val_is_err(r))
		return r;
	val_decref(r);
	return val_none();
}

static value int_pow(int64_t a, int64_t b);
static value float_binop(enum vm_binop op, double x, double y);
static int unpack_into(value seq, int n, value *out);

/* Each handler ends in its own indirect jump (threaded code): keep GCC from
 * merging them into one shared dispatch jump, which predicts badly. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-crossjumping", "no-gcse", "no-tree-slp-vectorize")))
#endif
static value run(struct vm *vm, struct frame *f, bool step)
{
	static const void *const dispatch[OP_COUNT] = {
#define OPCODE(name, effect, doc) &&L_##name,
#include "opcodes.def"
#undef OPCODE
	};
	/* step mode: every dispatch after the first instruction stops */
	static const void *const stop[OP_COUNT] = {[0 ... OP_COUNT - 1] = &&L_STEP_DONE};
	const void *const *dt = step ? stop : dispatch;
	/* the opcodes that lookahead fusion looks for; none in step mode
	 * (0x100 is no opcode) */
	const unsigned fuse_store = step ? 0x100 : OP_STORE_FAST;
	const unsigned fuse_load = step ? 0x100 : OP_LOAD_FAST;
	const unsigned fuse_jump = step ? 0x100 : OP_POP_JUMP_IF_FALSE;
	_Static_assert(OP_POP_JUMP_IF_TRUE == OP_POP_JUMP_IF_FALSE + 1, "jump opcodes are adjacent");
	struct code *co;
	const uint32_t *ip;
	value *sp, *locals;
	const value *consts;
	uint32_t w;
	value r, kwnames;
	int nargs;

#define LOAD_STATE() (co = f->code, ip = co->insns + f->pc, sp = f->sp, locals = f->locals, consts = co->consts)
#define SAVE_STATE() (f->pc = (uint32_t)(ip - co->insns), f->sp = sp)
#define DISPATCH()                                \
	do {                                      \
		w = *ip++;                        \
		goto *dt[INSN_OP(w)];             \
	} while (0)
#define ARG ((uint32_t)(w >> 8))
/* Values move field by field (tag byte, 8-byte payload): a 16-byte load of
 * a slot just written by two smaller stores stalls store forwarding. */
#define FITS32(x) ((uint64_t)(x) + 0x80000000u <= 0xffffffffu)
#define VMOVE(dst, src) ((dst).tag = (src).tag, (dst).i = (src).i)
/* Lookahead fusion: when the next instruction is STORE_FAST, a number
 * result goes straight into its local (the instruction is then skipped).
 * Only the dispatch changes; the bytecode stays as the compiler made it. */
#define STORE_FAST_FUSED(TAG, FIELD, X)                                           \
	do {                                                                      \
		uint32_t nw_ = *ip;                                               \
		if ((unsigned)INSN_OP(nw_) == fuse_store) {                       \
			value *l_ = &locals[INSN_A(nw_)];                         \
			uint8_t ot_ = l_->tag;                                    \
			struct obj *oo_ = l_->o;                                  \
			l_->tag = (TAG);                                          \
			l_->FIELD = (X);                                          \
			sp--;                                                     \
			ip++;                                                     \
			if (ot_ >= VAL_FIRST_HEAP && --oo_->rc == 0) {            \
				value old_;                                       \
				old_.tag = ot_;                                   \
				old_.o = oo_;                                     \
				obj_free(old_);                                   \
			}                                                         \
			DISPATCH();                                               \
		}                                                                 \
	} while (0)
/* a comparison of numbers followed by POP_JUMP_IF_FALSE/TRUE jumps at once */
#define COMPARE_JUMP_FUSED(T)                                                     \
	do {                                                                      \
		uint32_t nw_ = *ip;                                               \
		opcode nop_ = INSN_OP(nw_);                                       \
		if ((unsigned)nop_ - fuse_jump < 2) {                             \
			sp -= 2;                                                  \
			ip = (T) == (nop_ == OP_POP_JUMP_IF_TRUE) ? co->insns + INSN_A(nw_) : ip + 1; \
			DISPATCH();                                               \
		}                                                                 \
	} while (0)
#define RAISE(...)                                \
	do {                                      \
		tj_error_set(__VA_ARGS__);        \
		goto error;                       \
	} while (0)

	LOAD_STATE();
	w = *ip++;
	goto *dispatch[INSN_OP(w)];

L_STEP_DONE:
	/* step mode: the instruction before this dispatch is done */
	ip--;
	SAVE_STATE();
	return stepped();

L_NOP:
	DISPATCH();

L_LOAD_CONST: {
	const value *c = &consts[ARG];
	uint8_t tag = c->tag;
	VMOVE(*sp, *c);
	if (tag >= VAL_FIRST_HEAP)
		sp->o->rc++;
	sp++;
	DISPATCH();
}

L_LOAD_FAST: {
	const value *l = &locals[ARG];
	uint8_t tag = l->tag;
	if (unlikely(tag == VAL_ERR))
		RAISE("cannot access local variable '%s' where it is not associated with a value",
		      co->local_names[ARG]);
	VMOVE(*sp, *l);
	if (tag >= VAL_FIRST_HEAP)
		sp->o->rc++;
	sp++;
	/* lookahead fusion: LOAD_FAST LOAD_FAST (operands of a binary op) */
	w = *ip;
	if ((unsigned)INSN_OP(w) == fuse_load) {
		l = &locals[ARG];
		tag = l->tag;
		if (likely(tag != VAL_ERR)) {
			ip++;
			VMOVE(*sp, *l);
			if (tag >= VAL_FIRST_HEAP)
				sp->o->rc++;
			sp++;
		}
	}
	DISPATCH();
}

L_STORE_FAST: {
	value *l = &locals[ARG];
	uint8_t otag = l->tag;
	struct obj *oo = l->o;
	sp--;
	VMOVE(*l, *sp);
	if (otag >= VAL_FIRST_HEAP && --oo->rc == 0) {
		value old;
		old.tag = otag;
		old.o = oo;
		obj_free(old);
	}
	DISPATCH();
}

L_LOAD_GLOBAL: {
	struct str *name = val_str(co->names[ARG]);
	value *slot = gtable_find(&vm->globals, name);
	if (!slot) {
		slot = gtable_find(&vm->builtins, name);
		if (unlikely(!slot))
			RAISE("name '%s' is not defined", name->data);
	}
	VMOVE(*sp, *slot);
	if (sp->tag >= VAL_FIRST_HEAP)
		sp->o->rc++;
	sp++;
	DISPATCH();
}

L_STORE_GLOBAL: {
	value v = *--sp;
	gtable_set(&vm->globals, val_str(co->names[ARG]), v);
	DISPATCH();
}

L_LOAD_DEREF: {
	struct cell *c = val_cell(f->cells[ARG]);
	if (unlikely(c->v.tag == VAL_ERR)) {
		if ((int)ARG < co->ncellvars)
			RAISE("cannot access local variable '%s' where it is not associated with a value",
			      co->cellvar_names[ARG]);
		RAISE("cannot access free variable '%s' where it is not associated with a value in enclosing scope",
		      co->freevar_names[ARG - co->ncellvars]);
	}
	val_incref(c->v);
	*sp++ = c->v;
	DISPATCH();
}

L_STORE_DEREF: {
	struct cell *c = val_cell(f->cells[ARG]);
	value old = c->v;
	c->v = *--sp;
	val_decref(old);
	DISPATCH();
}

L_LOAD_CLOSURE: {
	value c = f->cells[ARG];
	val_incref(c);
	*sp++ = c;
	DISPATCH();
}

L_LOAD_ATTR: {
	SAVE_STATE();
	r = vm_getattr(vm, sp[-1], val_str(co->names[ARG]));
	val_decref(sp[-1]);
	sp[-1] = r;
	if (unlikely(val_is_err(r)))
		goto error;
	DISPATCH();
}

L_POP_TOP:
	val_decref(*--sp);
	DISPATCH();

L_DUP_TOP:
	val_incref(sp[-1]);
	sp[0] = sp[-1];
	sp++;
	DISPATCH();

L_DUP_TOP_TWO:
	val_incref(sp[-2]);
	val_incref(sp[-1]);
	sp[0] = sp[-2];
	sp[1] = sp[-1];
	sp += 2;
	DISPATCH();

L_ROT_TWO: {
	value t = sp[-1];
	sp[-1] = sp[-2];
	sp[-2] = t;
	DISPATCH();
}

L_ROT_THREE: {
	value c = sp[-1];
	sp[-1] = sp[-2];
	sp[-2] = sp[-3];
	sp[-3] = c;
	DISPATCH();
}

L_UNARY_NEG: {
	value a = sp[-1];
	if (likely(a.tag == VAL_INT && a.i != INT64_MIN)) {
		sp[-1].i = -a.i;
		DISPATCH();
	}
	if (a.tag == VAL_FLOAT) {
		sp[-1].f = -a.f;
		DISPATCH();
	}
	SAVE_STATE();
	r = vm_unary_neg(a);
	val_decref(a);
	sp[-1] = r;
	if (val_is_err(r))
		goto error;
	DISPATCH();
}

L_UNARY_POS: {
	value a = sp[-1];
	if (a.tag == VAL_INT || a.tag == VAL_FLOAT || a.tag == VAL_TENSOR)
		DISPATCH();
	if (a.tag == VAL_BOOL) {
		sp[-1] = val_int(a.b);
		DISPATCH();
	}
	RAISE("bad operand type for unary +: '%s'", val_type_name(a));
}

L_UNARY_NOT: {
	value a = sp[-1];
	bool t;
	if (a.tag == VAL_BOOL) {
		t = a.b;
	} else {
		SAVE_STATE();
		if (vm_truth(a, &t) < 0)
			goto error;
		val_decref(a);
	}
	sp[-1] = val_bool(!t);
	DISPATCH();
}

L_BINARY_OP: {
	value b, a;
	VMOVE(b, sp[-1]);
	VMOVE(a, sp[-2]);
	if (likely(a.tag == VAL_INT && b.tag == VAL_INT)) {
		int64_t x = a.i, y = b.i, z;
		uint32_t op = ARG;
		/* + and - first, without the switch's extra indirect jump */
		if (likely(op == VB_ADD)) {
			if (unlikely(__builtin_add_overflow(x, y, &z)))
				RAISE("integer overflow");
			goto int_done;
		}
		if (op == VB_SUB) {
			if (unlikely(__builtin_sub_overflow(x, y, &z)))
				RAISE("integer overflow");
			goto int_done;
		}
		switch (op) {
		case VB_SUB:
			if (unlikely(__builtin_sub_overflow(x, y, &z)))
				RAISE("integer overflow");
			break;
		case VB_MUL:
			if (unlikely(__builtin_mul_overflow(x, y, &z)))
				RAISE("integer overflow");
			break;
		case VB_TRUEDIV:
			if (unlikely(y == 0))
				RAISE("division by zero");
			sp[-2] = val_float((double)x / (double)y);
			sp--;
			DISPATCH();
		case VB_FLOORDIV:
			if (unlikely(y == 0))
				RAISE("integer division or modulo by zero");
			if (unlikely(y == -1)) {
				if (x == INT64_MIN)
					RAISE("integer overflow");
				z = -x;
				break;
			}
			if (FITS32(x) && FITS32(y)) { /* 32-bit division is several times faster */
				int32_t q = (int32_t)x / (int32_t)y, m = (int32_t)x % (int32_t)y;
				z = q - (m != 0 && ((m < 0) != (y < 0)));
				break;
			}
			z = x / y;
			if ((x % y != 0) && ((x < 0) != (y < 0)))
				z--;
			break;
		case VB_MOD:
			if (unlikely(y == 0))
				RAISE("integer modulo by zero");
			if (unlikely(y == -1)) {
				z = 0;
				break;
			}
			if (FITS32(x) && FITS32(y))
				z = (int32_t)x % (int32_t)y;
			else
				z = x % y;
			if (z != 0 && ((z < 0) != (y < 0)))
				z += y;
			break;
		case VB_POW:
			r = int_pow(x, y);
			if (val_is_err(r))
				goto error;
			sp[-2] = r;
			sp--;
			DISPATCH();
		default:
			goto binop_slow;
		}
	int_done:
		sp--;
		STORE_FAST_FUSED(VAL_INT, i, z);
		sp[-1].i = z;
		DISPATCH();
	}
	if ((a.tag == VAL_FLOAT || a.tag == VAL_INT) && (b.tag == VAL_FLOAT || b.tag == VAL_INT)) {
		/* at least one float: int operands convert (exactly, below 2**53) */
		double x = a.tag == VAL_FLOAT ? a.f : (double)a.i, y = b.tag == VAL_FLOAT ? b.f : (double)b.i;
		double z;
		switch (ARG) {
		case VB_ADD: z = x + y; break;
		case VB_SUB: z = x - y; break;
		case VB_MUL: z = x * y; break;
		case VB_TRUEDIV:
			if (y == 0.0)
				RAISE("float division by zero");
			z = x / y;
			break;
		default:
			goto binop_slow;
		}
		sp--;
		STORE_FAST_FUSED(VAL_FLOAT, f, z);
		sp[-1].tag = VAL_FLOAT; /* an int operand may have left its tag */
		sp[-1].f = z;
		DISPATCH();
	}
binop_slow:
	SAVE_STATE();
	r = vm_binary((enum vm_binop)ARG, a, b);
	val_decref(a);
	val_decref(b);
	sp[-1] = val_none();
	sp[-2] = r;
	sp--;
	if (val_is_err(r))
		goto error;
	DISPATCH();
}

L_COMPARE_OP: {
	value b, a;
	VMOVE(b, sp[-1]);
	VMOVE(a, sp[-2]);
	if (likely(a.tag == VAL_INT && b.tag == VAL_INT)) {
		bool t;
		switch (ARG) {
		case VC_LT: t = a.i < b.i; break;
		case VC_LE: t = a.i <= b.i; break;
		case VC_GT: t = a.i > b.i; break;
		case VC_GE: t = a.i >= b.i; break;
		case VC_EQ: case VC_IS: t = a.i == b.i; break;
		case VC_NE: case VC_IS_NOT: t = a.i != b.i; break;
		default: goto compare_slow;
		}
		COMPARE_JUMP_FUSED(t);
		sp[-2].tag = VAL_BOOL;
		sp[-2].i = t;
		sp--;
		DISPATCH();
	}
	if (a.tag == VAL_FLOAT && b.tag == VAL_FLOAT) {
		bool t;
		switch (ARG) {
		case VC_LT: t = a.f < b.f; break;
		case VC_LE: t = a.f <= b.f; break;
		case VC_GT: t = a.f > b.f; break;
		case VC_GE: t = a.f >= b.f; break;
		case VC_EQ: t = a.f == b.f; break;
		case VC_NE: t = a.f != b.f; break;
		default: goto compare_slow;
		}
		COMPARE_JUMP_FUSED(t);
		sp[-2].tag = VAL_BOOL;
		sp[-2].i = t;
		sp--;
		DISPATCH();
	}
compare_slow:
	SAVE_STATE();
	r = vm_compare((enum vm_cmpop)ARG, a, b);
	val_decref(a);
	val_decref(b);
	sp[-1] = val_none();
	sp[-2] = r;
	sp--;
	if (val_is_err(r))
		goto error;
	DISPATCH();
}

L_BINARY_SUBSCR: {
	value idx, obj;
	VMOVE(idx, sp[-1]);
	VMOVE(obj, sp[-2]);
	if (obj.tag == VAL_LIST && idx.tag == VAL_INT) {
		struct list *l = val_list(obj);
		int64_t i = idx.i < 0 ? idx.i + (int64_t)l->len : idx.i;
		if (likely(i >= 0 && i < (int64_t)l->len)) {
			VMOVE(r, l->items[i]);
			val_incref(r);
			VMOVE(sp[-2], r);
			sp--;
			val_decref(obj);
			DISPATCH();
		}
	}
	SAVE_STATE();
	r = vm_subscript(obj, idx);
	val_decref(obj);
	val_decref(idx);
	sp[-1] = val_none();
	sp[-2] = r;
	sp--;
	if (val_is_err(r))
		goto error;
	DISPATCH();
}

L_STORE_SUBSCR: {
	value idx = sp[-1], obj = sp[-2], v = sp[-3];
	SAVE_STATE();
	int rc = vm_store_subscript(obj, idx, v);
	val_decref(idx);
	val_decref(obj);
	val_decref(v);
	sp -= 3;
	if (rc < 0)
		goto error;
	DISPATCH();
}

L_BUILD_SLICE: {
	value step = val_none(), stop, start;
	if (ARG == 3)
		step = *--sp;
	stop = *--sp;
	start = *--sp;
	r = slice_new(start, stop, step);
	val_decref(start);
	val_decref(stop);
	val_decref(step);
	*sp++ = r;
	DISPATCH();
}

L_BUILD_LIST: {
	uint32_t n = ARG;
	r = list_new(n);
	struct list *l = val_list(r);
	sp -= n;
	if (n)
		memcpy(l->items, sp, sizeof(value) * n);
	l->len = n;
	*sp++ = r;
	DISPATCH();
}

L_BUILD_TUPLE: {
	uint32_t n = ARG;
	r = tuple_new(n);
	sp -= n;
	if (n)
		memcpy(val_tuple(r)->items, sp, sizeof(value) * n);
	*sp++ = r;
	DISPATCH();
}

L_UNPACK_SEQUENCE: {
	uint32_t n = ARG;
	value seq = sp[-1];
	const value *items = NULL;
	size_t len = 0;
	if (seq.tag == VAL_TUPLE) {
		items = val_tuple(seq)->items;
		len = val_tuple(seq)->len;
	} else if (seq.tag == VAL_LIST) {
		items = val_list(seq)->items;
		len = val_list(seq)->len;
	}
	if (items && len == n) {
		sp--;
		for (uint32_t i = 0; i < n; i++) {
			val_incref(items[n - 1 - i]);
			sp[i] = items[n - 1 - i];
		}
		sp += n;
		val_decref(seq);
		DISPATCH();
	}
	SAVE_STATE();
	sp--;
	int rc = unpack_into(seq, (int)n, sp);
	val_decref(seq);
	if (rc < 0) {
		*sp++ = val_none();
		goto error;
	}
	sp += n;
	DISPATCH();
}

L_JUMP:
	ip = co->insns + ARG;
	DISPATCH();

L_POP_JUMP_IF_FALSE:
L_POP_JUMP_IF_TRUE: {
	value v;
	bool t;
	if (likely(sp[-1].tag == VAL_BOOL)) {
		t = sp[-1].b;
		sp--;
	} else {
		VMOVE(v, sp[-1]);
		SAVE_STATE();
		if (vm_truth(v, &t) < 0)
			goto error;
		sp--;
		val_decref(v);
	}
	if (t == (INSN_OP(w) == OP_POP_JUMP_IF_TRUE))
		ip = co->insns + ARG;
	DISPATCH();
}

L_JUMP_IF_FALSE_OR_POP:
L_JUMP_IF_TRUE_OR_POP: {
	value v = sp[-1];
	bool t;
	if (likely(v.tag == VAL_BOOL)) {
		t = v.b;
	} else {
		SAVE_STATE();
		if (vm_truth(v, &t) < 0)
			goto error;
	}
	if (t == (INSN_OP(w) == OP_JUMP_IF_TRUE_OR_POP)) {
		ip = co->insns + ARG;
	} else {
		sp--;
		val_decref(v);
	}
	DISPATCH();
}

L_GET_ITER: {
	value v = sp[-1];
	if (v.tag == VAL_ITER)
		DISPATCH();
	SAVE_STATE();
	r = vm_get_iter(v);
	val_decref(v);
	sp[-1] = r;
	if (val_is_err(r))
		goto error;
	DISPATCH();
}

L_FOR_ITER: {
	if (unlikely(sp[-1].tag != VAL_ITER))
		RAISE("invalid bytecode: FOR_ITER without an iterator");
	struct iter *it = val_iter(sp[-1]);
	if (likely(it->kind == ITER_RANGE)) {
		if (likely(it->n > 0)) {
			int64_t v = it->i;
			it->i = (int64_t)((uint64_t)v + (uint64_t)it->step);
			it->n--;
			sp++;
			STORE_FAST_FUSED(VAL_INT, i, v);
			sp[-1].tag = VAL_INT;
			sp[-1].i = v;
			DISPATCH();
		}
	} else if (it->kind == ITER_LIST) {
		struct list *l = val_list(it->seq);
		if (it->i < (int64_t)l->len) {
			VMOVE(*sp, l->items[it->i]);
			it->i++;
			if (sp->tag >= VAL_FIRST_HEAP)
				sp->o->rc++;
			sp++;
			DISPATCH();
		}
	} else {
		SAVE_STATE();
		int rc = vm_iter_next(sp[-1], sp);
		if (rc > 0) {
			sp++;
			DISPATCH();
		}
		if (rc < 0)
			goto error;
	}
	val_decref(sp[-1]);
	sp--;
	ip = co->insns + ARG;
	DISPATCH();
}

L_CALL:
	nargs = (int)ARG;
	kwnames = val_none();
	goto do_call;

L_CALL_KW:
	kwnames = *--sp;
	nargs = (int)ARG;
	if (unlikely(kwnames.tag != VAL_TUPLE || val_tuple(kwnames)->len > (size_t)nargs)) {
		val_decref(kwnames);
		RAISE("invalid bytecode: CALL_KW without keyword names");
	}
	goto do_call;

do_call: {
	value *fnslot = sp - nargs - 1;
	value callee = *fnslot;
	if (likely(callee.tag == VAL_FUNC)) {
		f->pc = (uint32_t)(ip - co->insns);
		f->sp = fnslot + 1;
		struct frame *nf = bind_frame(vm, val_func(callee), fnslot + 1, nargs, kwnames);
		val_decref(kwnames);
		if (unlikely(!nf)) {
			sp = fnslot + 1;
			goto error;
		}
		if (unlikely(vm->eval_frame != NULL || step)) {
			/* through the frame evaluator; a step runs the callee whole */
			r = vm->eval_frame ? vm->eval_frame(vm, nf, vm->eval_ctx) : vm_run_frame(vm, nf);
			sp = fnslot + 1;
			val_decref(*fnslot);
			*fnslot = r;
			if (val_is_err(r))
				goto error;
			DISPATCH();
		}
		f = nf;
		LOAD_STATE();
		DISPATCH();
	}
	SAVE_STATE();
	if (callee.tag == VAL_BOUND) {
		struct bound *b = (struct bound *)callee.o;
		value fnv = b->fn;
		val_incref(fnv);
		val_incref(b->self);
		*fnslot = b->self;
		val_decref(callee);
		if (likely(fnv.tag == VAL_BUILTIN))
			r = ((struct builtin *)fnv.o)->fn(vm, fnslot, nargs + 1, kwnames);
		else
			r = vm_call(vm, fnv, fnslot, nargs + 1, kwnames);
		val_decref(fnv);
	} else if (callee.tag == VAL_BUILTIN) {
		r = ((struct builtin *)callee.o)->fn(vm, fnslot + 1, nargs, kwnames);
	} else {
		r = vm_call(vm, callee, fnslot + 1, nargs, kwnames);
	}
	release_values(fnslot, sp);
	val_decref(kwnames);
	sp = fnslot;
	*sp++ = r;
	if (unlikely(val_is_err(r)))
		goto error;
	DISPATCH();
}

L_MAKE_FUNCTION: {
	value codev = *--sp, defaults = val_none(), closure = val_none();
	if (ARG & 1)
		defaults = *--sp;
	if (ARG & 2)
		closure = *--sp;
	*sp++ = val_none();
	const char *bad = NULL;
	if (codev.tag != VAL_CODE)
		bad = "MAKE_FUNCTION without a code object";
	else if (defaults.tag != VAL_NONE && defaults.tag != VAL_TUPLE)
		bad = "MAKE_FUNCTION defaults are not a tuple";
	else if (val_code(codev)->nfreevars &&
		 (closure.tag != VAL_TUPLE || (int)val_tuple(closure)->len != val_code(codev)->nfreevars))
		bad = "MAKE_FUNCTION closure does not match the free variables";
	if (!bad) {
		for (size_t i = 0; closure.tag == VAL_TUPLE && i < val_tuple(closure)->len; i++)
			if (val_tuple(closure)->items[i].tag != VAL_CELL)
				bad = "MAKE_FUNCTION closure holds a non-cell";
	}
	if (bad || verify_code(val_code(codev)) < 0) {
		if (bad)
			tj_error_set("invalid bytecode: %s", bad);
		val_decref(codev);
		val_decref(defaults);
		val_decref(closure);
		goto error;
	}
	r = func_new(val_code(codev), defaults, closure);
	val_decref(codev);
	val_decref(defaults);
	val_decref(closure);
	sp[-1] = r;
	DISPATCH();
}

L_RETURN_VALUE: {
	r = *--sp;
	release_values(locals, sp);
	vm->nframes--;
	if (f->is_entry) {
		f->sp = f->locals;
		return r;
	}
	f = &vm->frames[vm->nframes - 1];
	LOAD_STATE();
	val_decref(sp[-1]);
	sp[-1] = r;
	DISPATCH();
}

error:
	SAVE_STATE();
	error_at(vm, f);
	for (;;) {
		tb_add(vm, f);
		bool entry = f->is_entry;
		vm_pop_frame(vm, f);
		if (entry)
			return val_err();
		f = &vm->frames[vm->nframes - 1];
	}
#undef LOAD_STATE
#undef SAVE_STATE
#undef DISPATCH
#undef ARG
#undef RAISE
}

/* ======================================================================
 * Python semantics for the slow paths, builtins and the tracer
 * ====================================================================== */

static const char *const binop_symbols[VB_COUNT] = {"+", "-", "*", "/", "//", "%", "**", "@"};
static const char *const cmpop_symbols[VC_COUNT] = {"<", "<=", ">", ">=", "==", "!=", "is", "is not", "in", "not in"};

static bool is_intlike(value v) { return v.tag == VAL_INT || v.tag == VAL_BOOL; }
static int64_t as_int(value v) { return v.tag == VAL_BOOL ? (int64_t)v.b : v.i; }
static bool is_number(value v) { return v.tag == VAL_INT || v.tag == VAL_BOOL || v.tag == VAL_FLOAT; }
static double as_double(value v) { return v.tag == VAL_FLOAT ? v.f : (double)as_int(v); }

static value int_pow(int64_t a, int64_t b)
{
	if (b < 0) {
		if (a == 0)
			return vm_raise("0.0 cannot be raised to a negative power");
		return val_float(pow((double)a, (double)b));
	}
	int64_t result = 1, base = a;
	while (b) {
		if (b & 1) {
			if (__builtin_mul_overflow(result, base, &result))
				return vm_raise("integer overflow");
		}
		b >>= 1;
		if (b && __builtin_mul_overflow(base, base, &base))
			return vm_raise("integer overflow");
	}
	return val_int(result);
}

static value float_binop(enum vm_binop op, double x, double y)
{
	switch (op) {
	case VB_ADD: return val_float(x + y);
	case VB_SUB: return val_float(x - y);
	case VB_MUL: return val_float(x * y);
	case VB_TRUEDIV:
		if (y == 0.0)
			return vm_raise("float division by zero");
		return val_float(x / y);
	case VB_FLOORDIV:
	case VB_MOD: {
		if (y == 0.0)
			return vm_raise(op == VB_MOD ? "float modulo" : "float floor division by zero");
		double mod = fmod(x, y), div = (x - mod) / y, fdiv;
		if (mod != 0.0) {
			if ((y < 0) != (mod < 0)) {
				mod += y;
				div -= 1.0;
			}
		} else {
			mod = copysign(0.0, y);
		}
		if (div != 0.0) {
			fdiv = floor(div);
			if (div - fdiv > 0.5)
				fdiv += 1.0;
		} else {
			fdiv = copysign(0.0, x / y);
		}
		if (isnan(x) || isnan(y) || isinf(x)) {
			mod = op == VB_MOD ? fmod(x, y) : 0;
			fdiv = x / y;
			if (isinf(x) && !isnan(y))
				fdiv = NAN, mod = NAN;
		}
		if (isinf(y) && !isinf(x) && !isnan(x)) {
			/* Python: 5 % inf == 5, -5 % inf == inf, 5 // inf == 0.0, -5 // inf == -1.0 */
			if (x == 0 || (x > 0) == (y > 0)) {
				mod = x;
				fdiv = copysign(0.0, x / y);
			} else {
				mod = y;
				fdiv = -1.0;
			}
		}
		return val_float(op == VB_MOD ? mod : fdiv);
	}
	case VB_POW: {
		if (x == 0.0 && y < 0.0)
			return vm_raise("0.0 cannot be raised to a negative power");
		if (x < 0.0 && isfinite(y) && y != floor(y))
			return vm_raise("negative number cannot be raised to a fractional power");
		double r = pow(x, y);
		if (isinf(r) && isfinite(x) && isfinite(y))
			return vm_raise("numerical result out of range");
		return val_float(r);
	}
	default:
		return vm_raise("unsupported operand type(s) for %s: 'float' and 'float'", binop_symbols[op]);
	}
}

/* The most memory one string, list or tuple made by * or + may take: past
 * it the operation fails at once with a memory error (as Python's
 * MemoryError where memory runs out), instead of filling gigabytes for
 * minutes or aborting when the allocation fails. */
#define SEQ_MAX_BYTES ((uint64_t)1 << 31)

/* count items of size bytes: false when they fit SEQ_MAX_BYTES, else true
 * with *err raised */
static bool seq_too_big(uint64_t count, uint64_t size, value *err)
{
	if (size == 0 || count <= SEQ_MAX_BYTES / size)
		return false;
	if (count > UINT64_MAX / size)
		*err = vm_raise("out of memory: more than %llu bytes (the most a string or a list may take: %llu)",
				(unsigned long long)UINT64_MAX, (unsigned long long)SEQ_MAX_BYTES);
	else
		*err = vm_raise("out of memory allocating %llu bytes (the most a string or a list may take: %llu)",
				(unsigned long long)(count * size), (unsigned long long)SEQ_MAX_BYTES);
	return true;
}

static value seq_repeat(value seq, int64_t n)
{
	value err;
	if (n < 0)
		n = 0;
	if (seq.tag == VAL_STR) {
		struct str *s = val_str(seq);
		if (seq_too_big((uint64_t)n, s->len, &err))
			return err;
		size_t total = s->len * (size_t)n, done = s->len < total ? s->len : total;
		struct str *r = str_alloc(total);
		if (!r)
			return vm_raise("out of memory allocating %zu bytes", total);
		/* by doubling: a few memcpy calls, not n */
		memcpy(r->data, s->data, done);
		while (done < total) {
			size_t k = done < total - done ? done : total - done;
			memcpy(r->data + done, r->data, k);
			done += k;
		}
		return str_finish(r);
	}
	const value *items;
	size_t len;
	if (seq.tag == VAL_LIST) {
		items = val_list(seq)->items;
		len = val_list(seq)->len;
	} else {
		items = val_tuple(seq)->items;
		len = val_tuple(seq)->len;
	}
	if (len && seq_too_big((uint64_t)n, (uint64_t)len * sizeof(value), &err))
		return err;
	size_t total = len * (size_t)n;
	value r;
	value *out;
	if (seq.tag == VAL_LIST) {
		/* a size the program chose: its allocation may fail (an error) */
		out = total ? util_malloc(total * sizeof(value)) : NULL;
		if (total && !out)
			return vm_raise("out of memory allocating %zu bytes", total * sizeof(value));
		r = list_new(0);
		val_list(r)->items = out;
		val_list(r)->cap = val_list(r)->len = total;
	} else {
		r = tuple_new(total);
		out = val_tuple(r)->items;
	}
	for (size_t i = 0; i < total; i++) {
		out[i] = items[i % len];
		val_incref(out[i]);
	}
	return r;
}

static value seq_concat(value a, value b)
{
	value err;
	if (a.tag == VAL_STR) {
		struct str *x = val_str(a), *y = val_str(b);
		if (seq_too_big((uint64_t)x->len + y->len, 1, &err))
			return err;
		struct strbuf sb = STRBUF_INIT;
		sb_grow(&sb, x->len + y->len);
		sb_add(&sb, x->data, x->len);
		sb_add(&sb, y->data, y->len);
		value r = str_new(sb.buf, sb.len);
		sb_release(&sb);
		return r;
	}
	const value *ia, *ib;
	size_t na, nb;
	if (a.tag == VAL_LIST) {
		ia = val_list(a)->items, na = val_list(a)->len;
		ib = val_list(b)->items, nb = val_list(b)->len;
	} else {
		ia = val_tuple(a)->items, na = val_tuple(a)->len;
		ib = val_tuple(b)->items, nb = val_tuple(b)->len;
	}
	if (seq_too_big((uint64_t)na + nb, sizeof(value), &err))
		return err;
	value r;
	value *out;
	if (a.tag == VAL_LIST) {
		r = list_new(na + nb);
		val_list(r)->len = na + nb;
		out = val_list(r)->items;
	} else {
		r = tuple_new(na + nb);
		out = val_tuple(r)->items;
	}
	for (size_t i = 0; i < na; i++) {
		val_incref(ia[i]);
		out[i] = ia[i];
	}
	for (size_t i = 0; i < nb; i++) {
		val_incref(ib[i]);
		out[na + i] = ib[i];
	}
	return r;
}

const struct vm_tensor_hooks *vm_tensor_hooks;

void vm_set_tensor_hooks(const struct vm_tensor_hooks *hooks)
{
	vm_tensor_hooks = hooks;
}

value vm_binary(enum vm_binop op, value a, value b)
{
	if (a.tag == VAL_TENSOR || b.tag == VAL_TENSOR || op == VB_MATMUL) {
		if (a.tag == VAL_TENSOR || b.tag == VAL_TENSOR)
			return vm_tensor_hooks->binary(op, a, b);
		goto unsupported;
	}
	if (is_intlike(a) && is_intlike(b)) {
		int64_t x = as_int(a), y = as_int(b), z;
		switch (op) {
		case VB_ADD:
			if (__builtin_add_overflow(x, y, &z))
				return vm_raise("integer overflow");
			return val_int(z);
		case VB_SUB:
			if (__builtin_sub_overflow(x, y, &z))
				return vm_raise("integer overflow");
			return val_int(z);
		case VB_MUL:
			if (__builtin_mul_overflow(x, y, &z))
				return vm_raise("integer overflow");
			return val_int(z);
		case VB_TRUEDIV:
			if (y == 0)
				return vm_raise("division by zero");
			return val_float((double)x / (double)y);
		case VB_FLOORDIV:
			if (y == 0)
				return vm_raise("integer division or modulo by zero");
			if (y == -1) {
				if (x == INT64_MIN)
					return vm_raise("integer overflow");
				return val_int(-x);
			}
			z = x / y;
			if ((x % y != 0) && ((x < 0) != (y < 0)))
				z--;
			return val_int(z);
		case VB_MOD:
			if (y == 0)
				return vm_raise("integer modulo by zero");
			if (y == -1)
				return val_int(0);
			z = x % y;
			if (z != 0 && ((z < 0) != (y < 0)))
				z += y;
			return val_int(z);
		case VB_POW:
			return int_pow(x, y);
		default:
			goto unsupported;
		}
	}
	if (is_number(a) && is_number(b))
		return float_binop(op, as_double(a), as_double(b));
	if (op == VB_ADD) {
		if (a.tag == b.tag && (a.tag == VAL_STR || a.tag == VAL_LIST || a.tag == VAL_TUPLE))
			return seq_concat(a, b);
		if (a.tag == VAL_STR || a.tag == VAL_LIST || a.tag == VAL_TUPLE)
			return vm_raise("can only concatenate %s (not \"%s\") to %s", val_type_name(a),
					val_type_name(b), val_type_name(a));
	}
	if (op == VB_MUL) {
		bool sa = a.tag == VAL_STR || a.tag == VAL_LIST || a.tag == VAL_TUPLE;
		bool sb = b.tag == VAL_STR || b.tag == VAL_LIST || b.tag == VAL_TUPLE;
		if (sa && is_intlike(b))
			return seq_repeat(a, as_int(b));
		if (sb && is_intlike(a))
			return seq_repeat(b, as_int(a));
		if (sa)
			return vm_raise("can't multiply sequence by non-int of type '%s'", val_type_name(b));
		if (sb)
			return vm_raise("can't multiply sequence by non-int of type '%s'", val_type_name(a));
	}
unsupported:
	return vm_raise("unsupported operand type(s) for %s: '%s' and '%s'",
			op == VB_POW ? "** or pow()" : binop_symbols[op], val_type_name(a), val_type_name(b));
}

value vm_unary_neg(value a)
{
	switch (a.tag) {
	case VAL_INT:
		if (a.i == INT64_MIN)
			return vm_raise("integer overflow");
		return val_int(-a.i);
	case VAL_BOOL:
		return val_int(-(int64_t)a.b);
	case VAL_FLOAT:
		return val_float(-a.f);
	case VAL_TENSOR:
		return vm_tensor_hooks->neg(a);
	default:
		return vm_raise("bad operand type for unary -: '%s'", val_type_name(a));
	}
}

int vm_truth(value v, bool *out)
{
	switch ((value_tag)v.tag) {
	case VAL_NONE: *out = false; return 0;
	case VAL_BOOL: *out = v.b; return 0;
	case VAL_INT: *out = v.i != 0; return 0;
	case VAL_FLOAT: *out = v.f != 0.0; return 0;
	case VAL_STR: *out = val_str(v)->len != 0; return 0;
	case VAL_LIST: *out = val_list(v)->len != 0; return 0;
	case VAL_TUPLE: *out = val_tuple(v)->len != 0; return 0;
	case VAL_RANGE: *out = val_range(v)->len != 0; return 0;
	case VAL_TENSOR: return vm_tensor_hooks->truth(v, out);
	case VAL_ERR: tj_error_set("truth of an error value"); return -1;
	default: *out = true; return 0;
	}
}

/* <0, 0, >0, or 2 for "unordered" (nan); -3 after an error */
static int num_cmp(value a, value b)
{
	if (a.tag == VAL_FLOAT && b.tag == VAL_FLOAT) {
		if (isnan(a.f) || isnan(b.f))
			return 2;
		return (a.f > b.f) - (a.f < b.f);
	}
	if (a.tag == VAL_FLOAT) {
		int c = num_cmp_int_float(as_int(b), a.f);
		return c == 2 ? 2 : -c;
	}
	if (b.tag == VAL_FLOAT)
		return num_cmp_int_float(as_int(a), b.f);
	int64_t x = as_int(a), y = as_int(b);
	return (x > y) - (x < y);
}

static bool cmp_result(enum vm_cmpop op, int c)
{
	if (c == 2)
		return op == VC_NE;
	switch (op) {
	case VC_LT: return c < 0;
	case VC_LE: return c <= 0;
	case VC_GT: return c > 0;
	case VC_GE: return c >= 0;
	case VC_EQ: return c == 0;
	case VC_NE: return c != 0;
	default: return false;
	}
}

static bool val_is(value a, value b)
{
	if (a.tag != b.tag)
		return false;
	if (a.tag >= VAL_FIRST_HEAP)
		return a.o == b.o;
	switch (a.tag) {
	case VAL_NONE: return true;
	case VAL_BOOL: return a.b == b.b;
	case VAL_FLOAT: return a.i == b.i; /* same bits */
	default: return a.i == b.i;
	}
}

static int contains(value container, value x, bool *out)
{
	switch (container.tag) {
	case VAL_LIST:
	case VAL_TUPLE: {
		const value *items = container.tag == VAL_LIST ? val_list(container)->items : val_tuple(container)->items;
		size_t n = container.tag == VAL_LIST ? val_list(container)->len : val_tuple(container)->len;
		for (size_t i = 0; i < n; i++) {
			bool eq = val_is(items[i], x);
			if (!eq && val_equal_checked(items[i], x, &eq) < 0)
				return -1;
			if (eq) {
				*out = true;
				return 0;
			}
		}
		*out = false;
		return 0;
	}
	case VAL_STR: {
		if (x.tag != VAL_STR) {
			tj_error_set("'in <string>' requires string as left operand, not %s", val_type_name(x));
			return -1;
		}
		struct str *h = val_str(container), *n = val_str(x);
		*out = n->len == 0 || (n->len <= h->len && memmem(h->data, h->len, n->data, n->len) != NULL);
		return 0;
	}
	case VAL_RANGE: {
		struct range *r = val_range(container);
		int64_t k;
		if (is_intlike(x)) {
			k = as_int(x);
		} else if (x.tag == VAL_FLOAT && x.f == floor(x.f) && fabs(x.f) < 9.2e18) {
			k = (int64_t)x.f;
		} else {
			*out = false;
			return 0;
		}
		bool in = r->step > 0 ? (k >= r->start && k < r->stop) : (k <= r->start && k > r->stop);
		*out = in && ((__int128)k - r->start) % r->step == 0;
		return 0;
	}
	case VAL_ITER: {
		value v;
		int rc;
		while ((rc = vm_iter_next(container, &v)) > 0) {
			bool eq = val_is(v, x) || val_equal(v, x);
			val_decref(v);
			if (eq) {
				*out = true;
				return 0;
			}
		}
		*out = false;
		return rc;
	}
	default:
		tj_error_set("argument of type '%s' is not iterable", val_type_name(container));
		return -1;
	}
}

static int compare_depth; /* nesting of seq_compare, bounded like Python's recursion */

static value seq_compare(enum vm_cmpop op, value a, value b)
{
	if (compare_depth >= 1000)
		return vm_raise("maximum recursion depth exceeded in comparison");
	const value *ia, *ib;
	size_t na, nb;
	if (a.tag == VAL_LIST) {
		ia = val_list(a)->items, na = val_list(a)->len;
		ib = val_list(b)->items, nb = val_list(b)->len;
	} else {
		ia = val_tuple(a)->items, na = val_tuple(a)->len;
		ib = val_tuple(b)->items, nb = val_tuple(b)->len;
	}
	size_t n = na < nb ? na : nb;
	for (size_t i = 0; i < n; i++) {
		bool eq = val_is(ia[i], ib[i]);
		if (!eq && val_equal_checked(ia[i], ib[i], &eq) < 0)
			return val_err();
		if (eq)
			continue;
		compare_depth++;
		value r = vm_compare(op, ia[i], ib[i]);
		compare_depth--;
		return r;
	}
	int c = (na > nb) - (na < nb);
	return val_bool(cmp_result(op, c));
}

value vm_compare(enum vm_cmpop op, value a, value b)
{
	switch (op) {
	case VC_IS: return val_bool(val_is(a, b));
	case VC_IS_NOT: return val_bool(!val_is(a, b));
	case VC_IN:
	case VC_NOT_IN: {
		bool in;
		if (contains(b, a, &in) < 0)
			return val_err();
		return val_bool(op == VC_IN ? in : !in);
	}
	default:
		break;
	}
	if (a.tag == VAL_TENSOR || b.tag == VAL_TENSOR)
		return vm_tensor_hooks->compare(op, a, b);
	if (is_number(a) && is_number(b))
		return val_bool(cmp_result(op, num_cmp(a, b)));
	if (op == VC_EQ || op == VC_NE) {
		bool eq;
		if (val_equal_checked(a, b, &eq) < 0)
			return val_err();
		return val_bool(op == VC_EQ ? eq : !eq);
	}
	if (a.tag == VAL_STR && b.tag == VAL_STR) {
		struct str *x = val_str(a), *y = val_str(b);
		size_t n = x->len < y->len ? x->len : y->len;
		int c = memcmp(x->data, y->data, n);
		if (c == 0)
			c = (x->len > y->len) - (x->len < y->len);
		return val_bool(cmp_result(op, (c > 0) - (c < 0)));
	}
	if (a.tag == b.tag && (a.tag == VAL_LIST || a.tag == VAL_TUPLE))
		return seq_compare(op, a, b);
	return vm_raise("'%s' not supported between instances of '%s' and '%s'", cmpop_symbols[op], val_type_name(a),
			val_type_name(b));
}

/* ---- attributes ---- */

value vm_getattr(struct vm *vm, value obj, struct str *name)
{
	switch ((value_tag)obj.tag) {
	case VAL_TENSOR:
		return vm_tensor_hooks->getattr(obj, name);
	case VAL_OBJECT: {
		struct object *o = (struct object *)obj.o;
		if (o->type->getattr) {
			value r = o->type->getattr(obj.o, name);
			if (!val_is_err(r) || tj_error_peek())
				return r;
		}
		break;
	}
	case VAL_LIST:
	case VAL_STR: {
		value r = builtins_method(vm, obj, name);
		if (!val_is_err(r) || tj_error_peek())
			return r;
		break;
	}
	case VAL_FUNC:
		if (str_eq_cstr(name, "__name__"))
			return str_from_cstr(val_func(obj)->code->name);
		break;
	case VAL_BUILTIN:
		if (str_eq_cstr(name, "__name__"))
			return str_from_cstr(((struct builtin *)obj.o)->name);
		break;
	case VAL_TYPE:
		if (str_eq_cstr(name, "__name__"))
			return str_from_cstr(type_tag_name((value_tag)obj.i));
		return vm_raise("type object '%s' has no attribute '%s'", type_tag_name((value_tag)obj.i), name->data);
	case VAL_DTYPE:
		if (str_eq_cstr(name, "is_floating_point"))
			return val_bool(obj.i >= 0 && obj.i < DT_COUNT && dtype_is_float((dtype)obj.i));
		if (str_eq_cstr(name, "itemsize"))
			return val_int(obj.i >= 0 && obj.i < DT_COUNT ? (int64_t)dtype_size((dtype)obj.i) : 0);
		break;
	default:
		break;
	}
	return vm_raise("'%s' object has no attribute '%s'", val_type_name(obj), name->data);
}

/* ---- subscripts ---- */

static int index_of(value idx, int64_t len, const char *what, int64_t *out)
{
	int64_t i = as_int(idx);
	if (i < 0)
		i += len;
	if (i < 0 || i >= len) {
		tj_error_set("%s index out of range", what);
		return -1;
	}
	*out = i;
	return 0;
}

/* byte offsets of the code points of s (n + 1 entries); caller frees */
static size_t *str_offsets(const struct str *s, size_t *n)
{
	size_t count = str_char_count(s);
	size_t *off = malloc(sizeof(size_t) * (count + 1));
	if (!off)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < s->len; i++)
		if (((unsigned char)s->data[i] & 0xC0) != 0x80)
			off[k++] = i;
	off[k] = s->len;
	*n = count;
	return off;
}

static value str_subscript(value obj, value idx)
{
	struct str *s = val_str(obj);
	bool ascii = s->hdr.flags & STR_ASCII;
	size_t n = s->len;
	size_t *off = NULL;
	if (!ascii) {
		off = str_offsets(s, &n);
		if (!off)
			return vm_raise("out of memory");
	}
	value r;
	if (is_intlike(idx)) {
		int64_t i;
		if (index_of(idx, (int64_t)n, "string", &i) < 0) {
			r = val_err();
		} else if (ascii) {
			r = str_new(s->data + i, 1);
		} else {
			r = str_new(s->data + off[i], off[i + 1] - off[i]);
		}
	} else if (idx.tag == VAL_SLICE) {
		int64_t start, stop, step, count;
		if (slice_indices(val_slice(idx), (int64_t)n, &start, &stop, &step, &count) < 0) {
			r = val_err();
		} else {
			struct strbuf sb = STRBUF_INIT;
			sb_grow(&sb, (size_t)count);
			for (int64_t k = 0, i = start; k < count; k++, i += step) {
				if (ascii)
					sb_putc(&sb, s->data[i]);
				else
					sb_add(&sb, s->data + off[i], off[i + 1] - off[i]);
			}
			r = str_new(sb.buf ? sb.buf : "", sb.len);
			sb_release(&sb);
		}
	} else {
		r = vm_raise("string indices must be integers, not '%s'", val_type_name(idx));
	}
	free(off);
	return r;
}

value vm_subscript(value obj, value idx)
{
	switch ((value_tag)obj.tag) {
	case VAL_TENSOR:
		return vm_tensor_hooks->subscript(obj, idx);
	case VAL_LIST:
	case VAL_TUPLE: {
		bool is_list = obj.tag == VAL_LIST;
		const value *items = is_list ? val_list(obj)->items : val_tuple(obj)->items;
		int64_t len = (int64_t)(is_list ? val_list(obj)->len : val_tuple(obj)->len);
		if (is_intlike(idx)) {
			int64_t i;
			if (index_of(idx, len, is_list ? "list" : "tuple", &i) < 0)
				return val_err();
			val_incref(items[i]);
			return items[i];
		}
		if (idx.tag == VAL_SLICE) {
			int64_t start, stop, step, count;
			if (slice_indices(val_slice(idx), len, &start, &stop, &step, &count) < 0)
				return val_err();
			value r = is_list ? list_new((size_t)count) : tuple_new((size_t)count);
			value *out = is_list ? val_list(r)->items : val_tuple(r)->items;
			for (int64_t k = 0, i = start; k < count; k++, i += step) {
				val_incref(items[i]);
				out[k] = items[i];
			}
			if (is_list)
				val_list(r)->len = (size_t)count;
			return r;
		}
		return vm_raise("%s indices must be integers or slices, not %s", is_list ? "list" : "tuple",
				val_type_name(idx));
	}
	case VAL_STR:
		return str_subscript(obj, idx);
	case VAL_RANGE: {
		struct range *rg = val_range(obj);
		if (is_intlike(idx)) {
			int64_t i;
			if (index_of(idx, rg->len, "range object", &i) < 0)
				return val_err();
			return val_int(rg->start + i * rg->step);
		}
		if (idx.tag == VAL_SLICE) {
			int64_t start, stop, step, count;
			if (slice_indices(val_slice(idx), rg->len, &start, &stop, &step, &count) < 0)
				return val_err();
			(void)count;
			__int128 nstart = (__int128)rg->start + (__int128)start * rg->step;
			__int128 nstop = (__int128)rg->start + (__int128)stop * rg->step;
			__int128 nstep = (__int128)rg->step * step;
			if (nstart != (int64_t)nstart || nstop != (int64_t)nstop || nstep != (int64_t)nstep)
				return vm_raise("integer overflow");
			return range_new((int64_t)nstart, (int64_t)nstop, (int64_t)nstep);
		}
		return vm_raise("range indices must be integers or slices, not %s", val_type_name(idx));
	}
	case VAL_TYPE:
		return vm_raise("type '%s' is not subscriptable", type_tag_name((value_tag)obj.i));
	default:
		return vm_raise("'%s' object is not subscriptable", val_type_name(obj));
	}
}

static int list_assign_slice(struct list *l, const struct slice *s, value v)
{
	int64_t start, stop, step, count;
	if (slice_indices(s, (int64_t)l->len, &start, &stop, &step, &count) < 0)
		return -1;
	value src = vm_sequence_to_list(v);
	if (val_is_err(src)) {
		if (tj_error_peek() && strstr(tj_error_peek(), "is not iterable")) {
			tj_error_clear();
			tj_error_set("must assign iterable to extended slice");
		}
		return -1;
	}
	struct list *sl = val_list(src);
	if (step != 1) {
		if ((int64_t)sl->len != count) {
			tj_error_set("attempt to assign sequence of size %zu to extended slice of size %lld", sl->len,
				     (long long)count);
			val_decref(src);
			return -1;
		}
		for (int64_t k = 0, i = start; k < count; k++, i += step) {
			value old = l->items[i];
			val_incref(sl->items[k]);
			l->items[i] = sl->items[k];
			val_decref(old);
		}
		val_decref(src);
		return 0;
	}
	if (stop < start)
		stop = start;
	size_t removed = (size_t)(stop - start), added = sl->len;
	value *old = malloc(sizeof(value) * (removed ? removed : 1));
	if (!old) {
		val_decref(src);
		tj_error_set("out of memory");
		return -1;
	}
	if (removed)
		memcpy(old, l->items + start, sizeof(value) * removed);
	size_t nlen = l->len - removed + added;
	if (nlen > l->cap) {
		value *ni = realloc(l->items, sizeof(value) * nlen);
		if (!ni) {
			free(old);
			val_decref(src);
			tj_error_set("out of memory");
			return -1;
		}
		l->items = ni;
		l->cap = nlen;
	}
	if (l->len > (size_t)stop)
		memmove(l->items + start + added, l->items + stop, sizeof(value) * (l->len - (size_t)stop));
	for (size_t k = 0; k < added; k++) {
		val_incref(sl->items[k]);
		l->items[start + (int64_t)k] = sl->items[k];
	}
	l->len = nlen;
	for (size_t k = 0; k < removed; k++)
		val_decref(old[k]);
	free(old);
	val_decref(src);
	return 0;
}

int vm_store_subscript(value obj, value idx, value v)
{
	if (obj.tag == VAL_LIST) {
		struct list *l = val_list(obj);
		if (is_intlike(idx)) {
			int64_t i;
			if (index_of(idx, (int64_t)l->len, "list assignment", &i) < 0)
				return -1;
			value old = l->items[i];
			val_incref(v);
			l->items[i] = v;
			val_decref(old);
			return 0;
		}
		if (idx.tag == VAL_SLICE)
			return list_assign_slice(l, val_slice(idx), v);
		tj_error_set("list indices must be integers or slices, not %s", val_type_name(idx));
		return -1;
	}
	tj_error_set("'%s' object does not support item assignment", val_type_name(obj));
	return -1;
}

/* ---- iteration ---- */

value vm_get_iter(value v)
{
	value it;
	switch ((value_tag)v.tag) {
	case VAL_RANGE: {
		struct range *r = val_range(v);
		it = iter_new(ITER_RANGE, val_none());
		val_iter(it)->i = r->start;
		val_iter(it)->n = r->len;
		val_iter(it)->step = r->step;
		return it;
	}
	case VAL_LIST:
		return iter_new(ITER_LIST, v);
	case VAL_TUPLE:
		return iter_new(ITER_TUPLE, v);
	case VAL_STR:
		it = iter_new(ITER_STR, v);
		val_iter(it)->n = (int64_t)val_str(v)->len;
		return it;
	case VAL_TENSOR:
		return vm_tensor_hooks->iter(v);
	case VAL_ITER:
		val_incref(v);
		return v;
	default:
		return vm_raise("'%s' object is not iterable", val_type_name(v));
	}
}

static value one_char_str(unsigned char c)
{
	static value cache[128];
	if (c < 128) {
		if (cache[c].tag != VAL_STR) {
			char ch = (char)c;
			cache[c] = str_new(&ch, 1);
		}
		val_incref(cache[c]);
		return cache[c];
	}
	char ch = (char)c;
	return str_new(&ch, 1);
}

int vm_iter_next(value itv, value *out)
{
	struct iter *it = val_iter(itv);
	switch (it->kind) {
	case ITER_RANGE:
		if (it->n <= 0)
			return 0;
		*out = val_int(it->i);
		it->i = (int64_t)((uint64_t)it->i + (uint64_t)it->step);
		it->n--;
		return 1;
	case ITER_LIST: {
		struct list *l = val_list(it->seq);
		if (it->i >= (int64_t)l->len)
			return 0;
		*out = l->items[it->i++];
		val_incref(*out);
		return 1;
	}
	case ITER_TUPLE: {
		struct tuple *t = val_tuple(it->seq);
		if (it->i >= (int64_t)t->len)
			return 0;
		*out = t->items[it->i++];
		val_incref(*out);
		return 1;
	}
	case ITER_STR: {
		struct str *s = val_str(it->seq);
		if (it->i >= it->n)
			return 0;
		unsigned char c = (unsigned char)s->data[it->i];
		if (c < 0x80) {
			*out = one_char_str(c);
			it->i++;
			return 1;
		}
		int64_t j = it->i + 1;
		while (j < it->n && ((unsigned char)s->data[j] & 0xC0) == 0x80)
			j++;
		*out = str_new(s->data + it->i, (size_t)(j - it->i));
		it->i = j;
		return 1;
	}
	case ITER_TENSOR: {
		if (it->i >= it->n)
			return 0;
		value r = vm_tensor_hooks->subscript(it->seq, val_int(it->i));
		if (val_is_err(r))
			return -1;
		it->i++;
		*out = r;
		return 1;
	}
	case ITER_ENUMERATE: {
		value v;
		int rc = vm_iter_next(it->seq, &v);
		if (rc <= 0)
			return rc;
		value t = tuple_new(2);
		val_tuple(t)->items[0] = val_int(it->i++);
		val_tuple(t)->items[1] = v;
		*out = t;
		return 1;
	}
	case ITER_ZIP: {
		struct tuple *its = val_tuple(it->seq);
		if (its->len == 0)
			return 0;
		value t = tuple_new(its->len);
		for (size_t k = 0; k < its->len; k++) {
			int rc = vm_iter_next(its->items[k], &val_tuple(t)->items[k]);
			if (rc <= 0) {
				val_tuple(t)->items[k] = val_none();
				val_decref(t);
				return rc;
			}
		}
		*out = t;
		return 1;
	}
	}
	return 0;
}

value vm_sequence_to_list(value v)
{
	if (v.tag == VAL_LIST || v.tag == VAL_TUPLE) {
		const value *items = v.tag == VAL_LIST ? val_list(v)->items : val_tuple(v)->items;
		size_t n = v.tag == VAL_LIST ? val_list(v)->len : val_tuple(v)->len;
		value r = list_new(n);
		for (size_t i = 0; i < n; i++) {
			val_incref(items[i]);
			val_list(r)->items[i] = items[i];
		}
		val_list(r)->len = n;
		return r;
	}
	value it = vm_get_iter(v);
	if (val_is_err(it))
		return it;
	value r = list_new(v.tag == VAL_RANGE ? (size_t)val_range(v)->len : 0);
	value x;
	int rc;
	while ((rc = vm_iter_next(it, &x)) > 0)
		list_append(val_list(r), x);
	val_decref(it);
	if (rc < 0) {
		val_decref(r);
		return val_err();
	}
	return r;
}

/* pops into out[] last first (out[0] is the last item), as UNPACK_SEQUENCE */
static int unpack_into(value seq, int n, value *out)
{
	if (!(seq.tag == VAL_LIST || seq.tag == VAL_TUPLE || seq.tag == VAL_STR || seq.tag == VAL_RANGE ||
	      seq.tag == VAL_TENSOR || seq.tag == VAL_ITER)) {
		tj_error_set("cannot unpack non-iterable %s object", val_type_name(seq));
		return -1;
	}
	value lst = vm_sequence_to_list(seq);
	if (val_is_err(lst))
		return -1;
	struct list *l = val_list(lst);
	if ((int64_t)l->len != n) {
		if ((int64_t)l->len > n)
			tj_error_set("too many values to unpack (expected %d)", n);
		else
			tj_error_set("not enough values to unpack (expected %d, got %zu)", n, l->len);
		val_decref(lst);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		val_incref(l->items[n - 1 - i]);
		out[i] = l->items[n - 1 - i];
	}
	val_decref(lst);
	return 0;
}

int64_t vm_len(value v)
{
	switch ((value_tag)v.tag) {
	case VAL_STR: return (int64_t)str_char_count(val_str(v));
	case VAL_LIST: return (int64_t)val_list(v)->len;
	case VAL_TUPLE: return (int64_t)val_tuple(v)->len;
	case VAL_RANGE: return val_range(v)->len;
	case VAL_TENSOR: return vm_tensor_hooks->len(v);
	default:
		tj_error_set("object of type '%s' has no len()", val_type_name(v));
		return -1;
	}
}
