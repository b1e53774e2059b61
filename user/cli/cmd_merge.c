// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace merge FILE...: JSON reports from any processes and hosts made
 * one model.  Each process stays a process of it; the summary sums them by
 * class, site and call path, by names (model/merge.c).
 */
#include <argp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cli.h"
#include "diag.h"
#include "json_read.h"
#include "option_groups.h"
#include "outfile.h"
#include "why_out.h"
#include "why_read.h"
#include "writers.h"

/* Some inputs could not be read and were skipped (--keep-going): the rest merged. */
#define EXIT_SKIPPED 3

static const struct option_doc output_docs[] = {
	{GROUP_OPT_FORMAT,
	 "text (default), json, pprof (gzipped profile.proto, needs -o or a pipe) or folded"},
	{}};

static struct merge_args {
	struct output_opts out;
	struct report_opts report;
	struct common_opts common;
	bool keep_going;
	char **files;
	int nfiles;
} args = {
	.out = {.docs = output_docs, .formats = formats_model,
		.expected = "text, json, pprof or folded"},
	.report = {.text = {.top = 30, .top_stacks = 10, .prune = 5}},
};

static const char doc[] =
	"Merge JSON reports of rbmemtrace (trace, merge or fleet; any hosts, any Ruby versions) "
	"into one: each process is kept, and their sum by class, site and call path is the "
	"summary.  Reports of `rbmemtrace why` merge into one why report: retainer paths summed "
	"by class, root and chain (--paths: the paths shown per class).\n"
	"\n"
	"Exit status: 0 when every file merged; 1 on an error (a bad file without "
	"--keep-going, or none readable); 3 when --keep-going skipped some files.\n"
	"\n"
	"EXAMPLES:\n"
	"    rbmemtrace merge web1.json web2.json\n"
	"    rbmemtrace merge *.json --format pprof -o fleet.pb.gz\n"
	"    go tool pprof -top -sample_index=inuse_objects fleet.pb.gz";

enum { OPT_KEEP_GOING = 0x100 };

static const struct argp_option opts[] = {
	{"keep-going", OPT_KEEP_GOING, NULL, 0,
	 "Skip files that cannot be read (each reported) and merge the others (exit 3)", 0},
	{},
};

static const struct argp_child children[] = {
	{&output_argp[OPTS_OUTPUT_FILE], 0, "Output:", 1},
	{&report_argp[OPTS_REPORT_TREE], 0, "Text report:", 2},
	{&common_argp[OPTS_COMMON_HELP], 0, NULL, 0},
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	switch (key) {
	case ARGP_KEY_INIT:
		SET_CHILD_INPUTS(state, children, &args.out, &args.report, &args.common);
		break;
	case OPT_KEEP_GOING:
		args.keep_going = true;
		break;
	case ARGP_KEY_ARG:
		return ARGP_ERR_UNKNOWN; /* all of them, at once, in ARGP_KEY_ARGS */
	case ARGP_KEY_ARGS:
		args.files = state->argv + state->next;
		args.nfiles = state->argc - state->next;
		break;
	case ARGP_KEY_END:
		if (!args.nfiles)
			rbm_die("merge: no report to merge (give one or more JSON files; see --help)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* why reports (rbmemtrace why --format json): summed by class, root and chain. */
static int merge_why(void)
{
	struct why_report sum = {0};
	struct outfile of;
	int i, skipped = 0, status = 0;
	char err[512];
	FILE *out;

	for (i = 0; i < args.nfiles; i++) {
		if (!why_json_is_why(args.files[i]))
			snprintf(err, sizeof(err), "%s: not a why report (the first file is one)",
				 args.files[i]);
		else if (!why_read_file(args.files[i], &sum, err, sizeof(err)))
			continue;
		if (!args.keep_going)
			rbm_die("%s", err);
		rbm_warn("skipped %s", err);
		skipped++;
	}
	if (skipped == args.nfiles)
		rbm_die("merge: no report could be read");
	sum.selection = "merged";
	why_finish(&sum);
	if (args.out.format == MODEL_PPROF && !args.out.output && isatty(STDOUT_FILENO))
		rbm_die("pprof output is binary: give -o FILE.pb.gz");
	cli_output_open(&of, args.out.output);
	out = outfile_stream(&of);
	if (args.out.format == MODEL_JSON)
		why_write_json(out, &sum, args.report.text.top_stacks);
	else if (args.out.format == MODEL_FOLDED)
		why_write_folded(out, &sum);
	else if (args.out.format == MODEL_PPROF && why_write_pprof(out, &sum))
		status = 1;
	else if (args.out.format == MODEL_TEXT)
		why_write_text(out, &sum, args.report.text.top_stacks);
	if (status) {
		outfile_abort(&of);
		rbm_error("cannot write the pprof profile");
	} else {
		status = cli_output_commit(&of);
	}
	why_free(&sum);
	return status ? 1 : skipped ? EXIT_SKIPPED : 0;
}

int cmd_merge(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, "FILE...", doc, children, 0, 0};
	struct host_failures failed = {};
	struct model model = {};
	struct report summary;
	struct model_view view;
	int i, skipped = 0, status;
	char err[512];

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 1;
	if (why_json_is_why(args.files[0]))
		return merge_why();
	for (i = 0; i < args.nfiles; i++) {
		if (!json_read_file(args.files[i], &model, &failed, err, sizeof(err)))
			continue;
		if (!args.keep_going)
			rbm_die("%s", err);
		rbm_warn("skipped %s", err);
		skipped++;
	}
	if (!model.nprocs)
		rbm_die("merge: no report could be read");
	if (model_summary(&model, &summary))
		rbm_die("out of memory merging the reports");
	view = (struct model_view){.model = &model, .summary = &summary, .failed = failed.v,
				   .nfailed = failed.n};
	status = cli_write_model(&view, args.out.format, args.out.output, &args.report.text) ? 1 : 0;
	if (!status && skipped)
		status = EXIT_SKIPPED;
	report_free(&summary);
	model_free(&model);
	host_failures_free(&failed);
	return status;
}
