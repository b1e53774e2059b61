// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof output: a gzip-compressed profile.proto (our proto/profile.proto,
 * encoded by protobuf-c) that `go tool pprof` and every pprof reader take
 * for a Go heap profile: the sample types are Go's, alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count, inuse_space/bytes.
 *
 * One sample per process, call path, class and age (model_ops.h computes
 * them): its locations are the Ruby frames, innermost first, under a leaf
 * location for the class itself, "Foo (object)", so that -top lists what is
 * kept and the frames above it where.  Labels: class, host, process,
 * ruby_version (strings), pid and age (numbers, for -tagfocus pid=1234 and
 * age=5: ranges).  This writer only encodes what the model computed.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "escape.h"
#include "pprof_build.h"
#include "strpool.h"
#include "writers.h"

static void add_sample(struct builder *b, const struct report *r, const struct profile_row *row)
{
	Sample init = PERFTOOLS__PROFILES__SAMPLE__INIT;
	const struct stack *st = row->stack;
	struct sample_entry *e;
	char *leaf = NULL;
	size_t i, n = 0;

	e = pb_grow(b->samples, &b->samples_cap, b->nsamples, sizeof(*e), &b->oom);
	if (!e)
		return;
	b->samples = e;
	e = &b->samples[b->nsamples];
	memset(e, 0, sizeof(*e));
	e->s = init;
	e->locs = calloc((st ? st->depth : 0) + 2, sizeof(*e->locs));
	if (!e->locs || asprintf(&leaf, "%s (object)", row->class_name) < 0) {
		free(e->locs);
		b->oom = true;
		return;
	}
	b->nsamples++;
	/* The class is the leaf: -top puts what is kept first, its callers above. */
	e->locs[n++] = pb_location_id(b, leaf, "", 0);
	free(leaf);
	for (i = 0; st && i < st->depth; i++)
		e->locs[n++] = pb_location_id(b, st->frames[i].label, st->frames[i].path,
					   st->frames[i].line);
	if (st && st->truncated)
		e->locs[n++] = pb_location_id(b, "(frames beyond --depth)", "", 0);
	e->s.n_location_id = n;
	e->values[0] = (int64_t)row->alloc_objects;
	e->values[1] = (int64_t)row->alloc_bytes;
	e->values[2] = (int64_t)row->inuse_objects;
	e->values[3] = (int64_t)row->inuse_bytes;
	pb_add_label(e, b, "class", row->class_name, 0);
	pb_add_label(e, b, "pid", NULL, r->pid);
	if (r->host[0])
		pb_add_label(e, b, "host", r->host, 0);
	if (r->command[0])
		pb_add_label(e, b, "process", r->command, 0);
	if (r->container_id[0])
		pb_add_label(e, b, "container_id", r->container_id, 0);
	if (r->pod_uid[0])
		pb_add_label(e, b, "pod_uid", r->pod_uid, 0);
	if (r->pod_name[0])
		pb_add_label(e, b, "pod", r->pod_name, 0);
	if (r->pod_namespace[0])
		pb_add_label(e, b, "namespace", r->pod_namespace, 0);
	pb_add_label(e, b, "ruby_version", r->ruby_version, 0);
	/*
	 * Young objects (age 0) and those of unknown age get none: pprof drops a
	 * numeric label of 0, and a unit would make -tagfocus age=5: need one too.
	 */
	if (row->age > 0)
		pb_add_label(e, b, "age", NULL, row->age);
}

/*
 * The header's two, a line per period for a process gone or unsampled, and
 * the leak verdicts' lines: each process's at most VERDICT_MAX points of a
 * few lines each, and a line that says if more were left out.
 */
#define MAX_COMMENTS 160

/* What a reader of a period's profile must know of a process: gone, or not sampled. */
static void period_comment(struct builder *b, const struct report *r, int64_t *comments)
{
	char line[160];

	if (r->period.target_gone)
		snprintf(line, sizeof(line),
			 "PID %d has exited: this is its last profile (period %" PRIu64 ")", r->pid,
			 r->period.number);
	else if (r->period.untraced)
		snprintf(line, sizeof(line),
			 "PID %d: no sampled window traced an allocation in this period: "
			 "its allocations are on no call path",
			 r->pid);
	else
		return;
	comments[b->p.n_comment++] = pb_str_id(b, line);
}

/* One line of a verdict's text as a comment, under its process's pid when there are several. */
static void verdict_line(struct builder *b, const char *line, const struct report *r, bool pid,
			 int64_t *comments)
{
	char *c = NULL;

	if (pid ? asprintf(&c, "PID %d: %s", r->pid, line) < 0 : !(c = strdup(line))) {
		b->oom = true;
		return;
	}
	comments[b->p.n_comment++] = pb_str_id(b, c);
	free(c);
}

/*
 * Each process's leak verdict as the text report says it, a comment a line
 * (go tool pprof -comments): the profiles serve hands out and --format pprof
 * carry it too.  Escaped for a terminal by the text writer, as printed.
 */
static void verdict_comments(struct builder *b, const struct model_view *v, int64_t *comments)
{
	size_t i;

	for (i = 0; i < v->model->nprocs && !b->oom; i++) {
		const struct report *r = v->model->procs[i];
		char *text = NULL, *line, *save = NULL;
		size_t len = 0;
		FILE *m;

		if (!r->verdict)
			continue;
		m = open_memstream(&text, &len);
		if (!m) {
			b->oom = true;
			return;
		}
		verdict_write_text(m, r->verdict, r->duration_s);
		if (fclose(m)) {
			free(text);
			b->oom = true;
			return;
		}
		for (line = strtok_r(text, "\n", &save); line && !b->oom;
		     line = strtok_r(NULL, "\n", &save)) {
			if (b->p.n_comment + 1 >= MAX_COMMENTS) {
				comments[b->p.n_comment++] = pb_str_id(
				    b, "(more leak verdict lines left out: see the JSON report)");
				break;
			}
			verdict_line(b, line, r, v->model->nprocs > 1, comments);
		}
		free(text);
		if (b->p.n_comment >= MAX_COMMENTS)
			break;
	}
}

static const char *const sample_types[NVALUES][2] = {
	{"alloc_objects", "count"},
	{"alloc_space", "bytes"},
	{"inuse_objects", "count"},
	{"inuse_space", "bytes"},
};

/*
 * Fills the profile's header.  The period says how the counts were taken:
 * 1 when every allocation was traced; under sampling, the largest scale of
 * the processes, for information (the values are already scaled).
 */
/* The sample types (sample_types[]) and the period's type, space in bytes. */
static void set_types(struct builder *b, ValueType *types, ValueType **type_ptrs,
		      ValueType *period_type)
{
	ValueType init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	size_t i;

	for (i = 0; i < NVALUES; i++) {
		types[i] = init;
		types[i].type = pb_str_id(b, sample_types[i][0]);
		types[i].unit = pb_str_id(b, sample_types[i][1]);
		type_ptrs[i] = &types[i];
	}
	b->p.n_sample_type = NVALUES;
	b->p.sample_type = type_ptrs;
	/* Objects are what was counted; bytes are an estimate (see model_ops.h). */
	b->p.default_sample_type = types[2].type;
	*period_type = init;
	period_type->type = pb_str_id(b, "space");
	period_type->unit = pb_str_id(b, "bytes");
	b->p.period_type = period_type;
}

/*
 * The profile's period (the largest sampling scale), duration and time,
 * over the processes; true if they are continuous-trace periods.
 */
static bool set_times(struct builder *b, const struct model_view *v)
{
	double duration = 0, scale = 1, time = 0;
	bool period = false;
	size_t i;

	for (i = 0; i < v->model->nprocs; i++) {
		const struct report *r = v->model->procs[i];
		const struct period_info *pi = &r->period;

		if (pi->on) {
			/* A period: its own length, ending at its census (time_nanos). */
			if (pi->duration_s > duration)
				duration = pi->duration_s;
			if (pi->time > time)
				time = pi->time;
			if (pi->estimated && pi->scale > scale)
				scale = pi->scale;
			period = true;
			continue;
		}
		if (r->duration_s > duration)
			duration = r->duration_s;
		if (r->have_estimates && r->sampling.scale > scale)
			scale = r->sampling.scale;
	}
	b->p.period = (int64_t)(scale + 0.5);
	b->p.duration_nanos = (int64_t)(duration * 1e9);
	b->p.time_nanos = (int64_t)(time * 1e9);
	return period;
}

/* What inuse and alloc mean here, and each period's own comment. */
static void set_comments(struct builder *b, const struct model_view *v, bool period,
			 int64_t *comments)
{
	size_t i;

	if (period) {
		comments[0] = pb_str_id(b, "rbmemtrace " RBMEMTRACE_VERSION
					   "; inuse = the heap census's live objects and bytes of each "
					   "class at the period's end, on the call paths traced objects give");
		comments[1] = pb_str_id(b, "alloc = allocated during the period (its duration), "
					   "not since the process started");
	} else {
		comments[0] = pb_str_id(b, "rbmemtrace " RBMEMTRACE_VERSION
					   "; inuse = retained + young objects (alive at the end)");
		comments[1] = pb_str_id(b, "bytes: the census's bytes per object of the class, "
					   "else 40 per object (one Ruby heap slot)");
	}
	b->p.n_comment = 2;
	for (i = 0; period && i < v->model->nprocs && b->p.n_comment < MAX_COMMENTS / 2; i++)
		period_comment(b, v->model->procs[i], comments);
	verdict_comments(b, v, comments);
	b->p.comment = comments;
}

static void set_header(struct builder *b, const struct model_view *v, ValueType *types,
		       ValueType **type_ptrs, ValueType *period_type, int64_t *comments)
{
	pb_str_id(b, ""); /* string 0 */
	set_types(b, types, type_ptrs, period_type);
	set_comments(b, v, set_times(b, v), comments);
}

int model_write_pprof(FILE *out, const struct model_view *v)
{
	Profile init = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType types[NVALUES], *type_ptrs[NVALUES], period_type;
	struct builder b = {.p = init};
	int64_t comments[MAX_COMMENTS];
	size_t i, j;

	set_header(&b, v, types, type_ptrs, &period_type, comments);
	for (i = 0; !b.oom && i < v->model->nprocs; i++) {
		const struct report *r = v->model->procs[i];
		struct profile_row *rows;
		size_t n;

		if (report_profile_rows(r, &rows, &n)) {
			b.oom = true;
			break;
		}
		for (j = 0; j < n && !b.oom; j++)
			add_sample(&b, r, &rows[j]);
		free(rows);
	}
	return pb_write_profile(&b, out);
}
