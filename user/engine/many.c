// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace -p PID -p PID ... | --all | --match REGEX: several processes in
 * one run.  Each process gets its own session (and its own sampling budget:
 * the slowdown is per process), all polled from one loop; processes that
 * start while --all or --match runs are picked up at their start, held at
 * ruby_options' return as a launched command is (exec_watch.h), and a
 * rescan finds those the watch could not hold; one that exits keeps what
 * was gathered.  The reports are a model: one report per process and a
 * summary over all, which cli/ writes with the same writers as merge.
 */
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "diag.h"
#include "exec_watch.h"
#include "holders.h"
#include "launch.h"
#include "many.h"
#include "model_ops.h"
#include "new_stacks.h"
#include <linux/types.h>
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include "proc_info.h"
#include "targets.h"

#define RESCAN_EVERY 2.0 /* seconds between looks for processes the exec watch did not hold */
/*
 * The longest a starting Ruby waits, stopped, for its turn to be attached.
 * Rubies that start faster than they can be attached (opening a session
 * takes 0.1-0.2 s here, up to 1 s on a loaded machine) queue up stopped: 7
 * starts a second held each for over 30 s.  Past this a process is let go
 * untraced; the rescan attaches to it as to any running Ruby (from then on,
 * not from its start), and the run says how many.  Well above one slow
 * attach, so that load alone does not cost a start.
 */
#define MANY_MAX_HOLD 5.0

void many_fail(struct many *m, int err, const char *fmt, ...)
{
	va_list ap;

	if (m->failed)
		return;
	m->failed = err < 0 ? err : -EIO;
	va_start(ap, fmt);
	vsnprintf(m->error, sizeof(m->error), fmt, ap);
	va_end(ap);
}

static bool traced(const struct many *m, pid_t pid)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->sessions[i]->target.pid == pid)
			return true;
	for (i = 0; i < m->nrefused; i++)
		if (m->refused[i] == pid)
			return true;
	return false;
}

/*
 * A process that could not be traced: said, never tried again.  Processes
 * held at their start make this common: another user's Ruby may exit while
 * we open it.  What the session held is given back; the others go on.
 */
static void refuse(struct many *m, pid_t pid, double held_since, const char *err)
{
	rbm_warn("%s", err);
	if (m->nrefused < MANY_MAX)
		m->refused[m->nrefused++] = pid;
	/* Never left stopped, whatever failed. */
	if (held_since)
		held_release(shared_bpf()->skel, pid);
}

/*
 * Opens and starts a session on pid.  With skippable (a process --all or
 * --match found, or one of several -p), one that fails to open, most often
 * because it exited meanwhile, is skipped with a warning; otherwise its
 * error ends the run (many_fail).
 */
static void add_process(struct many *m, pid_t pid, bool skippable, double held_since)
{
	struct trace_options opt = m->mo->trace;
	char err[RBM_ERR_LEN];
	struct session *s;
	double t0, t1;
	int ret;

	if (traced(m, pid) || m->n == MANY_MAX) {
		if (m->n == MANY_MAX)
			rbm_warn("more than %d processes: PID %d is not traced", MANY_MAX, pid);
		if (held_since)
			held_release(shared_bpf()->skel, pid);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		many_fail(m, -ENOMEM, "out of memory");
		if (held_since)
			held_release(shared_bpf()->skel, pid);
		return;
	}
	opt.pid = pid;
	opt.command = NULL;
	opt.held = held_since > 0;
	opt.held_since = held_since;
	t0 = now_seconds();
	ret = session_open(s, &opt, err, sizeof(err));
	t1 = now_seconds();
	/* Open but not started: closed here, as a failed open closed itself. */
	if (!ret && (ret = session_start(s, err, sizeof(err))))
		session_close(s);
	if (ret && !skippable) {
		many_fail(m, ret, "%s", err);
		free(s);
		return;
	}
	if (ret) {
		free(s);
		refuse(m, pid, held_since, err);
		return;
	}
	rbm_info("PID %d: attached in %.0f ms (%.0f to open its session, %.0f to start it)%s", pid,
		 (now_seconds() - t0) * 1e3, (t1 - t0) * 1e3, (now_seconds() - t1) * 1e3,
		 held_since ? ", held at its start" : "");
	/* One we hold at its start is let go by then; another may be stopped by a debugger. */
	if (!held_since)
		target_say_stopped(pid, false);
	m->sessions[m->n++] = s;
	/* Its executable's next processes are held at their start. */
	if (m->watching)
		exec_watch_learn(pid, s->target.img.host_path);
	if (m->hooks && m->hooks->added)
		m->hooks->added(m->hooks->ctx, m, m->n - 1);
}

/*
 * --all and --match: every matching Ruby not traced yet.  A process that
 * cannot be traced (a version not known) is skipped.
 */
static void scan(struct many *m)
{
	pid_t pids[MANY_MAX];
	size_t n, i;

	n = ruby_find_processes(m->have_re ? &m->re : NULL, getpid(), RUBY_NEED_TRACE, pids, MANY_MAX);
	/* ruby_find_processes checked each; one that exits since is skipped by add_process. */
	for (i = 0; i < n; i++)
		if (!traced(m, pids[i]) && !(m->watching && exec_watch_pending(pids[i])))
			add_process(m, pids[i], true, 0);
}

/* The ruby on PATH is known before any process runs it: its first process is held too. */
static void learn_path_ruby(void)
{
	char exe[PATH_MAX], image[PATH_MAX], err[PATH_MAX + 128];

	if (launch_command_exe("ruby", exe, err, sizeof(err)) == 0 &&
	    launch_find_ruby(exe, image, sizeof(image), err, sizeof(err)) == 0)
		exec_watch_learn_file(exe, image);
}

static bool cmdline_matches(struct many *m, pid_t pid)
{
	char cmdline[4096];

	if (!m->have_re)
		return true;
	proc_cmdline(pid, cmdline, sizeof(cmdline));
	return cmdline[0] && regexec(&m->re, cmdline, 0, NULL, 0) == 0;
}

/* What the exec watch tells: a Ruby that starts, held or not.  True when it attached. */
static bool on_exec(void *ctx, const struct exec_event *ev)
{
	struct many *m = ctx;
	pid_t pid = ev->pid;

	switch (ev->kind) {
	case EXEC_RUBY:
		/* Its command line is there from the exec: one that does not match is never stopped. */
		if (m->have_re)
			exec_watch_decide(pid, cmdline_matches(m, pid));
		break;
	case EXEC_HELD: {
		double held_for = exec_event_age(ev);

		if (pid == getpid() || !cmdline_matches(m, pid)) {
			held_release(shared_bpf()->skel, pid);
		} else if (held_for > MANY_MAX_HOLD) {
			held_release(shared_bpf()->skel, pid);
			m->let_go++;
			rbm_info("PID %d: let go after %.1f s held, before its turn", pid, held_for);
		} else {
			add_process(m, pid, true, now_seconds() - held_for);
			return true;
		}
		break;
	}
	case EXEC_UNHELD:
		if (cmdline_matches(m, pid)) {
			add_process(m, pid, true, 0);
			return true;
		}
		break;
	}
	return false;
}

static bool all_ended(const struct many *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!m->ended[i])
			return false;
	return true;
}

/*
 * Each session polled at t: those that ended are marked and handed to the
 * hooks.  The longest wait before the next poll (at most wait).
 */
static double poll_sessions(struct many *m, double t, double wait)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		struct session *s = m->sessions[i];
		double w;

		if (m->ended[i])
			continue;
		w = session_poll(s, t);
		/* Probes that cannot go on end the run, as they always did. */
		if (w < 0 && s->failed) {
			many_fail(m, s->failed, "%s", s->error);
			break;
		}
		if (w < 0) {
			m->ended[i] = true;
			s->end = now_seconds();
			rbm_info("PID %d: %s", s->target.pid, s->end_reason);
			if (m->hooks && m->hooks->ended)
				m->hooks->ended(m->hooks->ctx, m, i);
		} else if (w < wait) {
			wait = w;
		}
	}
	return wait;
}

/* The run ends (why: "signal" or "duration"): held starts let go, the others' ends set. */
static void end_run(struct many *m, const char *why)
{
	size_t i;

	if (m->watching)
		exec_watch_end_holds();
	if (m->let_go)
		rbm_warn("%zu Ruby process%s started faster than they could be attached: let go after "
			 "%.0f s held, each traced only from when a rescan found it, if it still ran",
			 m->let_go, m->let_go == 1 ? "" : "es", MANY_MAX_HOLD);
	for (i = 0; i < m->n; i++) {
		struct session *s = m->sessions[i];

		if (m->ended[i])
			continue;
		s->end_reason = why;
		s->end = now_seconds();
		target_say_stopped(s->target.pid, true);
	}
}

int many_run(struct many *m, volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	double start = now_seconds();
	bool scanning = m->mo->all || m->mo->match;

	for (;;) {
		double t = now_seconds(), wait;

		if (*stop || m->failed)
			break;
		if (m->mo->trace.duration && t - start >= m->mo->trace.duration)
			break;
		if (scanning && t - m->last_scan >= RESCAN_EVERY) {
			m->last_scan = t;
			scan(m);
		}
		wait = poll_sessions(m, t, 0.05);
		if (m->failed)
			break;
		if (m->hooks && m->hooks->turn) {
			double w = m->hooks->turn(m->hooks->ctx, m, now_seconds());

			if (w < wait)
				wait = w;
		}
		/* Given processes that all ended: nothing is left to trace. */
		if (!scanning && all_ended(m) && !(m->hooks && m->hooks->outlive_targets))
			break;
		/* Woken at once by a start: the process waits, stopped, until it is attached. */
		exec_watch_wait(wait > 0 ? wait : 0, on_exec, m);
	}
	end_run(m, *stop ? "signal" : "duration");
	if (m->failed)
		snprintf(err, errlen, "%s", m->error);
	return m->failed;
}

/*
 * --all and --match: the Rubies running now, then the starts watched (each
 * held at its start until attached), or looked for by rescans if they cannot be.
 */
static void watch_starts(struct many *m)
{
	const struct many_options *mo = m->mo;
	char msg[RBM_ERR_LEN];
	struct shared_bpf *sh;
	size_t i;
	int ret;

	m->last_scan = now_seconds();
	scan(m);
	if (!m->failed && (ret = session_shared_bpf(mo->trace.depth, &sh, msg, sizeof(msg))))
		many_fail(m, ret, "%s", msg);
	/* None yet is no error while the starts are watched: a cron job's Ruby will come. */
	ret = m->failed ? 0 : exec_watch_start(sh->skel, true);
	if (ret && !m->n)
		many_fail(m, ret,
			  "no Ruby process that can be traced %s%s, and processes that start "
			  "cannot be watched: %s",
			  mo->match ? "matches " : "is running", mo->match ? mo->match : "",
			  strerror(-ret));
	if (m->failed)
		return;
	if (ret) {
		rbm_warn("cannot watch for processes that start (%s): they are looked for every %.0f s",
			 strerror(-ret), RESCAN_EVERY);
		return;
	}
	m->watching = true;
	for (i = 0; i < m->n; i++)
		exec_watch_learn(m->sessions[i]->target.pid, m->sessions[i]->target.img.host_path);
	learn_path_ruby();
}

int many_attach(struct many *m, const struct many_options *mo, const struct many_hooks *hooks,
		char *err, size_t errlen)
{
	size_t i;

	memset(m, 0, sizeof(*m));
	m->mo = mo;
	m->hooks = hooks;
	if (mo->match) {
		int ret = target_match_compile(&m->re, mo->match, err, errlen);

		if (ret)
			return ret;
		m->have_re = true;
	}
	m->attaching = true;
	/* Of several -p, one that exits while the others attach is skipped, not fatal. */
	for (i = 0; i < mo->npids && !m->failed; i++)
		add_process(m, target_process_of(mo->pids[i]), mo->npids > 1, 0);
	if (!m->failed && mo->npids > 1 && !m->n && !mo->all && !mo->match)
		many_fail(m, -ESRCH, "none of the %zu processes could be traced", mo->npids);
	if (!m->failed && (mo->all || mo->match))
		watch_starts(m);
	m->attaching = false;
	if (m->failed) {
		int ret = m->failed;

		snprintf(err, errlen, "%s", m->error);
		many_close(m);
		return ret;
	}
	fprintf(stderr, "rbmemtrace: tracing %zu process%s%s\n", m->n, m->n == 1 ? "" : "es",
		mo->all || mo->match ? " (and those that start)" : "");
	return 0;
}

void many_close(struct many *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		session_detach_start(m->sessions[i]);
	for (i = 0; i < m->n; i++) {
		session_close(m->sessions[i]);
		free(m->sessions[i]);
	}
	m->n = 0;
	/* Once no slot asks for a stop any more. */
	if (m->watching)
		exec_watch_stop();
	m->watching = false;
	if (m->have_re)
		regfree(&m->re);
	m->have_re = false;
}

int many_reports(struct many *m, struct model *model, struct report *summary, char *err,
		 size_t errlen)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		struct session *s = m->sessions[i];
		struct report *r = calloc(1, sizeof(*r));

		if (!r)
			goto oom;
		session_finish(s);
		if (session_report(s, r) || holders_add_end(s, r, !s->opt.no_verdict) ||
		    model_add(model, r)) {
			report_free(r);
			free(r);
			goto oom;
		}
	}
	if (model_summary(model, summary))
		goto oom;
	report_finish(summary);
	return 0;
oom:
	snprintf(err, errlen, "out of memory building the report");
	return -ENOMEM;
}
