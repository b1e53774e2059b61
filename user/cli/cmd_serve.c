// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace serve: continuous heap profiles of running Ruby processes,
 * served as Go's net/http/pprof serves /debug/pprof/heap, for the
 * profiling servers that scrape such endpoints (Pyroscope through Alloy's
 * pyroscope.scrape, Parca).  The trace is trace --every's (engine/periodic.c);
 * each period's profile of each process, and of all of them, is handed to
 * the HTTP server (output/http_server.c), which answers on its own thread.
 * A fresh profile (?seconds=N) is made here, on the loop's thread: a report
 * of the process when the request arrives, and its period N seconds later.
 */
#define _GNU_SOURCE
#include <argp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "clock.h"
#include "diag.h"
#include "http_auth.h"
#include "http_route.h"
#include "http_server.h"
#include "option_groups.h"
#include "period.h"
#include "periodic.h"
#include "writers.h"

_Static_assert(TARGET_MAX_PIDS == MANY_MAX, "the -p of a run are a many_options' pids");

static const struct option_doc target_docs[] = {
	{'p', "Ruby process to serve profiles of (repeat for several)"}, {}};
static const struct option_doc time_docs[] = {
	{GROUP_OPT_EVERY,
	 "A new profile every SECONDS, 1 to 86400 (default 15: set it to the scrape interval)"},
	{}};
static const struct option_doc budget_docs[] = {
	{GROUP_OPT_MAX_OVERHEAD,
	 "Slow each target by at most PERCENT (default 2): allocations are traced in sampled "
	 "windows, across the periods"},
	{}};
static const struct option_doc common_docs[] = {
	{'v', "Explain what is found, attached and served"}, {}};

static struct serve_args {
	struct many_options mo; /* the groups' values, at the end */
	struct target_opts target;
	struct time_opts time;
	struct budget_opts budget;
	struct limit_opts limits;
	struct common_opts common;
	const char *listen;
	struct http_limits lim;
	struct http_auth_files auth_files;
	bool insecure_no_auth;
} args = {
    .target = {.docs = target_docs, .max_pids = TARGET_MAX_PIDS,
	       .too_many = "too many -p (at most %d)"},
    .time = {.docs = time_docs, .every = 15},
    .budget = {.docs = budget_docs},
    .limits = {.depth = 128, .max_stacks = 65536},
    .common = {.docs = common_docs},
    .listen = "127.0.0.1:6060",
    .lim = {.timeout_s = 10, .max_clients = 32, .max_per_ip = 16, .max_fresh = 4, .memory = 16384},
};

static const char doc[] =
    "Serve continuous heap profiles of running Ruby processes over HTTP, as Go's "
    "net/http/pprof serves them: GET /debug/pprof/heap is the latest period's profile "
    "(gzipped pprof; ?pid=N one process of several, ?seconds=N a fresh one of the next "
    "N seconds), /debug/pprof/ lists them, /healthz says how each process is.  Profiles "
    "are made every --every seconds: in use as a heap census counts it, on the call "
    "paths the sampled allocations give, and what the period allocated.\n"
    "\n"
    "USAGE: rbmemtrace serve -p PID|--all|--match REGEX [--listen ADDR:PORT]\n"
    "                        [OPTIONS]\n"
    "\n"
    "EXAMPLES:\n"
    "    rbmemtrace serve -p 1234      # on 127.0.0.1:6060\n"
    "    rbmemtrace serve --match puma --listen 127.0.0.1:6061 --every 15\n"
    "    go tool pprof -top http://127.0.0.1:6060/debug/pprof/heap\n"
    "    rbmemtrace serve --all --listen 0.0.0.0:6060 --token-file /etc/rbmemtrace/token \\\n"
    "        --tls-cert cert.pem --tls-key key.pem\n"
    "\n"
    "AUTHENTICATION: off loopback, serve answers only requests that carry the token "
    "(Authorization: Bearer TOKEN) or the user and password (basic auth) read from their "
    "file at start, and refuses to start without one unless --insecure-no-auth says so.  "
    "Any other request gets 401 and nothing else, but /healthz, which says only \"ok\" "
    "to it (a readiness probe has no token).  --tls-cert and --tls-key serve HTTPS.";

enum {
	OPT_LISTEN = 0x100,
	OPT_TIMEOUT,
	OPT_MAX_CLIENTS,
	OPT_TOKEN_FILE,
	OPT_BASIC_AUTH_FILE,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_INSECURE_NO_AUTH,
};

static const struct argp_option opts[] = {
    {"listen", OPT_LISTEN, "ADDR:PORT", 0,
     "Where to listen (default 127.0.0.1:6060; a PORT alone is on 127.0.0.1; port 0 "
     "picks one).  Any address but loopback must be given here, and is warned of",
     0},
    {"request-timeout", OPT_TIMEOUT, "SECONDS", 0,
     "A connection sends a whole request within SECONDS of opening (or of its last answer), "
     "however slowly, and takes its answer within as long again, or is closed; 1 to 300 "
     "(default 10; a fresh profile: its seconds, then as long)",
     0},
    {"max-clients", OPT_MAX_CLIENTS, "N", 0,
     "Connections at once, 1 to 1000 (default 32; 16 from one address): a new one closes "
     "the one that waited longest without sending a whole request",
     0},
    {"token-file", OPT_TOKEN_FILE, "FILE", 0,
     "Answer only requests with Authorization: Bearer TOKEN, the token the file's one line "
     "holds",
     0},
    {"basic-auth-file", OPT_BASIC_AUTH_FILE, "FILE", 0,
     "Answer only requests with this basic auth: the file's one line, user:password", 0},
    {"tls-cert", OPT_TLS_CERT, "FILE", 0, "Serve HTTPS with this PEM certificate (and --tls-key)",
     0},
    {"tls-key", OPT_TLS_KEY, "FILE", 0, "The PEM private key of --tls-cert", 0},
    {"insecure-no-auth", OPT_INSECURE_NO_AUTH, NULL, 0,
     "Listen off loopback without a token or password: whoever reaches the address reads "
     "the profiles (class names, file paths, command names)",
     0},
    {},
};

static const struct argp_child children[] = {
    {&target_argp[OPTS_TARGET_ALL], 0, "Processes:", 1},
    {&time_argp[OPTS_TIME_EVERY], 0, "Duration:", 2},
    {&budget_argp[OPTS_BUDGET_FULL], 0, "Cost to the target:", 3},
    {&limit_argp[OPTS_LIMIT_STACKS], 0, "Limits:", 4},
    {&common_argp[OPTS_COMMON_VERBOSE], 0, NULL, 0},
    {},
};

/* What the periodic trace takes from the groups. */
static void fill_many_options(struct many_options *mo)
{
	memcpy(mo->pids, args.target.pids, sizeof(mo->pids));
	mo->npids = args.target.npids;
	mo->all = args.target.all;
	mo->match = args.target.match;
	mo->trace.duration = args.time.duration;
	mo->trace.full = args.budget.full;
	mo->trace.max_overhead = args.budget.max_overhead;
	mo->trace.depth = args.limits.depth;
	mo->trace.max_stacks = args.limits.max_stacks;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	struct trace_options *t = &args.mo.trace;

	switch (key) {
	case ARGP_KEY_INIT:
		SET_CHILD_INPUTS(state, children, &args.target, &args.time, &args.budget,
				 &args.limits, &args.common);
		break;
	case OPT_LISTEN:
		args.listen = arg;
		break;
	case OPT_TIMEOUT:
		args.lim.timeout_s = cli_number(arg, "--request-timeout", 1, 300);
		break;
	case OPT_MAX_CLIENTS:
		args.lim.max_clients = cli_number(arg, "--max-clients", 1, 1000);
		if (args.lim.max_per_ip > args.lim.max_clients)
			args.lim.max_per_ip = args.lim.max_clients;
		break;
	case OPT_TOKEN_FILE:
		args.auth_files.token = arg;
		break;
	case OPT_BASIC_AUTH_FILE:
		args.auth_files.basic = arg;
		break;
	case OPT_TLS_CERT:
		args.auth_files.cert = arg;
		break;
	case OPT_TLS_KEY:
		args.auth_files.key = arg;
		break;
	case OPT_INSECURE_NO_AUTH:
		args.insecure_no_auth = true;
		break;
	case ARGP_KEY_ARG:
		rbm_die("serve takes no arguments (%s): give -p PID, --all or --match REGEX", arg);
	case ARGP_KEY_END:
		fill_many_options(&args.mo);
		if (!args.mo.npids && !args.mo.all && !args.mo.match)
			rbm_die(
			    "nothing to serve: give -p PID, --all or --match REGEX (see --help)");
		if (args.mo.all && args.mo.match)
			rbm_die("give either --all or --match, not both");
		if (t->full && t->max_overhead)
			rbm_die("give either --full or --max-overhead, not both");
		if (t->duration && t->duration < args.time.every)
			rbm_die("-d %g is shorter than --every %g: no period would end",
				t->duration, args.time.every);
		limit_opts_finish(&args.limits, args.mo.npids > 1 || args.mo.all || args.mo.match,
				  t->full);
		t->max_objects = args.limits.max_objects;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* A fresh profile under way: the processes' reports when it was asked for. */
struct pending {
	struct http_fresh want;
	double deadline;
	size_t n;
	size_t idx[MANY_MAX];
	struct report *base[MANY_MAX];
};

#define MAX_PENDING 16

static struct served {
	struct http_server *http;
	bool dirty; /* a process's profile changed: every process's must be made again */
	struct pending *pending[MAX_PENDING];
} sv;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = sig;
}

/* A model of reports as gzipped pprof, in memory; 0 or -errno. */
static int pprof_bytes(struct report **reps, size_t n, char **buf, size_t *len)
{
	struct model m = {.procs = reps, .nprocs = n, .cap = n};
	struct model_view v = {.model = &m, .summary = reps[0]};
	FILE *f = open_memstream(buf, len);
	int err;

	if (!f)
		return -errno;
	err = model_write_pprof(f, &v);
	if (fclose(f) && !err)
		err = -EIO;
	if (err) {
		free(*buf);
		*buf = NULL;
	}
	return err;
}

static void info_of(struct http_proc_info *in, const struct session *s, const struct report *r)
{
	memset(in, 0, sizeof(*in));
	in->pid = s->target.pid;
	snprintf(in->command, sizeof(in->command), "%s", s->command);
	snprintf(in->ruby_version, sizeof(in->ruby_version), "%s", s->target.version);
	in->period = r->period.number;
	in->time = r->period.time;
	in->gone = r->period.target_gone;
	snprintf(in->state, sizeof(in->state), "%s",
		 in->gone ? (s->end_reason ? s->end_reason : "gone") : "running");
}

static void publish_one(struct session *s, const struct report *r)
{
	struct report *one = (struct report *) r;
	struct http_proc_info in;
	char *buf = NULL;
	size_t len = 0;

	if (pprof_bytes(&one, 1, &buf, &len)) {
		rbm_warn("PID %d: the profile of period %llu could not be made", s->target.pid,
			 (unsigned long long) r->period.number);
		return;
	}
	info_of(&in, s, r);
	if (http_server_publish(sv.http, s->target.pid, buf, len, &in))
		rbm_warn("out of memory publishing PID %d's profile", s->target.pid);
	free(buf);
	sv.dirty = true;
}

static void publish(void *ctx, struct periodic *p, size_t i, const struct report *r)
{
	(void) ctx;
	publish_one(p->m.sessions[i], r);
}

static void gone(void *ctx, struct periodic *p, size_t i, const struct report *last)
{
	(void) ctx;
	fprintf(stderr, "rbmemtrace: PID %d %s: %s\n", p->m.sessions[i]->target.pid,
		p->m.sessions[i]->end_reason ? p->m.sessions[i]->end_reason : "ended",
		last ? "its last profile is still served" : "it had no profile yet");
	if (last)
		publish_one(p->m.sessions[i], last);
}

/* Every process's latest profile as one (pid 0: /debug/pprof/heap with no pid). */
static void publish_all(struct periodic *p)
{
	struct report *reps[MANY_MAX];
	struct http_proc_info in = {};
	char *buf = NULL;
	size_t i, n = 0, len = 0;

	for (i = 0; i < p->m.n; i++)
		if (p->procs[i].have_last)
			reps[n++] = &p->procs[i].last;
	if (!n || pprof_bytes(reps, n, &buf, &len))
		return;
	snprintf(in.state, sizeof(in.state), "every process");
	http_server_publish(sv.http, 0, buf, len, &in);
	free(buf);
	sv.dirty = false;
}

static void free_pending(struct pending *pd)
{
	size_t j;

	for (j = 0; j < pd->n; j++) {
		if (pd->base[j]) {
			report_free(pd->base[j]);
			free(pd->base[j]);
		}
	}
	free(pd);
}

static void answer_line(uint64_t id, int status, const char *line)
{
	http_server_answer_fresh(sv.http, id, status, line, strlen(line));
}

/* A fresh request taken: the reports its period will be counted from. */
static void begin_fresh(struct periodic *p, const struct http_fresh *want)
{
	struct pending *pd = calloc(1, sizeof(*pd));
	size_t i, slot;

	for (slot = 0; slot < MAX_PENDING && sv.pending[slot]; slot++)
		;
	if (!pd || slot == MAX_PENDING) {
		free(pd);
		answer_line(want->id, 503, "too many fresh profiles under way");
		return;
	}
	pd->want = *want;
	pd->deadline = now_seconds() + want->seconds;
	for (i = 0; i < p->m.n; i++) {
		struct session *s = p->m.sessions[i];

		if (p->m.ended[i] || (want->pid && s->target.pid != want->pid))
			continue;
		pd->base[pd->n] = calloc(1, sizeof(struct report));
		if (!pd->base[pd->n] || session_report_now(s, pd->base[pd->n])) {
			free(pd->base[pd->n]);
			pd->base[pd->n] = NULL;
			continue;
		}
		pd->idx[pd->n++] = i;
	}
	if (!pd->n) {
		answer_line(want->id, want->pid ? 410 : 503,
			    want->pid ? "the process has exited: /debug/pprof/heap without seconds "
					"has its last profile"
				      : "no process is running");
		free_pending(pd);
		return;
	}
	sv.pending[slot] = pd;
}

/* A fresh request whose seconds are over: its period, now. */
static void end_fresh(struct periodic *p, struct pending *pd)
{
	struct report *reps[MANY_MAX];
	struct report *made = calloc(pd->n + 1, sizeof(*made));
	size_t j, n = 0, len = 0;
	char *buf = NULL, why[256];

	for (j = 0; made && j < pd->n; j++) {
		size_t i = pd->idx[j];
		struct period_info info = {.number = 0};

		if (p->m.ended[i] ||
		    session_report_census(p->m.sessions[i], &made[n], why, sizeof(why))) {
			report_free(&made[n]);
			memset(&made[n], 0, sizeof(made[n]));
			continue;
		}
		made[n].end_reason = "period";
		info.time = (double) time(NULL);
		info.duration_s = pd->want.seconds;
		if (report_set_period(&made[n], pd->base[j], &info)) {
			report_free(&made[n]);
			memset(&made[n], 0, sizeof(made[n]));
			continue;
		}
		reps[n] = &made[n];
		n++;
	}
	if (n && !pprof_bytes(reps, n, &buf, &len))
		http_server_answer_fresh(sv.http, pd->want.id, 200, buf, len);
	else
		answer_line(pd->want.id, pd->want.pid ? 410 : 503,
			    n ? "the fresh profile could not be made"
			      : "the process exited before the seconds were over");
	free(buf);
	for (j = 0; made && j < n; j++)
		report_free(&made[j]);
	free(made);
}

static double turn(void *ctx, struct periodic *p, double now)
{
	struct http_fresh fresh[MAX_PENDING];
	double wait = 0.05;
	size_t i, n;

	(void) ctx;
	if (sv.dirty)
		publish_all(p);
	n = http_server_take_fresh(sv.http, fresh, MAX_PENDING);
	for (i = 0; i < n; i++)
		begin_fresh(p, &fresh[i]);
	for (i = 0; i < MAX_PENDING; i++) {
		struct pending *pd = sv.pending[i];

		if (!pd)
			continue;
		if (!http_server_fresh_wanted(sv.http, pd->want.id)) {
			/* Its client went away, or the server answered it in our stead. */
			free_pending(pd);
			sv.pending[i] = NULL;
		} else if (now >= pd->deadline) {
			end_fresh(p, pd);
			free_pending(pd);
			sv.pending[i] = NULL;
		} else if (pd->deadline - now < wait) {
			wait = pd->deadline - now;
		}
	}
	return wait;
}

/* What the clients did, in a line: how many were cut, closed or refused says if any misbehaved. */
static void say_stats(void)
{
	struct http_stats st;

	http_server_stats(sv.http, &st);
	fprintf(stderr,
		"rbmemtrace: served %llu requests on %llu connections; %llu cut past "
		"--request-timeout, %llu closed for a newcomer, %llu refused; fresh profiles: %llu "
		"refused (too many), %llu late, %llu left by their client; %llu unauthorized\n",
		(unsigned long long) st.requests, (unsigned long long) st.connections,
		(unsigned long long) st.timed_out, (unsigned long long) st.evicted,
		(unsigned long long) st.refused, (unsigned long long) st.fresh_refused,
		(unsigned long long) st.fresh_late, (unsigned long long) st.fresh_abandoned,
		(unsigned long long) st.unauthorized);
}

/*
 * Who may read, from the files given; dies (nothing is open yet) on a file that cannot be
 * read, and off loopback without a token or password unless --insecure-no-auth.
 */
static void load_auth(struct http_auth *auth, bool loopback)
{
	const struct http_auth_files *f = &args.auth_files;
	char err[RBM_ERR_LEN];

	if (!f->cert != !f->key)
		rbm_die("serve: give --tls-cert and --tls-key together");
	if (args.insecure_no_auth && (f->token || f->basic))
		rbm_die("serve: --insecure-no-auth and a --token-file or --basic-auth-file "
			"contradict each other: give one");
	if (http_auth_load(auth, f, err, sizeof(err)))
		rbm_die("serve: %s", err);
	if (!loopback && !http_auth_required(auth) && !args.insecure_no_auth)
		rbm_die("serve: %s is not a loopback address: give --token-file or "
			"--basic-auth-file (whoever reaches it would read class names, file paths "
			"and command names), or --insecure-no-auth",
			args.listen);
}

/*
 * The socket bound (before anything is traced: a busy port or a bad address fails at once) and
 * who may read set; 0, or 1 with the error said (dies while nothing else is open).  *tls: HTTPS.
 */
static int open_server(char *bound, size_t boundlen, bool *tls)
{
	struct sockaddr_storage ss;
	struct http_auth auth;
	char err[RBM_ERR_LEN];
	socklen_t sslen;
	bool loopback;

	if (http_parse_listen(args.listen, &ss, &sslen, &loopback, err, sizeof(err)))
		rbm_die("%s", err);
	load_auth(&auth, loopback);
	*tls = auth.cert_pem != NULL;
	cli_check_bpf_privileges();
	if (http_server_open(&sv.http, &ss, sslen, &args.lim, args.time.every, bound, boundlen,
			     err, sizeof(err))) {
		http_auth_free(&auth);
		rbm_die("%s", err);
	}
	if (http_server_secure(sv.http, &auth, err, sizeof(err))) {
		rbm_error("serve: %s", err);
		http_server_stop(sv.http);
		return 1;
	}
	if (!loopback && args.insecure_no_auth)
		rbm_warn("serving on %s, which is not a loopback address, without a token or "
			 "password (--insecure-no-auth): whoever reaches it reads the profiles (class "
			 "names, file paths, command names)",
			 bound);
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, NULL, doc, children, 0, 0};
	static struct periodic p;
	struct periodic_sink sink = {.publish = publish, .gone = gone, .turn = turn};
	char err[RBM_ERR_LEN], bound[96];
	bool tls;
	size_t i;
	int ret;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 1;
	if (open_server(bound, sizeof(bound), &tls))
		return 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (periodic_attach(&p, &args.mo, args.time.every, true, true, &sink, err, sizeof(err))) {
		rbm_error("%s", err);
		http_server_stop(sv.http);
		return 1;
	}
	ret = http_server_start(sv.http, err, sizeof(err));
	if (!ret) {
		publish_all(&p);
		fprintf(stderr,
			"rbmemtrace: serving http%s://%s/debug/pprof/heap (a profile every %g s)\n",
			tls ? "s" : "", bound, args.time.every);
		ret = periodic_loop(&p, &stop_requested, err, sizeof(err));
	}
	if (ret)
		rbm_error("%s", err);
	for (i = 0; i < MAX_PENDING; i++)
		if (sv.pending[i]) {
			answer_line(sv.pending[i]->want.id, 503, "rbmemtrace is stopping");
			free_pending(sv.pending[i]);
			sv.pending[i] = NULL;
		}
	if (!ret)
		say_stats();
	http_server_stop(sv.http);
	periodic_close(&p);
	if (ret)
		return 1;
	/* The GC probes' breakpoints go with the last reference to their links (session_finish). */
	fprintf(stderr, "rbmemtrace: stopped serving; every probe is detached as rbmemtrace "
			"exits\n");
	return 0;
}
