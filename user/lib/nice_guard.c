// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* nice_guard.h: a niced walk that waits too long for a core gets its priority back. */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "clock.h"
#include "diag.h"
#include "nice_guard.h"

#define CHECK_NS 200000000L /* how often the watcher looks */

static double clock_s(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return 0;
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether the walk has waited long enough for a core, and so little ran, to be starved. */
static bool starved(const struct nice_guard *g)
{
	double waited = now_seconds() - g->started;
	double ran = clock_s(g->cpu_clock) - g->cpu_started;

	return waited > NICE_GUARD_GRACE && ran < waited / 4;
}

static void *watch(void *arg)
{
	struct nice_guard *g = arg;
	struct timespec until;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += CHECK_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&g->cond, &g->lock, &until) != ETIMEDOUT || g->stop)
			continue;
		if (!g->raised && starved(g)) {
			/* another thread's nice: by its thread id (PRIO_PROCESS takes one) */
			setpriority(PRIO_PROCESS, g->tid, g->old_nice);
			g->raised = true;
			g->waited = now_seconds() - g->started;
			g->ran = clock_s(g->cpu_clock) - g->cpu_started;
		}
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

void nice_guard_start(struct nice_guard *g)
{
	memset(g, 0, sizeof(*g));
	g->tid = (pid_t) syscall(SYS_gettid);
	errno = 0;
	g->old_nice = getpriority(PRIO_PROCESS, 0);
	if (errno)
		g->old_nice = 0;
	setpriority(PRIO_PROCESS, 0, 19);
	if (pthread_getcpuclockid(pthread_self(), &g->cpu_clock))
		return;
	g->started = now_seconds();
	g->cpu_started = clock_s(g->cpu_clock);
	if (pthread_mutex_init(&g->lock, NULL))
		return;
	if (pthread_cond_init(&g->cond, NULL)) {
		pthread_mutex_destroy(&g->lock);
		return;
	}
	g->watching = pthread_create(&g->watcher, NULL, watch, g) == 0;
	if (!g->watching) {
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->lock);
	}
}

void nice_guard_stop(struct nice_guard *g)
{
	if (g->watching) {
		pthread_mutex_lock(&g->lock);
		g->stop = true;
		pthread_cond_signal(&g->cond);
		pthread_mutex_unlock(&g->lock);
		pthread_join(g->watcher, NULL);
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->lock);
		g->watching = false;
	}
	setpriority(PRIO_PROCESS, 0, g->old_nice); /* as root; others stay nice */
	if (g->raised)
		rbm_info("why: the walk waited %.1f s at nice 19 and ran %.2f s of it: at its own "
			 "priority since (every core was busy)",
			 g->waited, g->ran);
}
