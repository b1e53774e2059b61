// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
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

static int count_fork(void *ctx, void *data, size_t size)
{
	struct fork_sweeper *f = ctx;

	(void)data;
	(void)size;
	f->forks++;
	return 0;
}

static void *sweep_loop(void *arg)
{
	struct fork_sweeper *f = arg;
	struct pollfd fds[2] = {
		{.fd = ring_buffer__epoll_fd(f->rb), .events = POLLIN},
		{.fd = f->stop_fd, .events = POLLIN},
	};

	for (;;) {
		uint64_t before = f->forks;
		int err;

		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		/* Forks told meanwhile are swept by the same pass. */
		if (ring_buffer__consume(f->rb) < 0 || f->forks == before)
			continue;
		err = probes_sweep_forked(f->probes);
		if (err)
			f->error = err;
		f->sweeps++;
	}
	return NULL;
}

int fork_sweeper_start(struct fork_sweeper *f, struct probes *probes)
{
	struct rbmemtrace_bpf *skel = probes->skel;
	int err;

	memset(f, 0, sizeof(*f));
	f->probes = probes;
	f->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (f->stop_fd < 0)
		return -errno;
	skel->bss->fork_parent = (__u32)probes->pid;
	f->link = bpf_program__attach(skel->progs.on_fork);
	if (!f->link) {
		err = -errno;
		goto fail;
	}
	f->rb = ring_buffer__new(bpf_map__fd(skel->maps.forks), count_fork, f, NULL);
	if (!f->rb) {
		err = -errno;
		goto fail;
	}
	err = -pthread_create(&f->thread, NULL, sweep_loop, f);
	if (err)
		goto fail;
	f->running = true;
	return 0;
fail:
	fork_sweeper_stop(f);
	return err;
}

void fork_sweeper_stop(struct fork_sweeper *f)
{
	uint64_t one = 1;

	if (f->running) {
		if (write(f->stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(f->thread, NULL);
		f->running = false;
	}
	if (f->probes)
		f->probes->skel->bss->fork_parent = 0;
	ring_buffer__free(f->rb);
	f->rb = NULL;
	bpf_link__destroy(f->link);
	f->link = NULL;
	if (f->stop_fd > 0)
		close(f->stop_fd);
	f->stop_fd = -1;
}
