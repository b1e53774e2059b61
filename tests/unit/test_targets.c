// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/engine/targets.c: one target opened for its memory, and census's census of it. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "diag.h"
#include "helpers.h"
#include "targets.h"

static pid_t thread_tid;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t told = PTHREAD_COND_INITIALIZER;
static bool done;

static void *thread_main(void *arg)
{
	(void) arg;
	pthread_mutex_lock(&lock);
	thread_tid = syscall(SYS_gettid);
	pthread_cond_broadcast(&told);
	while (!done)
		pthread_cond_wait(&told, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

Test(targets, a_thread_is_read_as_its_process)
{
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, thread_main, NULL), 0);
	pthread_mutex_lock(&lock);
	while (!thread_tid)
		pthread_cond_wait(&told, &lock);
	pthread_mutex_unlock(&lock);
	cr_expect_neq(thread_tid, getpid());
	cr_expect_eq(target_process_of(thread_tid), getpid());
	cr_expect_eq(target_process_of(getpid()), getpid());
	pthread_mutex_lock(&lock);
	done = true;
	pthread_cond_broadcast(&told);
	pthread_mutex_unlock(&lock);
	pthread_join(th, NULL);
}

Test(targets, a_process_that_is_not_ruby_is_an_error_not_an_exit)
{
	struct ruby_target t = {};
	char err[RBM_ERR_LEN] = "";

	cr_expect_lt(target_memory_open(&t, getpid(), err, sizeof(err)), 0);
	cr_expect(strstr(err, "not a Ruby process") != NULL, "%s", err);
	err[0] = 0;
	cr_expect_lt(target_memory_open(&t, 999999999, err, sizeof(err)), 0);
	cr_expect(err[0], "an error says why");
}

Test(targets, a_census_of_a_live_ruby)
{
	char *argv[] = {"ruby", "-e",
			"STDOUT.sync = true; $keep = Array.new(5000) { |i| 'k' * (i % 7) }; "
			"GC.start; puts 1; sleep 30",
			NULL};
	struct ruby_target t = {};
	struct report r = {};
	char err[RBM_ERR_LEN] = "";
	struct test_child c;
	uint64_t strings = 0;
	size_t i;

	test_child_start(&c, argv);
	cr_assert_eq(target_memory_open(&t, c.pid, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(target_census(&t, &r, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(r.pid, c.pid);
	cr_expect(r.census_only);
	for (i = 0; i < r.nrows; i++)
		if (!strcmp(r.rows[i].name, "String"))
			strings = r.rows[i].census.live_end;
	cr_expect_geq(strings, 5000, "String live %lu", (unsigned long) strings);
	report_free(&r);
	test_child_stop(&c);
	memset(&r, 0, sizeof(r));
	err[0] = 0;
	cr_expect_lt(target_census(&t, &r, err, sizeof(err)), 0, "a census of a process gone");
	cr_expect(err[0], "an error says why");
	report_free(&r);
}
