/* explain.h - explain(f, *args) and `tjit explain FILE`.
 *
 * An explain session listens to the compile log (compile_log_listen) while
 * something runs and sums up what was compiled: graphs with their ops,
 * graph breaks with their reasons, guards and compile times. explain()
 * returns it as an ExplainOutput object that prints as LANGUAGE.md §7
 * shows; `tjit explain` keeps one summary per compiled function of the
 * program and prints them all at the end.
 *
 * The printed form (the str() of an ExplainOutput):
 *
 *   tjit produced 3 graphs with 2 graph breaks and 6 ops
 *   Break reasons:
 *     1. call to print (side effect)
 *        toy.tj:3 in toy_example
 *            print("woo")
 *     2. data-dependent branch on a tensor value
 *        toy.tj:4 in toy_example
 *            if b.sum() < 0:
 *   Break codes:
 *     1. TJB001 (side_effect): <the hint of the code>
 *     2. TJB004 (data_dependent): <the hint of the code>
 *
 * Counts are singular for 1 ("1 graph", "1 graph break", "1 op"). Break
 * reasons are deduplicated by the location of their innermost frame (the
 * first one seen is kept) and listed with every frame of their user stack,
 * outermost first; the codes follow the reasons, so that the lines above
 * stay together. Without breaks, only the first line is printed.
 */
#ifndef TJ_EXPLAIN_H
#define TJ_EXPLAIN_H

#include "value.h"

struct vm;

/* The builtin explain(f, *args, **kwargs): runs f(*args, **kwargs) under
 * the tracer with the eager backend in a cache of its own (the program's
 * caches are neither used nor changed) and returns an ExplainOutput.
 * An error raised by f is raised by explain. */
value explain_builtin(struct vm *vm, const value *args, int nargs, value kwnames);

/* `tjit explain`: one summary per compiled function, grouped by the
 * compiled function under whose call each compile happened (records'
 * owner_*), in order of their first compile. */
struct explain_program;
struct compile_log;
struct explain_program *explain_program_begin(struct compile_log *log);
/* Stops listening, prints every summary, each headed by
 * "== NAME (FILE:LINE) ==" and separated by a blank line (or "no compiled
 * function ran" when there is none), and frees p. */
void explain_program_end(struct explain_program *p, struct strbuf *out);

#endif
