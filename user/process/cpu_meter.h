/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The tracer's own CPU time against the machine's idle time: on a machine
 * with a core to spare, what the tracer runs costs the target nothing; on
 * one whose every core is busy, each second it runs is a second taken from
 * the target (or from its neighbours: counted against the target).
 */
#ifndef RBM_CPU_METER_H
#define RBM_CPU_METER_H

#include <stdbool.h>

struct cpu_sample {
	double idle; /* seconds every CPU spent idle (idle + iowait in /proc/stat) */
	double self; /* seconds of CPU this process used, all its threads */
	bool valid;
};

/* Reads both now; 0 or -errno (sample left invalid). */
int cpu_meter_read(struct cpu_sample *s);

/*
 * The tracer's CPU between two samples that no idle CPU could have run
 * instead: max(0, its CPU time - the machine's idle time), in seconds.
 */
double cpu_meter_displaced(const struct cpu_sample *before, const struct cpu_sample *after);

#endif
