/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Two reports compared (merge --diff BASE NEW): per class, allocation site,
 * call path and holder of the leak verdict, the figures of each and their
 * change, matched by names (never addresses), so reports of the same
 * process at two moments, or of two builds of a program, compare.  Every
 * writer only reads it.
 */
#ifndef RBM_DIFF_H
#define RBM_DIFF_H
#include <stddef.h>
#include <stdint.h>
#include "report.h"
#include "strpool.h"

/* What a table's three figures are, per table. */
#define DIFF_FIGURES 3

struct diff_row {
	const char *name; /* interned in the diff's pool */
	int64_t base[DIFF_FIGURES], now[DIFF_FIGURES];
	bool in_base, in_new;
};

struct diff_table {
	const char *title;		     /* "classes", "sites", "call paths", "holders" */
	const char *figures[DIFF_FIGURES];   /* their names, "retained", "live", "bytes" ... */
	struct diff_row *v;		     /* by the first figure's change, largest first */
	size_t n, cap;
	struct u64map index;		     /* name pointer -> index + 1 */
};

enum { DIFF_CLASSES, DIFF_SITES, DIFF_PATHS, DIFF_HOLDERS, DIFF_TABLES };

struct report_diff {
	char base_what[320], new_what[320]; /* "pid 12 (ruby app.rb), 30.0 s" */
	bool same_process;
	bool estimated; /* either side sampled: retained figures are estimates */
	struct diff_table t[DIFF_TABLES];
	struct strpool strings;
};

/*
 * Compares base and now (finished reports, a model's summary).  0; -EINVAL
 * with one line in err when they cannot be compared (no class in common);
 * -ENOMEM.  Free with report_diff_free either way.
 */
int report_diff(const struct report *base, const struct report *now, struct report_diff *d,
		char *err, size_t n);
void report_diff_free(struct report_diff *d);

#endif
