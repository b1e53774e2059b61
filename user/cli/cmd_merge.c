// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace merge FILE...: JSON reports from any processes and hosts made
 * one model.  Each process stays a process of it; the summary sums them by
 * class, site and call path, by names (model/merge.c).
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cli.h"
#include "diff_out.h"
#include "diag.h"
#include "html.h"
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
	 "text (default), json, pprof (gzipped profile.proto, needs -o or a pipe), folded, "
	 "speedscope (its JSON: retained objects and bytes) or html (one self-contained page; a "
	 "series of --every periods is drawn over time); with --diff: text, json or html"},
	{}};

static struct merge_args {
	struct output_opts out;
	struct report_opts report;
	struct common_opts common;
	bool keep_going;
	bool diff;
	char **files;
	int nfiles;
} args = {
	.out = {.docs = output_docs, .formats = formats_model,
		.expected = "text, json, pprof, folded, speedscope or html"},
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
	"    rbmemtrace merge heap-*.json --format html -o series.html\n"
	"    rbmemtrace merge --diff before.json after.json\n"
	"    go tool pprof -top -sample_index=inuse_objects fleet.pb.gz";

enum { OPT_KEEP_GOING = 0x100, OPT_DIFF };

static const struct argp_option opts[] = {
	{"keep-going", OPT_KEEP_GOING, NULL, 0,
	 "Skip files that cannot be read (each reported) and merge the others (exit 3)", 0},
	{"diff", OPT_DIFF, NULL, 0,
	 "Compare two reports, BASE NEW (of one process at two moments, or of two builds): per "
	 "class, site, call path and holder, what changed (text, json or html)", 0},
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
	case OPT_DIFF:
		args.diff = true;
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
		if (args.diff && args.nfiles != 2)
			rbm_die("merge --diff compares two reports: give BASE.json NEW.json");
		if (args.diff && args.out.format != MODEL_TEXT && args.out.format != MODEL_JSON &&
		    args.out.format != MODEL_HTML)
			rbm_die("merge --diff writes text, json or html");
		if (args.diff && args.keep_going)
			rbm_die("merge --diff needs both reports: not with --keep-going");
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
	if (args.out.format == MODEL_SPEEDSCOPE)
		rbm_die("merge: why reports have no speedscope form (text, json, folded, pprof or html)");
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
	else if (args.out.format == MODEL_HTML && why_write_html(out, &sum))
		status = 1;
	else if (args.out.format == MODEL_TEXT)
		why_write_text(out, &sum, args.report.text.top_stacks);
	if (status) {
		outfile_abort(&of);
		rbm_error("cannot write the %s", args.out.format == MODEL_HTML ? "page" : "pprof profile");
	} else {
		status = cli_output_commit(&of);
	}
	why_free(&sum);
	return status ? 1 : skipped ? EXIT_SKIPPED : 0;
}

/* One side of a diff: the file's one process, or the summary of its several. */
static const struct report *diff_side(const char *path, struct model *m, struct report *sum,
				      struct host_failures *failed)
{
	char err[512];

	if (why_json_is_why(path))
		rbm_die("merge --diff: %s is a why report: it compares trace reports", path);
	if (json_read_file(path, m, failed, err, sizeof(err)))
		rbm_die("%s", err);
	if (!m->nprocs)
		rbm_die("merge --diff: %s holds no process's report", path);
	if (m->nprocs == 1)
		return m->procs[0];
	if (model_summary(m, sum))
		rbm_die("out of memory merging %s", path);
	return sum;
}

/* merge --diff BASE NEW: the two compared, or one line saying why they cannot be. */
static int merge_diff(void)
{
	struct host_failures failed = {};
	struct model mb = {}, mn = {};
	struct report sb = {}, sn = {};
	struct report_diff d;
	struct outfile of;
	char err[1024];
	int ret, status;

	ret = report_diff(diff_side(args.files[0], &mb, &sb, &failed),
			  diff_side(args.files[1], &mn, &sn, &failed), &d, err, sizeof(err));
	if (ret == -ENOMEM)
		snprintf(err, sizeof(err), "out of memory comparing the reports");
	if (ret) {
		rbm_error("%s", err);
		status = 1;
		goto out;
	}
	cli_output_open(&of, args.out.output);
	if (args.out.format == MODEL_JSON)
		diff_write_json(outfile_stream(&of), &d);
	else if (args.out.format == MODEL_HTML)
		ret = diff_write_html(outfile_stream(&of), &d);
	else
		diff_write_text(outfile_stream(&of), &d, args.report.text.top);
	if (ret) {
		outfile_abort(&of);
		rbm_error("cannot write the diff's page");
		status = 1;
	} else {
		status = cli_output_commit(&of);
	}
out:
	report_diff_free(&d);
	report_free(&sb);
	report_free(&sn);
	model_free(&mb);
	model_free(&mn);
	host_failures_free(&failed);
	return status;
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
	if (args.diff)
		return merge_diff();
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
