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

double tracer_cpu_charge(struct tracer_cpu *m, pid_t pid)
{
	struct tracer_cpu now = {.have = true, .self = cpu_seconds()};
	double taken;

	if (proc_machine_cpu(&now.idle, &now.busy) || (now.target = proc_cpu_seconds(pid)) < 0)
		return 0;
	taken = m->have ? tracer_cpu_taken(now.self - m->self, now.idle - m->idle,
					   now.busy - m->busy, now.target - m->target)
			: 0;
	*m = now;
	return taken;
}
