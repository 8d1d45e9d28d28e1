/* minify_sig.c - what a run shows: its class, its signature, and the
 * comparison of a compiled run's output with the eager reference's
 * (minify.h, doc/minify.md "Classification and signatures"). */
#include "minify.h"

#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "error.h"
#include "strbuf.h"
#include "util.h"

/* the unit of the last digit tensors print (%.4f) */
#define PRINT_QUANTUM 1e-4
/* how much of a differing line the report shows */
#define DETAIL_WIDTH 120

static const char *const class_names[] = {
	[MZ_PASS] = "pass",
	[MZ_COMPILE_ERROR] = "compile_error",
	[MZ_RUNTIME_ERROR] = "runtime_error",
	[MZ_CRASH] = "crash",
	[MZ_HANG] = "hang",
	[MZ_ACCURACY] = "accuracy",
	[MZ_USAGE] = "usage",
};

const char *minify_class_name(enum minify_class c)
{
	return c >= 0 && c < (int)(sizeof class_names / sizeof *class_names) ? class_names[c] : "?";
}

void minify_sig_release(struct minify_sig *s)
{
	free(s->stage);
	free(s->message);
	free(s->location);
	free(s->detail);
	memset(s, 0, sizeof *s);
}

char *minify_sig_text(const struct minify_sig *s)
{
	struct strbuf sb = STRBUF_INIT;
	sb_puts(&sb, minify_class_name(s->cls));
	if (s->stage || s->message)
		sb_putc(&sb, ' ');
	if (s->stage)
		sb_printf(&sb, "%s: ", s->stage);
	if (s->message)
		sb_puts(&sb, s->message);
	return sb_detach(&sb);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

bool minify_sig_equal(const struct minify_sig *a, const struct minify_sig *b)
{
	return a->cls == b->cls && same_str(a->stage, b->stage) && same_str(a->message, b->message);
}

bool minify_sig_matches(const struct minify_sig *s, const char *text)
{
	if (!text)
		return true;
	if (s->message && strstr(s->message, text))
		return true;
	if (s->stage && strstr(s->stage, text))
		return true;
	return strstr(minify_class_name(s->cls), text) != NULL;
}

/* ---- the error line ---- */

/* line [p, end) is "FILE:LINE:COL: error: MESSAGE": its location's length */
static size_t error_line_loc(const char *p, const char *end)
{
	static const char tag[] = ": error: ";
	const char *e = NULL;
	for (const char *q = p; q + sizeof tag - 1 <= end; q++)
		if (memcmp(q, tag, sizeof tag - 1) == 0) {
			e = q;
			break;
		}
	if (!e || e == p)
		return 0;
	/* ":LINE:COL" right before the tag */
	const char *q = e;
	for (int part = 0; part < 2; part++) {
		const char *digits_end = q;
		while (q > p && isdigit((unsigned char)q[-1]))
			q--;
		if (q == digits_end || q == p || q[-1] != ':')
			return 0;
		q--;
	}
	return q > p ? (size_t)(e - p) : 0;
}

bool minify_error_line(const char *err, char **loc, char **msg)
{
	*loc = *msg = NULL;
	const char *best = NULL, *best_end = NULL;
	size_t best_loc = 0;
	for (const char *p = err; p && *p;) {
		const char *end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		size_t n = error_line_loc(p, end);
		if (n) {
			best = p;
			best_end = end;
			best_loc = n;
		}
		p = *end ? end + 1 : end;
	}
	if (!best)
		return false;
	*loc = xstrndup(best, best_loc);
	const char *m = best + best_loc + strlen(": error: ");
	*msg = xstrndup(m, (size_t)(best_end - m));
	return true;
}

char *minify_normalize(const char *msg)
{
	struct strbuf sb = STRBUF_INIT;
	for (const char *p = msg; *p;) {
		if (isdigit((unsigned char)*p)) {
			sb_putc(&sb, 'N');
			while (isdigit((unsigned char)*p))
				p++;
		} else {
			sb_putc(&sb, *p++);
		}
	}
	return sb_detach(&sb);
}

char *minify_message_stage(const char *msg, const char **rest)
{
	*rest = msg;
	const char *colon = strstr(msg, ": ");
	if (!colon)
		return NULL;
	char *name = xstrndup(msg, (size_t)(colon - msg));
	if (!backend_find(name)) {
		free(tj_error_take());
		free(name);
		return NULL;
	}
	*rest = colon + 2;
	return name;
}

/* ---- outputs compared ---- */

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* a number at p (a token's start: p == start or p[-1] not a word char);
 * its end in *end, or false */
static bool number_at(const char *start, const char *p, double *v, const char **end)
{
	if (p > start && (word_char(p[-1]) || p[-1] == '.'))
		return false;
	char c = *p;
	if (!(isdigit((unsigned char)c) || c == '-' || c == '+' || c == 'n' || c == 'i' || c == '.'))
		return false;
	char *e = NULL;
	*v = strtod(p, &e);
	if (e == p || word_char(*e))
		return false;
	*end = e;
	return true;
}

static bool numbers_agree(double got, double ref, double rel)
{
	if (isnan(ref) || isnan(got))
		return isnan(ref) && isnan(got);
	if (isinf(ref) || isinf(got))
		return got == ref;
	return fabs(got - ref) <= PRINT_QUANTUM + rel * fabs(ref);
}

/* one line of each, [a, ae) and [b, be) */
static bool lines_agree(const char *a, const char *ae, const char *b, const char *be, double rel)
{
	const char *p = a, *q = b;
	while (p < ae && q < be) {
		double x, y;
		const char *pe, *qe;
		if (number_at(a, p, &x, &pe) && number_at(b, q, &y, &qe) && pe <= ae && qe <= be) {
			if (!numbers_agree(y, x, rel))
				return false;
			p = pe;
			q = qe;
			continue;
		}
		if (*p != *q)
			return false;
		p++;
		q++;
	}
	return p == ae && q == be;
}

static void put_clipped(struct strbuf *sb, const char *p, const char *e)
{
	size_t n = (size_t)(e - p);
	if (n > DETAIL_WIDTH) {
		sb_add(sb, p, DETAIL_WIDTH);
		sb_puts(sb, "...");
	} else {
		sb_add(sb, p, n);
	}
}

static const char *line_end(const char *p)
{
	const char *e = strchr(p, '\n');
	return e ? e : p + strlen(p);
}

bool minify_outputs_agree(const char *ref, const char *got, double rel, char **detail)
{
	*detail = NULL;
	const char *a = ref, *b = got;
	for (int line = 1;; line++) {
		if (!*a && !*b)
			return true;
		const char *ae = line_end(a), *be = line_end(b);
		if (!*a || !*b || !lines_agree(a, ae, b, be, rel)) {
			struct strbuf sb = STRBUF_INIT;
			sb_printf(&sb, "output line %d: got ", line);
			if (*b)
				put_clipped(&sb, b, be);
			else
				sb_puts(&sb, "(nothing)");
			sb_puts(&sb, ", expected ");
			if (*a)
				put_clipped(&sb, a, ae);
			else
				sb_puts(&sb, "(nothing)");
			*detail = sb_detach(&sb);
			return false;
		}
		a = *ae ? ae + 1 : ae;
		b = *be ? be + 1 : be;
	}
}

/* ---- a run classified ---- */

static const char *signal_name(int sig, char *buf, size_t n)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGABRT: return "SIGABRT";
	case SIGKILL: return "SIGKILL";
	case SIGALRM: return "SIGALRM";
	case SIGTERM: return "SIGTERM";
	default: snprintf(buf, n, "signal %d", sig); return buf;
	}
}

/* the last non-empty line of text (malloc'd), or NULL */
static char *last_line(const char *text)
{
	const char *best = NULL, *best_end = NULL;
	for (const char *p = text; p && *p;) {
		const char *e = line_end(p);
		if (e > p) {
			best = p;
			best_end = e;
		}
		p = *e ? e + 1 : e;
	}
	return best ? xstrndup(best, (size_t)(best_end - best)) : NULL;
}

/* the error's message and stage into s; true when the raw message is one
 * of the run's compile errors */
static bool error_signature(const struct minify_result *r, const char *const *compile_errors, int n,
			    struct minify_sig *s)
{
	char *msg = NULL;
	if (!minify_error_line(r->err, &s->location, &msg))
		msg = last_line(r->err);
	if (!msg)
		return false;
	bool compile = false;
	for (int i = 0; i < n && !compile; i++)
		compile = compile_errors[i] && strcmp(compile_errors[i], msg) == 0;
	const char *rest;
	s->stage = minify_message_stage(msg, &rest);
	s->message = minify_normalize(rest);
	free(msg);
	return compile;
}

/* A sanitizer's report of a fatal error ("==12==ERROR: AddressSanitizer:
 * SEGV on unknown address ..."): a build with sanitizers catches the
 * signal and exits 1, where a plain build dies of it. The crash's message
 * (malloc'd: "SIGSEGV" for SEGV, as a plain build's), or NULL. */
static char *sanitizer_crash(const char *err)
{
	const char *p = err ? strstr(err, "ERROR: AddressSanitizer: ") : NULL;
	if (!p)
		return NULL;
	p += strlen("ERROR: AddressSanitizer: ");
	size_t n = 0;
	while (p[n] && !isspace((unsigned char)p[n]))
		n++;
	if (n == 4 && strncmp(p, "SEGV", 4) == 0)
		return xstrdup("SIGSEGV");
	char *what = xstrndup(p, n);
	char *msg = xasprintf("AddressSanitizer: %s", what);
	free(what);
	return msg;
}

/* A graph program that checked its outputs (minify_graph_program) and
 * exited 1: its "wrong output ..." line (malloc'd), or NULL */
static char *self_check_failed(const struct minify_result *r)
{
	char *loc, *msg;
	if (minify_error_line(r->err, &loc, &msg)) {
		free(loc);
		free(msg);
		return NULL;
	}
	for (const char *p = r->out; p && *p;) {
		const char *e = line_end(p);
		if (strncmp(p, "wrong output ", 13) == 0)
			return xstrndup(p, (size_t)(e - p));
		p = *e ? e + 1 : e;
	}
	return NULL;
}

void minify_classify(const struct minify_result *r, const char *ref_out, double rel, const char *const *compile_errors,
		     int ncompile_errors, struct minify_sig *s)
{
	memset(s, 0, sizeof *s);
	if (r->timed_out) {
		s->cls = MZ_HANG;
	} else if (r->signal) {
		char buf[32];
		s->cls = MZ_CRASH;
		s->message = xstrdup(signal_name(r->signal, buf, sizeof buf));
	} else if (r->status != 0 && (s->message = sanitizer_crash(r->err))) {
		s->cls = MZ_CRASH;
	} else if (r->status == 1 && (s->detail = self_check_failed(r))) {
		s->cls = MZ_ACCURACY;
	} else if (r->status != 0) {
		bool compile = error_signature(r, compile_errors, ncompile_errors, s);
		s->cls = r->status == 2 ? MZ_USAGE : compile ? MZ_COMPILE_ERROR : MZ_RUNTIME_ERROR;
	} else if (ref_out && !minify_outputs_agree(ref_out, r->out ? r->out : "", rel >= 0 ? rel : MINIFY_DEFAULT_REL,
						    &s->detail)) {
		s->cls = MZ_ACCURACY;
	} else {
		s->cls = MZ_PASS;
	}
}
