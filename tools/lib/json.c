/* json.c - a small JSON writer (json.h). */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_init(struct json *j, struct strbuf *out)
{
	memset(j, 0, sizeof *j);
	j->out = out;
	j->first[0] = true;
}

void json_finish(struct json *j)
{
	sb_putc(j->out, '\n');
}

static void indent(struct json *j)
{
	sb_putc(j->out, '\n');
	for (int i = 0; i < j->depth; i++)
		sb_puts(j->out, "  ");
}

/* before a value: the comma and line of an array item (a member's value
 * follows its key on the same line) */
static void before_value(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth > 0) {
		if (!j->first[j->depth])
			sb_putc(j->out, ',');
		indent(j);
	}
	j->first[j->depth] = false;
}

static void container_open(struct json *j, char c)
{
	before_value(j);
	sb_putc(j->out, c);
	if (j->depth < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void container_close(struct json *j, char c)
{
	bool empty = j->first[j->depth];
	if (j->depth > 0)
		j->depth--;
	if (!empty)
		indent(j);
	sb_putc(j->out, c);
}

void json_object_begin(struct json *j) { container_open(j, '{'); }
void json_object_end(struct json *j) { container_close(j, '}'); }
void json_array_begin(struct json *j) { container_open(j, '['); }
void json_array_end(struct json *j) { container_close(j, ']'); }

void json_key(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		sb_putc(j->out, ',');
	j->first[j->depth] = false;
	indent(j);
	json_escape(j->out, key ? key : "");
	sb_puts(j->out, ": ");
	j->after_key = true;
}

/* the length of the UTF-8 sequence at s (1 to 4), or 0 when it is not valid */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	int n;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	unsigned cp = c & (0x7f >> n);
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_escape(struct strbuf *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	sb_putc(out, '"');
	while (*s) {
		unsigned char c = *s;
		switch (c) {
		case '"': sb_puts(out, "\\\""); s++; continue;
		case '\\': sb_puts(out, "\\\\"); s++; continue;
		case '\n': sb_puts(out, "\\n"); s++; continue;
		case '\r': sb_puts(out, "\\r"); s++; continue;
		case '\t': sb_puts(out, "\\t"); s++; continue;
		case '\b': sb_puts(out, "\\b"); s++; continue;
		case '\f': sb_puts(out, "\\f"); s++; continue;
		default: break;
		}
		if (c < 0x20) {
			sb_printf(out, "\\u%04x", c);
			s++;
			continue;
		}
		int n = utf8_len(s);
		if (n == 0) {
			sb_puts(out, "\\ufffd");
			s++;
			continue;
		}
		sb_add(out, (const char *)s, (size_t)n);
		s += n;
	}
	sb_putc(out, '"');
}

void json_string(struct json *j, const char *s)
{
	before_value(j);
	if (s)
		json_escape(j->out, s);
	else
		sb_puts(j->out, "null");
}

void json_int(struct json *j, int64_t v)
{
	before_value(j);
	sb_printf(j->out, "%lld", (long long)v);
}

void json_double(struct json *j, double v)
{
	before_value(j);
	if (!isfinite(v)) {
		sb_puts(j->out, "null");
		return;
	}
	char buf[40];
	snprintf(buf, sizeof buf, "%.17g", v);
	/* the shortest form that reads back the same */
	for (int p = 1; p < 17; p++) {
		char b[40];
		snprintf(b, sizeof b, "%.*g", p, v);
		if (strtod(b, NULL) == v) {
			memcpy(buf, b, sizeof b);
			break;
		}
	}
	sb_puts(j->out, buf);
}

void json_fixed(struct json *j, double v, int decimals)
{
	before_value(j);
	if (!isfinite(v)) {
		sb_puts(j->out, "null");
		return;
	}
	sb_printf(j->out, "%.*f", decimals, v);
}

void json_bool(struct json *j, bool v)
{
	before_value(j);
	sb_puts(j->out, v ? "true" : "false");
}

void json_null(struct json *j)
{
	before_value(j);
	sb_puts(j->out, "null");
}

void json_kstring(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_string(j, s);
}

void json_kint(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_int(j, v);
}

void json_kfixed(struct json *j, const char *key, double v, int decimals)
{
	json_key(j, key);
	json_fixed(j, v, decimals);
}

void json_kbool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	json_bool(j, v);
}
