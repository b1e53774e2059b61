// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The JSON report reader (model/json_read*.c, json_get.c), as merge and
 * fleet use it on reports from other hosts: the input is a report file.
 * What it accepts is then summed (model_summary) and written in every
 * format merge writes, to /dev/null: the reader promises the writers
 * bounds (call path depth, lines, printable strings) they rely on.
 */
#include "fuzz.h"
#include "json_read.h"
#include "model_ops.h"
#include "writers.h"

static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct text_options opts = {.top = 20, .top_stacks = 5, .tree = true, .prune = 3};
	struct host_failures failed = {0};
	struct model m = {0};
	struct report sum;
	struct model_view view;
	char err[512];

	if (!sink)
		sink = fopen("/dev/null", "w");
	if (json_read_buffer((const char *) data, size, "fuzz", &m, &failed, err, sizeof(err)) ||
	    !m.nprocs)
		goto out;
	if (model_summary(&m, &sum))
		goto out;
	view = (struct model_view){.model = &m, .summary = &sum, .failed = failed.v,
				   .nfailed = failed.n};
	model_write_json(sink, &view);
	model_write_text(sink, &view, &opts);
	opts.tree_callee = true;
	model_write_text(sink, &view, &opts);
	model_write_pprof(sink, &view);
	report_free(&sum);
out:
	model_free(&m);
	host_failures_free(&failed);
	return 0;
}
