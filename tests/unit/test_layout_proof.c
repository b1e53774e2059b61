// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/layout_proof.c: every offset proved against the target by invariants before use. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "helpers.h"
#include "rbmemtrace.h"
#include "ruby_target.h"

/*
 * Each check on images it must pass and on images a wrong offset would
 * make.  The gc and heap groups read a heap laid out by the 3.1 table in
 * this process's own memory (the "target" is the test itself:
 * process_vm_readv of our pid), so that each invariant can be broken alone;
 * classes, stacks and probes read a live Ruby, with one offset moved as a
 * wrong table would.
 */

#define PAGES 8

struct fake_heap {
	struct ruby_target t;
	uint64_t vm_ptr;
	uint64_t vm[256];
	uint64_t objspace[128];
	uint64_t table[PAGES];
	uint8_t *page[PAGES]; /* struct heap_page */
	uint64_t *body[PAGES];
};

/*
 * The heap fake_heap built for this test, here because a .fini takes no
 * argument: fake_heap_free, the suite's .fini, frees it after every test,
 * one that an assertion ended early too (each test is a process of its own).
 */
static struct fake_heap *heap;

static void fake_heap_free(void)
{
	int i;

	if (!heap)
		return;
	for (i = 0; i < PAGES; i++) {
		free(heap->body[i]);
		free(heap->page[i]);
	}
	free(heap);
	heap = NULL;
}

TestSuite(layout_proof, .fini = fake_heap_free);

static int by_address(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/* A 3.1 heap: PAGES pages of 409 slots, 3000 live by GC.stat, idle. */
static struct fake_heap *fake_heap(void)
{
	const struct ruby_layout *l;
	struct fake_heap *h;
	uint8_t *os;
	int i, s;

	cr_assert_null(heap, "one fake heap a test: fake_heap_free frees that one");
	h = heap = calloc(1, sizeof(*h));
	cr_assert_not_null(h);
	h->t.pid = getpid();
	h->t.layout = test_layout_of("3.1.2");
	l = &h->t.layout;
	snprintf(h->t.version, sizeof(h->t.version), "3.1.2");
	h->vm_ptr = (uint64_t) h->vm;
	h->t.vm_ptr_addr = (uint64_t) &h->vm_ptr;
	h->t.vm = (uint64_t) h->vm;
	h->t.objspace = (uint64_t) h->objspace;
	memcpy((uint8_t *) h->vm + l->vm_objspace, &h->t.objspace, 8);
	os = (uint8_t *) h->objspace;
	*(uint64_t *) (os + l->objspace_gc_count) = 12;
	*(uint64_t *) (os + l->objspace_total_allocated) = 5000;
	*(uint64_t *) (os + l->objspace_total_freed) = 2000;
	*(uint16_t *) (os + l->objspace_pools + l->pool_slot_size) = (uint16_t) l->slot_size;
	*(uint64_t *) (os + l->objspace_sorted) = (uint64_t) h->table;
	*(uint64_t *) (os + l->objspace_allocated_pages) = PAGES;
	for (i = 0; i < PAGES; i++) {
		uint64_t start;

		h->body[i] = aligned_alloc(l->page_size, l->page_size);
		h->page[i] = calloc(1, l->page_read_size);
		cr_assert(h->body[i] && h->page[i]);
		memset(h->body[i], 0, l->page_size);
		h->body[i][0] = (uint64_t) h->page[i];
		start = (uint64_t) h->body[i] + 16;
		memcpy(h->page[i] + l->page_start, &start, 8);
		*(uint16_t *) (h->page[i] + l->page_total_slots) = (uint16_t) l->max_slots;
		for (s = 0; s < (int) l->max_slots; s++)
			*(uint64_t *) (start + (uint64_t) s * l->slot_size) =
			    s % 3 ? RB_T_STRING : RB_T_NONE;
	}
	/* heap_pages.sorted is in address order */
	for (i = 0; i < PAGES; i++)
		h->table[i] = (uint64_t) h->body[i];
	qsort(h->table, PAGES, sizeof(h->table[0]), by_address);
	for (i = 0; i < PAGES; i++)
		h->table[i] = ((uint64_t *) h->table[i])[0];
	return h;
}

static const struct group_proof *prove(struct fake_heap *h, enum proof_group g)
{
	ruby_target_prove(&h->t, PROOF_BIT(PROOF_GC) | PROOF_BIT(PROOF_HEAP), false);
	return &h->t.proof.groups[g];
}

static void expect_failed(const struct group_proof *g, const char *check)
{
	cr_expect_eq(g->status, PROOF_FAILED, "should fail at \"%s\"", check);
	cr_expect(strncmp(g->why, check, strlen(check)) == 0, "failed at \"%s\", not \"%s\"",
		  g->why, check);
}

static uint8_t *os_at(struct fake_heap *h, uint32_t off)
{
	return (uint8_t *) h->objspace + off;
}

Test(layout_proof, a_sound_heap_is_proved)
{
	struct fake_heap *h = fake_heap();
	const struct group_proof *gc = prove(h, PROOF_GC), *heap = &h->t.proof.groups[PROOF_HEAP];
	unsigned int i;

	cr_expect_eq(gc->status, PROOF_PROVED, "%s", gc->why);
	cr_expect_eq(heap->status, PROOF_PROVED, "%s", heap->why);
	for (i = 0; i < heap->nchecks; i++)
		cr_expect(heap->checks[i].ok, "%s: %s", heap->checks[i].name,
			  heap->checks[i].detail);
	cr_expect_eq(h->t.proof.groups[PROOF_STACKS].status, PROOF_UNCHECKED);
}

Test(layout_proof, objspace_pointer_that_reads_nothing)
{
	struct fake_heap *h = fake_heap();

	h->t.objspace = 8; /* what a wrong vm_objspace might point at */
	expect_failed(prove(h, PROOF_GC), "objspace");
	expect_failed(&h->t.proof.groups[PROOF_HEAP], "objspace");
}

Test(layout_proof, more_freed_than_allocated)
{
	struct fake_heap *h = fake_heap();

	*(uint64_t *) os_at(h, h->t.layout.objspace_total_freed) = 6000;
	expect_failed(prove(h, PROOF_GC), "allocated >= freed");
}

Test(layout_proof, gc_count_out_of_range)
{
	struct fake_heap *h = fake_heap();

	*(uint64_t *) os_at(h, h->t.layout.objspace_gc_count) = 0x7f12345678abULL; /* a pointer */
	expect_failed(prove(h, PROOF_GC), "GC.count");
}

/* gc_mode_compacting: a target caught inside GC.compact is proved, not refused. */
Test(layout_proof, gc_mode_compacting)
{
	struct fake_heap *h = fake_heap();

	const struct group_proof *gc;

	*(uint32_t *) os_at(h, h->t.layout.objspace_flags) = 3;
	gc = prove(h, PROOF_GC);
	cr_expect_eq(gc->status, PROOF_PROVED, "mode 3 (compacting): %s", gc->why);
}

Test(layout_proof, flags_with_high_bits)
{
	struct fake_heap *h = fake_heap();

	*(uint32_t *) os_at(h, h->t.layout.objspace_flags) = 0x55a40002; /* a pointer's half */
	expect_failed(prove(h, PROOF_GC), "flags");
}

Test(layout_proof, pool_without_its_slot_size)
{
	struct fake_heap *h = fake_heap();

	*(uint16_t *) os_at(h, h->t.layout.objspace_pools + h->t.layout.pool_slot_size) = 80;
	expect_failed(prove(h, PROOF_GC), "size pools");
}

Test(layout_proof, more_compactions_than_gcs)
{
	struct fake_heap *h = fake_heap();

	*(uint64_t *) os_at(h, h->t.layout.objspace_compact_count) = 13;
	expect_failed(prove(h, PROOF_GC), "compactions <= GCs");
}

/* The moved-objects counter: proved with the gc group, or unknown (said) without failing it. */
Test(layout_proof, moves_counter)
{
	struct fake_heap *h = fake_heap();
	uint64_t *moved = (uint64_t *) os_at(h, h->t.layout.objspace_total_moved);
	const struct group_proof *gc;

	cr_assert_neq(h->t.layout.objspace_total_moved, 0, "3.1's table has total_moved");
	*(uint64_t *) os_at(h, h->t.layout.objspace_compact_count) = 2;
	*moved = 700;
	gc = prove(h, PROOF_GC);
	cr_expect_eq(gc->status, PROOF_PROVED, "%s", gc->why);
	cr_expect_eq(h->t.moved_addr, (uint64_t) moved, "its address, once proved");
	/* moves before any compaction cannot be: unknown, the group still proved */
	*(uint64_t *) os_at(h, h->t.layout.objspace_compact_count) = 0;
	gc = prove(h, PROOF_GC);
	cr_expect_eq(gc->status, PROOF_PROVED, "%s", gc->why);
	cr_expect_eq(h->t.moved_addr, 0);
	cr_expect(strstr(h->t.moves_why, "reads 700 after 0 compactions") != NULL, "%s",
		  h->t.moves_why);
}

Test(layout_proof, page_table_empty)
{
	struct fake_heap *h = fake_heap();

	*(uint64_t *) os_at(h, h->t.layout.objspace_allocated_pages) = 0;
	expect_failed(prove(h, PROOF_HEAP), "page table");
}

Test(layout_proof, body_that_does_not_point_back)
{
	struct fake_heap *h = fake_heap();

	h->body[3][0] = (uint64_t) h->page[4];
	expect_failed(prove(h, PROOF_HEAP), "page body points back");
}

Test(layout_proof, more_slots_than_a_page_holds)
{
	struct fake_heap *h = fake_heap();

	*(uint16_t *) (h->page[5] + h->t.layout.page_total_slots) = 410;
	expect_failed(prove(h, PROOF_HEAP), "slots fit the page");
}

Test(layout_proof, slots_past_the_body)
{
	struct fake_heap *h = fake_heap();
	uint64_t start = (uint64_t) h->body[2] + 400;

	memcpy(h->page[2] + h->t.layout.page_start, &start, 8);
	expect_failed(prove(h, PROOF_HEAP), "slots fit the page");
}

Test(layout_proof, pages_out_of_order)
{
	struct fake_heap *h = fake_heap();
	uint64_t tmp = h->table[1];

	h->table[1] = h->table[6];
	h->table[6] = tmp;
	expect_failed(prove(h, PROOF_HEAP), "pages sorted");
}

Test(layout_proof, slot_with_no_type)
{
	struct fake_heap *h = fake_heap();
	uint64_t start;

	memcpy(&start, h->page[0] + h->t.layout.page_start, 8);
	*(uint64_t *) (start + 3 * h->t.layout.slot_size) = 0x1f; /* no such type */
	expect_failed(prove(h, PROOF_HEAP), "slots hold objects");
}

Test(layout_proof, more_live_objects_than_slots)
{
	struct fake_heap *h = fake_heap();

	*(uint64_t *) os_at(h, h->t.layout.objspace_total_allocated) = 200000;
	cr_expect_eq(prove(h, PROOF_GC)->status, PROOF_PROVED);
	expect_failed(&h->t.proof.groups[PROOF_HEAP], "live objects fit the slots");
}

/* ---- a live Ruby: classes, stacks, probes ---- */

static void live_target(struct test_child *c, struct ruby_target *t)
{
	char *argv[] = {"ruby", "-e",
			"STDOUT.sync = true; def idle; puts :ready; sleep 30; end; idle", NULL};
	char why[800];

	test_child_start(c, argv);
	memset(t, 0, sizeof(*t));
	cr_assert_eq(ruby_target_open(t, c->pid, RUBY_NEED_TRACE, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(ruby_target_require(t, PROOF_ALL, PROOF_ALL, false, why, sizeof(why)), 0, "%s",
		     why);
}

/* Proves the group again with one field moved by delta, as a wrong table would have it. */
static const struct group_proof *with_field_moved(struct ruby_target *t, enum proof_group g,
						  const char *field, int delta)
{
	const struct layout_field *f = layout_field_named(field);

	cr_assert_not_null(f, "%s", field);
	layout_field_set(&t->layout, f, layout_field_get(&t->layout, f) + (uint64_t) delta);
	ruby_target_find_objspace(t); /* vm->objspace, read at a moved vm_objspace too */
	ruby_target_prove(t, PROOF_BIT(g), false);
	return &t->proof.groups[g];
}

Test(layout_proof, live_ruby_is_proved)
{
	struct test_child c;
	struct ruby_target t;
	unsigned int g;

	live_target(&c, &t);
	for (g = 0; g < PROOF_GROUPS; g++)
		cr_expect(ruby_target_proved(&t, g), "%s: %s", proof_group_name(g),
			  t.proof.groups[g].why);
	cr_expect_lt(t.proof.seconds, 0.05, "the checks add at most 50 ms to attaching");
	test_child_stop(&c);
}

Test(layout_proof, live_ruby_wrong_offsets)
{
	static const struct {
		enum proof_group group;
		const char *field;
		int delta;
		const char *fails;
	} cases[] = {
	    {PROOF_CLASSES, "rclass_super", 8, "Object < BasicObject"},
	    {PROOF_CLASSES, "classext_iv_tbl", 8, "Object's class path"},
	    {PROOF_STACKS, "ractor_main_thread", 8, "main thread"},
	    {PROOF_STACKS, "thread_ec", 8, "thread's ec"},
	    {PROOF_STACKS, "ec_cfp", 8, "frame in its VM stack"},
	    {PROOF_STACKS, "body_location_label", 8, "frames name their code"},
	    {PROOF_PROBES, "classext_allocator", 8, "rb_class_allocate_instance"},
	    {PROOF_GC, "vm_objspace", 8, "objspace"},	 /* at_exit: nil */
	    {PROOF_GC, "vm_objspace", 16, "size pools"}, /* frozen_strings: an st_table */
	    {PROOF_GC, "objspace_pools", 8, "size pools"},
	    {PROOF_REFS, "classext_const_tbl", 8, "Object's constants"},
	    {PROOF_REFS, "const_entry_value", 8, "Object's constants"},
	    {PROOF_REFS, "gvar_data", 8, "$/'s global"},
	    {PROOF_REFS, "gvar_marker", 8, "$/'s global"},
	    {PROOF_REFS, "ractor_threads_set", 16, "threads"},
	    {PROOF_REFS, "tdata_type", 8, "Thread data"},
	    {PROOF_REFS, "datatype_name", 8, "Thread data"},
	    {PROOF_REFS, "vm_special_exceptions", 8, "VM lists"},
	};
	struct test_child c;
	struct ruby_target t, good;
	size_t i;

	live_target(&c, &good);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = good;
		expect_failed(with_field_moved(&t, cases[i].group, cases[i].field, cases[i].delta),
			      cases[i].fails);
	}
	test_child_stop(&c);
}
