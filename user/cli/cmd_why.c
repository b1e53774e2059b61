// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace why -p PID: who holds the objects a process keeps.  For the
 * selected live objects (--class, --site, --from, or by default the leak
 * suspects of a short sampled trace), the paths by which Ruby's roots reach
 * them, read from outside (heap/refgraph.h, heap/retainers.h), summed over
 * objects and re-read edge by edge once found.
 */
#include <argp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "cli.h"
#include "clock.h"
#include "diag.h"
#include "option_groups.h"
#include "outfile.h"
#include "targets.h"
#include "refgraph.h"
#include "report.h"
#include "retainers.h"
#include "ruby_target.h"
#include "html.h"
#include "why_out.h"
#include "why_select.h"

enum why_format { WHY_TEXT, WHY_JSON, WHY_FOLDED, WHY_PPROF, WHY_HTML };

static const struct format_name formats[] = {
    {"text", WHY_TEXT}, {"json", WHY_JSON}, {"folded", WHY_FOLDED}, {"pprof", WHY_PPROF},
    {"html", WHY_HTML},	{}};

static const struct option_doc target_docs[] = {{'p', "Ruby process to read"}, {}};
static const struct option_doc output_docs[] = {
    {GROUP_OPT_FORMAT, "text (default), json, folded (chains, root first) or pprof (gzipped "
		       "profile.proto, the chain as the stack: go tool pprof; needs -o) or html (one "
		       "self-contained page: the paths as an icicle, the classes)"},
    {}};
static const struct option_doc time_docs[] = {
    {'d', "Trace for SECONDS to find leak suspects or --site objects (default 5)"}, {}};
static const struct option_doc common_docs[] = {{'v', "Explain what is found and read"}, {}};

static struct why_args {
	struct target_opts target;
	struct output_opts out;
	struct time_opts time;
	struct common_opts common;
	struct why_selection sel;
	unsigned long paths;
	unsigned long freeze_ms;
} args = {
    .target = {.docs = target_docs, .max_pids = 1},
    .out = {.docs = output_docs, .formats = formats,
	    .expected = "text, json, folded, pprof or html"},
    .time = {.docs = time_docs, .duration = 5},
    .common = {.docs = common_docs},
    .paths = 5,
};

static const char doc[] =
    "Show who holds the objects a running Ruby keeps: for each selected class, the paths by "
    "which Ruby's roots (constants, globals, thread locals, live frames, at_exit blocks) "
    "reach its live objects, read from the target's memory, most objects first.\n"
    "\n"
    "USAGE: rbmemtrace why -p PID [--class NAME]... [--site FILE:LINE]\n"
    "                      [--from REPORT.json] [-d SECONDS] [--paths N] [--freeze MS]\n"
    "                      [--format FORMAT] [-o FILE]\n"
    "\n"
    "With no --class, --site or --from, the classes are the leak suspects of a sampled trace "
    "of -d SECONDS (default 5).";

/* --class and --paths are why's own: a class's live objects, and retainer paths (not calls). */
enum { OPT_CLASS = 0x100, OPT_SITE, OPT_FROM, OPT_PATHS, OPT_FREEZE };

static const struct argp_option opts[] = {
    {"class", OPT_CLASS, "NAME", 0, "Explain the live objects of class NAME (repeatable)", 0},
    {"site", OPT_SITE, "FILE:LINE", 0,
     "Explain the objects allocated at FILE:LINE during a sampled trace of -d SECONDS", 0},
    {"from", OPT_FROM, "REPORT", 0,
     "Explain the leak suspects of a trace report (rbmemtrace --format json)", 0},
    {"paths", OPT_PATHS, "N", 0, "Paths shown per class (default 5, 0: all)", 0},
    {"freeze", OPT_FREEZE, "MS", 0,
     "Stop the target (every thread) for at most MS milliseconds while its heap is read, for "
     "a consistent walk; the pause is measured and reported",
     0},
    {},
};

static const struct argp_child children[] = {
    {&target_argp[OPTS_TARGET_PID], 0, "Process:", 1},
    {&time_argp[OPTS_TIME_DURATION], 0, "Duration:", 2},
    {&output_argp[OPTS_OUTPUT_FILE], 0, "Output:", 3},
    {&common_argp[OPTS_COMMON_VERBOSE], 0, NULL, 0},
    {},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		SET_CHILD_INPUTS(state, children, &args.target, &args.time, &args.out,
				 &args.common);
		break;
	case OPT_CLASS:
		if (args.sel.nclasses == WHY_MAX_CLASSES)
			rbm_die("too many --class options (at most %d)", WHY_MAX_CLASSES);
		args.sel.classes[args.sel.nclasses++] = arg;
		break;
	case OPT_SITE:
		if (why_parse_site(arg, &args.sel))
			rbm_die("invalid --site %s (expected FILE:LINE)", arg);
		break;
	case OPT_FROM:
		args.sel.from = arg;
		break;
	case OPT_PATHS:
		args.paths = cli_number(arg, "--paths", 0, 1UL << 31);
		break;
	case OPT_FREEZE:
		args.freeze_ms = cli_number(arg, "--freeze", 1, 60000);
		break;
	case ARGP_KEY_ARG:
		rbm_die("unexpected argument: %s (why takes -p PID)", arg);
	case ARGP_KEY_END:
		if (!args.target.npids)
			rbm_die("why needs -p PID (see rbmemtrace why --help)");
		if ((args.sel.nclasses > 0) + (args.sel.site_path != NULL) +
			(args.sel.from != NULL) >
		    1)
			rbm_die("give one of --class, --site and --from");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static volatile sig_atomic_t stop_requested;

/* Ctrl-C during the trace that selects ends it early; then why goes on. */
static void on_signal(int sig)
{
	stop_requested = sig;
}

static void install_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* The report in the chosen format, the file committed: the exit status. */
static int write_why(struct outfile *of, const struct why_report *report)
{
	FILE *out = outfile_stream(of);
	int ret = 0;

	if (rbm_verbose) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		rbm_info("peak RSS %ld KB", ru.ru_maxrss);
	}
	switch (args.out.format) {
	case WHY_JSON:
		why_write_json(out, report, args.paths);
		break;
	case WHY_FOLDED:
		why_write_folded(out, report);
		break;
	case WHY_PPROF:
		ret = why_write_pprof(out, report);
		break;
	case WHY_HTML:
		ret = why_write_html(out, report);
		break;
	default:
		why_write_text(out, report, args.paths);
		break;
	}
	if (ret) {
		outfile_abort(of);
		rbm_error("cannot write the %s",
			  args.out.format == WHY_HTML ? "page" : "pprof profile");
		return 1;
	}
	return cli_output_commit(of);
}

int cmd_why(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, NULL, doc, children, 0, 0};
	static struct ruby_target target;
	struct why_report report = {0};
	struct why_context ctx = {0};
	char err[RBM_ERR_LEN];
	struct outfile of;
	int ret;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 1;
	if (args.out.format == WHY_PPROF && !args.out.output && isatty(STDOUT_FILENO))
		rbm_die("pprof output is binary: give -o FILE.pb.gz");
	cli_output_open(&of, args.out.output);
	if (target_memory_open(&target, target_process_of(args.target.pids[0]), err, sizeof(err)) ||
	    why_context_open(&ctx, &target, err, sizeof(err))) {
		outfile_abort(&of);
		rbm_error("%s", err);
		return 1;
	}
	/* A sampled trace finds what to explain. */
	if (!args.sel.nclasses && !args.sel.from && cli_need_bpf_privileges()) {
		outfile_abort(&of);
		why_context_close(&ctx);
		return 1;
	}
	install_signals();
	ret = why_select(&ctx, &args.sel, args.time.duration, &stop_requested);
	/* past the trace, a signal ends rbmemtrace (a frozen target is let go first) */
	cli_signal_drops_output(&of, "rbmemtrace: why: interrupted while it walked the heap: "
				     "no report\n");
	if (!ret)
		ret = why_run(&ctx, args.freeze_ms, &report);
	if (ret) {
		outfile_abort(&of);
		rbm_error("%s", ctx.err);
		why_free(&report);
		why_context_close(&ctx);
		return 1;
	}
	why_finish(&report);
	ret = write_why(&of, &report);
	why_free(&report);
	why_context_close(&ctx);
	return ret;
}
