// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What `why` explains when no class is named: the leak suspects of a short
 * sampled trace of the target (model/suspects.c ranks them), or the objects
 * the trace saw allocated at --site FILE:LINE; or the suspects of a report
 * written before (--from).  The trace's live-object map also gives every
 * traced object that is still alive its allocation site, which paths show
 * next to what they hold.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "classnames.h"
#include "diag.h"
#include "json_read.h"
#include "session.h"
#include "verdict_run.h"
#include "why_select.h"

struct traced {
	struct why_site site;
	uint32_t target;
	uint64_t klass;
};

static volatile sig_atomic_t no_stop;

/* "app.rb" names "/srv/app.rb" and "lib/app.rb" as well as itself. */
static bool same_file(const char *path, const char *want)
{
	size_t n = strlen(path), w = strlen(want);

	return !strcmp(path, want) ||
	       (n > w && path[n - w - 1] == '/' && !strcmp(path + n - w, want));
}

/* A name over CLASS_NAME_MAX bytes is asked for as the namer gives it: cut, with its hash. */
static int target_of(struct why_context *c, const char *name, const struct why_site *site)
{
	char *fit = class_name_fit(name);
	size_t i;

	if (!fit)
		return -1;
	for (i = 0; i < c->ntargets; i++)
		if (!strcmp(c->target_names[i], fit)) {
			free(fit);
			return (int) i;
		}
	if (c->ntargets == WHY_MAX_TARGETS) {
		free(fit);
		return -1;
	}
	c->target_names[c->ntargets] = fit;
	if (site && site->path)
		c->target_sites[c->ntargets] = (struct why_site){strdup(site->path), site->line};
	return (int) c->ntargets++;
}

/* Every traced object still in the live map: its site, and the target it counts for. */
static void keep_traced(struct why_context *c, struct session *s, const struct why_selection *sel)
{
	uint64_t key, next, *prev = NULL;
	struct live_object obj;
	size_t kept = 0;

	while (bpf_map_get_next_key(s->tracker.io.live_fd, prev, &next) == 0) {
		const struct frame *f;
		struct traced *t;
		const char *name;
		int target = -1;
		size_t i;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(s->tracker.io.live_fd, &key, &obj))
			continue;
		f = stack_site(symbolizer_stack(&s->names.symbolizer, obj.stack_id));
		name = class_namer_key_name(&s->names.namer,
					    class_namer_object_class(&s->names.namer, obj.klass),
					    obj.kind);
		if (sel->site_path) {
			if (!f || f->line != sel->site_line || !same_file(f->path, sel->site_path))
				continue;
			target = target_of(c, name, NULL);
		} else {
			for (i = 0; i < c->ntargets && target < 0; i++)
				if (!strcmp(c->target_names[i], name))
					target = (int) i;
		}
		t = calloc(1, sizeof(*t));
		if (!t)
			break;
		t->target = target < 0 ? UINT32_MAX : (uint32_t) target;
		t->klass = obj.klass;
		if (f)
			t->site = (struct why_site){strdup(f->path), f->line};
		if (u64map_put(&c->objects, key, t)) {
			free((char *) t->site.path);
			free(t);
			break;
		}
		kept++;
	}
	rbm_info("why: %zu traced objects still tracked%s", kept,
		 sel->site_path ? " (those of --site selected)" : "");
}

static int no_targets(struct why_context *c, const struct why_selection *sel,
		      volatile sig_atomic_t *stop)
{
	const char *early = stop && *stop ? " (stopped early by a signal: no report)" : "";

	if (sel->site_path)
		snprintf(c->err, sizeof(c->err),
			 "the trace saw no object allocated at %s:%d still alive%s", sel->site_path,
			 sel->site_line, early);
	else
		snprintf(c->err, sizeof(c->err), "the trace found no leak suspect%s", early);
	return -1;
}

/*
 * The suspects' trace walked the heap at its start: kept open, its
 * censuses and traced objects give the walk of `why` the leak verdict.
 */
static bool keep_for_verdict(struct why_context *c, struct session *s)
{
	struct verdict_end *e = calloc(1, sizeof(*e));
	struct verdict *v = e ? session_verdict_open(s, e) : NULL;

	if (!v) {
		free(e);
		return false;
	}
	c->verdict = e;
	c->trace_session = s;
	return true;
}

static int trace(struct why_context *c, const struct why_selection *sel, double duration,
		 volatile sig_atomic_t *stop)
{
	struct trace_options opt = {.pid = c->t->pid,
				    .duration = duration,
				    .max_objects = 1 << 18,
				    .depth = MAX_STACK_DEPTH,
				    .max_stacks = 65536,
				    .no_verdict = sel->site_path != NULL};
	static struct session s;
	struct report r = {0};
	size_t i;

	fprintf(stderr, "rbmemtrace: why: tracing PID %d for %.1f s (sampled) to find %s\n",
		c->t->pid, duration, sel->site_path ? "what --site allocates" : "leak suspects");
	if (session_open(&s, &opt, c->err, sizeof(c->err)))
		return -1;
	if (session_start(&s, c->err, sizeof(c->err)) || session_run(&s, stop ? stop : &no_stop)) {
		if (s.failed)
			snprintf(c->err, sizeof(c->err), "%s", s.error);
		session_close(&s);
		return -1;
	}
	session_finish(&s);
	if (session_report(&s, &r)) {
		snprintf(c->err, sizeof(c->err), "out of memory building the trace's report");
		report_free(&r);
		session_close(&s);
		return -1;
	}
	if (!sel->site_path) {
		for (i = 0; i < r.nsuspects; i++) {
			const struct suspect *sp = &r.suspects[i];
			struct why_site site = {NULL, 0};

			if (sp->site)
				site = (struct why_site){sp->site->path, sp->site->line};
			target_of(c, sp->class_name, &site);
		}
	}
	keep_traced(c, &s, sel);
	report_free(&r);
	/* No suspect: the verdict may still have an answer, and the walk is for it. */
	if (!sel->site_path && keep_for_verdict(c, &s))
		return c->ntargets || !c->verdict->out->none ? 0 : no_targets(c, sel, stop);
	session_close(&s);
	return c->ntargets ? 0 : no_targets(c, sel, stop);
}

/* --from: the suspects of a report (the first process's, if it holds several). */
static int from_report(struct why_context *c, const char *path)
{
	struct model m = {0};
	size_t i;

	if (json_read_file(path, &m, NULL, c->err, sizeof(c->err)))
		return -1;
	if (!m.nprocs) {
		snprintf(c->err, sizeof(c->err), "%s holds no report", path);
		model_free(&m);
		return -1;
	}
	report_finish(m.procs[0]);
	for (i = 0; i < m.procs[0]->nsuspects; i++) {
		const struct suspect *sp = &m.procs[0]->suspects[i];
		struct why_site site = {NULL, 0};

		if (sp->site)
			site = (struct why_site){sp->site->path, sp->site->line};
		target_of(c, sp->class_name, &site);
	}
	model_free(&m);
	if (!c->ntargets) {
		snprintf(c->err, sizeof(c->err), "%s names no leak suspect", path);
		return -1;
	}
	return 0;
}

int why_select(struct why_context *c, const struct why_selection *s, double duration,
	       volatile sig_atomic_t *stop)
{
	int i;

	if (s->nclasses) {
		c->selection = "class";
		for (i = 0; i < s->nclasses; i++)
			target_of(c, s->classes[i], NULL);
		return 0;
	}
	if (s->from) {
		c->selection = "report";
		return from_report(c, s->from);
	}
	c->selection = s->site_path ? "site" : "suspects";
	c->by_object = s->site_path != NULL;
	return trace(c, s, duration, stop);
}

void why_traced_free(void *p)
{
	struct traced *t = p;

	free((char *) t->site.path);
	free(t);
}

const struct why_site *why_traced_site(const struct why_context *c, uint64_t addr, int *target,
				       uint64_t klass)
{
	const struct traced *t = u64map_get(&c->objects, addr);

	/* a traced object's slot taken since by another class's object is not it */
	if (!t || (klass && t->klass && t->klass != klass))
		return NULL;
	if (target)
		*target = t->target == UINT32_MAX ? -1 : (int) t->target;
	return &t->site;
}
