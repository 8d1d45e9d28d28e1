/* minify.c - a tjit-minify session (minify.h, doc/minify.md): the eager
 * reference and the original three times under the backend (classify),
 * the stages in order (bisect), the failing graph from the candidates'
 * compile log (locate), the repro written and run alone (verify); every
 * run a step of the session in the database. */
#define _GNU_SOURCE
#include "minify.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "code.h"
#include "db.h"
#include "query.h"
#include "run.h"
#include "strbuf.h"
#include "util.h"
#include "value.h"

#define NAME "tjit-minify"
/* the reference's time limit when --timeout does not give one */
#define REFERENCE_TIMEOUT_S 120.0
#define ORIGINAL_RUNS 3

/* a step waiting for its session (the classification comes first) */
struct pending_step {
	char *phase, *candidate, *outcome;
	double ms;
};

/* a run of a candidate, classified */
struct cand_run {
	struct minify_result res;
	struct minify_sig sig;
	char *graph;              /* compile_error: "0/0 f (prog.tj:1)" of the failing compile */
};

struct session {
	const struct minify_options *o;
	FILE *out;
	struct db_writer *db;
	int64_t sid;              /* 0 until the session began */
	struct pending_step *pending;
	int npending;
	char *dir, *runs_db, *repro;
	struct minify_limits lim;
	double t0;
	long queries;
	bool stopped;             /* a limit ran out */
	bool runs_reported;       /* the report's runs line is out */
	char *ref_out;
	struct minify_sig sig;    /* the original's failure */
	long fail_pid;            /* a run that showed it in the failing stage */
	char *graph;
};

/* ---- steps ---- */

static const char *outcome_of(const struct session *s, const struct cand_run *c)
{
	if (c->sig.cls == MZ_PASS)
		return "passes";
	if (minify_sig_equal(&c->sig, &s->sig) && minify_sig_matches(&c->sig, s->o->match))
		return "fails";
	return c->sig.cls == MZ_HANG ? "timeout" : "other_failure";
}

static void log_step(struct session *s, const char *phase, const char *cand, const char *outcome, double ms)
{
	if (s->o->progress)
		fprintf(stderr, NAME ": %s: %s: %s (%.2f s)\n", phase, cand, outcome, ms / 1e3);
	if (s->sid) {
		db_log_minify_step(s->db, s->sid, &(struct db_minify_step){phase, cand, -1, outcome, ms});
		return;
	}
	s->pending = xrealloc(s->pending, (size_t)(s->npending + 1) * sizeof *s->pending);
	s->pending[s->npending++] = (struct pending_step){xstrdup(phase), xstrdup(cand), xstrdup(outcome), ms};
}

static void begin_session(struct session *s, const char *failure, const char *source_text)
{
	if (s->sid)
		return;
	s->sid = db_begin_minify(s->db,
				 &(struct db_minify){s->o->program, source_text, s->o->backend, failure, 0});
	for (int i = 0; i < s->npending; i++) {
		struct pending_step *p = &s->pending[i];
		db_log_minify_step(s->db, s->sid, &(struct db_minify_step){p->phase, p->candidate, -1, p->outcome, p->ms});
		free(p->phase);
		free(p->candidate);
		free(p->outcome);
	}
	free(s->pending);
	s->pending = NULL;
	s->npending = 0;
}

static void end_session(struct session *s, const char *stage, const char *result, const char *repro_text)
{
	db_end_minify(s->db, s->sid,
		      &(struct db_minify_end){stage, result, repro_text ? s->repro : NULL, repro_text});
}

/* ---- running ---- */

/* false (s->stopped) when --max-queries or --max-seconds ran out */
static bool budget_left(struct session *s)
{
	const struct minify_options *o = s->o;
	if (o->max_queries > 0 && s->queries >= o->max_queries) {
		if (!s->stopped)
			fprintf(stderr, NAME ": stopped: --max-queries %ld reached\n", o->max_queries);
		s->stopped = true;
	} else if (o->max_seconds > 0 && util_now_ms() - s->t0 >= o->max_seconds * 1e3) {
		if (!s->stopped)
			fprintf(stderr, NAME ": stopped: --max-seconds %g reached\n", o->max_seconds);
		s->stopped = true;
	}
	return !s->stopped;
}

/* The compiles of a child's run (its candidates' log), in order: the
 * errors (outcome error: a compile error, or a graph that fell back) and
 * the graphs the backend compiled */
struct compiles {
	int n;
	char **label;             /* "1/0" */
	char **graph;             /* "1/0 f (prog.tj:9)" */
	char **error;             /* NULL unless outcome error */
	bool *compiled;           /* ops handed to the backend, and no error */
};

static void compiles_release(struct compiles *cs)
{
	for (int i = 0; i < cs->n; i++) {
		free(cs->label[i]);
		free(cs->graph[i]);
		free(cs->error[i]);
	}
	free(cs->label);
	free(cs->graph);
	free(cs->error);
	free(cs->compiled);
	memset(cs, 0, sizeof *cs);
}

static void child_compiles(const struct session *s, long pid, struct compiles *cs)
{
	memset(cs, 0, sizeof *cs);
	char *err = NULL;
	struct dbq *q = dbq_open(s->runs_db, &err);
	free(err);
	err = NULL;
	if (!q)
		return;
	int64_t run = dbq_find_run(q, 0, pid, "tjit-minify child");
	struct dbq_compile *c = NULL;
	int nc = 0;
	if (run && dbq_compiles(q, run, 0, 0, &c, &nc, &err) == 0) {
		cs->label = xcalloc((size_t)nc + 1, sizeof *cs->label);
		cs->graph = xcalloc((size_t)nc + 1, sizeof *cs->graph);
		cs->error = xcalloc((size_t)nc + 1, sizeof *cs->error);
		cs->compiled = xcalloc((size_t)nc + 1, sizeof *cs->compiled);
		for (int i = 0; i < nc; i++) {
			bool error = c[i].outcome && strcmp(c[i].outcome, "error") == 0;
			cs->label[i] = xstrdup(c[i].label);
			cs->graph[i] = xasprintf("%s %s (%s:%d)", c[i].label, c[i].function, c[i].file, c[i].line);
			cs->error[i] = error && c[i].error ? xstrdup(c[i].error) : NULL;
			cs->compiled[i] = !error && c[i].op_count > 0 && c[i].outcome &&
					  strcmp(c[i].outcome, "skipped") != 0;
		}
		cs->n = nc;
		dbq_compiles_free(c, nc);
	}
	free(err);
	dbq_close(q);
}

/* Runs file under backend (NULL: the eager reference) and classifies it
 * against the reference's output. 0, or -1 after printing why (no child). */
static int run_cand(struct session *s, const char *file, const char *backend, const char *only, struct cand_run *c)
{
	memset(c, 0, sizeof *c);
	struct minify_cand cand = {file, backend, s->runs_db, only};
	char *err = NULL;
	s->queries++;
	/* no run outlives --max-seconds */
	struct minify_limits lim = s->lim;
	if (s->o->max_seconds > 0) {
		double left = s->o->max_seconds - (util_now_ms() - s->t0) / 1e3;
		if (lim.timeout_s <= 0 || left < lim.timeout_s)
			lim.timeout_s = left > 0.1 ? left : 0.1;
	}
	if (minify_run(&cand, &lim, &c->res, &err) < 0) {
		fprintf(stderr, NAME ": %s\n", err);
		free(err);
		return -1;
	}
	struct compiles cs = {0};
	if (c->res.status == 1)
		child_compiles(s, c->res.pid, &cs);
	minify_classify(&c->res, backend ? s->ref_out : NULL, s->o->rel, (const char *const *)cs.error, cs.n, &c->sig);
	if (c->sig.cls == MZ_COMPILE_ERROR) {
		/* the compile whose message is the error line's */
		char *loc, *msg;
		if (minify_error_line(c->res.err, &loc, &msg)) {
			for (int i = 0; i < cs.n && !c->graph; i++)
				if (cs.error[i] && strcmp(cs.error[i], msg) == 0)
					c->graph = xstrdup(cs.graph[i]);
			free(loc);
			free(msg);
		}
	}
	compiles_release(&cs);
	return 0;
}

static void cand_release(struct cand_run *c)
{
	minify_result_release(&c->res);
	minify_sig_release(&c->sig);
	free(c->graph);
	memset(c, 0, sizeof *c);
}

static void sig_copy(struct minify_sig *to, const struct minify_sig *from)
{
	to->cls = from->cls;
	to->stage = from->stage ? xstrdup(from->stage) : NULL;
	to->message = from->message ? xstrdup(from->message) : NULL;
	to->location = from->location ? xstrdup(from->location) : NULL;
	to->detail = from->detail ? xstrdup(from->detail) : NULL;
}

/* "inductor run 2: compile_error aot_eager: ..." */
static char *cand_text(const char *what, const struct minify_sig *sig)
{
	char *t = minify_sig_text(sig);
	char *r = xasprintf("%s: %s", what, t);
	free(t);
	return r;
}

/* ---- the output folder ---- */

static char *default_dir(const char *program)
{
	const char *base = strrchr(program, '/');
	base = base ? base + 1 : program;
	size_t n = strlen(base);
	if (n > 3 && strcmp(base + n - 3, ".tj") == 0)
		n -= 3;
	return xasprintf("%.*s.minify", (int)n, base);
}

/* 0, or -1 after printing why */
static int prepare_dir(struct session *s)
{
	s->dir = s->o->out_dir ? xstrdup(s->o->out_dir) : default_dir(s->o->program);
	if (mkdir(s->dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, NAME ": cannot make the folder '%s': %s\n", s->dir, strerror(errno));
		return -1;
	}
	s->runs_db = xasprintf("%s/runs.db", s->dir);
	s->repro = xasprintf("%s/repro.tj", s->dir);
	/* the candidates' log is this session's */
	const char *suffix[] = {"", "-wal", "-shm"};
	for (int i = 0; i < 3; i++) {
		char *p = xasprintf("%s%s", s->runs_db, suffix[i]);
		unlink(p);
		free(p);
	}
	return 0;
}

/* ---- the phases ---- */

/* The eager reference: its output in s->ref_out. 0, or 1 after reporting
 * why the failure is not a compiler bug (or did not run). */
static int reference(struct session *s, const char *source_text)
{
	struct cand_run c;
	if (run_cand(s, s->o->program, NULL, NULL, &c) < 0)
		return 1;
	const char *outcome = c.sig.cls == MZ_PASS ? "passes" : c.sig.cls == MZ_HANG ? "timeout" : "other_failure";
	char *what = cand_text("eager reference", &c.sig);
	log_step(s, "classify", what, outcome, c.res.ms);
	free(what);
	if (c.sig.cls == MZ_PASS) {
		s->ref_out = c.res.out;
		c.res.out = NULL;
		if (s->o->timeout_s <= 0)
			s->lim.timeout_s = 10 + 10 * c.res.ms / 1e3;
		cand_release(&c);
		return 0;
	}
	char *t = minify_sig_text(&c.sig);
	fprintf(s->out, "failure: not_compiler_bug\n");
	fprintf(stderr, NAME ": %s fails without compile() too (%s): not a compiler bug\n", s->o->program, t);
	begin_session(s, minify_class_name(c.sig.cls), source_text);
	end_session(s, NULL, "not_compiler_bug", NULL);
	free(t);
	cand_release(&c);
	return 1;
}

/* The original three times under the backend: 0 with s->sig when it
 * fails the same way each time, else 1 after reporting. */
static int classify(struct session *s, const char *source_text)
{
	struct cand_run runs[ORIGINAL_RUNS];
	int nrun = 0, nfail = 0;
	bool same = true;
	for (; nrun < ORIGINAL_RUNS && budget_left(s); nrun++) {
		struct cand_run *c = &runs[nrun];
		if (run_cand(s, s->o->program, s->o->backend, NULL, c) < 0)
			break;
		bool fails = c->sig.cls != MZ_PASS && minify_sig_matches(&c->sig, s->o->match);
		nfail += fails;
		if (nrun > 0 && !minify_sig_equal(&c->sig, &runs[0].sig))
			same = false;
		char *what0 = xasprintf("%s run %d", s->o->backend, nrun + 1);
		char *what = cand_text(what0, &c->sig);
		log_step(s, "classify", what, fails ? "fails" : c->sig.cls == MZ_PASS ? "passes" : "other_failure",
			 c->res.ms);
		free(what0);
		free(what);
	}
	int rc = 1;
	const char *failure = "none";
	if (nrun == ORIGINAL_RUNS && nfail == ORIGINAL_RUNS && same) {
		sig_copy(&s->sig, &runs[0].sig);
		s->graph = runs[0].graph ? xstrdup(runs[0].graph) : NULL;
		s->fail_pid = runs[0].res.pid;
		failure = minify_class_name(s->sig.cls);
		rc = 0;
	} else if (nfail > 0 && nrun == ORIGINAL_RUNS) {
		failure = "flaky";
		fprintf(s->out, "failure: flaky\n");
		fprintf(stderr, NAME ": flaky: the program failed %d of %d runs with backend %s", nfail, nrun,
			s->o->backend);
		fprintf(stderr, same ? "\n" : ", not always the same way\n");
	} else if (nrun < ORIGINAL_RUNS) {
		fprintf(s->out, "failure: unknown\n");
		fprintf(stderr, NAME ": the failure was not confirmed: %d of %d runs made\n", nrun, ORIGINAL_RUNS);
	} else {
		fprintf(s->out, "failure: none\n");
		if (s->o->match && runs[0].sig.cls != MZ_PASS)
			fprintf(stderr, NAME ": %s fails with backend %s, but not with a message that contains '%s'\n",
				s->o->program, s->o->backend, s->o->match);
		else
			fprintf(stderr,
				NAME ": %s does not fail with backend %s: %d runs printed what the eager run printed\n",
				s->o->program, s->o->backend, nrun);
	}
	for (int i = 0; i < nrun; i++)
		cand_release(&runs[i]);
	begin_session(s, failure, source_text);
	if (rc)
		end_session(s, NULL, "not_reproduced", NULL);
	return rc;
}

/* The stages before the backend, in order; its own name last. */
static int stage_list(const char *backend, const char **stages)
{
	static const char *const order[] = {"eager", "aot_eager", "inductor"};
	int n = 0;
	for (int i = 0; i < 3; i++) {
		stages[n++] = order[i];
		if (strcmp(order[i], backend) == 0)
			return n;
	}
	/* a testing backend: the captured graph on the eager kernels */
	stages[0] = "eager";
	stages[1] = backend;
	return 2;
}

/* The first stage that shows the failure (the backend's own when none
 * before it does); the failing compile of a compile error there. */
static const char *bisect(struct session *s)
{
	const char *stages[3];
	int n = stage_list(s->o->backend, stages);
	for (int i = 0; i < n - 1; i++) {
		if (!budget_left(s))
			return NULL;
		struct cand_run c;
		if (run_cand(s, s->o->program, stages[i], NULL, &c) < 0)
			return NULL;
		const char *outcome = outcome_of(s, &c);
		char *what0 = xasprintf("stage %s", stages[i]);
		char *what = cand_text(what0, &c.sig);
		log_step(s, "bisect", what, outcome, c.res.ms);
		free(what0);
		free(what);
		bool fails = strcmp(outcome, "fails") == 0;
		if (fails) {
			free(s->graph);
			s->graph = c.graph ? xstrdup(c.graph) : NULL;
			s->fail_pid = c.res.pid;
		}
		cand_release(&c);
		if (fails)
			return stages[i];
	}
	return stages[n - 1];
}

/* ---- the failing graph ---- */

/* The stage's run with only the compiles ids[a, b) of cs on it: 1 when it
 * shows the failure, 0 when not, -1 when it could not run. */
static int try_only(struct session *s, const char *stage, const struct compiles *cs, const int *ids, int a, int b)
{
	struct strbuf only = STRBUF_INIT;
	for (int i = a; i < b; i++)
		sb_printf(&only, "%s%s", i > a ? "," : "", cs->label[ids[i]]);
	struct cand_run c;
	int rc = -1;
	if (run_cand(s, s->o->program, stage, only.buf, &c) == 0) {
		const char *outcome = outcome_of(s, &c);
		char *what0 = xasprintf("compiles %s", only.buf);
		char *what = cand_text(what0, &c.sig);
		log_step(s, "locate", what, outcome, c.res.ms);
		free(what0);
		free(what);
		rc = strcmp(outcome, "fails") == 0;
		cand_release(&c);
	}
	sb_release(&only);
	return rc;
}

/* Which graph of the failing stage fails, when its compile does not say
 * (everything but a compile error): the graphs the failing run compiled,
 * halved with TJIT_COMPILE_ONLY (the others on eager) while a half shows
 * the failure, down to one, which then fails alone. Not in stage eager,
 * which has nothing below it to hand the others to. */
static void locate(struct session *s, const char *stage)
{
	if (s->graph || !stage || strcmp(stage, "eager") == 0 || !s->fail_pid)
		return;
	struct compiles cs;
	child_compiles(s, s->fail_pid, &cs);
	int *ids = xcalloc((size_t)cs.n + 1, sizeof *ids);
	int n = 0;
	for (int i = 0; i < cs.n; i++)
		if (cs.compiled[i])
			ids[n++] = i;
	/* the culprit is among ids[lo, hi); seen: that range ran and failed */
	int lo = 0, hi = n, rc = 0;
	bool seen = false;
	while (hi - lo > 1 && budget_left(s)) {
		int mid = lo + (hi - lo) / 2;
		if ((rc = try_only(s, stage, &cs, ids, lo, mid)) < 0)
			break;
		seen = rc;
		if (rc)
			hi = mid;
		else
			lo = mid;
	}
	if (hi - lo == 1 && rc >= 0 && (seen || (budget_left(s) && try_only(s, stage, &cs, ids, lo, hi) == 1)))
		s->graph = xstrdup(cs.graph[ids[lo]]);
	free(ids);
	compiles_release(&cs);
}

/* ---- the repro ---- */

/* The repro: today the whole program, a header saying how it fails. Its
 * text (malloc'd), or NULL after printing why. */
static char *write_repro(struct session *s, const char *stage, const char *source_text)
{
	struct strbuf sb = STRBUF_INIT;
	char *sig = minify_sig_text(&s->sig);
	const char *bug = getenv("TJIT_INJECT_BUG");
	sb_printf(&sb, "# tjit-minify repro of %s (not shrunk yet: the whole program)\n", s->o->program);
	sb_printf(&sb, "# fails with: %s\n", sig);
	sb_printf(&sb, "# first failing stage: %s", stage ? stage : "unknown");
	if (s->graph)
		sb_printf(&sb, "; graph %s", s->graph);
	sb_printf(&sb, "\n# run: %s%s%stjit run --backend %s repro.tj\n", bug && *bug ? "TJIT_INJECT_BUG=" : "",
		  bug && *bug ? bug : "", bug && *bug ? " " : "", s->o->backend);
	sb_puts(&sb, source_text);
	free(sig);
	char *tmp = xasprintf("%s.tmp", s->repro);
	FILE *f = fopen(tmp, "w");
	bool ok = f && fwrite(sb.buf, 1, sb.len, f) == sb.len;
	if (f && fclose(f) != 0)
		ok = false;
	if (ok && rename(tmp, s->repro) < 0)
		ok = false;
	if (!ok) {
		fprintf(stderr, NAME ": cannot write '%s': %s\n", s->repro, strerror(errno));
		unlink(tmp);
		sb_release(&sb);
	}
	free(tmp);
	return ok ? sb_detach(&sb) : NULL;
}

/* The repro alone: true when it shows the failure. */
static bool verify(struct session *s)
{
	if (!budget_left(s))
		return false;
	struct cand_run c;
	if (run_cand(s, s->repro, s->o->backend, NULL, &c) < 0)
		return false;
	const char *outcome = outcome_of(s, &c);
	char *what = cand_text("repro", &c.sig);
	log_step(s, "verify", what, outcome, c.res.ms);
	free(what);
	cand_release(&c);
	return strcmp(outcome, "fails") == 0;
}

static void report_failure(struct session *s, const char *stage)
{
	char *sig = minify_sig_text(&s->sig);
	fprintf(s->out, "failure: %s\nsignature: %s\n", minify_class_name(s->sig.cls), sig);
	if (s->sig.location)
		fprintf(s->out, "location: %s\n", s->sig.location);
	if (s->sig.detail)
		fprintf(s->out, "detail: %s\n", s->sig.detail);
	fprintf(s->out, "stage: %s\n", stage ? stage : "unknown");
	if (s->graph)
		fprintf(s->out, "graph: %s\n", s->graph);
	free(sig);
}

/* ---- the session ---- */

static struct db_writer *open_log(const struct minify_options *o, const char *source_text)
{
	char *err = NULL;
	struct db_writer *w = db_open_writer(db_default_path(o->db), &err);
	if (!w) {
		fprintf(stderr, NAME ": database: %s (minifying without a log)\n", err ? err : "cannot open");
		free(err);
		w = db_null_writer();
	}
	char config[160];
	snprintf(config, sizeof config, "tol=%g max_queries=%ld max_seconds=%g seed=%llu",
		 o->rel >= 0 ? o->rel : MINIFY_DEFAULT_REL, o->max_queries, o->max_seconds, (unsigned long long)o->seed);
	db_begin_run(w, &(struct db_run){NAME, o->command, o->program, source_text, o->backend, config, 0});
	return w;
}

/* After the classification: bisect, write and check the repro. */
static int minify_failure(struct session *s, const char *source_text)
{
	const char *stage = bisect(s);
	locate(s, stage);
	report_failure(s, stage);
	char *text = write_repro(s, stage, source_text);
	if (!text) {
		end_session(s, stage, "error", NULL);
		return 1;
	}
	bool ok = verify(s);
	fprintf(s->out, "runs: %ld\nrepro: %s\n", s->queries, s->repro);
	s->runs_reported = true;
	if (!ok)
		fprintf(stderr, NAME ": %s: %s\n", s->repro,
			s->stopped ? "not checked: the limits ran out" : "does not fail alone");
	end_session(s, stage, ok ? "classified" : "not_reproduced", text);
	free(text);
	return ok ? 0 : 1;
}

static void session_release(struct session *s)
{
	for (int i = 0; i < s->npending; i++) {
		free(s->pending[i].phase);
		free(s->pending[i].candidate);
		free(s->pending[i].outcome);
	}
	free(s->pending);
	free(s->dir);
	free(s->runs_db);
	free(s->repro);
	free(s->ref_out);
	free(s->graph);
	minify_sig_release(&s->sig);
}

int minify_main(const struct minify_options *o, FILE *out)
{
	struct session s = {.o = o, .out = out, .t0 = util_now_ms()};
	s.lim.timeout_s = o->timeout_s > 0 ? o->timeout_s : REFERENCE_TIMEOUT_S;
	s.lim.memory_bytes = o->memory_bytes;
	struct source *src = NULL;
	int status = 0;
	struct code *code = run_load(NAME, o->program, &src, &status);
	if (!code && status == 2)
		return 2;
	s.db = open_log(o, src ? src->text : NULL);
	fprintf(out, "program: %s\nbackend: %s\n", o->program, o->backend);
	if (!code) {
		fprintf(out, "failure: not_compiler_bug\n");
		fprintf(stderr, NAME ": %s has a syntax error: not a compiler bug\n", o->program);
		begin_session(&s, "syntax_error", NULL);
		end_session(&s, NULL, "not_compiler_bug", NULL);
		status = 1;
		goto cleanup;
	}
	val_decref(val_obj(VAL_CODE, code));
	if (prepare_dir(&s) < 0) {
		begin_session(&s, "none", src->text);
		end_session(&s, NULL, "error", NULL);
		status = 1;
		goto cleanup;
	}
	status = reference(&s, src->text);
	if (status == 0)
		status = classify(&s, src->text);
	if (status == 0)
		status = minify_failure(&s, src->text);
	if (status && !s.sid) { /* the reference could not run at all */
		begin_session(&s, "none", src->text);
		end_session(&s, NULL, "error", NULL);
	}
cleanup:
	if (!s.runs_reported)
		fprintf(out, "runs: %ld\n", s.queries);
	fflush(out);
	db_end_run(s.db, status);
	db_close(s.db);
	session_release(&s);
	source_free(src);
	return status;
}
