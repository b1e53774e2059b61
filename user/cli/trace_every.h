/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* rbmemtrace trace --every SECONDS -o PATTERN [--keep N]: a file per process per period. */
#ifndef RBM_TRACE_EVERY_H
#define RBM_TRACE_EVERY_H
#include "trace_many.h"

struct every_options {
	double every;	    /* seconds per period */
	unsigned long keep; /* newest files kept per process; 0: all */
	const char *pattern;
};

/*
 * Checks the pattern against the processes to trace (one of several needs
 * %{pid}; --keep needs %{time}) and that its files can be written; dies
 * with a one-line error otherwise.
 */
void trace_every_check(const struct many_options *mo, const struct every_options *eo);
/* Traces until stopped, writing each period's files (out's format and text); the exit status. */
int trace_every(const struct many_options *mo, const struct many_output *out,
		const struct every_options *eo, volatile sig_atomic_t *stop);

#endif
