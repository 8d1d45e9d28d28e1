/* tensor_print.c - tensors as print() shows them (LANGUAGE.md §3).
 *
 * The layout is PyTorch's _tensor_str.py with its options fixed at the
 * defaults (threshold 1000, edgeitems 3) and two decisions of ours:
 *   - every element is formatted on its own, with no padding to a common
 *     width: floats "%.4f" (nan, inf, -inf spelled so; -0.0 is "-0.0000"
 *     as printf writes it), int64 "%lld", bool True/False;
 *   - no line wrapping: PyTorch breaks a long row at linewidth 80, and
 *     moves the suffixes to a line of their own when they would pass it,
 *     but its break points depend on the padded width that we do not use;
 *     so a row is always one line and the suffixes follow the last "]".
 * What follows PyTorch exactly:
 *   - "tensor(" then the body then the suffixes then ")"; the body of a
 *     0-d tensor is the element; of a 1-D tensor "[a, b, c]";
 *   - a tensor of rank r nests: the sub-blocks of dim d (0 = outermost)
 *     are joined by "," plus (r - 1 - d) newlines plus (indent + 1) spaces,
 *     where the indent is 7 (the width of "tensor(") plus d; so rows of a
 *     matrix line up under the first one, and the blocks of a 3-D tensor
 *     have a blank line between them;
 *   - more than 1000 elements summarize: every dim longer than 6 shows its
 *     first 3 and last 3 entries around "..." (in a row the entry is " ...",
 *     which makes ",  ..., " ; between blocks "..." takes the place of a
 *     block, with the block separator on both sides);
 *   - an empty tensor prints "[]", with ", size=(0, 3)" unless it is 1-D.
 * Suffixes, in PyTorch's order: size (empty only), ", dtype=float64" (the
 * only dtype that is ever shown, even for empty tensors: LANGUAGE.md), then
 * ", requires_grad=True" for any tensor that tracks gradients.
 */
#include <math.h>

#include "tensor_impl.h"

#define PRINT_THRESHOLD 1000
#define PRINT_EDGEITEMS 3

static void format_element(const tensor *t, int64_t i, struct strbuf *out)
{
	switch (t->dt) {
	case DT_BOOL:
		sb_puts(out, ((const uint8_t *)t->data)[i] ? "True" : "False");
		break;
	case DT_INT64:
		sb_printf(out, "%lld", (long long)((const int64_t *)t->data)[i]);
		break;
	default: {
		double v = tensor_get_double(t, i);
		if (isnan(v))
			sb_puts(out, "nan");
		else if (isinf(v))
			sb_puts(out, v > 0 ? "inf" : "-inf");
		else
			sb_printf(out, "%.4f", v);
		break;
	}
	}
}

/* the block of dim d that starts at element offset base */
static void format_block(const tensor *t, int d, int64_t base, int indent, bool summarize,
			 const int64_t *strides, struct strbuf *out)
{
	int64_t n = t->shape[d];
	bool cut = summarize && n > 2 * PRINT_EDGEITEMS;
	sb_putc(out, '[');
	if (d == t->ndim - 1) {
		for (int64_t i = 0; i < n; i++) {
			if (cut && i == PRINT_EDGEITEMS) {
				sb_puts(out, ",  ...");
				i = n - PRINT_EDGEITEMS;
			}
			if (i > 0)
				sb_puts(out, ", ");
			format_element(t, base + i, out);
		}
		sb_putc(out, ']');
		return;
	}
	int newlines = t->ndim - 1 - d;
	for (int64_t i = 0; i < n; i++) {
		if (i > 0 || (cut && i == PRINT_EDGEITEMS)) {
			sb_putc(out, ',');
			for (int k = 0; k < newlines; k++)
				sb_putc(out, '\n');
			for (int k = 0; k < indent + 1; k++)
				sb_putc(out, ' ');
		}
		if (cut && i == PRINT_EDGEITEMS) {
			sb_puts(out, "...,");
			for (int k = 0; k < newlines; k++)
				sb_putc(out, '\n');
			for (int k = 0; k < indent + 1; k++)
				sb_putc(out, ' ');
			i = n - PRINT_EDGEITEMS;
		}
		format_block(t, d + 1, base + i * strides[d], indent + 1, summarize, strides, out);
	}
	sb_putc(out, ']');
}

void tensor_format(const tensor *t, struct strbuf *out)
{
	const int indent = 7; /* strlen("tensor(") */
	sb_puts(out, "tensor(");
	if (t->numel == 0) {
		sb_puts(out, "[]");
		if (t->ndim != 1) {
			sb_puts(out, ", size=");
			shape_format(t->ndim, t->shape, out);
		}
	} else if (t->ndim == 0) {
		format_element(t, 0, out);
	} else {
		int64_t strides[TENSOR_MAX_DIMS];
		shape_contig_strides(t->ndim, t->shape, strides);
		format_block(t, 0, 0, indent, t->numel > PRINT_THRESHOLD, strides, out);
	}
	if (t->dt == DT_FLOAT64)
		sb_puts(out, ", dtype=float64");
	if (t->requires_grad)
		sb_puts(out, ", requires_grad=True");
	sb_putc(out, ')');
}
