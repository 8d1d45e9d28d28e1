/* dotcheck.c - reads a DOT file back with cgraph and prints a summary
 * that tests compare with expected text: the graph's name and label, each
 * subgraph with its label, rank and nodes, each node with its shape,
 * style, color, peripheries and label, each edge with its label, style
 * and lhead. Nodes, edges and subgraphs are sorted, so the summary does
 * not depend on the order in which the DOT lists them.
 *
 * Usage: dotcheck FILE        the summary ("-": stdin)
 *        dotcheck --count FILE  "N nodes, E edges"
 * Exit status: 0, 1 when the file cannot be read or is not DOT, 2 usage.
 */
#include <cgraph.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lines {
	char **v;
	int n, cap;
};

static void add(struct lines *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
		if (!l->v) {
			perror("dotcheck");
			exit(1);
		}
	}
	l->v[l->n++] = s;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* prints the lines sorted and frees them */
static void flush(struct lines *l)
{
	if (l->n)
		qsort(l->v, (size_t)l->n, sizeof *l->v, cmp);
	for (int i = 0; i < l->n; i++) {
		puts(l->v[i]);
		free(l->v[i]);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* a growable line */
struct text {
	char *s;
	size_t len;
	FILE *f;
};

static void text_open(struct text *t)
{
	t->s = NULL;
	t->len = 0;
	t->f = open_memstream(&t->s, &t->len);
	if (!t->f) {
		perror("dotcheck");
		exit(1);
	}
}

static char *text_close(struct text *t)
{
	fclose(t->f);
	return t->s;
}

static const char *attr(void *obj, const char *name)
{
	const char *v = agget(obj, (char *)name);
	return v ? v : "";
}

static void attrs(FILE *f, void *obj, const char *const *names)
{
	for (int i = 0; names[i]; i++) {
		const char *v = attr(obj, names[i]);
		if (*v)
			fprintf(f, " %s=%s", names[i], v);
	}
}

static void subgraphs(Agraph_t *g, struct lines *out)
{
	for (Agraph_t *s = agfstsubg(g); s; s = agnxtsubg(s)) {
		struct lines names = {0};
		for (Agnode_t *n = agfstnode(s); n; n = agnxtnode(s, n))
			add(&names, agnameof(n));
		if (names.n)
			qsort(names.v, (size_t)names.n, sizeof *names.v, cmp);
		struct text t;
		text_open(&t);
		fprintf(t.f, "subgraph %s", agnameof(s));
		if (agparent(s) != agroot(s))
			fprintf(t.f, " in %s", agnameof(agparent(s)));
		static const char *const which[] = {"rank", NULL};
		attrs(t.f, s, which);
		if (*attr(s, "label"))
			fprintf(t.f, " \"%s\"", attr(s, "label"));
		fputs(":", t.f);
		for (int i = 0; i < names.n; i++)
			fprintf(t.f, " %s", names.v[i]);
		free(names.v);
		add(out, text_close(&t));
		subgraphs(s, out);
	}
}

int main(int argc, char **argv)
{
	int count = argc == 3 && strcmp(argv[1], "--count") == 0;
	if (argc != 2 + count) {
		fputs("usage: dotcheck [--count] FILE\n", stderr);
		return 2;
	}
	const char *path = argv[1 + count];
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!f) {
		perror(path);
		return 1;
	}
	Agraph_t *g = agread(f, NULL);
	if (f != stdin)
		fclose(f);
	if (!g) {
		fprintf(stderr, "dotcheck: %s: not a DOT graph\n", path);
		return 1;
	}
	if (count) {
		int edges = 0;
		for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n))
			for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e))
				edges++;
		printf("%d nodes, %d edges\n", agnnodes(g), edges);
		agclose(g);
		return 0;
	}
	printf("%s %s\n", agisdirected(g) ? "digraph" : "graph", agnameof(g));
	if (*attr(g, "label"))
		printf("label \"%s\"\n", attr(g, "label"));
	struct lines out = {0};
	subgraphs(g, &out);
	flush(&out);
	static const char *const node_attrs[] = {"shape", "style", "color", "peripheries", NULL};
	for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
		struct text t;
		text_open(&t);
		fprintf(t.f, "node %s", agnameof(n));
		attrs(t.f, n, node_attrs);
		fprintf(t.f, " \"%s\"", attr(n, "label"));
		add(&out, text_close(&t));
	}
	flush(&out);
	static const char *const edge_attrs[] = {"style", "lhead", NULL};
	for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n))
		for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e)) {
			struct text t;
			text_open(&t);
			fprintf(t.f, "edge %s -> %s", agnameof(agtail(e)), agnameof(aghead(e)));
			attrs(t.f, e, edge_attrs);
			if (*attr(e, "label"))
				fprintf(t.f, " \"%s\"", attr(e, "label"));
			add(&out, text_close(&t));
		}
	flush(&out);
	agclose(g);
	return 0;
}
