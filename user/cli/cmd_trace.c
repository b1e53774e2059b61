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
#include <sys/resource.h>
#include <unistd.h>
#include <linux/types.h>
#include "cli.h"
#include "diag.h"
#include "option_groups.h"
#include "outfile.h"
#include "targets.h"
#include "rbmemtrace.h"
#include "session.h"
#include "trace_every.h"
#include "trace_many.h"
#include "trace_one.h"
#include "html.h"
#include "speedscope.h"
#include "writers.h"

_Static_assert(TARGET_MAX_PIDS == MANY_MAX, "the -p of a run are a many_options' pids");

enum output_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_FOLDED, FORMAT_PPROF, FORMAT_SPEEDSCOPE, FORMAT_HTML };

static const struct format_name formats[] = {{"text", FORMAT_TEXT},
					     {"json", FORMAT_JSON},
					     {"folded", FORMAT_FOLDED},
					     {"pprof", FORMAT_PPROF},
					     {"speedscope", FORMAT_SPEEDSCOPE},
					     {"html", FORMAT_HTML},
					     {}};

static const struct option_doc target_docs[] = {
	{'p', "Ruby process to trace (repeat for several)"},
	{GROUP_OPT_ALL, "Trace every Ruby process on the host (and those that start during the run)"},
	{GROUP_OPT_MATCH,
	 "Trace every Ruby process whose command line matches REGEX (and those that start)"},
	{}};
static const struct option_doc output_docs[] = {
	{GROUP_OPT_FORMAT,
	 "Report format: text (default), json, folded (flame graph input, by retained), pprof "
	 "(gzipped profile.proto: go tool pprof; needs -o), speedscope (its JSON: retained objects "
	 "and bytes) or html (one self-contained page: verdict, icicle, classes)"},
	{'o', "Write the report to FILE instead of standard output; with --every, a PATTERN: "
	      "%{pid}, %{time} (ISO 8601, UTC) and %{host} are expanded, %% is a %"},
	{}};
static const struct option_doc time_docs[] = {
	{GROUP_OPT_EVERY,
	 "Run until stopped and every SECONDS (1 to 86400) write a report of that moment per "
	 "process: in use as a heap census counts it, and what the period allocated"},
	{}};
static const struct option_doc budget_docs[] = {
	{GROUP_OPT_MAX_OVERHEAD,
	 "Slow the target by at most PERCENT: trace allocations in short windows placed at "
	 "random in the allocation stream and scale the counts (default 2 with -p; -- COMMAND "
	 "traces everything)"},
	{GROUP_OPT_FULL, "Trace every allocation, for exact counts (the default with --)"},
	{}};
static const struct option_doc common_docs[] = {{'v', "Explain what is found and attached"}, {}};

static struct trace_args {
	struct trace_options trace; /* the session's: the groups' values, at the end */
	struct target_opts target;
	struct output_opts out;
	struct time_opts time;
	struct budget_opts budget;
	struct limit_opts limits;
	struct report_opts report;
	struct common_opts common;
	bool no_why;	    /* --no-why: the suspects without their retainer paths */
	bool no_watch;	    /* --no-watch: no watch within the trace */
	unsigned long keep; /* --every's newest files kept per process */
} args = {
	.trace = {.start_timeout = 30},
	.target = {.docs = target_docs, .max_pids = TARGET_MAX_PIDS,
		   .too_many = "too many -p (at most %d)"},
	.out = {.docs = output_docs, .formats = formats,
		.expected = "text, json, folded, pprof, speedscope or html"},
	.time = {.docs = time_docs},
	.budget = {.docs = budget_docs},
	.limits = {.depth = 128, .max_stacks = 65536},
	.report = {.text = {.top = 30, .top_stacks = 10, .prune = 5}},
	.common = {.docs = common_docs},
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
	"       rbmemtrace [trace] -p PID|--all|--match REGEX --every SECONDS\n"
	"                          -o PATTERN [--keep N] [OPTIONS]\n"
	"       rbmemtrace SUBCOMMAND ...   (rbmemtrace --help lists them)\n"
	"\n"
	"EXAMPLES:\n"
	"    rbmemtrace -p 1234              # trace until Ctrl-C, then report\n"
	"    rbmemtrace -p 1234 -d 30 --format json -o leak.json\n"
	"    rbmemtrace -- ruby app.rb       # trace a program from its first line\n"
	"    rbmemtrace -p 1234 --every 30 --keep 48 --format pprof \\\n"
	"        -o 'heap-%{pid}-%{time}.pb.gz'";

enum {
	OPT_CLASS = 0x100,
	OPT_EMPTY_PROBES,
	OPT_KEEP,
	OPT_NO_WHY,
	OPT_START_TIMEOUT,
	OPT_WATCH,
	OPT_NO_WATCH,
};

static const struct argp_option opts[] = {
	{"keep", OPT_KEEP, "N", 0,
	 "With --every: keep the newest N files of each process, removing the oldest it wrote "
	 "(PATTERN needs %{time})", 0},
	{"class", OPT_CLASS, "NAME", 0, "Capture stacks for and report only class NAME (repeatable)", 0},
	{"start-timeout", OPT_START_TIMEOUT, "SECONDS", 0,
	 "With -- COMMAND that is not Ruby itself (env, a script, bundle exec): how long it may take "
	 "to exec a Ruby before it is killed (default 30)",
	 0},
	{"no-why", OPT_NO_WHY, NULL, 0,
	 "Do not walk the target's heap: no leak verdict (a walk at the start and one at the end), "
	 "no top retainer paths for the leak suspects (rbmemtrace why); implied by --format folded "
	 "and speedscope",
	 0},
	{"watch", OPT_WATCH, "SECONDS", 0,
	 "Watch the leak verdict's containers after the trace, for SECONDS, instead of within it "
	 "(-p with one process watches them by default from half the duration, 10 s at most, to "
	 "the end: the lines that add their entries, exact for that time)",
	 0},
	{"no-watch", OPT_NO_WATCH, NULL, 0,
	 "Do not watch the leak verdict's containers (no walk at half the duration to name them)",
	 0},
	{"empty-probes", OPT_EMPTY_PROBES, "uprobe|uretprobe", 0,
	 "Benchmark baseline: attach empty programs at the allocation functions, trace nothing", 0},
	{},
};

static const struct argp_child children[] = {
	{&target_argp[OPTS_TARGET_ALL], 0, "Processes:", 1},
	{&time_argp[OPTS_TIME_EVERY], 0, "Duration:", 2},
	{&output_argp[OPTS_OUTPUT_FILE], 0, "Output:", 3},
	{&report_argp[OPTS_REPORT_TREE], 0, "Text report:", 4},
	{&budget_argp[OPTS_BUDGET_FULL], 0, "Cost to the target:", 5},
	{&limit_argp[OPTS_LIMIT_STACKS], 0, "Limits:", 6},
	{&common_argp[OPTS_COMMON_VERBOSE], 0, NULL, 0},
	{},
};

/* What the session takes from the groups. */
static void fill_trace_options(struct trace_options *t)
{
	if (args.target.npids)
		t->pid = args.target.pids[args.target.npids - 1];
	t->duration = args.time.duration;
	t->full = args.budget.full;
	t->max_overhead = args.budget.max_overhead;
	t->depth = args.limits.depth;
	t->max_stacks = args.limits.max_stacks;
}

/* The options that conflict, or need another; dies with a one-line error. */
static void check_combinations(const struct trace_options *t)
{
	bool several = args.target.npids > 1 || args.target.all || args.target.match;
	double every = args.time.every;

	if (!t->pid && !t->command && !args.target.all && !args.target.match)
		rbm_die("nothing to trace: give -p PID, --all, --match REGEX or -- COMMAND "
			"(see --help)");
	if ((t->pid || args.target.all || args.target.match) && t->command)
		rbm_die("give either processes to attach to or -- COMMAND, not both");
	if (args.target.all && args.target.match)
		rbm_die("give either --all or --match, not both");
	if (several && t->empty_probes)
		rbm_die("--empty-probes takes one -p PID");
	if (args.keep && !every)
		rbm_die("--keep counts the files of --every: give --every SECONDS");
	if (every && t->command)
		rbm_die("--every traces running processes until stopped: give -p PID, --all "
			"or --match REGEX, not -- COMMAND");
	if (every && !args.out.output)
		rbm_die("--every writes a file per process per period: give -o PATTERN");
	if (every && t->empty_probes)
		rbm_die("--every and --empty-probes do not go together");
	if (every && t->duration && t->duration < every)
		rbm_die("-d %g is shorter than --every %g: no period would end", t->duration, every);
	if (t->full && t->max_overhead)
		rbm_die("give either --full or --max-overhead, not both");
	if (t->watch_seconds &&
	    (several || every || t->command || t->no_verdict || args.out.format == FORMAT_FOLDED ||
	     args.out.format == FORMAT_SPEEDSCOPE))
		rbm_die("--watch watches the leak verdict's containers of one -p PID: not with %s",
			several		   ? "several processes"
			: every		   ? "--every"
			: t->command	   ? "-- COMMAND"
			: t->no_verdict	   ? "--no-why"
					   : "--format folded or speedscope");
}

/* --watch SECONDS: more than 0, at most an hour. */
static double watch_seconds(const char *arg)
{
	double v;

	if (cli_real(arg, &v) || !(v > 0) || v > 3600)
		rbm_die("invalid --watch: %s (expected seconds, more than 0, at most 3600)", arg);
	return v;
}

/* Once every option is read: the options filled, checked, and what follows from them. */
static void finish_options(struct trace_options *t)
{
	fill_trace_options(t);
	check_combinations(t);
	/* Folded stacks have no place for a verdict or a path: no heap walk for them. */
	if (args.out.format == FORMAT_FOLDED || args.out.format == FORMAT_SPEEDSCOPE) {
		args.no_why = true;
		t->no_verdict = true;
	}
	/* One -p's verdict: its growing containers watched as the trace goes on. */
	t->watch_in_run = t->pid && !t->command && args.target.npids <= 1 && !args.target.all &&
			  !args.target.match && !args.time.every && !t->no_verdict &&
			  !t->watch_seconds && !args.no_watch && !t->empty_probes;
	/* --every: each period's containers through the next period */
	t->watch_periods = args.time.every && !t->command && !t->no_verdict && !args.no_watch &&
			   !t->empty_probes;
	if (!t->depth && (args.report.text.tree || args.out.format == FORMAT_FOLDED))
		rbm_warn("--depth 0 records no call paths: %s will be empty",
			 args.report.text.tree ? "the tree" : "the folded output");
	limit_opts_finish(&args.limits,
			  args.target.npids > 1 || args.target.all || args.target.match, t->full);
	t->max_objects = args.limits.max_objects;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	struct trace_options *t = &args.trace;

	switch (key) {
	case ARGP_KEY_INIT:
		SET_CHILD_INPUTS(state, children, &args.target, &args.time, &args.out,
				 &args.report, &args.budget, &args.limits, &args.common);
		break;
	case OPT_KEEP:
		args.keep = cli_number(arg, "--keep", 1, 1UL << 20);
		break;
	case OPT_CLASS:
		if (t->nclasses == MAX_CLASS_FILTERS)
			rbm_die("too many --class options (at most %d)", MAX_CLASS_FILTERS);
		t->classes[t->nclasses++] = arg;
		break;
	case OPT_NO_WHY:
		args.no_why = true;
		t->no_verdict = true;
		break;
	case OPT_WATCH:
		t->watch_seconds = watch_seconds(arg);
		break;
	case OPT_NO_WATCH:
		args.no_watch = true;
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
	case ARGP_KEY_ARGS:
		t->command = state->argv + state->next;
		break;
	case ARGP_KEY_END:
		finish_options(t);
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
	if (args.out.format == FORMAT_PPROF) {
		struct report *one = r;
		struct model m = {.procs = &one, .nprocs = 1, .cap = 1};
		struct model_view v = {.model = &m, .summary = r};

		return model_write_pprof(out, &v) ? -EIO : 0;
	} else if (args.out.format == FORMAT_JSON)
		report_write_json(out, r);
	else if (args.out.format == FORMAT_FOLDED)
		report_write_folded(out, r);
	else if (args.out.format == FORMAT_SPEEDSCOPE)
		return report_write_speedscope(out, r);
	else if (args.out.format == FORMAT_HTML)
		return report_write_html(out, r);
	else
		report_write_text(out, r, &args.report.text);
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
	static const int model_formats[] = {[FORMAT_TEXT] = MODEL_TEXT, [FORMAT_JSON] = MODEL_JSON,
				      [FORMAT_FOLDED] = MODEL_FOLDED, [FORMAT_PPROF] = MODEL_PPROF,
				      [FORMAT_SPEEDSCOPE] = MODEL_SPEEDSCOPE, [FORMAT_HTML] = MODEL_HTML};

	mo.trace = args.trace;
	memcpy(mo.pids, args.target.pids, sizeof(mo.pids));
	mo.npids = args.target.npids;
	mo.all = args.target.all;
	mo.match = args.target.match;
	out.format = model_formats[args.out.format];
	out.output = args.out.output;
	out.text = args.report.text;
	if (args.time.every) {
		eo = (struct every_options){
		    .every = args.time.every, .keep = args.keep, .pattern = args.out.output};
		out.output = NULL;
		trace_every_check(&mo, &eo);
		install_signals();
		return trace_every(&mo, &out, &eo, &stop_requested);
	}
	install_signals();
	return trace_many(&mo, &out, &stop_requested);
}

/* --empty-probes (the overhead benchmark): no report; the exit status. */
static int run_empty_probes(struct session *s, struct outfile *out)
{
	char err[RBM_ERR_LEN];
	int status;

	/* Its probes are off when it returns; an error leaves the session to close. */
	status = trace_one_empty_probes(s, &stop_requested, err, sizeof(err));
	if (status < 0) {
		rbm_error("%s", err);
		trace_one_close(s);
	}
	outfile_abort(out);
	return status < 0 ? 1 : status;
}

/* -v: the tracer's own peak memory, before the report is written. */
static void say_peak_rss(void)
{
	struct rusage ru;

	if (!rbm_verbose)
		return;
	getrusage(RUSAGE_SELF, &ru);
	rbm_info("peak RSS %ld KB", ru.ru_maxrss);
}

int cmd_trace(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, "[-- COMMAND [ARGS...]]", doc, children, 0, 0};
	struct session s;
	struct report report = {};
	struct outfile out;
	char err[RBM_ERR_LEN];
	int status;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 1;
	cli_check_bpf_privileges();
	if (args.target.npids > 1 || args.target.all || args.target.match || args.time.every)
		return trace_several();
	if (args.out.format == FORMAT_PPROF && !args.out.output && isatty(STDOUT_FILENO))
		rbm_die("pprof output is binary: give -o FILE.pb.gz");
	if (args.trace.pid)
		args.trace.pid = target_process_of(args.trace.pid);
	cli_output_open(&out, args.out.output);
	install_signals();

	if (trace_one_open(&s, &args.trace, err, sizeof(err))) {
		outfile_abort(&out);
		rbm_error("%s", err);
		return 1;
	}
	if (args.trace.empty_probes)
		return run_empty_probes(&s, &out);
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
	trace_one_watch(&s, &report, &stop_requested);
	warn_unmatched_classes(&report);
	say_peak_rss();
	if (write_report(outfile_stream(&out), &report)) {
		snprintf(err, sizeof(err), "cannot write the %s report",
			 formats[args.out.format].name);
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
