// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The samples of a period's profile.  In use: the census's exact count and
 * bytes of each class at the period's end, spread over the class's call
 * paths by the traced objects each still holds (young and per age; scaled
 * up under sampling), so that a profile's in-use objects of a class are
 * what the heap held, whatever the sampling caught.  When the paths claim
 * more than the census found they are scaled down to it; what they do not
 * claim (objects from before the trace, or not traced) hangs from the class
 * alone.  Allocated: during the period (period.c), on the path's young row.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sort.h"
#include "period.h"
#include "strpool.h"

struct cell {
	size_t cls; /* class row index */
	size_t order;
	const struct stack *stack; /* NULL: the class alone */
	int64_t age;
	uint64_t inuse, alloc;
	uint64_t inuse_bytes;
};

struct cells {
	struct cell *v;
	size_t n, cap;
};

static int push(struct cells *cs, const struct cell *c)
{
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 256;
		struct cell *v = realloc(cs->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		cs->v = v;
		cs->cap = cap;
	}
	c = memcpy(&cs->v[cs->n], c, sizeof(*c));
	cs->v[cs->n].order = cs->n;
	cs->n++;
	return 0;
}

static int cell_cmp(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;

	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static uint64_t scaled(uint64_t n, uint64_t num, uint64_t den)
{
	return den ? (uint64_t) ((double) n * num / den + 0.5) : n;
}

/* A path's cells: young (with the period's allocations) at age 0, retained per age bucket. */
static int path_cells(struct cells *cs, const struct report *r, size_t cls,
		      const struct stack_row *s)
{
	const struct counts *c = &s->counts;
	uint64_t retained = c->retained, young = c->young, aged = 0;
	struct cell cell = {.cls = cls, .stack = s->stack};
	unsigned b;
	int err;

	if (r->have_estimates) {
		young = scaled(young, s->est.allocated, c->allocated);
		retained = s->est.retained;
	}
	cell.age = 0;
	cell.inuse = young;
	cell.alloc = r->period.estimated ? s->period.est_allocated : s->period.allocated;
	err = push(cs, &cell);
	cell.alloc = 0;
	for (b = 0; !err && b < AGE_BUCKETS; b++) {
		uint64_t n = r->have_estimates ? scaled(s->ages.n[b], s->est.retained, c->retained)
					       : s->ages.n[b];

		n = n < retained - aged ? n : retained - aged;
		if (!n)
			continue;
		aged += n;
		cell.age = (int64_t) age_bucket_low(b);
		cell.inuse = n;
		err = push(cs, &cell);
	}
	if (!err && retained > aged) {
		cell.age = PROFILE_AGE_UNKNOWN;
		cell.inuse = retained - aged;
		err = push(cs, &cell);
	}
	return err;
}

static uint64_t bytes_per_object(const struct class_row *row)
{
	if (row->census.have && row->census.live_end)
		return (row->census.bytes_end + row->census.live_end / 2) / row->census.live_end;
	return PROFILE_SLOT_BYTES;
}

/*
 * One class's cells (v[0..n), its paths' and then room for the class
 * alone): the in-use objects made to sum to the census's, and its bytes.
 */
static void fit_class(const struct report *r, const struct class_row *row, struct cell *v, size_t n,
		      struct cell *alone)
{
	bool census = r->heap_end.have && row->census.have;
	uint64_t total = census ? row->census.live_end : 0, sum = 0, alloc = 0;
	double *w = calloc(n + 1, sizeof(*w));
	uint64_t *share = calloc(n + 1, sizeof(*share));
	uint64_t bpo = bytes_per_object(row);
	size_t i;

	for (i = 0; i < n; i++) {
		sum += v[i].inuse;
		alloc += v[i].alloc;
	}
	/* Without a census of the class (it has no object left), the heap holds none of it. */
	if (!r->heap_end.have)
		total = sum;
	if (sum > total && w && share) {
		for (i = 0; i < n; i++)
			w[i] = (double) v[i].inuse;
		apportion(total, w, n, share);
		for (i = 0; i < n; i++)
			v[i].inuse = share[i];
		sum = total;
	}
	*alone = (struct cell){.age = PROFILE_AGE_UNKNOWN};
	alone->inuse = total > sum ? total - sum : 0;
	{
		uint64_t a =
		    r->period.estimated ? row->period.est_allocated : row->period.allocated;

		alone->alloc = a > alloc ? a - alloc : 0;
	}
	/* Bytes: the census's, apportioned as the objects are, so they too sum exactly. */
	if (census && row->census.live_end && w && share) {
		for (i = 0; i < n; i++)
			w[i] = (double) v[i].inuse;
		w[n] = (double) alone->inuse;
		apportion(row->census.bytes_end, w, n + 1, share);
		for (i = 0; i < n; i++)
			v[i].inuse_bytes = share[i];
		alone->inuse_bytes = share[n];
	} else {
		for (i = 0; i < n; i++)
			v[i].inuse_bytes = v[i].inuse * bpo;
		alone->inuse_bytes = alone->inuse * bpo;
	}
	free(w);
	free(share);
}

static int emit(struct profile_row **out, size_t *n, size_t *cap, const struct cell *c,
		const struct class_row *row)
{
	struct profile_row *v;

	if (!c->inuse && !c->alloc)
		return 0;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		v = realloc(*out, *cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		*out = v;
	}
	(*out)[(*n)++] = (struct profile_row){
	    .stack = c->stack,
	    .class_name = row->name,
	    .age = c->age,
	    .alloc_objects = c->alloc,
	    .alloc_bytes = c->alloc * bytes_per_object(row),
	    .inuse_objects = c->inuse,
	    .inuse_bytes = c->inuse_bytes,
	};
	return 0;
}

static size_t class_of(const struct report *r, const struct u64map *index, const char *name)
{
	uintptr_t at = (uintptr_t) u64map_get(index, str_hash(name));
	size_t i;

	if (at && !strcmp(r->rows[at - 1].name, name))
		return at - 1;
	for (i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].name, name))
			return i;
	return r->nrows;
}

int period_profile_rows(const struct report *r, struct profile_row **rows, size_t *nrows)
{
	struct u64map index = {};
	struct cells cs = {};
	struct profile_row *out = NULL;
	size_t i, j, n = 0, cap = 0;
	int err = 0;

	for (i = 0; !err && i < r->nrows; i++)
		if (!u64map_get(&index, str_hash(r->rows[i].name)))
			err = u64map_put(&index, str_hash(r->rows[i].name),
					 (void *) (uintptr_t) (i + 1));
	for (i = 0; !err && i < r->nstacks; i++) {
		size_t cls = class_of(r, &index, r->stacks[i].class_name);

		if (cls < r->nrows) /* a path's class always has a row */
			err = path_cells(&cs, r, cls, &r->stacks[i]);
	}
	if (!err && cs.n)
		sort_array(cs.v, cs.n, sizeof(*cs.v), cell_cmp);
	for (i = 0, j = 0; !err && i < r->nrows; i++) {
		size_t from = j;
		struct cell alone;

		while (j < cs.n && cs.v[j].cls == i)
			j++;
		fit_class(r, &r->rows[i], cs.v + from, j - from, &alone);
		alone.cls = i;
		for (size_t k = from; !err && k < j; k++)
			err = emit(&out, &n, &cap, &cs.v[k], &r->rows[i]);
		if (!err)
			err = emit(&out, &n, &cap, &alone, &r->rows[i]);
	}
	u64map_free(&index, NULL);
	free(cs.v);
	if (err) {
		free(out);
		return err;
	}
	*rows = out;
	*nrows = n;
	return 0;
}
