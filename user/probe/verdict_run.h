/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The leak verdict, from the target: a walk of the heap at the start of a
 * trace keeps what each object then kept alive (its dominated bytes and
 * objects) and its size (entries, length, ivars); the walk at the end,
 * with the censuses of both ends telling new objects from old, finds the
 * old nodes that gathered the new ones (heap/accumulation.h) and ranks
 * them by how much more they keep alive.  Their paths are explained with
 * the suspects' (why_top_paths_with) in the same walk.
 */
#ifndef RBM_VERDICT_RUN_H
#define RBM_VERDICT_RUN_H
#include <stdbool.h>
#include "census.h"
#include "dominators.h"
#include "node_figures.h"
#include "refgraph.h"
#include "ruby_target.h"
#include "verdict.h"
#include "why_model.h"
#include "why_select.h"

/* The start's walk, kept for the end: addresses to nodes, and what each kept alive. */
struct verdict_base {
	bool taken;
	char why_not[640];	/* when not taken: why, in one line */
	struct refgraph g;	/* its pages only: addresses to nodes */
	struct node_figures fig; /* what each node kept alive, and its size */
	uint64_t compact_count; /* GC.stat(:compact_count) at the walk; ~0: unknown */
	double seconds;
	double at;	/* now_seconds() when it was read: a period's verdict counts from it */
	uint64_t bytes; /* what the base keeps */
};

/* The start's walk of t (a -p target, its trace about to begin).  Never fatal: why_not says. */
void verdict_base_take(struct verdict_base *b, struct ruby_target *t, uint64_t compact_count_addr,
		       const struct census *start);
void verdict_base_free(struct verdict_base *b);
/* b from an end's walk (g, its tree dom, reweighed by its census): the next period's start. */
int verdict_base_from(struct verdict_base *b, const struct refgraph *g,
		      const struct dominators *dom, uint64_t compact_count);

/* What the end's hook needs, and what it found (the points' paths come after the walk). */
struct verdict_end {
	const struct verdict_base *base;
	const struct census *start, *end;
	unsigned int old_age;
	uint64_t compact_count;	/* at the end, as the base's */
	struct verdict *out;
	int first_target; /* the why targets of the points: first_target + rank */
	/* The allocation site of a traced object at addr (the trace's live map); NULL: none */
	bool (*site_of)(void *ctx, uint64_t addr, const char **path, int *line);
	void *site_ctx;
	/* NULL, or filled from the end's walk: the next period's start */
	struct verdict_base *next_base;
	/* --class: only new objects of the classes it names count (NULL: all) */
	bool (*wanted)(void *ctx, const char *name);
	void *wanted_ctx;
	/* the end census's classes by the hash its slots keep, and --class's answer for each */
	struct u64map by_hash, wanted_by_hash;
	/* a node's class, looked up in the end census by its address (verdict_run.c) */
	const struct refgraph *g;
	const struct rg_page *class_page;
	struct census_hint class_hint;
};

/* why_context.on_graph: points and growth over dom; selects the points for their paths. */
void verdict_on_graph(void *ctx, struct why_context *c, struct refgraph *g,
		      const struct root_set *roots, struct dominators *dom);
/*
 * The same at a launched command's exit (e->base and e->start NULL): the
 * holders a root holds, ranked by what they keep alive (launch mode's heap
 * starts nearly empty: everything is new).
 */
void verdict_on_graph_at_exit(void *ctx, struct why_context *c, struct refgraph *g,
			      const struct root_set *roots, struct dominators *dom);
/* After the walk: each point's holder path from the why report the walk made, its targets dropped. */
void verdict_take_paths(struct verdict_end *e, struct why_report *why);

#endif
