// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* accumulation.h: new objects to the old nodes that gathered them. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "accumulation.h"
#include "u64map.h"

void accum_weigh(struct dominators *d, const uint8_t *counted, const uint32_t *bytes)
{
	uint32_t k;

	for (k = 0; k <= d->n; k++) {
		bool c = k < d->n && counted[k];

		d->dom_objects[k] = c;
		d->dom_bytes[k] = c && bytes ? bytes[k] : 0;
	}
	/* children before their idom: order backwards */
	for (k = d->nreached; k-- > 1;) {
		uint32_t v = d->order[k], up = d->idom[v];

		if (v >= d->n || up == RG_NONE)
			continue;
		d->dom_objects[up] += d->dom_objects[v];
		d->dom_bytes[up] += d->dom_bytes[v];
	}
}

int accum_assign(const struct dominators *d, const uint8_t *newness, uint32_t *point)
{
	uint32_t k;

	for (k = 0; k < d->n; k++)
		point[k] = RG_NONE;
	/* order: each node after its idom, so the idom's point is known first */
	for (k = 0; k < d->nreached; k++) {
		uint32_t v = d->order[k], up;

		if (v >= d->n || newness[v] == ACCUM_OLD)
			continue;
		up = d->idom[v];
		if (up == RG_NONE || up >= d->n)
			continue; /* the virtual root: no old holder of its own */
		point[v] = newness[up] == ACCUM_OLD ? up : point[up];
	}
	return 0;
}

/* Adds a new object of class h (bytes b) to p's classes. */
static int add_class(struct accum_point *p, size_t *cap, uint32_t h, uint64_t b)
{
	size_t i;

	for (i = 0; i < p->nclasses; i++) {
		if (p->classes[i].class_hash == h) {
			p->classes[i].objects++;
			p->classes[i].bytes += b;
			return 0;
		}
	}
	if (p->nclasses == *cap) {
		size_t grown_cap = *cap ? 2 * *cap : 8;
		struct accum_class *grown = realloc(p->classes, grown_cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		p->classes = grown;
		*cap = grown_cap;
	}
	p->classes[p->nclasses++] = (struct accum_class){h, 1, b};
	return 0;
}

static int by_bytes(const void *a, const void *b)
{
	const struct accum_class *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->objects != y->objects)
		return x->objects < y->objects ? 1 : -1;
	return x->class_hash < y->class_hash ? -1 : x->class_hash > y->class_hash;
}

int accum_classes(const struct dominators *d, const uint32_t *point, const uint8_t *newness,
		  const uint32_t *bytes, uint32_t (*class_of)(void *ctx, uint32_t node), void *ctx,
		  struct accum_point *pts, size_t n)
{
	size_t *caps = calloc(n + 1, sizeof(*caps)), i;
	uint32_t v;
	int err = 0;

	if (!caps)
		return -ENOMEM;
	for (v = 0; v < d->n && !err; v++) {
		if (point[v] == RG_NONE || newness[v] != ACCUM_NEW)
			continue;
		for (i = 0; i < n; i++)
			if (pts[i].node == point[v])
				break;
		if (i < n)
			err = add_class(&pts[i], &caps[i], class_of(ctx, v), bytes ? bytes[v] : 0);
	}
	for (i = 0; i < n; i++)
		qsort(pts[i].classes, pts[i].nclasses, sizeof(pts[i].classes[0]), by_bytes);
	free(caps);
	return err;
}

void accum_free(struct accum_point *pts, size_t n)
{
	size_t i;

	for (i = 0; pts && i < n; i++)
		free(pts[i].classes);
	free(pts);
}

int accum_sum(const struct dominators *d, const uint32_t *point, const uint8_t *newness,
	      const uint32_t *bytes, struct accum_point **out, size_t *n)
{
	struct u64map index = {0}; /* node + 1 -> point index + 1 */
	struct accum_point *pts = NULL;
	size_t npts = 0, cap = 0;
	uint32_t v;

	for (v = 0; v < d->n; v++) {
		uintptr_t at;
		uint64_t b = bytes ? bytes[v] : 0;

		if (point[v] == RG_NONE || newness[v] != ACCUM_NEW)
			continue;
		at = (uintptr_t) u64map_get(&index, (uint64_t) point[v] + 1);
		if (!at) {
			if (npts == cap) {
				struct accum_point *grown;

				cap = cap ? 2 * cap : 64;
				grown = realloc(pts, cap * sizeof(*pts));
				if (!grown)
					goto nomem;
				pts = grown;
			}
			memset(&pts[npts], 0, sizeof(pts[npts]));
			pts[npts].node = point[v];
			at = ++npts;
			if (u64map_put(&index, (uint64_t) point[v] + 1, (void *) at))
				goto nomem;
		}
		pts[at - 1].new_objects++;
		pts[at - 1].new_bytes += b;
	}
	u64map_free(&index, NULL);
	*out = pts;
	*n = npts;
	return 0;
nomem:
	u64map_free(&index, NULL);
	free(pts);
	return -ENOMEM;
}
