// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <criterion/criterion.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "dwarf_types.h"
#include "elfinfo.h"
#include "escape.h"
#include "helpers.h"
#include "ruby_versions.h"
#include "writers.h"

struct dwarf_types *test_dwarf_open(const char *path, const char *root)
{
	struct dwarf_types *dt;
	char err[512];

	cr_assert_eq(access(path, R_OK), 0, "%s missing: run the tests with `make unit`", path);
	cr_assert_eq(dwarf_types_open(path, root, &dt, err, sizeof(err)), 0, "%s", err);
	return dt;
}

uint64_t test_symbol(const char *path, const char *name)
{
	uint64_t value;

	cr_assert_eq(elf_symbol_value(path, name, &value, NULL), 0, "%s not in %s", name, path);
	return value;
}

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

struct ruby_layout test_layout_of(const char *version)
{
	struct ruby_layout l;

	cr_assert_eq(ruby_versions_layout(version, &l), 0, "no layout for Ruby %s", version);
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

const char *test_system_libruby_real(void)
{
	static char real[PATH_MAX];

	cr_assert_not_null(realpath(test_system_libruby(), real), "%s", test_system_libruby());
	return real;
}

char test_tmpdir[64];

void test_tmpdir_make(void)
{
	snprintf(test_tmpdir, sizeof(test_tmpdir), "/tmp/rbm-unit-XXXXXX");
	cr_assert_not_null(mkdtemp(test_tmpdir));
}

void test_tmpdir_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", test_tmpdir);
	cr_assert_eq(system(cmd), 0, "could not remove %s", test_tmpdir);
}

/* CI builds the test Rubies first and sets RBM_REQUIRE_RUBIES: there a missing one is a failure. */
static bool rubies_required(void)
{
	const char *req = getenv("RBM_REQUIRE_RUBIES");

	return req && *req;
}

/*
 * Criterion prints a skip only with --verbose, and fails a whole run on any
 * cr_log_warn; so what is skipped is said on stderr, with the test's name and
 * the command that brings what it needs.
 */
static void say_skipped(const char *why)
{
	fprintf(stderr, "[SKIP] %s::%s: %s (`make rubies` builds it)\n", criterion_current_suite->name,
		criterion_current_test->name, why);
}

bool test_have_ruby(const char *path)
{
	char why[512];

	if (access(path, R_OK) == 0)
		return true;
	cr_expect(!rubies_required(), "%s absent, and RBM_REQUIRE_RUBIES is set (make rubies)",
		  path);
	snprintf(why, sizeof(why), "%s absent, not checked", path);
	if (!rubies_required())
		say_skipped(why);
	return false;
}

void test_require_rubies(int checked, const char *what)
{
	char why[512];

	if (checked)
		return;
	cr_assert(!rubies_required(),
		  "%s: no test Ruby in /var/cache/rbmemtrace/rubies, and "
		  "RBM_REQUIRE_RUBIES is set (make rubies)",
		  what);
	snprintf(why, sizeof(why), "%s: no test Ruby in /var/cache/rbmemtrace/rubies", what);
	say_skipped(why);
	cr_skip_test("%s", why);
}

struct counts test_counts(uint64_t allocated, uint64_t freed, uint64_t retained)
{
	return (struct counts){.allocated = allocated, .freed = freed, .retained = retained};
}

void test_report_init(struct report *r)
{
	memset(r, 0, sizeof(*r));
	r->pid = 4242;
	strcpy(r->ruby_version, "3.1.7");
	r->duration_s = 2.5;
	r->end_reason = "duration";
	r->exit_status = -1;
}

void test_report_add(struct report *r, const char *name, uint64_t allocated, uint64_t freed,
		     uint64_t retained, uint64_t untracked, uint64_t not_followed)
{
	struct counts c = {.allocated = allocated,
			   .freed = freed,
			   .retained = retained,
			   .untracked = untracked,
			   .not_followed = not_followed};

	cr_assert_eq(report_add(r, name, &c), 0);
}

void test_sample_report(struct report *r)
{
	struct counts a = {.allocated = 10, .freed = 4, .retained = 6};
	struct counts b = {.allocated = 5, .freed = 5};
	struct counts c = {.allocated = 3, .retained = 1, .untracked = 2};

	memset(r, 0, sizeof(*r));
	r->pid = 42;
	strcpy(r->ruby_version, "3.1.7");
	r->end_reason = "signal";
	r->exit_status = -1;
	report_add(r, "Zed", &b);
	report_add(r, "Foo::Bar", &a);
	report_add(r, "Evil\"\n\x1b[2J", &c);
	report_add(r, "Foo::Bar", &a); /* merges */
	report_finish(r);
}

void test_fill_report(struct report *r, const char *host, int line, uint64_t n, double scale)
{
	struct frame frames[] = {{"Store#put", "store.rb", line}, {"<main>", "app.rb", 1}};
	struct stack st = {.depth = 2, .truncated = false, .frames = frames};
	struct counts c = test_counts(n, n / 2, n - n / 2);
	struct census_counts cc = {
	    .live_start = 1, .live_end = n, .bytes_end = 40 * n, .old_end = 1};

	snprintf(r->host, sizeof(r->host), "%s", host);
	r->sampling.on = scale > 0;
	r->sampling.scale = scale;
	r->have_gc_counts = true;
	r->gc_allocated = 100 * n;
	r->gc_runs = 3;
	r->with_stacks = true;
	report_add(r, "Session", &c);
	report_add_stack(r, "Session", &st, &c);
	report_set_census(r, "Session", &cc);
	report_finish(r);
}

char *test_report_text(const struct report *r, size_t top)
{
	struct text_options o = {.top = top, .top_stacks = 10};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	report_write_text(f, r, &o);
	fclose(f);
	return buf;
}

char *test_report_json(const struct report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	report_write_json(f, r);
	fclose(f);
	return buf;
}

double test_seconds_between(const struct timespec *t0, const struct timespec *t1)
{
	return (double)(t1->tv_sec - t0->tv_sec) + (double)(t1->tv_nsec - t0->tv_nsec) / 1e9;
}
