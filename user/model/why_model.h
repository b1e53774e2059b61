/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The model of a `why` report: for each selected class (a target), the
 * retainer paths of its live objects, aggregated over objects by their root
 * and the labels and classes along the way, most objects first; what no
 * path explains; and what the walk did.  Filled by heap/retainers.c (or
 * read back from JSON, why_read.c), summed across processes and hosts by
 * names (why_merge), and written by output/why_out.c, which only reads it.
 * Every string is interned in the report's pool.
 */
#ifndef RBM_WHY_MODEL_H
#define RBM_WHY_MODEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "caps.h"
#include "strpool.h"
#include "u64map.h"
#include "verdict.h"

/* An allocation site, when the trace saw the object (or its class) allocated. */
struct why_site {
	const char *path; /* NULL: unknown */
	int line;
};

/*
 * Dominated bytes: what an object keeps alive, itself included (the bytes
 * of the objects every path from a root to which goes through it:
 * heap/dominators.h).  A path sums many objects, each with its own holders:
 * at each step it keeps the largest, "what the biggest holder there keeps
 * alive" (a shared holder, like the root's object, is counted once; summing
 * would count it once per object).  Merged reports keep the largest too.
 * 0: not known (a step elided from a long path, no dominators computed).
 */
struct why_edge {
	const char *via;	/* "@sessions", "[]", "{value}", ".member", "local items" */
	const char *class_name; /* the class of the object it leads to */
	struct why_site site;	/* that object's, when traced */

	/* what that object keeps alive (the largest, see above) */
	uint64_t dominated_bytes;
};

struct why_path {
	const char *root_kind;	/* "constant", "global", "local", ... (vm_roots.h) */
	const char *root_name;	/* "App::Store::CACHE" */
	const char *root_class; /* the class of the root's object */
	struct why_site root_site;
	uint64_t root_dominated_bytes; /* what the root's object keeps alive */
	struct why_edge *edges; /* root to held object: the last edge's class is the target's */
	size_t nedges;
	uint64_t count, bytes;
	struct why_site site; /* the held objects' most common site, when traced */
	uint64_t key;	      /* hash of root and edges: paths that agree sum */
};

struct why_target {
	const char *class_name;
	uint64_t count, bytes; /* selected live objects of the class */
	struct why_site site;  /* its top allocation site (trace or --from report) */
	struct why_path *paths;
	size_t npaths, cap;
	struct u64map by_key; /* path key -> index + 1 */
	uint64_t unexplained, unexplained_bytes;
	uint64_t unexplained_young; /* of those, allocated since the last GC: likely garbage */
	uint64_t dropped;	    /* objects whose path no longer held when re-read */
};

struct why_walk {
	uint64_t objects, edges; /* live objects and references walked */
	uint64_t roots;		 /* root references the search started from */
	uint64_t reached;	 /* live objects reachable from them */
	double seconds;		 /* the whole walk: roots, heap, search, paths */
	double heap_seconds;	 /* reading the heap into the graph */
	double paused_ms;	 /* --freeze: how long the target was stopped; 0: not stopped */
	bool frozen;
	/* the dominator tree of the graph: what each object keeps alive */
	double dominators_seconds;
	uint64_t rechecked;    /* objects whose path was re-read edge by edge after the walk */
	uint64_t dropped;      /* of those, paths that no longer held */
	uint64_t tracer_bytes; /* memory the graph took */
	uint64_t reads;	       /* pieces of memory read besides the heap pages */
	bool gc_ran;	       /* a GC ran during the walk */
	uint64_t conservative_roots; /* roots from machine stacks and registers */
	uint64_t conservative_only;  /* live objects only those reach */
};

#define WHY_MAX_NOT_WALKED 8
/*
 * The heap's unexplained objects (of any class) grouped by what heads them:
 * the topmost unreached holder each is under, by its kind (heap/unexplained.h).
 */
#define WHY_MAX_GROUPS 8
struct why_group {
	const char *head;  /* the heads' kind: a class, "T_DATA name", "<imemo:iseq>" */
	const char *cause; /* what likely holds the heads, in words */
	uint64_t objects;  /* unexplained objects under heads of this kind */
	uint64_t heads;
	uint64_t young; /* of the objects, allocated since the last GC */
};

struct why_unexplained {
	uint64_t objects, bytes; /* selected objects no walked path reaches */
	uint64_t young;		 /* of those, allocated since the last GC: likely garbage */
	uint64_t opaque_data;	 /* live T_DATA objects whose mark function is C code */
	uint64_t unread;	 /* pieces of memory that could not be read */
	const char *not_walked[WHY_MAX_NOT_WALKED]; /* what could hold them, in words */
	size_t nnot_walked;
	uint64_t in_heap; /* live objects of the whole heap no root walked reaches */
	uint64_t in_heap_young; /* of them, allocated since the last GC: likely garbage */
	struct why_group groups[WHY_MAX_GROUPS]; /* the largest groups of them */
	size_t ngroups;
};


/*
 * A container the walk read only in part (a table that changed between its
 * chunks, memory that could not be read, bounds that did not hold): what
 * its other entries hold was not walked, and may be among the unexplained.
 * Named by its holder path as paths name it ("constant App::SUMMARIES").
 */
struct why_part {
	const char *root_kind;	/* NULL: no root walked reaches it */
	const char *root_name;
	const char *root_class; /* the root's object's class (the container's, with no edges) */
	struct why_edge *edges; /* root to the container: the last edge's class is its class */
	size_t nedges;
	const char *class_name; /* the container's class */
	const char *table;	/* what it holds: "entries", "elements", "ivars", "constants"... */
	const char *reason;	/* "the table changed between its chunks" ... */
	uint64_t read, total;	/* entries read, of the entries the container says it holds */
};

struct why_report {
	pid_t pid;
	char host[256];
	char command[256];
	char ruby_version[32];
	const char *selection; /* "suspects", "class", "site", "report" */
	struct why_target *targets;
	size_t ntargets, cap;
	struct why_walk walk;
	struct why_unexplained unexplained;
	struct why_part *parts; /* containers read in part, in the walk's order */
	size_t nparts, cap_parts;
	struct caps_hit caps; /* bounds on reading the target that were reached (caps.h) */
	struct verdict *verdict; /* the leak verdict of the suspects' trace; NULL: none asked */
	unsigned merged; /* reports summed into this one */
	struct strpool strings;
};

/* Adds n objects (heads, young) under head and cause to r's groups, summing equal ones. */
void why_add_group(struct why_report *r, const struct why_group *g);
const char *why_intern(struct why_report *r, const char *s);
/* The target of class name, created if new; NULL when out of memory. */
struct why_target *why_target(struct why_report *r, const char *class_name);
/*
 * Adds count objects (bytes) held along a path to t: a path equal to one
 * it has (root, vias, classes) sums into it.  Strings are interned.  0 or
 * -ENOMEM.
 */
int why_add_path(struct why_report *r, struct why_target *t, const struct why_path *p);
/* Removes target i (and its paths). */
void why_drop_target(struct why_report *r, size_t i);
/* Adds a container read in part (strings interned, edges copied).  0 or -ENOMEM. */
int why_add_part(struct why_report *r, const struct why_part *p);
/* Sorts targets by count and their paths by count, then bytes. */
void why_finish(struct why_report *r);
/* Sums from into into, by names (targets by class, paths by key).  0 or -ENOMEM. */
int why_merge(struct why_report *into, const struct why_report *from);
void why_free(struct why_report *r);

/* The hash that makes two paths one: root kind and name, then each via and class. */
uint64_t why_path_key(const struct why_path *p);

#endif
