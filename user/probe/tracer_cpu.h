/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The tracer's own CPU, in the share a sampled trace's budget pays for it.
 * With a core idle the tracer runs there and takes nothing from anyone;
 * with none, every second it runs is taken from the processes that could
 * have run, the target among them in its share of their CPU.  Charging all
 * of it to the target held every window back next to one busy loop.
 */
#ifndef RBM_TRACER_CPU_H
#define RBM_TRACER_CPU_H
#include <stdbool.h>
#include <sys/types.h>

/*
 * Seconds of the target's CPU the tracer took over an interval: self is
 * the tracer's CPU seconds then, idle and busy the machine's (every CPU's,
 * busy with self and target in it), target the target's.
 */
double tracer_cpu_taken(double self, double idle, double busy, double target);

/*
 * What niced processes ran beside us (niced, the machine's nice time) that
 * a tracer at nice 0 could have had: a nice 19 build yields nearly all of
 * it, so counting it busy charged the tracer as if it took from the target.
 * Our own time (we may run niced) and a niced target's are not spare.
 */
double tracer_cpu_niced_spare(double niced, double self, double target, bool target_niced);

struct tracer_cpu {
	bool have;
	double self, idle, busy, niced, target; /* at the last look */
};

/* What the tracer took from pid since the last call (0 at the first, or when unknown). */
double tracer_cpu_charge(struct tracer_cpu *m, pid_t pid);

#endif
