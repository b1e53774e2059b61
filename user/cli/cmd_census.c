// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace census -p PID: every live object of the heap counted by class,
 * with bytes and age, read from the target's memory.  No probe, no ptrace
 * stop: the target keeps running and pays nothing.
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "cli.h"
#include "diag.h"
#include "option_groups.h"
#include "outfile.h"
#include "targets.h"
#include "writers.h"

static const struct option_doc target_docs[] = {{'p', "Ruby process whose heap to read"}, {}};
static const struct option_doc report_docs[] = {
    {GROUP_OPT_TOP, "Classes shown in text (default 30, 0: all)"}, {}};

static struct census_args {
	struct target_opts target;
	struct output_opts out;
	struct report_opts report;
	struct common_opts common;
} args = {
    .target = {.docs = target_docs, .max_pids = 1},
    .out = {.formats = formats_text_json, .expected = "text or json"},
    .report = {.docs = report_docs, .text = {.top = 30}},
};

static const char doc[] =
    "Count every live object of a running Ruby's heap by class, with bytes and how many are "
    "old, read from its memory at no cost to it.\n"
    "\n"
    "USAGE: rbmemtrace census -p PID [--format text|json] [-o FILE] [--top N]";

static const struct argp_child children[] = {
    {&target_argp[OPTS_TARGET_PID], 0, "Process:", 1},
    {&output_argp[OPTS_OUTPUT_FILE], 0, "Output:", 2},
    {&report_argp[OPTS_REPORT_TOP], 0, "Text report:", 3},
    {&common_argp[OPTS_COMMON_VERBOSE], 0, NULL, 0},
    {},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		SET_CHILD_INPUTS(state, children, &args.target, &args.out, &args.report,
				 &args.common);
		break;
	case ARGP_KEY_ARG:
		rbm_die("unexpected argument: %s (census takes -p PID)", arg);
	case ARGP_KEY_END:
		if (!args.target.npids)
			rbm_die("census needs -p PID (see rbmemtrace census --help)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int cmd_census(int argc, char **argv)
{
	static const struct argp argp = {NULL, parse_arg, NULL, doc, children, 0, 0};
	struct ruby_target target = {};
	struct report report = {};
	char err[RBM_ERR_LEN];
	struct outfile of;
	FILE *out;
	int status;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL) ||
	    cli_need_host_view(false, target_process_of(args.target.pids[0])))
		return 1;
	cli_output_open(&of, args.out.output);
	cli_signal_drops_output(&of, "rbmemtrace: census: interrupted before its report was "
				     "written: no report\n");
	out = outfile_stream(&of);
	if (target_memory_open(&target, target_process_of(args.target.pids[0]), err, sizeof(err)) ||
	    target_census(&target, &report, err, sizeof(err))) {
		outfile_abort(&of);
		report_free(&report);
		rbm_error("%s", err);
		return 1;
	}
	if (rbm_verbose) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		rbm_info("peak RSS %ld KB", ru.ru_maxrss);
	}
	if (args.out.format == MODEL_JSON)
		report_write_census_json(out, &report);
	else
		report_write_census_text(out, &report, args.report.text.top);
	status = cli_output_commit(&of);
	report_free(&report);
	return status;
}
