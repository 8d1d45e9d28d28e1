/* runtime.c - the compiling state of one program run (runtime.h). */
#include "runtime.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "frame_eval.h"
#include "ops.h"

/* Every compile makes and frees its arenas (a trace attempt's, each
 * graph's: a few hundred KiB for a large function). With glibc's default
 * trim threshold (128 KiB) each free gave the top of the heap back to the
 * kernel and the next compile faulted it in again: a 200-op compile took
 * 20% longer. Keeping up to 16 MiB of freed memory in the process avoids
 * that; memory is still reused, never leaked. */
static void keep_freed_memory(void)
{
#ifdef M_TRIM_THRESHOLD
	mallopt(M_TRIM_THRESHOLD, 16 << 20);
#endif
}

struct runtime *runtime_new(const struct runtime_config *cfg)
{
	keep_freed_memory();
	struct runtime *rt = calloc(1, sizeof *rt);
	if (!rt)
		return NULL;
	struct compile_switches sw = COMPILE_SWITCHES_INIT;
	rt->sw = cfg ? cfg->switches : sw;
	if (rt->sw.cache_size_limit < 1)
		rt->sw.cache_size_limit = 1;
	rt->bug.stage = INJECT_NONE;
	if (cfg)
		rt->bug = cfg->bug;
	rt->log = compile_log_new(cfg ? &cfg->log : NULL);
	rt->fe = frame_eval_new();
	rt->disallowed = calloc(OPS_COUNT, sizeof *rt->disallowed);
	if (!rt->log || !rt->fe || !rt->disallowed) {
		runtime_free(rt);
		return NULL;
	}
	return rt;
}

void runtime_free(struct runtime *rt)
{
	if (!rt)
		return;
	frame_eval_free(rt);
	compile_log_free(rt->log);
	free(rt->disallowed);
	free(rt);
}

void runtime_apply_switches(const struct runtime *rt, struct compile_config *cfg)
{
	if (rt->sw.backend)
		cfg->backend = rt->sw.backend;
	if (rt->sw.fullgraph)
		cfg->fullgraph = true;
}

bool runtime_compile_selected(const struct runtime *rt, const char *compile_id)
{
	const char *p = rt ? rt->sw.compile_only : NULL;
	if (!p)
		return true;
	size_t n = strlen(compile_id);
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == n && strncmp(p, compile_id, n) == 0)
			return true;
		if (!comma)
			return false;
		p = comma + 1;
	}
}

void runtime_set_op_disallowed(struct runtime *rt, int op, bool on)
{
	if (op >= 0 && op < OPS_COUNT)
		rt->disallowed[op] = on;
}

bool runtime_op_disallowed(const struct runtime *rt, int op)
{
	return rt && op >= 0 && op < OPS_COUNT && rt->disallowed[op];
}
