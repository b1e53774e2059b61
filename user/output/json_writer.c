// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include "escape.h"
#include "json_writer.h"

void jw_init(struct jw *w, FILE *out, unsigned indent)
{
	w->out = out;
	w->depth = 0;
	w->indent = indent;
	w->html = false;
}

static enum jw_style style(const struct jw *w)
{
	return w->depth ? w->level[w->depth - 1].style : JW_LINES;
}

/* The separator and, inside an object, the name before a member. */
static void member(struct jw *w, const char *key)
{
	bool compact = style(w) == JW_COMPACT;

	if (w->depth) {
		struct jw_level *l = &w->level[w->depth - 1];

		if (!l->empty)
			fputs(compact ? "," : l->style == JW_LINES ? "," : ", ", w->out);
		if (l->style == JW_LINES)
			fprintf(w->out, "\n%*s", l->indent + 2, "");
		l->empty = false;
	}
	if (key) {
		json_write_string(w->out, key);
		fputs(compact ? ":" : ": ", w->out);
	}
}

static void open_container(struct jw *w, const char *key, enum jw_style st, char c, bool array)
{
	unsigned indent = w->indent;

	member(w, key);
	if (w->depth) {
		struct jw_level *p = &w->level[w->depth - 1];

		indent = p->indent + 2;
		if (p->style != JW_LINES)
			st = p->style; /* nothing spans lines inside a line */
	}
	fputc(c, w->out);
	if (w->depth < JW_MAX_DEPTH) {
		w->level[w->depth].style = st;
		w->level[w->depth].indent = indent;
		w->level[w->depth].empty = true;
		w->level[w->depth].array = array;
	}
	w->depth++;
}

void jw_object(struct jw *w, const char *key, enum jw_style st)
{
	open_container(w, key, st, '{', false);
}

void jw_array(struct jw *w, const char *key, enum jw_style st)
{
	open_container(w, key, st, '[', true);
}

void jw_end(struct jw *w)
{
	struct jw_level *l;

	if (!w->depth)
		return;
	l = &w->level[--w->depth];
	if (l->style == JW_LINES && !l->empty)
		fprintf(w->out, "\n%*s", l->indent, "");
	fputc(l->array ? ']' : '}', w->out);
}

void jw_u64(struct jw *w, const char *key, uint64_t v)
{
	member(w, key);
	fprintf(w->out, "%" PRIu64, v);
}

void jw_i64(struct jw *w, const char *key, int64_t v)
{
	member(w, key);
	fprintf(w->out, "%" PRId64, v);
}

void jw_int(struct jw *w, const char *key, int v)
{
	member(w, key);
	fprintf(w->out, "%d", v);
}

void jw_bool(struct jw *w, const char *key, bool v)
{
	member(w, key);
	fputs(v ? "true" : "false", w->out);
}

void jw_null(struct jw *w, const char *key)
{
	member(w, key);
	fputs("null", w->out);
}

void jw_double(struct jw *w, const char *key, const char *fmt, double v)
{
	member(w, key);
	fprintf(w->out, fmt, v);
}

void jw_string(struct jw *w, const char *key, const char *s)
{
	member(w, key);
	if (s && w->html)
		json_write_string_html(w->out, s);
	else if (s)
		json_write_string(w->out, s);
	else
		fputs("null", w->out);
}
