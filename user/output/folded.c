// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Folded stacks (flamegraph.pl, speedscope), weighted by retained objects;
 * a period's (trace --every) by the objects in use at its end, as its
 * profile counts them: the census's, on the call paths traced objects give.
 */
#include <stdlib.h>
#include "calltree.h"
#include "writers.h"

static void write_period(FILE *out, const struct report *r)
{
	static char names[REPORT_PATH_SLOTS][REPORT_NAME_MAX];
	const char *path[REPORT_PATH_SLOTS];
	struct profile_row *rows;
	size_t n, i, j;

	if (report_profile_rows(r, &rows, &n))
		return; /* out of memory: nothing to fold */
	for (i = 0; i < n; i = j) {
		uint64_t inuse = 0;
		struct stack_row one = {.class_name = (char *) rows[i].class_name,
					.stack = rows[i].stack};

		/* A path's rows (one per age) are consecutive: one line for them all. */
		for (j = i; j < n && rows[j].stack == rows[i].stack &&
			    rows[j].class_name == rows[i].class_name;
		     j++)
			inuse += rows[j].inuse_objects;
		if (!inuse)
			continue;
		if (one.stack) {
			folded_write_line(out, path, report_path_root_first(&one, names, path),
					  inuse);
		} else {
			path[0] = rows[i].class_name;
			folded_write_line(out, path, 1, inuse);
		}
	}
	free(rows);
}

void report_write_folded(FILE *out, const struct report *r)
{
	static char names[REPORT_PATH_SLOTS][REPORT_NAME_MAX];
	const char *path[REPORT_PATH_SLOTS];
	size_t i;

	if (r->period.on) {
		write_period(out, r);
		return;
	}
	for (i = 0; i < r->nstacks; i++)
		if (r->stacks[i].counts.retained)
			folded_write_line(out, path,
					  report_path_root_first(&r->stacks[i], names, path),
					  r->stacks[i].counts.retained);
}
