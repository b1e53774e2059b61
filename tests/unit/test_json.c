// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/json.c: the JSON report (report_write_json), also read back by Ruby's parser. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "helpers.h"
#include "writers.h"

Test(json, json_shape_and_escaping)
{
	struct report r;
	char *out;

	test_sample_report(&r);
	out = test_report_json(&r);
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

/* The JSON parsed by a real JSON parser: Ruby's, which the project needs anyway. */
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

Test(json, json_parses_with_exact_values)
{
	struct report r;
	char *out;

	test_report_init(&r);
	r.duration_s = 1.23456;
	r.gc_runs = 17;
	r.compactions = 1;
	r.moved_followed = 8;
	r.moved_over = 4;
	r.header_read_errors = 2;
	r.class_overflow = 3;
	test_report_add(&r, "Foo::Bar", 10, 4, 6, 0, 0);
	test_report_add(&r, "Evil\"\\\n\t\x1b[2J\x7f", 3, 0, 3, 1, 2);
	test_report_add(&r, "Bad\xff", 1, 1, 0, 0, 0);
	test_report_add(&r, "\xc3\x9cml\xf0\x9f\x98\x80", 1, 0, 1, 0, 0);
	report_finish(&r);
	out = parse_with_ruby(&r);
	cr_expect(strstr(out, "valid_utf8=true\n") != NULL, "%s", out);
	cr_expect(strstr(out,
			 "keys=pid,ruby_version,duration_s,end_reason,target_exited,gc_runs,"
			 "compaction,dropped,limits_reached,sampling,age_buckets,totals,classes,"
			 "suspects\n") !=
		      NULL,
		  "%s", out);
	cr_expect(strstr(out, "pid=4242\n") != NULL, "%s", out);
	cr_expect(strstr(out, "ruby_version=\"3.1.7\"\n") != NULL, "%s", out);
	cr_expect(strstr(out, "duration_s=1.235\n") != NULL, "%s", out);
	cr_expect(strstr(out, "end_reason=\"duration\"\n") != NULL, "%s", out);
	cr_expect(strstr(out, "target_exited=false\n") != NULL, "%s", out);
	cr_expect(strstr(out, "gc_runs=17\n") != NULL, "%s", out);
	cr_expect(strstr(out, "exit_status=absent\n") != NULL, "%s", out);
	cr_expect(strstr(out, "totals=allocated:15,freed:5,retained:10,young:0,untracked:1,"
			      "not_followed:2\n") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "compaction=count:1,followed:8,moved_over:4,scan_failures:0,not_followed:2\n") != NULL, "%s", out);
	cr_expect(strstr(out, "dropped=header_read_errors:2,class_overflow:3\n") != NULL, "%s",
		  out);
	/* Names come back byte for byte; the invalid byte as U+FFFD (ef bf bd). */
	cr_expect(
	    strstr(out,
		   "class=466f6f3a3a426172 allocated:10,freed:4,retained:6,young:0,untracked:0,"
		   "not_followed:0,retained_ages:[0, 0, 0, 0, 0, 0, 0, 0]\n") != NULL,
	    "%s", out);
	cr_expect(
	    strstr(out,
		   "class=4576696c225c0a091b5b324a7f allocated:3,freed:0,retained:3,"
		   "young:0,untracked:1,not_followed:2,retained_ages:[0, 0, 0, 0, 0, 0, 0, 0]\n") !=
		NULL,
	    "%s", out);
	cr_expect(strstr(out, "class=c39c6d6cf09f9880 allocated:1,") != NULL, "%s", out);
	cr_expect(strstr(out, "class=426164efbfbd allocated:1,freed:1,") != NULL, "%s", out);
	/* Sorted as the text report: retained first. */
	cr_expect_lt(strstr(out, "class=466f6f"), strstr(out, "class=457669"));
	cr_expect_lt(strstr(out, "class=c39c"), strstr(out, "class=426164"));
	free(out);
	report_free(&r);
}

Test(json, json_empty_and_exit_status)
{
	struct report r;
	char *out;

	test_report_init(&r);
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
			      "not_followed:0\n") != NULL,
		  "%s", out);
	free(out);
	report_free(&r);
}

Test(json, json_with_stacks_parses)
{
	struct frame f1[] = {
	    {"Array#map", "<cfunc>", 0}, {"block in \"q\"", "a b.rb", 3}, {"<main>", "a b.rb", 1}};
	struct stack s1 = {.depth = 3, .truncated = true, .frames = f1};
	struct counts c = {.allocated = 4, .retained = 2};
	struct report r;
	char *out;

	test_report_init(&r);
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

/* Under --max-overhead: the sampling section, est_* fields scaled, the text's ~ columns. */
Test(json, sampled_report_scales)
{
	struct report r;
	char *out;

	test_report_init(&r);
	test_report_add(&r, "Leaky", 40, 0, 40, 0, 0);
	test_report_add(&r, "String", 1000, 990, 10, 0, 0);
	r.have_gc_counts = true;
	r.gc_allocated = 26000;
	r.gc_freed = 25000;
	r.sampling = (struct sampling_info){.on = true,
					    .budget_percent = 2,
					    .windows = 12,
					    .window_time_s = 0.25,
					    .est_overhead = 0.0183,
					    .traced = 1040,
					    .scale = 25.0,
					    .covered = 4160,
					    .sample = 0.25,
					    .burst_windows = 5};
	report_finish(&r);
	out = parse_with_ruby(&r);
	cr_expect(
	    strstr(out,
		   "keys=pid,ruby_version,duration_s,end_reason,target_exited,gc_runs,"
		   "compaction,dropped,limits_reached,gc_stat,sampling,age_buckets,totals,classes,"
		   "suspects\n") !=
		NULL,
	    "%s", out);
	cr_expect(
	    strstr(out, "totals=allocated:1040,freed:990,retained:50,young:0,untracked:0,"
			"not_followed:0,est_allocated:26000,est_retained:1250,est_freed:24750\n") !=
		NULL,
	    "%s", out);
	cr_expect(strstr(out,
			 "class=4c65616b79 allocated:40,freed:0,retained:40,young:0,untracked:0,"
			 "not_followed:0,est_allocated:1000,est_retained:1000,est_freed:0,"
			 "est_source:sampled,retained_ages:[0, 0, 0, 0, 0, 0, 0, 0]\n") != NULL,
		  "%s", out);
	free(out);
	out = test_report_text(&r, 0);
	cr_expect(strstr(out,
			 "Sampled (--max-overhead 2): allocation probes attached in 12 windows "
			 "placed at random in Ruby's allocation stream (5 covering one burst "
			 "whole), 0.25 s of 2.5 s; 4160 allocations covered, 1 in 4.0 of them "
			 "traced; estimated cost to the target 1.83%.") != NULL,
		  "%s", out);
	cr_expect(strstr(out, "Traced 1040 of the 26000 objects Ruby allocated (1 in 25.0)") !=
		      NULL,
		  "%s", out);
	cr_expect(strstr(out, "~RETAINED ~ALLOCATED  CLASS") != NULL, "%s", out);
	cr_expect(strstr(out, "        40         40          0      1000        1000  Leaky\n") !=
		      NULL,
		  "%s", out);
	free(out);
	report_free(&r);
}

/* Full tracing writes "sampling": null and no estimates. */
Test(json, full_report_has_no_estimates)
{
	struct report r;
	char *out;

	test_report_init(&r);
	test_report_add(&r, "Leaky", 40, 0, 40, 0, 0);
	report_finish(&r);
	out = parse_with_ruby(&r);
	cr_expect(strstr(out, "est_") == NULL, "%s", out);
	free(out);
	out = test_report_text(&r, 0);
	cr_expect(strstr(out, "~RETAINED") == NULL && strstr(out, "Sampled") == NULL, "%s", out);
	free(out);
	report_free(&r);
}
