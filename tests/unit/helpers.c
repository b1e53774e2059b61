// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "escape.h"
#include "helpers.h"
#include "ruby_versions.h"

char *test_json_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	json_write_string(f, s);
	fclose(f);
	return buf;
}

const struct ruby_layout *test_layout_of(const char *version)
{
	struct ruby_layout *l = malloc(sizeof(*l)); /* lives as long as the test */

	cr_assert_not_null(l);
	cr_assert_eq(ruby_versions_layout(version, l), 0, "no layout for Ruby %s", version);
	return l;
}

void test_child_start(struct test_child *c, char *const argv[])
{
	size_t n = 0;
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	c->pid = fork();
	cr_assert_geq(c->pid, 0);
	if (c->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	while (n < sizeof(c->line) - 1) {
		struct pollfd p = {.fd = fds[0], .events = POLLIN};

		cr_assert_eq(poll(&p, 1, 20000), 1, "%s printed nothing in 20 s", argv[0]);
		cr_assert_eq(read(fds[0], c->line + n, 1), 1, "%s exited early", argv[0]);
		if (c->line[n] == '\n')
			break;
		n++;
	}
	c->line[n] = '\0';
	close(fds[0]);
}

void test_child_stop(struct test_child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
}

const char *test_system_libruby(void)
{
	static const char *const candidates[] = {"/lib/x86_64-linux-gnu/libruby-3.1.so.3.1",
						 "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"};
	size_t i;

	for (i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (access(candidates[i], R_OK) == 0)
			return candidates[i];
	cr_assert_fail("no libruby-3.1.so.3.1 in /lib or /usr/lib (make deps)");
	return NULL;
}

void test_require_rubies(int checked, const char *what)
{
	const char *req = getenv("RBM_REQUIRE_RUBIES");

	if (checked)
		return;
	cr_assert(!req || !*req,
		  "%s: no test Ruby in /var/cache/rbmemtrace/rubies, and "
		  "RBM_REQUIRE_RUBIES is set (make rubies)",
		  what);
	cr_skip_test("%s: no test Ruby in /var/cache/rbmemtrace/rubies (make rubies)", what);
}
