// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The JSON reader (jansson): README's JSON section is the schema.  Reports
 * come from other hosts and files: every field is checked for its type and
 * range, the first problem is reported with where it is, and nothing read
 * can overflow what the writers assume (call paths deeper than
 * MAX_STACK_DEPTH, lines out of range).
 *
 * A report read back keeps the file's order and totals rather than being
 * finished again: its estimates were computed from a scale the file only
 * shows rounded, and its sites from counts the file does not carry.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "json_get.h"
#include "rbmemtrace.h" /* MAX_STACK_DEPTH */
#include "json_read.h"

/*
 * Copies a string the text writer prints as it is (the Ruby version, why
 * the trace ended): bytes that could drive a terminal become '?'.
 */
static void copy_printable(char *to, size_t n, const char *s)
{
	size_t i;

	for (i = 0; s && s[i] && i + 1 < n; i++)
		to[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
	to[i] = '\0';
}

static void read_counts(struct json_reader *rd, const json_t *o, const char *where, struct counts *c)
{
	c->allocated = jr_get_u64(rd, o, where, "allocated", true);
	c->freed = jr_get_u64(rd, o, where, "freed", false);
	c->retained = jr_get_u64(rd, o, where, "retained", true);
	c->young = jr_get_u64(rd, o, where, "young", false);
	c->untracked = jr_get_u64(rd, o, where, "untracked", false);
	c->not_followed = jr_get_u64(rd, o, where, "not_followed", false);
}

static void read_est(struct json_reader *rd, const json_t *o, const char *where, struct estimates *e)
{
	e->allocated = jr_get_u64(rd, o, where, "est_allocated", false);
	e->retained = jr_get_u64(rd, o, where, "est_retained", false);
	e->freed = jr_get_u64(rd, o, where, "est_freed", false);
}

static void read_ages(struct json_reader *rd, const json_t *o, const char *where, struct ages *a)
{
	json_t *arr = jr_get_arr(rd, o, where, "retained_ages", false), *v;
	size_t i;

	memset(a, 0, sizeof(*a));
	if (!arr)
		return;
	if (json_array_size(arr) != AGE_BUCKETS) {
		jr_fail(rd, where, "retained_ages", "expected %d numbers", AGE_BUCKETS);
		return;
	}
	json_array_foreach(arr, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			jr_fail(rd, where, "retained_ages", "expected whole numbers >= 0");
			return;
		}
		a->n[i] = (uint64_t)json_integer_value(v);
	}
}

/* Reports bucket ages as this version does, or their ages cannot be compared. */
static void check_age_buckets(struct json_reader *rd, const json_t *o, const char *where)
{
	json_t *arr = jr_get_arr(rd, o, where, "age_buckets", false), *v;
	size_t i;

	if (!arr)
		return;
	json_array_foreach(arr, i, v)
		if (i >= AGE_BUCKETS || !json_is_integer(v) ||
		    (uint64_t)json_integer_value(v) != age_bucket_low(i))
			break;
	if (i != AGE_BUCKETS || json_array_size(arr) != AGE_BUCKETS)
		jr_fail(rd, where, "age_buckets", "not this version's buckets (1, 2, 3, 5, 9, ...)");
}

static void read_heap(struct json_reader *rd, const json_t *o, const char *where, const char *key,
		      struct heap_info *h)
{
	json_t *v = jr_get_obj(rd, o, where, key, false);
	char at[300];

	memset(h, 0, sizeof(*h));
	if (!v)
		return;
	snprintf(at, sizeof(at), "%s%s%s", where, *where ? "." : "", key);
	h->have = true;
	h->slots = jr_get_u64(rd, v, at, "slots", false);
	h->live = jr_get_u64(rd, v, at, "live", false);
	h->free = jr_get_u64(rd, v, at, "free", false);
	h->garbage = jr_get_u64(rd, v, at, "garbage", false);
	h->bytes = jr_get_u64(rd, v, at, "bytes", false);
	h->marking = jr_get_bool(rd, v, at, "marking");
	h->seconds = jr_get_real(rd, v, at, "seconds");
}

static void read_sampling(struct json_reader *rd, const json_t *o, const char *where,
			  struct sampling_info *si, uint64_t *capped)
{
	const char *doubt;
	json_t *v = jr_get_obj(rd, o, where, "sampling", false);
	char at[300];

	memset(si, 0, sizeof(*si));
	if (!v)
		return;
	snprintf(at, sizeof(at), "%s%ssampling", where, *where ? "." : "");
	si->on = true;
	si->budget_percent = jr_get_real(rd, v, at, "max_overhead_percent");
	si->windows = jr_get_u64(rd, v, at, "windows", false);
	si->window_time_s = jr_get_real(rd, v, at, "window_s");
	si->est_overhead = jr_get_real(rd, v, at, "estimated_overhead_percent") / 100;
	si->probe_hits = jr_get_u64(rd, v, at, "probe_hits", false);
	si->traced = jr_get_u64(rd, v, at, "traced", false);
	si->covered = jr_get_u64(rd, v, at, "covered", false);
	si->sample = jr_get_real(rd, v, at, "sample");
	si->burst_windows = jr_get_u64(rd, v, at, "burst_windows", false);
	si->scale = jr_get_real(rd, v, at, "scale");
	*capped = jr_get_u64(rd, v, at, "capped_by_census", false);
	doubt = jr_get_str(rd, v, at, "doubt", false);
	if (doubt)
		snprintf(si->doubt, sizeof(si->doubt), "%s", doubt);
}

static void read_classes(struct json_reader *rd, struct report *r, const json_t *arr, const char *where)
{
	char at[300];
	json_t *o;
	size_t i;

	json_array_foreach(arr, i, o) {
		struct class_row *row;

		snprintf(at, sizeof(at), "%s%sclasses[%zu]", where, *where ? "." : "", i);
		if (!json_is_object(o)) {
			jr_fail(rd, at, NULL, "expected an object");
			return;
		}
		row = report_row(r, jr_get_str(rd, o, at, "name", true));
		if (!row) {
			jr_fail(rd, at, NULL, "out of memory");
			return;
		}
		read_counts(rd, o, at, &row->counts);
		read_est(rd, o, at, &row->est);
		read_ages(rd, o, at, &row->ages);
		if (json_object_get(o, "live_end")) {
			row->census.have = true;
			row->census.live_start = jr_get_u64(rd, o, at, "live_start", false);
			row->census.live_end = jr_get_u64(rd, o, at, "live_end", false);
			row->census.bytes_end = jr_get_u64(rd, o, at, "bytes", false);
			row->census.old_end = jr_get_u64(rd, o, at, "old", false);
			row->census.garbage_end = jr_get_u64(rd, o, at, "garbage", false);
			row->census.change = jr_get_int(rd, o, at, "change", INT64_MIN, INT64_MAX,
							(int64_t)row->census.live_end -
								(int64_t)row->census.live_start);
		}
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
		jr_fail(rd, where, "frames", "more than %d frames", MAX_STACK_DEPTH);
		return;
	}
	json_array_foreach(arr, i, f) {
		snprintf(at, sizeof(at), "%s.frames[%zu]", where, i);
		if (!json_is_object(f)) {
			jr_fail(rd, at, NULL, "expected an object");
			return;
		}
		frames[i].label = jr_get_str(rd, f, at, "label", true);
		frames[i].path = jr_get_str(rd, f, at, "path", true);
		/* Any int: the tracer writes what the iseq said, even a nonsense line. */
		frames[i].line = (int)jr_get_int(rd, f, at, "line", INT_MIN, INT_MAX, 0);
	}
	*depth = json_array_size(arr);
}

static void read_stacks(struct json_reader *rd, struct report *r, const json_t *arr, const char *where)
{
	static struct frame frames[MAX_STACK_DEPTH];
	char at[300];
	json_t *o, *fr;
	size_t i;

	json_array_foreach(arr, i, o) {
		struct stack st = {.frames = frames};
		struct counts c = {};
		struct estimates e;
		struct ages a;

		snprintf(at, sizeof(at), "%s%sstacks[%zu]", where, *where ? "." : "", i);
		if (!json_is_object(o)) {
			jr_fail(rd, at, NULL, "expected an object");
			return;
		}
		c.allocated = jr_get_u64(rd, o, at, "allocated", true);
		c.retained = jr_get_u64(rd, o, at, "retained", true);
		c.young = jr_get_u64(rd, o, at, "young", false);
		read_est(rd, o, at, &e);
		read_ages(rd, o, at, &a);
		st.truncated = jr_get_bool(rd, o, at, "truncated");
		fr = jr_get_arr(rd, o, at, "frames", true);
		if (fr)
			read_frames(rd, fr, at, frames, &st.depth);
		if (rd->failed)
			return;
		if (report_add_stack_est(r, jr_get_str(rd, o, at, "class", true), &st, &c, &e, &a)) {
			jr_fail(rd, at, NULL, "out of memory");
			return;
		}
	}
}

static uint64_t site_key(const char *cls, const char *path, int line)
{
	uint64_t h = str_hash(cls) * 31 + str_hash(path);

	h = (h ^ (uint64_t)line) * 0x100000001b3ULL;
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
	uintptr_t at = (uintptr_t)u64map_get(index, site_key(cls, path, line));
	struct site_row *s;
	size_t i;

	if (at && same_site(&r->sites[at - 1], cls, path, line))
		return (ssize_t)(at - 1);
	for (i = 0; i < r->nsites; i++) /* a hash collision, or a new site */
		if (same_site(&r->sites[i], cls, path, line))
			return (ssize_t)i;
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
	return (ssize_t)r->nsites++;
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
static void read_sites(struct json_reader *rd, struct report *r, const json_t *arr, const char *where)
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
			err = u64map_put(&index, key, (void *)(uintptr_t)(i + 1));
	}
	json_array_foreach(arr, i, o) {
		struct site_row *s;
		ssize_t k;

		if (err || rd->failed)
			break;
		snprintf(at, sizeof(at), "%s%ssites[%zu]", where, *where ? "." : "", i);
		if (!json_is_object(o)) {
			jr_fail(rd, at, NULL, "expected an object");
			break;
		}
		k = find_site(r, &index, jr_get_str(rd, o, at, "class", true),
			      jr_get_str(rd, o, at, "path", true),
			      (int)jr_get_int(rd, o, at, "line", INT_MIN, INT_MAX, 0));
		if (k < 0) {
			err = -ENOMEM;
			break;
		}
		order[n++] = k;
		s = &r->sites[k];
		memset(&s->counts, 0, sizeof(s->counts));
		s->counts.allocated = jr_get_u64(rd, o, at, "allocated", true);
		s->counts.retained = jr_get_u64(rd, o, at, "retained", true);
		s->counts.young = jr_get_u64(rd, o, at, "young", false);
		read_est(rd, o, at, &s->est);
		read_ages(rd, o, at, &s->ages);
	}
	if (!err && !rd->failed)
		err = order_sites(r, order, n);
	if (err)
		jr_fail(rd, where, "sites", "out of memory");
	free(order);
	u64map_free(&index, NULL);
}

static void read_stack_drops(struct json_reader *rd, struct report *r, const json_t *o,
			     const char *where)
{
	json_t *v = jr_get_obj(rd, o, where, "stack_drops", false);
	char at[300];

	if (!v)
		return;
	snprintf(at, sizeof(at), "%s%sstack_drops", where, *where ? "." : "");
	r->stacks_truncated = jr_get_u64(rd, v, at, "truncated", false);
	r->stacks_dropped = jr_get_u64(rd, v, at, "dropped", false);
	r->stack_errors = jr_get_u64(rd, v, at, "errors", false);
}

/* The header of a report: who, how long, what the GC did. */
static void read_header(struct json_reader *rd, struct report *r, const json_t *o, const char *where)
{
	const char *s;
	json_t *v;
	char at[300];

	r->pid = (pid_t)jr_get_int(rd, o, where, "pid", 0, INT32_MAX, 0);
	jr_member(rd, o, where, "pid", true);
	r->ns_pid = (pid_t)jr_get_int(rd, o, where, "ns_pid", 0, INT32_MAX, 0);
	/* Host and command are printed escaped by every writer: kept as they are. */
	s = jr_get_str(rd, o, where, "host", false);
	snprintf(r->host, sizeof(r->host), "%s", s ? s : "");
	s = jr_get_str(rd, o, where, "command", false);
	snprintf(r->command, sizeof(r->command), "%s", s ? s : "");
	copy_printable(r->ruby_version, sizeof(r->ruby_version),
		       jr_get_str(rd, o, where, "ruby_version", true));
	r->duration_s = jr_get_real(rd, o, where, "duration_s");
	s = jr_get_str(rd, o, where, "end_reason", false);
	{
		char reason[64];

		/* Writers print it unchecked: never NULL. */
		copy_printable(reason, sizeof(reason), s ? s : "unknown");
		r->end_reason = strpool_intern(&r->strings, reason);
		if (!r->end_reason)
			r->end_reason = "unknown";
	}
	r->target_exited = jr_get_bool(rd, o, where, "target_exited");
	r->exit_status = (int)jr_get_int(rd, o, where, "exit_status", 0, 255 + 128, -1);
	r->gc_runs = jr_get_u64(rd, o, where, "gc_runs", false);
	v = jr_get_obj(rd, o, where, "compaction", false);
	snprintf(at, sizeof(at), "%s%scompaction", where, *where ? "." : "");
	r->compactions = jr_get_u64(rd, v, at, "count", false);
	r->moved_followed = jr_get_u64(rd, v, at, "followed", false);
	v = jr_get_obj(rd, o, where, "dropped", false);
	snprintf(at, sizeof(at), "%s%sdropped", where, *where ? "." : "");
	r->header_read_errors = jr_get_u64(rd, v, at, "header_read_errors", false);
	r->class_overflow = jr_get_u64(rd, v, at, "class_overflow", false);
	v = jr_get_obj(rd, o, where, "gc_stat", false);
	snprintf(at, sizeof(at), "%s%sgc_stat", where, *where ? "." : "");
	r->have_gc_counts = v != NULL;
	r->gc_allocated = jr_get_u64(rd, v, at, "total_allocated_objects", false);
	r->gc_freed = jr_get_u64(rd, v, at, "total_freed_objects", false);
	read_sampling(rd, o, where, &r->sampling, &r->est_capped);
	read_heap(rd, o, where, "heap_start", &r->heap_start);
	read_heap(rd, o, where, "heap_end", &r->heap_end);
	check_age_buckets(rd, o, where);
}

static struct report *read_report(struct json_reader *rd, const json_t *o, const char *where)
{
	struct report *r = calloc(1, sizeof(*r));
	json_t *totals, *arr;
	char at[300];

	if (!r) {
		jr_fail(rd, where, NULL, "out of memory");
		return NULL;
	}
	if (!json_is_object(o))
		jr_fail(rd, where, NULL, "expected a report object");
	else
		read_header(rd, r, o, where);
	totals = rd->failed ? NULL : jr_get_obj(rd, o, where, "totals", true);
	if (totals) {
		snprintf(at, sizeof(at), "%s%stotals", where, *where ? "." : "");
		read_counts(rd, totals, at, &r->totals);
		read_est(rd, totals, at, &r->est_totals);
		r->have_estimates = json_object_get(totals, "est_allocated") != NULL;
	}
	arr = rd->failed ? NULL : jr_get_arr(rd, o, where, "classes", true);
	if (arr)
		read_classes(rd, r, arr, where);
	r->with_stacks = !rd->failed && json_object_get(o, "stacks");
	if (r->with_stacks) {
		read_stack_drops(rd, r, o, where);
		arr = jr_get_arr(rd, o, where, "stacks", true);
		if (arr)
			read_stacks(rd, r, arr, where);
		arr = rd->failed ? NULL : jr_get_arr(rd, o, where, "sites", false);
		if (arr)
			read_sites(rd, r, arr, where);
	}
	/* Suspects are derived from the rows, sites and paths, as report_finish does. */
	if (!rd->failed && !r->census_only)
		report_find_suspects(r);
	/* As report_finish leaves them: the indexes are not needed once read. */
	u64map_free(&r->by_name, NULL);
	u64map_free(&r->sites_by_key, NULL);
	u64map_free(&r->stacks_by_key, NULL);
	if (rd->failed) {
		report_free(r);
		free(r);
		return NULL;
	}
	return r;
}

static void read_failed_hosts(struct json_reader *rd, const json_t *top, struct host_failures *failed)
{
	json_t *arr = jr_get_arr(rd, top, "", "failed_hosts", false), *o;
	char at[64];
	size_t i;

	json_array_foreach(arr, i, o) {
		const char *host, *reason;

		snprintf(at, sizeof(at), "failed_hosts[%zu]", i);
		if (!json_is_object(o)) {
			jr_fail(rd, at, NULL, "expected an object");
			return;
		}
		host = jr_get_str(rd, o, at, "host", true);
		reason = jr_get_str(rd, o, at, "reason", true);
		if (!rd->failed && failed && host_failures_add(failed, host, reason))
			jr_fail(rd, at, NULL, "out of memory");
	}
}

static int read_top(struct json_reader *rd, const json_t *top, struct model *m,
		    struct host_failures *failed)
{
	size_t nprocs = m->nprocs, nfailed = failed ? failed->n : 0, i;
	json_t *procs, *o;
	char at[64];

	if (!json_is_object(top)) {
		jr_fail(rd, "", NULL, "not an rbmemtrace report (expected a JSON object)");
		return -1;
	}
	procs = json_object_get(top, "processes");
	if (!procs && !json_object_get(top, "classes"))
		jr_fail(rd, "", NULL, "not an rbmemtrace report (no \"classes\" nor \"processes\")");
	else if (procs && !json_is_array(procs))
		jr_fail(rd, "processes", NULL, "expected an array");
	else if (!procs) {
		struct report *r = read_report(rd, top, "");

		if (r && model_add(m, r)) {
			report_free(r);
			free(r);
			jr_fail(rd, "", NULL, "out of memory");
		}
	} else {
		json_array_foreach(procs, i, o) {
			struct report *r;

			snprintf(at, sizeof(at), "processes[%zu]", i);
			r = read_report(rd, o, at);
			if (!r)
				break;
			if (model_add(m, r)) {
				report_free(r);
				free(r);
				jr_fail(rd, at, NULL, "out of memory");
				break;
			}
		}
	}
	if (!rd->failed)
		read_failed_hosts(rd, top, failed);
	if (!rd->failed)
		return 0;
	/* All or nothing: a bad file adds no process. */
	while (m->nprocs > nprocs) {
		report_free(m->procs[--m->nprocs]);
		free(m->procs[m->nprocs]);
	}
	while (failed && failed->n > nfailed) {
		failed->n--;
		free(failed->v[failed->n].host);
		free(failed->v[failed->n].reason);
	}
	return -1;
}

/* jansson's parse errors, with where they are: "line 3, column 7: ...". */
static int parse_error(struct json_reader *rd, const json_error_t *e)
{
	if (e->line > 0)
		jr_fail(rd, "", NULL, "malformed JSON at line %d, column %d: %s", e->line, e->column,
		     e->text);
	else
		jr_fail(rd, "", NULL, "%s", e->text);
	return -1;
}

int json_read_buffer(const char *buf, size_t len, const char *name, struct model *m,
		     struct host_failures *failed, char *err, size_t errlen)
{
	struct json_reader rd = {.name = name, .err = err, .errlen = errlen};
	json_error_t e;
	json_t *top;
	int ret;

	/* Duplicate keys would make "which value counts" a guess. */
	top = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &e);
	if (!top)
		return parse_error(&rd, &e);
	ret = read_top(&rd, top, m, failed);
	json_decref(top);
	return ret;
}

int json_read_file(const char *path, struct model *m, struct host_failures *failed, char *err,
		   size_t errlen)
{
	struct json_reader rd = {.name = path, .err = err, .errlen = errlen};
	json_error_t e;
	json_t *top;
	FILE *f;
	int ret;

	f = fopen(path, "r");
	if (!f) {
		jr_fail(&rd, "", NULL, "%s", strerror(errno));
		return -1;
	}
	top = json_loadf(f, JSON_REJECT_DUPLICATES, &e);
	fclose(f);
	if (!top)
		return parse_error(&rd, &e);
	ret = read_top(&rd, top, m, failed);
	json_decref(top);
	return ret;
}
