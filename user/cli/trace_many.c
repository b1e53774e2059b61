// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace -p PID -p PID ... | --all | --match REGEX: several processes
 * traced by the engine (many.h) in one run, and their model written by the
 * same writers as merge: one report per process and a summary over all.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "diag.h"
#include "outfile.h"
#include "trace_many.h"

int trace_many(const struct many_options *mo, const struct many_output *mout,
	       volatile sig_atomic_t *stop)
{
	static struct many m;
	struct model model = {};
	struct report summary = {};
	struct model_view view = {.model = &model, .summary = &summary};
	char err[RBM_ERR_LEN];
	struct outfile of;
	int ret;

	if (mout->format == MODEL_PPROF && !mout->output && isatty(STDOUT_FILENO))
		rbm_die("pprof output is binary: give -o FILE.pb.gz");
	/* Opened first, so a bad path fails before any probe; replaced only when complete. */
	cli_output_open(&of, mout->output);
	if (many_attach(&m, mo, NULL, err, sizeof(err))) {
		outfile_abort(&of);
		rbm_error("%s", err);
		return 1;
	}
	ret = many_run(&m, stop, err, sizeof(err));
	/* A report of no process would read as "nothing allocated": say so and fail instead. */
	if (!ret && !m.n) {
		snprintf(err, sizeof(err),
			 "no Ruby process that can be traced %s%s, and none started during the trace",
			 mo->match ? "matches " : "was running", mo->match ? mo->match : "");
		ret = -ESRCH;
	}
	if (!ret)
		ret = many_reports(&m, &model, &summary, err, sizeof(err));
	if (!ret && (ret = cli_write_model_stream(outfile_stream(&of), &view, mout->format,
						  &mout->text)))
		snprintf(err, sizeof(err), "cannot write %s: %s",
			 mout->output ? mout->output : "the report", strerror(-ret));
	if (ret) {
		outfile_abort(&of);
		rbm_error("%s", err);
	} else {
		ret = cli_output_commit(&of);
	}
	many_close(&m);
	report_free(&summary);
	model_free(&model);
	return ret ? 1 : 0;
}
