// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/ruby_target.c: a target that cannot be opened returns its error and its words. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "diag.h"
#include "helpers.h"
#include "ruby_target.h"

Test(ruby_target, open_a_pid_that_does_not_exist)
{
	static struct ruby_target t; /* large (a layout): not on the stack */
	char err[RBM_ERR_LEN], want[64];
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid); /* reaped: no process has this pid now */
	cr_assert_lt(ruby_target_open(&t, pid, RUBY_NEED_MEMORY, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "no process with PID %d", (int) pid);
	cr_assert_str_eq(err, want);
}

Test(ruby_target, open_a_process_that_is_not_ruby)
{
	char *argv[] = {"sh", "-c", "echo ready; exec sleep 30", NULL};
	static struct ruby_target t;
	struct test_child child;
	char err[RBM_ERR_LEN], want[64];

	test_child_start(&child, argv);
	cr_assert_lt(ruby_target_open(&t, child.pid, RUBY_NEED_TRACE, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "PID %d is not a Ruby process", (int) child.pid);
	cr_assert_not_null(strstr(err, want), "%s", err);
	cr_assert_eq(waitpid(child.pid, NULL, WNOHANG), 0, "it still runs");
	test_child_stop(&child);
}

Test(ruby_target, check_a_file_that_is_not_ruby)
{
	static struct ruby_target t;
	char err[RBM_ERR_LEN];

	cr_assert_lt(
	    ruby_target_check_file(&t, "/bin/sh", "/bin/sh", RUBY_NEED_TRACE, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "cannot read the Ruby version (ruby_version) from /bin/sh");
}
