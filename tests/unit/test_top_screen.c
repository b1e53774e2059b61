// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/top_screen.c: key v's verdict made into the drill-down's lines (top_ui_set_verdict). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "top_out.h"
#include "verdict.h"

/* A verdict of one point: root_name in a constant Hash grown from 20 to 180 entries over 8 s. */
static struct verdict *one_point(const char *root_name)
{
	struct verdict *v = calloc(1, sizeof(*v));
	struct verdict_point *pt;

	cr_assert_not_null(v);
	pt = &v->points[0];
	v->trace_seconds = 8;
	v->new_objects = 170;
	v->unattributed = 10;
	v->n = 1;
	pt->root_kind = verdict_intern(v, "constant");
	pt->root_name = verdict_intern(v, root_name);
	pt->container_class = verdict_intern(v, "Hash");
	pt->size_before = 20;
	pt->size_after = 180;
	pt->grew_objects = 160;
	pt->grew_bytes = 6400;
	pt->dominated_bytes = 9000;
	pt->by_class[0] = (struct verdict_class){verdict_intern(v, "TopSummary"), 160, 6400};
	pt->nby_class = 1;
	pt->sites[0] = (struct verdict_site){verdict_intern(v, "TopSummary"),
					     verdict_intern(v, "/app/top_leak.rb"), 31, 3};
	pt->nsites = 1;
	return v;
}

/* The text report's lines, blank lines left out, rank first; the status says both costs. */
Test(top_screen, verdict_lines_are_the_reports_without_blank_lines)
{
	static struct top_ui ui;
	struct verdict *v = one_point("SUMMARIES");

	top_ui_set_verdict(&ui, v, 4242, 0.125, 0.05, 3 << 20);
	cr_assert_eq(ui.nverdict, 6);
	cr_expect_str_eq(ui.verdict_lines[0], "Leak verdict (read from the heap, exact):");
	cr_expect_str_eq(ui.verdict_lines[1], " 1. SUMMARIES  Hash 20 -> 180 entries over 8.0 s");
	cr_expect_str_eq(ui.verdict_lines[2],
			 "      grew by 160 objects (TopSummary 160), 6.2 KB; keeps 8.8 KB alive");
	cr_expect_str_eq(ui.verdict_lines[3], "      constant SUMMARIES");
	cr_expect_str_eq(ui.verdict_lines[4],
			 "      TopSummary allocated at /app/top_leak.rb:31 (3 traced)");
	cr_expect(strstr(ui.verdict_lines[5], "    (170 new objects alive at the end; 10 of them") ==
		  ui.verdict_lines[5]);
	cr_expect_str_eq(ui.verdict_status,
			 "PID 4242: read in 0.12 s (its start's walk 0.05 s, 3.0M kept)");
	verdict_free(v);
}

/* No verdict (no walk at the start, a layout not proved): its one none line. */
Test(top_screen, a_verdict_that_cannot_be_judged_is_one_line)
{
	static struct top_ui ui;
	struct verdict *v = calloc(1, sizeof(*v));

	cr_assert_not_null(v);
	ui.nverdict = 7; /* an earlier read's */
	v->none = verdict_intern(v, "the start's heap walk failed: its refs layout is not proved");
	top_ui_set_verdict(&ui, v, 7, 0.01, 0, 0);
	cr_assert_eq(ui.nverdict, 1);
	cr_expect_str_eq(ui.verdict_lines[0], "Leak verdict: none (the start's heap walk failed: "
					      "its refs layout is not proved).");
	cr_expect_str_eq(ui.verdict_status, "PID 7: read in 0.01 s");
	verdict_free(v);
}

/* A name from the target cannot move the cursor or color the screen. */
Test(top_screen, the_targets_names_are_escaped)
{
	static struct top_ui ui;
	struct verdict *v = one_point("EVIL\x1b[2J\nNEXT");
	size_t i;

	top_ui_set_verdict(&ui, v, 1, 0.1, 0, 0);
	for (i = 0; i < ui.nverdict; i++)
		cr_expect(strchr(ui.verdict_lines[i], '\x1b') == NULL, "line %zu: %s", i,
			  ui.verdict_lines[i]);
	cr_expect(strstr(ui.verdict_lines[1], "EVIL") != NULL);
	cr_expect(strstr(ui.verdict_lines[1], "NEXT") != NULL, "the newline kept the name on its line");
	verdict_free(v);
}

/* The largest verdict (five points, each with four sites) is kept whole. */
Test(top_screen, the_largest_verdict_fits_the_lines_kept)
{
	static struct top_ui ui;
	struct verdict *v = one_point("A");
	size_t i;

	for (i = 1; i < VERDICT_MAX; i++)
		v->points[i] = v->points[0];
	for (i = 0; i < VERDICT_MAX; i++) {
		v->points[i].sites[1] = v->points[i].sites[2] = v->points[i].sites[3] =
		    v->points[i].sites[0];
		v->points[i].nsites = VERDICT_MAX_SITES;
	}
	v->n = VERDICT_MAX;
	top_ui_set_verdict(&ui, v, 1, 0.1, 0, 0);
	cr_expect_eq(ui.nverdict, 1 + VERDICT_MAX * (3 + VERDICT_MAX_SITES) + 1);
	cr_expect(ui.nverdict <= TOP_VERDICT_LINES);
	cr_expect(strstr(ui.verdict_lines[ui.nverdict - 1], "new objects alive") != NULL);
	cr_expect(strstr(ui.verdict_lines[1], " 1. A  Hash") == ui.verdict_lines[1]);
	verdict_free(v);
}
