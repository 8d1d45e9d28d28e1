/* minify_run.c - one candidate run in a child process (minify.h,
 * doc/minify.md "Candidates and how they run"): a crash, an abort, an
 * out-of-memory or a hang of the candidate costs one query, never the
 * minifier; a minifier told to stop (SIGINT, SIGTERM) kills the candidate
 * it waits for. */
#define _GNU_SOURCE
#include "minify.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "run.h"
#include "strbuf.h"
#include "util.h"

/* what a child may write to each stream, and what the parent reads back */
#define OUTPUT_CAP (64L << 20)
#define READ_CAP (4L << 20)

/* ---- a request to stop: SIGINT, SIGTERM, SIGHUP ---- */

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NSTOP ((int)(sizeof stop_signals / sizeof *stop_signals))
static volatile sig_atomic_t stop_signal;
static struct sigaction old_actions[NSTOP];
static bool caught[NSTOP];

/* async-signal-safe: a note, read by the wait loop and the session */
static void on_stop(int sig) { stop_signal = sig; }

void minify_catch_signals(bool on)
{
	for (int i = 0; i < NSTOP; i++) {
		if (!on) {
			if (caught[i])
				sigaction(stop_signals[i], &old_actions[i], NULL);
			caught[i] = false;
			continue;
		}
		struct sigaction old;
		if (caught[i] || sigaction(stop_signals[i], NULL, &old) < 0 ||
		    (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN))
			continue;
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_stop;
		sigemptyset(&sa.sa_mask);
		/* (the wait loop polls: no call need fail with EINTR) */
		sa.sa_flags = SA_RESTART;
		caught[i] = sigaction(stop_signals[i], &sa, &old_actions[i]) == 0;
	}
	if (on)
		stop_signal = 0;
}

int minify_stop_signal(void) { return stop_signal; }

/* ---- the child ---- */

static void set_limit(int resource, rlim_t v)
{
	struct rlimit rl = {v, v};
	setrlimit(resource, &rl);
}

/* In the child: the streams, the limits, the program; never returns. */
static void child(const struct minify_cand *c, const struct minify_limits *lim, int out_fd, int err_fd, pid_t parent)
{
	/* a group of its own, so that one kill ends it and whatever it
	 * started; the signals that stop the minifier end it as any program */
	setpgid(0, 0);
	for (int i = 0; i < NSTOP; i++)
		if (caught[i])
			sigaction(stop_signals[i], &old_actions[i], NULL);
#ifdef __linux__
	/* a minifier killed outright (SIGKILL) takes its candidate with it */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
#else
	(void)parent;
#endif
	int in_fd = open("/dev/null", O_RDONLY);
	if (in_fd >= 0)
		dup2(in_fd, STDIN_FILENO);
	if (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0)
		_exit(127);
	set_limit(RLIMIT_CORE, 0);
	set_limit(RLIMIT_FSIZE, (rlim_t)OUTPUT_CAP);
	if (lim->memory_bytes > 0)
		set_limit(RLIMIT_AS, (rlim_t)lim->memory_bytes);
	/* the SIGALRM of a hang that outlives the parent's SIGKILL */
	if (lim->timeout_s > 0)
		alarm((unsigned)lim->timeout_s + 2);
	if (c->compile_only)
		setenv("TJIT_COMPILE_ONLY", c->compile_only, 1);
	else
		unsetenv("TJIT_COMPILE_ONLY");
	if (c->record)
		setenv("TJIT_RECORD", c->record, 1);
	else
		unsetenv("TJIT_RECORD");
	if (c->cwd && chdir(c->cwd) < 0)
		_exit(127);
	char *argv[] = {(char *)"tjit-minify", (char *)c->file, NULL};
	struct run_options ro = {
		.name = "tjit-minify",
		.cmd = "run",
		.tool = "tjit-minify child",
		.argc = 1,
		.argv = argv + 1,
		.file = c->file,
		.db = c->db,
		.no_db = c->db == NULL,
		.backend = c->backend,
		.logs = "",
		.eager = c->backend == NULL,
	};
	int status = run_program(&ro, NULL);
	fflush(stdout);
	fflush(stderr);
	_exit(status);
}

/* the whole of f from its start, at most READ_CAP bytes (malloc'd) */
static char *slurp(FILE *f)
{
	struct strbuf sb = STRBUF_INIT;
	rewind(f);
	char buf[8192];
	size_t n;
	while (sb.len < (size_t)READ_CAP && (n = fread(buf, 1, sizeof buf, f)) > 0)
		sb_add(&sb, buf, n);
	return sb_detach(&sb);
}

static void nap_ms(double ms)
{
	struct timespec ts = {0, (long)(ms * 1e6)};
	nanosleep(&ts, NULL);
}

/* SIGKILL to the child's process group (and to it, should it not lead
 * one yet), then its status */
static void kill_child(pid_t pid, int *st)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, st, 0) < 0 && errno == EINTR)
		;
}

/* Waits for pid, killing it at the time limit or when the minifier is
 * asked to stop. 0, or -1 (errno). */
static int wait_child(pid_t pid, const struct minify_limits *lim, double t0, struct minify_result *r)
{
	int st = 0;
	double nap = 0.5;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
		if (stop_signal) {
			kill_child(pid, &st);
			r->interrupted = true;
			break;
		}
		if (lim->timeout_s > 0 && util_now_ms() - t0 > lim->timeout_s * 1e3) {
			kill_child(pid, &st);
			r->timed_out = true;
			break;
		}
		nap_ms(nap);
		if (nap < 10)
			nap *= 2;
	}
	if (WIFSIGNALED(st))
		r->signal = WTERMSIG(st);
	else if (WIFEXITED(st))
		r->status = WEXITSTATUS(st);
	return 0;
}

int minify_run(const struct minify_cand *c, const struct minify_limits *lim, struct minify_result *r, char **err)
{
	memset(r, 0, sizeof *r);
	*err = NULL;
	FILE *fo = tmpfile(), *fe = tmpfile();
	int rc = -1;
	if (!fo || !fe) {
		*err = xasprintf("cannot make a temporary file: %s", strerror(errno));
		goto cleanup;
	}
	fflush(stdout);
	fflush(stderr);
	double t0 = util_now_ms();
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		*err = xasprintf("cannot start a child process: %s", strerror(errno));
		goto cleanup;
	}
	if (pid == 0)
		child(c, lim, fileno(fo), fileno(fe), parent);
	/* (the child does the same: whichever runs first, a kill of the
	 * group reaches it) */
	setpgid(pid, pid);
	r->pid = (long)pid;
	if (wait_child(pid, lim, t0, r) < 0) {
		*err = xasprintf("cannot wait for the child process: %s", strerror(errno));
		goto cleanup;
	}
	r->ms = util_now_ms() - t0;
	r->out = slurp(fo);
	r->err = slurp(fe);
	rc = 0;
cleanup:
	if (fo)
		fclose(fo);
	if (fe)
		fclose(fe);
	return rc;
}

void minify_result_release(struct minify_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof *r);
}
