/* codegen_load.h - the code generator's shared object (codegen.h), opened
 * on the first call only: libLLVM costs a program that never compiles a
 * kernel nothing. Where it is looked for: doc/codegen.md. */
#ifndef TJ_CODEGEN_LOAD_H
#define TJ_CODEGEN_LOAD_H

#include "codegen.h"

/* the file's name */
#define CODEGEN_LIB_NAME "libtjcodegen.so"

/* the object's table; NULL after tj_error_set (not found, not loadable,
 * or of another ABI). Opens it once per process: later calls return the
 * same table, or set the same error again. */
const struct codegen_api *codegen_load(void);

/* the path it was loaded from, or NULL before a successful codegen_load */
const char *codegen_load_path(void);

/* 0 when a table from the object at path is one tjit can use; else -1
 * after tj_error_set naming path (what codegen_load checks) */
int codegen_check_api(const struct codegen_api *api, const char *path);

#endif
