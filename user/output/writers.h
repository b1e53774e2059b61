/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The report writers.  Each reads a finished report (report_finish) and
 * prints it; none computes a count.  Strings from the target are escaped
 * for where they go: the terminal (term_escape) or JSON.
 */
#ifndef RBM_WRITERS_H
#define RBM_WRITERS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "report.h"

struct text_options {
	size_t top;        /* classes, sites and paths shown; 0: all */
	size_t top_stacks; /* call paths shown */
	bool tree;
	size_t prune;      /* children kept per call tree node */
};

void report_write_text(FILE *out, const struct report *r, const struct text_options *opts);
void report_write_json(FILE *out, const struct report *r);
/* flamegraph.pl's folded format, weighted by retained objects; the class is the leaf. */
void report_write_folded(FILE *out, const struct report *r);

/* rbmemtrace census: the heap by class, most live objects first; top 0 shows all. */
void report_write_census_text(FILE *out, const struct report *r, size_t top);
void report_write_census_json(FILE *out, const struct report *r);

#endif
