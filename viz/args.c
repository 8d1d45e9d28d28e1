/* args.c - which earlier nodes an op's argument text names: the edges of
 * the graph view (viz_impl.h).
 *
 * The database keeps an op's arguments as the graph listing prints them
 * ("abs_1, 1", "[a, b], dim=1", "x, dtype=float64"), not as references:
 * the names are found again here. Only names of nodes before the op
 * count, so a constant that happens to read like an identifier (float64,
 * True, None) is an edge only if a node of that name came first.
 */
#include "viz_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct viz_name {
	const char *s;
	int idx;
};

struct viz_names {
	struct viz_name *v;
	int n;
};

static int name_cmp(const void *a, const void *b)
{
	const struct viz_name *x = a, *y = b;
	int c = strcmp(x->s, y->s);
	/* a repeated name: the earlier node first, which lookups find */
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

struct viz_names *viz_names_new(const char *const *names, int n)
{
	struct viz_names *ix = xcalloc(1, sizeof *ix);
	ix->v = xcalloc((size_t)(n > 0 ? n : 1), sizeof *ix->v);
	for (int i = 0; i < n; i++)
		if (names[i])
			ix->v[ix->n++] = (struct viz_name){names[i], i};
	qsort(ix->v, (size_t)ix->n, sizeof *ix->v, name_cmp);
	return ix;
}

void viz_names_free(struct viz_names *ix)
{
	if (!ix)
		return;
	free(ix->v);
	free(ix);
}

/* strcmp of s[0..len) with a NUL-terminated t */
static int cmp_len(const char *s, size_t len, const char *t)
{
	int c = strncmp(s, t, len);
	if (c)
		return c;
	return t[len] ? -1 : 0;
}

int viz_names_find(const struct viz_names *ix, const char *s, size_t len)
{
	int lo = 0, hi = ix->n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (cmp_len(s, len, ix->v[mid].s) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ix->n && cmp_len(s, len, ix->v[lo].s) == 0 ? ix->v[lo].idx : -1;
}

static bool ident_start(char c)
{
	return c == '_' || isalpha((unsigned char)c);
}

static bool ident_char(char c)
{
	return c == '_' || isalnum((unsigned char)c);
}

int viz_arg_refs(const struct viz_names *ix, const char *args, int before, int *out, int max)
{
	int n = 0;
	const char *p = args ? args : "";
	while (*p) {
		if (*p == '\'' || *p == '"') { /* a string constant, as repr prints it */
			char q = *p++;
			while (*p && *p != q)
				p += p[0] == '\\' && p[1] ? 2 : 1;
			if (*p)
				p++;
			continue;
		}
		if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
			/* a number: 12, 1.5, 1e-05 (the sign after e is read next, harmlessly) */
			while (ident_char(*p) || *p == '.')
				p++;
			continue;
		}
		if (!ident_start(*p)) {
			p++;
			continue;
		}
		const char *start = p;
		while (ident_char(*p))
			p++;
		size_t len = (size_t)(p - start);
		const char *after = p;
		while (*after == ' ')
			after++;
		if (*after == '=' && after[1] != '=') /* a keyword: dim=1 */
			continue;
		int k = viz_names_find(ix, start, len);
		if (k < 0 || k >= before)
			continue;
		bool seen = false;
		for (int i = 0; i < n && !seen; i++)
			seen = out[i] == k;
		if (!seen && n < max)
			out[n++] = k;
	}
	return n;
}
