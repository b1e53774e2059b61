/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* trace of several processes in one run (trace_many.c): the engine's set (many.h), written. */
#ifndef RBM_TRACE_MANY_H
#define RBM_TRACE_MANY_H
#include <signal.h>
#include "many.h"
#include "writers.h"

/* Where and how the reports of a run are written. */
struct many_output {
	int format; /* MODEL_TEXT, MODEL_JSON, MODEL_PPROF, MODEL_FOLDED */
	const char *output;
	struct text_options text;
};

/* Traces them until the duration, a signal, or (given pids only) every one ended: the status. */
int trace_many(const struct many_options *mo, const struct many_output *out,
	       volatile sig_atomic_t *stop);

#endif
