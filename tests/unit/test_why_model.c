// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/model/why_model.c: paths summed by key keep, at each step, the
 * largest holder's dominated bytes (in a merge too).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include "why_model.h"

static struct why_path path(uint64_t root_kept, uint64_t hash_kept, uint64_t held_kept)
{
	static struct why_edge edges[2];

	edges[0] = (struct why_edge){"@sessions", "Hash", {NULL, 0}, hash_kept};
	edges[1] = (struct why_edge){"{value}", "Session", {NULL, 0}, held_kept};
	return (struct why_path){.root_kind = "constant",
				 .root_name = "App::STORE",
				 .root_class = "App::Store",
				 .root_dominated_bytes = root_kept,
				 .edges = edges,
				 .nedges = 2,
				 .count = 1,
				 .bytes = 40};
}

Test(why_model, dominated_bytes_keep_the_largest_holder)
{
	struct why_report r = {0}, m = {0};
	struct why_target *t = why_target(&r, "Session");
	struct why_path p;

	cr_assert(t);
	p = path(5000, 4900, 120);
	cr_assert_eq(why_add_path(&r, t, &p), 0);
	p = path(5000, 4900, 300);
	cr_assert_eq(why_add_path(&r, t, &p), 0);
	p = path(4000, 0, 80); /* read while it was smaller; an elided step says 0 */
	cr_assert_eq(why_add_path(&r, t, &p), 0);
	cr_assert_eq(t->npaths, 1);
	cr_expect_eq(t->paths[0].count, 3);
	cr_expect_eq(t->paths[0].bytes, 120);
	cr_expect_eq(t->paths[0].root_dominated_bytes, 5000);
	cr_expect_eq(t->paths[0].edges[0].dominated_bytes, 4900);
	cr_expect_eq(t->paths[0].edges[1].dominated_bytes, 300);
	/* a merge of two processes keeps the largest too */
	cr_assert_eq(why_merge(&m, &r), 0);
	t = why_target(&r, "Session");
	p = path(9000, 8000, 10);
	cr_assert_eq(why_add_path(&r, t, &p), 0);
	cr_assert_eq(why_merge(&m, &r), 0);
	cr_expect_eq(m.targets[0].paths[0].count, 7);
	cr_expect_eq(m.targets[0].paths[0].root_dominated_bytes, 9000);
	cr_expect_eq(m.targets[0].paths[0].edges[0].dominated_bytes, 8000);
	cr_expect_eq(m.targets[0].paths[0].edges[1].dominated_bytes, 300);
	why_free(&r);
	why_free(&m);
}
