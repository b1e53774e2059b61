// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/probe/session_attach.c: a session that cannot be opened returns its
 * error and its words, holds nothing after, and the caller (this process)
 * lives on to open another.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "diag.h"
#include "helpers.h"
#include "session.h"

/* A pid no process has: a child's, once it is reaped. */
static pid_t vanished_pid(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return pid;
}

static void assert_nothing_held(const struct session *s)
{
	cr_assert_null(s->at.st, "no BPF slot is kept");
	cr_assert_eq(s->at.slot.index, -1);
	cr_assert_eq(s->at.probes.links.nalloc, 0);
	cr_assert_not(s->at.child_held);
}

Test(session_attach, open_a_pid_that_does_not_exist)
{
	static struct session s; /* large: not on the stack */
	struct trace_options opt = {.max_objects = 1024, .max_stacks = 1024};
	char err[RBM_ERR_LEN], want[64];
	int i;

	opt.pid = vanished_pid();
	snprintf(want, sizeof(want), "no process with PID %d", (int) opt.pid);
	/* Twice: a failed open leaves nothing that would fail the next one differently. */
	for (i = 0; i < 2; i++) {
		err[0] = '\0';
		cr_assert_lt(session_open(&s, &opt, err, sizeof(err)), 0);
		cr_assert_str_eq(err, want);
		assert_nothing_held(&s);
	}
}

Test(session_attach, open_a_process_that_is_not_ruby)
{
	char *argv[] = {"sh", "-c", "echo ready; exec sleep 30", NULL};
	static struct session s;
	struct trace_options opt = {.max_objects = 1024, .max_stacks = 1024};
	struct test_child child;
	char err[RBM_ERR_LEN], want[64];

	test_child_start(&child, argv);
	opt.pid = child.pid;
	err[0] = '\0';
	cr_assert_lt(session_open(&s, &opt, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "PID %d is not a Ruby process", (int) child.pid);
	cr_assert_not_null(strstr(err, want), "%s", err);
	assert_nothing_held(&s);
	/* It was only read: it still runs. */
	cr_assert_eq(kill(child.pid, 0), 0);
	cr_assert_eq(waitpid(child.pid, NULL, WNOHANG), 0);
	test_child_stop(&child);
}
