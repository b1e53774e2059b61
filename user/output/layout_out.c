// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The layout a report was read with: which groups were proved, and what is off without them. */
#include "escape.h"
#include "writers.h"

void report_write_layout_text(FILE *out, const struct report_layout *l)
{
	char why[512], path[PATH_MAX * 4];
	int g;

	if (!l->have)
		return;
	for (g = 0; g < REPORT_LAYOUT_GROUPS; g++) {
		const struct report_layout_group *rg = &l->groups[g];

		if (rg->status != 0)
			continue;
		fprintf(out, "NOT PROVED: the %s layout of %s (%s): no %s in this report.\n",
			rg->name, term_escape(l->libruby, path, sizeof(path)),
			term_escape(rg->why, why, sizeof(why)), rg->gives);
	}
}

void report_write_layout_json(FILE *out, const char *pad, const struct report_layout *l)
{
	int g, n = 0;

	if (!l->have)
		return;
	fprintf(out, "%s  \"layout\": {\"libruby\": ", pad);
	json_write_string(out, l->libruby);
	fprintf(out, ", \"from\": ");
	json_write_string(out, l->from);
	fprintf(out, ", \"code_moved\": ");
	json_write_string(out, l->code);
	fprintf(out, ", \"check_ms\": %.2f, \"groups\": {", l->check_ms);
	for (g = 0; g < REPORT_LAYOUT_GROUPS; g++) {
		const struct report_layout_group *rg = &l->groups[g];

		if (rg->status < 0 || !rg->name[0])
			continue;
		fprintf(out, "%s\"%s\": {\"proved\": %s", n++ ? ", " : "", rg->name,
			rg->status ? "true" : "false");
		if (!rg->status) {
			fprintf(out, ", \"why\": ");
			json_write_string(out, rg->why);
			fprintf(out, ", \"missing\": ");
			json_write_string(out, rg->gives);
		}
		fputc('}', out);
	}
	fprintf(out, "}},\n");
}
