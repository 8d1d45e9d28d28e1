/* builtins.c - the Python builtins of tj (print, len, range, int, ...) and
 * the list and str methods: the language's own names. On a tensor argument
 * (int(t), abs(t), max(t), ...) they call the table the tensor layer
 * installs (vm_tensor_hooks); the tensor functions themselves are its
 * builtins (ops_install). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtype.h"
#include "vm.h"

/* ---- argument helpers ---- */

static int nkw_of(value kwnames)
{
	return kwnames.tag == VAL_TUPLE ? (int)val_tuple(kwnames)->len : 0;
}

static int no_kw(const char *fname, value kwnames)
{
	if (nkw_of(kwnames)) {
		tj_error_set("%s() takes no keyword arguments", fname);
		return -1;
	}
	return 0;
}

/* Splits off keyword arguments: for each allowed name given, out[j] is set
 * (borrowed); unknown names fail as Python's builtins do. Returns the
 * number of positional arguments or -1. */
static int take_kw(const char *fname, const value *args, int nargs, value kwnames,
		   const char *const *allowed, value *out)
{
	int nkw = nkw_of(kwnames);
	int npos = nargs - nkw;
	for (int k = 0; k < nkw; k++) {
		value kn = val_tuple(kwnames)->items[k];
		int j = -1;
		for (int a = 0; allowed && allowed[a]; a++) {
			if (kn.tag == VAL_STR && str_eq_cstr(val_str(kn), allowed[a])) {
				j = a;
				break;
			}
		}
		if (j < 0) {
			tj_error_set("'%s' is an invalid keyword argument for %s()",
				     kn.tag == VAL_STR ? val_str(kn)->data : "?", fname);
			return -1;
		}
		out[j] = args[npos + k];
	}
	return npos;
}

static int want_int(value v, int64_t *out)
{
	if (v.tag == VAL_INT) {
		*out = v.i;
		return 0;
	}
	if (v.tag == VAL_BOOL) {
		*out = v.b;
		return 0;
	}
	tj_error_set("'%s' object cannot be interpreted as an integer", val_type_name(v));
	return -1;
}

static value exactly_one(const char *fname, int nargs, value kwnames)
{
	if (no_kw(fname, kwnames) < 0)
		return val_err();
	if (nargs != 1)
		return vm_raise("%s() takes exactly one argument (%d given)", fname, nargs);
	return val_none();
}

static value no_args(const char *fname, int nargs, value kwnames)
{
	if (no_kw(fname, kwnames) < 0)
		return val_err();
	if (nargs != 0)
		return vm_raise("%s() takes no arguments (%d given)", fname, nargs);
	return val_none();
}

/* the ops function of a name (sum, max, ...), found once */
static bool first_is_tensor(const value *args, int nargs, value kwnames)
{
	return nargs - nkw_of(kwnames) > 0 && args[0].tag == VAL_TENSOR;
}

/* ---- print ---- */

static struct strbuf print_buf;

static value b_print(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	static const char *const kws[] = {"sep", "end", "flush", NULL};
	value kv[3] = {val_none(), val_none(), val_bool(false)};
	int npos = take_kw("print", args, nargs, kwnames, kws, kv);
	if (npos < 0)
		return val_err();
	for (int i = 0; i < 2; i++) {
		if (kv[i].tag != VAL_NONE && kv[i].tag != VAL_STR)
			return vm_raise("%s must be None or a string, not %s", kws[i], val_type_name(kv[i]));
	}
	struct strbuf *sb = &print_buf;
	sb->len = 0;
	for (int i = 0; i < npos; i++) {
		if (i) {
			if (kv[0].tag == VAL_STR)
				sb_add(sb, val_str(kv[0])->data, val_str(kv[0])->len);
			else
				sb_putc(sb, ' ');
		}
		val_str_into(args[i], sb);
	}
	if (kv[1].tag == VAL_STR)
		sb_add(sb, val_str(kv[1])->data, val_str(kv[1])->len);
	else
		sb_putc(sb, '\n');
	if (sb->len)
		fwrite(sb->buf, 1, sb->len, stdout);
	bool flush = false;
	if (vm_truth(kv[2], &flush) < 0)
		return val_err();
	if (flush)
		fflush(stdout);
	if (sb->cap > 1 << 20)
		sb_release(sb);
	return val_none();
}

/* ---- len, repr, type, isinstance, time ---- */

static value b_len(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(exactly_one("len", nargs, kwnames)))
		return val_err();
	int64_t n = vm_len(args[0]);
	return n < 0 ? val_err() : val_int(n);
}

static value b_repr(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(exactly_one("repr", nargs, kwnames)))
		return val_err();
	struct strbuf sb = STRBUF_INIT;
	val_repr(args[0], &sb);
	value r = str_new(sb.buf ? sb.buf : "", sb.len);
	sb_release(&sb);
	return r;
}

static value b_type(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("type", kwnames) < 0)
		return val_err();
	if (nargs != 1)
		return vm_raise("type() takes 1 or 3 arguments");
	return val_type_of(args[0]);
}

static int isinstance_of(value obj, value cls, bool *out, int depth)
{
	if (cls.tag == VAL_TYPE) {
		value_tag t = (value_tag)cls.i;
		value_tag o = (value_tag)val_type_of(obj).i;
		*out = o == t || (t == VAL_INT && o == VAL_BOOL);
		return 0;
	}
	if (cls.tag == VAL_TUPLE && depth < 64) {
		struct tuple *tp = val_tuple(cls);
		for (size_t i = 0; i < tp->len; i++) {
			if (isinstance_of(obj, tp->items[i], out, depth + 1) < 0)
				return -1;
			if (*out)
				return 0;
		}
		*out = false;
		return 0;
	}
	tj_error_set("isinstance() arg 2 must be a type, a tuple of types, or a union");
	return -1;
}

static value b_isinstance(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("isinstance", kwnames) < 0)
		return val_err();
	if (nargs != 2)
		return vm_raise("isinstance expected 2 arguments, got %d", nargs);
	bool r;
	if (isinstance_of(args[0], args[1], &r, 0) < 0)
		return val_err();
	return val_bool(r);
}

static value b_time(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	(void)args;
	if (val_is_err(no_args("time", nargs, kwnames)))
		return val_err();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return val_float((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
}

/* ---- range, enumerate, zip ---- */

static value b_range(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("range", kwnames) < 0)
		return val_err();
	if (nargs < 1)
		return vm_raise("range expected at least 1 argument, got %d", nargs);
	if (nargs > 3)
		return vm_raise("range expected at most 3 arguments, got %d", nargs);
	int64_t a[3] = {0, 0, 1};
	for (int i = 0; i < nargs; i++)
		if (want_int(args[i], &a[i]) < 0)
			return val_err();
	if (nargs == 1) {
		a[1] = a[0];
		a[0] = 0;
	}
	if (a[2] == 0)
		return vm_raise("range() arg 3 must not be zero");
	return range_new(a[0], a[1], a[2]);
}

static value b_enumerate(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	static const char *const kws[] = {"iterable", "start", NULL};
	value kv[2] = {val_err(), val_int(0)};
	int npos = take_kw("enumerate", args, nargs, kwnames, kws, kv);
	if (npos < 0)
		return val_err();
	if (npos > 2)
		return vm_raise("enumerate() takes at most 2 arguments (%d given)", nargs);
	for (int i = 0; i < npos; i++)
		kv[i] = args[i];
	if (val_is_err(kv[0]))
		return vm_raise("enumerate() missing required argument 'iterable'");
	int64_t start;
	if (want_int(kv[1], &start) < 0)
		return val_err();
	value inner = vm_get_iter(kv[0]);
	if (val_is_err(inner))
		return inner;
	value it = iter_new(ITER_ENUMERATE, inner);
	val_decref(inner);
	val_iter(it)->i = start;
	return it;
}

static value b_zip(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("zip", kwnames) < 0)
		return val_err();
	value its = tuple_new((size_t)nargs);
	for (int i = 0; i < nargs; i++) {
		value it = vm_get_iter(args[i]);
		if (val_is_err(it)) {
			val_decref(its);
			return it;
		}
		val_tuple(its)->items[i] = it;
	}
	value r = iter_new(ITER_ZIP, its);
	val_decref(its);
	return r;
}

/* ---- conversions: int float bool str list tuple ---- */

static value int_from_double(double d)
{
	if (isnan(d))
		return vm_raise("cannot convert float NaN to integer");
	if (isinf(d))
		return vm_raise("cannot convert float infinity to integer");
	d = trunc(d);
	if (d >= 9223372036854775808.0 || d < -9223372036854775808.0)
		return vm_raise("integer overflow");
	return val_int((int64_t)d);
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

static value int_from_str(const struct str *s, int64_t base)
{
	const char *p = s->data, *end = s->data + s->len;
	while (p < end && isspace((unsigned char)*p))
		p++;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	bool neg = false;
	if (p < end && (*p == '+' || *p == '-'))
		neg = *p++ == '-';
	if (end - p >= 2 && p[0] == '0') {
		char x = (char)tolower((unsigned char)p[1]);
		int pb = x == 'x' ? 16 : x == 'o' ? 8 : x == 'b' ? 2 : 0;
		if (pb && (base == 0 || base == pb)) {
			base = pb;
			p += 2;
			if (p < end && *p == '_')
				p++;
		}
	}
	if (base == 0) {
		base = 10;
		/* "010" is not allowed with base 0 unless all zeros */
		if (end - p > 1 && p[0] == '0') {
			for (const char *q = p; q < end; q++)
				if (*q != '0' && *q != '_')
					goto bad;
		}
	}
	if (p == end)
		goto bad;
	uint64_t acc = 0;
	bool overflow = false, prev_digit = false;
	for (const char *q = p; q < end; q++) {
		if (*q == '_') {
			if (!prev_digit || q + 1 == end)
				goto bad;
			prev_digit = false;
			continue;
		}
		int d = digit_value(*q);
		if (d >= base)
			goto bad;
		prev_digit = true;
		if (acc > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			overflow = true;
		else
			acc = acc * (uint64_t)base + (uint64_t)d;
	}
	if (overflow || acc > (uint64_t)INT64_MAX + (neg ? 1 : 0))
		return vm_raise("integer overflow");
	return val_int(neg ? (int64_t)(0 - acc) : (int64_t)acc);
bad: {
	struct strbuf sb = STRBUF_INIT;
	val_repr(val_obj(VAL_STR, (void *)s), &sb);
	tj_error_set("invalid literal for int() with base %lld: %s", (long long)(base ? base : 10), sb.buf);
	sb_release(&sb);
	return val_err();
}
}

static value b_int(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	static const char *const kws[] = {"base", NULL}; /* x is positional only */
	value kv[2] = {val_err(), val_err()};
	int npos = take_kw("int", args, nargs, kwnames, kws, kv + 1);
	if (npos < 0)
		return val_err();
	if (npos > 2)
		return vm_raise("int() takes at most 2 arguments (%d given)", nargs);
	for (int i = 0; i < npos; i++)
		kv[i] = args[i];
	value x = kv[0];
	if (val_is_err(x)) {
		if (!val_is_err(kv[1]))
			return vm_raise("int() missing string argument");
		return val_int(0);
	}
	if (!val_is_err(kv[1])) {
		int64_t base;
		if (want_int(kv[1], &base) < 0)
			return val_err();
		if (base != 0 && (base < 2 || base > 36))
			return vm_raise("int() base must be >= 2 and <= 36, or 0");
		if (x.tag != VAL_STR)
			return vm_raise("int() can't convert non-string with explicit base");
		return int_from_str(val_str(x), base);
	}
	switch (x.tag) {
	case VAL_INT: return x;
	case VAL_BOOL: return val_int(x.b);
	case VAL_FLOAT: return int_from_double(x.f);
	case VAL_STR: return int_from_str(val_str(x), 10);
	case VAL_TENSOR: {
		value item = vm_tensor_hooks->scalar(x);
		if (val_is_err(item))
			return item;
		if (item.tag == VAL_FLOAT)
			return int_from_double(item.f);
		if (item.tag == VAL_BOOL)
			return val_int(item.b);
		return item;
	}
	default:
		return vm_raise("int() argument must be a string, a bytes-like object or a real number, not '%s'",
				val_type_name(x));
	}
}

static value float_from_str(const struct str *s)
{
	const char *p = s->data, *end = s->data + s->len;
	while (p < end && isspace((unsigned char)*p))
		p++;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	struct strbuf sb = STRBUF_INIT;
	bool ok = p < end;
	bool prev_digit = false;
	for (const char *q = p; q < end && ok; q++) {
		char c = *q;
		if (c == '_') {
			ok = prev_digit && q + 1 < end && isdigit((unsigned char)q[1]);
			prev_digit = false;
			continue;
		}
		prev_digit = isdigit((unsigned char)c);
		if (!(isdigit((unsigned char)c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' ||
		      isalpha((unsigned char)c)))
			ok = false;
		else
			sb_putc(&sb, c);
	}
	double d = 0;
	if (ok) {
		const char *t = sb.buf;
		const char *u = t + (*t == '+' || *t == '-');
		bool special = strcasecmp(u, "inf") == 0 || strcasecmp(u, "infinity") == 0 || strcasecmp(u, "nan") == 0;
		if (!special) {
			for (const char *q = u; *q; q++)
				if (isalpha((unsigned char)*q) && *q != 'e' && *q != 'E')
					ok = false;
		}
		if (ok) {
			char *endp;
			errno = 0;
			d = strtod(t, &endp);
			ok = *endp == '\0' && endp != t;
		}
	}
	sb_release(&sb);
	if (!ok) {
		struct strbuf r = STRBUF_INIT;
		val_repr(val_obj(VAL_STR, (void *)s), &r);
		tj_error_set("could not convert string to float: %s", r.buf);
		sb_release(&r);
		return val_err();
	}
	return val_float(d);
}

static value b_float(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("float", kwnames) < 0)
		return val_err();
	if (nargs > 1)
		return vm_raise("float expected at most 1 argument, got %d", nargs);
	if (nargs == 0)
		return val_float(0.0);
	value x = args[0];
	switch (x.tag) {
	case VAL_FLOAT: return x;
	case VAL_INT: return val_float((double)x.i);
	case VAL_BOOL: return val_float(x.b);
	case VAL_STR: return float_from_str(val_str(x));
	case VAL_TENSOR: {
		value item = vm_tensor_hooks->scalar(x);
		if (val_is_err(item))
			return item;
		if (item.tag == VAL_INT)
			return val_float((double)item.i);
		if (item.tag == VAL_BOOL)
			return val_float(item.b);
		return item;
	}
	default:
		return vm_raise("float() argument must be a string or a real number, not '%s'", val_type_name(x));
	}
}

static value b_bool(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("bool", kwnames) < 0)
		return val_err();
	if (nargs > 1)
		return vm_raise("bool expected at most 1 argument, got %d", nargs);
	if (nargs == 0)
		return val_bool(false);
	bool t;
	if (vm_truth(args[0], &t) < 0)
		return val_err();
	return val_bool(t);
}

static value b_str(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	static const char *const kws[] = {"object", NULL};
	value kv[1] = {val_err()};
	int npos = take_kw("str", args, nargs, kwnames, kws, kv);
	if (npos < 0)
		return val_err();
	if (npos > 1)
		return vm_raise("str() takes at most 1 argument (%d given)", nargs);
	if (npos == 1)
		kv[0] = args[0];
	if (val_is_err(kv[0]))
		return str_new("", 0);
	if (kv[0].tag == VAL_STR) {
		val_incref(kv[0]);
		return kv[0];
	}
	struct strbuf sb = STRBUF_INIT;
	val_str_into(kv[0], &sb);
	value r = str_new(sb.buf ? sb.buf : "", sb.len);
	sb_release(&sb);
	return r;
}

static value b_list(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("list", kwnames) < 0)
		return val_err();
	if (nargs > 1)
		return vm_raise("list expected at most 1 argument, got %d", nargs);
	if (nargs == 0)
		return list_new(0);
	return vm_sequence_to_list(args[0]);
}

static value b_tuple(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("tuple", kwnames) < 0)
		return val_err();
	if (nargs > 1)
		return vm_raise("tuple expected at most 1 argument, got %d", nargs);
	if (nargs == 0)
		return tuple_new(0);
	if (args[0].tag == VAL_TUPLE) {
		val_incref(args[0]);
		return args[0];
	}
	value l = vm_sequence_to_list(args[0]);
	if (val_is_err(l))
		return l;
	struct list *lp = val_list(l);
	value t = tuple_new(lp->len);
	if (lp->len)
		memcpy(val_tuple(t)->items, lp->items, sizeof(value) * lp->len);
	lp->len = 0;
	val_decref(l);
	return t;
}

/* ---- abs, round, sum, min, max ---- */

static value b_abs(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(exactly_one("abs", nargs, kwnames)))
		return val_err();
	if (args[0].tag == VAL_TENSOR)
		return vm_tensor_hooks->abs(args[0]);
	value x = args[0];
	switch (x.tag) {
	case VAL_INT:
		if (x.i == INT64_MIN)
			return vm_raise("integer overflow");
		return val_int(x.i < 0 ? -x.i : x.i);
	case VAL_BOOL:
		return val_int(x.b);
	case VAL_FLOAT:
		return val_float(fabs(x.f));
	default:
		return vm_raise("bad operand type for abs(): '%s'", val_type_name(x));
	}
}

/* rint rounds half to even in the default rounding mode */
static value round_half_even_int(double d)
{
	return int_from_double(rint(d));
}

static value round_float(double x, int64_t nd)
{
	if (!isfinite(x) || x == 0.0)
		return val_float(x);
	if (nd > 323)
		return val_float(x);
	if (nd < -308)
		return val_float(0.0 * x);
	if (nd >= 0) {
		struct strbuf sb = STRBUF_INIT;
		sb_printf(&sb, "%.*f", (int)nd, x);
		double r = strtod(sb.buf, NULL);
		sb_release(&sb);
		return val_float(r);
	}
	double p = pow(10.0, (double)-nd);
	double y = x / p;
	double r = rint(y) * p;
	if (isinf(r))
		return vm_raise("rounded value too large to represent");
	return val_float(r);
}

static value b_round(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	/* decimals= is torch.round's name for ndigits (tensors only) */
	static const char *const kws[] = {"number", "ndigits", "decimals", NULL};
	value kv[3] = {val_err(), val_none(), val_none()};
	int npos = take_kw("round", args, nargs, kwnames, kws, kv);
	if (npos < 0)
		return val_err();
	if (kv[2].tag != VAL_NONE) {
		if ((npos >= 1 ? args[0] : kv[0]).tag != VAL_TENSOR)
			return vm_raise("'decimals' is an invalid keyword argument for round()");
		if (kv[1].tag != VAL_NONE || npos > 1)
			return vm_raise("round() got multiple values for argument 'decimals'");
		kv[1] = kv[2];
	}
	if (npos > 2)
		return vm_raise("round() takes at most 2 arguments (%d given)", nargs);
	for (int i = 0; i < npos; i++)
		kv[i] = args[i];
	if (val_is_err(kv[0]))
		return vm_raise("round() missing required argument 'number' (pos 1)");
	value x = kv[0];
	bool has_nd = kv[1].tag != VAL_NONE;
	int64_t nd = 0;
	if (has_nd && want_int(kv[1], &nd) < 0)
		return val_err();
	if (x.tag == VAL_INT || x.tag == VAL_BOOL) {
		int64_t v = x.tag == VAL_BOOL ? x.b : x.i;
		if (!has_nd || nd >= 0)
			return val_int(v);
		if (nd < -18)
			return val_int(0);
		int64_t p = 1;
		for (int64_t i = 0; i < -nd; i++)
			p *= 10;
		int64_t q = v / p, rem = v % p;
		if (rem < 0) {
			rem += p;
			q--;
		}
		/* v = q * p + rem, 0 <= rem < p */
		if (rem * 2 > p || (rem * 2 == p && (q & 1)))
			q++;
		int64_t r;
		if (__builtin_mul_overflow(q, p, &r))
			return vm_raise("integer overflow");
		return val_int(r);
	}
	if (x.tag == VAL_TENSOR) {
		return vm_tensor_hooks->round(x, val_int(has_nd ? nd : 0));
	}
	if (x.tag == VAL_FLOAT) {
		if (!has_nd)
			return round_half_even_int(x.f);
		return round_float(x.f, nd);
	}
	return vm_raise("type %s doesn't define __round__ method", val_type_name(x));
}

static value b_sum(struct vm *vm, const value *args, int nargs, value kwnames)
{
	if (first_is_tensor(args, nargs, kwnames))
		return vm_tensor_hooks->sum(vm, args, nargs, kwnames);
	static const char *const kws[] = {"iterable", "start", NULL};
	value kv[2] = {val_err(), val_int(0)};
	int npos = take_kw("sum", args, nargs, kwnames, kws, kv);
	if (npos < 0)
		return val_err();
	if (npos > 2)
		return vm_raise("sum() takes at most 2 arguments (%d given)", nargs);
	for (int i = 0; i < npos; i++)
		kv[i] = args[i];
	if (val_is_err(kv[0]))
		return vm_raise("sum() takes at least 1 positional argument (0 given)");
	if (kv[1].tag == VAL_STR)
		return vm_raise("sum() can't sum strings [use ''.join(seq) instead]");
	value it = vm_get_iter(kv[0]);
	if (val_is_err(it))
		return it;
	value acc = kv[1];
	val_incref(acc);
	value x;
	int rc;
	while ((rc = vm_iter_next(it, &x)) > 0) {
		value r;
		if (acc.tag == VAL_INT && x.tag == VAL_INT && !__builtin_add_overflow(acc.i, x.i, &r.i)) {
			r.tag = VAL_INT;
		} else if (acc.tag == VAL_FLOAT && x.tag == VAL_FLOAT) {
			r = val_float(acc.f + x.f);
		} else {
			r = vm_binary(VB_ADD, acc, x);
		}
		val_decref(acc);
		val_decref(x);
		acc = r;
		if (val_is_err(acc))
			break;
	}
	val_decref(it);
	if (rc < 0) {
		val_decref(acc);
		return val_err();
	}
	return acc;
}

/* a < b as Python's min/max see it */
static int less_than(value a, value b, bool *out)
{
	value r = vm_compare(VC_LT, a, b);
	if (val_is_err(r))
		return -1;
	int rc = vm_truth(r, out);
	val_decref(r);
	return rc;
}

static value minmax(struct vm *vm, const char *fname, bool is_max, const value *args, int nargs, value kwnames)
{
	static const char *const kws[] = {"key", "default", NULL};
	value kv[2] = {val_none(), val_err()};
	int npos = take_kw(fname, args, nargs, kwnames, kws, kv);
	if (npos < 0)
		return val_err();
	if (npos == 0)
		return vm_raise("%s expected at least 1 argument, got 0", fname);
	if (npos > 1 && !val_is_err(kv[1]))
		return vm_raise("Cannot specify a default for %s() with multiple positional arguments", fname);
	value it;
	if (npos == 1) {
		it = vm_get_iter(args[0]);
	} else {
		value t = tuple_pack((size_t)npos, args);
		it = vm_get_iter(t);
		val_decref(t);
	}
	if (val_is_err(it))
		return it;
	value best = val_err(), best_key = val_err(), x;
	int rc;
	while ((rc = vm_iter_next(it, &x)) > 0) {
		value k = x;
		if (kv[0].tag != VAL_NONE) {
			k = vm_call(vm, kv[0], &x, 1, val_none());
			if (val_is_err(k)) {
				val_decref(x);
				rc = -1;
				break;
			}
		} else {
			val_incref(k);
		}
		bool better = val_is_err(best);
		if (!better && less_than(is_max ? best_key : k, is_max ? k : best_key, &better) < 0) {
			val_decref(x);
			val_decref(k);
			rc = -1;
			break;
		}
		if (better) {
			val_decref(best);
			val_decref(best_key);
			best = x;
			best_key = k;
		} else {
			val_decref(x);
			val_decref(k);
		}
	}
	val_decref(it);
	val_decref(best_key);
	if (rc < 0) {
		val_decref(best);
		return val_err();
	}
	if (val_is_err(best)) {
		if (!val_is_err(kv[1])) {
			val_incref(kv[1]);
			return kv[1];
		}
		return vm_raise("%s() arg is an empty sequence", fname);
	}
	return best;
}

static value b_max(struct vm *vm, const value *args, int nargs, value kwnames)
{
	if (first_is_tensor(args, nargs, kwnames))
		return vm_tensor_hooks->max(vm, args, nargs, kwnames);
	return minmax(vm, "max", true, args, nargs, kwnames);
}

static value b_min(struct vm *vm, const value *args, int nargs, value kwnames)
{
	if (first_is_tensor(args, nargs, kwnames))
		return vm_tensor_hooks->min(vm, args, nargs, kwnames);
	return minmax(vm, "min", false, args, nargs, kwnames);
}

/* ---- sorting (list.sort, sorted): stable merge sort on keys ---- */

struct sort_item {
	value key, v;
};

static int sort_merge(struct sort_item *a, struct sort_item *tmp, size_t n, bool reverse)
{
	if (n < 2)
		return 0;
	size_t h = n / 2;
	if (sort_merge(a, tmp, h, reverse) < 0 || sort_merge(a + h, tmp, n - h, reverse) < 0)
		return -1;
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n) {
		bool lt;
		/* take from the right only when strictly before: stability */
		if (less_than(reverse ? a[i].key : a[j].key, reverse ? a[j].key : a[i].key, &lt) < 0)
			return -1;
		tmp[k++] = lt ? a[j++] : a[i++];
	}
	while (i < h)
		tmp[k++] = a[i++];
	while (j < n)
		tmp[k++] = a[j++];
	memcpy(a, tmp, sizeof(*a) * n);
	return 0;
}

static int list_sort(struct vm *vm, struct list *l, value key, bool reverse)
{
	size_t n = l->len;
	struct sort_item *items = malloc(sizeof(*items) * (n ? 2 * n : 1));
	if (!items) {
		tj_error_set("out of memory");
		return -1;
	}
	int rc = 0;
	size_t made = 0;
	for (; made < n; made++) {
		items[made].v = l->items[made];
		if (key.tag == VAL_NONE) {
			items[made].key = l->items[made];
			val_incref(items[made].key);
		} else {
			items[made].key = vm_call(vm, key, &l->items[made], 1, val_none());
			if (val_is_err(items[made].key)) {
				rc = -1;
				break;
			}
		}
	}
	if (rc == 0 && l->len == n)
		rc = sort_merge(items, items + n, n, reverse);
	if (rc == 0 && l->len == n) {
		for (size_t i = 0; i < n; i++)
			l->items[i] = items[i].v;
	}
	for (size_t i = 0; i < made; i++)
		val_decref(items[i].key);
	free(items);
	return rc;
}

static int sort_args(const char *fname, const value *args, int nargs, value kwnames, int want_pos, value *key,
		     bool *reverse)
{
	static const char *const kws[] = {"key", "reverse", NULL};
	value kv[2] = {val_none(), val_bool(false)};
	int npos = take_kw(fname, args, nargs, kwnames, kws, kv);
	if (npos < 0)
		return -1;
	if (npos != want_pos) {
		if (want_pos == 1)
			tj_error_set("sorted expected 1 argument, got %d", npos);
		else
			tj_error_set("sort() takes no positional arguments");
		return -1;
	}
	*key = kv[0];
	return vm_truth(kv[1], reverse);
}

static value b_sorted(struct vm *vm, const value *args, int nargs, value kwnames)
{
	value key;
	bool reverse;
	if (sort_args("sort", args, nargs, kwnames, 1, &key, &reverse) < 0)
		return val_err();
	value l = vm_sequence_to_list(args[0]);
	if (val_is_err(l))
		return l;
	if (list_sort(vm, val_list(l), key, reverse) < 0) {
		val_decref(l);
		return val_err();
	}
	return l;
}

/* ---- list methods ---- */

static value m_append(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(exactly_one("list.append", nargs - 1, kwnames)))
		return val_err();
	val_incref(args[1]);
	list_append(val_list(args[0]), args[1]);
	return val_none();
}

static value m_pop(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("list.pop", kwnames) < 0)
		return val_err();
	if (nargs > 2)
		return vm_raise("pop expected at most 1 argument, got %d", nargs - 1);
	struct list *l = val_list(args[0]);
	int64_t i = -1;
	if (nargs == 2 && want_int(args[1], &i) < 0)
		return val_err();
	if (l->len == 0)
		return vm_raise("pop from empty list");
	if (i < 0)
		i += (int64_t)l->len;
	if (i < 0 || i >= (int64_t)l->len)
		return vm_raise("pop index out of range");
	value r = l->items[i];
	memmove(l->items + i, l->items + i + 1, sizeof(value) * (l->len - (size_t)i - 1));
	l->len--;
	return r;
}

static value m_extend(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(exactly_one("list.extend", nargs - 1, kwnames)))
		return val_err();
	value src = vm_sequence_to_list(args[1]);
	if (val_is_err(src))
		return src;
	struct list *l = val_list(args[0]), *s = val_list(src);
	for (size_t i = 0; i < s->len; i++) {
		val_incref(s->items[i]);
		list_append(l, s->items[i]);
	}
	val_decref(src);
	return val_none();
}

static value m_insert(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("list.insert", kwnames) < 0)
		return val_err();
	if (nargs != 3)
		return vm_raise("insert expected 2 arguments, got %d", nargs - 1);
	int64_t i;
	if (want_int(args[1], &i) < 0)
		return val_err();
	struct list *l = val_list(args[0]);
	int64_t n = (int64_t)l->len;
	if (i < 0) {
		i += n;
		if (i < 0)
			i = 0;
	}
	if (i > n)
		i = n;
	val_incref(args[2]);
	list_append(l, args[2]);
	memmove(l->items + i + 1, l->items + i, sizeof(value) * (size_t)(n - i));
	l->items[i] = args[2];
	return val_none();
}

static int64_t clamp_index(int64_t i, int64_t n)
{
	if (i < 0) {
		i += n;
		if (i < 0)
			i = 0;
	}
	return i > n ? n : i;
}

static value m_index(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (no_kw("list.index", kwnames) < 0)
		return val_err();
	if (nargs < 2 || nargs > 4)
		return vm_raise("index expected at least 1 argument, got %d", nargs - 1);
	struct list *l = val_list(args[0]);
	int64_t start = 0, stop = (int64_t)l->len;
	if (nargs > 2 && want_int(args[2], &start) < 0)
		return val_err();
	if (nargs > 3 && want_int(args[3], &stop) < 0)
		return val_err();
	start = clamp_index(start, (int64_t)l->len);
	stop = clamp_index(stop, (int64_t)l->len);
	for (int64_t i = start; i < stop && i < (int64_t)l->len; i++)
		if (val_equal(l->items[i], args[1]))
			return val_int(i);
	struct strbuf sb = STRBUF_INIT;
	val_repr(args[1], &sb);
	tj_error_set("%s is not in list", sb.buf);
	sb_release(&sb);
	return val_err();
}

static value m_count(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(exactly_one("list.count", nargs - 1, kwnames)))
		return val_err();
	struct list *l = val_list(args[0]);
	int64_t c = 0;
	for (size_t i = 0; i < l->len; i++)
		c += val_equal(l->items[i], args[1]);
	return val_int(c);
}

static value m_reverse(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(no_args("list.reverse", nargs - 1, kwnames)))
		return val_err();
	struct list *l = val_list(args[0]);
	for (size_t i = 0, j = l->len; i + 1 < j; i++, j--) {
		value t = l->items[i];
		l->items[i] = l->items[j - 1];
		l->items[j - 1] = t;
	}
	return val_none();
}

static value m_remove(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(exactly_one("list.remove", nargs - 1, kwnames)))
		return val_err();
	struct list *l = val_list(args[0]);
	for (size_t i = 0; i < l->len; i++) {
		if (val_equal(l->items[i], args[1])) {
			value old = l->items[i];
			memmove(l->items + i, l->items + i + 1, sizeof(value) * (l->len - i - 1));
			l->len--;
			val_decref(old);
			return val_none();
		}
	}
	return vm_raise("list.remove(x): x not in list");
}

static value m_copy(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(no_args("list.copy", nargs - 1, kwnames)))
		return val_err();
	return vm_sequence_to_list(args[0]);
}

static value m_clear(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(no_args("list.clear", nargs - 1, kwnames)))
		return val_err();
	struct list *l = val_list(args[0]);
	size_t n = l->len;
	value *items = l->items;
	l->items = NULL;
	l->len = l->cap = 0;
	for (size_t i = 0; i < n; i++)
		val_decref(items[i]);
	free(items);
	return val_none();
}

static value m_sort(struct vm *vm, const value *args, int nargs, value kwnames)
{
	value key;
	bool reverse;
	if (sort_args("sort", args + 1, nargs - 1, kwnames, 0, &key, &reverse) < 0)
		return val_err();
	return list_sort(vm, val_list(args[0]), key, reverse) < 0 ? val_err() : val_none();
}

/* ---- str methods ---- */

static value need_str(value v, const char *what)
{
	if (v.tag != VAL_STR)
		return vm_raise("%s must be str, not %s", what, val_type_name(v));
	return v;
}

static value m_join(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(exactly_one("str.join", nargs - 1, kwnames)))
		return val_err();
	struct str *sep = val_str(args[0]);
	value l = vm_sequence_to_list(args[1]);
	if (val_is_err(l))
		return l;
	struct list *lp = val_list(l);
	struct strbuf sb = STRBUF_INIT;
	value r = val_none();
	for (size_t i = 0; i < lp->len; i++) {
		if (lp->items[i].tag != VAL_STR) {
			r = vm_raise("sequence item %zu: expected str instance, %s found", i, val_type_name(lp->items[i]));
			break;
		}
		if (i)
			sb_add(&sb, sep->data, sep->len);
		sb_add(&sb, val_str(lp->items[i])->data, val_str(lp->items[i])->len);
	}
	if (!val_is_err(r))
		r = str_new(sb.buf ? sb.buf : "", sb.len);
	sb_release(&sb);
	val_decref(l);
	return r;
}

static value m_split(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	static const char *const kws[] = {"sep", "maxsplit", NULL};
	value kv[2] = {val_none(), val_int(-1)};
	int npos = take_kw("split", args + 1, nargs - 1, kwnames, kws, kv);
	if (npos < 0)
		return val_err();
	if (npos > 2)
		return vm_raise("split() takes at most 2 arguments (%d given)", npos);
	for (int i = 0; i < npos; i++)
		kv[i] = args[1 + i];
	int64_t maxsplit;
	if (want_int(kv[1], &maxsplit) < 0)
		return val_err();
	if (maxsplit < 0)
		maxsplit = INT64_MAX;
	struct str *s = val_str(args[0]);
	value r = list_new(0);
	struct list *out = val_list(r);
	const char *p = s->data, *end = s->data + s->len;
	if (kv[0].tag == VAL_NONE) {
		int64_t splits = 0;
		while (p < end) {
			while (p < end && isspace((unsigned char)*p))
				p++;
			if (p == end)
				break;
			if (splits == maxsplit) {
				const char *e = end;
				while (e > p && isspace((unsigned char)e[-1]))
					e--;
				list_append(out, str_new(p, (size_t)(e - p)));
				break;
			}
			const char *q = p;
			while (q < end && !isspace((unsigned char)*q))
				q++;
			list_append(out, str_new(p, (size_t)(q - p)));
			splits++;
			p = q;
		}
		return r;
	}
	if (val_is_err(need_str(kv[0], "sep"))) {
		val_decref(r);
		return val_err();
	}
	struct str *sep = val_str(kv[0]);
	if (sep->len == 0) {
		val_decref(r);
		return vm_raise("empty separator");
	}
	int64_t splits = 0;
	for (;;) {
		const char *q = splits < maxsplit ? memmem(p, (size_t)(end - p), sep->data, sep->len) : NULL;
		if (!q) {
			list_append(out, str_new(p, (size_t)(end - p)));
			break;
		}
		list_append(out, str_new(p, (size_t)(q - p)));
		p = q + sep->len;
		splits++;
	}
	return r;
}

static value change_case(const value *args, int nargs, value kwnames, const char *fname, bool upper)
{
	if (val_is_err(no_args(fname, nargs - 1, kwnames)))
		return val_err();
	struct str *s = val_str(args[0]);
	struct strbuf sb = STRBUF_INIT;
	sb_grow(&sb, s->len);
	for (size_t i = 0; i < s->len; i++) {
		unsigned char c = (unsigned char)s->data[i];
		sb_putc(&sb, (char)(upper ? toupper(c) : tolower(c)));
	}
	value r = str_new(sb.buf ? sb.buf : "", sb.len);
	sb_release(&sb);
	return r;
}

static value m_upper(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return change_case(args, nargs, kwnames, "str.upper", true);
}

static value m_lower(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return change_case(args, nargs, kwnames, "str.lower", false);
}

static value strip_impl(const value *args, int nargs, value kwnames, const char *fname, bool left, bool right)
{
	if (no_kw(fname, kwnames) < 0)
		return val_err();
	if (nargs > 2)
		return vm_raise("%s expected at most 1 argument, got %d", fname + 4, nargs - 1);
	struct str *s = val_str(args[0]);
	const char *chars = NULL;
	size_t nchars = 0;
	if (nargs == 2 && args[1].tag != VAL_NONE) {
		if (args[1].tag != VAL_STR)
			return vm_raise("%s arg must be None or str", fname + 4);
		chars = val_str(args[1])->data;
		nchars = val_str(args[1])->len;
	}
	const char *p = s->data, *e = s->data + s->len;
#define STRIPPABLE(c) (chars ? memchr(chars, (c), nchars) != NULL : isspace((unsigned char)(c)))
	if (left)
		while (p < e && STRIPPABLE(*p))
			p++;
	if (right)
		while (e > p && STRIPPABLE(e[-1]))
			e--;
#undef STRIPPABLE
	return str_new(p, (size_t)(e - p));
}

static value m_strip(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return strip_impl(args, nargs, kwnames, "str.strip", true, true);
}

static value m_lstrip(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return strip_impl(args, nargs, kwnames, "str.lstrip", true, false);
}

static value m_rstrip(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return strip_impl(args, nargs, kwnames, "str.rstrip", false, true);
}

static value affix(const value *args, int nargs, value kwnames, const char *fname, bool suffix)
{
	if (no_kw(fname, kwnames) < 0)
		return val_err();
	if (nargs != 2)
		return vm_raise("%s() takes exactly one argument (%d given)", fname, nargs - 1);
	struct str *s = val_str(args[0]);
	value a = args[1];
	const value *cands = &a;
	size_t n = 1;
	if (a.tag == VAL_TUPLE) {
		cands = val_tuple(a)->items;
		n = val_tuple(a)->len;
	}
	for (size_t i = 0; i < n; i++) {
		if (cands[i].tag != VAL_STR) {
			if (a.tag == VAL_TUPLE)
				return vm_raise("tuple for %s must only contain str, not %s", fname + 4,
						val_type_name(cands[i]));
			return vm_raise("%s first arg must be str or a tuple of str, not %s", fname + 4,
					val_type_name(a));
		}
		struct str *p = val_str(cands[i]);
		if (p->len <= s->len &&
		    memcmp(suffix ? s->data + s->len - p->len : s->data, p->data, p->len) == 0)
			return val_bool(true);
	}
	return val_bool(false);
}

static value m_startswith(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return affix(args, nargs, kwnames, "str.startswith", false);
}

static value m_endswith(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return affix(args, nargs, kwnames, "str.endswith", true);
}

static value m_replace(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	static const char *const kws[] = {"count", NULL};
	value kv[1] = {val_int(-1)};
	int npos = take_kw("replace", args + 1, nargs - 1, kwnames, kws, kv);
	if (npos < 0)
		return val_err();
	if (npos < 2 || npos > 3)
		return vm_raise("replace expected at least 2 arguments, got %d", npos);
	if (npos == 3)
		kv[0] = args[3];
	if (args[1].tag != VAL_STR)
		return vm_raise("replace() argument 1 must be str, not %s", val_type_name(args[1]));
	if (args[2].tag != VAL_STR)
		return vm_raise("replace() argument 2 must be str, not %s", val_type_name(args[2]));
	int64_t count;
	if (want_int(kv[0], &count) < 0)
		return val_err();
	if (count < 0)
		count = INT64_MAX;
	struct str *s = val_str(args[0]), *old = val_str(args[1]), *new = val_str(args[2]);
	struct strbuf sb = STRBUF_INIT;
	const char *p = s->data, *end = s->data + s->len;
	int64_t done = 0;
	if (old->len == 0) {
		/* inserts new before every character and at the end */
		while (done < count) {
			sb_add(&sb, new->data, new->len);
			done++;
			if (p == end)
				break;
			const char *q = p + 1;
			while (q < end && ((unsigned char)*q & 0xC0) == 0x80)
				q++;
			sb_add(&sb, p, (size_t)(q - p));
			p = q;
		}
		sb_add(&sb, p, (size_t)(end - p));
	} else {
		while (done < count) {
			const char *q = memmem(p, (size_t)(end - p), old->data, old->len);
			if (!q)
				break;
			sb_add(&sb, p, (size_t)(q - p));
			sb_add(&sb, new->data, new->len);
			p = q + old->len;
			done++;
		}
		sb_add(&sb, p, (size_t)(end - p));
	}
	value r = str_new(sb.buf ? sb.buf : "", sb.len);
	sb_release(&sb);
	return r;
}

static value m_find(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (val_is_err(exactly_one("str.find", nargs - 1, kwnames)))
		return val_err();
	if (args[1].tag != VAL_STR)
		return vm_raise("must be str, not %s", val_type_name(args[1]));
	struct str *s = val_str(args[0]), *n = val_str(args[1]);
	const char *q = n->len ? memmem(s->data, s->len, n->data, n->len) : s->data;
	if (!q)
		return val_int(-1);
	int64_t byte = q - s->data, cp = 0;
	for (int64_t i = 0; i < byte; i++)
		cp += ((unsigned char)s->data[i] & 0xC0) != 0x80;
	return val_int(cp);
}

/* ---- method tables: static objects, never freed (their counts start high) ---- */

#define METHOD(var, name, fn) static struct builtin var = {{1u << 30, 0}, name, fn, 0}
METHOD(mo_append, "list.append", m_append);
METHOD(mo_pop, "list.pop", m_pop);
METHOD(mo_extend, "list.extend", m_extend);
METHOD(mo_insert, "list.insert", m_insert);
METHOD(mo_index, "list.index", m_index);
METHOD(mo_count, "list.count", m_count);
METHOD(mo_reverse, "list.reverse", m_reverse);
METHOD(mo_remove, "list.remove", m_remove);
METHOD(mo_copy, "list.copy", m_copy);
METHOD(mo_clear, "list.clear", m_clear);
METHOD(mo_sort, "list.sort", m_sort);
METHOD(mo_join, "str.join", m_join);
METHOD(mo_split, "str.split", m_split);
METHOD(mo_upper, "str.upper", m_upper);
METHOD(mo_lower, "str.lower", m_lower);
METHOD(mo_strip, "str.strip", m_strip);
METHOD(mo_lstrip, "str.lstrip", m_lstrip);
METHOD(mo_rstrip, "str.rstrip", m_rstrip);
METHOD(mo_startswith, "str.startswith", m_startswith);
METHOD(mo_endswith, "str.endswith", m_endswith);
METHOD(mo_replace, "str.replace", m_replace);
METHOD(mo_find, "str.find", m_find);
#undef METHOD

struct method_entry {
	const char *name;
	struct builtin *obj;
};

static const struct method_entry list_methods[] = {
	{"append", &mo_append}, {"pop", &mo_pop},         {"extend", &mo_extend}, {"insert", &mo_insert},
	{"index", &mo_index},   {"count", &mo_count},     {"reverse", &mo_reverse}, {"remove", &mo_remove},
	{"copy", &mo_copy},     {"clear", &mo_clear},     {"sort", &mo_sort},     {NULL, NULL},
};

static const struct method_entry str_methods[] = {
	{"join", &mo_join},     {"split", &mo_split},   {"upper", &mo_upper},           {"lower", &mo_lower},
	{"strip", &mo_strip},   {"lstrip", &mo_lstrip}, {"rstrip", &mo_rstrip},         {"startswith", &mo_startswith},
	{"endswith", &mo_endswith}, {"replace", &mo_replace}, {"find", &mo_find},        {NULL, NULL},
};

/* A name's place in both tables is cached in its string's flags (strings
 * are immutable): bit 31 = resolved, bits 8..15 = list method + 1, bits
 * 16..23 = str method + 1. */
#define METHOD_RESOLVED 0x80000000u

static unsigned method_index(const struct method_entry *t, const struct str *name)
{
	for (unsigned i = 0; t[i].name; i++)
		if (str_eq_cstr(name, t[i].name))
			return i + 1;
	return 0;
}

value builtins_method(struct vm *vm, value self, struct str *name)
{
	(void)vm;
	uint32_t fl = name->hdr.flags;
	if (!(fl & METHOD_RESOLVED)) {
		fl |= METHOD_RESOLVED | method_index(list_methods, name) << 8 | method_index(str_methods, name) << 16;
		name->hdr.flags = fl;
	}
	unsigned i = self.tag == VAL_LIST ? (fl >> 8) & 0xff : self.tag == VAL_STR ? (fl >> 16) & 0xff : 0;
	if (!i)
		return val_err();
	const struct method_entry *t = self.tag == VAL_LIST ? list_methods : str_methods;
	return bound_new_fast(self, val_obj(VAL_BUILTIN, t[i - 1].obj));
}

/* ---- calling a type object ---- */

value builtins_call_type(struct vm *vm, value_tag t, const value *args, int nargs, value kwnames)
{
	switch (t) {
	case VAL_INT: return b_int(vm, args, nargs, kwnames);
	case VAL_FLOAT: return b_float(vm, args, nargs, kwnames);
	case VAL_BOOL: return b_bool(vm, args, nargs, kwnames);
	case VAL_STR: return b_str(vm, args, nargs, kwnames);
	case VAL_LIST: return b_list(vm, args, nargs, kwnames);
	case VAL_TUPLE: return b_tuple(vm, args, nargs, kwnames);
	case VAL_RANGE: return b_range(vm, args, nargs, kwnames);
	case VAL_TYPE: return b_type(vm, args, nargs, kwnames);
	default: return vm_raise("cannot create '%s' instances", type_tag_name(t));
	}
}

/* exit(status=0): ends the program with that status (0 to 255), as
 * Python's exit(n); what it printed stays printed, no traceback */
static value b_exit(struct vm *vm, const value *args, int nargs, value kwnames)
{
	if (no_kw("exit", kwnames) < 0)
		return val_err();
	if (nargs > 1)
		return vm_raise("exit() takes at most one argument (%d given)", nargs);
	int64_t n = 0;
	if (nargs == 1) {
		if (args[0].tag != VAL_INT)
			return vm_raise("exit() status must be an int, not '%s'", type_tag_name(args[0].tag));
		n = args[0].i;
		if (n < 0 || n > 255)
			return vm_raise("exit() status must be 0 to 255, got %lld", (long long)n);
	}
	vm_request_exit(vm, (int)n);
	return vm_raise("exit(%d)", (int)n);
}

/* ---- registration ---- */

static const struct builtin_def python_builtins[] = {
	{"print", b_print},     {"len", b_len},     {"repr", b_repr},
	{"abs", b_abs},         {"min", b_min},     {"max", b_max},       {"sum", b_sum},
	{"round", b_round},     {"enumerate", b_enumerate}, {"zip", b_zip}, {"isinstance", b_isinstance},
	{"type", b_type},       {"time", b_time},   {"sorted", b_sorted}, {"exit", b_exit},
	{NULL, NULL},
};

void builtins_install(struct vm *vm)
{
	for (const struct builtin_def *d = python_builtins; d->name; d++) {
		value b = builtin_new(d->name, d->fn);
		vm_set_builtin(vm, d->name, b);
		val_decref(b);
	}
	static const struct {
		const char *name;
		value_tag tag;
	} types[] = {
		{"int", VAL_INT}, {"float", VAL_FLOAT}, {"bool", VAL_BOOL},
		{"str", VAL_STR}, {"list", VAL_LIST},   {"tuple", VAL_TUPLE},
		{"range", VAL_RANGE},
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		vm_set_builtin(vm, types[i].name, val_type(types[i].tag));
	vm_set_builtin(vm, "float32", val_dtype(DT_FLOAT32));
	vm_set_builtin(vm, "float64", val_dtype(DT_FLOAT64));
	vm_set_builtin(vm, "int64", val_dtype(DT_INT64));
}
