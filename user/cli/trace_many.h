/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Tracing several processes in one run (trace_many.c). */
#ifndef RBM_TRACE_MANY_H
#define RBM_TRACE_MANY_H
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

#endif
