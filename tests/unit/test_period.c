// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Periods of a continuous trace (model/period.c, period_rows.c): what a
 * period allocated, by names; its profile's in-use objects and bytes equal
 * to the census's per class, spread over the call paths and scaled within.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "period.h"
#include "report.h"

static struct frame leak_frames[] = {{"Class#new", "<cfunc>", 0}, {"Store#keep", "app.rb", 12}};
static struct frame churn_frames[] = {{"String#*", "<cfunc>", 0}, {"Loop#run", "app.rb", 30}};
static struct stack leak_stack = {2, false, false, leak_frames};
static struct stack churn_stack = {2, false, false, churn_frames};

/* One class along one path: allocated, retained (of age bucket 0), young. */
static void add(struct report *r, const char *cls, const struct stack *st, uint64_t allocated,
		uint64_t retained, uint64_t young)
{
	struct counts c = {.allocated = allocated,
			   .retained = retained,
			   .young = young,
			   .freed = allocated - retained - young};
	struct ages a = {.n = {retained}};

	cr_assert_eq(report_add_counts(r, cls, st, &c, &a), 0);
}

static void census(struct report *r, const char *cls, uint64_t live, uint64_t bytes)
{
	struct census_counts cc = {.live_end = live, .bytes_end = bytes};

	cr_assert_eq(report_set_census(r, cls, &cc), 0);
	r->heap_end.have = true;
}

static const struct class_row *row_of(const struct report *r, const char *name)
{
	for (size_t i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].name, name))
			return &r->rows[i];
	cr_assert_fail("no row %s", name);
	return NULL;
}

static const struct stack_row *stack_of(const struct report *r, const char *cls)
{
	for (size_t i = 0; i < r->nstacks; i++)
		if (!strcmp(r->stacks[i].class_name, cls))
			return &r->stacks[i];
	cr_assert_fail("no path of %s", cls);
	return NULL;
}

/* Sums of one class's rows in a profile: in use, their bytes, allocated; and on paths. */
struct sums {
	uint64_t inuse, bytes, alloc, inuse_on_paths, alloc_on_paths;
};

static struct sums sums_of(const struct profile_row *rows, size_t n, const char *cls)
{
	struct sums s = {};

	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].class_name, cls))
			continue;
		s.inuse += rows[i].inuse_objects;
		s.bytes += rows[i].inuse_bytes;
		s.alloc += rows[i].alloc_objects;
		if (rows[i].stack) {
			s.inuse_on_paths += rows[i].inuse_objects;
			s.alloc_on_paths += rows[i].alloc_objects;
		}
	}
	return s;
}

Test(period, apportion_sums_exactly_in_proportion)
{
	double w[] = {1, 1, 1};
	double w2[] = {0, 3, 1};
	double zero[] = {0, 0};
	uint64_t out[3], out2[2];

	apportion(10, w, 3, out);
	cr_expect_eq(out[0] + out[1] + out[2], 10);
	cr_expect(out[0] >= 3 && out[0] <= 4 && out[1] >= 3 && out[2] >= 3);
	apportion(1000, w2, 3, out);
	cr_expect_eq(out[0], 0, "a zero weight gets nothing");
	cr_expect_eq(out[1], 750);
	cr_expect_eq(out[2], 250);
	apportion(7, zero, 2, out2);
	cr_expect_eq(out2[0] + out2[1], 7, "all-zero weights still share the total");
	apportion(0, w, 3, out);
	cr_expect_eq(out[0] + out[1] + out[2], 0);
}

Test(period, allocations_are_the_difference_by_names)
{
	struct report prev = {}, now = {};
	struct period_info info = {.number = 2, .time = 1700000000.5, .duration_s = 2};

	add(&prev, "Leak", &leak_stack, 100, 100, 0);
	add(&prev, "String", &churn_stack, 5000, 10, 0);
	prev.have_gc_counts = true;
	prev.gc_allocated = 5100;
	report_finish(&prev);
	/* now adds its rows in another order: matched by names, not positions. */
	add(&now, "String", &churn_stack, 9000, 10, 5);
	add(&now, "Leak", &leak_stack, 300, 280, 20);
	add(&now, "Fresh", NULL, 7, 7, 0);
	now.have_gc_counts = true;
	now.gc_allocated = 9307;
	report_finish(&now);
	cr_assert_eq(report_set_period(&now, &prev, &info), 0);
	cr_expect(now.period.on);
	cr_expect_eq(now.period.number, 2);
	cr_expect_eq(row_of(&now, "Leak")->period.allocated, 200);
	cr_expect_eq(row_of(&now, "String")->period.allocated, 4000);
	cr_expect_eq(row_of(&now, "Fresh")->period.allocated, 7, "a class new in the period");
	cr_expect_eq(stack_of(&now, "Leak")->period.allocated, 200);
	cr_expect_eq(now.sites[0].period.allocated + now.sites[1].period.allocated, 4200);
	cr_expect_eq(now.period.traced, 4207);
	cr_expect_eq(now.period.gc_allocated, 4207, "Ruby's own count of the period");
	cr_expect(!now.period.estimated, "traced in full: no estimates");
	report_free(&prev);
	report_free(&now);
}

Test(period, first_period_counts_from_the_start)
{
	struct report now = {};
	struct period_info info = {.number = 1, .duration_s = 2};

	add(&now, "Leak", &leak_stack, 300, 300, 0);
	report_finish(&now);
	cr_assert_eq(report_set_period(&now, NULL, &info), 0);
	cr_expect_eq(row_of(&now, "Leak")->period.allocated, 300);
	cr_expect(!now.period.have_gc_counts);
	report_free(&now);
}

/* Under sampling the period's weight is scaled to Ruby's count of the period, exactly. */
Test(period, sampled_estimates_sum_to_rubys_count)
{
	struct report prev = {.sampling = {.on = true}}, now = {.sampling = {.on = true}};
	struct period_info info = {.number = 3, .duration_s = 10};
	struct counts c;
	struct ages a = {};

	c = (struct counts){.allocated = 10, .freed = 10, .w_allocated = 10, .w_freed = 10};
	report_add_counts(&prev, "String", &churn_stack, &c, &a);
	c = (struct counts){.allocated = 2, .retained = 2, .w_allocated = 2, .w_retained = 2};
	report_add_counts(&prev, "Leak", &leak_stack, &c, &a);
	prev.sampling.traced = 12;
	prev.sampling.weighed = 12ULL * RBM_WEIGHT_ONE;
	prev.have_gc_counts = true;
	prev.gc_allocated = 1200;
	report_finish(&prev);
	/* The period traced 30 more Strings and 3 more Leaks; Ruby allocated 3301 in it. */
	c = (struct counts){.allocated = 40, .freed = 40, .w_allocated = 40, .w_freed = 40};
	report_add_counts(&now, "String", &churn_stack, &c, &a);
	c = (struct counts){.allocated = 5, .retained = 5, .w_allocated = 5, .w_retained = 5};
	report_add_counts(&now, "Leak", &leak_stack, &c, &a);
	now.sampling.traced = 45;
	now.sampling.weighed = 45ULL * RBM_WEIGHT_ONE;
	now.have_gc_counts = true;
	now.gc_allocated = 4501;
	report_finish(&now);
	cr_assert(now.have_estimates);
	cr_assert_eq(report_set_period(&now, &prev, &info), 0);
	cr_expect(now.period.estimated);
	cr_expect_eq(now.period.gc_allocated, 3301);
	cr_expect_eq(row_of(&now, "String")->period.est_allocated +
			 row_of(&now, "Leak")->period.est_allocated,
		     3301, "the classes sum to Ruby's count of the period");
	cr_expect_eq(row_of(&now, "Leak")->period.est_allocated, 300);
	cr_expect_eq(stack_of(&now, "Leak")->period.est_allocated, 300);
	cr_expect_eq(row_of(&now, "Leak")->period.allocated, 3, "the traced count stays");
	report_free(&prev);
	report_free(&now);
}

/* In use: the census's count and bytes per class, exactly, however the paths add up. */
Test(period, profile_in_use_equals_the_census)
{
	struct report now = {};
	struct period_info info = {.number = 1, .duration_s = 2};
	struct profile_row *rows;
	size_t n;
	struct sums leak, str, gone;

	/* 300 Leaks traced alive on their path; the heap holds 1000 (700 from before). */
	add(&now, "Leak", &leak_stack, 300, 280, 20);
	census(&now, "Leak", 1000, 40000);
	/* 50 traced Strings alive, yet the census finds only 30 now (died since the pass). */
	add(&now, "String", &churn_stack, 9000, 45, 5);
	census(&now, "String", 30, 1234);
	/* All of Gone's objects died: allocated in the period, nothing in use. */
	add(&now, "Gone", NULL, 50, 0, 0);
	report_finish(&now);
	cr_assert_eq(report_set_period(&now, NULL, &info), 0);
	cr_assert_eq(period_profile_rows(&now, &rows, &n), 0);
	leak = sums_of(rows, n, "Leak");
	cr_expect_eq(leak.inuse, 1000, "the census's count");
	cr_expect_eq(leak.inuse_on_paths, 300, "the traced ones on their path");
	cr_expect_eq(leak.bytes, 40000, "the census's bytes");
	cr_expect_eq(leak.alloc, 300);
	cr_expect_eq(leak.alloc_on_paths, 300);
	str = sums_of(rows, n, "String");
	cr_expect_eq(str.inuse, 30, "scaled down to the census");
	cr_expect_eq(str.inuse_on_paths, 30);
	cr_expect_eq(str.bytes, 1234, "bytes sum exactly though they do not divide");
	cr_expect_eq(str.alloc, 9000);
	gone = sums_of(rows, n, "Gone");
	cr_expect_eq(gone.inuse, 0);
	cr_expect_eq(gone.alloc, 50);
	free(rows);
	report_free(&now);
}

Test(period, report_profile_rows_of_a_period_are_the_periods)
{
	struct report now = {};
	struct period_info info = {.number = 1, .duration_s = 2};
	struct profile_row *rows;
	size_t n;

	add(&now, "Leak", &leak_stack, 10, 10, 0);
	census(&now, "Leak", 25, 1000);
	report_finish(&now);
	cr_assert_eq(report_set_period(&now, NULL, &info), 0);
	cr_assert_eq(report_profile_rows(&now, &rows, &n), 0);
	cr_expect_eq(sums_of(rows, n, "Leak").inuse, 25);
	free(rows);
	report_free(&now);
}
