/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The retention report: its data, and the text and JSON writers. */
#ifndef RBM_REPORT_H
#define RBM_REPORT_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "stacks.h"
#include "u64map.h"

struct counts {
	uint64_t allocated;
	uint64_t freed;
	uint64_t retained;
	uint64_t untracked;
	uint64_t not_followed;
};

struct class_row {
	char *name;
	struct counts counts;
};

/* Where objects were allocated: the innermost Ruby frame. */
struct site_row {
	char *class_name;
	const char *path; /* borrowed from the symbolizer, which outlives the report */
	int line;
	struct counts counts;
};

/* A full call path; frames borrowed from the symbolizer. */
struct stack_row {
	char *class_name;
	const struct stack *stack;
	struct counts counts;
};

/* --max-overhead: where the counts came from and how to scale them. */
struct sampling_info {
	bool on;
	double budget_percent;
	uint64_t windows;
	double window_time_s;	/* time the allocation probes were attached */
	double est_overhead;	/* estimated share of the target's time in probes */
	uint64_t traced;	/* allocations traced in the windows */
	uint64_t probe_hits;	/* allocation probe hits in the windows */
	double scale;		/* target allocations / traced; 0 when unknown */
};

struct report {
	pid_t pid;
	char ruby_version[32];
	double duration_s;
	const char *end_reason; /* "duration", "signal", "target exited", "command finished" */
	bool target_exited;     /* counts are as of the last check before the exit */
	int exit_status;        /* launch mode: the command's; -1 otherwise */
	uint64_t gc_runs;
	uint64_t compactions;
	uint64_t moved_followed;
	uint64_t header_read_errors;
	uint64_t class_overflow;
	/* GC.stat's counters over the trace, read from the target: ground truth */
	bool have_gc_counts;
	uint64_t gc_allocated;
	uint64_t gc_freed;
	struct sampling_info sampling;
	struct counts totals;
	struct class_row *rows;
	size_t nrows;
	size_t cap;
	struct u64map by_name; /* name hash -> row index + 1 */

	bool with_stacks;
	uint64_t stacks_truncated;
	uint64_t stacks_dropped;
	uint64_t stack_errors;
	struct site_row *sites;
	size_t nsites, sites_cap;
	struct u64map sites_by_key;
	struct stack_row *stacks;
	size_t nstacks, stacks_cap;
	struct u64map stacks_by_key;
};

struct text_options {
	size_t top;        /* classes, sites and paths shown; 0: all */
	size_t top_stacks; /* call paths shown */
	bool tree;
	size_t prune;      /* children kept per call tree node */
};

/* Adds counts to the row called name (merging rows that share a name). */
int report_add(struct report *r, const char *name, const struct counts *c);
/* Adds counts to the site and the call path of a stack. */
int report_add_stack(struct report *r, const char *class_name, const struct stack *st,
		     const struct counts *c);
/* Sorts rows by retained, then allocated, then name, and sums the totals. */
void report_finish(struct report *r);
void report_write_text(FILE *out, const struct report *r, const struct text_options *opts);
void report_write_json(FILE *out, const struct report *r);
/* flamegraph.pl's folded format, weighted by retained objects; the class is the leaf. */
void report_write_folded(FILE *out, const struct report *r);
/* "label (path:line)", or the label alone for a C method. */
void frame_display_name(const struct frame *f, char *buf, size_t n);
void report_free(struct report *r);

#endif
