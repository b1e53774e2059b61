// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A `why` report as a pprof profile, goref's convention: one sample per
 * path whose "stack" is the chain, the held objects' class innermost
 * ("ConstSession (held)"), then each reference outward ("{value}
 * ConstSession", "@sessions Hash"), the root outermost ("constant
 * App::Store::SESSIONS (Hash)"); valued inuse_objects and inuse_space, so
 * that pprof -top lists what is held and -traces each chain, and profiles
 * of many processes merge as pprof merges heap profiles.  Labels: class,
 * root (its kind), pid, host, process, ruby_version.  Objects no root
 * reaches are one sample under "(unexplained)".
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pprof_build.h"
#include "why_out.h"

static void label_sample(struct builder *b, struct sample_entry *e, const struct why_report *r,
			 const char *class_name, const char *root_kind)
{
	pb_add_label(e, b, "class", class_name, 0);
	pb_add_label(e, b, "root", root_kind, 0);
	pb_add_label(e, b, "pid", NULL, r->pid);
	if (r->host[0])
		pb_add_label(e, b, "host", r->host, 0);
	if (r->command[0])
		pb_add_label(e, b, "process", r->command, 0);
	pb_add_label(e, b, "ruby_version", r->ruby_version, 0);
}

static struct sample_entry *new_sample(struct builder *b, size_t nlocs)
{
	Sample init = PERFTOOLS__PROFILES__SAMPLE__INIT;
	struct sample_entry *e =
	    pb_grow(b->samples, &b->samples_cap, b->nsamples, sizeof(*e), &b->oom);

	if (!e)
		return NULL;
	b->samples = e;
	e = &b->samples[b->nsamples];
	memset(e, 0, sizeof(*e));
	e->s = init;
	e->locs = calloc(nlocs, sizeof(*e->locs));
	if (!e->locs) {
		b->oom = true;
		return NULL;
	}
	b->nsamples++;
	return e;
}

/* A frame of the chain, a location of its own ("file" and line stay empty). */
static uint64_t frame(struct builder *b, const char *fmt, const char *x, const char *y)
{
	char *name = NULL;
	uint64_t id;

	if (asprintf(&name, fmt, x ? x : "", y ? y : "") < 0) {
		b->oom = true;
		return 0;
	}
	id = pb_location_id(b, name, "", 0);
	free(name);
	return id;
}

static void add_path(struct builder *b, const struct why_report *r, const struct why_target *t,
		     const struct why_path *p)
{
	struct sample_entry *e = new_sample(b, p->nedges + 2);
	char *root = NULL;
	size_t i, n = 0;

	if (!e)
		return;
	e->locs[n++] = frame(b, "%s (held)%s", t->class_name, NULL);
	for (i = p->nedges; i-- > 0;)
		e->locs[n++] = frame(b, "%s %s", p->edges[i].via, p->edges[i].class_name);
	/* the root's kind first: "constant App::Store::CACHE (Hash)" */
	if (asprintf(&root, "%s %s (%s)", p->root_kind, p->root_name, p->root_class) < 0) {
		b->oom = true;
		return;
	}
	e->locs[n++] = pb_location_id(b, root, "", 0);
	free(root);
	e->s.n_location_id = n;
	e->values[0] = (int64_t) p->count;
	e->values[1] = (int64_t) p->bytes;
	label_sample(b, e, r, t->class_name, p->root_kind);
}

static void add_unexplained(struct builder *b, const struct why_report *r,
			    const struct why_target *t)
{
	struct sample_entry *e = new_sample(b, 2);

	if (!e)
		return;
	e->locs[0] = frame(b, "%s (held)%s", t->class_name, NULL);
	e->locs[1] = pb_location_id(b, "(unexplained)", "", 0);
	e->s.n_location_id = 2;
	e->values[0] = (int64_t) t->unexplained;
	e->values[1] = (int64_t) t->unexplained_bytes;
	label_sample(b, e, r, t->class_name, "unexplained");
}

int why_write_pprof(FILE *out, const struct why_report *r)
{
	static const char *const types[2][2] = {{"inuse_objects", "count"},
						{"inuse_space", "bytes"}};
	Profile init = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType vt[2], *vt_ptrs[2], period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	struct builder b = {.p = init, .nvalues = 2};
	int64_t comment;
	size_t i, j;

	pb_str_id(&b, ""); /* string 0 */
	for (i = 0; i < 2; i++) {
		ValueType v = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;

		vt[i] = v;
		vt[i].type = pb_str_id(&b, types[i][0]);
		vt[i].unit = pb_str_id(&b, types[i][1]);
		vt_ptrs[i] = &vt[i];
	}
	b.p.sample_type = vt_ptrs;
	b.p.n_sample_type = 2;
	b.p.default_sample_type = vt[0].type;
	period_type.type = pb_str_id(&b, "space");
	period_type.unit = pb_str_id(&b, "bytes");
	b.p.period_type = &period_type;
	b.p.period = 1;
	b.p.duration_nanos = (int64_t) (r->walk.seconds * 1e9);
	comment = pb_str_id(&b, "rbmemtrace " RBMEMTRACE_VERSION
				" why: each sample a retainer path, the held class innermost, "
				"the root outermost");
	b.p.comment = &comment;
	b.p.n_comment = 1;
	for (i = 0; !b.oom && i < r->ntargets; i++) {
		const struct why_target *t = &r->targets[i];

		for (j = 0; !b.oom && j < t->npaths; j++)
			add_path(&b, r, t, &t->paths[j]);
		if (t->unexplained)
			add_unexplained(&b, r, t);
	}
	return pb_write_profile(&b, out);
}
