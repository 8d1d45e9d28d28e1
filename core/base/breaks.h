/* breaks.h - the graph-break codes of core/base/breaks.def as a table: the
 * compile log, explain and the profiler's report read their rows; the
 * tracer expands the enum from the same file (tracer.h). Base layer: no
 * VM, so that the tools' library can link it alone. */
#ifndef TJ_BREAKS_H
#define TJ_BREAKS_H

struct strbuf;

struct break_info {
	const char *code;           /* "TJB001" */
	const char *name;           /* the enum name */
	const char *category;       /* "side_effect" */
	const char *message;        /* the generic message */
	const char *explanation;    /* what happened, in a sentence or two */
	const char *hint;           /* what to do about it */
};
/* The row of a break code; NULL when code is out of range. */
const struct break_info *breaks_info(int code);
int breaks_count(void);
/* doc/graph-breaks.md: every code with its category, message, explanation
 * and hint (`tjit --list-break-codes` prints it; a test checks the file). */
void breaks_doc(struct strbuf *out);

#endif
