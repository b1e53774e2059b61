/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A heap walk runs at nice 19, so that a running target keeps its cores
 * (bench/why.rb: the target 3.5% slower during a walk instead of 43%).  On
 * a machine whose every core is busy at the default priority, nice 19 gets
 * a sliver of a core: a walk and its dominators of 1 s took minutes.  The
 * guard watches the walking thread and gives it its priority back once it
 * has waited too long for a core: after NICE_GUARD_GRACE seconds, when it
 * ran for less than a quarter of the time.  The walk's cost then comes
 * from the target's cores, for about as long as the walk's own CPU time.
 */
#ifndef RBM_NICE_GUARD_H
#define RBM_NICE_GUARD_H
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#define NICE_GUARD_GRACE 2.0

struct nice_guard {
	pthread_t watcher;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	clockid_t cpu_clock; /* the walking thread's */
	pid_t tid;
	int old_nice;
	bool watching, stop;
	double started, cpu_started;
	bool raised;	      /* its priority was given back */
	double waited, ran;   /* then: seconds since the start, and on a CPU */
};

/* The calling thread at nice 19, watched; without a watcher (no thread) it stays nice. */
void nice_guard_start(struct nice_guard *g);
/* The watcher gone and the thread's nice as before; -v says if it was starved (g->raised). */
void nice_guard_stop(struct nice_guard *g);

#endif
