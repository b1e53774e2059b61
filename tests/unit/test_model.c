// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The report model on its own: adding, finishing, estimates, owning stacks, merging. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "writers.h"

static struct counts cnt(uint64_t allocated, uint64_t freed, uint64_t retained)
{
	return (struct counts){.allocated = allocated, .freed = freed, .retained = retained};
}

static const struct class_row *find_row(const struct report *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nrows; i++)
		if (strcmp(r->rows[i].name, name) == 0)
			return &r->rows[i];
	return NULL;
}

Test(model, add_merges_by_name_and_finish_sorts_and_sums)
{
	struct report r = {};
	struct counts a = cnt(10, 4, 6), b = cnt(5, 5, 0), c = cnt(3, 0, 3);

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

Test(model, stacks_are_copied_and_make_sites)
{
	char label[32] = "Foo#build", path[32] = "app.rb";
	struct frame frames[] = {{"Class#new", "<cfunc>", 0}, {label, path, 7}};
	struct stack st = {.depth = 2, .truncated = false, .frames = frames};
	struct counts c = cnt(4, 1, 3);
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

Test(model, finish_computes_estimates_under_sampling)
{
	struct report r = {.sampling = {.on = true, .scale = 2.5}};
	struct frame frames[] = {{"x", "a.rb", 3}};
	struct stack st = {.depth = 1, .truncated = false, .frames = frames};
	struct counts c = cnt(4, 2, 2);

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
Test(model, estimates_weigh_each_object_by_its_windows_share)
{
	struct report r = {.sampling = {.on = true, .scale = 1000}};
	struct counts leak = {.allocated = 300, .retained = 300}, churn = {.allocated = 200,
									   .freed = 200};

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

Test(model, census_figures_live_on_their_class_row)
{
	struct report r = {};
	struct census_counts cc = {.live_start = 5, .live_end = 9, .bytes_end = 360, .old_end = 4};
	struct counts c = cnt(4, 0, 4);

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

/* Two processes, as two hosts would send them: names line up, addresses never mattered. */
static void fill(struct report *r, const char *host, int line, uint64_t n, double scale)
{
	struct frame frames[] = {{"Store#put", "store.rb", line}, {"<main>", "app.rb", 1}};
	struct stack st = {.depth = 2, .truncated = false, .frames = frames};
	struct counts c = cnt(n, n / 2, n - n / 2);
	struct census_counts cc = {.live_start = 1, .live_end = n, .bytes_end = 40 * n, .old_end = 1};

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

Test(model, merge_sums_by_name)
{
	struct report a = {}, b = {}, sum = {};

	fill(&a, "web1", 10, 10, 0);
	fill(&b, "web2", 10, 20, 0);
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

Test(model, merge_keeps_different_lines_apart_and_sums_estimates)
{
	struct report a = {}, b = {}, sum = {};

	fill(&a, "web1", 10, 10, 2.0);
	fill(&b, "web2", 11, 10, 4.0);
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

Test(model, model_owns_its_processes)
{
	struct model m = {};
	struct report *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

	fill(a, "web1", 1, 4, 0);
	fill(b, "web2", 1, 4, 0);
	cr_assert_eq(model_add(&m, a), 0);
	cr_assert_eq(model_add(&m, b), 0);
	cr_expect_eq(m.nprocs, 2);
	cr_expect_str_eq(m.procs[1]->host, "web2");
	model_free(&m);
	cr_expect_eq(m.nprocs, 0);
}

Test(model, age_buckets_double)
{
	static const uint64_t gcs[] = {1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 1000};
	static const unsigned bucket[] = {0, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
	unsigned i;

	for (i = 0; i < sizeof(gcs) / sizeof(gcs[0]); i++)
		cr_expect_eq(age_bucket(gcs[i]), bucket[i], "%lu GCs", (unsigned long)gcs[i]);
	for (i = 0; i < AGE_BUCKETS; i++)
		cr_expect_eq(age_bucket(age_bucket_low(i)), i, "bucket %u's low bound", i);
	cr_expect_eq(age_bucket_low(7), 65);
}

Test(model, tally_adds_counts_and_ages_to_row_site_and_path)
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
	cr_expect_eq(r.totals.allocated,
		     r.totals.freed + r.totals.retained + r.totals.young + r.totals.untracked +
			     r.totals.not_followed);
	report_free(&r);
}

/* Sampling scales traced counts up; the heap census bounds what retained may claim. */
Test(model, census_bounds_retained_estimates)
{
	struct report r = {.sampling = {.on = true, .scale = 100}, .heap_end = {.have = true}};
	struct frame f1[] = {{"a", "a.rb", 1}}, f2[] = {{"b", "b.rb", 2}};
	struct stack s1 = {.depth = 1, .truncated = false, .frames = f1}, s2 = {.depth = 1, .truncated = false, .frames = f2};
	struct counts c1 = {.allocated = 30, .retained = 30}, c2 = {.allocated = 10, .retained = 10};
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
Test(model, estimates_from_one_or_two_windows_are_flagged)
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
