// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What merge and fleet share: writing a model out. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "outfile.h"
#include "diag.h"
#include "html.h"
#include "speedscope.h"
#include "writers.h"

int cli_write_model_stream(FILE *out, const struct model_view *v, int format,
			   const struct text_options *topts)
{
	int err = 0;

	switch (format) {
	case MODEL_JSON:
		model_write_json(out, v);
		break;
	case MODEL_PPROF:
		err = model_write_pprof(out, v);
		break;
	case MODEL_FOLDED:
		report_write_folded(out, v->summary);
		break;
	case MODEL_SPEEDSCOPE:
		err = report_write_speedscope(out, v->model->nprocs == 1 ? v->model->procs[0]
									  : v->summary);
		break;
	case MODEL_HTML:
		err = model_write_html(out, v);
		break;
	default:
		model_write_text(out, v, topts);
	}
	return err;
}

int cli_write_model(const struct model_view *v, int format, const char *path,
		    const struct text_options *topts)
{
	struct outfile of;
	int err;

	if (format == MODEL_PPROF && !path && isatty(STDOUT_FILENO))
		rbm_die("pprof output is binary: give -o FILE.pb.gz");
	/* Replaced only when complete: a failed merge leaves the previous file as it was. */
	cli_output_open(&of, path);
	err = cli_write_model_stream(outfile_stream(&of), v, format, topts);
	if (err) {
		outfile_abort(&of);
		rbm_warn("cannot write %s: %s", path ? path : "the output", strerror(-err));
		return err;
	}
	return cli_output_commit(&of) ? -EIO : 0;
}
