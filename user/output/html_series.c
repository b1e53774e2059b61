// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A series for the HTML page: the period reports of a continuous trace
 * (trace --every, merged) by process, oldest first, with each class's live
 * objects and bytes at every period's end (the census's) and each holder
 * of the periods' leak verdicts with what it keeps alive (dominated_bytes).
 * With each class, its live objects at every period's end by the period
 * they were born in (classes[].born of the reports): what the page's
 * "allocated between t0 and t1, still alive at t2" sums.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "html_data.h"
#include "sort.h"

static const struct model *sort_model; /* sort_array has no argument: one series at a time */

static int by_process_then_time(const void *a, const void *b)
{
	const struct report *x = sort_model->procs[*(const size_t *)a];
	const struct report *y = sort_model->procs[*(const size_t *)b];
	int c = strcmp(x->host, y->host);

	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->period.number != y->period.number)
		return x->period.number < y->period.number ? -1 : 1;
	return 0;
}

static bool same_process(const struct report *x, const struct report *y)
{
	return x->pid == y->pid && !strcmp(x->host, y->host);
}

/* The class row of name in r, or NULL. */
static const struct class_row *row_of(const struct report *r, const char *name)
{
	uintptr_t at = (uintptr_t)u64map_get(&r->by_name, str_hash(name));
	size_t i;

	if (at && at <= r->nrows && !strcmp(r->rows[at - 1].name, name))
		return &r->rows[at - 1];
	for (i = 0; i < r->nrows; i++) /* a hash collision, or a report without its index */
		if (!strcmp(r->rows[i].name, name))
			return &r->rows[i];
	return NULL;
}

/* The [birth period, live] pairs of the class over the series. */
static size_t born_pairs(const struct report *const *p, size_t n, const char *name)
{
	size_t k, pairs = 0;

	for (k = 0; k < n; k++) {
		const struct class_row *c = row_of(p[k], name);

		pairs += c && c->have_born ? c->nborn : 0;
	}
	return pairs;
}

/*
 * The class's live objects at each period's end by birth period: per
 * period, [birth period, live] pairs (none when the class had none or the
 * report does not tell); null when they would take the page past *budget
 * pairs (a long series: periods times periods), which they are taken from.
 */
static bool write_born(struct jw *w, const struct report *const *p, size_t n, const char *name,
		       size_t *budget)
{
	size_t k, i, pairs = born_pairs(p, n, name);

	if (pairs > *budget) {
		jw_null(w, "born");
		return false;
	}
	*budget -= pairs;
	jw_array(w, "born", JW_COMPACT);
	for (k = 0; k < n; k++) {
		const struct class_row *c = row_of(p[k], name);

		jw_array(w, NULL, JW_COMPACT);
		for (i = 0; c && c->have_born && i < c->nborn; i++) {
			jw_array(w, NULL, JW_COMPACT);
			jw_u64(w, NULL, c->born[i].period);
			jw_u64(w, NULL, c->born[i].live);
			jw_end(w);
		}
		jw_end(w);
	}
	jw_end(w);
	return true;
}

/* Whether every period's report tells its classes' births (one row that does is enough). */
static bool all_born(const struct report *const *p, size_t n)
{
	size_t k, i;

	for (k = 0; k < n; k++) {
		for (i = 0; i < p[k]->nrows && !p[k]->rows[i].have_born; i++)
			;
		if (i == p[k]->nrows)
			return false;
	}
	return true;
}

/*
 * The classes of the series' last period, by live objects: what the chart
 * may draw; the births of as many as budget pairs hold.  Returns the
 * classes whose births were left out.
 */
static size_t write_classes(struct jw *w, const struct report *const *p, size_t n, size_t budget)
{
	const struct report *last = p[n - 1];
	size_t i, k, left_out = 0;

	jw_array(w, "classes", JW_LINES);
	for (i = 0; i < last->nrows && i < HTML_MAX_SERIES_CLASSES; i++) {
		const char *name = last->rows[i].name;

		jw_object(w, NULL, JW_COMPACT);
		html_string(w, "name", name);
		jw_array(w, "live", JW_COMPACT);
		for (k = 0; k < n; k++) {
			const struct class_row *c = row_of(p[k], name);

			jw_u64(w, NULL, c && c->census.have ? c->census.live_end : 0);
		}
		jw_end(w);
		jw_array(w, "bytes", JW_COMPACT);
		for (k = 0; k < n; k++) {
			const struct class_row *c = row_of(p[k], name);

			jw_u64(w, NULL, c && c->census.have ? c->census.bytes_end : 0);
		}
		jw_end(w);
		left_out += !write_born(w, p, n, name, &budget);
		jw_end(w);
	}
	jw_end(w);
	return left_out;
}

/* Each period's verdict points: the holder and what it keeps alive then. */
static void write_holders(struct jw *w, const struct report *const *p, size_t n)
{
	size_t k, i, j;

	jw_array(w, "holders", JW_LINES);
	for (k = 0; k < n; k++) {
		const struct verdict *v = p[k]->verdict;

		for (i = 0; v && i < v->n; i++) {
			const struct verdict_point *pt = &v->points[i];

			jw_object(w, NULL, JW_COMPACT);
			jw_u64(w, "period", k);
			html_string(w, "root", pt->root_name);
			jw_array(w, "edges", JW_COMPACT);
			for (j = 0; j < pt->nedges; j++)
				html_string(w, NULL, pt->edges[j].via);
			jw_end(w);
			jw_u64(w, "dominated_bytes", pt->dominated_bytes);
			jw_i64(w, "grew_objects", pt->grew_objects);
			jw_end(w);
		}
	}
	jw_end(w);
}

static void write_one(struct jw *w, const struct report *const *p, size_t n, size_t max_pairs)
{
	size_t k;

	jw_object(w, NULL, JW_LINES);
	jw_int(w, "pid", p[0]->pid);
	html_string(w, "host", p[0]->host);
	html_string(w, "command", p[0]->command);
	jw_array(w, "times", JW_COMPACT);
	for (k = 0; k < n; k++)
		jw_double(w, NULL, "%.3f", p[k]->period.time);
	jw_end(w);
	jw_array(w, "numbers", JW_COMPACT);
	for (k = 0; k < n; k++)
		jw_u64(w, NULL, p[k]->period.number);
	jw_end(w);
	jw_bool(w, "cohorts", all_born(p, n));
	jw_u64(w, "born_left_out", write_classes(w, p, n, max_pairs));
	write_holders(w, p, n);
	jw_end(w);
}

int html_series_members(struct jw *w, const struct model *m)
{
	return html_series_members_capped(w, m, HTML_MAX_COHORT_PAIRS);
}

int html_series_members_capped(struct jw *w, const struct model *m, size_t max_pairs)
{
	size_t *order = calloc(m->nprocs + 1, sizeof(*order));
	const struct report **p = calloc(m->nprocs + 1, sizeof(*p));
	size_t n = 0, i, j;

	if (!order || !p) {
		free(order);
		free(p);
		return -ENOMEM;
	}
	for (i = 0; i < m->nprocs; i++)
		if (m->procs[i]->period.on || m->procs[i]->period.read_back)
			order[n++] = i;
	sort_model = m;
	sort_array(order, n, sizeof(*order), by_process_then_time);
	for (i = 0; i < n; i++)
		p[i] = m->procs[order[i]];
	jw_array(w, "series", JW_LINES);
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && same_process(p[i], p[j]); j++)
			;
		if (j - i >= 2) /* one period is no series */
			write_one(w, p + i, j - i, max_pairs);
	}
	jw_end(w);
	free(order);
	free(p);
	return 0;
}
