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
#include "json_keys.h"
#include "rbmemtrace.h" /* MAX_STACK_DEPTH */
#include "json_read.h"
#include "json_read_rows.h"
#include "verdict_read.h"

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

static void copy_str(char *to, size_t n, const char *s)
{
	snprintf(to, n, "%s", s ? s : "");
}

/* Where the layout came from and which groups were proved: the writers escape its strings. */
static void read_layout(struct json_reader *rd, const json_t *o, const char *where,
			struct report_layout *l)
{
	json_t *v = jr_get_obj(rd, o, where, JK(layout), false), *groups, *g;
	const char *name;
	char at[300], gat[400];
	int n = 0;

	if (!v)
		return;
	snprintf(at, sizeof(at), "%s%slayout", where, *where ? "." : "");
	l->have = true;
	copy_str(l->libruby, sizeof(l->libruby), jr_get_str(rd, v, at, JK(libruby), false));
	copy_str(l->from, sizeof(l->from), jr_get_str(rd, v, at, JK(from), false));
	copy_str(l->code, sizeof(l->code), jr_get_str(rd, v, at, JK(code_moved), false));
	l->check_ms = jr_get_real(rd, v, at, JK(check_ms));
	groups = jr_get_obj(rd, v, at, JK(groups), false);
	json_object_foreach(groups, name, g)
	{
		struct report_layout_group *rg = &l->groups[n];

		if (n == REPORT_LAYOUT_GROUPS || rd->failed)
			break;
		snprintf(gat, sizeof(gat), "%s.groups", at);
		if (!json_is_object(g)) {
			jr_fail(rd, gat, name, "expected an object");
			break;
		}
		snprintf(gat, sizeof(gat), "%s.groups.%s", at, name);
		copy_str(rg->name, sizeof(rg->name), name);
		rg->status = jr_get_bool(rd, g, gat, JK(proved)) ? 1 : 0;
		copy_str(rg->why, sizeof(rg->why), jr_get_str(rd, g, gat, JK(why), false));
		copy_str(rg->gives, sizeof(rg->gives), jr_get_str(rd, g, gat, JK(missing), false));
		n++;
	}
	for (; n < REPORT_LAYOUT_GROUPS; n++)
		l->groups[n].status = -1;
}

/*
 * A period's report (trace --every) read back: which period and when, for
 * a series (the HTML page's); its period counts are not read, so it is
 * not on (period.h): merged, it sums as any report does.
 */
static void read_period(struct json_reader *rd, struct report *r, const json_t *o,
			const char *where)
{
	json_t *v = jr_get_obj(rd, o, where, JK(period), false);
	json_t *t = json_object_get(v, JK(time));
	char at[300];

	if (!v)
		return;
	snprintf(at, sizeof(at), "%s%speriod", where, *where ? "." : "");
	r->period.read_back = true;
	r->period.number = jr_get_u64(rd, v, at, JK(number), false);
	r->period.duration_s = jr_get_real(rd, v, at, JK(duration_s));
	/* Unix seconds: past jr_get_real's bound, and never more than a 64-bit second count. */
	if (json_is_number(t) && json_number_value(t) >= 0 && json_number_value(t) < 1e12)
		r->period.time = json_number_value(t);
	else if (t)
		jr_fail(rd, at, JK(time), "expected Unix seconds");
}

/* Where the process ran, when the report says: kept printable, within their fields. */
static void read_labels(struct json_reader *rd, struct report *r, const json_t *o,
			const char *where)
{
	const char *s;

	if ((s = jr_get_str(rd, o, where, JK(container_id), false)))
		copy_printable(r->container_id, sizeof(r->container_id), s);
	if ((s = jr_get_str(rd, o, where, JK(pod_uid), false)))
		copy_printable(r->pod_uid, sizeof(r->pod_uid), s);
	if ((s = jr_get_str(rd, o, where, JK(pod_name), false)))
		copy_printable(r->pod_name, sizeof(r->pod_name), s);
	if ((s = jr_get_str(rd, o, where, JK(pod_namespace), false)))
		copy_printable(r->pod_namespace, sizeof(r->pod_namespace), s);
}

static void read_header(struct json_reader *rd, struct report *r, const json_t *o, const char *where)
{
	const char *s;
	json_t *v;
	char at[300];

	r->pid = (pid_t)jr_get_int(rd, o, where, JK(pid), 0, INT32_MAX, 0);
	jr_member(rd, o, where, JK(pid), true);
	r->ns_pid = (pid_t)jr_get_int(rd, o, where, JK(ns_pid), 0, INT32_MAX, 0);
	/* Host and command are printed escaped by every writer: kept as they are. */
	s = jr_get_str(rd, o, where, JK(host), false);
	snprintf(r->host, sizeof(r->host), "%s", s ? s : "");
	s = jr_get_str(rd, o, where, JK(command), false);
	snprintf(r->command, sizeof(r->command), "%s", s ? s : "");
	read_labels(rd, r, o, where);
	copy_printable(r->ruby_version, sizeof(r->ruby_version),
		       jr_get_str(rd, o, where, JK(ruby_version), true));
	read_layout(rd, o, where, &r->layout);
	r->duration_s = jr_get_real(rd, o, where, JK(duration_s));
	s = jr_get_str(rd, o, where, JK(end_reason), false);
	{
		char reason[64];

		/* Writers print it unchecked: never NULL. */
		copy_printable(reason, sizeof(reason), s ? s : "unknown");
		r->end_reason = strpool_intern(&r->strings, reason);
		if (!r->end_reason)
			r->end_reason = "unknown";
	}
	r->target_exited = jr_get_bool(rd, o, where, JK(target_exited));
	r->exit_status = (int)jr_get_int(rd, o, where, JK(exit_status), 0, 255 + 128, -1);
	r->gc_runs = jr_get_u64(rd, o, where, JK(gc_runs), false);
	v = jr_get_obj(rd, o, where, JK(compaction), false);
	snprintf(at, sizeof(at), "%s%scompaction", where, *where ? "." : "");
	r->compactions = jr_get_u64(rd, v, at, JK(count), false);
	r->moved_followed = jr_get_u64(rd, v, at, JK(followed), false);
	r->moved_over = jr_get_u64(rd, v, at, JK(moved_over), false);
	r->scan_failures = jr_get_u64(rd, v, at, JK(scan_failures), false);
	r->end_read_while_compacting = json_is_true(json_object_get(v, JK(end_read_while_compacting)));
	v = jr_get_obj(rd, o, where, JK(dropped), false);
	snprintf(at, sizeof(at), "%s%sdropped", where, *where ? "." : "");
	r->header_read_errors = jr_get_u64(rd, v, at, JK(header_read_errors), false);
	r->class_overflow = jr_get_u64(rd, v, at, JK(class_overflow), false);
	v = jr_get_obj(rd, o, where, JK(limits_reached), false);
	snprintf(at, sizeof(at), "%s%slimits_reached", where, *where ? "." : "");
#define CAP_READ(id, key) r->caps.n[id] = jr_get_u64(rd, v, at, JK(key), false);
	CAPS(CAP_READ)
#undef CAP_READ
	v = jr_get_obj(rd, o, where, JK(gc_stat), false);
	snprintf(at, sizeof(at), "%s%sgc_stat", where, *where ? "." : "");
	r->have_gc_counts = v != NULL;
	r->gc_allocated = jr_get_u64(rd, v, at, JK(total_allocated_objects), false);
	r->gc_freed = jr_get_u64(rd, v, at, JK(total_freed_objects), false);
	r->gc_counts_stale = v && json_is_true(json_object_get(v, JK(stale)));
	r->gc_moved = jr_get_u64(rd, v, at, JK(moved_objects), false);
	r->gc_moves_left_out = v && json_is_true(json_object_get(v, JK(moves_left_out)));
	jr_read_sampling(rd, o, where, &r->sampling, &r->est_capped);
	jr_read_heap(rd, o, where, JK(heap_start), &r->heap_start);
	jr_read_heap(rd, o, where, JK(heap_end), &r->heap_end);
	jr_check_age_buckets(rd, o, where);
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
	read_period(rd, r, o, where);
	r->verdict = jr_read_verdict(rd, o, where);
	totals = rd->failed ? NULL : jr_get_obj(rd, o, where, JK(totals), true);
	if (totals) {
		snprintf(at, sizeof(at), "%s%stotals", where, *where ? "." : "");
		jr_read_counts(rd, totals, at, &r->totals);
		jr_read_est(rd, totals, at, &r->est_totals);
		r->have_estimates = json_object_get(totals, JK(est_allocated)) != NULL;
	}
	arr = rd->failed ? NULL : jr_get_arr(rd, o, where, JK(classes), true);
	if (arr)
		jr_read_classes(rd, r, arr, where);
	r->with_stacks = !rd->failed && json_object_get(o, JK(stacks));
	if (r->with_stacks) {
		jr_read_stack_drops(rd, r, o, where);
		arr = jr_get_arr(rd, o, where, JK(stacks), true);
		if (arr)
			jr_read_stacks(rd, r, arr, where);
		arr = rd->failed ? NULL : jr_get_arr(rd, o, where, JK(sites), false);
		if (arr)
			jr_read_sites(rd, r, arr, where);
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
	json_t *arr = jr_get_arr(rd, top, "", JK(failed_hosts), false), *o;
	char at[64];
	size_t i;

	json_array_foreach(arr, i, o) {
		const char *host, *reason;

		snprintf(at, sizeof(at), "failed_hosts[%zu]", i);
		if (!json_is_object(o)) {
			jr_fail(rd, at, NULL, "expected an object");
			return;
		}
		host = jr_get_str(rd, o, at, JK(host), true);
		reason = jr_get_str(rd, o, at, JK(reason), true);
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
	procs = json_object_get(top, JK(processes));
	if (!procs && !json_object_get(top, JK(classes)))
		jr_fail(rd, "", NULL, "not an rbmemtrace report (no \"classes\" nor \"processes\")");
	else if (procs && !json_is_array(procs))
		jr_fail(rd, JK(processes), NULL, "expected an array");
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
