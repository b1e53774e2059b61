// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/process/cpu_meter.c: the tracer's CPU that no idle CPU absorbed. */
#include <criterion/criterion.h>
#include "cpu_meter.h"

static struct cpu_sample at(double idle, double self)
{
	return (struct cpu_sample){.idle = idle, .self = self, .valid = true};
}

Test(cpu_meter, a_spare_core_absorbs_the_tracer)
{
	struct cpu_sample a = at(100, 1), b = at(100.9, 1.05);

	cr_expect_float_eq(cpu_meter_displaced(&a, &b), 0, 1e-12);
}

Test(cpu_meter, no_idle_time_charges_all_of_it)
{
	struct cpu_sample a = at(100, 1), b = at(100, 1.05);

	cr_expect_float_eq(cpu_meter_displaced(&a, &b), 0.05, 1e-12);
}

Test(cpu_meter, some_idle_time_charges_the_rest)
{
	struct cpu_sample a = at(100, 1), b = at(100.02, 1.05);

	cr_expect_float_eq(cpu_meter_displaced(&a, &b), 0.03, 1e-9);
}

Test(cpu_meter, an_invalid_sample_charges_nothing)
{
	struct cpu_sample a = at(100, 1), b = at(100, 2);

	a.valid = false;
	cr_expect_float_eq(cpu_meter_displaced(&a, &b), 0, 1e-12);
}

Test(cpu_meter, reads_this_machine)
{
	struct cpu_sample s;

	cr_assert_eq(cpu_meter_read(&s), 0);
	cr_expect(s.valid);
	cr_expect_gt(s.idle, 0);
	cr_expect_gt(s.self, 0);
}
