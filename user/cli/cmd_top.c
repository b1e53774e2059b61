// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace top: a live view of what Ruby processes keep.  Every refresh
 * takes a heap census of each target (free for the target); a class's
 * sites and call paths come from sampled windows started by its drill-down,
 * inside --max-overhead.  Full screen with ncurses, or batch frames (-b)
 * in text or JSON lines.
 *
 * Over ~600 lines: its options, the screen loop, its keys and the batch loop
 * share top's one state (the model, the view, the screen's state, the
 * collector); what is collected is engine/top_collect.c's, what is drawn
 * output/top_screen.c's.
 */
#define _GNU_SOURCE
#include <argp.h>
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "cli.h"
#include "clock.h"
#include "diag.h"
#include "escape.h"
#include "option_groups.h"
#include "targets.h"
#include "top_collect.h"
#include "top_out.h"
#include "why_model.h"

static const struct option_doc target_docs[] = {
    {'p', "Ruby process to watch (repeat for several)"},
    {GROUP_OPT_MATCH, "Every Ruby process whose command line matches REGEX"},
    {}};
static const struct option_doc output_docs[] = {
    {GROUP_OPT_FORMAT, "Batch frames as text (default) or json (one per line)"}, {}};
static const struct option_doc budget_docs[] = {
    {GROUP_OPT_MAX_OVERHEAD,
     "Budget of the sampled windows behind sites and allocation rates (default 2)"},
    {}};
static const struct option_doc limit_docs[] = {
    {GROUP_OPT_DEPTH, "Ruby frames per sampled allocation (default 128)"},
    {GROUP_OPT_MAX_OBJECTS,
     "Sampled objects followed per process (default 1048576; 65536 each with several)"},
    {}};

static struct top_args {
	struct target_opts target;
	struct output_opts out;
	struct budget_opts budget;
	struct limit_opts limits; /* limits.max_objects 0: by the number of processes */
	struct common_opts common;
	double interval;
	bool batch, sites, per_process, summed;
	unsigned long count; /* frames in batch mode; 0: until stopped */
	unsigned long rows;
	int sort;
} args = {
    .target = {.docs = target_docs, .max_pids = TOP_MAX_PROCS,
	       .too_many = "too many -p: top shows at most %d processes"},
    .out = {.docs = output_docs, .formats = formats_text_json, .expected = "text or json"},
    .budget = {.docs = budget_docs, .overhead_range = "percent, 0.1 to 50", .max_overhead = 2},
    .limits = {.docs = limit_docs, .depth_min = 1, .depth = 128},
    .interval = 2,
    .rows = 40,
};

static const char doc[] =
    "A live, top-like view of the objects Ruby processes keep: per class live objects, bytes, "
    "change since start and per minute, allocations per second, old share and trend, from a "
    "heap census each refresh (no cost to the target).  Enter on a class samples its "
    "allocation sites and call paths within --max-overhead; there, w reads who holds the class "
    "and v the process's leak verdict since that first drill-down (a heap walk each).\n"
    "\n"
    "USAGE: rbmemtrace top -p PID [-p PID ...] | --match REGEX [-i SECONDS]\n"
    "                      [-b [-n COUNT]] [--format text|json]";

enum {
	OPT_SITES = 0x100,
	OPT_SORT,
	OPT_ROWS,
	OPT_PER_PROCESS,
	OPT_SUMMED,
};

static const struct argp_option opts[] = {
    {"interval", 'i', "SECONDS", 0, "Refresh every SECONDS (default 2)", 0},
    {"batch", 'b', NULL, 0, "Batch mode: frames to standard output, no terminal needed", 0},
    {"iterations", 'n', "COUNT", 0, "Batch mode: stop after COUNT frames", 0},
    {"sites", OPT_SITES, NULL, 0,
     "Sample allocation windows from the start (allocation rates per class)", 0},
    {"sort", OPT_SORT, "KEY", 0, "live (default), bytes, change, per-min, allocs, old, name", 0},
    {"rows", OPT_ROWS, "N", 0, "Batch text: classes per frame (default 40, 0: all)", 0},
    {"per-process", OPT_PER_PROCESS, NULL, 0, "Rows per process (default with one process)", 0},
    {"summed", OPT_SUMMED, NULL, 0, "Rows summed by class over processes (default with several)",
     0},
    {},
};

static const struct argp_child children[] = {
    {&target_argp[OPTS_TARGET_MATCH], 0, "Processes:", 1},
    {&output_argp[OPTS_OUTPUT_FORMAT], 0, "Output:", 2},
    {&budget_argp[OPTS_BUDGET_OVERHEAD], 0, "Cost to the target:", 3},
    {&limit_argp[OPTS_LIMIT_OBJECTS], 0, "Limits:", 4},
    {&common_argp[OPTS_COMMON_VERBOSE], 0, NULL, 0},
    {},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		SET_CHILD_INPUTS(state, children, &args.target, &args.out, &args.budget,
				 &args.limits, &args.common);
		break;
	case 'i':
		if (cli_real(arg, &args.interval) || !(args.interval >= 0.1) ||
		    args.interval > 3600)
			rbm_die("invalid interval: %s (seconds, 0.1 to 3600)", arg);
		break;
	case 'b':
		args.batch = true;
		break;
	case 'n':
		args.count = cli_number(arg, "-n", 1, 1UL << 31);
		break;
	case OPT_SITES:
		args.sites = true;
		break;
	case OPT_SORT:
		args.sort = top_sort_parse(arg);
		if (args.sort < 0)
			rbm_die(
			    "invalid --sort: %s (live, bytes, change, per-min, allocs, old, name)",
			    arg);
		break;
	case OPT_ROWS:
		args.rows = cli_number(arg, "--rows", 0, 1UL << 31);
		break;
	case OPT_PER_PROCESS:
		args.per_process = true;
		break;
	case OPT_SUMMED:
		args.summed = true;
		break;
	case ARGP_KEY_ARG:
		rbm_die("unexpected argument: %s (top takes -p PID or --match REGEX)", arg);
	case ARGP_KEY_END:
		if (args.limits.max_objects)
			cli_check_max_objects(args.limits.max_objects);
		if (!args.target.npids && !args.target.match)
			rbm_die("top needs -p PID or --match REGEX (see rbmemtrace top --help)");
		if (args.per_process && args.summed)
			rbm_die("give either --per-process or --summed, not both");
		if (args.out.format == MODEL_JSON)
			args.batch = true;
		if (args.count && !args.batch)
			rbm_die("-n counts batch frames: give -b too");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = sig;
}

static struct top_model model;
static struct top_collector collector;
static struct top_view view;
static struct top_ui ui;
/* The error that ends top (said once the terminal is restored): -errno, and its line. */
static int failed;
static char failure[RBM_ERR_LEN];

static int find_targets(void)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < args.target.npids && !ret; i++)
		ret = top_collect_add(&collector, &model, target_process_of(args.target.pids[i]),
				      false, failure, sizeof(failure));
	if (!ret && args.target.match)
		ret = top_collect_match(&collector, &model, args.target.match, failure,
					sizeof(failure));
	return failed = ret;
}

static int rebuild_view(void)
{
	if (top_view_build(&model, &view, ui.summed, ui.sort, ui.filter)) {
		snprintf(failure, sizeof(failure), "out of memory");
		return failed = -ENOMEM;
	}
	return 0;
}

/* Sessions need polling between refreshes: sleep in steps they ask for. */
static int wait_polling(double until)
{
	for (;;) {
		double now = now_seconds(), wait;

		if (now >= until || stop_requested)
			return 0;
		wait = until - now;
		if ((failed = top_collect_poll(&collector, now, &wait, failure, sizeof(failure))))
			return failed;
		if (wait > 0)
			usleep(wait * 1e6);
	}
}

static int run_batch(void)
{
	unsigned long frame;
	double next = now_seconds();

	for (frame = 0; !args.count || frame < args.count; frame++) {
		if (frame && wait_polling(next))
			return failed;
		if (stop_requested)
			break;
		next += args.interval;
		if ((failed = top_collect_refresh(&collector, &model, now_seconds(), failure,
						  sizeof(failure))) ||
		    rebuild_view())
			return failed;
		if (args.out.format == MODEL_JSON)
			top_write_json_frame(stdout, &model, &view, &ui);
		else
			top_write_text_frame(stdout, &model, &view, &ui, args.rows);
		if (ferror(stdout)) {
			snprintf(failure, sizeof(failure),
				 "cannot write the frames to standard output");
			return failed = -EIO;
		}
	}
	return 0;
}

/*
 * While the screen is up, stderr goes to a memory file: a warning would
 * scribble over the screen.  The last line shows in the status bar, and on
 * an error everything written is shown once the terminal is restored.
 */
static int saved_stderr = -1, stderr_file = -1;
static bool screen_up;

static void screen_down(void *ctx)
{
	(void) ctx;
	if (screen_up) {
		endwin();
		screen_up = false;
	}
	if (saved_stderr >= 0) {
		char buf[4096];
		ssize_t n;

		fflush(stderr);
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
		if (ctx && lseek(stderr_file, 0, SEEK_SET) == 0)
			while ((n = read(stderr_file, buf, sizeof(buf))) > 0)
				if (write(STDERR_FILENO, buf, n) < 0)
					break;
		close(stderr_file);
	}
}

static void say(double seconds, const char *msg)
{
	snprintf(ui.message, sizeof(ui.message), "%s", msg);
	ui.message_until = now_seconds() + seconds;
}

/* A warning written since the last look goes to the status bar for a while. */
static void show_new_stderr(void)
{
	static off_t seen;
	char tail[512], line[256];
	off_t end = lseek(stderr_file, 0, SEEK_END);
	ssize_t len;
	char *nl, *start;

	if (end <= seen)
		return;
	seen = end;
	len = pread(stderr_file, tail, sizeof(tail) - 1,
		    end > (off_t) sizeof(tail) - 1 ? end - (off_t) sizeof(tail) + 1 : 0);
	if (len <= 0)
		return;
	tail[len] = 0;
	while (len > 0 && tail[len - 1] == '\n')
		tail[--len] = 0;
	nl = strrchr(tail, '\n');
	start = nl ? nl + 1 : tail;
	len = strlen(start) < sizeof(line) ? (ssize_t) strlen(start) : (ssize_t) sizeof(line) - 1;
	memcpy(line, start, len);
	line[len] = 0;
	say(5, line);
}

static int screen_open(void)
{
	stderr_file = memfd_create("rbmemtrace-stderr", MFD_CLOEXEC);
	saved_stderr = dup(STDERR_FILENO);
	if (stderr_file < 0 || saved_stderr < 0) {
		failed = -errno;
		snprintf(failure, sizeof(failure), "cannot set the terminal up: %s", strerror(-failed));
		screen_down(NULL); /* what was set up of it */
		return failed;
	}
	fflush(stderr);
	dup2(stderr_file, STDERR_FILENO);
	initscr();
	screen_up = true;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	return 0;
}

/* The drill-down's first into a process: the leak verdict's start (a census and a walk). */
static void start_verdict(pid_t pid)
{
	char why[640], esc[700], line[sizeof(ui.message)];
	double took;

	if ((failed = top_collect_verdict_start(&collector, pid, &took, why, sizeof(why)))) {
		snprintf(failure, sizeof(failure), "out of memory");
		return;
	}
	if (took > 0)
		snprintf(line, sizeof(line),
			 "leak verdict from now on: heap walked in %.2f s (v: the verdict)", took);
	else if (why[0])
		snprintf(line, sizeof(line), "no leak verdict: %.200s",
			 term_escape(why, esc, sizeof(esc)));
	/* the session's line on stderr (sampling started) is read now: this one is the news */
	show_new_stderr();
	if (took > 0 || why[0])
		say(4, line);
}

/* Opens the drill-down of the selected row, starting its sampled windows. */
static void open_drill(void)
{
	const struct top_view_row *row;

	if (ui.selected >= view.nrows)
		return;
	row = &view.rows[ui.selected];
	snprintf(ui.drill_name, sizeof(ui.drill_name), "%s", row->name);
	ui.drill_pid = row->pid;
	ui.drill = true;
	if (!cli_have_bpf_privileges()) {
		say(5, "sites need BPF: run as root or with CAP_SYS_ADMIN (Esc: back)");
		return;
	}
	failed = top_collect_sample(&collector, &model, row->pid, failure, sizeof(failure));
	if (!failed)
		start_verdict(row->pid);
}

static const struct report *drill_report(void);

/* Key w: the drilled class's top retainer paths, read now, into the drill-down's why lines. */
static void read_why(void)
{
	struct why_report why = {0};
	double t0 = now_seconds();
	char err[512];
	pid_t pid = 0;
	int ret;

	snprintf(ui.why_class, sizeof(ui.why_class), "%s", ui.drill_name);
	ui.nwhy = 0;
	ret = top_collect_why(&collector, ui.drill_pid, ui.drill_name, &why, &pid, err,
			      sizeof(err));
	if (ret == -ESRCH)
		snprintf(ui.why_status, sizeof(ui.why_status), "(its process is gone)");
	else if (ret)
		snprintf(ui.why_status, sizeof(ui.why_status), "(not read: %.200s)", err);
	if (ret) {
		why_free(&why);
		return;
	}
	top_ui_set_why(&ui, &why, pid, now_seconds() - t0);
	why_free(&why);
}

/* Key v: the drilled process's leak verdict, from its drill-down's start to now. */
static void read_verdict(void)
{
	struct top_verdict_start start;
	struct verdict *v = NULL;
	double t0 = now_seconds();
	char err[512];
	int ret;

	ui.have_verdict = true;
	ui.verdict_for = ui.drill_pid;
	ui.nverdict = 0;
	ret = top_collect_verdict(&collector, ui.drill_pid, &v, &start, err, sizeof(err));
	if (ret == -ESRCH)
		snprintf(ui.verdict_status, sizeof(ui.verdict_status), "(its process is gone)");
	else if (ret == -ENOMEM)
		snprintf(ui.verdict_status, sizeof(ui.verdict_status), "(not read: out of memory)");
	else if (ret)
		snprintf(ui.verdict_status, sizeof(ui.verdict_status), "(not read: %.200s)", err);
	else
		top_ui_set_verdict(&ui, v, top_collect_drilled(&collector, ui.drill_pid),
				   now_seconds() - t0, start.seconds, start.kept_bytes);
	verdict_free(v);
}

static void move_selection(long delta)
{
	long s = (long) ui.selected + delta;

	if (s < 0)
		s = 0;
	if (view.nrows && s >= (long) view.nrows)
		s = view.nrows - 1;
	ui.selected = s;
}

/* A key typed while the filter is edited: Enter keeps it, Escape clears it. */
static void edit_filter(int ch)
{
	size_t len = strlen(ui.filter);

	if (ch == '\n' || ch == KEY_ENTER)
		ui.editing_filter = false;
	else if (ch == 27) {
		ui.filter[0] = 0;
		ui.editing_filter = false;
	} else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && len)
		ui.filter[len - 1] = 0;
	else if (ch >= 32 && ch < 127 && len + 1 < sizeof(ui.filter)) {
		ui.filter[len] = ch;
		ui.filter[len + 1] = 0;
	}
	ui.selected = ui.scroll = 0;
}

/* A sort key (lower or upper case): true if ch was one. */
static bool sort_key(int ch)
{
	static const char sort_keys[TOP_NSORTS] = {
	    [TOP_SORT_LIVE] = 'l', [TOP_SORT_BYTES] = 'b',  [TOP_SORT_CHANGE] = 'c',
	    [TOP_SORT_RATE] = 'm', [TOP_SORT_ALLOCS] = 'a', [TOP_SORT_OLD] = 'o',
	    [TOP_SORT_NAME] = 'n',
	};
	int i;

	for (i = 0; i < TOP_NSORTS; i++)
		if (ch == sort_keys[i] || ch == (sort_keys[i] & ~0x20)) {
			ui.sort = i;
			return true;
		}
	switch (ch) {
	case '<':
		ui.sort = (ui.sort + TOP_NSORTS - 1) % TOP_NSORTS;
		return true;
	case '>':
		ui.sort = (ui.sort + 1) % TOP_NSORTS;
		return true;
	}
	return false;
}

/* A key that moves the selection: true if ch was one. */
static bool motion_key(int ch)
{
	switch (ch) {
	case KEY_UP:
	case 'k':
		move_selection(-1);
		return true;
	case KEY_DOWN:
	case 'j':
		move_selection(1);
		return true;
	case KEY_PPAGE:
		move_selection(-(LINES / 2));
		return true;
	case KEY_NPAGE:
		move_selection(LINES / 2);
		return true;
	case KEY_HOME:
		ui.selected = 0;
		return true;
	case KEY_END:
		move_selection(view.nrows);
		return true;
	}
	return false;
}

/* The other keys: what each toggles or opens. */
static void command_key(int ch)
{
	switch (ch) {
	case '/':
		ui.editing_filter = true;
		break;
	case 'r':
	case 'R':
		top_model_reset(&model);
		say(3, "baseline reset: changes count from the next refresh");
		break;
	case 'p':
	case 'P':
		ui.paused = !ui.paused;
		break;
	case 's':
	case 'S':
		ui.summed = !ui.summed;
		ui.selected = ui.scroll = 0;
		break;
	case '?':
	case 'h':
		ui.help = true;
		break;
	case 'w':
	case 'W':
		if (ui.drill) {
			say(2, "reading who holds it...");
			read_why();
		}
		break;
	case 'v':
	case 'V':
		if (ui.drill) {
			/* the walk holds the loop: the bar says so first */
			say(2, "reading the leak verdict...");
			top_screen_draw(&model, &view, &ui, drill_report());
			read_verdict();
		}
		break;
	case '\n':
	case '\r':
	case KEY_ENTER:
	case KEY_RIGHT:
		open_drill();
		break;
	default:
		break;
	}
}

/* One key; false when it asks to quit (or what it did failed). */
static bool handle_key(int ch)
{
	if (ui.editing_filter) {
		edit_filter(ch);
		return true;
	}
	if (ui.help && ch != 'q') {
		ui.help = false;
		return true;
	}
	if (ui.drill && (ch == 27 || ch == KEY_LEFT || ch == KEY_BACKSPACE || ch == 127)) {
		ui.drill = false;
		return true;
	}
	if (ch == 'q' || ch == 'Q')
		return false;
	if (!sort_key(ch) && !motion_key(ch))
		command_key(ch);
	return !failed;
}

/* The drill-down's report: the row's process, or the first that samples when summed. */
static const struct report *drill_report(void)
{
	return top_collect_drill(&collector, ui.drill_pid);
}

static int run_screen(void)
{
	double next = now_seconds();

	if (screen_open())
		return failed;
	for (;;) {
		double now = now_seconds(), wait;
		int ch;

		if (stop_requested)
			break;
		if (!ui.paused && now >= next) {
			if ((failed = top_collect_refresh(&collector, &model, now, failure,
							  sizeof(failure))))
				break;
			next = now + args.interval;
		}
		if (rebuild_view())
			break;
		show_new_stderr();
		if (now >= ui.message_until)
			ui.message[0] = 0;
		top_screen_draw(&model, &view, &ui, drill_report());
		now = now_seconds();
		wait = ui.paused ? 1 : next - now;
		if (ui.message[0] && ui.message_until - now < wait)
			wait = ui.message_until - now; /* then the bar shows the keys again */
		if ((failed = top_collect_poll(&collector, now, &wait, failure, sizeof(failure))))
			break;
		timeout(wait > 0 ? (int) (wait * 1000) + 1 : 0);
		ch = getch();
		while (ch != ERR) {
			if (ch == KEY_RESIZE) {
				clearok(stdscr, TRUE);
			} else if (!handle_key(ch)) {
				break;
			}
			timeout(0);
			ch = getch();
		}
		if (ch != ERR)
			break; /* q, or a key whose work failed */
	}
	/* After an error, everything written meanwhile is shown again, and then the error. */
	screen_down(failed ? (void *) 1 : NULL);
	return failed;
}

int cmd_top(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, NULL, doc, children, 0, 0};
	struct sigaction sa = {.sa_handler = on_signal};

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 1;
	if (!args.batch && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
		rbm_die("top needs a terminal; for frames to a pipe or a file use -b (batch mode)");
	setlocale(LC_ALL, "");
	ui.ascii = strcmp(nl_langinfo(CODESET), "UTF-8") != 0;
	ui.interval = args.interval;
	ui.sort = args.sort;
	top_model_init(&model);
	collector.max_overhead = args.budget.max_overhead;
	collector.depth = args.limits.depth;
	if (find_targets()) {
		rbm_error("%s", failure);
		top_collect_free(&collector);
		top_model_free(&model);
		return 1;
	}
	/* Each drill-down session preallocates its map: several take a smaller one each. */
	collector.max_objects =
	    args.limits.max_objects ?: cli_live_map_size(args.target.npids > 1 || args.target.match,
							 false);
	ui.summed = args.summed || (!args.per_process && collector.ntargets > 1);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (args.sites && !cli_have_bpf_privileges()) {
		snprintf(failure, sizeof(failure),
			 "--sites needs BPF: run as root, or with CAP_SYS_ADMIN");
		failed = -EPERM;
	} else if (args.sites) {
		failed = top_collect_sample(&collector, &model, 0, failure, sizeof(failure));
	}
	if (!failed)
		failed = args.batch ? run_batch() : run_screen();
	/* The terminal is restored by now: the error comes after what was written meanwhile. */
	if (failed)
		rbm_error("%s", failure);
	top_collect_free(&collector);
	top_view_free(&view);
	top_model_free(&model);
	return failed ? 1 : 0;
}
