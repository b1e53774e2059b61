// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What merge and fleet share: parsing --format and writing a model out. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "diag.h"
#include "writers.h"

int cli_model_format(const char *arg, bool folded_ok)
{
	if (!strcmp(arg, "text"))
		return MODEL_TEXT;
	if (!strcmp(arg, "json"))
		return MODEL_JSON;
	if (!strcmp(arg, "pprof"))
		return MODEL_PPROF;
	if (folded_ok && !strcmp(arg, "folded"))
		return MODEL_FOLDED;
	rbm_die("invalid format: %s (expected text, json, pprof%s)", arg,
		folded_ok ? " or folded" : "");
}

int cli_write_model(const struct model_view *v, int format, const char *path,
		    const struct text_options *topts)
{
	FILE *out = stdout;
	int err = 0;

	if (format == MODEL_PPROF && !path && isatty(STDOUT_FILENO))
		rbm_die("pprof output is binary: give -o FILE.pb.gz");
	if (path) {
		out = fopen(path, "w");
		if (!out)
			rbm_die("cannot write %s: %s", path, strerror(errno));
	}
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
	default:
		model_write_text(out, v, topts);
	}
	if (ferror(out) && !err)
		err = -EIO;
	if (out != stdout ? fclose(out) : fflush(out))
		err = err ? err : -errno;
	if (err)
		rbm_warn("cannot write %s: %s", path ? path : "the output", strerror(-err));
	return err;
}
