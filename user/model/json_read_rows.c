// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The rows of a JSON report read back (json_read.c reads the rest): classes,
 * sites, call paths and their counts, the heap and sampling facts.  Every
 * field is checked for its type and range.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "json_get.h"
#include "json_keys.h"
#include "json_read_rows.h"
#include "rbmemtrace.h" /* MAX_STACK_DEPTH */

void jr_read_counts(struct json_reader *rd, const json_t *o, const char *where, struct counts *c)
{
	c->allocated = jr_get_u64(rd, o, where, JK(allocated), true);
	c->freed = jr_get_u64(rd, o, where, JK(freed), false);
	c->retained = jr_get_u64(rd, o, where, JK(retained), true);
	c->young = jr_get_u64(rd, o, where, JK(young), false);
	c->untracked = jr_get_u64(rd, o, where, JK(untracked), false);
	c->not_followed = jr_get_u64(rd, o, where, JK(not_followed), false);
}

void jr_read_est(struct json_reader *rd, const json_t *o, const char *where, struct estimates *e)
{
	e->allocated = jr_get_u64(rd, o, where, JK(est_allocated), false);
	e->retained = jr_get_u64(rd, o, where, JK(est_retained), false);
	e->freed = jr_get_u64(rd, o, where, JK(est_freed), false);
}

static void read_ages(struct json_reader *rd, const json_t *o, const char *where, struct ages *a)
{
	json_t *arr = jr_get_arr(rd, o, where, JK(retained_ages), false), *v;
	size_t i;

	memset(a, 0, sizeof(*a));
	if (!arr)
		return;
	if (json_array_size(arr) != AGE_BUCKETS) {
		jr_fail(rd, where, JK(retained_ages), "expected %d numbers", AGE_BUCKETS);
		return;
	}
	json_array_foreach(arr, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			jr_fail(rd, where, JK(retained_ages), "expected whole numbers >= 0");
			return;
		}
		a->n[i] = (uint64_t) json_integer_value(v);
	}
}

/* Reports bucket ages as this version does, or their ages cannot be compared. */
void jr_check_age_buckets(struct json_reader *rd, const json_t *o, const char *where)
{
	json_t *arr = jr_get_arr(rd, o, where, JK(age_buckets), false), *v;
	size_t i;

	if (!arr)
		return;
	json_array_foreach(arr, i,
			   v) if (i >= AGE_BUCKETS || !json_is_integer(v) ||
				  (uint64_t) json_integer_value(v) != age_bucket_low(i)) break;
	if (i != AGE_BUCKETS || json_array_size(arr) != AGE_BUCKETS)
		jr_fail(rd, where, JK(age_buckets),
			"not this version's buckets (1, 2, 3, 5, 9, ...)");
}

void jr_read_heap(struct json_reader *rd, const json_t *o, const char *where, const char *key,
		  struct heap_info *h)
{
	json_t *v = jr_get_obj(rd, o, where, key, false);
	char at[300];

	memset(h, 0, sizeof(*h));
	if (!v)
		return;
	snprintf(at, sizeof(at), "%s%s%s", where, *where ? "." : "", key);
	h->have = true;
	h->slots = jr_get_u64(rd, v, at, JK(slots), false);
	h->live = jr_get_u64(rd, v, at, JK(live), false);
	h->free = jr_get_u64(rd, v, at, JK(free), false);
	h->garbage = jr_get_u64(rd, v, at, JK(garbage), false);
	h->bytes = jr_get_u64(rd, v, at, JK(bytes), false);
	h->marking = jr_get_bool(rd, v, at, JK(marking));
	h->seconds = jr_get_real(rd, v, at, JK(seconds));
}

void jr_read_sampling(struct json_reader *rd, const json_t *o, const char *where,
		      struct sampling_info *si, uint64_t *capped)
{
	const char *doubt;
	json_t *v = jr_get_obj(rd, o, where, JK(sampling), false);
	char at[300];

	memset(si, 0, sizeof(*si));
	if (!v)
		return;
	snprintf(at, sizeof(at), "%s%ssampling", where, *where ? "." : "");
	si->on = true;
	si->budget_percent = jr_get_real(rd, v, at, JK(max_overhead_percent));
	si->windows = jr_get_u64(rd, v, at, JK(windows), false);
	si->window_time_s = jr_get_real(rd, v, at, JK(window_s));
	si->est_overhead = jr_get_real(rd, v, at, JK(estimated_overhead_percent)) / 100;
	si->probe_hits = jr_get_u64(rd, v, at, JK(probe_hits), false);
	si->traced = jr_get_u64(rd, v, at, JK(traced), false);
	si->covered = jr_get_u64(rd, v, at, JK(covered), false);
	si->sample = jr_get_real(rd, v, at, JK(sample));
	si->burst_windows = jr_get_u64(rd, v, at, JK(burst_windows), false);
	si->scale = jr_get_real(rd, v, at, JK(scale));
	*capped = jr_get_u64(rd, v, at, JK(capped_by_census), false);
	doubt = jr_get_str(rd, v, at, JK(doubt), false);
	if (doubt)
		snprintf(si->doubt, sizeof(si->doubt), "%s", doubt);
}

/* One [period, live] pair of a class's born; 0, or the reader failed. */
static int read_born_pair(struct json_reader *rd, const json_t *pair, const char *at,
			  struct born_count *b, const struct born_count *prev)
{
	const json_t *p = json_array_get(pair, 0), *l = json_array_get(pair, 1);

	if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_integer(p) ||
	    !json_is_integer(l) || json_integer_value(p) < 0 || json_integer_value(l) < 0) {
		jr_fail(rd, at, NULL, "expected a [period, live] pair of whole numbers >= 0");
		return -1;
	}
	b->period = (uint64_t) json_integer_value(p);
	b->live = (uint64_t) json_integer_value(l);
	if (prev && b->period <= prev->period) {
		jr_fail(rd, at, NULL, "periods not in ascending order");
		return -1;
	}
	return 0;
}

/* classes[].born: the class's live objects by birth period, periods ascending. */
static void read_born(struct json_reader *rd, const json_t *o, const char *where,
		      struct class_row *row)
{
	json_t *arr = jr_get_arr(rd, o, where, JK(born), false), *pair;
	char at[340];
	size_t i;

	if (!arr)
		return;
	row->born = calloc(json_array_size(arr) + 1, sizeof(*row->born));
	if (!row->born) {
		jr_fail(rd, where, JK(born), "out of memory");
		return;
	}
	row->have_born = true;
	json_array_foreach(arr, i, pair)
	{
		snprintf(at, sizeof(at), "%s.%s[%zu]", where, JK(born), i);
		if (read_born_pair(rd, pair, at, &row->born[i], i ? &row->born[i - 1] : NULL))
			return;
		row->nborn = i + 1;
	}
}

void jr_read_classes(struct json_reader *rd, struct report *r, const json_t *arr, const char *where)
{
	char at[300];
	json_t *o;
	size_t i;

	json_array_foreach(arr, i, o)
	{
		struct class_row *row;

		snprintf(at, sizeof(at), "%s%sclasses[%zu]", where, *where ? "." : "", i);
		if (!json_is_object(o)) {
			jr_fail(rd, at, NULL, "expected an object");
			return;
		}
		row = report_row(r, jr_get_str(rd, o, at, JK(name), true));
		if (!row) {
			jr_fail(rd, at, NULL, "out of memory");
			return;
		}
		jr_read_counts(rd, o, at, &row->counts);
		jr_read_est(rd, o, at, &row->est);
		read_ages(rd, o, at, &row->ages);
		if (json_object_get(o, JK(live_end))) {
			row->census.have = true;
			row->census.live_start = jr_get_u64(rd, o, at, JK(live_start), false);
			row->census.live_end = jr_get_u64(rd, o, at, JK(live_end), false);
			row->census.bytes_end = jr_get_u64(rd, o, at, JK(bytes), false);
			row->census.old_end = jr_get_u64(rd, o, at, JK(old), false);
			row->census.garbage_end = jr_get_u64(rd, o, at, JK(garbage), false);
			row->census.change = jr_get_int(rd, o, at, JK(change), INT64_MIN, INT64_MAX,
							(int64_t) row->census.live_end -
							    (int64_t) row->census.live_start);
			row->census.have_new = json_object_get(o, JK(new_alive)) != NULL;
			row->census.new_alive = jr_get_u64(rd, o, at, JK(new_alive), false);
			row->census.new_retained = jr_get_u64(rd, o, at, JK(new_retained), false);
			row->census.new_unaged = jr_get_u64(rd, o, at, JK(new_unaged), false);
			row->census.new_old = jr_get_u64(rd, o, at, JK(new_old), false);
		}
		if (!row->have_born)
			read_born(rd, o, at, row);
		row->est_source = est_source_of(jr_get_str(rd, o, at, JK(est_source), false));
		if (rd->failed)
			return;
	}
}

static void read_frames(struct json_reader *rd, const json_t *arr, const char *where,
			struct frame *frames, size_t *depth)
{
	char at[340];
	json_t *f;
	size_t i;

	*depth = 0;
	if (json_array_size(arr) > MAX_STACK_DEPTH) {
		jr_fail(rd, where, JK(frames), "more than %d frames", MAX_STACK_DEPTH);
		return;
	}
	json_array_foreach(arr, i, f)
	{
		snprintf(at, sizeof(at), "%s.frames[%zu]", where, i);
		if (!json_is_object(f)) {
			jr_fail(rd, at, NULL, "expected an object");
			return;
		}
		frames[i].label = jr_get_str(rd, f, at, JK(label), true);
		frames[i].path = jr_get_str(rd, f, at, JK(path), true);
		/* Any int: the tracer writes what the iseq said, even a nonsense line. */
		frames[i].line = (int) jr_get_int(rd, f, at, JK(line), INT_MIN, INT_MAX, 0);
	}
	*depth = json_array_size(arr);
}

void jr_read_stacks(struct json_reader *rd, struct report *r, const json_t *arr, const char *where)
{
	static struct frame frames[MAX_STACK_DEPTH];
	char at[300];
	json_t *o, *fr;
	size_t i;

	json_array_foreach(arr, i, o)
	{
		struct stack st = {.frames = frames};
		struct counts c = {};
		struct estimates e;
		struct ages a;

		snprintf(at, sizeof(at), "%s%sstacks[%zu]", where, *where ? "." : "", i);
		if (!json_is_object(o)) {
			jr_fail(rd, at, NULL, "expected an object");
			return;
		}
		c.allocated = jr_get_u64(rd, o, at, JK(allocated), true);
		c.retained = jr_get_u64(rd, o, at, JK(retained), true);
		c.young = jr_get_u64(rd, o, at, JK(young), false);
		jr_read_est(rd, o, at, &e);
		read_ages(rd, o, at, &a);
		st.truncated = jr_get_bool(rd, o, at, JK(truncated));
		fr = jr_get_arr(rd, o, at, JK(frames), true);
		if (fr)
			read_frames(rd, fr, at, frames, &st.depth);
		if (rd->failed)
			return;
		if (report_add_stack_est(r, jr_get_str(rd, o, at, JK(class), true), &st, &c, &e,
					 &a)) {
			jr_fail(rd, at, NULL, "out of memory");
			return;
		}
	}
}

static uint64_t site_key(const char *cls, const char *path, int line)
{
	uint64_t h = str_hash(cls) * 31 + str_hash(path);

	h = (h ^ (uint64_t) line) * 0x100000001b3ULL;
	return h ? h : 1;
}

static bool same_site(const struct site_row *s, const char *cls, const char *path, int line)
{
	return s->line == line && !strcmp(s->path, path) && !strcmp(s->class_name, cls);
}

/*
 * The index of the site of a class at path:line among those the call paths
 * built, or of a new one; -1 when out of memory.
 */
static ssize_t find_site(struct report *r, const struct u64map *index, const char *cls,
			 const char *path, int line)
{
	uintptr_t at = (uintptr_t) u64map_get(index, site_key(cls, path, line));
	struct site_row *s;
	size_t i;

	if (at && same_site(&r->sites[at - 1], cls, path, line))
		return (ssize_t) (at - 1);
	for (i = 0; i < r->nsites; i++) /* a hash collision, or a new site */
		if (same_site(&r->sites[i], cls, path, line))
			return (ssize_t) i;
	s = realloc(r->sites, (r->nsites + 1) * sizeof(*s));
	if (!s)
		return -1;
	r->sites = s;
	r->sites_cap = r->nsites + 1;
	s = &r->sites[r->nsites];
	memset(s, 0, sizeof(*s));
	s->class_name = strdup(cls);
	s->path = strpool_intern(&r->strings, path);
	s->line = line;
	if (!s->class_name || !s->path) {
		free(s->class_name);
		return -1;
	}
	return (ssize_t) r->nsites++;
}

/* Puts the sites in the file's order (listed ones first, each once), the others after. */
static int order_sites(struct report *r, const ssize_t *order, size_t norder)
{
	struct site_row *sorted = calloc(r->nsites + 1, sizeof(*sorted));
	bool *used = calloc(r->nsites + 1, sizeof(*used));
	size_t i, n = 0;

	if (!sorted || !used) {
		free(sorted);
		free(used);
		return -ENOMEM;
	}
	for (i = 0; i < norder; i++)
		if (!used[order[i]]) {
			used[order[i]] = true;
			sorted[n++] = r->sites[order[i]];
		}
	for (i = 0; i < r->nsites; i++)
		if (!used[i])
			sorted[n++] = r->sites[i];
	if (n) /* no sites: r->sites is NULL, which memcpy may not be given */
		memcpy(r->sites, sorted, n * sizeof(*sorted));
	free(sorted);
	free(used);
	return 0;
}

/*
 * The call paths rebuilt the sites; the file's own figures win (under
 * sampling the site's estimate is not the sum of its paths'), and so does
 * its order.  Sites no call path leads to are kept too.
 */
void jr_read_sites(struct json_reader *rd, struct report *r, const json_t *arr, const char *where)
{
	ssize_t *order = calloc(json_array_size(arr) + 1, sizeof(*order));
	struct u64map index = {};
	char at[300];
	size_t i, n = 0;
	json_t *o;
	int err = order ? 0 : -ENOMEM;

	for (i = 0; !err && i < r->nsites; i++) {
		uint64_t key = site_key(r->sites[i].class_name, r->sites[i].path, r->sites[i].line);

		if (!u64map_get(&index, key))
			err = u64map_put(&index, key, (void *) (uintptr_t) (i + 1));
	}
	json_array_foreach(arr, i, o)
	{
		struct site_row *s;
		ssize_t k;

		if (err || rd->failed)
			break;
		snprintf(at, sizeof(at), "%s%ssites[%zu]", where, *where ? "." : "", i);
		if (!json_is_object(o)) {
			jr_fail(rd, at, NULL, "expected an object");
			break;
		}
		k = find_site(r, &index, jr_get_str(rd, o, at, JK(class), true),
			      jr_get_str(rd, o, at, JK(path), true),
			      (int) jr_get_int(rd, o, at, JK(line), INT_MIN, INT_MAX, 0));
		if (k < 0) {
			err = -ENOMEM;
			break;
		}
		order[n++] = k;
		s = &r->sites[k];
		memset(&s->counts, 0, sizeof(s->counts));
		s->counts.allocated = jr_get_u64(rd, o, at, JK(allocated), true);
		s->counts.retained = jr_get_u64(rd, o, at, JK(retained), true);
		s->counts.young = jr_get_u64(rd, o, at, JK(young), false);
		jr_read_est(rd, o, at, &s->est);
		read_ages(rd, o, at, &s->ages);
	}
	if (!err && !rd->failed)
		err = order_sites(r, order, n);
	if (err)
		jr_fail(rd, where, JK(sites), "out of memory");
	free(order);
	u64map_free(&index, NULL);
}

void jr_read_stack_drops(struct json_reader *rd, struct report *r, const json_t *o,
			 const char *where)
{
	json_t *v = jr_get_obj(rd, o, where, JK(stack_drops), false);
	char at[300];

	if (!v)
		return;
	snprintf(at, sizeof(at), "%s%sstack_drops", where, *where ? "." : "");
	r->stacks_truncated = jr_get_u64(rd, v, at, JK(truncated), false);
	r->stacks_dropped = jr_get_u64(rd, v, at, JK(dropped), false);
	r->stack_errors = jr_get_u64(rd, v, at, JK(errors), false);
	r->no_site = jr_get_u64(rd, v, at, JK(no_site), false);
}

/* The header of a report: who, how long, what the GC did. */
