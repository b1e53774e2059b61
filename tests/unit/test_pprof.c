// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/pprof.c: the model as a pprof heap profile (model_write_pprof). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "model_ops.h"
#include "profile.pb-c.h"
#include "writers.h"

/*
 * The profile decoded again with protobuf-c: Go's heap sample types, one
 * sample per process, path, class and age, Ruby frames as locations under a
 * class leaf, labels pprof can filter on, bytes from the census.
 */

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;

static Profile *write_and_decode(const struct model_view *v)
{
	char *gz = NULL;
	size_t gzlen = 0, cap = 1 << 20;
	unsigned char *raw = malloc(cap);
	FILE *f = open_memstream(&gz, &gzlen);
	z_stream z = {};
	Profile *p;

	cr_assert_eq(model_write_pprof(f, v), 0);
	fclose(f);
	cr_assert(gzlen > 18 && (unsigned char) gz[0] == 0x1f && (unsigned char) gz[1] == 0x8b,
		  "not gzip");
	cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (unsigned char *) gz;
	z.avail_in = gzlen;
	z.next_out = raw;
	z.avail_out = cap;
	cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	p = perftools__profiles__profile__unpack(NULL, cap - z.avail_out, raw);
	inflateEnd(&z);
	cr_assert_not_null(p, "protobuf-c could not decode the profile");
	free(raw);
	free(gz);
	return p;
}

static const char *str(const Profile *p, int64_t i)
{
	cr_assert(i >= 0 && (size_t) i < p->n_string_table, "string %lld out of the table",
		  (long long) i);
	return p->string_table[i];
}

static const char *function_of(const Profile *p, uint64_t location_id)
{
	size_t i, j;

	for (i = 0; i < p->n_location; i++)
		if (p->location[i]->id == location_id) {
			cr_assert_eq(p->location[i]->n_line, 1);
			for (j = 0; j < p->n_function; j++)
				if (p->function[j]->id == p->location[i]->line[0]->function_id)
					return str(p, p->function[j]->name);
		}
	cr_assert_fail("location %llu not found", (unsigned long long) location_id);
	return NULL;
}

static bool label(const Profile *p, const Sample *s, const char *key, const char **sv, int64_t *nv)
{
	size_t i;

	for (i = 0; i < s->n_label; i++)
		if (!strcmp(str(p, s->label[i]->key), key)) {
			if (sv)
				*sv = str(p, s->label[i]->str);
			if (nv)
				*nv = s->label[i]->num;
			return true;
		}
	return false;
}

/* The sample of class cls at age (-1: none), in process pid, or NULL. */
static const Sample *find(const Profile *p, const char *cls, int64_t pid, int64_t age)
{
	size_t i;

	for (i = 0; i < p->n_sample; i++) {
		const Sample *s = p->sample[i];
		const char *c;
		int64_t n, a = -1;

		if (!label(p, s, "class", &c, NULL) || strcmp(c, cls))
			continue;
		cr_assert(label(p, s, "pid", NULL, &n));
		label(p, s, "age", NULL, &a);
		if (n == pid && a == age)
			return s;
	}
	return NULL;
}

Test(pprof, heap_profile_decodes)
{
	static struct frame fr[] = {{"Class#new", "<cfunc>", 0},
				    {"Cache#keep", "app.rb", 12},
				    {"<top (required)>", "app.rb", 3}};
	struct stack st = {.depth = 3, .truncated = true, .frames = fr};
	struct counts leak = {.allocated = 100, .freed = 40, .retained = 50, .young = 10};
	struct counts other = {.allocated = 7, .retained = 2};
	struct ages ages = {{20, 0, 0, 30}}; /* 20 survived 1 GC, 30 from 5 to 8 */
	struct census_counts cc = {.have = true, .live_end = 60, .bytes_end = 4800};
	struct report a = {.pid = 11, .exit_status = -1, .end_reason = "duration"};
	struct report b = {.pid = 22, .exit_status = -1, .end_reason = "duration"};
	struct report sum;
	struct model m = {};
	struct model_view v;
	const Sample *s;
	const char *sv;
	Profile *p;
	size_t i;

	strcpy(a.ruby_version, "3.1.7");
	strcpy(a.host, "web-1");
	strcpy(a.command, "puma");
	a.duration_s = 2;
	a.with_stacks = true;
	cr_assert_eq(report_add_counts(&a, "Leak", &st, &leak, &ages), 0);
	cr_assert_eq(report_add_counts(&a, "Other", NULL, &other, NULL), 0);
	cr_assert_eq(report_set_census(&a, "Leak", &cc), 0);
	report_finish(&a);
	strcpy(b.ruby_version, "3.3.0");
	b.sampling = (struct sampling_info){.on = true, .scale = 10};
	cr_assert_eq(report_add_counts(&b, "Leak", NULL, &other, NULL), 0);
	report_finish(&b);
	model_add(&m, &a);
	model_add(&m, &b);
	cr_assert_eq(model_summary(&m, &sum), 0);
	v = (struct model_view){.model = &m, .summary = &sum};
	p = write_and_decode(&v);

	cr_expect_str_eq(str(p, 0), "");
	cr_assert_eq(p->n_sample_type, 4);
	cr_expect_str_eq(str(p, p->sample_type[0]->type), "alloc_objects");
	cr_expect_str_eq(str(p, p->sample_type[0]->unit), "count");
	cr_expect_str_eq(str(p, p->sample_type[1]->type), "alloc_space");
	cr_expect_str_eq(str(p, p->sample_type[1]->unit), "bytes");
	cr_expect_str_eq(str(p, p->sample_type[2]->type), "inuse_objects");
	cr_expect_str_eq(str(p, p->sample_type[3]->type), "inuse_space");
	cr_expect_str_eq(str(p, p->default_sample_type), "inuse_objects");
	cr_expect_str_eq(str(p, p->period_type->type), "space");
	cr_expect_str_eq(str(p, p->period_type->unit), "bytes");
	cr_expect_eq(p->period, 10, "the largest sampling scale");
	cr_expect_eq(p->duration_nanos, 2000000000LL);

	/* Allocated and young at age 0 (no label), 80 bytes each from the census. */
	s = find(p, "Leak", 11, -1);
	cr_assert_not_null(s);
	cr_assert_eq(s->n_value, 4);
	cr_expect_eq(s->value[0], 100);
	cr_expect_eq(s->value[1], 8000);
	cr_expect_eq(s->value[2], 10);
	cr_expect_eq(s->value[3], 800);
	cr_assert_eq(s->n_location_id, 5);
	cr_expect_str_eq(function_of(p, s->location_id[0]), "Leak (object)");
	cr_expect_str_eq(function_of(p, s->location_id[1]), "Class#new");
	cr_expect_str_eq(function_of(p, s->location_id[2]), "Cache#keep");
	cr_expect_str_eq(function_of(p, s->location_id[3]), "<top (required)>");
	cr_expect_str_eq(function_of(p, s->location_id[4]), "(frames beyond --depth)");
	cr_expect(label(p, s, "host", &sv, NULL) && !strcmp(sv, "web-1"));
	cr_expect(label(p, s, "process", &sv, NULL) && !strcmp(sv, "puma"));
	cr_expect(label(p, s, "ruby_version", &sv, NULL) && !strcmp(sv, "3.1.7"));
	/* The retained by age: numeric labels, the bucket's lower bound. */
	s = find(p, "Leak", 11, 1);
	cr_assert_not_null(s);
	cr_expect_eq(s->value[0], 0);
	cr_expect_eq(s->value[2], 20);
	s = find(p, "Leak", 11, 5);
	cr_assert_not_null(s);
	cr_expect_eq(s->value[2], 30);
	cr_expect_eq(s->value[3], 2400);
	/* No call path: the class alone, a slot's 40 bytes; retained of no known age apart. */
	s = find(p, "Other", 11, -1);
	cr_assert_not_null(s);
	cr_expect_eq(s->n_location_id, 1);
	cr_expect_str_eq(function_of(p, s->location_id[0]), "Other (object)");
	cr_expect_eq(s->value[0], 7);
	cr_expect_eq(s->value[1], 7 * 40);
	cr_expect_eq(s->value[2], 0, "young");
	{
		int64_t retained = 0;
		const char *c;

		for (i = 0; i < p->n_sample; i++)
			if (label(p, p->sample[i], "class", &c, NULL) && !strcmp(c, "Other"))
				retained += p->sample[i]->value[2];
		cr_expect_eq(retained, 2, "the retained of Other");
	}
	/* The sampled process counts in estimates. */
	s = find(p, "Leak", 22, -1);
	cr_assert_not_null(s);
	cr_expect_eq(s->value[0], 70);
	cr_expect_eq(s->value[1], 70 * 40);
	cr_expect(!label(p, s, "host", NULL, NULL), "empty host labelled");

	/* The totals add up per process. */
	{
		int64_t alloc = 0, inuse = 0, pid;

		for (i = 0; i < p->n_sample; i++) {
			label(p, p->sample[i], "pid", NULL, &pid);
			if (pid == 11) {
				alloc += p->sample[i]->value[0];
				inuse += p->sample[i]->value[2];
			}
		}
		cr_expect_eq(alloc, 107);
		cr_expect_eq(inuse, 50 + 10 + 2);
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	report_free(&sum);
	report_free(&a);
	report_free(&b);
	free(m.procs);
}

/* Whether some comment of p contains s. */
static bool has_comment(const Profile *p, const char *s)
{
	size_t i;

	for (i = 0; i < p->n_comment; i++)
		if (strstr(str(p, p->comment[i]), s))
			return true;
	return false;
}

/*
 * Each process's leak verdict as comments, the text report's lines, under
 * its pid when the profile holds several; over the verdict's own seconds.
 */
Test(pprof, verdict_as_comments)
{
	struct report a = {.pid = 11, .exit_status = -1, .end_reason = "duration", .duration_s = 9};
	struct report b = {.pid = 22, .exit_status = -1, .end_reason = "duration"};
	struct verdict *v = calloc(1, sizeof(*v));
	struct verdict_point *pt = &v->points[0];
	struct report sum;
	struct model m = {};
	struct model_view view;
	Profile *p;

	cr_assert_not_null(v);
	v->trace_seconds = 2;
	v->new_objects = 3000;
	v->n = 1;
	pt->root_kind = verdict_intern(v, "constant");
	pt->root_name = verdict_intern(v, "App::KEPT");
	pt->container_class = verdict_intern(v, "Array");
	pt->size_before = 1000;
	pt->size_after = 3000;
	pt->grew_objects = 2000;
	pt->grew_bytes = 80000;
	pt->by_class[0] = (struct verdict_class){verdict_intern(v, "Leak"), 2000, 80000};
	pt->nby_class = 1;
	a.verdict = v;
	report_finish(&a);
	report_finish(&b);
	model_add(&m, &a);
	model_add(&m, &b);
	cr_assert_eq(model_summary(&m, &sum), 0);
	view = (struct model_view){.model = &m, .summary = &sum};
	p = write_and_decode(&view);

	cr_expect(has_comment(p, "PID 11: Leak verdict (read from the heap, exact):"));
	cr_expect(has_comment(p, "PID 11:  1. App::KEPT  Array 1,000 -> 3,000 entries over 2.0 s"));
	cr_expect(has_comment(p, "grew by 2,000 objects (Leak 2,000)"));
	cr_expect(has_comment(p, "PID 11:       constant App::KEPT"));
	cr_expect(!has_comment(p, "PID 22:"), "a process without a verdict has no line");
	perftools__profiles__profile__free_unpacked(p, NULL);
	report_free(&sum);
	report_free(&a);
	report_free(&b);
	free(m.procs);
}
