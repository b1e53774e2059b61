// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <linux/types.h>
#include "forks.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"

/* The one watcher of the run's forks, for every sweeper. */
static struct {
	pthread_mutex_t lock; /* sweepers, and a sweep under way */
	struct fork_sweeper *by_slot[RBM_MAX_SLOTS];
	int users;
	struct rbmemtrace_bpf *skel;
	struct bpf_link *link; /* the fork tracepoint */
	struct ring_buffer *rb;
	int stop_fd; /* an eventfd: wakes the thread to end it */
	pthread_t thread;
	bool running;
} watch = {.lock = PTHREAD_MUTEX_INITIALIZER, .stop_fd = -1};

/* Under the lock: the fork goes to its parent's sweeper, if that one still watches. */
static int count_fork(void *ctx, void *data, size_t size)
{
	const struct fork_event *ev = data;
	struct fork_sweeper *f;

	(void)ctx;
	if (size < sizeof(*ev) || ev->slot >= RBM_MAX_SLOTS)
		return 0;
	f = watch.by_slot[ev->slot];
	if (f && (__u32)f->probes->pid == ev->parent) {
		f->forks++;
		f->pending = true;
	}
	return 0;
}

static void *sweep_loop(void *arg)
{
	struct pollfd fds[2] = {
		{.fd = ring_buffer__epoll_fd(watch.rb), .events = POLLIN},
		{.fd = watch.stop_fd, .events = POLLIN},
	};
	int i;

	(void)arg;
	for (;;) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		pthread_mutex_lock(&watch.lock);
		/* Forks told meanwhile are swept by the same pass. */
		if (ring_buffer__consume(watch.rb) >= 0) {
			for (i = 0; i < RBM_MAX_SLOTS; i++) {
				struct fork_sweeper *f = watch.by_slot[i];
				int err;

				if (!f || !f->pending)
					continue;
				f->pending = false;
				err = probes_sweep_forked(f->probes);
				if (err)
					f->error = err;
				f->sweeps++;
			}
		}
		pthread_mutex_unlock(&watch.lock);
	}
	return NULL;
}

static void watch_stop(void)
{
	uint64_t one = 1;

	if (watch.running) {
		if (write(watch.stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(watch.thread, NULL);
		watch.running = false;
	}
	ring_buffer__free(watch.rb);
	watch.rb = NULL;
	bpf_link__destroy(watch.link);
	watch.link = NULL;
	if (watch.stop_fd >= 0)
		close(watch.stop_fd);
	watch.stop_fd = -1;
}

static int watch_start(struct rbmemtrace_bpf *skel)
{
	int err;

	watch.skel = skel;
	watch.stop_fd = eventfd(0, EFD_CLOEXEC);
	if (watch.stop_fd < 0)
		return -errno;
	watch.link = bpf_program__attach(skel->progs.on_fork);
	if (!watch.link) {
		err = -errno;
		goto fail;
	}
	watch.rb = ring_buffer__new(bpf_map__fd(skel->maps.forks), count_fork, NULL, NULL);
	if (!watch.rb) {
		err = -errno;
		goto fail;
	}
	err = -pthread_create(&watch.thread, NULL, sweep_loop, NULL);
	if (err)
		goto fail;
	watch.running = true;
	return 0;
fail:
	watch_stop();
	return err;
}

int fork_sweeper_start(struct fork_sweeper *f, struct probes *probes)
{
	__u32 pid = probes->pid, slot = probes->slot;
	int err;

	memset(f, 0, sizeof(*f));
	f->probes = probes;
	if (slot >= RBM_MAX_SLOTS)
		return -EINVAL;
	/* Called from the sessions' thread only: the lock is for the sweeping thread. */
	if (!watch.users && (err = watch_start(probes->skel)))
		return err;
	pthread_mutex_lock(&watch.lock);
	watch.by_slot[slot] = f;
	pthread_mutex_unlock(&watch.lock);
	watch.users++;
	f->running = true;
	err = bpf_map_update_elem(bpf_map__fd(probes->skel->maps.fork_slots), &pid, &slot, BPF_ANY);
	if (err) {
		err = -errno;
		fork_sweeper_stop(f);
	}
	return err;
}

void fork_sweeper_stop(struct fork_sweeper *f)
{
	__u32 pid;

	if (!f->running)
		return;
	pid = f->probes->pid;
	bpf_map_delete_elem(bpf_map__fd(f->probes->skel->maps.fork_slots), &pid);
	/* A sweep under way for it finishes first. */
	pthread_mutex_lock(&watch.lock);
	watch.by_slot[f->probes->slot] = NULL;
	pthread_mutex_unlock(&watch.lock);
	f->running = false;
	if (--watch.users == 0)
		watch_stop();
}
