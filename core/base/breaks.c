/* breaks.c - the table of graph-break codes, expanded from breaks.def
 * (breaks.h), and doc/graph-breaks.md generated from it. */
#include "breaks.h"

#include "strbuf.h"

static const struct break_info break_table[] = {
#define BREAK(name, num, category, message, explanation, hint) \
	{"TJB" #num, #name, #category, message, explanation, hint},
#include "breaks.def"
#undef BREAK
};
#define NBREAKS ((int)(sizeof break_table / sizeof break_table[0]))

const struct break_info *breaks_info(int code)
{
	return code >= 0 && code < NBREAKS ? &break_table[code] : NULL;
}

int breaks_count(void)
{
	return NBREAKS;
}

/* Markdown text: the placeholders <fn> must not read as HTML tags, '|'
 * would end a table cell, a newline a table row. */
static void md_text(struct strbuf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			sb_puts(out, "&lt;");
		else if (*s == '>')
			sb_puts(out, "&gt;");
		else if (*s == '|')
			sb_puts(out, "\\|");
		else if (*s == '\n')
			sb_putc(out, ' ');
		else
			sb_putc(out, *s);
	}
}

static void md_anchor(struct strbuf *out, const char *code)
{
	for (; *code; code++)
		sb_putc(out, (char)(*code >= 'A' && *code <= 'Z' ? *code - 'A' + 'a' : *code));
}

void breaks_doc(struct strbuf *out)
{
	sb_puts(out, "# Graph-break codes\n"
		     "\n"
		     "<!-- Generated from core/base/breaks.def by `tjit --list-break-codes`: do not\n"
		     "     edit; run `make update-break-doc` after changing breaks.def. -->\n"
		     "\n"
		     "Every graph break that tjit makes has a stable code. The code is in the\n"
		     "`TJIT_LOGS=graph_breaks` lines, in `explain`'s break reasons and in\n"
		     "the database (`graph_breaks.code`, also for the `Unsupported` error of\n"
		     "`fullgraph=True`), so that a break can be looked up here, counted\n"
		     "across runs (`tjit-profile`), and searched for. A break ends the graph\n"
		     "at the instruction that caused it; that instruction runs eagerly and\n"
		     "tracing resumes at the next one (doc/language.md, doc/tracer.md).\n"
		     "A message's `<fn>` or `<what>` is replaced by the culprit in the logs.\n"
		     "\n"
		     "| code | category | message |\n"
		     "|---|---|---|\n");
	for (int i = 0; i < NBREAKS; i++) {
		const struct break_info *b = &break_table[i];
		sb_printf(out, "| [%s](#", b->code);
		md_anchor(out, b->code);
		sb_printf(out, ") | `%s` | ", b->category);
		md_text(out, b->message);
		sb_puts(out, " |\n");
	}
	for (int i = 0; i < NBREAKS; i++) {
		const struct break_info *b = &break_table[i];
		sb_printf(out, "\n## %s\n\n", b->code);
		sb_printf(out, "- **name**: `%s`\n", b->name);
		sb_printf(out, "- **category**: `%s`\n", b->category);
		sb_puts(out, "- **message**: ");
		md_text(out, b->message);
		sb_puts(out, "\n\n");
		md_text(out, b->explanation);
		sb_puts(out, "\n\n**Hint:** ");
		md_text(out, b->hint);
		sb_putc(out, '\n');
	}
}
