// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/engine/many.c: a set of processes; what fails is returned, never an exit. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "many.h"

Test(many, a_bad_match_is_an_error_with_its_words)
{
	static struct many m;
	struct many_options mo = {.match = "(unclosed"};
	char err[RBM_ERR_LEN] = "";

	cr_expect_eq(many_attach(&m, &mo, NULL, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "invalid --match: (unclosed") != NULL, "%s", err);
	many_close(&m); /* closing what failed to open is harmless */
}

Test(many, the_first_failure_is_kept)
{
	static struct many m;

	many_fail(&m, -ENOMEM, "out of %s", "memory");
	many_fail(&m, -EIO, "later");
	cr_expect_eq(m.failed, -ENOMEM);
	cr_expect_str_eq(m.error, "out of memory");
}

Test(many, a_pid_that_is_not_there_fails_alone)
{
	static struct many m;
	struct many_options mo = {.pids = {999999999}, .npids = 1};
	char err[RBM_ERR_LEN] = "";

	cr_expect_lt(many_attach(&m, &mo, NULL, err, sizeof(err)), 0);
	cr_expect(strstr(err, "999999999") != NULL, "%s", err);
	cr_expect_eq(m.n, 0);
}
