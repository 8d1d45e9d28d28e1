/* minify.c - a tjit-minify session (minify.h, doc/minify.md): the eager
 * reference and the original three times under the backend (classify),
 * the stages in order (bisect), the failing graph from the candidates'
 * compile log (locate), the repro written and run alone (verify); every
 * run a step of the session in the database. */
#define _GNU_SOURCE
#include "minify.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "code.h"
#include "db.h"
#include "query.h"
#include "run.h"
#include "strbuf.h"
#include "tensor_io.h"
#include "util.h"
#include "value.h"

#define NAME "tjit-minify"
/* the reference's time limit when --timeout does not give one */
#define REFERENCE_TIMEOUT_S 120.0
#define ORIGINAL_RUNS 3
/* in the output folder: a graph program being tried, the recorded inputs
 * of the failing graph, the program of its eager values and their file,
 * the repro's sidecar */
#define CANDIDATE "candidate.tj"
#define INPUTS "inputs.tjt"
#define VALUES_PROG "values.tj"
#define VALUES "values.tjt"
#define SIDECAR "repro.tjt"
#define CANDIDATE_VALUES "candidate.tjt"

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
	char *graph_label;        /* and its "0/0" */
	bool cut;                 /* stopped by the minifier (its time ran out, or a signal): it shows nothing */
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
	bool stopped;             /* a limit ran out, or a signal asked to stop */
	char *stop_why;           /* "--max-queries 3 reached", "interrupted by SIGTERM" */
	int interrupted;          /* that signal, 0 none */
	bool runs_reported;       /* the report's runs line is out */
	char *ref_out;
	struct minify_sig sig;    /* the original's failure */
	long fail_pid;            /* a run that showed it in the failing stage */
	char *graph;              /* the failing graph: "1/0 f (prog.tj:9)" */
	char *graph_label;        /* its compile id */
	long graph_pid;           /* the run whose log has it */
	char *shrunk;             /* "1 of 5 ops: relu", once shrunk */
	int nodes_left;           /* the fewest nodes a failing candidate kept (-1: none yet) */
	char *kernel;             /* inductor: the kernel(s) of the failing graph that compute the nodes left */
	char *repro_text;         /* what DIR/repro.tj holds */
};

/* ---- steps ---- */

static const char *outcome_of(const struct session *s, const struct cand_run *c)
{
	if (c->cut)
		return "cut_short";
	if (c->sig.cls == MZ_PASS)
		return "passes";
	if (minify_sig_equal(&c->sig, &s->sig) && minify_sig_matches(&c->sig, s->o->match))
		return "fails";
	return c->sig.cls == MZ_HANG ? "timeout" : "other_failure";
}

static void log_step_nodes(struct session *s, const char *phase, const char *cand, int nodes, const char *outcome,
			   double ms)
{
	if (nodes >= 0 && strcmp(outcome, "fails") == 0 && (s->nodes_left < 0 || nodes < s->nodes_left))
		s->nodes_left = nodes;
	if (s->o->progress) {
		/* where the search is: runs so far, the graph's size, time spent */
		char left[48] = "";
		if (s->nodes_left >= 0)
			snprintf(left, sizeof left, ", %d node%s left", s->nodes_left, s->nodes_left == 1 ? "" : "s");
		fprintf(stderr, NAME ": [run %ld%s, %.1f s] %s: %s: %s (%.2f s)\n", s->queries, left,
			(util_now_ms() - s->t0) / 1e3, phase, cand, outcome, ms / 1e3);
	}
	if (s->sid) {
		db_log_minify_step(s->db, s->sid, &(struct db_minify_step){phase, cand, nodes, outcome, ms});
		return;
	}
	s->pending = xrealloc(s->pending, (size_t)(s->npending + 1) * sizeof *s->pending);
	s->pending[s->npending++] = (struct pending_step){xstrdup(phase), xstrdup(cand), xstrdup(outcome), ms};
}

static void log_step(struct session *s, const char *phase, const char *cand, const char *outcome, double ms)
{
	log_step_nodes(s, phase, cand, -1, outcome, ms);
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

/* The session stops, why (malloc'd) said once on stderr and in the
 * report */
static void stop(struct session *s, char *why)
{
	if (s->stopped) {
		free(why);
		return;
	}
	fprintf(stderr, NAME ": stopped: %s\n", why);
	s->stop_why = why;
	s->stopped = true;
}

/* a signal asked to stop: it wins over a limit that ran out before */
static void note_signal(struct session *s)
{
	int sig = minify_stop_signal();
	if (!sig || s->interrupted)
		return;
	s->interrupted = sig;
	free(s->stop_why);
	s->stop_why = NULL;
	s->stopped = false;
	stop(s, xasprintf("interrupted by %s", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP"));
}

static void stop_seconds(struct session *s)
{
	stop(s, xasprintf("--max-seconds %g reached", s->o->max_seconds));
}

/* false (s->stopped) when --max-queries or --max-seconds ran out, or a
 * signal asked to stop */
static bool budget_left(struct session *s)
{
	const struct minify_options *o = s->o;
	note_signal(s);
	if (s->stopped)
		return false;
	if (o->max_queries > 0 && s->queries >= o->max_queries)
		stop(s, xasprintf("--max-queries %ld reached", o->max_queries));
	else if (o->max_seconds > 0 && util_now_ms() - s->t0 >= o->max_seconds * 1e3)
		stop_seconds(s);
	return !s->stopped;
}

/* the result of a session stopped before its failure was confirmed */
static const char *unconfirmed_result(const struct session *s)
{
	return s->interrupted ? "interrupted" : "not_reproduced";
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
static int run_cand_in(struct session *s, const char *cwd, const char *file, const char *backend, const char *only,
		       const char *record, const char *ref, struct cand_run *c)
{
	memset(c, 0, sizeof *c);
	struct minify_cand cand = {file, backend, s->runs_db, only, record, cwd};
	char *err = NULL;
	s->queries++;
	/* no run outlives --max-seconds */
	struct minify_limits lim = s->lim;
	bool clamped = false;
	if (s->o->max_seconds > 0) {
		double left = s->o->max_seconds - (util_now_ms() - s->t0) / 1e3;
		if (lim.timeout_s <= 0 || left < lim.timeout_s) {
			lim.timeout_s = left > 0.1 ? left : 0.1;
			clamped = true;
		}
	}
	/* the log's writer thread idle before the fork: a child forked while
	 * it held a lock (the allocator's, SQLite's) would wait on it forever
	 * (seen under ASan as a candidate that timed out) */
	db_flush(s->db);
	if (minify_run(&cand, &lim, &c->res, &err) < 0) {
		fprintf(stderr, NAME ": %s\n", err);
		free(err);
		return -1;
	}
	/* killed at the session's limit, not its own, or for a signal: not a
	 * hang, nor anything else the candidate did */
	c->cut = c->res.interrupted || (c->res.timed_out && clamped);
	if (c->res.interrupted)
		note_signal(s);
	else if (c->cut)
		stop_seconds(s);
	struct compiles cs = {0};
	if (c->res.status == 1)
		child_compiles(s, c->res.pid, &cs);
	minify_classify(&c->res, ref, s->o->rel, (const char *const *)cs.error, cs.n, &c->sig);
	if (c->sig.cls == MZ_COMPILE_ERROR) {
		/* the compile whose message is the error line's */
		char *loc, *msg;
		if (minify_error_line(c->res.err, &loc, &msg)) {
			for (int i = 0; i < cs.n && !c->graph; i++)
				if (cs.error[i] && strcmp(cs.error[i], msg) == 0)
				{
					c->graph = xstrdup(cs.graph[i]);
					c->graph_label = xstrdup(cs.label[i]);
				}
			free(loc);
			free(msg);
		}
	}
	compiles_release(&cs);
	return 0;
}

static int run_cand(struct session *s, const char *file, const char *backend, const char *only, const char *ref,
		    struct cand_run *c)
{
	return run_cand_in(s, NULL, file, backend, only, NULL, ref, c);
}

static void cand_release(struct cand_run *c)
{
	minify_result_release(&c->res);
	minify_sig_release(&c->sig);
	free(c->graph);
	free(c->graph_label);
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

/* a step's candidate: what was run and what it showed, or "cut short" */
static char *run_text(const char *what, const struct cand_run *c)
{
	return c->cut ? xasprintf("%s: cut short", what) : cand_text(what, &c->sig);
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

/* The files of the search (doc/minify.md: removed at the end, also of a
 * session stopped or interrupted); the repro, its sidecar and runs.db
 * stay */
static void remove_work_files(const struct session *s)
{
	static const char *const scratch[] = {CANDIDATE, CANDIDATE_VALUES, INPUTS, VALUES_PROG, VALUES};
	if (!s->dir)
		return;
	for (size_t i = 0; i < sizeof scratch / sizeof *scratch; i++) {
		char *p = xasprintf("%s/%s", s->dir, scratch[i]);
		unlink(p);
		free(p);
	}
}

/* 0, or -1 after printing why */
static int prepare_dir(struct session *s)
{
	s->dir = s->o->out_dir ? xstrdup(s->o->out_dir) : default_dir(s->o->program);
	if (mkdir(s->dir, 0777) < 0 && errno != EEXIST) {
		fprintf_shown(stderr, NAME ": cannot make the folder '%s': %s\n", s->dir, strerror(errno));
		return -1;
	}
	/* a file of that name, or a folder the candidates cannot write their
	 * log into: a compile error would then read as a run-time error */
	struct stat st;
	int e = 0;
	if (stat(s->dir, &st) < 0)
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else if (access(s->dir, W_OK | X_OK) < 0)
		e = errno;
	if (e) {
		fprintf_shown(stderr, NAME ": cannot write in the folder '%s': %s\n", s->dir, strerror(e));
		return -1;
	}
	/* absolute: the graph programs run in the folder (their sidecars) */
	char *abs = realpath(s->dir, NULL);
	s->runs_db = xasprintf("%s/runs.db", abs ? abs : s->dir);
	free(abs);
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
	if (run_cand(s, s->o->program, NULL, NULL, NULL, &c) < 0)
		return 1;
	const char *outcome = c.cut ? "cut_short"
			      : c.sig.cls == MZ_PASS ? "passes"
			      : c.sig.cls == MZ_HANG ? "timeout"
						     : "other_failure";
	char *what = run_text("eager reference", &c);
	log_step(s, "classify", what, outcome, c.res.ms);
	free(what);
	if (c.cut) {
		fprintf(s->out, "failure: unknown\n");
		fprintf(stderr, NAME ": the failure was not confirmed: the eager reference was cut short\n");
		begin_session(s, "unknown", source_text);
		end_session(s, NULL, unconfirmed_result(s), NULL);
		cand_release(&c);
		return 1;
	}
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
	if (c.res.err && *c.res.err) /* the error as the user's own run shows it, with its place */
		fputs(c.res.err, stderr);
	fprintf_shown(stderr, NAME ": %s fails without compile() too (%s): not a compiler bug\n", s->o->program, t);
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
	int nrun = 0, nfail = 0, first_fail = -1;
	bool same = true;         /* the failing runs failed alike */
	for (; nrun < ORIGINAL_RUNS && budget_left(s); nrun++) {
		struct cand_run *c = &runs[nrun];
		if (run_cand(s, s->o->program, s->o->backend, NULL, s->ref_out, c) < 0)
			break;
		if (c->cut) { /* not a run made: it neither confirms nor denies */
			char *what = xasprintf("%s run %d: cut short", s->o->backend, nrun + 1);
			log_step(s, "classify", what, "cut_short", c->res.ms);
			free(what);
			cand_release(c);
			break;
		}
		bool fails = c->sig.cls != MZ_PASS && minify_sig_matches(&c->sig, s->o->match);
		nfail += fails;
		if (fails && first_fail < 0)
			first_fail = nrun;
		else if (fails && !minify_sig_equal(&c->sig, &runs[first_fail].sig))
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
		s->graph_label = runs[0].graph_label ? xstrdup(runs[0].graph_label) : NULL;
		s->fail_pid = s->graph_pid = runs[0].res.pid;
		failure = minify_class_name(s->sig.cls);
		rc = 0;
	} else if (nfail > 0 && nrun == ORIGINAL_RUNS) {
		failure = "flaky";
		fprintf(s->out, "failure: flaky\n");
		fprintf(stderr, NAME ": flaky: the program failed %d of %d runs with backend %s", nfail, nrun,
			s->o->backend);
		fprintf(stderr, same ? "\n" : ", not always the same way\n");
	} else if (nrun < ORIGINAL_RUNS) {
		failure = "unknown";
		fprintf(s->out, "failure: unknown\n");
		fprintf(stderr, NAME ": the failure was not confirmed: %d of %d runs made\n", nrun, ORIGINAL_RUNS);
	} else {
		fprintf(s->out, "failure: none\n");
		if (s->o->match && runs[0].sig.cls != MZ_PASS)
			fprintf_shown(stderr,
				      NAME ": %s fails with backend %s, but not with a message that contains '%s'\n",
				      s->o->program, s->o->backend, s->o->match);
		else
			fprintf_shown(stderr,
				      NAME ": %s does not fail with backend %s: %d runs printed what the eager run printed\n",
				      s->o->program, s->o->backend, nrun);
	}
	for (int i = 0; i < nrun; i++)
		cand_release(&runs[i]);
	begin_session(s, failure, source_text);
	if (rc)
		end_session(s, NULL, nrun < ORIGINAL_RUNS ? unconfirmed_result(s) : "not_reproduced", NULL);
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
		if (run_cand(s, s->o->program, stages[i], NULL, s->ref_out, &c) < 0)
			return NULL;
		const char *outcome = outcome_of(s, &c);
		char *what0 = xasprintf("stage %s", stages[i]);
		char *what = run_text(what0, &c);
		log_step(s, "bisect", what, outcome, c.res.ms);
		free(what0);
		free(what);
		if (c.cut) { /* the stage is not known */
			cand_release(&c);
			return NULL;
		}
		bool fails = strcmp(outcome, "fails") == 0;
		if (fails) {
			free(s->graph);
			free(s->graph_label);
			s->graph = c.graph ? xstrdup(c.graph) : NULL;
			s->graph_label = c.graph_label ? xstrdup(c.graph_label) : NULL;
			s->fail_pid = s->graph_pid = c.res.pid;
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
	if (run_cand(s, s->o->program, stage, only.buf, s->ref_out, &c) == 0) {
		const char *outcome = outcome_of(s, &c);
		char *what0 = xasprintf("compiles %s", only.buf);
		char *what = run_text(what0, &c);
		log_step(s, "locate", what, outcome, c.res.ms);
		free(what0);
		free(what);
		rc = c.cut ? -1 : strcmp(outcome, "fails") == 0;
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
	{
		s->graph = xstrdup(cs.graph[ids[lo]]);
		s->graph_label = xstrdup(cs.label[ids[lo]]);
		s->graph_pid = s->fail_pid;
	}
	free(ids);
	compiles_release(&cs);
}

/* ---- the repro ---- */

/* text to path, through a temporary file renamed: a reader never sees a
 * half-written repro. false after printing why. */
static bool write_file(const char *path, const char *text)
{
	char *tmp = xasprintf("%s.tmp", path);
	size_t n = strlen(text);
	FILE *f = fopen(tmp, "w");
	bool ok = f && fwrite(text, 1, n, f) == n;
	if (f && fclose(f) != 0)
		ok = false;
	if (ok && rename(tmp, path) < 0)
		ok = false;
	if (!ok) {
		fprintf_shown(stderr, NAME ": cannot write '%s': %s\n", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return ok;
}

/* a repro's first lines: what it is, how it fails, how to run it */
static void repro_header(struct session *s, const char *stage, const char *what, bool graph, struct strbuf *sb)
{
	char *sig = minify_sig_text(&s->sig);
	const char *bug = getenv("TJIT_INJECT_BUG");
	bool has_bug = bug && *bug;
	sb_printf(sb, "# tjit-minify repro of %s: %s\n", s->o->program, what);
	sb_printf(sb, "# fails with: %s\n", sig);
	sb_printf(sb, "# first failing stage: %s", stage ? stage : "unknown");
	if (s->graph)
		sb_printf(sb, "; graph %s", s->graph);
	sb_printf(sb, "\n# run: %s%s%stjit run --backend %s repro.tj\n", has_bug ? "TJIT_INJECT_BUG=" : "",
		  has_bug ? bug : "", has_bug ? " " : "", s->o->backend);
	if (s->sig.cls == MZ_ACCURACY && graph)
		sb_puts(sb, "# exits 1 when an output differs from the float64 eager run\n");
	else if (s->sig.cls == MZ_ACCURACY)
		sb_puts(sb, "# wrong output: compare with tjit run --eager repro.tj\n");
	if (s->kernel && graph)
		sb_printf(sb, "# failing kernel: %s\n", s->kernel);
	free(sig);
}

/* The first repro, the whole program: its text (malloc'd), or NULL after
 * printing why. */
static char *write_repro(struct session *s, const char *stage, const char *source_text)
{
	struct strbuf sb = STRBUF_INIT;
	repro_header(s, stage, "the whole program (not shrunk)", false, &sb);
	sb_puts(&sb, source_text);
	if (!write_file(s->repro, sb_str(&sb))) {
		sb_release(&sb);
		return NULL;
	}
	return sb_detach(&sb);
}

/* A candidate program under the backend, logged as a step: 1 when it
 * shows the failure, 0 when not, -1 when it could not run. For an
 * accuracy failure a graph program checks itself (minify_graph_program);
 * another program's own eager run is its reference (part of the same
 * query). */
static int try_program(struct session *s, const char *phase, const char *what, int nodes, const char *cwd,
		       const char *file, bool graph)
{
	if (!budget_left(s))
		return -1;
	struct cand_run ref = {0}, c = {0};
	double ms = 0;
	int rc = -1;
	if (s->sig.cls == MZ_ACCURACY && !graph) {
		if (run_cand(s, file, NULL, NULL, NULL, &ref) < 0)
			return -1;
		s->queries--; /* the reference belongs to the candidate's query */
		ms = ref.res.ms;
		if (ref.cut || ref.sig.cls != MZ_PASS) {
			char *t = run_text(what, &ref);
			rc = ref.cut ? -1 : 0;
			log_step_nodes(s, phase, t, nodes, ref.cut ? "cut_short" : "other_failure", ms);
			free(t);
			cand_release(&ref);
			return rc;
		}
	}
	if (run_cand_in(s, cwd, file, s->o->backend, NULL, NULL, ref.res.out, &c) == 0) {
		const char *outcome = outcome_of(s, &c);
		char *t = run_text(what, &c);
		log_step_nodes(s, phase, t, nodes, outcome, ms + c.res.ms);
		free(t);
		rc = c.cut ? -1 : strcmp(outcome, "fails") == 0;
		cand_release(&c);
	}
	cand_release(&ref);
	return rc;
}

/* The repro alone: true when it shows the failure. */
static bool verify(struct session *s)
{
	/* a graph repro runs in its folder, where its sidecar is */
	if (s->shrunk)
		return try_program(s, "verify", "repro", -1, s->dir, "repro.tj", true) == 1;
	return try_program(s, "verify", "repro", -1, NULL, s->repro, false) == 1;
}

/* ---- shrinking the graph ---- */

struct shrink {
	struct session *s;
	const struct minify_graph *g;
	const char *stage;
	char *file;               /* DIR/candidate.tj */
	bool *keep;
	int total;                /* the graph's op nodes */
	struct minify_inputs in;  /* how the parameters' values are made */
	int *slot;                /* node i's eager value is item slot[i] of VALUES (-1: none) */
	tensor **vals;            /* those values, once recorded */
	int nvals;
};

/* "3 ops: sub, relu, add" of the nodes set[0, n) */
static char *set_text(const struct minify_graph *g, const int *set, int n, int total)
{
	struct strbuf sb = STRBUF_INIT;
	sb_printf(&sb, "%d of %d ops:", n, total);
	for (int i = 0; i < n; i++)
		sb_printf(&sb, "%s %s", i ? "," : "", g->nodes[set[i]].name);
	return sb_detach(&sb);
}

/* A program's sidecar: the recorded values of the parameters of the
 * nodes sh->keep keeps, in their order, to DIR/name (*slot: node i's
 * item, -1 none), so that a candidate loads its own values, not the
 * whole graph's; none (and the file removed) unless the values are the
 * recorded ones. true when the program has one. */
static bool write_sidecar(struct shrink *sh, const char *name, int *slot)
{
	const struct minify_graph *g = sh->g;
	char *path = xasprintf("%s/%s", sh->s->dir, name);
	bool *param = xcalloc((size_t)g->n + 1, sizeof *param);
	tensor **ts = xcalloc((size_t)g->n + 1, sizeof *ts);
	int k = 0;
	if (sh->in.fill == MZ_FILL_RECORDED)
		minify_graph_params(g, sh->keep, param);
	for (int i = 0; i < g->n; i++) {
		slot[i] = -1;
		if (param[i] && sh->slot[i] >= 0 && sh->slot[i] < sh->nvals) {
			slot[i] = k;
			ts[k++] = sh->vals[sh->slot[i]];
		}
	}
	bool ok = k > 0 && tensor_io_save(path, ts, k) == 0;
	if (k > 0 && !ok) {
		char *msg = tj_error_take();
		fprintf(stderr, NAME ": %s\n", msg ? msg : "cannot write the sidecar");
		free(msg);
	}
	if (!ok) {
		unlink(path);
		for (int i = 0; i < g->n; i++)
			slot[i] = -1; /* random values then */
	}
	free(ts);
	free(param);
	free(path);
	return ok;
}

/* The program of the nodes set[0, n): a candidate (its recorded values
 * from CANDIDATE_VALUES) or the repro (from SIDECAR), its sidecar
 * written here */
static char *set_program(struct shrink *sh, const int *set, int n, int total, bool repro)
{
	memset(sh->keep, 0, (size_t)sh->g->n * sizeof *sh->keep);
	for (int i = 0; i < n; i++)
		sh->keep[set[i]] = true;
	struct strbuf hdr = STRBUF_INIT;
	char *what = set_text(sh->g, set, n, total);
	char *w = xasprintf("graph %s, %s", sh->g->label, what);
	repro_header(sh->s, sh->stage, w, true, &hdr);
	struct minify_inputs in = sh->in;
	int *slot = NULL;
	const char *sidecar = repro ? SIDECAR : CANDIDATE_VALUES;
	if (in.fill == MZ_FILL_RECORDED) {
		slot = xcalloc((size_t)sh->g->n + 1, sizeof *slot);
		if (write_sidecar(sh, sidecar, slot) && repro)
			sb_puts(&hdr, "# values: " SIDECAR " (recorded from the eager run; load() reads it "
				      "from the folder the repro runs in)\n");
		in.sidecar = sidecar;
		in.slot = slot;
	} else if (repro) {
		char *path = xasprintf("%s/" SIDECAR, sh->s->dir);
		unlink(path);
		free(path);
	}
	const struct minify_options *o = sh->s->o;
	double check = sh->s->sig.cls != MZ_ACCURACY ? -1 : o->rel >= 0 ? o->rel : MINIFY_DEFAULT_REL;
	char *text = minify_graph_program(sh->g, sh->keep, o->backend, o->seed, check, &in, sb_str(&hdr));
	free(slot);
	free(w);
	free(what);
	sb_release(&hdr);
	return text;
}

/* The program of set[0, n) with sh->in's inputs, a step labelled what
 * (NULL: "keep 2: sub, relu", the first names of a large set): 1 it
 * fails as the original, 0 not, -1 no more queries. */
static int try_program_of(struct shrink *sh, const int *set, int n, const char *what)
{
	char *text = set_program(sh, set, n, sh->total, false);
	if (!text || !write_file(sh->file, text)) {
		free(text);
		return 0;
	}
	free(text);
	struct strbuf sb = STRBUF_INIT;
	if (what) {
		sb_puts(&sb, what);
	} else {
		sb_printf(&sb, "keep %d:", n);
		for (int i = 0; i < n && i < 8; i++)
			sb_printf(&sb, "%s %s", i ? "," : "", sh->g->nodes[set[i]].name);
		if (n > 8)
			sb_puts(&sb, ", ...");
	}
	int rc = try_program(sh->s, "shrink", sb_str(&sb), n, sh->s->dir, CANDIDATE, true);
	sb_release(&sb);
	return rc;
}

/* ddmin's candidate: the nodes set[0, n) */
static int try_set(struct shrink *sh, const int *set, int n)
{
	return try_program_of(sh, set, n, NULL);
}

/* set[0, n) fails: it becomes the repro on disk, the best so far */
static void save_best(struct shrink *sh, const int *set, int n)
{
	struct session *s = sh->s;
	char *text = set_program(sh, set, n, sh->total, true);
	if (text && write_file(s->repro, text)) {
		free(s->shrunk);
		s->shrunk = set_text(sh->g, set, n, sh->total);
		free(s->repro_text);
		s->repro_text = text;
		text = NULL;
	}
	free(text);
}

/* ddmin over set[0, *n): subsets first, then complements, the
 * granularity doubled when neither fails; *n shrinks in place */
static void ddmin(struct shrink *sh, int *set, int *n)
{
	int gran = 2;
	int *tmp = xcalloc((size_t)*n + 1, sizeof *tmp);
	while (*n >= 2) {
		int m = *n, chunk = (m + gran - 1) / gran, rc = 0;
		bool reduced = false;
		for (int k = 0; k < gran && !reduced && rc >= 0; k++) {
			int lo = k * chunk, hi = lo + chunk < m ? lo + chunk : m;
			if (lo >= hi)
				continue;
			if ((rc = try_set(sh, set + lo, hi - lo)) == 1) {
				memmove(set, set + lo, (size_t)(hi - lo) * sizeof *set);
				*n = hi - lo;
				gran = 2;
				reduced = true;
				save_best(sh, set, *n);
			}
		}
		for (int k = 0; gran > 2 && k < gran && !reduced && rc >= 0; k++) {
			int lo = k * chunk, hi = lo + chunk < m ? lo + chunk : m, t = 0;
			for (int i = 0; i < m; i++)
				if (i < lo || i >= hi)
					tmp[t++] = set[i];
			if (t == m || t == 0)
				continue;
			if ((rc = try_set(sh, tmp, t)) == 1) {
				memcpy(set, tmp, (size_t)t * sizeof *set);
				*n = t;
				gran = gran - 1 > 2 ? gran - 1 : 2;
				reduced = true;
				save_best(sh, set, *n);
			}
		}
		if (rc < 0)
			break;
		if (!reduced) {
			if (gran >= m)
				break;
			gran = 2 * gran < m ? 2 * gran : m;
		}
	}
	free(tmp);
}

/* a change of sh->in: kept (and saved) when the failure holds; 1, 0, or
 * -1 when no more queries */
static int try_inputs(struct shrink *sh, const int *set, int n, struct minify_inputs in, const char *what)
{
	struct minify_inputs before = sh->in;
	sh->in = in;
	int rc = try_program_of(sh, set, n, what);
	if (rc == 1)
		save_best(sh, set, n);
	else
		sh->in = before;
	return rc;
}

/* How plain a way to make the inputs is: zeros, ones, random values,
 * then the recorded ones (the only ones that need a sidecar) */
static int fill_rank(enum minify_fill f)
{
	return f == MZ_FILL_ZEROS ? 0 : f == MZ_FILL_ONES ? 1 : f == MZ_FILL_RANDN ? 2 : 3;
}

/* The inputs of the nodes set[0, n): zeros, else ones, else random
 * values, each tried only when plainer than the values used now; 1 one
 * of them shows the failure (and stays), 0 none, -1 no more queries. */
static int try_plainer_values(struct shrink *sh, const int *set, int n)
{
	static const struct {
		enum minify_fill fill;
		const char *what;
	} fills[] = {{MZ_FILL_ZEROS, "values zeros"}, {MZ_FILL_ONES, "values ones"}, {MZ_FILL_RANDN, "values random"}};
	int rc = 0;
	for (size_t i = 0; i < sizeof fills / sizeof fills[0] && rc == 0; i++) {
		if (fill_rank(fills[i].fill) >= fill_rank(sh->in.fill))
			break;
		struct minify_inputs in = sh->in;
		in.fill = fills[i].fill;
		rc = try_inputs(sh, set, n, in, fills[i].what);
	}
	return rc;
}

/* Then the inputs of the nodes left: zeros, else ones, for random values;
 * then every size 1, else the sizes halved while the failure holds. */
static void shrink_inputs(struct shrink *sh, const int *set, int n)
{
	int rc = try_plainer_values(sh, set, n);
	/* only the recorded values show it: they stay as they are, sizes too */
	if (rc < 0 || sh->in.fill == MZ_FILL_RECORDED)
		return;
	struct minify_inputs in = sh->in;
	in.shrink = -1;
	rc = try_inputs(sh, set, n, in, "sizes 1");
	for (int i = 0; i < sh->g->n; i++)
		sh->keep[i] = true;
	int max = minify_graph_max_size(sh->g, sh->keep);
	for (int k = 1; rc == 0 && (max >> k) > 1; k++) {
		in.shrink = k;
		char *what = xasprintf("sizes / %d", 1 << k);
		rc = try_inputs(sh, set, n, in, what) == 1 ? 0 : 1; /* halve again while it fails */
		free(what);
	}
}

/* Inductor: which kernels of the failing graph (its compile in the run
 * that showed the failure) compute the nodes set[0, n) left, by the
 * nodes each fused: s->kernel, "k_... reduction (sub, relu, add)". None
 * for a compile error, whose compile logged no kernel. */
static void find_kernel(struct shrink *sh, const int *set, int n)
{
	struct session *s = sh->s;
	char *err = NULL;
	struct dbq *q = dbq_open(s->runs_db, &err);
	free(err);
	err = NULL;
	if (!q)
		return;
	struct dbq_compile c = {0};
	struct dbq_kernel *k = NULL;
	int nk = 0;
	int64_t run = dbq_find_run(q, 0, s->graph_pid, "tjit-minify child");
	if (run && dbq_compile_get(q, run, s->graph_label, &c, &err) == 0 && dbq_kernels(q, c.id, &k, &nk, &err) == 0) {
		struct strbuf sb = STRBUF_INIT;
		bool *listed = xcalloc((size_t)nk + 1, sizeof *listed);
		for (int i = 0; i < nk; i++) {
			bool has = false;
			for (int j = 0; j < n && !has; j++)
				has = util_in_names(k[i].fused_nodes, sh->g->nodes[set[j]].name);
			/* once each: a kernel the backward graph recomputes with
			 * the same loop IR is the forward's again */
			for (int j = 0; j < i && has; j++)
				has = !listed[j] || strcmp(k[j].name, k[i].name) != 0;
			listed[i] = has;
			if (has)
				sb_printf(&sb, "%s%s %s (%s)", sb.len ? ", " : "", k[i].name, k[i].kind, k[i].fused_nodes);
		}
		free(listed);
		if (sb.len)
			s->kernel = sb_detach(&sb);
		sb_release(&sb);
	}
	free(err);
	dbq_kernels_free(k, nk);
	if (c.label)
		dbq_compile_release(&c);
	dbq_close(q);
}

/* The original graph and the nodes set[0, n) kept, into the user's log
 * (tjit-dot minify draws them) */
static void log_graphs(struct shrink *sh, const int *set, int n)
{
	struct session *s = sh->s;
	memset(sh->keep, 0, (size_t)sh->g->n * sizeof *sh->keep);
	for (int i = 0; i < n; i++)
		sh->keep[set[i]] = true;
	char *sig = minify_sig_text(&s->sig), *err = NULL;
	if (minify_graph_log(s->db, s->runs_db, s->graph_pid, sh->g, sh->keep, s->o->backend, sig, &err) < 0) {
		fprintf(stderr, NAME ": the graphs not logged: %s\n", err);
		free(err);
	}
	free(sig);
}

/* a record run, logged as a step: "inputs of graph 1/0: pass" */
static void log_record(struct session *s, const char *what, const struct cand_run *c, bool ok)
{
	char *t = run_text(what, c);
	log_step(s, "record", t,
		 c->cut ? "cut_short" : ok ? "passes" : c->sig.cls == MZ_HANG ? "timeout" : "other_failure", c->res.ms);
	free(t);
}

/* The recorded values (doc/minify.md, "Recording"): the original run
 * with every graph on eager (its compile ids are the failing stage's)
 * saves the inputs of the failing graph's first call (TJIT_RECORD); the
 * graph program run eagerly on them saves every node's value. Then the
 * candidates read a dropped node's value from there (sh->in); when
 * anything is missing they get random values, as without recording. */
static void record_values(struct shrink *sh)
{
	struct session *s = sh->s;
	struct minify_graph *g = (struct minify_graph *)sh->g;
	char *inputs = xasprintf("%s/" INPUTS, s->dir), *values = xasprintf("%s/" VALUES, s->dir);
	char *prog = xasprintf("%s/" VALUES_PROG, s->dir), *spec = xasprintf("%s:%s", g->label, inputs);
	char *what = xasprintf("inputs of graph %s", g->label);
	unlink(inputs);
	unlink(values);
	tensor **ts = NULL;
	int nts = 0, ninputs = 0;
	struct cand_run c;
	const char *backend = sh->stage ? sh->stage : s->o->backend;
	if (!budget_left(s) || run_cand_in(s, NULL, s->o->program, backend, "-", spec, s->ref_out, &c) < 0)
		goto cleanup;
	for (int i = 0; i < g->n; i++)
		ninputs += g->nodes[i].kind == MZN_INPUT;
	bool ok = !c.cut && tensor_io_load(inputs, &ts, &nts) == 0 && nts == ninputs;
	tj_error_clear();
	log_record(s, what, &c, ok);
	cand_release(&c);
	if (!ok)
		goto cleanup;
	minify_graph_bind_sizes(g, ts, nts);
	char *text = minify_graph_values_program(g, INPUTS, VALUES, s->o->seed, sh->slot);
	if (!text || !write_file(prog, text) || !budget_left(s)) {
		free(text);
		goto cleanup;
	}
	free(text);
	if (run_cand_in(s, s->dir, VALUES_PROG, NULL, NULL, NULL, NULL, &c) < 0)
		goto cleanup;
	int want = 0;
	for (int i = 0; i < g->n; i++)
		want = sh->slot[i] >= want ? sh->slot[i] + 1 : want;
	ok = !c.cut && c.sig.cls == MZ_PASS && tensor_io_load(values, &sh->vals, &sh->nvals) == 0 &&
	     sh->nvals == want;
	tj_error_clear();
	log_record(s, "eager values", &c, ok);
	cand_release(&c);
	if (ok)
		sh->in = (struct minify_inputs){0, MZ_FILL_RECORDED, NULL, NULL}; /* set_program's sidecars */
cleanup:
	for (int i = 0; i < nts; i++)
		tensor_decref(ts[i]);
	free(ts);
	unlink(inputs);
	unlink(prog);
	free(inputs);
	free(values);
	free(prog);
	free(spec);
	free(what);
}

/* Shrinks the failing graph by delta debugging over its op nodes (doc/
 * minify.md): the graph alone first, then ddmin; the smallest program
 * that still fails becomes the repro. */
static void shrink(struct session *s, const char *stage)
{
	if (!s->graph_label || !budget_left(s))
		return;
	struct minify_graph g;
	char *err = NULL;
	if (minify_graph_load(s->runs_db, s->graph_pid, s->graph_label, &g, &err) < 0) {
		fprintf(stderr, NAME ": not shrunk: %s\n", err);
		free(err);
		return;
	}
	struct shrink sh = {s, &g, stage, xasprintf("%s/" CANDIDATE, s->dir), xcalloc((size_t)g.n + 1, 1), 0,
			    {0, MZ_FILL_RANDN, NULL, NULL}, xcalloc((size_t)g.n + 1, sizeof(int)), NULL, 0};
	int *set = xcalloc((size_t)g.n + 1, sizeof *set);
	int n = 0;
	for (int i = 0; i < g.n; i++) {
		sh.total += g.nodes[i].kind == MZN_OP;
		if (g.nodes[i].kind == MZN_OP && g.nodes[i].emit)
			set[n++] = i;
	}
	if (n > 0)
		record_values(&sh);
	int rc = n > 0 ? try_set(&sh, set, n) : 0;
	/* The recorded inputs are those of the graph's first call; a later
	 * call (a cache hit) may be the one whose data shows the failure:
	 * then plainer values may show it where the recorded ones do not. */
	if (rc == 0 && n > 0)
		rc = try_plainer_values(&sh, set, n);
	if (rc == 1) {
		save_best(&sh, set, n);
		ddmin(&sh, set, &n);
		if (budget_left(s))
			shrink_inputs(&sh, set, n);
		log_graphs(&sh, set, n);
		if (stage && strcmp(stage, "inductor") == 0) {
			find_kernel(&sh, set, n);
			if (s->kernel)
				save_best(&sh, set, n); /* the repro's header names it */
		}
	} else if (n > 0 && !s->stopped) {
		fprintf(stderr, NAME ": not shrunk: graph %s alone does not fail\n", g.label);
	}
	remove_work_files(s);
	for (int i = 0; i < sh.nvals; i++)
		tensor_decref(sh.vals[i]);
	free(sh.vals);
	free(sh.slot);
	free(sh.file);
	free(sh.keep);
	free(set);
	minify_graph_release(&g);
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
		fprintf_shown(s->out, "graph: %s\n", s->graph);
	if (s->kernel)
		fprintf(s->out, "kernel: %s\n", s->kernel);
	if (s->shrunk)
		fprintf(s->out, "shrunk: %s\n", s->shrunk);
	free(sig);
}

/* ---- the session ---- */

static struct db_writer *open_log(const struct minify_options *o, const char *source_text)
{
	char *err = NULL;
	struct db_writer *w = db_open_writer(db_default_path(o->db), &err);
	if (!w) {
		fprintf_shown(stderr, NAME ": database: %s (minifying without a log)\n", err ? err : "cannot open");
		free(err);
		w = db_null_writer();
	}
	char config[160];
	snprintf(config, sizeof config, "tol=%g max_queries=%ld max_seconds=%g seed=%llu",
		 o->rel >= 0 ? o->rel : MINIFY_DEFAULT_REL, o->max_queries, o->max_seconds, (unsigned long long)o->seed);
	db_begin_run(w, &(struct db_run){NAME, o->command, o->program, source_text, o->backend, config, 0});
	return w;
}

/* After the classification: bisect, locate, write the whole program as
 * the first repro, shrink, check the repro. */
static int minify_failure(struct session *s, const char *source_text)
{
	const char *stage = bisect(s);
	locate(s, stage);
	s->repro_text = write_repro(s, stage, source_text);
	if (!s->repro_text) {
		report_failure(s, stage);
		end_session(s, stage, "error", NULL);
		return 1;
	}
	shrink(s, stage);
	report_failure(s, stage);
	bool ok = verify(s);
	if (s->stop_why)
		fprintf(s->out, "stopped: %s\n", s->stop_why);
	fprintf(s->out, "runs: %ld\n", s->queries);
	fprintf_shown(s->out, "repro: %s\n", s->repro);
	s->runs_reported = true;
	if (!ok)
		fprintf_shown(stderr, NAME ": %s: %s\n", s->repro,
			      s->interrupted ? "not checked: interrupted"
			      : s->stopped   ? "not checked: the limits ran out"
					     : "does not fail alone");
	/* stopped: classified, but the repro on disk (the best so far) is
	 * not checked */
	const char *result = ok ? (s->shrunk ? "minified" : "classified")
			     : s->interrupted ? "interrupted"
			     : s->stopped     ? "stopped"
					      : "not_reproduced";
	end_session(s, stage, result, s->repro_text);
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
	free(s->graph_label);
	free(s->shrunk);
	free(s->kernel);
	free(s->repro_text);
	free(s->stop_why);
	minify_sig_release(&s->sig);
}

int minify_main(const struct minify_options *o, FILE *out)
{
	struct session s = {.o = o, .out = out, .t0 = util_now_ms(), .nodes_left = -1};
	s.lim.timeout_s = o->timeout_s > 0 ? o->timeout_s : REFERENCE_TIMEOUT_S;
	s.lim.memory_bytes = o->memory_bytes;
	struct source *src = NULL;
	int status = 0;
	struct code *code = run_load(NAME, o->program, &src, &status);
	if (!code && status == 2)
		return 2;
	minify_catch_signals(true);
	s.db = open_log(o, src ? src->text : NULL);
	fprintf_shown(out, "program: %s\n", o->program);
	fprintf(out, "backend: %s\n", o->backend);
	if (!code) {
		fprintf(out, "failure: not_compiler_bug\n");
		fprintf_shown(stderr, NAME ": %s has a syntax error: not a compiler bug\n", o->program);
		begin_session(&s, "syntax_error", NULL);
		end_session(&s, NULL, "not_compiler_bug", NULL);
		status = 1;
		goto cleanup;
	}
	val_decref(val_obj(VAL_CODE, code));
	if (prepare_dir(&s) < 0) {
		begin_session(&s, "unknown", src->text);
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
		begin_session(&s, "unknown", src->text);
		end_session(&s, NULL, "error", NULL);
	}
	/* as a shell expects of a program a signal stopped: 128 + N */
	if (s.interrupted)
		status = 128 + s.interrupted;
cleanup:
	remove_work_files(&s);
	if (!s.runs_reported) {
		if (s.stop_why)
			fprintf(out, "stopped: %s\n", s.stop_why);
		fprintf(out, "runs: %ld\n", s.queries);
	}
	fflush(out);
	db_end_run(s.db, status);
	db_close(s.db);
	session_release(&s);
	source_free(src);
	minify_catch_signals(false);
	return status;
}
