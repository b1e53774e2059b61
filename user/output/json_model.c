// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The JSON of a model (merge, fleet): one process keeps the single report's
 * shape, so tools that read `trace` reports read it too; several are listed
 * under "processes", each as its own report, with their sum as "summary".
 */
#include "json_writer.h"
#include "writers.h"

static void write_failed_hosts(struct jw *w, const struct model_view *v)
{
	size_t i;

	if (!v->nfailed && !v->with_failures)
		return;
	jw_array(w, JK(failed_hosts), JW_LINES);
	for (i = 0; i < v->nfailed; i++) {
		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(host), v->failed[i].host);
		jw_string(w, JK(reason), v->failed[i].reason);
		jw_end(w);
	}
	jw_end(w);
}

void model_write_json(FILE *out, const struct model_view *v)
{
	struct jw w;
	size_t i;

	jw_init(&w, out, 0);
	jw_object(&w, NULL, JW_LINES);
	if (v->model->nprocs == 1) {
		report_write_json_members(&w, v->model->procs[0], true);
		write_failed_hosts(&w, v);
		jw_end(&w);
		fputc('\n', out);
		return;
	}
	jw_string(&w, JK(rbmemtrace_version), RBMEMTRACE_VERSION);
	jw_array(&w, JK(processes), JW_LINES);
	for (i = 0; i < v->model->nprocs; i++) {
		jw_object(&w, NULL, JW_LINES);
		report_write_json_members(&w, v->model->procs[i], true);
		jw_end(&w);
	}
	jw_end(&w);
	write_failed_hosts(&w, v);
	jw_object(&w, JK(summary), JW_LINES);
	report_write_json_members(&w, v->summary, true);
	jw_end(&w);
	jw_end(&w);
	fputc('\n', out);
}
