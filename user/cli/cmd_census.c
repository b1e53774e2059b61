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
#include "census_model.h"
#include "cli.h"
#include "layout_report.h"
#include "diag.h"
#include "option_groups.h"
#include "outfile.h"
#include "ruby_target.h"
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

/* Takes the census of one target and fills r with it. */
static void take_census(struct ruby_target *t, struct report *r)
{
	const struct ruby_layout *hl = &t->layout;
	struct class_namer namer;
	struct census c = {};
	char err[RBM_ERR_LEN];
	int ret;

	if (cli_heap_open(t, &namer, err, sizeof(err)))
		rbm_die("%s", err);
	ret = census_take(&c, t->pid, hl, t->objspace, false, err, sizeof(err));
	if (ret == -ESRCH)
		rbm_die("PID %d exited", t->pid);
	if (ret == -EPERM || ret == -EACCES)
		rbm_die(
		    "not enough privileges to read PID %d (run as root, or with CAP_SYS_PTRACE)",
		    t->pid);
	if (ret)
		rbm_die("cannot read the heap of PID %d: %s", t->pid, err);
	rbm_info("census: %lu pages, %lu slots in %.1f ms (%.1f ms of CPU, %u walkers, %.1f ms "
		 "reading the target)",
		 (unsigned long) c.pages, (unsigned long) c.slots, c.seconds * 1e3,
		 c.cpu_seconds * 1e3, c.walkers, c.read_seconds * 1e3);
	r->pid = t->pid;
	r->census_only = true;
	r->exit_status = -1;
	snprintf(r->ruby_version, sizeof(r->ruby_version), "%s", t->version);
	layout_to_report(t, &r->layout);
	if (census_to_report(&c, &namer, r, CENSUS_AT_END, NULL, NULL))
		rbm_die("out of memory");
	caps_read(t->pid, &r->caps); /* after the naming: a name cut is counted there */
	report_finish(r);
	census_free(&c);
	class_namer_free(&namer);
}

int cmd_census(int argc, char **argv)
{
	static const struct argp argp = {NULL, parse_arg, NULL, doc, children, 0, 0};
	struct ruby_target target = {};
	struct report report = {};
	struct outfile of;
	FILE *out;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 1;
	cli_output_open(&of, args.out.output);
	out = outfile_stream(&of);
	cli_memory_target_open(&target, cli_process_of(args.target.pids[0]));
	take_census(&target, &report);
	if (rbm_verbose) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		rbm_info("peak RSS %ld KB", ru.ru_maxrss);
	}
	if (args.out.format == MODEL_JSON)
		report_write_census_json(out, &report);
	else
		report_write_census_text(out, &report, args.report.text.top);
	cli_output_commit(&of);
	report_free(&report);
	return 0;
}
