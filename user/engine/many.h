/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Tracing several processes in one run (trace_many.c). */
#ifndef RBM_TRACE_MANY_H
#define RBM_TRACE_MANY_H
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include "session.h"
#include "writers.h"

#define MANY_MAX 256

struct many_options {
	struct trace_options trace; /* every process's; pid is set per process */
	pid_t pids[MANY_MAX];	    /* -p given more than once */
	size_t npids;
	bool all;	   /* every Ruby process on the host */
	const char *match; /* those whose command line matches */
	int format;	   /* MODEL_TEXT, MODEL_JSON, MODEL_PPROF, MODEL_FOLDED */
	const char *output;
	struct text_options text;
};

/* Traces them until the duration, a signal, or (given pids only) every one ended. */
int trace_many(const struct many_options *mo, volatile sig_atomic_t *stop);

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
};

/*
 * What a continuous run (trace --every, serve) adds to the loop.  Each is
 * called on the loop's thread; any may be NULL.
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
 * Attaches to the processes mo names (-p, --all, --match), dying with a
 * one-line error when none can be traced; hooks (may be NULL) see each.
 */
void many_attach(struct many *m, const struct many_options *mo, const struct many_hooks *hooks);
/* Polls until the duration, a signal, or (given pids only) every one ended. */
void many_run(struct many *m, volatile sig_atomic_t *stop);
/* Detaches every probe and frees the sessions. */
void many_close(struct many *m);

#endif
