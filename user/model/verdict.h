/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The leak verdict of a report: the old containers that gathered the most
 * new objects, ranked by how much more they keep alive at the end than at
 * the start (their dominated bytes), each with the path that holds it, its
 * size before and after, and what it gathered by class.  Exact: read from
 * the heap at both ends (probe/verdict_run.c), never from samples; the
 * allocation sites come from the sampled windows, with how many traced
 * objects each rests on.  Every writer only reads it.
 */
#ifndef RBM_VERDICT_H
#define RBM_VERDICT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "callpath.h"
#include "strpool.h"

#define VERDICT_MAX 5
#define VERDICT_MAX_EDGES 16
#define VERDICT_MAX_CLASSES 6
#define VERDICT_MAX_SITES 4
/*
 * What C code registers with the GC (mark_object_ary: interned literals,
 * an extension's lazily made constants) grows as code first runs, and is
 * kept by design: a point below a VM list is one only past this growth.
 */
#define VERDICT_VM_LIST_MIN 1000
/*
 * A walk of a running target reads an object being built at one moment of
 * it (an Array filled by its constructor): points that grew by fewer than
 * this many objects, or by less than a thousandth of the first, are noise.
 */
#define VERDICT_NOISE_MIN 8

struct verdict_edge {
	const char *via;	/* "{value}", "[]", "@items" */
	const char *class_name; /* of the object it leads to */
};

struct verdict_class {
	const char *class_name;
	uint64_t objects, bytes;
};

struct verdict_site {
	const char *class_name;
	const char *path;
	int line;
	uint64_t traced; /* traced objects of the grown ones allocated there */
};

#define VERDICT_MAX_INSERT_SITES 4
#define VERDICT_MAX_INSERT_PATHS 3
#define VERDICT_MAX_INSERT_FRAMES 12

/* A line of the target's code that added entries to a watched container. */
struct verdict_insert_site {
	const char *label, *path;
	int line;
	uint64_t count;
};

struct verdict_insert_path {
	struct frame frames[VERDICT_MAX_INSERT_FRAMES]; /* innermost first, interned */
	size_t nframes;
	bool cut; /* deeper than VERDICT_MAX_INSERT_FRAMES */
	uint64_t count;
};

/*
 * The writes that added entries to a point's container, trapped by a
 * hardware watchpoint on the word that counts them (probe/watch.c) for a
 * bounded time after the verdict: exact for the time watched.
 */
struct verdict_insertions {
	const char *source; /* "watchpoint" or "uprobe"; NULL: not watched */
	const char *form;   /* the word watched: "st_table num_entries" */
	const char *ended;  /* why the watch ended before its time, or NULL */
	const char *note;   /* what the source cannot see ("uprobe": inlined callers), or NULL */
	double seconds;
	uint64_t count;	 /* entries added: the count's increases, summed */
	uint64_t missed; /* of them, those whose call path could not be read */
	uint64_t moves;	 /* the word moved (an ar_table became an st_table...): watched again */
	int64_t size_before, size_after; /* its entries when the watch began and ended */
	struct verdict_insert_site sites[VERDICT_MAX_INSERT_SITES];
	size_t nsites;
	struct verdict_insert_path paths[VERDICT_MAX_INSERT_PATHS];
	size_t npaths;
};

struct verdict_point {
	const char *root_kind, *root_name; /* "constant", "App::CACHE" */
	struct verdict_edge edges[VERDICT_MAX_EDGES];
	size_t nedges;
	bool edges_cut; /* a longer path: its middle left out */
	const char *container_class;
	int64_t size_before, size_after; /* entries, length, ivars; -1: unknown */
	int64_t grew_objects, grew_bytes;    /* dominated at the end minus at the start */
	uint64_t new_objects, new_bytes;     /* new objects it gathered (by_class sums them) */
	struct verdict_class by_class[VERDICT_MAX_CLASSES];
	size_t nby_class;
	uint64_t dominated_bytes, dominated_objects; /* what it keeps alive at the end */
	struct verdict_site sites[VERDICT_MAX_SITES];
	size_t nsites;
	uint64_t addr; /* the container's address at the end's walk, its type (RB_T_*), its slot */
	uint32_t type, slot_size;
	struct verdict_insertions ins;
};

struct verdict {
	const char *none; /* why there is no verdict, in one line; NULL when computed */
	double seconds;	  /* the two walks and the dominators */
	double trace_seconds; /* between the two censuses */
	uint64_t tracer_bytes;
	uint64_t new_objects;	  /* new objects reachable at the end */
	uint64_t unattributed;	  /* of those, held by no old node of their own */
	bool compacted;		  /* a compaction between the walks: moved containers unseen */
	uint64_t vm_lists_grew;	  /* objects the VM's own lists gained: not points (below) */
	uint64_t small_points;	  /* points left out as noise (VERDICT_NOISE_MIN) */
	/*
	 * Launch mode: the heap starts nearly empty, so the points are the
	 * holders a root holds, ranked by what they keep alive at the exit.
	 */
	bool at_exit;
	struct verdict_point points[VERDICT_MAX];
	size_t n;
	struct strpool strings;
};

const char *verdict_intern(struct verdict *v, const char *s);
void verdict_free(struct verdict *v);

#endif
