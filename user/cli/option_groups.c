// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The options several subcommands share, declared once (option_groups.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "diag.h"
#include "option_groups.h"
#include "rbmemtrace.h"

/* The group's struct begins with its docs: the help of its options worded for the subcommand. */
static char *group_help(int key, const char *text, void *input)
{
	const struct option_doc *const *docs = input;
	const struct option_doc *d;

	if (!docs || !*docs || !text)
		return (char *)text;
	for (d = *docs; d->key; d++)
		if (d->key == key)
			return strdup(d->doc); /* argp frees what differs from text */
	return (char *)text;
}

/* An argp per tail of a group's table: argps[i] takes opts[i] and those after. */
#define GROUP_ARGP(opts, parser, i) {&(opts)[i], parser, NULL, NULL, NULL, group_help, NULL}

static const struct argp_option target_options[] = {
	[OPTS_TARGET_ALL] = {"all", GROUP_OPT_ALL, NULL, 0,
			     "Every Ruby process on the host (and those that start)", 0},
	[OPTS_TARGET_MATCH] = {"match", GROUP_OPT_MATCH, "REGEX", 0,
			       "Every Ruby process whose command line matches REGEX (and those "
			       "that start)", 0},
	[OPTS_TARGET_PID] = {"pid", 'p', "PID", 0, "Ruby process to read (repeat for several)", 0},
	{},
};

static error_t parse_target(int key, char *arg, struct argp_state *state)
{
	struct target_opts *t = state->input;
	pid_t pid;

	switch (key) {
	case 'p':
		pid = cli_number(arg, "PID", 1, INT32_MAX);
		if (t->max_pids <= 1) {
			t->pids[0] = pid;
			t->npids = 1;
			break;
		}
		if (t->npids == t->max_pids)
			rbm_die(t->too_many, (int)t->max_pids);
		t->pids[t->npids++] = pid;
		break;
	case GROUP_OPT_ALL:
		t->all = true;
		break;
	case GROUP_OPT_MATCH:
		t->match = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp target_argp[3] = {
	GROUP_ARGP(target_options, parse_target, 0),
	GROUP_ARGP(target_options, parse_target, 1),
	GROUP_ARGP(target_options, parse_target, 2),
};

static const struct argp_option output_options[] = {
	[OPTS_OUTPUT_FILE] = {"output", 'o', "FILE", 0,
			      "Write the report to FILE instead of standard output", 0},
	[OPTS_OUTPUT_FORMAT] = {"format", GROUP_OPT_FORMAT, "FORMAT", 0, "text (default) or json", 0},
	{},
};

static error_t parse_output(int key, char *arg, struct argp_state *state)
{
	struct output_opts *o = state->input;
	const struct format_name *f;

	switch (key) {
	case 'o':
		o->output = arg;
		break;
	case GROUP_OPT_FORMAT:
		for (f = o->formats; f->name && strcmp(f->name, arg); f++)
			;
		if (!f->name)
			rbm_die("invalid format: %s (expected %s)", arg, o->expected);
		o->format = f->value;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp output_argp[2] = {
	GROUP_ARGP(output_options, parse_output, 0),
	GROUP_ARGP(output_options, parse_output, 1),
};

const struct format_name formats_text_json[] = {{"text", MODEL_TEXT}, {"json", MODEL_JSON}, {}};
const struct format_name formats_model[] = {
	{"text", MODEL_TEXT},	  {"json", MODEL_JSON}, {"pprof", MODEL_PPROF},
	{"folded", MODEL_FOLDED}, {"speedscope", MODEL_SPEEDSCOPE}, {"html", MODEL_HTML},
	{}};
const struct format_name formats_model_no_folded[] = {
	{"text", MODEL_TEXT},		  {"json", MODEL_JSON}, {"pprof", MODEL_PPROF},
	{"speedscope", MODEL_SPEEDSCOPE}, {"html", MODEL_HTML}, {}};

static const struct argp_option time_options[] = {
	[OPTS_TIME_EVERY] = {"every", GROUP_OPT_EVERY, "SECONDS", 0,
			     "A report every SECONDS, 1 to 86400", 0},
	[OPTS_TIME_DURATION] = {"duration", 'd', "SECONDS", 0,
				"Stop after SECONDS (default: until Ctrl-C or SIGTERM)", 0},
	{},
};

static error_t parse_time(int key, char *arg, struct argp_state *state)
{
	struct time_opts *t = state->input;

	switch (key) {
	case 'd':
		if (cli_real(arg, &t->duration) || !(t->duration > 0))
			rbm_die("invalid duration: %s (expected seconds > 0)", arg);
		break;
	case GROUP_OPT_EVERY:
		if (cli_real(arg, &t->every) || !(t->every >= 1) || t->every > 86400)
			rbm_die("invalid --every: %s (expected seconds from 1 to 86400)", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp time_argp[2] = {
	GROUP_ARGP(time_options, parse_time, 0),
	GROUP_ARGP(time_options, parse_time, 1),
};

static const struct argp_option budget_options[] = {
	[OPTS_BUDGET_FULL] = {"full", GROUP_OPT_FULL, NULL, 0,
			      "Trace every allocation (exact counts, a much slower target)", 0},
	[OPTS_BUDGET_OVERHEAD] = {"max-overhead", GROUP_OPT_MAX_OVERHEAD, "PERCENT", 0,
				  "Slow the target by at most PERCENT (default 2)", 0},
	{},
};

static error_t parse_budget(int key, char *arg, struct argp_state *state)
{
	struct budget_opts *b = state->input;

	switch (key) {
	case GROUP_OPT_FULL:
		b->full = true;
		break;
	case GROUP_OPT_MAX_OVERHEAD:
		if (cli_real(arg, &b->max_overhead) || !(b->max_overhead >= 0.1) ||
		    b->max_overhead > 50)
			rbm_die("invalid --max-overhead: %s (%s)", arg,
				b->overhead_range ?: "expected a percentage from 0.1 to 50");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp budget_argp[2] = {
	GROUP_ARGP(budget_options, parse_budget, 0),
	GROUP_ARGP(budget_options, parse_budget, 1),
};

static const struct argp_option limit_options[] = {
	[OPTS_LIMIT_STACKS] = {"max-stacks", GROUP_OPT_MAX_STACKS, "N", 0,
			       "Distinct call paths kept (default 65536); more are counted as "
			       "dropped", 0},
	[OPTS_LIMIT_OBJECTS] = {"max-objects", GROUP_OPT_MAX_OBJECTS, "N", 0,
				"Live objects tracked per process (default 1048576 with one "
				"process; 65536 each with several, 262144 with --full); more are "
				"counted as untracked", 0},
	{"depth", GROUP_OPT_DEPTH, "N", 0,
	 "Ruby frames captured per allocation (default and max 128, 0: no stacks)", 0},
	{},
};

static error_t parse_limit(int key, char *arg, struct argp_state *state)
{
	struct limit_opts *l = state->input;

	switch (key) {
	case GROUP_OPT_MAX_STACKS:
		l->max_stacks = cli_number(arg, "--max-stacks", 16, 1UL << 22);
		break;
	case GROUP_OPT_MAX_OBJECTS:
		l->max_objects = cli_number(arg, "--max-objects", 1024, 1UL << 28);
		break;
	case GROUP_OPT_DEPTH:
		l->depth = cli_number(arg, "--depth", l->depth_min, MAX_STACK_DEPTH);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp limit_argp[2] = {
	GROUP_ARGP(limit_options, parse_limit, 0),
	GROUP_ARGP(limit_options, parse_limit, 1),
};

void limit_opts_finish(struct limit_opts *l, bool several, bool full)
{
	if (!l->max_objects)
		l->max_objects = cli_live_map_size(several, full);
	cli_check_max_objects(l->max_objects);
}

static const struct argp_option report_options[] = {
	[OPTS_REPORT_TREE] = {"tree", GROUP_OPT_TREE, "ORDER", OPTION_ARG_OPTIONAL,
			      "Print the retention call tree: from the outermost frame (root, the "
			      "default), or from each class and its allocating frame out to the "
			      "callers (callee: for stacks deeper than --depth)", 0},
	{"prune", GROUP_OPT_PRUNE, "N", 0,
	 "Keep the N children that retain most per tree node (default 5, 0: all)", 0},
	[OPTS_REPORT_PATHS] = {"paths", GROUP_OPT_PATHS, "N", 0,
			       "Call paths shown in text (default 10, 0: all)", 0},
	[OPTS_REPORT_TOP] = {"top", GROUP_OPT_TOP, "N", 0,
			     "Classes and sites shown in text, those that retain most first "
			     "(default 30, 0: all)", 0},
	{},
};

static error_t parse_report(int key, char *arg, struct argp_state *state)
{
	struct text_options *t = &((struct report_opts *)state->input)->text;

	switch (key) {
	case GROUP_OPT_TREE:
		t->tree = true;
		if (arg && strcmp(arg, "callee") == 0)
			t->tree_callee = true;
		else if (arg && strcmp(arg, "root") != 0)
			rbm_die("--tree=%s: the order is root or callee", arg);
		break;
	case GROUP_OPT_PRUNE:
		t->prune = cli_number(arg, "--prune", 0, 1UL << 20);
		break;
	case GROUP_OPT_PATHS:
		t->top_stacks = cli_number(arg, "--paths", 0, 1UL << 31);
		break;
	case GROUP_OPT_TOP:
		t->top = cli_number(arg, "--top", 0, 1UL << 31);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp report_argp[4] = {
	GROUP_ARGP(report_options, parse_report, 0),
	GROUP_ARGP(report_options, parse_report, 1),
	GROUP_ARGP(report_options, parse_report, 2),
	GROUP_ARGP(report_options, parse_report, 3),
};

static const struct argp_option common_options[] = {
	[OPTS_COMMON_VERBOSE] = {"verbose", 'v', NULL, 0, "Explain what is found", 0},
	[OPTS_COMMON_HELP] = {NULL, 'h', NULL, OPTION_HIDDEN, "Show the full help", 0},
	{},
};

static error_t parse_common(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	switch (key) {
	case 'v':
		rbm_verbose++;
		break;
	case 'h':
		argp_state_help(state, stderr, ARGP_HELP_STD_HELP);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp common_argp[2] = {
	GROUP_ARGP(common_options, parse_common, 0),
	GROUP_ARGP(common_options, parse_common, 1),
};
