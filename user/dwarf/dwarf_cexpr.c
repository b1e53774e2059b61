// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A small C constant-expression evaluator for macro values (dwarf_macros.c):
 * identifiers are other macros (function-like ones included) or DWARF
 * enumerators, casts and sizeof use DWARF types.  Limits, on purpose: no
 * token pasting or stringizing, and a macro body is evaluated as a whole
 * expression (Ruby parenthesizes its constant macros).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "dwarf_types_impl.h"
#include "dwarf_caps.h"

struct val {
	uint64_t v;
	bool u; /* unsigned */
};

/* The macros being expanded: C does not expand a macro inside itself. */
struct active {
	const struct dt_macro *m;
	const struct active *up;
};

struct ev {
	struct dwarf_types *dt;
	const char *p;
	const struct active *active;
	int depth;
	bool bad;
};

static int eval_text(struct dwarf_types *dt, const char *text, size_t len,
		     const struct active *active, int depth, struct val *out);
static struct val cond(struct ev *e);

static void skip_ws(struct ev *e)
{
	while (isspace((unsigned char) *e->p))
		e->p++;
}

static bool is_ident_start(char c)
{
	return isalpha((unsigned char) c) || c == '_';
}

static size_t ident_len(const char *p)
{
	size_t n = 0;

	if (!is_ident_start(*p))
		return 0;
	while (isalnum((unsigned char) p[n]) || p[n] == '_')
		n++;
	return n;
}

static bool accept(struct ev *e, const char *op)
{
	size_t n = strlen(op);

	skip_ws(e);
	if (strncmp(e->p, op, n))
		return false;
	/* "<" is not the start of "<<", "&" not of "&&", "|" not of "||" */
	if (n == 1 && (op[0] == '<' || op[0] == '>' || op[0] == '&' || op[0] == '|') &&
	    (e->p[1] == op[0] || e->p[1] == '='))
		return false;
	if (n == 1 && (op[0] == '!' || op[0] == '=') && e->p[1] == '=')
		return false;
	e->p += n;
	return true;
}

/* Size and signedness of a C type spelled with keywords, or of a DWARF typedef. */
static bool type_name(struct ev *e, const char *s, size_t n, uint64_t *size, bool *is_signed);

/* "T[N]" in sizeof(VALUE[N]): T's size times N. */
static bool array_type(struct ev *e, const char *s, size_t n, uint64_t *size, bool *is_signed)
{
	const char *lb = memchr(s, '[', n);
	struct val count;

	if (!type_name(e, s, (size_t) (lb - s), size, is_signed) ||
	    eval_text(e->dt, lb + 1, (size_t) (s + n - 1 - (lb + 1)), e->active, e->depth + 1,
		      &count))
		return false;
	*size *= count.v;
	return true;
}

/*
 * The C keywords of a basic type ("unsigned long", "const char"): 1 with
 * its size and sign, 0 when s starts with none (a typedef's name, maybe),
 * -1 when a word other than a keyword follows one.
 */
static int keyword_type(const char *s, const char *end, uint64_t *size, bool *is_signed)
{
	bool has_kw = false, uns = false;
	uint64_t sz = 4;
	const char *q;

	for (q = s; q < end;) {
		size_t l;

		while (q < end && isspace((unsigned char) *q))
			q++;
		l = ident_len(q);
		if (!l)
			break;
		if (l == 8 && !strncmp(q, "unsigned", l))
			uns = true, has_kw = true;
		else if (l == 6 && !strncmp(q, "signed", l))
			has_kw = true;
		else if (l == 4 && !strncmp(q, "long", l))
			has_kw = true, sz = 8;
		else if (l == 5 && !strncmp(q, "short", l))
			sz = 2, has_kw = true;
		else if (l == 4 && !strncmp(q, "char", l))
			sz = 1, has_kw = true;
		else if (l == 3 && !strncmp(q, "int", l))
			has_kw = true;
		else if (l == 5 && !strncmp(q, "_Bool", l))
			sz = 1, uns = true, has_kw = true;
		else if ((l == 5 && !strncmp(q, "const", l)) ||
			 (l == 8 && !strncmp(q, "volatile", l)))
			;
		else if (has_kw)
			return -1;
		else
			break;
		q += l;
	}
	if (!has_kw)
		return 0;
	*size = sz;
	*is_signed = !uns;
	return 1;
}

/* A typedef, "struct x" or "enum x" the DWARF has, and not a macro or enumerator of that name. */
static bool named_type(struct ev *e, const char *s, size_t n, uint64_t *size, bool *is_signed)
{
	char buf[128];

	memcpy(buf, s, n);
	while (n && isspace((unsigned char) buf[n - 1]))
		n--;
	buf[n] = '\0';
	if (dt_find_macro(e->dt, buf, n))
		return false;
	return dt_type_info(e->dt, buf, size, is_signed) == 0;
}

static bool type_name(struct ev *e, const char *s, size_t n, uint64_t *size, bool *is_signed)
{
	const char *q, *end;
	int kw;

	while (n && isspace((unsigned char) *s))
		s++, n--;
	if (!n || n >= 128) /* named_type's buffer */
		return false;
	end = s + n;
	if (memchr(s, '[', n) && s[n - 1] == ']')
		return array_type(e, s, n, size, is_signed);
	for (q = s; q < end; q++)
		if (!isalnum((unsigned char) *q) && *q != '_' && *q != '*' &&
		    !isspace((unsigned char) *q))
			return false;
	if ((q = memchr(s, '*', n))) {
		/* "(T *)" is a cast; "(SIZEOF_VALUE * 8)" a product: only stars follow a type's */
		for (; q < end; q++)
			if (*q != '*' && !isspace((unsigned char) *q))
				return false;
		*size = 8;
		*is_signed = false;
		return true;
	}
	kw = keyword_type(s, end, size, is_signed);
	if (kw)
		return kw > 0;
	return named_type(e, s, n, size, is_signed);
}

static struct val cast(struct val v, uint64_t size, bool is_signed)
{
	if (size < 8) {
		uint64_t mask = (1ULL << (size * 8)) - 1;

		v.v &= mask;
		if (is_signed && (v.v >> (size * 8 - 1)) & 1)
			v.v |= ~mask;
	}
	v.u = !is_signed;
	return v;
}

static struct val number(struct ev *e)
{
	struct val r = {0, false};
	char *end;

	r.v = strtoull(e->p, &end, 0);
	e->p = end;
	while (*e->p == 'u' || *e->p == 'U' || *e->p == 'l' || *e->p == 'L') {
		if (*e->p == 'u' || *e->p == 'U')
			r.u = true;
		e->p++;
	}
	if (r.v > INT64_MAX)
		r.u = true;
	return r;
}

/* The raw text of a parenthesized group starting at e->p == '(' (balanced). */
static const char *group_end(const char *p)
{
	int level = 0;

	for (; *p; p++) {
		if (*p == '(')
			level++;
		else if (*p == ')' && --level == 0)
			return p;
	}
	return NULL;
}

/* Expands a function-like macro's body with args substituted, then evaluates it. */
/* A function-like macro's parameter names, from "(a, b)": how many (at most 16). */
static size_t macro_params(const char *params, const char *pend, const char **pv, size_t *pl)
{
	size_t np = 0;

	for (params++; params < pend && np < 16;) { /* "(a, b)" */
		while (isspace((unsigned char) *params) || *params == ',')
			params++;
		pv[np] = params;
		pl[np] = ident_len(params);
		if (!pl[np])
			break;
		params += pl[np++];
	}
	return np;
}

/* A call's arguments, split at top-level commas: how many (at most 16). */
static size_t macro_args(const char *args, const char *aend, const char **argv, size_t *argl)
{
	size_t na = 0;

	while (args < aend && na < 16) {
		const char *q = args;
		int level = 0;

		for (; q < aend && (level || *q != ','); q++)
			level += (*q == '(') - (*q == ')');
		argv[na] = args;
		argl[na++] = (size_t) (q - args);
		args = q + 1;
	}
	return na;
}

/*
 * The macro's body with each parameter replaced by its argument (malloc'ed,
 * *len bytes, no NUL), or NULL out of memory.
 */
static char *substitute(const char *body, const char **pv, const size_t *pl, size_t np,
			const char **argv, const size_t *argl, size_t *len)
{
	size_t cap = 256;
	char *out = malloc(cap);

	*len = 0;
	while (out && *body) {
		size_t l = ident_len(body), i, add = 1;
		const char *src = body;
		bool pad = false;

		if (l) { /* an identifier: a parameter is replaced by its argument */
			add = l;
			pad = true;
			for (i = 0; i < np; i++)
				if (pl[i] == l && !memcmp(pv[i], body, l)) {
					src = argv[i];
					add = argl[i];
					break;
				}
		} else if (isdigit((unsigned char) *body)) { /* a number, "0x1f" included */
			for (add = 0; isalnum((unsigned char) body[add]) || body[add] == '_'; add++)
				;
		}
		body += l ? l : add;
		if (*len + add + 3 > cap) {
			char *p2 = realloc(out, cap = 2 * (*len + add + 3));

			if (!p2) {
				free(out);
				return NULL;
			}
			out = p2;
		}
		if (pad)
			out[(*len)++] = ' '; /* keep tokens apart */
		memcpy(out + *len, src, add);
		*len += add;
		if (pad)
			out[(*len)++] = ' ';
	}
	return out;
}

static struct val call_macro(struct ev *e, const struct dt_macro *m)
{
	const char *params = m->def + m->namelen, *pend = strchr(params, ')');
	const char *args, *aend;
	const char *argv[16], *pv[16];
	size_t argl[16], pl[16], na, np, len = 0;
	struct val r = {0, false};
	struct active a = {m, e->active};
	char *out;

	skip_ws(e);
	if (*e->p != '(' || !pend || !(aend = group_end(e->p))) {
		e->bad = true;
		return r;
	}
	args = e->p + 1;
	e->p = aend + 1;
	np = macro_params(params, pend, pv, pl);
	na = macro_args(args, aend, argv, argl);
	if (na != np) {
		e->bad = true;
		return r;
	}
	out = substitute(pend + 1, pv, pl, np, argv, argl, &len);
	if (!out || eval_text(e->dt, out, len, &a, e->depth + 1, &r))
		e->bad = true;
	free(out);
	return r;
}

static struct val unary(struct ev *e);

/* "(" at e->p: a cast "(T)x", or a parenthesized expression. */
static struct val paren_or_cast(struct ev *e)
{
	const char *end = group_end(e->p);
	struct val r;
	uint64_t size;
	bool sgn;

	if (end && type_name(e, e->p + 1, (size_t) (end - e->p - 1), &size, &sgn)) {
		e->p = end + 1;
		return cast(unary(e), size, sgn);
	}
	e->p++;
	r = cond(e);
	if (!accept(e, ")"))
		e->bad = true;
	return r;
}

/* "sizeof" at e->p: sizeof(T). */
static struct val sizeof_type(struct ev *e)
{
	struct val r = {0, false};
	const char *end;
	uint64_t size;
	bool sgn;

	e->p += 6;
	skip_ws(e);
	end = *e->p == '(' ? group_end(e->p) : NULL;
	if (!end || !type_name(e, e->p + 1, (size_t) (end - e->p - 1), &size, &sgn)) {
		e->bad = true;
		return r;
	}
	e->p = end + 1;
	return (struct val){size, true};
}

/* An identifier of n bytes at e->p: a macro (not one being expanded), else an enumerator. */
static struct val identifier(struct ev *e, size_t n)
{
	const struct dt_macro *m = dt_find_macro(e->dt, e->p, n);
	const struct active *a;
	struct val r = {0, false};
	char name[128];
	int64_t v;

	for (a = e->active; m && a; a = a->up)
		if (a->m == m)
			m = NULL; /* "#define X X" (an enum's name kept as a macro) */
	if (m) {
		const char *body = m->def + m->namelen;
		struct active self = {m, e->active};

		e->p += n;
		if (*body == '(')
			return call_macro(e, m);
		if (eval_text(e->dt, body, strlen(body), &self, e->depth + 1, &r))
			e->bad = true;
		return r;
	}
	if (n >= sizeof(name)) {
		e->bad = true;
		return r;
	}
	memcpy(name, e->p, n);
	name[n] = '\0';
	e->p += n;
	if (dwarf_enumerator(e->dt, name, &v)) {
		e->bad = true;
		return r;
	}
	return (struct val){(uint64_t) v, false};
}

static struct val primary(struct ev *e)
{
	struct val r = {0, false};
	size_t n;

	skip_ws(e);
	if (isdigit((unsigned char) *e->p))
		return number(e);
	if (*e->p == '(')
		return paren_or_cast(e);
	n = ident_len(e->p);
	if (!n) {
		e->bad = true;
		return r;
	}
	if (n == 6 && !strncmp(e->p, "sizeof", 6))
		return sizeof_type(e);
	return identifier(e, n);
}

static struct val unary(struct ev *e)
{
	struct val r;

	if (accept(e, "-")) {
		r = unary(e);
		r.v = -r.v;
	} else if (accept(e, "+")) {
		r = unary(e);
	} else if (accept(e, "~")) {
		r = unary(e);
		r.v = ~r.v;
	} else if (accept(e, "!")) {
		r = unary(e);
		r = (struct val){!r.v, false};
	} else {
		r = primary(e);
	}
	return r;
}

static struct val binop(struct ev *e, int level);

static const char *const levels[][6] = {
    {"||"},	  {"&&"},     {"|"},	       {"^"}, {"&"}, {"==", "!="}, {"<=", ">=", "<", ">"},
    {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
};
#define NLEVELS (int) (sizeof(levels) / sizeof(levels[0]))

static struct val apply(struct ev *e, const char *op, struct val a, struct val b)
{
	bool u = a.u || b.u;
	int64_t x = (int64_t) a.v, y = (int64_t) b.v;
	struct val r = {0, u};

	if (!strcmp(op, "||"))
		return (struct val){a.v || b.v, false};
	if (!strcmp(op, "&&"))
		return (struct val){a.v && b.v, false};
	if (!strcmp(op, "|"))
		r.v = a.v | b.v;
	else if (!strcmp(op, "^"))
		r.v = a.v ^ b.v;
	else if (!strcmp(op, "&"))
		r.v = a.v & b.v;
	else if (!strcmp(op, "=="))
		return (struct val){a.v == b.v, false};
	else if (!strcmp(op, "!="))
		return (struct val){a.v != b.v, false};
	else if (!strcmp(op, "<"))
		return (struct val){u ? a.v < b.v : x < y, false};
	else if (!strcmp(op, ">"))
		return (struct val){u ? a.v > b.v : x > y, false};
	else if (!strcmp(op, "<="))
		return (struct val){u ? a.v <= b.v : x <= y, false};
	else if (!strcmp(op, ">="))
		return (struct val){u ? a.v >= b.v : x >= y, false};
	else if (!strcmp(op, "<<"))
		r = (struct val){b.v < 64 ? a.v << b.v : 0, a.u};
	else if (!strcmp(op, ">>"))
		r = (struct val){b.v >= 64 ? 0 : a.u ? a.v >> b.v : (uint64_t) (x >> b.v), a.u};
	else if (!strcmp(op, "+"))
		r.v = a.v + b.v;
	else if (!strcmp(op, "-"))
		r.v = a.v - b.v;
	else if (!strcmp(op, "*"))
		r.v = a.v * b.v;
	else if (!b.v)
		e->bad = true;
	else if (!strcmp(op, "/"))
		r.v = u ? a.v / b.v : (uint64_t) (x / y);
	else
		r.v = u ? a.v % b.v : (uint64_t) (x % y);
	return r;
}

static struct val binop(struct ev *e, int level)
{
	struct val a;

	if (level == NLEVELS)
		return unary(e);
	a = binop(e, level + 1);
	while (!e->bad) {
		const char *op = NULL;
		int i;

		for (i = 0; i < 6 && levels[level][i]; i++)
			if (accept(e, levels[level][i])) {
				op = levels[level][i];
				break;
			}
		if (!op)
			break;
		a = apply(e, op, a, binop(e, level + 1));
	}
	return a;
}

static struct val cond(struct ev *e)
{
	struct val c = binop(e, 0), a, b;

	if (!accept(e, "?"))
		return c;
	a = cond(e);
	if (!accept(e, ":"))
		e->bad = true;
	b = cond(e);
	return c.v ? a : b;
}

static int eval_text(struct dwarf_types *dt, const char *text, size_t len,
		     const struct active *active, int depth, struct val *out)
{
	char *buf;
	struct ev e = {dt, NULL, active, depth, false};

	/* depth bounds the nesting; steps the whole (a macro used twice per level doubles) */
	if (depth > 32 || ++dt->macro_steps > DWARF_MAX_MACRO_STEPS ||
	    (dt->macro_text += len) > DWARF_MAX_MACRO_TEXT)
		return -1;
	/* text is a slice (a macro's expansion has no NUL): copied whole, then ended */
	buf = malloc(len + 1);
	if (!buf)
		return -1;
	memcpy(buf, text, len);
	buf[len] = '\0';
	e.p = buf;
	*out = cond(&e);
	skip_ws(&e);
	if (*e.p)
		e.bad = true;
	free(buf);
	return e.bad ? -1 : 0;
}

int dt_eval(struct dwarf_types *dt, const char *text, size_t len, int64_t *value)
{
	struct val v;

	dt->macro_steps = 0;
	dt->macro_text = 0;
	if (eval_text(dt, text, len, NULL, 0, &v))
		return -1;
	*value = (int64_t) v.v;
	return 0;
}
