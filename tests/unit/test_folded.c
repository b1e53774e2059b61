// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/folded.c: the report as folded stacks for flame graphs (report_write_folded). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include "helpers.h"
#include "writers.h"

Test(folded, folded_output)
{
	struct frame f1[] = {
	    {"Class#new", "<cfunc>", 0}, {"build", "app.rb", 7}, {"<main>", "app.rb", 9}};
	struct frame f2[] = {{"other;x", "app.rb", 20}};
	struct stack s1 = {.depth = 3, .truncated = false, .frames = f1},
		     s2 = {.depth = 1, .truncated = true, .frames = f2},
		     s3 = {.depth = 1, .truncated = false, .frames = f2};
	struct counts c1 = {.allocated = 5, .retained = 3}, c2 = {.allocated = 2, .retained = 2},
		      c0 = {.allocated = 9};
	struct report r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	test_report_init(&r);
	r.with_stacks = true;
	report_add_stack(&r, "Leak", &s1, &c1);
	report_add_stack(&r, "Str", &s2, &c2);
	report_add_stack(&r, "Gone", &s3, &c0); /* nothing retained: no line */
	report_finish(&r);
	f = open_memstream(&buf, &len);
	report_write_folded(f, &r);
	fclose(f);
	cr_expect_str_eq(buf, "<main> (app.rb:9);build (app.rb:7);Class#new;Leak 3\n"
			      "(frames beyond --depth);other:x (app.rb:20);Str 2\n");
	free(buf);
	report_free(&r);
}
