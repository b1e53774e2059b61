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
#include "model_ops.h"
#include "report.h"

struct text_options {
	size_t top;        /* classes, sites and paths shown; 0: all */
	size_t top_stacks; /* call paths shown */
	bool tree;
	bool tree_callee;  /* the tree from each class and its allocating frame out to the callers */
	size_t prune;      /* children kept per call tree node */
};

void report_write_text(FILE *out, const struct report *r, const struct text_options *opts);
void report_write_json(FILE *out, const struct report *r);
struct jw;
/*
 * One report's members, into an object the caller opened; identity adds
 * ns_pid, host and command (a model's processes, where several meet).
 */
void report_write_json_members(struct jw *w, const struct report *r, bool identity);
struct ct_node;
/* Prints the call tree indented, escaping names for the terminal. */
void calltree_print(FILE *out, const struct ct_node *root);
/*
 * Writes one folded-stack line, "root;...;leaf count", for flamegraph.pl and
 * speedscope; ';' and control characters in names are replaced.
 */
void folded_write_line(FILE *out, const char *const *path, size_t n, uint64_t count);
/* flamegraph.pl's folded format, weighted by retained objects; the class is the leaf. */
void report_write_folded(FILE *out, const struct report *r);

/* The leak verdict: its block of text (seconds: the trace's), its JSON members (none if NULL). */
void verdict_write_text(FILE *out, const struct verdict *v, double seconds);
void verdict_write_json(struct jw *w, const struct verdict *v);

/* The layout's proof: one line per group not proved; the "layout" member. */
/* prefix: what goes before each line ("" in a report; which process in a model) */
void report_write_layout_text(FILE *out, const char *prefix, const struct report_layout *l);
void report_write_layout_json(struct jw *w, const struct report_layout *l);
/* The caps reached while reading the target: one line (none if none), one object (always). */
void report_write_caps_text(FILE *out, const char *prefix, const struct caps_hit *h);
void report_write_caps_json(struct jw *w, const struct caps_hit *h);

/* rbmemtrace census: the heap by class, most live objects first; top 0 shows all. */
void report_write_census_text(FILE *out, const struct report *r, size_t top);
void report_write_census_json(FILE *out, const struct report *r);

/*
 * A model: its processes, their summary (model_summary) and the hosts that
 * failed.  The writers of a model only read it.
 */
struct model_view {
	const struct model *model;
	const struct report *summary;
	const struct host_failure *failed;
	size_t nfailed;
	bool with_failures; /* list failed_hosts even when empty (fleet) */
};

/*
 * One process: today's single-report object plus host, command, ns_pid (and
 * failed_hosts if any).  Several: {"rbmemtrace_version", "processes": [...],
 * "failed_hosts": [...], "summary": {...}}.
 */
void model_write_json(FILE *out, const struct model_view *v);
/* The summary as report_write_text prints it, after a table of the processes. */
void model_write_text(FILE *out, const struct model_view *v, const struct text_options *opts);
/* gzip-compressed profile.proto (pprof): 0, or -errno when writing failed. */
int model_write_pprof(FILE *out, const struct model_view *v);

#endif
