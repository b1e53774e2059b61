// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The report beyond test_logic.c: sort tie-breaks, merging past the first
 * allocation, the text writer's optional lines, and the JSON parsed by a
 * real JSON parser (Ruby's, which the project needs anyway).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report.h"
#include "writers.h"

static void report_init(struct report *r)
{
	memset(r, 0, sizeof(*r));
	r->pid = 4242;
	strcpy(r->ruby_version, "3.1.7");
	r->duration_s = 2.5;
	r->end_reason = "duration";
	r->exit_status = -1;
}

static void add(struct report *r, const char *name, uint64_t allocated, uint64_t freed,
		uint64_t retained, uint64_t untracked, uint64_t not_followed)
{
	struct counts c = {.allocated = allocated,
			   .freed = freed,
			   .retained = retained,
			   .untracked = untracked,
			   .not_followed = not_followed};

	cr_assert_eq(report_add(r, name, &c), 0);
}

static char *text_of(const struct report *r, size_t top)
{
	struct text_options o = {.top = top, .top_stacks = 10};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
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

Test(report_edges, sort_tie_breaks)
{
	static const char *const order[] = {"D", "C", "A", "B", "E", "F"};
	struct report r;
	size_t i;

	report_init(&r);
	add(&r, "B", 10, 5, 5, 0, 0);
	add(&r, "E", 100, 100, 0, 0, 0);
	add(&r, "A", 10, 5, 5, 0, 0);
	add(&r, "F", 1, 1, 0, 0, 0);
	add(&r, "C", 20, 15, 5, 0, 0);
	add(&r, "D", 9, 0, 9, 0, 0);
	report_finish(&r);
	cr_assert_eq(r.nrows, 6);
	for (i = 0; i < 6; i++)
		cr_expect_str_eq(r.rows[i].name, order[i], "row %zu", i);
	report_free(&r);
}

Test(report_edges, totals_sum_every_field)
{
	struct report r;

	report_init(&r);
	add(&r, "A", 10, 3, 7, 1, 2);
	add(&r, "B", 20, 20, 0, 0, 5);
	add(&r, "A", 1, 0, 1, 4, 0);
	report_finish(&r);
	cr_expect_eq(r.totals.allocated, 31);
	cr_expect_eq(r.totals.freed, 23);
	cr_expect_eq(r.totals.retained, 8);
	cr_expect_eq(r.totals.untracked, 5);
	cr_expect_eq(r.totals.not_followed, 7);
	/* Finishing twice does not double the totals. */
	report_finish(&r);
	cr_expect_eq(r.totals.allocated, 31);
	report_free(&r);
	cr_expect_eq(r.nrows, 0);
	cr_expect_null(r.rows);
}

/* More rows than the first allocation, each added twice in a different order. */
Test(report_edges, merges_many_rows)
{
	struct report r;
	char name[32];
	int i;

	report_init(&r);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "Class%04d", i);
		add(&r, name, i + 1, 0, i, 0, 0);
	}
	for (i = 999; i >= 0; i--) {
		snprintf(name, sizeof(name), "Class%04d", i);
		add(&r, name, 1, 1, 0, 0, 0);
	}
	cr_assert_eq(r.nrows, 1000);
	report_finish(&r);
	cr_assert_eq(r.nrows, 1000);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "Class%04d", 999 - i);
		cr_assert_str_eq(r.rows[i].name, name);
		cr_assert_eq(r.rows[i].counts.allocated, 999 - i + 2);
		cr_assert_eq(r.rows[i].counts.freed, 1);
		cr_assert_eq(r.rows[i].counts.retained, 999 - i);
	}
	report_free(&r);
}

/* Names that differ only after a prefix, or in case, are separate rows. */
Test(report_edges, similar_names_stay_apart)
{
	struct report r;

	report_init(&r);
	add(&r, "Foo", 1, 0, 1, 0, 0);
	add(&r, "foo", 1, 0, 1, 0, 0);
	add(&r, "Foo::Bar", 1, 0, 1, 0, 0);
	add(&r, "Foo ", 1, 0, 1, 0, 0);
	add(&r, "", 1, 0, 1, 0, 0);
	add(&r, "Foo", 1, 0, 1, 0, 0);
	cr_expect_eq(r.nrows, 5);
	report_finish(&r);
	cr_expect_str_eq(r.rows[0].name, "Foo");
	cr_expect_eq(r.rows[0].counts.allocated, 2);
	cr_expect_str_eq(r.rows[1].name, "");
	report_free(&r);
}

Test(report_edges, text_clean_run_has_no_warnings)
{
	struct report r;
	char *out;

	report_init(&r);
	add(&r, "Foo", 3, 1, 2, 0, 0);
	add(&r, "Bar", 1, 1, 0, 0, 0);
	report_finish(&r);
	out = text_of(&r, 0);
	cr_expect(strstr(out, "rbmemtrace: PID 4242, ruby 3.1.7, traced 2.5 s (duration), 0 GC runs\n") ==
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

Test(report_edges, text_optional_lines)
{
	struct report r;
	char *out;

	report_init(&r);
	r.exit_status = 3;
	r.target_exited = true;
	r.end_reason = "command finished";
	r.header_read_errors = 4;
	r.class_overflow = 6;
	r.compactions = 2;
	r.moved_followed = 9;
	add(&r, "Foo", 3, 1, 2, 5, 1);
	report_finish(&r);
	out = text_of(&r, 0);
	cr_expect(strstr(out, "(command finished)") != NULL, "%s", out);
	cr_expect(strstr(out, "Command exited with status 3.\n") != NULL, "%s", out);
	cr_expect(strstr(out, "(as of the last GC check before the target exited)") != NULL);
	cr_expect(strstr(out, "WARNING: 5 objects were allocated after the live-object map filled") !=
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

Test(report_edges, text_top)
{
	struct report r;
	char *out;

	report_init(&r);
	add(&r, "A", 3, 0, 3, 0, 0);
	add(&r, "B", 2, 0, 2, 0, 0);
	add(&r, "C", 1, 0, 1, 0, 0);
	report_finish(&r);

	out = text_of(&r, 1);
	cr_expect(strstr(out, "  A\n") != NULL);
	cr_expect(strstr(out, "  B\n") == NULL, "%s", out);
	cr_expect(strstr(out, "... 2 more classes (--top 0 shows all)\n") != NULL, "%s", out);
	free(out);
	out = text_of(&r, 3); /* exactly all */
	cr_expect(strstr(out, "  C\n") != NULL);
	cr_expect(strstr(out, "more classes") == NULL, "%s", out);
	free(out);
	out = text_of(&r, 100);
	cr_expect(strstr(out, "more classes") == NULL, "%s", out);
	free(out);
	out = text_of(&r, 0);
	cr_expect(strstr(out, "  C\n") != NULL);
	cr_expect(strstr(out, "more classes") == NULL);
	free(out);
	report_free(&r);
}

Test(report_edges, text_escapes_hostile_names)
{
	struct report r;
	const char *p;
	char *out;

	report_init(&r);
	add(&r, "A\x1b]0;pwned\x07", 5, 0, 5, 0, 0);
	add(&r, "B\xc2\x9b" "31m\r", 4, 0, 4, 0, 0);
	add(&r, "C\xff\xfe", 3, 0, 3, 0, 0);
	add(&r, "D\xc3\x9cml\xc3\xa4ut", 2, 0, 2, 0, 0);
	report_finish(&r);
	out = text_of(&r, 0);
	cr_expect(strstr(out, "  A\\x1b]0;pwned\\x07\n") != NULL, "%s", out);
	cr_expect(strstr(out, "  B\\xc2\\x9b31m\\x0d\n") != NULL, "%s", out);
	cr_expect(strstr(out, "  C\\xff\\xfe\n") != NULL, "%s", out);
	cr_expect(strstr(out, "  D\xc3\x9cml\xc3\xa4ut\n") != NULL, "%s", out);
	for (p = out; *p; p++) {
		unsigned char c = *p;

		cr_assert(c >= 0x20 || c == '\n', "raw control 0x%02x in the text report", c);
		cr_assert_neq(c, 0x7f);
		cr_assert(!(c == 0xc2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] <= 0x9f),
			  "raw C1 control in the text report");
	}
	free(out);
	report_free(&r);
}

/* Writes the report as JSON to a file and has Ruby's JSON parser read it back. */
static char *parse_with_ruby(const struct report *r)
{
	static const char script[] =
		"require 'json'\n"
		"src = File.read(ARGV[0], encoding: 'UTF-8')\n"
		"puts \"valid_utf8=#{src.valid_encoding?}\"\n"
		"j = JSON.parse(src)\n"
		"puts \"keys=#{j.keys.join(',')}\"\n"
		"%w[pid ruby_version duration_s end_reason target_exited gc_runs].each { |k| "
		"puts \"#{k}=#{j[k].inspect}\" }\n"
		"puts \"exit_status=#{j.fetch('exit_status', 'absent')}\"\n"
		"%w[totals compaction dropped].each { |k| puts \"#{k}=#{j[k].to_a.map { |a, b| "
		"\"#{a}:#{b}\" }.join(',')}\" }\n"
		"j['classes'].each { |c| puts \"class=#{c['name'].unpack1('H*')} \" + "
		"c.reject { |k, _| k == 'name' }.map { |a, b| \"#{a}:#{b}\" }.join(',') }\n"
		"puts \"sites=#{j['sites'].inspect}\" if j.key?('sites')\n"
		"puts \"stacks=#{j['stacks'].inspect}\" if j.key?('stacks')\n";
	char dir[] = "/tmp/rbm-unit-XXXXXX", json[64], rb[64], cmd[256];
	char *out = NULL;
	size_t len = 0, n;
	char chunk[4096];
	FILE *f, *o, *p;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(json, sizeof(json), "%s/report.json", dir);
	snprintf(rb, sizeof(rb), "%s/check.rb", dir);
	f = fopen(json, "w");
	cr_assert_not_null(f);
	report_write_json(f, r);
	fclose(f);
	f = fopen(rb, "w");
	cr_assert_not_null(f);
	fputs(script, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "ruby %s %s 2>&1", rb, json);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	o = open_memstream(&out, &len);
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		fwrite(chunk, 1, n, o);
	fclose(o);
	cr_expect_eq(pclose(p), 0, "ruby failed to parse the report:\n%s", out);
	unlink(json);
	unlink(rb);
	rmdir(dir);
	return out;
}

Test(report_edges, json_parses_with_exact_values)
{
	struct report r;
	char *out;

	report_init(&r);
	r.duration_s = 1.23456;
	r.gc_runs = 17;
	r.compactions = 1;
	r.moved_followed = 8;
	r.header_read_errors = 2;
	r.class_overflow = 3;
	add(&r, "Foo::Bar", 10, 4, 6, 0, 0);
	add(&r, "Evil\"\\\n\t\x1b[2J\x7f", 3, 0, 3, 1, 2);
	add(&r, "Bad\xff", 1, 1, 0, 0, 0);
	add(&r, "\xc3\x9cml\xf0\x9f\x98\x80", 1, 0, 1, 0, 0);
	report_finish(&r);
	out = parse_with_ruby(&r);
	cr_expect(strstr(out, "valid_utf8=true\n") != NULL, "%s", out);
	cr_expect(strstr(out, "keys=pid,ruby_version,duration_s,end_reason,target_exited,gc_runs,"
			      "compaction,dropped,sampling,age_buckets,totals,classes,suspects\n") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "pid=4242\n") != NULL, "%s", out);
	cr_expect(strstr(out, "ruby_version=\"3.1.7\"\n") != NULL, "%s", out);
	cr_expect(strstr(out, "duration_s=1.235\n") != NULL, "%s", out);
	cr_expect(strstr(out, "end_reason=\"duration\"\n") != NULL, "%s", out);
	cr_expect(strstr(out, "target_exited=false\n") != NULL, "%s", out);
	cr_expect(strstr(out, "gc_runs=17\n") != NULL, "%s", out);
	cr_expect(strstr(out, "exit_status=absent\n") != NULL, "%s", out);
	cr_expect(strstr(out, "totals=allocated:15,freed:5,retained:10,young:0,untracked:1,"
			      "not_followed:2\n") !=
			  NULL,
		  "%s", out);
	cr_expect(strstr(out, "compaction=count:1,followed:8,not_followed:2\n") != NULL, "%s", out);
	cr_expect(strstr(out, "dropped=header_read_errors:2,class_overflow:3\n") != NULL, "%s", out);
	/* Names come back byte for byte; the invalid byte as U+FFFD (ef bf bd). */
	cr_expect(strstr(out, "class=466f6f3a3a426172 allocated:10,freed:4,retained:6,young:0,untracked:0,"
			      "not_followed:0,retained_ages:[0, 0, 0, 0, 0, 0, 0, 0]\n") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "class=4576696c225c0a091b5b324a7f allocated:3,freed:0,retained:3,"
			      "young:0,untracked:1,not_followed:2,retained_ages:[0, 0, 0, 0, 0, 0, 0, 0]\n") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "class=c39c6d6cf09f9880 allocated:1,") != NULL, "%s", out);
	cr_expect(strstr(out, "class=426164efbfbd allocated:1,freed:1,") != NULL, "%s", out);
	/* Sorted as the text report: retained first. */
	cr_expect_lt(strstr(out, "class=466f6f"), strstr(out, "class=457669"));
	cr_expect_lt(strstr(out, "class=c39c"), strstr(out, "class=426164"));
	free(out);
	report_free(&r);
}

Test(report_edges, json_empty_and_exit_status)
{
	struct report r;
	char *out;

	report_init(&r);
	r.exit_status = 0;
	r.target_exited = true;
	r.end_reason = "target \"exited\"";
	report_finish(&r);
	out = parse_with_ruby(&r);
	cr_expect(strstr(out, "keys=pid,ruby_version,duration_s,end_reason,target_exited,"
			      "exit_status,gc_runs,") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "exit_status=0\n") != NULL, "%s", out);
	cr_expect(strstr(out, "target_exited=true\n") != NULL, "%s", out);
	cr_expect(strstr(out, "end_reason=\"target \\\"exited\\\"\"\n") != NULL, "%s", out);
	cr_expect(strstr(out, "class=") == NULL, "%s", out);
	cr_expect(strstr(out, "totals=allocated:0,freed:0,retained:0,young:0,untracked:0,"
			      "not_followed:0\n") !=
			  NULL,
		  "%s", out);
	free(out);
	report_free(&r);
}

Test(report_edges, json_with_stacks_parses)
{
	struct frame f1[] = {{"Array#map", "<cfunc>", 0}, {"block in \"q\"", "a b.rb", 3},
			     {"<main>", "a b.rb", 1}};
	struct stack s1 = {.depth = 3, .truncated = true, .frames = f1};
	struct counts c = {.allocated = 4, .retained = 2};
	struct report r;
	char *out;

	report_init(&r);
	r.with_stacks = true;
	r.stacks_truncated = 1;
	cr_assert_eq(report_add(&r, "Leak", &c), 0);
	cr_assert_eq(report_add_stack(&r, "Leak", &s1, &c), 0);
	report_finish(&r);
	out = parse_with_ruby(&r);
	cr_expect(strstr(out, "sites=[{\"class\"=>\"Leak\", \"path\"=>\"a b.rb\", \"line\"=>3, "
			      "\"allocated\"=>4, \"retained\"=>2, \"young\"=>0, "
			      "\"retained_ages\"=>[0, 0, 0, 0, 0, 0, 0, 0]}]\n") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "stacks=[{\"class\"=>\"Leak\", \"allocated\"=>4, \"retained\"=>2, "
			      "\"young\"=>0, \"retained_ages\"=>[0, 0, 0, 0, 0, 0, 0, 0], "
			      "\"truncated\"=>true, \"frames\"=>[{\"label\"=>\"Array#map\", "
			      "\"path\"=>\"<cfunc>\", \"line\"=>0}, {\"label\"=>\"block in "
			      "\\\"q\\\"\", \"path\"=>\"a b.rb\", \"line\"=>3}, {\"label\"=>"
			      "\"<main>\", \"path\"=>\"a b.rb\", \"line\"=>1}]}]\n") != NULL,
		  "%s", out);
	free(out);
	report_free(&r);
}

Test(report_edges, folded_output)
{
	struct frame f1[] = {{"Class#new", "<cfunc>", 0}, {"build", "app.rb", 7},
			     {"<main>", "app.rb", 9}};
	struct frame f2[] = {{"other;x", "app.rb", 20}};
	struct stack s1 = {.depth = 3, .truncated = false, .frames = f1}, s2 = {.depth = 1, .truncated = true, .frames = f2}, s3 = {.depth = 1, .truncated = false, .frames = f2};
	struct counts c1 = {.allocated = 5, .retained = 3}, c2 = {.allocated = 2, .retained = 2},
		      c0 = {.allocated = 9};
	struct report r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	report_init(&r);
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

Test(report_edges, frame_display_names)
{
	struct frame ruby = {"block in foo", "/app/x.rb", 12}, c = {"Integer#times", "<cfunc>", 0};
	char buf[64], small[8];

	frame_display_name(&ruby, buf, sizeof(buf));
	cr_expect_str_eq(buf, "block in foo (/app/x.rb:12)");
	frame_display_name(&c, buf, sizeof(buf));
	cr_expect_str_eq(buf, "Integer#times");
	frame_display_name(&ruby, small, sizeof(small));
	cr_expect_str_eq(small, "block i");
}

/* Under --max-overhead: the sampling section, est_* fields scaled, the text's ~ columns. */
Test(report_edges, sampled_report_scales)
{
	struct report r;
	char *out;

	report_init(&r);
	add(&r, "Leaky", 40, 0, 40, 0, 0);
	add(&r, "String", 1000, 990, 10, 0, 0);
	r.have_gc_counts = true;
	r.gc_allocated = 26000;
	r.gc_freed = 25000;
	r.sampling = (struct sampling_info){.on = true, .budget_percent = 2, .windows = 12,
					    .window_time_s = 0.25, .est_overhead = 0.0183,
					    .traced = 1040, .scale = 25.0, .covered = 4160,
					    .sample = 0.25, .burst_windows = 5};
	report_finish(&r);
	out = parse_with_ruby(&r);
	cr_expect(strstr(out, "keys=pid,ruby_version,duration_s,end_reason,target_exited,gc_runs,"
			      "compaction,dropped,gc_stat,sampling,age_buckets,totals,classes,suspects\n") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "totals=allocated:1040,freed:990,retained:50,young:0,untracked:0,"
			      "not_followed:0,est_allocated:26000,est_retained:1250,est_freed:24750\n") !=
			  NULL,
		  "%s", out);
	cr_expect(strstr(out, "class=4c65616b79 allocated:40,freed:0,retained:40,young:0,untracked:0,"
			      "not_followed:0,est_allocated:1000,est_retained:1000,est_freed:0,"
			      "retained_ages:[0, 0, 0, 0, 0, 0, 0, 0]\n") != NULL,
		  "%s", out);
	free(out);
	out = text_of(&r, 0);
	cr_expect(strstr(out, "Sampled (--max-overhead 2): allocation probes attached in 12 windows "
			      "placed at random in Ruby's allocation stream (5 covering one burst "
			      "whole), 0.25 s of 2.5 s; 4160 allocations covered, 1 in 4.0 of them "
			      "traced; estimated cost to the target 1.83%.") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "Traced 1040 of the 26000 objects Ruby allocated (1 in 25.0)") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "~RETAINED ~ALLOCATED  CLASS") != NULL, "%s", out);
	cr_expect(strstr(out, "        40         40          0       1000       1000  Leaky\n") !=
			  NULL,
		  "%s", out);
	free(out);
	report_free(&r);
}

/* Full tracing writes "sampling": null and no estimates. */
Test(report_edges, full_report_has_no_estimates)
{
	struct report r;
	char *out;

	report_init(&r);
	add(&r, "Leaky", 40, 0, 40, 0, 0);
	report_finish(&r);
	out = parse_with_ruby(&r);
	cr_expect(strstr(out, "est_") == NULL, "%s", out);
	free(out);
	out = text_of(&r, 0);
	cr_expect(strstr(out, "~RETAINED") == NULL && strstr(out, "Sampled") == NULL, "%s", out);
	free(out);
	report_free(&r);
}
