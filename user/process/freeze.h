/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stopping a process for a bounded time (`why --freeze MS`): SIGSTOP to the
 * whole thread group, then SIGCONT when the caller is done or when MS have
 * passed, whichever comes first: a watchdog thread sends it at the
 * deadline even if the caller is still reading.  SIGCONT is also sent from
 * an atexit handler and from the handlers of the signals that would end
 * rbmemtrace (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT,
 * SIGFPE): a target is never left stopped by us.  A target already stopped
 * (by a debugger, a job control) is refused, since SIGCONT would wake it.
 */
#ifndef RBM_FREEZE_H
#define RBM_FREEZE_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct freeze {
	pid_t pid;
	unsigned long ms;
	double sent;	  /* when SIGSTOP was sent */
	double stopped;	  /* when every thread was seen stopped */
	double paused_ms; /* SIGSTOP to SIGCONT */
	bool expired;	  /* the watchdog ended it */
	bool active;
	pthread_t watchdog;
	pthread_mutex_t lock;
	pthread_cond_t done;
};

/* Stops pid for at most ms milliseconds.  0, or -errno with err. */
int freeze_start(struct freeze *f, pid_t pid, unsigned long ms, char *err, size_t errlen);
/* Waits until the watchdog ends the freeze (tests: a signal meanwhile must still thaw). */
void freeze_hold(struct freeze *f);
/* Lets it run again (if the watchdog did not already) and measures the pause. */
void freeze_end(struct freeze *f);

#endif
