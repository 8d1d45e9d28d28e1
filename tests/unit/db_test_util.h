/* db_test_util.h - the fixture shared by the suites that write a compile
 * log (check_db.c, check_query.c, check_profile.c): a fresh temporary
 * directory per test, tmpdir, with dbpath a database path inside it.
 * Define DB_TEST_NAME (the directory's prefix) before including. */
#ifndef TJ_DB_TEST_UTIL_H
#define TJ_DB_TEST_UTIL_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef DB_TEST_NAME
#error "define DB_TEST_NAME before including db_test_util.h"
#endif

static char tmpdir[256];
static char dbpath[300];

static void setup(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/" DB_TEST_NAME ".XXXXXX", base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(dbpath, sizeof dbpath, "%s/t.db", tmpdir);
}

/* removes the directory with its files and empty subdirectories */
static void teardown(void)
{
	DIR *d = opendir(tmpdir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			char p[600];
			snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
			if (rmdir(p) != 0)
				unlink(p);
		}
	}
	closedir(d);
	rmdir(tmpdir);
}

#endif
