// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/heap_pages.c: the heap page table found and read, and the page test. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "heap_pages.h"
#include "ruby_caps.h"
#include "ruby_versions.h"

/* A struct heap_page's first bytes as layout l puts them. */
static void header(const struct ruby_layout *l, uint8_t *hdr, uint64_t start, uint16_t total,
		   uint16_t slot_size)
{
	memset(hdr, 0, 64);
	memcpy(hdr + l->page_start, &start, 8);
	memcpy(hdr + l->page_total_slots, &total, 2);
	if (l->pool_count > 1)
		memcpy(hdr + l->page_slot_size, &slot_size, 2);
}

static bool fits(const struct ruby_layout *l, uint64_t start, uint16_t total, uint16_t slot_size)
{
	uint8_t hdr[64];
	struct heap_page_geo g;

	cr_assert_leq(heap_page_geo_bytes(l), sizeof(hdr));
	header(l, hdr, start, total, slot_size);
	heap_page_geo_of(l, hdr, &g);
	return heap_page_fits(l, &g);
}

Test(heap_pages, geometry)
{
	const struct ruby_layout *l = ruby_versions_entry("3.4");
	uint64_t body = 0x7f0000000000ull;
	uint8_t hdr[64];
	struct heap_page_geo g;

	cr_assert_not_null(l);
	header(l, hdr, body + 16, 100, 80);
	heap_page_geo_of(l, hdr, &g);
	cr_expect_eq(g.body, body);
	cr_expect_eq(g.start, body + 16);
	cr_expect_eq(g.nslots, 100);
	cr_expect_eq(g.slot_size, 80);
	cr_expect(heap_page_fits(l, &g));
}

Test(heap_pages, what_is_not_a_page)
{
	const struct ruby_layout *l = ruby_versions_entry("3.4");
	uint64_t body = 0x7f0000000000ull;

	cr_assert_not_null(l);
	cr_expect(fits(l, body + 8, l->max_slots, l->slot_size));
	cr_expect(!fits(l, body + 8, 0, l->slot_size), "emptied: no slots");
	cr_expect(!fits(l, body + 8, l->max_slots + 1, l->slot_size), "more than max_slots");
	cr_expect(!fits(l, body, 10, l->slot_size), "slots over the body's header word");
	cr_expect(!fits(l, body + 8, 10, l->slot_size + 8), "not a size pool's size");
	cr_expect(!fits(l, body + 8, 10, l->max_slot_size * 2), "past the largest pool");
	cr_expect(!fits(l, body + l->page_size - 40, 2, l->slot_size), "past the body");
}

Test(heap_pages, one_pool_reads_the_layouts_slot_size)
{
	const struct ruby_layout *l = ruby_versions_entry("3.1");
	uint64_t body = 0x7f0000000000ull;

	cr_assert_not_null(l);
	cr_assert_eq(l->pool_count, 1);
	cr_expect(fits(l, body + 8, l->max_slots, 0));
}

/* An objspace in this process, read as a target's. */
static uint64_t objspace[512], darray[4], pages[3] = {0x1000, 0x2000, 0x3000};

Test(heap_pages, table_before_3_4)
{
	const struct ruby_layout *l = ruby_versions_entry("3.1");
	struct heap_page_table t;
	uint64_t got[3];

	cr_assert_not_null(l);
	cr_assert(!l->sorted_darray_data);
	objspace[l->objspace_sorted / 8] = (uint64_t) (uintptr_t) pages;
	objspace[l->objspace_allocated_pages / 8] = 3;
	cr_assert_eq(heap_page_table_find(getpid(), l, (uintptr_t) objspace, &t), 0);
	cr_expect_eq(t.addr, (uint64_t) (uintptr_t) pages);
	cr_expect_eq(t.npages, 3);
	cr_assert_eq(heap_page_table_read(getpid(), &t, got), 0);
	cr_expect_arr_eq(got, pages, sizeof(pages));

	objspace[l->objspace_allocated_pages / 8] = 0;
	cr_expect_eq(heap_page_table_find(getpid(), l, (uintptr_t) objspace, &t), -ERANGE);
	objspace[l->objspace_allocated_pages / 8] = RUBY_MAX_HEAP_PAGES + 1ull;
	cr_expect_eq(heap_page_table_find(getpid(), l, (uintptr_t) objspace, &t), -ERANGE);
	cr_expect_eq(t.npages, RUBY_MAX_HEAP_PAGES + 1ull, "what was read, for the message");
}

Test(heap_pages, table_in_a_darray)
{
	const struct ruby_layout *l = ruby_versions_entry("3.4");
	struct heap_page_table t;

	cr_assert_not_null(l);
	cr_assert_eq(l->sorted_darray_data, 16);
	darray[0] = 2; /* the darray's count; its data after its header */
	objspace[l->objspace_sorted / 8] = (uint64_t) (uintptr_t) darray;
	cr_assert_eq(heap_page_table_find(getpid(), l, (uintptr_t) objspace, &t), 0);
	cr_expect_eq(t.addr, (uint64_t) (uintptr_t) darray + 16);
	cr_expect_eq(t.npages, 2);

	objspace[l->objspace_sorted / 8] = 0;
	cr_expect_eq(heap_page_table_find(getpid(), l, (uintptr_t) objspace, &t), -ERANGE,
		     "no darray: no table");
}
