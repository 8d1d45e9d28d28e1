/* tjfuzz.c - the fuzz smoke test: "nothing that a program does may crash
 * tjit" (LANGUAGE.md §6), checked on thousands of broken programs.
 *
 * It reads every .tj file under tests/e2e and examples (the corpus), makes
 * COUNT mutants of them (byte flips, inserted tabs, quotes, brackets and
 * invalid UTF-8, token splices, deleted, duplicated and swapped lines,
 * truncations, deep nesting, crossovers between files), and runs each as
 * `tjit run MUTANT.tj` in a child process, a few at a time. It fails when a
 * child
 *   - dies by a signal (a crash, or SIGKILL from the kernel),
 *   - runs longer than the timeout, unless the mutant has a `while` loop or
 *     its front end (`tjit dis`) finishes in time: then it is a loop or a
 *     recursion of the program's own made long by the mutation (range(30)
 *     turned into range(3000000000)), and it is only counted,
 *   - prints a sanitizer report on stderr,
 *   - exits with a status other than 0 or 1, or with 1 and no message
 *     (unless it calls exit(), which ends it with any status, silently).
 * Every failing mutant is kept in fuzz-failures/ (in the current folder) so
 * that it can be run again by hand. Mutant i depends only on the seed and i,
 * so a run is reproducible whatever the number of jobs.
 *
 * Usage: tjfuzz [-n COUNT] [-s SEED] [-j JOBS] [-t SECONDS] [-m MEGABYTES]
 *               [--print I] [TJIT [SRCDIR]]
 * The defaults come from the environment (which `make check` sets): TJIT,
 * TJ_SRCDIR, TJ_FUZZ_COUNT (2000), TJ_FUZZ_SEED (1), TJ_FUZZ_JOBS (the number
 * of CPUs),
 * TJ_FUZZ_TIMEOUT (5), TJ_FUZZ_MEM_MB (4096 without AddressSanitizer, which
 * cannot run under an address-space limit: 0 = none). --print I writes
 * mutant I to stdout and runs nothing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define MAX_JOBS 64
#define MAX_SHOWN_FAILURES 20
#define STDERR_SCAN_BYTES (256 * 1024)

/* ---- small helpers (a tool may die on allocation failure) ---- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("tjfuzz: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(99); /* a hard error for the automake test driver */
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_reserve(struct buf *b, size_t extra)
{
	if (b->len + extra + 1 > b->cap) {
		b->cap = (b->len + extra + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
}

/* inserts n bytes of s at pos */
static void buf_insert(struct buf *b, size_t pos, const char *s, size_t n)
{
	buf_reserve(b, n);
	memmove(b->p + pos + n, b->p + pos, b->len - pos);
	memcpy(b->p + pos, s, n);
	b->len += n;
}

static void buf_erase(struct buf *b, size_t pos, size_t n)
{
	memmove(b->p + pos, b->p + pos + n, b->len - pos - n);
	b->len -= n;
}

static bool read_file(const char *path, struct buf *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	out->len = 0;
	buf_reserve(out, 0); /* never NULL, even for an empty file */
	char chunk[8192];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		buf_reserve(out, n);
		memcpy(out->p + out->len, chunk, n);
		out->len += n;
	}
	fclose(f);
	return true;
}

static void write_file(const char *path, const char *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0)
		die("cannot write %s: %s", path, strerror(errno));
}

/* ---- the random generator: splitmix64 (fuzz_util.h), one stream per mutant ---- */

static size_t rnd(uint64_t *s, size_t n) { return n ? (size_t)(rng_next(s) % n) : 0; }

/* ---- the corpus and its tokens ---- */

struct corpus {
	struct buf *files;
	char **paths;
	size_t n, cap;
	char **tokens;       /* distinct token-ish pieces of the corpus */
	size_t ntokens, tokens_cap;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* collects the .tj files under dir (recursively) into paths */
static void find_tj(const char *dir, char ***paths, size_t *n, size_t *cap)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *path;
		if (asprintf(&path, "%s/%s", dir, e->d_name) < 0)
			die("out of memory");
		struct stat st;
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			find_tj(path, paths, n, cap);
			free(path);
			continue;
		}
		size_t len = strlen(path);
		if (len < 3 || strcmp(path + len - 3, ".tj") != 0) {
			free(path);
			continue;
		}
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			*paths = xrealloc(*paths, *cap * sizeof **paths);
		}
		(*paths)[(*n)++] = path;
	}
	closedir(d);
}

static void add_token(struct corpus *c, const char *s, size_t n)
{
	if (n == 0 || n > 40)
		return;
	for (size_t i = 0; i < c->ntokens; i++) /* small corpus: a linear scan is fine */
		if (strlen(c->tokens[i]) == n && memcmp(c->tokens[i], s, n) == 0)
			return;
	if (c->ntokens == c->tokens_cap) {
		c->tokens_cap = c->tokens_cap ? c->tokens_cap * 2 : 256;
		c->tokens = xrealloc(c->tokens, c->tokens_cap * sizeof *c->tokens);
	}
	char *t = xrealloc(NULL, n + 1);
	memcpy(t, s, n);
	t[n] = '\0';
	c->tokens[c->ntokens++] = t;
}

static bool is_word(int ch) { return ch == '_' || ch == '.' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* splits a program into names, numbers, string literals and operators */
static void tokenize(struct corpus *c, const struct buf *b)
{
	size_t i = 0;
	while (i < b->len) {
		char ch = b->p[i];
		size_t j = i + 1;
		if (ch == ' ' || ch == '\n' || ch == '#') {
			if (ch == '#')
				while (j < b->len && b->p[j] != '\n')
					j++;
			i = j;
			continue;
		}
		if (is_word((unsigned char)ch)) {
			while (j < b->len && is_word((unsigned char)b->p[j]))
				j++;
		} else if (ch == '"' || ch == '\'') {
			while (j < b->len && b->p[j] != ch && b->p[j] != '\n')
				j++;
			if (j < b->len && b->p[j] == ch)
				j++;
		} else if (j < b->len && strchr("=<>!*/", b->p[j]) && strchr("=<>!*/+-", ch)) {
			j++;
		}
		add_token(c, b->p + i, j - i);
		i = j;
	}
}

static void corpus_load(struct corpus *c, const char *srcdir)
{
	size_t cap = 0;
	const char *dirs[] = {"tests/e2e", "examples"};
	for (size_t k = 0; k < sizeof dirs / sizeof *dirs; k++) {
		char *dir;
		if (asprintf(&dir, "%s/%s", srcdir, dirs[k]) < 0)
			die("out of memory");
		find_tj(dir, &c->paths, &c->n, &cap);
		free(dir);
	}
	if (c->n == 0)
		die("no .tj files under %s/tests/e2e or %s/examples", srcdir, srcdir);
	qsort(c->paths, c->n, sizeof *c->paths, cmp_str); /* readdir order varies */
	c->files = xrealloc(NULL, c->n * sizeof *c->files);
	for (size_t i = 0; i < c->n; i++) {
		c->files[i] = (struct buf){NULL, 0, 0};
		if (!read_file(c->paths[i], &c->files[i]))
			die("cannot read %s: %s", c->paths[i], strerror(errno));
		tokenize(c, &c->files[i]);
	}
}

static void corpus_free(struct corpus *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->files[i].p);
		free(c->paths[i]);
	}
	for (size_t i = 0; i < c->ntokens; i++)
		free(c->tokens[i]);
	free(c->files);
	free(c->paths);
	free(c->tokens);
}

/* ---- mutations ---- */

/* what breaks lexers and parsers most often */
static const char *const snippets[] = {
	"\t", "\"", "'", "(", ")", "[", "]", ":", ",", "\n", "    ", "\\", "#", "\r", "\r\n",
	"\xff", "\xc3", "\xe2\x82", "\xf0\x9f\x98", "\x80", "\0", "\"\"\"", "'''", "\\x", "\\u12",
	"0", "-1", "1e308", "1e999", "0.0", "-0.0", "9223372036854775807", "9223372036854775808",
	"-9223372036854775808", "0x", "1.e", "1_0", "00", "1.5.5",
	"None", "True", "False", "[]", "()", "(1,)", "[[]]", "x", "_", "**", "//", "@", "%", "-",
	"not ", " is not ", " if ", " else ", " and ", " or ", " in ",
	"def f(a, b=1.0):\n", "def (", "return", "break", "continue", "pass", "global x", "global ",
	"@compile\n", "@dec(1)\n", "if x:\n", "while ", "for i in range(3):\n", "else:\n", "elif ",
	"lambda", "class", "import", "yield", "*", "**kw", "=", "==", "+=", "/=", ".", "..", "...",
	".grad", ".shape", ".T", ".backward()", ".item()", "[::-1]", "[:, 0]", "[..., None]",
	"tensor([])", "zeros(0)", "zeros(2, 0, 3)", "randn(3, requires_grad=True)", "dtype=int64",
	"dtype=bool", "ext_sort(", "ext_cumsum(", "time()", "manual_seed(", "reshape(-1, -1)",
	"x = x\n", "f(f)", "print(", "len(", "range(", "int(", "float('nan')", "str(", "abs(",
};

/* a place to cut: anywhere, or the start of a line */
static size_t random_pos(uint64_t *s, const struct buf *b) { return rnd(s, b->len + 1); }

static bool line_bounds(const struct buf *b, size_t n_line, size_t *start, size_t *end)
{
	size_t line = 0, i = 0;
	while (i < b->len && line < n_line) {
		if (b->p[i] == '\n')
			line++;
		i++;
	}
	if (i >= b->len)
		return false;
	*start = i;
	while (i < b->len && b->p[i] != '\n')
		i++;
	*end = i < b->len ? i + 1 : i; /* with its newline */
	return true;
}

static size_t count_lines(const struct buf *b)
{
	size_t n = 1;
	for (size_t i = 0; i < b->len; i++)
		n += b->p[i] == '\n';
	return n;
}

static void mutate_once(uint64_t *s, struct buf *b, const struct corpus *c)
{
	size_t pos = random_pos(s, b);
	switch (rnd(s, 12)) {
	case 0: /* flip a bit */
		if (b->len)
			b->p[rnd(s, b->len)] ^= (char)(1u << rnd(s, 8));
		break;
	case 1: /* replace a byte with a troublesome one */
		if (b->len) {
			static const char bytes[] = "\t\"'()[]:\n \xff#\\,=@-09e.\r";
			b->p[rnd(s, b->len)] = bytes[rnd(s, sizeof bytes - 1)];
		}
		break;
	case 2: /* insert a snippet */ {
		const char *sn = snippets[rnd(s, sizeof snippets / sizeof *snippets)];
		buf_insert(b, pos, sn, sn[0] ? strlen(sn) : 1);
		break;
	}
	case 3: /* insert a token of the corpus */ {
		const char *t = c->tokens[rnd(s, c->ntokens)];
		buf_insert(b, pos, t, strlen(t));
		break;
	}
	case 4: /* replace a span with a token of the corpus */ {
		const char *t = c->tokens[rnd(s, c->ntokens)];
		size_t n = rnd(s, 8);
		if (pos + n > b->len)
			n = b->len - pos;
		buf_erase(b, pos, n);
		buf_insert(b, pos, t, strlen(t));
		break;
	}
	case 5: /* delete a line */
	case 6: /* duplicate a line */ {
		size_t start, end;
		if (line_bounds(b, rnd(s, count_lines(b)), &start, &end)) {
			if (rnd(s, 2) == 0 && end > start) {
				buf_erase(b, start, end - start);
			} else {
				char *copy = xrealloc(NULL, end - start);
				memcpy(copy, b->p + start, end - start);
				buf_insert(b, start, copy, end - start);
				free(copy);
			}
		}
		break;
	}
	case 7: /* move a line somewhere else */ {
		size_t start, end, nl = count_lines(b);
		if (line_bounds(b, rnd(s, nl), &start, &end) && end > start) {
			size_t n = end - start;
			char *copy = xrealloc(NULL, n);
			memcpy(copy, b->p + start, n);
			buf_erase(b, start, n);
			size_t to_start, to_end;
			if (!line_bounds(b, rnd(s, nl), &to_start, &to_end))
				to_start = b->len;
			buf_insert(b, to_start, copy, n);
			free(copy);
		}
		break;
	}
	case 8: /* truncate */
		b->len = pos;
		break;
	case 9: /* delete a span */ {
		size_t n = 1 + rnd(s, 16);
		if (pos + n > b->len)
			n = b->len - pos;
		buf_erase(b, pos, n);
		break;
	}
	case 10: /* deep nesting or a long run: recursion in the front end */ {
		static const char *const runs[] = {"(", "[", "-", "not ", "x.", "x[", "    ", "f(", "((1,),"};
		const char *r = runs[rnd(s, sizeof runs / sizeof *runs)];
		size_t times = 1 + rnd(s, rnd(s, 2) ? 50 : 5000);
		size_t n = strlen(r);
		buf_reserve(b, n * times);
		for (size_t k = 0; k < times; k++)
			buf_insert(b, pos, r, n);
		break;
	}
	case 11: /* crossover: some lines of another program */ {
		const struct buf *o = &c->files[rnd(s, c->n)];
		size_t start, end, e2, unused;
		size_t first = rnd(s, count_lines(o));
		if (line_bounds(o, first, &start, &end)) {
			if (line_bounds(o, first + rnd(s, 8), &unused, &e2) && e2 > end)
				end = e2;
			buf_insert(b, pos, o->p + start, end - start);
		}
		break;
	}
	}
}

/* mutant i: a corpus file with 1 to 4 mutations */
static void make_mutant(const struct corpus *c, uint64_t seed, size_t i, struct buf *out)
{
	uint64_t s = rng_stream(seed, i);
	const struct buf *src = &c->files[rnd(&s, c->n)];
	out->len = 0;
	buf_reserve(out, src->len);
	if (src->len)
		memcpy(out->p, src->p, src->len);
	out->len = src->len;
	size_t n = 1 + rnd(&s, 4);
	for (size_t k = 0; k < n; k++)
		mutate_once(&s, out, c);
}

/* ---- running the children ---- */

struct options {
	const char *tjit, *srcdir;
	long count, jobs, timeout, mem_mb, print;
	uint64_t seed;
};

struct slot {
	pid_t pid;             /* 0 = free */
	size_t index;          /* mutant number */
	struct buf program;
	char program_path[64], stderr_path[64];
};

struct tally {
	long ran, by_status[2], crashes, hangs, reports, bad_status, loops_timed_out, failures;
};

static pid_t spawn(const struct options *o, const char *workdir, struct slot *sl)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid > 0)
		return pid;
	/* the child: a clean stdin, stdout to nowhere, stderr to a file */
	if (chdir(workdir) < 0)
		_exit(126);
	int in = open("/dev/null", O_RDONLY), out = open("/dev/null", O_WRONLY);
	int err = open(sl->stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || err < 0)
		_exit(126);
	dup2(in, 0);
	dup2(out, 1);
	dup2(err, 2);
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none);
	if (o->mem_mb > 0) {
		struct rlimit mem = {(rlim_t)o->mem_mb << 20, (rlim_t)o->mem_mb << 20};
		setrlimit(RLIMIT_AS, &mem);
	}
	setenv("OPENBLAS_NUM_THREADS", "1", 0); /* no thread pool per child */
	signal(SIGALRM, SIG_DFL);
	alarm((unsigned)o->timeout); /* survives exec: the timeout kills it with SIGALRM */
	execl(o->tjit, "tjit", "run", sl->program_path, (char *)NULL);
	_exit(127);
}

static const char *const sanitizer_marks[] = {
	"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
	"AddressSanitizer:DEADLYSIGNAL", "WARNING: MemorySanitizer", "ThreadSanitizer",
};

/* Whether `tjit dis` (lexer, parser and bytecode compiler, nothing run)
 * finishes on the mutant within the timeout. A mutant that times out while
 * its front end finishes is a long computation of the program's own (a
 * range made huge, a recursion made exponential), not a hang of tjit. */
static bool front_end_finishes(const struct options *o, const char *workdir, const struct slot *sl)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		if (chdir(workdir) < 0)
			_exit(126);
		int null = open("/dev/null", O_RDWR);
		if (null < 0)
			_exit(126);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		signal(SIGALRM, SIG_DFL);
		alarm((unsigned)o->timeout);
		execl(o->tjit, "tjit", "dis", sl->program_path, (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	return WIFEXITED(status) && WEXITSTATUS(status) <= 1;
}

/* Classifies a finished child; returns a description of the failure, or NULL.
 * long_running: the child timed out but its front end finishes in time. */
static const char *judge(int status, const struct buf *program, const struct buf *err,
			 bool long_running, struct tally *t, char *why, size_t why_len)
{
	for (size_t k = 0; k < sizeof sanitizer_marks / sizeof *sanitizer_marks; k++)
		if (memmem(err->p, err->len, sanitizer_marks[k], strlen(sanitizer_marks[k]))) {
			t->reports++;
			snprintf(why, why_len, "sanitizer report (%s)", sanitizer_marks[k]);
			return why;
		}
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		if (sig == SIGALRM) {
			if (long_running || memmem(program->p, program->len, "while", 5)) {
				t->loops_timed_out++;
				return NULL;
			}
			t->hangs++;
			snprintf(why, why_len, "timed out, and so does compiling it (tjit dis)");
			return why;
		}
		t->crashes++;
		snprintf(why, why_len, "killed by signal %d (%s)", sig, strsignal(sig));
		return why;
	}
	int code = WEXITSTATUS(status);
	if (code == 127 || code == 126)
		die("cannot run tjit (exit status %d)", code);
	/* exit(n) ends a program with any status, silently */
	if (memmem(program->p, program->len, "exit(", 5))
		return NULL;
	if (code == 0 || code == 1) {
		t->by_status[code]++;
		if (code == 1 && err->len == 0) {
			t->bad_status++;
			snprintf(why, why_len, "exit status 1 without a message on stderr");
			return why;
		}
		return NULL;
	}
	t->bad_status++;
	snprintf(why, why_len, "exit status %d (tjit run exits with 0 or 1)", code);
	return why;
}

static void report_failure(struct slot *sl, const char *why, const struct buf *err)
{
	char path[128];
	mkdir("fuzz-failures", 0755);
	snprintf(path, sizeof path, "fuzz-failures/mutant-%zu.tj", sl->index);
	write_file(path, sl->program.p, sl->program.len);
	printf("FAIL: mutant %zu: %s\n      kept as %s; its stderr begins:\n", sl->index, why, path);
	size_t shown = 0, lines = 0;
	while (shown < err->len && lines < 12) {
		lines += err->p[shown] == '\n';
		shown++;
	}
	printf("%.*s\n", (int)shown, err->p);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path);
}


static void usage(void)
{
	fputs("usage: tjfuzz [-n COUNT] [-s SEED] [-j JOBS] [-t SECONDS] [-m MEGABYTES]\n"
	      "              [--print I] [TJIT [SRCDIR]]\n",
	      stderr);
	exit(2);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	o->tjit = getenv("TJIT") ? getenv("TJIT") : "./tjit";
	o->srcdir = getenv("TJ_SRCDIR") ? getenv("TJ_SRCDIR") : ".";
	o->count = env_long("TJ_FUZZ_COUNT", 2000);
	o->seed = (uint64_t)env_long("TJ_FUZZ_SEED", 1);
	o->jobs = env_long("TJ_FUZZ_JOBS", sysconf(_SC_NPROCESSORS_ONLN));
	o->timeout = env_long("TJ_FUZZ_TIMEOUT", 5);
	o->mem_mb = env_long("TJ_FUZZ_MEM_MB", UNDER_ASAN ? 0 : 4096);
	o->print = -1;
	int positional = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_value = i + 1 < argc;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			usage();
		else if (!strcmp(a, "-n") && has_value)
			o->count = strtol(argv[++i], NULL, 10);
		else if (!strcmp(a, "-s") && has_value)
			o->seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(a, "-j") && has_value)
			o->jobs = strtol(argv[++i], NULL, 10);
		else if (!strcmp(a, "-t") && has_value)
			o->timeout = strtol(argv[++i], NULL, 10);
		else if (!strcmp(a, "-m") && has_value)
			o->mem_mb = strtol(argv[++i], NULL, 10);
		else if (!strcmp(a, "--print") && has_value)
			o->print = strtol(argv[++i], NULL, 10);
		else if (a[0] == '-')
			usage();
		else if (positional == 0 && ++positional)
			o->tjit = a;
		else if (positional == 1 && ++positional)
			o->srcdir = a;
		else
			usage();
	}
	if (o->jobs < 1)
		o->jobs = 1;
	if (o->jobs > MAX_JOBS)
		o->jobs = MAX_JOBS;
	if (o->timeout < 1)
		o->timeout = 1;
}

int main(int argc, char **argv)
{
	struct options o;
	parse_options(argc, argv, &o);

	struct corpus c = {0};
	corpus_load(&c, o.srcdir);

	if (o.print >= 0) {
		struct buf m = {0};
		make_mutant(&c, o.seed, (size_t)o.print, &m);
		fwrite(m.p, 1, m.len, stdout);
		free(m.p);
		corpus_free(&c);
		return 0;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* the log shows progress even if we die */

	char *tjit = realpath(o.tjit, NULL);
	if (!tjit || access(tjit, X_OK) != 0)
		die("no tjit binary at %s (set TJIT or pass its path)", o.tjit);
	o.tjit = tjit;

	char workdir[] = "/tmp/tjfuzz.XXXXXX";
	if (!mkdtemp(workdir))
		die("mkdtemp: %s", strerror(errno));

	struct slot slots[MAX_JOBS] = {{0}};
	for (long j = 0; j < o.jobs; j++) {
		snprintf(slots[j].program_path, sizeof slots[j].program_path, "mutant%ld.tj", j);
		snprintf(slots[j].stderr_path, sizeof slots[j].stderr_path, "stderr%ld.txt", j);
	}

	struct tally t = {0};
	struct buf err = {0};
	buf_reserve(&err, 0);
	time_t started = time(NULL);
	size_t next = 0;
	long running = 0;
	while (next < (size_t)o.count || running > 0) {
		/* fill the free slots */
		for (long j = 0; j < o.jobs && next < (size_t)o.count; j++) {
			struct slot *sl = &slots[j];
			if (sl->pid)
				continue;
			sl->index = next++;
			make_mutant(&c, o.seed, sl->index, &sl->program);
			char path[PATH_MAX];
			snprintf(path, sizeof path, "%s/%s", workdir, sl->program_path);
			write_file(path, sl->program.p, sl->program.len);
			sl->pid = spawn(&o, workdir, sl);
			running++;
		}
		/* wait for one */
		int status;
		pid_t pid = waitpid(-1, &status, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			die("waitpid: %s", strerror(errno));
		}
		struct slot *sl = NULL;
		for (long j = 0; j < o.jobs; j++)
			if (slots[j].pid == pid)
				sl = &slots[j];
		if (!sl)
			continue;
		sl->pid = 0;
		running--;
		t.ran++;

		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", workdir, sl->stderr_path);
		err.len = 0;
		read_file(path, &err);
		if (err.len > STDERR_SCAN_BYTES)
			err.len = STDERR_SCAN_BYTES;
		char why[160];
		bool long_running = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM &&
				    front_end_finishes(&o, workdir, sl);
		const char *failure = judge(status, &sl->program, &err, long_running, &t, why, sizeof why);
		if (failure && t.failures++ < MAX_SHOWN_FAILURES)
			report_failure(sl, failure, &err);
	}

	/* the scratch folder: the mutants, their stderr, whatever tjit wrote */
	if (nftw(workdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "tjfuzz: could not remove %s\n", workdir);

	printf("tjfuzz: %ld mutants of %zu programs (seed %llu, %ld jobs, %lds timeout) in %lds\n",
	       t.ran, c.n, (unsigned long long)o.seed, o.jobs, o.timeout,
	       (long)(time(NULL) - started));
	printf("tjfuzz: exit status 0: %ld, 1: %ld; timed out running a loop or recursion (allowed): %ld\n",
	       t.by_status[0], t.by_status[1], t.loops_timed_out);
	printf("tjfuzz: %ld crashes, %ld hangs, %ld sanitizer reports, %ld bad exit statuses\n",
	       t.crashes, t.hangs, t.reports, t.bad_status);
	if (t.failures > MAX_SHOWN_FAILURES)
		printf("tjfuzz: %ld more failures not shown\n", t.failures - MAX_SHOWN_FAILURES);
	if (t.ran > 0 && t.by_status[0] + t.by_status[1] == 0 && t.failures == 0)
		die("no mutant ran to an exit status: is %s a working tjit?", o.tjit);
	for (long j = 0; j < o.jobs; j++)
		free(slots[j].program.p);
	free(err.p);
	free(tjit);
	corpus_free(&c);
	return t.failures ? 1 : 0;
}
