// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/model/top_model.c: changes against the baseline, rates, trends, sorting, summing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "top_model.h"

/* Refreshes at t = 0, 10, 20... with the given live counts of one class in one process. */
static void feed(struct top_model *m, pid_t pid, const char *name, const uint64_t *live, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		top_frame_begin(m, i * 10.0);
		cr_assert_eq(top_frame_set(m, pid, name, live[i], live[i] * 40, live[i] / 2, -1),
			     0);
		top_frame_end(m);
	}
}

static const struct top_view_row *find(const struct top_view *v, const char *name, pid_t pid)
{
	size_t i;

	for (i = 0; i < v->nrows; i++)
		if (!strcmp(v->rows[i].name, name) && v->rows[i].pid == pid)
			return &v->rows[i];
	return NULL;
}

Test(top_model, change_is_against_the_first_refresh_and_rate_is_per_minute)
{
	static const uint64_t live[] = {100, 160, 220, 280};
	struct top_model m;
	struct top_view v = {};
	const struct top_view_row *r;

	top_model_init(&m);
	feed(&m, 7, "Leak", live, 4);
	cr_assert_eq(top_view_build(&m, &v, false, TOP_SORT_LIVE, NULL), 0);
	r = find(&v, "Leak", 7);
	cr_assert_not_null(r);
	cr_expect_eq(r->live, 280);
	cr_expect_eq(r->change, 180);
	/* 180 more over 30 s: 360 a minute */
	cr_expect_float_eq(r->per_min, 360.0, 1e-9);
	cr_expect_float_eq(r->old_share, 0.5, 1e-9);
	cr_expect_eq(r->nhist, 4);
	cr_expect_eq(r->hist[0], 100);
	cr_expect_eq(r->hist[3], 280);
	top_view_free(&v);
	top_model_free(&m);
}

Test(top_model, rate_is_measured_over_the_last_refreshes_only)
{
	uint64_t hist[20];
	double times[20];
	int i;

	/* Grew by 1000 a refresh for 8, then flat: the rate is the last span's, not the whole. */
	for (i = 0; i < 20; i++) {
		hist[i] = i < 8 ? i * 1000 : 7000;
		times[i] = i;
	}
	cr_expect_float_eq(top_rate_per_min(hist, times, 20), 0.0, 1e-9);
	cr_expect_float_eq(top_rate_per_min(hist, times, 8), 1000.0 * 60, 1e-9);
	cr_expect_float_eq(top_rate_per_min(hist, times, 1), 0.0, 1e-9, "one point: no rate");
}

Test(top_model, reset_makes_the_next_refresh_the_baseline)
{
	struct top_model m;
	struct top_view v = {};

	top_model_init(&m);
	top_frame_begin(&m, 0);
	top_frame_set(&m, 1, "A", 10, 0, 0, -1);
	top_frame_end(&m);
	top_frame_begin(&m, 1);
	top_frame_set(&m, 1, "A", 50, 0, 0, -1);
	top_frame_end(&m);
	top_model_reset(&m);
	top_frame_begin(&m, 2);
	top_frame_set(&m, 1, "A", 70, 0, 0, -1);
	top_frame_end(&m);
	top_frame_begin(&m, 3);
	top_frame_set(&m, 1, "A", 75, 0, 0, -1);
	top_frame_set(&m, 1, "B", 5, 0, 0, -1); /* new after the baseline: all of it is change */
	top_frame_end(&m);
	cr_assert_eq(top_view_build(&m, &v, false, TOP_SORT_CHANGE, NULL), 0);
	cr_expect_eq(find(&v, "A", 1)->change, 5);
	cr_expect_eq(find(&v, "B", 1)->change, 5);
	cr_expect_eq(find(&v, "B", 1)->hist[find(&v, "B", 1)->nhist - 2], 0);
	top_view_free(&v);
	top_model_free(&m);
}

Test(top_model, a_class_missing_from_a_census_has_none_alive)
{
	struct top_model m;
	struct top_view v = {};

	top_model_init(&m);
	top_frame_begin(&m, 0);
	top_frame_set(&m, 1, "Gone", 10, 400, 10, 3.0);
	top_frame_end(&m);
	top_frame_begin(&m, 1);
	top_frame_end(&m);
	cr_assert_eq(top_view_build(&m, &v, false, TOP_SORT_LIVE, NULL), 0);
	cr_expect_eq(find(&v, "Gone", 1)->live, 0);
	cr_expect_eq(find(&v, "Gone", 1)->change, -10);
	cr_expect_float_eq(find(&v, "Gone", 1)->alloc_rate, 0.0, 1e-9);
	top_view_free(&v);
	top_model_free(&m);
}

Test(top_model, a_process_that_could_not_be_read_keeps_its_last_figures)
{
	struct top_model m;
	struct top_view v = {};

	top_model_init(&m);
	top_frame_begin(&m, 0);
	top_frame_set(&m, 1, "A", 10, 0, 0, -1);
	top_frame_set(&m, 2, "A", 20, 0, 0, -1);
	top_frame_end(&m);
	top_frame_begin(&m, 1);
	top_frame_keep(&m, 1); /* pid 1 exited: its rows stay as they were */
	top_frame_set(&m, 2, "A", 25, 0, 0, -1);
	top_frame_end(&m);
	cr_assert_eq(top_view_build(&m, &v, false, TOP_SORT_LIVE, NULL), 0);
	cr_expect_eq(find(&v, "A", 1)->live, 10);
	cr_expect_eq(find(&v, "A", 1)->hist[1], 10);
	cr_expect_eq(find(&v, "A", 2)->live, 25);
	top_view_free(&v);
	top_model_free(&m);
}

Test(top_model, summed_rows_add_processes_and_filter_and_sort)
{
	struct top_model m;
	struct top_view v = {};

	top_model_init(&m);
	top_frame_begin(&m, 0);
	top_frame_set(&m, 1, "Widget", 10, 100, 10, 2.0);
	top_frame_set(&m, 2, "Widget", 30, 300, 0, -1);
	top_frame_set(&m, 2, "Gadget", 25, 1000, 0, 1.0);
	top_frame_set(&m, 1, "String", 5, 50, 0, -1);
	top_frame_end(&m);
	cr_assert_eq(top_view_build(&m, &v, true, TOP_SORT_LIVE, NULL), 0);
	cr_assert_eq(v.nrows, 3);
	cr_expect_str_eq(v.rows[0].name, "Widget");
	cr_expect_eq(v.rows[0].pid, 0);
	cr_expect_eq(v.rows[0].live, 40);
	cr_expect_eq(v.rows[0].bytes, 400);
	cr_expect_float_eq(v.rows[0].alloc_rate, 2.0, 1e-9, "unknown rates add as nothing");
	cr_expect_float_eq(v.rows[0].old_share, 0.25, 1e-9);
	cr_expect_str_eq(v.rows[1].name, "Gadget");
	cr_expect_eq(v.live, 70);

	cr_assert_eq(top_view_build(&m, &v, true, TOP_SORT_BYTES, NULL), 0);
	cr_expect_str_eq(v.rows[0].name, "Gadget");
	cr_assert_eq(top_view_build(&m, &v, true, TOP_SORT_NAME, NULL), 0);
	cr_expect_str_eq(v.rows[0].name, "Gadget");
	cr_expect_str_eq(v.rows[2].name, "Widget");
	cr_assert_eq(top_view_build(&m, &v, true, TOP_SORT_ALLOCS, NULL), 0);
	cr_expect_str_eq(v.rows[0].name, "Widget");
	cr_expect_str_eq(v.rows[2].name, "String", "unknown rates sort last");

	cr_assert_eq(top_view_build(&m, &v, false, TOP_SORT_LIVE, "dget"), 0);
	cr_assert_eq(v.nrows, 3, "per process, filtered to *dget*");
	cr_expect_eq(v.rows[0].pid, 2);
	cr_expect_str_eq(v.rows[0].name, "Widget");
	cr_expect_str_eq(v.rows[1].name, "Gadget");
	cr_expect_eq(v.rows[2].pid, 1);
	top_view_free(&v);
	top_model_free(&m);
}

Test(top_model, history_is_a_ring_of_the_last_refreshes)
{
	struct top_model m;
	struct top_view v = {};
	int i;

	top_model_init(&m);
	for (i = 0; i < TOP_HISTORY + 10; i++) {
		top_frame_begin(&m, i);
		top_frame_set(&m, 1, "A", i, 0, 0, -1);
		top_frame_end(&m);
	}
	cr_assert_eq(top_view_build(&m, &v, false, TOP_SORT_LIVE, NULL), 0);
	cr_expect_eq(v.rows[0].nhist, TOP_HISTORY);
	cr_expect_eq(v.rows[0].hist[0], 10);
	cr_expect_eq(v.rows[0].hist[TOP_HISTORY - 1], TOP_HISTORY + 9);
	cr_expect_float_eq(v.rows[0].per_min, 60.0, 1e-9);
	top_view_free(&v);
	top_model_free(&m);
}

Test(top_model, many_rows_keep_their_identity)
{
	struct top_model m;
	struct top_view v = {};
	char name[32];
	int i;

	top_model_init(&m);
	top_frame_begin(&m, 0);
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "C%d", i);
		cr_assert_eq(top_frame_set(&m, 1 + i % 3, name, i, 0, 0, -1), 0);
	}
	top_frame_end(&m);
	top_frame_begin(&m, 1);
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "C%d", i);
		cr_assert_eq(top_frame_set(&m, 1 + i % 3, name, i + 1, 0, 0, -1), 0);
	}
	top_frame_end(&m);
	cr_expect_eq(m.nrows, 5000);
	cr_assert_eq(top_view_build(&m, &v, false, TOP_SORT_LIVE, NULL), 0);
	cr_expect_str_eq(v.rows[0].name, "C4999");
	cr_expect_eq(v.rows[0].change, 1);
	top_view_free(&v);
	top_model_free(&m);
}

Test(top_model, sparkline_scales_between_min_and_max)
{
	static const uint64_t up[] = {0, 1, 2, 3, 4, 5, 6, 7};
	static const uint64_t flat[] = {5, 5, 5};
	char buf[64];

	cr_expect_eq(top_sparkline(up, 8, 16, true, buf, sizeof(buf)), 8);
	cr_expect_str_eq(buf, "_.-:=+*#");
	top_sparkline(up, 8, 3, true, buf, sizeof(buf));
	cr_expect_str_eq(buf, "_:#", "the last 3, scaled among themselves");
	top_sparkline(flat, 3, 16, true, buf, sizeof(buf));
	cr_expect_str_eq(buf, "___");
	cr_expect_eq(top_sparkline(up, 8, 16, false, buf, sizeof(buf)), 8 * 3);
	cr_expect_eq(memcmp(buf, "\u2581", 3), 0);
	cr_expect_eq(memcmp(buf + 21, "\u2588", 3), 0);
	cr_expect_eq(top_sparkline(up, 8, 16, false, buf, 7), 6, "never cuts a character");
}

Test(top_model, sort_names_parse_back)
{
	int i;

	for (i = 0; i < TOP_NSORTS; i++)
		cr_expect_eq(top_sort_parse(top_sort_name(i)), i);
	cr_expect_eq(top_sort_parse("nope"), -1);
}
