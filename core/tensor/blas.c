/* blas.c - loading CBLAS on first use (see blas.h for why). */
#include "blas.h"

#include <dlfcn.h>
#include <stddef.h>

#include "error.h"

/* Debian's OpenBLAS first (what configure checked), then any CBLAS. */
static const char *const sonames[] = {
	"libopenblas.so.0", "libopenblas.so", "libcblas.so.3", "libblas.so.3", NULL,
};

static struct blas_api api;
static const struct blas_api *loaded;

const struct blas_api *blas_get(void)
{
	if (loaded)
		return loaded;
	void *h = NULL;
	for (const char *const *s = sonames; *s && !h; s++)
		h = dlopen(*s, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		tj_error_set("cannot load a CBLAS library (%s): %s", sonames[0], dlerror());
		return NULL;
	}
	api.sgemm = (__typeof__(api.sgemm))dlsym(h, "cblas_sgemm");
	api.dgemm = (__typeof__(api.dgemm))dlsym(h, "cblas_dgemm");
	api.sgemv = (__typeof__(api.sgemv))dlsym(h, "cblas_sgemv");
	api.dgemv = (__typeof__(api.dgemv))dlsym(h, "cblas_dgemv");
	if (!api.sgemm || !api.dgemm || !api.sgemv || !api.dgemv) {
		tj_error_set("the CBLAS library lacks cblas_sgemm, cblas_dgemm, cblas_sgemv or cblas_dgemv");
		dlclose(h);
		return NULL;
	}
	loaded = &api;
	return loaded;
}
