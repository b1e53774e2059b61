// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* session.h: the leak verdict's end, from what the session holds: its censuses, the start's walk. */
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "session.h"
#include "target_mem.h"
#include "tracker_judge.h"
#include "why_select.h"

/*
 * The live map's traced objects by address, from one dump: a verdict asks
 * for each new object of its points, and a lookup each was a system call
 * (850,000 new objects: 0.8 s).  An empty index on failure: no sites.
 */
static void index_traced(struct session *s)
{
	size_t n, i;

	s->snap.traced_indexed = true;
	if (tracker_live_map_entries(&s->tracker, true, &n))
		return;
	for (i = 0; i < n; i++) {
		if (u64map_put(&s->snap.traced_at, s->tracker.buf.keys[i],
			       (void *) (uintptr_t) (s->tracker.buf.values[i].stack_id + 1))) {
			u64map_free(&s->snap.traced_at, NULL);
			return;
		}
	}
}

/* verdict_end.site_of: a traced object still in the live map, its allocating frame. */
static bool traced_site(void *ctx, uint64_t addr, const char **path, int *line)
{
	struct session *s = ctx;
	const struct frame *f;
	uintptr_t id;

	if (!s->snap.traced_indexed)
		index_traced(s);
	id = (uintptr_t) u64map_get(&s->snap.traced_at, addr);
	if (!id || !(f = stack_site(symbolizer_stack(&s->names.symbolizer, id - 1))) ||
	    !frame_is_ruby(f))
		return false;
	*path = f->path;
	*line = f->line;
	return true;
}

/*
 * The end's census marked new against the start's, whose slots then go
 * (5 bytes a heap slot the end's walk need not hold beside its graph):
 * past a trace's end nothing asks the start's slots but the judging.
 */
static void let_start_slots_go(struct session *s)
{
	unsigned int old_age = s->at.heap_layout ? s->at.heap_layout->old_age : 3;

	if (s->snap.have_census_start && s->snap.have_census_end &&
	    census_mark_new(&s->snap.census_start, &s->snap.census_end, old_age) == 0)
		census_drop_slots(&s->snap.census_start);
}

struct verdict *session_verdict_open(struct session *s, struct verdict_end *e)
{
	struct verdict *v = session_verdict_open_at(
	    s, e, s->snap.verdict, s->snap.have_census_start ? &s->snap.census_start : NULL,
	    s->snap.have_census_end ? &s->snap.census_end : NULL);

	if (v && !v->none)
		let_start_slots_go(s);
	return v;
}

/* at_exit: launch mode's, which needs no start's walk (everything it made is new). */
static struct verdict *verdict_open(struct session *s, struct verdict_end *e,
				    const struct verdict_base *base, const struct census *start,
				    const struct census *end, bool at_exit)
{
	struct verdict *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	memset(e, 0, sizeof(*e));
	v->at_exit = at_exit;
	/* this verdict's sites from the live map as it is now */
	u64map_free(&s->snap.traced_at, NULL);
	s->snap.traced_indexed = false;
	if (at_exit) /* the census at the exit alone: the heap started nearly empty */
		;
	else if (!base || !base->taken)
		v->none = verdict_intern(v, base ? base->why_not : "no heap walk at the start");
	else if (!start || !end)
		v->none = verdict_intern(v, "no heap census at both ends");
	else if (s->target_exited)
		v->none = verdict_intern(v, "the target exited: no walk at the end");
	e->base = base;
	e->start = start;
	e->end = end;
	e->old_age = s->at.heap_layout ? s->at.heap_layout->old_age : 3;
	e->out = v;
	/* From the base's walk: a period's verdict is over the period, not the trace. */
	v->trace_seconds = (s->end > s->start ? s->end : now_seconds()) -
			   (base && base->taken && base->at > s->start ? base->at : s->start);
	e->site_of = traced_site;
	e->site_ctx = s;
	if (s->opt.nclasses) {
		e->wanted = session_class_filter;
		e->wanted_ctx = s;
	}
	if (s->tracker.io.compact_count_addr &&
	    target_read_u64(s->target.pid, s->tracker.io.compact_count_addr, &e->compact_count))
		e->compact_count = ~(uint64_t) 0;
	return v;
}

struct verdict *session_verdict_open_at(struct session *s, struct verdict_end *e,
					const struct verdict_base *base,
					const struct census *start, const struct census *end)
{
	return verdict_open(s, e, base, start, end, false);
}

/* The walk at the verdict's end, and the paths to its points; what failed is its none. */
static void walk_end(struct session *s, struct verdict *v, struct verdict_end *e,
		     void (*on_graph)(void *, struct why_context *, struct refgraph *,
				      const struct root_set *, struct dominators *))
{
	struct why_report why = {0};
	char err[512];

	if (why_suspect_paths(&s->target, NULL, 0, on_graph, e, &why, err, sizeof(err)))
		v->none = verdict_intern(v, err);
	else
		verdict_take_paths(e, &why);
	why_free(&why);
}

void session_verdict_at_exit(struct session *s)
{
	struct verdict_end e;

	/* a short Ruby --all caught at its start: its exit is not held up for a walk */
	if (s->opt.no_verdict || s->at.held || !s->snap.have_census_end || s->snap.exit_verdict)
		return;
	if (!(s->snap.exit_verdict = verdict_open(
		  s, &e, NULL, s->snap.have_census_start ? &s->snap.census_start : NULL,
		  &s->snap.census_end, true)))
		return;
	walk_end(s, s->snap.exit_verdict, &e, verdict_on_graph_at_exit);
}

struct verdict *session_verdict_walk(struct session *s, const struct verdict_base *base,
				     const struct census *start, const struct census *end)
{
	struct verdict_end e;
	struct verdict *v = verdict_open(s, &e, base, start, end, false);

	if (v && !v->none)
		walk_end(s, v, &e, verdict_on_graph);
	return v;
}
