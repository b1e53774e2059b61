// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/process/proc_info.c: the CPU a process and the machine used, whether it is stopped, and
 * the parsing of its status and stat files.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "proc_info.h"

/* Runs for seconds of CPU, however busy the machine is. */
static void spin(double seconds)
{
	struct timespec a, b;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	while (b.tv_sec - a.tv_sec + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

Test(proc_info, a_process_cpu_grows_as_it_runs)
{
	double before = proc_cpu_seconds(getpid()), after;

	cr_assert_geq(before, 0);
	spin(0.2);
	after = proc_cpu_seconds(getpid());
	/* Counted in ticks of 10 ms. */
	cr_expect(after - before >= 0.15 && after - before <= 0.5, "%g s for 0.2 s of spinning",
		  after - before);
}

Test(proc_info, the_machine_counts_what_we_ran_as_busy)
{
	double idle0, busy0, niced0, idle1, busy1, niced1;

	cr_assert_eq(proc_machine_cpu(&idle0, &busy0, &niced0), 0);
	spin(0.2);
	cr_assert_eq(proc_machine_cpu(&idle1, &busy1, &niced1), 0);
	cr_expect(busy1 - busy0 >= 0.1, "%g s busy for 0.2 s of spinning", busy1 - busy0);
	cr_expect(idle1 >= idle0);
	cr_expect(niced1 >= niced0 && niced1 - niced0 <= busy1 - busy0 + 0.05, "niced %g of busy %g",
		  niced1 - niced0, busy1 - busy0);
}

Test(proc_info, a_process_that_is_gone_has_no_cpu)
{
	cr_expect_eq(proc_cpu_seconds(0x3ffffff0), -1);
}

Test(proc_info, a_process_just_started_is_up_for_less_than_a_minute)
{
	double up = proc_uptime(getpid());

	cr_expect(up >= 0 && up < 60, "%g s", up);
	cr_expect_eq(proc_uptime(0x3ffffff0), -1);
}

Test(proc_info, a_child_stopped_by_sigstop_is_stopped_and_runs_again)
{
	pid_t child = fork(), tracer;
	bool stopped;
	int status;

	cr_assert_geq(child, 0);
	if (!child) {
		pause();
		_exit(0); /* forked child */
	}
	cr_assert_eq(proc_stopped(child, &stopped, &tracer), 0);
	cr_expect(!stopped, "a pausing child is not stopped");
	cr_expect_eq(tracer, 0);
	kill(child, SIGSTOP);
	waitpid(child, &status, WUNTRACED);
	cr_assert_eq(proc_stopped(child, &stopped, &tracer), 0);
	cr_expect(stopped, "after SIGSTOP");
	kill(child, SIGCONT);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	cr_expect_eq(proc_stopped(0x3ffffff0, &stopped, &tracer), -1);
}

/* The parsing alone, on the text a target controls (its command), as fuzz_procfs feeds it. */
Test(proc_info, stat_fields_count_from_the_last_parenthesis)
{
	const char *stat = "42 (a) b (c) d) S 1 42 42 0 -1 0 0 0 0 0 150 25 0 0 20 0 3 0 987654 1";
	bool stopped;
	pid_t tracer;
	char status[] = "Name:\truby\nState:\tt (tracing stop)\nNSpid:\t42\t17\nTracerPid:\t99\n";
	char same[] = "Name:\tx\nNSpid:\t42\n", bad[] = "Name:\tx\nNSpid:\tx 17\n";

	cr_expect_eq(strncmp(proc_stat_field(stat, 3), "S 1 42 ", 7), 0);
	cr_expect_str_eq(proc_stat_field(stat, 14), "150 25 0 0 20 0 3 0 987654 1");
	cr_expect_str_eq(proc_stat_field(stat, 22), "987654 1");
	cr_expect_null(proc_stat_field(stat, 40), "past the last field");
	cr_expect_null(proc_stat_field("no parenthesis", 3));
	proc_status_state(status, &stopped, &tracer);
	cr_expect(stopped);
	cr_expect_eq(tracer, 99);
	proc_status_state("", &stopped, &tracer);
	cr_expect(!stopped);
	cr_expect_eq(tracer, 0);
	cr_expect_eq(proc_status_ns_pid(status, 42), 17);
	cr_expect_eq(proc_status_ns_pid(same, 42), 0, "its own pid: the same namespace");
	cr_expect_eq(proc_status_ns_pid(bad, 42), 0, "not a number");
}
