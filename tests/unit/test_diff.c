// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/model/diff.c: two reports compared by names. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "diff.h"
#include "helpers.h"

static const struct diff_row *find(const struct diff_table *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].name, name))
			return &t->v[i];
	return NULL;
}

Test(diff, classes_sites_and_paths_by_name)
{
	struct report a = {}, b = {};
	struct report_diff d;
	const struct diff_row *row;
	char err[256] = "";

	test_fill_report(&a, "", 5, 100, 0);
	test_fill_report(&b, "", 5, 300, 0);
	test_report_add(&b, "Fresh", 4, 0, 4, 0, 0);
	report_finish(&b);
	cr_assert_eq(report_diff(&a, &b, &d, err, sizeof(err)), 0, "%s", err);
	row = find(&d.t[DIFF_CLASSES], "Session");
	cr_assert_not_null(row);
	cr_expect_eq(row->base[0], 50);
	cr_expect_eq(row->now[0], 150);
	cr_expect_eq(row->now[1] - row->base[1], 200); /* live, the census's */
	/* The largest change first; a class only one side has is there, marked. */
	cr_expect_str_eq(d.t[DIFF_CLASSES].v[0].name, "Session");
	row = find(&d.t[DIFF_CLASSES], "Fresh");
	cr_assert_not_null(row);
	cr_expect(row->in_new && !row->in_base);
	cr_expect_not_null(find(&d.t[DIFF_SITES], "Session store.rb:5"));
	row = find(&d.t[DIFF_PATHS], "<main> (app.rb:1);Store#put (store.rb:5);Session");
	cr_assert_not_null(row);
	cr_expect_eq(row->now[0] - row->base[0], 100);
	cr_expect_eq(d.t[DIFF_HOLDERS].n, 0);
	report_diff_free(&d);
	report_free(&a);
	report_free(&b);
}

Test(diff, no_class_in_common_cannot_be_compared)
{
	struct report a, b;
	struct report_diff d;
	char err[256] = "";

	test_report_init(&a);
	test_report_init(&b);
	test_report_add(&a, "Left", 1, 0, 1, 0, 0);
	test_report_add(&b, "Right", 1, 0, 1, 0, 0);
	report_finish(&a);
	report_finish(&b);
	cr_expect_eq(report_diff(&a, &b, &d, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "share no class") != NULL, "%s", err);
	cr_expect_null(strchr(err, '\n'));
	report_diff_free(&d);
	report_free(&a);
	report_free(&b);
}
