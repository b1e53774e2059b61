// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* why_select.h: from the target to the report: proving, roots, walk, paths. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "clock.h"
#include "diag.h"
#include "freeze.h"
#include "refgraph.h"
#include "report.h"
#include "retainers.h"
#include "vm_roots.h"
#include "why_select.h"

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

int why_top_paths(struct ruby_target *t, const char *const *classes, size_t n,
		  struct why_report *out, char *err, size_t errlen)
{
	static struct why_context c;
	size_t i;
	int g, ret;

	memset(&c, 0, sizeof(c));
	c.t = t;
	/* every group again: the prover's results are of one run (a trace proved its own) */
	ruby_target_prove(t, WHY_NEEDS | PROOF_BIT(PROOF_STACKS), false);
	for (g = 0; g < PROOF_GROUPS; g++) {
		if ((WHY_NEEDS & PROOF_BIT(g)) && !ruby_target_proved(t, (enum proof_group) g)) {
			snprintf(err, errlen, "its %s layout is not proved (%s)",
				 proof_group_name((enum proof_group) g), t->proof.groups[g].why);
			return -1;
		}
	}
	if (context_init(&c, t, err, errlen))
		return -1;
	c.selection = "class";
	c.from_suspects = true;
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

/* "1204 T_DATA objects marked by C code: time 1100, foo 100 and 2 more types" */
static void opaque_types(const struct refs_meta *m, char *buf, size_t n)
{
	const struct data_type_info *top[3] = {NULL, NULL, NULL};
	size_t i, k, at;
	int j;

	u64map_for_each(&m->data_types, i)
	{
		const struct data_type_info *ti = m->data_types.values[i];

		for (k = 0; k < 3 && ti->objects; k++) {
			if (!top[k] || ti->objects > top[k]->objects) {
				for (j = 2; j > (int) k; j--)
					top[j] = top[j - 1];
				top[k] = ti;
				break;
			}
		}
	}
	at = (size_t) snprintf(buf, n, "%llu T_DATA objects marked by C code (",
			       (unsigned long long) m->gaps.n[GAP_OPAQUE_DATA]);
	for (k = 0; k < 3 && top[k] && at < n; k++)
		at += (size_t) snprintf(buf + at, n - at, "%s%s %llu", k ? ", " : "", top[k]->name,
					(unsigned long long) top[k]->objects);
	if (at < n)
		snprintf(buf + at, n - at, "%s)", m->opaque_types > 3 ? ", ..." : "");
}

/* What no walk reads, in words, for the objects no path explains. */
static void not_walked(struct why_report *r, const struct root_set *roots,
		       const struct refs_meta *m)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "the native machine stacks and registers of %u thread%s",
		 roots->threads, roots->threads == 1 ? "" : "s");
	r->unexplained.not_walked[r->unexplained.nnot_walked++] = why_intern(r, buf);
	if (m->gaps.n[GAP_OPAQUE_DATA]) {
		opaque_types(m, buf, sizeof(buf));
		r->unexplained.not_walked[r->unexplained.nnot_walked++] = why_intern(r, buf);
	}
	r->unexplained.not_walked[r->unexplained.nnot_walked++] =
	    why_intern(r, "fibers other than each thread's current one");
	r->unexplained.not_walked[r->unexplained.nnot_walked++] =
	    why_intern(r, "generic ivars of objects that are not T_OBJECT");
	r->unexplained.opaque_data = m->gaps.n[GAP_OPAQUE_DATA];
	r->unexplained.unread = m->gaps.n[GAP_UNREAD];
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
	if (!ret)
		ret = refgraph_build(g, t->pid, &t->layout, &c->meta, t->objspace, &sel, c->err,
				     sizeof(c->err));
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

/* The retainers of the selected objects explained, and what the walk took. */
static int explain(struct why_context *c, struct refgraph *g, struct root_set *roots,
		   struct why_report *out)
{
	struct retainers_in in = {
	    .g = g,
	    .roots = roots,
	    .namer = &c->names,
	    .target_names = c->target_names,
	    .target_sites = c->target_sites,
	    .ntargets = c->ntargets,
	    .site_of = c->objects.len ? site_of : NULL,
	    .site_ctx = c,
	};
	int ret = retainers_explain(&in, out, c->err, sizeof(c->err));

	out->walk.objects = g->live;
	out->walk.edges = g->nedges;
	out->walk.roots = roots->n;
	out->walk.heap_seconds = g->seconds;
	out->walk.tracer_bytes = refgraph_bytes(g) + (uint64_t) g->nnodes * 8;
	out->walk.reads = g->reads;
	out->walk.gc_ran = g->gc_ran;
	not_walked(out, roots, &c->meta);
	caps_read(c->t->pid, &out->caps);
	return ret;
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
	double t0 = now_seconds();
	int ret, old_nice = 0;

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
	if (!freeze_ms) {
		old_nice = getpriority(PRIO_PROCESS, 0);
		setpriority(PRIO_PROCESS, 0, 19);
	}
	if (walk_heap(c, freeze_ms, &roots, &g, out)) {
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
	ret = explain(c, &g, &roots, out) ?: no_such_class(c, out);
	out->walk.seconds = now_seconds() - t0;
	if (!freeze_ms)
		setpriority(PRIO_PROCESS, 0, old_nice); /* as root; others stay nice */
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
	refs_namer_free(&c->names);
	refs_meta_free(&c->meta);
	symbolizer_free(&c->symbolizer);
	class_namer_free(&c->namer);
}
