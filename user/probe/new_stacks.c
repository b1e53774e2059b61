// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/libbpf.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <linux/types.h>
#include "new_stacks.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"

static struct {
	pthread_mutex_t lock; /* the ring's consumption and the routes */
	struct ring_buffer *rb;
	pthread_t thread;
	struct {
		new_stack_fn fn;
		void *ctx;
	} routes[RBM_MAX_SLOTS];
} ns = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int hand_over(void *ctx, void *data, size_t size)
{
	const struct new_stack_event *ev = data;

	(void) ctx;
	if (size >= sizeof(*ev) && ev->slot < RBM_MAX_SLOTS && ns.routes[ev->slot].fn)
		ns.routes[ev->slot].fn(ns.routes[ev->slot].ctx, ev->stack_id);
	return 0;
}

/* Lives as long as the run: its events are few (one per new call path). */
static void *namer_thread(void *arg)
{
	struct pollfd p = {.fd = ring_buffer__epoll_fd(ns.rb), .events = POLLIN};

	(void) arg;
	for (;;) {
		if (poll(&p, 1, 1000) < 0 && errno != EINTR)
			return NULL;
		pthread_mutex_lock(&ns.lock);
		ring_buffer__consume(ns.rb);
		pthread_mutex_unlock(&ns.lock);
	}
	return NULL;
}

int new_stacks_open(struct rbmemtrace_bpf *skel)
{
	int err = 0;

	pthread_mutex_lock(&ns.lock);
	if (!ns.rb) {
		ns.rb = ring_buffer__new(bpf_map__fd(skel->maps.new_stacks), hand_over, NULL, NULL);
		if (!ns.rb)
			err = -errno;
		else if ((err = -pthread_create(&ns.thread, NULL, namer_thread, NULL))) {
			ring_buffer__free(ns.rb);
			ns.rb = NULL;
		} else {
			pthread_detach(ns.thread);
		}
	}
	pthread_mutex_unlock(&ns.lock);
	return err;
}

void new_stacks_route(int slot, new_stack_fn fn, void *ctx)
{
	if (slot < 0 || slot >= RBM_MAX_SLOTS)
		return;
	pthread_mutex_lock(&ns.lock);
	ns.routes[slot].fn = fn;
	ns.routes[slot].ctx = ctx;
	pthread_mutex_unlock(&ns.lock);
}

void new_stacks_flush(void)
{
	pthread_mutex_lock(&ns.lock);
	if (ns.rb)
		ring_buffer__consume(ns.rb);
	pthread_mutex_unlock(&ns.lock);
}
