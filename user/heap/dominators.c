// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dominators.h: Lengauer and Tarjan's algorithm (the simple version, path
 * compression without balancing: O(m log n)), iterative throughout, for
 * heaps of millions of objects and chains as long as the heap.
 *
 * Numbers in DFS preorder ("nums"; the virtual root is 0) index the work
 * arrays.  The immediate dominator of a node is a proper ancestor in any
 * DFS tree, so preorder is an order where each node follows its idom: it
 * becomes d->order.
 *
 * Memory, the tracer's per object: the work arrays live in the result's
 * own arrays before their turn (dom_objects holds node -> num, dom_bytes
 * holds semi and the DFS's counts of up edges then label, idom holds the
 * DFS cursors then the predecessors' offsets; each of these two has one
 * entry more than n + 1), a vertex's bucket link shares its slot with the idom it gets
 * when it leaves the bucket, an unprocessed vertex's bucket head with its
 * label, and a vertex's DFS parent with its link in the forest (read last
 * when it is linked).  Extra: that parent array (4 B per node) and the
 * predecessors the semidominator step needs, only those of the edges going
 * up the preorder (4 B per such edge): an edge from a lower num (the
 * virtual root's to the roots among them) bounds semi by that num at once,
 * as the DFS meets it.  The edges are read twice: by the DFS, and to list
 * the up edges.
 *
 * Unreached nodes (and non-live ones, over a refgraph) have idom RG_NONE
 * and keep nothing alive: dom_bytes and dom_objects 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "dominators.h"

struct dom_work {
	uint32_t n;
	const uint32_t *off, *targets;
	const uint8_t *state;	/* NULL: every node counts; else only RG_LIVE ones */
	uint32_t r;		/* nums given: the reached nodes, the virtual root included */
	uint32_t *num;		/* node -> num; RG_NONE: not reached (in d->dom_objects) */
	uint32_t *vertex;	/* num -> node (d->order) */
	uint32_t *parent;	/* num -> its DFS parent's num, then its forest link */
	uint32_t *semi, *label; /* num -> (in d->dom_bytes) */
	uint32_t *dom;		/* num -> bucket link, then idom's num (in d->dom_objects) */
	uint32_t *roff, *rsrc;	/* num -> its predecessors of a higher num (roff in d->idom) */
};

static bool counts(const struct dom_work *w, uint32_t t)
{
	return t < w->n && (!w->state || (w->state[t] & RG_LIVE));
}

static void visit(struct dom_work *w, uint32_t t, uint32_t from_num)
{
	w->num[t] = w->r;
	w->vertex[w->r] = t;
	w->parent[w->r] = from_num;
	w->semi[w->r] = from_num;
	w->r++;
}

/*
 * The DFS meets an edge from num v to node c: true if c is new (the tree
 * edge to take).  Else the edge is from a lower num (c was reached from v:
 * it bounds c's semi by v), or from a higher one (counted in ups[] by c's
 * num + 1, for the predecessors' CSR), or a loop.  Every edge is met once.
 */
static bool meet(struct dom_work *w, uint32_t *ups, uint32_t v, uint32_t c)
{
	uint32_t cn;

	if (!counts(w, c))
		return false;
	cn = w->num[c];
	if (cn == RG_NONE)
		return true;
	if (v < cn && v < w->semi[cn])
		w->semi[cn] = v;
	else if (v > cn)
		ups[cn + 1]++;
	return false;
}

/*
 * Preorder numbers by a DFS with no stack: a node's next edge to try is
 * kept in cursor[node] (d->idom's room), and a finished node goes back to
 * its parent through parent[].  Each vertex's semi starts as its parent,
 * lowered by the edges from lower nums; the others are counted in ups[].
 */
static void dfs(struct dom_work *w, uint32_t *cursor, uint32_t *ups, const uint32_t *roots,
		size_t nroots)
{
	uint32_t cur = w->n;
	size_t next_root = 0;

	w->num[w->n] = 0;
	w->vertex[0] = w->n;
	w->parent[0] = 0;
	w->semi[0] = 0;
	w->r = 1;
	for (;;) {
		uint32_t t = RG_NONE;

		if (cur == w->n) {
			while (next_root < nroots && t == RG_NONE) {
				uint32_t c = roots[next_root++];

				if (meet(w, ups, 0, c))
					t = c;
			}
			if (t == RG_NONE)
				return;
		} else {
			uint32_t e, end = w->off[cur + 1];

			for (e = cursor[cur]; e < end && t == RG_NONE; e++)
				if (meet(w, ups, w->num[cur], w->targets[e]))
					t = w->targets[e];
			cursor[cur] = e;
			if (t == RG_NONE) {
				cur = w->vertex[w->parent[w->num[cur]]];
				continue;
			}
		}
		visit(w, t, w->num[cur]);
		cursor[t] = w->off[t];
		cur = t;
	}
}

/*
 * The predecessors of a higher num, as a CSR by num, from the DFS's counts
 * (ups); false out of memory.  One pass over the reached nodes' edges
 * lists them, with roff[v] as v's cursor, which ends at v + 1's start: it
 * is shifted back after.
 */
static bool up_edges(struct dom_work *w, const uint32_t *ups)
{
	uint32_t v, e;

	w->roff[0] = 0;
	for (v = 1; v <= w->r; v++)
		w->roff[v] = w->roff[v - 1] + ups[v];
	w->rsrc = malloc(((size_t) w->roff[w->r] + 1) * sizeof(*w->rsrc));
	if (!w->rsrc)
		return false;
	for (v = 1; v < w->r; v++) {
		uint32_t u = w->vertex[v];

		for (e = w->off[u]; e < w->off[u + 1]; e++) {
			uint32_t t = w->targets[e];

			if (counts(w, t) && w->num[t] < v)
				w->rsrc[w->roff[w->num[t]]++] = v;
		}
	}
	for (v = w->r; v > 0; v--)
		w->roff[v] = w->roff[v - 1];
	w->roff[0] = 0;
	return true;
}

/*
 * The vertex of least semi on the forest path from v up to (not including)
 * the first ancestor numbered at most linked (the linked vertices are those
 * above it).  The path is compressed without recursion: walked up with its
 * links reversed, then down again, each vertex taking its ancestor's label
 * and link.
 */
static uint32_t eval(struct dom_work *w, uint32_t v, uint32_t linked)
{
	uint32_t *anc = w->parent, x = v, below = RG_NONE;

	if (v <= linked)
		return v;
	while (anc[x] > linked) {
		uint32_t up = anc[x];

		anc[x] = below;
		below = x;
		x = up;
	}
	while (below != RG_NONE) {
		uint32_t y = below;

		below = anc[y];
		if (w->semi[w->label[x]] < w->semi[w->label[y]])
			w->label[y] = w->label[x];
		anc[y] = anc[x];
		x = y;
	}
	return w->label[v];
}

/*
 * Semidominators in reverse preorder, each vertex then put in its semi's
 * bucket; a vertex's parent's bucket is emptied once the vertex is linked,
 * each member getting its idom or a vertex with the same one.  An
 * unprocessed vertex's label slot is its bucket's head (RG_NONE: empty),
 * and a member's dom slot the link to the next.
 */
static void semidominators(struct dom_work *w)
{
	uint32_t i, v;

	for (v = 0; v < w->r; v++)
		w->label[v] = RG_NONE;
	for (i = w->r - 1; i > 0; i--) {
		uint32_t s = w->semi[i], p = w->parent[i], e;

		for (e = w->roff[i]; e < w->roff[i + 1]; e++) {
			uint32_t u = eval(w, w->rsrc[e], i);

			if (w->semi[u] < s)
				s = w->semi[u];
		}
		w->semi[i] = s;
		w->label[i] = i; /* its bucket was emptied by its children */
		w->dom[i] = w->label[s];
		w->label[s] = i;
		/* i is linked to p: its link is its parent, read last above */
		for (v = w->label[p]; v != RG_NONE;) {
			uint32_t next = w->dom[v], u = eval(w, v, i - 1);

			w->dom[v] = w->semi[u] < w->semi[v] ? u : p;
			v = next;
		}
		w->label[p] = RG_NONE;
	}
	w->dom[0] = 0;
	for (i = 1; i < w->r; i++)
		if (w->dom[i] != w->semi[i])
			w->dom[i] = w->dom[w->dom[i]];
}

/* From the nums' idoms: the nodes', and what each keeps alive, summed up in reverse preorder. */
static void sum_up(struct dominators *d, const struct dom_work *w, const uint32_t *bytes)
{
	uint32_t i;

	for (i = 0; i <= w->n; i++)
		d->idom[i] = RG_NONE;
	for (i = 1; i < w->r; i++)
		d->idom[w->vertex[i]] = w->vertex[w->dom[i]];
	memset(d->dom_bytes, 0, ((size_t) w->n + 1) * sizeof(*d->dom_bytes));
	memset(d->dom_objects, 0, ((size_t) w->n + 1) * sizeof(*d->dom_objects));
	for (i = w->r - 1; i > 0; i--) {
		uint32_t v = w->vertex[i], up = d->idom[v];

		d->dom_bytes[v] += bytes ? bytes[v] : 0;
		d->dom_objects[v]++;
		d->dom_bytes[up] += d->dom_bytes[v];
		d->dom_objects[up] += d->dom_objects[v];
	}
}

static int compute(struct dominators *d, uint32_t n, const uint32_t *off, const uint32_t *targets,
		   const uint32_t *roots, size_t nroots, const uint32_t *bytes,
		   const uint8_t *state)
{
	struct dom_work w = {.n = n, .off = off, .targets = targets, .state = state};
	double t0 = now_seconds();
	size_t all = (size_t) n + 1;
	uint32_t *shrunk;
	int ret = -ENOMEM;

	memset(d, 0, sizeof(*d));
	if (n >= RG_NONE)
		return -E2BIG;
	d->n = n;
	d->idom = malloc((all + 1) * sizeof(*d->idom));		  /* + 1: room for roff */
	/* zeroed by the system: the up-edge counts past the reached nums are never touched */
	d->dom_bytes = calloc(all + 1, sizeof(*d->dom_bytes)); /* + 1: room for ups */
	d->dom_objects = malloc(all * sizeof(*d->dom_objects));
	d->order = malloc(all * sizeof(*d->order));
	w.parent = malloc(all * sizeof(*w.parent));
	if (!d->idom || !d->dom_bytes || !d->dom_objects || !d->order || !w.parent)
		goto out;
	w.num = d->dom_objects;
	w.vertex = d->order;
	memset(w.num, 0xff, all * sizeof(*w.num));
	w.semi = (uint32_t *) d->dom_bytes;
	w.label = w.semi + all; /* the DFS's counts of up edges first */
	dfs(&w, d->idom, w.label, roots, nroots);
	w.roff = d->idom; /* the cursors are done with */
	if (!up_edges(&w, w.label))
		goto out;
	d->peak_bytes =
	    (all + 1) * (sizeof(*d->idom) + sizeof(*d->dom_bytes) + sizeof(*d->dom_objects) +
			 sizeof(*d->order) + sizeof(*w.parent)) +
	    ((uint64_t) w.roff[w.r] + 1) * sizeof(*w.rsrc);
	/* node -> num is done with: its room holds the buckets and idoms by num */
	w.dom = d->dom_objects;
	semidominators(&w);
	free(w.rsrc);
	w.rsrc = NULL;
	free(w.parent);
	w.parent = NULL;
	sum_up(d, &w, bytes);
	d->nreached = w.r;
	shrunk = realloc(d->order, (size_t) w.r * sizeof(*d->order));
	if (shrunk)
		d->order = shrunk;
	ret = 0;
out:
	free(w.parent);
	free(w.rsrc);
	if (ret)
		dominators_free(d);
	d->seconds = now_seconds() - t0;
	return ret;
}

int dominators_compute(struct dominators *d, uint32_t n, const uint32_t *off,
		       const uint32_t *targets, const uint32_t *roots, size_t nroots,
		       const uint32_t *bytes)
{
	return compute(d, n, off, targets, roots, nroots, bytes, NULL);
}

int dominators_of_graph(struct dominators *d, const struct refgraph *g,
			const struct root_set *roots)
{
	uint32_t *nodes = malloc((roots->n ? roots->n : 1) * sizeof(*nodes));
	size_t i, k = 0;
	int ret;

	if (!nodes) {
		memset(d, 0, sizeof(*d));
		return -ENOMEM;
	}
	for (i = 0; i < roots->n; i++) {
		uint32_t v = refgraph_node(g, roots->r[i].value);

		if (v != RG_NONE && (g->state[v] & RG_LIVE))
			nodes[k++] = v;
	}
	ret = compute(d, g->nnodes, g->off, g->targets, nodes, k, g->bytes, g->state);
	free(nodes);
	return ret;
}

void dominators_free(struct dominators *d)
{
	free(d->idom);
	free(d->dom_bytes);
	free(d->dom_objects);
	free(d->order);
	d->idom = d->order = d->dom_objects = NULL;
	d->dom_bytes = NULL;
	d->n = d->nreached = 0;
}
