/* check_guards.c - guard sources and their texts, the guard texts of every
 * kind, the compiled check list against frames, and the failure texts with
 * the values seen. Frames here are made by hand: guards read a frame's
 * locals, operand stack and cells, and the VM's globals. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "guards.h"
#include "prelude.h"
#include "vm.h"

static struct vm *vm;
static struct code code;
static char *names[] = {"x", "n", "xs", "s"};
static value locals[4], stack[2], cells[1];
static struct frame frame;

static void setup(void)
{
	vm = prelude_vm_new();
	memset(&code, 0, sizeof code);
	code.name = "f";
	code.nlocals = 4;
	code.local_names = names;
	code.ncellvars = 1;
	memset(&frame, 0, sizeof frame);
	frame.code = &code;
	frame.locals = locals;
	frame.stack = stack;
	frame.sp = stack;
	frame.cells = cells;
	int64_t shape[2] = {2, 3};
	locals[0] = val_tensor(tensor_zeros(DT_FLOAT32, 2, shape));
	locals[1] = val_int(4);
	locals[2] = list_new(2);
	list_append(val_list(locals[2]), val_float(1.5));
	list_append(val_list(locals[2]), str_from_cstr("relu"));
	locals[3] = str_from_cstr("mean");
	cells[0] = cell_new(val_int(7));
}

static void teardown(void)
{
	for (int i = 0; i < 4; i++)
		val_decref(locals[i]);
	for (value *p = stack; p < frame.sp; p++)
		val_decref(*p);
	val_decref(cells[0]);
	vm_free(vm);
}

static int add(struct guard_set *gs, struct guard g)
{
	return guards_add(gs, &g);
}

START_TEST(test_sources)
{
	struct guard_set *gs = guards_new();
	int x = guards_source(gs, SRC_LOCAL, -1, 0, "x");
	int xs = guards_source(gs, SRC_LOCAL, -1, 2, "xs");
	int item = guards_source(gs, SRC_ITEM, xs, 1, NULL);
	int st = guards_source(gs, SRC_STACK, -1, 0, NULL);
	int g = guards_source(gs, SRC_GLOBAL, -1, -1, "scale");
	int cl = guards_source(gs, SRC_CLOSURE, g, 0, NULL);
	int c = guards_source(gs, SRC_CELL, -1, 0, "k");
	ck_assert_str_eq(guards_source_text(gs, x), "L['x']");
	ck_assert_str_eq(guards_source_text(gs, item), "L['xs'][1]");
	ck_assert_str_eq(guards_source_text(gs, st), "L['___stack0']");
	ck_assert_str_eq(guards_source_text(gs, g), "G['scale']");
	ck_assert_str_eq(guards_source_text(gs, cl), "G['scale'].__closure__[0].cell_contents");
	ck_assert_str_eq(guards_source_text(gs, c), "L['k']");
	/* the same source twice is one source */
	ck_assert_int_eq(guards_source(gs, SRC_ITEM, xs, 1, NULL), item);
	ck_assert_int_eq(guards_source(gs, SRC_GLOBAL, -1, -1, "scale"), g);
	ck_assert_int_eq(gs->nsources, 7);
	guards_free(gs);
}
END_TEST

START_TEST(test_texts_and_checks)
{
	struct guard_set *gs = guards_new();
	const struct backend *eager = backend_find("eager");
	const struct backend *other = backend_find("relu_accuracy_error_TESTING_ONLY");
	int x = guards_source(gs, SRC_LOCAL, -1, 0, "x");
	int n = guards_source(gs, SRC_LOCAL, -1, 1, "n");
	int xs = guards_source(gs, SRC_LOCAL, -1, 2, "xs");
	int item0 = guards_source(gs, SRC_ITEM, xs, 0, NULL);
	int item1 = guards_source(gs, SRC_ITEM, xs, 1, NULL);
	int s = guards_source(gs, SRC_LOCAL, -1, 3, "s");
	int c = guards_source(gs, SRC_CELL, -1, 0, "k");
	int pr = guards_source(gs, SRC_GLOBAL, -1, -1, "print");
	value pname = str_intern("print", 5);
	value print_fn = vm_lookup_name(vm, val_str(pname));
	val_decref(pname);
	val_incref(print_fn);
	const char *want[] = {
		"backend == 'eager'",
		"type(L['n']) is int",
		"L['n'] == 4",
		"len(L['xs']) == 2",
		"L['xs'][0] == 1.5",
		"L['xs'][1] == 'relu'",
		"L['s'] == 'mean'",
		"L['x'].dtype == float32",
		"L['x'].shape == (2, 3)",
		"L['x'].requires_grad == False",
		"L['k'] == 7",
		"G['print'] is <built-in function print>",
	};
	add(gs, (struct guard){.kind = GK_BACKEND, .source = -1, .expect = val_none(), .backend = eager});
	add(gs, (struct guard){.kind = GK_TYPE, .source = n, .expect = val_none(), .n = VAL_INT});
	add(gs, (struct guard){.kind = GK_EQUALS, .source = n, .expect = val_int(4)});
	add(gs, (struct guard){.kind = GK_LENGTH, .source = xs, .expect = val_none(), .n = 2});
	add(gs, (struct guard){.kind = GK_EQUALS, .source = item0, .expect = val_float(1.5)});
	add(gs, (struct guard){.kind = GK_EQUALS, .source = item1, .expect = str_from_cstr("relu")});
	add(gs, (struct guard){.kind = GK_EQUALS, .source = s, .expect = str_from_cstr("mean")});
	add(gs, (struct guard){.kind = GK_DTYPE, .source = x, .expect = val_none(), .n = DT_FLOAT32});
	add(gs, (struct guard){.kind = GK_SHAPE, .source = x, .expect = val_none(), .ndim = 2, .shape = {2, 3}});
	add(gs, (struct guard){.kind = GK_REQUIRES_GRAD, .source = x, .expect = val_none(), .n = 0});
	add(gs, (struct guard){.kind = GK_EQUALS, .source = c, .expect = val_int(7)});
	add(gs, (struct guard){.kind = GK_ID, .source = pr, .expect = print_fn});
	ck_assert_int_eq(gs->nguards, (int)(sizeof want / sizeof want[0]));
	for (int i = 0; i < gs->nguards; i++)
		ck_assert_str_eq(gs->guards[i].text, want[i]);
	guards_finish(gs);
	/* the three tensor facts are one check */
	ck_assert_int_eq(gs->nchecks, gs->nguards - 2);
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), -1);

	char *text, *seen;
	/* another backend */
	ck_assert_int_eq(guards_check(gs, vm, &frame, other), 0);
	guards_failure(gs, 0, other, &text, &seen);
	ck_assert_str_eq(text, "backend == 'eager'");
	ck_assert_str_eq(seen, "'relu_accuracy_error_TESTING_ONLY'");
	free(text);
	free(seen);

	/* another int; then a float where an int was */
	locals[1] = val_int(5);
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 2);
	guards_failure(gs, 2, eager, &text, &seen);
	ck_assert_str_eq(text, "L['n'] == 4");
	ck_assert_str_eq(seen, "5");
	free(text);
	free(seen);
	locals[1] = val_float(4.0);
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 1);
	guards_failure(gs, 1, eager, &text, &seen);
	ck_assert_str_eq(text, "type(L['n']) is int");
	ck_assert_str_eq(seen, "float");
	free(text);
	free(seen);
	locals[1] = val_int(4);

	/* a list item */
	val_list(locals[2])->items[0] = val_float(2.5);
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 4);
	guards_failure(gs, 4, eager, &text, &seen);
	ck_assert_str_eq(text, "L['xs'][0] == 1.5");
	ck_assert_str_eq(seen, "2.5");
	free(text);
	free(seen);
	val_list(locals[2])->items[0] = val_float(1.5);

	/* shapes: the first differing dimension, or the whole shape */
	value old = locals[0];
	int64_t s23[2] = {4, 3};
	locals[0] = val_tensor(tensor_zeros(DT_FLOAT32, 2, s23));
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 8);
	guards_failure(gs, 8, eager, &text, &seen);
	ck_assert_str_eq(text, "L['x'].shape[0] == 2");
	ck_assert_str_eq(seen, "4");
	free(text);
	free(seen);
	val_decref(locals[0]);
	locals[0] = val_tensor(tensor_zeros(DT_FLOAT32, 1, s23));
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 8);
	guards_failure(gs, 8, eager, &text, &seen);
	ck_assert_str_eq(text, "L['x'].shape == (2, 3)");
	ck_assert_str_eq(seen, "(4,)");
	free(text);
	free(seen);
	val_decref(locals[0]);
	int64_t s2[2] = {2, 3};
	locals[0] = val_tensor(tensor_zeros(DT_FLOAT64, 2, s2));
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 7);
	guards_failure(gs, 7, eager, &text, &seen);
	ck_assert_str_eq(text, "L['x'].dtype == float32");
	ck_assert_str_eq(seen, "float64");
	free(text);
	free(seen);
	val_decref(locals[0]);
	locals[0] = val_int(3);
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 7);
	guards_failure(gs, 7, eager, &text, &seen);
	ck_assert_str_eq(text, "type(L['x']) is Tensor");
	ck_assert_str_eq(seen, "int");
	free(text);
	free(seen);
	locals[0] = val_tensor(tensor_zeros(DT_FLOAT32, 2, s2));
	val_as_tensor(locals[0])->requires_grad = true;
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 9);
	guards_failure(gs, 9, eager, &text, &seen);
	ck_assert_str_eq(seen, "True");
	free(text);
	free(seen);
	val_decref(locals[0]);
	locals[0] = old;

	/* a cell, a shadowed builtin, a missing local */
	val_cell(cells[0])->v = val_int(8);
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 10);
	val_cell(cells[0])->v = val_int(7);
	vm_set_global(vm, "print", val_int(0));
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 11);
	guards_failure(gs, 11, eager, &text, &seen);
	ck_assert_str_eq(seen, "0");
	free(text);
	free(seen);
	value sv = locals[3];
	locals[3] = val_err();
	vm_set_global(vm, "print", print_fn);
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), 6);
	guards_failure(gs, 6, eager, &text, &seen);
	ck_assert_str_eq(seen, "<missing>");
	free(text);
	free(seen);
	locals[3] = sv;
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), -1);

	/* a stack slot */
	int st = guards_source(gs, SRC_STACK, -1, 1, NULL);
	add(gs, (struct guard){.kind = GK_TYPE, .source = st, .expect = val_none(), .n = VAL_NONE});
	ck_assert_str_eq(gs->guards[gs->nguards - 1].text, "type(L['___stack1']) is NoneType");
	guards_finish(gs);
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), gs->nguards - 1);
	*frame.sp++ = val_int(1);
	*frame.sp++ = val_none();
	ck_assert_int_eq(guards_check(gs, vm, &frame, eager), -1);
	guards_truncate(gs, 3);
	ck_assert_int_eq(gs->nguards, 3);
	guards_free(gs);
}
END_TEST

START_TEST(test_code_and_alias)
{
	struct guard_set *gs = guards_new();
	int xs = guards_source(gs, SRC_LOCAL, -1, 2, "xs");
	int st = guards_source(gs, SRC_STACK, -1, 0, NULL);
	struct code *other = calloc(1, sizeof *other);
	other->hdr.rc = 1;
	other->name = strdup("g");
	value fn = func_new(other, val_none(), val_none());
	*frame.sp++ = fn;
	val_incref(val_obj(VAL_CODE, other));
	add(gs, (struct guard){.kind = GK_CODE, .source = st, .expect = val_obj(VAL_CODE, other)});
	add(gs, (struct guard){.kind = GK_ALIAS, .source = xs, .expect = val_bool(false), .n = st});
	ck_assert_str_eq(gs->guards[0].text, "L['___stack0'].__code__ is <code g>");
	ck_assert_str_eq(gs->guards[1].text, "L['xs'] is not L['___stack0']");
	guards_finish(gs);
	ck_assert_int_eq(guards_check(gs, vm, &frame, backend_default()), -1);
	/* another function of the same code passes, another value does not */
	frame.stack[0] = func_new(other, val_none(), val_none());
	ck_assert_int_eq(guards_check(gs, vm, &frame, backend_default()), -1);
	val_decref(frame.stack[0]);
	/* the list itself on the stack: now they alias */
	frame.stack[0] = locals[2];
	val_incref(locals[2]);
	ck_assert_int_eq(guards_check(gs, vm, &frame, backend_default()), 0);
	char *text, *seen;
	guards_failure(gs, 0, backend_default(), &text, &seen);
	ck_assert_str_eq(seen, "list");
	free(text);
	free(seen);
	guards_free(gs);
	val_decref(fn);
	val_decref(val_obj(VAL_CODE, other)); /* frees it */
	/* the frame's stack keeps the list; teardown drops it */
}
END_TEST

static Suite *guards_suite(void)
{
	Suite *s = suite_create("guards");
	TCase *tc = tcase_create("guards");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sources);
	tcase_add_test(tc, test_texts_and_checks);
	tcase_add_test(tc, test_code_and_alias);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(guards_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
