/* ops_test_util.h - calling tensor ops from Check tests as a program would
 * (shared by check_ops.c and check_autograd.c). */
#ifndef TJ_OPS_TEST_UTIL_H
#define TJ_OPS_TEST_UTIL_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "value.h"

/* Calls op `name` like a program: n positional values, the last of them
 * named by kw (a comma-separated list of keyword names, or NULL). Returns
 * the op's result (a new reference, or val_err()). */
static inline value vcall(const char *name, const char *kw, int n, const value *args)
{
	int op = ops_find(name, OPK_FN | OPK_METH | OPK_OPER | OPK_ATTR);
	ck_assert_msg(op >= 0, "no op %s", name);
	value kwnames = val_none();
	if (kw) {
		char buf[128];
		int k = 0;
		value names[8];
		snprintf(buf, sizeof buf, "%s", kw);
		for (char *p = strtok(buf, ","); p && k < 8; p = strtok(NULL, ","))
			names[k++] = str_from_cstr(p);
		kwnames = tuple_pack(k, names);
		for (int i = 0; i < k; i++)
			val_decref(names[i]);
	}
	value r = ops_invoke(op, args, n, kwnames);
	val_decref(kwnames);
	return r;
}

#endif
