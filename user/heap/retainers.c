// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caps.h"
#include "heap_caps.h"
#include "retainers.h"
#include "sort.h"
#include "target_mem.h"

#define MAX_CHAIN HEAP_MAX_PATH
#define MAX_REFS_PER_OBJECT (1u << 22)
#define CACHE_REFS_MAX (1ull << 24) /* decoded references kept across paths */
/*
 * A decode of fewer references is not kept: reading it again is a read or
 * two, while keeping it costs its references and its record.  Kept, the
 * parents of a million leaves (a String held by each of a million objects)
 * took 1 GB; the containers that many paths go through are the big ones.
 */
#define CACHE_MIN_REFS 16
#define TEXT 512

/* ---- re-reading a path ---- */

struct decoded {
	struct ref_out *refs;
	size_t n;
	uint32_t *by_child; /* big decodes: refs' indices by (child address, index) */
	uint64_t hdr[2];	/* flags, klass */
	bool ok;
	bool reread; /* read again once after a child was missing from it */
};

struct explain {
	const struct retainers_in *in;
	struct refgraph *g;
	struct u64map cache; /* node + 1 -> struct decoded * */
	uint64_t cached_refs;
	/*
	 * The last decode not kept, and its node: a path's step reads a node's
	 * header, the next step its edge to the child: one read for both.
	 */
	struct decoded *last;
	uint32_t last_node;
	struct ref_out *scratch;
	uint8_t *root_state; /* per root: 0 not re-read yet, 1 still holds, 2 does not */
	char **root_names;   /* per root: its words, made once */
};

static void decoded_clear(struct decoded *d)
{
	free(d->refs);
	d->refs = NULL;
	d->n = 0;
	free(d->by_child);
	d->by_child = NULL;
	d->ok = false;
}

static void decoded_free(void *p)
{
	struct decoded *d = p;

	if (!d)
		return;
	decoded_clear(d);
	free(d);
}

static int by_child_order(const void *a, const void *b, void *arg)
{
	const struct ref_out *refs = arg;
	uint32_t i = *(const uint32_t *) a, j = *(const uint32_t *) b;

	if (refs[i].value != refs[j].value)
		return refs[i].value < refs[j].value ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Reads what node references now into d (emptied first); d->ok says whether it could. */
static void decode_into(struct explain *x, uint32_t node, struct decoded *d)
{
	uint32_t slot_size = 0;
	uint64_t addr = refgraph_addr(x->g, node, &slot_size);
	size_t i, n = 0;

	/*
	 * A table caught mid-rehash is read again inside refs_decode_now (its
	 * witnesses, refs.h); what fails here is the slot itself or memory.
	 */
	decoded_clear(d);
	d->ok = addr && refs_decode_now_hdr(x->g->meta, addr, slot_size, x->scratch,
					    MAX_REFS_PER_OBJECT, &n, d->hdr) == 0;
	if (!d->ok)
		return;
	d->refs = malloc((n ? n : 1) * sizeof(*d->refs));
	if (d->refs)
		memcpy(d->refs, x->scratch, n * sizeof(*d->refs));
	d->n = d->refs ? n : 0;
	/* 4 bytes a reference: a map of them took 32 (a 2M-entry Hash: 64 MB) */
	if (d->n < CACHE_MIN_REFS || !(d->by_child = malloc(d->n * sizeof(*d->by_child))))
		return;
	for (i = 0; i < d->n; i++)
		d->by_child[i] = (uint32_t) i;
	sort_array_r(d->by_child, d->n, sizeof(*d->by_child), by_child_order, d->refs);
}

/*
 * What node references now (and its header): kept in the cache if big, else
 * as the last decode until the next one.  Either way x owns it.
 */
static struct decoded *decode(struct explain *x, uint32_t node)
{
	struct decoded *d = u64map_get(&x->cache, (uint64_t) node + 1);

	if (d)
		return d;
	if (x->last && x->last_node == node)
		return x->last;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	decode_into(x, node, d);
	if (d->n < CACHE_MIN_REFS || x->cached_refs + d->n > CACHE_REFS_MAX ||
	    u64map_put(&x->cache, (uint64_t) node + 1, d)) {
		decoded_free(x->last);
		x->last = d;
		x->last_node = node;
		return d;
	}
	x->cached_refs += d->n;
	return d;
}

static bool in_cache(struct explain *x, uint32_t node, const struct decoded *d)
{
	return u64map_get(&x->cache, (uint64_t) node + 1) == d;
}

/* One step of a path, as re-read: the label of the edge into node, and node's header. */
struct hop {
	uint32_t node;
	struct ref_label via;
	uint64_t hdr[2];
};

/* The once-per-node second read (reread_edge, header), its references recounted in the cache. */
static void decode_again(struct explain *x, uint32_t node, struct decoded *d)
{
	bool kept = in_cache(x, node, d);
	size_t was = d->n;

	decode_into(x, node, d);
	d->reread = true;
	if (kept)
		x->cached_refs = x->cached_refs - was + d->n;
}

/* The index + 1 of addr's first reference in d, 0 if none: small decodes have no map. */
static uintptr_t child_at(const struct decoded *d, uint64_t addr)
{
	size_t i;

	if (!d || !d->ok)
		return 0;
	if (d->by_child) {
		size_t lo = 0, hi = d->n;

		/* the first of addr's references: the lowest index among equal addresses */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (d->refs[d->by_child[mid]].value < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo < d->n && d->refs[d->by_child[lo]].value == addr ? d->by_child[lo] + 1
									   : 0;
	}
	for (i = 0; i < d->n; i++)
		if (d->refs[i].value == addr)
			return i + 1;
	return 0;
}

/*
 * Re-reads the edge parent -> child: its label, or false if it no longer
 * holds.  The parent's decode may be older than the child's path (read for
 * an earlier path, or mid-rehash): a child missing from it reads the parent
 * again, once per parent, so a table that changed since costs one decode,
 * not every path through it.
 */
static bool reread_edge(struct explain *x, uint32_t parent, uint32_t child, struct hop *h)
{
	struct decoded *d = decode(x, parent);
	uint64_t addr = refgraph_addr(x->g, child, NULL);
	uintptr_t at = child_at(d, addr);

	if (!at && d && !d->reread) {
		decode_again(x, parent, d);
		at = child_at(d, addr);
	}
	if (at)
		h->via = d->refs[at - 1].label;
	return at != 0;
}

/* The node's header as it reads now (its class); a failed read is tried again once. */
static bool header(struct explain *x, uint32_t node, uint64_t hdr[2])
{
	struct decoded *d = decode(x, node);
	bool ok;

	if (d && !d->ok && !d->reread)
		decode_again(x, node, d);
	ok = d && d->ok;
	if (ok)
		memcpy(hdr, d->hdr, 2 * sizeof(*hdr));
	return ok;
}

/* ---- a path in words ---- */

struct named {
	char via[TEXT];
	char cls[TEXT];
	struct ref_label label;
	struct why_site site;
	uint64_t dominated; /* what the object keeps alive; 0: not known */
};

static void site_of(struct explain *x, uint32_t node, struct why_site *s)
{
	const struct why_site *found = NULL;

	if (x->in->site_of)
		found = x->in->site_of(x->in->site_ctx, refgraph_addr(x->g, node, NULL));
	*s = found ? *found : (struct why_site){NULL, 0};
}

/*
 * A scope and the local read from it are one step for a reader: (captured
 * scope) (outer scope)* local items -> "captured items".
 */
static size_t merge_scopes(struct named *e, size_t n)
{
	size_t i, j, out = 0;

	for (i = 0; i < n; i++) {
		if (e[i].label.kind == REF_BLOCK_ENV || e[i].label.kind == REF_OUTER_ENV) {
			for (j = i; j < n && (e[j].label.kind == REF_BLOCK_ENV ||
					      e[j].label.kind == REF_OUTER_ENV);
			     j++)
				;
			if (j < n && e[j].label.kind == REF_LOCAL &&
			    !strncmp(e[j].via, "local ", 6)) {
				struct named m = e[j];

				snprintf(m.via, sizeof(m.via), "captured %s%s", e[j].via + 6,
					 j - i > 1 ? " (outer scope)" : "");
				e[out++] = m;
				i = j;
				continue;
			}
		}
		e[out++] = e[i];
	}
	return out;
}

/* Runs of one step repeated (a linked list: @next @next @next) as one, counted in buckets. */
static size_t fold_runs(struct named *e, size_t n)
{
	size_t i = 0, out = 0, j;

	while (i < n) {
		for (j = i + 1; j < n && !strcmp(e[j].via, e[i].via) && !strcmp(e[j].cls, e[i].cls);
		     j++)
			;
		e[out] = e[i]; /* its dominated bytes: the run's first, outermost holder */
		if (j - i >= 3) {
			size_t lo = 1;
			char via[TEXT + 32];

			while (lo * 10 <= j - i)
				lo *= 10;
			if (lo == 1)
				snprintf(via, sizeof(via), "%s x%zu", e[i].via, j - i);
			else
				snprintf(via, sizeof(via), "%s x%zu+", e[i].via, lo);
			snprintf(e[out].via, sizeof(e[out].via), "%.*s", TEXT - 1, via);
		}
		out++;
		i = j;
	}
	return out;
}

static int add_named(struct explain *x, struct why_report *out, struct why_target *t, uint32_t ri,
		     struct named *e, size_t n, uint64_t bytes)
{
	struct why_edge edges[WHY_MAX_EDGES + 2];
	const struct root *root = &x->in->roots->r[ri];
	struct why_path p = {0};
	char root_name[TEXT * 2];
	size_t i, k = 0;

	if (!x->root_names[ri]) {
		refs_root_text(x->in->namer, root, root_name, sizeof(root_name));
		x->root_names[ri] = strdup(root_name);
	}
	snprintf(root_name, sizeof(root_name), "%s", x->root_names[ri] ? x->root_names[ri] : "?");
	p.root_kind = root_kind_name(root->kind);
	/* a frame's escaped env and the local read from it: that local of the frame */
	if (root->kind == ROOT_FRAME_ENV && n > 1 && e[1].label.kind == REF_LOCAL &&
	    !strncmp(e[1].via, "local ", 6) && !strncmp(root_name, "locals of ", 10)) {
		char shown[TEXT * 2];

		snprintf(shown, sizeof(shown), "%s in %s", e[1].via + 6, root_name + 10);
		snprintf(root_name, sizeof(root_name), "%s", shown);
		p.root_kind = root_kind_name(ROOT_LOCAL);
		/* the root's object is now the local's value: e[1] becomes the root */
		memmove(&e[0], &e[1], (n - 1) * sizeof(*e));
		n--;
	}
	p.root_name = root_name;
	p.root_class = e[0].cls;
	p.root_site = e[0].site;
	p.root_dominated_bytes = e[0].dominated;
	n = fold_runs(e + 1, merge_scopes(e + 1, n - 1)) + 1;
	for (i = 1; i < n && k < WHY_MAX_EDGES + 2; i++)
		edges[k++] = (struct why_edge){e[i].via, e[i].cls, e[i].site, e[i].dominated};
	p.edges = edges;
	p.nedges = k;
	p.count = 1;
	p.bytes = bytes;
	p.site = n > 1 ? e[n - 1].site : e[0].site;
	return why_add_path(out, t, &p);
}

/* One selected object: its path re-read, named and summed.  1 held, 0 dropped, -errno. */
/*
 * The path to node s in chain, root's object first, from the search's
 * parents: its length, and the root in *ri; 0 for a loop (cannot happen)
 * or a path past MAX_CHAIN (counted), not explained.
 */
static uint32_t chain_of(struct explain *x, const uint32_t *parent, uint32_t node, uint32_t *chain,
			 uint32_t *ri)
{
	uint32_t n = 0, v = node;
	size_t i;

	while (v < x->g->nnodes && n < MAX_CHAIN) {
		chain[n++] = v;
		v = parent[v];
	}
	if (v < x->g->nnodes && n == MAX_CHAIN)
		caps_count(x->g->pid, CAP_PATH_LENGTH);
	if (v < x->g->nnodes || n == 0)
		return 0;
	*ri = v - x->g->nnodes;
	/* chain is object-first: reverse it, root's object first */
	for (i = 0; i < n / 2; i++) {
		uint32_t tmp = chain[i];

		chain[i] = chain[n - 1 - i];
		chain[n - 1 - i] = tmp;
	}
	return n;
}

/*
 * Step i of the n of chain, put into words in at: the edge into it re-read
 * (it still holds), its class, its label, its site.  False if it no longer holds.
 */
static bool name_step(struct explain *x, const uint32_t *chain, uint32_t n, size_t i,
		      const struct why_target *t, struct named *at)
{
	struct hop h = {.node = chain[i]};

	memset(at, 0, sizeof(*at));
	if (i > 0 && !reread_edge(x, chain[i - 1], chain[i], &h))
		return false;
	at->label = h.via;
	if (i + 1 < n) {
		if (!header(x, chain[i], h.hdr))
			return false;
		snprintf(at->cls, sizeof(at->cls), "%s",
			 refs_class_text(x->in->namer, h.hdr[0], h.hdr[1]));
	} else {
		snprintf(at->cls, sizeof(at->cls), "%s", t->class_name);
	}
	if (i > 0)
		refs_label_text(x->in->namer, &h.via, at->via, sizeof(at->via));
	site_of(x, chain[i], &at->site);
	if (x->in->dom)
		at->dominated = x->in->dom->dom_bytes[chain[i]];
	return true;
}

static int explain_one(struct explain *x, const uint32_t *parent, const struct rg_selected *s,
		       struct why_report *out, struct why_target *t, uint32_t *chain,
		       struct named *e)
{
	const struct root *root;
	uint32_t n, ri = 0;
	bool skipped = false;
	size_t i, k = 0;

	n = chain_of(x, parent, s->node, chain, &ri);
	if (!n)
		return 0;
	/* the last decode serves one path's steps: another path reads its nodes as they are now */
	decoded_free(x->last);
	x->last = NULL;
	root = &x->in->roots->r[ri];
	/* the root still holds its object (read once per root, shared by its paths) */
	if (!x->root_state[ri])
		x->root_state[ri] = vm_root_holds(x->g->pid, x->g->l, root) ? 1 : 2;
	if (x->root_state[ri] != 1)
		return 0;
	for (i = 0; i < n; i++) {
		bool keep =
		    n <= WHY_MAX_EDGES + 1 || i <= WHY_MAX_EDGES / 2 || i >= n - WHY_MAX_EDGES / 2;
		struct named *at = &e[k];

		if (!keep) {
			/* the middle of a long path: one step says how long, none is re-read */
			if (!skipped) {
				memset(at, 0, sizeof(*at));
				snprintf(at->via, sizeof(at->via), "(%zu more steps)",
					 (size_t) n - 1 - WHY_MAX_EDGES);
				k++;
				skipped = true;
			}
			continue;
		}
		if (!name_step(x, chain, n, i, t, at))
			return 0;
		k++;
	}
	return add_named(x, out, t, ri, e, k, s->bytes) ? -ENOMEM : 1;
}

/* The report's targets, each with its site, in the order of in's names. */
static int add_targets(const struct retainers_in *in, struct why_report *out)
{
	size_t i;

	for (i = 0; i < in->ntargets; i++) {
		struct why_target *t = why_target(out, in->target_names[i]);

		if (!t)
			return -ENOMEM;
		if (in->target_sites && in->target_sites[i].path)
			t->site = (struct why_site){why_intern(out, in->target_sites[i].path),
						    in->target_sites[i].line};
	}
	return 0;
}

/* One selected object counted to its target, and its path explained when the search reached it. */
static int explain_selected_one(struct explain *x, const uint32_t *parent, uint32_t *chain,
				struct named *e, struct why_report *out,
				const struct rg_selected *s)
{
	struct why_target *t = why_target(out, x->in->target_names[s->target]);
	int held;

	t->count++;
	t->bytes += s->bytes;
	if (parent[s->node] == RG_NONE) {
		t->unexplained++;
		t->unexplained_bytes += s->bytes;
		t->unexplained_young += s->young;
		out->unexplained.objects++;
		out->unexplained.bytes += s->bytes;
		out->unexplained.young += s->young;
		return 0;
	}
	held = explain_one(x, parent, s, out, t, chain, e);
	if (held < 0)
		return held;
	out->walk.rechecked++;
	if (!held) {
		t->dropped++;
		out->walk.dropped++;
	}
	return 0;
}

/* The walk's picks in node order, then the objects selected besides. */
static int explain_selected(struct explain *x, const uint32_t *parent, uint32_t *chain,
			    struct named *e, struct why_report *out)
{
	const struct refgraph *g = x->in->g;
	struct rg_selected s;
	uint32_t v;
	size_t i;
	int ret = 0;

	for (v = 0; g->picked && !x->in->sel_only && v < g->nnodes && !ret; v++)
		if (refgraph_picked(g, v, &s))
			ret = explain_selected_one(x, parent, chain, e, out, &s);
	for (i = 0; i < g->nsel && !ret; i++)
		ret = explain_selected_one(x, parent, chain, e, out, &g->sel[i]);
	return ret;
}

int retainers_explain(const struct retainers_in *in, struct why_report *out, char *err,
		      size_t errlen)
{
	struct explain x = {.in = in, .g = in->g};
	uint32_t *parent = malloc((size_t) in->g->nnodes * sizeof(*parent) + 4);
	uint32_t *chain = malloc(MAX_CHAIN * sizeof(*chain));
	struct named *e = malloc((WHY_MAX_EDGES + 4) * sizeof(*e));
	int64_t reached;
	size_t i;
	int ret = 0;

	x.scratch = malloc(MAX_REFS_PER_OBJECT * sizeof(*x.scratch));
	x.root_state = calloc(in->roots->n + 1, 1);
	x.root_names = calloc(in->roots->n + 1, sizeof(*x.root_names));
	if (!parent || !chain || !e || !x.scratch || !x.root_state || !x.root_names) {
		ret = -ENOMEM;
		goto out;
	}
	reached = retainers_search(in->g, in->roots, parent);
	if (reached < 0) {
		ret = (int) reached;
		goto out;
	}
	out->walk.reached = (uint64_t) reached;
	ret = add_targets(in, out);
	if (!ret)
		ret = explain_selected(&x, parent, chain, e, out);
out:
	if (ret)
		snprintf(err, errlen, "retainer paths: %s", strerror(-ret));
	u64map_free(&x.cache, decoded_free);
	decoded_free(x.last);
	free(x.scratch);
	free(x.root_state);
	for (i = 0; x.root_names && i < in->roots->n; i++)
		free(x.root_names[i]);
	free(x.root_names);
	free(parent);
	free(chain);
	free(e);
	return ret;
}
