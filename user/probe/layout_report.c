// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include "layout_report.h"

void layout_to_report(const struct ruby_target *t, struct report_layout *out)
{
	unsigned int g;

	memset(out, 0, sizeof(*out));
	out->have = true;
	snprintf(out->libruby, sizeof(out->libruby), "%s", t->img.path);
	snprintf(out->from, sizeof(out->from), "%s", t->layout_from);
	snprintf(out->code, sizeof(out->code), "%s", t->layout_code_diff);
	out->check_ms = t->proof.seconds * 1e3;
	for (g = 0; g < PROOF_GROUPS && g < REPORT_LAYOUT_GROUPS; g++) {
		const struct group_proof *gp = &t->proof.groups[g];
		struct report_layout_group *rg = &out->groups[g];

		snprintf(rg->name, sizeof(rg->name), "%s", proof_group_name(g));
		snprintf(rg->gives, sizeof(rg->gives), "%s", proof_group_gives(g));
		rg->status = gp->status == PROOF_PROVED ? 1 : gp->status == PROOF_FAILED ? 0 : -1;
		if (gp->status == PROOF_FAILED)
			snprintf(rg->why, sizeof(rg->why), "%s", gp->why);
	}
}
