// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* verdict_run.h: the two walks of the leak verdict, and its points ranked. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "accumulation.h"
#include "clock.h"
#include "diag.h"
#include "target_mem.h"
#include "verdict_classes.h"
#include "verdict_run.h"

/* Whether the start's walk reached a live object at addr (one its census saw). */
static bool reached_at_start(const struct verdict_base *b, uint64_t addr,
			     const struct rg_page **hint)
{
	return node_figures_seen(&b->fig, refgraph_node_at(&b->g, addr, hint));
}

/* One live node at addr: old, new (counted if --class wants it), or left out. */
static void judge_one(struct why_context *c, struct verdict_end *e, uint64_t addr,
		      struct census_hint *hint, const struct rg_page **base_hint, uint8_t *newness)
{
	uint32_t class_hash;
	/* at a launched command's exit: no start, everything the census saw is new */
	enum census_newness n = census_slot_new_at(e->start ? e->start : e->end, e->end, addr,
						   e->old_age, &class_hash, hint);

	if (!e->start && n == CENSUS_OLD)
		n = CENSUS_NEW;
	/*
	 * The census's rule calls a new old object in a slot an old one of
	 * its class held at the start the same object, once old_age GCs ran;
	 * the start's walk tells: garbage then (unmarked until the next GC)
	 * was reached by no root.
	 */
	if (n == CENSUS_OLD && e->base && !reached_at_start(e->base, addr, base_hint))
		n = CENSUS_NEW;
	if (n == CENSUS_OLD)
		*newness = ACCUM_OLD;
	else if (n == CENSUS_NEW && verdict_class_wanted(c, e, class_hash))
		*newness = ACCUM_NEW; /* one --class leaves out passes through, uncounted */
	/* not live at the end's census: allocated since, passed through, not counted */
}

/*
 * Each live node of the end's graph: new since the start, old, or not
 * judged.  Page by page, in address order: each page is looked up once in
 * the censuses and the start's graph.
 */
static int judge_newness(struct why_context *c, struct verdict_end *e, const struct refgraph *g,
			 uint8_t *newness)
{
	struct census_hint hint = {0};
	const struct rg_page *base_hint = NULL;
	uint32_t v, pi, j;

	memset(newness, ACCUM_SKIP, g->nnodes);
	for (pi = 0; pi < g->npages; pi++) {
		const struct rg_page *p = &g->pages[pi];

		for (j = 0; j < p->nslots; j++) {
			uint64_t addr = p->start + (uint64_t) j * p->slot_size;

			v = p->first + j;
			if (v < g->nnodes && (g->state[v] & RG_LIVE))
				judge_one(c, e, addr, &hint, &base_hint, &newness[v]);
		}
	}
	return 0;
}

/* A candidate point: what it kept alive at the start, by its address there. */
struct ranked {
	struct accum_point *p;
	int64_t grew_objects, grew_bytes;
	int64_t size_before, size_after;
};

static bool at_start(const struct verdict_base *b, uint64_t addr, struct node_kept *was)
{
	return node_figures_get(&b->fig, &b->g, refgraph_node(&b->g, addr), was);
}

static int by_growth(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->grew_bytes != y->grew_bytes)
		return x->grew_bytes < y->grew_bytes ? 1 : -1;
	if (x->grew_objects != y->grew_objects)
		return x->grew_objects < y->grew_objects ? 1 : -1;
	return x->p->node < y->p->node ? -1 : x->p->node > y->p->node;
}

/*
 * A Hash or an Array that holds no more entries than at the start (but one,
 * and half a percent): an LRU at its cap holds only new objects, and a walk
 * of a running target reads a churning table at one moment of the walk, so
 * what it kept then is no measure.  Its entries say it does not grow.
 */
static bool steady_collection(struct verdict_end *e, uint32_t hash, const struct ranked *r)
{
	const struct census_class *cc = verdict_census_class(e, hash);
	uint32_t type = cc ? RBM_KIND_TYPE(cc->kind) : 0;

	/* one entry more: an LRU read between its insert and its evict; and a half percent */
	return (type == RB_T_HASH || type == RB_T_ARRAY) && r->size_before >= 0 &&
	       r->size_after >= 0 && r->size_after <= r->size_before + 1 + r->size_before / 200;
}

/* The points that keep more alive than at the start, most bytes first: *n of them. */
static struct ranked *rank_points(struct verdict_end *e, const struct refgraph *g,
				  const struct dominators *d, struct accum_point *pts, size_t npts,
				  size_t *n)
{
	struct ranked *r = calloc(npts + 1, sizeof(*r));
	size_t i, k = 0;

	if (!r)
		return NULL;
	for (i = 0; i < npts; i++) {
		uint32_t v = pts[i].node;
		struct node_kept was;

		if (!at_start(e->base, refgraph_addr(g, v, NULL), &was))
			continue; /* old, yet not reached at the start: nothing to compare with */
		r[k] = (struct ranked){
		    .p = &pts[i],
		    .grew_objects = (int64_t) d->dom_objects[v] - (int64_t) was.objects,
		    .grew_bytes = (int64_t) d->dom_bytes[v] - (int64_t) was.bytes,
		    .size_before = was.size,
		    .size_after = g->size ? (int64_t) g->size[v] : -1,
		};
		if (r[k].grew_objects <= 0 || r[k].grew_bytes < 0 ||
		    steady_collection(e, verdict_node_class(e, v), &r[k]))
			continue;
		k++;
	}
	qsort(r, k, sizeof(*r), by_growth);
	for (i = 0; i < k; i++)
		if (r[i].grew_objects < VERDICT_NOISE_MIN || r[i].grew_objects * 1000 < r[0].grew_objects)
			break;
	e->out->small_points = k - i;
	*n = i;
	return r;
}

/* The point's figures into the model, and its node selected for its path. */
static int fill_point(struct verdict_end *e, struct why_context *c, struct refgraph *g,
		      const struct dominators *d, const struct ranked *r, size_t rank)
{
	struct verdict_point *vp = &e->out->points[rank];
	uint32_t hash = verdict_node_class(e, r->p->node);
	const struct census_class *cc = verdict_census_class(e, hash);
	struct rg_selected *sel;
	char name[32];
	size_t i;

	vp->container_class = verdict_intern(e->out, verdict_class_name(c, e, hash));
	vp->addr = refgraph_addr(g, r->p->node, &vp->slot_size);
	vp->type = cc ? RBM_KIND_TYPE(cc->kind) : 0;
	vp->grew_objects = r->grew_objects;
	vp->grew_bytes = r->grew_bytes;
	vp->size_before = r->size_before;
	vp->size_after = r->size_after;
	vp->new_objects = r->p->new_objects;
	vp->new_bytes = r->p->new_bytes;
	vp->dominated_bytes = d->dom_bytes[r->p->node];
	vp->dominated_objects = d->dom_objects[r->p->node];
	for (i = 0; i < r->p->nclasses && i < VERDICT_MAX_CLASSES; i++) {
		vp->by_class[i].class_name =
		    verdict_intern(e->out, verdict_class_name(c, e, r->p->classes[i].class_hash));
		vp->by_class[i].objects = r->p->classes[i].objects;
		vp->by_class[i].bytes = r->p->classes[i].bytes;
	}
	vp->nby_class = i;
	if (c->ntargets >= WHY_MAX_TARGETS)
		return 0;
	if (g->nsel == g->cap_sel) {
		size_t cap = g->cap_sel ? 2 * g->cap_sel : 16;

		sel = realloc(g->sel, cap * sizeof(*sel));
		if (!sel)
			return -ENOMEM;
		g->sel = sel;
		g->cap_sel = cap;
	}
	snprintf(name, sizeof(name), "\x01verdict %zu", rank);
	c->target_names[c->ntargets] = strdup(name);
	if (!c->target_names[c->ntargets])
		return -ENOMEM;
	g->sel[g->nsel++] = (struct rg_selected){
	    .node = r->p->node, .target = (uint32_t) c->ntargets, .bytes = g->bytes ? g->bytes[r->p->node] : 0};
	c->ntargets++;
	return 0;
}

/* A site of traced objects, before its class is named. */
struct site_tally {
	uint32_t class_hash;
	const char *path;
	int line;
	uint64_t traced;
};

static void tally_site(struct site_tally *all, size_t *n, size_t cap, uint32_t class_hash,
		       const char *path, int line)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (all[i].line == line && all[i].class_hash == class_hash &&
		    (all[i].path == path || !strcmp(all[i].path, path)))
			break;
	if (i == *n) {
		if (*n == cap)
			return;
		all[(*n)++] = (struct site_tally){class_hash, path, line, 0};
	}
	all[i].traced++;
}

/*
 * The sites of the traced objects among a point's new ones, most first: a
 * sampled trace saw a few of them allocated; each site says how many.
 * Page by page: each slot's address without a search.
 */
static void point_sites(struct verdict_end *e, struct why_context *c, const struct refgraph *g,
			const uint32_t *point, const uint8_t *newness, uint32_t node,
			struct verdict_point *vp)
{
	struct site_tally all[64];
	size_t n = 0, i, k;
	uint32_t pi, j;

	for (pi = 0; pi < g->npages && e->site_of; pi++) {
		const struct rg_page *p = &g->pages[pi];

		for (j = 0; j < p->nslots; j++) {
			uint32_t v = p->first + j;
			const char *path;
			int line;

			if (v < g->nnodes && point[v] == node && newness[v] == ACCUM_NEW &&
			    e->site_of(e->site_ctx, p->start + (uint64_t) j * p->slot_size, &path,
				       &line))
				tally_site(all, &n, sizeof(all) / sizeof(all[0]),
					   verdict_node_class(e, v), path, line);
		}
	}
	for (k = 0; k < VERDICT_MAX_SITES && n; k++) {
		size_t best = 0;

		for (i = 1; i < n; i++)
			if (all[i].traced > all[best].traced)
				best = i;
		vp->sites[vp->nsites++] = (struct verdict_site){
		    verdict_intern(e->out, verdict_class_name(c, e, all[best].class_hash)),
		    verdict_intern(e->out, all[best].path), all[best].line, all[best].traced};
		all[best] = all[--n];
	}
}

/* The new objects the end's walk reached, and those no old node holds on its own. */
static void count_new(struct verdict_end *e, const struct dominators *dom, const uint8_t *newness,
		      const uint32_t *point)
{
	uint32_t i;

	for (i = 0; i < dom->nreached; i++) {
		uint32_t v = dom->order[i];

		if (v < dom->n && newness[v] == ACCUM_NEW) {
			e->out->new_objects++;
			e->out->unattributed += point[v] == RG_NONE;
		}
	}
}

/*
 * The first n of ranked, copied into chosen, become the verdict's points:
 * what each gathered by class, its figures, its node selected for its path,
 * its sites.  0 or -ENOMEM.
 */
static int fill_points(struct verdict_end *e, struct why_context *c, struct refgraph *g,
		       const struct dominators *dom, struct ranked *ranked, size_t n,
		       struct accum_point *chosen, const uint32_t *point, const uint8_t *newness)
{
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		chosen[i] = *ranked[i].p;
		ranked[i].p = &chosen[i];
	}
	e->out->n = n;
	err = accum_classes(dom, point, newness, g->bytes, verdict_node_class, e, chosen, n);
	for (i = 0; i < n && !err; i++) {
		err = fill_point(e, c, g, dom, &ranked[i], i);
		point_sites(e, c, g, point, newness, ranked[i].p->node, &e->out->points[i]);
	}
	return err;
}

/*
 * The end's memory at its most: the graph, and either the tree being
 * computed (its peak) or the tree and the arrays above (6 bytes a node).
 */
static uint64_t end_bytes(const struct refgraph *g, const struct dominators *dom)
{
	uint64_t n1 = (uint64_t) g->nnodes + 1, tree, points;

	if (!dom)
		return refgraph_bytes(g) + n1 * 6;
	tree = n1 * (sizeof(*dom->idom) + sizeof(*dom->dom_bytes) + sizeof(*dom->dom_objects)) +
	       (uint64_t) dom->nreached * sizeof(*dom->order);
	points = tree + n1 * 6;
	return refgraph_bytes(g) + (dom->peak_bytes > points ? dom->peak_bytes : points);
}

/* Over ~60 lines: the verdict's steps in order, each a call, its buffers freed on every path. */
void verdict_on_graph(void *ctx, struct why_context *c, struct refgraph *g,
		      const struct root_set *roots, struct dominators *dom)
{
	struct verdict_end *e = ctx;
	uint8_t *newness = malloc((size_t) g->nnodes + 1), *counted = malloc((size_t) g->nnodes + 1);
	uint32_t *point = malloc(((size_t) g->nnodes + 1) * sizeof(*point));
	struct accum_point *pts = NULL, chosen[VERDICT_MAX] = {0};
	struct ranked *ranked = NULL;
	size_t npts = 0, nranked = 0, i;
	double t0 = now_seconds();
	int err = -ENOMEM;

	e->g = g;
	if (!newness || !counted || !point)
		goto out;
	(void) roots;
	if (!dom)
		goto out;
	judge_newness(c, e, g, newness);
	for (i = 0; i < g->nnodes; i++)
		counted[i] = newness[i] != ACCUM_SKIP;
	accum_weigh(dom, counted, g->bytes);
	free(counted);
	counted = NULL;
	if ((err = accum_assign(dom, newness, point)) ||
	    (err = accum_sum(dom, point, newness, g->bytes, &pts, &npts)))
		goto out;
	count_new(e, dom, newness, point);
	err = -ENOMEM;
	if (!(ranked = rank_points(e, g, dom, pts, npts, &nranked)))
		goto out;
	e->first_target = (int) c->ntargets;
	if (e->next_base && verdict_base_from(e->next_base, g, dom, e->compact_count)) {
		verdict_base_free(e->next_base);
		snprintf(e->next_base->why_not, sizeof(e->next_base->why_not),
			 "the last period's walk could not be kept: out of memory");
	}
	err = fill_points(e, c, g, dom, ranked, nranked < VERDICT_MAX ? nranked : VERDICT_MAX,
			  chosen, point, newness);
out:
	if (err) {
		e->out->n = 0;
		e->out->none = verdict_intern(e->out, "the end's walk could not be judged: out of memory");
	}
	e->out->compacted = e->compact_count != e->base->compact_count;
	e->out->seconds =
	    e->base->seconds + (now_seconds() - t0) + g->seconds + (dom ? dom->seconds : 0);
	e->out->tracer_bytes = e->base->bytes + end_bytes(g, dom);
	rbm_info("verdict: %zu of %zu points grew; %llu new objects, %llu held by no old node; "
		 "dominators and points in %.0f ms",
		 e->out->n, nranked, (unsigned long long) e->out->new_objects,
		 (unsigned long long) e->out->unattributed, (now_seconds() - t0) * 1e3);
	verdict_class_maps_free(e);
	accum_free(pts, npts);
	for (i = 0; i < VERDICT_MAX; i++)
		free(chosen[i].classes);
	free(ranked);
	free(newness);
	free(counted);
	free(point);
}

/* The point's path, from its why target; false if the walk found none. */
static bool take_path(struct verdict *v, struct verdict_point *vp, const struct why_report *why,
		      const char *name)
{
	size_t i, j;

	for (i = 0; i < why->ntargets; i++) {
		const struct why_target *t = &why->targets[i];
		const struct why_path *p;

		if (strcmp(t->class_name, name) || !t->npaths)
			continue;
		p = &t->paths[0];
		vp->root_kind = verdict_intern(v, p->root_kind);
		vp->root_name = verdict_intern(v, p->root_name);
		/* the last class is the target's name: the container's is known */
		for (j = 0; j < p->nedges && j < VERDICT_MAX_EDGES; j++) {
			vp->edges[j].via = verdict_intern(v, p->edges[j].via);
			vp->edges[j].class_name = j + 1 == p->nedges
						      ? vp->container_class
						      : verdict_intern(v, p->edges[j].class_name);
		}
		vp->nedges = j;
		vp->edges_cut = p->nedges > VERDICT_MAX_EDGES;
		return true;
	}
	return false;
}

void verdict_take_paths(struct verdict_end *e, struct why_report *why)
{
	struct verdict *v = e->out;
	size_t k, kept = 0;
	char name[32];

	for (k = 0; k < v->n; k++) {
		struct verdict_point *vp = &v->points[k];

		snprintf(name, sizeof(name), "\x01verdict %zu", k);
		take_path(v, vp, why, name);
		if (vp->root_kind && !strcmp(vp->root_kind, "vm") &&
		    (v->at_exit || vp->grew_objects < VERDICT_VM_LIST_MIN)) {
			v->vm_lists_grew += (uint64_t) vp->grew_objects;
			continue;
		}
		if (kept != k)
			v->points[kept] = *vp;
		kept++;
	}
	v->n = kept;
	/* the points' own targets are not the report's */
	for (k = why->ntargets; k-- > 0;)
		if (why->targets[k].class_name[0] == '\x01')
			why_drop_target(why, k);
}

/*
 * A class, module, iclass or imemo, or a Binding (TOPLEVEL_BINDING holds
 * the main script's locals): what holds code, constants and frames, not
 * the program's data.
 */
static bool classy(struct why_context *c, struct verdict_end *e, uint32_t hash)
{
	const struct census_class *cc = verdict_census_class(e, hash);
	uint32_t type = cc ? RBM_KIND_TYPE(cc->kind) : 0;

	return type == RB_T_CLASS || type == RB_T_MODULE || type == RB_T_ICLASS ||
	       type == RB_T_IMEMO ||
	       (type == RB_T_DATA && !strcmp(verdict_class_name(c, e, hash), "Binding"));
}

/*
 * At the exit: the holders are the first objects of data below the roots
 * and the classes (a constant's Hash, a class's @records Array, a local's
 * store), marked old; what they dominate is new and gathers under them.
 */
static void exit_holders(struct why_context *c, struct verdict_end *e,
			 const struct dominators *dom, uint8_t *newness, uint8_t *above)
{
	uint32_t k;

	for (k = 0; k < dom->nreached; k++) {
		uint32_t v = dom->order[k], up;

		if (v >= dom->n || newness[v] == ACCUM_SKIP)
			continue;
		up = dom->idom[v];
		if (up < dom->n && !above[up])
			continue; /* below the first data: new */
		/* above[v]: v and all above it are classes (or the virtual root) */
		above[v] = classy(c, e, verdict_node_class(e, v));
		if (!above[v] && dom->dom_objects[v] >= 2)
			newness[v] = ACCUM_OLD;
	}
}

static int by_kept(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->grew_bytes != y->grew_bytes)
		return x->grew_bytes < y->grew_bytes ? 1 : -1;
	return x->p->node < y->p->node ? -1 : x->p->node > y->p->node;
}

/* Over ~60 lines: as verdict_on_graph, its steps in order, its buffers freed on every path. */
void verdict_on_graph_at_exit(void *ctx, struct why_context *c, struct refgraph *g,
			      const struct root_set *roots, struct dominators *dom)
{
	struct verdict_end *e = ctx;
	size_t n1 = (size_t) g->nnodes + 1, npts = 0, i, k = 0;
	uint8_t *newness = malloc(n1), *above = calloc(n1, 1);
	uint32_t *point = malloc(n1 * sizeof(*point));
	struct accum_point *pts = NULL, chosen[VERDICT_MAX] = {0};
	struct ranked *ranked = NULL;
	int err = -ENOMEM;

	(void) roots;
	e->g = g;
	if (!newness || !above || !point || !dom)
		goto out;
	judge_newness(c, e, g, newness);
	exit_holders(c, e, dom, newness, above);
	if ((err = accum_assign(dom, newness, point)) ||
	    (err = accum_sum(dom, point, newness, g->bytes, &pts, &npts)))
		goto out;
	err = -ENOMEM;
	if (!(ranked = calloc(npts + 1, sizeof(*ranked))))
		goto out;
	for (i = 0; i < npts; i++) {
		uint32_t v = pts[i].node;

		/* what it gathered of the program's own objects: made since its start */
		ranked[k++] = (struct ranked){
		    .p = &pts[i],
		    .grew_objects = (int64_t) pts[i].new_objects,
		    .grew_bytes = (int64_t) pts[i].new_bytes,
		    .size_before = -1,
		    .size_after = g->size ? (int64_t) g->size[v] : -1,
		};
	}
	qsort(ranked, k, sizeof(*ranked), by_kept);
	/* the first VERDICT_MAX, down to the noise */
	i = 0;
	while (i < k && i < VERDICT_MAX && ranked[i].grew_objects >= VERDICT_NOISE_MIN)
		i++;
	e->out->small_points = k - i;
	err = fill_points(e, c, g, dom, ranked, i, chosen, point, newness);
	count_new(e, dom, newness, point);
out:
	if (err) {
		e->out->n = 0;
		e->out->none = verdict_intern(e->out, "the exit's walk could not be judged: out of memory");
	}
	e->out->seconds = g->seconds + (dom ? dom->seconds : 0);
	e->out->tracer_bytes = end_bytes(g, dom);
	verdict_class_maps_free(e);
	accum_free(pts, npts);
	for (i = 0; i < VERDICT_MAX; i++)
		free(chosen[i].classes);
	free(ranked);
	free(newness);
	free(above);
	free(point);
}
