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
#include "outfile.h"
#include "targets.h"
#include "writers.h"

static struct census_args {
	pid_t pid;
	bool json;
	const char *output;
	unsigned long top;
} args = {.top = 30};

static const char doc[] =
    "Count every live object of a running Ruby's heap by class, with bytes and how many are "
    "old, read from its memory at no cost to it.\n"
    "\n"
    "USAGE: rbmemtrace census -p PID [--format text|json] [-o FILE] [--top N]";

enum { OPT_FORMAT = 0x100, OPT_TOP };

static const struct argp_option opts[] = {
    {"pid", 'p', "PID", 0, "Ruby process whose heap to read", 0},
    {"format", OPT_FORMAT, "FORMAT", 0, "text (default) or json", 0},
    {"output", 'o', "FILE", 0, "Write the report to FILE instead of standard output", 0},
    {"top", OPT_TOP, "N", 0, "Classes shown in text (default 30, 0: all)", 0},
    {"verbose", 'v', NULL, 0, "Explain what is found", 0},
    {},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	(void) state;
	switch (key) {
	case 'p':
		args.pid = cli_number(arg, "PID", 1, INT32_MAX);
		break;
	case OPT_FORMAT:
		args.json = cli_json_format(arg);
		break;
	case 'o':
		args.output = arg;
		break;
	case OPT_TOP:
		args.top = cli_number(arg, "--top", 0, 1UL << 31);
		break;
	case 'v':
		rbm_verbose++;
		break;
	case ARGP_KEY_ARG:
		rbm_die("unexpected argument: %s (census takes -p PID)", arg);
	case ARGP_KEY_END:
		if (!args.pid)
			rbm_die("census needs -p PID (see rbmemtrace census --help)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int cmd_census(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, NULL, doc, 0, 0, 0};
	struct ruby_target target = {};
	struct report report = {};
	char err[RBM_ERR_LEN];
	struct outfile of;
	FILE *out;
	int status;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 1;
	cli_output_open(&of, args.output);
	out = outfile_stream(&of);
	if (target_memory_open(&target, target_process_of(args.pid), err, sizeof(err)) ||
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
	if (args.json)
		report_write_census_json(out, &report);
	else
		report_write_census_text(out, &report, args.top);
	status = cli_output_commit(&of);
	report_free(&report);
	return status;
}
