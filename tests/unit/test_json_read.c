// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/model/json_read.c: reports and models read back from their JSON. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "json_read.h"
#include "model_ops.h"
#include "writers.h"

/*
 * A rich report written by report_write_json reads back field for field; a
 * model's JSON reads back as its processes; malformed, truncated and
 * mistyped input is one line naming the file and the field.
 */

static struct frame frames_a[] = {{"Class#new", "<cfunc>", 0},
				  {"Cache#keep \"q\"",
				   "app/c\xc3\xa4"
				   "che.rb",
				   12},
				  {"<main>", "app.rb", 3}};
static struct frame frames_b[] = {{"block in <top (required)>", "x.rb", -5}};

/* A report with every field the JSON carries set to something distinct. */
static void rich_report(struct report *r, bool sampled)
{
	struct stack a = {.depth = 3, .truncated = false, .frames = frames_a},
		     b = {.depth = 1, .truncated = true, .frames = frames_b};
	struct counts c1 = {.allocated = 100,
			    .freed = 40,
			    .retained = 50,
			    .young = 7,
			    .untracked = 2,
			    .not_followed = 1};
	struct counts c2 = {.allocated = 9, .freed = 9};
	struct ages a1 = {{10, 20, 0, 5, 0, 0, 0, 15}};
	struct census_counts cc = {
	    .have = true, .live_start = 11, .live_end = 60, .bytes_end = 4800, .old_end = 33};

	memset(r, 0, sizeof(*r));
	r->pid = 4242;
	r->ns_pid = 17;
	strcpy(r->host, "web-1");
	strcpy(r->command, "puma \x1b[31m");
	strcpy(r->ruby_version, "3.1.7");
	r->duration_s = 12.5;
	r->end_reason = "signal";
	r->target_exited = true;
	r->exit_status = 3;
	r->gc_runs = 12;
	r->compactions = 2;
	r->moved_followed = 8;
	r->header_read_errors = 4;
	r->class_overflow = 6;
	r->have_gc_counts = true;
	r->gc_allocated = 2600;
	r->gc_freed = 2500;
	r->heap_start = (struct heap_info){.have = true,
					   .slots = 1000,
					   .live = 900,
					   .free = 100,
					   .garbage = 5,
					   .bytes = 40000,
					   .seconds = 0.25};
	r->heap_end = (struct heap_info){.have = true,
					 .slots = 2000,
					 .live = 1900,
					 .free = 100,
					 .garbage = 7,
					 .bytes = 80000,
					 .marking = true,
					 .seconds = 0.5};
	if (sampled)
		r->sampling = (struct sampling_info){.on = true,
						     .budget_percent = 2,
						     .windows = 12,
						     .window_time_s = 0.25,
						     .est_overhead = 0.0125,
						     .traced = 109,
						     .probe_hits = 150,
						     .scale = 25};
	r->with_stacks = true;
	r->stacks_truncated = 1;
	r->stacks_dropped = 2;
	r->stack_errors = 3;
	cr_assert_eq(report_add_counts(r, "Leak::Item", &a, &c1, &a1), 0);
	cr_assert_eq(report_add_counts(r, "String", &b, &c2, NULL), 0);
	cr_assert_eq(report_add_counts(r, "NoPath", NULL, &c2, NULL), 0);
	cr_assert_eq(report_set_census(r, "Leak::Item", &cc), 0);
	report_finish(r);
	{ /* a period's birth cohorts: of live_end's 60, 11 from the start, 49 born in period 3 */
		struct class_row *row = report_find_row(r, "Leak::Item");

		cr_assert(row && (row->born = calloc(2, sizeof(*row->born))));
		row->have_born = true;
		row->nborn = 2;
		row->born[0] = (struct born_count){.period = 0, .live = 11};
		row->born[1] = (struct born_count){.period = 3, .live = 49};
	}
}

static void same_counts(const struct counts *a, const struct counts *b, bool full, const char *w)
{
	cr_expect_eq(a->allocated, b->allocated, "%s allocated", w);
	cr_expect_eq(a->retained, b->retained, "%s retained", w);
	cr_expect_eq(a->young, b->young, "%s young", w);
	if (!full)
		return;
	cr_expect_eq(a->freed, b->freed, "%s freed", w);
	cr_expect_eq(a->untracked, b->untracked, "%s untracked", w);
	cr_expect_eq(a->not_followed, b->not_followed, "%s not_followed", w);
}

static void same_est(const struct estimates *a, const struct estimates *b, bool freed,
		     const char *w)
{
	cr_expect_eq(a->allocated, b->allocated, "%s est_allocated", w);
	cr_expect_eq(a->retained, b->retained, "%s est_retained", w);
	if (freed)
		cr_expect_eq(a->freed, b->freed, "%s est_freed", w);
}

static void same_ages(const struct ages *a, const struct ages *b, const char *w)
{
	cr_expect_eq(memcmp(a, b, sizeof(*a)), 0, "%s retained_ages", w);
}

static void same_heap(const struct heap_info *a, const struct heap_info *b)
{
	cr_expect_eq(a->have, b->have);
	cr_expect_eq(a->slots, b->slots);
	cr_expect_eq(a->live, b->live);
	cr_expect_eq(a->free, b->free);
	cr_expect_eq(a->garbage, b->garbage);
	cr_expect_eq(a->bytes, b->bytes);
	cr_expect_eq(a->marking, b->marking);
	cr_expect(fabs(a->seconds - b->seconds) < 1e-4);
}

/* Everything the JSON carries, compared; identity only when the writer wrote it. */
static void same_report(const struct report *a, const struct report *b, bool identity)
{
	size_t i, j;

	cr_expect_eq(a->pid, b->pid);
	if (identity) {
		cr_expect_eq(a->ns_pid, b->ns_pid);
		cr_expect_str_eq(a->host, b->host);
		cr_expect_str_eq(a->command, b->command);
	}
	cr_expect_str_eq(a->ruby_version, b->ruby_version);
	cr_expect(fabs(a->duration_s - b->duration_s) < 1e-3);
	cr_expect_str_eq(a->end_reason, b->end_reason);
	cr_expect_eq(a->target_exited, b->target_exited);
	cr_expect_eq(a->exit_status, b->exit_status);
	cr_expect_eq(a->gc_runs, b->gc_runs);
	cr_expect_eq(a->compactions, b->compactions);
	cr_expect_eq(a->moved_followed, b->moved_followed);
	cr_expect_eq(a->header_read_errors, b->header_read_errors);
	cr_expect_eq(a->class_overflow, b->class_overflow);
	cr_expect_eq(a->have_gc_counts, b->have_gc_counts);
	cr_expect_eq(a->gc_allocated, b->gc_allocated);
	cr_expect_eq(a->gc_freed, b->gc_freed);
	cr_expect_eq(a->sampling.on, b->sampling.on);
	cr_expect(fabs(a->sampling.budget_percent - b->sampling.budget_percent) < 1e-3);
	cr_expect_eq(a->sampling.windows, b->sampling.windows);
	cr_expect(fabs(a->sampling.window_time_s - b->sampling.window_time_s) < 1e-3);
	cr_expect(fabs(a->sampling.est_overhead - b->sampling.est_overhead) < 1e-5);
	cr_expect_eq(a->sampling.traced, b->sampling.traced);
	cr_expect_eq(a->sampling.probe_hits, b->sampling.probe_hits);
	cr_expect(fabs(a->sampling.scale - b->sampling.scale) < 1e-3);
	same_heap(&a->heap_start, &b->heap_start);
	same_heap(&a->heap_end, &b->heap_end);
	same_counts(&a->totals, &b->totals, true, "totals");
	cr_expect_eq(a->have_estimates, b->have_estimates);
	same_est(&a->est_totals, &b->est_totals, true, "totals");
	cr_assert_eq(a->nrows, b->nrows);
	for (i = 0; i < a->nrows; i++) {
		const struct class_row *x = &a->rows[i], *y = &b->rows[i];

		cr_expect_str_eq(x->name, y->name);
		same_counts(&x->counts, &y->counts, true, x->name);
		same_est(&x->est, &y->est, true, x->name);
		same_ages(&x->ages, &y->ages, x->name);
		cr_expect_eq(x->census.have, y->census.have, "%s census", x->name);
		cr_expect_eq(x->census.live_start, y->census.live_start);
		cr_expect_eq(x->census.live_end, y->census.live_end);
		cr_expect_eq(x->census.bytes_end, y->census.bytes_end);
		cr_expect_eq(x->census.old_end, y->census.old_end);
		cr_expect_eq(x->have_born, y->have_born, "%s born", x->name);
		cr_assert_eq(x->nborn, y->nborn, "%s born", x->name);
		for (j = 0; j < x->nborn; j++) {
			cr_expect_eq(x->born[j].period, y->born[j].period);
			cr_expect_eq(x->born[j].live, y->born[j].live);
		}
	}
	cr_expect_eq(a->with_stacks, b->with_stacks);
	cr_expect_eq(a->stacks_truncated, b->stacks_truncated);
	cr_expect_eq(a->stacks_dropped, b->stacks_dropped);
	cr_expect_eq(a->stack_errors, b->stack_errors);
	cr_assert_eq(a->nsites, b->nsites, "sites: %zu, read back %zu", a->nsites, b->nsites);
	for (i = 0; i < a->nsites; i++) {
		const struct site_row *x = &a->sites[i], *y = &b->sites[i];

		cr_expect_str_eq(x->class_name, y->class_name);
		cr_expect_str_eq(x->path, y->path);
		cr_expect_eq(x->line, y->line);
		same_counts(&x->counts, &y->counts, false, "site");
		same_est(&x->est, &y->est, false, "site");
		same_ages(&x->ages, &y->ages, "site");
	}
	cr_assert_eq(a->nstacks, b->nstacks, "stacks: %zu, read back %zu", a->nstacks, b->nstacks);
	for (i = 0; i < a->nstacks; i++) {
		const struct stack_row *x = &a->stacks[i], *y = &b->stacks[i];

		cr_expect_str_eq(x->class_name, y->class_name);
		same_counts(&x->counts, &y->counts, false, "stack");
		same_est(&x->est, &y->est, false, "stack");
		same_ages(&x->ages, &y->ages, "stack");
		cr_expect_eq(x->stack->truncated, y->stack->truncated);
		cr_assert_eq(x->stack->depth, y->stack->depth);
		for (j = 0; j < x->stack->depth; j++) {
			cr_expect_str_eq(x->stack->frames[j].label, y->stack->frames[j].label);
			cr_expect_str_eq(x->stack->frames[j].path, y->stack->frames[j].path);
			cr_expect_eq(x->stack->frames[j].line, y->stack->frames[j].line);
		}
	}
}

static void round_trip(bool sampled)
{
	struct model m = {};
	struct report r;
	char err[512] = "", *json;

	rich_report(&r, sampled);
	json = test_report_json(&r);
	cr_assert_eq(json_read_buffer(json, strlen(json), "rich.json", &m, NULL, err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(m.nprocs, 1);
	same_report(&r, m.procs[0], false);
	/* Written again, it is the same file. */
	free(json);
	json = test_report_json(m.procs[0]);
	{
		char *again = test_report_json(&r);

		cr_expect_str_eq(json, again);
		free(again);
	}
	free(json);
	model_free(&m);
	report_free(&r);
}

Test(json_read, round_trip_full)
{
	round_trip(false);
}

Test(json_read, round_trip_sampled)
{
	round_trip(true);
}

/* A model of two processes: each read back with its identity, the summary ignored. */
Test(json_read, model_round_trip)
{
	struct report a, b, sum;
	struct model m = {}, back = {};
	struct host_failure f[] = {{"db-1", "ssh: connect to host db-1 port 22: refused"}};
	struct host_failures failed = {};
	struct model_view v;
	char err[512] = "", *buf = NULL;
	size_t len = 0;
	FILE *out;

	rich_report(&a, false);
	rich_report(&b, true);
	b.pid = 99;
	strcpy(b.host, "web-2");
	model_add(&m, &a);
	model_add(&m, &b);
	cr_assert_eq(model_summary(&m, &sum), 0);
	v = (struct model_view){.model = &m, .summary = &sum, .failed = f, .nfailed = 1};
	out = open_memstream(&buf, &len);
	model_write_json(out, &v);
	fclose(out);
	cr_expect(strncmp(buf, "{\n  \"rbmemtrace_version\": \"", 27) == 0, "%s", buf);
	cr_assert_eq(json_read_buffer(buf, len, "model.json", &back, &failed, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(back.nprocs, 2);
	same_report(&a, back.procs[0], true);
	same_report(&b, back.procs[1], true);
	cr_assert_eq(failed.n, 1);
	cr_expect_str_eq(failed.v[0].host, "db-1");
	cr_expect_str_eq(failed.v[0].reason, f[0].reason);
	/* The summary sums the two by names. */
	cr_expect_eq(sum.totals.allocated, a.totals.allocated + b.totals.allocated);
	cr_expect_eq(sum.rows[0].counts.retained, 100);
	cr_expect_str_eq(sum.ruby_version, "3.1.7");
	free(buf);
	host_failures_free(&failed);
	model_free(&back);
	report_free(&sum);
	m.nprocs = 0; /* a and b live on the stack */
	model_free(&m);
	report_free(&a);
	report_free(&b);
}

/* Reads text, expecting failure with a message that contains want. */
static void bad(const char *text, const char *want)
{
	struct model m = {};
	struct host_failures failed = {};
	char err[512] = "";

	cr_expect_eq(
	    json_read_buffer(text, strlen(text), "bad.json", &m, &failed, err, sizeof(err)), -1,
	    "accepted: %s", text);
	cr_expect_eq(m.nprocs, 0, "a bad file added processes");
	cr_expect(strncmp(err, "bad.json: ", 10) == 0, "not naming the file: %s", err);
	cr_expect(strstr(err, want) != NULL, "want \"%s\" in \"%s\"", want, err);
	cr_expect(strchr(err, '\n') == NULL, "more than one line: %s", err);
	model_free(&m);
	host_failures_free(&failed);
}

#define MIN_REPORT                                                                                 \
	"\"pid\": 1, \"ruby_version\": \"3.1.7\", \"totals\": {\"allocated\": 0, \"retained\": 0}"

Test(json_read, malformed_truncated_and_mistyped)
{
	struct report r;
	char *json;

	bad("", "malformed JSON");
	bad("{\"pid\": 1,", "malformed JSON at line 1");
	bad("[1, 2]", "not an rbmemtrace report");
	bad("{\"a\": 1}", "not an rbmemtrace report");
	bad("{" MIN_REPORT "}", "not an rbmemtrace report (no \"classes\"");
	bad("{" MIN_REPORT ", \"classes\": {}}", "classes: expected an array");
	bad("{" MIN_REPORT
	    ", \"classes\": [{\"name\": \"A\", \"allocated\": -1, \"retained\": 0}]}",
	    "classes[0].allocated: expected a whole number >= 0");
	bad("{" MIN_REPORT ", \"classes\": [{\"name\": 5, \"allocated\": 1, \"retained\": 0}]}",
	    "classes[0].name: expected a string");
	bad("{" MIN_REPORT
	    ", \"classes\": [{\"name\": \"A\", \"allocated\": 1.5, \"retained\": 0}]}",
	    "classes[0].allocated: expected a whole number");
	bad("{" MIN_REPORT ", \"classes\": [{\"name\": \"A\", \"allocated\": 1}]}",
	    "classes[0].retained: missing");
	bad("{" MIN_REPORT ", \"classes\": [], \"age_buckets\": [1, 2, 4]}", "age_buckets");
	bad("{" MIN_REPORT ", \"classes\": [], \"stacks\": [{\"class\": \"A\", \"allocated\": 1, "
	    "\"retained\": 1, \"frames\": [{\"label\": \"x\", \"path\": \"y\", \"line\": "
	    "\"7\"}]}]}",
	    "stacks[0].frames[0].line: expected a whole number");
	bad("{\"processes\": [{" MIN_REPORT ", \"classes\": []}, {\"pid\": \"x\"}]}",
	    "processes[1].pid: expected a whole number");
	bad("{\"processes\": 3}", "processes: expected an array");
	bad("{" MIN_REPORT ", \"classes\": [], \"classes\": []}", "duplicate");
	bad("{" MIN_REPORT ", \"classes\": [], \"sampling\": 3}", "sampling: expected an object");
	bad("{" MIN_REPORT ", \"classes\": [{\"name\": \"A\", \"allocated\": 1, \"retained\": 0, "
	    "\"born\": [[2, 1], [1, 5]]}]}",
	    "classes[0].born[1]: periods not in ascending order");
	bad("{" MIN_REPORT ", \"classes\": [{\"name\": \"A\", \"allocated\": 1, \"retained\": 0, "
	    "\"born\": [[2, -1]]}]}",
	    "classes[0].born[0]: expected a [period, live] pair");
	bad("{" MIN_REPORT ", \"classes\": [{\"name\": \"A\", \"allocated\": 1, \"retained\": 0, "
	    "\"born\": [3]}]}",
	    "classes[0].born[0]: expected a [period, live] pair");
	bad("{" MIN_REPORT ", \"classes\": [{\"name\": \"A\", \"allocated\": 1, \"retained\": 0, "
	    "\"born\": {}}]}",
	    "classes[0].born: expected an array");
	/* Found by fuzz_json_read: pprof made this duration an int64 of nanoseconds. */
	bad("{" MIN_REPORT ", \"duration_s\": 92233720368547758080.0, \"classes\": []}",
	    "duration_s: expected a number from -1000000000 to 1000000000");
	bad("{" MIN_REPORT ", \"classes\": [], \"sampling\": {\"scale\": -1e300}}",
	    "sampling.scale: expected a number from");

	/* Every cut of a real report is refused, never half read. */
	rich_report(&r, true);
	json = test_report_json(&r);
	for (size_t cut = 0; cut + 2 < strlen(json); cut += 7) {
		struct model m = {};
		char err[512];

		cr_expect_eq(json_read_buffer(json, cut, "cut.json", &m, NULL, err, sizeof(err)),
			     -1, "a report cut at %zu was accepted", cut);
		cr_expect_eq(m.nprocs, 0);
	}
	free(json);
	report_free(&r);
}

Test(json_read, deep_stacks_and_files)
{
	struct model m = {};
	char err[512] = "", *text = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&text, &len);

	/* More frames than a call path may have would overflow the writers' buffers. */
	fprintf(f, "{" MIN_REPORT ", \"classes\": [], \"stacks\": [{\"class\": \"A\", "
		   "\"allocated\": 1, \"retained\": 1, \"frames\": [");
	for (i = 0; i <= MAX_STACK_DEPTH; i++)
		fprintf(f, "%s{\"label\": \"f\", \"path\": \"p\", \"line\": 1}", i ? ", " : "");
	fprintf(f, "]}]}");
	fclose(f);
	bad(text, "stacks[0].frames: more than");
	free(text);
	cr_expect_eq(json_read_file("/nonexistent/r.json", &m, NULL, err, sizeof(err)), -1);
	cr_expect_str_eq(err, "/nonexistent/r.json: No such file or directory");

	/* The fewest fields a report may have: the others take their defaults. */
	text = "{" MIN_REPORT ", \"classes\": []}";
	cr_assert_eq(json_read_buffer(text, strlen(text), "min.json", &m, NULL, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_str_eq(m.procs[0]->end_reason, "unknown");
	cr_expect_eq(m.procs[0]->exit_status, -1);
	cr_expect(!m.procs[0]->with_stacks && !m.procs[0]->sampling.on);
	model_free(&m);
}

/* Strings the text writer prints as they are come back printable. */
Test(json_read, header_strings_made_printable)
{
	static const char text[] = "{\"pid\": 1, \"ruby_version\": \"3.1\\u001b[2J\", "
				   "\"end_reason\": \"x\\ny\", \"totals\": {\"allocated\": 0, "
				   "\"retained\": 0}, \"classes\": []}";
	struct model m = {};
	char err[512] = "";

	cr_assert_eq(json_read_buffer(text, strlen(text), "t.json", &m, NULL, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_str_eq(m.procs[0]->ruby_version, "3.1?[2J");
	cr_expect_str_eq(m.procs[0]->end_reason, "x?y");
	cr_expect_eq(m.procs[0]->exit_status, -1);
	model_free(&m);
}
