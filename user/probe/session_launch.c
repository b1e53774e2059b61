// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Launch mode's start of a session: the command started held, followed
 * through its wrappers' execs to its Ruby, stopped at ruby_options; and
 * the child never left stopped when the session fails or closes.  Calls
 * only session_bpf.c (the order: session.h).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "diag.h"
#include "exec_watch.h"
#include "launch.h"
#include "session.h"
#include "shared_bpf.h"

/*
 * A launched command that is still held or stopped must not outlive an
 * error, the session's or cli/'s: session_close kills and reaps it, and
 * cli/ closes its session on every path.
 */
void session_release_child(struct session *s, bool kill_it)
{
	if (!s->at.child_held)
		return;
	s->at.child_held = false;
	if (kill_it) {
		kill(s->target.pid, SIGKILL);
		waitpid(s->target.pid, NULL, 0);
	}
}

/*
 * A command that is not Ruby itself (env, a shell script, bundle): each of
 * its execs stops it before its first instruction (exec_watch.h) until one
 * runs a Ruby, whose file goes into ruby_file; it is left stopped there.
 * -1 with why if it exits first, or takes longer than --start-timeout.
 */
static int follow_to_ruby(struct session *s, pid_t pid, char *ruby_file, size_t n, char *msg,
			  size_t msglen)
{
	const char *cmd = s->opt.command[0];
	double deadline = now_seconds() + s->opt.start_timeout;
	char exe[64], real[PATH_MAX], err[PATH_MAX + 128];
	int status, execs = 0;
	ssize_t len;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG | WUNTRACED);

		if (got == pid && !WIFSTOPPED(status)) {
			session_release_child(s, false); /* reaped */
			snprintf(msg, msglen,
				 "%s exited without running Ruby (status %d, %d exec%s followed)",
				 cmd, session_decode_status(status), execs, execs == 1 ? "" : "s");
			return -ECHILD;
		}
		/* A stop that is not ours (the user's) is left alone. */
		if (got == pid && held_by_us(s->at.skel, pid)) {
			execs++;
			len = readlink(exe, real, sizeof(real) - 1);
			if (len > 0) {
				real[len] = '\0';
				if (launch_exe_runs_ruby(exe) &&
				    launch_find_ruby(real, ruby_file, n, err, sizeof(err)) == 0) {
					exec_watch_follow(pid, false);
					rbm_info("%s runs Ruby after %d exec%s: %s", cmd, execs,
						 execs == 1 ? "" : "s", real);
					return 0;
				}
			}
			held_release(s->at.skel, pid);
			continue;
		}
		if (now_seconds() > deadline) {
			snprintf(msg, msglen, "%s did not run Ruby within %g s (--start-timeout)",
				 cmd, s->opt.start_timeout);
			return -ETIMEDOUT;
		}
		usleep(2000);
	}
}

/*
 * The command's Ruby found (*direct: the command is Ruby itself) or, when it
 * is not, its execs to be followed; the run's BPF object loaded.
 */
static int launch_prepare(struct session *s, char *ruby_file, size_t n, bool *direct, char *msg,
			  size_t msglen)
{
	char err[PATH_MAX + 128];
	int ret;

	ret = launch_find_ruby(s->opt.command[0], ruby_file, n, err, sizeof(err));
	if (ret && ret != -ENOEXEC) {
		snprintf(msg, msglen, "%s", err);
		return ret;
	}
	*direct = ret == 0;
	if (*direct && (ret = ruby_target_check_file(&s->target, ruby_file, ruby_file,
						     RUBY_NEED_TRACE, msg, msglen)))
		return ret;
	shared_bpf_prepare_live_map(s->opt.max_objects);
	if ((ret = session_load_bpf(s, msg, msglen)))
		return ret;
	if (!*direct && (ret = exec_watch_start(s->at.skel, false))) {
		snprintf(msg, msglen, "%s; and its execs cannot be followed: %s", err,
			 strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * The command started held (*release_fd lets it go) and, when not Ruby
 * itself, followed through its execs to its Ruby: ruby_file.
 */
static int launch_spawn_held(struct session *s, bool direct, char *ruby_file, size_t n,
			     int *release_fd, char *msg, size_t msglen)
{
	pid_t pid = launch_spawn(s->opt.command, release_fd);
	int ret;

	if (pid < 0) {
		snprintf(msg, msglen, "cannot start %s: %s", s->opt.command[0], strerror(-pid));
		return pid;
	}
	s->target.pid = pid;
	s->launched = true;
	s->at.child_held = true;
	if (direct)
		return 0;
	if ((ret = exec_watch_follow(pid, true))) {
		close(*release_fd);
		snprintf(msg, msglen, "cannot follow %s: %s", s->opt.command[0], strerror(-ret));
		return ret;
	}
	launch_release(*release_fd);
	if ((ret = follow_to_ruby(s, pid, ruby_file, n, msg, msglen)) ||
	    (ret = ruby_target_check_file(&s->target, ruby_file, ruby_file, RUBY_NEED_TRACE, msg,
					  msglen)))
		return ret;
	return 0;
}

/* The launch stops attached, the child let go and waited for at ruby_options' return. */
static int launch_stop_at_ruby(struct session *s, bool direct, const char *ruby_file,
			       int release_fd, char *msg, size_t msglen)
{
	pid_t pid = s->target.pid;
	int status, ret;

	s->at.probes = (struct probes){.skel = s->at.skel,
				       .slot = s->at.slot.index,
				       .pid = pid,
				       .binary = ruby_file,
				       .verbose = rbm_verbose};
	s->at.st->stop_at_start = 1;
	s->at.st->stop_at_exit = 1;
	if ((ret = probes_attach_launch_stops(&s->at.probes))) {
		if (direct)
			close(release_fd);
		snprintf(msg, msglen, "cannot attach to %s", ruby_file);
		return ret < 0 ? ret : -EINVAL;
	}
	if (direct)
		launch_release(release_fd);
	else
		held_release(s->at.skel, pid); /* from its exec of Ruby */
	if (waitpid(pid, &status, WUNTRACED) != pid || !WIFSTOPPED(status)) {
		session_release_child(s, false); /* reaped, or not ours to wait for */
		snprintf(msg, msglen, "%s exited before Ruby started (status %d)",
			 s->opt.command[0],
			 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		return -ECHILD;
	}
	return 0;
}

int session_start_command(struct session *s, char *msg, size_t msglen)
{
	char ruby_file[PATH_MAX];
	int release_fd, ret;
	bool direct;

	if ((ret = launch_prepare(s, ruby_file, sizeof(ruby_file), &direct, msg, msglen)) ||
	    (ret = launch_spawn_held(s, direct, ruby_file, sizeof(ruby_file), &release_fd, msg,
				     msglen)) ||
	    (ret = launch_stop_at_ruby(s, direct, ruby_file, release_fd, msg, msglen)))
		return ret;
	if ((ret = ruby_target_attach(&s->target, s->target.pid, msg, msglen)))
		return ret;
	/* From here on, attach to the file as the running child maps it. */
	s->at.probes.binary = s->target.img.host_path;
	if (ruby_target_require(&s->target, PROOF_ALL, SESSION_TRACE_NEEDS, true, msg, msglen))
		return -ENOTSUP;
	return 0;
}

int session_decode_status(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
