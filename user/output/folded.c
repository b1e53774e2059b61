// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Folded stacks (flamegraph.pl, speedscope), weighted by retained objects. */
#include "calltree.h"
#include "writers.h"

void report_write_folded(FILE *out, const struct report *r)
{
	static char names[REPORT_PATH_SLOTS][REPORT_NAME_MAX];
	const char *path[REPORT_PATH_SLOTS];
	size_t i;

	for (i = 0; i < r->nstacks; i++)
		if (r->stacks[i].counts.retained)
			folded_write_line(out, path,
					  report_path_root_first(&r->stacks[i], names, path),
					  r->stacks[i].counts.retained);
}
