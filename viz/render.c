/* render.c - a built graph out: DOT through agwrite, or laid out by dot
 * and rendered by gvc (viz_impl.h).
 *
 * Everything is made in memory first and written at the end, so that an
 * error leaves no half-written file behind, and so that no Graphviz call
 * ever opens our output (gvRenderFilename exits the process when it
 * cannot). Graphviz's own messages (warnings about a layout, a missing
 * plugin) are caught with agseterrf: on a failure the first of them is
 * the reason, otherwise they are dropped.
 */
#include "viz_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <gvc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static const char *const formats[] = {"dot", "svg", "png", "pdf"};

bool viz_format_known(const char *format)
{
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
		if (format && strcmp(format, formats[i]) == 0)
			return true;
	return false;
}

bool viz_format_binary(const char *format)
{
	return format && (strcmp(format, "png") == 0 || strcmp(format, "pdf") == 0);
}

/* ---- Graphviz's messages ---- */

static struct strbuf gv_messages;

static int catch_message(char *msg)
{
	sb_puts(&gv_messages, msg);
	return 0;
}

/* the first message caught, without "Error: " and the newline; "" if none */
static char *first_message(void)
{
	const char *s = sb_str(&gv_messages);
	const char *colon = strstr(s, ": ");
	if (colon && (strncmp(s, "Error", 5) == 0 || strncmp(s, "Warning", 7) == 0))
		s = colon + 2;
	size_t n = strcspn(s, "\n");
	char *out = xmalloc(n + 1);
	memcpy(out, s, n);
	out[n] = '\0';
	return out;
}

/* ---- the Graphviz context ----
 *
 * One per process, made on first use and freed at exit: Graphviz 2.42's
 * pango plugin remembers the last font name by a pointer into the
 * context's font table, so a second context after gvFreeContext reads
 * freed memory (ASan shows it when the TUI or a test exports twice). */

static GVC_t *shared_gvc;

static void free_gvc(void)
{
	if (shared_gvc)
		gvFreeContext(shared_gvc);
	shared_gvc = NULL;
}

static GVC_t *gvc_get(void)
{
	if (!shared_gvc) {
		shared_gvc = gvContext();
		if (shared_gvc)
			atexit(free_gvc);
	}
	return shared_gvc;
}

/* ---- rendering ---- */

static int write_dot(Agraph_t *g, char **out, size_t *len, char **err)
{
	FILE *f = open_memstream(out, len);
	if (!f) {
		if (err)
			*err = viz_err("cannot write the graph: %s", strerror(errno));
		return -1;
	}
	int rc = agwrite(g, f);
	if (fclose(f) != 0 || rc != 0) {
		free(*out);
		*out = NULL;
		if (err)
			*err = viz_err("cannot write the graph as DOT");
		return -1;
	}
	return 0;
}

static int gv_render(Agraph_t *g, const char *format, char **out, size_t *len, char **err)
{
	agusererrf old = agseterrf(catch_message);
	sb_reset(&gv_messages);
	int rc = -1;
	GVC_t *gvc = gvc_get();
	if (!gvc) {
		if (err)
			*err = viz_err("cannot start Graphviz (gvContext failed)");
		goto cleanup;
	}
	if (gvLayout(gvc, g, "dot") != 0) {
		char *why = first_message();
		if (err)
			*err = viz_err("cannot lay out the graph with Graphviz's dot%s%s (is the Debian package "
				       "libgvc6 installed with its plugins?)",
				       *why ? ": " : "", why);
		free(why);
		goto cleanup;
	}
	char *data = NULL;
	unsigned int n = 0;
	if (gvRenderData(gvc, g, format, &data, &n) != 0 || !data) {
		char *why = first_message();
		if (err)
			*err = viz_err("cannot render %s with Graphviz%s%s (is the Debian package libgvc6 "
				       "installed with its plugins?)",
				       format, *why ? ": " : "", why);
		free(why);
		if (data)
			gvFreeRenderData(data);
	} else {
		*out = xmalloc(n ? n : 1);
		memcpy(*out, data, n);
		*len = n;
		gvFreeRenderData(data);
		rc = 0;
	}
	gvFreeLayout(gvc, g);
cleanup:
	agseterrf(old);
	sb_release(&gv_messages);
	return rc;
}

int viz_render(Agraph_t *g, const char *format, char **out, size_t *len, char **err)
{
	*out = NULL;
	*len = 0;
	if (!viz_format_known(format)) {
		if (err)
			*err = viz_err("unknown format '%s': expected " VIZ_FORMATS, format ? format : "");
		return -1;
	}
	if (strcmp(format, "dot") == 0)
		return write_dot(g, out, len, err);
	return gv_render(g, format, out, len, err);
}

/* Whether a drawing may replace the file at path: it does not exist, is
 * no regular file (a terminal, a pipe), is empty, or is a drawing as
 * tjit-dot writes them (DOT that starts with "digraph", an SVG Graphviz
 * generated, a PNG, a PDF). A source file or a database given to -o by
 * mistake is never lost. */
static bool may_replace(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0)
		return true;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return true; /* the write fails and says why */
	char head[512];
	ssize_t n = read(fd, head, sizeof head - 1);
	close(fd);
	if (n <= 0)
		return n == 0;
	head[n] = '\0';
	size_t len = (size_t)n;
	return strncmp(head, "digraph ", 8) == 0 || (len >= 8 && memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0) ||
	       strncmp(head, "%PDF-", 5) == 0 ||
	       (strncmp(head, "<?xml", 5) == 0 && strstr(head, "<!-- Generated by graphviz") != NULL);
}

int viz_output(Agraph_t *g, const char *format, const char *path, bool force, char **err)
{
	char *data = NULL;
	size_t len = 0;
	if (path && !force && !may_replace(path)) {
		if (err)
			*err = viz_err("not overwriting '%s': it is not a drawing (--force overwrites it)", path);
		return -1;
	}
	if (viz_render(g, format, &data, &len, err) < 0)
		return -1;
	int rc = 0;
	if (!path) {
		if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
			if (err)
				*err = viz_err("error writing to stdout: %s", strerror(errno));
			rc = -1;
		}
	} else {
		FILE *f = fopen(path, "wb");
		if (!f) {
			if (err)
				*err = viz_err("cannot write '%s': %s", path, strerror(errno));
			rc = -1;
		} else {
			bool ok = fwrite(data, 1, len, f) == len;
			int saved = errno;
			if (fclose(f) != 0 && ok) {
				ok = false;
				saved = errno;
			}
			if (!ok) {
				if (err)
					*err = viz_err("cannot write '%s': %s", path, strerror(saved));
				rc = -1;
			}
		}
	}
	free(data);
	return rc;
}
