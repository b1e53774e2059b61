// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace fleet --hosts ... -- TRACE OPTIONS: asks every host's rbmemtrace
 * its version over OpenSSH (or the --via transport: kubectl exec, podman exec),
 * then runs `rbmemtrace --format json TRACE OPTIONS` on those whose version
 * writes reports this one reads, a few at a time, reads the reports they print
 * and merges them into one model (each host's processes kept, their sum the
 * summary).  A host that fails is listed with why, and the others still merge.
 * Each transport runs in its own process group, killed on timeout and on
 * Ctrl-C: nothing is left behind here.
 *
 * Over ~600 lines: the ssh children's life (started, read, timed out,
 * reaped, killed on every path) shares the job table and the signal flag
 * with the command; the pure parts (hosts, the remote command, why a host
 * failed) are fleet_hosts.c's, the transports' (templates, argv, --hosts-from's
 * command) fleet_transport.c's.
 */
#define _GNU_SOURCE /* pipe2 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "cli.h"
#include "diag.h"
#include "escape.h"
#include "fleet_hosts.h"
#include "fleet_transport.h"
#include "json_read.h"
#include "option_groups.h"
#include "writers.h"

/* Some hosts failed, at least one merged; none merged is 1, as any error. */
#define EXIT_SOME_FAILED 4
#define MAX_SSH_OPTIONS 64
#define DEFAULT_TIMEOUT 120.0
#define DURATION_MARGIN 30.0 /* attach, final pass and ssh set-up, beyond -d */
#define VERSION_CHECK_TIMEOUT 30.0 /* --version answers at once: only ssh takes time */
#define HOSTS_FROM_TIMEOUT 60.0
#define HOSTS_FROM_MAX (1UL << 20)
#define EXIT_USAGE 2

static const struct option_doc output_docs[] = {
	{GROUP_OPT_FORMAT, "text (default), json, pprof (with -o), speedscope or html (one "
			   "self-contained page)"},
	{}};
static const struct option_doc common_docs[] = {
	{'v', "Print each host's command (ssh, or the --via transport) as it starts"}, {}};

static struct fleet_args {
	struct output_opts out;
	struct report_opts report;
	struct common_opts common;
	const char *hosts;
	const char *hosts_from;
	const char *via_template;
	struct fleet_via via;
	const char *ssh_options[MAX_SSH_OPTIONS];
	int nssh_options;
	unsigned long parallel;
	double timeout;
	const char *remote_path;
	char **trace;
	int ntrace;
} args = {
	.out = {.docs = output_docs, .formats = formats_model_no_folded,
		.expected = "text, json, pprof, speedscope or html"},
	.report = {.text = {.top = 30, .top_stacks = 10, .prune = 5}},
	.common = {.docs = common_docs},
	.parallel = 8,
	.remote_path = "rbmemtrace",
	.via_template = "ssh %h",
};

/* The two commands each host runs: the version check's, then the trace's. */
static struct fleet_cmd version_cmd, trace_cmd;

static const char doc[] =
	"Trace Ruby processes on many hosts over ssh (or another transport: --via) and merge "
	"their reports: runs `REMOTE_PATH --version` on each host (ssh -o BatchMode=yes), then, "
	"where it is of this "
	"rbmemtrace's major.minor version, `REMOTE_PATH --format json TRACE OPTIONS`; collects "
	"the JSON reports and writes their model, each host's processes and their sum.\n"
	"\n"
	"HOSTS: a file with one [user@]host[:port] per line (# comments), or a comma-separated "
	"list; or, with --hosts-from, the lines a command prints.  Exit status: 0 when every host "
	"answered; 4 when some failed (each listed with its reason on stderr and in the output) "
	"but at least one merged; 1 when none did; 2 for a --via or --hosts-from that cannot "
	"be used.\n"
	"\n"
	"TRANSPORTS: --via TEMPLATE is split into words as a shell would split it (quotes, "
	"backslashes) but never run by a shell; %h in a word is the host (%% a %), and the "
	"rbmemtrace command is appended as separate arguments.  For ssh (the default, `ssh %h`) "
	"the command is one string, each word quoted, and BatchMode, --ssh-option and a "
	"[user@]host[:port] apply; any other transport takes the host as it is written (a "
	"container, pod/NAME).\n"
	"\n"
	"EXAMPLES:\n"
	"    rbmemtrace fleet --hosts web1,web2 -- -p 1234 -d 30\n"
	"    rbmemtrace fleet --hosts hosts.txt --format pprof -o fleet.pb.gz \\\n"
	"        -- -p 1234 -d 10\n"
	"    rbmemtrace fleet --via 'podman exec %h' --hosts app1,app2 -- --all -d 10\n"
	"    rbmemtrace fleet --via 'kubectl exec -n rbmemtrace %h --' \\\n"
	"        --hosts-from 'kubectl get pods -n rbmemtrace -l app=rbmemtrace -o name' \\\n"
	"        -- --match puma -d 30";

enum {
	OPT_HOSTS = 0x100,
	OPT_SSH_OPTION,
	OPT_PARALLEL,
	OPT_TIMEOUT,
	OPT_REMOTE_PATH,
	OPT_VIA,
	OPT_HOSTS_FROM,
};

static const struct argp_option opts[] = {
	{"hosts", OPT_HOSTS, "FILE|H1,H2,...", 0, "The hosts: a file, or a comma-separated list", 0},
	{"hosts-from", OPT_HOSTS_FROM, "COMMAND", 0,
	 "The hosts: the lines COMMAND prints (split into words, no shell), e.g. "
	 "'kubectl get pods -n rbmemtrace -l app=rbmemtrace -o name'", 0},
	{"via", OPT_VIA, "TEMPLATE", 0,
	 "The command that runs rbmemtrace on a host, %h the host (default: 'ssh %h'), e.g. "
	 "'kubectl exec -n rbmemtrace %h --' or 'podman exec %h'", 0},
	{"ssh-option", OPT_SSH_OPTION, "OPT", 0,
	 "Passed to ssh as -o OPT (repeatable), e.g. IdentityFile=~/.ssh/fleet", 0},
	{"parallel", OPT_PARALLEL, "N", 0, "Hosts traced at once (default 8)", 0},
	{"timeout", OPT_TIMEOUT, "SECONDS", 0,
	 "Per host, ssh included (default: -d plus 30 s, or 120 s; the version check before it: "
	 "at most 30 s)", 0},
	{"remote-path", OPT_REMOTE_PATH, "PATH", 0,
	 "rbmemtrace on the hosts (default: rbmemtrace, found by the remote PATH)", 0},
	{},
};

static const struct argp_child children[] = {
	{&output_argp[OPTS_OUTPUT_FILE], 0, "Output:", 1},
	{&report_argp[OPTS_REPORT_PATHS], 0, "Text report:", 2},
	{&common_argp[OPTS_COMMON_VERBOSE], 0, NULL, 0},
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		SET_CHILD_INPUTS(state, children, &args.out, &args.report, &args.common);
		break;
	case OPT_HOSTS:
		args.hosts = arg;
		break;
	case OPT_SSH_OPTION:
		if (args.nssh_options == MAX_SSH_OPTIONS)
			rbm_die("too many --ssh-option (at most %d)", MAX_SSH_OPTIONS);
		args.ssh_options[args.nssh_options++] = arg;
		break;
	case OPT_PARALLEL:
		args.parallel = cli_number(arg, "--parallel", 1, 1024);
		break;
	case OPT_TIMEOUT:
		if (cli_real(arg, &args.timeout) || !(args.timeout > 0))
			rbm_die("invalid --timeout: %s (expected seconds > 0)", arg);
		break;
	case OPT_REMOTE_PATH:
		args.remote_path = arg;
		break;
	case OPT_VIA:
		args.via_template = arg;
		break;
	case OPT_HOSTS_FROM:
		args.hosts_from = arg;
		break;
	case ARGP_KEY_ARG:
		rbm_die("fleet: unexpected %s: trace options go after -- (see --help)", arg);
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* One host's ssh, while it runs and once it ended. */
struct job {
	struct fleet_host host;
	pid_t pid; /* also its process group */
	int out_fd, err_fd;
	char *out;
	size_t out_len, out_cap;
	char err_tail[2048];
	size_t err_len;
	double started, kill_at; /* kill_at: SIGKILL if still there (after a SIGTERM) */
	double timeout;		 /* of this ssh: the version check's, or the trace's */
	bool running, done, timed_out, interrupted, too_big;
	int wait_status;
	char not_traced[640]; /* why the version check ruled the host out; "": traced */
};

static struct job *jobs;
static size_t njobs;
static volatile sig_atomic_t stop_requested;
static bool run_failed; /* an error (said) ends the run: every ssh is killed and reaped */

static void on_signal(int sig)
{
	stop_requested = sig;
}

/* 0, or -1 with the error said (what it made is closed). */
static int start(struct job *j, const struct fleet_cmd *c)
{
	int out[2] = {-1, -1}, err[2] = {-1, -1};

	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		rbm_error("pipe: %s", strerror(errno));
		goto fail;
	}
	fleet_say_command(&args.via, &j->host, c);
	j->pid = fork();
	if (j->pid < 0) {
		rbm_error("fork: %s", strerror(errno));
		goto fail;
	}
	if (j->pid == 0) {
		/* Its own group: Ctrl-C reaches us, and we end ssh and all it started. */
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		fleet_exec(&args.via, &j->host, j->timeout, c);
	}
	setpgid(j->pid, j->pid); /* also here: no race with a kill before the child ran */
	close(out[1]);
	close(err[1]);
	j->out_fd = out[0];
	j->err_fd = err[0];
	j->started = now_seconds();
	j->running = true;
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	return -1;
}

static void terminate(struct job *j)
{
	if (!j->running || j->kill_at)
		return;
	kill(-j->pid, SIGTERM);
	j->kill_at = now_seconds() + 2;
}

/* After an error: no ssh outlives us. */
static void kill_all(void)
{
	size_t i;

	for (i = 0; i < njobs; i++) {
		struct job *j = &jobs[i];

		if (!j->running)
			continue;
		kill(-j->pid, SIGKILL);
		waitpid(j->pid, NULL, 0);
		if (j->out_fd >= 0)
			close(j->out_fd);
		if (j->err_fd >= 0)
			close(j->err_fd);
		j->out_fd = j->err_fd = -1;
		j->running = false;
	}
}

static void read_out(struct job *j)
{
	ssize_t n;

	if (j->out_len == j->out_cap) {
		size_t cap = j->out_cap ? j->out_cap * 2 : 65536;
		char *bigger = realloc(j->out, cap + 1);

		if (!bigger) {
			rbm_error("out of memory reading %s's report", j->host.name);
			run_failed = true;
			return;
		}
		j->out = bigger;
		j->out_cap = cap;
	}
	n = read(j->out_fd, j->out + j->out_len, j->out_cap - j->out_len);
	if (n > 0) {
		j->out_len += n;
		if (j->out_len > (MAX_REPORT_MIB << 20)) {
			j->too_big = true;
			terminate(j);
		}
	} else if (n == 0 || errno != EINTR) {
		close(j->out_fd);
		j->out_fd = -1;
	}
}

/* Keeps the last bytes of stderr: the reason is in its last lines. */
static void read_err(struct job *j)
{
	char buf[1024];
	ssize_t n = read(j->err_fd, buf, sizeof(buf));
	size_t keep;

	if (n <= 0) {
		if (n == 0 || errno != EINTR) {
			close(j->err_fd);
			j->err_fd = -1;
		}
		return;
	}
	/* buf is smaller than the tail: keep the tail's end, then append. */
	keep = sizeof(j->err_tail) - 1 - n;
	if (j->err_len > keep) {
		memmove(j->err_tail, j->err_tail + j->err_len - keep, keep);
		j->err_len = keep;
	}
	memcpy(j->err_tail + j->err_len, buf, n);
	j->err_len += n;
	j->err_tail[j->err_len] = '\0';
}

static void reap(struct job *j)
{
	if (j->out_fd >= 0 || j->err_fd >= 0)
		return;
	if (waitpid(j->pid, &j->wait_status, WNOHANG) != j->pid)
		return;
	j->running = false;
	j->done = true;
}

/* One round: wait for output or a deadline, read, kill the late, reap the ended. */
static void step(size_t *nrunning)
{
	struct pollfd fds[2 * 1024];
	struct job *owner[2 * 1024];
	double t = now_seconds();
	size_t i, n = 0;

	for (i = 0; i < njobs; i++) {
		struct job *j = &jobs[i];

		if (!j->running)
			continue;
		if (stop_requested && !j->interrupted) {
			j->interrupted = true;
			terminate(j);
		}
		if (!j->kill_at && t - j->started > j->timeout) {
			j->timed_out = true;
			terminate(j);
		}
		if (j->kill_at && t > j->kill_at)
			kill(-j->pid, SIGKILL);
		/* Something outside the group may hold the pipes: stop waiting for them. */
		if (j->kill_at && t > j->kill_at + 2) {
			if (j->out_fd >= 0)
				close(j->out_fd);
			if (j->err_fd >= 0)
				close(j->err_fd);
			j->out_fd = j->err_fd = -1;
		}
		if (j->out_fd >= 0) {
			fds[n] = (struct pollfd){.fd = j->out_fd, .events = POLLIN};
			owner[n++] = j;
		}
		if (j->err_fd >= 0) {
			fds[n] = (struct pollfd){.fd = j->err_fd, .events = POLLIN};
			owner[n++] = j;
		}
	}
	/* Deadlines are checked every 200 ms; a signal wakes poll at once. */
	if (poll(fds, n, 200) > 0)
		for (i = 0; i < n; i++) {
			if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (fds[i].fd == owner[i]->out_fd)
				read_out(owner[i]);
			else
				read_err(owner[i]);
		}
	for (i = 0; i < njobs; i++)
		if (jobs[i].running) {
			reap(&jobs[i]);
			if (jobs[i].done)
				(*nrunning)--;
		}
}

static struct fleet_outcome outcome_of(const struct job *j, bool version_check)
{
	return (struct fleet_outcome){.interrupted = j->interrupted,
				      .timed_out = j->timed_out,
				      .too_big = j->too_big,
				      .version_check = version_check,
				      .timeout = j->timeout,
				      .wait_status = j->wait_status,
				      .stderr_tail = j->err_tail,
				      .host = j->host.name,
				      .transport = args.via.ssh ? NULL : args.via.words.v[0],
				      .remote_path = args.remote_path};
}

/*
 * After the version round: a host whose rbmemtrace is missing, or of another major.minor
 * (whose reports this one may misread, or which may not take these trace options), is not
 * traced, and its reason says what to install.
 */
static void rule_out_incompatible(void)
{
	size_t i;

	for (i = 0; i < njobs; i++) {
		struct job *j = &jobs[i];
		struct fleet_outcome o = outcome_of(j, true);

		if (j->out)
			j->out[j->out_len] = '\0'; /* read_out keeps a byte for it */
		if (o.interrupted || o.timed_out || o.too_big || !WIFEXITED(o.wait_status) ||
		    WEXITSTATUS(o.wait_status) != 0)
			fleet_failure_reason(&o, j->not_traced, sizeof(j->not_traced));
		else if (!fleet_version_check(j->host.name, args.remote_path, j->out ? j->out : "",
					      RBMEMTRACE_VERSION, j->not_traced,
					      sizeof(j->not_traced)))
			rbm_info("%s: %.*s", j->host.name, (int) strcspn(j->out, "\r\n"), j->out);
	}
}

/* Reads what a host printed into the model, or says why it could not. */
static void collect(struct job *j, struct model *m, struct host_failures *failed)
{
	struct fleet_outcome o = outcome_of(j, false);
	size_t before = m->nprocs, i, at;
	char err[512], reason[640], name[300], shown[1024];

	snprintf(name, sizeof(name), "%s's report", j->host.name);
	if (j->not_traced[0]) {
		snprintf(reason, sizeof(reason), "%s", j->not_traced);
		goto failed;
	}
	if (!o.interrupted && !o.timed_out && !o.too_big && j->out_len) {
		at = fleet_report_start(j->out, j->out_len);
		if (!json_read_buffer(j->out + at, j->out_len - at, name, m, NULL, err,
				      sizeof(err))) {
			/* The host is the one we reached, whatever the report says. */
			for (i = before; i < m->nprocs; i++)
				snprintf(m->procs[i]->host, sizeof(m->procs[i]->host), "%s",
					 j->host.name);
			return;
		}
		o.read_error = err;
	}
	fleet_failure_reason(&o, reason, sizeof(reason));
failed:
	rbm_warn("%s: %s", j->host.name, term_escape(reason, shown, sizeof(shown)));
	if (host_failures_add(failed, j->host.name, reason)) {
		rbm_error("out of memory");
		run_failed = true;
	}
}

/* Ready for another ssh: what the previous one printed and how it ended go. */
static void job_reset(struct job *j, double timeout)
{
	j->out_len = j->err_len = 0;
	j->err_tail[0] = '\0';
	j->out_fd = j->err_fd = -1;
	j->started = j->kill_at = 0;
	j->running = j->done = j->timed_out = j->interrupted = j->too_big = false;
	j->wait_status = 0;
	j->timeout = timeout;
}

/*
 * Runs command on every host not ruled out, --parallel at a time, until
 * each ended.  0, or -1 after an error (said), every ssh killed and reaped.
 */
static int run_all(const struct fleet_cmd *command, double timeout)
{
	size_t next = 0, nrunning = 0;

	while ((next < njobs || nrunning) && !run_failed) {
		while (!stop_requested && next < njobs && nrunning < args.parallel) {
			struct job *j = &jobs[next++];

			if (j->not_traced[0])
				continue;
			job_reset(j, timeout);
			if (start(j, command)) {
				run_failed = true;
				break;
			}
			nrunning++;
		}
		if (stop_requested && next < njobs) /* never started: interrupted too */
			for (; next < njobs; next++)
				jobs[next].interrupted = jobs[next].done = true;
		if (nrunning && !run_failed)
			step(&nrunning);
	}
	if (run_failed)
		kill_all();
	return run_failed ? -1 : 0;
}

/* A --via that cannot be used: one line, exit 2. */
static void parse_via(void)
{
	char err[256];

	if (fleet_via_parse(args.via_template, &args.via, err, sizeof(err))) {
		rbm_error("fleet: %s", err);
		exit(EXIT_USAGE);
	}
	if (!args.via.ssh && args.nssh_options) {
		rbm_error("fleet: --ssh-option is for ssh, not for --via '%s'", args.via_template);
		exit(EXIT_USAGE);
	}
	args.via.ssh_options = args.ssh_options;
	args.via.nssh_options = args.nssh_options;
}

/* Ours before "--", the remote rbmemtrace's after it, untouched; dies on what cannot run. */
static void parse_args(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, "-- TRACE OPTIONS", doc, children, 0, 0};
	const char *bad;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		;
	if (i < argc) {
		args.trace = argv + i + 1;
		args.ntrace = argc - i - 1;
	}
	if (argp_parse(&argp, i, argv, 0, NULL, NULL))
		exit(1);
	if (!args.hosts == !args.hosts_from)
		rbm_die("fleet: give --hosts FILE, --hosts H1,H2,... or --hosts-from COMMAND (one "
			"of them; see --help)");
	parse_via();
	if (!args.ntrace)
		rbm_die("fleet: give what to trace after --, e.g. -- -p PID -d 10");
	bad = fleet_forbidden_option(args.trace, args.ntrace);
	if (bad)
		rbm_die("fleet: %s is fleet's to set (it reads JSON from each host); give --format "
			"and -o before --", bad);
	if (!args.timeout)
		args.timeout = fleet_default_timeout(args.trace, args.ntrace, DURATION_MARGIN,
						     DEFAULT_TIMEOUT);
}

/* The hosts --hosts-from's command printed, one a line; dies if it failed. */
static size_t hosts_from(struct fleet_host **hosts)
{
	struct fleet_words w;
	char err[1024], *out;
	size_t n;

	if (fleet_split_words(args.hosts_from, &w, err, sizeof(err))) {
		rbm_error("fleet: --hosts-from '%s': %s", args.hosts_from, err);
		exit(EXIT_USAGE);
	}
	if (fleet_capture(w.v, HOSTS_FROM_TIMEOUT, HOSTS_FROM_MAX, &out, err, sizeof(err)))
		rbm_die("fleet: --hosts-from: %s", err);
	fleet_words_free(&w);
	n = fleet_hosts_from_text(out, !args.via.ssh, "--hosts-from", hosts);
	free(out);
	return n;
}

/* A job per host of the list, none started; dies before any ssh if it cannot. */
static void make_jobs(void)
{
	struct fleet_host *hosts;
	size_t i;

	if (args.hosts_from)
		njobs = hosts_from(&hosts);
	else
		njobs = fleet_read_hosts(args.hosts, !args.via.ssh, &hosts);
	jobs = calloc(njobs, sizeof(*jobs));
	if (!jobs)
		rbm_die("out of memory");
	for (i = 0; i < njobs; i++) {
		jobs[i].host = hosts[i];
		jobs[i].out_fd = jobs[i].err_fd = -1;
	}
	free(hosts);
}

/* The hosts' reports merged and written: the exit status. */
static int write_fleet_model(struct model *model, struct host_failures *failed)
{
	struct report summary = {};
	struct model_view view;
	int status;

	if (model_summary(model, &summary)) {
		rbm_error("out of memory merging the reports");
		report_free(&summary);
		return 1;
	}
	view = (struct model_view){.model = model, .summary = &summary, .failed = failed->v,
				   .nfailed = failed->n, .with_failures = true};
	status = cli_write_model(&view, args.out.format, args.out.output, &args.report.text);
	if (status || !model->nprocs)
		status = 1;
	else if (failed->n)
		status = EXIT_SOME_FAILED;
	report_free(&summary);
	return status;
}

int cmd_fleet(int argc, char **argv)
{
	struct host_failures failed = {};
	struct model model = {};
	size_t i;
	int status;

	parse_args(argc, argv);
	make_jobs();
	if (fleet_make_commands(args.remote_path, args.trace, args.ntrace, &version_cmd,
				&trace_cmd))
		rbm_die("out of memory"); /* before any host is reached */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	status = run_all(&version_cmd, args.timeout < VERSION_CHECK_TIMEOUT
						  ? args.timeout
						  : VERSION_CHECK_TIMEOUT);
	if (!status) {
		rule_out_incompatible();
		status = run_all(&trace_cmd, args.timeout);
	}
	for (i = 0; !status && i < njobs && !run_failed; i++)
		collect(&jobs[i], &model, &failed);
	status = status || run_failed ? 1 : write_fleet_model(&model, &failed);
	for (i = 0; i < njobs; i++)
		free(jobs[i].out);
	free(jobs);
	fleet_cmd_free(&version_cmd);
	fleet_cmd_free(&trace_cmd);
	fleet_words_free(&args.via.words);
	model_free(&model);
	host_failures_free(&failed);
	return status;
}
