// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The text of a model (merge, fleet): which processes of which hosts were
 * summed, the hosts that failed and why, then the summary as the text report
 * of one process reads.
 */
#include <inttypes.h>
#include "escape.h"
#include "writers.h"

static void write_process_table(FILE *out, const struct model *m)
{
	char host[128], cmd[128], ruby[64];
	size_t i;

	fprintf(out, "%-20s %8s %8s %-8s %10s %10s  %s\n", "HOST", "PID", "NS_PID", "RUBY",
		"RETAINED", "ALLOCATED", "COMMAND");
	for (i = 0; i < m->nprocs; i++) {
		const struct report *r = m->procs[i];

		fprintf(out, "%-20s %8d %8d %-8s %10" PRIu64 " %10" PRIu64 "  %s\n",
			term_escape(r->host[0] ? r->host : "(local)", host, sizeof(host)), r->pid,
			r->ns_pid, term_escape(r->ruby_version, ruby, sizeof(ruby)),
			r->totals.retained, r->totals.allocated,
			term_escape(r->command, cmd, sizeof(cmd)));
	}
	for (i = 0; m->nprocs > 1 && i < m->nprocs; i++) {
		const struct report *r = m->procs[i];
		char prefix[300];

		snprintf(prefix, sizeof(prefix), "%s PID %d: ",
			 term_escape(r->host[0] ? r->host : "(local)", host, sizeof(host)), r->pid);
		report_write_layout_text(out, prefix, &r->layout);
	}
}

static void write_failures(FILE *out, const struct model_view *v)
{
	char host[256], reason[512];
	size_t i;

	if (!v->nfailed)
		return;
	fprintf(out, "\n%zu host%s failed:\n", v->nfailed, v->nfailed == 1 ? "" : "s");
	for (i = 0; i < v->nfailed; i++)
		fprintf(out, "  %s: %s\n", term_escape(v->failed[i].host, host, sizeof(host)),
			term_escape(v->failed[i].reason, reason, sizeof(reason)));
}

void model_write_text(FILE *out, const struct model_view *v, const struct text_options *opts)
{
	const struct model *m = v->model;

	fprintf(out, "%zu process%s", m->nprocs, m->nprocs == 1 ? "" : "es");
	if (m->nprocs > 1)
		fprintf(out, "; the report below is their sum, by class, site and call path");
	fprintf(out, ":\n");
	write_process_table(out, m);
	write_failures(out, v);
	if (!m->nprocs)
		return;
	fprintf(out, "\n");
	report_write_text(out, m->nprocs == 1 ? m->procs[0] : v->summary, opts);
}
