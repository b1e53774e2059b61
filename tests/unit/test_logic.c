#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "writers.h"

static char *render(struct report *r, int json, size_t top)
{
	struct text_options o = {.top = top, .top_stacks = 10, .tree = true, .prune = 1};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (json)
		report_write_json(f, r);
	else
		report_write_text(f, r, &o);
	fclose(f);
	return buf;
}

static void sample_report(struct report *r)
{
	struct counts a = {.allocated = 10, .freed = 4, .retained = 6};
	struct counts b = {.allocated = 5, .freed = 5};
	struct counts c = {.allocated = 3, .retained = 1, .untracked = 2};

	memset(r, 0, sizeof(*r));
	r->pid = 42;
	strcpy(r->ruby_version, "3.1.7");
	r->end_reason = "signal";
	r->exit_status = -1;
	report_add(r, "Zed", &b);
	report_add(r, "Foo::Bar", &a);
	report_add(r, "Evil\"\n\x1b[2J", &c);
	report_add(r, "Foo::Bar", &a); /* merges */
	report_finish(r);
}

Test(report, merge_sort_totals)
{
	struct report r;

	sample_report(&r);
	cr_assert_eq(r.nrows, 3);
	cr_expect_str_eq(r.rows[0].name, "Foo::Bar");
	cr_expect_eq(r.rows[0].counts.allocated, 20);
	cr_expect_eq(r.rows[0].counts.retained, 12);
	cr_expect_str_eq(r.rows[2].name, "Zed");
	cr_expect_eq(r.totals.allocated, 28);
	cr_expect_eq(r.totals.untracked, 2);
	report_free(&r);
}

Test(report, json_shape_and_escaping)
{
	struct report r;
	char *out;

	sample_report(&r);
	out = render(&r, 1, 0);
	cr_expect(strstr(out, "\"pid\": 42") != NULL);
	cr_expect(strstr(out, "\"ruby_version\": \"3.1.7\"") != NULL);
	cr_expect(strstr(out, "\"duration_s\":") != NULL);
	cr_expect(strstr(out, "\"totals\": {\"allocated\": 28, \"freed\": 13, \"retained\": 13, "
			      "\"young\": 0, \"untracked\": 2") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "{\"name\": \"Foo::Bar\", \"allocated\": 20") != NULL);
	cr_expect(strstr(out, "\"Evil\\\"\\n\\u001b[2J\"") != NULL, "%s", out);
	free(out);
	report_free(&r);
}

Test(report, text_header_warnings_escaping_top)
{
	struct report r;
	char *out;

	sample_report(&r);
	r.compactions = 1;
	out = render(&r, 0, 2);
	cr_expect(strstr(out, "rbmemtrace: PID 42, ruby 3.1.7") != NULL);
	cr_expect(strstr(out, "WARNING: 2 objects were allocated after the live-object map") != NULL);
	cr_expect(strstr(out, "WARNING: GC.compact ran 1 time(s)") != NULL);
	cr_expect(strstr(out, "Evil\"\\x0a\\x1b[2J") != NULL, "%s", out);
	cr_expect(strstr(out, "\x1b") == NULL, "raw escape reached the terminal");
	cr_expect(strstr(out, "... 1 more classes") != NULL);
	free(out);
	report_free(&r);
}

Test(report, sites_and_paths_from_stacks)
{
	struct frame inner[] = {{"Class#new", "<cfunc>", 0}, {"build", "app.rb", 7},
				{"<main>", "app.rb", 9}};
	struct frame other[] = {{"build", "app.rb", 7}, {"other", "app.rb", 20}};
	struct stack s1 = {3, false, inner}, s2 = {2, true, other};
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
	out = render(&r, 1, 0);
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
