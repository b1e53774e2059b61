// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace [trace]: attach to a live Ruby (-p PID) or start one
 * (-- COMMAND), trace allocations and frees, and print a retention report.
 */
#include <argp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include "cli.h"
#include "diag.h"
#include "outfile.h"
#include "targets.h"
#include "rbmemtrace.h"
#include "session.h"
#include "trace_every.h"
#include "trace_many.h"
#include "trace_one.h"
#include "writers.h"

enum output_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_FOLDED, FORMAT_PPROF };

static struct trace_args {
	struct trace_options trace;
	enum output_format format;
	const char *output;
	unsigned long top;
	unsigned long paths;
	unsigned long prune;
	bool tree;
	bool tree_callee;
	bool max_objects_given;
	bool no_why; /* --no-why: the suspects without their retainer paths */
	/* several processes (trace_many.c) */
	pid_t pids[MANY_MAX];
	size_t npids;
	bool all;
	const char *match;
	/* continuous (trace_every.c) */
	double every;
	unsigned long keep;
} args = {
	.trace = {.max_objects = 1 << 20, .depth = 128, .max_stacks = 65536, .start_timeout = 30},
	.top = 30,
	.paths = 10,
	.prune = 5,
};

const char *argp_program_version = "rbmemtrace " RBMEMTRACE_VERSION;
const char *argp_program_bug_address = "the rbmemtrace issue tracker";
static const char doc[] =
	"Trace Ruby object allocations and frees in a live process and report, per class, "
	"how many objects were allocated, freed and are still retained.\n"
	"\n"
	"USAGE: rbmemtrace [trace] -p PID [-d SECONDS] [--format text|json] [-o FILE]\n"
	"       rbmemtrace [trace] -p PID -p PID ... | --all | --match REGEX [OPTIONS]\n"
	"       rbmemtrace [trace] [OPTIONS] -- COMMAND [ARGS...]\n"
	"       rbmemtrace [trace] -p PID|--all|--match REGEX --every SECONDS -o PATTERN [--keep N]\n"
	"       rbmemtrace census|top|merge|fleet ...   (rbmemtrace --help lists them)\n"
	"\n"
	"EXAMPLES:\n"
	"    rbmemtrace -p 1234              # trace until Ctrl-C, then report\n"
	"    rbmemtrace -p 1234 -d 30 --format json -o leak.json\n"
	"    rbmemtrace -- ruby app.rb       # trace a program from its first Ruby instruction\n"
	"    rbmemtrace -p 1234 --every 30 --format pprof -o 'heap-%{pid}-%{time}.pb.gz' --keep 48";

enum {
	OPT_FORMAT = 0x100,
	OPT_MAX_OBJECTS,
	OPT_TOP,
	OPT_DEPTH,
	OPT_MAX_STACKS,
	OPT_CLASS,
	OPT_TREE,
	OPT_PRUNE,
	OPT_PATHS,
	OPT_EMPTY_PROBES,
	OPT_FULL,
	OPT_MAX_OVERHEAD,
	OPT_ALL,
	OPT_MATCH,
	OPT_EVERY,
	OPT_KEEP,
	OPT_NO_WHY,
	OPT_START_TIMEOUT,
};

static const struct argp_option opts[] = {
	{"pid", 'p', "PID", 0, "Ruby process to trace (repeat for several)", 0},
	{"all", OPT_ALL, NULL, 0,
	 "Trace every Ruby process on the host (and those that start during the run)", 0},
	{"match", OPT_MATCH, "REGEX", 0,
	 "Trace every Ruby process whose command line matches REGEX (and those that start)", 0},
	{"duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: until Ctrl-C or SIGTERM)", 0},
	{"format", OPT_FORMAT, "FORMAT", 0,
	 "Report format: text (default), json, folded (flame graph input, by retained), or pprof "
	 "(gzipped profile.proto: go tool pprof; needs -o)", 0},
	{"output", 'o', "FILE", 0,
	 "Write the report to FILE instead of standard output; with --every, a PATTERN: "
	 "%{pid}, %{time} (ISO 8601, UTC) and %{host} are expanded, %% is a %", 0},
	{"every", OPT_EVERY, "SECONDS", 0,
	 "Run until stopped and every SECONDS (1 to 86400) write a report of that moment per "
	 "process: in use as a heap census counts it, and what the period allocated", 0},
	{"keep", OPT_KEEP, "N", 0,
	 "With --every: keep the newest N files of each process, removing the oldest it wrote "
	 "(PATTERN needs %{time})", 0},
	{"max-objects", OPT_MAX_OBJECTS, "N",
	 0, "Track at most N live objects (default 1048576); more are counted as untracked", 0},
	{"top", OPT_TOP, "N", 0, "Show the N classes that retain most in text (default 30, 0: all)", 0},
	{"depth", OPT_DEPTH, "N", 0, "Ruby frames captured per allocation (default and max 128, 0: no stacks)", 0},
	{"max-stacks", OPT_MAX_STACKS, "N", 0, "Distinct call paths kept (default 65536); more are counted as dropped", 0},
	{"class", OPT_CLASS, "NAME", 0, "Capture stacks for and report only class NAME (repeatable)", 0},
	{"tree", OPT_TREE, "ORDER", OPTION_ARG_OPTIONAL,
	 "Print the retention call tree: from the outermost frame (root, the default), or from each "
	 "class and its allocating frame out to the callers (callee: for stacks deeper than --depth)",
	 0},
	{"prune", OPT_PRUNE, "N", 0, "Keep the N children that retain most per tree node (default 5, 0: all)", 0},
	{"paths", OPT_PATHS, "N", 0, "Call paths shown in text (default 10, 0: all)", 0},
	{"max-overhead", OPT_MAX_OVERHEAD, "PERCENT", 0,
	 "Slow the target by at most PERCENT: trace allocations in short windows placed at "
	 "random in the allocation stream and scale the counts (default 2 with -p; -- COMMAND "
	 "traces everything)", 0},
	{"full", OPT_FULL, NULL, 0, "Trace every allocation, for exact counts (the default with --)",
	 0},
	{"start-timeout", OPT_START_TIMEOUT, "SECONDS", 0,
	 "With -- COMMAND that is not Ruby itself (env, a script, bundle exec): how long it may take "
	 "to exec a Ruby before it is killed (default 30)",
	 0},
	{"no-why", OPT_NO_WHY, NULL, 0,
	 "Do not read the leak suspects' top retainer paths from the target when the trace ends "
	 "(rbmemtrace why)",
	 0},
	{"verbose", 'v', NULL, 0, "Explain what is found and attached", 0},
	{"empty-probes", OPT_EMPTY_PROBES, "uprobe|uretprobe", 0,
	 "Benchmark baseline: attach empty programs at the allocation functions, trace nothing", 0},
	{NULL, 'h', NULL, OPTION_HIDDEN, "Show the full help", 0},
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	struct trace_options *t = &args.trace;

	switch (key) {
	case 'p':
		t->pid = cli_number(arg, "PID", 1, INT32_MAX);
		if (args.npids == MANY_MAX)
			rbm_die("too many -p (at most %d)", MANY_MAX);
		args.pids[args.npids++] = t->pid;
		break;
	case OPT_ALL:
		args.all = true;
		break;
	case OPT_MATCH:
		args.match = arg;
		break;
	case 'd':
		if (cli_real(arg, &t->duration) || !(t->duration > 0))
			rbm_die("invalid duration: %s (expected seconds > 0)", arg);
		break;
	case OPT_FORMAT:
		if (strcmp(arg, "text") == 0)
			args.format = FORMAT_TEXT;
		else if (strcmp(arg, "json") == 0)
			args.format = FORMAT_JSON;
		else if (strcmp(arg, "folded") == 0)
			args.format = FORMAT_FOLDED;
		else if (strcmp(arg, "pprof") == 0)
			args.format = FORMAT_PPROF;
		else
			rbm_die("invalid format: %s (expected text, json, folded or pprof)", arg);
		break;
	case 'o':
		args.output = arg;
		break;
	case OPT_EVERY:
		if (cli_real(arg, &args.every) || !(args.every >= 1) || args.every > 86400)
			rbm_die("invalid --every: %s (expected seconds from 1 to 86400)", arg);
		break;
	case OPT_KEEP:
		args.keep = cli_number(arg, "--keep", 1, 1UL << 20);
		break;
	case OPT_MAX_OBJECTS:
		t->max_objects = cli_number(arg, "--max-objects", 1024, 1UL << 28);
		args.max_objects_given = true;
		break;
	case OPT_TOP:
		args.top = cli_number(arg, "--top", 0, 1UL << 31);
		break;
	case OPT_DEPTH:
		t->depth = cli_number(arg, "--depth", 0, MAX_STACK_DEPTH);
		break;
	case OPT_MAX_STACKS:
		t->max_stacks = cli_number(arg, "--max-stacks", 16, 1UL << 22);
		break;
	case OPT_CLASS:
		if (t->nclasses == MAX_CLASS_FILTERS)
			rbm_die("too many --class options (at most %d)", MAX_CLASS_FILTERS);
		t->classes[t->nclasses++] = arg;
		break;
	case OPT_TREE:
		args.tree = true;
		if (arg && strcmp(arg, "callee") == 0)
			args.tree_callee = true;
		else if (arg && strcmp(arg, "root") != 0)
			rbm_die("--tree=%s: the order is root or callee", arg);
		break;
	case OPT_PRUNE:
		args.prune = cli_number(arg, "--prune", 0, 1UL << 20);
		break;
	case OPT_PATHS:
		args.paths = cli_number(arg, "--paths", 0, 1UL << 31);
		break;
	case 'v':
		rbm_verbose++;
		break;
	case OPT_FULL:
		t->full = true;
		break;
	case OPT_NO_WHY:
		args.no_why = true;
		break;
	case OPT_MAX_OVERHEAD:
		if (cli_real(arg, &t->max_overhead) || !(t->max_overhead >= 0.1) ||
		    t->max_overhead > 50)
			rbm_die("invalid --max-overhead: %s (expected a percentage from 0.1 to 50)",
				arg);
		break;
	case OPT_START_TIMEOUT:
		if (cli_real(arg, &t->start_timeout) || !(t->start_timeout > 0) ||
		    t->start_timeout > 86400)
			rbm_die("invalid --start-timeout: %s (expected seconds, more than 0)", arg);
		break;
	case OPT_EMPTY_PROBES:
		if (strcmp(arg, "uprobe") == 0)
			t->empty_probes = ALLOC_PROBE_EMPTY_UPROBE;
		else if (strcmp(arg, "uretprobe") == 0)
			t->empty_probes = ALLOC_PROBE_EMPTY_URETPROBE;
		else
			rbm_die("invalid --empty-probes: %s (expected uprobe or uretprobe)", arg);
		break;
	case 'h':
		argp_state_help(state, stderr, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARGS:
		t->command = state->argv + state->next;
		break;
	case ARGP_KEY_END:
		if (!t->pid && !t->command && !args.all && !args.match)
			rbm_die("nothing to trace: give -p PID, --all, --match REGEX or -- COMMAND "
				"(see --help)");
		if ((t->pid || args.all || args.match) && t->command)
			rbm_die("give either processes to attach to or -- COMMAND, not both");
		if (args.all && args.match)
			rbm_die("give either --all or --match, not both");
		if ((args.npids > 1 || args.all || args.match) && t->empty_probes)
			rbm_die("--empty-probes takes one -p PID");
		if (args.keep && !args.every)
			rbm_die("--keep counts the files of --every: give --every SECONDS");
		if (args.every && t->command)
			rbm_die("--every traces running processes until stopped: give -p PID, --all "
				"or --match REGEX, not -- COMMAND");
		if (args.every && !args.output)
			rbm_die("--every writes a file per process per period: give -o PATTERN");
		if (args.every && t->empty_probes)
			rbm_die("--every and --empty-probes do not go together");
		if (args.every && t->duration && t->duration < args.every)
			rbm_die("-d %g is shorter than --every %g: no period would end", t->duration,
				args.every);
		if (!args.max_objects_given)
			t->max_objects =
			    cli_live_map_size(args.npids > 1 || args.all || args.match, t->full);
		if (t->full && t->max_overhead)
			rbm_die("give either --full or --max-overhead, not both");
		if (!t->depth && (args.tree || args.format == FORMAT_FOLDED))
			rbm_warn("--depth 0 records no call paths: %s will be empty",
				 args.tree ? "the tree" : "the folded output");
		cli_check_max_objects(t->max_objects);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static volatile sig_atomic_t stop_requested;
static volatile pid_t launched_child; /* launch mode: where SIGTERM goes on to */
static volatile sig_atomic_t forwarded;

/*
 * In launch mode a signal another process sent (kill, a supervisor) goes on
 * to the command, as timeout(1) does, and the trace runs to the command's
 * end; a second one stops the trace.  Ctrl-C from the terminal already
 * reached the command's process group and stops the trace at once.
 */
static void on_signal(int sig, siginfo_t *info, void *ctx)
{
	(void)ctx;
	if (launched_child > 0 && !forwarded && info->si_code <= 0) {
		forwarded = sig;
		kill(launched_child, sig);
		return;
	}
	stop_requested = sig;
}

/* --class NAME that names no class of the report is most likely a typo: say so. */
static void warn_unmatched_classes(const struct report *r)
{
	size_t i;
	int c;

	for (c = 0; c < args.trace.nclasses; c++) {
		for (i = 0; i < r->nrows; i++)
			if (strcmp(r->rows[i].name, args.trace.classes[c]) == 0)
				break;
		if (i == r->nrows)
			rbm_warn("--class %s matched no class the target allocated or holds",
				 args.trace.classes[c]);
	}
}

/* 0, or -errno when the pprof profile could not be made. */
static int write_report(FILE *out, struct report *r)
{
	struct text_options topts = {.top = args.top, .top_stacks = args.paths,
				     .tree = args.tree, .tree_callee = args.tree_callee, .prune = args.prune};

	if (args.format == FORMAT_PPROF) {
		struct report *one = r;
		struct model m = {.procs = &one, .nprocs = 1, .cap = 1};
		struct model_view v = {.model = &m, .summary = r};

		return model_write_pprof(out, &v) ? -EIO : 0;
	} else if (args.format == FORMAT_JSON)
		report_write_json(out, r);
	else if (args.format == FORMAT_FOLDED)
		report_write_folded(out, r);
	else
		report_write_text(out, r, &topts);
	return 0;
}

static void install_signals(void)
{
	struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int trace_several(void)
{
	static struct many_options mo;
	static struct many_output out;
	static struct every_options eo;
	static const int formats[] = {[FORMAT_TEXT] = MODEL_TEXT, [FORMAT_JSON] = MODEL_JSON,
				      [FORMAT_FOLDED] = MODEL_FOLDED, [FORMAT_PPROF] = MODEL_PPROF};

	mo.trace = args.trace;
	memcpy(mo.pids, args.pids, sizeof(mo.pids));
	mo.npids = args.npids;
	mo.all = args.all;
	mo.match = args.match;
	out.format = formats[args.format];
	out.output = args.output;
	out.text = (struct text_options){.top = args.top, .top_stacks = args.paths,
					.tree = args.tree, .tree_callee = args.tree_callee, .prune = args.prune};
	if (args.every) {
		eo = (struct every_options){
		    .every = args.every, .keep = args.keep, .pattern = args.output};
		out.output = NULL;
		trace_every_check(&mo, &eo);
		install_signals();
		return trace_every(&mo, &out, &eo, &stop_requested);
	}
	install_signals();
	return trace_many(&mo, &out, &stop_requested);
}

int cmd_trace(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, "[-- COMMAND [ARGS...]]", doc, 0, 0, 0};
	struct session s;
	struct report report = {};
	struct outfile out;
	char err[RBM_ERR_LEN];
	int status;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 1;
	cli_check_bpf_privileges();
	if (args.npids > 1 || args.all || args.match || args.every)
		return trace_several();
	if (args.format == FORMAT_PPROF && !args.output && isatty(STDOUT_FILENO))
		rbm_die("pprof output is binary: give -o FILE.pb.gz");
	if (args.trace.pid)
		args.trace.pid = target_process_of(args.trace.pid);
	cli_output_open(&out, args.output);
	install_signals();

	if (trace_one_open(&s, &args.trace, err, sizeof(err))) {
		outfile_abort(&out);
		rbm_error("%s", err);
		return 1;
	}
	if (args.trace.empty_probes) {
		/* Its probes are off when it returns; an error leaves the session to close. */
		status = trace_one_empty_probes(&s, &stop_requested, err, sizeof(err));
		if (status < 0) {
			rbm_error("%s", err);
			trace_one_close(&s);
		}
		outfile_abort(&out);
		return status < 0 ? 1 : status;
	}
	if (s.launched)
		launched_child = s.target.pid;
	/* Closing the session on an error kills a launched command still held. */
	if (trace_one_run(&s, &stop_requested, err, sizeof(err)))
		goto fail;
	if (forwarded)
		fprintf(stderr, "rbmemtrace: passed signal %d on to PID %d\n", forwarded,
			s.target.pid);
	if (trace_one_report(&s, !args.no_why, &report, err, sizeof(err)))
		goto fail;
	warn_unmatched_classes(&report);
	if (write_report(outfile_stream(&out), &report)) {
		snprintf(err, sizeof(err), "cannot write the pprof profile");
		goto fail;
	}
	status = cli_output_commit(&out) ?: trace_one_exit_status(&s);
	report_free(&report);
	trace_one_close(&s);
	return status;
fail:
	outfile_abort(&out);
	rbm_error("%s", err);
	report_free(&report);
	trace_one_close(&s);
	return 1;
}
