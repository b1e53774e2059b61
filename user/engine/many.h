/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A set of processes traced in one run (many.c): given pids, every Ruby
 * (--all) or those whose command line matches (--match), opened, polled
 * from one loop, made into reports and closed.  It knows nothing of where
 * the reports go: cli/ writes them.
 */
#ifndef RBM_MANY_H
#define RBM_MANY_H
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include "diag.h"
#include "report.h"
#include "session.h"

#define MANY_MAX 256

/* Which processes, and how each is traced. */
struct many_options {
	struct trace_options trace; /* every process's; pid is set per process */
	pid_t pids[MANY_MAX];	    /* -p given more than once */
	size_t npids;
	bool all;	   /* every Ruby process on the host */
	const char *match; /* those whose command line matches */
};

/* The processes of a run, each with its session, in the order attached. */
struct many {
	const struct many_options *mo;
	struct session *sessions[MANY_MAX];
	bool ended[MANY_MAX];
	size_t n;
	pid_t refused[MANY_MAX]; /* could not be traced: said once, not tried again */
	size_t nrefused;
	regex_t re;
	bool have_re;
	double last_scan;
	bool watching; /* the exec watch is on: processes are held at their start */
	bool attaching; /* the first processes: one that fails is fatal unless several */
	size_t let_go;	/* held past MANY_MAX_HOLD before their turn: let go, found by the rescan */
	const struct many_hooks *hooks;
	int failed;		  /* an error ends the run: -errno, its line in error */
	char error[RBM_ERR_LEN];
};

/*
 * What a continuous run (trace --every, serve) adds to the loop.  Each is
 * called on the loop's thread; any may be NULL.  One that cannot go on
 * says so with many_fail, which ends the run.
 */
struct many_hooks {
	void *ctx;
	/* Process i was attached (its session started). */
	void (*added)(void *ctx, struct many *m, size_t i);
	/* Each turn, after the sessions were polled: the longest wait before the next one. */
	double (*turn)(void *ctx, struct many *m, double now);
	/* Process i's session ended (its target exited or exec'd). */
	void (*ended)(void *ctx, struct many *m, size_t i);
	/* Go on after every given process ended, until the duration or a signal (serve). */
	bool outlive_targets;
};

/*
 * Attaches to the processes mo names (-p, --all, --match); hooks (may be
 * NULL) see each.  0, or -errno with its line in err when none can be
 * traced (or a single -p cannot): m is closed then.
 */
int many_attach(struct many *m, const struct many_options *mo, const struct many_hooks *hooks,
		char *err, size_t errlen);
/*
 * Polls until the duration, a signal, or (given pids only) every one
 * ended.  0, or the error that ended the run (-errno, its line in err):
 * m is still open, for many_close.
 */
int many_run(struct many *m, volatile sig_atomic_t *stop, char *err, size_t errlen);
/* Ends the run with an error (the first one is kept): for the hooks. */
void many_fail(struct many *m, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/*
 * Each process's final report into model (the caller's, from {}) and the
 * summary over all into summary, finished.  0, or -errno with err.
 */
int many_reports(struct many *m, struct model *model, struct report *summary, char *err,
		 size_t errlen);
/* Detaches every probe and frees the sessions; held processes are let go. */
void many_close(struct many *m);

#endif
