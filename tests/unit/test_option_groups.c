// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/cli/option_groups.c: the shared options, parsed through a subcommand's argp children. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "option_groups.h"

/* A subcommand that takes every group, each whole, with its structs. */
static struct target_opts target;
static struct output_opts out;
static struct time_opts time_;
static struct budget_opts budget;
static struct limit_opts limits;
static struct report_opts report;
static struct common_opts common;

static const struct argp_child children[] = {
	{&target_argp[OPTS_TARGET_ALL], 0, "Processes:", 1},
	{&output_argp[OPTS_OUTPUT_FILE], 0, "Output:", 2},
	{&time_argp[OPTS_TIME_EVERY], 0, "Duration:", 3},
	{&budget_argp[OPTS_BUDGET_FULL], 0, "Cost to the target:", 4},
	{&limit_argp[OPTS_LIMIT_STACKS], 0, "Limits:", 5},
	{&report_argp[OPTS_REPORT_TREE], 0, "Text report:", 6},
	{&common_argp[OPTS_COMMON_VERBOSE], 0, NULL, 0},
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	if (key != ARGP_KEY_INIT)
		return ARGP_ERR_UNKNOWN;
	SET_CHILD_INPUTS(state, children, &target, &out, &time_, &budget, &limits, &report, &common);
	return 0;
}

static const struct argp argp = {NULL, parse_arg, NULL, NULL, children, NULL, NULL};

static void setup(void)
{
	target = (struct target_opts){.max_pids = 3, .too_many = "too many -p (at most %d)"};
	out = (struct output_opts){.formats = formats_model, .expected = "text, json, pprof or folded"};
	time_ = (struct time_opts){0};
	budget = (struct budget_opts){0};
	limits = (struct limit_opts){.depth = 128, .max_stacks = 65536};
	report = (struct report_opts){.text = {.top = 30, .top_stacks = 10, .prune = 5}};
	common = (struct common_opts){0};
}

static void parse(int argc, char **argv)
{
	cr_assert_eq(argp_parse(&argp, argc, argv, ARGP_NO_EXIT, NULL, NULL), 0);
}

Test(option_groups, each_group_fills_its_struct, .init = setup)
{
	char *argv[] = {"t",	 "-p",	    "11",	    "-p",	"12",	    "--match",
			"puma",	 "-o",	    "r.pb.gz",	    "--format", "pprof",    "-d",
			"2.5",	 "--every", "1",	    "--full",	"--depth",  "0",
			"--max-objects", "2048", "--max-stacks", "16",	"--tree=callee",
			"--prune", "0",	    "--paths",	    "3",	"--top",    "7"};

	parse(sizeof(argv) / sizeof(argv[0]), argv);
	cr_expect_eq(target.npids, 2);
	cr_expect_eq(target.pids[0], 11);
	cr_expect_eq(target.pids[1], 12);
	cr_expect_str_eq(target.match, "puma");
	cr_expect(!target.all);
	cr_expect_str_eq(out.output, "r.pb.gz");
	cr_expect_eq(out.format, MODEL_PPROF);
	cr_expect_eq(time_.duration, 2.5);
	cr_expect_eq(time_.every, 1);
	cr_expect(budget.full);
	cr_expect_eq(limits.depth, 0);
	cr_expect_eq(limits.max_objects, 2048);
	cr_expect_eq(limits.max_stacks, 16);
	cr_expect(report.text.tree && report.text.tree_callee);
	cr_expect_eq(report.text.prune, 0);
	cr_expect_eq(report.text.top_stacks, 3);
	cr_expect_eq(report.text.top, 7);
}

Test(option_groups, defaults_stay_when_not_given, .init = setup)
{
	char *argv[] = {"t", "--all", "--tree"};

	parse(3, argv);
	cr_expect(target.all);
	cr_expect_eq(target.npids, 0);
	cr_expect_eq(out.format, MODEL_TEXT);
	cr_expect_null(out.output);
	cr_expect_eq(limits.depth, 128);
	cr_expect_eq(limits.max_objects, 0, "0: by the number of processes, at the end");
	cr_expect(report.text.tree && !report.text.tree_callee);
	cr_expect_eq(report.text.top, 30);
}

Test(option_groups, one_pid_the_last_wins, .init = setup)
{
	char *argv[] = {"t", "-p", "5", "-p", "6"};

	target.max_pids = 1;
	parse(5, argv);
	cr_expect_eq(target.npids, 1);
	cr_expect_eq(target.pids[0], 6);
}

Test(option_groups, max_objects_by_processes, .init = setup)
{
	limit_opts_finish(&limits, false, false);
	cr_expect_eq(limits.max_objects, 1UL << 20);
	limits.max_objects = 0;
	limit_opts_finish(&limits, true, false);
	cr_expect_eq(limits.max_objects, 1UL << 16);
	limits.max_objects = 0;
	limit_opts_finish(&limits, true, true);
	cr_expect_eq(limits.max_objects, 1UL << 18);
	limits.max_objects = 4096;
	limit_opts_finish(&limits, true, true);
	cr_expect_eq(limits.max_objects, 4096, "given: kept");
}

Test(option_groups, too_many_pids_exit_1, .init = setup, .exit_code = 1)
{
	char *argv[] = {"t", "-p", "1", "-p", "2", "-p", "3", "-p", "4"};

	parse(9, argv);
}

Test(option_groups, unknown_format_exit_1, .init = setup, .exit_code = 1)
{
	char *argv[] = {"t", "--format", "xml"};

	out.formats = formats_text_json;
	parse(3, argv);
}

Test(option_groups, depth_below_min_exit_1, .init = setup, .exit_code = 1)
{
	char *argv[] = {"t", "--depth", "0"};

	limits.depth_min = 1;
	parse(3, argv);
}

/* The help argp prints for --help, read back from standard output. */
static char *help_text(void)
{
	char *argv[] = {"t", "--help"};
	FILE *tmp = tmpfile();
	int saved = dup(STDOUT_FILENO);
	static char text[16384];
	size_t n;

	cr_assert(tmp && saved >= 0);
	fflush(stdout);
	dup2(fileno(tmp), STDOUT_FILENO);
	argp_parse(&argp, 2, argv, ARGP_NO_EXIT, NULL, NULL);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(text, 1, sizeof(text) - 1, tmp);
	text[n] = 0;
	fclose(tmp);
	return text;
}

Test(option_groups, help_worded_for_the_subcommand, .init = setup)
{
	static const struct option_doc docs[] = {{'p', "Ruby process to watch"},
						 {GROUP_OPT_MATCH, "Those matching REGEX"}, {}};
	char *help;

	target.docs = docs;
	help = help_text();
	cr_expect(strstr(help, "Ruby process to watch") != NULL, "%s", help);
	cr_expect(strstr(help, "Those matching REGEX") != NULL, "%s", help);
	cr_expect(strstr(help, "Every Ruby process on the host") != NULL, "--all keeps its own: %s",
		  help);
	cr_expect(strstr(help, " Limits:") != NULL, "the groups' headers: %s", help);
	cr_expect(strstr(help, "65536 each with several, 262144") != NULL, "--max-objects' defaults: %s", help);
}
