/* backends.c - the table of every backend (backend.h), looked up by the
 * name that compile(backend=...) and --backend give. */
#include <string.h>

#include "backends.h"

const struct backend backend_eager = {
	"eager", backend_eager_compile, backend_eager_run, backend_eager_release, NULL,
};
/* in the order `--backend` lists them */
static const struct backend *const backends[] = {
	&backend_eager,
	&backend_aot_eager,
	&backend_inductor,
	&backend_testing_relu_compile_error,
	&backend_testing_relu_runtime_error,
	&backend_testing_relu_accuracy_error,
};
#define NBACKENDS (sizeof backends / sizeof backends[0])

const struct backend *backend_default(void)
{
	return &backend_inductor;
}

void backend_names(struct strbuf *out)
{
	for (size_t i = 0; i < NBACKENDS; i++) {
		if (i)
			sb_puts(out, ", ");
		sb_puts(out, backends[i]->name);
	}
}

const struct backend *backend_find(const char *name)
{
	for (size_t i = 0; i < NBACKENDS; i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	struct strbuf sb = STRBUF_INIT;
	backend_names(&sb);
	tj_error_set("unknown backend '%s' (valid: %s)", name, sb.buf);
	sb_release(&sb);
	return NULL;
}
