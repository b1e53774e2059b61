// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cohorts.h: the period each live object was born in, carried from census to census. */
#include <errno.h>
#include <stdlib.h>
#include "cohorts.h"
#include "u64map.h"

static size_t census_nslots(const struct census *c)
{
	size_t i, n = 0;

	for (i = 0; i < c->npage; i++)
		n += c->page[i].nslots;
	return n;
}

/*
 * The birth of live slot j of page p, which before's page `was` (its
 * cohorts at was_born) held: an object there before (not marked new) whose
 * slot held nothing live of its class then was not seen: 0, not known when.
 */
static uint16_t born_of(const struct census_page *p, uint32_t j, const struct census_page *was,
			const uint16_t *was_born, uint16_t period)
{
	if (p->slot[j] & SLOT_NEW)
		return period;
	if (!was || !was_born || was->slot_size != p->slot_size || j >= was->nslots ||
	    (was->slot[j] & 0xf) != SLOT_LIVE || was->class_of[j] != p->class_of[j])
		return 0;
	return was_born[j];
}

int cohorts_carry(const struct census *before, const struct cohorts *prev, struct census *now,
		  unsigned int old_age, uint64_t period, struct cohorts *out)
{
	uint16_t p16 = period > COHORT_MAX ? COHORT_MAX : (uint16_t) period;
	size_t i, b = 0, at = 0, was_at = 0;
	int err;

	out->born = NULL;
	out->nslots = 0;
	if (prev && prev->nslots != census_nslots(before))
		return -EINVAL;
	if ((err = census_mark_new(before, now, old_age)))
		return err;
	out->nslots = census_nslots(now);
	out->born = calloc(out->nslots ? out->nslots : 1, sizeof(*out->born));
	if (!out->born)
		return -ENOMEM;
	/* Both page arrays are sorted by start: one pass over the two. */
	for (i = 0; i < now->npage; at += now->page[i++].nslots) {
		const struct census_page *p = &now->page[i], *was = NULL;
		uint32_t j;

		while (b < before->npage && before->page[b].start < p->start)
			was_at += before->page[b++].nslots;
		if (b < before->npage && before->page[b].start == p->start)
			was = &before->page[b];
		for (j = 0; j < p->nslots; j++)
			if ((p->slot[j] & 0xf) == SLOT_LIVE)
				out->born[at + j] =
				    born_of(p, j, was, prev ? prev->born + was_at : NULL, p16);
	}
	return 0;
}

void cohorts_free(struct cohorts *co)
{
	free(co->born);
	co->born = NULL;
	co->nslots = 0;
}

/*
 * now's class hashes to their rows' tallies by period (NULL: not reported),
 * one array a row, in order of rows; the tallies are the rows' born until
 * compacted.
 */
static int rows_by_hash(const struct census *now, uint64_t period, struct report *r,
			struct u64map *by_hash, uint64_t **tally)
{
	size_t i;

	u64map_for_each(&now->classes, i)
	{
		const struct census_class *cc = now->classes.values[i];
		struct class_row *row;
		size_t at;

		if (!cc->live || !cc->name || !(row = report_find_row(r, cc->name)))
			continue;
		at = (size_t) (row - r->rows);
		if (!tally[at] && !(tally[at] = calloc(period + 1, sizeof(**tally))))
			return -ENOMEM;
		if (u64map_put(by_hash, census_class_hash(now->classes.keys[i]), tally[at]))
			return -ENOMEM;
	}
	return 0;
}

/* A row's tally by period into its born: the periods with some. */
static int compact(struct class_row *row, const uint64_t *tally, uint64_t period)
{
	size_t n = 0;
	uint64_t k;

	for (k = 0; k <= period; k++)
		n += tally[k] != 0;
	free(row->born);
	row->born = calloc(n ? n : 1, sizeof(*row->born));
	if (!row->born)
		return -ENOMEM;
	row->have_born = true;
	row->nborn = 0;
	for (k = 0; k <= period; k++)
		if (tally[k])
			row->born[row->nborn++] =
			    (struct born_count){.period = k, .live = tally[k]};
	return 0;
}

static void tally_slots(const struct census *now, const struct cohorts *co,
			const struct u64map *by_hash, uint64_t period)
{
	size_t i, at = 0;
	uint32_t j;

	for (i = 0; i < now->npage; at += now->page[i++].nslots) {
		const struct census_page *p = &now->page[i];

		for (j = 0; j < p->nslots; j++) {
			uint64_t *t;

			if ((p->slot[j] & 0xf) == SLOT_LIVE && co->born[at + j] <= period &&
			    (t = u64map_get(by_hash, p->class_of[j])))
				t[co->born[at + j]]++;
		}
	}
}

int cohorts_to_report(const struct census *now, const struct cohorts *co, uint64_t period,
		      struct report *r)
{
	struct u64map by_hash = {0};
	uint64_t **tally;
	size_t i;
	int err;

	if (period > COHORT_MAX)
		period = COHORT_MAX;
	if (co->nslots != census_nslots(now))
		return -EINVAL;
	if (!(tally = calloc(r->nrows + 1, sizeof(*tally))))
		return -ENOMEM;
	err = rows_by_hash(now, period, r, &by_hash, tally);
	if (!err)
		tally_slots(now, co, &by_hash, period);
	for (i = 0; i < r->nrows; i++) {
		if (!err && tally[i])
			err = compact(&r->rows[i], tally[i], period);
		free(tally[i]);
	}
	free(tally);
	u64map_free(&by_hash, NULL);
	return err;
}
