// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The rows of a pprof profile, computed here so that the pprof writer only
 * encodes: per call path and class, how many objects were allocated and how
 * many are still alive, by how many GCs they survived.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "model_ops.h"
#include "period.h"

struct rows {
	struct profile_row *v;
	size_t n, cap;
};

/* What the call paths of a class added up to: the class row keeps the rest. */
struct covered {
	struct counts counts;
	struct estimates est;
	struct ages ages;
};

static int push(struct rows *rs, const struct profile_row *row)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 256;
		struct profile_row *v = realloc(rs->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rs->v = v;
		rs->cap = cap;
	}
	rs->v[rs->n++] = *row;
	return 0;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* n * num / den, rounded; n when den is 0 (nothing to scale by). */
static uint64_t scaled(uint64_t n, uint64_t num, uint64_t den)
{
	return den ? (uint64_t)((double)n * num / den + 0.5) : n;
}

/*
 * Emits the rows of one (path, class): allocated and young at age 0, the
 * retained per age bucket, and retained of no known age (reports without
 * ages) with age -1.  Under sampling, est_* replace the counts and young and
 * the ages scale with them.
 */
static int split(struct rows *rs, const struct report *r, const struct stack *st,
		 const char *cls, const struct counts *c, const struct estimates *e,
		 const struct ages *a)
{
	uint64_t alloc = c->allocated, retained = c->retained, young = c->young, aged = 0;
	struct profile_row row = {.stack = st, .class_name = cls};
	unsigned b;
	int err;

	if (r->have_estimates) {
		young = scaled(young, e->allocated, c->allocated);
		alloc = e->allocated;
		retained = e->retained;
	}
	if (alloc || young) {
		row.age = 0;
		row.alloc_objects = alloc;
		row.inuse_objects = young;
		err = push(rs, &row);
		if (err)
			return err;
	}
	row.alloc_objects = 0;
	for (b = 0; b < AGE_BUCKETS; b++) {
		uint64_t n = a->n[b];

		if (r->have_estimates)
			n = scaled(n, e->retained, c->retained);
		n = n < retained - aged ? n : retained - aged;
		if (!n)
			continue;
		aged += n;
		row.age = (int64_t)age_bucket_low(b);
		row.inuse_objects = n;
		err = push(rs, &row);
		if (err)
			return err;
	}
	if (retained > aged) {
		row.age = PROFILE_AGE_UNKNOWN;
		row.inuse_objects = retained - aged;
		err = push(rs, &row);
		if (err)
			return err;
	}
	return 0;
}

static const struct class_row *find_class(const struct report *r, const struct u64map *index,
					  const char *name)
{
	uintptr_t at = (uintptr_t)u64map_get(index, str_hash(name));
	size_t i;

	if (at && !strcmp(r->rows[at - 1].name, name))
		return &r->rows[at - 1];
	/* A hash collision: scan. */
	for (i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].name, name))
			return &r->rows[i];
	return NULL;
}

/* The census's size of an object of the class, else one heap slot. */
static uint64_t bytes_per_object(const struct class_row *row)
{
	if (row && row->census.have && row->census.live_end)
		return (row->census.bytes_end + row->census.live_end / 2) / row->census.live_end;
	return PROFILE_SLOT_BYTES;
}

static void add_covered(struct covered *cv, const struct stack_row *s)
{
	unsigned b;

	cv->counts.allocated += s->counts.allocated;
	cv->counts.retained += s->counts.retained;
	cv->counts.young += s->counts.young;
	cv->est.allocated += s->est.allocated;
	cv->est.retained += s->est.retained;
	for (b = 0; b < AGE_BUCKETS; b++)
		cv->ages.n[b] += s->ages.n[b];
}

/* The class row minus what its call paths covered, never below zero. */
static void uncovered(const struct class_row *row, const struct covered *cv, struct counts *c,
		      struct estimates *e, struct ages *a)
{
	unsigned b;

	memset(c, 0, sizeof(*c));
	memset(e, 0, sizeof(*e));
	c->allocated = sub0(row->counts.allocated, cv->counts.allocated);
	c->retained = sub0(row->counts.retained, cv->counts.retained);
	c->young = sub0(row->counts.young, cv->counts.young);
	e->allocated = sub0(row->est.allocated, cv->est.allocated);
	e->retained = sub0(row->est.retained, cv->est.retained);
	for (b = 0; b < AGE_BUCKETS; b++)
		a->n[b] = sub0(row->ages.n[b], cv->ages.n[b]);
}

static void fill_bytes(struct profile_row *v, size_t from, size_t to, uint64_t bpo)
{
	for (; from < to; from++) {
		v[from].alloc_bytes = v[from].alloc_objects * bpo;
		v[from].inuse_bytes = v[from].inuse_objects * bpo;
	}
}

int report_profile_rows(const struct report *r, struct profile_row **out, size_t *nout)
{
	struct u64map index = {};
	struct covered *cv = calloc(r->nrows + 1, sizeof(*cv));
	struct rows rs = {};
	size_t i, from;
	int err = cv ? 0 : -ENOMEM;

	/* A period's profile: in use as the census counted it, allocated during the period. */
	if (r->period.on) {
		free(cv);
		return period_profile_rows(r, out, nout);
	}
	for (i = 0; !err && i < r->nrows; i++)
		if (!u64map_get(&index, str_hash(r->rows[i].name)))
			err = u64map_put(&index, str_hash(r->rows[i].name),
					 (void *)(uintptr_t)(i + 1));
	for (i = 0; !err && i < r->nstacks; i++) {
		const struct stack_row *s = &r->stacks[i];
		const struct class_row *row = find_class(r, &index, s->class_name);

		if (row)
			add_covered(&cv[row - r->rows], s);
		from = rs.n;
		err = split(&rs, r, s->stack, s->class_name, &s->counts, &s->est, &s->ages);
		if (!err)
			fill_bytes(rs.v, from, rs.n, bytes_per_object(row));
	}
	for (i = 0; !err && i < r->nrows; i++) {
		const struct class_row *row = &r->rows[i];
		struct counts c;
		struct estimates e;
		struct ages a;

		uncovered(row, &cv[i], &c, &e, &a);
		from = rs.n;
		err = split(&rs, r, NULL, row->name, &c, &e, &a);
		if (!err)
			fill_bytes(rs.v, from, rs.n, bytes_per_object(row));
	}
	u64map_free(&index, NULL);
	free(cv);
	if (err) {
		free(rs.v);
		return err;
	}
	*out = rs.v;
	*nout = rs.n;
	return 0;
}
