// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The JSON of a model (merge, fleet): one process keeps the single report's
 * shape, so tools that read `trace` reports read it too; several are listed
 * under "processes", each as its own report, with their sum as "summary".
 */
#include <stdlib.h>
#include "escape.h"
#include "writers.h"

static void write_failed_hosts(FILE *out, const struct model_view *v)
{
	size_t i;

	fprintf(out, ",\n  \"failed_hosts\": [");
	for (i = 0; i < v->nfailed; i++) {
		fprintf(out, "%s\n    {\"host\": ", i ? "," : "");
		json_write_string(out, v->failed[i].host);
		fprintf(out, ", \"reason\": ");
		json_write_string(out, v->failed[i].reason);
		fputc('}', out);
	}
	fprintf(out, "%s]", v->nfailed ? "\n  " : "");
}

/* A single report's object, with "failed_hosts" slipped in before its closing brace. */
static void write_single(FILE *out, const struct model_view *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;

	if (!v->nfailed && !v->with_failures) {
		report_write_json_object(out, v->model->procs[0], 0, true);
		fputc('\n', out);
		return;
	}
	mem = open_memstream(&buf, &len);
	if (mem) {
		report_write_json_object(mem, v->model->procs[0], 0, true);
		fclose(mem);
	}
	if (!buf || len < 2) { /* out of memory: the report without its failures */
		report_write_json_object(out, v->model->procs[0], 0, true);
		fputc('\n', out);
		free(buf);
		return;
	}
	fwrite(buf, 1, len - 2, out); /* all but "\n}" */
	write_failed_hosts(out, v);
	fprintf(out, "\n}\n");
	free(buf);
}

void model_write_json(FILE *out, const struct model_view *v)
{
	size_t i;

	if (v->model->nprocs == 1) {
		write_single(out, v);
		return;
	}
	fprintf(out, "{\n  \"rbmemtrace_version\": ");
	json_write_string(out, RBMEMTRACE_VERSION);
	fprintf(out, ",\n  \"processes\": [");
	for (i = 0; i < v->model->nprocs; i++) {
		fprintf(out, "%s\n    ", i ? "," : "");
		report_write_json_object(out, v->model->procs[i], 4, true);
	}
	fprintf(out, "%s]", v->model->nprocs ? "\n  " : "");
	if (v->nfailed || v->with_failures)
		write_failed_hosts(out, v);
	fprintf(out, ",\n  \"summary\": ");
	report_write_json_object(out, v->summary, 2, true);
	fprintf(out, "\n}\n");
}
