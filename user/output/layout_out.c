// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The layout a report was read with: which groups were proved, and what is off without them. */
#include "escape.h"
#include "json_writer.h"
#include "writers.h"

void report_write_layout_text(FILE *out, const char *prefix, const struct report_layout *l)
{
	char why[512], path[PATH_MAX * 4];
	int g;

	if (!l->have)
		return;
	for (g = 0; g < REPORT_LAYOUT_GROUPS; g++) {
		const struct report_layout_group *rg = &l->groups[g];

		if (rg->status != 0)
			continue;
		fprintf(out, "%sNOT PROVED: the %s layout of %s (%s): no %s in this report.\n",
			prefix, rg->name, term_escape(l->libruby, path, sizeof(path)),
			term_escape(rg->why, why, sizeof(why)), rg->gives);
	}
}

void report_write_layout_json(struct jw *w, const struct report_layout *l)
{
	int g;

	if (!l->have)
		return;
	jw_object(w, JK(layout), JW_INLINE);
	jw_string(w, JK(libruby), l->libruby);
	jw_string(w, JK(from), l->from);
	jw_string(w, JK(code_moved), l->code);
	jw_double(w, JK(check_ms), "%.2f", l->check_ms);
	jw_object(w, JK(groups), JW_INLINE);
	for (g = 0; g < REPORT_LAYOUT_GROUPS; g++) {
		const struct report_layout_group *rg = &l->groups[g];

		if (rg->status < 0 || !rg->name[0])
			continue;
		jw_object(w, rg->name, JW_INLINE);
		jw_bool(w, JK(proved), rg->status != 0);
		if (!rg->status) {
			jw_string(w, JK(why), rg->why);
			jw_string(w, JK(missing), rg->gives);
		}
		jw_end(w);
	}
	jw_end(w);
	jw_end(w);
}
