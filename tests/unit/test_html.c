// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/html.c and html_data.c: one self-contained page; the target's strings inert. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "html.h"
#include "html_data.h"
#include "json_writer.h"

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

Test(html, hostile_names_cannot_close_the_data)
{
	struct frame f1[] = {{"x</script><script>alert(1)</script>", "a\xe2\x80\xae" "b.rb", 7}};
	struct stack s1 = {.depth = 1, .frames = f1};
	struct counts c1 = {.allocated = 5, .retained = 3};
	struct report r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	test_report_init(&r);
	r.with_stacks = true;
	report_add(&r, "Evil</script>\x1b[2J", &c1);
	report_add_stack(&r, "Evil</script>\x1b[2J", &s1, &c1);
	report_finish(&r);
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	cr_assert_eq(report_write_html(f, &r), 0);
	fclose(f);
	/* The data's element and the script's: no third closing tag, no raw bidi or escape. */
	cr_expect_eq(count(buf, "</script>"), 2);
	cr_expect_null(strstr(buf, "\xe2\x80\xae"));
	cr_expect_null(strchr(buf, '\x1b'));
	/* Shown as the text report shows them: \x1b, \u{202e}. */
	cr_expect_not_null(strstr(buf, "Evil\\u003c/script\\u003e\\\\x1b[2J"));
	cr_expect_not_null(strstr(buf, "a\\\\u{202e}b.rb"));
	/* Its own script only, by its hash: no 'unsafe-inline' for scripts, no source to load from. */
	cr_expect_not_null(strstr(buf, "default-src 'none'; script-src 'sha256-"));
	cr_expect_null(strstr(buf, "script-src 'unsafe-inline'"));
	free(buf);
	report_free(&r);
}

/* Two periods of one process, A with its births in both, B with some in the second only. */
static void cohort_period(struct report *r, uint64_t number, const struct born_count *a,
			  size_t na, const struct born_count *b, size_t nb)
{
	struct class_row *row;

	test_report_init(r);
	r->period.read_back = true;
	r->period.number = number;
	row = report_row(r, "A");
	cr_assert(row && (row->born = calloc(na, sizeof(*a))));
	memcpy(row->born, a, na * sizeof(*a));
	row->nborn = na;
	row->have_born = true;
	row = report_row(r, "B");
	cr_assert(row);
	if (nb) {
		cr_assert(row->born = calloc(nb, sizeof(*b)));
		memcpy(row->born, b, nb * sizeof(*b));
		row->nborn = nb;
		row->have_born = true;
	}
}

static char *series_data(struct model *m, size_t max_pairs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct jw w;

	cr_assert_not_null(f);
	jw_init(&w, f, 0);
	jw_object(&w, NULL, JW_COMPACT);
	cr_assert_eq(html_series_members_capped(&w, m, max_pairs), 0);
	jw_end(&w);
	fclose(f);
	return buf;
}

/* A series' births per class and period, and the classes past the page's budget left out, said. */
Test(html, series_birth_cohorts_within_a_budget)
{
	const struct born_count a1[] = {{0, 7}, {1, 100}}, a2[] = {{0, 7}, {1, 70}, {2, 50}},
				b2[] = {{2, 3}};
	struct report r1, r2;
	struct model m = {0};
	char *buf;

	cohort_period(&r1, 1, a1, 2, NULL, 0);
	cohort_period(&r2, 2, a2, 3, b2, 1);
	cr_assert_eq(model_add(&m, &r1), 0);
	cr_assert_eq(model_add(&m, &r2), 0);
	buf = series_data(&m, 100);
	cr_expect_not_null(strstr(buf, "\"cohorts\":true"), "%s", buf);
	cr_expect_not_null(strstr(buf, "\"name\":\"A\""));
	cr_expect_not_null(strstr(buf, "\"born\":[[[0,7],[1,100]],[[0,7],[1,70],[2,50]]]"), "%s", buf);
	cr_expect_not_null(strstr(buf, "\"born\":[[],[[2,3]]]"), "%s", buf);
	cr_expect_not_null(strstr(buf, "\"born_left_out\":0"), "%s", buf);
	free(buf);
	/* A's 5 pairs fit in 5, B's one no more. */
	buf = series_data(&m, 5);
	cr_expect_not_null(strstr(buf, "\"born\":[[[0,7],[1,100]],[[0,7],[1,70],[2,50]]]"), "%s", buf);
	cr_expect_not_null(strstr(buf, "\"born\":null"), "%s", buf);
	cr_expect_not_null(strstr(buf, "\"born_left_out\":1"), "%s", buf);
	free(buf);
	m.nprocs = 0; /* the reports are the test's */
	model_free(&m);
	report_free(&r1);
	report_free(&r2);
}
