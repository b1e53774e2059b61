// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/speedscope.c: speedscope's file format, two profiles of what is retained. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include "helpers.h"
#include "speedscope.h"

static json_t *speedscope_of(const struct report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_error_t e;
	json_t *j;

	cr_assert_not_null(f);
	cr_assert_eq(report_write_speedscope(f, r), 0);
	fclose(f);
	j = json_loads(buf, 0, &e);
	cr_assert_not_null(j, "not JSON: %s", e.text);
	free(buf);
	return j;
}

Test(speedscope, frames_shared_samples_root_first)
{
	struct frame f1[] = {{"Class#new", "<cfunc>", 0}, {"build", "app.rb", 7}, {"<main>", "app.rb", 9}};
	struct stack s1 = {.depth = 3, .frames = f1};
	struct counts c1 = {.allocated = 5, .retained = 3};
	struct report r;
	json_t *j, *frames, *p, *sample;

	test_report_init(&r);
	r.with_stacks = true;
	report_add(&r, "Leak", &c1);
	report_add_stack(&r, "Leak", &s1, &c1);
	report_finish(&r);
	j = speedscope_of(&r);
	cr_expect_str_eq(json_string_value(json_object_get(j, "$schema")),
			 "https://www.speedscope.app/file-format-schema.json");
	frames = json_object_get(json_object_get(j, "shared"), "frames");
	cr_assert_eq(json_array_size(frames), 4);
	cr_assert_eq(json_array_size(json_object_get(j, "profiles")), 2);
	p = json_array_get(json_object_get(j, "profiles"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(p, "type")), "sampled");
	cr_expect_str_eq(json_string_value(json_object_get(p, "unit")), "none");
	cr_expect_eq(json_integer_value(json_object_get(p, "endValue")), 3);
	sample = json_array_get(json_object_get(p, "samples"), 0);
	/* <main>, build, Class#new, then the class: root first. */
	cr_assert_eq(json_array_size(sample), 4);
	cr_expect_str_eq(json_string_value(json_object_get(
			     json_array_get(frames, json_integer_value(json_array_get(sample, 0))),
			     "name")),
			 "<main>");
	cr_expect_eq(json_integer_value(json_object_get(json_array_get(frames, 0), "line")), 9);
	cr_expect_str_eq(json_string_value(json_object_get(
			     json_array_get(frames, json_integer_value(json_array_get(sample, 3))),
			     "name")),
			 "Leak");
	cr_expect_eq(json_integer_value(json_array_get(json_object_get(p, "weights"), 0)), 3);
	p = json_array_get(json_object_get(j, "profiles"), 1);
	cr_expect_str_eq(json_string_value(json_object_get(p, "unit")), "bytes");
	cr_expect_eq(json_integer_value(json_object_get(p, "endValue")), 3 * 40);
	json_decref(j);
	report_free(&r);
}
