/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Children the target forks while the allocation probes are one
 * uprobe_multi link: each starts with a copy of the target's breakpoints,
 * which that link's consumers never ask the kernel to take out, so the
 * child, untraced, would trap on every allocation until the link comes
 * off (~100x slower).  The BPF side tells each fork; a thread of ours then
 * takes the breakpoints out of the children (probes_sweep_forked), within
 * milliseconds of the fork.  Perf-link uprobes need none of this: their
 * consumers answer "remove" in another process, at its first hit.
 *
 * The run's BPF object is shared: so are the fork tracepoint, its ring
 * buffer and the thread reading it, started with the first sweeper and
 * ended with the last; each fork is routed to its parent's sweeper.
 */
#ifndef RBM_FORKS_H
#define RBM_FORKS_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "attach.h"

struct fork_sweeper {
	struct probes *probes;
	bool running;
	bool pending;	 /* forks told since the last sweep (under the watcher's lock) */
	uint64_t forks;	 /* forks told */
	uint64_t sweeps; /* sweeps done (several forks can share one) */
	int error;	 /* the last sweep's, -errno; 0 if none failed */
};

/* Starts telling and sweeping the forks of probes->pid.  0 or -errno. */
int fork_sweeper_start(struct fork_sweeper *f, struct probes *probes);
/* Ends it (a sweep under way finishes first).  Safe when not started. */
void fork_sweeper_stop(struct fork_sweeper *f);

#endif
