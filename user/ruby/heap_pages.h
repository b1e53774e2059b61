/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Ruby's heap page table, read from outside: the objspace's sorted list of
 * struct heap_page pointers (in address order), and the one test of
 * whether a struct heap_page's header is a page as the layout says.  The
 * layout proof, the census and why's reference graph all read the heap
 * through these, so what they call a page is the same.
 *
 * 3.4 keeps the table in a darray whose first word is the page count
 * (objspace_allocated_pages there is a running total of pages ever
 * allocated); before, a plain array of objspace_allocated_pages pointers.
 * 3.4 also keeps emptied pages in the table, with total_slots 0: they
 * fail the test, as pages with nothing in them.
 */
#ifndef RBM_HEAP_PAGES_H
#define RBM_HEAP_PAGES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ruby_layout.h"

struct heap_page_table {
	uint64_t addr;	 /* the first page pointer */
	uint64_t npages; /* how many the objspace says it holds */
};

/*
 * Where the objspace's page table is, and its count.  0; -ERANGE when
 * there is none, or it claims more than RUBY_MAX_HEAP_PAGES (t says what
 * was read); or the read's -errno.
 */
int heap_page_table_find(pid_t pid, const struct ruby_layout *l, uint64_t objspace,
			 struct heap_page_table *t);
/* Its t->npages page pointers into pages: 0, or the read's -errno. */
int heap_page_table_read(pid_t pid, const struct heap_page_table *t, uint64_t *pages);

/* Where a page's slots are: from the first heap_page_geo_bytes of its struct heap_page. */
struct heap_page_geo {
	uint64_t body;	    /* its page_size-aligned body (first word: back to the page) */
	uint64_t start;	    /* its first slot */
	uint32_t nslots;    /* total_slots */
	uint32_t slot_size; /* its size pool's (the layout's slot_size with one pool) */
};

/* How much of a struct heap_page the geometry is read from. */
size_t heap_page_geo_bytes(const struct ruby_layout *l);
/* The geometry hdr (a struct heap_page's first heap_page_geo_bytes) says, unchecked. */
void heap_page_geo_of(const struct ruby_layout *l, const uint8_t *hdr, struct heap_page_geo *g);
/*
 * The test: whether g is a heap page's as the layout says: slots there
 * (at most max_slots), of a size pool's size, after the body's header
 * word, all within the body.  That the body points back at the page is
 * the caller's to check, with the body it reads.
 */
bool heap_page_fits(const struct ruby_layout *l, const struct heap_page_geo *g);

#endif
