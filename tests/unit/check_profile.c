/* check_profile.c - tjit-profile's analysis and printing (tools/lib/profile.c)
 * and the JSON writer (tools/lib/json.c): guard texts split into subject and
 * value, program names of guard sources, JSON escaping and layout, the
 * sections of a report built from a database written through the writer
 * (groups, values, suggestions, rankings, eager frames), 80 columns with
 * long names, and the diff of two runs. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "json.h"
#include "profile.h"
#include "query.h"

/* a fresh temporary directory per test */
#define DB_TEST_NAME "check_profile"
#include "db_test_util.h"

/* ---- guard texts ---- */

static void ck_split(const char *text, const char *subject, const char *expected)
{
	char *s = NULL, *e = NULL;
	profile_guard_split(text, &s, &e);
	ck_assert_str_eq(s, subject);
	if (expected)
		ck_assert_str_eq(e, expected);
	else
		ck_assert_ptr_null(e);
	free(s);
	free(e);
}

START_TEST(test_guard_split)
{
	ck_split("L['x'].shape[0] == 2", "L['x'].shape[0]", "2");
	ck_split("L['x'].shape == (2, 3)", "L['x'].shape", "(2, 3)");
	ck_split("L['n'] == 4", "L['n']", "4");
	ck_split("L['s'] == 'a == b'", "L['s']", "'a == b'");
	ck_split("type(L['n']) is int", "type(L['n'])", NULL);
	ck_split("L['x'] is None", "L['x']", NULL);
	ck_split("L['x'].shape[0] >= 2", "L['x'].shape[0]", NULL);
	ck_split("len(L['xs']) == 3", "len(L['xs'])", "3");
	ck_split("backend == 'eager'", "backend", "'eager'");
	ck_split("G['helper'] is <function helper at p.tj:3>", "G['helper']", NULL);
	ck_split("strange", "strange", NULL);
}
END_TEST

static void ck_name(const char *source, const char *name)
{
	char *n = profile_source_name(source);
	if (name)
		ck_assert_str_eq(n, name);
	else
		ck_assert_ptr_null(n);
	free(n);
}

START_TEST(test_source_name)
{
	ck_name("L['x']", "x");
	ck_name("G['w']", "w");
	ck_name("L['xs'][1]", "xs[1]");
	ck_name("G['w'].grad", "w.grad");
	ck_name("L['___stack0']", NULL);
	ck_name("L['unterminated", NULL);
	ck_name("", NULL);
}
END_TEST

/* ---- JSON ---- */

static char *escaped(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	json_escape(&sb, s);
	return sb_detach(&sb);
}

START_TEST(test_json_escape)
{
	struct {
		const char *in, *out;
	} cases[] = {
		{"plain", "\"plain\""},
		{"a\"b\\c", "\"a\\\"b\\\\c\""},
		{"\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\""},
		{"\x01\x1f", "\"\\u0001\\u001f\""},
		{"\x7f", "\"\x7f\""},
		{"é ✓ \xf0\x9f\x98\x80", "\"é ✓ \xf0\x9f\x98\x80\""},
		{"bad \xff byte", "\"bad \\ufffd byte\""},
		{"cut \xe2\x9c", "\"cut \\ufffd\\ufffd\""},
		{"overlong \xc0\xaf", "\"overlong \\ufffd\\ufffd\""},
		{"surrogate \xed\xa0\x80", "\"surrogate \\ufffd\\ufffd\\ufffd\""},
		{"too big \xf4\x90\x80\x80", "\"too big \\ufffd\\ufffd\\ufffd\\ufffd\""},
		{"</script>", "\"</script>\""},
		{"", "\"\""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = escaped(cases[i].in);
		ck_assert_str_eq(got, cases[i].out);
		free(got);
	}
}
END_TEST

START_TEST(test_json_layout)
{
	struct strbuf sb = STRBUF_INIT;
	struct json j;
	json_init(&j, &sb);
	json_object_begin(&j);
	json_kstring(&j, "a", "x");
	json_key(&j, "empty");
	json_array_begin(&j);
	json_array_end(&j);
	json_key(&j, "obj");
	json_object_begin(&j);
	json_object_end(&j);
	json_key(&j, "list");
	json_array_begin(&j);
	json_int(&j, -3);
	json_double(&j, 0.1);
	json_double(&j, NAN);
	json_fixed(&j, 2.5, 3);
	json_bool(&j, false);
	json_string(&j, NULL);
	json_object_begin(&j);
	json_kint(&j, "k", 1);
	json_object_end(&j);
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
	ck_assert_str_eq(sb.buf, "{\n"
				 "  \"a\": \"x\",\n"
				 "  \"empty\": [],\n"
				 "  \"obj\": {},\n"
				 "  \"list\": [\n"
				 "    -3,\n"
				 "    0.1,\n"
				 "    null,\n"
				 "    2.500,\n"
				 "    false,\n"
				 "    null,\n"
				 "    {\n"
				 "      \"k\": 1\n"
				 "    }\n"
				 "  ]\n"
				 "}\n");
	sb_release(&sb);
}
END_TEST

/* ---- reports from a database ---- */

static const char prog_text[] = "def f(x, n):\n"
				"    y = x * n\n"
				"    print(y)\n"
				"    return y\n"
				"def g(x):\n"
				"    return x.relu()\n";

static struct db_writer *must_open(void)
{
	char *err = NULL;
	struct db_writer *w = db_open_writer(dbpath, &err);
	ck_assert_msg(w != NULL, "%s", err ? err : "?");
	return w;
}

static void begin(struct db_writer *w, const char *program, const char *config)
{
	struct db_run run = {"tjit-profile run", "tjit-profile run prog.tj", program, prog_text, NULL, config, 0};
	db_begin_run(w, &run);
}

/* compile n of frame fr, its guards on guard (with value values[n]),
 * failures for each older entry */
static void compile(struct db_writer *w, int64_t fr, int findex, int n, const char *guard_fmt, const int *values,
		    const struct db_break *brk, int64_t hits)
{
	char label[32], text[128], fl[32][32], ft[32][128], fv[32][32];
	snprintf(label, sizeof label, "%d/%d", findex, n);
	snprintf(text, sizeof text, guard_fmt, values[n]);
	struct db_guard guards[] = {{"backend", "backend == 'eager'", NULL, 0, 0}, {"equals", text, "prog.tj", 2, 9}};
	struct db_guard_failure failures[32];
	int nf = 0;
	for (int k = n - 1; k >= 0 && nf < 32; k--, nf++) {
		snprintf(fl[nf], sizeof fl[nf], "%d/%d", findex, k);
		snprintf(ft[nf], sizeof ft[nf], guard_fmt, values[k]);
		snprintf(fv[nf], sizeof fv[nf], "%d", values[n]);
		failures[nf] = (struct db_guard_failure){fl[nf], ft[nf], fv[nf]};
	}
	struct db_compile c = {
		.frame_id = fr, .compile_id = label, .compile_index = n, .reason = n ? "recompile" : "first",
		.backend = "eager", .total_ms = 1.0, .trace_ms = 0.5, .outcome = brk ? "graph_break" : "ok",
		.op_count = 1, .nguards = 2, .guards = guards, .nfailures = nf, .failures = failures,
		.nbreaks = brk ? 1 : 0, .breaks = brk,
	};
	int64_t bid = 0;
	db_log_compile(w, &c, brk ? &bid : NULL);
	if (brk)
		db_break_hits(w, bid, hits);
}

static const int ints[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const int sizes[] = {2, 3, 4, 5};

/* run 1: f recompiles 9 times on n (10 entries), with a print break;
 * g recompiles 3 times on a size. run 2: f once, g 3 times and a new
 * break in g. Run 1's config is of a row logged before no_kernel_cache
 * was recorded; run 2's of today's. */
static void two_runs(void)
{
	struct db_writer *w = must_open();
	struct db_break print = {"TJB001", "side_effect", "call to print (side effect)", "prog.tj", 3, 5, 6,
				 "prog.tj:3 in f"};
	struct db_break ext = {"TJB003", "opaque", "call to ext_sort (extension function)", "prog.tj", 6, 12, 2,
			       "prog.tj:6 in g"};
	begin(w, "prog.tj", "fullgraph=0 cache_size_limit=unlimited eager=0");
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0}, g = {1, "g", "prog.tj", 5, 0, 0};
	int64_t ff = db_log_frame(w, &f), gf = db_log_frame(w, &g);
	for (int n = 0; n < 10; n++)
		compile(w, ff, 0, n, "L['n'] == %d", ints, &print, 1);
	for (int n = 0; n < 4; n++)
		compile(w, gf, 1, n, "L['x'].shape[0] == %d", sizes, NULL, 0);
	db_frame_counts(w, ff, &(struct db_frame_counts){10, 0, 0, 0, 0, NULL});
	db_frame_counts(w, gf, &(struct db_frame_counts){4, 0, 0, 0, 0, NULL});
	db_end_run(w, 0);

	begin(w, "prog.tj", "fullgraph=0 cache_size_limit=8 eager=0 no_kernel_cache=1");
	ff = db_log_frame(w, &f);
	gf = db_log_frame(w, &g);
	compile(w, ff, 0, 0, "L['n'] == %d", ints, &print, 3);
	for (int n = 0; n < 4; n++)
		compile(w, gf, 1, n, "L['x'].shape[0] == %d", sizes, n == 0 ? &ext : NULL, 4);
	db_frame_counts(w, ff, &(struct db_frame_counts){3, 2, 0, 0, 0, NULL});
	db_frame_counts(w, gf, &(struct db_frame_counts){4, 0, 0, 0, 0, NULL});
	db_end_run(w, 0);
	db_close(w);
}

static struct dbq *must_query(void)
{
	char *err = NULL;
	struct dbq *q = dbq_open(dbpath, &err);
	ck_assert_msg(q != NULL, "%s", err ? err : "?");
	return q;
}

static void must_load(struct dbq *q, int64_t id, struct profile *p)
{
	char *err = NULL;
	ck_assert_msg(profile_load(q, id, p, &err) == 0, "%s", err ? err : "?");
}

START_TEST(test_report_sections)
{
	two_runs();
	struct dbq *q = must_query();
	struct profile p;
	must_load(q, 1, &p);
	ck_assert_int_eq(p.cache_limit, -1);
	ck_assert_int_eq(p.compiles, 14);
	ck_assert_int_eq(p.recompiles, 12);
	ck_assert_int_eq(p.graphs, 14);
	ck_assert_int_eq(p.breaks, 10);
	ck_assert_int_eq(p.limit_needed, 10);
	ck_assert(!p.limit_hit);
	ck_assert_int_eq(p.nbreaks, 1);
	ck_assert_int_eq(p.brk[0].hits, 10);
	ck_assert_str_eq(p.brk[0].at.source, "print(y)");
	ck_assert_str_eq(p.brk[0].at.function, "f");
	ck_assert_str_eq(p.brk[0].hint, "move the print out of the compiled function, or print a value that the "
					"function returns");
	/* recompiles ranked: f (9) before g (3) */
	ck_assert_int_eq(p.nranked, 2);
	const struct profile_function *f = &p.functions[p.ranked[0]];
	ck_assert_str_eq(f->function, "f");
	ck_assert_int_eq(f->recompiles, 9);
	ck_assert_int_eq(f->max_entries, 10);
	ck_assert_int_eq(f->nguards, 1);
	ck_assert_str_eq(f->guards[0].subject, "L['n']");
	ck_assert_int_eq(f->guards[0].recompiles, 9);
	ck_assert_int_eq(f->guards[0].failures, 45);
	ck_assert_int_eq(f->guards[0].nvalues, 10);
	ck_assert_str_eq(f->guards[0].values[0], "0");
	ck_assert_str_eq(f->guards[0].values[9], "9");
	ck_assert(f->guards[0].has_place);
	ck_assert_int_eq(f->guards[0].place.line, 2);
	ck_assert_str_eq(f->guards[0].place.source, "y = x * n");
	/* suggestions: the int, the size, the cache limit */
	ck_assert_int_eq(p.nsuggestions, 3);
	ck_assert_str_eq(p.suggestions[0].kind, "int_values");
	ck_assert_str_eq(p.suggestions[1].kind, "mark_dynamic");
	ck_assert_str_eq(p.suggestions[1].text, "g: `L['x'].shape[0]` took 4 values: mark_dynamic(x, 0) or dynamic=True");
	ck_assert_str_eq(p.suggestions[2].kind, "cache_limit");
	ck_assert_int_eq(p.suggestions[2].count, 10);

	/* the text: sections in order, 80 columns */
	struct strbuf sb = STRBUF_INIT;
	profile_print(&p, &sb, false);
	const char *order[] = {"\nGraph breaks: ", "\nRecompiles: ", "\nSuggestions\n", "\nFrames that ran eagerly: ",
			       "\nCompile time: ", "\nTotals\n"};
	const char *at = sb.buf;
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		const char *next = strstr(at, order[i]);
		ck_assert_msg(next != NULL, "no %s after %s", order[i], at);
		at = next + 1;
	}
	ck_assert_ptr_null(strchr(sb.buf, '\033'));
	sb_release(&sb);
	profile_print(&p, &sb, true);
	ck_assert_ptr_nonnull(strstr(sb.buf, "\033[1mTotals\033[0m"));
	sb_release(&sb);
	profile_release(&p);
	dbq_close(q);
}
END_TEST

static int max_columns(const char *s)
{
	int worst = 0, col = 0;
	for (; *s; s++) {
		if (*s == '\n') {
			worst = col > worst ? col : worst;
			col = 0;
		} else if (((unsigned char)*s & 0xc0) != 0x80) {
			col++;
		}
	}
	return col > worst ? col : worst;
}

/* long names, paths, messages and values still fit 80 columns */
/* inductor's kernels: counted from the kernels rows, on their own line of
 * the compile time and in the JSON; no line for a run without kernels */
START_TEST(test_kernels)
{
	struct db_writer *w = must_open();
	begin(w, "prog.tj", "fullgraph=0 cache_size_limit=8 eager=0");
	struct db_frame fr = {0, "f", "prog.tj", 1, 0, 0};
	int64_t ff = db_log_frame(w, &fr);
	struct db_node nodes[] = {
		{"x", "input", NULL, "L['x']", "float32", "[2]", NULL, 0, 0, NULL},
		{"sin", "op", "sin", "x", "float32", "[2]", "prog.tj", 2, 9, NULL},
		{"output", "output", NULL, "sin", NULL, NULL, NULL, 0, 0, NULL},
	};
	struct db_kernel ks[] = {
		{"k_1", "pointwise", "h1", "sin", "loop", "ir", 0, 1.0},
		{"k_2", "pointwise", "h2", "sin", "loop", NULL, 1, 0.1},
		{"k_3", "pointwise", "h3", "sin", "loop", NULL, 1, 0.1},
	};
	struct db_graph g = {"aot_forward", "f", 1, "graph", 3, nodes, 3, ks};
	struct db_compile c = {.frame_id = ff, .compile_id = "0/0", .reason = "first", .backend = "inductor",
			       .total_ms = 1.0, .outcome = "ok", .op_count = 1, .ngraphs = 1, .graphs = &g};
	db_log_compile(w, &c, NULL);
	db_end_run(w, 0);
	db_close(w);
	two_runs(); /* runs 2 and 3: no kernels */

	struct dbq *q = must_query();
	struct profile p;
	must_load(q, 1, &p);
	ck_assert_int_eq(p.kernels, 3);
	ck_assert_int_eq(p.kernels_cached, 2);
	struct strbuf sb = STRBUF_INIT;
	profile_print(&p, &sb, false);
	ck_assert_msg(strstr(sb.buf, "\n  kernels: 1 compiled, 2 from the cache\n") != NULL, "%s", sb.buf);
	sb_release(&sb);
	profile_json(&p, &sb);
	ck_assert_msg(strstr(sb.buf, "\"kernels_compiled\": 1") != NULL, "%s", sb.buf);
	ck_assert_msg(strstr(sb.buf, "\"kernels_cached\": 2") != NULL, "%s", sb.buf);
	sb_release(&sb);
	struct profile p2;
	must_load(q, 2, &p2);
	ck_assert_int_eq(p2.kernels, 0);
	profile_print(&p2, &sb, false);
	ck_assert_ptr_null(strstr(sb.buf, "kernels:"));
	sb_release(&sb);
	profile_release(&p2);
	profile_release(&p);
	dbq_close(q);
}
END_TEST

START_TEST(test_80_columns)
{
	struct db_writer *w = must_open();
	char longfile[200], longfn[120], msg[300], guard[200];
	memset(longfile, 'p', 150);
	strcpy(longfile + 150, ".tj");
	memset(longfn, 'f', 100);
	longfn[100] = 0;
	snprintf(msg, sizeof msg, "unsupported: %s", "a very long message that keeps going and going, far past "
						     "the edge of any terminal that anyone uses, with_a_word_much_"
						     "longer_than_eighty_columns_that_has_to_be_cut_somewhere_in_the_middle");
	struct db_run run = {"tjit-profile run", msg, longfile, prog_text, NULL, msg, 0};
	db_begin_run(w, &run);
	struct db_frame f = {0, longfn, longfile, 1, 0, 0};
	int64_t ff = db_log_frame(w, &f);
	struct db_break b = {"TJB012", "unsupported", msg, longfile, 3, 5, 6, "x.tj:3 in f"};
	snprintf(guard, sizeof guard, "L['%s'].shape[0] == %%d", longfn);
	for (int n = 0; n < 17; n++)
		compile(w, ff, 0, n, guard, ints, &b, 2);
	db_end_run(w, 0);
	db_close(w);
	struct dbq *q = must_query();
	struct profile p;
	must_load(q, 1, &p);
	struct strbuf sb = STRBUF_INIT;
	profile_print(&p, &sb, false);
	ck_assert_msg(max_columns(sb.buf) <= 80, "wider than 80 columns:\n%s", sb.buf);
	sb_release(&sb);
	profile_json(&p, &sb);
	ck_assert_ptr_nonnull(strstr(sb.buf, "\"value_count\": 17"));
	sb_release(&sb);
	profile_release(&p);
	dbq_close(q);
}
END_TEST

START_TEST(test_diff)
{
	two_runs();
	struct dbq *q = must_query();
	struct profile a, b;
	must_load(q, 1, &a);
	must_load(q, 2, &b);
	ck_assert_int_eq(a.cache_limit, -1); /* an old row's config */
	ck_assert_int_eq(b.cache_limit, 8);
	struct strbuf sb = STRBUF_INIT;
	/* 2 against 1: ext_sort is a new break, g's 3 recompiles were there */
	ck_assert(profile_diff_print(&a, &b, &sb, false));
	ck_assert_ptr_nonnull(strstr(sb.buf, "Graph breaks: 1 added, 0 gone, 1 in both\n"));
	ck_assert_ptr_nonnull(strstr(sb.buf, "New guard failures: none\n"));
	ck_assert_ptr_nonnull(strstr(sb.buf, "Run 2 has graph breaks or recompiles that run 1 had not\n"));
	ck_assert_msg(max_columns(sb.buf) <= 80, "%s", sb.buf);
	sb_release(&sb);
	/* 1 against 2: f recompiles 9 times more, the break is gone */
	ck_assert(profile_diff_print(&b, &a, &sb, false));
	ck_assert_ptr_nonnull(strstr(sb.buf, "Graph breaks: 0 added, 1 gone, 1 in both\n"));
	ck_assert_ptr_nonnull(strstr(sb.buf, "New guard failures: 1\n  + f: L['n'] failed 9 times"));
	sb_release(&sb);
	/* a run against itself: nothing new */
	ck_assert(!profile_diff_json(&a, &a, &sb));
	ck_assert_ptr_nonnull(strstr(sb.buf, "\"new_breaks_or_recompiles\": false"));
	sb_release(&sb);
	ck_assert(profile_diff_json(&a, &b, &sb));
	ck_assert_ptr_nonnull(strstr(sb.buf, "\"breaks_in_both\": 1"));
	sb_release(&sb);
	profile_release(&a);
	profile_release(&b);
	dbq_close(q);
}
END_TEST

static Suite *profile_suite(void)
{
	Suite *s = suite_create("profile");
	TCase *parts = tcase_create("parts");
	tcase_add_test(parts, test_guard_split);
	tcase_add_test(parts, test_source_name);
	tcase_add_test(parts, test_json_escape);
	tcase_add_test(parts, test_json_layout);
	suite_add_tcase(s, parts);
	TCase *tc = tcase_create("reports");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_report_sections);
	tcase_add_test(tc, test_80_columns);
	tcase_add_test(tc, test_kernels);
	tcase_add_test(tc, test_diff);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(profile_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
