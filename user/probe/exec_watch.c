// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "clock.h"
#include "diag.h"
#include "exec_watch.h"
#include "launch.h"
#include "proc_info.h"
#include "procmaps.h"
#include "rbmemtrace.skel.h"

#define MAX_IMAGES 32 /* libruby files with a start probe */

static struct {
	struct rbmemtrace_bpf *skel;
	struct bpf_link *link; /* the exec tracepoint */
	struct ring_buffer *rb;
	bool all;
	struct {
		dev_t dev;
		ino_t ino;
		struct bpf_link *link;
	} images[MAX_IMAGES];
	int nimages;
	int watchdog_fd; /* its pipe: our end closing, by exit or death, wakes it */
	pid_t watchdog;
	exec_watch_fn fn; /* during exec_watch_wait */
	void *ctx;
} w = {.watchdog_fd = -1};

__u32 exec_watch_kernel_dev(dev_t dev)
{
	return major(dev) << 20 | minor(dev);
}

bool held_by_us(struct rbmemtrace_bpf *skel, pid_t pid)
{
	__u32 key = pid, v;

	return bpf_map_lookup_elem(bpf_map__fd(skel->maps.held), &key, &v) == 0;
}

void held_release(struct rbmemtrace_bpf *skel, pid_t pid)
{
	__u32 key = pid;

	kill(pid, SIGCONT);
	bpf_map_delete_elem(bpf_map__fd(skel->maps.held), &key);
}

/* Continues every process in the held map: what the watchdog does when we are gone. */
static void continue_held(int map_fd)
{
	__u32 key, next;
	bool first = true;

	while (bpf_map_get_next_key(map_fd, first ? NULL : &key, &next) == 0) {
		kill(next, SIGCONT);
		key = next;
		first = false;
	}
}

/*
 * The watchdog: a child holding only the held map and a pipe's read end.
 * When every write end is closed (the tracer exited or was killed, and the
 * child that outlives it holding the links, shared_bpf_release_after_exit,
 * exited too), it continues every process still held, again a little
 * later for a stop sent while the links were being torn down, and exits.
 * Nobody waits for it.  Job-control signals meant for the tracer's
 * terminal do not reach it.
 */
static int start_watchdog(int map_fd)
{
	int p[2], m, r;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		m = fcntl(map_fd, F_DUPFD, 100);
		r = fcntl(p[0], F_DUPFD, 101);
		/* No BPF link may live on in us: the tracer's programs die with it. */
		if (m != 100 || r != 101 || close_range(3, 99, 0) || close_range(102, ~0U, 0))
			_exit(1); /* forked child (the watchdog): it could not shed our links */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		setpgid(0, 0);
		prctl(PR_SET_NAME, "rbmemtrace-wd");
		while (read(r, &c, 1) < 0 && errno == EINTR)
			;
		continue_held(m);
		usleep(100 * 1000);
		continue_held(m);
		usleep(400 * 1000);
		continue_held(m);
		_exit(0); /* forked child (the watchdog): every held process let go */
	}
	close(p[0]);
	w.watchdog_fd = p[1];
	w.watchdog = pid;
	return 0;
}

static int exec_event(void *ctx, void *data, size_t size);

int exec_watch_start(struct rbmemtrace_bpf *skel, bool all)
{
	int err;

	if (w.skel) {
		w.all |= all;
		skel->bss->watch_execs |= all;
		return 0;
	}
	w.skel = skel;
	w.all = all;
	err = start_watchdog(bpf_map__fd(skel->maps.held));
	if (err)
		goto fail;
	w.rb = ring_buffer__new(bpf_map__fd(skel->maps.execs), exec_event, NULL, NULL);
	if (!w.rb) {
		err = -errno;
		goto fail;
	}
	w.link = bpf_program__attach(skel->progs.on_exec);
	if (!w.link) {
		err = -errno;
		goto fail;
	}
	skel->bss->watch_execs = all;
	return 0;
fail:
	exec_watch_stop();
	return err;
}

static bool release_held_event(void *ctx, const struct exec_event *ev)
{
	(void) ctx;
	if (ev->kind == EXEC_HELD || ev->kind == EXEC_FOLLOWED)
		held_release(w.skel, ev->pid);
	return true;
}

/* No exec is judged or held from here on: the tracepoint and the start probes come off. */
static void detach_watch_links(void)
{
	int i;

	w.skel->bss->watch_execs = 0;
	bpf_link__destroy(w.link);
	w.link = NULL;
	for (i = 0; i < w.nimages; i++)
		bpf_link__destroy(w.images[i].link);
	w.nimages = 0;
}

void exec_watch_end_holds(void)
{
	if (!w.skel)
		return;
	detach_watch_links();
	/* A process that stopped before the links came off is let go, not attached. */
	w.fn = release_held_event;
	while (ring_buffer__consume(w.rb) == -EAGAIN)
		;
	w.fn = NULL;
}

void exec_watch_stop(void)
{
	if (!w.skel)
		return;
	detach_watch_links();
	ring_buffer__free(w.rb);
	/* Not waited for: a child that holds the links until we exit holds this pipe too. */
	if (w.watchdog_fd >= 0)
		close(w.watchdog_fd);
	memset(&w, 0, sizeof(w));
	w.watchdog_fd = -1;
}

/* The start probe on one libruby (or static ruby), once per file. */
static int watch_image(const char *image)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "ruby_options", .retprobe = true);
	struct bpf_link *link;
	struct stat st;
	int i;

	if (stat(image, &st))
		return -errno;
	for (i = 0; i < w.nimages; i++)
		if (w.images[i].dev == st.st_dev && w.images[i].ino == st.st_ino)
			return 0;
	if (w.nimages == MAX_IMAGES)
		return -ENOSPC;
	/* pid -1: every process that maps the file, those that map it later too. */
	link =
	    bpf_program__attach_uprobe_opts(w.skel->progs.on_ruby_start_watch, -1, image, 0, &opts);
	if (!link)
		return -errno;
	w.images[w.nimages].dev = st.st_dev;
	w.images[w.nimages].ino = st.st_ino;
	w.images[w.nimages++].link = link;
	rbm_info("watching Ruby starts in %s", image);
	return 0;
}

static void set_verdict(const struct exe_key *key, __u32 verdict)
{
	bpf_map_update_elem(bpf_map__fd(w.skel->maps.exe_verdicts), key, &verdict, BPF_ANY);
}

int exec_watch_learn(pid_t pid, const char *image)
{
	char exe[64];

	if (!w.skel)
		return -EINVAL;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	return exec_watch_learn_file(exe, image);
}

int exec_watch_learn_file(const char *exe, const char *image)
{
	struct exe_key key = {};
	struct stat st;

	if (!w.skel)
		return -EINVAL;
	if (stat(exe, &st) == 0) {
		key.ino = st.st_ino;
		key.dev = exec_watch_kernel_dev(st.st_dev);
		set_verdict(&key, EXE_RUBY);
	}
	return watch_image(image);
}

void exec_watch_decide(pid_t pid, bool wanted)
{
	__u32 key = pid, state = wanted ? CAND_WANTED : CAND_REJECTED;

	if (w.skel)
		bpf_map_update_elem(bpf_map__fd(w.skel->maps.candidates), &key, &state, BPF_ANY);
}

bool exec_watch_pending(pid_t pid)
{
	__u32 key = pid, v;

	if (!w.skel)
		return false;
	if (held_by_us(w.skel, pid))
		return true;
	/* A candidate that started long ago passed ruby_options before its file had the probe. */
	return bpf_map_lookup_elem(bpf_map__fd(w.skel->maps.candidates), &key, &v) == 0 &&
	       proc_uptime(pid) < 2;
}

int exec_watch_follow(pid_t pid, bool on)
{
	__u32 key = pid, one = 1;
	int fd;

	if (!w.skel)
		return -EINVAL;
	fd = bpf_map__fd(w.skel->maps.followed);
	if (on)
		return bpf_map_update_elem(fd, &key, &one, BPF_ANY) ? -errno : 0;
	bpf_map_delete_elem(fd, &key);
	return 0;
}

/*
 * A file never judged: judged once, from the process that exec'd it.  A
 * Ruby's process becomes a candidate, and its libruby gets the start probe
 * as soon as the loader maps it; if it has already entered ruby_options by
 * then, it is not held (the caller's rescan still finds it).
 */
static void judge(const struct exec_event *ev)
{
	struct ruby_image img;
	char path[64], err[256];
	struct stat st;
	__u32 undecided = CAND_UNDECIDED, key = ev->pid;
	bool ruby;
	int fd, tries;

	snprintf(path, sizeof(path), "/proc/%u/exe", ev->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* gone: judged at the file's next exec */
	/* It may have exec'd again meanwhile: judge only the file the event names. */
	if (fstat(fd, &st) || st.st_ino != ev->exe.ino) {
		close(fd);
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ruby = launch_exe_runs_ruby(path);
	close(fd);
	set_verdict(&ev->exe, ruby ? EXE_RUBY : EXE_NOT_RUBY);
	if (!ruby)
		return;
	bpf_map_update_elem(bpf_map__fd(w.skel->maps.candidates), &key, &undecided, BPF_ANY);
	/* The loader maps libruby within milliseconds of the exec. */
	for (tries = 0; tries < 100; tries++) {
		if (procmaps_find_ruby(ev->pid, &img, err, sizeof(err)) == 0) {
			watch_image(img.host_path);
			break;
		}
		if (target_gone(ev->pid))
			return;
		usleep(1000);
	}
	if (w.fn)
		w.fn(w.ctx,
		     &(struct exec_event){.kind = EXEC_RUBY, .pid = ev->pid, .exe = ev->exe});
}

double exec_event_age(const struct exec_event *ev)
{
	/* now_seconds is CLOCK_MONOTONIC, bpf_ktime_get_ns's clock */
	return ev->at_ns ? now_seconds() - ev->at_ns / 1e9 : 0;
}

static int exec_event(void *ctx, void *data, size_t size)
{
	const struct exec_event *ev = data;
	bool attached = false;

	(void) ctx;
	if (size < sizeof(*ev))
		return 0;
	if (ev->kind == EXEC_UNKNOWN)
		judge(ev);
	else if (w.fn)
		attached = w.fn(w.ctx, ev);
	/*
	 * One attach per turn of the caller's loop: its sessions (a held
	 * process waiting at its exit stop) and Ctrl-C are seen in between,
	 * however fast processes start.  The event is consumed all the same.
	 */
	return attached && (ev->kind == EXEC_HELD || ev->kind == EXEC_UNHELD) ? -EAGAIN : 0;
}

int exec_watch_wait(double seconds, exec_watch_fn fn, void *ctx)
{
	struct pollfd pfd;
	int ret;

	if (!w.skel) {
		if (seconds > 0)
			usleep(seconds * 1e6);
		return 0;
	}
	pfd = (struct pollfd){.fd = ring_buffer__epoll_fd(w.rb), .events = POLLIN};
	if (poll(&pfd, 1, seconds > 0 ? (int) (seconds * 1e3 + 0.999) : 0) < 0 && errno != EINTR)
		return -errno;
	w.fn = fn;
	w.ctx = ctx;
	ret = ring_buffer__consume(w.rb);
	w.fn = NULL;
	return ret < 0 && ret != -EAGAIN ? ret : 0;
}
