/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `rbmemtrace top` gathers each refresh: a heap census of every
 * target (free for the target) into the top model, the header figures from
 * /proc and Ruby's counters, and, once a drill-down asks for them, sampled
 * allocation windows (a trace session within --max-overhead) whose sites,
 * call paths and allocation rates the screen shows.
 */
#ifndef RBM_TOP_COLLECT_H
#define RBM_TOP_COLLECT_H
#include <stdbool.h>
#include "classnames.h"
#include "ruby_layout.h"
#include "report.h"
#include "ruby_target.h"
#include "session.h"
#include "top_model.h"

struct top_target {
	struct ruby_target target;
	struct class_namer namer;
	bool gone;
	struct session *session; /* sampled windows; NULL until asked for */
	bool session_ended;
	struct report drill; /* what the session learned, as of the last refresh */
	bool have_drill;
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
 * Opens pid: dies with a one-line error if it is not a Ruby whose heap can
 * be read, or with skippable (one --match found) says that line and skips it.
 */
void top_collect_add(struct top_collector *c, struct top_model *m, pid_t pid, bool skippable);
/* One refresh at time t: every target's census into m. */
void top_collect_refresh(struct top_collector *c, struct top_model *m, double t);
/* Starts the sampled windows on pid (0: on every target) if not on yet. */
void top_collect_sample(struct top_collector *c, struct top_model *m, pid_t pid);
/* Polls the running sessions; the seconds until one needs polling again (at most max). */
double top_collect_poll(struct top_collector *c, double now, double max);
/* The drill-down report of pid, or of every target merged (pid 0); NULL if none yet. */
const struct report *top_collect_drill(struct top_collector *c, pid_t pid);
void top_collect_free(struct top_collector *c);

struct top_ui;
/*
 * Key w in the drill-down: the top retainer paths of ui->drill_name in pid's
 * process (the first one alive when pid is 0), read now by `why` into ui's
 * why_* lines.  The screen waits: a walk takes about a second per million
 * objects.
 */
void top_collect_why(struct top_collector *c, pid_t pid, struct top_ui *ui);

#endif
