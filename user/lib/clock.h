/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Seconds on the monotonic clock (the poll loop's and the sampler's time),
 * and this process's CPU seconds, every thread's: unlike the wall clock,
 * not stretched by other work on the machine.
 */
#ifndef RBM_CLOCK_H
#define RBM_CLOCK_H
#include <time.h>

static inline double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
