// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sort.h"
#include "top_model.h"

static const char *const sort_names[TOP_NSORTS] = {
    [TOP_SORT_LIVE] = "live",	 [TOP_SORT_BYTES] = "bytes",   [TOP_SORT_CHANGE] = "change",
    [TOP_SORT_RATE] = "per-min", [TOP_SORT_ALLOCS] = "allocs", [TOP_SORT_OLD] = "old",
    [TOP_SORT_NAME] = "name",
};

const char *top_sort_name(enum top_sort key)
{
	return key < TOP_NSORTS ? sort_names[key] : "?";
}

int top_sort_parse(const char *name)
{
	int i;

	for (i = 0; i < TOP_NSORTS; i++)
		if (strcmp(name, sort_names[i]) == 0)
			return i;
	return -1;
}

void top_model_init(struct top_model *m)
{
	memset(m, 0, sizeof(*m));
	m->reset_pending = true;
}

void top_model_free(struct top_model *m)
{
	free(m->rows);
	u64map_free(&m->index, NULL);
	strpool_free(&m->names);
	memset(m, 0, sizeof(*m));
}

struct top_proc *top_model_proc(struct top_model *m, pid_t pid)
{
	size_t i;

	for (i = 0; i < m->nprocs; i++)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	if (m->nprocs == TOP_MAX_PROCS)
		return NULL;
	memset(&m->procs[m->nprocs], 0, sizeof(m->procs[0]));
	m->procs[m->nprocs].pid = pid;
	m->procs[m->nprocs].gcs_per_s = -1;
	m->procs[m->nprocs].allocs_per_s = -1;
	return &m->procs[m->nprocs++];
}

static unsigned slot_of(unsigned long frame)
{
	return frame % TOP_HISTORY;
}

void top_frame_begin(struct top_model *m, double t)
{
	m->frames++;
	m->times[slot_of(m->frames)] = t;
}

/* Open addressing on a 64-bit key; a key that collides moves on by a constant. */
static uint64_t row_key(pid_t pid, const char *name, unsigned attempt)
{
	uint64_t k = str_hash(name) ^ ((uint64_t) (uint32_t) pid * 0x9e3779b97f4a7c15ULL);

	k += attempt * 0xff51afd7ed558ccdULL;
	return k ? k : 1;
}

static struct top_row *find_row(const struct top_model *m, pid_t pid, const char *name,
				uint64_t *free_key)
{
	unsigned attempt;

	for (attempt = 0;; attempt++) {
		uint64_t key = row_key(pid, name, attempt);
		uintptr_t idx = (uintptr_t) u64map_get(&m->index, key);
		struct top_row *row;

		if (!idx) {
			*free_key = key;
			return NULL;
		}
		row = &m->rows[idx - 1];
		if (row->pid == pid && strcmp(row->name, name) == 0)
			return row;
	}
}

int top_frame_set(struct top_model *m, pid_t pid, const char *name, uint64_t live, uint64_t bytes,
		  uint64_t old, double alloc_rate)
{
	uint64_t key = 0;
	struct top_row *row = find_row(m, pid, name, &key);

	if (!row) {
		if (m->nrows == m->cap) {
			size_t cap = m->cap ? m->cap * 2 : 256;
			struct top_row *rows = realloc(m->rows, cap * sizeof(*rows));

			if (!rows)
				return -ENOMEM;
			m->rows = rows;
			m->cap = cap;
		}
		row = &m->rows[m->nrows];
		memset(row, 0, sizeof(*row));
		row->name = strpool_intern(&m->names, name);
		if (!row->name || u64map_put(&m->index, key, (void *) (uintptr_t) (m->nrows + 1)))
			return -ENOMEM;
		row->pid = pid;
		row->born = m->frames;
		m->nrows++;
	}
	row->live = live;
	row->bytes = bytes;
	row->old = old;
	row->alloc_rate = alloc_rate;
	row->seen = m->frames;
	row->hist[slot_of(m->frames)] = live;
	return 0;
}

void top_frame_keep(struct top_model *m, pid_t pid)
{
	size_t i;

	for (i = 0; i < m->nrows; i++) {
		struct top_row *row = &m->rows[i];

		if (row->pid != pid || row->seen + 1 != m->frames)
			continue;
		row->hist[slot_of(m->frames)] = row->live;
		row->seen = m->frames;
	}
}

void top_frame_end(struct top_model *m)
{
	size_t i;

	for (i = 0; i < m->nrows; i++) {
		struct top_row *row = &m->rows[i];

		/* Not in this census: none of that class is alive now. */
		if (row->seen != m->frames) {
			row->live = row->bytes = row->old = 0;
			row->alloc_rate = row->alloc_rate >= 0 ? 0 : -1;
			row->hist[slot_of(m->frames)] = 0;
			row->seen = m->frames;
		}
		if (m->reset_pending)
			row->base_live = row->live;
	}
	if (m->reset_pending)
		m->base_time = m->times[slot_of(m->frames)];
	m->reset_pending = false;
}

void top_model_reset(struct top_model *m)
{
	m->reset_pending = true;
}

double top_rate_per_min(const uint64_t *hist, const double *times, unsigned n)
{
	unsigned first;
	double dt;

	if (n < 2)
		return 0;
	first = n > TOP_RATE_SPAN + 1 ? n - TOP_RATE_SPAN - 1 : 0;
	dt = times[n - 1] - times[first];
	if (dt <= 0)
		return 0;
	return ((double) hist[n - 1] - (double) hist[first]) / dt * 60;
}

/* How many refreshes a view shows, and the times of them oldest first. */
static unsigned history_times(const struct top_model *m, double *times)
{
	unsigned n = m->frames < TOP_HISTORY ? m->frames : TOP_HISTORY, i;

	for (i = 0; i < n; i++)
		times[i] = m->times[slot_of(m->frames - n + 1 + i)];
	return n;
}

static struct top_view_row *view_row(struct top_view *v, const char *name, pid_t pid,
				     struct u64map *by_name)
{
	uint64_t key = str_hash(name) | 1;
	uintptr_t idx;

	/* Summed rows are found by name; the pool interns, so pointers compare. */
	for (;; key += 2) {
		idx = by_name ? (uintptr_t) u64map_get(by_name, key) : 0;
		if (!idx)
			break;
		if (v->rows[idx - 1].name == name)
			return &v->rows[idx - 1];
	}
	if (v->nrows == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		struct top_view_row *rows = realloc(v->rows, cap * sizeof(*rows));

		if (!rows)
			return NULL;
		v->rows = rows;
		v->cap = cap;
	}
	if (by_name && u64map_put(by_name, key, (void *) (uintptr_t) (v->nrows + 1)))
		return NULL;
	memset(&v->rows[v->nrows], 0, sizeof(v->rows[0]));
	v->rows[v->nrows].name = name;
	v->rows[v->nrows].pid = pid;
	v->rows[v->nrows].alloc_rate = -1;
	return &v->rows[v->nrows++];
}

static enum top_sort sort_key;

static int cmp_double(double a, double b)
{
	return a > b ? -1 : a < b ? 1 : 0;
}

static int cmp_rows(const void *pa, const void *pb)
{
	const struct top_view_row *a = pa, *b = pb;
	int c = 0;

	switch (sort_key) {
	case TOP_SORT_LIVE:
		c = cmp_double(a->live, b->live);
		break;
	case TOP_SORT_BYTES:
		c = cmp_double(a->bytes, b->bytes);
		break;
	case TOP_SORT_CHANGE:
		c = cmp_double(a->change, b->change);
		break;
	case TOP_SORT_RATE:
		c = cmp_double(a->per_min, b->per_min);
		break;
	case TOP_SORT_ALLOCS:
		c = cmp_double(a->alloc_rate, b->alloc_rate);
		break;
	case TOP_SORT_OLD:
		c = cmp_double(a->old_share, b->old_share);
		break;
	default:
		break;
	}
	if (!c)
		c = strcmp(a->name, b->name);
	if (!c)
		c = a->pid < b->pid ? -1 : a->pid > b->pid;
	return c;
}

int top_view_build(const struct top_model *m, struct top_view *v, bool summed, enum top_sort key,
		   const char *filter)
{
	double times[TOP_HISTORY];
	unsigned n = history_times(m, times);
	struct u64map by_name = {};
	size_t i;
	unsigned j;

	v->nrows = 0;
	v->live = v->bytes = 0;
	for (i = 0; i < m->nrows; i++) {
		const struct top_row *row = &m->rows[i];
		struct top_view_row *vr;

		if (filter && *filter && !strstr(row->name, filter))
			continue;
		vr = view_row(v, row->name, summed ? 0 : row->pid, summed ? &by_name : NULL);
		if (!vr) {
			u64map_free(&by_name, NULL);
			return -ENOMEM;
		}
		vr->live += row->live;
		vr->bytes += row->bytes;
		vr->old += row->old;
		vr->change += (int64_t) row->live - (int64_t) row->base_live;
		if (row->alloc_rate >= 0)
			vr->alloc_rate =
			    (vr->alloc_rate < 0 ? 0 : vr->alloc_rate) + row->alloc_rate;
		vr->nhist = n;
		for (j = 0; j < n; j++) {
			unsigned long frame = m->frames - n + 1 + j;

			if (frame >= row->born)
				vr->hist[j] += row->hist[slot_of(frame)];
		}
	}
	u64map_free(&by_name, NULL);
	for (i = 0; i < v->nrows; i++) {
		struct top_view_row *vr = &v->rows[i];

		vr->per_min = top_rate_per_min(vr->hist, times, vr->nhist);
		vr->old_share = vr->live ? (double) vr->old / vr->live : 0;
		v->live += vr->live;
		v->bytes += vr->bytes;
	}
	sort_key = key;
	sort_array(v->rows, v->nrows, sizeof(v->rows[0]), cmp_rows);
	return 0;
}

void top_view_free(struct top_view *v)
{
	free(v->rows);
	memset(v, 0, sizeof(*v));
}

size_t top_sparkline(const uint64_t *values, unsigned n, unsigned width, bool ascii, char *buf,
		     size_t buflen)
{
	static const char *const bars[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
					    "\u2585", "\u2586", "\u2587", "\u2588"};
	static const char levels[] = "_.-:=+*#";
	uint64_t lo = UINT64_MAX, hi = 0;
	unsigned first = n > width ? n - width : 0, i;
	size_t len = 0;

	if (!buflen)
		return 0;
	for (i = first; i < n; i++) {
		lo = values[i] < lo ? values[i] : lo;
		hi = values[i] > hi ? values[i] : hi;
	}
	for (i = first; i < n; i++) {
		unsigned level = hi > lo ? (unsigned) ((values[i] - lo) * 7 / (hi - lo)) : 0;
		const char *s = ascii ? (char[2]){levels[level], 0} : bars[level];
		size_t sl = strlen(s);

		if (len + sl >= buflen)
			break;
		memcpy(buf + len, s, sl);
		len += sl;
	}
	buf[len] = 0;
	return len;
}
