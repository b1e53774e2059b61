/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `why` from selection to report: what to explain (classes named, the
 * objects a short sampled trace saw allocated at a site, or the leak
 * suspects of a trace, run now or read from a report), then the roots, the
 * heap walk (frozen or not) and the paths (heap/retainers.h).  The trace
 * also gives each traced object its allocation site, so a path can say
 * where what it holds was allocated.
 */
#ifndef RBM_WHY_SELECT_H
#define RBM_WHY_SELECT_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "classnames.h"
#include "dominators.h"
#include "refgraph.h"
#include "refs.h"
#include "refs_globals.h"
#include "refs_names.h"
#include "ruby_symbols.h"
#include "ruby_target.h"
#include "stacks.h"
#include "u64map.h"
#include "vm_roots.h"
#include "why_model.h"

#define WHY_MAX_CLASSES 64
#define WHY_MAX_TARGETS 64

struct session;
struct verdict_end;

struct why_selection {
	const char *classes[WHY_MAX_CLASSES]; /* --class */
	int nclasses;
	const char *site_path; /* --site FILE:LINE */
	int site_line;
	const char *from; /* --from REPORT.json */
};

/* "app.rb:13" into s; 0 or -EINVAL. */
int why_parse_site(const char *arg, struct why_selection *s);

struct why_context {
	struct ruby_target *t;
	struct class_namer namer;
	struct ruby_symbols syms;
	struct symbolizer symbolizer;
	struct refs_meta meta;
	struct refs_globals globals;
	struct refs_namer names;
	const char *target_names[WHY_MAX_TARGETS];
	/* --class: a class or module of that name is alive in the heap (its object was walked) */
	bool target_alive[WHY_MAX_TARGETS];
	bool from_suspects; /* the names are a trace's suspects, not a user's --class */
	struct why_site target_sites[WHY_MAX_TARGETS];
	size_t ntargets;
	struct u64map by_klass; /* klass -> target + 2; 1: not selected */
	struct u64map objects;	/* traced object -> struct traced * (site, target) */
	bool by_object;		/* select the traced objects, not whole classes */
	const char *selection;	/* "class", "site", "report", "suspects" */
	/*
	 * Called with the walked graph and its dominator tree (NULL: no memory
	 * for it; the hook may reweigh its sums) before the paths are explained: may
	 * select more objects (g->sel) as more targets (the leak verdict's
	 * holders).  An error is said by the hook; the paths go on.
	 */
	void (*on_graph)(void *ctx, struct why_context *c, struct refgraph *g,
			 const struct root_set *roots, struct dominators *dom);
	void *on_graph_ctx;
	/* The suspects' trace kept open for the leak verdict: its end, and the session (why_trace.c) */
	struct verdict_end *verdict;
	struct session *trace_session;
	char err[1024];
};

/*
 * Opens what `why` reads in t (found, not yet proved): proves its layout
 * (refs included: refused in one line if not proved), finds its hidden
 * globals, class and ID names.  0, or -1 with a one-line error in err (c
 * holds nothing then).
 */
int why_context_open(struct why_context *c, struct ruby_target *t, char *err, size_t errlen);
/*
 * Chooses the targets (why_trace.c); duration: seconds of sampled trace for the
 * suspects or --site, which stop ends early.  0 or -1 (c->err).
 */
int why_select(struct why_context *c, const struct why_selection *s, double duration,
	       volatile sig_atomic_t *stop);
/* A traced object's site, and the target it was selected for (-1: none); NULL: not traced. */
const struct why_site *why_traced_site(const struct why_context *c, uint64_t addr, int *target,
				       uint64_t klass);
void why_traced_free(void *p);
/*
 * Collects the roots, walks the heap (the target stopped for at most
 * freeze_ms when not 0) and explains the targets' objects into out.
 * 0 or -1 (c->err).
 */
int why_run(struct why_context *c, unsigned long freeze_ms, struct why_report *out);
void why_context_close(struct why_context *c);

/*
 * The retainer paths of the live objects of classes in t (a target found
 * and proved for another mode: a trace at its end, top's drill-down), into
 * out, finished.  0, or -1 with why in err (one line): the refs layout not
 * proved, the target gone...  Never dies.
 */
int why_top_paths(struct ruby_target *t, const char *const *classes, size_t n,
		  struct why_report *out, char *err, size_t errlen);
/*
 * A trace's end: the suspects' paths (a class none alive is no error), and
 * on_graph(ctx, ...) called with the walked graph (why_context.on_graph).
 */
int why_suspect_paths(struct ruby_target *t, const char *const *classes, size_t n,
		      void (*on_graph)(void *, struct why_context *, struct refgraph *,
					const struct root_set *, struct dominators *),
		      void *ctx, struct why_report *out, char *err, size_t errlen);
/*
 * The roots and the reference graph of t alone (a trace's start: the
 * verdict's first walk), the walk at nice 19.  0, or -1 with err.
 */
int why_walk_graph(struct ruby_target *t, struct root_set *roots, struct refgraph *g, char *err,
		   size_t errlen);
/* "root name root class > via class > ..." : a path in one line. */
void why_path_line(const struct why_path *p, char *buf, size_t n);

#endif
