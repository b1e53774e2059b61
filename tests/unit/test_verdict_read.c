// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/model/verdict_read.c: the leak verdict read back from a report's JSON. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>
#include "verdict_read.h"

static const char report[] =
    "{\"verdict\": [{\"holder\": {\"root\": {\"kind\": \"constant\", \"name\": \"Cache::KEPT\"},"
    " \"edges\": [{\"via\": \"@items\", \"class\": \"Array\"}]},"
    " \"container\": {\"class\": \"Array\", \"size_after\": 20000},"
    " \"grew\": {\"objects\": 20000, \"bytes\": 800000, \"new_objects\": 20000,"
    " \"new_bytes\": 800000, \"by_class\": [{\"class\": \"FleetLeak\", \"objects\": 20000,"
    " \"bytes\": 800000}]}, \"dominated_bytes\": 1001816, \"dominated_objects\": 20001,"
    " \"insertions\": {\"source\": \"none\", \"sites\": [], \"paths\": []},"
    " \"alloc_sites\": [{\"class\": \"FleetLeak\", \"path\": \"leak.rb\", \"line\": 10,"
    " \"traced\": 20000}]}],"
    " \"verdict_walk\": {\"seconds\": 0.044, \"tracer_bytes\": 2097500, \"new_objects\": 20642,"
    " \"unattributed\": 372, \"compacted\": false, \"vm_lists_grew\": 219,"
    " \"small_points\": 15, \"at_exit\": true}}";

Test(verdict_read, points_and_walk)
{
	char err[256] = "";
	struct json_reader rd = {.name = "t.json", .err = err, .errlen = sizeof(err)};
	json_t *o = json_loads(report, 0, NULL);
	struct verdict *v;

	cr_assert_not_null(o);
	v = jr_read_verdict(&rd, o, "");
	cr_assert_not_null(v, "%s", err);
	cr_assert_eq(v->n, 1);
	cr_expect_str_eq(v->points[0].root_name, "Cache::KEPT");
	cr_expect_eq(v->points[0].nedges, 1);
	cr_expect_str_eq(v->points[0].edges[0].via, "@items");
	cr_expect_eq(v->points[0].size_before, -1);
	cr_expect_eq(v->points[0].size_after, 20000);
	cr_expect_eq(v->points[0].dominated_bytes, 1001816);
	cr_expect_str_eq(v->points[0].by_class[0].class_name, "FleetLeak");
	cr_expect_eq(v->points[0].sites[0].line, 10);
	cr_expect(v->at_exit);
	cr_expect_eq(v->small_points, 15);
	verdict_free(v);
	json_decref(o);
}

Test(verdict_read, none_without_a_walk_and_a_bad_point_is_an_error)
{
	char err[256] = "";
	struct json_reader rd = {.name = "t.json", .err = err, .errlen = sizeof(err)};
	json_t *o = json_loads("{\"classes\": []}", 0, NULL);

	cr_expect_null(jr_read_verdict(&rd, o, ""));
	cr_expect_not(rd.failed);
	json_decref(o);
	o = json_loads("{\"verdict\": [3], \"verdict_walk\": {}}", 0, NULL);
	cr_expect_null(jr_read_verdict(&rd, o, ""));
	cr_expect(rd.failed);
	cr_expect(strstr(err, "verdict[0]") != NULL, "%s", err);
	json_decref(o);
}
