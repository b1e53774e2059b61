/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The retention report: its data, and the text and JSON writers. */
#ifndef RBM_REPORT_H
#define RBM_REPORT_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
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
	struct counts totals;
	struct class_row *rows;
	size_t nrows;
	size_t cap;
	struct u64map by_name; /* name hash -> row index + 1 */
};

/* Adds counts to the row called name (merging rows that share a name). */
int report_add(struct report *r, const char *name, const struct counts *c);
/* Sorts rows by retained, then allocated, then name, and sums the totals. */
void report_finish(struct report *r);
void report_write_text(FILE *out, const struct report *r, size_t top);
void report_write_json(FILE *out, const struct report *r);
void report_free(struct report *r);

#endif
