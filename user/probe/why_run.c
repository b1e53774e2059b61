// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* why_select.h: from the target to the report: proving, roots, walk, paths. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "diag.h"
#include "freeze.h"
#include "nice_guard.h"
#include "refgraph.h"
#include "report.h"
#include "retainers.h"
#include "session.h"
#include "target_mem.h"
#include "verdict_run.h"
#include "vm_roots.h"
#include "why_select.h"
#include "stack_roots.h"
#include "why_unexplained.h"

#define NOT_SELECTED ((void *) 1)

int why_parse_site(const char *arg, struct why_selection *s)
{
	const char *colon = strrchr(arg, ':');
	char *end;
	long line;

	if (!colon || colon == arg)
		return -EINVAL;
	line = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || line <= 0 || line > 1 << 30)
		return -EINVAL;
	s->site_path = strndup(arg, (size_t) (colon - arg));
	s->site_line = (int) line;
	return s->site_path ? 0 : -ENOMEM;
}

/* Frames as the call paths name them: "App::Handler#call (app.rb:23)". */
static void label_frame(void *ctx, uint64_t iseq, uint64_t pc, char *buf, size_t n)
{
	static uint64_t next_id = 1;
	const struct stack *st = symbolizer_add_site(ctx, next_id++ << 1, iseq, pc, 0);

	if (st && st->depth)
		frame_display_name(&st->frames[0], buf, n);
	else
		snprintf(buf, n, "a frame");
}

static int name_id(void *ctx, uint64_t id, char *buf, size_t n)
{
	return ruby_id_name(ctx, id, buf, n);
}

/* What the context needs once the target's layout is proved: names and hidden globals. */
static int context_init(struct why_context *c, struct ruby_target *t, char *err, size_t errlen)
{
	uint64_t object;
	int major, minor;

	if (ruby_target_global(t, "rb_cObject", &object, err, errlen) ||
	    class_namer_init(&c->namer, t->pid, &t->layout, object, err, errlen))
		return -1;
	if (ruby_symbols_init(&c->syms, t->pid, &t->img, &t->layout, err, errlen)) {
		class_namer_free(&c->namer);
		return -1;
	}
	if (refs_find_globals(t, &c->globals, err, errlen)) {
		class_namer_free(&c->namer);
		return -1;
	}
	symbolizer_init(&c->symbolizer, t->pid, &t->layout, &c->namer, name_id, &c->syms);
	refs_meta_init(&c->meta, t->pid, &t->layout);
	/* 3.4 puts an embedded RTypedData's struct over its data pointer (its pin lists...) */
	if (sscanf(t->version, "%d.%d", &major, &minor) == 2 &&
	    (major > 3 || (major == 3 && minor >= 4)))
		c->meta.tdata_embedded_at = t->layout.tdata_data;
	c->meta.shape_list = c->globals.shape_list;
	c->meta.libruby_lo = c->globals.libruby_lo;
	c->meta.libruby_hi = c->globals.libruby_hi;
	refs_namer_init(&c->names, t->pid, &t->layout, &c->meta, &c->namer, &c->syms);
	if (ruby_target_proved(t, PROOF_STACKS)) {
		c->names.frame_label = label_frame;
		c->names.frame_ctx = &c->symbolizer;
	}
	rbm_info("why: globals found by %s; shape list 0x%llx", c->globals.from,
		 (unsigned long long) c->globals.shape_list);
	return 0;
}

#define WHY_NEEDS                                                                                  \
	(PROOF_BIT(PROOF_GC) | PROOF_BIT(PROOF_HEAP) | PROOF_BIT(PROOF_CLASSES) |                  \
	 PROOF_BIT(PROOF_REFS))

int why_context_open(struct why_context *c, struct ruby_target *t, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->t = t;
	/* frames are named when the stacks group holds; without it they print as "a frame" */
	if (ruby_target_require(t, WHY_NEEDS | PROOF_BIT(PROOF_STACKS), WHY_NEEDS, false, err,
				errlen) ||
	    context_init(c, t, err, errlen))
		return -1;
	return 0;
}

void why_path_line(const struct why_path *p, char *buf, size_t n)
{
	size_t i, at = (size_t) snprintf(buf, n, "%s %s", p->root_name, p->root_class);

	for (i = 0; i < p->nedges && at < n; i++)
		at += (size_t) snprintf(buf + at, n - at, " > %s %s", p->edges[i].via,
					p->edges[i].class_name);
}

static int walk_heap(struct why_context *c, unsigned long freeze_ms, struct root_set *roots,
		     struct refgraph *g, struct why_report *out);

/* Proves what `why` needs in t, a target proved for another mode, and opens c: 0 or -1. */
static int context_for(struct why_context *c, struct ruby_target *t, char *err, size_t errlen)
{
	unsigned int todo = 0;
	int g;

	memset(c, 0, sizeof(*c));
	c->t = t;
	/* Only groups not proved yet: one proved again could fail (a stopped target) mid-trace. */
	for (g = 0; g < PROOF_GROUPS; g++)
		if (((WHY_NEEDS | PROOF_BIT(PROOF_STACKS)) & PROOF_BIT(g)) &&
		    !ruby_target_proved(t, (enum proof_group) g))
			todo |= PROOF_BIT(g);
	if (todo)
		ruby_target_prove(t, todo, false);
	for (g = 0; g < PROOF_GROUPS; g++) {
		if ((WHY_NEEDS & PROOF_BIT(g)) && !ruby_target_proved(t, (enum proof_group) g)) {
			snprintf(err, errlen, "its %s layout is not proved (%s)",
				 proof_group_name((enum proof_group) g), t->proof.groups[g].why);
			return -1;
		}
	}
	return context_init(c, t, err, errlen);
}

/* The paths of the live objects of classes, selected as `selection` says. */
static int class_paths(struct ruby_target *t, const char *selection, const char *const *classes,
		       size_t n,
		       void (*on_graph)(void *, struct why_context *, struct refgraph *,
					const struct root_set *, struct dominators *),
		       void *ctx, struct why_report *out, char *err, size_t errlen)
{
	static struct why_context c;
	size_t i;
	int ret;

	if (context_for(&c, t, err, errlen))
		return -1;
	c.selection = selection;
	c.from_suspects = true; /* names a trace or top found, not a user's --class */
	c.on_graph = on_graph;
	c.on_graph_ctx = ctx;
	for (i = 0; i < n && i < WHY_MAX_TARGETS; i++)
		c.target_names[c.ntargets++] = strdup(classes[i]);
	ret = why_run(&c, 0, out);
	if (ret)
		snprintf(err, errlen, "%s", c.err);
	else
		why_finish(out);
	why_context_close(&c);
	return ret;
}

int why_top_paths(struct ruby_target *t, const char *const *classes, size_t n,
		  struct why_report *out, char *err, size_t errlen)
{
	return class_paths(t, "class", classes, n, NULL, NULL, out, err, errlen);
}

int why_suspect_paths(struct ruby_target *t, const char *const *classes, size_t n,
		      void (*on_graph)(void *, struct why_context *, struct refgraph *,
				       const struct root_set *, struct dominators *),
		      void *ctx, struct why_report *out, char *err, size_t errlen)
{
	return class_paths(t, "suspects", classes, n, on_graph, ctx, out, err, errlen);
}

int why_walk_graph(struct ruby_target *t, struct root_set *roots, struct refgraph *g, char *err,
		   size_t errlen)
{
	static struct why_context c;
	struct why_report scratch = {0};
	struct nice_guard nice;
	int ret;

	if (context_for(&c, t, err, errlen))
		return -1;
	nice_guard_start(&nice);
	ret = walk_heap(&c, 0, roots, g, &scratch);
	nice_guard_stop(&nice);
	if (ret)
		snprintf(err, errlen, "%s", c.err);
	why_free(&scratch);
	why_context_close(&c);
	return ret;
}

/* --class: a class or module walked whose name is one asked for (it exists, none alive or not). */
static void note_class(struct why_context *c, uint64_t addr)
{
	const char *name = class_namer_name(&c->namer, addr);
	size_t i;

	for (i = 0; i < c->ntargets; i++)
		if (!strcmp(name, c->target_names[i]))
			c->target_alive[i] = true;
}

/* rg_select.pick: a class's live objects, or the traced ones. */
static int pick(void *ctx, uint64_t addr, uint64_t flags, uint64_t klass)
{
	struct why_context *c = ctx;
	uint32_t type = flags & RB_T_MASK;
	void *v;
	size_t i;

	if ((type == RB_T_CLASS || type == RB_T_MODULE) && c->selection &&
	    !strcmp(c->selection, "class"))
		note_class(c, addr);
	if (c->by_object) {
		int target = -1;

		why_traced_site(c, addr, &target, klass);
		return target;
	}
	if (!klass || type == RB_T_IMEMO || type == RB_T_ICLASS)
		return -1;
	v = u64map_get(&c->by_klass, klass);
	if (!v) {
		const char *name =
		    class_namer_name(&c->namer, class_namer_object_class(&c->namer, klass));

		v = NOT_SELECTED;
		for (i = 0; i < c->ntargets; i++)
			if (!strcmp(name, c->target_names[i]))
				v = (void *) (uintptr_t) (i + 2);
		u64map_put(&c->by_klass, klass, v);
	}
	return v == NOT_SELECTED ? -1 : (int) ((uintptr_t) v - 2);
}

static const struct why_site *site_of(void *ctx, uint64_t addr)
{
	return why_traced_site(ctx, addr, NULL, 0);
}

/*
 * The roots and the heap's reference graph, the target stopped meanwhile
 * with --freeze (freeze_ms): 0, or -1 with c->err (roots left to free).
 */
static int walk_heap(struct why_context *c, unsigned long freeze_ms, struct root_set *roots,
		     struct refgraph *g, struct why_report *out)
{
	struct ruby_target *t = c->t;
	struct rg_select sel = {pick, c};
	struct freeze fz = {0};
	int ret;

	if (freeze_ms && freeze_start(&fz, t->pid, freeze_ms, c->err, sizeof(c->err)))
		return -1;
	ret = vm_roots_collect(roots, t, &c->globals, &c->namer, &c->syms, c->err, sizeof(c->err));
	/* tests only: hold the target stopped until the watchdog or a signal ends it */
	if (freeze_ms && getenv("RBMEMTRACE_TEST_FREEZE_HOLD"))
		freeze_hold(&fz);
	/* read before the heap: a generic ivar's object is looked up there as it is met */
	if (!ret && refs_genivs_load(&c->meta, c->globals.geniv_tbl))
		rbm_info("why: the generic ivar table was not read: generic ivars not walked");
	if (!ret)
		ret = refgraph_build(g, t->pid, &t->layout, &c->meta, t->objspace, &sel, c->err,
				     sizeof(c->err));
	if (!ret)
		stack_roots_add(roots, g);
	if (freeze_ms) {
		freeze_end(&fz);
		out->walk.frozen = true;
		out->walk.paused_ms = fz.paused_ms;
		if (fz.expired)
			rbm_warn("--freeze %lu: the walk took longer; the target ran again after "
				 "%.1f ms",
				 freeze_ms, fz.paused_ms);
	}
	return ret ? -1 : 0;
}

/*
 * The tracer's memory besides the graph, at its most: the dominators' work,
 * or what is kept of them (dom_bytes) with the search's parent and queue
 * (retainers.h).
 */
static uint64_t work_bytes(const struct refgraph *g, const struct dominators *d)
{
	uint64_t later = (uint64_t) g->nnodes * 8;

	if (!d)
		return later;
	later += ((uint64_t) d->n + 1) * sizeof(*d->dom_bytes);
	return d->peak_bytes > later ? d->peak_bytes : later;
}

/*
 * The retainers of the selected objects explained, each holder with what it
 * keeps alive (the graph's dominators; without them if out of memory), and
 * what the walk took.
 */
static int explain(struct why_context *c, struct refgraph *g, struct root_set *roots,
		   struct dominators *dom_in, struct why_report *out)
{
	struct dominators dom = dom_in ? *dom_in : (struct dominators){0};
	bool have_dom = dom_in != NULL;
	struct retainers_in in = {
	    .g = g,
	    .roots = roots,
	    .namer = &c->names,
	    .dom = have_dom ? &dom : NULL,
	    .target_names = c->target_names,
	    .target_sites = c->target_sites,
	    .ntargets = c->ntargets,
	    .site_of = c->objects.len ? site_of : NULL,
	    .site_ctx = c,
	};
	int ret;

	if (have_dom) {
		rbm_info("why: dominators of %u reached objects in %.1f ms, %llu bytes at most "
			 "besides the graph's %llu",
			 dom.nreached - 1, dom.seconds * 1e3, (unsigned long long) dom.peak_bytes,
			 (unsigned long long) refgraph_bytes(g));
		/* only dom_bytes is read from here on: the rest goes before the search */
		free(dom.idom);
		free(dom.dom_objects);
		free(dom.order);
		dom.idom = dom.dom_objects = dom.order = NULL;
	} else {
		rbm_warn("why: no memory for the dominator tree: paths without what holders keep "
			 "alive");
	}
	ret = retainers_explain(&in, out, c->err, sizeof(c->err));
	out->walk.dominators_seconds = dom.seconds;
	out->walk.tracer_bytes = refgraph_bytes(g) + work_bytes(g, have_dom ? &dom : NULL);
	dominators_free(&dom);
	out->walk.objects = g->live;
	out->walk.edges = g->nedges;
	out->walk.roots = roots->n;
	out->walk.heap_seconds = g->seconds;
	out->walk.reads = g->reads;
	out->walk.gc_ran = g->gc_ran;
	why_not_walked(out, roots, &c->meta);
	if (!ret && why_unexplained_groups(c, g, roots, out))
		rbm_warn("why: no memory to group the unexplained objects");
	caps_read(c->t->pid, &out->caps);
	return ret;
}

/* One part of the graph named into out, by the path the search gave it (path may be NULL). */
static int add_part(struct why_context *c, const struct refgraph *g, const struct rg_part *rp,
		    const struct why_path *path, struct why_report *out)
{
	struct why_edge edges[WHY_MAX_EDGES + 2];
	struct why_part p = {0};
	uint64_t hdr[2] = {0, 0};
	uint64_t addr = refgraph_addr(g, rp->node, NULL);
	size_t i;

	p.class_name = addr && target_read(g->pid, addr, hdr, sizeof(hdr)) == 0
			   ? refs_class_text(&c->names, hdr[0], hdr[1])
			   : "?";
	p.table = refs_holds_text(rp->holds);
	p.reason = refs_cut_text(rp->why);
	p.read = rp->read;
	p.total = rp->total;
	if (path) {
		p.root_kind = path->root_kind;
		p.root_name = path->root_name;
		p.root_class = path->nedges ? path->root_class : p.class_name;
		for (i = 0; i < path->nedges && i < WHY_MAX_EDGES + 2; i++)
			edges[i] = path->edges[i];
		p.nedges = i;
		if (p.nedges)
			edges[p.nedges - 1].class_name = p.class_name;
		p.edges = edges;
	}
	return why_add_part(out, &p);
}

/*
 * The containers the walk read in part, each named by its path from a
 * root: the search and re-read of retainers.c, run again on them alone
 * (each its own target, "#i"), only when there are some.  0 or -1 (c->err).
 */
static int name_parts(struct why_context *c, struct refgraph *g, struct root_set *roots,
		      struct why_report *out)
{
	struct rg_selected *saved = g->sel, *sel = calloc(g->nparts + 1, sizeof(*sel));
	char **names = calloc(g->nparts + 1, sizeof(*names));
	size_t i, j, nsaved = g->nsel;
	struct why_report scratch = {0};
	struct retainers_in in = {.g = g, .roots = roots, .namer = &c->names, .sel_only = true};
	int ret = -ENOMEM;

	for (i = 0; sel && names && i < g->nparts; i++) {
		sel[i] = (struct rg_selected){.node = g->parts[i].node, .target = (uint32_t) i};
		names[i] = malloc(24);
		if (!names[i])
			break;
		snprintf(names[i], 24, "#%zu", i);
	}
	if (sel && names && i == g->nparts) {
		g->sel = sel;
		g->nsel = g->nparts;
		in.target_names = (const char *const *) names;
		in.ntargets = g->nparts;
		ret = retainers_explain(&in, &scratch, c->err, sizeof(c->err));
		g->sel = saved;
		g->nsel = nsaved;
	}
	for (i = 0; !ret && i < g->nparts; i++) {
		const struct why_path *path = NULL;

		for (j = 0; j < scratch.ntargets; j++)
			if (!strcmp(scratch.targets[j].class_name, names[i]) &&
			    scratch.targets[j].npaths)
				path = &scratch.targets[j].paths[0];
		ret = add_part(c, g, &g->parts[i], path, out);
	}
	if (ret == -ENOMEM)
		snprintf(c->err, sizeof(c->err), "naming the tables read in part: out of memory");
	why_free(&scratch);
	for (i = 0; names && i < g->nparts; i++)
		free(names[i]);
	free(names);
	free(sel);
	return ret ? -1 : 0;
}

/*
 * --class of a name no live class or module has: a typo must not read as a
 * class with nothing alive.  -1 with c->err, or 0.
 */
static int no_such_class(struct why_context *c, const struct why_report *out)
{
	size_t i, j;

	/* A trace's suspects (why_top_paths) may be imemos or classes that died: not typos. */
	if (!c->selection || strcmp(c->selection, "class") || c->from_suspects)
		return 0;
	for (i = 0; i < c->ntargets; i++) {
		bool some = false;

		for (j = 0; j < out->ntargets; j++)
			if (!strcmp(out->targets[j].class_name, c->target_names[i]))
				some = out->targets[j].count > 0;
		if (some || c->target_alive[i])
			continue;
		snprintf(c->err, sizeof(c->err),
			 "no class or module named %.200s is alive in PID %d (--class takes the "
			 "name as Ruby prints it, e.g. Foo::Bar)",
			 c->target_names[i], c->t->pid);
		return -1;
	}
	return 0;
}

int why_run(struct why_context *c, unsigned long freeze_ms, struct why_report *out)
{
	struct ruby_target *t = c->t;
	struct root_set roots = {0}; /* freed on every path, a failed freeze too */
	struct refgraph g;
	struct dominators dom;
	bool have_dom;
	double t0 = now_seconds();
	struct nice_guard nice;
	int ret;

	memset(out, 0, sizeof(*out));
	out->pid = t->pid;
	snprintf(out->ruby_version, sizeof(out->ruby_version), "%s", t->version);
	out->selection = c->selection;
	/*
	 * A running target shares the cores with the walk: at nice 19 the walk
	 * takes what the target leaves (bench/why.rb, on 2 loaded cores: the
	 * target 3.5% slower during a walk instead of 43%).  A stopped one has
	 * nothing to lose: the walk then runs as it is, to end the pause soon.
	 */
	if (!freeze_ms)
		nice_guard_start(&nice); /* given back if every core is busy (nice_guard.h) */
	if (walk_heap(c, freeze_ms, &roots, &g, out)) {
		if (!freeze_ms)
			nice_guard_stop(&nice);
		vm_roots_free(&roots);
		return -1;
	}
	rbm_info("why: %zu roots (%u modules, %u constants, %u globals, %u threads, %u frames); "
		 "heap: %llu live of %u slots, %llu references in %.1f ms (%.1f reading), %llu "
		 "reads (%llu again: what pointed to them changed meanwhile)",
		 roots.n, roots.modules, roots.constants, roots.globals, roots.threads,
		 roots.frames, (unsigned long long) g.live, g.nnodes, (unsigned long long) g.nedges,
		 g.seconds * 1e3, g.read_seconds * 1e3, (unsigned long long) g.reads,
		 (unsigned long long) c->meta.stale_reads);
	if (c->verdict && !c->verdict->out->none) {
		c->on_graph = verdict_on_graph;
		c->on_graph_ctx = c->verdict;
	}
	/* one tree for the verdict and for what each holder keeps: explain frees it */
	have_dom = dominators_of_graph(&dom, &g, &roots) == 0;
	if (c->on_graph)
		c->on_graph(c->on_graph_ctx, c, &g, &roots, have_dom ? &dom : NULL);
	ret = explain(c, &g, &roots, have_dom ? &dom : NULL, out) ?: no_such_class(c, out);
	if (!ret && g.nparts)
		ret = name_parts(c, &g, &roots, out);
	if (c->verdict) {
		if (!c->verdict->out->none)
			verdict_take_paths(c->verdict, out);
		out->verdict = c->verdict->out; /* the report's now */
		c->verdict->out = NULL;
	}
	out->walk.seconds = now_seconds() - t0;
	if (!freeze_ms)
		nice_guard_stop(&nice);
	refgraph_free(&g);
	vm_roots_free(&roots);
	return ret ? -1 : 0;
}

void why_context_close(struct why_context *c)
{
	size_t i;

	for (i = 0; i < c->ntargets; i++) {
		free((char *) c->target_names[i]);
		free((char *) c->target_sites[i].path);
	}
	u64map_free(&c->by_klass, NULL);
	u64map_free(&c->objects, why_traced_free);
	if (c->verdict) {
		verdict_free(c->verdict->out);
		free(c->verdict);
		c->verdict = NULL;
	}
	if (c->trace_session) {
		session_close(c->trace_session);
		c->trace_session = NULL;
	}
	refs_namer_free(&c->names);
	refs_meta_free(&c->meta);
	symbolizer_free(&c->symbolizer);
	class_namer_free(&c->namer);
}
