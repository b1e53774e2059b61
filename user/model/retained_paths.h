/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What each call path retains, in objects and bytes, for the writers that
 * draw it (speedscope, the HTML page's icicle): the pprof rows of the
 * report (profile_rows.c) summed per (call path, class), keeping only the
 * retained ones (alive, and survived a GC: every age bucket but the young),
 * or for a period's report what is in use at its end (the census's, as its
 * folded output and its profile count).  Under sampling, the estimates.
 */
#ifndef RBM_RETAINED_PATHS_H
#define RBM_RETAINED_PATHS_H
#include <stddef.h>
#include <stdint.h>
#include "report.h"

struct retained_path {
	const struct stack *stack; /* NULL: the class's objects no call path covers */
	const char *class_name;
	uint64_t objects, bytes;
};

struct retained_paths {
	struct retained_path *v; /* most objects first (then most bytes) */
	size_t n;
	uint64_t objects, bytes; /* their sums */
	bool in_use;		 /* a period's report: in use at its end, not retained */
};

/* The rows of r with any object; free with retained_paths_free.  0 or -ENOMEM. */
int report_retained_paths(const struct report *r, struct retained_paths *out);
void retained_paths_free(struct retained_paths *p);

#endif
