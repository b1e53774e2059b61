/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `rbmemtrace top` gathers each refresh: a heap census of every
 * target (free for the target) into the top model, the header figures from
 * /proc and Ruby's counters, and, once a drill-down asks for them, sampled
 * allocation windows (a trace session within --max-overhead) whose sites,
 * call paths and allocation rates the screen shows.  It knows nothing of
 * the screen: cmd_top.c shows what it gathers.  An error is returned,
 * -errno with its line in err, and ends top.
 */
#ifndef RBM_TOP_COLLECT_H
#define RBM_TOP_COLLECT_H
#include <stdbool.h>
#include "census.h"
#include "classnames.h"
#include "ruby_layout.h"
#include "report.h"
#include "ruby_target.h"
#include "session.h"
#include "top_model.h"
#include "verdict.h"
#include "verdict_run.h"
#include "why_model.h"

struct top_target {
	struct ruby_target target;
	struct class_namer namer;
	bool gone;
	struct session *session; /* sampled windows; NULL until asked for */
	bool session_ended;
	struct report drill; /* what the session learned, as of the last refresh */
	bool have_drill;
	/*
	 * The leak verdict's start (key v): a census and a heap walk taken when
	 * the user first drilled into this process, kept until top ends.  NULL
	 * until then: a walk only for a process drilled into.
	 */
	struct verdict_base *vbase;
	struct census vcensus;
	bool have_vcensus;
};

struct top_collector {
	struct top_target targets[TOP_MAX_PROCS];
	size_t ntargets;
	double max_overhead; /* percent, for the sampled windows */
	unsigned long depth;
	unsigned long max_objects; /* each drill-down session's live-object map */
	struct report merged; /* the drill-down of summed rows */
	bool have_merged;
};

/*
 * Opens pid: an error if it is not a Ruby whose heap can be read, or with
 * skippable (one --match found) says that line, skips it and returns 0.
 */
int top_collect_add(struct top_collector *c, struct top_model *m, pid_t pid, bool skippable,
		    char *err, size_t errlen);
/*
 * The processes whose command line matches the extended regular
 * expression match, each added as skippable: an error if none can be read.
 */
int top_collect_match(struct top_collector *c, struct top_model *m, const char *match, char *err,
		      size_t errlen);
/* One refresh at time t: every target's census into m.  0, or -ENOMEM. */
int top_collect_refresh(struct top_collector *c, struct top_model *m, double t, char *err,
			size_t errlen);
/* Starts the sampled windows on pid (0: on every target) if not on yet.  0 or -errno. */
int top_collect_sample(struct top_collector *c, struct top_model *m, pid_t pid, char *err,
		       size_t errlen);
/*
 * Polls the running sessions; *wait (at most what it held) becomes the
 * seconds until one needs polling again.  0, or the error of probes that
 * cannot go on.
 */
int top_collect_poll(struct top_collector *c, double now, double *wait, char *err, size_t errlen);
/* The drill-down report of pid, or of every target merged (pid 0); NULL if none yet. */
const struct report *top_collect_drill(struct top_collector *c, pid_t pid);
void top_collect_free(struct top_collector *c);

/*
 * Key w in the drill-down: the top retainer paths of the class called
 * class_name in pid's process (the first one alive when pid 0), read now by
 * `why` into why (from {}; why_free it whatever the result), the process
 * read in *read_pid.  0; -ESRCH when no such process is alive; or another
 * -errno with err.  The caller waits: a walk takes about a second per
 * million objects.
 */
int top_collect_why(struct top_collector *c, pid_t pid, const char *class_name,
		    struct why_report *why, pid_t *read_pid, char *err, size_t errlen);

/*
 * The one process a drill-down of pid reads: pid, or with pid 0 (summed
 * rows) the only process shown; 0 when there are several (or none).
 */
pid_t top_collect_drilled(const struct top_collector *c, pid_t pid);
/*
 * A drill-down into pid (its session open): the leak verdict's start, a
 * census and a heap walk at nice 19, taken once per process (the first
 * drill-down into it).  0, or -ENOMEM.  *seconds: what it took, 0 when
 * none was taken now; why: why it could not be (the verdict's none line
 * later says it too), "" otherwise.
 */
int top_collect_verdict_start(struct top_collector *c, pid_t pid, double *seconds, char *why,
			      size_t whylen);
/*
 * Key v: pid's leak verdict from its drill-down's start to now (an end
 * census and walk, as a period's), into *out (verdict_free it).  A verdict
 * that cannot be judged says why in its none line.  0; -ESRCH when the
 * process is gone; -ENOMEM; or another -errno with err (no session to
 * read, a census that failed).  *start: what the start's walk cost.
 */
struct top_verdict_start {
	double seconds;	    /* its census and walk took; 0: none taken */
	uint64_t kept_bytes; /* what they keep while top runs */
};
int top_collect_verdict(struct top_collector *c, pid_t pid, struct verdict **out,
			struct top_verdict_start *start, char *err, size_t errlen);

#endif
