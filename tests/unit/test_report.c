// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/model/report.c and report_finish.c: one unit in two files, sharing report.h. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "report.h"
#include "writers.h"

static const struct class_row *find_row(const struct report *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nrows; i++)
		if (strcmp(r->rows[i].name, name) == 0)
			return &r->rows[i];
	return NULL;
}

Test(report, merge_sort_totals)
{
	struct report r;

	test_sample_report(&r);
	cr_assert_eq(r.nrows, 3);
	cr_expect_str_eq(r.rows[0].name, "Foo::Bar");
	cr_expect_eq(r.rows[0].counts.allocated, 20);
	cr_expect_eq(r.rows[0].counts.retained, 12);
	cr_expect_str_eq(r.rows[2].name, "Zed");
	cr_expect_eq(r.totals.allocated, 28);
	cr_expect_eq(r.totals.untracked, 2);
	report_free(&r);
}

Test(report, sites_and_paths_from_stacks)
{
	struct frame inner[] = {
	    {"Class#new", "<cfunc>", 0}, {"build", "app.rb", 7}, {"<main>", "app.rb", 9}};
	struct frame other[] = {{"build", "app.rb", 7}, {"other", "app.rb", 20}};
	struct stack s1 = {.depth = 3, .truncated = false, .frames = inner},
		     s2 = {.depth = 2, .truncated = true, .frames = other};
	struct counts c1 = {.allocated = 5, .retained = 3}, c2 = {.allocated = 2, .retained = 2};
	struct report r = {.end_reason = "x", .exit_status = -1, .with_stacks = true};
	char *out;

	report_add_stack(&r, "Leak", &s1, &c1);
	report_add_stack(&r, "Leak", &s2, &c2);
	report_add_stack(&r, "Leak", &s1, &c1);
	report_finish(&r);
	cr_assert_eq(r.nsites, 1, "both paths allocate at app.rb:7");
	cr_expect_eq(r.sites[0].line, 7);
	cr_expect_eq(r.sites[0].counts.retained, 8);
	cr_assert_eq(r.nstacks, 2);
	cr_expect_eq(r.stacks[0].counts.retained, 6);
	out = test_report_json(&r);
	cr_expect(strstr(out, "{\"class\": \"Leak\", \"path\": \"app.rb\", \"line\": 7, "
			      "\"allocated\": 12, \"retained\": 8, \"young\": 0, "
			      "\"retained_ages\": [0, 0, 0, 0, 0, 0, 0, 0]}") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "\"frames\": [{\"label\": \"Class#new\", \"path\": \"<cfunc>\", "
			      "\"line\": 0}, {\"label\": \"build\"") != NULL,
		  "%s", out);
	free(out);
	report_free(&r);
}

Test(report, sort_tie_breaks)
{
	static const char *const order[] = {"D", "C", "A", "B", "E", "F"};
	struct report r;
	size_t i;

	test_report_init(&r);
	test_report_add(&r, "B", 10, 5, 5, 0, 0);
	test_report_add(&r, "E", 100, 100, 0, 0, 0);
	test_report_add(&r, "A", 10, 5, 5, 0, 0);
	test_report_add(&r, "F", 1, 1, 0, 0, 0);
	test_report_add(&r, "C", 20, 15, 5, 0, 0);
	test_report_add(&r, "D", 9, 0, 9, 0, 0);
	report_finish(&r);
	cr_assert_eq(r.nrows, 6);
	for (i = 0; i < 6; i++)
		cr_expect_str_eq(r.rows[i].name, order[i], "row %zu", i);
	report_free(&r);
}

Test(report, totals_sum_every_field)
{
	struct report r;

	test_report_init(&r);
	test_report_add(&r, "A", 10, 3, 7, 1, 2);
	test_report_add(&r, "B", 20, 20, 0, 0, 5);
	test_report_add(&r, "A", 1, 0, 1, 4, 0);
	report_finish(&r);
	cr_expect_eq(r.totals.allocated, 31);
	cr_expect_eq(r.totals.freed, 23);
	cr_expect_eq(r.totals.retained, 8);
	cr_expect_eq(r.totals.untracked, 5);
	cr_expect_eq(r.totals.not_followed, 7);
	/* Finishing twice does not double the totals. */
	report_finish(&r);
	cr_expect_eq(r.totals.allocated, 31);
	report_free(&r);
	cr_expect_eq(r.nrows, 0);
	cr_expect_null(r.rows);
}

/* More rows than the first allocation, each added twice in a different order. */
Test(report, merges_many_rows)
{
	struct report r;
	char name[32];
	int i;

	test_report_init(&r);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "Class%04d", i);
		test_report_add(&r, name, i + 1, 0, i, 0, 0);
	}
	for (i = 999; i >= 0; i--) {
		snprintf(name, sizeof(name), "Class%04d", i);
		test_report_add(&r, name, 1, 1, 0, 0, 0);
	}
	cr_assert_eq(r.nrows, 1000);
	report_finish(&r);
	cr_assert_eq(r.nrows, 1000);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "Class%04d", 999 - i);
		cr_assert_str_eq(r.rows[i].name, name);
		cr_assert_eq(r.rows[i].counts.allocated, 999 - i + 2);
		cr_assert_eq(r.rows[i].counts.freed, 1);
		cr_assert_eq(r.rows[i].counts.retained, 999 - i);
	}
	report_free(&r);
}

/* Names that differ only after a prefix, or in case, are separate rows. */
Test(report, similar_names_stay_apart)
{
	struct report r;

	test_report_init(&r);
	test_report_add(&r, "Foo", 1, 0, 1, 0, 0);
	test_report_add(&r, "foo", 1, 0, 1, 0, 0);
	test_report_add(&r, "Foo::Bar", 1, 0, 1, 0, 0);
	test_report_add(&r, "Foo ", 1, 0, 1, 0, 0);
	test_report_add(&r, "", 1, 0, 1, 0, 0);
	test_report_add(&r, "Foo", 1, 0, 1, 0, 0);
	cr_expect_eq(r.nrows, 5);
	report_finish(&r);
	cr_expect_str_eq(r.rows[0].name, "Foo");
	cr_expect_eq(r.rows[0].counts.allocated, 2);
	cr_expect_str_eq(r.rows[1].name, "");
	report_free(&r);
}

Test(report, frame_display_names)
{
	struct frame ruby = {"block in foo", "/app/x.rb", 12}, c = {"Integer#times", "<cfunc>", 0};
	char buf[64], small[8];

	frame_display_name(&ruby, buf, sizeof(buf));
	cr_expect_str_eq(buf, "block in foo (/app/x.rb:12)");
	frame_display_name(&c, buf, sizeof(buf));
	cr_expect_str_eq(buf, "Integer#times");
	frame_display_name(&ruby, small, sizeof(small));
	cr_expect_str_eq(small, "block i");
}

Test(report, add_merges_by_name_and_finish_sorts_and_sums)
{
	struct report r = {};
	struct counts a = test_counts(10, 4, 6), b = test_counts(5, 5, 0), c = test_counts(3, 0, 3);

	cr_assert_eq(report_add(&r, "Foo", &a), 0);
	cr_assert_eq(report_add(&r, "Bar", &b), 0);
	cr_assert_eq(report_add(&r, "Foo", &c), 0);
	report_finish(&r);
	cr_assert_eq(r.nrows, 2);
	cr_expect_str_eq(r.rows[0].name, "Foo", "most retained first");
	cr_expect_eq(r.rows[0].counts.allocated, 13);
	cr_expect_eq(r.rows[0].counts.retained, 9);
	cr_expect_eq(r.totals.allocated, 18);
	cr_expect_eq(r.totals.freed, 9);
	cr_expect_eq(r.totals.retained, 9);
	cr_expect(!r.have_estimates, "not sampled: no estimates");
	report_free(&r);
}

Test(report, stacks_are_copied_and_make_sites)
{
	char label[32] = "Foo#build", path[32] = "app.rb";
	struct frame frames[] = {{"Class#new", "<cfunc>", 0}, {label, path, 7}};
	struct stack st = {.depth = 2, .truncated = false, .frames = frames};
	struct counts c = test_counts(4, 1, 3);
	struct report r = {};

	cr_assert_eq(report_add(&r, "Foo", &c), 0);
	cr_assert_eq(report_add_stack(&r, "Foo", &st, &c), 0);
	/* The caller's strings may go away: the model keeps its own. */
	strcpy(label, "clobbered");
	strcpy(path, "clobbered");
	report_finish(&r);
	cr_assert_eq(r.nstacks, 1);
	cr_expect_str_eq(r.stacks[0].stack->frames[1].label, "Foo#build");
	cr_expect_str_eq(r.stacks[0].stack->frames[1].path, "app.rb");
	cr_assert_eq(r.nsites, 1, "the innermost Ruby frame is the site");
	cr_expect_str_eq(r.sites[0].path, "app.rb");
	cr_expect_eq(r.sites[0].line, 7);
	cr_expect_eq(r.sites[0].counts.retained, 3);
	cr_expect(r.sites[0].path == r.stacks[0].stack->frames[1].path, "paths are interned");
	report_free(&r);
}

/* A freed iseq's frame is the site, unknown: its caller's line would look right and be wrong. */
Test(report, a_gone_allocating_frame_is_the_site_not_its_caller)
{
	struct frame frames[] = {{"Class#new", "<cfunc>", 0},
				 {"(iseq gone)", "?", 0},
				 {"<top (required)>", "lib.rb", 4}};
	struct stack st = {.depth = 3, .frames = frames};
	struct counts c = test_counts(5, 0, 5);
	struct report r = {};

	cr_assert_eq(report_add(&r, "Item", &c), 0);
	cr_assert_eq(report_add_stack(&r, "Item", &st, &c), 0);
	report_finish(&r);
	cr_assert_eq(r.nsites, 1);
	cr_expect_str_eq(r.sites[0].path, "?");
	cr_expect_eq(r.sites[0].line, 0);
	cr_expect_eq(r.sites[0].counts.retained, 5, "the site still accounts for its objects");
	cr_expect_eq(stack_site(&st), &frames[1]);
	report_free(&r);
}

Test(report, finish_computes_estimates_under_sampling)
{
	struct report r = {.sampling = {.on = true, .scale = 2.5}};
	struct frame frames[] = {{"x", "a.rb", 3}};
	struct stack st = {.depth = 1, .truncated = false, .frames = frames};
	struct counts c = test_counts(4, 2, 2);

	report_add(&r, "Foo", &c);
	report_add_stack(&r, "Foo", &st, &c);
	report_finish(&r);
	cr_assert(r.have_estimates);
	cr_expect_eq(r.rows[0].est.allocated, 10);
	cr_expect_eq(r.rows[0].est.retained, 5);
	cr_expect_eq(r.rows[0].est.freed, 5);
	cr_expect_eq(r.est_totals.allocated, 10);
	cr_expect_eq(r.sites[0].est.retained, 5);
	cr_expect_eq(r.stacks[0].est.allocated, 10);
	report_free(&r);
}

/*
 * Windows record different shares: a first window recorded 1 in 3 of a
 * burst's start (all Leak), later ones 1 in 60 of whole bursts (Leak 1 to
 * Churn 2).  Each traced object weighs 1 / its window's share; the weights
 * scale to Ruby's count, not the traced counts.
 */
Test(report, estimates_weigh_each_object_by_its_windows_share)
{
	struct report r = {.sampling = {.on = true, .scale = 1000}};
	struct counts leak = {.allocated = 300, .retained = 300},
		      churn = {.allocated = 200, .freed = 200};

	/* 250 Leak in the dense window (weight 3), 50 in thin ones (60); 200 Churn in thin ones. */
	leak.w_allocated = leak.w_retained = 250 * 3 + 50 * 60;
	churn.w_allocated = churn.w_freed = 200 * 60;
	/* Ruby allocated 157500: the weights sum to 15750 */
	r.sampling.weight_scale = 157500.0 / (leak.w_allocated + churn.w_allocated);
	report_add(&r, "Leak", &leak);
	report_add(&r, "Churn", &churn);
	report_finish(&r);
	cr_assert(r.have_estimates);
	cr_expect_eq(find_row(&r, "Leak")->est.allocated, 37500, "not 300 * 1000");
	cr_expect_eq(find_row(&r, "Leak")->est.retained, 37500);
	cr_expect_eq(find_row(&r, "Churn")->est.allocated, 120000);
	cr_expect_eq(find_row(&r, "Churn")->est.freed, 120000);
	cr_expect_eq(r.est_totals.allocated, 157500, "the estimates add up to Ruby's count");
	report_free(&r);
}

Test(report, census_figures_live_on_their_class_row)
{
	struct report r = {};
	struct census_counts cc = {.live_start = 5, .live_end = 9, .bytes_end = 360, .old_end = 4};
	struct counts c = test_counts(4, 0, 4);

	report_add(&r, "Foo", &c);
	report_set_census(&r, "Foo", &cc);
	report_set_census(&r, "OnlyInHeap", &cc);
	report_finish(&r);
	cr_assert_eq(r.nrows, 2);
	cr_expect(find_row(&r, "Foo")->census.have);
	cr_expect_eq(find_row(&r, "Foo")->census.live_end, 9);
	cr_expect_eq(find_row(&r, "OnlyInHeap")->counts.allocated, 0);
	report_free(&r);
}

Test(report, model_owns_its_processes)
{
	struct model m = {};
	struct report *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

	test_fill_report(a, "web1", 1, 4, 0);
	test_fill_report(b, "web2", 1, 4, 0);
	cr_assert_eq(model_add(&m, a), 0);
	cr_assert_eq(model_add(&m, b), 0);
	cr_expect_eq(m.nprocs, 2);
	cr_expect_str_eq(m.procs[1]->host, "web2");
	model_free(&m);
	cr_expect_eq(m.nprocs, 0);
}

Test(report, age_buckets_double)
{
	static const uint64_t gcs[] = {1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 1000};
	static const unsigned bucket[] = {0, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
	unsigned i;

	for (i = 0; i < sizeof(gcs) / sizeof(gcs[0]); i++)
		cr_expect_eq(age_bucket(gcs[i]), bucket[i], "%lu GCs", (unsigned long) gcs[i]);
	for (i = 0; i < AGE_BUCKETS; i++)
		cr_expect_eq(age_bucket(age_bucket_low(i)), i, "bucket %u's low bound", i);
	cr_expect_eq(age_bucket_low(7), 65);
}

Test(report, tally_adds_counts_and_ages_to_row_site_and_path)
{
	struct frame frames[] = {{"Store#put", "store.rb", 4}};
	struct stack st = {.depth = 1, .truncated = false, .frames = frames};
	struct counts c = {.allocated = 5, .retained = 3, .young = 1, .freed = 1};
	struct ages a = {.n = {0, 0, 3}};
	struct report r = {};

	cr_assert_eq(report_add_counts(&r, "Session", &st, &c, &a), 0);
	cr_assert_eq(report_add_counts(&r, "Session", NULL, &c, &a), 0);
	report_finish(&r);
	cr_expect_eq(r.rows[0].counts.young, 2);
	cr_expect_eq(r.rows[0].ages.n[2], 6);
	cr_expect_eq(r.sites[0].ages.n[2], 3);
	cr_expect_eq(r.stacks[0].counts.young, 1);
	cr_expect_eq(r.totals.allocated, r.totals.freed + r.totals.retained + r.totals.young +
					     r.totals.untracked + r.totals.not_followed);
	report_free(&r);
}

/* Sampling scales traced counts up; the heap census bounds what retained may claim. */
Test(report, census_bounds_retained_estimates)
{
	struct report r = {.sampling = {.on = true, .scale = 100}, .heap_end = {.have = true}};
	struct frame f1[] = {{"a", "a.rb", 1}}, f2[] = {{"b", "b.rb", 2}};
	struct stack s1 = {.depth = 1, .truncated = false, .frames = f1},
		     s2 = {.depth = 1, .truncated = false, .frames = f2};
	struct counts c1 = {.allocated = 30, .retained = 30},
		      c2 = {.allocated = 10, .retained = 10};
	struct census_counts cc = {.live_start = 100, .live_end = 2000};
	struct counts other = {.allocated = 5, .retained = 5};

	report_add_counts(&r, "Widget", &s1, &c1, NULL);
	report_add_counts(&r, "Widget", &s2, &c2, NULL);
	report_set_census(&r, "Widget", &cc);
	report_add(&r, "Gadget", &other); /* no census row: not bounded */
	report_finish(&r);
	cr_assert_str_eq(r.rows[0].name, "Widget");
	cr_expect_eq(r.rows[0].est.retained, 2000, "4000 scaled, 2000 alive");
	cr_expect_eq(r.rows[0].est.allocated, 4000, "allocations are not bounded by the heap");
	cr_expect_eq(r.rows[0].census.change, 1900);
	cr_expect_eq(r.est_capped, 1);
	cr_expect_eq(r.sites[0].est.retained, 1500, "3000 scaled by the class's 1/2");
	cr_expect_eq(r.sites[1].est.retained, 500);
	cr_expect_eq(r.stacks[0].est.retained + r.stacks[1].est.retained, 2000);
	cr_expect_eq(r.rows[1].est.retained, 500);
	cr_expect_eq(r.est_totals.retained, 2500, "the sum of the bounded rows");
	cr_expect_eq(r.est_totals.allocated, 4500);
	report_free(&r);
}

/*
 * A class traced in one window of sixteen (made in one burst a window
 * covered) is flagged, in the model and in the text; one seen in most
 * windows is not, nor anything when windows are too few to tell.
 */
Test(report, estimates_from_one_or_two_windows_are_flagged)
{
	struct report r = {.sampling = {.on = true, .scale = 100, .windows = 16}};
	struct counts burst = {.allocated = 40, .retained = 40, .window_bits = 1ULL << 5};
	struct counts steady = {.allocated = 40, .freed = 40, .window_bits = 0xfffe};
	struct counts two = {.allocated = 4, .freed = 4, .window_bits = (1ULL << 3) | (1ULL << 9)};
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	report_add(&r, "OnceMade", &burst);
	report_add(&r, "Steady", &steady);
	report_add(&r, "Twice", &two);
	report_add(&r, "Twice", &two); /* the same windows again: still two */
	report_finish(&r);
	cr_expect_eq(counts_windows(&find_row(&r, "Steady")->counts), 15);
	cr_expect_eq(counts_windows(&find_row(&r, "Twice")->counts), 2);
	cr_expect(estimate_from_few_windows(&r, &find_row(&r, "OnceMade")->counts));
	cr_expect(estimate_from_few_windows(&r, &find_row(&r, "Twice")->counts));
	cr_expect_not(estimate_from_few_windows(&r, &find_row(&r, "Steady")->counts));

	out = open_memstream(&text, &len);
	report_write_text(out, &r, &(struct text_options){.top = 10});
	fclose(out);
	cr_expect(strstr(text, "?OnceMade\n") && strstr(text, " Steady\n"), "%s", text);
	cr_expect(strstr(text, "only 1 or 2 of the 16 windows"), "%s", text);
	free(text);

	r.sampling.windows = 3; /* too few windows to tell a burst from the rest */
	cr_expect_not(estimate_from_few_windows(&r, &find_row(&r, "OnceMade")->counts));
	report_free(&r);
}

/*
 * Where the two censuses were compared, a class's retained estimate lies
 * within what they found made and kept: one traced object scaled by 100 is
 * brought down to the heap's 10, none traced is brought up to its 44, and
 * wb-unprotected objects (age unknown) leave a range the traced count may
 * stay in.  Sites follow their class.
 */
Test(report, heap_sets_or_bounds_retained_estimates)
{
	struct report r = {.sampling = {.on = true, .scale = 100},
			   .heap_start = {.have = true},
			   .heap_end = {.have = true}};
	struct frame f[] = {{"a", "a.rb", 1}};
	struct stack s = {.depth = 1, .frames = f};
	struct counts one = {.allocated = 1, .retained = 1}, three = {.allocated = 3, .retained = 3};
	struct census_counts rare = {.live_start = 5, .live_end = 15, .have_new = true,
				     .new_alive = 12, .new_retained = 10},
			     unseen = {.live_start = 0, .live_end = 44, .have_new = true,
				       .new_alive = 44, .new_retained = 44},
			     unaged = {.live_end = 900, .have_new = true, .new_alive = 800,
				       .new_retained = 100, .new_unaged = 600};

	report_add_counts(&r, "Proc", &s, &one, NULL);
	report_set_census(&r, "Proc", &rare);
	report_set_census(&r, "Rare", &unseen);
	report_add_counts(&r, "Data", &s, &three, NULL);
	report_set_census(&r, "Data", &unaged);
	report_finish(&r);
	cr_assert_eq(r.nrows, 3);
	cr_assert_str_eq(r.rows[0].name, "Data", "sorted by the estimate: 300, 44, 10");
	cr_expect_eq(r.rows[0].est.retained, 300, "within [100, 700]: the traced estimate stands");
	cr_expect_eq(r.rows[0].est_source, EST_SAMPLED);
	cr_assert_str_eq(r.rows[1].name, "Rare");
	cr_expect_eq(r.rows[1].est.retained, 44);
	cr_expect_eq(r.rows[1].est_source, EST_HEAP);
	cr_assert_str_eq(r.rows[2].name, "Proc");
	cr_expect_eq(r.rows[2].est.retained, 10);
	cr_expect_eq(r.rows[2].est_source, EST_HEAP);
	cr_expect_eq(r.est_capped, 2);
	cr_expect_eq(r.est_totals.retained, 354, "the sum of the rows");
	cr_assert_eq(r.nsites, 2);
	cr_expect_eq(r.sites[0].est.retained, 300);
	cr_expect_eq(r.sites[1].est.retained, 10, "Proc's site follows its class");
	report_free(&r);
}

/*
 * Under sampling, a class with one or two traced objects is a suspect only
 * when the heap shows it made old objects and grew; its count is then the
 * heap's.
 */
Test(report, few_samples_need_the_heap_to_be_suspects)
{
	struct report r = {.sampling = {.on = true, .scale = 100},
			   .gc_runs = 10,
			   .heap_start = {.have = true},
			   .heap_end = {.have = true}};
	struct counts one = {.allocated = 1, .retained = 1};
	struct ages old = {.n = {[AGE_BUCKETS - 1] = 1}};
	struct census_counts grew = {.live_start = 10, .live_end = 60, .have_new = true,
				     .new_alive = 50, .new_retained = 50, .new_old = 40},
			     flat = {.live_start = 60, .live_end = 60, .have_new = true,
				     .new_alive = 5, .new_retained = 5, .new_old = 5},
			     young = {.live_start = 0, .live_end = 60, .have_new = true,
				      .new_alive = 60, .new_retained = 60};

	report_add_counts(&r, "Grew", NULL, &one, &old);
	report_set_census(&r, "Grew", &grew);
	report_add_counts(&r, "Flat", NULL, &one, &old);
	report_set_census(&r, "Flat", &flat);
	report_add_counts(&r, "NoOld", NULL, &one, &old);
	report_set_census(&r, "NoOld", &young);
	report_add_counts(&r, "NoHeap", NULL, &one, &old);
	report_finish(&r);
	cr_assert_eq(r.nsuspects, 1);
	cr_expect_str_eq(r.suspects[0].class_name, "Grew");
	cr_expect_eq(r.suspects[0].old_retained, 40, "the heap's old new objects");
	report_free(&r);
}
