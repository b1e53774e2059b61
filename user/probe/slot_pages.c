// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A pass must fit in a GC cycle, which an allocation-heavy target ends
 * every few milliseconds: what the heap pages say of the tracked slots is
 * read per page, not per object.  Thousands of tracked objects lie on a
 * few hundred pages; each page's bitmaps are one read, its flags another,
 * all of them batched into a few process_vm_readv calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sort.h"
#include "slot_pages.h"
#include "slots.h"
#include "target_mem.h"

static int grow(void **p, size_t *cap, size_t n, size_t each)
{
	void *q;

	if (n <= *cap)
		return 0;
	q = realloc(*p, n * each);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* The bit of the slot at addr in its page's bitmaps (one per bit granule). */
static uint64_t slot_bit(const struct ruby_layout *hl, uint64_t addr)
{
	return (addr & (hl->page_size - 1)) / hl->bit_granule;
}

/* The page bitmaps the facts need, as one span of struct heap_page: [*lo, *hi). */
static void bitmap_span(const struct ruby_layout *hl, uint32_t *lo, uint32_t *hi)
{
	uint32_t words = hl->bitmap_words * 8, a = hl->page_mark_bits, b = a + words;

	if (hl->page_wb_unprotected_bits) {
		a = a < hl->page_wb_unprotected_bits ? a : hl->page_wb_unprotected_bits;
		b = b > hl->page_wb_unprotected_bits + words ? b
							     : hl->page_wb_unprotected_bits + words;
	}
	if (hl->page_age_bits) {
		a = a < hl->page_age_bits ? a : hl->page_age_bits;
		b = b > hl->page_age_bits + 2 * words ? b : hl->page_age_bits + 2 * words;
	}
	*lo = a;
	*hi = b;
}

static int body_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* Index of body in the sorted, distinct bodies; npages if absent. */
static size_t body_index(const uint64_t *bodies, size_t npages, uint64_t body)
{
	size_t lo = 0, hi = npages;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (bodies[mid] == body)
			return mid;
		if (bodies[mid] < body)
			lo = mid + 1;
		else
			hi = mid;
	}
	return npages;
}

static uint64_t word_at(const uint8_t *span, uint32_t span_lo, uint32_t off, uint64_t word)
{
	uint64_t v;

	memcpy(&v, span + (off - span_lo) + word * 8, sizeof(v));
	return v;
}

/*
 * The distinct pages of the n slots (sp->bodies, npages of them), their
 * struct heap_page, bitmaps (sp->spans, hi - lo bytes a page) and flags
 * read; a page not read has sp->pages[p] 0.  -ENOMEM, or 0.
 */
static int read_pages(struct slot_pages *sp, pid_t pid, const struct ruby_layout *hl,
		      const uint64_t *slots, size_t n, uint32_t lo, uint32_t hi, size_t *npagesp)
{
	size_t i, npages = 0;

	/* The distinct page bodies; a body's first word points to its struct heap_page. */
	for (i = 0; i < n; i++)
		sp->bodies[i] = slots[i] & ~(uint64_t) (hl->page_size - 1);
	sort_array(sp->bodies, n, sizeof(uint64_t), body_cmp);
	for (i = 0; i < n; i++)
		if (!npages || sp->bodies[npages - 1] != sp->bodies[i])
			sp->bodies[npages++] = sp->bodies[i];
	*npagesp = npages;
	if (grow((void **) &sp->spans, &sp->spans_cap, (npages ? npages : 1) * (size_t) (hi - lo),
		 1))
		return -ENOMEM;
	target_read_many(pid, sp->bodies, npages, sizeof(uint64_t), sp->pages, sp->ok);
	for (i = 0; i < npages; i++)
		sp->addrs[i] = sp->ok[i] && sp->pages[i] ? sp->pages[i] + lo : 0;
	/*
	 * The marks before the flags: sweeping a page clears its before_sweep
	 * first and resets its marks to the old objects' at the end, so marks
	 * read after the flags could be the reset ones, and a young live object
	 * would read unmarked on an unswept page.  A page still unswept after
	 * the marks were read had its final marks then.  The flags word is a
	 * u32 inside the struct: 8 bytes read, the low half kept (x86-64).
	 */
	memset(sp->spans, 0, npages * (size_t) (hi - lo));
	target_read_many(pid, sp->addrs, npages, hi - lo, sp->spans, sp->ok);
	for (i = 0; i < npages; i++) {
		if (!sp->ok[i])
			sp->pages[i] = 0;
		sp->addrs[i] = sp->pages[i] ? sp->pages[i] + hl->page_flags : 0;
	}
	target_read_many(pid, sp->addrs, npages, sizeof(uint64_t), sp->flags, sp->ok);
	for (i = 0; i < npages; i++)
		if (!sp->ok[i])
			sp->pages[i] = 0;
	return 0;
}

/* What the page read says of the slot at addr (header: its first word). */
static void slot_fact(const struct slot_pages *sp, const struct ruby_layout *hl, size_t npages,
		      uint32_t lo, uint32_t hi, uint64_t addr, uint64_t header,
		      struct slot_facts *fact)
{
	uint64_t bit = slot_bit(hl, addr);
	size_t p = body_index(sp->bodies, npages, addr & ~(uint64_t) (hl->page_size - 1));
	const uint8_t *span = sp->spans + p * (size_t) (hi - lo);

	memset(fact, 0, sizeof(*fact));
	if (p >= npages || !sp->pages[p] || bit / 64 >= hl->bitmap_words)
		return;
	fact->known = true;
	fact->before_sweep = (uint32_t) sp->flags[p] & hl->page_before_sweep;
	fact->marked = (word_at(span, lo, hl->page_mark_bits, bit / 64) >> (bit % 64)) & 1;
	fact->unprotected =
	    !hl->page_wb_unprotected_bits ||
	    ((word_at(span, lo, hl->page_wb_unprotected_bits, bit / 64) >> (bit % 64)) & 1);
	if (hl->page_age_bits)
		fact->age = slot_age_in_bits(word_at(span, lo, hl->page_age_bits, bit / 32), bit);
	else
		fact->age = slot_age(hl, header);
}

int slot_pages_read(struct slot_pages *sp, pid_t pid, const struct ruby_layout *hl,
		    const uint64_t *slots, const uint64_t (*headers)[2], size_t n,
		    struct slot_facts *facts)
{
	uint32_t lo, hi;
	size_t i, npages = 0;
	int err;

	bitmap_span(hl, &lo, &hi);
	if (grow((void **) &sp->bodies, &sp->cap, n ? n : 1, sizeof(uint64_t)) ||
	    grow((void **) &sp->pages, &sp->pages_cap, n ? n : 1, sizeof(uint64_t)) ||
	    grow((void **) &sp->addrs, &sp->addrs_cap, n ? n : 1, sizeof(uint64_t)) ||
	    grow((void **) &sp->flags, &sp->flags_cap, n ? n : 1, sizeof(uint64_t)) ||
	    grow((void **) &sp->ok, &sp->ok_cap, n ? n : 1, sizeof(bool)))
		return -ENOMEM;
	if ((err = read_pages(sp, pid, hl, slots, n, lo, hi, &npages)))
		return err;
	for (i = 0; i < n; i++)
		slot_fact(sp, hl, npages, lo, hi, slots[i], headers[i][0], &facts[i]);
	return 0;
}

void slot_pages_free(struct slot_pages *sp)
{
	free(sp->bodies);
	free(sp->pages);
	free(sp->addrs);
	free(sp->flags);
	free(sp->spans);
	free(sp->ok);
	memset(sp, 0, sizeof(*sp));
}
