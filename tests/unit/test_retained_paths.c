// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/model/retained_paths.c: what each call path retains, objects and bytes. */
#include <criterion/criterion.h>
#include "helpers.h"
#include "retained_paths.h"

Test(retained_paths, paths_and_the_rest_sum_to_the_report)
{
	struct frame f1[] = {{"build", "app.rb", 7}, {"<main>", "app.rb", 9}};
	struct stack s1 = {.depth = 2, .frames = f1};
	struct counts on_path = {.allocated = 10, .retained = 6, .young = 1, .freed = 3};
	struct counts whole = {.allocated = 15, .retained = 8, .young = 2, .freed = 5};
	struct census_counts cc = {.have = true, .live_end = 10, .bytes_end = 1000};
	struct retained_paths rp;
	struct report r;

	test_report_init(&r);
	r.with_stacks = true;
	report_add(&r, "Leak", &whole);
	report_add_stack(&r, "Leak", &s1, &on_path);
	report_set_census(&r, "Leak", &cc);
	report_finish(&r);
	cr_assert_eq(report_retained_paths(&r, &rp), 0);
	/* The path's 6, then the 2 no path covers; young objects are not retained. */
	cr_assert_eq(rp.n, 2);
	cr_expect_eq(rp.v[0].stack, r.stacks[0].stack);
	cr_expect_eq(rp.v[0].objects, 6);
	cr_expect_eq(rp.v[0].bytes, 600); /* the census's 100 bytes an object */
	cr_expect_null(rp.v[1].stack);
	cr_expect_eq(rp.v[1].objects, 2);
	cr_expect_eq(rp.objects, r.totals.retained);
	cr_expect_eq(rp.bytes, 800);
	cr_expect_not(rp.in_use);
	retained_paths_free(&rp);
	report_free(&r);
}

Test(retained_paths, an_empty_report_has_none)
{
	struct retained_paths rp;
	struct report r;

	test_report_init(&r);
	report_finish(&r);
	cr_assert_eq(report_retained_paths(&r, &rp), 0);
	cr_expect_eq(rp.n, 0);
	cr_expect_eq(rp.objects, 0);
	retained_paths_free(&rp);
	report_free(&r);
}
