// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "clock.h"
#include "proc_info.h"
#include "tracer_cpu.h"

double tracer_cpu_taken(double self, double idle, double busy, double target)
{
	double displaced = self - idle, others = busy - self;

	/* The machine idled longer than the tracer ran: it ran in that idle. */
	if (displaced <= 0 || target <= 0 || others <= 0)
		return 0;
	return displaced * (target < others ? target / others : 1);
}

double tracer_cpu_niced_spare(double niced, double self, double target, bool target_niced)
{
	double spare = niced - self - (target_niced ? target : 0);

	return spare > 0 ? spare : 0;
}

double tracer_cpu_charge(struct tracer_cpu *m, pid_t pid)
{
	struct tracer_cpu now = {.have = true, .self = cpu_seconds()};
	double taken = 0, spare;

	if (proc_machine_cpu(&now.idle, &now.busy, &now.niced) ||
	    (now.target = proc_cpu_seconds(pid)) < 0)
		return 0;
	if (m->have) {
		spare = tracer_cpu_niced_spare(now.niced - m->niced, now.self - m->self,
					       now.target - m->target, proc_nice(pid) > 0);
		taken = tracer_cpu_taken(now.self - m->self, now.idle - m->idle + spare,
					 now.busy - m->busy - spare, now.target - m->target);
	}
	*m = now;
	return taken;
}
