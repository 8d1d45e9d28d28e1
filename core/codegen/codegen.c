/* codegen.c - libtjcodegen.so's table (tjit_codegen_api), the host target,
 * modules from IR text, verification, the new pass manager's pipelines
 * and object emission. The JIT is in cg_jit.c. */
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg_emit.h"
#include "cg_impl.h"

/* the host, found once (cg_host_init) */
static struct {
	char *triple, *cpu, *features;
	LLVMTargetRef target;
	char *init_error; /* why the native target cannot be used, or NULL */
} host;

static struct codegen_api api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

int cg_fail(char **err, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(err, fmt, ap) < 0)
		*err = NULL;
	va_end(ap);
	return -1;
}

int cg_fail_llvm(char **err, char *llvm_msg, const char *what)
{
	/* LLVM's messages often end in a newline: drop it */
	size_t n = llvm_msg ? strlen(llvm_msg) : 0;
	while (n > 0 && (llvm_msg[n - 1] == '\n' || llvm_msg[n - 1] == ' '))
		n--;
	cg_fail(err, "%s: %.*s", what, (int)n, llvm_msg ? llvm_msg : "");
	if (llvm_msg)
		LLVMDisposeMessage(llvm_msg);
	return -1;
}

int cg_fail_error(char **err, LLVMErrorRef e, const char *what)
{
	char *msg = LLVMGetErrorMessage(e); /* consumes e */
	cg_fail(err, "%s: %s", what, msg);
	LLVMDisposeErrorMessage(msg);
	return -1;
}

const char *cg_host_triple(void) { return host.triple; }

LLVMTargetMachineRef cg_host_machine(LLVMCodeGenOptLevel level, char **err)
{
	if (host.init_error) {
		cg_fail(err, "%s", host.init_error);
		return NULL;
	}
	/* PIC and the small code model: the objects are cached and linked
	 * anywhere in the process by the JIT's linker */
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(host.target, host.triple, host.cpu,
		host.features, level, LLVMRelocPIC, LLVMCodeModelSmall);
	if (!tm)
		cg_fail(err, "cannot make a target machine for %s", host.triple);
	return tm;
}

/* Target machines made for modules, kept for the next ones: making one,
 * and the subtarget that the first use of it makes (the CPU's features
 * parsed, the cost model's tables), took about 4% of a small kernel's
 * compile. A target machine serves one module at a time (it is not
 * shared between threads): a module takes one from here or makes one,
 * and gives it back when it is freed. */
enum { TM_KEPT = 8 };
static struct {
	pthread_mutex_t lock;
	LLVMTargetMachineRef kept[TM_KEPT];
	int n;
} tm_pool = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};

static LLVMTargetMachineRef tm_take(char **err)
{
	pthread_mutex_lock(&tm_pool.lock);
	LLVMTargetMachineRef tm = tm_pool.n ? tm_pool.kept[--tm_pool.n] : NULL;
	pthread_mutex_unlock(&tm_pool.lock);
	return tm ? tm : cg_host_machine(LLVMCodeGenLevelDefault, err);
}

static void tm_give_back(LLVMTargetMachineRef tm)
{
	pthread_mutex_lock(&tm_pool.lock);
	if (tm_pool.n < TM_KEPT) {
		tm_pool.kept[tm_pool.n++] = tm;
		tm = NULL;
	}
	pthread_mutex_unlock(&tm_pool.lock);
	if (tm)
		LLVMDisposeTargetMachine(tm);
}

static void cg_set_host(LLVMModuleRef mod, LLVMTargetMachineRef tm)
{
	LLVMSetTarget(mod, host.triple);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(mod, td);
	LLVMDisposeTargetData(td);
}

struct cg_module *cg_module_wrap(LLVMContextRef ctx, LLVMModuleRef mod, char **err)
{
	struct cg_module *m = calloc(1, sizeof *m);
	if (!m) {
		cg_fail(err, "out of memory");
		goto fail;
	}
	m->ctx = ctx;
	m->mod = mod;
	m->tm = tm_take(err);
	if (!m->tm)
		goto fail;
	cg_set_host(mod, m->tm);
	return m;
fail:
	free(m);
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	return NULL;
}

/* LLVM's diagnostics, handled by tjit: remarks and warnings are not the
 * user's (LLVM prints some, such as "loop not vectorized" for a loop it
 * was asked to vectorize, on stderr between the program's lines). An
 * error, which LLVM's own handler answers with exit(1), is kept for the
 * phase that met it to fail with (each module's context is used by one
 * thread at a time). */
static __thread char *diag_error;

static void diagnose(LLVMDiagnosticInfoRef info, void *ctx)
{
	(void)ctx;
	if (LLVMGetDiagInfoSeverity(info) == LLVMDSError && !diag_error)
		diag_error = LLVMGetDiagInfoDescription(info);
}

/* -1 with the error LLVM diagnosed during what, if it did */
static int diag_check(char **err, const char *what)
{
	char *msg = diag_error;
	diag_error = NULL;
	return msg ? cg_fail_llvm(err, msg, what) : 0;
}

static LLVMContextRef cg_context_new(void)
{
	LLVMDisposeMessage(diag_error); /* one left from a module that failed before its check */
	diag_error = NULL;
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMContextSetDiagnosticHandler(ctx, diagnose, NULL);
	return ctx;
}

struct cg_module *cg_module_new(const char *name, char **err)
{
	LLVMContextRef ctx = cg_context_new();
	return cg_module_wrap(ctx, LLVMModuleCreateWithNameInContext(name, ctx), err);
}

static void cg_module_free(struct cg_module *m);

static struct cg_module *cg_emit_module(const struct lkernel *k, char **err)
{
	struct cg_module *m = cg_module_new(k->name, err);
	if (m && cg_emit_kernel(m->mod, k, err) < 0) {
		cg_module_free(m);
		return NULL;
	}
	return m;
}

static struct cg_module *cg_parse_ir(const char *text, const char *name, char **err)
{
	if (!text)
		return cg_fail(err, "no IR text"), NULL;
	LLVMContextRef ctx = cg_context_new();
	/* the parser takes the buffer, also when it fails */
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(text, strlen(text),
		name ? name : "kernel");
	LLVMModuleRef mod = NULL;
	char *msg = NULL;
	if (LLVMParseIRInContext(ctx, buf, &mod, &msg)) {
		char what[160];
		snprintf(what, sizeof what, "%s: bad LLVM IR", name ? name : "kernel");
		cg_fail_llvm(err, msg, what);
		LLVMContextDispose(ctx);
		return NULL;
	}
	return cg_module_wrap(ctx, mod, err);
}

static char *cg_module_ir(struct cg_module *m)
{
	char *s = LLVMPrintModuleToString(m->mod);
	char *copy = s ? strdup(s) : NULL;
	LLVMDisposeMessage(s);
	return copy;
}

static int cg_verify(struct cg_module *m, char **err)
{
	char *msg = NULL;
	if (!LLVMVerifyModule(m->mod, LLVMReturnStatusAction, &msg)) {
		LLVMDisposeMessage(msg);
		return 0;
	}
	size_t n;
	const char *name = LLVMGetModuleIdentifier(m->mod, &n);
	char what[160];
	snprintf(what, sizeof what, "%.*s: LLVM IR does not verify", (int)(n < 100 ? n : 100), name);
	return cg_fail_llvm(err, msg, what);
}

static int cg_optimize(struct cg_module *m, int level, char **err)
{
	if (level < 0 || level > 3)
		return cg_fail(err, "optimization level %d: not 0 to 3", level);
	char pipeline[32];
	snprintf(pipeline, sizeof pipeline, "default<O%d>", level);
	const char *passes = level == 2 ? CG_KERNEL_PIPELINE : pipeline;
	/* the options steer the default pipelines only (the kernels' names
	 * its passes): vectorization, off by default in the C API's options,
	 * on at O3 as in clang; unrolling off, as the kernels' pipeline has
	 * none (weighing it took half of O2's time on large kernels and made
	 * none faster: doc/codegen.md) */
	LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
	LLVMPassBuilderOptionsSetLoopVectorization(opts, level >= 2);
	LLVMPassBuilderOptionsSetSLPVectorization(opts, level >= 2);
	LLVMPassBuilderOptionsSetLoopUnrolling(opts, 0);
	LLVMErrorRef e = LLVMRunPasses(m->mod, passes, m->tm, opts);
	LLVMDisposePassBuilderOptions(opts);
	if (e) {
		diag_check(NULL, "optimize"); /* LLVM's own error says it */
		return cg_fail_error(err, e, "optimize");
	}
	if (diag_check(err, "optimize") < 0)
		return -1;
	if (cg_math_coefficients_in_memory(m->mod) < 0 || cg_schedule_loops(m->mod) < 0)
		return cg_fail(err, "optimize: out of memory");
	/* the passes after the pipeline are tjit's own: what they made is
	 * checked before code generation sees it (0.4% of a kernel's compile) */
	return cg_verify(m, err);
}

static int cg_emit_object(struct cg_module *m, void **obj, size_t *len, char **err)
{
	LLVMMemoryBufferRef buf = NULL;
	char *msg = NULL;
	*obj = NULL;
	*len = 0;
	if (LLVMTargetMachineEmitToMemoryBuffer(m->tm, m->mod, LLVMObjectFile, &msg, &buf)) {
		diag_check(NULL, "emit object");
		return cg_fail_llvm(err, msg, "emit object");
	}
	if (diag_check(err, "emit object") < 0) {
		LLVMDisposeMemoryBuffer(buf);
		return -1;
	}
	size_t n = LLVMGetBufferSize(buf);
	void *copy = malloc(n ? n : 1);
	if (!copy) {
		LLVMDisposeMemoryBuffer(buf);
		return cg_fail(err, "out of memory");
	}
	memcpy(copy, LLVMGetBufferStart(buf), n);
	LLVMDisposeMemoryBuffer(buf);
	*obj = copy;
	*len = n;
	return 0;
}

static void cg_module_free(struct cg_module *m)
{
	if (!m)
		return;
	if (m->tm)
		tm_give_back(m->tm);
	LLVMDisposeModule(m->mod);
	LLVMContextDispose(m->ctx);
	free(m);
}

static char *dup_llvm(char *s)
{
	char *copy = strdup(s ? s : "");
	LLVMDisposeMessage(s);
	return copy;
}

/* The GNU build-id note of this shared object as hex ("" when the linker
 * wrote none), found among the loaded objects as the one whose segments
 * hold this function. It ends target_id, so a kernel cached by another
 * build of the code generator (whose emitter may make other code of the
 * same loop IR) is never loaded. */
struct build_id {
	uintptr_t self;
	char hex[2 * 32 + 1];
};

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct build_id *b = data;
	bool mine = false;
	for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
		mine = ph->p_type == PT_LOAD && b->self >= lo && b->self - lo < ph->p_memsz;
	}
	if (!mine)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof *n;
			const unsigned char *desc = (const unsigned char *)name + ((n->n_namesz + 3) & ~3u);
			const char *next = (const char *)desc + ((n->n_descsz + 3) & ~3u);
			if (next > end || next < p)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
				size_t len = n->n_descsz < 32 ? n->n_descsz : 32;
				for (size_t k = 0; k < len; k++)
					snprintf(b->hex + 2 * k, 3, "%02x", desc[k]);
				return 1;
			}
			p = next;
		}
	}
	return 1;
}

static void cg_host_init(void)
{
	unsigned maj, min, patch;
	static char version[32];
	LLVMGetVersion(&maj, &min, &patch);
	snprintf(version, sizeof version, "%u.%u.%u", maj, min, patch);

	char *msg = NULL;
	if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter() ||
	    LLVMInitializeNativeAsmParser())
		host.init_error = strdup("LLVM has no native target for this host");
	host.triple = dup_llvm(LLVMGetDefaultTargetTriple());
	host.cpu = dup_llvm(LLVMGetHostCPUName());
	host.features = dup_llvm(LLVMGetHostCPUFeatures());
	if (!host.init_error && LLVMGetTargetFromTriple(host.triple, &host.target, &msg)) {
		cg_fail_llvm(&host.init_error, msg, "no LLVM target for the host");
		msg = NULL;
	}
	LLVMDisposeMessage(msg);

	static char *target_id;
	struct build_id bid = {(uintptr_t)&find_build_id, ""};
	dl_iterate_phdr(find_build_id, &bid);
	if (asprintf(&target_id, "%s;%s;%s;%s", host.triple, host.cpu, host.features, bid.hex) < 0)
		target_id = NULL;
	long ncores = sysconf(_SC_NPROCESSORS_ONLN);

	api.abi = CODEGEN_ABI;
	api.llvm_version = version;
	api.target_id = target_id ? target_id : "unknown";
	api.ncores = ncores > 0 ? (int)ncores : 1;
	api.emit_kernel = cg_emit_module;
	api.parse_ir = cg_parse_ir;
	api.module_ir = cg_module_ir;
	api.verify = cg_verify;
	api.optimize = cg_optimize;
	api.emit_object = cg_emit_object;
	api.module_free = cg_module_free;
	api.load_object = cg_jit_load_object;
	api.lookup = cg_jit_lookup;
}

__attribute__((visibility("default")))
const struct codegen_api *tjit_codegen_api(void)
{
	pthread_once(&api_once, cg_host_init);
	return &api;
}
