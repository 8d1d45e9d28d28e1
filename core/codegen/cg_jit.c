/* cg_jit.c - the process's one JIT: ORC's LLJIT for the host, made on the
 * first load or lookup, into which compiled (or cached) objects are added
 * and from which kernels are looked up. Symbols that no object defines
 * (expf, memset) resolve from the process. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "cg_impl.h"

static LLVMOrcLLJITRef jit;
static char *jit_error; /* why the JIT could not be made, or NULL */
static pthread_once_t jit_once = PTHREAD_ONCE_INIT;

/* what ORC reports outside a call's result (a link error found while
 * materializing a lookup), kept for that call's message */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static char *report;

static void jit_report(void *ctx, LLVMErrorRef e)
{
	char *msg = LLVMGetErrorMessage(e);
	pthread_mutex_lock(&report_lock);
	if (!report)
		report = strdup(msg);
	pthread_mutex_unlock(&report_lock);
	LLVMDisposeErrorMessage(msg);
}

static char *jit_take_report(void)
{
	pthread_mutex_lock(&report_lock);
	char *r = report;
	report = NULL;
	pthread_mutex_unlock(&report_lock);
	return r;
}

static void jit_init(void)
{
	LLVMOrcJITTargetMachineBuilderRef jtmb = NULL;
	LLVMOrcDefinitionGeneratorRef gen = NULL;
	LLVMErrorRef e;

	tjit_codegen_api(); /* LLVM's native target, initialized once */
	if ((e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb))) {
		cg_fail_error(&jit_error, e, "cannot start the JIT: no host target");
		return;
	}
	LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
	LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb); /* takes jtmb */
	if ((e = LLVMOrcCreateLLJIT(&jit, builder))) {             /* takes builder */
		jit = NULL;
		cg_fail_error(&jit_error, e, "cannot start the JIT");
		return;
	}
	LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(jit), jit_report, NULL);
	e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen,
		LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
	if (e) {
		cg_fail_error(&jit_error, e, "cannot start the JIT: no search of the process's symbols");
		LLVMOrcDisposeLLJIT(jit);
		jit = NULL;
		return;
	}
	LLVMOrcJITDylibRef main_jd = LLVMOrcLLJITGetMainJITDylib(jit);
	LLVMOrcJITDylibAddGenerator(main_jd, gen); /* takes gen */
	/* libm by name too: a process that does not use it (a test) has it
	 * only as a dependency of libLLVM, which the loader keeps out of the
	 * global scope that the process search looks in; optional */
	if (!(e = LLVMOrcCreateDynamicLibrarySearchGeneratorForPath(&gen, "libm.so.6",
		      LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL)))
		LLVMOrcJITDylibAddGenerator(main_jd, gen);
	else
		LLVMConsumeError(e);
}

static LLVMOrcLLJITRef jit_get(char **err)
{
	pthread_once(&jit_once, jit_init);
	if (!jit)
		cg_fail(err, "%s", jit_error ? jit_error : "cannot start the JIT");
	return jit;
}

int cg_jit_load_object(const void *obj, size_t len, char **err)
{
	LLVMOrcLLJITRef j = jit_get(err);
	if (!j)
		return -1;
	if (!obj || len == 0)
		return cg_fail(err, "load object: empty object");
	/* the JIT takes the buffer, also on failure */
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len, "kernel");
	LLVMErrorRef e = LLVMOrcLLJITAddObjectFile(j, LLVMOrcLLJITGetMainJITDylib(j), buf);
	if (!e)
		return 0;
	char *msg = LLVMGetErrorMessage(e);
	/* the symbols are defined atomically: on a duplicate none was added
	 * (ORC's message: "Duplicate definition of symbol '...'") */
	int dup = strstr(msg, "Duplicate definition") != NULL;
	if (!dup)
		cg_fail(err, "load object: %s", msg);
	LLVMDisposeErrorMessage(msg);
	return dup ? 1 : -1;
}

void *cg_jit_lookup(const char *symbol, char **err)
{
	LLVMOrcLLJITRef j = jit_get(err);
	if (!j)
		return NULL;
	LLVMOrcExecutorAddress addr = 0;
	free(jit_take_report());
	LLVMErrorRef e = LLVMOrcLLJITLookup(j, &addr, symbol);
	char *why = jit_take_report();
	if (e) {
		char *msg = LLVMGetErrorMessage(e);
		cg_fail(err, "lookup %s: %s%s%s", symbol, msg, why ? ": " : "", why ? why : "");
		LLVMDisposeErrorMessage(msg);
		free(why);
		return NULL;
	}
	free(why);
	if (!addr)
		cg_fail(err, "lookup %s: address 0", symbol);
	return (void *)(uintptr_t)addr;
}
