// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Two reports compared (model/diff.h): as text (each table's largest
 * changes first, --top of them), as JSON (every row), and as the data of
 * the HTML page's tables (html.c).
 */
#include <inttypes.h>
#include "diff_out.h"
#include "escape.h"
#include "html_data.h"
#include "json_keys.h"

static void text_table(FILE *out, const struct diff_table *t, size_t top)
{
	char name[REPORT_NAME_MAX * 2];
	size_t i, shown = 0, more = 0;

	fprintf(out, "\n%s, largest change of %s first:\n", t->title, t->figures[0]);
	fprintf(out, "  %14s %14s %14s  %s\n", "base", "new", "change", "name");
	for (i = 0; i < t->n && (!top || shown < top); i++) {
		const struct diff_row *r = &t->v[i];

		if (r->now[0] == r->base[0])
			continue;
		fprintf(out, "  %14" PRId64 " %14" PRId64 " %+14" PRId64 "  %s%s\n", r->base[0],
			r->now[0], r->now[0] - r->base[0], term_escape(r->name, name, sizeof(name)),
			!r->in_base ? " (new)" : !r->in_new ? " (gone)" : "");
		shown++;
	}
	if (!t->n)
		fputs("  (none in either report)\n", out);
	else if (!shown)
		fputs("  (no change)\n", out);
	for (; i < t->n; i++)
		more += t->v[i].now[0] != t->v[i].base[0];
	if (more)
		fprintf(out, "  ... %zu more that changed (--top 0: all)\n", more);
}

void diff_write_text(FILE *out, const struct report_diff *d, size_t top)
{
	char a[640], b[640];
	int i;

	fprintf(out, "rbmemtrace diff\n  base: %s\n  new:  %s\n",
		term_escape(d->base_what, a, sizeof(a)), term_escape(d->new_what, b, sizeof(b)));
	if (!d->same_process)
		fputs("  (two processes, or merged reports: compared by class, site and path names)\n",
		      out);
	if (d->estimated)
		fputs("  (a sampled report: its retained figures are estimates)\n", out);
	for (i = 0; i < DIFF_TABLES; i++)
		text_table(out, &d->t[i], top);
}

static void figures(struct jw *w, const char *key, const int64_t *a, const int64_t *b)
{
	int k;

	jw_array(w, key, JW_INLINE);
	for (k = 0; k < DIFF_FIGURES; k++)
		jw_i64(w, NULL, b ? a[k] - b[k] : a[k]);
	jw_end(w);
}

/* A table's rows, at most max of them (0: all), and how many were left out. */
static void table_members(struct jw *w, const struct diff_table *t, size_t max, bool html)
{
	size_t i, n = max && t->n > max ? max : t->n;
	int k;

	jw_string(w, JK(name), t->title);
	jw_array(w, JK(figures), JW_INLINE);
	for (k = 0; k < DIFF_FIGURES; k++)
		jw_string(w, NULL, t->figures[k]);
	jw_end(w);
	jw_array(w, JK(rows), JW_LINES);
	for (i = 0; i < n; i++) {
		jw_object(w, NULL, JW_INLINE);
		if (html)
			html_string(w, JK(name), t->v[i].name);
		else
			jw_string(w, JK(name), t->v[i].name);
		figures(w, JK(base), t->v[i].base, NULL);
		figures(w, JK(new), t->v[i].now, NULL);
		figures(w, JK(change), t->v[i].now, t->v[i].base);
		jw_end(w);
	}
	jw_end(w);
	jw_u64(w, JK(rows_left_out), t->n - n);
}

static void diff_members(struct jw *w, const struct report_diff *d, size_t max, bool html)
{
	int i;

	if (html) {
		html_string(w, JK(base), d->base_what);
		html_string(w, JK(new), d->new_what);
	} else {
		jw_string(w, JK(base), d->base_what);
		jw_string(w, JK(new), d->new_what);
	}
	jw_bool(w, JK(same_process), d->same_process);
	jw_bool(w, JK(estimated), d->estimated);
	jw_array(w, JK(tables), JW_LINES);
	for (i = 0; i < DIFF_TABLES; i++) {
		jw_object(w, NULL, JW_LINES);
		table_members(w, &d->t[i], max, html);
		jw_end(w);
	}
	jw_end(w);
}

void diff_write_json(FILE *out, const struct report_diff *d)
{
	struct jw w;

	jw_init(&w, out, 0);
	jw_object(&w, NULL, JW_LINES);
	jw_string(&w, JK(rbmemtrace_version), RBMEMTRACE_VERSION);
	jw_object(&w, JK(diff), JW_LINES);
	diff_members(&w, d, 0, false);
	jw_end(&w);
	jw_end(&w);
	fputc('\n', out);
}

int html_diff_members(struct jw *w, const struct report_diff *d)
{
	jw_object(w, "diff", JW_LINES);
	diff_members(w, d, HTML_MAX_CLASSES, true);
	jw_end(w);
	return 0;
}
