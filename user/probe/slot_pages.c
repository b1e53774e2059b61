// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One read per object and per fact would be five syscalls an object, a
 * pass over thousands of tracked objects taking longer than a GC cycle:
 * each fact is read for every object in one batched read instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "slot_pages.h"
#include "slots.h"
#include "target_mem.h"

static int grow(struct slot_pages *sp, size_t n)
{
	uint64_t **arrays[] = {&sp->addrs, &sp->pages, &sp->flags, &sp->marks, &sp->wbu, &sp->ages};
	size_t i;

	if (n <= sp->cap)
		return 0;
	for (i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		uint64_t *p = realloc(*arrays[i], n * sizeof(uint64_t));

		if (!p)
			return -ENOMEM;
		*arrays[i] = p;
	}
	sp->ok = realloc(sp->ok, n * sizeof(bool));
	if (!sp->ok)
		return -ENOMEM;
	sp->cap = n;
	return 0;
}

/* The bit of the slot at addr in its page's bitmaps (one per bit granule). */
static uint64_t slot_bit(const struct ruby_layout *hl, uint64_t addr)
{
	return (addr & (hl->page_size - 1)) / hl->bit_granule;
}

/* out[i] = the word at pages[i] + off(i); facts[i].known cleared where unreadable. */
static void read_words(struct slot_pages *sp, pid_t pid, size_t n, uint64_t *out,
		       struct slot_facts *facts,
		       uint64_t (*off)(const struct ruby_layout *, uint64_t),
		       const struct ruby_layout *hl, const uint64_t *slots)
{
	size_t i;

	for (i = 0; i < n; i++)
		sp->addrs[i] = facts[i].known ? sp->pages[i] + off(hl, slots[i]) : 0;
	memset(out, 0, n * sizeof(*out));
	target_read_many(pid, sp->addrs, n, sizeof(*out), out, sp->ok);
	for (i = 0; i < n; i++)
		facts[i].known = facts[i].known && sp->ok[i];
}

static uint64_t flags_off(const struct ruby_layout *hl, uint64_t slot)
{
	(void) slot;
	return hl->page_flags;
}

static uint64_t mark_off(const struct ruby_layout *hl, uint64_t slot)
{
	return hl->page_mark_bits + slot_bit(hl, slot) / 64 * 8;
}

static uint64_t wbu_off(const struct ruby_layout *hl, uint64_t slot)
{
	return hl->page_wb_unprotected_bits + slot_bit(hl, slot) / 64 * 8;
}

static uint64_t age_off(const struct ruby_layout *hl, uint64_t slot)
{
	return hl->page_age_bits + slot_bit(hl, slot) / 32 * 8;
}

int slot_pages_read(struct slot_pages *sp, pid_t pid, const struct ruby_layout *hl,
		    const uint64_t *slots, const uint64_t (*headers)[2], size_t n,
		    struct slot_facts *facts)
{
	size_t i;

	if (grow(sp, n))
		return -ENOMEM;
	/* heap_page_header: a page body's first word points to its struct heap_page. */
	for (i = 0; i < n; i++)
		sp->addrs[i] = slots[i] & ~(uint64_t) (hl->page_size - 1);
	target_read_many(pid, sp->addrs, n, sizeof(uint64_t), sp->pages, sp->ok);
	for (i = 0; i < n; i++) {
		memset(&facts[i], 0, sizeof(facts[i]));
		facts[i].known =
		    sp->ok[i] && sp->pages[i] && slot_bit(hl, slots[i]) / 64 < hl->bitmap_words;
	}
	/*
	 * The marks before the flags: sweeping a page clears its before_sweep
	 * first and resets its marks to the old objects' at the end, so marks
	 * read after the flags could be the reset ones, and a young live object
	 * would read unmarked on an unswept page.  A page still unswept after
	 * the marks were read had its final marks then.  The flags word is a
	 * u32 inside the struct: 8 bytes read, the low half kept (x86-64).
	 */
	read_words(sp, pid, n, sp->marks, facts, mark_off, hl, slots);
	read_words(sp, pid, n, sp->flags, facts, flags_off, hl, slots);
	if (hl->page_wb_unprotected_bits)
		read_words(sp, pid, n, sp->wbu, facts, wbu_off, hl, slots);
	if (hl->page_age_bits)
		read_words(sp, pid, n, sp->ages, facts, age_off, hl, slots);
	for (i = 0; i < n; i++) {
		uint64_t bit = slot_bit(hl, slots[i]);

		if (!facts[i].known)
			continue;
		facts[i].before_sweep = (uint32_t) sp->flags[i] & hl->page_before_sweep;
		facts[i].marked = (sp->marks[i] >> (bit % 64)) & 1;
		facts[i].unprotected =
		    !hl->page_wb_unprotected_bits || ((sp->wbu[i] >> (bit % 64)) & 1);
		if (hl->page_age_bits)
			facts[i].age = slot_age_in_bits(sp->ages[i], bit);
		else
			facts[i].age = slot_age(hl, headers[i][0]);
	}
	return 0;
}

void slot_pages_free(struct slot_pages *sp)
{
	free(sp->addrs);
	free(sp->pages);
	free(sp->flags);
	free(sp->marks);
	free(sp->wbu);
	free(sp->ages);
	free(sp->ok);
	memset(sp, 0, sizeof(*sp));
}
