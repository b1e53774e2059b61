/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The reference graph of a running Ruby's heap, read from outside: every
 * live object a node, every reference Ruby's GC would mark an edge
 * (refs.h decodes them), walked page batch by page batch as the census
 * walks (heap/census.c: mark bits and lazy sweep judge live and garbage).
 *
 * Compact on purpose, for a heap of millions (per object, measured in
 * bench/why.rb): a node is a slot of a heap page, numbered in page-table
 * order, so an address maps to its node through its page (found by its
 * page body's address) with no per-object map; edges are a CSR array of
 * u32 node numbers (off[] per node, targets[] per edge), without labels:
 * a path's labels are read again, edge by edge, when it is printed
 * (heap/retainers.c), which also re-verifies it against the running target.
 * Per node: 4 bytes of offset and 1 of state; per edge: 4 bytes.
 *
 * The target runs during the walk (unless frozen): objects allocated or
 * freed meanwhile may be missed or seen dead; pages it allocates during the
 * walk are unknown to the graph, and references into them are counted.
 */
#ifndef RBM_REFGRAPH_H
#define RBM_REFGRAPH_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "refs.h"
#include "ruby_layout.h"
#include "u64map.h"

#define RG_LIVE 0x01   /* a live object (or one marking has not judged yet) */
#define RG_OPAQUE 0x02 /* it holds references `why` cannot read (a C mark function) */
#define RG_YOUNG 0x04  /* survived no GC yet (age 0, write-barrier protected) */
#define RG_NONE UINT32_MAX

struct rg_page {
	uint64_t page;	/* its struct heap_page (mark bits) */
	uint64_t start; /* first slot */
	uint32_t nslots;
	uint32_t slot_size;
	uint32_t first; /* node of slot 0 */
};

/* Chooses the objects whose paths are wanted, as the walk meets them. */
struct rg_select {
	/* Returns a target number (>= 0) for a live object, or -1; klass: RBasic.klass or 0 */
	int (*pick)(void *ctx, uint64_t addr, uint64_t flags, uint64_t klass);
	void *ctx;
};

/*
 * An object whose path is wanted.  The walk's picks cost a byte a node
 * (refgraph.picked; a million Strings picked would take 16 MB as a list):
 * refgraph_picked gives each as one of these.  The list g->sel holds what
 * is selected besides (a verdict's points, the tables read in part).
 */
struct rg_selected {
	uint32_t node;
	uint32_t target;     /* what pick returned */
	uint64_t bytes : 63; /* slot and owned memory, as the census counts it */
	uint64_t young : 1;  /* survived no GC yet (age 0, write-barrier protected) */
};

/* A table of a node read in part (refs.h: struct refs_part), kept to be named. */
struct rg_part {
	uint32_t node;
	uint8_t holds, why; /* enum refs_holds, enum refs_cut_why */
	uint64_t read, total;
};

struct refgraph {
	pid_t pid;
	const struct ruby_layout *l;
	struct refs_meta *meta;

	struct rg_page *pages;
	size_t npages;
	struct u64map by_body; /* page body address -> page index + 1 */
	uint32_t nnodes;       /* slots of every page */
	uint8_t *state;	       /* per node: RG_* */
	uint32_t *off;	       /* nnodes + 1: node i's edges are targets[off[i] .. off[i + 1]) */
	uint32_t *targets;
	uint64_t nedges, cap_edges;
	uint32_t *bytes; /* per node: its slot and the memory it owns, as the census counts it */
	uint32_t *size;	 /* per node: entries a container says it has (Hash, Array, ivars...) */

	uint8_t *picked; /* per node, when the walk picks: its target + 1, 0 if not picked */
	struct rg_selected *sel;
	size_t nsel, cap_sel;
	struct rg_part *parts; /* tables read in part, at most HEAP_MAX_PARTS */
	size_t nparts, cap_parts;
	uint64_t parts_more; /* past HEAP_MAX_PARTS: counted only */

	/* What the walk met */
	uint64_t live, garbage;
	uint64_t edges_unknown; /* references to an address no known page holds */
	uint64_t bad_pages;	/* skipped: unreadable, or no longer the page they were */
	uint64_t reads;		/* pieces of memory read besides the pages */
	bool marking, sweeping; /* GC phase at the start or the end */
	bool gc_ran;		/* GC.count moved during the walk */
	double seconds, cpu_seconds, read_seconds;
};

/*
 * Walks the heap of pid (its rb_objspace_t at objspace) into g, and hands
 * every live object to sel (may be NULL).  0, or -errno with err.
 */
int refgraph_build(struct refgraph *g, pid_t pid, const struct ruby_layout *l,
		   struct refs_meta *meta, uint64_t objspace, const struct rg_select *sel,
		   char *err, size_t errlen);
void refgraph_free(struct refgraph *g);

/* The node of the object at addr, or RG_NONE if no page of the graph holds a slot there. */
uint32_t refgraph_node(const struct refgraph *g, uint64_t addr);
/* The same, trying *hint's page first and leaving there the page that held addr. */
uint32_t refgraph_node_at(const struct refgraph *g, uint64_t addr, const struct rg_page **hint);
/* The page that holds node n, or NULL. */
const struct rg_page *refgraph_page_of(const struct refgraph *g, uint32_t n);
/* The address of node n, and its slot size. */
uint64_t refgraph_addr(const struct refgraph *g, uint32_t n, uint32_t *slot_size);

/* Node v as picked by the walk into *out (its bytes g->bytes[v]); false if not picked. */
bool refgraph_picked(const struct refgraph *g, uint32_t v, struct rg_selected *out);

/* Bytes the graph holds, for the report (tracer memory per object). */
uint64_t refgraph_bytes(const struct refgraph *g);

#endif
