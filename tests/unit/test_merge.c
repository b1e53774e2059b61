// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/model/merge.c: the reports of several processes summed by class name. */
#include <criterion/criterion.h>
#include "helpers.h"
#include "model_ops.h"

/*
 * Two processes, as two hosts would send them (test_fill_report): names line
 * up, addresses never mattered.
 */
Test(merge, merge_sums_by_name)
{
	struct report a = {}, b = {}, sum = {};

	test_fill_report(&a, "web1", 10, 10, 0);
	test_fill_report(&b, "web2", 10, 20, 0);
	cr_assert_eq(report_merge(&sum, &a), 0);
	cr_assert_eq(report_merge(&sum, &b), 0);
	report_finish(&sum);
	cr_expect_eq(sum.merged, 2);
	cr_assert_eq(sum.nrows, 1);
	cr_expect_eq(sum.rows[0].counts.allocated, 30);
	cr_expect_eq(sum.rows[0].counts.retained, 5 + 10);
	cr_expect_eq(sum.rows[0].census.live_end, 30);
	cr_expect_eq(sum.rows[0].census.live_start, 2);
	cr_expect_eq(sum.rows[0].census.bytes_end, 1200);
	cr_assert_eq(sum.nstacks, 1, "the same path in both merges into one");
	cr_expect_eq(sum.stacks[0].counts.allocated, 30);
	cr_assert_eq(sum.nsites, 1);
	cr_expect_eq(sum.sites[0].counts.retained, 15);
	cr_expect_eq(sum.gc_runs, 6);
	cr_expect(sum.have_gc_counts);
	cr_expect_eq(sum.gc_allocated, 3000);
	cr_expect_eq(sum.totals.allocated, sum.totals.freed + sum.totals.retained);
	report_free(&a);
	report_free(&b);
	report_free(&sum);
}

Test(merge, merge_keeps_different_lines_apart_and_sums_estimates)
{
	struct report a = {}, b = {}, sum = {};

	test_fill_report(&a, "web1", 10, 10, 2.0);
	test_fill_report(&b, "web2", 11, 10, 4.0);
	report_merge(&sum, &a);
	report_merge(&sum, &b);
	report_finish(&sum);
	cr_expect_eq(sum.nstacks, 2);
	cr_expect_eq(sum.nsites, 2);
	cr_assert(sum.have_estimates);
	/* Each part scaled by its own rate: 10*2 + 10*4. */
	cr_expect_eq(sum.rows[0].est.allocated, 60);
	cr_expect_eq(sum.est_totals.allocated, 60);
	report_free(&a);
	report_free(&b);
	report_free(&sum);
}
