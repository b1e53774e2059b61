#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "calltree.h"
#include "classnames.h"
#include "report.h"
#include "writers.h"
#include "stacks.h"
#include "tracker.h"
#include "u64map.h"

Test(u64map, put_get_grow)
{
	struct u64map m = {};
	uintptr_t i;

	cr_expect_neq(u64map_put(&m, 0, (void *)1), 0);
	for (i = 1; i <= 100000; i++)
		cr_assert_eq(u64map_put(&m, i * 8, (void *)i), 0);
	cr_expect_eq(m.len, 100000);
	for (i = 1; i <= 100000; i++)
		cr_assert_eq((uintptr_t)u64map_get(&m, i * 8), i);
	cr_expect_null(u64map_get(&m, 12345 * 8 + 1));
	u64map_put(&m, 8, (void *)7);
	cr_expect_eq((uintptr_t)u64map_get(&m, 8), 7);
	cr_expect_eq(m.len, 100000);
	u64map_free(&m, NULL);
}

Test(tracker, header_alive)
{
	uint32_t imemo_iseq = RBM_KIND(RB_T_IMEMO, 7);

	cr_expect(object_header_alive(0x05 | 0x2000, RB_T_STRING));
	cr_expect(!object_header_alive(0x00, RB_T_STRING));
	cr_expect(!object_header_alive(0x1d, RB_T_STRING));
	cr_expect(!object_header_alive(0x1e, RB_T_STRING));
	cr_expect(!object_header_alive(0x07, RB_T_STRING)); /* reused by an Array */
	cr_expect(object_header_alive(0x1a | (7 << 12), imemo_iseq));
	cr_expect(!object_header_alive(0x1a | (6 << 12), imemo_iseq));
}

Test(tracker, keys_are_distinct)
{
	cr_expect_neq(class_key_id(0x1000, 5), class_key_id(0x1000, 7));
	cr_expect_neq(class_key_id(0x1000, 5), class_key_id(0x1008, 5));
	cr_expect_neq(tally_key(0x1000, 5, 0), tally_key(0x1000, 5, 42));
	cr_expect_neq(tally_key(0, 5, 0), 0);
}

Test(classnames, type_names)
{
	cr_expect_str_eq(ruby_type_name(0x05), "T_STRING");
	cr_expect_str_eq(ruby_type_name(0x99), "T_UNKNOWN");
	cr_expect_str_eq(ruby_imemo_name(7), "iseq");
	cr_expect_str_eq(ruby_imemo_name(99), "unknown");
}

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
	struct stack s1 = {.depth = 3, .truncated = false, .frames = inner}, s2 = {.depth = 2, .truncated = true, .frames = other};
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

Test(calltree, merge_sort_prune)
{
	const char *p1[] = {"main", "a", "x"}, *p2[] = {"main", "b"}, *p3[] = {"main", "a", "y"},
		   *p4[] = {"main", "c"};
	struct ct_node *root = calltree_new("(all)");

	calltree_add(root, p1, 3, 5, 10);
	calltree_add(root, p2, 2, 7, 7);
	calltree_add(root, p3, 3, 1, 1);
	calltree_add(root, p4, 2, 0, 4);
	cr_expect_eq(root->retained, 13);
	cr_assert_eq(root->nchildren, 1);
	cr_expect_eq(root->children[0]->nchildren, 3);
	calltree_sort_prune(root, 1, 0);
	cr_assert_eq(root->children[0]->nchildren, 2);
	cr_expect_str_eq(root->children[0]->children[0]->name, "b");
	cr_expect_str_eq(root->children[0]->children[1]->name, "(2 more)");
	cr_expect_eq(root->children[0]->children[1]->retained, 6);
	cr_expect_eq(root->children[0]->children[1]->allocated, 15);
	calltree_free(root);
}

/* Children under min_retained fold too; a lone one above it is not folded into "(1 more)". */
Test(calltree, prune_by_retained)
{
	const char *p1[] = {"main", "a"}, *p2[] = {"main", "b"}, *p3[] = {"main", "c"},
		   *p4[] = {"main", "d"};
	struct ct_node *root = calltree_new("(all)");
	struct ct_node *main_node;

	calltree_add(root, p1, 2, 90, 100);
	calltree_add(root, p2, 2, 9, 10);
	calltree_add(root, p3, 2, 1, 10);
	calltree_add(root, p4, 2, 0, 50);
	calltree_sort_prune(root, 5, 5);
	main_node = root->children[0];
	cr_assert_eq(main_node->nchildren, 3);
	cr_expect_str_eq(main_node->children[0]->name, "a");
	cr_expect_str_eq(main_node->children[1]->name, "b");
	cr_expect_str_eq(main_node->children[2]->name, "(2 more)");
	cr_expect_eq(main_node->children[2]->retained, 1);
	cr_expect_eq(main_node->children[2]->allocated, 60);
	calltree_free(root);

	root = calltree_new("(all)");
	calltree_add(root, p1, 2, 90, 100);
	calltree_add(root, p2, 2, 9, 10);
	calltree_sort_prune(root, 1, 5);
	cr_expect_eq(root->children[0]->nchildren, 2, "b retains enough: shown, not \"(1 more)\"");
	calltree_free(root);
}

Test(calltree, folded_line)
{
	const char *path[] = {"<main> (a.rb:1)", "x;y", "bad\nname"};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	folded_write_line(f, path, 3, 12);
	fclose(f);
	/* Escaped as in text output, so a name cannot break the line or the terminal. */
	cr_expect_str_eq(buf, "<main> (a.rb:1);x:y;bad\\x0aname 12\n");
	free(buf);
}

/* A synthetic succinct table: a set bit at every even position. */
struct fake_table {
	uint8_t bytes[48 + 80 * 2];
};

static int read_fake(void *ctx, uint64_t off, void *buf, size_t len)
{
	struct fake_table *t = ctx;

	if (off + len > sizeof(t->bytes))
		return -1;
	memcpy(buf, t->bytes + off, len);
	return 0;
}

static uint32_t ranks_upto(uint32_t pos)
{
	return pos / 2 + 1; /* bits at 0, 2, 4, ... */
}

Test(stacks, succ_index_rank)
{
	struct fake_table t = {};
	uint64_t imm[6] = {};
	uint32_t pos, rank, b, small;

	for (pos = 0; pos < 54; pos++)
		imm[pos / 9] |= (uint64_t)ranks_upto(pos) << (7 * (pos % 9));
	memcpy(t.bytes, imm, sizeof(imm));
	for (b = 0; b < 2; b++) {
		uint8_t *block = t.bytes + 48 + b * 80;
		uint32_t base = 54 + b * 512, block_rank = ranks_upto(base - 1);
		uint64_t small_ranks = 0, bits[8] = {};

		memcpy(block, &block_rank, 4);
		for (pos = 0; pos < 512; pos++)
			if ((base + pos) % 2 == 0)
				bits[pos / 64] |= 1ULL << (pos % 64);
		for (small = 1; small < 8; small++)
			small_ranks |= (uint64_t)(ranks_upto(base + small * 64 - 1) - block_rank)
				       << (9 * (small - 1));
		memcpy(block + 8, &small_ranks, 8);
		memcpy(block + 16, bits, sizeof(bits));
	}
	for (pos = 0; pos < 54 + 1024; pos++) {
		cr_assert_eq(succ_index_rank(pos, read_fake, &t, &rank), 0, "pos %u", pos);
		cr_assert_eq(rank, ranks_upto(pos), "pos %u: %u != %u", pos, rank, ranks_upto(pos));
	}
}

/* A frame's receiver may be an immediate: its class comes from its tag (special_consts.h). */
Test(stacks, immediate_kinds)
{
	cr_expect_eq(immediate_kind_of(2001), IMMEDIATE_INTEGER, "Fixnum 1000");
	cr_expect_eq(immediate_kind_of(1), IMMEDIATE_INTEGER, "Fixnum 0");
	cr_expect_eq(immediate_kind_of(0x8000000000000002ULL), IMMEDIATE_FLOAT, "a flonum");
	cr_expect_eq(immediate_kind_of((0x1234ULL << 8) | 0x0c), IMMEDIATE_SYMBOL, "static Symbol");
	cr_expect_eq(immediate_kind_of(0x08), IMMEDIATE_NIL);
	cr_expect_eq(immediate_kind_of(0x14), IMMEDIATE_TRUE);
	cr_expect_eq(immediate_kind_of(0x00), IMMEDIATE_FALSE);
	cr_expect_eq(immediate_kind_of(0x7f0012345678ULL), IMMEDIATE_KINDS, "a heap object");
	cr_expect_eq(immediate_kind_of(0x34), IMMEDIATE_KINDS, "Qundef is no receiver");
}

