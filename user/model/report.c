// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"

void counts_add(struct counts *to, const struct counts *c)
{
	to->allocated += c->allocated;
	to->freed += c->freed;
	to->retained += c->retained;
	to->young += c->young;
	to->untracked += c->untracked;
	to->not_followed += c->not_followed;
	to->w_allocated += c->w_allocated;
	to->w_retained += c->w_retained;
	to->w_freed += c->w_freed;
	to->window_bits |= c->window_bits;
}

unsigned counts_windows(const struct counts *c)
{
	return (unsigned)__builtin_popcountll(c->window_bits);
}

bool estimate_from_few_windows(const struct report *r, const struct counts *c)
{
	unsigned n = counts_windows(c);

	return r->have_estimates && r->sampling.windows >= 4 && n >= 1 && n <= 2;
}

static const char *const est_source_names[] = {
    [EST_SAMPLED] = "sampled",
    [EST_BOUNDED] = "bounded",
    [EST_HEAP] = "heap",
};

const char *est_source_name(enum est_source s)
{
	return s <= EST_HEAP ? est_source_names[s] : "sampled";
}

enum est_source est_source_of(const char *name)
{
	unsigned i;

	for (i = 0; name && i <= EST_HEAP; i++)
		if (strcmp(name, est_source_names[i]) == 0)
			return i;
	return EST_SAMPLED;
}

bool class_estimate_rough(const struct report *r, const struct class_row *row)
{
	return row->est_source == EST_SAMPLED && estimate_from_few_windows(r, &row->counts);
}

static void ages_add(struct ages *to, const struct ages *a)
{
	unsigned i;

	if (a)
		for (i = 0; i < AGE_BUCKETS; i++)
			to->n[i] += a->n[i];
}

void estimates_add(struct estimates *to, const struct estimates *e)
{
	if (!e)
		return;
	to->allocated += e->allocated;
	to->retained += e->retained;
	to->freed += e->freed;
}

unsigned age_bucket(uint64_t gcs)
{
	unsigned b = 0;

	/* 1, 2, 3-4, 5-8, ...: the bucket of n > 1 is ceil(log2(n)). */
	if (gcs <= 1)
		return 0;
	for (gcs -= 1; gcs && b < AGE_BUCKETS - 1; gcs >>= 1)
		b++;
	return b;
}

uint64_t age_bucket_low(unsigned b)
{
	return b == 0 ? 1 : (1ULL << (b - 1)) + 1;
}

static void *grow_array(void *array, size_t *cap, size_t len, size_t size)
{
	void *bigger;

	if (len < *cap)
		return array;
	bigger = realloc(array, (*cap ? *cap * 2 : 64) * size);
	if (bigger)
		*cap = *cap ? *cap * 2 : 64;
	return bigger;
}

struct class_row *report_row(struct report *r, const char *name)
{
	uint64_t h = str_hash(name);
	uintptr_t at = (uintptr_t)u64map_get(&r->by_name, h);
	struct class_row *rows;
	size_t i;

	/* A hash collision falls back to a scan; it only costs time. */
	if (at && strcmp(r->rows[at - 1].name, name) != 0) {
		at = 0;
		for (i = 0; i < r->nrows && !at; i++)
			if (strcmp(r->rows[i].name, name) == 0)
				at = i + 1;
	}
	if (at)
		return &r->rows[at - 1];
	rows = grow_array(r->rows, &r->cap, r->nrows, sizeof(*rows));
	if (!rows)
		return NULL;
	r->rows = rows;
	memset(&rows[r->nrows], 0, sizeof(rows[r->nrows]));
	rows[r->nrows].name = strdup(name);
	if (!rows[r->nrows].name)
		return NULL;
	r->nrows++;
	if (!u64map_get(&r->by_name, h))
		u64map_put(&r->by_name, h, (void *)(uintptr_t)r->nrows);
	return &rows[r->nrows - 1];
}

int report_add(struct report *r, const char *name, const struct counts *c)
{
	struct class_row *row = report_row(r, name);

	if (!row)
		return -ENOMEM;
	counts_add(&row->counts, c);
	return 0;
}

int report_set_census(struct report *r, const char *name, const struct census_counts *cc)
{
	struct class_row *row = report_row(r, name);

	if (!row)
		return -ENOMEM;
	row->census = *cc;
	row->census.have = true;
	return 0;
}

struct class_row *report_find_row(struct report *r, const char *name)
{
	uintptr_t at = (uintptr_t)u64map_get(&r->by_name, str_hash(name));
	size_t i;

	if (at && at <= r->nrows && !strcmp(r->rows[at - 1].name, name))
		return &r->rows[at - 1];
	for (i = 0; i < r->nrows; i++) /* a hash collision */
		if (!strcmp(r->rows[i].name, name))
			return &r->rows[i];
	return NULL;
}

static uint64_t hash_more(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL; /* separator: "ab","c" differs from "a","bc" */
}

static uint64_t hash_int(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ULL;
}

void frame_display_name(const struct frame *f, char *buf, size_t n)
{
	if (frame_is_ruby(f))
		snprintf(buf, n, "%s (%s:%d)", f->label, f->path, f->line);
	else
		snprintf(buf, n, "%s", f->label);
}

static bool same_stack(const struct stack *a, const struct stack *b)
{
	size_t i;

	if (a == b)
		return true;
	if (a->depth != b->depth || a->truncated != b->truncated)
		return false;
	for (i = 0; i < a->depth; i++)
		if (a->frames[i].line != b->frames[i].line ||
		    strcmp(a->frames[i].label, b->frames[i].label) ||
		    strcmp(a->frames[i].path, b->frames[i].path))
			return false;
	return true;
}

static int add_site(struct report *r, const char *class_name, const struct frame *f,
		    const struct counts *c, const struct estimates *est, const struct ages *ages)
{
	uint64_t key = hash_int(hash_more(hash_more(0xcbf29ce484222325ULL, class_name), f->path),
				f->line);
	uintptr_t at = (uintptr_t)u64map_get(&r->sites_by_key, key ? key : 1);
	struct site_row *row, *sites;

	if (at) {
		row = &r->sites[at - 1];
		if (row->line == f->line && !strcmp(row->path, f->path) &&
		    !strcmp(row->class_name, class_name)) {
			counts_add(&row->counts, c);
			estimates_add(&row->est, est);
			ages_add(&row->ages, ages);
			return 0;
		}
	}
	sites = grow_array(r->sites, &r->sites_cap, r->nsites, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	r->sites = sites;
	row = &r->sites[r->nsites];
	memset(row, 0, sizeof(*row));
	row->class_name = strdup(class_name);
	row->path = strpool_intern(&r->strings, f->path);
	if (!row->class_name || !row->path) {
		free(row->class_name);
		return -ENOMEM;
	}
	row->line = f->line;
	row->counts = *c;
	estimates_add(&row->est, est);
	ages_add(&row->ages, ages);
	r->nsites++;
	if (!at)
		u64map_put(&r->sites_by_key, key ? key : 1, (void *)(uintptr_t)r->nsites);
	return 0;
}

/* A copy of st whose strings live in the report's pool. */
static struct stack *copy_stack(struct report *r, const struct stack *st)
{
	struct stack *copy = calloc(1, sizeof(*copy) + st->depth * sizeof(struct frame));
	size_t i;

	if (!copy)
		return NULL;
	copy->depth = st->depth;
	copy->truncated = st->truncated;
	copy->frames = (struct frame *)(copy + 1);
	for (i = 0; i < st->depth; i++) {
		copy->frames[i].label = strpool_intern(&r->strings, st->frames[i].label);
		copy->frames[i].path = strpool_intern(&r->strings, st->frames[i].path);
		copy->frames[i].line = st->frames[i].line;
		if (!copy->frames[i].label || !copy->frames[i].path) {
			free(copy);
			return NULL;
		}
	}
	return copy;
}

static int add_path(struct report *r, const char *class_name, const struct stack *st,
		    const struct counts *c, const struct estimates *est, const struct ages *ages)
{
	uint64_t key = hash_more(0xcbf29ce484222325ULL, class_name);
	struct stack_row *row, *rows;
	uintptr_t at;
	size_t i;

	for (i = 0; i < st->depth; i++)
		key = hash_int(hash_more(hash_more(key, st->frames[i].label), st->frames[i].path),
			       st->frames[i].line);
	key = hash_int(key, st->truncated);
	at = (uintptr_t)u64map_get(&r->stacks_by_key, key ? key : 1);
	if (at) {
		row = &r->stacks[at - 1];
		if (same_stack(row->stack, st) && !strcmp(row->class_name, class_name)) {
			counts_add(&row->counts, c);
			estimates_add(&row->est, est);
			ages_add(&row->ages, ages);
			return 0;
		}
	}
	rows = grow_array(r->stacks, &r->stacks_cap, r->nstacks, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	r->stacks = rows;
	row = &r->stacks[r->nstacks];
	memset(row, 0, sizeof(*row));
	row->class_name = strdup(class_name);
	row->stack = copy_stack(r, st);
	if (!row->class_name || !row->stack) {
		free(row->class_name);
		free((void *)row->stack);
		return -ENOMEM;
	}
	row->counts = *c;
	estimates_add(&row->est, est);
	ages_add(&row->ages, ages);
	r->nstacks++;
	if (!at)
		u64map_put(&r->stacks_by_key, key ? key : 1, (void *)(uintptr_t)r->nstacks);
	return 0;
}

const struct frame *stack_site(const struct stack *st)
{
	size_t i;

	for (i = 0; st && i < st->depth; i++)
		if (!frame_is_cfunc(&st->frames[i]))
			return &st->frames[i];
	return NULL;
}

static int add_stack(struct report *r, const char *class_name, const struct stack *st,
		     const struct counts *c, const struct estimates *est, const struct ages *ages)
{
	const struct frame *site;
	int err;

	if (!st || !st->depth)
		return 0;
	site = stack_site(st);
	if (site) {
		err = add_site(r, class_name, site, c, est, ages);
		if (err)
			return err;
	}
	return st->site_only ? 0 : add_path(r, class_name, st, c, est, ages);
}

int report_add_stack(struct report *r, const char *class_name, const struct stack *st,
		     const struct counts *c)
{
	return add_stack(r, class_name, st, c, NULL, NULL);
}

int report_add_ages(struct report *r, const char *name, const struct ages *a)
{
	struct class_row *row = report_row(r, name);

	if (!row)
		return -ENOMEM;
	ages_add(&row->ages, a);
	return 0;
}

void counts_of_tally(const struct tally *t, struct counts *c)
{
	uint64_t accounted = t->retained + t->young + t->untracked + t->not_followed;
	/* Objects no pass saw (untracked, not followed) weigh what their tally's do on average. */
	double mean = t->allocated ? (double) t->w_allocated / t->allocated : 0;
	double w_accounted = (double) t->w_retained + (double) t->w_young +
			     mean * (double) (t->untracked + t->not_followed);

	memset(c, 0, sizeof(*c));
	c->allocated = t->allocated;
	c->retained = t->retained;
	c->young = t->young;
	c->untracked = t->untracked;
	c->not_followed = t->not_followed;
	c->freed = t->allocated > accounted ? t->allocated - accounted : 0;
	c->window_bits = t->window_bits;
	c->w_allocated = (double) t->w_allocated / RBM_WEIGHT_ONE;
	c->w_retained = (double) t->w_retained / RBM_WEIGHT_ONE;
	c->w_freed = t->w_allocated > w_accounted ? (t->w_allocated - w_accounted) / RBM_WEIGHT_ONE
						  : 0;
}

int report_add_tally(struct report *r, const char *class_name, const struct stack *st,
		     const struct tally *t)
{
	struct counts c;

	counts_of_tally(t, &c);
	return report_add_counts(r, class_name, st, &c, &t->ages);
}

int report_add_counts(struct report *r, const char *class_name, const struct stack *st,
		      const struct counts *c, const struct ages *a)
{
	struct class_row *row = report_row(r, class_name);

	if (!row)
		return -ENOMEM;
	counts_add(&row->counts, c);
	ages_add(&row->ages, a);
	return st ? add_stack(r, class_name, st, c, NULL, a) : 0;
}

int report_add_retainer(struct report *r, const char *class_name, const char *root_kind,
			const char *path, uint64_t count, uint64_t live)
{
	struct report_retainer *n = realloc(r->retainers, (r->nretainers + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	r->retainers = n;
	n = &r->retainers[r->nretainers];
	n->class_name = strdup(class_name);
	n->root_kind = strdup(root_kind);
	n->path = strdup(path);
	n->count = count;
	n->live = live;
	if (!n->class_name || !n->root_kind || !n->path) {
		free(n->class_name);
		free(n->root_kind);
		free(n->path);
		return -ENOMEM;
	}
	r->nretainers++;
	return 0;
}

const struct report_retainer *report_retainer_of(const struct report *r, const char *class_name)
{
	size_t i;

	for (i = 0; i < r->nretainers; i++)
		if (!strcmp(r->retainers[i].class_name, class_name))
			return &r->retainers[i];
	return NULL;
}

void report_free(struct report *r)
{
	size_t i;

	for (i = 0; i < r->nrows; i++) {
		free(r->rows[i].name);
		free(r->rows[i].born);
	}
	free(r->rows);
	u64map_free(&r->by_name, NULL);
	for (i = 0; i < r->nsites; i++)
		free(r->sites[i].class_name);
	free(r->sites);
	u64map_free(&r->sites_by_key, NULL);
	for (i = 0; i < r->nstacks; i++) {
		free(r->stacks[i].class_name);
		free((void *)r->stacks[i].stack);
	}
	free(r->stacks);
	u64map_free(&r->stacks_by_key, NULL);
	strpool_free(&r->strings);
	for (i = 0; i < r->nretainers; i++) {
		free(r->retainers[i].class_name);
		free(r->retainers[i].root_kind);
		free(r->retainers[i].path);
	}
	free(r->retainers);
	r->retainers = NULL;
	verdict_free(r->verdict);
	r->verdict = NULL;
	r->nretainers = 0;
	r->sites = NULL;
	r->stacks = NULL;
	r->nsites = r->nstacks = 0;
	r->rows = NULL;
	r->nrows = r->cap = 0;
}

int model_add(struct model *m, struct report *r)
{
	struct report **procs = grow_array(m->procs, &m->cap, m->nprocs, sizeof(*procs));

	if (!procs)
		return -ENOMEM;
	m->procs = procs;
	m->procs[m->nprocs++] = r;
	return 0;
}

void model_free(struct model *m)
{
	size_t i;

	for (i = 0; i < m->nprocs; i++) {
		report_free(m->procs[i]);
		free(m->procs[i]);
	}
	free(m->procs);
	m->procs = NULL;
	m->nprocs = m->cap = 0;
}

int report_add_stack_est(struct report *r, const char *class_name, const struct stack *st,
			 const struct counts *c, const struct estimates *est,
			 const struct ages *ages)
{
	return add_stack(r, class_name, st, c, est, ages);
}
