// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Two reports compared, by names (diff.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "sort.h"

static const char *const titles[DIFF_TABLES] = {"classes", "sites", "call paths", "holders"};
static const char *const figures[DIFF_TABLES][DIFF_FIGURES] = {
	{"retained", "live", "bytes"},
	{"retained", "allocated", "freed"},
	{"retained", "allocated", "freed"},
	{"dominated_bytes", "dominated_objects", "entries"},
};

/* The row named name (interned) of t, created if new; NULL when out of memory. */
static struct diff_row *row(struct report_diff *d, struct diff_table *t, const char *name)
{
	const char *key = strpool_intern(&d->strings, name);
	uintptr_t at;

	if (!key)
		return NULL;
	at = (uintptr_t)u64map_get(&t->index, (uint64_t)(uintptr_t)key);
	if (at)
		return &t->v[at - 1];
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct diff_row *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	if (u64map_put(&t->index, (uint64_t)(uintptr_t)key, (void *)(uintptr_t)(t->n + 1)))
		return NULL;
	t->v[t->n] = (struct diff_row){.name = key};
	return &t->v[t->n++];
}

/* Adds figures to the row name of table, on the side of new or base. */
static int add(struct report_diff *d, int table, const char *name, bool is_new, int64_t a,
	       int64_t b, int64_t c)
{
	struct diff_row *r = row(d, &d->t[table], name);
	int64_t *f;

	if (!r)
		return -ENOMEM;
	f = is_new ? r->now : r->base;
	*(is_new ? &r->in_new : &r->in_base) = true;
	f[0] += a;
	f[1] += b;
	f[2] += c;
	return 0;
}

static uint64_t retained_of(const struct report *r, const struct counts *c,
			    const struct estimates *e)
{
	return r->have_estimates ? e->retained : c->retained;
}

static int add_classes(struct report_diff *d, const struct report *r, bool is_new)
{
	size_t i;
	int err = 0;

	for (i = 0; !err && i < r->nrows; i++) {
		const struct class_row *c = &r->rows[i];

		err = add(d, DIFF_CLASSES, c->name, is_new, retained_of(r, &c->counts, &c->est),
			  c->census.live_end, c->census.bytes_end);
	}
	for (i = 0; !err && i < r->nsites; i++) {
		const struct site_row *s = &r->sites[i];
		char name[REPORT_NAME_MAX];

		snprintf(name, sizeof(name), "%s %s:%d", s->class_name, s->path ? s->path : "?",
			 s->line);
		err = add(d, DIFF_SITES, name, is_new, retained_of(r, &s->counts, &s->est),
			  s->counts.allocated, s->counts.freed);
	}
	return err;
}

/* A call path by names, root first, ';' between, the class last (folded's shape). */
static int add_paths(struct report_diff *d, const struct report *r, bool is_new)
{
	static char names[REPORT_PATH_SLOTS][REPORT_NAME_MAX];
	const char *path[REPORT_PATH_SLOTS];
	size_t i, k, n, len;
	char *buf = malloc(REPORT_PATH_SLOTS * REPORT_NAME_MAX);
	int err = buf ? 0 : -ENOMEM;

	for (i = 0; !err && i < r->nstacks; i++) {
		const struct stack_row *s = &r->stacks[i];

		n = report_path_root_first(s, names, path);
		for (k = 0, len = 0; k < n; k++) {
			int w = snprintf(buf + len, REPORT_NAME_MAX, "%s%s", k ? ";" : "", path[k]);

			len += w < REPORT_NAME_MAX ? (size_t)w : REPORT_NAME_MAX - 1;
		}
		err = add(d, DIFF_PATHS, buf, is_new, retained_of(r, &s->counts, &s->est),
			  s->counts.allocated, s->counts.freed);
	}
	free(buf);
	return err;
}

/* A holder by its path: "constant App::CACHE > @items Array > {value} Hash". */
static int add_holders(struct report_diff *d, const struct report *r, bool is_new)
{
	char name[2048];
	size_t i, k, len;
	int err = 0;

	for (i = 0; !err && r->verdict && i < r->verdict->n; i++) {
		const struct verdict_point *p = &r->verdict->points[i];

		len = (size_t)snprintf(name, sizeof(name), "%s %s", p->root_kind ?: "?",
				       p->root_name ?: "");
		for (k = 0; k < p->nedges && len < sizeof(name); k++)
			len += (size_t)snprintf(name + len, sizeof(name) - len, " > %s %s",
						p->edges[k].via ?: "?", p->edges[k].class_name ?: "?");
		err = add(d, DIFF_HOLDERS, name, is_new, (int64_t)p->dominated_bytes,
			  (int64_t)p->dominated_objects, p->size_after);
	}
	return err;
}

static int64_t abs_change(const struct diff_row *r)
{
	int64_t c = r->now[0] - r->base[0];

	return c < 0 ? -c : c;
}

static int by_change(const void *a, const void *b)
{
	int64_t x = abs_change(a), y = abs_change(b);

	if (x != y)
		return x < y ? 1 : -1;
	return strcmp(((const struct diff_row *)a)->name, ((const struct diff_row *)b)->name);
}

static void describe(char *buf, size_t n, const struct report *r)
{
	if (r->merged > 1)
		snprintf(buf, n, "%u reports merged, %.1f s", r->merged, r->duration_s);
	else
		snprintf(buf, n, "pid %d%s%s%s%s, %.1f s", (int)r->pid, r->command[0] ? " (" : "",
			 r->command, r->command[0] ? ")" : "", r->host[0] ? " on a host" : "",
			 r->duration_s);
}

static bool share_a_class(const struct report_diff *d)
{
	size_t i;

	for (i = 0; i < d->t[DIFF_CLASSES].n; i++)
		if (d->t[DIFF_CLASSES].v[i].in_base && d->t[DIFF_CLASSES].v[i].in_new)
			return true;
	return false;
}

int report_diff(const struct report *base, const struct report *now, struct report_diff *d,
		char *err, size_t n)
{
	int i, ret = 0;

	memset(d, 0, sizeof(*d));
	for (i = 0; i < DIFF_TABLES; i++) {
		d->t[i].title = titles[i];
		memcpy(d->t[i].figures, figures[i], sizeof(d->t[i].figures));
	}
	describe(d->base_what, sizeof(d->base_what), base);
	describe(d->new_what, sizeof(d->new_what), now);
	d->same_process = base->merged <= 1 && now->merged <= 1 && base->pid == now->pid &&
			  !strcmp(base->host, now->host) && !strcmp(base->command, now->command);
	d->estimated = base->have_estimates || now->have_estimates;
	for (i = 0; i < 2 && !ret; i++) {
		const struct report *r = i ? now : base;

		ret = add_classes(d, r, i);
		if (!ret)
			ret = add_paths(d, r, i);
		if (!ret)
			ret = add_holders(d, r, i);
	}
	if (ret)
		return ret;
	if (!share_a_class(d)) {
		snprintf(err, n, "the reports cannot be compared: they share no class (%s; %s)",
			 d->base_what, d->new_what);
		return -EINVAL;
	}
	for (i = 0; i < DIFF_TABLES; i++)
		sort_array(d->t[i].v, d->t[i].n, sizeof(*d->t[i].v), by_change);
	return 0;
}

void report_diff_free(struct report_diff *d)
{
	int i;

	for (i = 0; i < DIFF_TABLES; i++) {
		free(d->t[i].v);
		u64map_free(&d->t[i].index, NULL);
	}
	strpool_free(&d->strings);
}
