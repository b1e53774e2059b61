/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A trace of one process, -p PID or launch mode's command (trace_one.c):
 * the session opened, run until the duration, a signal or the target's
 * end, made into its report (with the leak suspects' retainer paths), and
 * closed.  cli/ writes the report; on an error it closes the session, which
 * kills a launched command still held.
 */
#ifndef RBM_TRACE_ONE_H
#define RBM_TRACE_ONE_H
#include <signal.h>
#include <stdbool.h>
#include "report.h"
#include "session.h"

/* Opens the session (in launch mode the command is started, held).  0, or -errno (s closed). */
int trace_one_open(struct session *s, const struct trace_options *opt, char *err, size_t errlen);
/*
 * Lets the target run traced until the duration, *stop or its end.  0, or
 * -errno with err (probes that could not start or go on); s stays open.
 */
int trace_one_run(struct session *s, volatile sig_atomic_t *stop, char *err, size_t errlen);
/*
 * The final report into r (zeroed by the caller), with each leak suspect's
 * top retainer path when retainers and the target still runs (a warning if
 * they cannot be read).  0, or -ENOMEM with err.
 */
int trace_one_report(struct session *s, bool retainers, struct report *r, char *err,
		     size_t errlen);
/*
 * The lines that add to the verdict's containers into r's verdict: watched
 * within the trace (the default), or, with --watch, after it for the
 * seconds asked.
 */
void trace_one_watch(struct session *s, struct report *r, volatile sig_atomic_t *stop);
/*
 * --empty-probes instead of the trace (bench/): the command's exit status
 * (launch mode) or 0, its probes then off and s not to be closed; or
 * -errno with err, s then to close.
 */
int trace_one_empty_probes(struct session *s, volatile sig_atomic_t *stop, char *err,
			   size_t errlen);
/* The exit status rbmemtrace returns: the command's in launch mode, else 0. */
int trace_one_exit_status(const struct session *s);
/* Frees what s holds; a launched command still held is killed. */
void trace_one_close(struct session *s);

#endif
