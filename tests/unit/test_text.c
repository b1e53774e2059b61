// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/text.c: the text report (report_write_text). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "writers.h"

/* r as rbmemtrace --tree prints it: top classes, 10 call paths, the tree; malloc'd. */
static char *text_with_tree(struct report *r, size_t top)
{
	struct text_options o = {.top = top, .top_stacks = 10, .tree = true, .prune = 1};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	report_write_text(f, r, &o);
	fclose(f);
	return buf;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (; (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

Test(text, text_header_warnings_escaping_top)
{
	struct report r;
	char *out;

	test_sample_report(&r);
	r.compactions = 1;
	out = text_with_tree(&r, 2);
	cr_expect(strstr(out, "rbmemtrace: PID 42, ruby 3.1.7") != NULL);
	cr_expect(strstr(out, "WARNING: 2 objects were allocated after the live-object map") !=
		  NULL);
	cr_expect(strstr(out, "WARNING: GC.compact ran 1 time(s)") != NULL);
	cr_expect(strstr(out, "Evil\"\\x0a\\x1b[2J") != NULL, "%s", out);
	cr_expect(strstr(out, "\x1b") == NULL, "raw escape reached the terminal");
	cr_expect(strstr(out, "... 1 more classes") != NULL);
	free(out);
	report_free(&r);
}

Test(text, text_clean_run_has_no_warnings)
{
	struct report r;
	char *out;

	test_report_init(&r);
	test_report_add(&r, "Foo", 3, 1, 2, 0, 0);
	test_report_add(&r, "Bar", 1, 1, 0, 0, 0);
	report_finish(&r);
	out = test_report_text(&r, 0);
	cr_expect(
	    strstr(out, "rbmemtrace: PID 4242, ruby 3.1.7, traced 2.5 s (duration), 0 GC runs\n") ==
		out,
	    "%s", out);
	cr_expect(strstr(out, "Totals: allocated 4, freed 2, retained 2, untracked 0\n") != NULL,
		  "%s", out);
	cr_expect_eq(count_of(out, "WARNING"), 0, "%s", out);
	cr_expect(strstr(out, "UNTRACKED") == NULL, "column shown without untracked objects");
	cr_expect(strstr(out, "Command exited") == NULL);
	cr_expect(strstr(out, "as of the last GC check") == NULL);
	cr_expect(strstr(out, "more classes") == NULL);
	cr_expect(strstr(out, "         2          3          1  Foo\n") != NULL, "%s", out);
	cr_expect(strstr(out, "         0          1          1  Bar\n") != NULL, "%s", out);
	cr_expect_lt(strstr(out, "  Foo\n"), strstr(out, "  Bar\n"));
	free(out);
	report_free(&r);
}

Test(text, text_optional_lines)
{
	struct report r;
	char *out;

	test_report_init(&r);
	r.exit_status = 3;
	r.target_exited = true;
	r.end_reason = "command finished";
	r.header_read_errors = 4;
	r.class_overflow = 6;
	r.compactions = 2;
	r.moved_followed = 9;
	test_report_add(&r, "Foo", 3, 1, 2, 5, 1);
	report_finish(&r);
	out = test_report_text(&r, 0);
	cr_expect(strstr(out, "(command finished)") != NULL, "%s", out);
	cr_expect(strstr(out, "Command exited with status 3.\n") != NULL, "%s", out);
	cr_expect(strstr(out, "(as of the last GC check before the target exited)") != NULL);
	cr_expect(
	    strstr(out, "WARNING: 5 objects were allocated after the live-object map filled") !=
		NULL,
	    "%s", out);
	cr_expect(strstr(out, "WARNING: GC.compact ran 2 time(s) while tracing: 9 tracked objects "
			      "moved and were followed, 1 left their slots") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "WARNING: 4 allocations could not be read and 6 were not counted") !=
		      NULL,
		  "%s", out);
	cr_expect_eq(count_of(out, "WARNING"), 3);
	cr_expect(strstr(out, "  UNTRACKED  CLASS\n") != NULL, "%s", out);
	cr_expect(strstr(out, "         2          3          1          5  Foo\n") != NULL, "%s",
		  out);
	free(out);
	report_free(&r);
}

/* A sampled trace that estimated nothing says why: no window, none traced, or no counter. */
Test(text, text_sampled_without_estimates_says_why)
{
	static const struct {
		uint64_t windows, traced;
		const char *says;
	} cases[] = {
	    {0, 0, "No window opened in 2.5 s: the budget pays for the first"},
	    {3, 0, "No allocation was traced in the 3 windows: nothing to scale up"},
	    {3, 7, "Traced 7 allocations; Ruby's own allocation counter could not be read"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct report r;
		char *out;

		test_report_init(&r);
		r.sampling.on = true;
		r.sampling.budget_percent = 2;
		r.sampling.windows = cases[i].windows;
		r.sampling.traced = cases[i].traced;
		test_report_add(&r, "Foo", cases[i].traced, 0, cases[i].traced, 0, 0);
		report_finish(&r);
		out = test_report_text(&r, 0);
		cr_expect_not(r.have_estimates);
		cr_expect(strstr(out, cases[i].says) != NULL, "case %zu: %s", i, out);
		cr_expect_eq(count_of(out, "so no estimates") + count_of(out, "No window opened"),
			     1, "case %zu: one reason: %s", i, out);
		free(out);
		report_free(&r);
	}
}

Test(text, text_compactions_no_window_saw_are_said_unseen)
{
	struct report r;
	char *out;

	test_report_init(&r);
	r.sampling.on = true;
	r.sampling.budget_percent = 2;
	r.compactions = 10;
	test_report_add(&r, "Foo", 0, 0, 0, 0, 0);
	report_finish(&r);
	out = test_report_text(&r, 0);
	cr_expect(strstr(out, "WARNING: GC.compact ran 10 time(s) while tracing, unseen: no "
			      "window was open") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "were followed") == NULL, "%s", out);
	free(out);
	report_free(&r);
	/* With a window open, the moves it followed are counted as before. */
	test_report_init(&r);
	r.sampling.on = true;
	r.sampling.windows = 2;
	r.compactions = 10;
	test_report_add(&r, "Foo", 1, 0, 1, 0, 0);
	report_finish(&r);
	out = test_report_text(&r, 0);
	cr_expect(strstr(out, "WARNING: GC.compact ran 10 time(s) while tracing: 0 tracked") != NULL,
		  "%s", out);
	free(out);
	report_free(&r);
}

Test(text, text_top)
{
	struct report r;
	char *out;

	test_report_init(&r);
	test_report_add(&r, "A", 3, 0, 3, 0, 0);
	test_report_add(&r, "B", 2, 0, 2, 0, 0);
	test_report_add(&r, "C", 1, 0, 1, 0, 0);
	report_finish(&r);

	out = test_report_text(&r, 1);
	cr_expect(strstr(out, "  A\n") != NULL);
	cr_expect(strstr(out, "  B\n") == NULL, "%s", out);
	cr_expect(strstr(out, "... 2 more classes (--top 0 shows all)\n") != NULL, "%s", out);
	free(out);
	out = test_report_text(&r, 3); /* exactly all */
	cr_expect(strstr(out, "  C\n") != NULL);
	cr_expect(strstr(out, "more classes") == NULL, "%s", out);
	free(out);
	out = test_report_text(&r, 100);
	cr_expect(strstr(out, "more classes") == NULL, "%s", out);
	free(out);
	out = test_report_text(&r, 0);
	cr_expect(strstr(out, "  C\n") != NULL);
	cr_expect(strstr(out, "more classes") == NULL);
	free(out);
	report_free(&r);
}

Test(text, text_escapes_hostile_names)
{
	struct report r;
	const char *p;
	char *out;

	test_report_init(&r);
	test_report_add(&r, "A\x1b]0;pwned\x07", 5, 0, 5, 0, 0);
	test_report_add(&r,
			"B\xc2\x9b"
			"31m\r",
			4, 0, 4, 0, 0);
	test_report_add(&r, "C\xff\xfe", 3, 0, 3, 0, 0);
	test_report_add(&r, "D\xc3\x9cml\xc3\xa4ut", 2, 0, 2, 0, 0);
	report_finish(&r);
	out = test_report_text(&r, 0);
	cr_expect(strstr(out, "  A\\x1b]0;pwned\\x07\n") != NULL, "%s", out);
	cr_expect(strstr(out, "  B\\xc2\\x9b31m\\x0d\n") != NULL, "%s", out);
	cr_expect(strstr(out, "  C\\xff\\xfe\n") != NULL, "%s", out);
	cr_expect(strstr(out, "  D\xc3\x9cml\xc3\xa4ut\n") != NULL, "%s", out);
	for (p = out; *p; p++) {
		unsigned char c = *p;

		cr_assert(c >= 0x20 || c == '\n', "raw control 0x%02x in the text report", c);
		cr_assert_neq(c, 0x7f);
		cr_assert(
		    !(c == 0xc2 && (unsigned char) p[1] >= 0x80 && (unsigned char) p[1] <= 0x9f),
		    "raw C1 control in the text report");
	}
	free(out);
	report_free(&r);
}

/* A sampled suspect's site rests on a few traced objects: the text says how many. */
Test(text, text_sampled_suspect_site_says_its_traced_objects)
{
	struct report r;
	char *out;

	test_report_init(&r);
	test_fill_report(&r, "", 12, 40, 250.0);
	cr_assert(r.have_estimates && r.nsites == 1);
	r.nsuspects = 1;
	r.suspects[0] = (struct suspect){.class_name = "Session", .old_retained = 20,
					 .bytes = 800, .site = &r.sites[0]};
	out = test_report_text(&r, 0);
	cr_expect(strstr(out, "    allocated at store.rb:12 (20 traced retained there)\n") != NULL,
		  "%s", out);
	free(out);
	r.nsuspects = 0;
	report_free(&r);
}
