// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* -o PATTERN of trace --every (output/outpattern.c): expansion, bad patterns, --keep's ring. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "outpattern.h"

Test(outpattern, expands_pid_time_host_and_percent)
{
	char out[256];
	unsigned uses;
	char err[256];

	cr_assert_eq(
	    outpattern_check("/p/mem-%{pid}-%{time}@%{host}-100%%.pb.gz", &uses, err, sizeof(err)),
	    0, "%s", err);
	cr_expect_eq(uses, OUTPATTERN_PID | OUTPATTERN_TIME | OUTPATTERN_HOST);
	/* 2026-11-27 10:15:30 UTC */
	cr_assert_eq(outpattern_expand("/p/mem-%{pid}-%{time}@%{host}-100%%.pb.gz", 4242,
				       1795774530, "web1", out, sizeof(out)),
		     0);
	cr_expect_str_eq(out, "/p/mem-4242-2026-11-27T10:15:30Z@web1-100%.pb.gz");
}

Test(outpattern, a_host_stays_one_path_component)
{
	char out[64];

	cr_assert_eq(outpattern_expand("%{host}.pb", 1, 0, "a/../b", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "a_.._b.pb");
}

Test(outpattern, bad_patterns_say_where)
{
	const char *bad[] = {"", "x-%{pid", "x-%{nope}", "x-%d", "x-%", "%{PID}"};
	char err[256];
	unsigned uses;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(outpattern_check(bad[i], &uses, err, sizeof(err)), -EINVAL, "%s",
			     bad[i]);
		cr_expect(strstr(err, "PATTERN"), "the error names PATTERN: %s", err);
	}
	cr_expect_eq(outpattern_check("plain.pb.gz", &uses, err, sizeof(err)), 0);
	cr_expect_eq(uses, 0);
}

Test(outpattern, too_long_a_name_is_refused)
{
	char out[16];

	cr_expect_eq(
	    outpattern_expand("%{pid}%{pid}%{pid}%{pid}", 1234567, 0, "h", out, sizeof(out)),
	    -ENAMETOOLONG);
}

Test(outpattern, keep_ring_removes_the_oldest)
{
	struct keep_ring k = {.keep = 2};
	char *gone;

	cr_expect_null(keep_ring_push(&k, "a"));
	cr_expect_null(keep_ring_push(&k, "b"));
	gone = keep_ring_push(&k, "c");
	cr_expect_str_eq(gone, "a");
	free(gone);
	cr_expect_null(keep_ring_push(&k, "c"), "the same name again is the same file");
	gone = keep_ring_push(&k, "d");
	cr_expect_str_eq(gone, "b");
	free(gone);
	cr_expect_eq(k.n, 2);
	cr_expect_str_eq(k.paths[0], "c");
	cr_expect_str_eq(k.paths[1], "d");
	keep_ring_free(&k);
}

Test(outpattern, keep_zero_keeps_all)
{
	struct keep_ring k = {};

	for (int i = 0; i < 100; i++)
		cr_expect_null(keep_ring_push(&k, "x"));
	keep_ring_free(&k);
}
