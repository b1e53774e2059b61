/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A continuous trace (trace --every, serve): the processes of a run
 * (many.h) traced on and on, and every period, for each, a report as
 * of that moment with a heap census and what the period allocated
 * (period.h), handed to a sink that writes it to a file or serves it.
 */
#ifndef RBM_PERIODIC_H
#define RBM_PERIODIC_H
#include <signal.h>
#include <stdbool.h>
#include "census.h"
#include "cohorts.h"
#include "many.h"
#include "verdict_run.h"

struct periodic;

/* Where the periods' reports go (cli/ writes or serves them); called on the loop's thread. */
struct periodic_sink {
	void *ctx;
	/* Process i's report of a period, finished; the sink may keep r until its next one. */
	void (*publish)(void *ctx, struct periodic *p, size_t i, const struct report *r);
	/* Process i ended; last is its last period's report (NULL: it had none), marked gone. */
	void (*gone)(void *ctx, struct periodic *p, size_t i, const struct report *last);
	/* Each turn of the loop (serve's requests): the longest wait before the next. */
	double (*turn)(void *ctx, struct periodic *p, double now);
};

struct periodic_proc {
	struct report last; /* the last period's report: the next one is counted from it */
	bool have_last;
	double last_at;	     /* its end, on the monotonic clock */
	uint64_t number;     /* of the next period */
	bool census_refused; /* its heap cannot be read: said once */
	/* The last period's walk and census: the next period's verdict starts there */
	struct verdict_base *base;
	struct census census;
	bool have_census;
	/* Per slot of census (or of the trace's start's, before one), the period it was born in */
	struct cohorts cohorts;
	bool have_cohorts;
	bool cohorts_lost; /* a comparison failed: later periods cannot tell births */
};

struct periodic {
	struct many m;
	struct many_options mo;
	double every;
	double start, next; /* monotonic */
	bool at_start;	    /* a first report as each process is attached (serve) */
	const struct periodic_sink *sink;
	struct many_hooks hooks;
	struct periodic_proc procs[MANY_MAX];
};

/*
 * Attaches to mo's processes (the first reports made): then periodic_loop
 * hands a report of each to sink every `every` seconds until the duration
 * or a signal (or every given process ended, unless outlive).  at_start:
 * also a report of each as it is attached (period 0), so a server has one
 * at once.  0, or -errno with err (p is closed then).
 */
int periodic_attach(struct periodic *p, const struct many_options *mo, double every, bool at_start,
		    bool outlive, const struct periodic_sink *sink, char *err, size_t errlen);
/* 0, or the error that ended the loop (-errno with err); p is still open. */
int periodic_loop(struct periodic *p, volatile sig_atomic_t *stop, char *err, size_t errlen);
/* Detaches every probe; frees the sessions and the reports kept. */
void periodic_close(struct periodic *p);

#endif
