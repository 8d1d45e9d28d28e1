/* json.h - a small JSON writer into a strbuf, for the tools' --json.
 *
 * Calls nest like the document: json_object_begin, json_key + a value,
 * ..., json_object_end. Commas, indentation (two spaces a level, one
 * member or item a line) and string escaping are the writer's job. Strings
 * are UTF-8: '"', '\\' and control characters are escaped, and a byte that
 * is not part of valid UTF-8 becomes U+FFFD, so the output is always valid
 * JSON (RFC 8259). Non-finite numbers are written as null.
 */
#ifndef TJ_JSON_H
#define TJ_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include "strbuf.h"

#define JSON_MAX_DEPTH 32

struct json {
	struct strbuf *out;
	int depth;
	bool first[JSON_MAX_DEPTH + 1];  /* no member or item yet at this level */
	bool after_key;                  /* a value completes the member */
};

void json_init(struct json *j, struct strbuf *out);
/* Ends the document with a newline. */
void json_finish(struct json *j);

void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
void json_key(struct json *j, const char *key);

void json_string(struct json *j, const char *s);   /* NULL: null */
void json_int(struct json *j, int64_t v);
void json_double(struct json *j, double v);        /* up to 17 significant digits */
void json_fixed(struct json *j, double v, int decimals); /* "%.*f", trailing zeros kept */
void json_bool(struct json *j, bool v);
void json_null(struct json *j);

/* key + value in one call */
void json_kstring(struct json *j, const char *key, const char *s);
void json_kint(struct json *j, const char *key, int64_t v);
void json_kfixed(struct json *j, const char *key, double v, int decimals);
void json_kbool(struct json *j, const char *key, bool v);

/* s as a JSON string literal, quotes included */
void json_escape(struct strbuf *out, const char *s);

#endif
