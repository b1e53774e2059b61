/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Fixtures the unit tests share (helpers.c). */
#ifndef RBM_TEST_HELPERS_H
#define RBM_TEST_HELPERS_H
#include <sys/types.h>
#include "ruby_layout.h"

/* s as json_write_string (escape.c) writes it, quotes included; malloc'd. */
char *test_json_of(const char *s);

/* The table's layout of version (patch fields applied); the test fails if there is none. */
const struct ruby_layout *test_layout_of(const char *version);

/* A child process that prints one line once it is ready, and dies with its test. */
struct test_child {
	pid_t pid;
	char line[4096]; /* the first line it printed */
};
/* Starts argv with stdout on a pipe and waits (20 s at most) for its first line. */
void test_child_start(struct test_child *c, char *const argv[]);
void test_child_stop(struct test_child *c);

/*
 * After a loop over the test Rubies (make rubies): none found skips the
 * test, or fails it when RBM_REQUIRE_RUBIES is set (CI builds them first).
 */
void test_require_rubies(int checked, const char *what);

/* This machine's libruby-3.1.so.3.1 (the test fails without one: make deps). */
const char *test_system_libruby(void);

#endif
