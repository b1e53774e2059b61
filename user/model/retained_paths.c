// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What each call path retains, in objects and bytes (retained_paths.h). */
#include <errno.h>
#include <stdlib.h>
#include "model_ops.h"
#include "retained_paths.h"
#include "sort.h"

static int by_objects(const void *a, const void *b)
{
	const struct retained_path *x = a, *y = b;

	if (x->objects != y->objects)
		return x->objects < y->objects ? 1 : -1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return 0;
}

/* Whether a pprof row counts: retained (any age but young), or in use in a period. */
static bool counts(const struct profile_row *p, bool in_use)
{
	return in_use || p->age != 0;
}

int report_retained_paths(const struct report *r, struct retained_paths *out)
{
	struct profile_row *rows;
	size_t n, i, j;
	int err;

	*out = (struct retained_paths){.in_use = r->period.on};
	err = report_profile_rows(r, &rows, &n);
	if (err)
		return err;
	out->v = calloc(n ? n : 1, sizeof(*out->v));
	if (!out->v) {
		free(rows);
		return -ENOMEM;
	}
	/* A (path, class)'s rows, one per age, are consecutive. */
	for (i = 0; i < n; i = j) {
		struct retained_path p = {.stack = rows[i].stack, .class_name = rows[i].class_name};

		for (j = i; j < n && rows[j].stack == rows[i].stack &&
			    rows[j].class_name == rows[i].class_name;
		     j++) {
			if (!counts(&rows[j], out->in_use))
				continue;
			p.objects += rows[j].inuse_objects;
			p.bytes += rows[j].inuse_bytes;
		}
		if (!p.objects && !p.bytes)
			continue;
		out->objects += p.objects;
		out->bytes += p.bytes;
		out->v[out->n++] = p;
	}
	free(rows);
	sort_array(out->v, out->n, sizeof(*out->v), by_objects);
	return 0;
}

void retained_paths_free(struct retained_paths *p)
{
	free(p->v);
	*p = (struct retained_paths){};
}
