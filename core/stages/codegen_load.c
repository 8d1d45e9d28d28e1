/* codegen_load.c - opening libtjcodegen.so on first use (codegen_load.h).
 * Looked for, in this order: $TJIT_CODEGEN_LIB; the folder of the running
 * executable, its core/codegen/ and ../core/codegen/ (the tools, the
 * benchmarks and the tests of a build tree); the installed
 * $(pkglibdir). */
#include "codegen_load.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "util.h"

#ifndef TJ_PKGLIBDIR
#define TJ_PKGLIBDIR "/usr/local/lib/tjit"
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int tried;
static const struct codegen_api *loaded;
static char loaded_path[PATH_MAX];
static char *failure; /* the first attempt's error, set again on each call */

int codegen_check_api(const struct codegen_api *api, const char *path)
{
	if (!api) {
		tj_error_set("%s: %s returned no table", path, CODEGEN_API_SYMBOL);
		return -1;
	}
	if (api->abi != CODEGEN_ABI) {
		tj_error_set("%s: code generator of ABI %d, this tjit needs ABI %d (rebuild or reinstall it)",
			path, api->abi, CODEGEN_ABI);
		return -1;
	}
	if (!api->parse_ir || !api->verify || !api->optimize || !api->emit_object ||
	    !api->module_free || !api->load_object || !api->lookup || !api->target_id ||
	    !api->llvm_version) {
		tj_error_set("%s: code generator's table is incomplete", path);
		return -1;
	}
	return 0;
}

/* opens path; 1 when it is not there (try the next), 0 loaded, -1 error */
static int try_open(const char *path, int must_exist)
{
	if (!must_exist && access(path, F_OK) != 0)
		return 1;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		tj_error_set("cannot load the code generator: %s", dlerror());
		return -1;
	}
	const struct codegen_api *(*get)(void) =
		(const struct codegen_api *(*)(void))dlsym(h, CODEGEN_API_SYMBOL);
	if (!get) {
		tj_error_set("%s: not tjit's code generator (no %s)", path, CODEGEN_API_SYMBOL);
		dlclose(h);
		return -1;
	}
	const struct codegen_api *api = get();
	if (codegen_check_api(api, path) < 0)
		return -1; /* (not closed: its LLVM is initialized, and may stay) */
	loaded = api;
	snprintf(loaded_path, sizeof loaded_path, "%s", path);
	return 0;
}

/* 0 loaded, -1 error set */
static int find_and_open(void)
{
	const char *env = getenv("TJIT_CODEGEN_LIB");
	if (env && *env)
		return try_open(env, 1);

	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			static const char *const subdirs[] = { "", "/core/codegen", "/../core/codegen" };
			for (size_t i = 0; i < sizeof subdirs / sizeof *subdirs; i++) {
				snprintf(path, sizeof path, "%s%s/%s", exe, subdirs[i], CODEGEN_LIB_NAME);
				int r = try_open(path, 0);
				if (r <= 0)
					return r;
			}
		}
	}
	snprintf(path, sizeof path, "%s/%s", TJ_PKGLIBDIR, CODEGEN_LIB_NAME);
	int r = try_open(path, 0);
	if (r == 1)
		tj_error_set("cannot find the code generator %s beside the executable or in %s "
			"(set TJIT_CODEGEN_LIB to its path)", CODEGEN_LIB_NAME, TJ_PKGLIBDIR);
	return r < 0 || r == 1 ? -1 : 0;
}

const struct codegen_api *codegen_load(void)
{
	pthread_mutex_lock(&lock);
	if (!tried) {
		tried = 1;
		if (find_and_open() < 0)
			failure = tj_error_take();
	}
	const struct codegen_api *api = loaded;
	if (!api)
		tj_error_set("%s", failure ? failure : "cannot load the code generator");
	pthread_mutex_unlock(&lock);
	return api;
}

const char *codegen_load_path(void)
{
	return loaded ? loaded_path : NULL;
}
